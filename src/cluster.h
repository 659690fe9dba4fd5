/*
 * Redis Cluster: the slot map (CLUSTER SLOTS), one connection pool per
 * master, routing by CRC16 hash slot, and the redirections (MOVED, ASK)
 * and transient refusals (TRYAGAIN, CLUSTERDOWN) a request may meet.
 *
 * Pools are never freed before the cluster is: a lock handle may keep a
 * pointer to one, even after its node has lost its slots or died.
 */
#ifndef RL_CLUSTER_H
#define RL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"

typedef struct rl__cluster rl__cluster;

/* The number of hash slots of a Redis Cluster. */
#define RL_CLUSTER_SLOTS 16384

/* Connects to the seeds in turn until one gives the slot map. */
redislock_err rl__cluster_new(const char *const *seeds, size_t n,
                              const redislock_options *o, rl__cluster **out);

/* NULL is a no-op. */
void rl__cluster_free(rl__cluster *cl);

/* The hash slot of key, as Redis computes it: CRC16 (XMODEM) of the key,
 * or of its hash tag (the bytes between the first '{' and the first '}'
 * after it, when there are any), modulo 16384. */
unsigned rl__cluster_slot(const void *key, size_t len);

/* The pool of the master that serves key's slot, by the current map
 * (some node when the slot has no master: it will say where to go). */
rl__pool *rl__cluster_route(rl__cluster *cl, const void *key, size_t len);

/* The masters that serve at least one slot by the last map read: their
 * number, and master i (NULL past the end). */
size_t rl__cluster_masters(rl__cluster *cl);
rl__pool *rl__cluster_master(rl__cluster *cl, size_t i);

/* How many times the map has been read; pass it to rl__cluster_reload. */
uint64_t rl__cluster_epoch(rl__cluster *cl);

/* Reads the map again from any node that answers, unless another thread
 * has already done so since epoch was read. */
redislock_err rl__cluster_reload(rl__cluster *cl, uint64_t epoch);

/* A MOVED redirection: slot is served by the node at host:port from now
 * on. Returns that node's pool, or NULL when it cannot be made. */
rl__pool *rl__cluster_moved(rl__cluster *cl, unsigned slot, const char *host,
                            int port);

/* The pool of the node at host:port (an ASK target), made if new. */
rl__pool *rl__cluster_node(rl__cluster *cl, const char *host, int port);

/*
 * Requests that follow redirections, for pool.c in cluster mode, within
 * the time budget timeout_ms (0: the command timeout). A script goes to
 * the master of keys[0]'s slot by the current map; a pipeline of commands
 * goes to p, or with a key to that key's master. They return what
 * rl__pool_script_keys and rl__pool_exec return.
 */
redislock_err rl__cluster_script(rl__cluster *cl, int64_t timeout_ms,
                                 const rl__script *s, int nkeys,
                                 const char **keys, const size_t *klens,
                                 int nargs, const char **args,
                                 const size_t *lens, rl__reply **out);
redislock_err rl__cluster_exec(rl__cluster *cl, rl__pool *p, const char *key,
                               size_t keylen, int n, const rl__cmd *cmds,
                               rl__reply **out);

#endif
