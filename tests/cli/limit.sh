#!/bin/sh
# run --limit N: a counting semaphore, as consul lock -n N: at most N
# commands hold KEY at once; the others wait, or with -n exit 1.
set -eu
. "$(dirname "$0")/lib.inc"

D=$TEST_TMPDIR
# hold NAME: a command that says it runs (NAME.in), then waits for go
# (at most 20 s, then fails).
hold() {
    echo "touch '$D/$1.in'; i=0; while [ ! -e '$D/go' ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done; [ -e '$D/go' ]"
}

# Two holders at once under --limit 2; a third cannot get in.
bg a "$RL" run --limit 2 sem -c "$(hold a)"
bg b "$RL" run --limit 2 sem -c "$(hold b)"
wait_until 10 test -e "$D/a.in" -a -e "$D/b.in" ||
    fail "two --limit 2 commands did not run at once"
[ "$(rcli zcard sem)" = 3 ] || fail "the set holds $(rcli zcard sem) members"
expect 1 "$RL" run -n --limit 2 sem -- touch "$D/ran"
err_empty
[ ! -e "$D/ran" ] || fail "a third command ran under --limit 2"
# A plain lock of the key is held too.
expect 1 "$RL" run -n sem -- true
# Another limit for the key is refused, naming the fix.
expect 65 "$RL" run -n --limit 3 sem -- true
err_has "in use as a semaphore of limit 2 and this call asked for a \
semaphore of limit 3: use one kind, and one limit"
# A waiter gets in when one holder ends.
bg c "$RL" run -w 20 --limit 2 sem -c "touch '$D/c.in'"
sleep 0.3
[ ! -e "$D/c.in" ] || fail "the waiter ran while two held"
touch "$D/go"
bg_wait a 20
[ "$rc" = 0 ] || fail "a exited $rc: $(cat "$D/a.err")"
bg_wait b 20
[ "$rc" = 0 ] || fail "b exited $rc: $(cat "$D/b.err")"
bg_wait c 20
[ "$rc" = 0 ] || fail "c exited $rc: $(cat "$D/c.err")"
key_gone sem || fail "the semaphore's key is left"

# Bad values and mixes: usage errors, nothing written.
expect 64 "$RL" run --limit 0 sem -- true
err_has "limit"
expect 64 "$RL" run --limit x sem -- true
expect 64 "$RL" run --limit 2 --hold-after 1s sem -- touch "$D/ran"
err_has "hold-after"
[ ! -e "$D/ran" ] || fail "--limit --hold-after ran the command"
key_gone sem || fail "a refused run left the key"

# status and list show a semaphore's live permits and its limit.
rm -f "$D/go"
bg s1 "$RL" run --limit 3 sem -c "$(hold s1)"
bg s2 "$RL" run --limit 3 sem -c "$(hold s2)"
wait_until 10 test -e "$D/s1.in" -a -e "$D/s2.in" || fail "s1, s2 did not run"
expect 0 "$RL" status sem
grep -Eq '^held ttl_ms=[0-9]+ permits=2 limit=3 leases_ms=[0-9]+,[0-9]+$' "$D/out" ||
    fail "status: $(cat "$D/out")"
expect 0 "$RL" status --json sem
grep -Eq '^\{"key":"sem","held":true,"ttl_ms":[0-9]+,"permits":2,"limit":3,"leases_ms":\[[0-9]+,[0-9]+\]\}$' "$D/out" ||
    fail "status --json: $(cat "$D/out")"
expect 0 "$RL" list
grep -Eq '^sem ttl_ms=[0-9]+ permits=2 limit=3 leases_ms=[0-9]+,[0-9]+$' "$D/out" ||
    fail "list: $(cat "$D/out")"
touch "$D/go"
bg_wait s1 20
bg_wait s2 20
key_gone sem || fail "the semaphore's key is left"

# acquire --limit prints a permit's token; release and extend take it.
expect 0 "$RL" acquire --limit 2 -t 20s sem
t1=$(cat "$D/out")
expect 0 "$RL" acquire --limit 2 -t 20s sem
t2=$(cat "$D/out")
expect 1 "$RL" acquire -n --limit 2 sem
expect 0 "$RL" extend -t 30s sem "$t1"
between 25000 30000 "$(rcli pttl sem)" "pttl after extending a permit"
expect 64 "$RL" release --hold-after 1s sem "$t1"
err_has "semaphore"
expect 0 "$RL" release sem "$t1"
expect 0 "$RL" release sem "$t2"
key_gone sem || fail "the permits' key is left"
expect 1 "$RL" release sem "$t2"
