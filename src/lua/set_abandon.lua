-- A set's acquire whose reply never came (see abandon.lua): the request
-- is voided for as long as it could still arrive, and every key that
-- holds its token is freed (a set's acquire takes all its keys in one
-- step, or none).
-- KEYS: the first lock, the helpers a hand-off uses and the request's
-- void marker; then for each further lock, the lock and its hand-off
-- helpers. ARGV[1] the token, ARGV[2] how long to void the request in
-- ms, ARGV[3] the request's id.
-- Returns the number of keys freed.
local K = rl_keys('lock fence q ws waiting wake rwake void')
local S = rl_keys_each(8, 'lock fence q ws waiting wake rwake')
local n = 0
redis.call('SET', K.void, '1', 'PX', ARGV[2])
for i = 1, S.n do
    local x = rl_set_lock(S, i)
    local v = redis.pcall('GET', x.lock)
    if type(v) == 'string' and rl_unmark(v) == ARGV[1] then
        redis.call('DEL', x.lock)
        rl_handoff(x, false, {kind = 'none', held = 0})
        n = n + 1
    end
end
return n
