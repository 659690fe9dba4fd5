-- A wake-up passed on (agroup.c): a set over several servers, woken from
-- the wake list of its key here, was refused by a group it takes before
-- this one, and never came back to the key. The wake it took was the
-- key's other waiters' too: they are woken, unless the key is held (its
-- holder's release wakes them) or nobody waits (rl_wake).
-- KEYS: the lock, its waiting marker and its wake list. No ARGV.
-- Returns 1 when the key was free, else 0.
local K = rl_keys('lock waiting wake')
if redis.call('EXISTS', K.lock) == 1 then
    return 0
end
rl_wake(K)
return 1
