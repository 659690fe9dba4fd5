-- What anyone may read of a lock (never a plain lock's token: whoever knows
-- it can release the lock). KEYS[1] the lock. ARGV[1] its helper base.
-- Returns {type, PTTL, owner, holds, meta, fence, reserved}: owner, holds
-- and meta from a hash lock (nil otherwise), the last fencing token issued
-- for the key (0 when none is known), and 1 when the key is a hold-after
-- reservation.
local key = KEYS[1]
local kind = redis.call('TYPE', key).ok
local ttl = redis.call('PTTL', key)
local fence = tonumber(redis.call('GET', ARGV[1] .. 'fence') or '0')
local f = {false, false, false}
local reserved = 0
if kind == 'hash' then
    f = redis.call('HMGET', key, 'owner', 'holds', 'meta')
elseif kind == 'string' and
        redis.call('GET', key) == 'redislock:hold-after' then
    reserved = 1
end
return {kind, ttl, f[1], f[2], f[3], fence, reserved}
