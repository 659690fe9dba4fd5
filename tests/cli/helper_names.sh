#!/bin/sh
# The helper keys' suffixes are written in C only: keys.c's role table
# (the keys the scripts declare in KEYS) and the names other C files build
# (fence.c's "fenced", wait.c's lists). keys.c also uses the table to tell
# helper keys from locks in listings. This holds them in step: the Lua
# scripts build no key names (they take every key in KEYS), every suffix
# the C side writes makes a key that `list --all` does not show, and
# keys.c knows no suffix that nothing writes.
set -eu
. "$(dirname "$0")/lib.inc"

cd "$SRCDIR/src"
if grep -n "\.\. '[a-z:]*'" lua/*.lua; then
    fail "a script builds a key name: declare the key in KEYS instead"
fi
roles=$(sed -n '/^static const char \*const role_suffix/,/};/p' base/keys.c |
    grep -o '"[a-z:]*"' | tr -d '"')
# "c:" names a fair waiter's channel (wait.c), which is not a key.
c=$(grep -oh 'rl__helper_\(name\|join\)([^"]*"[a-z:]*"' ./*/*.c |
    sed 's/.*"\([a-z:]*\)"$/\1/' | grep -vx 'c:')
# shellcheck disable=SC2086 # one suffix a word
written=$(printf '%s\n' $roles $c | grep -v '^$' | sort -u)
known=$( (printf '%s\n' $roles
    sed -n '/^static int helper_suffix/,/^}/p' base/keys.c |
        grep -o '"[a-z:]*"' | tr -d '"') | sort -u)
[ -n "$roles" ] && [ -n "$written" ] && [ -n "$known" ] ||
    fail "no suffixes found: grep needs a look"
for s in $known; do
    printf '%s\n' "$written" | grep -qx "$s" ||
        fail "keys.c knows helper suffix '$s', which no C file writes"
done

# Each written suffix, on a key with and without a tag of its own, as a
# string with a TTL (what list --all would show of a lock-like key), beside
# a lock of another name (its own helpers hold its fence counter).
for s in $written; do
    case $s in *:) name=${s}x ;; *) name=$s ;; esac
    rcli set "hk{hk}:rl-$name" v px 60000 >/dev/null
    rcli set "{t}hk:rl-$name" v px 60000 >/dev/null
done
rcli set job v px 60000 >/dev/null
expect 0 "$RL" list --all
if grep -q ':rl-' "$TEST_TMPDIR/out"; then
    fail "list --all shows helper keys: $(grep ':rl-' "$TEST_TMPDIR/out")"
fi
[ "$(wc -l <"$TEST_TMPDIR/out")" -eq 1 ] && grep -q '^job ' "$TEST_TMPDIR/out" ||
    fail "list --all should show the lock only: $(cat "$TEST_TMPDIR/out")"
exit 0
