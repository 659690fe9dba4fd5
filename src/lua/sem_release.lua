-- Gives back a permit of a counting semaphore (see sem_acquire.lua) and
-- wakes a waiter. A permit whose lease has ended is reported as gone,
-- never as released, even before an acquire prunes it.
-- KEYS: the key, its waiting marker and the list its waiters block on.
-- ARGV[1] the permit's token (ARGV[2] and ARGV[3] as release.lua's,
-- unused: a semaphore has no hold-after and no hash format).
-- Returns 1 released, 0 gone (its lease ended).
local K = rl_keys('lock waiting wake')
local key, id = K.lock, ARGV[1]
if redis.call('TYPE', key).ok ~= 'zset' then
    return 0
end
local score = redis.call('ZSCORE', key, id)
if not score then
    return 0
end
redis.call('ZREM', key, id)
local now = rl_now_ms()
rl_sem_prune(key, now)
if tonumber(score) <= now then
    return 0
end
rl_wake(K)
return 1
