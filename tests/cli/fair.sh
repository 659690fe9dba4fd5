#!/bin/sh
# run --fair: waiters get the lock in the order they arrived.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

RL=$REDISLOCK_BIN
order=$TEST_TMPDIR/order
: >"$order"

queue='fq{fq}:rl-q'
# queue_up N ARGS...: starts a fair waiter "run ARGS" in the background
# and waits until fq's queue has N members, so that the next one starts
# only once this one is in the queue.
queue_up() {
    want=$1
    shift
    "$RL" run --fair -w 20 "$@" &
    pids="$pids $!"
    n=0
    while [ "$(rcli zcard "$queue")" -lt "$want" ]; do
        n=$((n + 1))
        [ "$n" -lt 100 ] || fail "waiter $want never queued"
        sleep 0.05
    done
}

tok=$("$RL" acquire -t 30s fq)
pids=
for i in 1 2 3; do
    queue_up "$i" fq -- sh -c "echo $i >>'$order'; sleep 0.1"
done
expect 0 "$RL" release fq "$tok"
for p in $pids; do
    wait "$p" || fail "a fair waiter failed"
done
[ "$(tr '\n' ' ' <"$order")" = "1 2 3 " ] ||
    fail "order was $(tr '\n' ' ' <"$order"), want 1 2 3"

# run --limit 2 --fair: permits in arrival order. Each release hands its
# permit to the next waiter at once: a newcomer that tries then (-n)
# finds none.
: >"$order"
t1=$("$RL" acquire --limit 2 -t 30s fq)
t2=$("$RL" acquire --limit 2 -t 30s fq)
pids=
for i in 1 2 3; do
    queue_up "$i" --limit 2 fq -- \
        sh -c "echo \"\$REDISLOCK_FENCE $i\" >>'$order'; sleep 0.2"
done
expect 0 "$RL" release fq "$t1"
expect 1 "$RL" run -n --limit 2 fq -- true
expect 0 "$RL" release fq "$t2"
for p in $pids; do
    wait "$p" || fail "a fair permit waiter failed"
done
# Permits 1 and 2 are held at once, so their commands may write in
# either order: the fencing tokens say the order they were handed in.
[ "$(grep -c '^[0-9][0-9]* [123]$' "$order")" = 3 ] ||
    fail "a permit's command had no REDISLOCK_FENCE: $(tr '\n' ' ' <"$order")"
[ "$(sort -n "$order" | cut -d' ' -f2 | tr '\n' ' ')" = "1 2 3 " ] ||
    fail "permit order was $(sort -n "$order" | tr '\n' ' '), want 1 2 3"
key_gone fq || fail "the semaphore is left"

# run -s --fair: readers and writers in one arrival order. Behind a
# writer, readers r1 and r2, writer w and reader r3 queue; the release
# lets r1 and r2 in together, then w alone, then r3.
: >"$order"
tok=$("$RL" acquire -t 30s fq)
pids=
queue_up 1 -s fq -- sh -c "echo r1 >>'$order'; sleep 0.3; echo r1. >>'$order'"
queue_up 2 -s fq -- sh -c "echo r2 >>'$order'; sleep 0.3; echo r2. >>'$order'"
queue_up 3 fq -- sh -c "echo w >>'$order'; sleep 0.1; echo w. >>'$order'"
queue_up 4 -s fq -- sh -c "echo r3 >>'$order'; echo r3. >>'$order'"
expect 0 "$RL" release fq "$tok"
for p in $pids; do
    wait "$p" || fail "a fair reader or writer failed"
done
got=$(tr '\n' ' ' <"$order")
case $got in
"r1 r2 r1. r2. w w. r3 r3. " | "r1 r2 r2. r1. w w. r3 r3. " | \
    "r2 r1 r1. r2. w w. r3 r3. " | "r2 r1 r2. r1. w w. r3 r3. ") ;;
*) fail "readers and writer ran as: $got" ;;
esac
key_gone fq || fail "the lock is left"
exit 0
