-- Compare-and-lengthen for a set (set_acquire.lua): only while every key
-- holds the token is each lease set to at least ARGV[2] ms from now
-- (rl_lengthen: never shortened). A set that lost a key is lost whole.
-- KEYS: each lock of the set. ARGV[1] the token, ARGV[2] the TTL in ms,
-- ARGV[4] as release.lua's.
-- Returns 1 extended, 0 some key gone, -1 some key another owner's (then
-- nothing is lengthened); error RLSETKEYS as set_release.lua's.
local K = rl_keys('lock')
local L = rl_keys_each(1, 'lock')
local res, held = 1, 0
table.insert(L, 1, K)
for _, x in ipairs(L) do
    local v = redis.pcall('GET', x.lock)
    if v ~= ARGV[1] then
        res = v and -1 or math.min(res, 0)
    else
        held = held + 1
    end
end
rl_set_keys_match(held, #L)
if res == 1 then
    for _, x in ipairs(L) do
        rl_lengthen(x.lock, ARGV[2])
    end
end
return res
