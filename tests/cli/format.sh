#!/bin/sh
# rl-tests-timeout: 150
# The house style (.clang-format: 4-space indent, 80 columns) holds for the
# library, its header and the CLI.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

command -v clang-format >/dev/null 2>&1 ||
    fail "clang-format is not installed (Debian package clang-format)"
cd "$SRCDIR"
bad=
for f in src/*/*.c src/*/*.h include/*.h cli/*.c cli/*.h; do
    clang-format --style=file "$f" | cmp -s - "$f" || bad="$bad $f"
done
[ -z "$bad" ] || fail "not formatted by .clang-format:$bad"
exit 0
