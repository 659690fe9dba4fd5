-- Compare-and-delete for a set (set_acquire.lua): every key that holds
-- the token is freed, its waiters woken or its fair waiter handed it
-- (rl_handoff).
-- KEYS: for each lock of the set in turn, the lock and the helpers a
-- hand-off uses. ARGV[1] the token, ARGV[4] as release.lua's.
-- Returns 1 when every key was released; 0 when some had gone (the set's
-- lease ended; what was left of it is released); -1 when some key is
-- another owner's (left untouched); error RLSETKEYS when the keys are
-- not the token's set (rl_set_keys_match), releasing nothing.
local K = rl_keys('lock fence q ws waiting wake rwake')
local L = rl_keys_each(7, 'lock fence q ws waiting wake rwake')
local res, mine = 1, {}
table.insert(L, 1, K)
for _, x in ipairs(L) do
    -- pcall: a key of another type is another owner's.
    local v = redis.pcall('GET', x.lock)
    if v == ARGV[1] then
        table.insert(mine, x)
    elseif not v then
        res = math.min(res, 0)
    else
        res = -1
    end
end
rl_set_keys_match(#mine, #L)
for _, x in ipairs(mine) do
    redis.call('DEL', x.lock)
    rl_handoff(x, false, {kind = 'none', held = 0})
end
return res
