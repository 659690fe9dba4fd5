-- A fair (FIFO) waiter's attempt, also its heartbeat.
-- KEYS: the lock, its fencing counter, the queue q (request ids by
-- arrival), the waiters' hash ws (see rl_waiter_entry), the queue's
-- sequence, this request's void marker. ARGV[1] token or owner id, ARGV[2]
-- TTL in ms, ARGV[3] format, ARGV[4] metadata, ARGV[5] alive window in ms
-- (the waiter counts as dead when it has not been heard from for that
-- long), ARGV[6] the request's own id (see acquire.lua), which is its
-- place in the queue, ARGV[7] the channel it listens on for a hand-off,
-- ARGV[8] 'S' when that is a shard channel (SPUBLISH, in a cluster), else
-- 'P'.
-- Returns {1, holds, fence, gen} when the caller holds the lock (taken now,
-- or handed to it by a release; gen as in acquire.lua), {0, PTTL, wakes,
-- seq} when it is queued (wakes: see acquire.lua; seq its place, which a
-- hand-off message names, 0 when it has none).
local K = rl_keys('lock fence q ws seq void')
local key, id, ttl, fmt, req = K.lock, ARGV[1], ARGV[2], ARGV[3], ARGV[6]

-- The request at the queue's head once the dead waiters ahead of req are
-- dropped: req itself when none is left ahead of it; nil when 16 were
-- dropped and more may be ahead (later attempts and hand-offs drop them).
local function live_head(now)
    for _ = 1, 16 do
        local head = redis.call('ZRANGE', K.q, 0, 0)[1]
        if head == nil or head == req then
            return req
        end
        local w = rl_waiter(redis.call('HGET', K.ws, head))
        if w and w.alive > now then
            return head
        end
        redis.call('ZREM', K.q, head)
        redis.call('HDEL', K.ws, head)
    end
    return nil
end

local last, seq_last = rl_request_last(K)
if last == nil then
    return {0, -2}
end
-- Nobody queued and a plain lock: the common case, as cheap as unfair.
if fmt == 'plain' and redis.call('EXISTS', K.q) == 0 and
        redis.call('SET', key, id, 'NX', 'PX', ttl) then
    return {1, 1, rl_fence(K.fence, ttl, last)}
end
local now = rl_now_ms()
local kind, holder, gen, raw = rl_holder(key, fmt == 'plain')
if holder == id then
    -- Handed over already (the message may not have reached the caller):
    -- the hand-off issued the last fencing token. Its lease ran from the
    -- hand-off and may be shorter than the TTL: make it the TTL from now,
    -- which is what the caller counts from this request. Otherwise the
    -- caller holds it already: a reentrant lock is taken again, any other
    -- is held (by the same owner id, but held).
    local fence = rl_handed(key, kind, K.ws, req, now)
    if fence then
        rl_lengthen(key, ttl)
        redis.call('ZREM', K.q, req)
        redis.call('HDEL', K.ws, req, '~')
        -- The hand-off created the hash with this token (rl_hand).
        return {1, 1, fence, fence}
    end
    if fmt == 'reentrant' and kind == 'hash' then
        redis.call('ZREM', K.q, req)
        redis.call('HDEL', K.ws, req)
        return rl_reenter(key, ttl, K.fence, req, last, gen)
    end
    return {0, redis.call('PTTL', key), 1,
            tonumber(redis.call('ZSCORE', K.q, req) or '0')}
end
local wakes = rl_wakes(kind, holder)
local first, shared
if kind == 'zset' or kind == 'none' then
    first = live_head(now) == req
end
if kind == 'zset' then
    -- Held by many: as in acquire.lua, the alive window bounding the wait
    -- this writer records, but only at the queue's head: the record stops
    -- readers, and those queued ahead of this writer go first. One behind
    -- them records its wait when it reaches the head (its next attempt,
    -- or the hand-off that finds it there: rl_hand).
    local free
    free, wakes, shared = rl_share_writer(K, first and ARGV[5] or '0')
    if free then
        kind = 'none'
    end
end
if kind == 'none' and first == false then
    -- Free, with a live waiter at the head: a hand-off was missed (a
    -- holder whose lease ended without a release hands nothing on). The
    -- head gets the key, or its readers their shares, now, as a release
    -- would give them (rl_handoff, quiet), rather than at its next
    -- heartbeat; the caller, never the one handed (it is not at the
    -- head), queues behind.
    rl_handoff(K, true, {kind = 'none', held = 0}, true)
elseif kind == 'none' then
    redis.call('ZREM', K.q, req)
    redis.call('HDEL', K.ws, req)
    local fence = rl_create(key, id, ttl, fmt, ARGV[4], K.fence, req, last)
    return {1, 1, fence, fence}
end
if kind == 'string' then
    -- A holder that may release natively wakes nobody: marked, it will
    -- not (rl_mark_holder; raw: the value rl_holder read).
    rl_mark_holder(key, raw)
end
local seq = rl_queue(K, req, ARGV[5],
                     rl_waiter_entry(now + tonumber(ARGV[5]), ttl, fmt,
                                     ARGV[8], ARGV[7], ARGV[4], id),
                     seq_last)
return {0, kind == 'zset' and rl_shares_left(key, now, shared) or
    redis.call('PTTL', key), wakes, seq}
