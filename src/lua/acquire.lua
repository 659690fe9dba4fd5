-- Acquire for any format, with the waiting marker.
-- KEYS: the lock, its fencing counter, its waiting marker, and the void
-- marker of this request (see abandon.lua). ARGV[1] token or owner id,
-- ARGV[2] TTL in ms, ARGV[3] format: 'plain', 'hash' or 'reentrant' (a
-- hash its owner may take again), ARGV[4] metadata ('' for none), ARGV[5]
-- the most the caller will wait in ms ('0': it will not, so no marker),
-- ARGV[6] the request's own id (a plain lock's token is one already).
-- Returns {1, holds, fence, gen} when taken (gen: the life of the key the
-- hold is in, see rl_create and rl_reenter); a plain lock, which has no
-- gen and one hold, answers its fence alone, as a number: -fence when it
-- was taken while someone waits (its value then carries no waiter's mark,
-- so its holder must release it by release.lua, which wakes them, not by
-- a native compare). {0, PTTL, wakes} when another owner holds it (or
-- readers do: see rl_share_writer), wakes being 0 when its release will
-- not wake waiters (rl_wakes).
local K = rl_keys('lock fence waiting void')
local key, id, fmt = K.lock, ARGV[1], ARGV[3]
local last, waiting = rl_request_last(K, K.waiting)
if last == nil then
    return {0, -2}
end
local kind, holder, gen, raw, shared
if fmt == 'plain' then
    -- The common case in one call: taken, or held by someone (most
    -- likely by another plain lock: rl_holder's guess).
    -- Its answer is the fencing token alone, negated when someone waits:
    -- the server turns a number into a reply for a fifth of what a table
    -- costs it (callgrind), and this is the acquire most calls make.
    if redis.call('SET', key, id, 'NX', 'PX', ARGV[2]) then
        local fence = rl_fence(K.fence, ARGV[2], last)
        if waiting then
            return -fence
        end
        return fence
    end
    kind, holder, gen, raw = rl_holder(key, true)
else
    kind, holder, gen, raw = rl_holder(key)
    if kind == 'none' then
        local fence = rl_create(key, id, ARGV[2], fmt, ARGV[4], K.fence,
                                ARGV[6], last)
        return {1, 1, fence, fence}
    end
    if fmt == 'reentrant' and kind == 'hash' and holder == id then
        return rl_reenter(key, ARGV[2], K.fence, ARGV[6], last, gen)
    end
end
local wakes = rl_wakes(kind, holder)
if kind == 'zset' then
    -- Held by many: a lock held shared whose readers have gone is taken;
    -- else this writer's wait stops new readers (rl_share_writer).
    local free
    free, wakes, shared = rl_share_writer(K, ARGV[5])
    if free then
        local fence = rl_create(key, id, ARGV[2], fmt, ARGV[4], K.fence,
                                ARGV[6], last)
        return {1, 1, fence, fence}
    end
end
-- Readers: until the last share ends (the set may live longer, for a
-- writer's record).
local ttl = kind == 'zset' and rl_shares_left(key, rl_now_ms(), shared) or
    redis.call('PTTL', key)
-- The value read above names the holder to mark, if any (a string's;
-- nil for a hold-after reservation, read again).
rl_mark_waiting(K, ttl, ARGV[5], kind == 'string' and raw)
return {0, ttl, wakes}
