"""Runs a command in the background for the CLI tests.

usage: bg.py PIDFILE STATUSFILE COMMAND [ARG...]

A non-interactive sh starts background jobs with SIGINT and SIGQUIT
ignored, and redislock rightly keeps ignored signals ignored, so the tests
could not deliver them. This starts COMMAND with default dispositions,
writes its pid to PIDFILE and, when it ends, its status as sh reports it
(128+N after signal N) to STATUSFILE. Both files appear atomically.
"""
import os
import signal
import sys


def write_atomically(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.rename(path + ".tmp", path)


def main():
    pidfile, statusfile, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    pid = os.fork()
    if pid == 0:
        try:
            for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE,
                      signal.SIGXFSZ, signal.SIGHUP, signal.SIGTERM):
                signal.signal(s, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    write_atomically(pidfile, str(pid))
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        code = 128 + os.WTERMSIG(status)
    else:
        code = os.WEXITSTATUS(status)
    write_atomically(statusfile, str(code))


if __name__ == "__main__":
    main()
