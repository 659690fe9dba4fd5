/*
 * What a waiter hears: the ends of a pause, and a fair waiter's channel.
 * A fair waiter stays subscribed to a channel of its handle's, on which a
 * release tells it that the lock was handed to it (a channel is not a
 * key, so the release script names only keys it declares). The pauses
 * themselves are the engine's (alock.c).
 */
#ifndef RL_WAIT_H
#define RL_WAIT_H

#include "lock.h"

typedef enum rl__wait_result {
    RL_WAIT_TIMEOUT, /* the pause ran out: try again */
    RL_WAIT_WOKEN,   /* a release freed the lock: try again now */
    RL_WAIT_HANDOFF  /* a release handed the lock to this waiter */
} rl__wait_result;

/*
 * Redis checks blocking timeouts only on its periodic tick (every 100 ms
 * at the default hz 10), so an ordinary waiter's pause shorter than
 * RL_BLOCK_MIN_MS is a timer of the loop's instead, precise, and on a
 * private loop not cut short by a release; a longer one blocks (BLPOP on
 * the wake list, the next attempt behind it) until a tick before its end.
 */
#define RL_BLOCK_MIN_MS 250
/* The server's default tick (hz 10). */
#define RL_SERVER_TICK_MS 100

/* The channel hand-offs to l come on (l's helper base, "c:", a random
 * id), made on first use; NULL when it cannot be made. */
const char *rl__wait_channel(redislock_lock *l, size_t *len);

/* Whether the channel is a shard channel (SSUBSCRIBE, SPUBLISH): in a
 * Redis Cluster, where it lives on the key's master. */
int rl__wait_sharded(const redislock_lock *l);

/* What the message m (a payload on l's channel) says to a fair wait of
 * request req: RL_WAIT_HANDOFF (l->fence and l->handoff_lease set) when
 * a release handed the lock to it at its place in the queue (l->wait_seq),
 * else RL_WAIT_TIMEOUT (go on listening); REDISLOCK_EPROTOCOL for a
 * hand-off that does not parse. */
redislock_err rl__wait_told(redislock_lock *l, const char *req, const char *m,
                            rl__wait_result *res);

#endif
