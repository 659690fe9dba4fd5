#!/bin/sh
# rl-tests-timeout: 240
# Lints the man pages in docs/man:
#  - every page renders with man(1) and groff(1) without a warning, and no
#    rendered line is wider than 80 columns;
#  - an alias page is a single ".so manN/page.N" line, and the page it
#    names lists the alias in its NAME section;
#  - a section 3 page has the fixed sections, in order;
#  - every public function of include/redislock.h (a REDISLOCK_API
#    declaration) has a page or alias named after it;
#  - the code in the EXAMPLES of each section 3 page compiles against the
#    header (skipped, with a note, when there is no C compiler).
# Needs man (Debian: man-db) and groff (Debian: groff-base). SRCDIR names
# the source tree.
set -eu

: "${SRCDIR:?SRCDIR must name the source tree}"
SRCDIR=$(cd "$SRCDIR" && pwd)
mandir=$SRCDIR/docs/man
header=$SRCDIR/include/redislock.h
sections='NAME|SYNOPSIS|DESCRIPTION|DEFAULTS|RETURN VALUE|ERRORS|EXAMPLES|SEE ALSO'
status=0

problem() {
    echo "FAIL: man_lint: $*" >&2
    status=1
}

for tool in man groff; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "FAIL: man_lint: '$tool' is not installed" \
            "(Debian packages: man-db, groff-base)" >&2
        exit 1
    fi
done

# A known locale and width, and no options from the caller's environment.
LC_ALL=C
MANWIDTH=80
export LC_ALL MANWIDTH
unset MANOPT MANROFFOPT MANROFFSEQ MANPAGER PAGER MANSECT

tmp=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/man_lint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The pages, laid out as installed (man3/x.3), so that ".so man3/y.3"
# resolves from $tmp as it does from /usr/share/man.
npages=0
for f in "$mandir"/*.[1-9]; do
    [ -f "$f" ] || continue
    name=${f##*/}
    mkdir -p "$tmp/man${name##*.}"
    cp "$f" "$tmp/man${name##*.}/$name"
    npages=$((npages + 1))
done
[ "$npages" -gt 0 ] || problem "no pages in $mandir"

# name_section FILE: the text of FILE's NAME section.
name_section() {
    awk '/^\.SH/ { on = ($0 ~ /^\.SH +"?NAME"?$/); next } on' "$1"
}

is_alias() {
    head -n 1 "$1" | grep -q '^\.so '
}

cd "$tmp"
for page in man*/*; do
    # man(1), as a reader would see it.
    if ! man --warnings -E UTF-8 -l "$page" >"$tmp/out" 2>"$tmp/err" ||
        [ -s "$tmp/err" ]; then
        problem "man --warnings -l $page: $(cat "$tmp/err")"
    fi
    # groff(1), with every warning (its exit status ignores warnings).
    groff -man -t -ww -z "$page" 2>"$tmp/err" || true
    [ ! -s "$tmp/err" ] || problem "groff -man -ww $page: $(cat "$tmp/err")"
    man -E ascii -l "$page" 2>/dev/null |
        awk 'length > 80 { print "  " $0 }' >"$tmp/wide"
    [ ! -s "$tmp/wide" ] ||
        problem "$page: lines wider than 80 columns:
$(cat "$tmp/wide")"
done

for f in "$mandir"/*.[1-9]; do
    [ -f "$f" ] || continue
    name=${f##*/}
    if is_alias "$f"; then
        target=$(sed -n '1s/^\.so //p' "$f")
        if [ "$(wc -l <"$f")" -ne 1 ]; then
            problem "$name: an alias page holds one .so line only"
        elif ! printf '%s\n' "$target" |
            grep -q '^man[1-9]/[A-Za-z0-9_.-]*\.[1-9]$'; then
            problem "$name: .so wants manN/page.N, not '$target'"
        elif [ ! -f "$mandir/${target#*/}" ] || is_alias "$mandir/${target#*/}"
        then
            problem "$name: '$target' is not a page in docs/man"
        elif ! name_section "$mandir/${target#*/}" |
            grep -qw -- "${name%.*}"; then
            problem "$name: ${target#*/} does not list ${name%.*} in NAME"
        fi
        continue
    fi
    grep -q '^\.TH ' "$f" || problem "$name: no .TH line"
    case $name in
    *.3)
        got=$(sed -n 's/^\.SH *//p' "$f" | tr -d '"' | paste -s -d '|' -)
        [ "$got" = "$sections" ] ||
            problem "$name: sections are '$got', want '$sections'"
        ;;
    esac
