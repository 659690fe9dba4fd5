-- A fair (FIFO) waiter's attempt at a share (see share_acquire.lua), also
-- its heartbeat: a permit of a counting semaphore, or a reader's share of
-- a lock held shared, taken in the order the callers came. The queue is
-- the lock's own (fair.lua's), so fair readers and writers of one key
-- queue together: a reader waits for the writers that came before it and
-- goes in beside the readers around it; a writer waits for the readers
-- that came before it.
-- KEYS: the key, its fencing counter, the queue q, the waiters' hash ws,
-- the queue's sequence, this request's void marker. ARGV as
-- share_acquire.lua's, with fair.lua's ARGV[5] (the alive window in ms),
-- ARGV[7] (the channel) and ARGV[8] ('S' or 'P').
-- Returns {1, 1, fence} when the caller holds a share (taken now, or
-- handed to it by a release), {0, ms, wakes, seq} when it is queued (ms:
-- as share_acquire.lua's, or -2 when there is room that waiters ahead of
-- it are to take; seq its place, which a hand-off message names);
-- error RLLIMIT as share_acquire.lua's.
local K = rl_keys('lock fence q ws seq void')
local key, id, ttl, req = K.lock, ARGV[1], tonumber(ARGV[2]), ARGV[6]
local mine, limit = rl_share_mine(ARGV[3])
local fmt, meta = 'reader', ''
if ARGV[3] ~= 'shared' then
    fmt, meta = 'permit', ARGV[3]
end
local last, seq_last = rl_request_last(K)
if last == nil then
    return {0, -2}
end
local now = rl_now_ms()
local wait, wakes, held, kind, raw = rl_share_room(key, mine, limit, now)
-- Handed over already (the message may not have reached the caller): the
-- hand-off issued the fencing token. Its lease ran from the hand-off:
-- make it the TTL from now, which is what the caller counts from this
-- request.
if kind == 'zset' then
    local fence = rl_share_handed(K, req, id, now)
    if fence then
        rl_share_extend(key, id, ttl)
        redis.call('ZREM', K.q, req)
        redis.call('HDEL', K.ws, req, '~' .. req)
        return {1, 1, fence}
    end
end
-- Room, and a queue: a hand-off was missed (a holder whose lease ended
-- without a release hands nothing on), or the room is the queue's by
-- right. Its head gets the room first, in order, as a release would give
-- it (rl_handoff, quiet: a reader or permit leaving wakes nobody else):
-- a waiter that came later must not go in while those ahead of it sleep
-- out their pauses, and then meet a writer's wait when they wake. The
-- caller, if queued, may be among those handed.
if wait == nil and redis.call('EXISTS', K.q) == 1 and
        rl_handoff(K, true, nil, true) then
    local fence = rl_share_handed(K, req, id, now)
    if fence then
        rl_share_extend(key, id, ttl)
        redis.call('HDEL', K.ws, req, '~' .. req)
        return {1, 1, fence}
    end
    -- The hand-offs issued fencing tokens: the caller's comes after.
    last = redis.call('GET', K.fence)
    wait, wakes, held, kind, raw = rl_share_room(key, mine, limit, now)
end
if wait == nil then
    -- Room: the caller may take it unless live waiters ahead of it are
    -- to fill it, or one ahead waits for something else (a writer ahead
    -- of a reader). Dead ones met are dropped. The look ahead is bounded:
    -- a caller further back waits for the hand-offs.
    local ids, _, ws = rl_queue_head(K, 64)
    local ahead, dead, mine_next = 0, {}, #ids < 64
    for i, who in ipairs(ids) do
        local w = who ~= req and rl_waiter(ws[i])
        if who == req then
            mine_next = true
            break
        elseif not w or w.alive <= now then
            dead[#dead + 1] = who
        else
            ahead = ahead + 1
            if rl_share_wants(w) ~= mine or held + ahead >= limit then
                mine_next = false
                break
            end
        end
    end
    rl_queue_drop(K, dead)
    if mine_next then
        rl_share_add(key, kind, mine, id, ttl, now)
        redis.call('ZREM', K.q, req)
        redis.call('HDEL', K.ws, req)
        return {1, 1, rl_fence(K.fence, ttl, last)}
    end
    -- Behind live waiters that a hand-off or their own attempts let in:
    -- a hand-off's message or the heartbeat brings the next try. The
    -- key's TTL says nothing here: REDISLOCK_TTL_FREE.
    wait = -2
end
if kind == 'string' then
    -- Behind a plain lock that may be released natively (rl_mark_holder;
    -- raw: the value rl_share_room read).
    rl_mark_holder(key, raw)
end
local seq = rl_queue(K, req, ARGV[5],
                     rl_waiter_entry(now + tonumber(ARGV[5]), ttl, fmt,
                                     ARGV[8], ARGV[7], meta, id),
                     seq_last)
return {0, wait, wakes, seq}
