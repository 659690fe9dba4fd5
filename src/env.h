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

#include "pool.h"
#include "topology.h"
#include "watchdog.h"

struct rl__cluster;

typedef enum rl__mode {
    RL_MODE_SINGLE,
    RL_MODE_SHARDED, /* each key on one server, by a consistent hash */
    RL_MODE_REDLOCK, /* each key on every server, a majority deciding */
    RL_MODE_CLUSTER  /* each key on its slot's master */
} rl__mode;

/* The most servers of a Redlock quorum: as many as one request runs on
 * at once. */
#define RL_MAX_QUORUM RL_REQ_MAX_PAR
/* The least per-server reply timeout Redlock derives from a TTL. */
#define RL_MIN_SERVER_TIMEOUT_MS 10
#define RL_DEFAULT_WAIT_REPLICAS_MS 100

/* The replica-sync guard's settings (want 0: off). */
typedef struct rl__replicas {
    int want;
    int64_t timeout_ms;
    int lenient;
} rl__replicas;

rl__mode rl__client_mode(const redislock_client *c);

/* The cluster of a cluster-mode client, else NULL. */
struct rl__cluster *rl__client_cluster(const redislock_client *c);

const rl__replicas *rl__client_replicas(const redislock_client *c);

/* Redlock's per-server reply timeout for a request with ttl_ms. */
int64_t rl__client_server_timeout(const redislock_client *c, int64_t ttl_ms);

/* Where the client's requests go. */
rl__topo *rl__client_topo(redislock_client *c);

/* The server that holds key (the full Redis key, prefix included). */
rl__pool *rl__client_route(redislock_client *c, const void *key, size_t len);

/* The number of servers, and server i (for a cluster: none; see
 * cluster.h). */
size_t rl__client_servers(const redislock_client *c);
rl__pool *rl__client_pool(redislock_client *c, size_t i);

/* The key prefix and its length. */
const char *rl__client_prefix(const redislock_client *c, size_t *len);

/* The client's watchdog, started on first use. */
redislock_err rl__client_watchdog(redislock_client *c, rl__watchdog **out);

#endif
