-- What anyone may read of a lock. KEYS[1] the lock.
-- Returns {type, PTTL} for a string or a free key, and
-- {type, PTTL, owner, holds, meta} for a hash (missing fields are nil).
local kind = redis.call('TYPE', KEYS[1]).ok
local ttl = redis.call('PTTL', KEYS[1])
if kind == 'hash' then
    local f = redis.call('HMGET', KEYS[1], 'owner', 'holds', 'meta')
    return {kind, ttl, f[1], f[2], f[3]}
end
return {kind, ttl}
