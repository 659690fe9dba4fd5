#include "topology.h"

#include <string.h>

#include "cluster.h"
#include "reply.h"
#include "sentinel.h"
#include "shard.h"

rl__pool *rl__topo_node_now(rl__topo *t, const void *key, size_t len)
{
    int suspect;

    if (t->kind == RL_TOPO_SENTINEL)
        return rl__sentinel_known(t->sentinel, &suspect);
    if (t->kind == RL_TOPO_CLUSTER)
        return rl__cluster_route(t->cluster, key, len);
    if (t->kind == RL_TOPO_SHARDED)
        return &t->pools[rl__ring_lookup(t->ring, key, len)];
    return &t->pools[0];
}

rl__pool *rl__topo_each(rl__topo *t, size_t i)
{
    if (t->kind == RL_TOPO_SENTINEL)
        return i == 0 ? rl__sentinel_node(t->sentinel) : NULL;
    if (t->kind != RL_TOPO_CLUSTER)
        return i < t->npools ? &t->pools[i] : NULL;
    if (i == 0)
        rl__cluster_reload(t->cluster, rl__cluster_epoch(t->cluster));
    return rl__cluster_master(t->cluster, i);
}

int rl__topo_same_slot(const rl__topo *t, const void *a, size_t alen,
                       const void *b, size_t blen)
{
    return t->kind != RL_TOPO_CLUSTER ||
           rl__key_slot(a, alen) == rl__key_slot(b, blen);
}

unsigned long rl__topo_place(rl__topo *t, const void *key, size_t len)
{
    if (t->kind == RL_TOPO_CLUSTER)
        return rl__key_slot(key, len);
    if (t->kind == RL_TOPO_SHARDED)
        return rl__ring_lookup(t->ring, key, len);
    return 0;
}

int rl__topo_native(rl__topo *t, const void *key, size_t len)
{
    rl__pool *p;
    size_t i;

    /* The key's node now: a later one (a failover, a slot moved) that
     * has no native command gets the script from the request layer. */
    if (t->kind == RL_TOPO_CLUSTER || t->kind == RL_TOPO_SENTINEL)
        return (p = rl__topo_node_now(t, key, len)) != NULL &&
               __atomic_load_n(&p->caps, __ATOMIC_RELAXED) > 0;
    for (i = 0; i < t->npools; i++)
        if (__atomic_load_n(&t->pools[i].caps, __ATOMIC_RELAXED) > 0)
            return 1;
    return 0;
}

int rl__topo_cluster(const rl__topo *t)
{
    return t->kind == RL_TOPO_CLUSTER;
}

int rl__topo_moves(const rl__topo *t)
{
    return t->kind == RL_TOPO_CLUSTER || t->kind == RL_TOPO_SENTINEL;
}

/* Whether r refuses a write because its server is a replica now. */
static int replica_refusal(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "READONLY", 8) == 0 ||
            strncmp(r->str, "MASTERDOWN", 10) == 0);
}

/* Whether r ends a blocking command because its server turned replica:
 * Redis unblocks every blocked client then with -UNBLOCKED (a master
 * demoted by CLUSTER FAILOVER or a Sentinel failover). The command ran
 * no write, so a waiter goes on waiting where the key now is. */
static int unblocked(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "UNBLOCKED", 9) == 0;
}

int rl__topo_moved(const rl__topo *t, redislock_err err, const rl__reply *r)
{
    if (!rl__topo_moves(t))
        return 0;
    if (err == REDISLOCK_ECONNECT || err == REDISLOCK_EIO ||
        err == REDISLOCK_ETIMEDOUT)
        return 1;
    if (err != REDISLOCK_OK || r == NULL)
        return 0;
    if (unblocked(r))
        return 1;
    return t->kind == RL_TOPO_CLUSTER ? rl__cluster_redirection(r)
                                      : replica_refusal(r);
}

int64_t rl__topo_failover_pause(const rl__topo *t, redislock_err err)
{
    /* The replica-sync guard refused a lock just taken (and given back):
     * on a topology that fails over, the key's master may be the one
     * just promoted, whose replicas are still attaching, or the old one
     * still taking writes its promoted replica no longer confirms. */
    if (err == REDISLOCK_ENOTDURABLE)
        return t->kind == RL_TOPO_CLUSTER    ? rl__cluster_pause_ms()
               : t->kind == RL_TOPO_SENTINEL ? RL_SENTINEL_PAUSE_MS
                                             : 0;
    /* A cluster's map is read again by the request that could not
     * connect (redirect.c, aroute.c): the next one goes wherever the
     * map says, the promoted replica once it does. A cluster that must
     * cover every slot answers CLUSTERDOWN (REDISLOCK_ETRYLATER) on
     * every node meanwhile. */
    if (t->kind == RL_TOPO_CLUSTER)
        return err == REDISLOCK_ECONNECT || err == REDISLOCK_ETRYLATER
                   ? rl__cluster_pause_ms()
                   : 0;
    if (t->kind != RL_TOPO_SENTINEL ||
        (err != REDISLOCK_ECONNECT && err != REDISLOCK_EREADONLY))
        return 0;
    return RL_SENTINEL_PAUSE_MS;
}
