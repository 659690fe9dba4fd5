"""Drives redis-py's Lock for test_interop.c.

Usage: interop.py SOCKET. Reads one command per line on stdin and answers
each with one line on stdout:

    acquire KEY [SECS]    -> "True TOKEN" or "False" (a SECS lease, default
                             30; no wait)
    release KEY           -> "ok" or "error NAME", releasing the Lock that
                             acquire made
    release KEY TOKEN     -> the same with a fresh Lock told to own TOKEN
    quit
"""
import sys

import redis
from redis.exceptions import LockError
from redis.lock import Lock


def release(r, held, words):
    key = words[1]
    if len(words) > 2:
        lock = Lock(r, key)
        # How a redis-py user releases a lock acquired elsewhere.
        lock.local.token = words[2]
    else:
        lock = held.pop(key)
    try:
        lock.release()
    except LockError as e:
        return "error " + type(e).__name__
    return "ok"


def main():
    r = redis.Redis(unix_socket_path=sys.argv[1])
    held = {}
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "acquire":
            secs = float(words[2]) if len(words) > 2 else 30
            lock = Lock(r, words[1], timeout=secs)
            if lock.acquire(blocking=False):
                held[words[1]] = lock
                reply = "True " + lock.local.token.decode()
            else:
                reply = "False"
        elif words[0] == "release":
            reply = release(r, held, words)
        else:
            reply = "error unknown command"
        print(reply, flush=True)


if __name__ == "__main__":
    main()
