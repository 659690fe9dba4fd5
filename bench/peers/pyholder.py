"""lockbench's foreign holder: redis-py's Lock (Debian's python3-redis).

Usage: pyholder.py SOCK LOCK_KEY

Connects, prints "ready <CLOCK_MONOTONIC ns>", then answers one line on
stdout for each line on stdin, until EOF:
  take     -> "took <ns>": a non-blocking acquire (timeout 60 s) that
              found the key free; "busy" if it did not
  release  -> "released <start ns> <end ns>": start is stamped just
              before Lock.release(), which runs redis-py's own
              compare-and-delete script; "lost" if the key held another
              token
time.monotonic_ns() is CLOCK_MONOTONIC on Linux, as lockbench's clock.
"""
import sys
import time

import redis


def main():
    sock, key = sys.argv[1:3]
    r = redis.Redis(unix_socket_path=sock)
    r.ping()
    lock = r.lock(key, timeout=60)
    out = sys.stdout
    out.write("ready %d\n" % time.monotonic_ns())
    out.flush()
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "take":
            if lock.acquire(blocking=False):
                out.write("took %d\n" % time.monotonic_ns())
            else:
                out.write("busy\n")
        elif cmd == "release":
            start = time.monotonic_ns()
            try:
                lock.release()
            except redis.exceptions.LockError:
                out.write("lost\n")
            else:
                out.write("released %d %d\n" % (start, time.monotonic_ns()))
        else:
            out.write("unknown %s\n" % cmd)
        out.flush()


if __name__ == "__main__":
    main()
