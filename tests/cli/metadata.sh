#!/bin/sh
# --metadata: the text is stored with the lock, under a default owner id
# host:pid:random, and status and list show both, escaped.
set -eu
. "$(dirname "$0")/lib.inc"

# acquire --metadata prints the owner id it made, host:pid:random.
expect 0 "$RL" acquire -t 20s --metadata 'nightly report' meta-key
owner=$(cat "$TEST_TMPDIR/out")
printf '%s\n' "$owner" | grep -Eq '^[^:]+:[0-9]+:[0-9a-f]{16,}$' ||
    fail "owner id '$owner' is not host:pid:random"

expect 0 "$RL" status meta-key
grep -Eq "^held ttl_ms=[0-9]+ holds=1 owner=$owner metadata=nightly report\$" \
    "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status --json meta-key
OWNER=$owner "$PYTHON" -c '
import json, os, sys
d = json.load(sys.stdin)
assert d["key"] == "meta-key" and d["held"] is True, d
assert d["metadata"] == "nightly report", d
assert d["owner"] == os.environ["OWNER"] and d["holds"] == 1, d
' <"$TEST_TMPDIR/out" || fail "status --json: $(cat "$TEST_TMPDIR/out")"

# list shows the same.
expect 0 "$RL" list
want="holds=1 owner=$owner metadata=nightly report"
grep -Eq "^meta-key ttl_ms=[0-9]+ $want\$" "$TEST_TMPDIR/out" ||
    fail "list: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --json
OWNER=$owner "$PYTHON" -c '
import json, os, sys
(d,) = json.load(sys.stdin)
assert d["key"] == "meta-key" and d["metadata"] == "nightly report", d
assert d["owner"] == os.environ["OWNER"], d
' <"$TEST_TMPDIR/out" || fail "list --json: $(cat "$TEST_TMPDIR/out")"

# The owner id releases it, like a token.
expect 0 "$RL" release meta-key "$owner"
key_gone meta-key || fail "release left the lock"

# Control bytes and backslashes are escaped: one lock is one line.
expect 0 "$RL" acquire -t 20s --metadata "$(printf 'a\nb\\c\td')" meta-key
expect 0 "$RL" status meta-key
[ "$(wc -l <"$TEST_TMPDIR/out")" -eq 1 ] ||
    fail "status printed more than one line: $(cat "$TEST_TMPDIR/out")"
grep -q 'metadata=a\\x0ab\\x5cc\\x09d$' "$TEST_TMPDIR/out" ||
    fail "status: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status --json meta-key
"$PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["metadata"] == "a\nb\\c\td", d
' <"$TEST_TMPDIR/out" || fail "status --json: $(cat "$TEST_TMPDIR/out")"
rcli del meta-key >/dev/null

# run --metadata: the command sees its lock described while it runs;
# REDISLOCK_TOKEN is the owner id.
expect 0 "$RL" run --metadata 'pid 42' meta-key -- sh -c \
    '"$0" status meta-key; echo "token=$REDISLOCK_TOKEN"' "$RL"
grep -Eq '^held ttl_ms=[0-9]+ holds=1 owner=[^ ]+ metadata=pid 42$' \
    "$TEST_TMPDIR/out" || fail "status under run: $(cat "$TEST_TMPDIR/out")"
owner=$(sed -n 's/.* owner=\([^ ]*\) .*/\1/p' "$TEST_TMPDIR/out")
grep -qx "token=$owner" "$TEST_TMPDIR/out" ||
    fail "REDISLOCK_TOKEN is not the owner id: $(cat "$TEST_TMPDIR/out")"
key_gone meta-key || fail "run left the lock"

# Metadata with an owner id of one's own.
expect 0 "$RL" acquire --owner me --metadata m1 meta-key
expect 0 "$RL" status meta-key
grep -Eq '^held ttl_ms=[0-9]+ holds=1 owner=me metadata=m1$' \
    "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" release --owner me meta-key
key_gone meta-key || fail "release --owner left the lock"
exit 0
