-- One permit of a counting semaphore: at most ARGV[3] holders of the key
-- at once, each with a lease of its own. The key is a sorted set (see
-- RL_SEM_LIMIT in lib.lua) that lives as long as its longest lease, so a
-- semaphore whose holders all died vanishes, limit and all, and a key that
-- exists is held, for other libraries too (their SET NX fails). Leases are
-- judged on the server's clock only.
-- KEYS: the key, its fencing counter, its waiting marker, and the void
-- marker of this request (see abandon.lua). ARGV as acquire.lua's, but
-- for the limit in the format's place: ARGV[1] the permit's token,
-- ARGV[2] TTL in ms, ARGV[3] the limit, ARGV[5] the most the caller will
-- wait in ms ('0': it will not, so no marker); ARGV[4] and ARGV[6] unused
-- (a permit has no metadata; its token is its request's id).
-- Returns {1, 1, fence} when a permit was taken; {0, ms, wakes} when all
-- are held (ms until the first lease ends) or the key is held by a lock of
-- another kind (its PTTL; wakes 0: no release of it wakes us); error
-- RLLIMIT when the semaphore was set up with another limit.
local K = rl_keys('lock fence waiting void')
local key, id = K.lock, ARGV[1]
local ttl, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local last = rl_request_last(K)
if last == nil then
    return {0, -2}
end
local kind = redis.call('TYPE', key).ok
local now = rl_now_ms()
local wait, wakes = nil, 1
if kind == 'zset' then
    local n = rl_sem_limit(key)
    if n == nil then
        wait, wakes = redis.call('PTTL', key), 0
    elseif n ~= limit then
        return redis.error_reply('RLLIMIT ' .. key .. ' allows ' .. n ..
                                 ' holders at once')
    else
        local held = rl_sem_prune(key, now)
        if held >= limit then
            local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
            wait = tonumber(first[2]) - now
        elseif held == 0 then
            kind = 'none' -- the prune took the key
        end
    end
elseif kind ~= 'none' then
    wait, wakes = redis.call('PTTL', key), 0
end
if wait == nil then
    -- The key lives as long as its longest lease, never shorter.
    if kind == 'none' then
        redis.call('ZADD', key, 'inf', RL_SEM_LIMIT .. limit, now + ttl, id)
        redis.call('PEXPIRE', key, ttl)
    else
        redis.call('ZADD', key, now + ttl, id)
        rl_lengthen(key, ttl)
    end
    return {1, 1, rl_fence(K.fence, ttl, last)}
end
rl_mark_waiting(K, wait, ARGV[5])
return {0, wait, wakes}
