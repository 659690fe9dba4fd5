-- A holder's sequencer (Chubby's name): the proof that a resource can
-- show the lock's server to ask whether the writer that brought it still
-- holds the lock (seqcheck.lua). Its secret part is a digest of the
-- holder's token or owner id, since whoever knows a token can release
-- the lock; the server computes it, so that the client needs no hash of
-- its own, and only while the caller still holds the lock.
-- KEYS: the lock. ARGV as an owner script's (rl__lock_owner_args): the
-- token or owner id, '' (unused), the format ('h' a hash, 'z' a share,
-- else plain) and the holder's last fencing token ('' when unknown).
-- Returns {1, digest} while the caller holds the lock, 0 when the lock
-- has gone (expired, free), -1 when it is another's (or a later life of
-- the owner id's), -3 for a share (not yet).
local K = rl_keys('lock')
local key, id, fmt, fence = K.lock, ARGV[1], ARGV[3], ARGV[4]
if fmt == 'z' then
    return -3
end
local kind, holder, gen = rl_holder(key, fmt ~= 'h')
if kind == 'none' then
    return 0
elseif holder ~= id or (kind == 'hash' and not rl_ours(gen, fence)) then
    return -1
end
return {1, redis.sha1hex(id)}
