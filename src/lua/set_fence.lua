-- A set over several servers (agroup.c) takes its groups of keys one
-- after another with set_acquire.lua, each group's fencing token at least
-- the one before: the last group's is the set's token. This raises an
-- earlier group's counters to it, so that every token any of its keys
-- gives later is past the set's (rl_count_write keeps a value ahead of
-- this server's clock for as long as its lead).
-- KEYS: for each lock of the group, the lock and its fencing counter.
-- ARGV[1] the token, ARGV[2] the set's fencing token, ARGV[3] the TTL in
-- ms.
-- Returns 1; 0 when some key no longer holds the token (nothing is
-- written: the set's acquire failed).
-- (K is not read: its rl_keys call tells the C side the first lock's
-- keys, embed_lua.cmake.)
local K = rl_keys('lock fence')
local S = rl_keys_each(2, 'lock fence')
local v = tonumber(ARGV[2])
local lasts = {}
for i = 1, S.n do
    local held = redis.pcall('GET', rl_set_key(S, i, 'lock'))
    if type(held) ~= 'string' or rl_unmark(held) ~= ARGV[1] then
        return 0
    end
    local fence = rl_set_key(S, i, 'fence')
    local last = redis.call('GET', fence)
    lasts[i] = last and rl_counter_value(fence, last) or 0
end
local now = rl_now_us()
for i = 1, S.n do
    if lasts[i] < v then
        rl_count_write(rl_set_key(S, i, 'fence'), v, now,
                       tonumber(ARGV[3]) + 1000)
    end
end
return 1
