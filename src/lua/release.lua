-- Compare-and-delete for both lock formats: a string holding the token
-- (plain locks, as redis-py and node-redlock write them) or a hash whose
-- owner field holds the owner id (reentrant locks, locks with metadata).
-- KEYS: the lock and the helpers a hand-off uses (rl_handoff). ARGV[1]
-- token or owner id. ARGV[2] hold-after in ms: '0' frees the lock (handing
-- it to a waiter), more keeps it reserved that long. ARGV[3] 'h' when the
-- caller holds it in the hash format (a guess for rl_holder), 'q' a plain
-- lock its holder queued for in fair mode (its waiters most likely
-- queue: see below), 'p' any other plain lock, 'z' a
-- share of a key held by many (share_acquire.lua: a semaphore's permit, a
-- reader's share), which is given back (its waiters woken) and takes no
-- hold-after (error RLNOHOLD). ARGV[4] the caller's last fencing token
-- ('' when not known): a hash of a later life than the caller's hold
-- (rl_ours) is not the caller's. ARGV[5] 'c' when the caller sends COPY
-- of the wake list to the readers' right behind (rl_handoff's copied).
-- Returns -1 another owner's (untouched), 0 gone (expired: free, or a
-- later life of the key, see rl_ours; a share: its lease ended), 1
-- released, n > 1 still held by the owner with n - 1 holds left.
-- In a cluster whose slot is being migrated, the server checks the KEYS
-- before the script runs (TRYAGAIN or ASK while some have moved), so the
-- script never meets half of them.
local K = rl_keys('lock fence q ws waiting wake rwake')
local key, id = K.lock, ARGV[1]
if ARGV[3] == 'q' and ARGV[2] == '0' then
    -- A plain lock taken by a fair call that queued: fair waiters most
    -- likely queue behind it, and a hand-off needs the fencing counter.
    -- Both are read at once, the queue without a look first, and the key
    -- is left for the hand-off to overwrite (rl_handoff's st.stale).
    local got = redis.call('MGET', key, K.fence)
    local v = got[1]
    if v and v ~= 'redislock:hold-after' then
        if rl_unmark(v) ~= id then
            return -1
        end
        rl_handoff(K, false, {kind = 'none', held = 0, stale = true}, true,
                   false, got[2])
        return 1
    end
end
if ARGV[3] == 'z' and ARGV[2] == '0' then
    -- A share, most likely: its score in one call (nil: the key or the
    -- share is gone). A key of another type answers WRONGTYPE and is read
    -- below as any other.
    local score = redis.pcall('ZSCORE', key, id)
    if type(score) ~= 'table' then
        if not score then
            return 0
        end
        return rl_share_release(K, id, score)
    end
end
local kind, holder, gen = rl_holder(key, ARGV[3] ~= 'h' and ARGV[3] ~= 'z')
if kind == 'zset' then
    -- A share (share_acquire.lua): no hold-after.
    if ARGV[2] ~= '0' then
        return redis.error_reply('RLNOHOLD ' .. key .. ' is held by many')
    end
    return rl_share_release(K, id)
elseif kind == 'none' then
    return 0
elseif holder ~= id then
    return -1
elseif kind == 'hash' then
    if not rl_ours(gen, ARGV[4]) then
        return 0
    end
    local left = redis.call('HINCRBY', key, 'holds', -1)
    if left > 0 then
        return left + 1
    end
end
if ARGV[2] ~= '0' then
    redis.call('SET', key, 'redislock:hold-after', 'PX', ARGV[2])
    return 1
end
redis.call('DEL', key)
rl_handoff(K, false, {kind = 'none', held = 0}, nil, ARGV[5] == 'c')
return 1
