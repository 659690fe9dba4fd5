#!/bin/sh
# acquire, release, extend and status, with their exit codes and output.
set -eu
. "$(dirname "$0")/lib.inc"

# status of a free lock, plain and JSON.
expect 0 "$RL" status cmd-key
out_is free
expect 0 "$RL" status --json cmd-key
out_is '{"key":"cmd-key","held":false}'

# acquire prints the token, which is the key's value; nothing renews it.
expect 0 "$RL" acquire -t 20s cmd-key
token=$(cat "$TEST_TMPDIR/out")
[ -n "$token" ] || fail "acquire printed no token"
[ "$(rcli get cmd-key)" = "$token" ] || fail "the token is not the value"
ttl=$(rcli pttl cmd-key)
between 15000 20000 "$ttl" "pttl after -t 20s"

# status of a held lock.
expect 0 "$RL" status cmd-key
grep -Eq '^held ttl_ms=[0-9]+$' "$TEST_TMPDIR/out" ||
    fail "status: $(cat "$TEST_TMPDIR/out")"
n=$(sed 's/^held ttl_ms=//' "$TEST_TMPDIR/out")
between 15000 20000 "$n" "status ttl_ms"
expect 0 "$RL" status --json cmd-key
# A plain token lock: one hold, no owner id, no metadata.
grep -Eq '^\{"key":"cmd-key","held":true,"ttl_ms":[0-9]+,"holds":1,'\
'"owner":null,"metadata":null,"reserved":false\}$' \
    "$TEST_TMPDIR/out" || fail "status --json: $(cat "$TEST_TMPDIR/out")"

# A second acquire does not get it.
expect 1 "$RL" acquire -n cmd-key
err_empty
[ ! -s "$TEST_TMPDIR/out" ] || fail "a failed acquire printed a token"
expect 5 "$RL" acquire -n -E 5 cmd-key
expect 1 "$RL" acquire -w 0.2 cmd-key

# extend: by the owner 0, with a wrong token 2; the TTL becomes at least
# the one given, and a longer one is kept (a lease is never shortened).
expect 0 "$RL" extend -t 50s cmd-key "$token"
ttl=$(rcli pttl cmd-key)
[ "$ttl" -gt 45000 ] || fail "pttl $ttl after extend -t 50s"
expect 2 "$RL" extend cmd-key not-the-token
one_error_line
expect 0 "$RL" extend cmd-key "$token"
ttl=$(rcli pttl cmd-key)
between 40000 50000 "$ttl" "pttl after extend with the shorter default TTL"
expect 0 "$RL" extend -t 80s cmd-key "$token"
ttl=$(rcli pttl cmd-key)
between 75000 80000 "$ttl" "pttl after extend -t 80s"

# release: a wrong token 2 (and the lock stays), the owner 0, again 1.
expect 2 "$RL" release cmd-key not-the-token
one_error_line
holds cmd-key "$token" || fail "a wrong token released it"
expect 0 "$RL" release cmd-key "$token"
key_gone cmd-key || fail "release left the key"
expect 1 "$RL" release cmd-key "$token"
one_error_line
expect 1 "$RL" extend cmd-key "$token"
key_gone cmd-key || fail "extend re-created an expired lock"

# After expiry: extend 1 and release 1; someone else's lock: 2.
expect 0 "$RL" acquire -t 200ms cmd-key
token=$(cat "$TEST_TMPDIR/out")
wait_until 5 key_gone cmd-key || fail "the lease did not expire"
expect 1 "$RL" extend cmd-key "$token"
expect 1 "$RL" release cmd-key "$token"
rcli set cmd-key someone-else >/dev/null
expect 2 "$RL" release cmd-key "$token"
expect 2 "$RL" extend cmd-key "$token"
expect 1 "$RL" acquire -n cmd-key
rcli del cmd-key >/dev/null

# acquire waits by default: it gets the lock once the lease runs out.
expect 0 "$RL" acquire -t 500ms cmd-key
expect 0 "$RL" acquire cmd-key
rcli del cmd-key >/dev/null

# A token nobody can read is not kept: with stdout closed (so that it
# cannot become the Redis socket either), acquire fails and releases.
set +e
timeout 30 "$RL" acquire closed-key >&- 2>"$TEST_TMPDIR/err"
rc=$?
set -e
[ "$rc" = 70 ] || fail "acquire with stdout closed exited $rc, want 70"
one_error_line
key_gone closed-key || fail "acquire kept a lock whose token was lost"

# A lock without expiry (redis-py's default: a uuid's hex, no PX) is held;
# ttl_ms=-1.
rcli set cmd-key 0f3c8d6e2b7a4c1d9e5f6a7b8c9d0e1f >/dev/null
expect 0 "$RL" status cmd-key
out_is "held ttl_ms=-1"
rcli del cmd-key >/dev/null

# JSON escaping of the key: quotes, backslashes, UTF-8 kept, a byte that
# is not UTF-8 replaced.
expect 0 "$RL" status --json 'a"b\c/é'
out_is '{"key":"a\"b\\c/é","held":false}'
expect 0 "$RL" status --json "$(printf 'x\377y')"
out_is '{"key":"x\ufffdy","held":false}'
"$PYTHON" -c 'import json, sys; json.load(sys.stdin)' \
    <"$TEST_TMPDIR/out" || fail "status --json is not JSON"

# URL precedence: -u over REDISLOCK_URL over REDIS_URL.
expect 0 env REDISLOCK_URL=redis://127.0.0.1:1 "$RL" -u "$REDISLOCK_URL" \
    status cmd-key
# An empty variable counts as unset.
expect 0 env REDISLOCK_URL= REDIS_URL="$REDISLOCK_URL" "$RL" status cmd-key
expect 69 env REDISLOCK_URL=redis://127.0.0.1:1 REDIS_URL="$REDISLOCK_URL" \
    "$RL" status cmd-key
# -u is accepted after the subcommand too.
expect 0 env REDISLOCK_URL=redis://127.0.0.1:1 "$RL" status \
    -u "$REDISLOCK_URL" cmd-key
exit 0
