-- A set's first attempt when its locks share one fencing counter (one
-- namespace, keys.c), since 2026-12-07: set_acquire.lua's answers and
-- writes from fewer keys. No wake list is sent (only a retry that waited
-- passes a wake on: it takes set_acquire.lua), and the counter once, so
-- a set of 8 sends 18 keys where set_acquire.lua takes 33; each key a
-- script is sent costs the server a string in KEYS and its parsing, and a
-- free set is told from a busy one by one EXISTS over all of them.
-- KEYS: the first lock, its waiting marker, the set's fencing counter,
-- and the void marker of this request (see abandon.lua); then for each
-- further lock, the lock and its waiting marker. ARGV as
-- set_acquire.lua's, but for ARGV[8] (none).
-- Returns as set_acquire.lua.
local K = rl_keys('lock waiting fence void')
local S = rl_keys_each(4, 'lock waiting')
local id, ttl = ARGV[1], ARGV[2]
local last = rl_request_last(K)
if last == nil then
    return {0, -2}
end
-- Of KEYS, how many of the locks and waiting markers exist: the void
-- marker does not (rl_request_last read it) and the counter does when it
-- had a value (last). Every key is named once: a set's keys are
-- distinct (calls.c), and none is another's helper, whose counter is of
-- its own namespace ("K{K}" or K, keys.c) and so not the set's one.
local busy = redis.call('EXISTS', unpack(KEYS))
if last then
    busy = busy - 1
end
local locks = rl_set_keys(S, 'lock')
if busy > 0 then
    local held = rl_set_held(S, locks, ARGV[5], nil)
    if held then
        return held
    end
end
-- No lock held, yet some key was there: a waiting marker, so someone
-- waits for one of the keys (rl_set_grant).
return rl_set_grant(locks, id, ttl, {K.fence}, {last}, ARGV[7],
                   busy > 0 and rl_native_token(id))
