#!/bin/sh
# Messages that say what happened (issue 37, item 7): a permit or a share
# released twice holds nothing, while others hold the key ("had expired
# and is free" was wrong); a lease that ended, the key taken since, is
# another owner's (exit 2); a free key says so; --verbose names a key another tool
# wrote as held by a foreign owner, not its Redis type as metadata; a set
# given one key twice names both places.
set -eu
. "$(dirname "$0")/lib.inc"

t1=$("$RL" acquire --limit 3 msg:sem)
"$RL" acquire --limit 3 msg:sem >/dev/null
expect 0 "$RL" release msg:sem "$t1"
expect 1 "$RL" release msg:sem "$t1"
err_has "^redislock: release: lock 'msg:sem': this token holds no part of it \
\(its lease ended, or it was released\); a semaphore with 1 of its 3 permits \
taken"
! grep -q 'is free' "$TEST_TMPDIR/err" || fail "a held semaphore called free"

s1=$("$RL" acquire -s msg:sh)
"$RL" acquire -s msg:sh >/dev/null
expect 0 "$RL" release msg:sh "$s1"
expect 1 "$RL" extend msg:sh "$s1"
err_has "^redislock: extend: lock 'msg:sh': this token holds no part of it .*\
held shared by 1 reader"

t=$("$RL" acquire -t 200ms msg:gone)
rcli pexpire msg:gone 1 >/dev/null
wait_until 5 sh -c '[ "$("$0" -s "$1" exists msg:gone)" = 0 ]' \
    "$REDIS_CLI" "$REDIS_SOCK" || fail "msg:gone did not expire"
"$RL" acquire --metadata 'job 7' msg:gone >/dev/null
expect 2 "$RL" release msg:gone "$t"
err_has "^redislock: release: lock 'msg:gone' is held by another owner$"

t=$("$RL" acquire msg:free)
rcli del msg:free >/dev/null
expect 1 "$RL" release msg:free "$t"
err_has "^redislock: release: lock 'msg:free' had expired and is free$"

rcli set msg:foreign 1 px 60000 >/dev/null
expect 1 "$RL" acquire --verbose -n msg:foreign
err_has "held by a foreign owner: a string key whose value is no redislock \
token"
! grep -q "metadata 'string'" "$TEST_TMPDIR/err" ||
    fail "--verbose shows the key's type as metadata"
exit 0
