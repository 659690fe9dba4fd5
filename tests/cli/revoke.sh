#!/bin/sh
# revoke: a holder is asked to give its lock up. run hears it at its next
# renewal, stops its command (SIGTERM), releases the key and exits 75.
set -eu
. "$(dirname "$0")/lib.inc"

# run -t 3s renews every second: the command is stopped within a period
# of the revocation (and the time a loaded machine takes), and the key
# is free once run has exited.
bg held "$RL" run -t 3s rv-key -- sh -c \
    'trap "echo stopped >\"$1\"; exit 0" TERM; while :; do sleep 0.05; done' \
    sh "$TEST_TMPDIR/stopped"
wait_until 10 key_exists rv-key || fail "run did not take the lock"
t0=$(now_ms)
expect 0 "$RL" revoke --reason "deploy 42" rv-key
err_empty
bg_wait held 10
t1=$(now_ms)
[ "$rc" = 75 ] || fail "revoked run exited $rc, not 75"
[ -s "$TEST_TMPDIR/stopped" ] || fail "the command was not sent SIGTERM"
grep -q "revoked.*deploy 42" "$TEST_TMPDIR/held.err" ||
    fail "run did not say why: $(cat "$TEST_TMPDIR/held.err")"
# One renewal period (1 s) and the command's end; generous for load.
[ "$((t1 - t0))" -le 2500 ] ||
    fail "run ended $((t1 - t0)) ms after the revocation"
key_gone rv-key || fail "the revoked run left the key"

# A token from acquire: its extend is told (exit 75 with the reason), the
# lease lengthened all the same; release frees the key.
expect 0 "$RL" acquire -t 5s rv-key
token=$(cat "$TEST_TMPDIR/out")
expect 0 "$RL" status rv-key
case $(cat "$TEST_TMPDIR/out") in *revoked*) fail "status says revoked before the revoke" ;; esac
expect 0 "$RL" revoke rv-key
expect 0 "$RL" revoke --reason again rv-key
expect 0 "$RL" status rv-key
grep -Eq '^held ttl_ms=[0-9]+ revoked$' "$TEST_TMPDIR/out" ||
    fail "status of a lock revoked without a reason: $(cat "$TEST_TMPDIR/out")"
expect 75 "$RL" extend -t 20s rv-key "$token"
err_has "revoked, no reason given"
between 15000 20000 "$(rcli pttl rv-key)" "pttl after the revoked extend"
expect 0 "$RL" release rv-key "$token"
key_gone rv-key || fail "release left the revoked key"

# status names the reason, --json too (spaces escaped as for owner ids).
expect 0 "$RL" acquire -t 5s rv-key
token=$(cat "$TEST_TMPDIR/out")
expect 0 "$RL" revoke --reason "deploy 42" rv-key
expect 0 "$RL" status rv-key
grep -Eq '^held ttl_ms=[0-9]+ revoked=deploy\\x2042$' "$TEST_TMPDIR/out" ||
    fail "status of a revoked lock: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status --json rv-key
grep -q '"revoked":"deploy 42"' "$TEST_TMPDIR/out" ||
    fail "status --json of a revoked lock: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" release rv-key "$token"

# Nothing to revoke, a holder that cannot hear it, bad reasons.
expect 1 "$RL" revoke rv-key
err_has "free"
rcli set rv-key 9f2c4e1ab37d44c0 px 5000 >/dev/null
expect 65 "$RL" revoke rv-key
err_has "another library"
[ "$(rcli get rv-key)" = 9f2c4e1ab37d44c0 ] || fail "revoke changed a foreign lock"
rcli del rv-key >/dev/null
expect 64 "$RL" revoke --reason "$(printf 'a%.0s' $(seq 65))" rv-key
one_error_line
expect 64 "$RL" revoke --reason "$(printf 'tab\there')" rv-key
one_error_line
expect 64 "$RL" revoke
one_error_line
