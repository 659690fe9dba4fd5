#!/bin/sh
# list: the locks held now, plain (one line each) and as JSON, filtered by
# a glob pattern, with keys escaped.
set -eu
. "$(dirname "$0")/lib.inc"

# Nothing held: no lines, an empty JSON array.
expect 0 "$RL" list
[ ! -s "$TEST_TMPDIR/out" ] || fail "list of nothing: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --json
out_is '[]'

expect 0 "$RL" acquire -t 20s job:a
expect 0 "$RL" acquire -t 20s job:b
expect 0 "$RL" acquire -t 20s --owner w1 --metadata 'host=x y' other
expect 0 "$RL" acquire -t 20s --owner w1 other
# A key without a TTL is no lock, and is not listed.
rcli set not-a-lock v >/dev/null

expect 0 "$RL" list
sort "$TEST_TMPDIR/out" >"$TEST_TMPDIR/sorted"
sed 's/ttl_ms=[0-9]*/ttl_ms=N/' "$TEST_TMPDIR/sorted" >"$TEST_TMPDIR/got"
printf '%s\n' 'job:a ttl_ms=N' 'job:b ttl_ms=N' \
    'other ttl_ms=N holds=2 owner=w1 metadata=host=x y' >"$TEST_TMPDIR/want"
cmp -s "$TEST_TMPDIR/got" "$TEST_TMPDIR/want" ||
    fail "list: $(cat "$TEST_TMPDIR/out")"
while read -r line; do
    n=${line#* ttl_ms=}
    n=${n%% *}
    between 1 20000 "$n" "ttl_ms in '$line'"
done <"$TEST_TMPDIR/out"

# --json: an array of the objects status prints.
expect 0 "$RL" list --json
"$PYTHON" -c '
import json, sys
l = sorted(json.load(sys.stdin), key=lambda d: d["key"])
assert [d["key"] for d in l] == ["job:a", "job:b", "other"], l
for d in l:
    assert d["held"] is True and 0 < d["ttl_ms"] <= 20000, d
assert l[0]["owner"] is None and l[0]["metadata"] is None, l
assert l[0]["holds"] == 1, l
assert l[2]["owner"] == "w1" and l[2]["holds"] == 2, l
assert l[2]["metadata"] == "host=x y", l
' <"$TEST_TMPDIR/out" || fail "list --json: $(cat "$TEST_TMPDIR/out")"
# Each object is the one status --json prints, TTL aside.
expect 0 "$RL" status --json other
sed 's/"ttl_ms":[0-9]*/"ttl_ms":N/' "$TEST_TMPDIR/out" >"$TEST_TMPDIR/status"
expect 0 "$RL" list --json other
grep -v '^[][]$' "$TEST_TMPDIR/out" | sed 's/"ttl_ms":[0-9]*/"ttl_ms":N/' |
    cmp -s - "$TEST_TMPDIR/status" ||
    fail "list --json other: $(cat "$TEST_TMPDIR/out")"

# Patterns are globs over the key.
expect 0 "$RL" list 'job:*'
[ "$(sed 's/ .*//' "$TEST_TMPDIR/out" | sort | paste -s -d ' ' -)" = \
    'job:a job:b' ] || fail "list 'job:*': $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --json 'job:[b]'
"$PYTHON" -c '
import json, sys
assert [d["key"] for d in json.load(sys.stdin)] == ["job:b"]
' <"$TEST_TMPDIR/out" || fail "list --json 'job:[b]': $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list 'nothing-*'
[ ! -s "$TEST_TMPDIR/out" ] ||
    fail "list 'nothing-*': $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list not-a-lock
[ ! -s "$TEST_TMPDIR/out" ] || fail "list showed a key without a TTL"

# Keys written by other programs may hold any byte: control bytes,
# backslash and space are escaped in plain lines, and JSON stays JSON.
# Their values are another library's tokens (a uuid's hex), so they are
# locks.
tok=0f3c8d6e2b7a4c1d9e5f6a7b8c9d0e1f
printf 'set "odd\\nkey \\\\x" %s PX 20000\n' "$tok" | rcli >/dev/null
printf 'set "bin\\xffkey" %s PX 20000\n' "$tok" | rcli >/dev/null
expect 0 "$RL" list 'odd*'
out_is "$(printf 'odd\\x0akey\\x20\\x5cx ttl_ms=%s' \
    "$(sed 's/.*ttl_ms=//' "$TEST_TMPDIR/out")")"
expect 0 "$RL" list --json 'odd*'
"$PYTHON" -c '
import json, sys
assert [d["key"] for d in json.load(sys.stdin)] == ["odd\nkey \\x"]
' <"$TEST_TMPDIR/out" || fail "list --json 'odd*': $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --json 'bin*'
"$PYTHON" -c '
import json, sys
assert [d["key"] for d in json.load(sys.stdin)] == ["bin\ufffdkey"]
' <"$TEST_TMPDIR/out" || fail "list --json 'bin*': $(cat "$TEST_TMPDIR/out")"

# Usage errors.
expect 64 "$RL" list a b
one_error_line
expect 64 "$RL" list ''
expect 64 "$RL" list --frobnicate
exit 0
