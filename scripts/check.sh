#!/bin/sh
# make check: every test under ASan+UBSan, then the threaded tests again
# under TSan, each build with warnings as errors. Ends with one line
# "N passed, N failed" for both runs together; exits non-zero on any
# failure.
set -u

jobs=${JOBS:-2}
# The ASan run's tests go three at a time (TEST_JOBS): they mostly wait
# on servers and timeouts. On 2 cores (2026-12-04) the 679 took 907 s at
# -j2, 690 s at -j3 with the CPU 46 % busy; the tests are held to pass
# beside two other copies of the suite, six at a time. The TSan run,
# CPU-bound, stays at JOBS.
tjobs=${TEST_JOBS:-3}
asan=${CHECK_BUILD:-build-check}
tsan=${TSAN_BUILD:-build-tsan}
# The tests that run threads: the watchdog, cancellation, shared clients;
# of the exclusion checker's (processes), the modes whose workers run the
# library's watchdog and janitor threads the most. And run's guardian
# (cli/guard.c) as it is forked where it cannot share run's memory: a
# TSan build forks it, so these are its tests of that path.
threaded="cli_run_exit cli_run_orphans cli_run_kill_storm cli_run_sigstop
watchdog_* reentrant_* retry_* concurrency_* shard_*
legacy_fixed_delay_herd cluster_lock_features cluster_slot_migration cluster_failover
redlock_watchdog_renews_and_signals redlock_blackholed_servers_connect_at_once
excl_watchdog excl_proxy sem_watchdog_renews_own_permit
sem_ghost_permit_given_back excl_shared set_watchdog_renews_and_signals_loss
spread_lost_reply_undone spread_sharded_sets sentinel_follows_failover
events_* fair_permits_fifo_order fair_readers_writers_in_arrival_order
alock_scenarios alock_redlock_* alock_cluster_* excl_loop_redlock
excl_loop_cluster adapter_* alock_set_* alock_spread_*
alock_sentinel_failover ghost_* wake_waiters_leave_pool_free
wake_idle_connections_bounded ploop_* renew_* elect_observer_*
fair_channel_kept_between_waits fair_metadata_handoff
fair_freed_handle_unsubscribes"

build() {
    cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Debug -DREDISLOCK_WERROR=ON \
        -DREDISLOCK_SANITIZE="$2" >/dev/null &&
        cmake --build "$1" -j"$jobs" >/dev/null
}

count() {
    sed -n "s/^\([0-9]*\) passed, \([0-9]*\) failed$/\\$2/p" "$1" | tail -n 1
}

build "$asan" address,undefined || { echo "check: ASan build failed"; exit 1; }
# make soak's runner is not in ALL; built here so that a change that
# breaks it is caught before someone needs a soak.
cmake --build "$asan" -j"$jobs" --target rl-soak >/dev/null ||
    { echo "check: rl-soak build failed"; exit 1; }
build "$tsan" thread || { echo "check: TSan build failed"; exit 1; }
# Optimisation finds warnings a Debug build does not (maybe-uninitialized).
cmake -S . -B "${RELEASE_BUILD:-build-release}" -DCMAKE_BUILD_TYPE=Release \
    -DREDISLOCK_WERROR=ON -DREDISLOCK_BUILD_TESTS=OFF >/dev/null &&
    cmake --build "${RELEASE_BUILD:-build-release}" -j"$jobs" >/dev/null ||
    { echo "check: Release build with -Werror failed"; exit 1; }

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
"$asan/tests/rl-tests" -j"$tjobs" | tee "$log/asan"
echo "== the threaded tests again, under ThreadSanitizer =="
# shellcheck disable=SC2086  # the globs are the runner's to match
"$tsan/tests/rl-tests" -j"$jobs" $threaded | tee "$log/tsan"

passed=$(($(count "$log/asan" 1) + $(count "$log/tsan" 1)))
failed=$(($(count "$log/asan" 2) + $(count "$log/tsan" 2)))
[ -n "$(count "$log/asan" 1)" ] && [ -n "$(count "$log/tsan" 1)" ] ||
    failed=$((failed + 1))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
