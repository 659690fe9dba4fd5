#!/usr/bin/env bash
#
# bench/ab.sh [BASE [ROUNDS]]
#
# The library of commit BASE (default 6e83b78, before the one engine)
# against the working tree's, in one run: builds both (RelWithDebInfo,
# the static library), links bench/ab.c (public API only) against each,
# and runs the two in turns, ROUNDS times each (default 7; the order
# alternates, so that a drift of the machine hits both alike), against
# one private redis-server, the server pinned to one CPU and the clients
# to another as make bench does. Prints each run's figures, then each
# figure's median over the rounds for BASE and for the tree, and their
# ratio (tree / BASE: below 1 is faster), and the median of the rounds'
# ratios (each round runs both, back to back).
#
# Environment: AB_BUILD (default build-ab) holds BASE's checkout and both
# builds; AB_N and AB_M the uncontended cycles and the K=8 cycles per
# process of a run (default 20000 and 500); BENCH_SERVER_CPU and
# BENCH_CLIENT_CPU as for bench/run.sh.
#
set -eu

me=bench/ab.sh
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
base=${1:-6e83b78}
rounds=${2:-7}
dir=${AB_BUILD:-build-ab}
n=${AB_N:-20000}
m=${AB_M:-500}
scpu=${BENCH_SERVER_CPU:-0}
ccpu=${BENCH_CLIENT_CPU:-1}

die() {
    printf '%s: %s\n' "$me" "$*" >&2
    exit 1
}

rev=$(git rev-parse --verify "$base^{commit}") || die "no commit $base"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ ! -d "$dir/base-src" ] ||
    [ "$(git -C "$dir/base-src" rev-parse HEAD)" != "$rev" ]; then
    rm -rf "$dir/base-src"
    git worktree prune
    git worktree add -q --detach "$dir/base-src" "$rev"
fi

# lib SRC BUILD: the static library of the tree at SRC, built in BUILD.
lib() {
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$2" -j2 --target redislock_static >/dev/null
}
lib "$dir/base-src" "$dir/base"
lib "$root" "$dir/tree"

# One abbench per library, from the tree's bench sources.
for side in base tree; do
    # shellcheck disable=SC2046  # pkg-config prints several words.
    cc -std=c11 -O2 -g -Wall -Wextra -Iinclude \
        $(pkg-config --cflags hiredis libevent) -o "$dir/abbench-$side" \
        bench/ab.c bench/contend.c bench/util.c \
        "$dir/$side/src/libredislock.a" \
        $(pkg-config --libs hiredis libevent) -lpthread ||
        die "cannot compile abbench against $side's library"
done

spin=() cpin=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    spin=(taskset -c "$scpu")
    cpin=(taskset -c "$ccpu")
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The server is started pinned; the runs see it through REDIS_SOCK.
# shellcheck disable=SC2016  # the inner script's own variables.
REDIS_SERVER_PREFIX="${spin[*]}" \
    REDIS_SERVER=${REDIS_SERVER:-redis-server} \
    scripts/with-redis.sh bash -c '
        set -eu
        for r in $(seq 1 "$1"); do
            if [ $((r % 2)) -eq 1 ]; then order="base tree"; else order="tree base"; fi
            for side in $order; do
                line=$($2 "$3/abbench-$side" --sock "$REDIS_SOCK" --n "$4" --m "$5" |
                    grep "^abbench:")
                echo "$side $r ${line#abbench: }"
            done
        done' ab "$rounds" "${cpin[*]}" "$dir" "$n" "$m" | tee "$out"

# Medians per side and figure, and the ratios.
awk -v base="$rev" '
    function med(side, f,    k, v, i, j, t) {
        k = 0
        for (i = 1; i <= cnt[side]; i++) v[++k] = val[side, f, i]
        for (i = 1; i <= k; i++)
            for (j = i + 1; j <= k; j++)
                if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    {
        side = $1; cnt[side]++
        for (i = 3; i <= NF; i++) {
            split($i, kv, "="); val[side, kv[1], cnt[side]] = kv[2]
            if (!(kv[1] in seen)) { seen[kv[1]] = 1; names[++nf] = kv[1] }
        }
    }
    END {
        printf "\nmedians over %d rounds (us), base %.12s against the tree;\n", cnt["tree"], base
        printf "tree/base: the ratio of the medians, then the median of each round'"'"'s ratio\n"
        for (i = 1; i <= nf; i++) {
            b = med("base", names[i]); t = med("tree", names[i])
            for (r = 1; r <= cnt["tree"]; r++)
                val["q", names[i], r] = val["tree", names[i], r] / val["base", names[i], r]
            cnt["q"] = cnt["tree"]
            printf "  %-7s base %7.1f  tree %7.1f  tree/base %.3f, by round %.3f\n", names[i], b, t, t / b, med("q", names[i])
        }
    }' "$out"
