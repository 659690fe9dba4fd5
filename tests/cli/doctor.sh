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
expect 0 "$RL" doctor --clock 100ms
grep -q "^no findings" "$TEST_TMPDIR/out" ||
    fail "a clean server: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" doctor --json
out_is "[]"
tok=$("$RL" acquire --strict dk)
"$RL" release dk "$tok"

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
