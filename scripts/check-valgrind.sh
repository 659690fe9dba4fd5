#!/bin/sh
# check-valgrind.sh [NAME...]: builds without sanitizers (-O1 -g) in its
# own directory and runs tests under valgrind's memcheck. Ends with the
# runner's line "N passed, N failed"; exits non-zero on any failure.
#
# The runner forks every test, and valgrind follows forks, so one valgrind
# around the runner checks every test process (and the forked helpers:
# fake servers, killed holders). Programs they exec (redis-server, python3,
# sh) are not traced: --trace-children is off. Each process exits with
# status 99 on a memcheck error or a definite leak, which fails its test.
#
# The default subset is the tests whose outcome does not hang on timing,
# so valgrind's slowdown (10x and more) cannot fail them falsely; see
# DEFAULT below. Tests with time bounds of their own read
# RL_TEST_TIME_FACTOR (set here) and widen their slack.
#
# Environment: VALGRIND_BUILD (default build-valgrind), JOBS (default 2).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=${VALGRIND_BUILD:-build-valgrind}
jobs=${JOBS:-2}
# Left out: timeout_*, retry_*, watchdog_*, concurrency_*, legacy_*,
# shard_*, interop_* and the fault tests with stalls and a killed holder,
# which measure time to the tens of milliseconds or run hundreds of
# lock rounds; cli_* exec the CLI, which valgrind does not trace anyway;
# faults_wallclock_* and doctor_clock exec this runner again under
# libfaketime through /proc/self/exe, which under valgrind is valgrind.
DEFAULT="backoff_* rand_* error_* version_* harness_* lock_* expiry_*
script_* input_* url_* auth_* meta_* holdafter_* reentrant_* badserver_*
faults_restart_* faults_clock_probe events_* fair_share_* fair_permits_fifo_order
aconn_* loop_* alock_* adapter_* doctor_clean_server_silent doctor_eviction
doctor_persistence doctor_replicas doctor_no_scripts doctor_sentinel_quorum
doctor_cluster_slots doctor_clock_probe doctor_unanswered"

command -v valgrind >/dev/null 2>&1 ||
    { echo "check-valgrind: valgrind is not installed" >&2; exit 1; }
cd "$top" || exit 1
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE= -DCMAKE_C_FLAGS="-O1 -g" \
    -DREDISLOCK_SANITIZE= >/dev/null ||
    ! cmake --build "$build" -j"$jobs" --target rl-tests >/dev/null; then
    echo "check-valgrind: build failed" >&2
    exit 1
fi

set -f # the patterns are the runner's to match, not the shell's
# shellcheck disable=SC2086  # split into one pattern per word
[ $# -gt 0 ] || set -- $DEFAULT
export RL_TEST_TIME_FACTOR="${RL_TEST_TIME_FACTOR:-10}"
exec valgrind --quiet --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite --show-leak-kinds=definite \
    --track-fds=no --trace-children=no \
    "$build/tests/rl-tests" -j"$jobs" "$@"
