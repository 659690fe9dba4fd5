-- Acquire for locks with an owner id (reentrant, or carrying metadata),
-- kept as a hash: owner, holds, and meta when given.
-- KEYS[1] the lock. ARGV[1] owner id, ARGV[2] TTL in ms, ARGV[3] "1" when
-- the owner may take it again, ARGV[4] metadata ("" for none).
-- Returns {1, holds} when taken, {0, PTTL} when another owner holds it.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
    redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'holds', 1)
    if ARGV[4] ~= '' then
        redis.call('HSET', KEYS[1], 'meta', ARGV[4])
    end
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, 1}
end
if ARGV[3] == '1' and kind == 'hash' and
        redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
    local holds = redis.call('HINCRBY', KEYS[1], 'holds', 1)
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, holds}
end
return {0, redis.call('PTTL', KEYS[1])}
