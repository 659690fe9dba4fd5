-- Shared by every script: embed_lua.cmake puts this file in front of each
-- one (so each is still a single script with its own SHA1).

-- The prefix of the plain-lock tokens whose holders may release natively
-- (rand.h's RL_NATIVE_TOKEN_PREFIX): a compare-and-delete command
-- (DELIFEQ, DELEX IFEQ) that wakes nobody. A waiter that will block
-- behind such a holder appends RL_WAITED to the key's value
-- (rl_mark_holder), so that the native compare fails and the holder
-- releases by release.lua, which wakes it.
local RL_NATIVE_PREFIX = 'rl2-'
local RL_WAITED = '+w'

-- The mark of a revoked plain lock (revoke.lua): its value is the token,
-- any waiter's mark, then RL_REVOKED and the reason. A hash lock's is
-- its field 'revoked'.
local RL_REVOKED = '+r'

-- The length of redislock's plain-lock tokens: a prefix of 4 (rl1-, or
-- RL_NATIVE_PREFIX) and 32 hex digits. Marks follow it, each starting
-- with '+'.
local RL_TOKEN_LEN = 36

-- A plain lock's value v without its marks (a waiter's, a revocation's):
-- its holder's token. Only redislock's tokens carry marks.
local function rl_unmark(v)
    if #v > RL_TOKEN_LEN and string.byte(v, RL_TOKEN_LEN + 1) == 43 and
            string.find(v, '^rl[12]%-') then
        return string.sub(v, 1, RL_TOKEN_LEN)
    end
    return v
end

