-- A set's release when nobody waits for any of its keys, tried before
-- set_release.lua (rl__request's lean): the lock keys alone, no hand-off
-- looked for; and a plain lock's, its one key, tried before release.lua
-- on a server without a compare-and-delete of its own (since
-- 2026-12-07). Its tokens are of the native prefix, so a waiter that will
-- block behind one of its keys marks that key's value (rl_mark_holder).
-- Only when every key holds the token itself, unmarked, are they
-- deleted: 1. Anything else (a key gone, another owner's, of another
-- type, revoked, or marked by a waiter) writes nothing and answers 0,
-- and the request layer sends set_release.lua, whose answer the caller
-- gets.
-- KEYS: each lock of the set. ARGV[1] the token.
-- (Neither K nor S is read: the calls tell the C side the keys,
-- embed_lua.cmake; KEYS are the locks.)
local K = rl_keys('lock')
local S = rl_keys_each(1, 'lock')
local vals = redis.call('MGET', unpack(KEYS))
for i = 1, #KEYS do
    if vals[i] ~= ARGV[1] then
        return 0
    end
end
redis.call('DEL', unpack(KEYS))
return 1
