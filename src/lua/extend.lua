-- Compare-and-lengthen for both lock formats (see release.lua).
-- KEYS: the lock. ARGV[1] token or owner id. ARGV[2] the TTL in ms: the
-- lease is set to at least that from now, never shortened (rl_lengthen),
-- so a late extend or another handle of the same owner cannot cut short a
-- lease a holder counts on. A key that has gone is never re-created.
-- ARGV[3] and ARGV[4] as release.lua's ('z': a share, lengthened alike).
-- Returns 1 extended, 0 gone (expired, free), -1 another owner's.
local K = rl_keys('lock')
return rl_extend(K.lock, ARGV[1], ARGV[2], ARGV[3], ARGV[4])
