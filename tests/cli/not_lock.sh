#!/bin/sh
# status and list tell locks from other keys: a key that is not a lock (a
# list, a cached value) is held by a foreign owner, as status says (exit
# 0, with its type), skipped by list and shown marked by list --all;
# another library's lock shows no hold count or fence, which redislock
# cannot know.
set -eu
. "$(dirname "$0")/lib.inc"

# A Redis list and a cached JSON value, both with a TTL.
rcli rpush q job1 job2 >/dev/null
rcli pexpire q 20000 >/dev/null
rcli set cache '{"user":42}' PX 20000 >/dev/null

expect 0 "$RL" status q
grep -Eq '^held-foreign ttl_ms=[0-9]+ type=list$' "$TEST_TMPDIR/out" ||
    fail "status q: $(cat "$TEST_TMPDIR/out")"
err_empty
expect 0 "$RL" status --json q
grep -Eq '^\{"key":"q","held":true,"ttl_ms":[0-9]+,"foreign":true,'\
'"type":"list"\}$' "$TEST_TMPDIR/out" ||
    fail "status --json q: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status cache
grep -Eq '^held-foreign ttl_ms=[0-9]+ type=string$' "$TEST_TMPDIR/out" ||
    fail "status cache: $(cat "$TEST_TMPDIR/out")"
# Without a TTL, a word is no lock either.
rcli set word forever >/dev/null
expect 0 "$RL" status word
out_is 'held-foreign ttl_ms=-1 type=string'

# Another library's lock (redis-py: a uuid's hex, SET NX PX): a lock, with
# no holds or fence, which redislock never issued.
rcli set py 0f3c8d6e2b7a4c1d9e5f6a7b8c9d0e1f NX PX 20000 >/dev/null
expect 0 "$RL" status py
grep -Eq '^held ttl_ms=[0-9]+$' "$TEST_TMPDIR/out" ||
    fail "status py: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" status --json py
grep -Eq '^\{"key":"py","held":true,"ttl_ms":[0-9]+,"owner":null,'\
'"metadata":null,"reserved":false\}$' "$TEST_TMPDIR/out" ||
    fail "status --json py: $(cat "$TEST_TMPDIR/out")"
# redis-py's default lock has no timeout: still a lock, held forever.
rcli set py-forever 0f3c8d6e2b7a4c1d9e5f6a7b8c9d0e1f NX >/dev/null
expect 0 "$RL" status py-forever
out_is 'held ttl_ms=-1'
# Our own plain lock keeps its hold; its key keeps no fence (the
# namespace's counter does, for every lock of it).
expect 0 "$RL" acquire -t 20s mine

# list: the locks only; list --all: every key, the others marked.
expect 0 "$RL" list
sed 's/ttl_ms=[0-9]*/ttl_ms=N/' "$TEST_TMPDIR/out" | sort >"$TEST_TMPDIR/got"
printf '%s\n' 'mine ttl_ms=N' 'py ttl_ms=N' >"$TEST_TMPDIR/want"
cmp -s "$TEST_TMPDIR/got" "$TEST_TMPDIR/want" ||
    fail "list: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --all
sed 's/ttl_ms=[0-9][0-9]*/ttl_ms=N/' "$TEST_TMPDIR/out" |
    sort >"$TEST_TMPDIR/got"
printf '%s\n' 'cache held-foreign ttl_ms=N type=string' 'mine ttl_ms=N' \
    'py ttl_ms=N' 'py-forever ttl_ms=-1' 'q held-foreign ttl_ms=N type=list' \
    'word held-foreign ttl_ms=-1 type=string' >"$TEST_TMPDIR/want"
cmp -s "$TEST_TMPDIR/got" "$TEST_TMPDIR/want" ||
    fail "list --all: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --all --json
"$PYTHON" -c '
import json, sys
d = {o["key"]: o for o in json.load(sys.stdin)}
assert sorted(d) == ["cache", "mine", "py", "py-forever", "q", "word"], d
assert d["q"]["foreign"] is True and d["q"]["type"] == "list", d["q"]
assert d["cache"]["type"] == "string" and "holds" not in d["cache"], d
assert "foreign" not in d["py"], d["py"]
assert "holds" not in d["py"] and "fence" not in d["py"], d["py"]
assert d["mine"]["holds"] == 1 and "fence" not in d["mine"], d["mine"]
' <"$TEST_TMPDIR/out" || fail "list --all --json: $(cat "$TEST_TMPDIR/out")"
expect 0 "$RL" list --json q
out_is '[]'
expect 64 "$RL" status --all q
exit 0
