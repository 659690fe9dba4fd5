#!/bin/sh
# check-declared-keys.sh [--strict] [NAME...]: whether the Lua scripts
# touch only the keys they declare in KEYS (docs/DECLARED-KEYS.md).
#
# Builds with REDISLOCK_LUA_KEYCHECK (src/lua_keycheck.lua) in a directory
# of its own and runs tests that exercise the scripts (DEFAULT below, or
# the NAMEs and patterns given) with the servers' logs kept
# (RL_TEST_KEEP_LOGS). Then prints, per script and command, each
# undeclared key's pattern (<base> the lock's helper prefix, <req> a
# request id, <id> a waiter's token or owner id) with its count and the
# number of tests it was seen in.
#
# Report mode (the default): an undeclared key is logged and the command
# runs, so the tests behave as they do without the check; exits 1 when
# one was seen or a test failed. --strict: an undeclared key fails its
# script; exits 1 unless every test passes (the goal once every key is
# declared). --summarize DIR: only the summary of the logs in DIR.
#
# Environment: KEYCHECK_BUILD (default build-keycheck), JOBS (default 2),
# KEYCHECK_LOGS (where the logs go; default a fresh dir, removed after).
set -u

# Tests that run the scripts: the single-server ones, and a cluster and
# Redlock set (every script, a slot migration); election, revocation,
# sequencer, lock-delay, native release and renewals by node since
# 2026-12-03 (their scripts were checked by none before). Left out: the cluster
# failovers and the other Redlock tests (long; name them to run them),
# excl_* (long), cli_keycheck (it breaks the rule on purpose), and tests
# that run no script.
DEFAULT="lock_* expiry_* script_* input_* auth_* acl_* meta_* holdafter_*
reentrant_* fair_* wake_* fence_* inspect_* holders_* ghost_* interop_*
legacy_* retry_* watchdog_* errors_* faults_* timeout_* concurrency_*
shard_* replicas_* sem_* shared_* set_* spread_* cli_fair cli_fence cli_reentrant
cli_hold_after cli_limit cli_shared cli_set cli_prefix cli_not_lock cli_list
cli_cmds cli_wait_policy
elect_proclaim_and_resign elect_observe_gap elect_observe_history_replaced
elect_observer_waits_silently elect_bad_input elect_loop revoke_*
sequencer_* lockdelay_* native_* renew_by_node_few_requests
renew_by_node_each_answer renew_sets_by_node renew_spread_sets_by_node
renew_redlock_each_answer
cluster_lock_features cluster_slot_migration redlock_reentrant_metadata
redlock_inspect_majority_view redlock_majority_busy_undone"

# summarize DIR: the table of the RLKEYCHECK lines of DIR/*.log; exits 1
# when there is any. A log is named <n>.<test>.<server dir>.log.
summarize() {
    find "$1" -name '*.log' -type f -exec grep -aH 'RLKEYCHECK ' {} + |
        awk '
        {
            file = substr($0, 1, index($0, ":") - 1)
            sub(/.*\//, "", file)
            sub(/^[0-9]+\./, "", file)
            sub(/\.rl-redis\..*$/, "", file)
            n = split(substr($0, index($0, "RLKEYCHECK ") + 11), f, " ")
            # <what> in CMD of SCRIPT (KEYS[1] K1)
            script = f[n - 2]; cmd = f[n - 4]
            if (f[1] == "unknown") {
                pat = "(unknown command)"
            } else {
                name = f[3]
                for (i = 4; i <= n - 6; i++)
                    name = name " " f[i]
                pat = pattern(name)
            }
            k = script SUBSEP cmd SUBSEP pat
            count[k]++
            if (!((k, file) in seen)) {
                seen[k, file] = 1
                tests[k]++
            }
            total++
        }
        # The helper prefix ("K{K}:rl-" or "K:rl-") and the ids after it
        # become placeholders.
        function pattern(name,   p, s) {
            p = index(name, ":rl-")
            if (p == 0)
                return numbers(name)
            s = substr(name, p + 4)
            if (s ~ /^void:/)
                s = "void:<req>"
            else if (s ~ /^[wh]:/)
                s = substr(s, 1, 2) "<id>"
            return "<base>" s
        }
        # Long hex or decimal runs (tokens, ids) become <n>.
        function numbers(s,   out, t) {
            out = ""
            while (match(s, /[0-9a-f]+/)) {
                t = substr(s, RSTART, RLENGTH)
                if (RLENGTH >= 16 || (RLENGTH >= 6 && t ~ /^[0-9]+$/))
                    t = "<n>"
                out = out substr(s, 1, RSTART - 1) t
                s = substr(s, RSTART + RLENGTH)
            }
            return out s
        }
        END {
            if (total == 0) {
                print "check-declared-keys: no undeclared key seen"
                exit 0
            }
            printf "%-11s %-8s %-22s %7s %6s\n", "script", "command",
                   "undeclared key", "count", "tests"
            for (k in count) {
                split(k, p, SUBSEP)
                printf "%-11s %-8s %-22s %7d %6d\n", p[1], p[2], p[3],
                       count[k], tests[k] | "sort"
            }
            close("sort")
            printf "check-declared-keys: %d undeclared accesses\n", total
            exit 1
        }'
}

mode=REPORT
case ${1:-} in
--strict)
    mode=STRICT
    shift
    ;;
--summarize)
    [ $# -eq 2 ] || { echo "usage: $0 --summarize DIR" >&2; exit 2; }
    summarize "$2"
    exit $?
    ;;
-*)
    echo "usage: $0 [--strict] [NAME...] | --summarize DIR" >&2
    exit 2
    ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
build=${KEYCHECK_BUILD:-build-keycheck}
jobs=${JOBS:-2}
cd "$top" || exit 2
# One build dir for both modes: switching embeds the scripts again only.
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DREDISLOCK_WERROR=ON \
    -DREDISLOCK_LUA_KEYCHECK="$mode" >/dev/null ||
    ! cmake --build "$build" -j"$jobs" >/dev/null; then
    echo "check-declared-keys: build failed" >&2
    exit 2
fi
logs=${KEYCHECK_LOGS:-}
if [ -z "$logs" ]; then
    logs=$(mktemp -d "${TMPDIR:-/tmp}/rl-keycheck.XXXXXX") || exit 2
    trap 'rm -rf "$logs"' EXIT
fi
mkdir -p "$logs" || exit 2
rm -f "$logs"/*.log
# shellcheck disable=SC2086 # the patterns are split on purpose
[ $# -gt 0 ] || set -- $DEFAULT
echo "check-declared-keys: $mode mode, $build, logs in $logs"
RL_TEST_KEEP_LOGS=$logs "$build/tests/rl-tests" -j"$jobs" "$@"
suite=$?
summarize "$logs"
seen=$?
if [ "$mode" = STRICT ]; then
    exit $((suite != 0))
fi
[ "$suite" = 0 ] || echo "check-declared-keys: some tests failed" >&2
exit $((suite != 0 || seen != 0))
