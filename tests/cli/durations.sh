#!/bin/sh
# Durations: compound forms ("1h30m"), days, and a bare number over the
# 30-day cap refused with a hint at the unit.
set -eu
. "$(dirname "$0")/lib.inc"

# pttl_between KEY LO HI: the key's PTTL on the server is in LO..HI ms.
pttl_between() {
    between "$2" "$3" "$(rcli pttl "$1")" "PTTL of $1"
}

# The server sees what the duration means.
expect 0 "$RL" acquire -t 1h30m dur-a
pttl_between dur-a 5390000 5400000
expect 0 "$RL" acquire -t 2m30s dur-b
pttl_between dur-b 140000 150000
expect 0 "$RL" acquire -t 1d12h dur-c
pttl_between dur-c 129590000 129600000
expect 0 "$RL" acquire -t 1.5s500ms dur-d
pttl_between dur-d 1000 2000
# 30 days is the cap, with a unit or as a bare number of seconds.
expect 0 "$RL" acquire -t 30d dur-e
pttl_between dur-e 2591990000 2592000000
expect 0 "$RL" acquire -t 2592000 dur-f
pttl_between dur-f 2591990000 2592000000
# A bare number below the cap stays seconds (30000 s is 8 h 20 min).
expect 0 "$RL" acquire -t 30000 dur-g
pttl_between dur-g 29990000 30000000
# A compound wait, and a compound --retry-delay, work too.
expect 1 "$RL" acquire -w 0m0.3s --retry-delay 0m0.1s dur-a

# refused WORD ARG...: a usage error (64, one line) that mentions WORD.
refused() {
    word=$1
    shift
    expect 64 "$RL" "$@"
    one_error_line
    err_has "$word"
}

# Over the cap as a bare number: a hint at milliseconds.
refused "did you mean 30000000ms\\?" acquire -t 30000000 dur-x
refused "more than 30 days in seconds" acquire -t 2592001 dur-x
refused "did you mean 99999999ms\\?" acquire -w 99999999 dur-x
refused "did you mean 5000000ms" run --hold-after 5000000 dur-x -- true
# Over the cap with a unit: plainly too long.
refused "longer than 30 days" acquire -t 31d dur-x
refused "longer than 30 days" acquire -t 30d1ms dur-x
# A part without its unit, units out of order or repeated, spaces.
refused "1h30m" acquire -t 1h30 dur-x
refused "largest to the smallest" acquire -t 30m1h dur-x
refused "largest to the smallest" acquire -t 1m1m dur-x
refused "number" acquire -t 1h-30m dur-x
refused "unknown unit" acquire -t 1x30m dur-x
key_gone dur-x || fail "a refused duration took the lock"
exit 0
