#!/bin/sh
# rl-tests-timeout: 360
# Installation, as a packager and a user see it. A fresh build of SRCDIR
# (no tests, no examples) is installed three ways: `make install` with
# PREFIX and DESTDIR, `cmake --install --prefix`, and `cmake --install` with
# DESTDIR. Each tree must hold the header, the libraries with their
# symlinks and SONAME, redislock.pc, the CMake package, the CLI and the man
# pages, aliases as symlinks that `man -l` opens. Then
# examples/reentrant.c (and examples/guards.cpp, for redislock.hpp) is
# built outside the project against the installed
# tree: with pkg-config (shared; from a moved copy of the tree; static
# with --static) and with find_package(redislock), and each binary must
# take and release its lock on the private server; none of them may
# compile with hiredis's flags (redislock.h needs none). Last, when
# dpkg-deb is there, `cpack -G DEB` makes a .deb whose unpacked tree has
# the same man pages and passes the same pkg-config build.
set -eu
. "$(dirname "$0")/lib.inc"

: "${SRCDIR:?}"
SRCDIR=$(cd "$SRCDIR" && pwd)
T=$TEST_TMPDIR
B=$T/build
CC=${CC:-cc}
CXX=${CXX:-c++}
example=$SRCDIR/examples/reentrant.c
guards=$SRCDIR/examples/guards.cpp
for tool in cmake make pkg-config readelf man "$CC" "$CXX"; do
    command -v "$tool" >/dev/null 2>&1 || fail "'$tool' is not installed"
done
# The version, as the build reads it: from the public header.
v() {
    sed -n "s/^#define REDISLOCK_VERSION_$1 \([0-9]*\)$/\1/p" \
        "$SRCDIR/include/redislock.h"
}
version=$(v MAJOR).$(v MINOR).$(v PATCH)
soname=libredislock.so.$(v MAJOR)

# step NAME CMD...: runs CMD (at most $limit s, 50 unless set), its
# output in $T/NAME.log, which is shown when it fails.
limit=50
step() {
    name=$1
    shift
    if ! timeout "$limit" "$@" >"$T/$name.log" 2>&1; then
        tail -n 40 "$T/$name.log" >&2
        fail "$name failed: $*"
    fi
}

# The build type is the one `make build` uses, so that `make install`
# below reuses this build instead of starting over.
step configure cmake -S "$SRCDIR" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DREDISLOCK_BUILD_TESTS=OFF -DREDISLOCK_BUILD_EXAMPLES=OFF \
    -DCMAKE_INSTALL_LIBDIR=lib
# make install builds (as make build does) and installs. -o deps: the
# packages are the caller's business, and a test must not install any.
# The whole library and CLI from scratch: on a loaded box (a second
# suite beside this one) that took more than 50 s once.
limit=180
step make-install make -o deps -C "$SRCDIR" install BUILD="$B" JOBS=2 \
    PREFIX=/opt/redislock DESTDIR="$T/mk"
limit=50
step install-prefix cmake --install "$B" --prefix "$T/prefix"
DESTDIR=$T/dest
export DESTDIR
step install-destdir cmake --install "$B"
unset DESTDIR

# alias_target PAGE: for an alias page of docs/man (".so manN/page.N"),
# manN/page.N; nothing for a page of its own.
alias_target() {
    sed -n '1s/^\.so //p' "$1"
}

