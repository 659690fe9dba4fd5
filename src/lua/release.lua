-- Compare-and-delete for both lock formats: a string holding the token
-- (plain locks, as redis-py and node-redlock write them) or a hash whose
-- owner field holds the owner id (reentrant locks, locks with metadata).
-- KEYS[1] the lock. ARGV[1] token or owner id. ARGV[2] hold-after in ms:
-- '0' frees the lock (handing it to a waiter), more keeps it reserved that
-- long. ARGV[3] helper base. ARGV[4] '1' where the server is a cluster
-- node, whose slots can migrate (absent or '0': the guard below is
-- skipped, three calls saved).
-- Returns -1 another owner's (untouched), 0 gone (expired, free),
-- 1 released, n > 1 still held by the owner with n - 1 holds left.
local key, id = KEYS[1], ARGV[1]
local kind, holder = rl_holder(key)
if kind == 'none' then
    return 0
elseif holder ~= id then
    return -1
elseif kind == 'hash' then
    local left = redis.call('HINCRBY', key, 'holds', -1)
    if left > 0 then
        return left + 1
    end
end
if ARGV[2] ~= '0' then
    redis.call('SET', key, 'redislock:hold-after', 'PX', ARGV[2])
    return 1
end
-- On a cluster slot being migrated away, a helper key that has already
-- left (or was never made) cannot be touched: let that fail the script
-- here, before the DEL, so that it can be sent again whole. One key per
-- call: the importing node refuses a multi-key call it has only part of.
if ARGV[4] == '1' then
    for _, suffix in ipairs({'q', 'waiting', 'wake'}) do
        redis.call('EXISTS', ARGV[3] .. suffix)
    end
end
redis.call('DEL', key)
rl_handoff(key, ARGV[3])
return 1
