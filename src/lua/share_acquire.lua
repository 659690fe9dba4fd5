-- One share of a key held by many at once, each share with a lease of its
-- own: a permit of a counting semaphore (at most ARGV[3] holders), or with
-- ARGV[3] 'shared' a reader's share of a lock held shared (any number of
-- readers, while no exclusive holder has the key and none waits for it).
-- The key is a sorted set (see RL_SEM_LIMIT in lib.lua), so a key that
-- exists is held, for other libraries too (their SET NX fails). Leases are
-- judged on the server's clock only.
-- KEYS: the key, its fencing counter, its waiting marker, its wake lists
-- (writers' and permits' waiters, readers'), and the void marker of this
-- request (see abandon.lua). ARGV as acquire.lua's, but for the limit in
-- the format's place: ARGV[1] the share's token, ARGV[2] TTL in ms,
-- ARGV[3] the limit or 'shared', ARGV[5] the most the caller will wait in
-- ms ('0': it will not, so no marker); ARGV[4] and ARGV[6] unused (a
-- share has no metadata; its token is its request's id).
-- Returns the fencing token, a number, when a share was taken (as
-- acquire.lua's plain lock; never negative); {0, ms, wakes} when it
-- cannot be yet (ms until the first lease ends, or the waiting writer's
-- wait, or another kind's PTTL; wakes as acquire.lua's); error RLLIMIT
-- when the key is a semaphore of another limit or a lock of the other of
-- the two kinds.
local K = rl_keys('lock fence waiting wake rwake void')
local key, id, ttl = K.lock, ARGV[1], tonumber(ARGV[2])
local mine, limit = rl_share_mine(ARGV[3])
local last, waiting = rl_request_last(K, K.waiting)
if last == nil then
    return {0, -2}
end
local now = rl_now_ms()
local wait, wakes, held, kind, raw = rl_share_room(key, mine, limit, now)
if wait == nil then
    rl_share_add(key, kind, mine, id, ttl, now)
    -- Room is left: the next waiter may get in too (a release wakes one):
    -- for a lock held shared, the next reader. No marker (read with the
    -- counter): nobody waits to be woken.
    if held + 1 < limit and waiting then
        rl_wake(K, ARGV[3] == 'shared' and K.rwake or K.wake)
    end
    return rl_fence(K.fence, ttl, last)
end
rl_mark_waiting(K, wait, ARGV[5], raw)
return {0, wait, wakes}
