#!/bin/sh
# Messages that say what happened (issue 37, item 7): a permit or a share
# released twice holds nothing, while others hold the key ("had expired
# and is free" was wrong); a lease that ended, the key taken since, is
# another owner's (exit 2); a free key says so; --verbose names a key another tool
# wrote as held by a foreign owner, not its Redis type as metadata; a set
# given one key twice names both places; status and list show such a key
# as held by a foreign owner, with its type and TTL, not as "not-a-lock";
# a key in use as another kind (a semaphore of another limit, a shared
# lock) is no usage error but exit 65, in words that name no script;
# release and extend of a set's token with keys that are not its set
# free and lengthen nothing, and say so (exit 64).
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
# The key that acquire waits for is held: status says by whom (nobody
# redislock knows), with its lease; a hash or a list that is not ours
# the same, with its type; a key without expiry keeps ttl_ms=-1.
expect 0 "$RL" status msg:foreign
grep -Eq '^held-foreign ttl_ms=[0-9]+ type=string$' "$TEST_TMPDIR/out" ||
    fail "status msg:foreign: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status --json msg:foreign
grep -Eq '^\{"key":"msg:foreign","held":true,"ttl_ms":[0-9]+,'\
'"foreign":true,"type":"string"\}$' "$TEST_TMPDIR/out" ||
    fail "status --json msg:foreign: $(cat "$TEST_TMPDIR/out")"
rcli hset msg:fhash a 1 >/dev/null
rcli rpush msg:flist job >/dev/null
rcli pexpire msg:flist 60000 >/dev/null
expect 0 "$RL" status msg:fhash
out_is 'held-foreign ttl_ms=-1 type=hash'
expect 0 "$RL" list --all 'msg:f*'
sed 's/ttl_ms=[0-9][0-9]*/ttl_ms=N/' "$TEST_TMPDIR/out" |
    sort >"$TEST_TMPDIR/got"
printf '%s\n' 'msg:fhash held-foreign ttl_ms=-1 type=hash' \
    'msg:flist held-foreign ttl_ms=N type=list' \
    'msg:foreign held-foreign ttl_ms=N type=string' >"$TEST_TMPDIR/want"
cmp -s "$TEST_TMPDIR/got" "$TEST_TMPDIR/want" ||
    fail "list --all: $(cat "$TEST_TMPDIR/out")"

# kind_clash KEY IS ASKED OPTION...: run with OPTIONs on KEY, in use as
# IS, is refused: exit 65, one line saying what the key is, what was
# asked and the fix, with no script or Redis names; nothing written.
kind_clash() {
    k=$1 is=$2 asked=$3
    shift 3
    before=$(rcli zcard "$k")
    expect 65 "$RL" run -n "$@" "$k" -- true
    one_error_line
    err_has "^redislock: run: lock '$k': the key is in use as $is and this \
call asked for $asked: use one kind, and one limit, wherever the key is used"
    ! grep -Eq 'share_acquire|RLLIMIT|invalid argument' "$TEST_TMPDIR/err" ||
        fail "the message names the library's insides"
    [ "$(rcli zcard "$k")" = "$before" ] || fail "a refused call wrote $k"
}
"$RL" acquire --limit 3 msg:sem3 >/dev/null
"$RL" acquire -s msg:shk >/dev/null
kind_clash msg:sem3 'a semaphore of limit 3' 'a shared lock' -s
kind_clash msg:shk 'a shared lock' 'a semaphore of limit 3' --limit 3
kind_clash msg:sem3 'a semaphore of limit 3' 'a semaphore of limit 4' \
    --limit 4
expect 65 "$RL" acquire -n --limit 4 msg:sem3
out_is ''

# set_kept TOKEN: msg:b and msg:a still hold TOKEN, their lease not
# lengthened past 60 s, and msg:c is not TOKEN's.
set_kept() {
    for k in msg:b msg:a; do
        [ "$(rcli get "$k")" = "$1" ] || fail "$k no longer holds the set"
        between 1 60000 "$(rcli pttl "$k")" "$k's lease"
    done
    [ "$(rcli get msg:c)" != "$1" ] || fail "msg:c was taken"
}
# mismatch VERB: VERB with the keys {a, c} for the set {b, a} is refused.
mismatch() {
    expect 64 "$RL" "$@" -k msg:c msg:a "$t"
    one_error_line
    err_has "^redislock: $1: cannot $1 the set \{msg:a, msg:c\}: .*the \
token holds some of the keys given and not the others: they are not the \
set it was taken with: nothing was released or extended; give the same \
keys as the acquire that took the set"
    set_kept "$t"
}
t=$("$RL" acquire -t 60s -k msg:b msg:a)
mismatch release
mismatch extend -t 120s
# The same with the odd key held by another owner: left as it is.
rcli set msg:c other px 60000 >/dev/null
mismatch release
[ "$(rcli get msg:c)" = other ] || fail "msg:c was touched"
# The set's own keys, in any order, still release it.
expect 0 "$RL" release -k msg:b msg:a "$t"
key_gone msg:a && key_gone msg:b || fail "the set's release left a key"
exit 0
