/*
 * An acquire's steps, which the engine (alock.c) sequences for the
 * blocking calls (on a private loop) and the event-loop API alike. Every
 * decision is taken here: which options are refused, the token, each
 * attempt's request, what an attempt's outcome means (taken, pause, give
 * up, abandon a lost reply), what a pause's end means, and what a lock
 * just taken needs (its lease, validity, guards).
 *
 * The driver calls rl__acq_begin, then repeatedly rl__acq_try and its
 * algorithm's attempt request, rl__acq_after_attempt and, after each
 * pause, rl__acq_after_pause; once taken rl__acq_take, when
 * rl__acq_confirm_due a confirming extend and rl__acq_confirmed, then
 * rl__acq_keep (and, when one fails, rl__acq_after_finish, which may send
 * the call back to a pause, and rl__acq_again, which may send it back to
 * an attempt), and rl__acq_end with the call's outcome.
 */
#ifndef RL_ACQUIRE_H
#define RL_ACQUIRE_H

#include <stdint.h>

#include "algo.h"
#include "lock.h"
#include "rand.h"
#include "wait.h"

/* One acquire call's settings, defaults filled in, and its progress. */
typedef struct rl__acq {
    const redislock_acquire_options *o;
    const char *id;   /* token or owner id */
    const char *req;  /* this call's requests' id (abandon.lua) */
    const char *fmt;  /* "plain", "hash" or "reentrant" */
    int rich;         /* hash format */
    int waits;        /* more than one attempt may be made */
    int strategy;     /* the caller chose how pauses grow */
    int queued;       /* a fair waiter in the queue */
    int handed;       /* a release handed the lock over */
    int was_queued;   /* queued at least once (fair) */
    int piped;        /* taken by an attempt sent behind a BLPOP */
    int lapsed;       /* that lease had ended when confirmed (given back) */
    int refused;      /* the guard refused the lock taken (given back) */
    int blind;        /* this pause waits out a failover: no wake-up */
    int tracked;      /* the last attempt's read was tracked (track.h) */
    int free_retries; /* attempts in a row that found the lock free */
    int tries;        /* attempts made */
    int native;       /* plain tokens of RL_NATIVE_TOKEN_PREFIX (rand.h) */
    int64_t t0_us;    /* the call's start (CLOCK_MONOTONIC us) */
    int64_t start_ms, deadline_ms; /* the wait's (CLOCK_MONOTONIC ms) */
    int64_t ttl_ms;
    int64_t lock_delay_ms; /* the handle's own for a re-entry */
    int64_t delay_ms, cap_ms;
    char tok[RL_LOCK_TOKEN_LEN + 1]; /* a plain lock's token */
    char nonce[RL_TOKEN_HEXLEN + 1]; /* req for a lock with an owner id */
    /* The engine's ways, set after rl__acq_begin, with its context drv:
     * who makes sure an abandoned attempt holds nothing (a sweep on the
     * loop; settle: a give-back, which a blocking call waits for as for a
     * release, where a lost attempt's sweep is left to the background); and who
     * renews a lock just taken (the loop, or for a private loop's the
     * client's keeper thread). */
    void (*abandon)(void *drv, redislock_lock *l, const rl__try *t, int settle);
    redislock_err (*watch)(void *drv, redislock_lock *l,
                           const redislock_acquire_options *o, int64_t sent_us,
                           int64_t first_us);
    void *drv;
} rl__acq;

/* What an acquire does next. */
typedef enum rl__next {
    RL_NEXT_ATTEMPT, /* try again now */
    RL_NEXT_PAUSE,   /* pause (its length given), then try again */
    RL_NEXT_DONE     /* stop: the outcome is given */
} rl__next;

/* Checks opts (REDISLOCK_EINVAL with the reason for what the handle or
 * its algorithm cannot do) and sets a up: token, request id, the wait's
 * start and deadline. */
redislock_err rl__acq_begin(redislock_lock *l,
                            const redislock_acquire_options *opts, rl__acq *a);

