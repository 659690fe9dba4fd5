#!/bin/sh
# run -c STRING, as flock(1) takes it: before KEY or in flock's place
# after it, through sh -c (pipes work, the status is passed on), while
# "--" keeps a command's own -c an argument.
set -eu
. "$(dirname "$0")/lib.inc"

# After KEY, flock's place: a pipe, and the shell's status.
expect 7 "$RL" run rc-key -c \
    'echo "held $REDISLOCK_KEY" | tr a-z A-Z; exit 7'
out_is "HELD RC-KEY"
[ ! -s "$TEST_TMPDIR/err" ] || fail "stderr: $(cat "$TEST_TMPDIR/err")"
key_gone rc-key || fail "run -c left its lock behind"

# Before KEY, and the long forms.
expect 0 "$RL" run -c 'printf "%s\n" a b c | wc -l | tr -d " "' rc-key
out_is 3
expect 0 "$RL" run --command 'echo long' rc-key
out_is long
expect 0 "$RL" run rc-key --command 'echo long2'
out_is long2
expect 0 "$RL" run rc-key --command='echo eq'
out_is eq
expect 5 "$RL" run --command='exit 5' rc-key

# The string runs under the lock, with run's environment.
export REDIS_CLI REDIS_SOCK
expect 0 "$RL" run rc-key -c \
    'v=$("$REDIS_CLI" -s "$REDIS_SOCK" get rc-key)
     [ "$v" = "$REDISLOCK_TOKEN" ] && echo held'
out_is held

# "--" ends run's reading: prog gets -c and x as its own arguments.
expect 0 "$RL" run rc-key -- printf '<%s>' -c x
out_is "<-c><x>"
# So does a COMMAND that is not -c, with -c among its arguments.
expect 0 "$RL" run rc-key printf '<%s>' -c 'y z'
out_is "<-c><y z>"

# Misuse is a usage error, before any lock is taken.
for args in "rc-key -c" "rc-key -c a b" "-c a rc-key b" "-c a -c b rc-key" \
    "rc-key --command"; do
    # shellcheck disable=SC2086 # split on purpose
    expect 64 "$RL" run $args
    one_error_line
done
expect 64 "$RL" run rc-key -c 'true' extra
err_has 'exactly one command string'
expect 64 "$RL" run -c true rc-key -- true
err_has 'exclude'
key_gone rc-key || fail "a usage error took the lock"

# A miss does not run the string.
expect 0 "$RL" acquire -t 30s rc-key
expect 1 "$RL" run -n rc-key -c "touch '$TEST_TMPDIR/ran'"
[ ! -e "$TEST_TMPDIR/ran" ] || fail "-c ran without the lock"
exit 0
