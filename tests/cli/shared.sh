#!/bin/sh
# run -s/--shared: a share of a shared (read-write) lock, as flock -s:
# any number of readers hold KEY at once; an exclusive run and they
# exclude each other; a waiting exclusive run stops new readers.
set -eu
. "$(dirname "$0")/lib.inc"

D=$TEST_TMPDIR
# hold NAME: a command that records its fencing token and says it runs
# (NAME.in), then waits for NAME.go (at most 20 s, then fails).
hold() {
    echo "echo \"\$REDISLOCK_FENCE\" >'$D/$1.fence'; touch '$D/$1.in'; i=0; while [ ! -e '$D/$1.go' ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done; [ -e '$D/$1.go' ]"
}

# ends NAME: lets NAME's command end and checks that run exited 0.
ends() {
    touch "$D/$1.go"
    bg_wait "$1" 20
    [ "$rc" = 0 ] || fail "$1 exited $rc: $(cat "$D/$1.err")"
}

# writer_waits: an exclusive request's wait is recorded in the key.
writer_waits() {
    [ -n "$(rcli zscore rw redislock:writer)" ]
}

# Two readers at once; an exclusive run cannot get in.
bg r1 "$RL" run -s rw -c "$(hold r1)"
bg r2 "$RL" run --shared rw -c "$(hold r2)"
wait_until 10 test -e "$D/r1.in" -a -e "$D/r2.in" ||
    fail "two run -s commands did not run at once"
[ "$(rcli type rw)" = zset ] || fail "the key is a $(rcli type rw)"
[ "$(cat "$D/r1.fence")" != "$(cat "$D/r2.fence")" ] ||
    fail "both readers got fencing token $(cat "$D/r1.fence")"
expect 1 "$RL" run -n rw -- touch "$D/ran"
err_empty
[ ! -e "$D/ran" ] || fail "an exclusive command ran beside two readers"
expect 1 "$RL" acquire -n rw
out_is ""
# --verbose counts the readers.
expect 1 "$RL" run -n --verbose rw -- true
err_has "held shared by 2 readers"

# status and list, text and JSON, while two readers hold.
expect 0 "$RL" status rw
grep -Eq '^held ttl_ms=[0-9]+ readers=2 leases_ms=[0-9]+,[0-9]+$' "$D/out" ||
    fail "status: $(cat "$D/out")"
expect 0 "$RL" status --json rw
grep -Eq '^\{"key":"rw","held":true,"ttl_ms":[0-9]+,"readers":2,"shared":true,"leases_ms":\[[0-9]+,[0-9]+\]\}$' "$D/out" ||
    fail "status --json: $(cat "$D/out")"
expect 0 "$RL" list 'rw*'
grep -Eq '^rw ttl_ms=[0-9]+ readers=2 leases_ms=[0-9]+,[0-9]+$' "$D/out" ||
    fail "list: $(cat "$D/out")"
expect 0 "$RL" list --json 'rw*'
[ "$(sed -n 1p "$D/out")$(sed -n 3p "$D/out")" = "[]" ] ||
    fail "list --json is not one array of one object: $(cat "$D/out")"
sed -n 2p "$D/out" | grep -Eq '^\{"key":"rw","held":true,"ttl_ms":[0-9]+,"readers":2,"shared":true,"leases_ms":\[[0-9]+,[0-9]+\]\}$' ||
    fail "list --json: $(cat "$D/out")"
ends r1
expect 0 "$RL" status rw
grep -Eq '^held ttl_ms=[0-9]+ readers=1 leases_ms=[0-9]+$' "$D/out" ||
    fail "status with one reader left: $(cat "$D/out")"
ends r2
key_gone rw || fail "the last reader left the key"

