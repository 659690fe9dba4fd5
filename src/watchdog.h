/*
 * The watchdog: one renewal thread per client (made on first use), not one
 * per lock. It renews each watched lock every ttl/3 through the client's
 * connection pool, never re-creates a key that has gone (the extend script
 * compares the token), and reports a loss through the lock's state, an
 * eventfd and the caller's callback. Unwatching waits for a renewal in
 * flight, so no renewal is ever sent after release.
 */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include "redislock.h"

typedef struct rl__watchdog rl__watchdog;
struct rl__pool;
struct rl__topo;

/* Starts the renewal thread for client c. */
redislock_err rl__watchdog_new(redislock_client *c, rl__watchdog **out);

/* Stops and joins the thread. Every lock must have been unwatched.
 * Clean-up jobs still pending get up to one connect and one command
 * timeout to finish first. */
void rl__watchdog_free(rl__watchdog *wd);

/* Starts renewing l, acquired by a request sent at sent_us; the first
 * renewal at first_us (0: a third of the TTL after sent_us). Without
 * o->watchdog the watch is one renewal only (the extension of a short
 * hand-off lease). */
redislock_err rl__watch(redislock_lock *l, const redislock_acquire_options *o,
                        int64_t sent_us, int64_t first_us);

/* Stops renewing l, waiting for a renewal in flight. No-op if unwatched.
 * Called from the lock's owner thread. */
void rl__unwatch(redislock_lock *l);

/*
 * Hands the watchdog thread the clean-up of an acquire request req (for
 * token or owner id token) whose reply was lost (see rl__abandon): tried
 * at once and again every 50 ms until the server answers, for at most the
 * TTL plus a minute. Copies what it needs; the lock handle may be freed
 * meanwhile. Best effort: on memory exhaustion the lock expires by its
 * TTL.
 */
void rl__janitor_abandon(rl__watchdog *wd, struct rl__topo *t,
                         struct rl__pool *p, const char *key, size_t keylen,
                         const char *base, size_t baselen, const char *token,
                         const char *req, int64_t ttl_ms);

/* The loss eventfd of a watched lock, or -1. */
int rl__watch_fd(const redislock_lock *l);

#endif
