-- An acquire whose reply never came (timeout, dropped connection): the
-- request may not have reached the server yet, may have taken the lock, or
-- may still arrive. Make sure the lock is not held with its token, now or
-- later: void the token for as long as the request could still take effect
-- (the acquire scripts refuse a void token), and free the lock if it took
-- it already.
-- KEYS[1] the lock. ARGV[1] the plain token, ARGV[2] its TTL in ms,
-- ARGV[3] helper base. Returns 1 when a lock was freed, else 0.
local key, id, base = KEYS[1], ARGV[1], ARGV[3]
redis.call('SET', base .. 'void:' .. id, '1', 'PX', ARGV[2])
local _, holder = rl_holder(key)
if holder == id then
    redis.call('DEL', key)
    rl_handoff(key, base)
    return 1
end
return 0
