#!/usr/bin/env bash
#
# bench/instr.sh: the instructions a server runs per uncontended
# acquire+release cycle of each kind, counted by callgrind: a figure that
# does not move with the machine's load, where the server's CPU time on a
# shared VM moves by a fifth between rounds of the same code (make bench's
# ratios are of CPU time, and stay the targets). User-space instructions
# only: the kernel's part of a cycle (its reads and writes, about the
# same for every kind) is not in the count, so these ratios are larger
# than make bench's.
#
# Starts a private server (unix socket, no persistence) under
# valgrind --tool=callgrind with instrumentation off, builds bench/instr.c
# against the static library in $BUILD, and for each kind runs WARM cycles
# uninstrumented (the library loaded, the keys made), then N with
# instrumentation on (callgrind_control -i on, off, dump), and prints the
# instructions per cycle and each kind's ratio to the plain lock's and to
# the minimal raw loop's. `make bench-instr` builds the library first.
#
# Environment: BUILD (build), REDIS_SERVER (redis-server), N (300),
# WARM (30), KINDS ("raw rawnative plain fair sem shared set"; rawnative
# is left out on a server without its own compare-and-delete).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-build}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
n=${N:-300}
warm=${WARM:-30}
kinds=${KINDS:-raw rawnative plain fair sem shared set}
for tool in valgrind callgrind_control "$cli"; do
    command -v "$tool" >/dev/null ||
        { echo "bench/instr.sh: $tool is needed" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/rlinstr.XXXXXX)
pid=
cleanup() {
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

cc -std=c11 -O2 -Wall -Wextra -I"$root/include" -o "$dir/instr" \
    "$here/instr.c" "$here/util.c" "$build/src/libredislock.a" \
    -lhiredis -lpthread
sock=$dir/s.sock
valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$dir/cg.out" "$server" --port 0 \
    --unixsocket "$sock" --save '' --appendonly no --dir "$dir" \
    >"$dir/valgrind.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ "$("$cli" -s "$sock" ping 2>/dev/null)" = PONG ] && break
    sleep 0.2
done
[ "$("$cli" -s "$sock" ping 2>/dev/null)" = PONG ] ||
    { echo "bench/instr.sh: the server did not start" >&2; exit 1; }
# Valkey also answers redis_version (7.2.4, for clients that read it).
version=$("$cli" -s "$sock" info server | tr -d '\r' |
    awk -F: '/^redis_version:/ { r = $2 } /^valkey_version:/ { v = "valkey " $2 }
        END { print v ? v : "redis " r }')
native=$("$cli" -s "$sock" command info DELIFEQ DELEX | grep -c . || true)

# The instructions the server ran while "$@" ran (instrumentation on).
count() {
    callgrind_control -z "$pid" >/dev/null 2>&1
    callgrind_control -i on "$pid" >/dev/null 2>&1
    "$@"
    callgrind_control -i off "$pid" >/dev/null 2>&1
    rm -f "$dir"/cg.out*
    callgrind_control -d "$pid" >/dev/null 2>&1
    awk '/^totals:/ { print $2 }' "$dir"/cg.out*
}

echo "bench/instr.sh: $server ($version) under callgrind, $n cycles a kind"
declare -A per
for k in $kinds; do
    if [ "$k" = rawnative ] && [ "$native" = 0 ]; then
        continue
    fi
    "$dir/instr" "$sock" "$k" "$warm"
    total=$(count "$dir/instr" "$sock" "$k" "$n")
    per[$k]=$((total / n))
done
for k in $kinds; do
    [ -n "${per[$k]:-}" ] || continue
    line=$(printf '%-10s %9d instructions a cycle' "$k" "${per[$k]}")
    if [ -n "${per[plain]:-}" ] && [ "$k" != plain ] && [ "${k#raw}" = "$k" ]; then
        line="$line, $(awk -v a="${per[$k]}" -v b="${per[plain]}" \
            'BEGIN { printf "%.2f x plain", a / b }')"
    fi
    if [ -n "${per[raw]:-}" ] && [ "${k#raw}" = "$k" ]; then
        line="$line, $(awk -v a="${per[$k]}" -v b="${per[raw]}" \
            'BEGIN { printf "%.2f x raw", a / b }')"
        if [ -n "${per[rawnative]:-}" ]; then
            line="$line, $(awk -v a="${per[$k]}" -v b="${per[rawnative]}" \
                'BEGIN { printf "%.2f x rawnative", a / b }')"
        fi
    fi
    echo "$line"
done
