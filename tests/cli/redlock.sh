#!/bin/sh
# --redlock: the -u URLs are independent servers and a lock is held when a
# majority grant it. run works with one server of three dead; with two
# dead it exits 69 (quorum failure) without running the command; an even
# count or a server given twice is a usage error (64).
set -eu
. "$(dirname "$0")/lib.inc"

more_servers 2
dir=$xdir
u1=$REDISLOCK_URL
u2=unix://$dir/x1.sock
u3=unix://$dir/x2.sock
RL=$REDISLOCK_BIN
set -- --redlock -u "$u1" -u "$u2" -u "$u3"

# The command runs while all three servers hold the key.
expect 0 "$RL" "$@" run -n rk -- sh -c \
    'for s in "$1" "$2" "$3"; do "$0" -s "$s" exists rk; done' "$REDIS_CLI" \
    "$REDIS_SOCK" "$dir/x1.sock" "$dir/x2.sock"
out_is "1
1
1"
[ "$(rcli exists rk)" = 0 ] || fail "run left rk behind"

# Held on a majority: the second taker gets 1 at once.
expect 0 "$RL" "$@" acquire -t 30s rk
tok=$(cat "$TEST_TMPDIR/out")
expect 1 "$RL" "$@" run -n rk -- true
err_empty
expect 1 "$RL" "$@" run --verbose -n rk -- true
err_has 'not obtained .*held by another owner'
expect 0 "$RL" "$@" status rk
grep -q '^held ttl_ms=' "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" "$@" release rk "$tok"
expect 0 "$RL" "$@" status rk
out_is free

# Usage errors: even count, duplicate server, two modes.
expect 64 "$RL" --redlock -u "$u1" -u "$u2" run rk -- true
err_has 'odd'
expect 64 "$RL" --redlock -u "$u1" -u "$u2" -u "$u1" run rk -- true
expect 64 "$RL" --redlock --shard -u "$u1" -u "$u2" -u "$u3" run rk -- true
expect 64 "$RL" -u "$u1" -u "$u2" run rk -- true

# One server of three stopped (SIGSTOP: it accepts connections but never
# answers): each call is a fresh client that never reached it, and must
# still take a 2 s lease (left to expire), its rounds waiting on the stopped server no
# longer than the 200 ms that lease leaves it (they waited the 2 s
# command timeout, and every attempt ran out of validity).
# shellcheck disable=SC2154  # set by more_servers
kill -STOP "$xpid1"
t0=$(now_ms)
expect 0 "$RL" "$@" acquire -t 2s rs
t1=$(now_ms)
key_exists rs || fail "acquire with one server stopped left no rs on server 1"
kill -CONT "$xpid1"
between 0 6000 $((t1 - t0)) "ms to acquire with one server stopped"

# One server of three dead: still locks.
kill -9 "$xpid1"
expect 0 "$RL" --redlock -u "$u1" -u "$u2" -u "$u3" run -n rk -- echo ran
out_is ran
# Two dead: quorum failure, 69, and the command does not run.
kill -9 "$xpid2"
expect 69 "$RL" --redlock -u "$u1" -u "$u2" -u "$u3" run -n rk -- echo ran
out_is ""
err_has 'servers answered'
one_error_line
[ "$(rcli exists rk)" = 0 ] || fail "a failed quorum left rk on server 1"
