#!/bin/sh
# A program built against the 0.1 header runs unchanged against this
# library (see "ABI" in README.md): tests/abi/abi_old_client.c, built as
# rl-abi-0.1 and linked to libredislock.so, calls every function that
# takes or fills a caller-allocated struct, with the structs right before
# an inaccessible page or followed by guard bytes, and checks what it gets
# back. Here: that it passes, and that the lock it left is what its
# options asked for (prefix, TTL, owner and metadata).
set -eu
. "$(dirname "$0")/lib.inc"

build=$(cd "$(dirname "$REDISLOCK_BIN")/.." && pwd)
prog=$build/tests/rl-abi-0.1
[ -x "$prog" ] || fail "$prog is not built"
# It must use the library just built, not one installed elsewhere.
ldd "$prog" | grep -q "$build/src/libredislock.so" ||
    fail "$prog is not linked to $build/src/libredislock.so: $(ldd "$prog")"

more_servers 2
# shellcheck disable=SC2154  # set by more_servers
expect 0 "$prog" "$REDISLOCK_URL" "unix://$xdir/x1.sock" "unix://$xdir/x2.sock"
out_is "abi: ok"

# The lock it left: under the prefix, with its TTL, owner and metadata.
ttl=$(rcli pttl abi:kept)
between 30000 45000 "$ttl" "PTTL of abi:kept"
expect 0 "$RL" --prefix abi: status --json kept
"$PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["held"] is True and d["owner"] == "abi-owner", d
assert d["metadata"] == "abi-meta" and d["holds"] == 1, d
' <"$TEST_TMPDIR/out" || fail "status of kept: $(cat "$TEST_TMPDIR/out")"
# Nothing else is left but helper keys.
[ "$(lock_keys)" = 1 ] || fail "keys left: $(rcli --scan | tr '\n' ' ')"
exit 0
