#!/bin/sh
# --lock-delay: a holder that fails (its lease ends without a release)
# keeps everyone out for the delay after its lease; a release frees the
# key at once. The key's TTL is the lease and the delay.
set -eu
. "$(dirname "$0")/lib.inc"

# acquire's key lives for the lease and the delay; extend keeps the
# delay when told it; release frees the key.
expect 0 "$RL" acquire -t 1s --lock-delay 3s ld-key
token=$(cat "$TEST_TMPDIR/out")
between 3000 4000 "$(rcli pttl ld-key)" "pttl after acquire -t 1s --lock-delay 3s"
expect 0 "$RL" extend -t 10s --lock-delay 3s ld-key "$token"
between 12000 13000 "$(rcli pttl ld-key)" "pttl after extend -t 10s --lock-delay 3s"
expect 0 "$RL" release ld-key "$token"
key_gone ld-key || fail "release left the key"

# A holder that never releases: its lease of 1 s ends, and nobody gets
# in for 2 s more. (acquire exits holding: as far as the server knows,
# a failed holder.)
t0=$(now_ms)
expect 0 "$RL" acquire -t 1s --lock-delay 2s ld-key
expect 1 "$RL" run -n ld-key -- touch "$TEST_TMPDIR/ran"
[ ! -e "$TEST_TMPDIR/ran" ] || fail "the command ran behind the holder"
expect 0 "$RL" run -w 10 ld-key -- touch "$TEST_TMPDIR/ran"
t1=$(now_ms)
[ -e "$TEST_TMPDIR/ran" ] || fail "the command did not run after the delay"
# now_ms counts in 10 ms steps.
[ "$((t1 - t0))" -ge 2980 ] ||
    fail "the waiter got in $((t1 - t0)) ms after a 1 s lease with a 2 s delay"
key_gone ld-key || fail "run left the lock"

# run releases when its command ends: free at once.
expect 0 "$RL" run -t 5s --lock-delay 60s ld-key -- true
expect 0 "$RL" run -n ld-key -- true
key_gone ld-key || fail "run left the lock"

# Bad values and clashes are usage errors; nothing is written.
for bad in -1s 61s soon; do
    expect 64 "$RL" acquire --lock-delay "$bad" ld-key
    one_error_line
done
expect 64 "$RL" acquire -s --lock-delay 1s ld-key
err_has "lock-delay is for an exclusive lock"
expect 64 "$RL" acquire -k ld-other --lock-delay 1s ld-key
err_has "not with --lock-delay"
key_gone ld-key || fail "a refused acquire wrote the key"
