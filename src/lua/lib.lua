-- Shared by every script: embed_lua.cmake puts this file in front of each
-- one (so each is still a single script with its own SHA1).

-- The kind of the lock key and who holds it: the string's value (a plain
-- lock's token) or the hash's owner field; false when there is none.
local function rl_holder(key)
    local kind = redis.call('TYPE', key).ok
    if kind == 'string' then
        return kind, redis.call('GET', key)
    elseif kind == 'hash' then
        return kind, redis.call('HGET', key, 'owner')
    end
    return kind, false
end

-- The next fencing token for the lock whose helper keys start with base:
-- greater than every token issued before for the key. It is the larger of
-- the last token + 1 and the server's clock in microseconds, so the
-- counter key need only live as long as a lock might (lock TTL + 1 s):
-- once it has gone, the clock has moved past every token it counted,
-- unless the server's clock stepped back by more than that idle time.
local function rl_fence(base, ttl)
    local key = base .. 'fence'
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local f = tonumber(redis.call('GET', key) or '0') + 1
    if now > f then
        f = now
    end
    -- Shortening the counter's life is harmless: the clock covers it.
    redis.call('SET', key, string.format('%d', f), 'PX', tonumber(ttl) + 1000)
    return f
end

-- Creates the lock for id: a string for the 'plain' format, a hash with
-- owner, holds and meta for 'hash' and 'reentrant'. Returns its fencing
-- token.
local function rl_create(key, id, ttl, fmt, meta, base)
    if fmt == 'plain' then
        redis.call('SET', key, id, 'PX', ttl)
    else
        redis.call('HSET', key, 'owner', id, 'holds', 1)
        if meta ~= '' then
            redis.call('HSET', key, 'meta', meta)
        end
        redis.call('PEXPIRE', key, ttl)
    end
    return rl_fence(base, ttl)
end

-- The fencing token of a hand-off to waiter id that it has not picked up
-- yet (the message waits in its own list), or nil. The lock's holder
-- being id is not enough: another handle may use the same owner id.
local function rl_handed(base, id)
    for _, m in ipairs(redis.call('LRANGE', base .. 'h:' .. id, 0, -1)) do
        local fence = string.match(m, '^handoff (%d+)')
        if fence then
            return tonumber(fence)
        end
    end
    return nil
end

-- A reentrant owner takes its lock again: one more hold, the TTL
-- refreshed, a new fencing token. Returns {1, holds, fence}.
local function rl_reenter(key, ttl, base)
    local holds = redis.call('HINCRBY', key, 'holds', 1)
    redis.call('PEXPIRE', key, ttl)
    return {1, holds, rl_fence(base, ttl)}
end

-- After the lock at key was freed: hands it to the longest-waiting live
-- fair waiter, or else wakes one ordinary waiter. base is the prefix of
-- the lock's helper keys (same cluster slot as key). Waiters whose alive
-- key has expired are dead and skipped, a bounded number per call. The
-- lease handed over lasts no longer than the waiter's alive key would
-- have: a waiter that died just before cannot hold the queue up for
-- longer than that; a live one extends it to its TTL at once.
local function rl_handoff(key, base)
    local q = base .. 'q'
    for _ = 1, 16 do
        local head = redis.call('ZPOPMIN', q)[1]
        if head == nil then
            break
        end
        local spec = redis.call('GET', base .. 'w:' .. head)
        if spec then
            local ttl, fmt, meta = string.match(spec, '^(%d+) (%a+) (.*)$')
            local lease = redis.call('PTTL', base .. 'w:' .. head)
            if lease < 1 or lease > tonumber(ttl) then
                lease = tonumber(ttl)
            end
            redis.call('DEL', base .. 'w:' .. head)
            local fence = rl_create(key, head, lease, fmt, meta, base)
            redis.call('LPUSH', base .. 'h:' .. head,
                       'handoff ' .. string.format('%d %d', fence, lease))
            redis.call('PEXPIRE', base .. 'h:' .. head, 10000)
            return true
        end
    end
    local marker = redis.call('PTTL', base .. 'waiting')
    if marker > 0 then
        local wake = base .. 'wake'
        if redis.call('LLEN', wake) == 0 then
            redis.call('LPUSH', wake, 'wake')
        end
        redis.call('PEXPIRE', wake, marker)
    end
    return false
end

