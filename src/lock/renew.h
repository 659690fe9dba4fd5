/*
 * Renewals by node: the due renewals of many locks of one server (one
 * hash slot of a cluster) as one request, renew.lua's, and its reply
 * given back lock by lock. The engine (alock.c) decides which locks go
 * together and when; this builds and reads the request.
 */
#ifndef RL_RENEW_H
#define RL_RENEW_H

#include <stddef.h>

#include "lock.h"
#include "quorum.h"
#include "request.h"

/* The most locks one renewal request carries: 20,480 words, a few
 * milliseconds of a server's time (docs/BENCHMARKS.md). */
#define RL_RENEW_BATCH 4096

/* A renewal request of several locks: q, and the storage its keys and
 * arguments point into (rl__renew_free). */
typedef struct rl__renew_req {
    rl__request q;
    const char **v; /* the keys, then four arguments per lock */
    size_t *len;
    char *buf; /* the TTLs' and fences' text */
} rl__renew_req;

/* Whether l's renewal can go in a renewal request: a lock of one key
 * whose extend is extend.lua's. */
int rl__renew_batchable(const redislock_lock *l);

/* Fills *out with the renewal of the n locks ls (2 to RL_RENEW_BATCH of
 * them, each rl__renew_batchable, all of one server or slot). */
redislock_err rl__renew_request(redislock_lock *const *ls, size_t n,
                                rl__renew_req *out);

void rl__renew_free(rl__renew_req *r);

/* Whether r, the reply to a renewal request of n locks, answers each of
 * them; if not (an error reply, another shape), the request failed as a
 * whole and each lock's renewal goes alone. */
int rl__renew_answered(const rl__reply *r, size_t n);

/* What r's answer for its i-th lock says (as extend.lua's reply to an
 * extend of it). */
const rl__reply *rl__renew_answer(const rl__reply *r, size_t i);

/* Redlock's renewals by node: whether every server's reply in the
 * round r of a renewal request of n locks answers each lock (a server
 * that failed counts as it would for each lock alone). */
int rl__renew_round_answered(const rl__round *r, size_t n);

/* Lock i's answers in the round r (rl__renew_round_answered) as the
 * round of its own extend would have them, into *one: it points into r's
 * replies and is not freed. */
void rl__renew_round_answer(const rl__round *r, size_t i, rl__round *one);

#endif
