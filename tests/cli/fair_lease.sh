#!/bin/sh
# --fair: a lock handed over by a release comes with a short lease (3 to
# 5 s: what is left of the waiter's liveness, which each of its attempts
# sets to 5 s), which the library's watchdog renews to the full TTL soon
# after. run's guardian follows that renewal: a command that outlives the
# hand-off's lease runs to its end. acquire, which exits at once, renews
# the lease to the TTL itself. For a lock, a share (-s) and a semaphore's
# permit (--limit 2).
#
# A waiter counts a hand-off's lease from its last attempt, and confirms
# with an attempt (which makes the lease the TTL) when less than half of
# it is left by that count: a release that comes over ~1.6 s after the
# waiter's last heartbeat (every 2 s) takes that path, and the short lease
# this test is about never shows. So each key is released just after its
# waiter's heartbeat (fresh), not when the test's other steps are done:
# on a loaded box they took 1.7 s (CI of 5d3fd56).
set -eu
. "$SRCDIR/tests/cli/lib.inc"

# queued KEY: KEY's fair queue has a member.
queued() {
    [ "$(rcli zcard "$1{$1}:rl-q")" -ge 1 ]
}

# waiter NAME KEY ARGS...: a fair ARGS of KEY ("run ... --" or
# "acquire"), queued behind its holder.
waiter() {
    name=$1
    key=$2
    shift 2
    bg "$name" "$RL" "$@"
    wait_until 10 queued "$key" || fail "$name never queued"
}

# hold K1 K2 K3: a lock on K1, a lock on K2 (for a share to wait for),
# both permits of 2 on K3.
hold() {
    lock=$("$RL" acquire -t 30s "$1")
    share=$("$RL" acquire -t 30s "$2")
    p1=$("$RL" acquire --limit 2 -t 30s "$3")
    "$RL" acquire --limit 2 -t 30s "$3" >/dev/null
}
# fresh KEY: the first waiter in KEY's queue made its last attempt less
# than 600 ms ago (its entry's alive time, the server's clock at that
# attempt + 5 s, is at least 4.4 s away).
fresh() {
    left=$(rcli eval "
        local id = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
        local e = id and redis.call('HGET', KEYS[2], id)
        if not e then return -1 end
        local t = redis.call('TIME')
        return tonumber(string.match(e, '^(%d+)')) -
            (t[1] * 1000 + math.floor(t[2] / 1000))" \
        2 "$1{$1}:rl-q" "$1{$1}:rl-ws")
    [ "$left" -ge 4400 ]
}

# hand_over K1 K2 K3: each is released (K3: one permit), handed to the
# waiter; with --fresh, just after the waiter's heartbeat.
hand_over() {
    f=
    if [ "$1" = --fresh ]; then
        f=1
        shift
    fi
    for kt in "$1:$lock" "$2:$share" "$3:$p1"; do
        [ -z "$f" ] || wait_until 10 fresh "${kt%%:*}" ||
            fail "${kt%%:*}'s waiter made no attempt"
        expect 0 "$RL" release "${kt%%:*}" "${kt#*:}"
    done
}

# run: the command outlives the longest hand-off lease.
cmd="sleep 5.5; echo done"
hold fl1 fl2 fl3
waiter lock fl1 run --verbose --fair -t 30s fl1 -- sh -c "$cmd"
waiter share fl2 run --verbose --fair -t 30s -s fl2 -- sh -c "$cmd"
waiter permit fl3 run --verbose --fair -t 30s --limit 2 fl3 -- sh -c "$cmd"
hand_over --fresh fl1 fl2 fl3
# acquire, meanwhile: the lease of the token it prints is the TTL.
hold fa1 fa2 fa3
waiter alock fa1 acquire --fair -t 30s fa1
waiter ashare fa2 acquire --fair -t 30s -s fa2
waiter apermit fa3 acquire --fair -t 30s --limit 2 fa3
hand_over fa1 fa2 fa3
for name in alock:fa1 ashare:fa2 apermit:fa3; do
    bg_wait "${name%:*}" 15
    [ "$rc" = 0 ] || fail "acquire --fair (${name%:*}) exited $rc"
    ttl=$(rcli pttl "${name#*:}")
    between 20000 30000 "$ttl" "the lease of ${name%:*}'s token"
done
bad=
for name in lock share permit; do
    bg_wait "$name" 15
    # The hand-off's short lease, then its renewal to the full TTL.
    grep -Eq 'valid for [1-5][0-9]{3} ms, fence' "$TEST_TMPDIR/$name.err" ||
        fail "$name: no short hand-off lease: $(cat "$TEST_TMPDIR/$name.err")"
    if [ "$rc" != 0 ] || [ "$(cat "$TEST_TMPDIR/$name.out")" != "done" ]; then
        echo "$name: exited $rc: $(cat "$TEST_TMPDIR/$name.err")" >&2
        bad="$bad $name"
    fi
done
[ -z "$bad" ] || fail "the command was killed under a renewed lease:$bad"
exit 0
