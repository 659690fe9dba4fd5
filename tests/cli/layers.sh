#!/bin/sh
# rl-tests-timeout: 60
# The library's layers (docs/ARCHITECTURE.md), arrows pointing one way: a
# file in src/ includes headers of its own layer and of the layers below,
# never above. Every module of src/ is placed in a layer here, so that a
# new one is placed on purpose; hiredis is included by conn only (aconn
# reaches it through conn.h), and the CLI includes the public header only.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

# The layers, bottom up.
names="base wire node topology lock client"
layer() {
    case $1 in
    clock | rand | error | backoff | url | canon | shard | keys | abi | \
        timers) echo 1 ;;
    conn | aconn | script | request | reply | seen) echo 2 ;;
    pool | ident | loop) echo 3 ;;
    topology | cluster | redirect | aroute | sentinel) echo 4 ;;
    lock | acquire | alock | agroup | wait | inspect | fence | watchdog | \
        redlock | quorum | algo | one | spread | env | ploop | engine | \
        calls | keyed) echo 5 ;;
    client | evloop | version) echo 6 ;;
    *) echo 0 ;;
    esac
}
name() {
    n=$1
    # shellcheck disable=SC2086 # word splitting is the point
    set -- $names
    shift $((n - 1))
    echo "$1"
}

cd "$SRCDIR/src"
bad=
for f in *.c *.h; do
    m=${f%.*}
    lf=$(layer "$m")
    if [ "$lf" = 0 ]; then
        bad="$bad
  src/$f is in no layer: place it in tests/cli/layers.sh and ARCHITECTURE.md"
        continue
    fi
    for h in $(sed -n 's/^#include "\([a-z_]*\)\.h".*/\1/p' "$f"); do
        [ "$h" = redislock ] && continue
        lh=$(layer "$h")
        if [ "$lh" = 0 ]; then
            bad="$bad
  src/$f includes $h.h, which is in no layer"
        elif [ "$lh" -gt "$lf" ]; then
            bad="$bad
  src/$f ($(name "$lf")) includes $h.h ($(name "$lh")): an arrow upwards"
        fi
    done
    case $m in
    conn) ;;
    *) if grep -q '^#include <hiredis' "$f"; then
        bad="$bad
  src/$f includes hiredis itself: only conn does"
    fi ;;
    esac
done
cd "$SRCDIR/cli"
for f in *.c *.h; do
    for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
        [ "$h" = redislock.h ] || [ -f "$h" ] || bad="$bad
  cli/$f includes $h: the CLI uses the public header only"
    done
done
[ -z "$bad" ] || fail "layers crossed:$bad"
# The calls too: none into a higher layer, and no files that call each
# other round a loop (scripts/layer-calls.py, with Universal Ctags).
calls=$(python3 "$SRCDIR/scripts/layer-calls.py" 2>&1) ||
    fail "calls cross the layers or go round a loop:
$calls"
exit 0
