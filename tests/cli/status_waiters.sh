#!/bin/sh
# status and list show a fair queue's waiters: status a line each, in
# queue order, with the owner id (owner=- and JSON null for a plain
# waiter, whose token is never printed) and how long each has waited;
# list the count on the key's one line.
set -eu
. "$(dirname "$0")/lib.inc"

D=$TEST_TMPDIR
queue='sw{sw}:rl-q'
pids=
stop_waiters() {
    for p in $pids; do
        kill "$p" 2>/dev/null || true
    done
}
trap stop_waiters EXIT

# queue_up N ARGS...: starts a fair waiter "run ARGS" in the background
# and waits until sw's queue has N members, so that the next one starts
# only once this one is in the queue.
queue_up() {
    want=$1
    shift
    "$RL" run --fair -w 20 "$@" &
    pids="$pids $!"
    wait_until 5 sh -c "[ \"\$($REDIS_CLI -s '$REDIS_SOCK' zcard '$queue')\" \
-ge $want ]" || fail "waiter $want never queued"
}

tok=$("$RL" acquire -t 30s sw)
queue_up 1 --owner w-1 sw -- true
queue_up 2 sw -- true
queue_up 3 --owner 'w 2' sw -- true
# The plain waiter's token, in its entry (lib.lua's rl_waiter_entry).
req=$(rcli zrange "$queue" 1 1)
entry=$(rcli hget 'sw{sw}:rl-ws' "$req")
wtok=${entry##* }
wtok=${wtok#?*rl1-}
[ ${#wtok} = 32 ] || fail "no token in the plain waiter's entry: $entry"

expect 0 "$RL" status sw
sed 's/=[0-9][0-9]*/=N/g' "$D/out" >"$D/got"
printf '%s\n' 'held ttl_ms=N waiters=N' 'waiter 1 owner=w-1 waited_ms=N' \
    'waiter 2 owner=- waited_ms=N' 'waiter 3 owner=w\x202 waited_ms=N' \
    >"$D/want"
cmp -s "$D/got" "$D/want" || fail "status: $(cat "$D/out")"
grep -q '^held ttl_ms=[0-9]* waiters=3$' "$D/out" ||
    fail "status: $(cat "$D/out")"
grep -q "$wtok" "$D/out" && fail "status printed a waiter's token"
# Each waited no longer than the one ahead of it, and not 20 s.
sed -n 's/^waiter .* waited_ms=//p' "$D/out" >"$D/waits"
sort -rn "$D/waits" | cmp -s - "$D/waits" ||
    fail "waited_ms out of order: $(tr '\n' ' ' <"$D/waits")"
between 0 19999 "$(head -n 1 "$D/waits")" "the first waiter's waited_ms"

expect 0 "$RL" status --json sw
grep -q "$wtok" "$D/out" && fail "status --json printed a waiter's token"
"$PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
assert d["queued"] == 3, d
assert [w["owner"] for w in d["waiters"]] == ["w-1", None, "w 2"], d
ms = [w["waited_ms"] for w in d["waiters"]]
assert ms == sorted(ms, reverse=True) and ms[0] < 20000, d
' <"$D/out" || fail "status --json: $(cat "$D/out")"

# list: the count only, one line per key.
expect 0 "$RL" list 'sw*'
sed 's/ttl_ms=[0-9]*/ttl_ms=N/' "$D/out" >"$D/got"
[ "$(cat "$D/got")" = 'sw ttl_ms=N waiters=3' ] ||
    fail "list: $(cat "$D/out")"
expect 0 "$RL" list --json 'sw*'
"$PYTHON" -c '
import json, sys
l = json.load(sys.stdin)
assert len(l) == 1 and l[0]["queued"] == 3, l
assert [w["owner"] for w in l[0]["waiters"]] == ["w-1", None, "w 2"], l
' <"$D/out" || fail "list --json: $(cat "$D/out")"

# The release hands the lock down the queue; each waiter's command runs
# and releases. Then nobody waits, and nothing is printed of waiters.
expect 0 "$RL" release sw "$tok"
for p in $pids; do
    wait "$p" || fail "a fair waiter failed"
done
pids=
expect 0 "$RL" status sw
out_is free
expect 0 "$RL" status --json sw
out_is '{"key":"sw","held":false}'
