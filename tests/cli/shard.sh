#!/bin/sh
# rl-tests-timeout: 110
# --shard: several -u URLs are independent servers and each key lives on
# one of them, chosen by a consistent hash; a set of keys (-k) may span
# them; without --shard, more than one URL is a usage error, and so is a
# server given twice.
set -eu
. "$(dirname "$0")/lib.inc"

# A second private server, killed by pid when the test ends.
more_servers 1
# shellcheck disable=SC2154  # set by more_servers
sock2=$xdir/x1.sock
url1=$REDISLOCK_URL
url2=unix://$sock2

rcli2() {
    "$REDIS_CLI" -s "$sock2" "$@"
}

# on_server KEY: 1 or 2, the server that holds KEY; fails if both or
# neither do.
on_server() {
    a=$(rcli exists "$1")
    b=$(rcli2 exists "$1")
    [ "$a$b" = 10 ] && echo 1 && return
    [ "$a$b" = 01 ] && echo 2 && return
    fail "key $1 is on server 1: $a, server 2: $b"
}

# Sixteen keys spread over both servers. Their leases must outlive the
# script, which checks them to the end: 120 s, more than its 110 s limit
# for a CLI test (beside another test run the script took over 30 s).
i=0
while [ $i -lt 16 ]; do
    expect 0 "$RL" --shard -u "$url1" -u "$url2" acquire -t 120s "sk$i"
    cp "$TEST_TMPDIR/out" "$TEST_TMPDIR/sk$i.token"
    on_server "sk$i" >>"$TEST_TMPDIR/placed"
    i=$((i + 1))
done
n1=$(grep -c 1 "$TEST_TMPDIR/placed" || true)
n2=$(grep -c 2 "$TEST_TMPDIR/placed" || true)
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] ||
    fail "16 keys went $n1 to server 1 and $n2 to server 2"

# The same key goes to the same server whatever the order of the URLs:
# the lock is seen held, and its owner can extend and release it.
i=0
while [ $i -lt 16 ]; do
    expect 1 "$RL" --shard -u "$url2" -u "$url1" acquire -n "sk$i"
    expect 0 "$RL" --shard -u "$url2" -u "$url1" status "sk$i"
    grep -q '^held ' "$TEST_TMPDIR/out" || fail "sk$i seen free"
    i=$((i + 1))
done
# Server 1 spelt by its TCP port and "localhost" instead of its socket:
# the same server, so the same keys go to it (half of them, to save time;
# a client routing by spelling gets some of eight keys, all but surely).
local1=redis://localhost:${REDIS_PORT:?}
i=0
while [ $i -lt 8 ]; do
    expect 1 "$RL" --shard -u "$local1" -u "$url2" acquire -n "sk$i"
    i=$((i + 1))
done
expect 0 "$RL" --shard -u "$url2" -u "$url1" extend -t 40s sk0 \
    "$(cat "$TEST_TMPDIR/sk0.token")"
where=$(on_server sk0)
expect 0 "$RL" --shard -u "$url1" -u "$url2" release sk0 \
    "$(cat "$TEST_TMPDIR/sk0.token")"
[ "$(rcli exists sk0)$(rcli2 exists sk0)" = 00 ] ||
    fail "release left sk0 on server $where"
# The key comes back to the same server.
expect 0 "$RL" --shard -u "$url1" -u "$url2" run -n sk0 -- sh -c \
    '"$0" -s "$1" exists sk0' "$REDIS_CLI" "$([ "$where" = 1 ] &&
        echo "$REDIS_SOCK" || echo "$sock2")"
out_is 1

# list covers every server; -u may follow the subcommand too.
expect 0 "$RL" --shard -u "$url1" list -u "$url2" 'sk*'
[ "$(wc -l <"$TEST_TMPDIR/out")" -eq 15 ] ||
    fail "list over both servers: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" --shard -u "$url1" -u "$url2" list --json
"$PYTHON" -c '
import json, sys
keys = sorted(d["key"] for d in json.load(sys.stdin))
assert keys == sorted("sk%d" % i for i in range(1, 16)), keys
' <"$TEST_TMPDIR/out" || fail "list --json: $(cat "$TEST_TMPDIR/out")"

# --shard with one server is that server: it sees the keys placed there.
i=$(awk '$1 == 1 && NR > 1 { print NR - 1; exit }' "$TEST_TMPDIR/placed")
[ -n "$i" ] || fail "no key from sk1 on went to server 1"
expect 1 "$RL" --shard acquire -n "sk$i"

# A set of keys over both servers (-k): held together while the command
# runs, one token on both; a key held on either server makes it take
# nothing and run nothing.
a= b=
i=0
while [ $i -lt 40 ] && { [ -z "$a" ] || [ -z "$b" ]; }; do
    expect 0 "$RL" --shard -u "$url1" -u "$url2" acquire -t 5s "sx$i"
    w=$(on_server "sx$i")
    expect 0 "$RL" --shard -u "$url1" -u "$url2" release "sx$i" \
        "$(cat "$TEST_TMPDIR/out")"
    [ "$w" = 1 ] && [ -z "$a" ] && a=sx$i
    [ "$w" = 2 ] && [ -z "$b" ] && b=sx$i
    i=$((i + 1))
done
[ -n "$a" ] && [ -n "$b" ] || fail "no keys sx0..sx39 on both servers"
expect 0 "$RL" --shard -u "$url1" -u "$url2" run -k "$b" "$a" -- sh -c \
    '"$0" -s "$1" get "$3"; "$0" -s "$2" get "$4"' "$REDIS_CLI" \
    "$REDIS_SOCK" "$sock2" "$a" "$b"
[ "$(sed -n 1p "$TEST_TMPDIR/out")" = "$(sed -n 2p "$TEST_TMPDIR/out")" ] &&
    [ -n "$(sed -n 1p "$TEST_TMPDIR/out")" ] ||
    fail "the set over two servers: $(cat "$TEST_TMPDIR/out")"
[ "$(rcli exists "$a")$(rcli2 exists "$b")" = 00 ] ||
    fail "the set's run left a key"
expect 0 "$RL" --shard -u "$url1" -u "$url2" acquire -t 20s "$b"
tokb=$(cat "$TEST_TMPDIR/out")
expect 1 "$RL" --shard -u "$url1" -u "$url2" run -n -k "$a" "$b" -- \
    touch "$TEST_TMPDIR/ran"
[ ! -e "$TEST_TMPDIR/ran" ] || fail "a set ran beside its held key"
[ "$(rcli exists "$a")" = 0 ] || fail "a refused set took $a"
expect 0 "$RL" --shard -u "$url1" -u "$url2" release "$b" "$tokb"

# More than one URL without --shard: 64, nothing sent.
expect 64 "$RL" -u "$url1" -u "$url2" acquire new-key
one_error_line
err_has shard
expect 64 "$RL" -u "$url1" status -u "$url2" new-key
one_error_line
# A server given twice: 64, spelt the same or not.
expect 64 "$RL" --shard -u "$url1" -u "$url1" status new-key
one_error_line
expect 64 "$RL" --shard -u "$url1" -u "$url2" -u "$url1?db=0" status new-key
one_error_line
expect 64 "$RL" --shard -u "$url1" -u "$url2" -u "$local1/0" status new-key
one_error_line
err_has twice
key_gone new-key || fail "a usage error took a lock"
# An unreachable shard: 69.
expect 69 "$RL" --shard -u "$url1" -u redis://127.0.0.1:1 status new-key
one_error_line
exit 0
