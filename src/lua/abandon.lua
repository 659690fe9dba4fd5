-- An acquire whose reply never came (timeout, dropped connection): the
-- request may not have reached the server yet, may have taken the lock, or
-- may still arrive. Make sure it does not hold the lock, now or later:
-- void the request for as long as it could still take effect (the acquire
-- scripts refuse a void request), and undo what it did if it ran already:
-- a plain lock with its token is freed; on a hash, the hold that request
-- added (the 'req' field names the last request that added one, or the
-- fair waiter a release handed the lock to) is taken back, and the lock
-- freed when it was the last; a share with the token (a semaphore's
-- permit, a reader's share) is given back.
-- KEYS: the lock, the helpers a hand-off uses (rl_handoff), the request's
-- void marker. ARGV[1] the token or owner id, ARGV[2] how long to void the
-- request in ms, ARGV[3] the request's id.
-- Returns 1 when a hold was undone, else 0.
local K = rl_keys('lock fence q ws waiting wake rwake void')
local key, id, req = K.lock, ARGV[1], ARGV[3]
redis.call('SET', K.void, '1', 'PX', ARGV[2])
local kind, holder = rl_holder(key)
if kind == 'zset' then
    -- A share (share_acquire.lua): its token's member.
    return rl_share_release(K, id)
end
if holder ~= id then
    return 0
end
if kind == 'hash' then
    if redis.call('HGET', key, 'req') ~= req then
        return 0
    end
    redis.call('HSET', key, 'req', '')
    if redis.call('HINCRBY', key, 'holds', -1) > 0 then
        return 1
    end
end
redis.call('DEL', key)
rl_handoff(K, false, {kind = 'none', held = 0})
return 1
