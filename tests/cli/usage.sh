#!/bin/sh
# rl-tests-timeout: 150
# Bad input exits 64 with one line on stderr; --help and --version work.
set -eu
. "$(dirname "$0")/lib.inc"

nl='
'

# usage ARG...: redislock ARG... must exit 64 with one error line, and
# must not have touched the server.
usage() {
    expect 64 "$RL" "$@"
    one_error_line
}

usage run '' -- true
usage run "a${nl}b" -- true
usage run "$(printf 'a\rb')" -- true
usage status ''
usage acquire "k${nl}"
usage release '' tok
usage extend "a${nl}" tok
usage status "$("$PYTHON" -c 'print("k" * 4097)')"
usage run -t 0 k -- true
usage run -t -1 k -- true
usage run -t abc k -- true
usage run -t '' k -- true
usage run -t 99999999999999h k -- true
usage run -t 31x k -- true
usage run -t 1000h k -- true
usage acquire -t 0 k
usage extend -t 0s k tok
usage run -w -1 k -- true
usage run -w soon k -- true
usage run -E 256 k -- true
usage run -E x k -- true
usage -u redis://127.0.0.1:99999 status k
usage -u foo://localhost status k
usage -u '' status k
usage run k --
usage run k
usage run
usage run -q k -- true
usage run --frobnicate k -- true
usage run -t
usage status --json=yes k
usage status k extra
usage release k
usage frobnicate
usage
usage -Z status k
usage --prefix
usage --prefix "$(printf 'p\tq')" status k
usage --shard
usage --shard=yes status k
usage -u "$REDISLOCK_URL" -u "$REDISLOCK_URL" status k
usage list a b
usage acquire --retry never k
usage acquire --max-attempts 0 k
usage release --owner '' k
key_gone k || fail "a usage error touched the server"
[ "$(lock_keys)" = 0 ] || fail "usage errors left keys behind"

# The message names the problem.
expect 64 "$RL" run -t 0 k -- true
err_has TTL
expect 64 "$RL" run "a${nl}b" -- true
err_has key
expect 64 "$RL" -u redis://127.0.0.1:99999 status k
err_has 99999
# A password in a bad URL is not printed.
expect 64 "$RL" -u redis://user:hunter2@127.0.0.1:99999 status k
! grep -q hunter2 "$TEST_TMPDIR/err" || fail "the password was printed"

# Durations: all the documented forms are accepted.
for d in 500ms 30s 2m 1h 1.5s 0.25 7 720h 30d 1h30m 2m30s; do
    expect 0 "$RL" acquire -n -t "$d" "dur-$d"
done

# Help and version: the overview (the per-command help is help.sh's).
for h in -h --help; do
    expect 0 "$RL" "$h"
    grep -q 'Exit status' "$TEST_TMPDIR/out" || fail "$h has no exit codes"
    for word in run acquire release extend status list --shard --prefix \
        --connect-timeout --command-timeout 'help COMMAND' \
        64 69 70 75 77; do
        grep -q -e "$word" "$TEST_TMPDIR/out" ||
            fail "$h does not mention $word"
    done
done
expect 0 "$RL" --version
grep -q '^redislock [0-9][0-9.]*' "$TEST_TMPDIR/out" ||
    fail "--version: $(cat "$TEST_TMPDIR/out")"
exit 0
