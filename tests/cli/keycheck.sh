#!/bin/sh
# The key check of REDISLOCK_LUA_KEYCHECK (src/lua_keycheck.cmake), on a
# real server whatever the build's option: a declared key passes, an
# undeclared one fails the script (strict) or is logged and runs (report),
# through redis.call and redis.pcall alike; replies and errors come back
# as they would without the check; and the library's scripts, given the
# KEYS their rl_keys layouts name, pass strict through a fair hand-off.
set -eu
. "$SRCDIR/tests/cli/lib.inc"

T=$TEST_TMPDIR
LOG=$(dirname "$REDIS_SOCK")/redis.log

# wrap NAME MODE FILE...: the files joined, wrapped; the path on stdout.
wrap() {
    name=$1
    mode=$2
    shift 2
    cat "$@" >"$T/$name.in"
    cmake -DIN="$T/$name.in" -DNAME="$name" -DMODE="$mode" \
        -DOUT="$T/$name.$mode.lua" -P "$SRCDIR/src/lua_keycheck.cmake" ||
        fail "cannot wrap $name"
    echo "$T/$name.$mode.lua"
}

# ev FILE NKEYS ARGS...: EVAL of FILE's text; the reply in $out.
ev() {
    f=$1
    shift
    out=$(rcli eval "$(cat "$f")" "$@" 2>&1) || true
}

want() {
    [ "$out" = "$1" ] || fail "$2: got '$out', want '$1'"
}

# Replies of plain and wrapped text must agree (an error's place, the
# script's SHA1 and line, aside).
same() {
    src=$1
    shift
    ev "$src" "$@"
    got=${out%% script: *}
    ev "$(wrap same STRICT "$src")" "$@"
    out=${out%% script: *}
    [ "$out" = "$got" ] || fail "wrapped $src: '$out', unwrapped '$got'"
}

cat >"$T/good.lua" <<'EOF'
redis.call('SET', KEYS[1], ARGV[1])
redis.call('MSET', KEYS[1], KEYS[2], KEYS[2], 'x')
return {redis.call('GET', KEYS[1]), redis.call('DEL', KEYS[1], KEYS[2]),
        redis.call('TIME')[1] ~= nil, redis.call('GET', KEYS[1])}
EOF
cat >"$T/bad.lua" <<'EOF'
redis.call('SET', KEYS[1], '1')
return redis.call('GET', KEYS[1] .. ':helper')
EOF
cat >"$T/badpcall.lua" <<'EOF'
local r = redis.pcall('GET', 'kc:other')
return {'after', r}
EOF
cat >"$T/badmulti.lua" <<'EOF'
return redis.call('DEL', KEYS[1], 'kc:extra')
EOF
cat >"$T/unknown.lua" <<'EOF'
return redis.call('GETRANGE', KEYS[1], 0, 1)
EOF
cat >"$T/errors.lua" <<'EOF'
redis.call('SET', KEYS[1], 'text')
local r = redis.pcall('INCR', KEYS[1])
if ARGV[1] == 'raise' then
    return redis.call('INCR', KEYS[1])
end
return {type(r), r.err}
EOF
cat >"$T/nil.lua" <<'EOF'
return redis.call('GET', KEYS[1])
EOF
cat >"$T/status.lua" <<'EOF'
return redis.call('SET', KEYS[1], 'v')
EOF

for mode in STRICT REPORT; do
    # A declared key passes: MSET's values ('x') are not keys, TIME has
    # none.
    ev "$(wrap good $mode "$T/good.lua")" 2 kc:a kc:b v
    want "kc:b
2
1" "good ($mode)"
done

# Strict: the script fails at the undeclared key, with the error named.
ev "$(wrap bad STRICT "$T/bad.lua")" 1 kc:a
case $out in "RLKEYCHECK undeclared key kc:a:helper in GET of bad"*) ;;
*) fail "bad (strict): '$out'" ;; esac
# ... also through redis.pcall: the script cannot swallow it.
ev "$(wrap badpcall STRICT "$T/badpcall.lua")" 1 kc:a
case $out in "RLKEYCHECK undeclared key kc:other in GET of badpcall"*) ;;
*) fail "badpcall (strict): '$out'" ;; esac
# ... for any key of a multi-key command.
ev "$(wrap badmulti STRICT "$T/badmulti.lua")" 1 kc:a
case $out in "RLKEYCHECK undeclared key kc:extra in DEL of badmulti"*) ;;
*) fail "badmulti (strict): '$out'" ;; esac
# ... and a command whose keys the table does not know.
ev "$(wrap unknown STRICT "$T/unknown.lua")" 1 kc:a
case $out in "RLKEYCHECK unknown command in GETRANGE of unknown"*) ;;
*) fail "unknown (strict): '$out'" ;; esac
grep -q 'RLKEYCHECK undeclared key kc:a:helper in GET of bad (KEYS\[1\] kc:a)' \
    "$LOG" || fail "strict violation not logged: $(tail -5 "$LOG")"

