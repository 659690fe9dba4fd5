-- Compare-and-expire for both lock formats (see release.lua).
-- KEYS[1] the lock. ARGV[1] token or owner id. ARGV[2] the new TTL in ms.
-- A key that has gone is never re-created.
-- Returns 1 extended, 0 gone (expired, free), -1 another owner's.
local kind = redis.call('TYPE', KEYS[1]).ok
local holder
if kind == 'none' then
    return 0
elseif kind == 'string' then
    holder = redis.call('GET', KEYS[1])
elseif kind == 'hash' then
    holder = redis.call('HGET', KEYS[1], 'owner')
end
if holder ~= ARGV[1] then
    return -1
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
