#!/bin/sh
# run --fair: waiters get the lock in the order they arrived.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

RL=$REDISLOCK_BIN
order=$TEST_TMPDIR/order
: >"$order"

tok=$("$RL" acquire -t 30s fq)
queue='fq{fq}:rl-q'
pids=
for i in 1 2 3; do
    "$RL" run --fair -w 20 fq -- sh -c "echo $i >>'$order'; sleep 0.1" &
    pids="$pids $!"
    # The next waiter starts only once this one is in the queue.
    n=0
    while [ "$(rcli zcard "$queue")" -lt "$i" ]; do
        n=$((n + 1))
        [ "$n" -lt 100 ] || fail "waiter $i never queued"
        sleep 0.05
    done
done
expect 0 "$RL" release fq "$tok"
for p in $pids; do
    wait "$p" || fail "a fair waiter failed"
done
[ "$(tr '\n' ' ' <"$order")" = "1 2 3 " ] ||
    fail "order was $(tr '\n' ' ' <"$order"), want 1 2 3"
exit 0