/* The request of attempt number tries (0 the first) into t: a fresh
 * token where the algorithm voids a failed one. */
redislock_err rl__acq_try(redislock_lock *l, rl__acq *a, int tries,
                          int64_t deadline, rl__try *t);

/* After an attempt that came back with *err (or could not be sent):
 * RL_NEXT_DONE with *err the call's outcome (REDISLOCK_OK: taken; an
 * attempt whose reply was lost is abandoned), or RL_NEXT_PAUSE with the
 * pause in *pause: behind a holder, or, with a->blind set, while the
 * key's node is being replaced (a failover), which a wait rides out
 * for as long as it lasts; such a pause is a plain sleep or timer, with
 * no wake-up to listen for on a node that is gone. */
rl__next rl__acq_after_attempt(redislock_lock *l, rl__acq *a,
                               redislock_err *err, int64_t *pause);

/* The last attempt, whose reply was lost or will not be waited for,
 * must not hold the lock, now or when it arrives late: the algorithm
 * sees to it (a sweep on the engine, a->abandon), unless a
 * failed attempt has undone itself. */
void rl__acq_abandon(redislock_lock *l, const rl__acq *a);

/* After a pause that ended with res, its last attempt sent at sent_us:
 * whether the lock was handed over to the waiter (the acquire is done,
 * and holds it); else it attempts again. */
int rl__acq_after_pause(redislock_lock *l, rl__acq *a, rl__wait_result res,
                        int64_t sent_us);

/* The handle holds the lock (lease, validity from sent_us); refused
 * (given back, REDISLOCK_ENOTDURABLE) when a strict guard did not
 * confirm enough. */
redislock_err rl__acq_take(redislock_lock *l,
                           const redislock_acquire_options *opts, rl__acq *a,
                           int64_t sent_us);

/* Whether the lease just taken must be confirmed before the caller
 * counts on it: an attempt sent behind a BLPOP took it, and its validity,
 * counted from before the block, is under half the lease. */
int rl__acq_confirm_due(const redislock_lock *l, const rl__acq *a);

/* The confirming extend ended with err (the validity moved on success):
 * on failure the lock is given back (a->lapsed set when the lease had
 * ended: rl__acq_again) and the error returned. */
redislock_err rl__acq_confirmed(redislock_lock *l, rl__acq *a,
                                redislock_err err);

/* The watchdog opts asks for (or a hand-off's short lease needs), from
 * sent_us; without it the lock is given back and the error returned. */
redislock_err rl__acq_keep(redislock_lock *l,
                           const redislock_acquire_options *opts, rl__acq *a,
                           int64_t sent_us);

/* Once the call would end with an error: whether it tries again
 * instead, because the lease it confirmed had lapsed (rl__acq_confirmed)
 * and its wait has time left; the next attempts carry a fresh request id
 * (the lock given back may have voided the last). 0 with *err set when
 * no id can be made. */
int rl__acq_again(rl__acq *a, redislock_err *err);

/* After rl__acq_take, the confirming extend or rl__acq_keep failed with
 * *err: RL_NEXT_PAUSE with the pause
 * in *pause (a->blind set) when the guard refused the lock, which was
 * given back, while the key's node is being replaced, and the wait has
 * time left: the next attempts carry a fresh request id (the lock given
 * back may have voided the last). Else RL_NEXT_DONE, *err the call's
 * outcome. */
rl__next rl__acq_after_finish(redislock_lock *l, rl__acq *a, redislock_err *err,
                              int64_t *pause);

/* A watch of l (its lease acquired by a request sent at sent_us, the
 * first renewal due at first_us, 0: a third of the TTL on) that a loop
 * drives (watchdog.h), into l->watch; with efd, with a loss eventfd (a
 * blocking call's lock, which the keeper renews). */
redislock_err rl__acq_watch_loop(redislock_lock *l,
                                 const redislock_acquire_options *o,
                                 int64_t sent_us, int64_t first_us, int efd);

/* The call ended with err: its event, for calls that tried. */
void rl__acq_end(redislock_lock *l, const rl__acq *a, redislock_err err);

#endif
