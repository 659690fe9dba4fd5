#!/usr/bin/env bash
# The server matrix (run by CI after `make check`): the tests that talk to
# a server, from the ASan build of `make check`, against Valkey 9.1 and
# Redis 8.6 as well as Debian 12's redis-server 7.0: the newest of each,
# whose native compare-and-delete (DELIFEQ, DELEX) replaces the release
# script where 7.0 runs it (since 2026-12-01; Redis 8.0 and Valkey 8.1,
# Debian trixie's, were the matrix before, and are SERVERS="redis valkey").
#
# Debian 12 ships none of them, so each is built from Debian's upstream source
# tarball (the .orig.tar only: it is fetched with apt-get source
# --tar-only through a private apt configuration holding deb-src entries
# for the machine's Debian mirror; the system's sources are not changed)
# with `make MALLOC=libc BUILD_TLS=no`, server binary only. Each server
# name stands for a source package in one suite: redis and valkey
# (trixie's), valkey9 (sid's valkey, 9.1) and redis86 (experimental's
# redis, 8.6; these two the matrix).
# Tarballs and binaries are cached in $SERVERS_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/redislock/servers), one directory per
# tarball, <name>-<upstream version>; a later run only asks the archive
# which version the suite has now. If the archive cannot be reached, the
# newest cached build of the series is used.
#
# --build-only: fetch and build (or find in the cache) the servers, run
# no test, and print one line per server, "NAME PATH" (its binary), on
# standard output; progress goes to standard error. For other scripts
# that want the binaries; exits non-zero if a server could not be had.
#
# The servers' runs go side by side (SERVERS_AT_ONCE=1, the default): the
# tests mostly wait on timeouts, so on 2 cores with -j2 each, both runs
# took 9.5 min (2026-11-29, 453/453 each) where one after the other took
# 2 x 9.4 min. Each run's output is shown when it ends. Ends with one line
# per server ("Valkey server v=8.1.1: 315 passed, 0 failed in 250 s") and
# exits non-zero if a server could not be had or a test failed.
#
# Environment: JOBS (2), CHECK_BUILD (build-check), SERVERS_CACHE,
# SERVERS ("valkey9 redis86": which of them to run; also redis, valkey),
# SERVERS_AT_ONCE (1: the servers' runs side by side, each with -j$JOBS;
# 0: one after the other).
set -euo pipefail

me=check-servers
build_only=0
case $#:${1:-} in
0:) ;;
1:--build-only) build_only=1 ;;
*)
    echo "usage: $0 [--build-only]" >&2
    exit 2
    ;;
esac
jobs=${JOBS:-2}
asan=${CHECK_BUILD:-build-check}
cache=${SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redislock/servers}
servers=${SERVERS:-valkey9 redis86}

# Not run against these servers: tests that never reach a real server
# (pure functions; the fake servers of badserver_*, 74 s of the run; the
# TLS tests, which this hiredis 0.14 build answers with ENOTLS), and the
# CLI tests of the sources, packaging and docs (install builds the whole
# project again). Measured on 2 cores with -j2, the whole suite took 5 min
# against each server and passed (358/358 on both); without these, about
# 4 min (301 tests), so the rest stays, the cluster tests and the
# exclusion checker's runs included: the cluster tests are where the
# servers differ most (CLUSTER, MOVED, failover). They create clusters
# with Debian 12's redis-cli 7.0, which the newer servers accept.
skip='^(backoff|rand|timers|error|canon|keys|guard|version|lua|tls|badserver)_'
skip="$skip|^excl_checker_"
# Nor, since 2026-12-08, the CLI's tests (tests/cli), but the two that
# `keep` names. The CLI sends nothing of its own: every request is the
# library's, whose tests here run the same scripts, native commands and
# fallbacks on each server (the exclusion checker's CLI workers,
# excl_cli_*, included); the rest test the CLI's text, options,
# signals, packaging and docs, alike on any server (help alone took 54
# s of 1800 s against Valkey 9.1 on 2026-12-04). The 40 that ran here
# until then took 225 s a server in the CI of fba7b43, about 110 s of
# the matrix's wall time. cli_doctor (the server's version and
# commands, as the CLI reports them) and cli_password (AUTH, ACL users)
# stay.
skip="$skip|^cli_"
keep='^cli_(doctor|password)$'

say() { printf '%s: %s\n' "$me" "$*"; }

# With --build-only, standard output is for the "NAME PATH" lines alone:
# they go to fd 3, and everything else to standard error.
if [ "$build_only" = 1 ]; then
    exec 3>&1 1>&2
fi