# check_tree ROOT: the installed files under the prefix ROOT.
check_tree() {
    r=$1
    for h in redislock.h redislock.hpp redislock/libevent.h redislock/libuv.h \
        redislock/libev.h redislock/fds.h; do
        cmp -s "$SRCDIR/include/$h" "$r/include/$h" ||
            fail "$r/include/$h is missing or differs"
    done
    [ "$(readlink "$r/lib/libredislock.so")" = "$soname" ] ||
        fail "$r/lib/libredislock.so does not link to $soname"
    [ "$(readlink "$r/lib/$soname")" = "libredislock.so.$version" ] ||
        fail "$r/lib/$soname does not link to libredislock.so.$version"
    so=$r/lib/libredislock.so.$version
    if [ ! -f "$so" ] || [ -h "$so" ]; then
        fail "$so is not a file"
    fi
    readelf -d "$so" | grep -q "(SONAME) .*\[$soname\]" ||
        fail "SONAME of $so: $(readelf -d "$so" | grep SONAME)"
    for f in libredislock.a pkgconfig/redislock.pc \
        cmake/redislock/redislockConfig.cmake \
        cmake/redislock/redislockConfigVersion.cmake \
        cmake/redislock/redislockTargets.cmake; do
        [ -f "$r/lib/$f" ] || fail "$r/lib/$f is missing"
    done
    ls "$r"/lib/cmake/redislock/redislockTargets-*.cmake >/dev/null 2>&1 ||
        fail "no redislockTargets-<config>.cmake in $r/lib/cmake/redislock"
    [ -x "$r/bin/redislock" ] || fail "$r/bin/redislock is missing"
    set -- "$r"/bin/*
    [ "$*" = "$r/bin/redislock" ] || fail "$r/bin holds more than redislock: $*"
    for page in "$SRCDIR"/docs/man/*.[13]; do
        sec=${page##*.}
        inst=$r/share/man/man$sec/${page##*/}
        [ -f "$inst" ] || fail "$inst is missing"
        to=$(alias_target "$page")
        [ -n "$to" ] || continue
        # An alias is a symlink to its page, in its directory or beside.
        want=${to#*/}
        [ "${to%%/*}" = "man$sec" ] || want=../$to
        [ "$(readlink "$inst")" = "$want" ] ||
            fail "$inst links to '$(readlink "$inst")', want $want"
    done
    [ -f "$r/share/man/man3/redislock.3" ] || fail "no redislock(3) in $r"
}
check_tree "$T/prefix"
check_tree "$T/mk/opt/redislock"
check_tree "$T/dest/opt/redislock"

# check_man MANDIR: every alias installed under MANDIR opens with `man -l`
# from elsewhere (a .so alias resolved its page from the current
# directory) and renders as its page does; one also opens by name.
LC_ALL=C
MANWIDTH=80
export LC_ALL MANWIDTH
unset MANOPT MANROFFOPT MANPAGER PAGER MANSECT
check_man() {
    n=0
    for page in "$SRCDIR"/docs/man/*.[13]; do
        to=$(alias_target "$page")
        [ -n "$to" ] || continue
        alias=$1/man${page##*.}/${page##*/}
        (cd / && man -E ascii -l "$alias") >"$T/alias.out" 2>"$T/alias.err" ||
            fail "man -l $alias: $(cat "$T/alias.err")"
        [ ! -s "$T/alias.err" ] || fail "man -l $alias: $(cat "$T/alias.err")"
        man -E ascii -l "$1/$to" >"$T/page.out" 2>&1 ||
            fail "man -l $1/$to: $(cat "$T/page.out")"
        if ! grep -q '^NAME$' "$T/alias.out" ||
            ! cmp -s "$T/alias.out" "$T/page.out"; then
            fail "man -l $alias does not render $to: $(head -n 5 \
                "$T/alias.out")"
        fi
        n=$((n + 1))
    done
    [ "$n" -gt 0 ] || fail "docs/man has no alias pages to check"
    # The last alias, as a reader asks for it.
    name=${alias##*/}
    MANPATH=$1 man -E ascii "${name##*.}" "${name%.*}" >"$T/alias.out" 2>&1 ||
        fail "man ${name%.*} in $1: $(cat "$T/alias.out")"
    cmp -s "$T/alias.out" "$T/page.out" ||
        fail "man ${name%.*} does not show $to: $(head -n 5 "$T/alias.out")"
}
check_man "$T/prefix/share/man"
"$T/prefix/bin/redislock" --version >"$T/version.out" 2>&1 ||
    fail "the installed CLI: $(cat "$T/version.out")"
grep -q "$version" "$T/version.out" ||
    fail "redislock --version says '$(cat "$T/version.out")', want $version"

# run_example NAME KEY LIBDIR: runs the binary $T/NAME with LIBDIR as
# LD_LIBRARY_PATH ("" for none); it must exit 0 with a free lock after.
run_example() {
    expect 0 env LD_LIBRARY_PATH="$3" "$T/$1" -k "$2"
    [ "$(tail -n 1 "$T/out")" = "the lock is free again" ] ||
        fail "$1 printed: $(cat "$T/out")"
    grep -q '^  debit: acquired, holds 2 (in Redis: 2)$' "$T/out" ||
        fail "$1 did not nest its holds: $(cat "$T/out")"
    key_gone "$2" || fail "$1 left $2 behind"
}

