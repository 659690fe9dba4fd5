#!/bin/sh
# --sequencer and check: a holder's sequencer (FENCE:DIGEST) checks out
# while it holds the lock; once the lock is free or another's, check says
# so with its exit status; what is not a sequencer is a usage error.
set -eu
. "$(dirname "$0")/lib.inc"

# acquire prints the token, then the sequencer, whose fence part is the
# lock's fencing token and which holds nothing of the token.
expect 0 "$RL" acquire --sequencer -t 10s sq-key
token=$(sed -n 1p "$TEST_TMPDIR/out")
seq=$(sed -n 2p "$TEST_TMPDIR/out")
printf '%s\n' "$seq" | grep -Eq '^[1-9][0-9]*:[0-9a-f]{40}$' ||
    fail "acquire --sequencer printed '$seq'"
case $seq in *"${token#rl?-}"*) fail "the sequencer holds the token" ;; esac
expect 0 "$RL" check sq-key "$seq"
err_empty
expect 0 "$RL" release sq-key "$token"
expect 1 "$RL" check sq-key "$seq"
err_has "stale sequencer.*free"
one_error_line
expect 0 "$RL" acquire -t 10s sq-key
other=$(cat "$TEST_TMPDIR/out")
expect 2 "$RL" check sq-key "$seq"
err_has "another holder"
expect 0 "$RL" release sq-key "$other"

# run hands its command REDISLOCK_SEQUENCER; the command's resource
# checks it while run holds the lock.
expect 0 "$RL" run --sequencer sq-key -- sh -c \
    '"$1" check "$REDISLOCK_KEY" "$REDISLOCK_SEQUENCER" &&
     printf %s "$REDISLOCK_SEQUENCER" >"$2"' sh "$RL" "$TEST_TMPDIR/seen"
[ -s "$TEST_TMPDIR/seen" ] || fail "run's command saw no sequencer"
expect 1 "$RL" check sq-key "$(cat "$TEST_TMPDIR/seen")"
# Without --sequencer nothing is set.
expect 0 "$RL" run sq-key -- sh -c \
    '[ -z "${REDISLOCK_SEQUENCER:-}" ]'

# Not sequencers, and what none is made for: usage errors, nothing held.
for bad in '' 12 '12:xyz' "0:$(printf '%040d' 0)" "$token"; do
    expect 64 "$RL" check sq-key "$bad"
    one_error_line
done
expect 64 "$RL" check sq-key
one_error_line
expect 64 "$RL" acquire --sequencer -s sq-key
err_has "not a share"
expect 64 "$RL" acquire --sequencer --limit 2 sq-key
err_has "semaphore"
expect 64 "$RL" acquire --sequencer -k sq-two sq-key
err_has "sequencer"
key_gone sq-key || fail "a refused acquire took the lock"
# A semaphore's key: check cannot name its holders yet.
expect 0 "$RL" acquire --limit 2 sq-key
expect 65 "$RL" check sq-key "12:$(printf '%040d' 0)"
one_error_line
