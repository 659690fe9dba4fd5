#!/bin/sh
# Renewals by node (bench/renewscale.c): three private servers of its own,
# unpinned, and one client sharded over them holding N watched locks
# (first argument: 100000 at --scale 1), or with a second argument
# "redlock" a Redlock client of the three, or "sets" as many sets of three
# keys on the sharded client. Used by bench/run.sh; its last line is
# machine-readable.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-build}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
n=${1:-100000}
mode=${2:-}
dir=$(mktemp -d /tmp/rlrenew.XXXXXX)
pids=
cleanup() {
    # A server left stopped is woken so that it can end.
    [ -z "$pids" ] || { kill -CONT $pids 2>/dev/null; kill $pids 2>/dev/null; } || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

args=
for i in 1 2 3; do
    "$server" --port 0 --unixsocket "$dir/s$i.sock" --save '' \
        --appendonly no --dir "$dir" --logfile "$dir/s$i.log" &
    pids="$pids $!"
    args="$args $dir/s$i.sock $!"
done
for i in 1 2 3; do
    for _ in $(seq 50); do
        [ "$("$cli" -s "$dir/s$i.sock" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    [ "$("$cli" -s "$dir/s$i.sock" ping 2>/dev/null)" = PONG ] ||
        { echo "bench/renew.sh: a server did not start" >&2; exit 1; }
done
# shellcheck disable=SC2046  # pkg-config prints several words.
cc -std=c11 -O2 -Wall -Wextra -I"$root/include" \
    $(pkg-config --cflags hiredis libevent) -o "$dir/renewscale" \
    "$here/renewscale.c" "$here/util.c" "$build/src/libredislock.a" \
    $(pkg-config --libs hiredis libevent) -lpthread
# shellcheck disable=SC2086  # socket and pid pairs, one word each
"$dir/renewscale" "$n" $args $mode
