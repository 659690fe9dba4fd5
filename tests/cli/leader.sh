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

# A watcher rides through its server's restart (kill -9, then started
# again on the same socket, empty): it keeps running, says nothing on
# standard error, and the history it lost comes as a gap, the new leader
# after it.
more_servers 1
xu=unix://$xdir/x1.sock
bg watch3 "$RL" -u "$xu" leader --watch ld3
wait_until 10 test -s "$TEST_TMPDIR/watch3.out" || fail "no first line"
expect 0 "$RL" -u "$xu" elect --value w1 --owner d1 ld3 -- true
wait_until 10 grep -q '^resigned n=2 ' "$TEST_TMPDIR/watch3.out" ||
    fail "the watcher printed: $(cat "$TEST_TMPDIR/watch3.out")"
kill -9 "$xpid1"
"$server" --port 0 --unixsocket "$xdir/x1.sock" --save '' --appendonly no \
    --dir "$xdir" >"$TEST_TMPDIR/x1b.log" 2>&1 &
on_exit_kill "$!"
wait_until 10 sh -c '[ "$("$0" -s "$1" ping 2>/dev/null)" = PONG ]' \
    "$REDIS_CLI" "$xdir/x1.sock" || fail "the server did not come back"
bg lead3 "$RL" -u "$xu" elect --value w2 --owner d2 ld3 -- sh -c \
    'while [ ! -e "$1" ]; do sleep 0.05; done' sh "$TEST_TMPDIR/go3"
wait_until 15 grep -q ' id=d2 value=w2' "$TEST_TMPDIR/watch3.out" ||
    fail "the watcher printed: $(cat "$TEST_TMPDIR/watch3.out")"
grep -q '^gap ' "$TEST_TMPDIR/watch3.out" ||
    fail "no gap: $(cat "$TEST_TMPDIR/watch3.out")"
[ ! -s "$TEST_TMPDIR/watch3.err" ] ||
    fail "the watcher said: $(cat "$TEST_TMPDIR/watch3.err")"
kill -TERM "$(cat "$TEST_TMPDIR/watch3.pid")"
bg_wait watch3 10
[ "$rc" = 0 ] || fail "leader --watch exited $rc after its server's restart"
: >"$TEST_TMPDIR/go3"
bg_wait lead3 10

expect 64 "$RL" leader
one_error_line
expect 64 "$RL" leader a b
one_error_line
