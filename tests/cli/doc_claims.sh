#!/bin/sh
# Claims the documentation once made against the code, each checked
# away (the behaviour that contradicts them has tests of its own:
# fair_permits_fifo_order, fair_readers_writers_in_arrival_order,
# spread_sharded_sets, cluster_lock_features):
#  - include/redislock.h: a semaphore (limit) and a shared lock "not with
#    fair"; a set's keys "where one script can take them" (one shard, one
#    slot); and the CLI's help for -k;
#  - redislock(1)'s hold-after example, which promised the metadata
#    during the reservation;
#  - the README says how to install, and on a system without dpkg
#    scripts/install-deps.sh names what is needed and lets make go on.
set -eu
. "$(dirname "$0")/lib.inc"

: "${SRCDIR:?}"
h=$SRCDIR/include/redislock.h

# The comment of one field or function, on one line: from its opening
# line to the declaration that ends it, the comment's stars dropped.
field_comment() {
    awk -v decl="$1" '/\/\*/ { buf = "" } { sub(/^ *\*/, ""); buf = buf " " $0 }
        index($0, decl) { print buf; exit }' "$h" | tr -s ' '
}
for f in "int limit;" "int shared;"; do
    c=$(field_comment "$f")
    [ -n "$c" ] || fail "no comment found for '$f' in redislock.h"
    printf '%s' "$c" | grep -Eq 'Not with[^.]*fair' &&
        fail "redislock.h says '$f' is not with fair, which works: $c"
    printf '%s' "$c" | grep -q 'With fair' ||
        fail "redislock.h does not say what '$f' does with fair: $c"
done
c=$(field_comment "redislock_lock_new_multi(")
printf '%s' "$c" | grep -Eq 'must be where one script|on one shard \(its ring' &&
    fail "redislock.h still confines a set to one shard or slot: $c"
printf '%s' "$c" | grep -q 'several shards' ||
    fail "redislock.h does not say sets may span shards: $c"

# The CLI's help for -k (cli/help.c) said the same of a set's keys.
expect 0 "$RL" help acquire
! grep -q 'on one server, in a cluster one slot' "$TEST_TMPDIR/out" ||
    fail "redislock help acquire still confines -k to one server or slot"
grep -q 'on any servers or slots' "$TEST_TMPDIR/out" ||
    fail "redislock help acquire does not say -k may span servers"

# redislock(1)'s hold-after example promised the metadata to anyone who
# looks during the reservation, which keeps none: it says so now, and
# the reservation is checked to be as it says.
man=$SRCDIR/docs/man/redislock.1
grep -A3 'Rate-limit a job to once every 10 minutes' "$man" | tr '\n' ' ' |
    grep -q 'without the metadata' ||
    fail "redislock(1)'s hold-after example promises the metadata"
expect 0 "$RL" run -n --hold-after 10m --metadata "$(hostname)" dc:sync -- true
expect 0 "$RL" status dc:sync
out_is "held ttl_ms=$(sed -n 's/^held ttl_ms=\([0-9]*\) reserved$/\1/p' \
    "$TEST_TMPDIR/out") reserved"

grep -q '^## Install$' "$SRCDIR/README.md" || fail "README has no Install section"
grep -q 'ldconfig' "$SRCDIR/README.md" || fail "README does not mention ldconfig"

# No dpkg: install-deps names the packages and exits 0 (make goes on).
mkdir -p "$TEST_TMPDIR/nobin"
set +e
PATH=$TEST_TMPDIR/nobin /bin/sh "$SRCDIR/scripts/install-deps.sh" \
    >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/err"
rc=$?
set -e
[ "$rc" = 0 ] || fail "install-deps without dpkg exited $rc: $(cat "$TEST_TMPDIR/err")"
err_has 'not a Debian system: .*libhiredis-dev'
exit 0
