-- The key check (the REDISLOCK_LUA_KEYCHECK build option; never in a
-- release build): lua_keycheck.cmake joins this file into one line put in
-- front of a script's first line (so the script's own lines keep their
-- numbers) and sends every redis.call and redis.pcall of the script
-- through rl_kc_call and rl_kc_pcall. A key argument that is not in KEYS,
-- or a command the table below does not know, is logged as
-- "RLKEYCHECK <what> in <COMMAND> of <script> (KEYS[1] <key>)" at warning
-- level; in strict mode the script then fails with that error (pcall
-- included: the script must not be able to swallow it). Otherwise the
-- command runs, and its reply or error comes back as redis.call or
-- redis.pcall gives it.
-- Written on one line: only whole-line comments, no "--" after code.
local rl_kc_script, rl_kc_strict = '@RL_KC_SCRIPT@', @RL_KC_STRICT@
-- The key arguments of each command, from the Redis command docs: first,
-- last (negative: counted back from the last argument, -1 being it) and
-- step; {0, 0, 0} for a command without keys.
local rl_kc_spec = {
    DEL = {1, -1, 1}, EXISTS = {1, -1, 1}, UNLINK = {1, -1, 1},
    TOUCH = {1, -1, 1}, MGET = {1, -1, 1}, MSET = {1, -1, 2},
    -- As the set scripts send it: numkeys, the pairs, then PX ms.
    MSETEX = {2, -4, 2},
    GET = {1, 1, 1}, SET = {1, 1, 1}, GETDEL = {1, 1, 1},
    PSETEX = {1, 1, 1}, SETNX = {1, 1, 1}, STRLEN = {1, 1, 1},
    INCR = {1, 1, 1}, INCRBY = {1, 1, 1}, DECR = {1, 1, 1},
    DECRBY = {1, 1, 1}, TYPE = {1, 1, 1}, TTL = {1, 1, 1},
    PTTL = {1, 1, 1}, EXPIRE = {1, 1, 1}, PEXPIRE = {1, 1, 1},
    PEXPIREAT = {1, 1, 1}, PERSIST = {1, 1, 1},
    HSET = {1, 1, 1}, HGET = {1, 1, 1}, HMGET = {1, 1, 1},
    HDEL = {1, 1, 1}, HEXISTS = {1, 1, 1}, HLEN = {1, 1, 1},
    HGETALL = {1, 1, 1}, HINCRBY = {1, 1, 1},
    LPUSH = {1, 1, 1}, RPUSH = {1, 1, 1}, LPOP = {1, 1, 1},
    RPOP = {1, 1, 1}, LLEN = {1, 1, 1}, LRANGE = {1, 1, 1},
    LREM = {1, 1, 1}, LINDEX = {1, 1, 1},
    ZADD = {1, 1, 1}, ZREM = {1, 1, 1}, ZRANGE = {1, 1, 1},
    ZPOPMIN = {1, 1, 1}, ZSCORE = {1, 1, 1}, ZCARD = {1, 1, 1},
    ZRANK = {1, 1, 1}, ZCOUNT = {1, 1, 1}, ZREMRANGEBYSCORE = {1, 1, 1},
    ZRANGEBYSCORE = {1, 1, 1}, ZREVRANGEBYSCORE = {1, 1, 1},
    ZREVRANGE = {1, 1, 1},
    XADD = {1, 1, 1}, XRANGE = {1, 1, 1}, XREVRANGE = {1, 1, 1},
    TIME = {0, 0, 0}, PING = {0, 0, 0}, ECHO = {0, 0, 0},
    -- A channel is not a key (SPUBLISH's is routed like one, but it is
    -- not a key a script must declare).
    PUBLISH = {0, 0, 0}, SPUBLISH = {0, 0, 0},
}
-- A key name as the log and the error show it: spaces, control bytes and
-- backslashes as \xNN, so that a line names one key.
local function rl_kc_show(k)
    return (string.gsub(tostring(k), '[%c%s\\\128-\255]', function(c)
        return string.format('\\x%02x', string.byte(c))
    end))
end
local rl_kc_declared = {}
for _, k in ipairs(KEYS) do
    rl_kc_declared[k] = true
end
-- Logs each violation of one call; raises the first in strict mode.
local function rl_kc_check(cmd, ...)
    local name = string.upper(tostring(cmd))
    local spec, n, bad = rl_kc_spec[name], select('#', ...), {}
    if spec == nil then
        bad[1] = 'unknown command'
    elseif spec[1] > 0 then
        local last = spec[2]
        if last < 0 then
            last = n + 1 + last
        end
        for i = spec[1], math.min(last, n), spec[3] do
            local k = tostring((select(i, ...)))
            if not rl_kc_declared[k] then
                bad[#bad + 1] = 'undeclared key ' .. rl_kc_show(k)
            end
        end
    end
    for _, what in ipairs(bad) do
        local msg = 'RLKEYCHECK ' .. what .. ' in ' .. name .. ' of ' ..
                    rl_kc_script
        redis.log(redis.LOG_WARNING,
                  msg .. ' (KEYS[1] ' .. rl_kc_show(KEYS[1]) .. ')')
        if rl_kc_strict then
            error(redis.error_reply(msg))
        end
    end
end
local function rl_kc_call(...)
    rl_kc_check(...)
    return redis.call(...)
end
local function rl_kc_pcall(...)
    rl_kc_check(...)
    return redis.pcall(...)
end
