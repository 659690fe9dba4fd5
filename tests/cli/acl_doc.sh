#!/bin/sh
# The ACL rule is documented where an installed package has it: the ACL
# section of redislock(3) shows the rule of docs/ACL.md (which
# test_acl.c tests), and no message of the library or the tool points to
# docs/ACL.md, which is not installed.
set -eu
. "$(dirname "$0")/lib.inc"

cd "$SRCDIR"
want=$(grep '^ACL SETUSER locker ' docs/ACL.md)
[ -n "$want" ] || fail "docs/ACL.md has no 'ACL SETUSER locker' line"
# The rule as the man page's no-fill block shows it, on one line.
got=$(sed -n '/^\.SS ACL$/,/^\.SS /p' docs/man/redislock.3 |
    sed -n '/^ACL SETUSER locker /,/^\.fi$/p' | sed '$d' |
    sed 's/\\-/-/g' | tr '\n' ' ' | tr -s ' ' | sed 's/ $//')
[ "$got" = "$want" ] ||
    fail "redislock(3)'s ACL rule is '$got', docs/ACL.md's '$want'"

# Messages (C string literals) in the library and the tool.
if grep -n '"[^"]*docs/ACL\.md' src/*/*.c cli/*.c; then
    fail "a message points to docs/ACL.md, which is not installed"
fi
grep -q 'redislock(3)' src/base/error.c ||
    fail "the ACL messages do not point to redislock(3)"
# The help and the tool's man page too.
expect 0 "$RL" --help
! grep -q 'docs/ACL' "$TEST_TMPDIR/out" || fail "--help points to docs/ACL.md"
! grep -n 'IR docs/ACL' docs/man/redislock.1 ||
    fail "redislock(1) points to docs/ACL.md"
exit 0
