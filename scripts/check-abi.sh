#!/bin/sh
# Compares the ABI of libredislock.so, built from this tree, with the
# baseline kept in tests/abi (the ABI of 0.1.0), using Debian's
# abigail-tools (abidw, abidiff).
#
#   scripts/check-abi.sh                 build, dump and compare
#   scripts/check-abi.sh --dump SRC OUT  build the tree SRC, write its ABI
#                                        to OUT (how the baseline is made)
#
# Only what include/redislock.h declares counts (--headers-dir): the
# library's private types, hiredis's and libc's are left out, so that an
# internal change is no ABI change. Paths are not recorded, so the build
# directory does not matter.
#
# Passes on no change and on changes an old program cannot notice: new
# functions, and fields appended at the end of the caller-allocated
# structs. Fails on anything else: a removed or changed function, a field
# inserted, removed or retyped, a changed enum value.
set -eu

jobs=${JOBS:-2}
top=$(cd "$(dirname "$0")/.." && pwd)
baseline=$top/tests/abi/libredislock-0.1.abi

for tool in abidw abidiff python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "check-abi: $tool is not installed (Debian: abigail-tools)" >&2
        exit 1
    }
done

# dump SRC BUILD OUT: builds the shared library of the tree SRC in BUILD,
# with debug information and nothing else, and writes its ABI to OUT.
# The debug information names the sources relative to SRC.
dump() {
    if ! cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Debug \
        -DREDISLOCK_WERROR=ON -DCMAKE_C_FLAGS="-fdebug-prefix-map=$1=." \
        -DREDISLOCK_SANITIZE= -DREDISLOCK_BUILD_TESTS=OFF \
        -DREDISLOCK_BUILD_EXAMPLES=OFF >/dev/null ||
        ! cmake --build "$2" -j"$jobs" --target redislock >/dev/null; then
        echo "check-abi: the build of $1 failed" >&2
        return 1
    fi
    so=$(find "$2/src" -name 'libredislock.so.*.*' -type f | head -n 1)
    abidw --headers-dir "$1/include" --drop-private-types \
        --exported-interfaces-only --no-corpus-path --no-comp-dir-path \
        --no-show-locs --type-id-style hash --out-file "$3" "$so"
}

if [ "${1:-}" = --dump ]; then
    [ $# -eq 3 ] || {
        echo "usage: check-abi.sh [--dump SRC OUT]" >&2
        exit 2
    }
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    dump "$(cd "$2" && pwd)" "$work/build" "$3"
    exit
fi

# old_view BASE NEW OUT: NEW as a program built against BASE's header sees
# it. The caller-allocated structs may grow at their end (see "ABI" in
# README.md): such a program calls entry points that read and write only
# the fields its header had. So in each of them, the fields placed after
# BASE's last one are dropped and the size is BASE's again. Anything else
# that differs still shows: a field inserted before the last one (even
# into padding that moves nothing: an old program's padding holds
# garbage, not zero), one removed, retyped or renamed, a changed enum.
# Error codes may be appended too, as curl's CURLcode grows: a 0.1
# program has a default case for the codes it does not know (the
# library's redislock_strerror names them), so the codes numbered from
# BASE's REDISLOCK_ERR_COUNT_ on are dropped and that count, which is no
# limit a program may size anything by, is BASE's again.
old_view() {
    python3 - "$@" <<'EOF'
import sys
import xml.etree.ElementTree as ET

GROWING = ("redislock_options", "redislock_acquire_options", "redislock_info")
base, new = ET.parse(sys.argv[1]), ET.parse(sys.argv[2])
old = {}
for c in base.iter("class-decl"):
    offs = [int(m.get("layout-offset-in-bits"))
            for m in c.findall("data-member")]
    if c.get("name") in GROWING and offs:
        old[c.get("name")] = (max(offs), c.get("size-in-bits"))
COUNT = "REDISLOCK_ERR_COUNT_"
codes = {}
for e in base.iter("enum-decl"):
    if e.get("name") == "redislock_err":
        codes = {m.get("name"): m.get("value") for m in e.iter("enumerator")}
for e in new.iter("enum-decl"):
    if e.get("name") != "redislock_err" or COUNT not in codes:
        continue
    for m in list(e.iter("enumerator")):
        if m.get("name") == COUNT:
            m.set("value", codes[COUNT])
        elif (m.get("name") not in codes and
              int(m.get("value")) >= int(codes[COUNT])):
            e.remove(m)
for c in new.iter("class-decl"):
    if c.get("name") not in old or c.get("size-in-bits") is None:
        continue
    last, size = old[c.get("name")]
    for m in c.findall("data-member"):
        if int(m.get("layout-offset-in-bits")) > last:
            c.remove(m)
    if int(c.get("size-in-bits")) > int(size):
        c.set("size-in-bits", size)
new.write(sys.argv[3])
EOF
}

build=${ABI_BUILD:-$top/build-abi}
dump "$top" "$build" "$build/libredislock.abi"
old_view "$baseline" "$build/libredislock.abi" "$build/old-view.abi"
# abidiff's status is a bit mask: 1 an error of its own, 2 a usage error,
# 4 an ABI change, 8 an incompatible one. Bit 4 alone covers both added
# functions (fine) and a struct laid out anew (not fine), and some changes
# that break programs (an enum value moved) set no more than bit 4. So
# added functions are left out of the report (--no-added-syms) and any
# status but 0 fails.
set +e
abidiff --no-added-syms "$baseline" "$build/old-view.abi" \
    >"$build/abidiff.txt" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
    cat "$build/abidiff.txt"
    echo "check-abi: the ABI changed incompatibly since 0.1.0" \
        "(abidiff status $status)" >&2
    exit 1
fi
# New functions, for the record: they are compatible.
abidiff "$baseline" "$build/libredislock.abi" |
    sed -n "s/^  \[A\] \(.*\)    {.*}$/check-abi: added: \1/p"
echo "check-abi: no incompatible change since 0.1.0"