# An exclusive holder keeps readers out; a waiting reader gets in when
# it ends, with a greater fencing token.
rm -f "$D"/*.in "$D"/*.go
bg w1 "$RL" run rw -c "$(hold w1)"
wait_until 10 test -e "$D/w1.in" || fail "the exclusive command did not run"
expect 1 "$RL" run -s -n rw -- touch "$D/ran"
err_empty
[ ! -e "$D/ran" ] || fail "a reader ran beside an exclusive holder"
expect 1 "$RL" acquire -s -n rw
out_is ""
expect 1 "$RL" run -s -n --verbose rw -- true
err_has "taking a share of lock 'rw'"
bg r3 "$RL" run -s -w 20 rw -c "$(hold r3)"
sleep 0.3
[ ! -e "$D/r3.in" ] || fail "the waiting reader ran beside the holder"
ends w1
wait_until 20 test -e "$D/r3.in" ||
    fail "the waiting reader did not get in: $(cat "$D/r3.err")"
[ "$(cat "$D/r3.fence")" -gt "$(cat "$D/w1.fence")" ] ||
    fail "reader's fence $(cat "$D/r3.fence") <= writer's $(cat "$D/w1.fence")"
ends r3
key_gone rw || fail "the key is left after the reader"

# A waiting exclusive run is served first: the readers already in run
# on, new ones are refused, and it gets the key when the last one ends.
rm -f "$D"/*.in "$D"/*.go
bg r4 "$RL" run -s rw -c "$(hold r4)"
wait_until 10 test -e "$D/r4.in" || fail "r4 did not run"
bg w2 "$RL" run -w 20 rw -c "$(hold w2)"
wait_until 10 writer_waits ||
    fail "no waiting exclusive run in the key: $(rcli zrange rw 0 -1 |
        tr '\n' ' ')"
expect 1 "$RL" run -s -n rw -- touch "$D/ran"
[ ! -e "$D/ran" ] || fail "a new reader ran while an exclusive run waited"
[ ! -e "$D/w2.in" ] || fail "the exclusive run ran beside a reader"
ends r4
wait_until 20 test -e "$D/w2.in" ||
    fail "the waiting exclusive run did not get in: $(cat "$D/w2.err")"
ends w2
key_gone rw || fail "the key is left after the exclusive run"

# Bad mixes: usage errors naming the clash, before anything connects
# (an unreachable server gives 64, not 69) or runs.
for mix in "--limit 2" "--owner me" "--metadata m" "--hold-after 1s"; do
    opt=${mix%% *}
    # shellcheck disable=SC2086 # split on purpose: an option and its value
    expect 64 "$RL" run -s $mix rw -- touch "$D/ran"
    one_error_line
    err_has "shared.*$opt|$opt.*shared"
    # shellcheck disable=SC2086
    expect 64 "$RL" -u redis://127.0.0.1:1 run --shared $mix rw -- \
        touch "$D/ran"
    err_has "shared.*$opt|$opt.*shared"
done
[ ! -e "$D/ran" ] || fail "a refused run -s ran its command"
for mix in "--limit 2" "--owner me" "--metadata m"; do
    opt=${mix%% *}
    # shellcheck disable=SC2086
    expect 64 "$RL" acquire -s $mix rw
    err_has "shared.*$opt|$opt.*shared"
    out_is ""
done
key_gone rw || fail "a refused -s left the key"
[ "$(lock_keys)" = 0 ] || fail "refused -s commands left keys: $(rcli --scan)"

# Each reader's lease is renewed on its own while its command runs.
bg r5 "$RL" run -s -t 1s rw -c 'sleep 2'
bg r6 "$RL" run -s -t 1s rw -c 'sleep 2'
bg_wait r5 20
[ "$rc" = 0 ] || fail "r5 exited $rc: $(cat "$D/r5.err")"
bg_wait r6 20
[ "$rc" = 0 ] || fail "r6 exited $rc: $(cat "$D/r6.err")"
key_gone rw || fail "the key is left after renewed readers"

# A key is a semaphore or a shared lock, never both at once: the library
# refuses the other kind, naming what the key is.
expect 0 "$RL" acquire --limit 2 rw
t1=$(cat "$D/out")
expect 65 "$RL" run -s -n rw -- touch "$D/ran"
err_has "in use as a semaphore of limit 2"
expect 0 "$RL" release rw "$t1"
expect 0 "$RL" acquire -s rw
t1=$(cat "$D/out")
expect 65 "$RL" run --limit 2 -n rw -- touch "$D/ran"
err_has "in use as a shared lock"
expect 0 "$RL" release rw "$t1"
[ ! -e "$D/ran" ] || fail "a command ran on a key of the other kind"
key_gone rw || fail "the key is left after the kinds' refusals"

# acquire -s prints a share's token; extend and release take it.
expect 0 "$RL" acquire -s -t 20s rw
t1=$(cat "$D/out")
expect 0 "$RL" acquire --shared -t 20s rw
t2=$(cat "$D/out")
[ -n "$t1" ] || fail "acquire -s printed no token"
[ "$t1" != "$t2" ] || fail "two shares have the token '$t1'"
expect 1 "$RL" acquire -n rw
expect 0 "$RL" status rw
grep -Eq '^held ttl_ms=[0-9]+ readers=2 leases_ms=[0-9]+,[0-9]+$' "$D/out" ||
    fail "status after two acquire -s: $(cat "$D/out")"
expect 0 "$RL" extend -t 30s rw "$t1"
between 25000 30000 "$(rcli pttl rw)" "pttl after extending a share"
expect 64 "$RL" release --hold-after 1s rw "$t1"
one_error_line
err_has "share"
expect 0 "$RL" release rw "$t1"
expect 0 "$RL" status rw
grep -Eq '^held ttl_ms=[0-9]+ readers=1 leases_ms=[0-9]+$' "$D/out" ||
    fail "status after one release: $(cat "$D/out")"
expect 0 "$RL" release rw "$t2"
key_gone rw || fail "the shares' key is left"
expect 1 "$RL" release rw "$t2"
expect 0 "$RL" status rw
out_is "free"
