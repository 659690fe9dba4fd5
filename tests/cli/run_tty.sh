#!/bin/sh
# On a terminal, run's command gets the terminal's foreground, as a
# shell's job would: it can read from the terminal, Ctrl-C reaches it,
# then run's caller as it would have without the hand-over (run dies of
# it: 130), Ctrl-Z does not leave it stopped, and afterwards the terminal
# is given back to run's caller, which reads from it again.
set -eu
. "$(dirname "$0")/lib.inc"

# shellcheck disable=SC2016 # expanded by the sh on the terminal
"$PYTHON" - "$RL" <<'PY' || fail "see above"
import os, pty, select, signal, subprocess, sys, time

rl = sys.argv[1]
# The command reads two lines, then sleeps until Ctrl-C; its caller, a
# sh without job control, notes a SIGINT, prints run's status and reads
# one more line.
job = ('echo ready; read a; echo "got:$a"; read b; echo "got:$b"; '
       'exec sleep 30')
caller = ('trap "echo caught" INT; "$0" run tty-key -- sh -c "$1"; '
          'echo "rc:$?"; read c; echo "after:$c"')
pid, fd = pty.fork()
if pid == 0:
    # Whatever started the tests may have left SIGINT ignored (as sh does
    # for background jobs), and the command would keep it so.
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN,
              signal.SIGTTOU):
        signal.signal(s, signal.SIG_DFL)
    os.execvp("sh", ["sh", "-c", caller, rl, job])

seen = b""


def expect(what, timeout=10):
    global seen
    end = time.monotonic() + timeout
    while what.encode() not in seen:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            ps = subprocess.run(["ps", "-o", "pid,ppid,pgid,tpgid,stat,cmd",
                                 "-s", str(pid)], capture_output=True,
                                text=True).stdout
            sys.exit("FAIL: no %r on the terminal; it shows: %r\n%s"
                     % (what, seen, ps))
        try:
            seen += os.read(fd, 4096)
        except OSError:
            sys.exit("FAIL: the terminal closed; it showed: %r" % seen)


expect("ready")
os.write(fd, b"one\n")
expect("got:one")
os.write(fd, b"\x1a")  # Ctrl-Z: the caller has no job control
time.sleep(0.3)
os.write(fd, b"two\n")
expect("got:two")
os.write(fd, b"\x03")  # Ctrl-C, for the command's process group
expect("caught")
expect("rc:130")
os.write(fd, b"three\n")
expect("after:three")
_, status = os.waitpid(pid, 0)
if status != 0:
    sys.exit("FAIL: the caller's sh ended with status %d" % status)
PY
key_gone tty-key || fail "run did not release"
exit 0
