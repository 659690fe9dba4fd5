#!/bin/sh
# The exported symbols agree three ways:
#  - docs/EXPORTS, the checked-in list of the public symbols (sorted, one
#    per line);
#  - the REDISLOCK_API declarations of include/redislock.h;
#  - the dynamic symbols that the built libredislock.so defines.
# A function added to the header without REDISLOCK_API, an internal helper
# that escaped the hidden visibility, or a list left behind all fail here.
# Also: every global symbol of libredislock.a is public or named rl__*, so
# that a static link cannot clash with the program's own names.
#
# The build tree is found from REDISLOCK_BIN (<build>/cli/redislock); the
# sources from SRCDIR. Needs nm (binutils).
set -eu

: "${REDISLOCK_BIN:?}" "${SRCDIR:?}" "${TEST_TMPDIR:?}"
build=$(cd "$(dirname "$REDISLOCK_BIN")/.." && pwd)
so=$build/src/libredislock.so
ar=$build/src/libredislock.a
list=$SRCDIR/docs/EXPORTS
header=$SRCDIR/include/redislock.h
t=$TEST_TMPDIR
status=0

problem() {
    echo "FAIL: exports: $*" >&2
    status=1
}

command -v nm >/dev/null 2>&1 || {
    echo "FAIL: exports: nm is not installed (Debian package: binutils)" >&2
    exit 1
}
for f in "$so" "$ar" "$list" "$header"; do
    [ -f "$f" ] || {
        echo "FAIL: exports: $f is missing" >&2
        exit 1
    }
done
LC_ALL=C
export LC_ALL

# Prints the names in $2 that are not in $3 (both sorted), after the
# message $1; counts as a failure.
differ() {
    comm -23 "$2" "$3" >"$t/only"
    if [ -s "$t/only" ]; then
        problem "$1: $(tr '\n' ' ' <"$t/only")"
    fi
}

# The list: sorted and without duplicates, so that diffs stay readable.
grep -v '^[[:space:]]*$' "$list" >"$t/list"
sort -u "$t/list" | cmp -s - "$t/list" ||
    problem "docs/EXPORTS is not sorted (LC_ALL=C) or has duplicates"
sort -u "$t/list" -o "$t/list"
[ "$(wc -l <"$t/list")" -ge 10 ] ||
    problem "docs/EXPORTS lists only $(wc -l <"$t/list") symbols"
grep -v '^redislock_' "$t/list" >"$t/badname" || true
[ ! -s "$t/badname" ] ||
    problem "public names without the redislock_ prefix:" \
        "$(tr '\n' ' ' <"$t/badname")"

# The header: drop comments and preprocessor lines, then cut the rest into
# statements at each ';'. A statement with REDISLOCK_API declares the name
# before its first '(' (a function) or its last name (a variable).
awk '
    {
        # A line ending in a backslash continues on the next one.
        line = $0
        more = sub(/\\$/, "", line)
        text = text (cont ? " " : "\n") line
        cont = more
    }
    END {
        gsub(/\n[ \t]*#[^\n]*/, "\n", text)
        while ((i = index(text, "/*")) > 0) {
            rest = substr(text, i + 2)
            j = index(rest, "*/")
            text = substr(text, 1, i - 1) " " (j ? substr(rest, j + 2) : "")
        }
        n = split(text, stmt, ";")
        for (k = 1; k <= n; k++) {
            s = stmt[k]
            if (s !~ /REDISLOCK_API/)
                continue
            sub(/^.*REDISLOCK_API/, "", s)
            if (index(s, "(") > 0)
                s = substr(s, 1, index(s, "(") - 1)
            else
                sub(/[[=].*$/, "", s)
            m = split(s, w, /[^A-Za-z0-9_]+/)
            while (m > 0 && w[m] == "")
                m--
            if (m > 0)
                print w[m]
        }
    }' "$header" | sort -u >"$t/header"

# Names that the toolchain adds on its own: some linkers export these, and
# sanitizer builds (make check) define ODR indicators such as
# __odr_asan.rl__script_acquire.
toolchain='^(_init|_fini|_edata|_end|__bss_start)$'
toolchain="$toolchain|^__(odr_asan|asan|tsan|ubsan|sanitizer)"

# The shared library: its defined dynamic symbols, without a version
# suffix.
nm -D --defined-only "$so" |
    awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' |
    { grep -Ev "$toolchain" || true; } | sort -u >"$t/so"

differ "in docs/EXPORTS, not declared REDISLOCK_API in the header" \
    "$t/list" "$t/header"
differ "declared REDISLOCK_API in the header, not in docs/EXPORTS" \
    "$t/header" "$t/list"
differ "exported by libredislock.so, not in docs/EXPORTS" "$t/so" "$t/list"
differ "in docs/EXPORTS, not exported by libredislock.so" "$t/list" "$t/so"

# The static library: the same public functions, and nothing else global
# but rl__ helpers.
nm -g --defined-only "$ar" | awk 'NF >= 3 { print $3 }' |
    { grep -Ev "$toolchain" || true; } | sort -u >"$t/ar"
grep -v '^rl__' "$t/ar" >"$t/ar_public" || true
differ "global in libredislock.a without the rl__ prefix, not public" \
    "$t/ar_public" "$t/list"
differ "in docs/EXPORTS, not defined by libredislock.a" "$t/list" \
    "$t/ar_public"

[ "$status" -eq 0 ] || exit 1
echo "exports: $(wc -l <"$t/list") symbols agree"
