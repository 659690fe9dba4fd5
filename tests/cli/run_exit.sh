#!/bin/sh
# run: the command's exit status is passed through, the command sees the
# key and token, and the lock is released when it ends.
set -eu
. "$(dirname "$0")/lib.inc"

expect 0 "$RL" run exit-key -- true
expect 3 "$RL" run exit-key -- sh -c 'exit 3'
# Killed by a signal: 128 + N, as a shell reports it.
expect 137 "$RL" run exit-key -- sh -c 'kill -9 $$'
expect 143 "$RL" run exit-key -- sh -c 'kill -TERM $$'
key_gone exit-key || fail "the key outlived run"

# "--" is optional; options after KEY belong to the command.
expect 0 "$RL" run exit-key test -n x
expect 0 "$RL" run -t 5s -n exit-key -- sh -c 'test "$1" = -t' sh -t

# The command gets REDISLOCK_KEY and REDISLOCK_TOKEN, and the token is the
# key's value in Redis while it runs.
expect 0 "$RL" run env-key -- sh -c \
    'printf "%s\n%s\n" "$REDISLOCK_KEY" "$REDISLOCK_TOKEN"
     "$0" -s "$1" get "$REDISLOCK_KEY"' "$REDIS_CLI" "$REDIS_SOCK"
key=$(sed -n 1p "$TEST_TMPDIR/out")
token=$(sed -n 2p "$TEST_TMPDIR/out")
value=$(sed -n 3p "$TEST_TMPDIR/out")
[ "$key" = env-key ] || fail "REDISLOCK_KEY is '$key'"
[ -n "$token" ] || fail "REDISLOCK_TOKEN is empty"
[ "$token" = "$value" ] || fail "token '$token' but the key holds '$value'"
key_gone env-key || fail "the key outlived run"

# Standard input and output are the command's.
out=$(echo hello | timeout 30 "$RL" run io-key -- cat)
[ "$out" = hello ] || fail "stdin/stdout not passed through: '$out'"

# A command that cannot be run: 127 or 126 as in sh, one line, and the
# lock is not left behind.
expect 127 "$RL" run exec-key -- "$TEST_TMPDIR/no-such-command"
one_error_line
expect 126 "$RL" run exec-key -- "$TEST_TMPDIR"
one_error_line
key_gone exec-key || fail "the key outlived a failed exec"

# The command is found as execvp(3) finds it (the guardian searches PATH
# itself): past a match that may not be run to a later one, with 126 when
# every match is refused; and a file without "#!" runs under /bin/sh.
mkdir "$TEST_TMPDIR/p1" "$TEST_TMPDIR/p2"
printf 'echo p1\n' >"$TEST_TMPDIR/p1/rl-which"
printf 'echo "p2 $1 $REDISLOCK_KEY"\n' >"$TEST_TMPDIR/p2/rl-which"
chmod 644 "$TEST_TMPDIR/p1/rl-which"
chmod 755 "$TEST_TMPDIR/p2/rl-which"
expect 0 env PATH="$TEST_TMPDIR/p1:$TEST_TMPDIR/p2:$PATH" "$RL" run \
    exec-key -- rl-which arg
out_is "p2 arg exec-key"
expect 126 env PATH="$TEST_TMPDIR/p1:$PATH" "$RL" run exec-key -- rl-which
one_error_line
err_has "Permission denied"
key_gone exec-key || fail "the key outlived a refused command"
exit 0
