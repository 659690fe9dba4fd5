-- The resource side of fencing: a write that carries a fencing token older
-- than one already seen is refused, so a holder that paused past its lease
-- cannot overwrite the work of the holder after it.
-- KEYS[1] the resource, KEYS[2] the highest token that has written it.
-- ARGV[1] the value, ARGV[2] the writer's fencing token.
-- Returns 1 written, 0 refused (stale token). A token that is not a whole
-- number from 1 below 2^53 is refused with RLBADTOKEN, before any write:
-- stored, it would stop every later write (rl_counter_value).
local given = rl_counter_num(ARGV[2])
if not given or given < 1 then
    return redis.error_reply('RLBADTOKEN fencing token ' ..
                             string.sub(ARGV[2], 1, 40) ..
                             ' is not a whole number from 1 below 2^53')
end
local seen = rl_counter_value(KEYS[2], redis.call('GET', KEYS[2]) or '0')
if given < seen then
    return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
