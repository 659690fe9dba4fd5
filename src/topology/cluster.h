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

#include "keys.h"
#include "pool.h"

typedef struct rl__cluster rl__cluster;

/* Connects to the seeds in turn until one gives the slot map. */
redislock_err rl__cluster_new(const char *const *seeds, size_t n,
                              const redislock_options *o, rl__cluster **out);

/* NULL is a no-op. */
void rl__cluster_free(rl__cluster *cl);

/* The pool of the master that serves key's slot, by the current map
 * (some node when the slot has no master: it will say where to go). */
rl__pool *rl__cluster_route(rl__cluster *cl, const void *key, size_t len);

/* Master i of those that serve at least one slot by the last map read
 * (NULL past the end). */
rl__pool *rl__cluster_master(rl__cluster *cl, size_t i);

/* The map replaced by the reply r of node p (CLUSTER SLOTS). */
redislock_err rl__cluster_load_reply(rl__cluster *cl, const rl__pool *p,
                                     const rl__reply *r);

/*
 * One reading of the map: CLUSTER SLOTS asked of the nodes in turn, the
 * one that answered last first, then of the seeds, until one answers
 * with a map (then the first asked next time; the epoch moves on, as
 * after rl__cluster_reload), whoever sends the questions
 * (rl__cluster_reload on private loops, aroute.c on an event loop).
 * rl__cluster_walk_next gives the node to ask next, or NULL when the
 * walk is over (w->err: REDISLOCK_OK, or the last failure, the detail
 * set); rl__cluster_walk_heard takes its reply r, or its failure err;
 * rl__cluster_walk_end frees the walk.
 */
typedef struct rl__cluster_walk {
    rl__pool **v; /* the nodes, as the walk began */
    size_t n, i, seed;
    rl__pool *asked;
    int done;
    redislock_err err;
    char said[256];
} rl__cluster_walk;

void rl__cluster_walk_start(rl__cluster *cl, rl__cluster_walk *w);
rl__pool *rl__cluster_walk_next(rl__cluster *cl, rl__cluster_walk *w);
void rl__cluster_walk_heard(rl__cluster *cl, rl__cluster_walk *w,
                            redislock_err err, const rl__reply *r);
void rl__cluster_walk_end(rl__cluster_walk *w);

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

/* Redirections followed in a row before the map is read again (see
 * rl__cluster_hops); redis-cli gives up after as many. */
#define RL_CLUSTER_MAX_HOPS 16

/* What a request's reply asks of it next (redirect.c's steps, which the
 * event loop's requests take too, aroute.c). */
typedef enum rl__go {
    RL_GO_DONE,  /* the answer, or a failure to give back */
    RL_GO_MOVED, /* the slot's master is another: the map says so now */
    RL_GO_ASK,   /* once to the node named, after ASKING */
    RL_GO_PAUSE, /* TRYAGAIN, CLUSTERDOWN: a short pause, then again */
    RL_GO_RELOAD /* the node cannot be reached: the map read again */
} rl__go;

/* Where a redirection points. */
typedef struct rl__hop {
    unsigned slot;
    char host[256];
    int port;
} rl__hop;

/* What the reply r of node at, or the failure err, asks of a request,
 * with where a redirection points read into *h. A request that could not
 * be sent (REDISLOCK_ECONNECT) is sent again; one whose reply was lost is
 * not (it may have run). */
rl__go rl__cluster_next(redislock_err err, const rl__reply *r,
                        const rl__pool *at, rl__hop *h);

/* Counts a redirection in *hops. Past RL_CLUSTER_MAX_HOPS in a row the
 * nodes are sending the request round without taking it (they disagree
 * on a slot's owner while it is moved, one told already and the other
 * not): the map is read again after a pause, as for a node that went
 * away, and the count starts over; the request's deadline still bounds
 * it. Returns what the request does next. */
rl__go rl__cluster_hops(rl__go go, int *hops);

/* The pause before asking again, jittered. */
int64_t rl__cluster_pause_ms(void);

/* Whether r is a reply that sends a request elsewhere or asks it to wait
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN). */
int rl__cluster_redirection(const rl__reply *r);

#endif
