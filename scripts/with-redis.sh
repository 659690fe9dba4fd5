#!/usr/bin/env bash
#
# with-redis.sh COMMAND [ARG...]
#
# Runs COMMAND against a private, throw-away redis-server: unix socket only
# (no TCP port, so parallel runs never collide and nothing is exposed), no
# persistence, everything in a fresh temporary directory. COMMAND sees
# REDISLOCK_URL=unix://SOCK, REDIS_SOCK=SOCK and REDIS_PID. The server is stopped and
# the directory removed however the script ends; the exit status is
# COMMAND's.
#
# Environment: REDIS_SERVER and REDIS_CLI override the binaries found on PATH.
#
# Bash rather than sh because the cleanup relies on bash reaping background
# children as they exit, so that `kill -0` tells a stopped server from a
# live one.
#
# shellcheck disable=SC2317  # cleanup and on_exit are only run by traps.
set -eu

me=${0##*/}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
# Polls of 0.1 s: the startup and shutdown bounds are about 5 s each.
polls=50

die() {
    printf '%s: %s\n' "$me" "$*" >&2
    exit 1
}

if [ "$#" -eq 0 ]; then
    printf 'usage: %s COMMAND [ARG...]\n' "$me" >&2
    exit 2
fi
command -v "$server" >/dev/null 2>&1 ||
    die "cannot find $server (set REDIS_SERVER)"
command -v "$cli" >/dev/null 2>&1 || die "cannot find $cli (set REDIS_CLI)"

dir=
pid=

# Stops the server by the pid we started, never by name: other servers on
# the machine are none of our business. Safe to run more than once.
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt "$polls" ]; do
            sleep 0.1
            i=$((i + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            printf '%s: redis-server %s ignored SIGTERM; killing it\n' \
                "$me" "$pid" >&2
            kill -9 "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
        pid=
    fi
    if [ -n "$dir" ]; then
        rm -rf -- "$dir"
        dir=
    fi
}

# EXIT keeps the status that is already on its way out; a signal becomes
# the conventional 128 + signal number.
on_exit() {
    st=$?
    cleanup
    exit "$st"
}
trap on_exit EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

dir=$(mktemp -d "${TMPDIR:-/tmp}/with-redis.XXXXXX") ||
    die "cannot create a temporary directory"
sock=$dir/redis.sock
log=$dir/redis.log
# sun_path holds 108 bytes on Linux (104 on BSDs); fail clearly rather than
# let the server truncate the path.
[ "${#sock}" -lt 100 ] || die "socket path too long: $sock (set TMPDIR)"

# No --daemonize: the server stays our child, so $! is its pid and we can
# wait for it. A non-interactive shell starts it with SIGINT ignored, so a
# ^C reaches COMMAND and the trap, and the trap stops the server.
# REDIS_SERVER_PREFIX, if set, is a command the server runs under (the
# benchmark pins it to a CPU with "taskset -c 0"); it must exec.
# shellcheck disable=SC2086  # the prefix is words
${REDIS_SERVER_PREFIX:-} "$server" --port 0 --unixsocket "$sock" \
    --unixsocketperm 700 --dir "$dir" --pidfile "$dir/redis.pid" \
    --logfile "$log" --save '' --appendonly no --daemonize no </dev/null &
pid=$!

i=0
until [ "$("$cli" -s "$sock" ping 2>/dev/null || true)" = PONG ]; do
    i=$((i + 1))
    if ! kill -0 "$pid" 2>/dev/null || [ "$i" -ge "$polls" ]; then
        printf '%s: redis-server did not answer PING on %s; log tail:\n' \
            "$me" "$sock" >&2
        tail -n 20 "$log" >&2 2>/dev/null || true
        exit 1
    fi
    sleep 0.1
done

export REDISLOCK_URL="unix://$sock"
export REDIS_SOCK="$sock"
export REDIS_PID="$pid"

# Not exec: the trap must outlive COMMAND to stop the server.
status=0
"$@" || status=$?
exit "$status"
