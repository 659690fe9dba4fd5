#!/bin/sh
# Exit codes for servers that cannot be used: 69 unreachable or not
# answering, 77 authentication refused.
set -eu
. "$(dirname "$0")/lib.inc"

# Nothing listens on port 1.
for cmd in "status k" "acquire k" "run k -- true" "release k tok" \
    "extend k tok"; do
    # shellcheck disable=SC2086 # split on purpose
    expect 69 "$RL" -u redis://127.0.0.1:1 $cmd
    one_error_line
done
expect 69 "$RL" -u "unix://$TEST_TMPDIR/no-such.sock" status k
one_error_line
[ ! -s "$TEST_TMPDIR/out" ] || fail "output despite the error"

# A server that does not answer in time: CLIENT PAUSE holds every command
# for longer than the 2 s command timeout.
rcli client pause 4000 all >/dev/null
t0=$(now_ms)
expect 69 "$RL" status k
t1=$(now_ms)
one_error_line
[ "$((t1 - t0))" -lt 4000 ] || fail "the timeout took $((t1 - t0)) ms"
rcli client unpause >/dev/null

# A second server that wants a password.
server=${REDIS_SERVER:-$(dirname "$REDIS_CLI")/redis-server}
[ -x "$server" ] || server=redis-server
dir=$TEST_TMPDIR
# A unix socket path must stay short (108 bytes on Linux).
[ "${#dir}" -lt 80 ] || dir=$(mktemp -d /tmp/rlauth.XXXXXX)
sock=$dir/auth.sock
"$server" --port 0 --unixsocket "$sock" --save '' --appendonly no \
    --requirepass s3cret --dir "$dir" >"$TEST_TMPDIR/auth.log" 2>&1 &
auth_pid=$!
on_exit_kill "$auth_pid"
wait_until 10 test -S "$sock" || fail "the password server did not start"

expect 77 "$RL" -u "unix://$sock" status k
one_error_line
expect 77 env REDISCLI_AUTH=wrong "$RL" -u "unix://$sock" status k
one_error_line
expect 77 env REDISCLI_AUTH=wrong "$RL" -u "unix://$sock" run k -- true
one_error_line
expect 0 env REDISCLI_AUTH=s3cret "$RL" -u "unix://$sock" status k
[ "$(cat "$TEST_TMPDIR/out")" = free ] || fail "status with the password"

kill "$auth_pid"
[ "$dir" = "$TEST_TMPDIR" ] || rm -rf "$dir"
exit 0
