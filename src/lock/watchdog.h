/*
 * A watched lease's decisions: when its next renewal is due, whether to
 * send it (not past the validity, not past the caps), what a renewal's
 * outcome means (the next one, a retry, or the loss), and the loss report
 * through the holder's state, an eventfd and the caller's callback. It
 * sends nothing and reads nothing of the lock handle: a loop drives it
 * (alock.c's renewals, on an application's loop or on the client's keeper
 * thread, keeper.c), and the lease's holder answers through rl__lease.
 */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include <stdint.h>

#include "redislock.h"

typedef struct rl__watch rl__watch;

/* What a watch needs of the lease it watches, from the lease's holder
 * (the lock handle, which the watch passes back and never reads). */
typedef struct rl__lease {
    /* The end of the lease's validity (CLOCK_MONOTONIC us; 0: none). */
    int64_t (*valid_until)(const redislock_lock *l);
    /* Records a loss; whether this call recorded it (the first wins). */
    int (*lost)(redislock_lock *l, redislock_err why);
} rl__lease;

/* Starts watching the lease of l (of ttl_ms, acquired by a request sent
 * at sent_us) through lease: the first renewal due at first_us (0: a
 * third of the TTL after sent_us). Without o->watchdog the watch is one
 * renewal only (the extension of a short hand-off lease); o's on_lost
 * and caps apply. With efd (a blocking call's lock, which the keeper
 * renews) a watch with o->watchdog has a loss eventfd. *out gets it. */
redislock_err rl__watch_start(const rl__lease *lease, redislock_lock *l,
                              int64_t ttl_ms,
                              const redislock_acquire_options *o,
                              int64_t sent_us, int64_t first_us, int efd,
                              rl__watch **out);

/* Its driver, at rl__watch_due, calls rl__watch_before, and on
 * RL_RENEW_SEND sends the renewal itself and gives its outcome, with
 * when it was sent, to rl__watch_after. KEEP: the next renewal is due at
 * rl__watch_due; DROP: the watch is over (a loss was reported, or a
 * one-shot is done). */
typedef enum { RL_RENEW_SEND, RL_RENEW_KEEP, RL_RENEW_DROP } rl__renew_step;

int64_t rl__watch_due(const rl__watch *w);
rl__renew_step rl__watch_before(rl__watch *w);
rl__renew_step rl__watch_after(rl__watch *w, redislock_err err,
                               int64_t sent_us);

/* Frees a watch its driver no longer drives. NULL is a no-op. */
void rl__watch_stop(rl__watch *w);

/* The watch's loss eventfd, or -1 (NULL: -1). */
int rl__watch_efd(const rl__watch *w);

#endif
