#!/usr/bin/env bash
#
# bench/run.sh [LOCKBENCH-OPTION...]
#
# Runs the lock benchmark (bench/lockbench.c) once, after the Redlock one
# (bench/redlock.sh) and the CLI's against flock(1) (bench/runcost.c),
# then its uncontended and K=8 figures (lockbench --core) against each
# newer server that scripts/check-servers.sh has built into its cache:
# installs what it needs
# (Debian packages when root, the Node peers into bench/peers with npm ci),
# compiles lockbench against the static library in $BUILD, and runs it
# pinned to one CPU against a private redis-server (scripts/with-redis.sh)
# pinned to another. The
# output ends with the main run's machine-readable line (held back until
# after the servers' table); results.md, the data and handoff.png go to
# $BENCH_OUT. `make bench` builds the library first.
#
# Environment:
#   BUILD             the CMake build directory holding src/libredislock.a
#                     (default build)
#   BENCH_OUT         output directory (default bench/out)
#   BENCH_PYTHON      interpreter with Debian's python3-redis
#                     (default /usr/bin/python3, not a pyenv shim)
#   BENCH_SERVER_CPU  CPU for redis-server (default 0)
#   BENCH_CLIENT_CPU  CPU for the clients (default 1)
#   REDIS_SERVER, REDIS_CLI  the binaries (default from PATH)
#   BENCH_SERVERS     which cached servers to run (check-servers.sh's
#                     names: redis valkey valkey9 redis86; default every
#                     one present); nothing is ever built here
#   SERVERS_CACHE     check-servers.sh's cache (default
#                     ${XDG_CACHE_HOME:-$HOME/.cache}/redislock/servers)
# Options are passed to lockbench: --ks 2,4,8,64, --peer-ks 8, --scale 0.5,
# --no-peers, --timeout 60.
#
set -eu

me=bench/run.sh
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"
build=${BUILD:-build}
out=${BENCH_OUT:-bench/out}
python=${BENCH_PYTHON:-/usr/bin/python3}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
scpu=${BENCH_SERVER_CPU:-0}
ccpu=${BENCH_CLIENT_CPU:-1}

die() {
    printf '%s: %s\n' "$me" "$*" >&2
    exit 1
}

"$here/install-deps.sh"
lib=$build/src/libredislock.a
[ -f "$lib" ] || die "no $lib: build the library first (make bench does)"

# The Node peers, pinned by package-lock.json; reinstalled only when the
# lock file changed since the last install.
peers=$here/peers
stamp=$peers/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ "$peers/package-lock.json" -nt "$stamp" ]; then
    echo "$me: installing the Node peers (npm ci) into bench/peers"
    (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error) ||
        die "npm ci failed in bench/peers"
fi

