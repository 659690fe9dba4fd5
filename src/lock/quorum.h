/*
 * Redlock's rounds: one script sent to every server of a Redlock client
 * at once, each reply waited for at most the per-server timeout, and the
 * replies (or each server's failure) handed back together.
 */
#ifndef RL_QUORUM_H
#define RL_QUORUM_H

#include "env.h"
#include "request.h"

/* Per server: its reply (NULL where err is set), or its failure and
 * what went wrong there. */
typedef rl__replies rl__round;

/* Runs s with the keys it declares for k (req: the request whose void
 * key it takes, or NULL) and nargs arguments on every server of c, or
 * those with only[i] set when only is not NULL (the others get neither a
 * reply nor an error), waiting at most timeout_ms for each; error replies
 * become that server's err. */
void rl__quorum_script(redislock_client *c, const int *only, int64_t timeout_ms,
                       const rl__script *s, const rl__lockname *k,
                       const char *req, int nargs, const char **args,
                       const size_t *lens, rl__round *out);

void rl__round_free(rl__round *r);

/* A majority of n. */
#define RL_QUORUM(n) ((n) / 2 + 1)

/* "a:6379 granted, b:6379 busy, c:6379 down" for messages: each
 * server's outcome (as redislock_outcomes() reports them). */
void rl__outcomes_describe(redislock_client *c, const redislock_err *o,
                           size_t n, char *buf, size_t len);

#endif
