-- Lengthens a permit's lease (see sem_acquire.lua) to at least ARGV[2]
-- ms from now, never shortening it, as extend.lua does for a lock; a
-- permit whose lease has ended is not brought back.
-- KEYS: the key. ARGV[1] the permit's token, ARGV[2] the TTL in ms.
-- Returns 1 extended, 0 gone (its lease ended).
local K = rl_keys('lock')
local key, id, ttl = K.lock, ARGV[1], tonumber(ARGV[2])
if redis.call('TYPE', key).ok ~= 'zset' then
    return 0
end
local score = redis.call('ZSCORE', key, id)
local now = rl_now_ms()
if not score or tonumber(score) <= now then
    return 0
end
if now + ttl > tonumber(score) then
    redis.call('ZADD', key, 'XX', now + ttl, id)
end
rl_lengthen(key, ttl)
return 1
