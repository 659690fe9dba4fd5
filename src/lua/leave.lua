-- A fair waiter gives up (deadline, cancel, error): leave the queue, and
-- if a release handed it the lock meanwhile, pass the lock on.
-- KEYS[1] the lock. ARGV[1] token or owner id, ARGV[2] helper base.
-- Returns 1 when it had been handed the lock (now passed on), else 0.
local key, id, base = KEYS[1], ARGV[1], ARGV[2]
local _, holder = rl_holder(key)
local handed = holder == id and rl_handed(base, id)
redis.call('ZREM', base .. 'q', id)
redis.call('DEL', base .. 'w:' .. id, base .. 'h:' .. id)
if handed then
    redis.call('DEL', key)
    rl_handoff(key, base)
    return 1
end
return 0
