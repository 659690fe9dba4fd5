#!/bin/sh
# TLS from the command line: redis-cli's options (--tls, --cacert,
# --cacertdir, --cert, --tls-key, --sni, --insecure). In any build: a TLS
# option with a plain URL, --tls with a unix socket and an empty value
# are usage errors. In a TLS build (scripts/check-hiredis1.sh sets
# RL_EXPECT_TLS, so that it must be one), against a server that wants a
# client certificate (tls-auth-clients yes, Redis's default): a lock with
# --cacert, --cert and --tls-key; without the certificate, a refusal that
# names the options; --cacertdir; a CA that signed nothing, refused, and
# taken with --insecure; --sni with a name the certificate lacks.
set -eu
. "$(dirname "$0")/lib.inc"

expect 64 "$RL" -u "$REDISLOCK_URL" --cacert /nonexistent acquire tls:k
err_has 'TLS options .* need TLS: give rediss:// URLs, or --tls'
expect 64 "$RL" --tls -u "$REDISLOCK_URL" acquire tls:k
err_has 'unix socket, which has no TLS'
expect 64 "$RL" acquire --cert '' tls:k
err_has 'cert needs a value'
expect 64 "$RL" --cacert a --cacert b acquire tls:k
err_has 'cacert given twice'

# Whether this build has TLS: a rediss:// URL says so before connecting.
run_rl "$RL" -u rediss://localhost:1 acquire tls:k
if grep -q 'TLS is not available in this build' "$TEST_TMPDIR/err"; then
    [ -z "${RL_EXPECT_TLS:-}" ] ||
        fail "RL_EXPECT_TLS is set but this redislock has no TLS"
    exit 0
fi

d=$TEST_TMPDIR/tls
mkdir -p "$d"
for n in localhost stranger; do
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=$n" \
        -addext "subjectAltName=DNS:$n" -keyout "$d/$n.key" \
        -out "$d/$n.crt" >/dev/null 2>&1 || fail "openssl could not make $n"
done
mkdir -p "$d/cadir"
cp "$d/localhost.crt" "$d/cadir/"
openssl rehash "$d/cadir" >/dev/null 2>&1 || c_rehash "$d/cadir" >/dev/null
port=$("$PYTHON" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
more_servers 1 --tls-port "$port" --tls-cert-file "$d/localhost.crt" \
    --tls-key-file "$d/localhost.key" --tls-ca-cert-file "$d/localhost.crt" \
    --tls-auth-clients yes
url=rediss://localhost:$port
x1() { "$REDIS_CLI" -s "$xdir/x1.sock" "$@"; }

# The client certificate: a lock taken, seen on the server, given back.
expect 0 "$RL" -u "$url" --cacert "$d/localhost.crt" --cert "$d/localhost.crt" \
    --tls-key "$d/localhost.key" acquire -t 30s tls:k
token=$(cat "$TEST_TMPDIR/out")
[ "$(x1 get tls:k)" = "$token" ] || fail "tls:k does not hold $token"
expect 0 "$RL" --tls -u "redis://localhost:$port" --cacert "$d/localhost.crt" \
    --cert "$d/localhost.crt" --tls-key "$d/localhost.key" release tls:k "$token"
[ "$(x1 exists tls:k)" = 0 ] || fail "release left tls:k"

# No client certificate: refused, the message naming what to give.
expect 69 "$RL" -u "$url" --cacert "$d/localhost.crt" acquire tls:k
err_has 'tls_cert_file'

# A directory of CAs.
expect 0 "$RL" -u "$url" --cacertdir "$d/cadir" --cert "$d/localhost.crt" \
    --tls-key "$d/localhost.key" acquire -t 30s tls:dir
[ "$(x1 exists tls:dir)" = 1 ] || fail "--cacertdir: tls:dir not taken"

# A CA that signed nothing here: refused; --insecure takes the lock.
expect 69 "$RL" -u "$url" --cacert "$d/stranger.crt" \
    --cert "$d/localhost.crt" --tls-key "$d/localhost.key" acquire tls:ins
err_has 'tls_ca_file'
expect 0 "$RL" -u "$url" --cacert "$d/stranger.crt" --insecure \
    --cert "$d/localhost.crt" --tls-key "$d/localhost.key" acquire -t 30s \
    tls:ins
[ "$(x1 exists tls:ins)" = 1 ] || fail "--insecure: tls:ins not taken"

# A server name the certificate does not carry.
expect 69 "$RL" -u "$url" --cacert "$d/localhost.crt" --sni stranger \
    --cert "$d/localhost.crt" --tls-key "$d/localhost.key" acquire tls:sni
err_has 'hostname mismatch'
exit 0
