/*
 * Redlock's rounds as data: every server's reply or failure to one
 * request sent to them all at once (alock.c sends them), and the
 * majority and the per-server outcomes in words.
 */
#ifndef RL_QUORUM_H
#define RL_QUORUM_H

#include "env.h"
#include "request.h"

/* The outcome of a request sent to every server of a quorum at once:
 * per server, its reply or its failure. */
typedef struct rl__round {
    size_t n;
    rl__reply *reply[RL_MAX_QUORUM]; /* NULL where err is set */
    redislock_err err[RL_MAX_QUORUM];
} rl__round;

/* Frees every reply of r. */
void rl__round_free(rl__round *r);

/* A majority of n. */
#define RL_QUORUM(n) ((n) / 2 + 1)

/* The verdict of a round whose servers were each asked one question
 * (revoke, a sequencer, its check): each server's reply read by answer,
 * the outcome a majority of them gives, with the detail of the first
 * server that gave it; REDISLOCK_ENOQUORUM, naming what, when no outcome
 * has a majority. */
redislock_err rl__round_majority(const rl__round *r,
                                 redislock_err (*answer)(const rl__reply *r,
                                                         void *arg),
                                 void *arg, const char *what);

/* "a:6379 granted, b:6379 busy, c:6379 down" for messages: each
 * server's outcome (as redislock_outcomes() reports them). */
void rl__outcomes_describe(redislock_client *c, const redislock_err *o,
                           size_t n, char *buf, size_t len);

#endif