# lockbench links the static library, and its rl__script_release (the SHA
# and source of the release script the raw loop sends), hence the -I of
# src/'s layer folders (those holding headers).
srcinc=()
for d in src/*/; do
    if compgen -G "$d*.h" >/dev/null; then srcinc+=("-I${d%/}"); fi
done
mkdir -p "$out" "$build/bench"
rm -f "$out"/cdf-*.dat "$out"/cycles-*.bin "$out"/handoff.png
bin=$build/bench/lockbench
# shellcheck disable=SC2046  # pkg-config prints several words.
cc -std=c11 -O2 -g -Wall -Wextra -Wstrict-prototypes -Wwrite-strings \
    -Iinclude "${srcinc[@]}" $(pkg-config --cflags hiredis libevent) \
    -o "$bin" bench/lockbench.c bench/micro.c bench/contend.c \
    bench/memory.c bench/loopscale.c bench/report.c bench/util.c \
    bench/foreign.c bench/kinds.c "$lib" $(pkg-config --libs hiredis libevent) -lpthread ||
    die "cannot compile lockbench"

# Pinning: the server on one CPU, every client on another, so that neither
# steals the other's time. Without two CPUs or taskset, run unpinned.
spin=() cpin=()
if command -v taskset >/dev/null 2>&1 &&
    [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ]; then
    spin=(taskset -c "$scpu")
    cpin=(taskset -c "$ccpu")
else
    echo "$me: WARNING: fewer than 2 CPUs or no taskset: nothing pinned"
fi

# The versions of the peers, for the record.
version() { # NAME: the version of the Node package NAME in bench/peers
    node -p "require('$peers/node_modules/$1/package.json').version" \
        2>/dev/null || echo '?'
}
pyv=$("$python" -c 'import redis; print(redis.__version__)' 2>/dev/null) ||
    pyv='?'
echo "$me: peers: redis-py $pyv ($python), node $(node --version)," \
    "redlock $(version redlock), ioredis $(version ioredis)"

# Which source the library was built from, for the record.
BENCH_GIT=$(git describe --always --dirty 2>/dev/null || echo unknown)
export BENCH_GIT

# Redlock over 3 and 5 servers against one, and servers that are away
# (bench/redlock.sh, five servers of its own, unpinned): its figures and
# targets print first, and its machine-readable line joins lockbench's,
# so that the run still ends with one.
redlock=$(REDIS_SERVER=$server REDIS_CLI=$cli BUILD=$build bench/redlock.sh) ||
    die "the Redlock benchmark failed"
printf '%s\n' "$redlock" | sed '$d'
BENCH_REDLOCK=$(printf '%s\n' "$redlock" | tail -n 1)
export BENCH_REDLOCK

# --scale, as lockbench reads it.
scale=1
prev=
for a in "$@"; do
    [ "$prev" != --scale ] || scale=$a
    prev=$a
done

# Renewals by node (bench/renew.sh, three servers of its own, unpinned):
# 10^5 watched locks at --scale 1 over three servers, each server's
# renewal requests per period, and no loss on two while the third is
# stopped (issue 38). Printed as it comes; its last line is its figures.
renew_n=$(awk -v s="$scale" 'BEGIN { n = int(100000 * s); print n < 1000 ? 1000 : n }')
renew=$(REDIS_SERVER=$server REDIS_CLI=$cli BUILD=$build bench/renew.sh \
    "$renew_n") || die "the renewal benchmark failed: $renew"
printf '\n%s\n' "$renew"
# The same for a Redlock client of three servers, every lock on each: a
# third as many locks, as many on each server as the sharded run had
# (33,333 at --scale 1, 1000 at the least).
renew_n=$(awk -v n="$renew_n" 'BEGIN { n = int(n / 3); print n < 1000 ? 1000 : n }')
renew=$(REDIS_SERVER=$server REDIS_CLI=$cli BUILD=$build bench/renew.sh \
    "$renew_n" redlock) || die "the Redlock renewal benchmark failed: $renew"
printf '\n%s\n' "$renew"
# And sets of three keys on a sharded client, most spread over two or
# three servers (a set's groups renew by node too): a quarter as many
# sets as the first run's locks (25,000 at --scale 1, 1000 at the least),
# three quarters of its keys, since the ring's shares are uneven (up to
# 38 % of the keys on one server in the runs of 2026-12-03) and a
# server's requests follow its keys (RL_RENEW_BATCH keys a request).
sets_n=$(awk -v s="$scale" 'BEGIN { n = int(25000 * s); print n < 1000 ? 1000 : n }')
renew=$(REDIS_SERVER=$server REDIS_CLI=$cli BUILD=$build bench/renew.sh \
    "$sets_n" sets) || die "the sets' renewal benchmark failed: $renew"
printf '\n%s\n' "$renew"

# The CLI's cost against flock(1) (bench/runcost.c, issue 37): N runs of
# each of `redislock run -u URL KEY -- true` and `flock FILE true`, in
# turns, against a private server pinned as lockbench's is, the runs
# pinned as its clients; 400 runs at --scale 1, 200 at the least (a run
# takes 2-3 ms: the 20 of a --scale 0.1 run once gave medians 1.14-1.38
# times flock's across three CI runs of one commit, too wide for a 1.3
# target). Its figures and target print here, its machine-readable
# figures join lockbench's last line.
runs=$(awk -v s="$scale" 'BEGIN { n = int(400 * s); print n < 200 ? 200 : n }')
cmake --build "$build" -j2 --target redislock_cli >/dev/null ||
    die "cannot build the CLI"
cc -std=c11 -O2 -g -Wall -Wextra -Wstrict-prototypes -Wwrite-strings \
    -o "$build/bench/runcost" bench/runcost.c || die "cannot compile runcost"
touch "$build/bench/runcost.flock"
# shellcheck disable=SC2016  # expanded by the inner shell
runcost=$(REDIS_SERVER_PREFIX="${spin[*]}" REDIS_SERVER=$server \
    REDIS_CLI=$cli scripts/with-redis.sh "${cpin[@]}" sh -c \
    'exec "$1" "$2" "$3" "$REDISLOCK_URL" "$4"' sh "$build/bench/runcost" \
    "$runs" "$build/cli/redislock" "$build/bench/runcost.flock") ||
    die "the run benchmark failed: $runcost"
printf '\n%s\n' "$runcost" | sed '$d'
BENCH_RUNCOST=$(printf '%s\n' "$runcost" | tail -n 1)
export BENCH_RUNCOST

# The private server (scripts/with-redis.sh starts it, pinned, and stops
# it by pid); lockbench finds it through REDIS_SOCK and REDIS_PID. Its
# last line is held back (sed's one line of delay) to end the whole run.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
REDIS_SERVER_PREFIX="${spin[*]}" REDIS_SERVER=$server REDIS_CLI=$cli \
    scripts/with-redis.sh "${cpin[@]}" "$bin" --out "$out" \
    --peers "$peers" --python "$python" "$@" | tee "$tmp/main" | sed -u '$d'
status=${PIPESTATUS[0]}

# The newest cached build of each server check-servers.sh knows, as
# "NAME BINARY" lines; its cache directories are <name>-<version>, the
# binary in bin/ once built (a build under way has none yet).
cached_servers() {
    local cache d name bin
    cache=${SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redislock/servers}
    declare -A newest=()
    while IFS= read -r d; do
        name=${d##*/}
        name=${name%-*}
        for bin in "$d/bin/redis-server" "$d/bin/valkey-server"; do
            if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
                newest[$name]=$bin
            fi
        done
    done < <(find "$cache" -mindepth 1 -maxdepth 1 -type d -name '*-[0-9]*' \
        2>/dev/null | sort -V)
    for name in ${BENCH_SERVERS:-redis valkey valkey9 redis86}; do
        [ -z "${newest[$name]:-}" ] || echo "$name ${newest[$name]}"
    done
}

