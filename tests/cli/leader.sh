#!/bin/sh
# leader: prints an election's leader (exit 0) or "none" (exit 1), as text
# or JSON; --watch prints each change in order, a gap with the state read
# again, until SIGINT or SIGTERM (exit 0).
set -eu
. "$(dirname "$0")/lib.inc"

rec='ld-key{ld-key}:rl-elect'
expect 1 "$RL" leader ld-key
out_is none
expect 1 "$RL" leader --json ld-key
out_is '{"n":0,"leader":false,"term":0,"id":null,"value":null,"ttl_ms":0}'

# A watcher from before the first election sees each change of a leader
# that comes and resigns, and of one whose key runs out.
bg watch "$RL" leader --watch ld-key
wait_until 10 test -s "$TEST_TMPDIR/watch.out" || fail "no first line"
expect 0 "$RL" elect --value v1 --owner c1 ld-key -- true
expect 0 "$RL" elect --value v2 --owner c2 ld-key -- true
wait_until 10 sh -c "[ \$(wc -l <'$TEST_TMPDIR/watch.out') -ge 5 ]" ||
    fail "the watcher printed: $(cat "$TEST_TMPDIR/watch.out")"
kill -TERM "$bg_pid"
bg_wait watch 10
[ "$rc" = 0 ] || fail "leader --watch exited $rc after SIGTERM"
sed 's/term=[0-9]*/term=T/; s/ ttl_ms=[0-9]*//' "$TEST_TMPDIR/watch.out" \
    >"$TEST_TMPDIR/watch.txt"
cat >"$TEST_TMPDIR/want" <<'WANT'
none
elected n=1 term=T id=c1 value=v1
resigned n=2 term=T
elected n=3 term=T id=c2 value=v2
resigned n=4 term=T
WANT
diff "$TEST_TMPDIR/want" "$TEST_TMPDIR/watch.txt" >&2 ||
    fail "leader --watch printed other lines"
# Terms rise.
t1=$(sed -n 2p "$TEST_TMPDIR/watch.out" | sed 's/.*term=\([0-9]*\).*/\1/')
t3=$(sed -n 4p "$TEST_TMPDIR/watch.out" | sed 's/.*term=\([0-9]*\).*/\1/')
[ "$t3" -gt "$t1" ] || fail "terms $t1 then $t3"

# A leader now, in JSON; then a watcher whose record is trimmed hears a
# gap with the leader, and the leader's expiry.
bg lead "$RL" elect --value v3 --owner c3 ld-key -- sh -c \
    'while [ ! -e "$1" ]; do sleep 0.05; done' sh "$TEST_TMPDIR/go"
wait_until 10 key_exists ld-key || fail "elect did not lead"
expect 0 "$RL" leader --json ld-key
grep -q '"leader":true,"term":[1-9][0-9]*,"id":"c3","value":"v3","ttl_ms":' \
    "$TEST_TMPDIR/out" || fail "leader --json printed $(cat "$TEST_TMPDIR/out")"
bg watch2 "$RL" leader --watch --json ld-key
wait_until 10 test -s "$TEST_TMPDIR/watch2.out" || fail "no first line"
# The record begun again, in one step (a watcher may look between two).
rcli eval "redis.call('del', KEYS[1])
    redis.call('xadd', KEYS[1], '1-0', 'kind', 'proclaimed', 'term', '1',
               'id', 'x', 'value', 'y')" 1 "$rec" >/dev/null
wait_until 10 grep -q '"change":"gap"' "$TEST_TMPDIR/watch2.out" ||
    fail "no gap: $(cat "$TEST_TMPDIR/watch2.out")"
grep -q '"change":"gap","n":1,"leader":true,.*"id":"c3","value":"v3"' \
    "$TEST_TMPDIR/watch2.out" || fail "the gap: $(cat "$TEST_TMPDIR/watch2.out")"
kill -STOP "$(cat "$TEST_TMPDIR/lead.pid")"
rcli del ld-key >/dev/null
wait_until 10 grep -q '"change":"expired"' "$TEST_TMPDIR/watch2.out" ||
    fail "no expiry: $(cat "$TEST_TMPDIR/watch2.out")"
kill -INT "$bg_pid"
bg_wait watch2 10
[ "$rc" = 0 ] || fail "leader --watch exited $rc after SIGINT"
kill -9 "$(cat "$TEST_TMPDIR/lead.pid")"
: >"$TEST_TMPDIR/go"

expect 64 "$RL" leader
one_error_line
expect 64 "$RL" leader a b
one_error_line
