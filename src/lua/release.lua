-- Compare-and-delete for both lock formats: a string holding the token
-- (plain locks, as redis-py and node-redlock write them) or a hash whose
-- owner field holds the owner id (reentrant locks, locks with metadata).
-- KEYS[1] the lock. ARGV[1] token or owner id. ARGV[2] hold-after in ms:
-- "0" deletes the key, more keeps it reserved that long.
-- Returns -1 another owner's (untouched), 0 gone (expired, free),
-- 1 released, n > 1 still held by the owner with n - 1 holds left.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
    return 0
elseif kind == 'string' then
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then
        return -1
    end
elseif kind == 'hash' then
    if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
        return -1
    end
    local left = redis.call('HINCRBY', KEYS[1], 'holds', -1)
    if left > 0 then
        return left + 1
    end
else
    return -1
end
if ARGV[2] ~= '0' then
    redis.call('SET', KEYS[1], 'redislock:hold-after', 'PX', ARGV[2])
else
    redis.call('DEL', KEYS[1])
end
return 1
