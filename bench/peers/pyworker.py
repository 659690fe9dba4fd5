"""One lockbench worker on redis-py's Lock (Debian's python3-redis).

Usage: pyworker.py SOCK LOCK_KEY COUNTER_KEY M TTL_MS OUT_FILE SLEEP_S

Connects, prints "ready <CLOCK_MONOTONIC ns>", starts when stdin reaches
EOF, then does M cycles of: blocking acquire (no deadline; the lock polls
every SLEEP_S seconds), a non-atomic GET/SET increment of the counter,
release. Writes three native int64 stamps per cycle to OUT_FILE:
acquire returned, release began, release returned.
"""
import array
import sys
import time

import redis


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def main():
    sock, key, counter, m, ttl_ms, out, sleep = sys.argv[1:8]
    m = int(m)
    r = redis.Redis(unix_socket_path=sock)
    r.ping()
    lock = r.lock(key, timeout=int(ttl_ms) / 1000.0, sleep=float(sleep),
                  blocking=True, blocking_timeout=None)
    stamps = array.array("q", bytes(8 * 3 * m))
    sys.stdout.write("ready %d\n" % now())
    sys.stdout.flush()
    sys.stdin.buffer.read()  # EOF is the start signal
    for i in range(m):
        lock.acquire()
        stamps[3 * i] = now()
        v = int(r.get(counter) or 0)
        r.set(counter, v + 1)
        stamps[3 * i + 1] = now()
        lock.release()
        stamps[3 * i + 2] = now()
    with open(out, "wb") as f:
        stamps.tofile(f)


if __name__ == "__main__":
    main()
