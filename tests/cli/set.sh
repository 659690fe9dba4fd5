#!/bin/sh
# run -k/--key: several keys as one set, taken all or none: a command runs
# only when every key is free; while it runs none of them can be taken;
# a set waits behind the key that refused it; acquire -k, extend -k and
# release -k act on the whole set; bad mixes are usage errors.
set -eu
. "$(dirname "$0")/lib.inc"

D=$TEST_TMPDIR
# hold NAME: a command that records its key and fencing token, says it
# runs (NAME.in), then waits for NAME.go (at most 20 s, then fails).
hold() {
    echo "echo \"\$REDISLOCK_KEY \$REDISLOCK_FENCE\" >'$D/$1.env'; touch '$D/$1.in'; i=0; while [ ! -e '$D/$1.go' ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done; [ -e '$D/$1.go' ]"
}

ends() {
    touch "$D/$1.go"
    bg_wait "$1" 20
    [ "$rc" = 0 ] || fail "$1 exited $rc: $(cat "$D/$1.err")"
}

# A set of three keys: all held with one token while the command runs.
bg s1 "$RL" run -k '{o}b' --key '{o}c' '{o}a' -c "$(hold s1)"
wait_until 10 test -e "$D/s1.in" || fail "the set's command did not run"
tok=$(rcli get '{o}a')
[ -n "$tok" ] || fail "{o}a is not held"
for k in '{o}b' '{o}c'; do
    [ "$(rcli get "$k")" = "$tok" ] || fail "$k does not hold the set's token"
done
read -r key fence <"$D/s1.env"
[ "$key" = '{o}a' ] || fail "REDISLOCK_KEY is '$key'"
# Each key is held: a lock of one of them, or another set with one in
# common, does not get in and runs nothing.
expect 1 "$RL" run -n '{o}c' -- touch "$D/ran"
expect 1 "$RL" run -n -k '{o}c' '{o}x' -- touch "$D/ran"
[ ! -e "$D/ran" ] || fail "a command ran beside the set"
[ "$(rcli exists '{o}x')" = 0 ] || fail "a refused set took {o}x"

# A waiting set gets in when the set holding its keys ends, with a greater
# fencing token.
bg s2 "$RL" run -w 20 -k '{o}a' '{o}x' -c "$(hold s2)"
sleep 0.3
[ ! -e "$D/s2.in" ] || fail "a set ran while one of its keys was held"
ends s1
wait_until 10 test -e "$D/s2.in" || fail "the waiting set did not get in"
read -r key fence2 <"$D/s2.env"
[ "$fence2" -gt "$fence" ] || fail "fence $fence2 after $fence"
ends s2
for k in '{o}a' '{o}b' '{o}c' '{o}x'; do
    key_gone "$k" || fail "$k is left"
done

# acquire -k prints the set's token; extend -k and release -k take it.
expect 0 "$RL" acquire -t 5s -k '{o}b' '{o}a'
tok=$(cat "$D/out")
[ "$(rcli get '{o}b')" = "$tok" ] || fail "acquire -k did not take {o}b"
expect 0 "$RL" extend -t 60s -k '{o}b' '{o}a' "$tok"
[ "$(rcli pttl '{o}b')" -gt 30000 ] || fail "extend -k did not reach {o}b"
expect 0 "$RL" release -k '{o}b' '{o}a' "$tok"
key_gone '{o}a' || fail "release -k left {o}a"
key_gone '{o}b' || fail "release -k left {o}b"
expect 1 "$RL" release -k '{o}b' '{o}a' "$tok"

# Bad input: usage errors (64), nothing written.
for bad in "--limit 2" "-s" "--owner me" "--metadata m" "--fair" \
    "--hold-after 1s"; do
    # shellcheck disable=SC2086
    expect 64 "$RL" run $bad -k '{o}b' '{o}a' -- touch "$D/ran"
    err_has "takes a set of keys"
done
expect 64 "$RL" run -k '{o}a' '{o}a' -- touch "$D/ran"
err_has "keys 1 and 2 of the set are the same key: give each key once"
expect 64 "$RL" run -k '{o}2' -k '{o}3' -k '{o}4' -k '{o}5' -k '{o}6' \
    -k '{o}7' -k '{o}8' -k '{o}9' '{o}1' -- touch "$D/ran"
err_has "at most 8 keys"
expect 64 "$RL" run -k '' '{o}a' -- touch "$D/ran"
[ ! -e "$D/ran" ] || fail "a refused set ran its command"
[ "$(rcli dbsize)" = "$(rcli keys '*:rl-*' | wc -l)" ] ||
    fail "a refused set left keys: $(rcli keys '*')"
