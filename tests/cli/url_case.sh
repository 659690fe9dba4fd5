#!/bin/sh
# A URL's scheme is case-insensitive (RFC 3986), as redis-cli takes
# REDIS://: -u and $REDISLOCK_URL accept REDIS://, Unix:// and the like.
set -eu
. "$(dirname "$0")/lib.inc"

: "${REDIS_PORT:?}"
expect 0 "$RL" -u "REDIS://127.0.0.1:$REDIS_PORT" acquire uc1
expect 0 "$RL" -u "Redis://127.0.0.1:$REDIS_PORT/0" status uc1
grep -q '^held ' "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" -u "UNIX://$REDIS_SOCK" status uc1
grep -q '^held ' "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"
REDISLOCK_URL="rEdIs://127.0.0.1:$REDIS_PORT" expect 0 "$RL" run uc2 -- true
# The sentinels' -u too: a sentinel nobody answers at is unreachable
# (69), not a usage error (64) for its scheme's case.
port=$("$PYTHON" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect 69 "$RL" --sentinel mymaster -u "REDIS://127.0.0.1:$port" \
    --connect-timeout 300ms status uc1
# A scheme it does not know is still refused, named as written.
expect 64 "$RL" -u "HTTP://127.0.0.1:$REDIS_PORT" status uc1
err_has "'HTTP'"
exit 0
