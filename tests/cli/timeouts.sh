#!/bin/sh
# rl-tests-timeout: 150
# Connect and command timeouts from the command line: --connect-timeout
# and --command-timeout, the URL's ?connect_timeout= and ?timeout=, and
# $REDISLOCK_CONNECT_TIMEOUT and $REDISLOCK_COMMAND_TIMEOUT, in that
# order of precedence, against a server stopped with SIGSTOP (its socket
# still accepts; nothing answers). A short timeout is checked against a
# 20 s alternative, a long one (3 s) against the 2 s default, so that a
# slow machine cannot make either pass by accident.
set -eu
. "$(dirname "$0")/lib.inc"

more_servers 1
url=unix://$xdir/x1.sock
# The connect timeout covers SELECT, which a database in the URL asks for.
url_db="$url?db=1"

# ends_in LO HI WHAT CMD...: CMD times out (69) after LO..HI ms; WHAT
# names the setting in a failure.
ends_in() {
    lo=$1 hi=$2 what=$3
    shift 3
    t0=$(now_ms)
    expect 69 "$@"
    between "$lo" "$hi" "$(($(now_ms) - t0))" "ms with $what"
}

# quick WHAT CMD...: a 300 ms timeout applies, not a 20 s one.
quick() {
    ends_in 0 6000 "$@"
}

# slow WHAT CMD...: a 3 s timeout applies, not the 2 s default.
slow() {
    ends_in 2900 15000 "$@"
}

expect 0 "$RL" -u "$url" acquire -n to-key
kill -STOP "$xpid1"

# The option, before or after the subcommand, beats the environment.
export REDISLOCK_COMMAND_TIMEOUT=20s
quick --command-timeout "$RL" -u "$url" --command-timeout 300ms status to-key
one_error_line
err_has 'did not answer in time'
quick "the option after status" \
    "$RL" status --command-timeout=0.3 -u "$url" to-key
# The URL beats the environment.
quick "?timeout=300ms" "$RL" -u "$url?timeout=300ms" status to-key
quick "?socket_timeout=0.3" \
    "$RL" -u "$url?socket_timeout=0.3" acquire -n to-key
# The option beats the URL.
quick "--command-timeout over ?timeout=20" \
    "$RL" -u "$url?timeout=20" --command-timeout 300ms status to-key
# run shortens both to a fifth of the TTL, whatever asked for more.
quick "run -t 1s" \
    "$RL" -u "$url" --command-timeout 20s run -t 1s to-key -- true

# The environment beats the 2 s default; the URL beats the environment.
export REDISLOCK_COMMAND_TIMEOUT=3s
slow "REDISLOCK_COMMAND_TIMEOUT=3s" "$RL" -u "$url" status to-key
export REDISLOCK_COMMAND_TIMEOUT=300ms
slow "?timeout=3s over the environment's 300ms" \
    "$RL" -u "$url?timeout=3s" status to-key
unset REDISLOCK_COMMAND_TIMEOUT

# The connect timeout, in each of its places.
export REDISLOCK_CONNECT_TIMEOUT=20s
quick --connect-timeout "$RL" -u "$url_db" --connect-timeout 300ms \
    --command-timeout 20s status to-key
err_has 'SELECT'
quick "?connect_timeout=300ms" \
    "$RL" -u "$url_db&connect_timeout=300ms" status to-key
export REDISLOCK_CONNECT_TIMEOUT=3s
slow "REDISLOCK_CONNECT_TIMEOUT=3s" "$RL" -u "$url_db" status to-key
unset REDISLOCK_CONNECT_TIMEOUT

kill -CONT "$xpid1"
expect 0 "$RL" -u "$url?timeout=1&connect_timeout=1" status to-key
grep -q '^held ' "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"

# Bad values are usage errors that name the setting.
for v in 0 -1 abc 2d; do
    expect 64 "$RL" --command-timeout "$v" status to-key
    one_error_line
    err_has 'command timeout'
done
expect 64 "$RL" status --connect-timeout 0 to-key
err_has 'connect timeout'
expect 64 env REDISLOCK_CONNECT_TIMEOUT=soon "$RL" status to-key
one_error_line
err_has REDISLOCK_CONNECT_TIMEOUT
expect 64 env REDISLOCK_COMMAND_TIMEOUT=0 "$RL" status to-key
err_has REDISLOCK_COMMAND_TIMEOUT
# Empty is unset, as for REDISLOCK_URL.
expect 0 env REDISLOCK_COMMAND_TIMEOUT= "$RL" status to-key
out_is free
expect 64 "$RL" -u "$url?timeout=soon" status to-key
one_error_line
err_has timeout
exit 0
