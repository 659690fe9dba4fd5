#!/bin/sh
# redislock.hpp, the C++17 header: tests/cpp/test_cpp.cpp's checks (errors,
# move-only handles, each guard, lockable with the standard's lock types)
# against the private server and a second one; the header compiles on its
# own with -Wall -Wextra -Wpedantic -Werror -Wold-style-cast
# -Wzero-as-null-pointer-constant (C++17, and C++20 where the compiler has
# it) but stops at one clear #error as C++14; and redislock.h's struct
# sizes, which C++ spells without C casts, are the same in C and C++.
set -eu
. "$(dirname "$0")/lib.inc"

: "${SRCDIR:?}" "${BUILDDIR:?}"
bin=$BUILDDIR/tests/rl-cpp-test
[ -x "$bin" ] || fail "$bin is not built (no C++ compiler at configure time?)"
# A second server, which the checks stop (SIGSTOP) to fail a request.
more_servers 1
expect 0 "$bin" "$REDISLOCK_URL" "unix://$xdir/x1.sock" "$xpid1"
err_empty
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || fail "no C++ compiler ($CXX)"
printf '#include <redislock.hpp>\nint main() { return 0; }\n' \
    >"$TEST_TMPDIR/only.cpp"
# Strict C++ code's warnings too; C++20 where the compiler has it.
strict='-Wall -Wextra -Wpedantic -Wold-style-cast'
strict="$strict -Wzero-as-null-pointer-constant -Werror"
for std in c++17 c++20; do
    if [ "$std" = c++20 ] &&
        ! "$CXX" -std=c++20 -fsyntax-only -x c++ /dev/null 2>/dev/null; then
        continue
    fi
    # shellcheck disable=SC2086 # the flags are words
    "$CXX" -std=$std $strict -fsyntax-only -I"$SRCDIR/include" \
        "$TEST_TMPDIR/only.cpp" ||
        fail "redislock.hpp does not compile on its own (-std=$std $strict)"
done
# As C++14 it stops at one error that says what it needs, not at the
# first C++17 name.
need='redislock.hpp needs C++17 (-std=c++17); before C++17 use <redislock.h>'
if "$CXX" -std=c++14 -fsyntax-only -I"$SRCDIR/include" \
    "$TEST_TMPDIR/only.cpp" 2>"$TEST_TMPDIR/c++14.err"; then
    fail "redislock.hpp compiles as C++14"
fi
grep ': error: ' "$TEST_TMPDIR/c++14.err" >"$TEST_TMPDIR/c++14.errors" || :
if [ "$(wc -l <"$TEST_TMPDIR/c++14.errors")" -ne 1 ] ||
    ! grep -qF "$need" "$TEST_TMPDIR/c++14.errors"; then
    fail "as C++14, want the one error '$need'," \
        "got: $(cat "$TEST_TMPDIR/c++14.err")"
fi
# The struct sizes the C macros pass are the same in C and in C++, whose
# branch of the header spells them without C casts.
CC=${CC:-cc}
cat >"$TEST_TMPDIR/sizes.c" <<'END'
#include <stdio.h>
#include <redislock.h>
int main(void)
{
    printf("%zu %zu %zu\n", REDISLOCK_OPTIONS_SIZE,
           REDISLOCK_ACQUIRE_OPTIONS_SIZE, REDISLOCK_INFO_SIZE);
    return 0;
}
END
# shellcheck disable=SC2086 # CC may hold options
$CC -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$SRCDIR/include" \
    -o "$TEST_TMPDIR/sizes-c" "$TEST_TMPDIR/sizes.c" ||
    fail "the sizes program does not compile as C"
c_sizes=$("$TEST_TMPDIR/sizes-c")
for std in c++11 c++17; do
    # shellcheck disable=SC2086 # the flags are words
    "$CXX" -x c++ -std=$std $strict -I"$SRCDIR/include" \
        -o "$TEST_TMPDIR/sizes-cpp" "$TEST_TMPDIR/sizes.c" ||
        fail "the sizes program does not compile as C++ (-std=$std)"
    cpp_sizes=$("$TEST_TMPDIR/sizes-cpp")
    [ "$cpp_sizes" = "$c_sizes" ] ||
        fail "struct sizes in -std=$std: $cpp_sizes; in C: $c_sizes"
done
[ "$(rcli --scan --pattern 'cpp:*' | grep -vc ':rl-')" = 0 ] ||
    fail "the C++ checks left locks: $(rcli --scan --pattern 'cpp:*')"
exit 0
