-- Shared by every script: embed_lua.cmake puts this file in front of each
-- one (so each is still a single script with its own SHA1).

-- The kind of the lock key and who holds it: the string's value (a plain
-- lock's token) or the hash's owner field; false when there is none. A
-- hold-after reservation is held by nobody: no token names it, so nobody
-- can release, extend or abandon it before it runs out.
local function rl_holder(key)
    local kind = redis.call('TYPE', key).ok
    if kind == 'string' then
        local v = redis.call('GET', key)
        if v == 'redislock:hold-after' then
            return kind, false
        end
        return kind, v
    elseif kind == 'hash' then
        return kind, redis.call('HGET', key, 'owner')
    end
    return kind, false
end

-- The prefix of redislock's plain-lock tokens, rand.h's
-- RL_LOCK_TOKEN_PREFIX (test_rand checks that the two agree).
local RL_TOKEN_PREFIX = 'rl1-'

-- Whether v is one of redislock's plain-lock tokens: the prefix, and
-- with whole set, the 32 hex digits after it.
local function rl_our_token(v, whole)
    local n = #RL_TOKEN_PREFIX
    if string.sub(v, 1, n) ~= RL_TOKEN_PREFIX then
        return false
    end
    return not whole or
        (#v == n + 32 and string.find(v, '^%x+$', n + 1) ~= nil)
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

-- Sets the lease of key to ttl ms from now unless it has longer left: a
-- lease is never shortened, so every handle that holds it (two handles of
-- one owner id, or an extend whose reply was lost and that arrives late)
-- keeps a validity no longer than what the server has. A key without an
-- expiry keeps none.
local function rl_lengthen(key, ttl)
    local left = redis.call('PTTL', key)
    if left >= 0 and left < tonumber(ttl) then
        redis.call('PEXPIRE', key, ttl)
    end
end

-- Creates the lock for id: a string for the 'plain' format, a hash with
-- owner, holds and meta for 'hash' and 'reentrant'. req names the request
-- that made it ('' for a hand-off), so that abandon.lua can undo exactly
-- that request. Returns its fencing token.
local function rl_create(key, id, ttl, fmt, meta, base, req)
    if fmt == 'plain' then
        redis.call('SET', key, id, 'PX', ttl)
    else
        redis.call('HSET', key, 'owner', id, 'holds', 1)
        if meta ~= '' then
            redis.call('HSET', key, 'meta', meta)
        end
        if req ~= '' then
            redis.call('HSET', key, 'req', req)
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

-- Removes hand-off messages from waiter id's own list: called where the
-- lock is not id's, so any there are stale (a lease id missed). Other
-- messages (a cancel) stay, in order, with what is left of the list's
-- life (only the commands docs/ACL.md lists).
local function rl_drop_handoffs(base, id)
    local own = base .. 'h:' .. id
    local all, keep = redis.call('LRANGE', own, 0, -1), {}
    for _, m in ipairs(all) do
        if string.sub(m, 1, 8) ~= 'handoff ' then
            keep[#keep + 1] = m
        end
    end
    if #keep == #all then
        return
    end
    local left = redis.call('PTTL', own)
    redis.call('DEL', own)
    for i = #keep, 1, -1 do
        redis.call('LPUSH', own, keep[i])
    end
    if #keep > 0 and left > 0 then
        redis.call('PEXPIRE', own, left)
    end
end

-- A reentrant owner takes its lock again: one more hold, the lease at
-- least ttl (never shortened: another handle of the owner may count on
-- more), a new fencing token; req is the request (see rl_create).
-- Returns {1, holds, fence}.
local function rl_reenter(key, ttl, base, req)
    local holds = redis.call('HINCRBY', key, 'holds', 1)
    redis.call('HSET', key, 'req', req)
    rl_lengthen(key, ttl)
    return {1, holds, rl_fence(base, ttl)}
end

-- After the lock at key was freed: hands it to the longest-waiting live
-- fair waiter, or else wakes one ordinary waiter. base is the prefix of
-- the lock's helper keys (same cluster slot as key). Waiters whose alive
-- key has expired are dead and skipped, a bounded number per call. The
-- lease handed over lasts no longer than the waiter's alive key would
-- have: a waiter that died just before cannot hold the queue up for
-- longer than that; a live one extends it to its TTL at once. The message
-- lives no longer than the lease, so a waiter that pops it knows the lease
-- began after its own last attempt (which dropped older messages).
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
            local fence = rl_create(key, head, lease, fmt, meta, base, '')
            redis.call('LPUSH', base .. 'h:' .. head,
                       'handoff ' .. string.format('%d %d', fence, lease))
            redis.call('PEXPIRE', base .. 'h:' .. head, lease)
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

