#!/bin/sh
# rl-tests-timeout: 60
# The library's layers (docs/ARCHITECTURE.md), arrows pointing one way:
# src/ has one folder a layer, and a module's layer is its folder. A file
# includes headers of its own layer and of the layers below, never above;
# every .c and .h of src/ is in a layer's folder (beside them src/ holds
# only the build's inputs: CMakeLists.txt, lua/, the *.cmake helpers and
# lua_keycheck.lua), so that a new one is placed on purpose; hiredis is
# included by conn only (aconn reaches it through conn.h), and the CLI
# includes the public header only.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

# The layers, bottom up: the folders of src/.
names="base wire node topology lock client"
# layer DIR: the layer's number, 1 at the bottom; 0 for a folder that is
# no layer.
layer() {
    i=0
    for n in $names; do
        i=$((i + 1))
        if [ "$n" = "$1" ]; then
            echo "$i"
            return
        fi
    done
    echo 0
}
name() {
    n=$1
    # shellcheck disable=SC2086 # word splitting is the point
    set -- $names
    shift $((n - 1))
    echo "$1"
}
# home H: the folder of header H.h; empty when no layer has it.
home() {
    for n in $names; do
        if [ -f "$n/$1.h" ]; then
            echo "$n"
            return
        fi
    done
    echo
}

cd "$SRCDIR/src"
bad=
for f in *.c *.h */*/*.c */*/*.h; do
    if [ -e "$f" ]; then
        bad="$bad
  src/$f is in no layer: move it into its layer's folder"
    fi
done
for f in */*.c */*.h; do
    [ -e "$f" ] || continue
    lf=$(layer "${f%%/*}")
    if [ "$lf" = 0 ]; then
        bad="$bad
  src/$f is in no layer: ${f%%/*}/ is no layer's folder"
        continue
    fi
    for h in $(sed -n 's/^#include "\([a-z_]*\)\.h".*/\1/p' "$f"); do
        [ "$h" = redislock ] && continue
        dh=$(home "$h")
        if [ -z "$dh" ]; then
            bad="$bad
  src/$f includes $h.h, which is in no layer"
        elif [ "$(layer "$dh")" -gt "$lf" ]; then
            bad="$bad
  src/$f ($(name "$lf")) includes $dh/$h.h ($dh): an arrow upwards"
        fi
    done
    case $f in
    wire/conn.c | wire/conn.h) ;;
    *) if grep -q '^#include <hiredis' "$f"; then
        bad="$bad
  src/$f includes hiredis itself: only conn does"
    fi ;;
    esac
done
# One file of a name: "x.h" names one header whichever folder includes it.
for f in $(for g in */*.c */*.h; do echo "${g#*/}"; done | sort | uniq -d); do
    bad="$bad
  src/*/$f: more than one file of that name"
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
