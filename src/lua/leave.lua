-- A fair waiter gives up (deadline, cancel, error): leave the queue, and
-- if a release handed it the lock or a share meanwhile, pass it on.
-- Otherwise the waiters behind it may get in now (readers behind a writer
-- that left, while readers hold the key: the writer's wait, which stopped
-- new readers, goes with it).
-- KEYS: the lock and the helpers a hand-off uses (rl_handoff). ARGV[1]
-- token or owner id, ARGV[2] the waiter's request id.
-- Returns 1 when it had been handed the lock or a share (now passed on),
-- else 0.
local K = rl_keys('lock fence q ws waiting wake rwake')
local key, id, req = K.lock, ARGV[1], ARGV[2]
local kind, holder = rl_holder(key)
local now = rl_now_ms()
local w = rl_waiter(redis.call('HGET', K.ws, req))
redis.call('ZREM', K.q, req)
redis.call('HDEL', K.ws, req)
if kind == 'zset' then
    -- A writer leaving while readers hold: its recorded wait no longer
    -- stops new readers (another writer's next attempt records its own;
    -- the hand-off below records the queue's head).
    if w and rl_share_wants(w) == nil and rl_share_kind(key) == RL_SHARED then
        redis.call('ZREM', key, RL_WRITER)
    end
    if rl_share_handed(K, req, id, now) then
        redis.call('HDEL', K.ws, '~' .. req)
        rl_share_release(K, id)
        return 1
    end
elseif holder == id and rl_handed(key, kind, K.ws, req, now) then
    redis.call('HDEL', K.ws, '~')
    redis.call('DEL', key)
    rl_handoff(K, false, {kind = 'none', held = 0})
    return 1
end
rl_handoff(K, true)
return 0
