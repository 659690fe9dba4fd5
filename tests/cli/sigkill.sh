#!/bin/sh
# A SIGKILLed redislock cannot release: its guardian kills the command at
# once, with what the command started, and the lock expires by its TTL;
# until then nobody else gets it.
set -eu
. "$(dirname "$0")/lib.inc"

# end_ms FIFO READY TRIGGER...: prints the ms from TRIGGER to the end of
# the command, whose processes, and only they, hold FIFO open for writing
# ("exec 3>FIFO"): its end of file comes when the last of them is gone.
# READY is a file the command creates once it holds FIFO. TRIGGER is
# "signal NAME PIDFILE", sent from here so that the time is taken right
# at it, or a command, timed from its end. Start it before the command:
# the command's open waits for this reader. Gives up after 10 s.
end_ms() {
    "$PYTHON" - "$@" <<'PY'
import os, select, signal, subprocess, sys, time
fifo, ready, trig = sys.argv[1], sys.argv[2], sys.argv[3:]
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
end = time.monotonic() + 10
while not os.path.exists(ready):
    if time.monotonic() > end:
        sys.exit("the command did not start")
    time.sleep(0.01)
if trig[0] == "signal":
    pid = int(open(trig[2]).read())
    t0 = time.monotonic()
    os.kill(pid, getattr(signal, "SIG" + trig[1]))
else:
    subprocess.run(trig, check=True, stdout=subprocess.DEVNULL)
    t0 = time.monotonic()
end = t0 + 10
while select.select([fd], [], [], max(0, end - time.monotonic()))[0]:
    if os.read(fd, 512) == b"":
        print(int((time.monotonic() - t0) * 1000))
        sys.exit(0)
sys.exit("the command still runs 10 s after %s" % " ".join(trig))
PY
}

# Should the guardian fail, what it guards must not outlive the test.
trap 'for f in $(grep -lzxF RL_SIGKILL=1 /proc/[0-9]*/environ 2>/dev/null)
      do p=${f#/proc/}; kill -9 "${p%/environ}" 2>/dev/null || true; done
      cleanup' EXIT

fifo=$TEST_TMPDIR/job.fifo
ready=$TEST_TMPDIR/ready
mkfifo "$fifo"
end_ms "$fifo" "$ready" signal KILL "$TEST_TMPDIR/victim.pid" \
    >"$TEST_TMPDIR/end_ms" &
watcher=$!
bg victim env RL_SIGKILL=1 "$RL" run -t 5s kill-key -- \
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
between 1 5000 "$ttl" "pttl of the orphaned lock"
wait_until 8 key_gone kill-key || fail "the lock did not expire by its TTL"
expect 0 "$RL" run -n kill-key -- true
exit 0
