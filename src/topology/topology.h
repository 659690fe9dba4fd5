/*
 * The topology layer: where a request for a key goes. One server, several
 * by a consistent hash (sharded), a Redis Cluster (the key's slot's
 * master, following redirections for every request, WAIT-guarded ones
 * too), or a set of independent servers that a Redlock quorum asks all at
 * once. The lock code asks "the node for this key" and "every node",
 * never which topology it runs on.
 *
 * Above: the lock layer. Below: pool.c (nodes), cluster.c and redirect.c
 * (a cluster's map and its redirections), shard.c (the ring).
 */
#ifndef RL_TOPOLOGY_H
#define RL_TOPOLOGY_H

#include <stddef.h>

#include "pool.h"
#include "request.h"

struct rl__cluster;
struct rl__ring;
struct rl__sentinel;

typedef enum rl__topo_kind {
    RL_TOPO_SINGLE,
    RL_TOPO_SHARDED, /* each key on one server, by the ring */
    RL_TOPO_SET,     /* every key on every server (a Redlock quorum) */
    RL_TOPO_CLUSTER, /* each key on its slot's master */
    RL_TOPO_SENTINEL /* every key on the master the sentinels name */
} rl__topo_kind;

typedef struct rl__topo {
    rl__topo_kind kind;
    rl__pool *pools; /* all but a cluster: the servers, in URL order */
    size_t npools;
    const struct rl__ring *ring;   /* sharded */
    struct rl__cluster *cluster;   /* cluster */
    struct rl__sentinel *sentinel; /* Sentinel */
} rl__topo;

/* The node that serves key now, without blocking: in a cluster by the
 * current map (some node when the slot has no master, which will say
 * where to go); a Sentinel client's master as last found, even when a
 * request found it gone since (the loop's router asks the sentinels
 * itself). */
rl__pool *rl__topo_node_now(rl__topo *t, const void *key, size_t len);

/* Node i of every node, NULL past the last: the servers in URL order, or
 * a cluster's masters by a map read afresh when i is 0 (a failover or a
 * resharding may have made or retired one). */
rl__pool *rl__topo_each(rl__topo *t, size_t i);

/* Where one script can reach key, as a number: in a cluster its slot, on
 * a sharded client its server's place in URL order, else 0. Keys with
 * the same place can be taken by one script; the numbers also give sets
 * over several places one global order to take them in. */
unsigned long rl__topo_place(rl__topo *t, const void *key, size_t len);

/* Whether one script may name both keys: always, but in a cluster only
 * when they hash to one slot. */
int rl__topo_same_slot(const rl__topo *t, const void *a, size_t alen,
                       const void *b, size_t blen);

/* Whether this is a Redis Cluster: a key's slot can move to another node
 * while a request runs, and a channel meant for one key's node is a shard
 * channel (SSUBSCRIBE, SPUBLISH). */
int rl__topo_cluster(const rl__topo *t);

/* Whether a release of key may go as a native compare-and-delete
 * (rl__conn_cfg.caps): some node of a client with its servers listed
 * (one, sharded, a Redlock quorum) offers one, learnt from its checks'
 * HELLO; in a cluster or behind Sentinel, the key's node now does,
 * learnt from its first connection's (rl__pool_probe). */
int rl__topo_native(rl__topo *t, const void *key, size_t len);

/* Whether a key's node can change from one request to the next (a
 * cluster's resharding or failover, a Sentinel failover): a request then
 * goes through the topology, which follows the change, rather than
 * behind a blocking call on a connection of the waiter's (BLPOP). */
int rl__topo_moves(const rl__topo *t);

/* Whether a blocking call on a connection of its own (BLPOP) that ended
 * in err, or with reply r, met a change of the key's node: a cluster's
 * redirection, refusal or lost connection; a Sentinel master's lost
 * connection or READONLY; either's -UNBLOCKED, which a master turned
 * replica answers a blocked client. The caller then blocks on a new
 * connection, to the key's node now (rl__topo_node_now). */
int rl__topo_moved(const rl__topo *t, redislock_err err, const rl__reply *r);

/* How long a caller that may wait (an acquire with time left) pauses
 * before it asks again, when its request surely did not run because the
 * key's node is being replaced: a Sentinel master that cannot be reached
 * or refuses writes (REDISLOCK_ECONNECT, REDISLOCK_EREADONLY) before the
 * sentinels have promoted another, which takes their down-after time and
 * an election; a cluster master that cannot be reached
 * (REDISLOCK_ECONNECT), or a cluster that refuses every key meanwhile
 * (CLUSTERDOWN, or any other try-later refusal: REDISLOCK_ETRYLATER),
 * before the replica is elected after the node timeout. Both often
 * outlast one request's budget. Also after the strict replica-sync
 * guard refused a lock taken and given back (REDISLOCK_ENOTDURABLE) on
 * either: a new master's replicas are still attaching. 0: err is an
 * answer, not a wait (a lost reply may have run, and is the caller's). */
int64_t rl__topo_failover_pause(const rl__topo *t, redislock_err err);

#endif