# Report: logged, and the command runs.
rcli set kc:other o >/dev/null
rcli set kc:a:helper h >/dev/null
ev "$(wrap bad REPORT "$T/bad.lua")" 1 kc:a
want h "bad (report)"
ev "$(wrap badpcall REPORT "$T/badpcall.lua")" 1 kc:a
want "after
o" "badpcall (report)"
for m in 'undeclared key kc:a:helper in GET of bad ' \
        'undeclared key kc:other in GET of badpcall '; do
    [ "$(grep -c "RLKEYCHECK $m" "$LOG")" = 2 ] ||
        fail "'$m' not logged once per mode: $(grep RLKEYCHECK "$LOG")"
done

# Replies and errors pass through: pcall's error table, call's error
# reply, a status reply, a nil.
rcli del kc:a >/dev/null
same "$T/errors.lua" 1 kc:a
want "table
ERR value is not an integer or out of range" "pcall's error"
same "$T/errors.lua" 1 kc:a raise
want "ERR value is not an integer or out of range" "call's error"
same "$T/status.lua" 1 kc:a
want OK "status reply"
same "$T/nil.lua" 1 kc:none
want "" "nil reply"

# extend and fenced_set touch only their KEYS: clean in strict mode.
L=$SRCDIR/src/lua
rcli set kc:lock tok px 10000 >/dev/null
ev "$(wrap extend STRICT "$L/lib.lua" "$L/extend.lua")" 1 kc:lock tok 30000
want 1 "extend (strict)"
between 20000 30000 "$(rcli pttl kc:lock)" "pttl after extend"
ev "$T/extend.STRICT.lua" 1 kc:lock other 30000
want -1 "extend of another's (strict)"
f=$(wrap fenced_set STRICT "$L/lib.lua" "$L/fenced_set.lua")
ev "$f" 2 kc:res kc:res:fence v1 5
want 1 "fenced_set (strict)"
ev "$f" 2 kc:res kc:res:fence v0 4
want 0 "stale fenced_set (strict)"
[ "$(rcli get kc:res)" = v1 ] || fail "fenced_set wrote the stale value"

# A fair queue, a release that hands the lock over, the waiter taking it,
# a second waiter leaving, abandon and inspect: strict, every branch that
# names helpers. The keys in each script's rl_keys order.
B='kc:f{kc:f}:rl-'
for n in acquire fair release leave abandon inspect; do
    wrap "$n" STRICT "$L/lib.lua" "$L/$n.lua" >/dev/null
done
ev "$T/acquire.STRICT.lua" 4 kc:f redislock:rl-fence ${B}waiting ${B}void:r0 \
    tok0 10000 plain "" 5000 r0
# A plain lock taken: its fencing token alone (a positive integer).
case $out in
'' | *[!0-9]* | 0) fail "acquire (strict): $out" ;;
esac
ev "$T/fair.STRICT.lua" 6 kc:f redislock:rl-fence ${B}q ${B}ws ${B}seq ${B}void:r1 \
    tok1 10000 plain "" 5000 r1 ${B}c:h1 P
[ "$(echo "$out" | head -n 1)" = 0 ] || fail "fair, queued (strict): $out"
ev "$T/fair.STRICT.lua" 6 kc:f redislock:rl-fence ${B}q ${B}ws ${B}seq ${B}void:r2 \
    own2 10000 hash "m" 5000 r2 ${B}c:h2 P
[ "$(echo "$out" | head -n 1)" = 0 ] || fail "fair, second (strict): $out"
# inspect reads the two waiters' entries.
ev "$T/inspect.STRICT.lua" 3 kc:f ${B}q ${B}ws
[ "$(echo "$out" | head -n 1)" = string ] || fail "inspect, queued (strict): $out"
ev "$T/release.STRICT.lua" 7 kc:f redislock:rl-fence ${B}q ${B}ws ${B}waiting \
    ${B}wake ${B}rwake tok0 0
want 1 "release with a hand-off (strict)"
[ "$(rcli get kc:f)" = tok1 ] || fail "the release did not hand over"
ev "$T/fair.STRICT.lua" 6 kc:f redislock:rl-fence ${B}q ${B}ws ${B}seq ${B}void:r1 \
    tok1 10000 plain "" 5000 r1 ${B}c:h1 P
[ "$(echo "$out" | head -n 1)" = 1 ] || fail "fair, handed (strict): $out"
ev "$T/leave.STRICT.lua" 7 kc:f redislock:rl-fence ${B}q ${B}ws ${B}waiting \
    ${B}wake ${B}rwake own2 r2
want 0 "leave (strict)"
ev "$T/abandon.STRICT.lua" 8 kc:f redislock:rl-fence ${B}q ${B}ws ${B}waiting \
    ${B}wake ${B}rwake ${B}void:r1 tok1 60000 r1
want 1 "abandon (strict)"
ev "$T/inspect.STRICT.lua" 3 kc:f ${B}q ${B}ws
[ "$(echo "$out" | head -n 1)" = none ] || fail "inspect (strict): $out"
if grep -q RLKEYCHECK "$LOG"; then
    grep RLKEYCHECK "$LOG" | grep -q "kc:f" &&
        fail "undeclared: $(grep RLKEYCHECK "$LOG" | grep kc:f | head -n 3)"
fi
exit 0
