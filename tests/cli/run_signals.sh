#!/bin/sh
# run passes SIGTERM, SIGINT and SIGHUP on to the command and releases the
# lock only after the command has ended.
set -eu
. "$(dirname "$0")/lib.inc"

# The child traps the signal, notes that the lock is still held when it
# gets it, and exits 0 after a short pause.
child='trap "
    \"\$0\" -s \"\$1\" exists sig-key >\"\$2.held\"
    sleep 0.3
    echo got >\"\$2\"
    exit 0" '

for sig in TERM INT HUP; do
    marker=$TEST_TMPDIR/got.$sig
    ready=$TEST_TMPDIR/ready.$sig
    bg "run$sig" "$RL" run sig-key -- \
        sh -c "$child $sig; touch \"\$3\"; $SPIN" "$REDIS_CLI" "$REDIS_SOCK" \
        "$marker" "$ready"
    wait_until 10 test -e "$ready" || fail "$sig: the command did not start"
    kill -s "$sig" "$bg_pid"
    bg_wait "run$sig" 10
    [ "$rc" = 0 ] || fail "$sig: run exited $rc, want the command's 0"
    [ -s "$marker" ] || fail "$sig: the command did not get the signal"
    [ "$(cat "$marker.held")" = 1 ] ||
        fail "$sig: the lock was gone while the command still ran"
    key_gone sig-key || fail "$sig: the lock was not released"
done

# A command that does not trap the signal dies of it: 128 + N.
ready=$TEST_TMPDIR/ready.plain
bg plain "$RL" run sig-key -- sh -c 'touch "$1"; exec sleep 30' sh "$ready"
wait_until 10 test -e "$ready" || fail "the plain command did not start"
kill -s TERM "$bg_pid"
bg_wait plain 10
[ "$rc" = 143 ] || fail "plain: run exited $rc, want 143"
key_gone sig-key || fail "plain: the lock was not released"

# A signal ignored on entry (nohup) stays ignored: SIGHUP neither stops
# the command nor redislock.
ready=$TEST_TMPDIR/ready.nohup
bg nohup sh -c 'trap "" HUP; exec "$@"' sh \
    "$RL" run sig-key -- sh -c 'touch "$1"; '"$SPIN" sh "$ready"
wait_until 10 test -e "$ready" || fail "nohup: the command did not start"
kill -s HUP "$bg_pid"
sleep 0.5
[ ! -f "$TEST_TMPDIR/nohup.status" ] || fail "nohup: SIGHUP ended run"
kill -s TERM "$bg_pid"
bg_wait nohup 10
[ "$rc" = 143 ] || fail "nohup: run exited $rc after SIGTERM, want 143"
key_gone sig-key || fail "nohup: the lock was not released"

# A signal while waiting for the lock ends the wait; nothing is taken.
expect 0 "$RL" acquire -t 60s sig-key
holder=$(cat "$TEST_TMPDIR/out")
bg waiting "$RL" run sig-key -- touch "$TEST_TMPDIR/waiting.ran"
sleep 0.5
kill -s TERM "$bg_pid"
bg_wait waiting 10
[ "$rc" = 143 ] || fail "waiting: run exited $rc, want 143"
[ ! -e "$TEST_TMPDIR/waiting.ran" ] || fail "waiting: the command ran"
holds sig-key "$holder" || fail "waiting: the holder lost it"
exit 0
