#!/bin/sh
# Builds libredislock against hiredis 1.x (with TLS) and runs the lock
# tests on it, rediss:// included.
#
# Debian 12 ships hiredis 0.14 only. Debian's own source package of
# redis-server carries a hiredis 1.x tree (deps/hiredis), so it is fetched
# with apt-get source -- a Debian package, through the machine's own apt
# sources (turned into deb-src entries in a private apt configuration; the
# system's is not changed) -- and built into a private prefix.
set -eu

jobs=${JOBS:-2}
top=$(pwd)
work=${HIREDIS1_DIR:-$top/build-hiredis1}
build=$work/build
tests="lock_* expiry_* script_* input_* url_* auth_* concurrency_* wake_*
fair_* fence_* reentrant_* holdafter_* meta_* interop_* tls_* aconn_* loop_*
alock_* adapter_* cli_tls"

mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
# deb-src twins of the system's deb sources (deb822 .sources files and
# one-line .list files alike).
: >"$work/apt/sources.list"
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" \
        >"$work/apt/src-$(basename "$f")"
done
if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$work/apt/sources.list"
fi
apt_opts="-o Dir::Etc::SourceList=$work/apt/sources.list
-o Dir::Etc::SourceParts=$work/apt -o Dir::State::Lists=$work/apt/lists
-o Dir::Cache=$work/apt/cache"
# shellcheck disable=SC2086  # the options are words
apt-get $apt_opts -qq update
cd "$work"
if [ ! -d redis-src ]; then
    # shellcheck disable=SC2086
    apt-get $apt_opts -qq source --download-only redis
    dpkg-source -x redis_*.dsc redis-src >/dev/null
fi
cd redis-src/deps/hiredis
# LIBRARY_PATH in the environment would become hiredis's install dir.
# USE_SSL builds hiredis_ssl too (OpenSSL, Debian's libssl-dev): rediss://.
env -u LIBRARY_PATH make -s USE_SSL=1 PREFIX="$work/prefix" >/dev/null
env -u LIBRARY_PATH make -s USE_SSL=1 PREFIX="$work/prefix" install \
    >/dev/null
version=$(sed -n 's/^#define HIREDIS_\(MAJOR\|MINOR\|PATCH\) //p' hiredis.h |
    paste -sd.)
echo "check-hiredis1: hiredis $version from Debian's redis source package"
cd "$top"
PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig cmake -S . -B "$build" \
    -DCMAKE_BUILD_TYPE=Debug -DREDISLOCK_WERROR=ON \
    -DREDISLOCK_SANITIZE=address,undefined >/dev/null
cmake --build "$build" -j"$jobs" >/dev/null
# The library, the CLI and the tests must all use hiredis 1.x. The CLI
# loads it from the prefix, or links it in from the prefix's archive
# (cli/CMakeLists.txt): then it defines hiredis 1.x's RESP3 push
# callback, which 0.14 lacks.
loaded=$(LD_LIBRARY_PATH=$work/prefix/lib ldd "$build/cli/redislock" |
    grep libhiredis) || true
if [ -n "$loaded" ]; then
    printf '%s\n' "$loaded" | grep -qv "$work/prefix/lib/" && loaded=wrong
elif nm "$build/cli/redislock" | grep -q ' T redisSetPushCallback$'; then
    loaded=linked-in
fi
case $loaded in
"" | wrong)
    echo "check-hiredis1: the CLI does not use hiredis $version"
    exit 1
    ;;
esac
# The TLS tests must find TLS in this build (RL_EXPECT_TLS).
# shellcheck disable=SC2086  # the globs are the runner's to match
RL_EXPECT_TLS=1 LD_LIBRARY_PATH=$work/prefix/lib \
    "$build/tests/rl-tests" -j"$jobs" $tests
