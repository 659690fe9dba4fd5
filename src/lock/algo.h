/*
 * Lock algorithms: how a lock handle's requests are decided. One server
 * holds each key (single, sharded and cluster clients: one.c), or a
 * majority of independent servers does (Redlock: redlock.c). The client's
 * constructor picks one (rl__client_algo in env.h); the lock code calls
 * through the table and never asks which topology it runs on. A new lock
 * kind, or a new way of deciding, is a new table.
 */
#ifndef RL_ALGO_H
#define RL_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"
#include "quorum.h"

/* One acquire attempt's request, as acquire.c built it. */
typedef struct rl__try {
    const char *id;   /* token or owner id */
    const char *req;  /* the request's own id (abandon.lua) */
    const char *fmt;  /* "plain", "hash" or "reentrant" */
    const char *meta; /* "" for none */
    int64_t ttl_ms;   /* the lease */
    int64_t delay_ms; /* the lock-delay: the key's TTL is ttl_ms + this */
    int64_t drift_ms; /* subtracted from the validity */
    int fair;         /* FIFO queue (fair.lua) */
    int limit; /* a share (share_acquire.lua): a semaphore's permit of this
                  limit, or RL_LIMIT_SHARED; 0: a lock */
    int64_t mark_ms; /* how long the caller may block (waiting marker) */
    int waited;      /* a retry of its acquire: it may have waited behind the
                        key l->wait_name names (and taken that key's wake) */
} rl__try;

/* An attempt as one script request, with the storage of its arguments:
 * for a driver that sends it itself (the event loop's, alock.c). The
 * request's keys are left to the sender (rl__lock_send_async). */
typedef struct rl__attempt_req {
    char ttl[24], mark[24], limit[16], woke[16];
    const char *args[8];
    size_t lens[8];
    rl__request q;
} rl__attempt_req;

typedef struct rl__algo {
    /* Whether a release wakes waiters blocked on the lock's server; if not,
     * waiters retry after a jittered pause. */
    int wakes;
    /* Whether an attempt that failed was undone everywhere (its token
     * voided), so the next attempt takes a fresh token. */
    int fresh_token;
    /* Why fair mode, fenced writes, semaphores, shared locks or sets of
     * keys cannot be had: the detail of REDISLOCK_EINVAL; NULL when they
     * can. */
    const char *no_fair;
    const char *no_fenced_set;
    const char *no_semaphore;
    const char *no_shared;
    const char *no_set;
    /* The attempt t as one script request on the key's server, and what
     * its reply r (or its failure err) says: REDISLOCK_OK with l->fence
     * set, or REDISLOCK_EHELD with l->holder_ttl (and l->holder_silent)
     * set, or a failure (r is the caller's). attempt_prepare NULL: the
     * algorithm's attempts are not one request (see groups); attempt_outcome
     * NULL: the request goes to every server (below). */
    redislock_err (*attempt_prepare)(redislock_lock *l, const rl__try *t,
                                     rl__attempt_req *a);
    redislock_err (*attempt_outcome)(redislock_lock *l, const rl__try *t,
                                     redislock_err err, const rl__reply *r);
    /* Requests that go to every server of the client at once (Redlock):
     * the event loop's driver sends each, attempt_prepare's included, as
     * a round (one reply or failure per server, quorum.h) and hands the
     * round to these decisions. */
    int every;
    /* Requests that go to the groups of a set of keys no one script
     * reaches, group by group: the engine takes them with agroup.c. */
    int groups;
    /* Attempt t's round r, sent at sent_us: REDISLOCK_OK with l->fence
     * set, or the refusal with *undo set when t must be undone on every
     * server (abandon.lua: rl__abandon_request). */
    redislock_err (*round_attempt)(redislock_lock *l, const rl__try *t,
                                   const rl__round *r, int64_t sent_us,
                                   int *undo);
    /* The round r of the owner's script s with arg2, sent at start_us, as
     * owner would answer it. */
    redislock_err (*round_owner)(redislock_lock *l, const rl__script *s,
                                 const char *arg2, const rl__round *r,
                                 int64_t start_us, long long *n);
    /* The inspect round r, as inspect would answer it. */
    redislock_err (*round_inspect)(redislock_client *c, const rl__round *r,
                                   redislock_info *info, char **buf,
                                   size_t *first);
    /* Whether an attempt whose reply was lost must be swept (abandon.lua:
     * it holds nothing, now or when it arrives late); 0: a failed attempt
     * has undone itself. */
    int abandons;
} rl__algo;

extern const rl__algo rl__algo_one;
extern const rl__algo rl__algo_redlock;
extern const rl__algo rl__algo_spread;

/* Whether the set l's keys are out of one script's reach (several
 * places, rl__topo_place): it then needs rl__spread_new. */
int rl__spread_needed(redislock_lock *l);

/* Groups the keys of the set l by place and gives l the spread
 * algorithm (agroup.c). */
redislock_err rl__spread_new(redislock_lock *l);
void rl__spread_free(struct rl__spread *sp);

/* Decodes inspect.lua's reply into info; strings go into *buf (inspect.c,
 * for every algorithm). */
redislock_err rl__inspect_decode(const rl__reply *r, redislock_info *info,
                                 char **buf);

/* Writes own, l's key's state, out to the caller's info of info_size
 * bytes, naming l's key without the client's prefix (inspect.c). */
void rl__inspect_out(const redislock_lock *l, redislock_info *own,
                     redislock_info *info, size_t info_size);

/* Whether r has the shape inspect.lua answers with. */
int rl__inspect_well_formed(const rl__reply *r);

#endif
