-- Compare-and-lengthen for both lock formats (see release.lua).
-- KEYS: the lock. ARGV[1] token or owner id. ARGV[2] the TTL in ms: the
-- lease is set to at least that from now, never shortened (rl_lengthen),
-- so a late extend or another handle of the same owner cannot cut short a
-- lease a holder counts on. A key that has gone is never re-created.
-- ARGV[3] and ARGV[4] as release.lua's ('z': a share, lengthened alike).
-- Returns 1 extended, 0 gone (expired, free), -1 another owner's.
local K = rl_keys('lock')
local kind, holder, gen = rl_holder(K.lock, ARGV[3] ~= 'h' and ARGV[3] ~= 'z')
if kind == 'zset' then
    -- A share (share_acquire.lua).
    return rl_share_extend(K.lock, ARGV[1], ARGV[2])
elseif kind == 'none' then
    return 0
elseif holder ~= ARGV[1] then
    return -1
elseif kind == 'hash' and not rl_ours(gen, ARGV[4]) then
    return 0
end
rl_lengthen(K.lock, ARGV[2])
return 1