# One server's lockbench --core, pinned as the main run; prints its
# figures' line (lockbench's last), or nothing if it failed.
core_run() { # NAME BINARY LOCKBENCH-OPTION...
    local name=$1 srv=$2
    shift 2
    REDIS_SERVER_PREFIX="${spin[*]}" REDIS_SERVER=$srv REDIS_CLI=$cli \
        scripts/with-redis.sh "${cpin[@]}" "$bin" --core \
        --out "$out" "$@" >"$tmp/$name" 2>&1 || true
    tail -n 1 "$tmp/$name" | grep '^server=' || {
        echo "$me: $name: lockbench --core failed; its output's end:" >&2
        tail -n 5 "$tmp/$name" >&2
    }
}

# field LINE KEY: the value of KEY=... in LINE.
field() {
    printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# One row of the servers' table, from a --core line (empty: it failed).
row() { # NAME LINE
    if [ -z "$2" ]; then
        printf '| %-22s | FAILED: see above |\n' "$1"
        return
    fi
    printf '| %-22s | %7s x / %5s x | %7s x / %5s x | %7s / %7s us |%s\n' \
        "$1 $(field "$2" server)" \
        "$(field "$2" cycle_ratio_default)" "$(field "$2" cycle_ratio)" \
        "$(field "$2" srv_cpu_ratio_default)" "$(field "$2" srv_cpu_ratio)" \
        "$(field "$2" handoff_default_p50_us)" \
        "$(field "$2" handoff_p50_us)" \
        "$([ "$(field "$2" failed)" = 0 ] || echo ' FAIL')"
}

# The uncontended and K=8 figures on each cached server (issue 38: the
# lean protocol on the servers it is for), then a compact table of them.
servers_table() {
    local list name srv line rows=()
    list=$(cached_servers)
    echo
    if [ -z "$list" ]; then
        echo "$me: other servers: none in the cache (build them with" \
            "SERVERS=\"valkey9 redis86\" scripts/check-servers.sh --build-only)"
        return 0
    fi
    while read -r name srv; do
        echo "$me: $name ($srv): lockbench --core ..."
        line=$(core_run "$name" "$srv" "$@")
        [ -n "$line" ] && [ "$(field "$line" failed)" = 0 ] || status=1
        rows+=("$(row "$name" "$line")")
    done <<<"$list"
    echo
    echo "Other servers, lockbench --core: uncontended cycles over the" \
        "unix socket (rate and server CPU per cycle against the minimal" \
        "raw loop's on the same server) and the K=8 hand-off p50:"
    printf '| %-22s | %-19s | %-19s | %-20s |\n' server \
        "cycles/s def / fair" "srv CPU def / fair" "K=8 p50 def / fair"
    printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..24})" \
        "$(printf -- '-%.0s' {1..21})" "$(printf -- '-%.0s' {1..21})" \
        "$(printf -- '-%.0s' {1..22})"
    printf '%s\n' "${rows[@]}"
    # Issue 38's target where the server has its own compare-and-delete
    # (the uncontended release is then that command, not a script).
    while read -r name srv; do
        line=$(tail -n 1 "$tmp/$name" | grep '^server=') || continue
        native=$(field "$line" native)
        [ -n "$native" ] && [ "$native" != none ] || continue
        ratio=$(field "$line" srv_cpu_ratio_default)
        verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.2) ? "PASS" : "MISS" }')
        echo "  server CPU per uncontended plain cycle on $name" \
            "($(field "$line" server), native ${native^^}) <= 1.2 x the" \
            "minimal raw loop's: $ratio x $verdict"
    done <<<"$list"
}

servers_table "$@"
echo
tail -n 1 "$tmp/main"
exit "$status"