-- The reason a lock was revoked with (revoke.lua), or nil: from a plain
-- lock's whole value v (kind 'string') or a hash lock's 'revoked' field
-- (kind 'hash', v the field).
local function rl_revoked(kind, v)
    if kind == 'hash' then
        return v or nil
    elseif kind ~= 'string' or not v or #v <= RL_TOKEN_LEN then
        return nil
    end
    local at = string.find(v, RL_REVOKED, RL_TOKEN_LEN + 1, true)
    if not at or rl_unmark(v) == v then
        return nil
    end
    return string.sub(v, at + #RL_REVOKED)
end

-- The kind of the lock key and who holds it: the string's value (a plain
-- lock's token, without its marks: rl_unmark) or the hash's owner
-- field; false when there is none. For
-- a hash, also its gen field (the life of the key, see rl_create; nil
-- when it has none), read in the same call. Fourth, what rl_revoked
-- reads: a string's whole value, a hash's 'revoked' field. A
-- hold-after reservation is held by nobody: no token names it, so nobody
-- can release, extend or abandon it before it runs out. With plain set
-- (the caller holds a plain lock, so the key is most likely a string),
-- one GET answers; only a key of another type costs the TYPE (and a
-- WRONGTYPE in the server's error counts, hence only on that guess).
local function rl_holder(key, plain)
    if plain then
        local v = redis.pcall('GET', key)
        if type(v) ~= 'table' then
            if not v then
                return 'none', false
            elseif v == 'redislock:hold-after' then
                return 'string', false
            end
            return 'string', rl_unmark(v), nil, v
        end
    end
    local kind = redis.call('TYPE', key).ok
    if kind == 'string' then
        local v = redis.call('GET', key)
        if v == 'redislock:hold-after' then
            return kind, false
        end
        return kind, rl_unmark(v), nil, v
    elseif kind == 'hash' then
        local f = redis.call('HMGET', key, 'owner', 'gen', 'revoked')
        return kind, f[1], f[2] or nil, f[3]
    end
    return kind, false
end

-- The prefix of redislock's other plain-lock tokens, rand.h's
-- RL_LOCK_TOKEN_PREFIX (test_rand checks that the two agree, and
-- RL_NATIVE_PREFIX).
local RL_TOKEN_PREFIX = 'rl1-'

-- Whether v is one of redislock's plain-lock tokens (either prefix): the
-- prefix, and with whole set, the 32 hex digits after it.
local function rl_our_token(v, whole)
    local n = #RL_TOKEN_PREFIX
    local p = string.sub(v, 1, n)
    if p ~= RL_TOKEN_PREFIX and p ~= RL_NATIVE_PREFIX then
        return false
    end
    return not whole or
        (#v == n + 32 and string.find(v, '^%x+$', n + 1) ~= nil)
end

-- Whether the plain-lock token v (a string) is of the native prefix:
-- its holder may release by a command or a script that wakes nobody
-- (a compare-and-delete, set_free.lua), so its waiters mark it.
local function rl_native_token(v)
    return string.sub(v, 1, #RL_NATIVE_PREFIX) == RL_NATIVE_PREFIX
end

-- Marks the plain lock at key, when its holder may release it natively
-- and nobody has marked it yet, as waited for (RL_WAITED), its lease
-- unchanged: the holder's compare-and-delete then fails and it releases
-- by release.lua, which wakes its waiters. v: the key's whole value when
-- the caller has read it (rl_holder's fourth answer for a string), false
-- when the key is known to hold no plain lock, nil to read it here.
local function rl_mark_holder(key, v)
    if v == false then
        return
    elseif v == nil then
        v = redis.pcall('GET', key)
    end
    if type(v) ~= 'string' or #v ~= RL_TOKEN_LEN or
            not rl_native_token(v) then
        return
    end
    local ttl = redis.call('PTTL', key)
    if ttl > 0 then
        redis.call('SET', key, v .. RL_WAITED, 'PX', ttl)
    elseif ttl == -1 then
        redis.call('SET', key, v .. RL_WAITED)
    end
end

-- Whether the release of a lock held as kind and holder (rl_holder's
-- answer) wakes its waiters: 1 for redislock's own locks (a hash, or a
-- plain token with redislock's prefix), for a hold-after reservation (it
-- ends only by expiry, which waiters time) and for no lock at all; 0 for
-- anything else, such as another library's lock, which is released
-- without a word: its waiters poll.
local function rl_wakes(kind, holder)
    if kind == 'none' or kind == 'hash' or
            (kind == 'string' and (not holder or rl_our_token(holder))) then
        return 1
    end
    return 0
end

-- The script's KEYS by name: layout lists them in order (KEYS[1] first).
-- The layout is also what src/embed_lua.cmake reads to tell the C side
-- which keys to send (keys.h's RL_KEY_*), so each script has exactly one
-- rl_keys call, with its layout written out as a string.
local function rl_keys(layout)
    local k, i = {}, 0
    for name in string.gmatch(layout, '%S+') do
        i = i + 1
        k[name] = KEYS[i]
    end
    return k
end

-- A set's locks (the set scripts, renew.lua): the first lock's keys open
-- KEYS (rl_keys; first of them: its layout starts with this one's roles,
-- in order), then each further lock's, by the roles of layout, in order.
-- embed_lua.cmake reads the call too (the C side sends each lock's keys
-- in that order) and writes it out as an rl_set_of call. Returns the set
-- for rl_set_key, rl_set_keys and rl_set_lock. No table per lock is made
-- unless asked for: eight of them cost a set's script more than its
-- commands (8 us of 19, measured with INFO commandstats).
local function rl_set_of(first, at, width)
    local n, skip = (#KEYS - first) / width, 0
    if first > 0 then
        n = n + 1
        skip = first - width
    end
    -- skip: how far the first lock's own layout moves the later locks'
    -- keys (the i-th's, i > 1, start after KEYS[skip + (i - 1) * width]).
    return {at = at, width = width, n = n, skip = skip}
end

local function rl_keys_each(first, layout)
    local at, width = {}, 0
    for name in string.gmatch(layout, '%S+') do
        at[name] = width
        width = width + 1
    end
    return rl_set_of(first, at, width)
end

-- The key of role of the set S's i-th lock (1: the first).
local function rl_set_key(S, i, role)
    if i == 1 then
        return KEYS[S.at[role] + 1]
    end
    return KEYS[S.skip + (i - 1) * S.width + S.at[role] + 1]
end

-- The key of role of each of the set S's locks, in order: rl_set_key's
-- arithmetic without a call per lock (set_release.lua takes three such
-- lists on every release).
local function rl_set_keys(S, role)
    local at, w, skip = S.at[role] + 1, S.width, S.skip
    local t = {KEYS[at]}
    for i = 2, S.n do
        t[i] = KEYS[skip + (i - 1) * w + at]
    end
    return t
end

-- The set S's i-th lock's keys by role, as rl_keys names a lock's.
local function rl_set_lock(S, i)
    local t = {}
    for role in pairs(S.at) do
        t[role] = rl_set_key(S, i, role)
    end
    return t
end

-- For a set's owner scripts: its lock keys' values, read with one MGET
-- (without their marks: rl_unmark), and what they say of token: res 1
-- when every key holds it, 0 when some have gone, -1 when some is
-- another owner's (its value, or a key of another type, which MGET reads
-- as nil and EXISTS tells from a gone one); held, how many hold it.
local function rl_set_read(locks, token)
    local vals = redis.call('MGET', unpack(locks))
    local res, held = 1, 0
    for i = 1, #locks do
        local v = vals[i]
        -- A key of the set that was revoked (revoke.lua) is still the
        -- set's: its holder does not hear it yet.
        if v then
            v = rl_unmark(v)
            vals[i] = v
        end
        if v == token then
            held = held + 1
        elseif v or redis.call('EXISTS', locks[i]) == 1 then
            res = -1
        elseif res == 1 then
            res = 0
        end
    end
    return vals, res, held
end

-- What a server refused once (a command an ACL denies), by name, for as
-- long as the library is loaded: a Functions library's top level runs
-- once, so this table lives across calls, the one state of lib.lua
-- that is meant to (rl_begin resets the rest); a script sent by EVALSHA
-- makes it anew on each call, and tries again.
local RL_REFUSED = {}

-- Sets each of keys to v for ttl ms: one MSETEX (Redis 8.4 and later,
-- Valkey 9.1 and later; one command where a SET a key costs the script
-- a call each, about 5 us of server time on a set of 8), else a SET
-- each. The server is told by the version its scripting API gives
-- (REDIS_VERSION_NUM since 7.0; Valkey's is 7.2.4's, VALKEY_VERSION_NUM
-- its own), and a refusal (an ACL without MSETEX, a server that claims
-- a version it is not) falls back to the SETs, which the caller's
-- checks (the keys free) make the same writes; it is remembered in
-- RL_REFUSED, so that the ACL log gets one entry, not one a call.
local function rl_set_all(keys, v, ttl)
    local n = #keys
    if n > 1 and not RL_REFUSED.MSETEX then
        local valkey = redis.VALKEY_VERSION_NUM
        local has
        if valkey then
            has = valkey >= 0x090100
        else
            has = (redis.REDIS_VERSION_NUM or 0) >= 0x080400
        end
        if has then
            local argv = {'MSETEX', n}
            for i = 1, n do
                argv[2 * i + 1], argv[2 * i + 2] = keys[i], v
            end
            argv[2 * n + 3], argv[2 * n + 4] = 'PX', ttl
            local r = redis.pcall(unpack(argv))
            if type(r) ~= 'table' or not r.err then
                return
            end
            RL_REFUSED.MSETEX = true
        end
    end
    for i = 1, n do
        redis.call('SET', keys[i], v, 'PX', ttl)
    end
end

-- The server's clock in microseconds, read once per script: a script runs
-- at one instant (Redis also holds its clock still for expiries then), so
-- the hand-off, the fencing token and the fair queue's place share it.
local rl_clock

-- Starts a call of a script that runs as a function of the library
-- (embed_lua.cmake): what lib.lua keeps between its functions' calls is
-- reset, since a library's top level runs once, when it loads, where a
-- script's runs on every call. Each top-level local of this file that is
-- not a function or an upper-case constant must be reset here (the build
-- checks it); RL_REFUSED is the one upper-case table meant to outlive a
-- call.
local function rl_begin()
    rl_clock = nil
end

local function rl_now_us()
    if not rl_clock then
        local t = redis.call('TIME')
        rl_clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
    end
    return rl_clock
end

-- The same in milliseconds.
local function rl_now_ms()
    return math.floor(rl_now_us() / 1000)
end

-- Sets the life of key (a helper made or written just now) to at least ms.
local function rl_keep(key, ms)
    if redis.call('PTTL', key) < tonumber(ms) then
        redis.call('PEXPIRE', key, ms)
    end
end

-- v as a number when, read from a counter key, it is what redislock
-- writes there: a whole number from 0 up to 2^53 (what a script's
-- numbers hold exactly); else nil. Anything else was written by
-- something other than redislock, and counting on from it could go
-- back.
local function rl_counter_num(v)
    local n = tonumber(v)
    if n ~= nil and n >= 0 and n < 9007199254740992 and n == math.floor(n) then
        return n
    end
    return nil
end

-- The number the counter key holds (v, read from it); else the script
-- stops with an error that names the key and the fix (error.c maps
-- RLBADCOUNTER). Scripts check before their first write, since Redis
-- keeps what a script wrote before an error. Deleting the key is safe:
-- counters go on from the server's clock (rl_count).
local function rl_counter_value(key, v)
    local n = rl_counter_num(v)
    if not n then
        error({err = 'RLBADCOUNTER ' .. key .. ' holds "' ..
                     string.gsub(string.sub(v, 1, 40), '[^%w%p ]', '?') ..
                     '", not a number redislock wrote'})
    end
    return n
end

-- The start of every acquire: one read for two things, whether the
-- sender gave up on this request (see abandon.lua: it then takes nothing)
-- and the fencing counter's last value, checked before any write (Redis
-- keeps what a script wrote before an error). Returns nil for a voided
-- request, else the counter's value, as a number (false: none; parsed
-- once here, a 16-digit number costing the server about 2k
-- instructions each time), for rl_fence; with K.seq
-- (a fair waiter's), second the queue's sequence as read in the same call,
-- for rl_queue; with also (a key name), second that key's value instead.
local function rl_request_last(K, also)
    local got
    if K.seq or also then
        got = redis.call('MGET', K.void, K.fence, K.seq or also)
    else
        got = redis.call('MGET', K.void, K.fence)
    end
    if got[1] then
        return nil
    end
    local last = got[2]
    if last then
        last = rl_counter_value(K.fence, last)
    end
    return last, got[3]
end

-- Tells the releases that someone waits (see rl_wake and rl_mark_holder),
-- for as long as this waiter may block: until the holder's lease ends
-- (ttl ms; -1: no expiry) or the caller's deadline (mark ms; '0': it
-- will not wait). v: the lock key's value, as rl_mark_holder's. A set's
-- waiter (set) marks 's', which the marks of other waiters keep for as
-- long as the marker lives: woken by the key's release, a set may be
-- refused by another of its keys and leave the wake unused, so a
-- release that sees 's' wakes the readers itself (rl_handoff's copied).
local function rl_mark_waiting(K, ttl, mark, v, set)
    mark = tonumber(mark)
    if mark > 0 then
        rl_mark_holder(K.lock, v)
        if ttl >= 0 and ttl < mark then
            mark = ttl
        end
        if redis.call('PTTL', K.waiting) < mark + 1000 then
            if redis.call('SET', K.waiting, set and 's' or '1', 'PX',
                          mark + 1000, 'GET') == 's' then
                redis.call('SET', K.waiting, 's', 'KEEPTTL')
            end
        elseif set then
            redis.call('SET', K.waiting, 's', 'KEEPTTL')
        end
    end
end

-- v, raised past last, the value the counter key holds (false: none; a
-- number: checked already, by rl_request_last; a value redislock did not
-- write stops the script, see rl_counter_value).
local function rl_count_past(key, last, v)
    if last then
        if type(last) ~= 'number' then
            last = rl_counter_value(key, last)
        end
        local n = last + 1
        if n > v then
            return n
        end
    end
    return v
end

-- Writes v into the counter key, to live life ms past the moment the
-- server's clock (now, in microseconds) reaches v. A value ahead of this
-- server's clock (a set over several servers takes its groups' largest,
-- see set_fence.lua) thus outlives its lead: once the key has gone, the
-- clock alone gives values past it.
local function rl_count_write(key, v, now, life)
    local ahead = 0
    if v > now then
        ahead = math.ceil((v - now) / 1000)
    end
    redis.call('SET', key, string.format('%d', v), 'PX', life + ahead)
end

-- The next value of the counter key: greater than every value it gave
-- before. last is the counter's value when the caller has read it (false:
-- there is none; nil: read it here). The value is the larger of last + 1
-- and the server's clock in microseconds, so the key need only live life
-- ms past its last use (rl_count_write): once it has gone, the clock has
-- moved past every value it gave, unless the server's clock stepped back
-- by more than that idle time. The clock also keeps the values of
-- different servers close (Redlock's token is the largest a majority
-- gives, and any majority's largest must exceed the earlier ones): a
-- counter that only counted up from where each server started would not.
local function rl_count(key, life, last)
    if last == nil then
        last = redis.call('GET', key)
    end
    local now = rl_now_us()
    local v = rl_count_past(key, last, now)
    -- Shortening the key's life is harmless: the clock covers it.
    rl_count_write(key, v, now, life)
    return v
end

-- rl_count for several counter keys at once (a set's fencing counters
-- share its token): one value past each of lasts (keys[i]'s values, read
-- by the caller) and at least floor (a number, or nil), written to all.
-- Every value is checked before the first write.
local function rl_count_all(keys, life, lasts, floor)
    local now = rl_now_us()
    local v = now
    if floor and floor > v then
        v = floor
    end
    for i, key in ipairs(keys) do
        v = rl_count_past(key, lasts[i], v)
    end
    for _, key in ipairs(keys) do
        rl_count_write(key, v, now, life)
    end
    return v
end

-- The next fencing token of the lock whose counter is the key fence (last:
-- as rl_count), greater than every token issued before for the lock: the
-- counter lives as long as a lock might (lock TTL + 1 s).
local function rl_fence(fence, ttl, last)
    return rl_count(fence, tonumber(ttl) + 1000, last)
end

-- Sets the lease of key to ttl ms from now unless it has longer left: a
-- lease is never shortened, so every handle that holds it (two handles of
-- one owner id, or an extend whose reply was lost and that arrives late)
-- keeps a validity no longer than what the server has. A key without an
-- expiry keeps none (GT counts it as one that never ends), and a key that
-- has gone is not touched. One command (Redis 7.0+), where a PTTL first
-- cost a second.
local function rl_lengthen(key, ttl)
    redis.call('PEXPIRE', key, ttl, 'GT')
end

-- Creates the lock for id: a string for the 'plain' format, a hash with
-- owner, holds, gen and meta for 'hash' and 'reentrant'. req names the
-- request that made it (for a hand-off, the waiter's), so that abandon.lua
-- can undo exactly that request. gen is the fencing token that created the
-- hash: it tells this life of the key from a later one that the same owner
-- id takes (rl_ours). fence is the lock's fencing counter (last: as
-- rl_count). Returns its fencing token.
local function rl_create(key, id, ttl, fmt, meta, fence, req, last)
    local token = rl_fence(fence, ttl, last)
    if fmt == 'plain' then
        redis.call('SET', key, id, 'PX', ttl)
    else
        redis.call('HSET', key, 'owner', id, 'holds', 1, 'gen',
                   string.format('%d', token))
        if meta ~= '' then
            redis.call('HSET', key, 'meta', meta)
        end
        if req ~= '' then
            redis.call('HSET', key, 'req', req)
        end
        redis.call('PEXPIRE', key, ttl)
    end
    return token
end

-- Whether a hash lock whose owner field is the caller's owner id, and
-- whose gen field is gen (rl_holder's third answer), holds the caller's
-- holds. Not when it was created after the caller's last acquisition,
-- whose fencing token is fence: its gen (rl_create) is then larger. That
-- is a later life of the key: the caller's lease ran out (it was stopped,
-- or its reply came late) and another handle of the same owner id took
-- the key afresh, whose holds the caller must neither count, lengthen nor
-- give back. fence '' (not known: an adopted owner id) and a hash without
-- gen (an older redislock's) pass.
local function rl_ours(gen, fence)
    return fence == nil or fence == '' or not gen or
        tonumber(gen) <= tonumber(fence)
end

-- A fair waiter's entry in the hash ws, field: its request id (the queue
-- q holds the same ids): "<alive> <ttl> <fmt> <P|S> <#chan> <#meta>
-- <chan><meta><owner>", alive being when it counts as dead (server ms),
-- chan the channel it listens on, published to with PUBLISH (P) or, in a
-- cluster, SPUBLISH (S). rl_waiter reads one back, nil when there is none.
local function rl_waiter_entry(alive, ttl, fmt, pub, chan, meta, owner)
    return string.format('%d %d %s %s %d %d ', alive, ttl, fmt, pub, #chan,
                         #meta) .. chan .. meta .. owner
end

local function rl_waiter(v)
    if not v then
        return nil
    end
    local alive, ttl, fmt, pub, nc, nm, at =
        string.match(v, '^(%d+) (%d+) (%a+) (%a) (%d+) (%d+) ()')
    if not at then
        return nil
    end
    local c, m = at + tonumber(nc), at + tonumber(nc) + tonumber(nm)
    return {alive = tonumber(alive), ttl = tonumber(ttl), fmt = fmt,
            publish = pub == 'S' and 'SPUBLISH' or 'PUBLISH',
            chan = string.sub(v, at, c - 1), meta = string.sub(v, c, m - 1),
            owner = string.sub(v, m)}
end

-- Queues the fair waiter whose request is req, or renews its place, with
-- its entry (rl_waiter_entry), for alive ms. Its place comes from a
-- counter that never goes back (rl_count), so that no later place of this
-- request has the number of an earlier one. The waiters' hash ws lives
-- 100 ms past the entry's alive time (the server's clock in the entry
-- was read during this script, where an expiry may count from its
-- start), so it outlives the entry and any hand-off record of the
-- waiter's lease (rl_hand), which ends by that time: rl_handoff
-- lengthens nothing. seq_last: the sequence's value as rl_request_last
-- read it. Returns the place.
local function rl_queue(K, req, alive, entry, seq_last)
    local seq = tonumber(redis.call('ZSCORE', K.q, req) or '0')
    if seq == 0 then
        seq = rl_count(K.seq, alive, seq_last)
        redis.call('ZADD', K.q, string.format('%d', seq), req)
    end
    redis.call('HSET', K.ws, req, entry)
    redis.call('PEXPIRE', K.q, alive)
    rl_keep(K.ws, tonumber(alive) + 100)
    return seq
end

-- The first n waiters of the queue, in order: their request ids, places
-- (seqs) and raw entries (false when none; rl_waiter reads one, so that
-- a caller that stops at the first pays for no more), read with one
-- ZRANGE and one HMGET.
local function rl_queue_head(K, n)
    local top = redis.call('ZRANGE', K.q, 0, n - 1, 'WITHSCORES')
    local ids, seqs = {}, {}
    for i = 1, #top, 2 do
        ids[#ids + 1], seqs[#seqs + 1] = top[i], top[i + 1]
    end
    if #ids == 0 then
        return ids, seqs, {}
    end
    return ids, seqs, redis.call('HMGET', K.ws, unpack(ids))
end

-- Removes the waiters whose request ids are in ids (served, gone or
-- dead) from the queue and the waiters' hash.
local function rl_queue_drop(K, ids)
    if #ids > 0 then
        redis.call('ZREM', K.q, unpack(ids))
        redis.call('HDEL', K.ws, unpack(ids))
    end
end

-- The fencing token of the hand-off to the fair waiter whose request is
-- req, while that hand-off still stands, else nil. Its record is the ws
-- field '~' ("<req> <fence> <end ms>"; one at a time: a hand-off happens
-- only when the lock was freed, which ends the one before). It stands
-- while its lease lasts and the lock is the one handed: held by the
-- waiter's owner id (the caller checks) and, for a hash, still naming the
-- request (another handle of the same owner id may have taken the lock
-- since).
local function rl_handed(key, kind, ws, req, now)
    local rec = redis.call('HGET', ws, '~')
    if not rec then
        return nil
    end
    local who, fence, till = string.match(rec, '^(%S+) (%d+) (%d+)$')
    if who ~= req or tonumber(till) <= now or
            (kind == 'hash' and redis.call('HGET', key, 'req') ~= req) then
        return nil
    end
    return tonumber(fence)
end

-- A reentrant owner takes its lock again: one more hold, the lease at
-- least ttl (never shortened: another handle of the owner may count on
-- more), a new fencing token from the counter fence; req is the request
-- (see rl_create; last: as rl_count). gen is the hash's gen field, as
-- rl_holder read it. Returns {1, holds, fence, gen}, gen being the life of
-- the key the hold joined (rl_create; 0 for an older redislock's hash,
-- which has none).
local function rl_reenter(key, ttl, fence, req, last, gen)
    local holds = redis.call('HINCRBY', key, 'holds', 1)
    redis.call('HSET', key, 'req', req)
    rl_lengthen(key, ttl)
    return {1, holds, rl_fence(fence, ttl, last), tonumber(gen or '0')}
end

-- Wakes one ordinary waiter of the lock whose helpers K names, if any
-- waits (its marker, see acquire.lua): a 'wake' in the list they block on
-- (BLPOP), kept for as long as the marker. The list is K.wake, or with
-- list set that one: K.rwake, where the readers of a lock held shared
-- block (a release that lets only a writer in wakes no reader). A wake
-- nobody takes costs a later waiter one early attempt. The same word goes
-- to the channel of the list's name, for the waiters of an event loop,
-- which listen rather than block (alock.c); PUBLISH, which a cluster's
-- bus carries to every node. marker: the marker's PTTL when the caller
-- has read it. With said set, the word goes to the channel only: the
-- list's wake is left to the caller (rl_handoff's copied).
local function rl_wake(K, list, marker, said)
    marker = marker or redis.call('PTTL', K.waiting)
    list = list or K.wake
    if marker > 0 then
        if not said then
            if redis.call('LLEN', list) == 0 then
                redis.call('LPUSH', list, 'wake')
            end
            redis.call('PEXPIRE', list, marker)
        end
        redis.call('PUBLISH', list, 'wake')
    end
end

-- A key held by many at once is a sorted set: a member per share, its
-- token, scored by the end of its lease on the server's clock in ms, and
-- one member scored +inf, which no pruning by score touches and which
-- names the kind: RL_SEM_LIMIT .. N for a counting semaphore of limit N
-- (share_acquire.lua), RL_SHARED for a lock held shared (its readers).
-- The set lives as long as its longest lease, so one whose holders all
-- died vanishes, kind and all.
local RL_SEM_LIMIT = 'redislock:limit:'

local RL_SHARED = 'redislock:shared'

-- A lock held shared may also hold this member while an exclusive
-- request (a writer) waits for the readers to go, scored by the end of
-- that wait: until then no new reader gets in (see rl_share_writer).
local RL_WRITER = 'redislock:writer'

-- The member that names the kind of the set at key (see RL_SEM_LIMIT), or
-- nil when the set is not one of redislock's.
local function rl_share_kind(key)
    local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local n = #RL_SEM_LIMIT
    if top[1] and top[2] == 'inf' and (top[1] == RL_SHARED or
            string.sub(top[1], 1, n) == RL_SEM_LIMIT) then
        return top[1]
    end
    return nil
end

-- The answer to a set's attempt (set_acquire.lua, set_take.lua) when one
-- of its locks (S's; locks, their keys in order) is held, taking none:
-- {0, PTTL, wakes, i} for the first held, the i-th (1: the first), whose
-- waiting marker is then set (as acquire.lua's, mark: ARGV[5]) so that
-- its release wakes the caller, which waits behind that key (wakes:
-- rl_wakes). nil when every lock is free. j: the place of the key whose
-- wake list the caller waited on (nil: it did not), whose wake is passed
-- on (S then has the 'waiting' and 'wake' roles).
local function rl_set_held(S, locks, mark, j)
    -- One EXISTS tells a free set (the common case) from one where some
    -- key is held, which is then looked for key by key.
    if redis.call('EXISTS', unpack(locks)) == 0 then
        return nil
    end
    for i, lock in ipairs(locks) do
        if redis.call('EXISTS', lock) == 1 then
            local kind, holder = rl_holder(lock)
            local wakes = rl_wakes(kind, holder)
            -- Held by many (readers, permits): their releases wake it too.
            if kind == 'zset' and rl_share_kind(lock) then
                wakes = 1
            end
            local left = redis.call('PTTL', lock)
            rl_mark_waiting(rl_set_lock(S, i), left, mark, nil, true)
            -- Woken from the j-th key's list and refused by another: the
            -- wake it took was its fellow waiters' too, who sleep on
            -- behind that key, free now (the keys before the i-th are)
            -- and released by a script that woke once. It is passed on.
            if j and j ~= i and j >= 1 and j <= S.n and
                    (j < i or redis.call('EXISTS', locks[j]) == 0) then
                rl_wake({waiting = rl_set_key(S, j, 'waiting'),
                         wake = rl_set_key(S, j, 'wake')})
            end
            return {0, left, wakes, i}
        end
    end
    return nil
end

-- Takes a set whose locks (their keys) were all found free, for id and
-- ttl ms: one fencing token past each counter of fences (lasts: their
-- values as read, each checked before the first write; floor: ARGV[7],
-- the least token to give), written to all of them, and every lock set.
-- Returns the token, negated when waits (someone waits for one of the
-- keys and id is of the native prefix: set_free.lua, which wakes
-- nobody, must not release such a set, so its holder is told).
local function rl_set_grant(locks, id, ttl, fences, lasts, floor, waits)
    local fence = rl_count_all(fences, tonumber(ttl) + 1000, lasts,
                               tonumber(floor))
    rl_set_all(locks, id, ttl)
    if waits then
        return -fence
    end
    return fence
end

-- How long a writer whose wait stops new readers has to come once the
-- last share has gone: the release of that share woke it, and one that
-- died while it waited holds the readers up no longer.
local RL_WRITER_GRACE = 500

-- Drops the shares of the set at key whose leases ended by now (ms), and
-- a writer's wait that ended. Returns the number of shares still held and
-- the end of a writer's wait (nil: none). The key goes with its last
-- share, unless a writer waits: it then stays, holding no share, for the
-- writer to take, no longer than the writer's wait nor RL_WRITER_GRACE
-- (unless going is set: the caller deletes the key itself).
local function rl_share_prune(key, now, going)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    local writer = redis.call('ZSCORE', key, RL_WRITER)
    local held = redis.call('ZCARD', key) - 1
    if writer then
        writer, held = tonumber(writer), held - 1
    end
    if held > 0 then
        return held, writer
    elseif writer then
        if not going then
            if writer - now > RL_WRITER_GRACE then
                writer = now + RL_WRITER_GRACE
                redis.call('ZADD', key, 'XX', writer, RL_WRITER)
            end
            if redis.call('PTTL', key) > writer - now then
                redis.call('PEXPIRE', key, writer - now)
            end
        end
        return 0, writer
    end
    redis.call('DEL', key)
    return 0, nil
end

-- The ms until the last share of the set at key ends (its longest lease
-- left), not counting the kind's member nor a writer's record: how long a
-- writer waits at most for the readers to go. The key itself may live
-- longer, for a writer's record (rl_writer_wait). A key that is not a
-- lock held shared: its PTTL. shared: whether it is one, when the caller
-- knows (rl_share_writer's third answer; nil: read it here).
local function rl_shares_left(key, now, shared)
    if shared == nil then
        shared = rl_share_kind(key) == RL_SHARED
    end
    if not shared then
        return redis.call('PTTL', key)
    end
    local top = redis.call('ZREVRANGEBYSCORE', key, '(inf', '-inf',
                           'WITHSCORES', 'LIMIT', 0, 2)
    for i = 1, #top, 2 do
        if top[i] ~= RL_WRITER then
            return math.max(tonumber(top[i + 1]) - now, 0)
        end
    end
    return 0
end

-- A writer that will wait (mark ms, as rl_mark_waiting's) for the readers
-- of the lock K.lock, held shared by readers still in their leases,
-- records its wait, which stops new readers (writer preference) for no
-- longer than that wait nor, per attempt, than the readers' longest lease
-- and a second: a live writer tries again by then (it pauses no longer
-- than the lease), a dead one holds readers up no longer. The bound is
-- the shares' own leases (rl_shares_left), not the key's life, which an
-- earlier writer's record has lengthened: bounded by that, each refused
-- writer's attempt added a second to the record. The record is a member
-- of the set, so the set lives as long as it: a key that expired with its
-- last share's lease would take the record with it, and readers who came
-- before the writer's next attempt would get in (rl_share_prune shortens
-- the record to RL_WRITER_GRACE once it finds no share left).
local function rl_writer_wait(K, mark, now)
    mark = tonumber(mark)
    if mark > 0 then
        local left = rl_shares_left(K.lock, now, true)
        if left + 1000 < mark then
            mark = left + 1000
        end
        redis.call('ZADD', K.lock, 'GT', now + mark, RL_WRITER)
        rl_lengthen(K.lock, mark)
    end
end

-- An exclusive request meets a sorted set at K.lock. A lock held shared
-- whose readers have all gone is deleted, and true returned: the key is
-- free (the caller takes it, or, behind other waiters, is queued). Else,
-- on a lock held shared, the writer's wait is recorded (rl_writer_wait),
-- and false returned. Then whether a release wakes the caller (0 for a
-- set redislock did not write: it polls), never nil: it goes into the
-- caller's reply, which a nil would cut short (its place in the queue
-- with it, and a hand-off that names the place would go unheeded).
-- Third, whether the set is a lock held shared, for rl_shares_left.
local function rl_share_writer(K, mark)
    local kind = rl_share_kind(K.lock)
    if kind ~= RL_SHARED then
        return false, kind and 1 or 0, false
    end
    local now = rl_now_ms()
    if rl_share_prune(K.lock, now, true) == 0 then
        redis.call('DEL', K.lock)
        return true, 1, true
    end
    rl_writer_wait(K, mark, now)
    return false, 1, true
end

-- The kind of share asked for as share_acquire.lua's ARGV[3] (a limit,
-- or 'shared'): the member that names it (RL_SEM_LIMIT .. N, RL_SHARED)
-- and its limit (math.huge for readers).
local function rl_share_mine(arg)
    if arg == 'shared' then
        return RL_SHARED, math.huge
    end
    return RL_SEM_LIMIT .. arg, tonumber(arg)
end

-- What a fair waiter w (rl_waiter) waits for, by the format its entry
-- names: 'reader' a reader's share of a lock held shared, 'permit' a
-- semaphore's permit (its meta then the limit), any other the lock
-- itself. Returns rl_share_mine's answers, or nil for the lock.
local function rl_share_wants(w)
    if w.fmt == 'reader' then
        return rl_share_mine('shared')
    elseif w.fmt == 'permit' then
        return rl_share_mine(w.meta)
    end
    return nil
end

-- For a set's owner scripts (set_release.lua, set_extend.lua), before
-- any write: of the n keys given, held hold the token. A handle that
-- took the set has its keys, and a key gone from it was deleted under
-- it (its keys share one lease): the rest are its to free. One that
-- adopted the token (fence '': it took no fencing token) has its keys
-- from its caller, who may give another set's: a token that holds some
-- and not the others then stops the script with error RLSETKEYS.
local function rl_set_keys_match(held, n, fence)
    if fence == '' and held > 0 and held < n then
        error({err = 'RLSETKEYS the token holds some of the keys given ' ..
            'and not the others: they are not the set it was taken with'})
    end
end

-- The kind of share that marker names (see RL_SEM_LIMIT), in words for
-- a message: the caller's, not the key's names.
local function rl_share_kind_text(marker)
    if marker == RL_SHARED then
        return 'a shared lock'
    end
    return 'a semaphore of limit ' .. string.sub(marker, #RL_SEM_LIMIT + 1)
end

-- Room at the key for one more share of the kind mine (limit: at most
-- that many shares; math.huge for readers), judged at now (ms), the
-- expired shares dropped. Returns nil when there is room, else the ms to
-- wait (until the first lease ends, or a waiting writer's wait, or the
-- PTTL of a key of another kind) and whether a release will wake the
-- caller (rl_wakes); then the shares held and the key's kind ('none'
-- once the last share has gone), and the key's whole value when it is a
-- string (rl_holder's fourth answer, for rl_mark_holder; false for any
-- other kind). A key that is a semaphore of another limit, or a lock
-- held shared when a permit is asked for (or the other way round), stops
-- the script with error RLLIMIT (before any write).
local function rl_share_room(key, mine, limit, now)
    local kind, holder, _, raw = rl_holder(key)
    if kind == 'none' then
        return nil, 1, 0, kind, false
    elseif kind ~= 'zset' then
        return redis.call('PTTL', key), rl_wakes(kind, holder), 0, kind,
            kind == 'string' and raw
    end
    local marker = rl_share_kind(key)
    if marker == nil then
        return redis.call('PTTL', key), 0, 0, kind, false
    elseif marker ~= mine then
        error({err = 'RLLIMIT the key is in use as ' ..
            rl_share_kind_text(marker) .. ' and this call asked for ' ..
            rl_share_kind_text(mine)})
    end
    local held, writer = rl_share_prune(key, now)
    if writer then
        -- A writer waits: no new reader until it has had the key, or its
        -- wait has ended (see rl_share_prune).
        return writer - now, 1, held, kind, false
    elseif held >= limit then
        local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
        return tonumber(first[2]) - now, 1, held, kind, false
    elseif held == 0 then
        kind = 'none' -- the prune took the key
    end
    return nil, 1, held, kind, false
end

-- Adds the share id to the key (kind: 'none' or 'zset', as rl_share_room
-- says) with a lease of ttl ms from now (ms), mine naming the kind of a
-- new set. The key lives as long as its longest lease, never shorter.
local function rl_share_add(key, kind, mine, id, ttl, now)
    if kind == 'none' then
        redis.call('ZADD', key, 'inf', mine, now + ttl, id)
        redis.call('PEXPIRE', key, ttl)
    else
        redis.call('ZADD', key, now + ttl, id)
        rl_lengthen(key, ttl)
    end
end

-- The fencing token of the share handed to the fair waiter whose request
-- is req and token id, while it stands (its lease lasts), else nil. Its
-- record is the ws field '~' .. req ("<fence> <end ms>"): several shares
-- may be handed at once, one record each. A record that no longer stands
-- is dropped.
local function rl_share_handed(K, req, id, now)
    local rec = redis.call('HGET', K.ws, '~' .. req)
    if not rec then
        return nil
    end
    local fence, till = string.match(rec, '^(%d+) (%d+)$')
    local score = redis.call('ZSCORE', K.lock, id)
    if not fence or tonumber(till) <= now or not score or
            tonumber(score) <= now then
        redis.call('HDEL', K.ws, '~' .. req)
        return nil
    end
    return tonumber(fence)
end

-- What the key K.lock holds, for the hand-offs of one release (rl_hand
-- keeps it current): kind 'none' (free), 'zset' (shares of the kind mine,
-- held of them live: none left is dealt with by rl_hand; writer the end
-- of a waiting writer's wait, if one waits) or 'other' (held alone, or
-- not redislock's). A caller that knows says so instead: a release that
-- freed the key passes {kind = 'none', held = 0}.
local function rl_room_of(K, now)
    local t = redis.call('TYPE', K.lock).ok
    local mine = t == 'zset' and rl_share_kind(K.lock)
    if t == 'none' then
        return {kind = 'none', held = 0}
    elseif not mine then
        return {kind = 'other', held = 0}
    end
    local held, writer = rl_share_prune(K.lock, now)
    return {kind = 'zset', mine = mine, held = held, writer = writer}
end

-- Grants the live fair waiter w (request head) what it waits for, if the
-- key (as st says, see rl_room_of) has room for it now (ms): the lock
-- when the key is free, a share when it is free or holds shares of the
-- same kind with room, unless a writer waits for the readers to go (st's
-- writer: its wait stops new readers, those handed a share from the
-- queue as well as those that ask). The lease lasts no longer than the
-- waiter's alive time would have: a waiter that died just before cannot
-- hold the key for longer than that; a live one extends it to its TTL at
-- once. last: the fencing counter's value (as rl_count). Returns the
-- fencing token and the lease, or nil.
local function rl_hand(K, st, w, head, now, last)
    local lease = math.min(w.ttl, w.alive - now)
    local mine, limit = rl_share_wants(w)
    local fence
    if st.writer and mine == RL_SHARED then
        -- The reader keeps its place: the writer's release hands it a
        -- share, or its next attempt takes one once the wait has ended.
        return nil
    end
    if st.kind == 'zset' and st.held == 0 then
        -- Only a waiting writer's record is left of the set.
        redis.call('DEL', K.lock)
        st.kind, st.mine, st.writer = 'none', nil, nil
    end
    if st.stale and (mine ~= nil or w.fmt ~= 'plain') then
        -- The releaser's plain lock is still there (rl_handoff).
        redis.call('DEL', K.lock)
        st.stale = nil
    end
    if mine == nil then
        if st.kind ~= 'none' then
            -- Readers hold the key: the writer's wait stops new readers,
            -- as its own attempt would record (rl_share_writer, whose
            -- reads st has already made: this script read or made it).
            if st.mine == RL_SHARED then
                rl_writer_wait(K, w.alive - now, now)
            end
            return nil
        end
        fence = rl_create(K.lock, w.owner, lease, w.fmt, w.meta, K.fence,
                          head, last)
        st.stale = nil
        redis.call('HSET', K.ws, '~',
                   string.format('%s %d %d', head, fence, now + lease))
        st.kind = 'other'
    else
        if st.kind == 'other' or (st.kind == 'zset' and
                (st.mine ~= mine or st.held >= limit)) then
            return nil
        end
        rl_share_add(K.lock, st.kind, mine, w.owner, lease, now)
        fence = rl_fence(K.fence, lease, last)
        redis.call('HSET', K.ws, '~' .. head,
                   string.format('%d %d', fence, now + lease))
        st.kind, st.mine, st.held = 'zset', mine, st.held + 1
    end
    return fence, lease
end

-- After the key K.lock was freed, or a share of it given back: hands it
-- to the longest-waiting live fair waiters it has room for, in the order
-- they came (a lock's waiter takes the free key alone; the readers or
-- permit holders at the head of the queue take a share each, as many as
-- there is room for, up to the first waiter that must wait), or else
-- wakes one ordinary waiter and one reader. K names the helpers (fence,
-- q, ws, waiting, wake, rwake; all in the lock's cluster slot); st what
-- the key holds now (rl_room_of; nil: read it here). Waiters whose alive
-- time has passed are dead and dropped; a call handles a bounded number
-- of waiters, read RL_HAND_FIRST first (a lock or a single permit goes
-- to the first live one, and the head of the queue is most often live;
-- reading four first made a fair hand-off 6 % slower) and then
-- RL_HAND_BATCH at a time. Each waiter is told on its channel (a
-- channel is not a key): "handoff <request id> <seq> <fence>
-- <lease ms>", seq being its place in the queue, which its last attempt
-- returned: a message for an older place (a lease it missed while it was
-- stopped) does not match. One that was not listening finds the record
-- (rl_handed, rl_share_handed) with its next attempt. With quiet set,
-- nobody is woken (the key has no room for anyone but the queue's
-- readers). queued: the caller has seen that the queue exists.
-- copied: the caller sends COPY <wake> <rwake> right behind the script,
-- in the same write (release.lua's ARGV[5]): the readers' list is then
-- not pushed here. A writer blocked on K.wake takes the wake as soon as
-- the script ends, before the COPY runs (Redis serves blocked clients
-- after each command), and the attempt behind its BLPOP takes the key:
-- the readers would only have been woken to be refused, the writer's
-- attempt running first. With no writer blocked the wake is still in
-- K.wake, and the COPY gives it to the readers' list (when that has
-- none already: then no reader is blocked), which wakes one. Not while
-- a set's waiter may be the one woken (its mark, see rl_mark_waiting).
-- counter: the fencing counter's value when the caller has read it
-- (false: there is none; nil: read here, once someone is queued). With
-- st.stale the key still holds the caller's plain lock, which a lock
-- handed to a plain waiter overwrites (SET), and which is deleted before
-- anything else is made of the key, or when nobody is handed it.
local RL_HAND_FIRST = 1
local RL_HAND_BATCH = 16
local function rl_handoff(K, quiet, st, queued, copied, counter)
    local last, tries, batch = counter, 64, RL_HAND_FIRST
    local now, handed, empty, marker = nil, false, false, nil
    if not queued then
        -- Nobody waits: the common release stops here.
        local n = redis.call('EXISTS', K.q, K.waiting)
        if n == 0 then
            return false
        elseif n == 1 then
            -- One of the two. When it is the marker, nobody is queued:
            -- the ordinary waiters are woken without a read of the queue.
            marker = redis.call('PTTL', K.waiting)
            if marker ~= -2 then
                tries, empty = 0, true
            end
        end
    end
    while tries > 0 do
        local ids, seqs, ws = rl_queue_head(K, batch)
        local done, stop = {}, false
        if #ids == 0 then
            empty = true
            break
        end
        if not now then
            -- A fencing counter redislock did not write gives no token:
            -- no hand-off then (the release itself stands), and the
            -- waiters meet the error with their next attempts. Read only
            -- when someone is queued: ordinary waiters need no token.
            if counter == nil then
                last = redis.call('GET', K.fence)
            end
            if last then
                last = rl_counter_num(last)
                if not last then
                    break
                end
            end
            now = rl_now_ms()
        end
        st = st or rl_room_of(K, now)
        for i, head in ipairs(ids) do
            local w, fence, lease = rl_waiter(ws[i]), nil, nil
            tries = tries - 1
            if w and w.alive > now then
                fence, lease = rl_hand(K, st, w, head, now, last)
                if not fence then
                    stop = true
                    break
                end
                last = fence
                handed = true
                redis.call(w.publish, w.chan,
                           string.format('handoff %s %d %d %d', head,
                                         tonumber(seqs[i]),
                                         fence, lease))
            end
            done[#done + 1] = head
            -- A lock handed (st 'other') takes the key alone.
            if (fence and st.kind == 'other') or tries == 0 then
                stop = true
                break
            end
        end
        -- The waiters served or dead leave the queue.
        rl_queue_drop(K, done)
        if stop then
            break
        end
        empty = #ids < batch
        if empty then
            break
        end
        batch = RL_HAND_BATCH
    end
    if st and st.stale then
        redis.call('DEL', K.lock)
        st.stale = nil
    end
    -- The records written (rl_hand) need no longer life for ws: each
    -- lease ends by its waiter's alive time, which ws outlives since the
    -- waiter's last attempt (rl_queue; nothing shortens ws, and it held
    -- the waiter's entry until just now).
    -- The ordinary waiters, when no fair one got in or none is left.
    if not quiet and (not handed or empty) then
        marker = marker or redis.call('PTTL', K.waiting)
        if copied and marker > 0 and redis.call('GET', K.waiting) == 's' then
            copied = false
        end
        rl_wake(K, nil, marker)
        rl_wake(K, K.rwake, marker, copied)
    end
    return handed
end

-- Gives back the share id of the set K.lock (a permit, a reader's share;
-- K: rl_handoff's helpers too). The room it leaves goes to the fair
-- waiters at the head of the queue (rl_handoff), or wakes an ordinary
-- waiter: a permit given back wakes one; the last reader's release wakes
-- a writer (no reader waits for a reader to go). Returns 1, or 0 when the
-- share is gone or its lease has ended: never reported as released, even
-- before an acquire dropped it. score: the share's score when the caller
-- has read it.
-- The common release, the last share's with nobody waiting, stops after
-- the ZCARD: with no queue, no hand-off record and no waiting marker
-- there is nobody to hand to or wake, and a set of ours left with one
-- member holds the kind's alone (a writer's record is written only
-- beside it, and nothing but the key's end takes it): the key goes.
local function rl_share_release(K, id, score)
    score = score or redis.call('ZSCORE', K.lock, id)
    local now = rl_now_ms()
    if not score then
        return 0
    end
    local kept = tonumber(score) > now and 1 or 0
    redis.call('ZREM', K.lock, id)
    local others = redis.call('EXISTS', K.q, K.ws, K.waiting)
    if others == 0 and redis.call('ZCARD', K.lock) == 1 then
        redis.call('DEL', K.lock)
        return kept
    end
    local kind = rl_share_kind(K.lock)
    local queued = false
    if others > 0 then
        -- A share's request id is its token: the record of a hand-off to
        -- it (rl_share_handed) goes with it.
        redis.call('HDEL', K.ws, '~' .. id)
        queued = redis.call('EXISTS', K.q) == 1
    end
    local held, writer = rl_share_prune(K.lock, now)
    local readers_left = held > 0 and kind == RL_SHARED
    if queued then
        -- A writer's wait keeps the key with its last share gone (the
        -- prune took it otherwise): the queue's readers stay out.
        local st = {kind = 'zset', mine = kind, held = held, writer = writer}
        if held == 0 and not writer then
            st = {kind = 'none', held = 0}
        end
        rl_handoff(K, readers_left, st, true)
    elseif not readers_left and others > 0 then
        rl_wake(K)
    end
    return kept
end

-- Lengthens the lease of the share id of the set at key to at least ttl
-- ms from now, never shortening it, and the key's life with it; a share
-- whose lease has ended is not brought back. Returns 1, or 0 when it is
-- gone or ended.
local function rl_share_extend(key, id, ttl)
    local score = redis.call('ZSCORE', key, id)
    local now = rl_now_ms()
    ttl = tonumber(ttl)
    if not score or tonumber(score) <= now then
        return 0
    end
    if now + ttl > tonumber(score) then
        redis.call('ZADD', key, 'XX', now + ttl, id)
    end
    rl_lengthen(key, ttl)
    return 1
end

-- Compare-and-lengthen of one lock (extend.lua, and each of renew.lua's):
-- id the token or owner id, ttl in ms (never shortened: rl_lengthen), fmt
-- 'h' the hash format (a guess for rl_holder), 'z' a share, else plain,
-- fence the holder's last fencing token for rl_ours. Returns 1 extended,
-- {1, reason} extended but revoked (revoke.lua), 0 gone (expired, free),
-- -1 another owner's. A key that has gone is never re-created.
local function rl_extend(key, id, ttl, fmt, fence)
    local kind, holder, gen, raw = rl_holder(key, fmt ~= 'h' and fmt ~= 'z')
    if kind == 'zset' then
        -- A share (share_acquire.lua).
        return rl_share_extend(key, id, ttl)
    elseif kind == 'none' then
        return 0
    elseif holder ~= id then
        return -1
    elseif kind == 'hash' and not rl_ours(gen, fence) then
        return 0
    end
    rl_lengthen(key, ttl)
    -- Revoked: lengthened all the same (the holder decides when to give
    -- the lock up), and told why.
    local why = rl_revoked(kind, raw)
    if why then
        return {1, why}
    end
    return 1
end

-- Compare-and-lengthen of a set's keys locks (set_acquire.lua): only
-- while every key holds token is each lease set to at least ttl ms from
-- now (rl_lengthen: never shortened); a set that lost a key is lost
-- whole. fence as rl_set_keys_match's. Returns 1 extended, 0 some key
-- gone, -1 some key another owner's (then nothing is lengthened).
local function rl_set_extend(locks, token, ttl, fence)
    local _, res, held = rl_set_read(locks, token)
    rl_set_keys_match(held, #locks, fence)
    if res == 1 then
        for _, lock in ipairs(locks) do
            rl_lengthen(lock, ttl)
        end
    end
    return res
end
