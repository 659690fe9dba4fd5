-- Compare-and-lengthen for a set (set_acquire.lua): only while every key
-- holds the token is each lease set to at least ARGV[2] ms from now
-- (rl_lengthen: never shortened). A set that lost a key is lost whole.
-- KEYS: each lock of the set. ARGV[1] the token, ARGV[2] the TTL in ms,
-- ARGV[4] as release.lua's.
-- Returns 1 extended, 0 some key gone, -1 some key another owner's (then
-- nothing is lengthened); error RLSETKEYS as set_release.lua's.
-- (K is not read: its rl_keys call tells the C side the first lock's
-- key, embed_lua.cmake.)
local K = rl_keys('lock')
local S = rl_keys_each(1, 'lock')
return rl_set_extend(rl_set_keys(S, 'lock'), ARGV[1], ARGV[2], ARGV[4])