done

# The public functions: the identifier before the "(" of each
# REDISLOCK_API declaration, which may span lines.
funcs=$(awk '
    /^[ \t]*#/ { next }
    /REDISLOCK_API/ { buf = ""; on = 1 }
    on {
        buf = buf " " $0
        if (index(buf, "(") == 0)
            next
        sub(/\(.*/, "", buf)
        n = split(buf, w, /[^A-Za-z0-9_]+/)
        while (n > 0 && w[n] == "")
            n--
        if (n > 0)
            print w[n]
        on = 0
    }' "$header")
nfuncs=$(printf '%s\n' "$funcs" | grep -c . || true)
[ "$nfuncs" -ge 10 ] ||
    problem "found only $nfuncs REDISLOCK_API functions in $header"
for fn in $funcs; do
    page=$mandir/$fn.3
    if [ ! -f "$page" ]; then
        problem "$fn has no page: add docs/man/$fn.3 (or a .so alias)"
    elif ! is_alias "$page" && ! name_section "$page" | grep -qw -- "$fn"
    then
        problem "$fn.3 does not list $fn in NAME"
    fi
done

# The examples: the .EX/.EE blocks of EXAMPLES, rendered as text (so that
# roff escapes such as \e and \- become C again), form one translation unit
# (C++17 for the pages of redislock.hpp).
cc=${CC:-cc}
# shellcheck disable=SC2086 # CC may hold options
set -- $cc
if ! command -v "$1" >/dev/null 2>&1; then
    echo "man_lint: no C compiler ('$cc'); examples not compiled" >&2
else
    for f in "$mandir"/*.3; do
        if [ ! -f "$f" ] || is_alias "$f"; then
            continue
        fi
        name=${f##*/}
        awk '/^\.SH/ { ex = ($0 ~ /^\.SH +"?EXAMPLES"?$/) }
            ex && /^\.EE/ { code = 0 }
            ex && code { print }
            ex && /^\.EX/ { code = 1 }' "$f" >"$tmp/ex.roff"
        if [ ! -s "$tmp/ex.roff" ]; then
            problem "$name: EXAMPLES has no .EX/.EE code"
            continue
        fi
        { echo .nf; cat "$tmp/ex.roff"; } |
            groff -Tascii -P-cbou -ww 2>"$tmp/err" >"$tmp/ex.c" || true
        [ ! -s "$tmp/err" ] ||
            problem "$name: rendering EXAMPLES: $(cat "$tmp/err")"
        # A page of redislock.hpp's has C++17 examples.
        lang="$cc -std=c11 -x c"
        if grep -q 'redislock\.hpp' "$f"; then
            lang="${CXX:-c++} -std=c++17 -x c++"
        fi
        # shellcheck disable=SC2086 # CC may hold options
        if ! $lang -Wall -Wextra -Wpedantic -Werror \
            -Wno-unused-function -fsyntax-only -I"$SRCDIR/include" \
            "$tmp/ex.c" >"$tmp/err" 2>&1; then
            problem "$name: EXAMPLES does not compile:
$(cat "$tmp/err")"
        fi
    done
fi

[ "$status" -ne 0 ] || echo "man_lint: $npages pages, $nfuncs functions: ok"
exit "$status"
