#!/bin/sh
# A SIGKILLed redislock cannot release: its guardian kills the command at
# once, with what the command started, and the lock expires by its TTL;
# until then nobody else gets it.
set -eu
. "$(dirname "$0")/lib.inc"

# Should the guardian fail, what it guards must not outlive the test.
trap 'for f in $(grep -lzxF RL_SIGKILL=$$ /proc/[0-9]*/environ 2>/dev/null)
      do p=${f#/proc/}; kill -9 "${p%/environ}" 2>/dev/null || true; done
      cleanup' EXIT

fifo=$TEST_TMPDIR/job.fifo
ready=$TEST_TMPDIR/ready
mkfifo "$fifo"
end_ms "$fifo" "$ready" signal KILL "$TEST_TMPDIR/victim.pid" \
    >"$TEST_TMPDIR/end_ms" &
watcher=$!
bg victim env RL_SIGKILL=$$ "$RL" run -t 10s kill-key -- \
    sh -c 'exec 3>"$2"; : >"$1"; sleep 30 & exec sleep 30' sh "$ready" \
    "$fifo"
wait "$watcher" || fail "the command outlived run"
took=$(cat "$TEST_TMPDIR/end_ms")
bg_wait victim 10
[ "$rc" = 137 ] || fail "the killed run reported $rc"
between 0 1000 "$took" "ms from run's SIGKILL to the command's end"
echo "the command ended $took ms after run's SIGKILL"

key_exists kill-key || fail "the lock vanished with the process"
expect 1 "$RL" run -n kill-key -- true
ttl=$(rcli pttl kill-key)
between 1 10000 "$ttl" "pttl of the orphaned lock"
wait_until 13 key_gone kill-key || fail "the lock did not expire by its TTL"
expect 0 "$RL" run -n kill-key -- true
exit 0
