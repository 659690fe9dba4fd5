/*
 * A cluster's or a Sentinel client's requests on an event loop, without
 * blocking: the journeys of redirect.c and sentinel.c.
 *
 * In a cluster a request goes to its key's master by the map; a MOVED
 * reply updates the map and sends it on, an ASK sends it once to the
 * node named (after ASKING), TRYAGAIN and CLUSTERDOWN pause it briefly on
 * a loop timer, and a node that cannot be reached has the map read again
 * (CLUSTER SLOTS sent on the loop, to the nodes in turn, then the seeds)
 * before the key is routed again. The decisions are redirect.c's
 * (rl__cluster_next); the map is cluster.c's.
 *
 * With Sentinel a request goes to the master last found. One that cannot
 * reach it, or that a replica refuses (READONLY), has the sentinels asked
 * on the loop (in turn, each answer confirmed by ROLE on the node named)
 * and waits, in pauses of RL_SENTINEL_PAUSE_MS, until a master is
 * confirmed, then goes there; one whose reply was lost may have run, so
 * it is its caller's, while the sentinels are asked for the next. A
 * renewal or release (the request's settle) is answered only once a
 * sentinel still names the node it ran on; when one names another, it
 * goes again to the new master (rl__sentinel_settled decides).
 *
 * Either way, all within the command timeout from the first send, after
 * which the last answer is the caller's. The connections are the
 * caller's (the lock layer keeps one request connection per node, and
 * gets one to each sentinel asked): the router asks for them through a
 * callback. Single-threaded: every call, and every callback, on the
 * loop's thread.
 */
#ifndef RL_AROUTE_H
#define RL_AROUTE_H

#include "aconn.h"
#include "cluster.h"
#include "loop.h"
#include "request.h"
#include "sentinel.h"
#include "topology.h"

typedef struct rl__aroute rl__aroute;

/* The request connection of node p, opened if need be. */
typedef redislock_err (*rl__aroute_conn)(void *ctx, rl__pool *p,
                                         rl__aconn **out);

/* A router for topo's requests (a cluster or Sentinel client's). */
redislock_err rl__aroute_new(rl__topo *topo, rl__loop *lp, rl__aroute_conn conn,
                             void *ctx, rl__aroute **out);

/* Every request under way ends with REDISLOCK_ECANCELED (its callback
 * runs here), a map being read is forgotten. NULL is a no-op. */
void rl__aroute_free(rl__aroute *rt);

/*
 * Sends the script request q for key: first on c, a connection to node at
 * (the key's node by the map; a waiter's blocking connection, say), then
 * wherever the cluster says. cb gets the last reply (valid during the
 * call; error replies are replies, redirections too once the budget or
 * the hops run out) or failure, once, never from here. q's keys and
 * arguments are copied. An error return: nothing was sent, and no
 * callback comes.
 */
redislock_err rl__aroute_send(rl__aroute *rt, rl__aconn *c, rl__pool *at,
                              const void *key, size_t keylen,
                              const rl__request *q, rl__aconn_cb cb, void *arg);

#endif
