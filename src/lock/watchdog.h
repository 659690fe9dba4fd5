/*
 * The watchdog: one renewal thread per client (made on first use), not one
 * per lock. It renews each watched lease every ttl/3 through the callbacks
 * its holder gives (rl__lease: the lock's extend never re-creates a key
 * that has gone), and reports a loss through the holder's state, an
 * eventfd and the caller's callback. It reads nothing of the lock handle.
 * Stopping a watch waits for a renewal in flight, so no renewal is ever
 * sent after release. Its janitor retries the abandon of lost requests.
 */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include <stdint.h>

#include "keys.h"
#include "redislock.h"

typedef struct rl__watchdog rl__watchdog;
typedef struct rl__watch rl__watch;
struct rl__pool;
struct rl__topo;

/* What the watchdog needs of a lease it renews, from the lease's holder
 * (the lock handle, which the watchdog passes back and never reads). */
typedef struct rl__lease {
    /* Extends the lease by its TTL; on success the validity moves
     * forward. REDISLOCK_EEXPIRED and REDISLOCK_ELOST are final. */
    redislock_err (*renew)(redislock_lock *l);
    /* The end of the lease's validity (CLOCK_MONOTONIC us; 0: none). */
    int64_t (*valid_until)(const redislock_lock *l);
    /* Records a loss; whether this call recorded it (the first wins). */
    int (*lost)(redislock_lock *l, redislock_err why);
} rl__lease;

/* Starts a renewal thread (one per client: see rl__client_watchdog). */
redislock_err rl__watchdog_new(rl__watchdog **out);

/* Stops and joins the thread. Every lock must have been unwatched.
 * Clean-up jobs still pending get up to one connect and one command
 * timeout to finish first. */
void rl__watchdog_free(rl__watchdog *wd);

/* Starts renewing the lease of l (of ttl_ms, acquired by a request sent
 * at sent_us) through lease: the first renewal at first_us (0: a third of
 * the TTL after sent_us). Without o->watchdog the watch is one renewal
 * only (the extension of a short hand-off lease); o's on_lost and caps
 * apply. *out gets the watch. */
redislock_err rl__watch_start(rl__watchdog *wd, const rl__lease *lease,
                              redislock_lock *l, int64_t ttl_ms,
                              const redislock_acquire_options *o,
                              int64_t sent_us, int64_t first_us,
                              rl__watch **out);

/* With wd NULL, rl__watch_start makes a watch that its caller drives
 * (an event loop's, alock.c) rather than the thread, with no eventfd:
 * at rl__watch_due it calls rl__watch_before, and on RL_RENEW_SEND sends
 * the renewal itself and gives its outcome to rl__watch_after. KEEP: the
 * next renewal is due at rl__watch_due; DROP: the watch is over (a loss
 * was reported, or a one-shot is done). The same decisions as the
 * thread's. */
typedef enum { RL_RENEW_SEND, RL_RENEW_KEEP, RL_RENEW_DROP } rl__renew_step;

int64_t rl__watch_due(const rl__watch *w);
rl__renew_step rl__watch_before(rl__watch *w);
rl__renew_step rl__watch_after(rl__watch *w, redislock_err err);

/* Stops a watch, waiting for a renewal in flight, and frees it. NULL is
 * a no-op. Called from the lock's owner thread. */
void rl__watch_stop(rl__watch *w);

/* The watch's loss eventfd, or -1 (NULL: -1). */
int rl__watch_efd(const rl__watch *w);

/*
 * Hands the watchdog thread the clean-up of an acquire request req (for
 * token or owner id token) whose reply was lost (see rl__abandon): tried
 * at once and again every 50 ms until the server answers, for at most the
 * TTL plus a minute. Copies what it needs; the lock handle may be freed
 * meanwhile. Best effort: on memory exhaustion the lock expires by its
 * TTL.
 */
void rl__janitor_abandon(rl__watchdog *wd, struct rl__topo *t,
                         struct rl__pool *p, const rl__lockname *names, int n,
                         const char *token, const char *req, int64_t ttl_ms);

#endif
