-- The resource side of fencing: a write that carries a fencing token older
-- than one already seen is refused, so a holder that paused past its lease
-- cannot overwrite the work of the holder after it.
-- KEYS[1] the resource, KEYS[2] the highest token that has written it.
-- ARGV[1] the value, ARGV[2] the writer's fencing token.
-- Returns 1 written, 0 refused (stale token).
local seen = rl_counter_value(KEYS[2], redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) < seen then
    return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
