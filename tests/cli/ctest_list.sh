#!/bin/sh
# `ctest` from the build root (BUILDDIR) knows every test the runner does,
# one CTest test each under the runner's name (tests/ctest_tests.cmake),
# and runs one the way `rl-tests NAME` does.
set -eu
. "$(dirname "$0")/lib.inc"

: "${BUILDDIR:?}"
T=$TEST_TMPDIR
command -v ctest >/dev/null 2>&1 || fail "'ctest' is not installed"
runner=$BUILDDIR/tests/rl-tests
"$runner" --list | sort >"$T/runner.list" || fail "$runner --list failed"
n=$(wc -l <"$T/runner.list")
[ "$n" -gt 100 ] || fail "$runner --list names only $n tests"

(cd "$BUILDDIR" && ctest -N) >"$T/ctest.out" 2>&1 ||
    fail "ctest -N in $BUILDDIR: $(cat "$T/ctest.out")"
total=$(sed -n 's/^Total Tests: \([0-9]*\)$/\1/p' "$T/ctest.out")
[ "$total" = "$n" ] || fail "ctest -N counts '$total' tests, the runner $n"
# Lines are "  Test  #12: name".
sed -n 's/^ *Test *#[0-9]*: //p' "$T/ctest.out" | sort >"$T/ctest.list"
diff "$T/runner.list" "$T/ctest.list" >"$T/diff" ||
    fail "ctest's names are not the runner's (< runner, > ctest):
$(cat "$T/diff")"

(cd "$BUILDDIR" && ctest -R '^version_matches_macros$') >"$T/run.out" 2>&1 ||
    fail "ctest -R version_matches_macros: $(cat "$T/run.out")"
grep -q '^100% tests passed, 0 tests failed out of 1$' "$T/run.out" ||
    fail "ctest ran other than one test: $(cat "$T/run.out")"
