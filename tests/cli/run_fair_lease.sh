#!/bin/sh
# run --fair: a lock handed over by a release comes with a short lease
# (3 to 5 s: what is left of the waiter's liveness, which each of its
# attempts sets to 5 s), which the library's watchdog
# renews to the full TTL soon after. The guardian's deadline follows that
# renewal: a command that outlives the hand-off's lease runs to its end,
# for a lock, a share (-s) and a semaphore's permit (--limit 2).
set -eu
. "$SRCDIR/tests/cli/lib.inc"

# queued KEY: KEY's fair queue has a member.
queued() {
    [ "$(rcli zcard "$1{$1}:rl-q")" -ge 1 ]
}

# waiter NAME KEY ARGS...: a fair run of KEY, queued behind its holder,
# whose command outlives the longest hand-off lease (5 s).
waiter() {
    name=$1
    key=$2
    shift 2
    bg "$name" "$RL" run --verbose --fair -t 30s "$@" "$key" -- \
        sh -c 'sleep 5.5; echo done'
    wait_until 10 queued "$key" || fail "$name never queued"
}

lock=$("$RL" acquire -t 30s fl1)
share=$("$RL" acquire -t 30s fl2)
p1=$("$RL" acquire --limit 2 -t 30s fl3)
p2=$("$RL" acquire --limit 2 -t 30s fl3)
waiter lock fl1
waiter share fl2 -s
waiter permit fl3 --limit 2
expect 0 "$RL" release fl1 "$lock"
expect 0 "$RL" release fl2 "$share"
expect 0 "$RL" release fl3 "$p1"
bad=
for name in lock share permit; do
    bg_wait "$name" 15
    # The hand-off's short lease, then its renewal to the full TTL.
    grep -Eq 'valid for [1-5][0-9]{3} ms, fence' "$TEST_TMPDIR/$name.err" ||
        fail "$name: no short hand-off lease: $(cat "$TEST_TMPDIR/$name.err")"
    if [ "$rc" != 0 ] || [ "$(cat "$TEST_TMPDIR/$name.out")" != done ]; then
        echo "$name: exited $rc: $(cat "$TEST_TMPDIR/$name.err")" >&2
        bad="$bad $name"
    fi
done
[ -z "$bad" ] || fail "the command was killed under a renewed lease:$bad"
expect 0 "$RL" release fl3 "$p2"
exit 0
