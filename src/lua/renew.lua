-- The renewals of many locks on one server in one call: a client renews
-- by node (alock.c), and each lock gets what extend.lua would answer.
-- KEYS: the locks (in a cluster, of one slot). ARGV: four per lock, in
-- the order of KEYS, as extend.lua's ARGV[1] to ARGV[4].
-- Returns an array: extend.lua's answer for each lock, in order.
local S = rl_keys_each(0, 'lock')
local out = {}
for i = 1, S.n do
    local a = (i - 1) * 4
    out[i] = rl_extend(rl_set_key(S, i, 'lock'), ARGV[a + 1], ARGV[a + 2],
                       ARGV[a + 3], ARGV[a + 4])
end
return out
