/* The lock handle's state, shared by lock.c (its owner's thread) and
 * watchdog.c (the renewal thread). */
#ifndef RL_LOCK_H
#define RL_LOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "redislock.h"

/* Longest token accepted by redislock_adopt() (other libraries' tokens
 * are UUIDs or base64 strings well below this). */
#define RL_TOKEN_MAX 256

struct rl__watch;

struct redislock_lock {
    redislock_client *client;
    /* Key and token do not change while the lock is watched, so the
     * watchdog thread reads them without locking. */
    char *key;
    size_t keylen;
    char token[RL_TOKEN_MAX + 1];
    int held;           /* owner thread only */
    int64_t ttl_ms;     /* the lease length renewals use */
    int64_t drift_ms;   /* subtracted from every validity */
    /* Set by either thread, read by any. */
    _Atomic int64_t valid_until_us; /* CLOCK_MONOTONIC; 0: none */
    _Atomic int lost;               /* a redislock_err; 0 while not lost */
    struct rl__watch *watch;        /* non-NULL while watched */
};

/* Sends the extend script for l's token with l->ttl_ms, and on success
 * moves the validity forward from the moment the request was sent. Does
 * not touch l->held, so the watchdog thread may call it. */
redislock_err rl__lock_renew(redislock_lock *l);

/* Records a loss (first one wins); returns whether this call recorded it. */
int rl__lock_mark_lost(redislock_lock *l, redislock_err why);

#endif
