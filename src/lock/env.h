/*
 * The client as the lock layer sees it: its topology (one server, several
 * sharded by key or asked together by a Redlock quorum, or a Redis
 * Cluster), the key prefix, the replica-sync guard, Redlock's per-server
 * timeout, and the keeper thread shared by all of the client's locks.
 *
 * Data, defined here in the lock layer: client.c, in the client layer
 * above, fills an rl__env as the first member of its client, and the lock
 * code reads it through the accessors below, so that it neither includes
 * nor calls the client: the arrows point down (docs/ARCHITECTURE.md).
 */
#ifndef RL_ENV_H
#define RL_ENV_H

#include <pthread.h>
#include <stdint.h>

#include "pool.h"
#include "seen.h"
#include "topology.h"

/* The most servers of a Redlock quorum. */
#define RL_MAX_QUORUM 15
/* The least per-server reply timeout Redlock derives from a TTL. */
#define RL_MIN_SERVER_TIMEOUT_MS 10
#define RL_DEFAULT_WAIT_REPLICAS_MS 100

/* The replica-sync guard's settings (want 0: off). */
typedef struct rl__replicas {
    int want;         /* WAIT for this many replicas; < 0: every one */
    rl__seen *seen;   /* with want < 0: the replicas each master had */
    int aof_local;    /* WAITAOF: the master's fsync (0 or 1) */
    int aof_replicas; /* WAITAOF: this many replicas' fsyncs */
    int64_t timeout_ms;
    int lenient;
} rl__replicas;

/* The caller's event callback and its argument (cb NULL: none). */
typedef struct rl__events {
    redislock_event_cb cb;
    void *arg;
} rl__events;

struct rl__algo;

/* The client's part that the lock layer reads. client.c fills it when it
 * makes the client and puts it first in its struct, so that a client
 * pointer is a pointer to it (libuv's handles share their fields the same
 * way): the lock code reads data it is handed and calls nothing above. */
typedef struct rl__env {
    rl__topo topo;               /* where the client's requests go */
    const struct rl__algo *algo; /* how its locks are decided (algo.h) */
    rl__replicas replicas;       /* the replica-sync guard */
    int64_t server_timeout_ms;   /* Redlock's per-server timeout; 0: derived */
    int64_t server_timeout_cap_ms; /* ...from the TTL, no more than this */
    char *prefix;                  /* the key prefix */
    size_t prefixlen;
    rl__events events;
    int max_idle;              /* idle private loops kept (max_connections) */
    pthread_mutex_t mu;        /* guards the keeper's and engine's creation */
    struct rl__keeper *keeper; /* made on first use (keeper.h) */
    struct rl__engine *engine; /* the blocking calls' loops (engine.h) */
} rl__env;

static inline rl__env *rl__env_of(redislock_client *c)
{
    return (rl__env *)(void *)c;
}

static inline const rl__env *rl__env_ofc(const redislock_client *c)
{
    return (const rl__env *)(const void *)c;
}

static inline const rl__replicas *rl__client_replicas(const redislock_client *c)
{
    return &rl__env_ofc(c)->replicas;
}

/* Redlock's per-server reply timeout for a request with ttl_ms: the
 * client's, else a tenth of the TTL, at least RL_MIN_SERVER_TIMEOUT_MS
 * and at most the command timeout. */
static inline int64_t rl__client_server_timeout(const redislock_client *c,
                                                int64_t ttl_ms)
{
    const rl__env *e = rl__env_ofc(c);
    int64_t t = e->server_timeout_ms;

    if (t > 0)
        return t;
    t = ttl_ms / 10;
    if (t < RL_MIN_SERVER_TIMEOUT_MS)
        t = RL_MIN_SERVER_TIMEOUT_MS;
    return t < e->server_timeout_cap_ms ? t : e->server_timeout_cap_ms;
}

/* Where the client's requests go. */
static inline rl__topo *rl__client_topo(redislock_client *c)
{
    return &rl__env_of(c)->topo;
}

/* How the client's locks are decided (algo.h). */
static inline const struct rl__algo *rl__client_algo(const redislock_client *c)
{
    return rl__env_ofc(c)->algo;
}

/* The key prefix and its length. */
static inline const char *rl__client_prefix(const redislock_client *c,
                                            size_t *len)
{
    *len = rl__env_ofc(c)->prefixlen;
    return rl__env_ofc(c)->prefix;
}

static inline const rl__events *rl__client_events(const redislock_client *c)
{
    return &rl__env_ofc(c)->events;
}

#endif
