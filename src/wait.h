/*
 * Blocking between attempts without polling. An ordinary waiter blocks
 * with BLPOP on its lock's wake list (a release wakes one waiter; a
 * reader of a lock taken shared has a list of its own) and its
 * own list (where redislock_cancel() pushes), on the idle connection its
 * attempt used, out of the pool while it blocks, with its next attempt
 * behind the BLPOP (rl__then). A fair waiter stays subscribed to a channel
 * of its handle's, on which a release tells it that the lock was handed
 * to it (a channel is not a key, so the release script names only keys it
 * declares) and redislock_cancel() tells it to stop.
 */
#ifndef RL_WAIT_H
#define RL_WAIT_H

#include "lock.h"

typedef enum rl__wait_result {
    RL_WAIT_TIMEOUT,  /* the pause ran out: try again */
    RL_WAIT_WOKEN,    /* a release freed the lock: try again now */
    RL_WAIT_HANDOFF,  /* a release handed the lock to this waiter */
    RL_WAIT_CANCELLED /* redislock_cancel() */
} rl__wait_result;

/* The next attempt of an ordinary waiter, sent right behind its BLPOP in
 * the same write (rl__request's first): Redis runs it as soon as the
 * BLPOP is served, so the release that wakes the waiter is followed by
 * its attempt with no round trip between, before other clients' next
 * requests. Only where nothing routes the request (one server, not a
 * cluster). */
typedef struct rl__then {
    rl__request *q;    /* the attempt's script (its keys left to the wait) */
    const char *req;   /* its request id, whose void key it takes */
    int ran;           /* set when q was sent: its outcome is below */
    redislock_err err; /* REDISLOCK_OK with its reply in r, or why not (a
                          lost reply when the connection failed) */
    rl__reply *r;
} rl__then;

/*
 * Blocks up to pause_ms for a wake-up meant for the waiter named token,
 * or with fair, for a hand-off to the call whose request id is req (at
 * the place in the queue its last attempt got, l->wait_seq). A pause
 * under 1 ms returns RL_WAIT_TIMEOUT.
 *
 * Redis checks blocking timeouts only on its periodic tick (every 100 ms
 * at the default hz 10), so an ordinary waiter's pause shorter than
 * RL_BLOCK_MIN_MS is slept here instead, precisely, and is not cut short
 * by a release. A fair waiter's listen is timed here.
 *
 * then (NULL for none; ordinary waiters only) is the next attempt, sent
 * behind the BLPOP when the wait blocks on the server; then->ran says
 * whether it was.
 */
#define RL_BLOCK_MIN_MS 250
/* The server's default tick (hz 10). */
#define RL_SERVER_TICK_MS 100
redislock_err rl__wait(redislock_lock *l, const char *token, const char *req,
                       int fair, int64_t pause_ms, rl__then *then,
                       rl__wait_result *res);

/* The channel hand-offs to l come on (l's helper base, "c:", a random
 * id), made on first use; NULL when it cannot be made. */
const char *rl__wait_channel(redislock_lock *l, size_t *len);

/* Whether the channel is a shard channel (SSUBSCRIBE, SPUBLISH): in a
 * Redis Cluster, where it lives on the key's master. */
int rl__wait_sharded(const redislock_lock *l);

/* The fencing token and the lease granted by the last RL_WAIT_HANDOFF are
 * stored in l->fence and l->handoff_lease. */

/* What the message m (a payload on l's channel) says to a fair wait of
 * request req: RL_WAIT_HANDOFF (l->fence and l->handoff_lease set) when
 * a release handed the lock to it at its place in the queue,
 * RL_WAIT_CANCELLED for a cancel in force, else RL_WAIT_TIMEOUT (go on
 * listening); REDISLOCK_EPROTOCOL for a hand-off that does not parse.
 * The event loop's fair waiters hear messages through this too. */
redislock_err rl__wait_told(redislock_lock *l, const char *req, const char *m,
                            rl__wait_result *res);

/* Wakes a waiter blocked in rl__wait on l (any thread). */
void rl__wait_interrupt(redislock_lock *l);

#endif
