#!/bin/sh
# elect: run a command while leading an election. The command sees its
# term (REDISLOCK_TERM, = REDISLOCK_FENCE); a standby waits and leads at
# the leader's end (its resignation); a leader that loses its lease has
# its command stopped and exits 75; -n against a leader exits 1.
set -eu
. "$(dirname "$0")/lib.inc"

# The command runs as leader, with its value recorded and its term set.
expect 0 "$RL" elect --value "host-a:80" el-key -- sh -c \
    '[ "$REDISLOCK_TERM" = "$REDISLOCK_FENCE" ] &&
     "$1" leader el-key >"$2"' sh "$RL" "$TEST_TMPDIR/seen"
grep -q '^leader term=[1-9][0-9]* id=[^ ]* value=host-a:80 ttl_ms=' \
    "$TEST_TMPDIR/seen" || fail "leader printed '$(cat "$TEST_TMPDIR/seen")'"
# It resigned at the command's end: the key is free, the record says so.
key_gone el-key || fail "elect left the key after its command"
expect 1 "$RL" leader el-key
out_is none
[ "$(rcli xlen 'el-key{el-key}:rl-elect')" = 2 ] ||
    fail "the record holds $(rcli xlen 'el-key{el-key}:rl-elect') entries"
[ "$(rcli xrevrange 'el-key{el-key}:rl-elect' + - count 1 | sed -n 3p)" = \
    resigned ] || fail "the last entry is not the resignation"

# The command's status passes through; a standby waits (hot) and leads
# once the leader's command ends.
bg lead "$RL" elect --owner cand-a el-key -- sh -c \
    'while [ ! -e "$1" ]; do sleep 0.05; done; exit 3' sh "$TEST_TMPDIR/go"
wait_until 10 key_exists el-key || fail "the leader did not lead"
expect 1 "$RL" elect -n el-key -- true
bg standby "$RL" elect --fair --owner cand-b el-key -- sh -c \
    '"$1" leader el-key >"$2"' sh "$RL" "$TEST_TMPDIR/second"
wait_until 10 sh -c "[ \"\$($REDIS_CLI -s $REDIS_SOCK zcard 'el-key{el-key}:rl-q')\" -ge 1 ]" ||
    fail "the standby did not queue"
: >"$TEST_TMPDIR/go"
bg_wait lead 10
[ "$rc" = 3 ] || fail "the leader's elect exited $rc, not its command's 3"
bg_wait standby 10
[ "$rc" = 0 ] || fail "the standby exited $rc"
grep -q 'id=cand-b' "$TEST_TMPDIR/second" ||
    fail "the standby saw '$(cat "$TEST_TMPDIR/second")'"

# A leader whose lease is taken from it: the command is stopped, exit 75.
bg lost "$RL" elect -t 3s el-key -- sh -c \
    'trap "exit 0" TERM; while :; do sleep 0.05; done'
wait_until 10 key_exists el-key || fail "elect did not lead"
rcli del el-key >/dev/null
bg_wait lost 10
[ "$rc" = 75 ] || fail "the leader that lost its lease exited $rc, not 75"

# --verbose says it resigned.
expect 0 "$RL" elect --verbose el-key -- true
err_has "resigned, released lock 'el-key'"

# What an election is not: usage errors, nothing taken.
expect 64 "$RL" elect --value "$(printf 'tab\there')" el-key -- true
one_error_line
expect 64 "$RL" elect -s el-key -- true
err_has "one key"
expect 64 "$RL" elect --metadata x el-key -- true
err_has "value"
expect 64 "$RL" elect el-key
one_error_line
key_gone el-key || fail "a refused elect took the key"
