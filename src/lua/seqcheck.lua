-- The sequencer check: whether the holder a sequencer (sequencer.lua)
-- was made for still holds the lock, for a resource that asks rather
-- than keeping the largest fencing token it has seen. Read only.
-- KEYS: the lock. ARGV[1] the digest of the holder's token or owner id,
-- ARGV[2] the fencing token it was issued.
-- Returns 1 while that holder holds the lock (for an owner id, in the
-- life of the key the fencing token was issued in), 0 when the lock is
-- free, -1 when someone else holds it (another holder, a later life
-- of the owner id, a hold-after reservation, not a lock), -3 when it is
-- held by many (a semaphore or shares: not yet).
local K = rl_keys('lock')
local key, digest, fence = K.lock, ARGV[1], ARGV[2]
local kind, holder, gen = rl_holder(key, true)
if kind == 'none' then
    return 0
elseif kind == 'zset' then
    return -3
elseif not holder or redis.sha1hex(holder) ~= digest or
        (kind == 'hash' and not rl_ours(gen, fence)) then
    return -1
end
return 1
