/*
 * Typed decoders of the scripts' replies, in one place: the shape each
 * script answers with is checked here, and a reply of another shape is
 * REDISLOCK_EPROTOCOL naming the script, whichever algorithm (one server,
 * or each server of a Redlock quorum) sent it.
 */
#ifndef RL_REPLY_H
#define RL_REPLY_H

#include <stdint.h>

#include "conn.h"
#include "script.h"

/* What the acquire scripts answer: {1, holds, fence} when taken (then a
 * key's life), but for a plain lock, a share or a set (acquire.lua,
 * share_acquire.lua, set_acquire.lua), taken: its fence alone, as an
 * integer, negated when someone waits; {0, pttl, wakes} when another
 * owner holds the lock, and fair.lua then the waiter's place in the queue
 * (set_acquire.lua the refusing key's) as a fourth. */
typedef struct rl__acquired {
    int taken;
    int64_t holds;      /* taken: this owner's holds */
    int64_t fence;      /* taken: the fencing token, positive */
    int64_t gen;        /* taken: the key's life (rl_create), 0 unknown */
    int waiters;        /* taken: someone waited for the key meanwhile */
    int64_t holder_ttl; /* held: the holder's PTTL (-1 none, -2 unknown) */
    int silent;         /* held: its release wakes nobody (rl_wakes 0) */
    int64_t seq;        /* held, fair: the waiter's place; 0 for none */
} rl__acquired;

/* A fencing token from a server must be positive: REDISLOCK_EPROTOCOL
 * (naming what) for one that is not, else REDISLOCK_OK. */
redislock_err rl__check_fence(long long fence, const char *what);

/* Whether the acquire script s, asked for format fmt ("plain", "hash",
 * "reentrant"; a share's and a set's is not read), answers a taken lock
 * by a bare integer: acquire.lua for a plain lock, share_acquire.lua and
 * set_acquire.lua. */
int rl__acquire_bare(const rl__script *s, const char *fmt);

/* Decodes an acquire script's reply into *a; REDISLOCK_EPROTOCOL for a
 * reply of another shape or a fencing token that is not positive. bare:
 * rl__acquire_bare of the request (any other acquire answering an
 * integer is EPROTOCOL). */
redislock_err rl__reply_acquired(const rl__reply *r, int bare, rl__acquired *a);

/* Decodes an owner script's reply (release.lua, extend.lua: 1 or more
 * done, 0 gone, -1 another owner's; an extend's {1, reason}: done, but
 * the lock was revoked) into *n and maps it: REDISLOCK_OK,
 * REDISLOCK_EEXPIRED, REDISLOCK_ELOST or REDISLOCK_EREVOKED (the detail
 * naming the reason); REDISLOCK_EPROTOCOL for a reply of another shape.
 * what names the script. */
redislock_err rl__reply_owner(const rl__reply *r, const char *what,
                              long long *n);

#endif