# links_to BINARY LIBDIR: BINARY loads libredislock from LIBDIR.
links_to() {
    LD_LIBRARY_PATH=$2 ldd "$1" >"$T/ldd.out" 2>&1 || true
    grep -q "$soname => $2/$soname " "$T/ldd.out" ||
        fail "$1 does not load $2/$soname: $(cat "$T/ldd.out")"
}

# pc_build NAME PCDIR [--static]: compiles the example with the flags of
# PCDIR/redislock.pc.
pc_build() {
    PKG_CONFIG_PATH=$2
    export PKG_CONFIG_PATH
    pv=$(pkg-config --modversion redislock) || fail "pkg-config: no redislock"
    [ "$pv" = "$version" ] || fail "redislock.pc says $pv, want $version"
    cflags=$(pkg-config --cflags redislock)
    # redislock.h includes nothing of hiredis, so none of its flags (-I,
    # -D_FILE_OFFSET_BITS=64) may reach the user's compiler.
    case $cflags in
    *hiredis* | *-D*) fail "pkg-config --cflags redislock: '$cflags'" ;;
    esac
    if [ "${3:-}" = --static ]; then
        # Static for libredislock and hiredis, the rest as usual.
        libs=$(pkg-config --static --libs redislock)
        case $libs in
        *-lhiredis*) ;;
        *) fail "pkg-config --static --libs redislock lacks hiredis: $libs" ;;
        esac
        libs="-Wl,-Bstatic $libs -Wl,-Bdynamic"
    else
        # The shared library loads hiredis itself.
        libs=$(pkg-config --libs redislock)
        case $libs in
        *hiredis*) fail "pkg-config --libs redislock: '$libs'" ;;
        esac
    fi
    unset PKG_CONFIG_PATH
    # shellcheck disable=SC2086 # the flags are lists
    step "cc-$1" "$CC" -std=c11 -Wall -Wextra -Werror $cflags \
        -o "$T/$1" "$example" $libs
}

pc_build ex-pc "$T/prefix/lib/pkgconfig"
links_to "$T/ex-pc" "$T/prefix/lib"
run_example ex-pc inst:pc "$T/prefix/lib"

# run_guards NAME KEY LIBDIR: the C++ example $T/NAME (redislock.hpp)
# must run its guards and leave KEY free.
run_guards() {
    expect 0 env LD_LIBRARY_PATH="$3" "$T/$1" -k "$2"
    [ "$(tail -n 1 "$T/out")" = "another limit: REDISLOCK_EINVAL" ] ||
        fail "$1 printed: $(cat "$T/out")"
    key_gone "$2" || fail "$1 left $2 behind"
}

# The C++ header from the same flags (the .pc file covers it).
# shellcheck disable=SC2046 # the flags are lists
step cxx-pc "$CXX" -std=c++17 -Wall -Wextra -Werror \
    $(PKG_CONFIG_PATH=$T/prefix/lib/pkgconfig pkg-config --cflags redislock) \
    -o "$T/guards-pc" "$guards" \
    $(PKG_CONFIG_PATH=$T/prefix/lib/pkgconfig pkg-config --libs redislock)
run_guards guards-pc inst:guards-pc "$T/prefix/lib"

# The .pc file finds its prefix from its own place: a moved tree works.
cp -R -P "$T/prefix" "$T/moved"
pc_build ex-moved "$T/moved/lib/pkgconfig"
links_to "$T/ex-moved" "$T/moved/lib"
run_example ex-moved inst:moved "$T/moved/lib"

pc_build ex-static "$T/prefix/lib/pkgconfig" --static
if readelf -d "$T/ex-static" | grep -Eq 'NEEDED.*(redislock|hiredis)'; then
    fail "ex-static needs: $(readelf -d "$T/ex-static" | grep NEEDED)"
fi
run_example ex-static inst:static ""

