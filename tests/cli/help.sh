#!/bin/sh
# rl-tests-timeout: 120
# help and --help print an overview (the commands, one line each, the
# global options, the exit statuses); help COMMAND, COMMAND --help and
# COMMAND -h print that command's usage and options, and every option
# that a command's help lists is one that it takes, and the reverse.
set -eu
. "$(dirname "$0")/lib.inc"

D=$TEST_TMPDIR
cmds="run acquire release extend status list"

# The overview, three ways, the same text; short enough for a screen or
# two, and pointing to the commands' help.
expect 0 "$RL" help
err_empty
cp "$D/out" "$D/overview"
for h in --help -h; do
    expect 0 "$RL" "$h"
    cmp -s "$D/out" "$D/overview" || fail "redislock $h is not redislock help"
done
n=$(wc -l <"$D/overview")
[ "$n" -le 100 ] || fail "the overview has $n lines"
grep -q "redislock help COMMAND" "$D/overview" ||
    fail "the overview does not point to 'redislock help COMMAND'"
for c in $cmds help version; do
    grep -Eq "^  $c( |$)" "$D/overview" || fail "the overview lacks $c"
done

# The options listed on the option lines ("  -x, --long ...") of a help.
opts_of() {
    grep -E '^  --?[a-zA-Z]' "$1" | grep -oE -- '--[a-z][a-z-]*' | sort -u
}
opts_of "$D/overview" >"$D/all"

for c in $cmds; do
    expect 0 "$RL" help "$c"
    err_empty
    cp "$D/out" "$D/$c.help"
    head -n 1 "$D/$c.help" | grep -q "^Usage: redislock .*$c" ||
        fail "help $c starts: $(head -n 1 "$D/$c.help")"
    ! grep -q '^Commands:' "$D/$c.help" || fail "help $c is the overview"
    for h in --help -h; do
        expect 0 "$RL" "$c" "$h"
        cmp -s "$D/out" "$D/$c.help" || fail "$c $h is not help $c"
    done
    # Also after other options and operands.
    expect 0 "$RL" "$c" -u "$REDISLOCK_URL" --help
    cmp -s "$D/out" "$D/$c.help" || fail "$c -u URL --help is not help $c"
    opts_of "$D/$c.help" >"$D/$c.opts"
    cat "$D/$c.opts" >>"$D/all"
done
sort -u "$D/all" -o "$D/all"

# taken CMD OPT: whether CMD knows OPT (with or without a value, it may
# fail later, but not as an unknown option).
taken() {
    run_rl "$RL" "$1" "$2"
    ! grep -q "unknown option" "$D/err"
}

for c in $cmds; do
    while read -r o; do
        if grep -qx -e "$o" "$D/$c.opts"; then
            taken "$c" "$o" || fail "help $c lists $o, which $c refuses"
        elif taken "$c" "$o"; then
            fail "$c takes $o, which help $c does not list"
        fi
    done <"$D/all"
done

# Options that one command lists and another must not.
grep -q -- '--hold-after' "$D/release.help" || fail "help release lacks --hold-after"
grep -q -- '--exclusive' "$D/acquire.help" || fail "help acquire lacks -x"
! grep -q -- '--ttl' "$D/status.help" || fail "help status lists --ttl"
! grep -q -- '-c, --command' "$D/acquire.help" || fail "help acquire lists -c"

# help of a command it does not know: a usage error naming it.
expect 64 "$RL" help frobnicate
one_error_line
err_has "unknown command 'frobnicate'"
out_is ""
expect 64 "$RL" help run status
one_error_line
expect 0 "$RL" help help
grep -q '^Usage: redislock help' "$D/out" || fail "help help: $(cat "$D/out")"
expect 0 "$RL" help version
# A usage error points to the command's own help.
expect 64 "$RL" status --frobnicate k
err_has "redislock help status"
exit 0
