/*
 * Redis Cluster: the slot map (CLUSTER SLOTS), one connection pool per
 * master, routing by CRC16 hash slot, and the redirections (MOVED, ASK)
 * and transient refusals (TRYAGAIN, CLUSTERDOWN) a request may meet.
 */
#ifndef RL_CLUSTER_H
#define RL_CLUSTER_H

#include <stddef.h>

#include "pool.h"

typedef struct rl__cluster rl__cluster;

/* Connects to the seeds in turn until one gives the slot map. */
redislock_err rl__cluster_new(const char *const *seeds, size_t n,
                              const redislock_options *o, rl__cluster **out);

/* NULL is a no-op. */
void rl__cluster_free(rl__cluster *cl);

/* The pool of the master that serves key's slot, by the current map. */
rl__pool *rl__cluster_route(rl__cluster *cl, const void *key, size_t len);

#endif
