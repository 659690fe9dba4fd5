-- Compare-and-expire. KEYS[1] the lock, ARGV[1] the caller's token,
-- ARGV[2] the new TTL in ms. A key that is gone is never re-created.
-- Returns 1 extended, 0 the key is gone (expired, free), -1 someone else's.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
end
if v == false then
    return 0
end
return -1
