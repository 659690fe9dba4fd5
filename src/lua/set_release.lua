-- Compare-and-delete for a set (set_acquire.lua): every key that holds
-- the token is freed, its waiters woken or its fair waiter handed it
-- (rl_handoff).
-- KEYS: for each lock of the set in turn, the lock and the helpers a
-- hand-off uses. ARGV[1] the token, ARGV[4] as release.lua's.
-- Returns 1 when every key was released; 0 when some had gone (the set's
-- lease ended; what was left of it is released); -1 when some key is
-- another owner's (left untouched); error RLSETKEYS when the keys are
-- not the token's set (rl_set_keys_match), releasing nothing.
-- (K is not read: its rl_keys call tells the C side the first lock's
-- keys, embed_lua.cmake.)
local K = rl_keys('lock fence q ws waiting wake rwake')
local S = rl_keys_each(7, 'lock fence q ws waiting wake rwake')
local locks = rl_set_keys(S, 'lock')
local qs, marks = rl_set_keys(S, 'q'), rl_set_keys(S, 'waiting')
local vals, res, held = rl_set_read(locks, ARGV[1])
local mine, waits = {}, {}
for i = 1, S.n do
    if vals[i] == ARGV[1] then
        mine[#mine + 1] = locks[i]
        waits[#waits + 1] = qs[i]
        waits[#waits + 1] = marks[i]
    end
end
rl_set_keys_match(held, S.n, ARGV[4])
if held > 0 then
    redis.call('DEL', unpack(mine))
    -- Nobody waits for any of them (one EXISTS for all): no hand-off to
    -- look for. Else each freed key's, as a plain release's.
    if redis.call('EXISTS', unpack(waits)) > 0 then
        for i = 1, S.n do
            if vals[i] == ARGV[1] then
                rl_handoff(rl_set_lock(S, i), false, {kind = 'none', held = 0})
            end
        end
    end
end
return res
