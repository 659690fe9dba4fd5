#!/bin/sh
# redislock doctor and --strict against the private server, set by CONFIG
# SET to each configuration in turn: its exit statuses, its two lines a
# finding and its JSON; --strict refuses what doctor flags.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

# The test server keeps no append-only file.
expect 78 "$RL" doctor --clock 0
grep -q "^.*: no-persistence: the append-only file is off" "$TEST_TMPDIR/out" ||
    fail "no finding for a server without AOF: $(cat "$TEST_TMPDIR/out")"
grep -q "^  fix: appendonly yes" "$TEST_TMPDIR/out" ||
    fail "no fix line: $(cat "$TEST_TMPDIR/out")"
expect 78 "$RL" acquire --strict dk
grep -q "no-persistence" "$TEST_TMPDIR/err" ||
    fail "--strict did not name the finding: $(cat "$TEST_TMPDIR/err")"
[ ! -s "$TEST_TMPDIR/out" ] || fail "--strict printed a token"
[ "$(rcli exists dk)" = 0 ] || fail "--strict left a lock behind"

rcli config set appendonly yes >/dev/null
rcli config set appendfsync always >/dev/null
# Turning the append-only file on rewrites it in the background, and its
# end (then each write's fsync) can hold the server up past the 2 s
# command timeout on a loaded box (Redis 8.6.3, 2026-12-03): the rewrite
# is waited for, and the lock's commands get 10 s.
i=0
until rcli info persistence | grep -q "^aof_rewrite_in_progress:0" &&
    rcli info persistence | grep -q "^aof_rewrite_scheduled:0"; do
    i=$((i + 1))
    [ "$i" -le 100 ] || fail "the append-only file's rewrite did not end in 10 s"
    sleep 0.1
done
expect 0 "$RL" doctor --clock 100ms
grep -q "^no findings" "$TEST_TMPDIR/out" ||
    fail "a clean server: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" doctor --json
out_is "[]"
tok=$("$RL" --command-timeout 10s acquire --strict dk)
"$RL" --command-timeout 10s release dk "$tok"

rcli config set maxmemory-policy allkeys-lru >/dev/null
expect 78 "$RL" doctor --json --clock 0
case $(cat "$TEST_TMPDIR/out") in
'['*'{"server":"'*'","risk":"eviction","what":"maxmemory-policy is allkeys-lru'*'","fix":"CONFIG SET maxmemory-policy noeviction'*'}'*']') ;;
*) fail "doctor --json: $(cat "$TEST_TMPDIR/out")" ;;
esac
"$PYTHON" -c 'import json,sys; a=json.load(open(sys.argv[1])); assert len(a) == 1 and a[0]["risk"] == "eviction"' \
    "$TEST_TMPDIR/out" || fail "doctor --json is not the one finding"
rcli config set maxmemory-policy noeviction >/dev/null

# Judged against the guards it is given.
rcli config set appendfsync everysec >/dev/null
expect 78 "$RL" doctor --clock 0
grep -q ": fsync: appendfsync is everysec" "$TEST_TMPDIR/out" ||
    fail "no fsync finding: $(cat "$TEST_TMPDIR/out")"
rcli config set appendfsync no >/dev/null
expect 78 "$RL" doctor --clock 0 --wait-aof-local
grep -q "WAITAOF\|appendfsync" "$TEST_TMPDIR/err" ||
    fail "--wait-aof-local with appendfsync no: $(cat "$TEST_TMPDIR/err")"
rcli config set appendfsync always >/dev/null

# A server that does not answer, and usage errors.
expect 69 "$RL" -u "unix://$TEST_TMPDIR/nothing.sock" doctor --clock 0
expect 64 "$RL" doctor extra
expect 64 "$RL" doctor --clock 61s
expect 64 "$RL" doctor --clock soon
rcli config set appendonly no >/dev/null
exit 0
