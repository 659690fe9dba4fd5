/*
 * The client as the lock layer sees it: its topology (one server, several
 * sharded by key or asked together by a Redlock quorum, or a Redis
 * Cluster), the key prefix, the replica-sync guard, Redlock's per-server
 * timeout, and the watchdog shared by all of the client's locks.
 *
 * Declared here, in the lock layer, and defined by client.c in the client
 * layer above: the lock code depends on this interface, not on the
 * client, so the arrows point down (docs/ARCHITECTURE.md).
 */
#ifndef RL_ENV_H
#define RL_ENV_H

#include "ident.h"
#include "pool.h"
#include "seen.h"
#include "topology.h"
#include "watchdog.h"

/* The most servers of a Redlock quorum: as many as one request runs on
 * at once. */
#define RL_MAX_QUORUM RL_REQ_MAX_PAR
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

const rl__replicas *rl__client_replicas(const redislock_client *c);

/* Redlock's per-server reply timeout for a request with ttl_ms. */
int64_t rl__client_server_timeout(const redislock_client *c, int64_t ttl_ms);

/* Which of a Redlock client's servers are one (ident.h), for the event
 * loop's rounds, whose connections are not vetted; NULL for others. */
rl__idset *rl__client_ids(redislock_client *c);

/* Where the client's requests go. */
rl__topo *rl__client_topo(redislock_client *c);

/* How the client's locks are decided (algo.h). */
struct rl__algo;
const struct rl__algo *rl__client_algo(const redislock_client *c);

/* The key prefix and its length. */
const char *rl__client_prefix(const redislock_client *c, size_t *len);

/* The caller's event callback and its argument (cb NULL: none). */
typedef struct rl__events {
    redislock_event_cb cb;
    void *arg;
} rl__events;

const rl__events *rl__client_events(const redislock_client *c);

/* The client's watchdog, started on first use. */
redislock_err rl__client_watchdog(redislock_client *c, rl__watchdog **out);

#endif
