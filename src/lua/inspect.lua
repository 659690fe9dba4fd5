-- What anyone may read of a key, and whether it is a lock (never a plain
-- lock's token: whoever knows it can release the lock). KEYS: the key, its
-- fair queue q and waiters' hash ws (fair.lua's).
-- Returns {type, PTTL, owner, holds, meta, fence, kind, limit, ttls,
-- waiters, queued, revoked}:
-- owner, holds and meta of a redislock hash lock; holds '1' for
-- redislock's own plain lock and nil when the count is not known (another
-- library's lock); the fencing token this life of a redislock hash lock
-- began with (its gen, see rl_create), 0 for the other kinds, whose keys
-- keep none (the counter that issues them is their namespace's, see
-- rl__fence_name); kind 0 for a lock (or no key), 1 for a hold-after
-- reservation, 2 for a key that is not a lock, 3 for a semaphore, 4 for a
-- lock held shared (include/redislock.h's REDISLOCK_KIND_*); a
-- semaphore's limit is the eighth element (0 for the other kinds), and the
-- live shares (permits, readers) of both are their holds; ttls lists the
-- time left of the first RL_TTLS_SHOWN of those shares' leases in ms,
-- shortest first (never their tokens), and is empty for other kinds;
-- waiters and queued are the fair queue's (see queue below), for a key of
-- any kind; revoked, the reason a lock's holder was asked to give it up
-- with (revoke.lua: '' for none given), false when it was not.

-- include/redislock.h's REDISLOCK_INFO_TTLS_MAX.
local RL_TTLS_SHOWN = 100

-- Whether a string value looks like a lock token: 8 to 128 bytes of the
-- characters random tokens are written in (hex, uuid, base64, base64url,
-- "host:pid:..." ids), with a digit or both cases, as random text of that
-- length almost always has. Counters, words and snake_case states, JSON
-- and other cached values do not.
local function token_like(v)
    if #v < 8 or #v > 128 or string.find(v, '[^%w_.:+/=%-]') or
            not string.find(v, '%D') then
        return false
    end
    return string.find(v, '%d') ~= nil or
           (string.find(v, '%u') ~= nil and string.find(v, '%l') ~= nil)
end

-- include/redislock.h's REDISLOCK_INFO_WAITERS_MAX, and how many places
-- of the queue are read to find them: dead waiters linger in it until an
-- attempt or a hand-off drops them, and the read stays bounded however
-- many there are.
local RL_WAITERS_SHOWN = 100
local RL_WAITERS_READ = 2 * RL_WAITERS_SHOWN

local K = rl_keys('lock q ws')

-- The fair queue's live waiters (rl_queue), in order: a flat list {owner,
-- waited ms, ...} of the first RL_WAITERS_SHOWN of them, waited ms being
-- the time since it took its place (its seq, the server's clock in us
-- then, or a little past it), and how many wait: exact when the places
-- read hold the whole queue, else the live ones read and every place not
-- read. owner is the waiter's owner id, or false when its entry holds a
-- token instead (a plain lock's waiter, a share's): whoever knows a token
-- can release what it holds, so it never leaves the script. A place whose
-- entry is gone, or whose alive time has passed, is a dead waiter's.
local function queue()
    local n = redis.call('ZCARD', K.q)
    if n == 0 then
        return {}, 0
    end
    local ids, seqs, ws = rl_queue_head(K, RL_WAITERS_READ)
    local now_us = rl_now_us()
    local now = rl_now_ms()
    local out, live = {}, 0
    for i = 1, #ids do
        local w = rl_waiter(ws[i])
        if w and w.alive > now then
            live = live + 1
            if live <= RL_WAITERS_SHOWN then
                local owner = false
                if w.fmt == 'hash' or w.fmt == 'reentrant' then
                    owner = w.owner
                end
                out[#out + 1] = owner
                out[#out + 1] = math.max(0, math.floor(
                    (now_us - tonumber(seqs[i])) / 1000))
            end
        end
    end
    return out, live + n - #ids
end

local key = K.lock
local t = redis.call('TYPE', key).ok
local ttl = redis.call('PTTL', key)
local fence = 0
local f = {false, false, false}
local kind = 2
local revoked = false
if t == 'none' then
    kind = 0
elseif t == 'hash' then
    f = redis.call('HMGET', key, 'owner', 'holds', 'meta', 'gen', 'revoked')
    if f[1] then
        kind = 0
        fence = tonumber(f[4]) or 0
        revoked = rl_revoked(t, f[5]) or false
    end
-- STRLEN first: a large cached value is never copied into the script
-- (a revoked lock's value is its token and a reason of at most 64 bytes).
elseif t == 'string' and redis.call('STRLEN', key) <= 128 then
    local raw = redis.call('GET', key)
    local v = rl_unmark(raw)
    revoked = rl_revoked(t, raw) or false
    if v == 'redislock:hold-after' then
        kind, f[2] = 1, '1'
    elseif token_like(v) then
        kind = 0
        -- redislock's own plain lock: its holder has one hold.
        if rl_our_token(v, true) then
            f[2] = '1'
        end
    end
end
local limit, ttls = 0, {}
if t == 'zset' then
    -- Held by many (share_acquire.lua): a semaphore or a lock held shared,
    -- whose live shares count as holds (a waiting writer's record is not
    -- one).
    local marker = rl_share_kind(key)
    if marker then
        local now = rl_now_ms()
        kind, f[2] = 4, redis.call('ZCOUNT', key, '(' .. now, '+inf') - 1
        if marker ~= RL_SHARED then
            kind, limit = 3, tonumber(string.sub(marker, #RL_SEM_LIMIT + 1))
        else
            local w = redis.call('ZSCORE', key, RL_WRITER)
            if w and tonumber(w) > now then
                f[2] = f[2] - 1
            end
        end
        f[2] = tostring(f[2])
        -- The entries that are not shares are named redislock:...; the
        -- kind's, scored +inf, comes last, a writer's anywhere.
        local live = redis.call('ZRANGE', key, '(' .. now, '+inf', 'BYSCORE',
                                'LIMIT', 0, RL_TTLS_SHOWN + 2, 'WITHSCORES')
        for i = 1, #live, 2 do
            if #ttls < RL_TTLS_SHOWN and
                    string.sub(live[i], 1, 10) ~= 'redislock:' then
                ttls[#ttls + 1] = tonumber(live[i + 1]) - now
            end
        end
    end
end
if kind == 2 then
    f, fence = {false, false, false}, 0
end
if kind ~= 0 then
    revoked = false
end
local waiters, queued = queue()
return {t, ttl, f[1], f[2], f[3], fence, kind, limit, ttls, waiters, queued,
        revoked}