# name -> Debian source package, the series wanted, binary, the suite
# whose version of the package is built.
server_info() {
    case $1 in
    redis) echo "redis 8.0 redis-server trixie" ;;
    valkey) echo "valkey 8.1 valkey-server trixie" ;;
    valkey9) echo "valkey 9.1 valkey-server sid" ;;
    redis86) echo "redis 8.6 redis-server experimental" ;;
    *) return 1 ;;
    esac
}

# The machine's Debian mirror, from its apt sources (deb822 or one-line);
# the archive's own address if none is found.
debian_mirror() {
    local uri
    uri=$(awk '/^$/ { deb = 0 }
        /^Types:/ { deb = / deb( |$)/ }
        /^URIs:/ && deb {
            for (i = 2; i <= NF; i++)
                if ($i ~ /\/debian\/?$/) { print $i; exit }
        }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
        uri=$(awk '$1 == "deb" {
            for (i = 2; i <= NF; i++)
                if ($i ~ /\/debian\/?$/) { print $i; exit }
        }' /etc/apt/sources.list)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

# The suites the chosen servers come from, each once.
suites=
for name in $servers; do
    info=$(server_info "$name") || { say "unknown server $name"; exit 2; }
    suite=${info##* }
    case " $suites " in
    *" $suite "*) ;;
    *) suites="${suites:+$suites }$suite" ;;
    esac
done

# One apt configuration for all the suites, a deb-src entry for each of
# those wanted (no other: the default run fetches trixie's index only).
# apt-cache showsrc would list every suite's versions of a package without
# saying whose is whose, so the version is taken from apt-cache madison,
# whose lines name the suite of each ("redis | 5:8.6.3-1 | URI
# experimental/main Sources"); apt-get source pkg=version then fetches
# exactly that one, whichever suite also has it.
mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" \
    "$cache/apt/parts"

# One fetch-and-build at a time per cache (CI jobs may share it), the
# apt configuration included (another run may want other suites).
exec 9>"$cache/.lock"
flock 9

: >"$cache/apt/sources.list"
rm -f "$cache/apt/parts/"*.sources
mirror=$(debian_mirror)
for suite in $suites; do
    cat >"$cache/apt/parts/$suite.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
done
apt_opts=(-o "Dir::Etc::SourceList=$cache/apt/sources.list"
    -o "Dir::Etc::SourceParts=$cache/apt/parts"
    -o "Dir::State::Lists=$cache/apt/lists"
    -o "Dir::Cache=$cache/apt/cache")
# As root, apt hands downloads to its _apt user, who cannot write here.
[ "$(id -u)" -ne 0 ] || apt_opts+=(-o APT::Sandbox::User=root)

t=$SECONDS
# apt keeps the old index if it cannot fetch a new one (and may say so
# with a warning only).
apt-get "${apt_opts[@]}" -qq update ||
    say "cannot update the source indexes ($suites); using what is cached"
say "source indexes ($suites): $((SECONDS - t)) s"

# cached_build NAME SERIES BINARY: the newest build of the series in the
# cache, for when the archive cannot say which is current.
cached_build() {
    local bin
    bin=$(find "$cache" -maxdepth 3 -path "$cache/$1-$2.*/bin/$3" |
        sort -V | tail -n 1)
    if [ -z "$bin" ]; then
        say "$1: no $1 $2 from the archive nor in the cache" >&2
        return 1
    fi
    say "$1: the archive did not answer; the cached $bin" >&2
    echo "$bin"
}

# fetch_and_build NAME: prints the path of NAME's server binary, fetched
# and built if the cache lacks it. Progress goes to stderr.
fetch_and_build() {
    local name=$1 pkg series binary suite debver upstream dir t0 src
    read -r pkg series binary suite < <(server_info "$name")
    # The version in the suite's own index (see the apt configuration).
    debver=$(apt-cache "${apt_opts[@]}" madison "$pkg" 2>/dev/null |
        awk -F ' [|] ' -v p="$pkg" -v s="$suite" '
            $1 ~ "^ *" p "$" && $3 ~ (" " s "/[^ ]* Sources$") {
                v = $2; gsub(/ /, "", v); print v }' | sort -V | tail -n 1)
    [ -n "$debver" ] || { cached_build "$name" "$series" "$binary"; return; }
    # 5:8.0.2-3+deb13u3 -> 8.0.2, the orig tarball's version.
    upstream=$(echo "$debver" | sed 's/^[0-9]*://; s/-[^-]*$//')
    case $upstream in
    "$series".*) ;;
    *)
        say "$suite's $pkg is $debver, not $series.x:" \
            "update check-servers.sh" >&2
        return 1
        ;;
    esac
    dir=$cache/$name-$upstream
    if [ -x "$dir/bin/$binary" ] &&
        "$dir/bin/$binary" --version >/dev/null; then
        say "$name: $suite's $pkg $debver; built, cached in $dir" >&2
        echo "$dir/bin/$binary"
        return 0
    fi
    mkdir -p "$dir" || return 1
    t0=$SECONDS
    # (set -e does not hold in a function called from a condition: each
    # step says how it fails.)
    if ! ls "$dir/${pkg}_$upstream".orig.tar.* >/dev/null 2>&1; then
        (cd "$dir" &&
            apt-get "${apt_opts[@]}" -qq source --download-only --tar-only \
                "$pkg=$debver") >&2 ||
            { cached_build "$name" "$series" "$binary"; return; }
    fi
    src=$dir/src
    if ! { rm -rf "$src" && mkdir -p "$src" &&
        tar -xf "$dir/${pkg}_$upstream".orig.tar.* -C "$src" \
            --strip-components=1; }; then
        say "$name $upstream: cannot unpack the tarball" >&2
        return 1
    fi
    say "$name: $suite's $pkg $debver;" \
        "$(basename "$dir/${pkg}_$upstream".orig.tar.*) fetched in" \
        "$((SECONDS - t0)) s; building" >&2
    t0=$SECONDS
    # The server only: no TLS, no jemalloc, no systemd (fewer build needs).
    if ! make -C "$src/src" -j"$jobs" MALLOC=libc BUILD_TLS=no \
        USE_SYSTEMD=no "$binary" >"$dir/build.log" 2>&1; then
        tail -n 30 "$dir/build.log" >&2
        say "$name $upstream: build failed (log: $dir/build.log)" >&2
        return 1
    fi
    if ! { mkdir -p "$dir/bin" &&
        cp "$src/src/$binary" "$dir/bin/$binary.new" &&
        mv "$dir/bin/$binary.new" "$dir/bin/$binary"; }; then
        return 1
    fi
    rm -rf "$src"
    say "$name $upstream: built in $((SECONDS - t0)) s" >&2
    echo "$dir/bin/$binary"
}

