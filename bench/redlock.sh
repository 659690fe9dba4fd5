#!/usr/bin/env bash
#
# bench/redlock.sh: Redlock's acquire latency against one server's, in the
# same run (bench/redlockbench.c). Starts five private redis-servers (unix
# sockets, no persistence) in a temporary directory, builds redlockbench
# against the static library in $BUILD, runs it, and stops the servers by
# pid however the script ends. `make bench-redlock` builds the library
# first.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-build}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
dir=$(mktemp -d /tmp/rlbench.XXXXXX)
pids=()
cleanup() {
    [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

socks=()
for i in 1 2 3 4 5; do
    "$server" --port 0 --unixsocket "$dir/s$i.sock" --save '' \
        --appendonly no --dir "$dir" --logfile "$dir/s$i.log" &
    pids+=($!)
    socks+=("$dir/s$i.sock")
done
for s in "${socks[@]}"; do
    for _ in $(seq 50); do
        [ "$("$cli" -s "$s" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    [ "$("$cli" -s "$s" ping 2>/dev/null)" = PONG ] ||
        { echo "bench/redlock.sh: a server did not start" >&2; exit 1; }
done
cc -std=c11 -O2 -Wall -Wextra -I"$root/include" \
    -o "$dir/redlockbench" "$here/redlockbench.c" \
    "$root/tests/harness/blackhole.c" "$here/util.c" \
    "$build/src/libredislock.a" -lhiredis -lpthread
"$dir/redlockbench" "${socks[@]}"
