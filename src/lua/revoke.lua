-- Cooperative revocation: asks the lock's holder to give it up. Nothing
-- else changes: the holder keeps its lease, its releases and extends
-- still work, and its next extend or renewal is told (rl_extend answers
-- {1, reason}) until it releases. A plain lock's value gets RL_REVOKED
-- and the reason after its token (and any waiter's mark: a native
-- compare-and-delete then fails, and the release script, which frees
-- the key all the same, runs); a hash lock gets the field 'revoked'.
-- KEYS: the lock. ARGV[1] the reason (the caller bounds it).
-- Returns 1 revoked now, 2 revoked before (its first reason kept), 0 the
-- key is free, -1 the key holds no redislock lock (another library's,
-- whose holder cannot hear it, or not a lock), -2 a hold-after
-- reservation (held by nobody), -3 held by many (a semaphore or a lock
-- held shared: not yet).
local K = rl_keys('lock')
local key, why = K.lock, ARGV[1]
local kind, holder, _, raw = rl_holder(key, true)
if kind == 'none' then
    return 0
elseif kind == 'zset' then
    return -3
elseif kind == 'string' and not holder then
    return -2
elseif kind == 'hash' then
    if not holder then
        return -1
    elseif raw then
        return 2
    end
    redis.call('HSET', key, 'revoked', why)
    return 1
elseif kind ~= 'string' or not rl_our_token(holder, true) then
    return -1
elseif rl_revoked(kind, raw) then
    return 2
end
-- The lease stays as it is.
redis.call('SET', key, raw .. RL_REVOKED .. why, 'KEEPTTL')
return 1
