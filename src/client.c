#include "client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "shard.h"

/* The most servers a sharded client takes. */
#define RL_MAX_SERVERS 1024

struct redislock_client {
    rl__pool *pools;
    size_t npools;
    rl__ring ring; /* only with more than one server */
    char *prefix;
    size_t prefixlen;
    pthread_mutex_t mu;     /* guards watchdog creation */
    rl__watchdog *watchdog; /* made on first use */
};

static redislock_err check_options(const redislock_options *o)
{
    if (o->connect_timeout_ms < 0 || o->command_timeout_ms < 0 ||
        o->max_connections < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "negative timeout or connection count in options");
    if (o->prefix != NULL && strlen(o->prefix) > REDISLOCK_KEY_MAX)
        return rl__err(REDISLOCK_EINVAL, "key prefix longer than %d bytes",
                       REDISLOCK_KEY_MAX);
    return REDISLOCK_OK;
}

static redislock_err check_distinct(const redislock_client *c)
{
    size_t i, j;

    for (i = 0; i < c->npools; i++)
        for (j = 0; j < i; j++)
            if (strcmp(c->pools[i].name, c->pools[j].name) == 0 &&
                c->pools[i].url.db == c->pools[j].url.db)
                return rl__err(REDISLOCK_EINVAL, "server %s is listed twice",
                               c->pools[i].name);
    return REDISLOCK_OK;
}

/* Sets up every server's pool and the ring, then connects to each. */
static redislock_err setup(redislock_client *c, const char *const *urls,
                           const redislock_options *o)
{
    static const size_t namelen = 320;
    char *names;
    const char *ptrs[RL_MAX_SERVERS];
    redislock_err err;
    size_t i;
    int built;

    c->prefix = strdup(o->prefix ? o->prefix : "");
    if (c->prefix == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    c->prefixlen = strlen(c->prefix);
    for (i = 0; i < c->npools; i++)
        if ((err = rl__pool_init(&c->pools[i], urls[i], o)) != REDISLOCK_OK)
            return err;
    if ((err = check_distinct(c)) != REDISLOCK_OK)
        return err;
    /* Ring points are named by server and database, so two databases of
     * one server are two shards, placed the same whatever the URL order. */
    if (c->npools > 1) {
        if ((names = malloc(c->npools * namelen)) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        for (i = 0; i < c->npools; i++) {
            ptrs[i] = names + i * namelen;
            snprintf(names + i * namelen, namelen, "%s/%d", c->pools[i].name,
                     c->pools[i].url.db);
        }
        built = rl__ring_build(&c->ring, ptrs, c->npools);
        free(names);
        if (built != 0)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    for (i = 0; i < c->npools; i++)
        if ((err = rl__pool_check(&c->pools[i])) != REDISLOCK_OK)
            return err;
    return REDISLOCK_OK;
}

redislock_err redislock_client_new_sharded(redislock_client **out,
                                           const char *const *urls, size_t n,
                                           const redislock_options *opts)
{
    static const redislock_options zero;
    redislock_client *c;
    redislock_err err;
    size_t i;

    if (out == NULL || urls == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL output pointer or URL list");
    *out = NULL;
    if (n == 0 || n > RL_MAX_SERVERS)
        return rl__err(REDISLOCK_EINVAL, "%zu servers: want 1 to %d", n,
                       RL_MAX_SERVERS);
    for (i = 0; i < n; i++)
        if (urls[i] == NULL)
            return rl__err(REDISLOCK_EINVAL, "URL %zu is NULL", i);
    if (opts == NULL)
        opts = &zero;
    if ((err = check_options(opts)) != REDISLOCK_OK)
        return err;
    c = calloc(1, sizeof *c);
    if (c == NULL || (c->pools = calloc(n, sizeof *c->pools)) == NULL) {
        free(c);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    c->npools = n;
    pthread_mutex_init(&c->mu, NULL);
    if ((err = setup(c, urls, opts)) != REDISLOCK_OK) {
        redislock_client_free(c);
        return err;
    }
    *out = c;
    return REDISLOCK_OK;
}

redislock_err redislock_client_new(redislock_client **out, const char *url,
                                   const redislock_options *opts)
{
    return redislock_client_new_sharded(out, &url, 1, opts);
}

void redislock_client_free(redislock_client *c)
{
    size_t i;

    if (c == NULL)
        return;
    /* The watchdog borrows connections: stop it first. */
    rl__watchdog_free(c->watchdog);
    for (i = 0; i < c->npools; i++)
        rl__pool_fini(&c->pools[i]);
    free(c->pools);
    rl__ring_free(&c->ring);
    free(c->prefix);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

rl__pool *rl__client_route(redislock_client *c, const void *key, size_t len)
{
    if (c->npools == 1)
        return &c->pools[0];
    return &c->pools[rl__ring_lookup(&c->ring, key, len)];
}

size_t rl__client_servers(const redislock_client *c)
{
    return c->npools;
}

rl__pool *rl__client_pool(redislock_client *c, size_t i)
{
    return &c->pools[i];
}

const char *rl__client_prefix(const redislock_client *c, size_t *len)
{
    *len = c->prefixlen;
    return c->prefix;
}

redislock_err rl__client_watchdog(redislock_client *c, rl__watchdog **out)
{
    redislock_err err = REDISLOCK_OK;

    pthread_mutex_lock(&c->mu);
    if (c->watchdog == NULL)
        err = rl__watchdog_new(c, &c->watchdog);
    *out = c->watchdog;
    pthread_mutex_unlock(&c->mu);
    return err;
}
