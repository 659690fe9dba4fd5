-- A fair (FIFO) waiter's attempt, also its heartbeat.
-- KEYS[1] the lock. ARGV[1] token or owner id, ARGV[2] TTL in ms,
-- ARGV[3] format, ARGV[4] metadata, ARGV[5] alive window in ms (the
-- waiter counts as dead when it has not been heard from for that long),
-- ARGV[6] helper base, ARGV[7] the request's own id (see acquire.lua).
-- Returns {1, 1, fence} when the caller holds the lock (taken now, or
-- handed to it by a release), {0, PTTL, wakes} when it is queued (wakes:
-- see acquire.lua).
local key, id, base, req = KEYS[1], ARGV[1], ARGV[6], ARGV[7]
local q, alive, own = base .. 'q', base .. 'w:' .. id, base .. 'h:' .. id
-- A request its sender gave up on (see abandon.lua) takes nothing.
if redis.call('EXISTS', base .. 'void:' .. req) == 1 then
    return {0, -2}
end
-- Nobody queued and a plain lock: the common case, as cheap as unfair.
if ARGV[3] == 'plain' and redis.call('EXISTS', q) == 0 and
        redis.call('SET', key, id, 'NX', 'PX', ARGV[2]) then
    return {1, 1, rl_fence(base, ARGV[2])}
end
local kind, holder = rl_holder(key)
if holder == id then
    -- Handed over already (its message still waits in the caller's own
    -- list): the hand-off issued the last fencing token. Its lease ran
    -- from the hand-off and may be shorter than the TTL: make it the TTL
    -- from now, which is what the caller counts from this request.
    -- Otherwise the caller holds it already: a reentrant lock is taken
    -- again, any other is held (by the same owner id, but held).
    local fence = rl_handed(base, id)
    if fence then
        rl_lengthen(key, ARGV[2])
        if kind == 'hash' then
            redis.call('HSET', key, 'req', req)
        end
        redis.call('ZREM', q, id)
        redis.call('DEL', alive, own)
        return {1, 1, fence}
    end
    if ARGV[3] == 'reentrant' and kind == 'hash' then
        return rl_reenter(key, ARGV[2], base, req)
    end
    return {0, redis.call('PTTL', key), 1}
end
-- Not the caller's: a hand-off message still in its list is for a lease it
-- missed, and must not be taken for one by its next wait.
rl_drop_handoffs(base, id)
if kind == 'none' then
    -- Free: drop dead waiters ahead (bounded), then take it unless a live
    -- waiter came first.
    local head
    for _ = 1, 16 do
        head = redis.call('ZRANGE', q, 0, 0)[1]
        if head == nil or head == id or
                redis.call('EXISTS', base .. 'w:' .. head) == 1 then
            break
        end
        redis.call('ZREM', q, head)
    end
    if head == nil or head == id then
        redis.call('ZREM', q, id)
        redis.call('DEL', alive)
        return {1, 1,
                rl_create(key, id, ARGV[2], ARGV[3], ARGV[4], base, req)}
    end
end
if not redis.call('ZSCORE', q, id) then
    redis.call('ZADD', q, redis.call('INCR', base .. 'seq'), id)
end
redis.call('SET', alive, ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4],
           'PX', ARGV[5])
redis.call('PEXPIRE', q, ARGV[5])
redis.call('PEXPIRE', base .. 'seq', ARGV[5])
return {0, redis.call('PTTL', key), rl_wakes(kind, holder)}
