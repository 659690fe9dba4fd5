#!/bin/sh
# Reentrant locks: acquire --owner ID adds a hold each time, release
# --owner ID drops one, and status shows the holds and the owner.
set -eu
. "$(dirname "$0")/lib.inc"

# status_json_is KEY JSON: status --json KEY prints JSON, once its TTL is
# replaced by N.
status_json_is() {
    expect 0 "$RL" status --json "$1"
    got=$(sed -e 's/"ttl_ms":[0-9]*/"ttl_ms":N/' \
        -e 's/,"fence":[0-9]*,"reserved":false}$/}/' "$TEST_TMPDIR/out")
    [ "$got" = "$2" ] || fail "status --json $1 is '$got', want '$2'"
}

# Two acquires by one owner: two holds, and the owner id is the token.
expect 0 "$RL" acquire -t 20s --owner worker-1 re-key
out_is worker-1
expect 0 "$RL" acquire -t 20s --owner worker-1 re-key
out_is worker-1
status_json_is re-key '{"key":"re-key","held":true,"ttl_ms":N,"holds":2,'\
'"owner":"worker-1","metadata":null}'
expect 0 "$RL" status re-key
grep -Eq '^held ttl_ms=[0-9]+ holds=2 owner=worker-1$' "$TEST_TMPDIR/out" ||
    fail "status: $(cat "$TEST_TMPDIR/out")"
# A JSON parser reads it, with the documented types.
expect 0 "$RL" status --json re-key
"$PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["holds"] == 2 and d["owner"] == "worker-1", d
assert d["metadata"] is None and 0 < d["ttl_ms"] <= 20000, d
' <"$TEST_TMPDIR/out" || fail "status --json: $(cat "$TEST_TMPDIR/out")"

# Nobody else gets in: another owner, a plain acquire, run.
expect 1 "$RL" acquire -n --owner worker-2 re-key
err_empty
expect 1 "$RL" acquire -n re-key
expect 1 "$RL" run -n re-key -- true

# Another owner cannot release or extend it (2), and it stays as it was.
expect 2 "$RL" release --owner worker-2 re-key
one_error_line
expect 2 "$RL" extend --owner worker-2 re-key
status_json_is re-key '{"key":"re-key","held":true,"ttl_ms":N,"holds":2,'\
'"owner":"worker-1","metadata":null}'

# extend --owner resets the TTL and keeps the holds.
expect 0 "$RL" extend -t 50s --owner worker-1 re-key
ttl=$(rcli pttl re-key)
between 45000 50000 "$ttl" "pttl after extend -t 50s --owner"
status_json_is re-key '{"key":"re-key","held":true,"ttl_ms":N,"holds":2,'\
'"owner":"worker-1","metadata":null}'

# The first release drops one hold: still held.
expect 0 "$RL" release --owner worker-1 re-key
key_exists re-key || fail "the first of two releases freed the lock"
status_json_is re-key '{"key":"re-key","held":true,"ttl_ms":N,"holds":1,'\
'"owner":"worker-1","metadata":null}'
expect 1 "$RL" acquire -n --owner worker-2 re-key
# The second release frees it; a third finds it free (1).
expect 0 "$RL" release --owner worker-1 re-key
key_gone re-key || fail "the last release left the lock"
expect 0 "$RL" status --json re-key
out_is '{"key":"re-key","held":false}'
expect 1 "$RL" release --owner worker-1 re-key
one_error_line
expect 1 "$RL" extend --owner worker-1 re-key
key_gone re-key || fail "extend --owner re-created a free lock"

# The printed token works with the TOKEN form too.
expect 0 "$RL" acquire --owner worker-3 re-key
token=$(cat "$TEST_TMPDIR/out")
expect 0 "$RL" release re-key "$token"
key_gone re-key || fail "release KEY TOKEN left a reentrant lock"

# run --owner enters a lock that its owner already holds, and gives back
# only its own hold.
expect 0 "$RL" acquire -t 20s --owner job-7 re-key
expect 0 "$RL" run --owner job-7 re-key -- sh -c \
    '"$0" -s "$1" hget re-key holds' "$REDIS_CLI" "$REDIS_SOCK"
out_is 2
status_json_is re-key '{"key":"re-key","held":true,"ttl_ms":N,"holds":1,'\
'"owner":"job-7","metadata":null}'
expect 1 "$RL" run -n --owner job-8 re-key -- true
expect 0 "$RL" release --owner job-7 re-key
key_gone re-key || fail "the lock outlived its last hold"

# Usage: --owner takes the place of TOKEN; an empty or control-character
# owner id is refused before anything is sent.
expect 64 "$RL" release --owner a re-key tok
one_error_line
expect 64 "$RL" extend --owner a re-key tok
expect 64 "$RL" acquire --owner '' re-key
expect 64 "$RL" acquire --owner "$(printf 'a\tb')" re-key
expect 64 "$RL" release re-key
err_has TOKEN
[ "$(lock_keys)" = 0 ] || fail "usage errors left keys behind"
exit 0
