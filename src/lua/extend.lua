-- Compare-and-expire for both lock formats (see release.lua).
-- KEYS[1] the lock. ARGV[1] token or owner id. ARGV[2] the new TTL in ms.
-- A key that has gone is never re-created.
-- Returns 1 extended, 0 gone (expired, free), -1 another owner's.
local kind, holder = rl_holder(KEYS[1])
if kind == 'none' then
    return 0
elseif holder ~= ARGV[1] then
    return -1
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
