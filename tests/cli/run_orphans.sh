#!/bin/sh
# run leaves nothing of its command running, including what left the
# command's process group and outlived its parent: a daemon started with
# setsid(1) that starts another of its own, and one behind a double fork.
# Such processes are re-parented to the guardian (a child subreaper) and
# found there, round after round, whether the command ends by itself (by
# the time run exits) or run is SIGKILLed (within 2 s).
set -eu
. "$(dirname "$0")/lib.inc"

# Every process of part N has RL_ORPHANS=P.N in its environment, P being
# this script's pid: another copy of the suite may run beside it.

# marked N: the live processes of part N, one /proc/PID/environ a line
# (a zombie's environment reads empty).
marked() {
    grep -lzxF "RL_ORPHANS=$$.$1" /proc/[0-9]*/environ 2>/dev/null || true
}

# shellcheck disable=SC2317 # called through wait_until
no_marked() {
    [ -z "$(marked "$1")" ]
}

# Should the guardian fail, what it guards must not outlive the test.
# shellcheck disable=SC2013,SC2317 # paths without spaces; called on exit
orphans_cleanup() {
    for f in $(grep -lz "^RL_ORPHANS=$$\\." /proc/[0-9]*/environ \
        2>/dev/null); do
        p=${f#/proc/}
        kill -9 "${p%/environ}" 2>/dev/null || true
    done
    cleanup
}
trap orphans_cleanup EXIT

# The command's daemons: $1 and $2 are files each creates once it has
# left the command's session and group. The first (setsid) starts a
# second daemon and waits for it; the second is started by a subshell
# that exits at once, so that it is re-parented to the guardian while the
# command still runs. The command goes on once both are ready.
# shellcheck disable=SC2016 # expanded by the command's sh
daemons='setsid sh -c "setsid sleep 30 & touch \"\$1\"; wait" sh "$1" &
    (setsid sh -c "touch \"\$1\"; exec sleep 30" sh "$2" &)
    i=0
    while [ ! -e "$1" ] || [ ! -e "$2" ]; do
        i=$((i + 1))
        [ "$i" -lt 1000 ] || exit 3
        sleep 0.01
    done'

# Part 1: the command ends by itself. When run exits, the lock released,
# none of its daemons is left.
expect 0 env RL_ORPHANS=$$.1 "$RL" run orphan-key -- sh -c "$daemons" sh \
    "$TEST_TMPDIR/a.1" "$TEST_TMPDIR/b.1"
left=$(marked 1)
[ -z "$left" ] ||
    fail "daemons of an ended command outlived run: $(echo "$left" |
        tr '\n' ' ')"
key_gone orphan-key || fail "the lock outlived run"

# Part 2: run is SIGKILLed while the command runs; its daemons die with
# the command.
bg victim env RL_ORPHANS=$$.2 "$RL" run -t 10s orphan-key2 -- \
    sh -c "$daemons"'
    : >"$3"; exec sleep 30' sh "$TEST_TMPDIR/a.2" "$TEST_TMPDIR/b.2" \
    "$TEST_TMPDIR/ready.2"
wait_until 10 test -e "$TEST_TMPDIR/ready.2" ||
    fail "the command did not start its daemons"
kill -9 "$bg_pid"
bg_wait victim 10
[ "$rc" = 137 ] || fail "the killed run reported $rc"
wait_until 2 no_marked 2 ||
    fail "daemons outlived a SIGKILLed run by 2 s: $(marked 2 | tr '\n' ' ')"
exit 0
