#!/bin/sh
# redislock.hpp, the C++17 header: tests/cpp/test_cpp.cpp's checks (errors,
# move-only handles, each guard) against the private server, and the
# header compiles on its own with -Wall -Wextra -Wpedantic -Werror.
set -eu
. "$(dirname "$0")/lib.inc"

: "${SRCDIR:?}" "${BUILDDIR:?}"
bin=$BUILDDIR/tests/rl-cpp-test
[ -x "$bin" ] || fail "$bin is not built (no C++ compiler at configure time?)"
expect 0 "$bin" "$REDISLOCK_URL"
err_empty
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || fail "no C++ compiler ($CXX)"
printf '#include <redislock.hpp>\nint main() { return 0; }\n' \
    >"$TEST_TMPDIR/only.cpp"
"$CXX" -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
    -I"$SRCDIR/include" "$TEST_TMPDIR/only.cpp" ||
    fail "redislock.hpp does not compile on its own"
[ "$(rcli --scan --pattern 'cpp:*' | grep -vc ':rl-')" = 0 ] ||
    fail "the C++ checks left locks: $(rcli --scan --pattern 'cpp:*')"
exit 0
