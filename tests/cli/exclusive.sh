#!/bin/sh
# -x/--exclusive, as in flock(1): an exclusive lock, the default. With
# -s/--shared on the same command line the last one given wins, as
# flock -s -x does (util-linux keeps the last lock type it reads).
set -eu
. "$(dirname "$0")/lib.inc"

# kind KEY: "shared" when status shows readers, "exclusive" when it shows
# a plain lock; fails when the key is free.
kind() {
    expect 0 "$RL" status "$1"
    case $(cat "$TEST_TMPDIR/out") in
    *readers=*) echo shared ;;
    held*) echo exclusive ;;
    *) fail "status $1: $(cat "$TEST_TMPDIR/out")" ;;
    esac
}

# taken WANT KEY OPTION...: acquire KEY with OPTIONs, then check the kind
# of lock taken and release it.
taken() {
    kind_want=$1
    key=$2
    shift 2
    expect 0 "$RL" acquire "$@" "$key"
    tok=$(cat "$TEST_TMPDIR/out")
    got=$(kind "$key")
    [ "$got" = "$kind_want" ] || fail "acquire $* took a $got lock"
    expect 0 "$RL" release "$key" "$tok"
}

taken exclusive x1 -x
taken exclusive x2 --exclusive
taken exclusive x3 -s -x
taken shared x4 -x -s
taken shared x5 --exclusive --shared
taken exclusive x6 -nx

# run -x excludes another run -x.
expect 0 "$RL" acquire -x held
expect 1 "$RL" run -x -n held -- true
err_empty
expect 1 "$RL" run --exclusive -s -n held -- true

# The options that -s refuses are fine after -s -x.
expect 0 "$RL" acquire -s -x --owner me --metadata m x7
out_is me

# release, extend, status and list take no lock and no -x.
expect 64 "$RL" status -x k
one_error_line
exit 0
