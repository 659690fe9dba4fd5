-- One share of a key held by many at once, each share with a lease of its
-- own: a permit of a counting semaphore (at most ARGV[3] holders), or with
-- ARGV[3] 'shared' a reader's share of a lock held shared (any number of
-- readers, while no exclusive holder has the key and none waits for it).
-- The key is a sorted set (see RL_SEM_LIMIT in lib.lua), so a key that
-- exists is held, for other libraries too (their SET NX fails). Leases are
-- judged on the server's clock only.
-- KEYS: the key, its fencing counter, its waiting marker, its wake lists
-- (writers' and permits' waiters, readers'), and the void marker of this
-- request (see abandon.lua). ARGV as acquire.lua's, but for the limit in
-- the format's place: ARGV[1] the share's token, ARGV[2] TTL in ms,
-- ARGV[3] the limit or 'shared', ARGV[5] the most the caller will wait in
-- ms ('0': it will not, so no marker); ARGV[4] and ARGV[6] unused (a
-- share has no metadata; its token is its request's id).
-- Returns {1, 1, fence} when a share was taken; {0, ms, wakes} when it
-- cannot be yet (ms until the first lease ends, or the waiting writer's
-- wait, or another kind's PTTL; wakes as acquire.lua's); error RLLIMIT
-- when the key is a semaphore of another limit or a lock of the other of
-- the two kinds.
local K = rl_keys('lock fence waiting wake rwake void')
local RL_WRITER_GRACE = 500
local key, id, ttl = K.lock, ARGV[1], tonumber(ARGV[2])
local mine, limit = RL_SHARED, math.huge
if ARGV[3] ~= 'shared' then
    mine, limit = RL_SEM_LIMIT .. ARGV[3], tonumber(ARGV[3])
end
local last = rl_request_last(K)
if last == nil then
    return {0, -2}
end
local kind, holder = rl_holder(key)
local now = rl_now_ms()
local wait, wakes, held = nil, 1, 0
if kind == 'zset' then
    local marker = rl_share_kind(key)
    if marker == nil then
        wait, wakes = redis.call('PTTL', key), 0
    elseif marker ~= mine then
        return redis.error_reply('RLLIMIT ' .. key .. (marker == RL_SHARED
            and ' is a lock held shared' or ' allows ' ..
            string.sub(marker, #RL_SEM_LIMIT + 1) .. ' holders at once'))
    else
        local writer
        held, writer = rl_share_prune(key, now)
        if writer then
            -- A writer waits: no new reader until it has had the key.
            wait = writer - now
            if held == 0 and wait > RL_WRITER_GRACE then
                -- The last reader has gone, and its release woke the
                -- writer: it has RL_WRITER_GRACE ms more to come (one that
                -- died while it waited holds the readers up no longer).
                wait = RL_WRITER_GRACE
                redis.call('ZADD', key, 'XX', now + wait, RL_WRITER)
                redis.call('PEXPIRE', key, wait)
            end
        elseif held >= limit then
            local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
            wait = tonumber(first[2]) - now
        elseif held == 0 then
            kind = 'none' -- the prune took the key
        end
    end
elseif kind ~= 'none' then
    wait, wakes = redis.call('PTTL', key), rl_wakes(kind, holder)
end
if wait == nil then
    -- The key lives as long as its longest lease, never shorter.
    if kind == 'none' then
        redis.call('ZADD', key, 'inf', mine, now + ttl, id)
        redis.call('PEXPIRE', key, ttl)
    else
        redis.call('ZADD', key, now + ttl, id)
        rl_lengthen(key, ttl)
    end
    -- Room is left: the next waiter may get in too (a release wakes one):
    -- for a lock held shared, the next reader.
    if held + 1 < limit then
        rl_wake(K, ARGV[3] == 'shared' and K.rwake or K.wake)
    end
    return {1, 1, rl_fence(K.fence, ttl, last)}
end
rl_mark_waiting(K, wait, ARGV[5])
return {0, wait, wakes}
