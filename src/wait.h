/*
 * Blocking between attempts without polling: a waiter blocks with BLPOP on
 * its lock's helper lists, on a connection of its own, and the release
 * script wakes it (one waiter per release) or, for fair waiters, hands it
 * the lock. redislock_cancel() pushes to the waiter's own list to wake it.
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

/*
 * Blocks up to pause_ms for a wake-up meant for the waiter named token.
 * fair: listen only for a hand-off to this waiter; otherwise also for the
 * lock's shared wake list. A pause under 1 ms returns RL_WAIT_TIMEOUT.
 *
 * Redis checks blocking timeouts only on its periodic tick (every 100 ms
 * at the default hz 10), so a pause shorter than RL_BLOCK_MIN_MS is slept
 * here instead, precisely, and is not cut short by a release.
 */
#define RL_BLOCK_MIN_MS 250
/* The server's default tick (hz 10). */
#define RL_SERVER_TICK_MS 100
redislock_err rl__wait(redislock_lock *l, const char *token, int fair,
                       int64_t pause_ms, rl__wait_result *res);

/* The fencing token and the lease granted by the last RL_WAIT_HANDOFF are
 * stored in l->fence and l->handoff_lease. */

/* Wakes a waiter blocked in rl__wait on l (any thread). */
void rl__wait_interrupt(redislock_lock *l);

#endif
