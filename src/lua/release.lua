-- Compare-and-delete. KEYS[1] the lock, ARGV[1] the caller's token.
-- Returns 1 released, 0 the key is gone (expired, free), -1 someone else's.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
    redis.call('DEL', KEYS[1])
    return 1
end
if v == false then
    return 0
end
return -1