# A CMake project outside the tree: find_package and the imported targets.
mkdir -p "$T/consumer"
cat >"$T/consumer/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.13)
project(consumer C CXX)
find_package(redislock $version CONFIG REQUIRED)
add_executable(ex-shared "$example")
target_link_libraries(ex-shared PRIVATE redislock::redislock)
add_executable(ex-guards "$guards")
set_target_properties(ex-guards PROPERTIES CXX_STANDARD 17)
target_link_libraries(ex-guards PRIVATE redislock::redislock)
add_executable(ex-static-cmake "$example")
target_link_libraries(ex-static-cmake PRIVATE redislock::redislock_static)
EOF
step consumer-configure cmake -S "$T/consumer" -B "$T/consumer/build" \
    -DCMAKE_PREFIX_PATH="$T/prefix" -DCMAKE_BUILD_TYPE=Release
grep -q "^redislock_DIR:PATH=$T/prefix/lib/cmake/redislock$" \
    "$T/consumer/build/CMakeCache.txt" ||
    fail "find_package found another redislock: $(grep redislock_DIR \
        "$T/consumer/build/CMakeCache.txt")"
step consumer-build cmake --build "$T/consumer/build"
# Linked, not compiled, with hiredis: its flags stay out of both targets'.
for t in ex-shared ex-static-cmake; do
    f=$T/consumer/build/CMakeFiles/$t.dir/flags.make
    [ -f "$f" ] || fail "no $f: the consumer's build is not a Makefile one"
    if grep -E 'hiredis|_FILE_OFFSET_BITS' "$f" >"$T/flags.out"; then
        fail "$t compiles with hiredis's flags: $(cat "$T/flags.out")"
    fi
done
cp "$T/consumer/build/ex-shared" "$T/consumer/build/ex-static-cmake" \
    "$T/consumer/build/ex-guards" "$T/"
links_to "$T/ex-shared" "$T/prefix/lib"
run_example ex-shared inst:cmake "$T/prefix/lib"
run_example ex-static-cmake inst:cmake-static ""
run_guards ex-guards inst:guards-cmake "$T/prefix/lib"

# A Debian package, from the same build configured for /usr.
if ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "install: no dpkg-deb; the .deb is not checked"
    exit 0
fi
step deb-configure cmake -S "$SRCDIR" -B "$B" -DCMAKE_INSTALL_PREFIX=/usr \
    -UCMAKE_INSTALL_LIBDIR
# cpack builds what the new prefix changed before it packs.
limit=120
# shellcheck disable=SC2016 # $1 is for the inner shell
step cpack sh -c 'cd "$1" && cpack -G DEB -B "$1/deb"' sh "$B"
limit=50
set -- "$B"/deb/redislock_"$version"*.deb
[ -f "$1" ] || fail "cpack made no redislock_$version*.deb: $(ls "$B/deb")"
deb=$1
# Lines are "MODE OWNER SIZE DATE TIME ./PATH[ -> TARGET]".
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's,^\./,/,' >"$T/deb.list"
for f in /usr/include/redislock.h /usr/bin/redislock \
    /usr/share/man/man3/redislock.3; do
    grep -qx "$f" "$T/deb.list" || fail "$deb lacks $f"
done
libdir=$(sed -n 's,^\(/usr/lib.*\)/libredislock\.a$,\1,p' "$T/deb.list")
[ -n "$libdir" ] || fail "$deb has no libredislock.a"
for f in "$soname" "libredislock.so.$version" pkgconfig/redislock.pc \
    cmake/redislock/redislockConfig.cmake; do
    grep -qx "$libdir/$f" "$T/deb.list" || fail "$deb lacks $libdir/$f"
done
dpkg-deb -f "$deb" Package Version Depends >"$T/deb.fields"
grep -q '^Depends:.*libhiredis' "$T/deb.fields" ||
    fail "the .deb does not depend on hiredis: $(cat "$T/deb.fields")"
dpkg-deb -x "$deb" "$T/debroot"
check_man "$T/debroot/usr/share/man"
pc_build ex-deb "$T/debroot$libdir/pkgconfig"
links_to "$T/ex-deb" "$T/debroot$libdir"
run_example ex-deb inst:deb "$T/debroot$libdir"
echo "install: all checks passed"
