-- A fair waiter gives up (deadline, cancel, error): leave the queue, and
-- if a release handed it the lock meanwhile, pass the lock on.
-- KEYS: the lock and the helpers a hand-off uses (rl_handoff). ARGV[1]
-- token or owner id, ARGV[2] the waiter's request id.
-- Returns 1 when it had been handed the lock (now passed on), else 0.
local K = rl_keys('lock fence q ws waiting wake rwake')
local key, id, req = K.lock, ARGV[1], ARGV[2]
local kind, holder = rl_holder(key)
local handed = holder == id and rl_handed(key, kind, K.ws, req, rl_now_ms())
redis.call('ZREM', K.q, req)
redis.call('HDEL', K.ws, req)
if handed then
    redis.call('HDEL', K.ws, '~')
    redis.call('DEL', key)
    rl_handoff(K)
    return 1
end
return 0
