-- The renewals of many locks on one server in one call: a client renews
-- by node (alock.c), and each lock gets what its own extend would answer.
-- KEYS: the locks' keys, in order (in a cluster, of one slot): one for a
-- lock, each of its keys for a set. ARGV: four per lock, in the same
-- order, as extend.lua's ARGV[1] to ARGV[4]; a set's third is 's' and its
-- number of keys, and it gets set_extend.lua's answer.
-- Returns an array: each lock's answer, in order.
local S = rl_keys_each(0, 'lock')
local out, k = {}, 1
for i = 1, #ARGV / 4 do
    local a = (i - 1) * 4
    local fmt = ARGV[a + 3]
    if string.byte(fmt) == 115 then
        -- 's': a set of that many keys.
        local locks = {}
        for j = 1, tonumber(string.sub(fmt, 2)) do
            locks[j] = rl_set_key(S, k, 'lock')
            k = k + 1
        end
        out[i] = rl_set_extend(locks, ARGV[a + 1], ARGV[a + 2], ARGV[a + 4])
    else
        out[i] = rl_extend(rl_set_key(S, k, 'lock'), ARGV[a + 1],
                           ARGV[a + 2], fmt, ARGV[a + 4])
        k = k + 1
    end
end
return out
