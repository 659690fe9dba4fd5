-- Leader election's record (redislock_campaign(3)). An election is a hash
-- lock whose owner id is the leader's, whose meta is its value and whose
-- gen (the fencing token its life began with, see rl_create) is its term.
-- Each change of leader or value is appended to the stream KEYS[2], in the
-- lock's slot, in the same script as the change and only by the holder of
-- that term: so the record and the lock cannot disagree, and a leader
-- whose lease has run out appends nothing. An entry's stream ID is n-0,
-- n counting the entries of this stream's life from 1, so that an
-- observer reads "the one after n" with one XRANGE and tells a gap (the
-- stream trimmed, or gone and begun again) from n alone.
-- KEYS: the lock, the record. ARGV[1] the operation:
--   'elected', 'proclaimed', 'resigned' (ARGV[2] the owner id, ARGV[3]
--   the term, ARGV[4] the value): appends the entry while that owner id
--   holds the lock in that term ('proclaimed' sets the value first).
--   Returns {1, n}, or 0 when the lock has gone (expired, free, or a
--   later life of the owner id), -1 when another holds it.
--   'read' (ARGV[2] the last n seen, -1 for none wanted): returns {top,
--   entry, owner, term, value, pttl, topterm, seenterm}: top the last
--   entry's n (0: none), entry {n, kind, term, id, value} the first
--   after ARGV[2] or false, then the lock's holder as it is now (false
--   for each when it has none, or is not a hash lock), the last entry's
--   term and entry ARGV[2]'s (false when there is none): an observer
--   tells by that term whether the entry it saw last is still the
--   record's (a failover that lost the record's tail, or a record
--   begun again, may have put another under that n).
local K = rl_keys('lock elect')
local op = ARGV[1]

-- How long a record outlives its last change (7 days): an election quiet
-- for longer starts its count again, which observers see as a gap.
local RL_ELECT_KEEP = 604800000
-- The entries kept, about (MAXLEN ~): observers further behind see a gap.
local RL_ELECT_CAP = 1000

-- An entry's field f.
local function field(e, f)
    for i = 1, #e[2], 2 do
        if e[2][i] == f then
            return e[2][i + 1]
        end
    end
    return false
end

-- The last entry's n, 0 when there is none, and its term. A record with
-- no entries left would refuse the next ID it is given, so it is
-- dropped.
local function top()
    local e = redis.call('XREVRANGE', K.elect, '+', '-', 'COUNT', 1)
    if #e == 0 then
        redis.call('DEL', K.elect)
        return 0, false
    end
    return tonumber(string.match(e[1][1], '^(%d+)-')), field(e[1], 'term')
end

if op == 'read' then
    local after = tonumber(ARGV[2])
    local last, lastterm = top()
    local entry, seen = false, false
    if after >= 0 and last >= after then
        -- Entry n (its term) and the first after it, in one range.
        local e = redis.call('XRANGE', K.elect, string.format('%d-0', after),
                             '+', 'COUNT', 2)
        local i = 1
        if #e > 0 and tonumber(string.match(e[1][1], '^(%d+)-')) == after then
            seen = field(e[1], 'term')
            i = 2
        end
        if e[i] then
            entry = {tonumber(string.match(e[i][1], '^(%d+)-')),
                     field(e[i], 'kind'), field(e[i], 'term'),
                     field(e[i], 'id'), field(e[i], 'value')}
        end
    end
    local kind, holder, gen = rl_holder(K.lock, false)
    if kind ~= 'hash' or not holder then
        return {last, entry, false, false, false, -2, lastterm, seen}
    end
    local value = redis.call('HGET', K.lock, 'meta')
    return {last, entry, holder, gen or false, value,
            redis.call('PTTL', K.lock), lastterm, seen}
end

if op ~= 'elected' and op ~= 'proclaimed' and op ~= 'resigned' then
    return redis.error_reply('ERR elect: unknown operation')
end
local id, term, value = ARGV[2], ARGV[3], ARGV[4]
local kind, holder, gen = rl_holder(K.lock, false)
if kind == 'none' then
    return 0
elseif kind ~= 'hash' or holder ~= id then
    return -1
elseif gen ~= term then
    return 0
end
if op == 'proclaimed' then
    if value == '' then
        redis.call('HDEL', K.lock, 'meta')
    else
        redis.call('HSET', K.lock, 'meta', value)
    end
end
local n = (top()) + 1
redis.call('XADD', K.elect, 'MAXLEN', '~', RL_ELECT_CAP,
           string.format('%d-0', n), 'kind', op, 'term', term, 'id', id,
           'value', value)
redis.call('PEXPIRE', K.elect, RL_ELECT_KEEP)
return {1, n}
