#!/bin/sh
# --prefix P: KEY is the Redis key P+KEY for every subcommand; list shows
# keys without it.
set -eu
. "$(dirname "$0")/lib.inc"

expect 0 "$RL" --prefix lock@ acquire -t 20s K
token=$(cat "$TEST_TMPDIR/out")
key_exists lock@K || fail "no Redis key lock@K"
key_gone K || fail "the key was taken without the prefix"
[ "$(rcli get lock@K)" = "$token" ] || fail "lock@K does not hold the token"

# status with the same prefix sees it; without it, K is free.
expect 0 "$RL" --prefix lock@ status K
grep -Eq '^held ttl_ms=[0-9]+$' "$TEST_TMPDIR/out" ||
    fail "status with the prefix: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" --prefix=lock@ status --json K
grep -q '^{"key":"K","held":true,' "$TEST_TMPDIR/out" ||
    fail "status --json with the prefix: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status K
out_is free
expect 0 "$RL" --prefix other@ status K
out_is free

# Without the prefix, K is another lock; with it, K is taken.
expect 1 "$RL" --prefix lock@ acquire -n K
expect 1 "$RL" --prefix lock@ run -n K -- true
expect 0 "$RL" run -n K -- true

# list: the prefix selects and is stripped; without one, the full key.
expect 0 "$RL" acquire -t 20s plain-key
expect 0 "$RL" --prefix lock@ list
grep -Eq '^K ttl_ms=[0-9]+$' "$TEST_TMPDIR/out" ||
    fail "list with the prefix: $(cat "$TEST_TMPDIR/out")"
[ "$(wc -l <"$TEST_TMPDIR/out")" -eq 1 ] ||
    fail "list with the prefix shows other keys: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" --prefix lock@ list --json
"$PYTHON" -c '
import json, sys
l = json.load(sys.stdin)
assert [d["key"] for d in l] == ["K"], l
' <"$TEST_TMPDIR/out" || fail "list --json: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list
grep -Eq '^lock@K ttl_ms=' "$TEST_TMPDIR/out" ||
    fail "list without the prefix: $(cat "$TEST_TMPDIR/out")"

# extend and release with the prefix; without it, K is free.
expect 1 "$RL" release K "$token"
expect 0 "$RL" --prefix lock@ extend -t 40s K "$token"
between 35000 40000 "$(rcli pttl lock@K)" "pttl after extend -t 40s"
expect 0 "$RL" --prefix lock@ release K "$token"
key_gone lock@K || fail "release with the prefix left lock@K"

# run: the command's REDISLOCK_KEY is KEY as given, and the lock it holds
# is the prefixed key.
expect 0 "$RL" --prefix jobs: run K -- sh -c \
    'echo "$REDISLOCK_KEY"; "$0" -s "$1" get "jobs:$REDISLOCK_KEY"' \
    "$REDIS_CLI" "$REDIS_SOCK"
[ "$(sed -n 1p "$TEST_TMPDIR/out")" = K ] ||
    fail "REDISLOCK_KEY: $(cat "$TEST_TMPDIR/out")"
[ -n "$(sed -n 2p "$TEST_TMPDIR/out")" ] || fail "jobs:K was not held"
key_gone jobs:K || fail "run left jobs:K"

# A prefix with glob characters is matched literally by list.
expect 0 "$RL" --prefix 'a*' acquire -t 20s x
expect 0 "$RL" --prefix ab acquire -t 20s y
expect 0 "$RL" --prefix 'a*' list
if ! grep -Eq '^x ttl_ms=' "$TEST_TMPDIR/out" ||
    [ "$(wc -l <"$TEST_TMPDIR/out")" -ne 1 ]; then
    fail "list with prefix 'a*': $(cat "$TEST_TMPDIR/out")"
fi

# The prefix is a global option: before the subcommand only.
expect 64 "$RL" status --prefix lock@ K
one_error_line
exit 0