declare -A bins
status=0
for name in $servers; do
    if bin=$(fetch_and_build "$name"); then
        bins[$name]=$bin
    else
        status=1
    fi
done
flock -u 9

if [ "$build_only" = 1 ]; then
    for name in $servers; do
        [ -z "${bins[$name]:-}" ] || echo "$name ${bins[$name]}" >&3
    done
    exit "$status"
fi

# The ASan build of make check, brought up to date (the same configuration,
# so nothing is rebuilt when make check has just run).
cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DREDISLOCK_WERROR=ON \
    -DREDISLOCK_SANITIZE=address,undefined >/dev/null
cmake --build "$asan" -j"$jobs" >/dev/null
mapfile -t tests < <("$asan/tests/rl-tests" --list |
    awk -v skip="$skip" -v keep="$keep" '$0 ~ keep || $0 !~ skip')

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# One server's run, its output in $log/<name>.out, how long it took in
# $log/<name>.took.
run_server() {
    local name=$1 bin=$2 t0=$SECONDS
    # Some tests start redis-server by name from PATH rather than through
    # REDIS_SERVER: a directory where that name is this server.
    mkdir -p "$log/$name"
    ln -sf "$bin" "$log/$name/redis-server"
    PATH=$log/$name:$PATH REDIS_SERVER=$bin \
        "$asan/tests/rl-tests" -j"$jobs" "${tests[@]}" >"$log/$name.out" 2>&1 ||
        true # the counts below say how it went
    echo $((SECONDS - t0)) >"$log/$name.took"
}

# Both servers' runs at once (SERVERS_AT_ONCE=0: one after the other).
pids=()
for name in $servers; do
    [ -n "${bins[$name]:-}" ] || continue
    say "$("${bins[$name]}" --version)"
    say "${#tests[@]} tests against $name, -j$jobs"
    if [ "${SERVERS_AT_ONCE:-1}" = 0 ]; then
        run_server "$name" "${bins[$name]}"
        cat "$log/$name.out"
    else
        run_server "$name" "${bins[$name]}" &
        pids+=($!)
    fi
done
for pid in "${pids[@]}"; do
    wait "$pid"
done
summary=()
for name in $servers; do
    if [ -z "${bins[$name]:-}" ]; then
        summary+=("$name: no server, not run")
        continue
    fi
    [ "${SERVERS_AT_ONCE:-1}" = 0 ] || {
        say "$name's run:"
        cat "$log/$name.out"
    }
    counts=$(sed -n 's/^\([0-9]* passed, [0-9]* failed\)$/\1/p' \
        "$log/$name.out" | tail -n 1)
    case $counts in
    *" 0 failed") ;;
    *) status=1 ;;
    esac
    version=$("${bins[$name]}" --version | cut -d' ' -f1-3)
    summary+=("$version: ${counts:-no result} in $(cat "$log/$name.took") s")
done
for line in "${summary[@]}"; do
    say "$line"
done
exit "$status"
