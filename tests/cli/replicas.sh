#!/bin/sh
# --wait-replicas, --wait-replicas-timeout, --wait-replicas-lenient,
# --wait-aof-local, --wait-aof-replicas: the library's replica-sync and
# WAITAOF guards reach it from run, acquire and extend. On the test's
# server alone, then with a replica of it.
set -eu
. "$SRCDIR/tests/cli/lib.inc"
: "${REDIS_PORT:?}"

guard='--wait-replicas 1 --wait-replicas-timeout 100ms'

# No replica: the strict guard gives the lock back and fails.
# shellcheck disable=SC2086  # $guard is several words
expect 69 "$RL" acquire $guard -t 10s rk
one_error_line
err_has "cannot acquire lock: no replica confirmed the lock in time"
key_gone rk || fail "a lock no replica confirmed is left"
# "all" waits for at least one replica too.
expect 69 "$RL" acquire --wait-replicas all --wait-replicas-timeout 100ms rk
err_has "no replica confirmed the lock in time"
key_gone rk || fail "a lock no replica confirmed is left (all)"
# shellcheck disable=SC2086
expect 69 "$RL" run $guard rk -- sh -c 'echo ran'
out_is ''
err_has "no replica confirmed the lock in time"
key_gone rk || fail "run left a lock no replica confirmed"

# Lenient: the lock is held, with a warning that says how many confirmed.
# shellcheck disable=SC2086
expect 0 "$RL" acquire $guard --wait-replicas-lenient -t 10s rk
one_error_line
err_has "warning: lock 'rk' is held, but 0 of the 1 replicas asked for"
tok=$(cat "$TEST_TMPDIR/out")
key_exists rk || fail "the lenient guard did not take the lock"
expect 0 "$RL" release rk "$tok"

# The timeout and leniency shape a guard; alone they are a usage error.
expect 64 "$RL" acquire --wait-replicas-timeout 1s rk
err_has "go with --wait-replicas"
expect 64 "$RL" extend --wait-replicas-lenient rk tok
expect 64 "$RL" acquire --wait-replicas 0 rk

# WAITAOF: a server without it (Redis before 7.2), or with its
# append-only file off, is refused when the client connects.
expect 78 "$RL" acquire --wait-aof-local rk
one_error_line
err_has "WAITAOF|append"
key_gone rk || fail "the refused WAITAOF guard took the lock"

# A replica of the test's server (its first sync at once).
rcli config set repl-diskless-sync-delay 0 >/dev/null
more_servers 1 --replicaof 127.0.0.1 "$REDIS_PORT"
# shellcheck disable=SC2154  # set by more_servers
rep=$xdir/x1.sock
linked() {
    "$REDIS_CLI" -s "$rep" info replication | grep -q 'master_link_status:up'
}
wait_until 10 linked || fail "the replica never synced"

# Confirmed: the replica has the lock when acquire returns, and when
# run's command starts.
expect 0 "$RL" acquire --wait-replicas 1 --wait-replicas-timeout 5s -t 10s rk
err_empty
tok=$(cat "$TEST_TMPDIR/out")
[ "$("$REDIS_CLI" -s "$rep" exists rk)" = 1 ] ||
    fail "acquire returned before the replica had the lock"
expect 0 "$RL" extend --wait-replicas 1 --wait-replicas-timeout 5s -t 20s \
    rk "$tok"
err_empty
expect 0 "$RL" release rk "$tok"
# "all": every replica the master has (here its one), at least one.
expect 0 "$RL" acquire --wait-replicas all --wait-replicas-timeout 5s -t 10s rk
err_empty
tok=$(cat "$TEST_TMPDIR/out")
[ "$("$REDIS_CLI" -s "$rep" exists rk)" = 1 ] ||
    fail "acquire with all returned before the replica had the lock"
expect 0 "$RL" release rk "$tok"
expect 0 "$RL" run --wait-replicas 1 --wait-replicas-timeout 5s rk -- \
    "$REDIS_CLI" -s "$rep" exists rk
out_is 1
err_empty

# run's renewals keep the guard: once the replica is gone, none is
# confirmed, and the command is stopped before the lease runs out.
# shellcheck disable=SC2154  # set by more_servers
expect 75 "$RL" run --wait-replicas 1 -t 3s rk -- \
    sh -c "kill -9 $xpid1; echo started; sleep 10"
out_is started
err_has "cannot renew lock 'rk' in time; stopping the command: .*no replica confirmed"
exit 0
