#!/bin/sh
# --hold-after: a released lock stays reserved that long (a cooldown),
# then frees itself.
set -eu
. "$(dirname "$0")/lib.inc"

# The holds checked by the next command last 3 s: on a loaded machine a
# command can take more than a second to start, and a 1 s hold was over
# before it looked. A waiter gets in once the hold is over, and not
# before: HOLD_MS after a time taken before the hold began.
HOLD_MS=3000

# release --hold-after 3s: nobody gets in at once, a waiter after it.
expect 0 "$RL" acquire -t 20s ha-key
token=$(cat "$TEST_TMPDIR/out")
t0=$(now_ms)
expect 0 "$RL" release --hold-after 3s ha-key "$token"
expect 1 "$RL" run -n ha-key -- touch "$TEST_TMPDIR/ran"
err_empty
[ ! -e "$TEST_TMPDIR/ran" ] || fail "the command ran during the hold"
expect 0 "$RL" run -w 10 ha-key -- touch "$TEST_TMPDIR/ran"
t1=$(now_ms)
[ -e "$TEST_TMPDIR/ran" ] || fail "the command did not run after the hold"
# now_ms counts in 10 ms steps.
[ "$((t1 - t0))" -ge $((HOLD_MS - 20)) ] ||
    fail "the waiter got in $((t1 - t0)) ms after a 3 s hold began"
key_gone ha-key || fail "run left the lock"

# The hold is a lease of its own that nobody owns: the old token can
# neither extend nor release it, and status shows it held, reserved.
expect 0 "$RL" acquire -t 20s ha-key
token=$(cat "$TEST_TMPDIR/out")
expect 0 "$RL" release --hold-after 20s ha-key "$token"
between 15000 20000 "$(rcli pttl ha-key)" "pttl during a 20 s hold"
expect 2 "$RL" release ha-key "$token"
expect 2 "$RL" extend ha-key "$token"
expect 0 "$RL" status ha-key
grep -Eq '^held ttl_ms=[0-9]+ reserved$' "$TEST_TMPDIR/out" ||
    fail "status during the hold: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list
grep -Eq '^ha-key ttl_ms=[0-9]+ reserved$' "$TEST_TMPDIR/out" ||
    fail "list during the hold: $(cat "$TEST_TMPDIR/out")"
rcli del ha-key >/dev/null

# run --hold-after 3s: the hold starts when the command ends, and a
# waiter gets in once it is over.
t0=$(now_ms)
expect 0 "$RL" run --hold-after 3s ha-key -- true
expect 1 "$RL" run -n ha-key -- true
expect 0 "$RL" run -w 10 ha-key -- true
t1=$(now_ms)
[ "$((t1 - t0))" -ge $((HOLD_MS - 20)) ] ||
    fail "the waiter got in $((t1 - t0)) ms after a 3 s hold began"
key_gone ha-key || fail "run left the lock"

# A command that fails still leaves the hold; run passes its status on.
expect 3 "$RL" run --hold-after 20s ha-key -- sh -c 'exit 3'
between 15000 20000 "$(rcli pttl ha-key)" "pttl after a failed command"
rcli del ha-key >/dev/null

# With --owner, the hold follows the last hold's release only.
expect 0 "$RL" acquire --owner o1 ha-key
expect 0 "$RL" acquire --owner o1 ha-key
expect 0 "$RL" release --hold-after 20s --owner o1 ha-key
expect 0 "$RL" status --json ha-key
grep -q '"holds":1,"owner":"o1"' "$TEST_TMPDIR/out" ||
    fail "status after one release: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" release --hold-after 20s --owner o1 ha-key
expect 1 "$RL" acquire -n --owner o1 ha-key
between 15000 20000 "$(rcli pttl ha-key)" "pttl after the last release"
rcli del ha-key >/dev/null

# --hold-after 0 is a plain release; bad values are usage errors.
expect 0 "$RL" acquire ha-key
token=$(cat "$TEST_TMPDIR/out")
expect 0 "$RL" release --hold-after 0 ha-key "$token"
key_gone ha-key || fail "--hold-after 0 kept the lock"
for bad in -1s soon 1000h; do
    expect 64 "$RL" release --hold-after "$bad" ha-key tok
    one_error_line
    expect 64 "$RL" run --hold-after "$bad" ha-key -- true
done
expect 64 "$RL" acquire --hold-after 1s ha-key
exit 0
