/*
 * The client: one server or several (sharded by key), the key prefix, and
 * the watchdog shared by all of the client's locks.
 */
#ifndef RL_CLIENT_H
#define RL_CLIENT_H

#include "pool.h"
#include "watchdog.h"

/* The server that holds key (the full Redis key, prefix included). */
rl__pool *rl__client_route(redislock_client *c, const void *key, size_t len);

/* The number of servers, and server i. */
size_t rl__client_servers(const redislock_client *c);
rl__pool *rl__client_pool(redislock_client *c, size_t i);

/* The key prefix and its length. */
const char *rl__client_prefix(const redislock_client *c, size_t *len);

/* The client's watchdog, started on first use. */
redislock_err rl__client_watchdog(redislock_client *c, rl__watchdog **out);

#endif
