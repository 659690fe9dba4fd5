#!/bin/sh
# rl-tests-timeout: 150
# Passwords: --password-file reads one from a file's first line, so that it
# stays out of argv, and it wins over the URL's and REDISCLI_AUTH; a bad
# file is a usage error that names the file but not what is in it; no
# message ever shows a password, whether Redis refused it or the URL around
# it is bad. Last, the tool as a user with docs/ACL.md's rule.
set -eu
. "$(dirname "$0")/lib.inc"

PW=pw-Vb93kQ-s3cret
WRONG=wrong-Tq71xZ
server=${REDIS_SERVER:-$(dirname "$REDIS_CLI")/redis-server}
[ -x "$server" ] || server=redis-server

# A second server that wants PW, on a unix socket and a TCP port.
dir=$TEST_TMPDIR
# A unix socket path must stay short (108 bytes on Linux).
[ "${#dir}" -lt 80 ] || dir=$(mktemp -d /tmp/rlpw.XXXXXX)
sock=$dir/pw.sock
port=$("$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
"$server" --port "$port" --bind 127.0.0.1 --unixsocket "$sock" \
    --save '' --appendonly no --requirepass "$PW" --dir "$dir" \
    >"$TEST_TMPDIR/pw.log" 2>&1 &
pw_pid=$!
on_exit_kill "$pw_pid"
wait_until 10 test -S "$sock" || fail "the password server did not start"
tcp=127.0.0.1:$port

rcli2() {
    "$REDIS_CLI" -s "$sock" --no-auth-warning -a "$PW" "$@"
}

# shellcheck disable=SC2317 # called through wait_until
key2_exists() {
    [ "$(rcli2 exists "$1")" = 1 ]
}

# Keys on the second server that are not the library's helper keys.
lock_keys2() {
    rcli2 --scan | grep -cv ':rl-' || true
}

# no_secret TEXT...: stderr of the last run_rl shows none of TEXT.
no_secret() {
    for s in "$@"; do
        ! grep -qF -e "$s" "$TEST_TMPDIR/err" ||
            fail "stderr shows a password"
    done
}

tmp=$TEST_TMPDIR
printf '%s\n' "$PW" >"$tmp/good.pw"
printf '%s\n' "$WRONG" >"$tmp/bad.pw"

# The file's password works, for every command.
expect 0 "$RL" -u "unix://$sock" --password-file "$tmp/good.pw" status k
out_is free
expect 0 "$RL" -u "unix://$sock" --password-file "$tmp/good.pw" acquire -n k
token=$(cat "$TEST_TMPDIR/out")
[ "$(rcli2 get k)" = "$token" ] || fail "acquire did not take k"
expect 0 "$RL" -u "unix://$sock" --password-file "$tmp/good.pw" \
    extend k "$token"
expect 0 "$RL" -u "unix://$sock" --password-file "$tmp/good.pw" \
    release k "$token"
[ "$(rcli2 exists k)" = 0 ] || fail "release left k"
# run, over TCP, whose renewals (every TTL/3) need the password too.
expect 0 "$RL" --password-file "$tmp/good.pw" -u "redis://$tcp" \
    run -t 300ms k -- sleep 1
[ "$(rcli2 exists k)" = 0 ] || fail "run left k"
# A line ending in CR LF, and a last line without an ending.
printf '%s\r\n' "$PW" >"$tmp/crlf.pw"
expect 0 "$RL" -u "unix://$sock" --password-file "$tmp/crlf.pw" status k
printf '%s' "$PW" >"$tmp/nonl.pw"
expect 0 "$RL" -u "unix://$sock" --password-file "$tmp/nonl.pw" status k
# '-', standard input: the first line only; run's command gets the rest,
# from a file or a pipe.
printf '%s\nrest\n' "$PW" >"$tmp/stdin"
expect 0 "$RL" -u "unix://$sock" --password-file - run k -- cat <"$tmp/stdin"
out_is rest
set +e
printf '%s\nrest\n' "$PW" |
    "$RL" -u "unix://$sock" --password-file - run k -- cat >"$tmp/piped"
rc=$?
set -e
if [ "$rc" != 0 ] || [ "$(cat "$tmp/piped")" != rest ]; then
    fail "--password-file - from a pipe: $rc, $(wc -c <"$tmp/piped") bytes"
fi
# /dev/stdin is a file like any other.
expect 0 "$RL" -u "unix://$sock" --password-file /dev/stdin status k \
    <"$tmp/good.pw"
expect 64 "$RL" -u "unix://$sock" --password-file - status k </dev/null
one_error_line

# It wins over the URL's password and REDISCLI_AUTH, both ways.
expect 0 "$RL" -u "redis://:$WRONG@$tcp" --password-file "$tmp/good.pw" \
    status k
expect 0 env REDISCLI_AUTH="$WRONG" "$RL" -u "redis://$tcp" \
    --password-file "$tmp/good.pw" status k
expect 77 "$RL" -u "redis://:$PW@$tcp" --password-file "$tmp/bad.pw" status k
one_error_line
no_secret "$PW" "$WRONG"
expect 77 env REDISCLI_AUTH="$PW" "$RL" -u "unix://$sock" \
    --password-file "$tmp/bad.pw" status k
one_error_line
no_secret "$PW" "$WRONG"

# The password stays out of argv: a running run shows none.
bg holder "$RL" -u "unix://$sock" --password-file "$tmp/good.pw" \
    run -t 10s k -- sleep 2
wait_until 10 key2_exists k || fail "run did not take k"
if [ -r "/proc/$bg_pid/cmdline" ]; then
    tr '\0' ' ' <"/proc/$bg_pid/cmdline" >"$TEST_TMPDIR/cmdline"
    ! grep -qF -e "$PW" "$TEST_TMPDIR/cmdline" ||
        fail "the password is in argv"
    grep -qF -e "--password-file" "$TEST_TMPDIR/cmdline" ||
        fail "/proc shows another process: $(cat "$TEST_TMPDIR/cmdline")"
fi
bg_wait holder 10
[ "$rc" = 0 ] || fail "run with the password file exited $rc"

# Refused passwords: 77, one line, and the password is not in it.
expect 77 "$RL" -u "unix://$sock" --password-file "$tmp/bad.pw" status k
one_error_line
no_secret "$WRONG"
expect 77 "$RL" -u "redis://:$WRONG@$tcp" status k
one_error_line
no_secret "$WRONG"
expect 77 "$RL" -u "redis://default:$WRONG@$tcp" acquire -n k
one_error_line
no_secret "$WRONG"
expect 77 env REDISCLI_AUTH="$WRONG" "$RL" -u "redis://$tcp" \
    run -n k -- true
one_error_line
no_secret "$WRONG"

# REDISCLI_AUTH alone works.
expect 0 env REDISCLI_AUTH="$PW" "$RL" -u "unix://$sock" status k
out_is free

# Bad URLs with a password in them: 64, one line, no password. An
# unescaped '/', '?' or '#' in a password puts part of it where the host,
# port or database goes.
for url in "http://u:$PW@$tcp" "redis:/u:$PW@$tcp" "u:$PW@$tcp" \
    "$PW@$tcp" "redis://u:$PW@127.0.0.1:99999" \
    "redis://u:$PW@127.0.0.1:6379/x" "redis://u:$PW%zz@$tcp" \
    "redis://u:$PW@" "redis://u:$PW@[::1" "redis://u:6379/$PW@$tcp" \
    "redis://u:x/$PW@$tcp" "redis://u:$PW?x@$tcp" "redis://u:$PW#x@$tcp" \
    "redis://$PW/x@$tcp"; do
    expect 64 "$RL" -u "$url" status k
    one_error_line
    no_secret "$PW"
done
expect 64 "$RL" --shard -u "redis://u:6379/$PW@$tcp" -u "redis://$tcp" \
    status k
one_error_line
no_secret "$PW"
expect 64 "$RL" --shard -u "redis://u:$PW@$tcp" -u "redis://u:$PW@$tcp" \
    status k
one_error_line
no_secret "$PW"

# A bad password file: 64, one line naming the file, nothing of what is
# in it.
expect 64 "$RL" -u "unix://$sock" --password-file "$tmp/missing.pw" status k
one_error_line
err_has 'missing\.pw'
: >"$tmp/empty.pw"
expect 64 "$RL" -u "unix://$sock" --password-file "$tmp/empty.pw" status k
one_error_line
err_has 'empty\.pw'
printf '\n%s\n' "$PW" >"$tmp/blank.pw"
expect 64 "$RL" -u "unix://$sock" --password-file "$tmp/blank.pw" status k
one_error_line
err_has 'blank\.pw'
no_secret "$PW"
printf 'x\000%s\n' "$PW" >"$tmp/nul.pw"
expect 64 "$RL" -u "unix://$sock" --password-file "$tmp/nul.pw" status k
one_error_line
err_has 'nul\.pw'
no_secret "$PW"
"$PYTHON" -c 'print("s3cret-" + "y" * 5000)' >"$tmp/long.pw"
expect 64 "$RL" -u "unix://$sock" --password-file "$tmp/long.pw" status k
one_error_line
err_has 'long\.pw'
no_secret s3cret-y
expect 64 "$RL" -u "unix://$sock" --password-file "$tmp" status k
one_error_line
if [ "$(id -u)" != 0 ]; then
    printf '%s\n' "$PW" >"$tmp/locked.pw"
    chmod 000 "$tmp/locked.pw"
    expect 64 "$RL" -u "unix://$sock" --password-file "$tmp/locked.pw" status k
    one_error_line
    err_has 'locked\.pw'
    no_secret "$PW"
fi
expect 64 "$RL" --password-file
one_error_line
[ "$(lock_keys2)" = 0 ] || fail "keys left: $(rcli2 --scan)"

# A user with exactly the rule of docs/ACL.md, its password in a file.
rule=$(grep '^ACL SETUSER locker ' "$SRCDIR/docs/ACL.md")
set -f # the rule's ~locks:* is no file name pattern
# shellcheck disable=SC2086 # the rule is split into words on purpose
rcli2 $rule >/dev/null
set +f
printf 'pw\n' >"$tmp/locker.pw"
lu=redis://locker@$tcp
lpw=$tmp/locker.pw
expect 0 "$RL" -u "$lu" --password-file "$lpw" --prefix locks: \
    acquire -n -t 20s --metadata 'job=7' job
owner=$(cat "$TEST_TMPDIR/out")
[ "$(rcli2 hget locks:job owner)" = "$owner" ] || fail "no locks:job hash"
expect 0 "$RL" -u "$lu" --password-file "$lpw" --prefix locks: status job
grep -q '^held ttl_ms=.*metadata=job=7' "$TEST_TMPDIR/out" ||
    fail "status: $(cat "$TEST_TMPDIR/out")"
rcli2 set other:key v >/dev/null
expect 0 "$RL" -u "$lu" --password-file "$lpw" --prefix locks: list
grep -q '^job ttl_ms=' "$TEST_TMPDIR/out" ||
    fail "list: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" -u "$lu" --password-file "$lpw" --prefix locks: \
    release --owner "$owner" job
expect 0 "$RL" -u "$lu" --password-file "$lpw" --prefix locks: \
    run -n -t 300ms job -- sleep 1
expect 0 "$RL" -u "$lu" --password-file "$lpw" --prefix locks: \
    run --fair -t 5s job -- true
[ "$(rcli2 exists locks:job)" = 0 ] || fail "locks:job is still held"
# A key outside ~locks:* is refused: Redis says NOPERM, the tool 77 and
# where the needed rights are listed, not that the password was wrong.
expect 77 "$RL" -u "$lu" --password-file "$lpw" acquire -n other:k
one_error_line
err_has NOPERM
err_has 'ACL in redislock\(3\)'
if grep -q 'refused authentication' "$TEST_TMPDIR/err"; then
    fail "NOPERM reported as a refused password: $(cat "$TEST_TMPDIR/err")"
fi
[ "$(rcli2 exists other:k)" = 0 ] || fail "other:k was written"

kill "$pw_pid"
[ "$dir" = "$TEST_TMPDIR" ] || rm -rf "$dir"
exit 0
