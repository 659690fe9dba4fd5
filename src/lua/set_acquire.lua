-- All of a set of plain locks or none (redislock_lock_new_multi): one
-- token, one lease and one fencing token for every key. The keys live on
-- one server (in a cluster, in one slot), so one script decides; a set
-- over several takes one such group after another (agroup.c).
-- KEYS: the first lock, its fencing counter, its waiting marker and the
-- wake list waiters block on, and the void marker of this request (see
-- abandon.lua); then for each further lock, the lock, its fencing
-- counter, its waiting marker and its wake list. ARGV as acquire.lua's
-- (ARGV[3] 'plain'; ARGV[4] unused); ARGV[7], when given (not ''), the
-- least fencing token to give (the token of the set's group before);
-- ARGV[8], when given, the place (1: the first) of the key whose wake
-- list the caller waited on, whose wake a refusal passes on.
-- Returns the fencing token, a number, when every key was taken; -fence
-- when someone waits for one of them (as acquire.lua's plain lock: the
-- set's values carry no waiter's mark then, so its release must be
-- set_release.lua, which wakes them, not set_free.lua); {0, PTTL, wakes, i}
-- when the set's i-th key (1: the first) is held, taking none: its
-- waiting marker is set (as acquire.lua's) so that its release wakes the
-- caller, which waits behind that key (wakes: rl_wakes).
local K = rl_keys('lock fence waiting wake void')
local S = rl_keys_each(5, 'lock fence waiting wake')
local id, ttl = ARGV[1], ARGV[2]
local last = rl_request_last(K)
if last == nil then
    return {0, -2}
end
local locks = rl_set_keys(S, 'lock')
local held = rl_set_held(S, locks, ARGV[5], tonumber(ARGV[8]))
if held then
    return held
end
-- All free. Every counter is read (and checked) before the first write;
-- locks of one namespace share theirs (keys.c), so each distinct counter
-- is read and written once.
local fences, lasts, seen = {K.fence}, {last}, {[K.fence] = true}
local each = rl_set_keys(S, 'fence')
for i = 2, S.n do
    local f = each[i]
    if not seen[f] then
        seen[f] = true
        fences[#fences + 1] = f
        lasts[#fences] = redis.call('GET', f)
    end
end
-- Whether someone waits for one of the keys: read only now that the set
-- is free, so that a refused attempt costs what it did, and only for a
-- token of the native prefix (rl_set_grant).
return rl_set_grant(locks, id, ttl, fences, lasts, ARGV[7],
                   rl_native_token(id) and
                       redis.call('EXISTS',
                                  unpack(rl_set_keys(S, 'waiting'))) > 0)
