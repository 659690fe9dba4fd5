#!/bin/sh
# Fencing tokens through the CLI: run's REDISLOCK_FENCE, status (none for
# a plain lock), and tokens that grow across holders, releases, expiries.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

RL=$REDISLOCK_BIN

f1=$("$RL" run -n fk -- sh -c 'echo "$REDISLOCK_FENCE"')
f2=$("$RL" run -n fk -- sh -c 'echo "$REDISLOCK_FENCE"')
case $f1$f2 in *[!0-9]*|"") fail "fences not numbers: '$f1' '$f2'" ;; esac
[ "$f2" -gt "$f1" ] || fail "second fence $f2 not above first $f1"

# status shows a held plain lock without a token: the key keeps none
# (the server's counter issues them), only its holder knows it.
tok=$("$RL" acquire -t 2s fk)
json=$("$RL" status --json fk)
case $json in
*'"held":true'*'"holds":1'*) ;;
*) fail "status of a held lock: $json" ;;
esac
case $json in *fence*) fail "status shows a plain lock's fence: $json" ;; esac

# After the lease expires, the next holder's token is still larger.
sleep 2.2
f4=$("$RL" run -n fk -- sh -c 'echo "$REDISLOCK_FENCE"')
[ "$f4" -gt "$f2" ] || fail "fence after expiry $f4 not above $f2"
expect 1 "$RL" release fk "$tok"

# A hold-after reservation says so.
tok=$("$RL" acquire fk)
"$RL" release --hold-after 2s fk "$tok"
"$RL" status --json fk | grep -q '"reserved":true' ||
    fail "reservation not shown"
exit 0
