#include "env.h"

#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "algo.h"
#include "cluster.h"
#include "doctor.h"
#include "engine.h"
#include "keeper.h"
#include "error.h"
#include "ident.h"
#include "sentinel.h"
#include "shard.h"
#include "url.h"

typedef enum rl__mode {
    RL_MODE_SINGLE,
    RL_MODE_SHARDED, /* each key on one server, by a consistent hash */
    RL_MODE_REDLOCK, /* each key on every server, a majority deciding */
    RL_MODE_CLUSTER, /* each key on its slot's master */
    RL_MODE_SENTINEL /* every key on the master the sentinels name */
} rl__mode;

/* The most servers a sharded client takes. */
#define RL_MAX_SERVERS 1024

struct redislock_client {
    rl__env env; /* first: what the lock layer reads (env.h) */
    rl__mode mode;
    rl__pool *pools; /* none in cluster mode: the cluster has its own */
    size_t npools;
    rl__cluster *cluster;   /* cluster mode only */
    rl__sentinel *sentinel; /* Sentinel mode only */
    rl__ring ring;          /* only with more than one server */
    rl__idset ids;          /* which servers are one: with several */
    int have_ids;           /* ids needs rl__idset_fini */
};

/* The lock layer reads a client pointer as its env (env.h). */
_Static_assert(offsetof(struct redislock_client, env) == 0,
               "the env must come first in struct redislock_client");

static redislock_err check_options(const redislock_options *o)
{
    if (o->connect_timeout_ms < 0 || o->command_timeout_ms < 0 ||
        o->max_connections < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "negative timeout or connection count in options");
    if (o->server_timeout_ms < 0 || o->wait_replicas < REDISLOCK_REPLICAS_ALL ||
        o->wait_replicas_timeout_ms < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "negative server timeout or replica-sync setting");
    if (o->wait_aof_local < 0 || o->wait_aof_local > 1 ||
        o->wait_aof_replicas < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "wait_aof_local %d, wait_aof_replicas %d: want 0 or "
                       "1 for the master's fsync, and 0 or more replicas",
                       o->wait_aof_local, o->wait_aof_replicas);
    if (o->lazy_connect < 0 || o->lazy_connect > 1)
        return rl__err(REDISLOCK_EINVAL, "lazy_connect %d: want 0 or 1",
                       o->lazy_connect);
    if (o->strict < 0 || o->strict > 1)
        return rl__err(REDISLOCK_EINVAL, "strict %d: want 0 or 1", o->strict);
    if (o->strict && o->lazy_connect)
        return rl__err(REDISLOCK_EINVAL,
                       "strict reads the servers' configuration when the "
                       "client is made, which lazy_connect puts off: turn "
                       "one of them off");
    if (o->prefix != NULL && strlen(o->prefix) > REDISLOCK_KEY_MAX)
        return rl__err(REDISLOCK_EINVAL, "key prefix longer than %d bytes",
                       REDISLOCK_KEY_MAX);
    return REDISLOCK_OK;
}

/* Asks the servers with want[i] for a PING all at once (those down or
 * stopped cost one timeout together); once enough have answered, the
 * others get until quick_ms at most (0: no such cut). want[i] stays set
 * for those cut short, and those that answered are counted in *up. The
 * first failure, with its detail in said, is *first. */
static void open_pass(redislock_client *c, int *want, size_t enough,
                      int64_t quick_ms, size_t *up, redislock_err *first,
                      char *said, size_t len)
{
    rl__pool_ask a[RL_MAX_QUORUM];
    redislock_err err;
    size_t i, n = 0;
    int at[RL_MAX_QUORUM];

    for (i = 0; i < c->npools; i++)
        if (want[i]) {
            at[n] = (int)i;
            rl__pool_ping(&a[n++], &c->pools[i]);
        }
    if (n == 0)
        return;
    rl__pools_ask(a, n, enough, quick_ms);
    for (i = 0; i < n; i++) {
        err = rl__pool_pinged(&a[i]);
        want[at[i]] = a[i].cut;
        if (err == REDISLOCK_OK)
            ++*up;
        else if (*first == REDISLOCK_OK && !a[i].cut) {
            *first = err;
            snprintf(said, len, "%s", redislock_errdetail());
        }
        rl__pool_ask_free(&a[i]);
    }
}

/* Redlock tolerates a minority of servers down, from the start too: a
 * client is made when a majority answer. The servers are asked at once,
 * each for the pools' own timeouts; once a majority has answered, the
 * others get what a round gives a server for a lease of one command
 * timeout (a tenth of it, or server_timeout_ms), so that a stopped
 * server delays the client no more than it delays such a round, while a
 * server down for good costs one connect timeout with no majority. Only
 * when the majority's answers then fail their checks are those cut short
 * asked again, for the pools' timeouts. The servers left out are
 * connected to, and identified, by the rounds (ident.h). */
static redislock_err check_majority(redislock_client *c)
{
    int64_t quick =
        rl__client_server_timeout(c, c->pools[0].cfg.command_timeout_ms);
    size_t need = c->npools / 2 + 1, i, up = 0;
    int want[RL_MAX_QUORUM];
    redislock_err first = REDISLOCK_OK;
    char said[256] = "";

    for (i = 0; i < c->npools; i++)
        want[i] = 1;
    open_pass(c, want, need, quick, &up, &first, said, sizeof said);
    if (up < need)
        open_pass(c, want, 0, 0, &up, &first, said, sizeof said);
    if (up >= need)
        return REDISLOCK_OK;
    /* Wrong passwords or rights, a replica, a server configured against
     * us: each says more than "no quorum". */
    if (first == REDISLOCK_EAUTH || first == REDISLOCK_EINVAL ||
        first == REDISLOCK_ENOPERM || first == REDISLOCK_EREADONLY ||
        first == REDISLOCK_ECONFIG)
        return rl__err(first, "%s", said);
    return rl__err(REDISLOCK_ENOQUORUM,
                   "only %zu of %zu servers answered, %zu needed (%s)", up,
                   c->npools, need, said);
}

/* The ring over the servers' canonical names (see ident.h): clients
 * that spell a server differently, or list the servers in another order,
 * place every key alike. Two databases of one server are two shards. */
static redislock_err build_ring(redislock_client *c)
{
    const char *names[RL_MAX_SERVERS];
    size_t i;

    for (i = 0; i < c->npools; i++)
        names[i] = rl__idset_name(&c->ids, i);
    if (rl__ring_build(&c->ring, names, c->npools) != 0)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    return REDISLOCK_OK;
}

/* Sets up every server's pool, connects to all at once, checks that no
 * two are one server, and builds the ring. */
static redislock_err setup(redislock_client *c, const char *const *urls,
                           const redislock_options *o)
{
    redislock_err err;
    size_t i;

    for (i = 0; i < c->npools; i++) {
        if ((err = rl__pool_init(&c->pools[i], urls[i], o)) != REDISLOCK_OK)
            return err;
        if (o->lazy_connect)
            rl__pool_lazy(&c->pools[i]);
    }
    c->env.server_timeout_cap_ms = c->pools[0].cfg.command_timeout_ms;
    if (c->npools > 1) {
        c->have_ids = 1;
        err = rl__idset_init(&c->ids, c->pools, c->npools,
                             c->mode == RL_MODE_REDLOCK, c->env.prefix,
                             c->env.prefixlen);
        if (err != REDISLOCK_OK)
            return err;
    }
    /* Nothing is asked now: each server is checked by its first
     * connection (pool.h, ident.h). */
    if (o->lazy_connect && c->npools == 1)
        return REDISLOCK_OK;
    if (o->lazy_connect && (err = rl__idset_lazy(&c->ids)) != REDISLOCK_OK)
        return err;
    if (o->lazy_connect)
        return c->mode == RL_MODE_SHARDED ? build_ring(c) : REDISLOCK_OK;
    if (c->mode == RL_MODE_REDLOCK) {
        if ((err = check_majority(c)) != REDISLOCK_OK)
            return err;
        return rl__idset_check(&c->ids);
    }
    if ((err = rl__pools_check(c->pools, c->npools)) != REDISLOCK_OK)
        return err;
    if (c->mode != RL_MODE_SHARDED)
        return REDISLOCK_OK;
    if ((err = rl__idset_check(&c->ids)) != REDISLOCK_OK)
        return err;
    return build_ring(c);
}

/* The parts every kind of client shares; *out is NULL on failure. */
static redislock_err client_alloc(redislock_client **out, rl__mode mode,
                                  const char *const *urls, size_t n,
                                  const redislock_options **opts)
{
    static const redislock_options zero;
    redislock_client *c;
    redislock_err err;
    size_t i;

    if (out == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL output pointer");
    *out = NULL;
    if (urls == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL URL list");
    if (n == 0 || n > RL_MAX_SERVERS)
        return rl__err(REDISLOCK_EINVAL, "%zu servers: want 1 to %d", n,
                       RL_MAX_SERVERS);
    for (i = 0; i < n; i++)
        if (urls[i] == NULL)
            return rl__err(REDISLOCK_EINVAL, "URL %zu is NULL", i);
    for (i = 0; i < n; i++)
        if (mode != RL_MODE_SENTINEL && rl__url_is_sentinel(urls[i]))
            return rl__err(REDISLOCK_EINVAL,
                           "a redis+sentinel:// URL names a master of its "
                           "own: give it alone to redislock_client_new()");
    if (*opts == NULL)
        *opts = &zero;
    if ((err = check_options(*opts)) != REDISLOCK_OK)
        return err;
    if ((c = calloc(1, sizeof *c)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    c->mode = mode;
    c->env.algo = mode == RL_MODE_REDLOCK ? &rl__algo_redlock : &rl__algo_one;
    c->env.server_timeout_ms = (*opts)->server_timeout_ms;
    c->env.max_idle = (*opts)->max_connections > 0
                          ? (*opts)->max_connections
                          : REDISLOCK_DEFAULT_MAX_CONNECTIONS;
    c->env.server_timeout_cap_ms = REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS;
    c->env.replicas.want = (*opts)->wait_replicas;
    c->env.replicas.aof_local = (*opts)->wait_aof_local;
    c->env.replicas.aof_replicas = (*opts)->wait_aof_replicas;
    c->env.replicas.timeout_ms = (*opts)->wait_replicas_timeout_ms
                                     ? (*opts)->wait_replicas_timeout_ms
                                     : RL_DEFAULT_WAIT_REPLICAS_MS;
    c->env.replicas.lenient = (*opts)->wait_replicas_lenient;
    c->env.events = (rl__events){(*opts)->on_event, (*opts)->on_event_arg};
    pthread_mutex_init(&c->env.mu, NULL);
    c->env.prefix = strdup((*opts)->prefix ? (*opts)->prefix : "");
    if (c->env.replicas.want < 0)
        c->env.replicas.seen = rl__seen_new();
    if (c->env.prefix == NULL ||
        (c->env.replicas.want < 0 && !c->env.replicas.seen)) {
        redislock_client_free(c);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    c->env.prefixlen = strlen(c->env.prefix);
    *out = c;
    return REDISLOCK_OK;
}

/* A client whose setup failed: freed, and *out NULL again. */
static redislock_err undo(redislock_client **out, redislock_err err)
{
    redislock_client_free(*out);
    *out = NULL;
    return err;
}

static redislock_err new_with_pools(redislock_client **out, rl__mode mode,
                                    const char *const *urls, size_t n,
                                    const redislock_options *opts)
{
    redislock_err err = client_alloc(out, mode, urls, n, &opts);

    if (err != REDISLOCK_OK)
        return err;
    if (((*out)->pools = calloc(n, sizeof *(*out)->pools)) == NULL)
        return undo(out, rl__err(REDISLOCK_ENOMEM, "out of memory"));
    (*out)->npools = n;
    if ((err = setup(*out, urls, opts)) != REDISLOCK_OK)
        return undo(out, err);
    (*out)->env.topo = (rl__topo){mode == RL_MODE_REDLOCK   ? RL_TOPO_SET
                                  : mode == RL_MODE_SHARDED ? RL_TOPO_SHARDED
                                                            : RL_TOPO_SINGLE,
                                  (*out)->pools,
                                  n,
                                  &(*out)->ring,
                                  NULL,
                                  NULL};
    return REDISLOCK_OK;
}

/* A Sentinel or Cluster client learns where keys go when it is made;
 * routing requests before that is not written yet, so such a client
 * cannot be lazy. */
static redislock_err not_lazy(const redislock_options *o, const char *what)
{
    if (o == NULL || !o->lazy_connect)
        return REDISLOCK_OK;
    return rl__err(REDISLOCK_EINVAL,
                   "lazy_connect: a %s client is made only once it has "
                   "found where keys go, not lazily yet: make it once "
                   "its servers answer (retry the constructor), or turn "
                   "lazy_connect off",
                   what);
}

/* A master found through Redis Sentinel (sentinel.h). */
static redislock_err new_sentinel(redislock_client **out, const char *url,
                                  const redislock_options *opts)
{
    redislock_err err = client_alloc(out, RL_MODE_SENTINEL, &url, 1, &opts);

    if (err == REDISLOCK_OK &&
        (err = not_lazy(opts, "Sentinel (redis+sentinel://)")) != 0)
        return undo(out, err);
    if (err == REDISLOCK_OK &&
        (err = rl__sentinel_new(url, opts, &(*out)->sentinel)) != 0)
        return undo(out, err);
    if (err == REDISLOCK_OK)
        (*out)->env.topo =
            (rl__topo){RL_TOPO_SENTINEL, NULL, 0, NULL, NULL, (*out)->sentinel};
    return err;
}

static redislock_err new_sharded(redislock_client **out,
                                 const char *const *urls, size_t n,
                                 const redislock_options *opts)
{
    if (n == 1 && urls != NULL && rl__url_is_sentinel(urls[0]))
        return new_sentinel(out, urls[0], opts);
    return new_with_pools(out, n == 1 ? RL_MODE_SINGLE : RL_MODE_SHARDED, urls,
                          n, opts);
}

static redislock_err new_redlock(redislock_client **out,
                                 const char *const *urls, size_t n,
                                 const redislock_options *opts)
{
    if (out != NULL)
        *out = NULL;
    if (n < 3 || n % 2 == 0 || n > RL_MAX_QUORUM)
        return rl__err(REDISLOCK_EINVAL,
                       "Redlock needs an odd number of independent servers, "
                       "3 to %d, not %zu",
                       RL_MAX_QUORUM, n);
    if (opts != NULL && (opts->wait_replicas != 0 || opts->wait_aof_local > 0 ||
                         opts->wait_aof_replicas > 0))
        return rl__err(REDISLOCK_EINVAL,
                       "wait_replicas and wait_aof_* are for a master with "
                       "replicas; a Redlock quorum's safety comes from its "
                       "majority");
    return new_with_pools(out, RL_MODE_REDLOCK, urls, n, opts);
}

static redislock_err new_cluster(redislock_client **out,
                                 const char *const *seeds, size_t n,
                                 const redislock_options *opts)
{
    redislock_err err = client_alloc(out, RL_MODE_CLUSTER, seeds, n, &opts);

    if (err == REDISLOCK_OK && (err = not_lazy(opts, "Cluster")) != 0)
        return undo(out, err);
    if (err == REDISLOCK_OK &&
        (err = rl__cluster_new(seeds, n, opts, &(*out)->cluster)) != 0)
        return undo(out, err);
    if (err == REDISLOCK_OK)
        (*out)->env.topo =
            (rl__topo){RL_TOPO_CLUSTER, NULL, 0, NULL, (*out)->cluster, NULL};
    return err;
}

typedef redislock_err (*maker)(redislock_client **out, const char *const *urls,
                               size_t n, const redislock_options *opts);

/* Every constructor: the caller's options, of opts_size bytes (see "ABI"
 * in redislock.h), as the library's own struct, to the maker. */
static redislock_err make(maker fn, redislock_client **out,
                          const char *const *urls, size_t n,
                          const redislock_options *opts, size_t opts_size)
{
    redislock_options o;
    redislock_err err = REDISLOCK_OK;

    if (opts != NULL)
        err =
            rl__abi_check(opts_size, RL_OPTIONS_SIZE_0_1, "redislock_options");
    if (err != REDISLOCK_OK) {
        if (out != NULL)
            *out = NULL;
        return err;
    }
    if ((err = fn(out, urls, n, rl__abi_in(&o, sizeof o, opts, opts_size))) !=
        REDISLOCK_OK)
        return err;
    /* Strict: a server that would lose locks is refused, as a wrong
     * password is. */
    if (opts != NULL && o.strict &&
        (err = rl__doctor_strict(*out)) != REDISLOCK_OK)
        return undo(out, err);
    return REDISLOCK_OK;
}

redislock_err redislock_client_new_sized(redislock_client **out,
                                         const char *url,
                                         const redislock_options *opts,
                                         size_t opts_size)
{
    return make(new_sharded, out, &url, 1, opts, opts_size);
}

redislock_err redislock_client_new_sharded_sized(redislock_client **out,
                                                 const char *const *urls,
                                                 size_t n,
                                                 const redislock_options *opts,
                                                 size_t opts_size)
{
    return make(new_sharded, out, urls, n, opts, opts_size);
}

redislock_err redislock_client_new_redlock_sized(redislock_client **out,
                                                 const char *const *urls,
                                                 size_t n,
                                                 const redislock_options *opts,
                                                 size_t opts_size)
{
    return make(new_redlock, out, urls, n, opts, opts_size);
}

redislock_err redislock_client_new_cluster_sized(redislock_client **out,
                                                 const char *const *seeds,
                                                 size_t n,
                                                 const redislock_options *opts,
                                                 size_t opts_size)
{
    return make(new_cluster, out, seeds, n, opts, opts_size);
}

/* The 0.1 entry points, which take 0.1's redislock_options. The names are
 * in parentheses because the header makes them macros. */
redislock_err(redislock_client_new)(redislock_client **out, const char *url,
                                    const redislock_options *opts)
{
    return make(new_sharded, out, &url, 1, opts, RL_OPTIONS_SIZE_0_1);
}

redislock_err(redislock_client_new_sharded)(redislock_client **out,
                                            const char *const *urls, size_t n,
                                            const redislock_options *opts)
{
    return make(new_sharded, out, urls, n, opts, RL_OPTIONS_SIZE_0_1);
}

redislock_err(redislock_client_new_redlock)(redislock_client **out,
                                            const char *const *urls, size_t n,
                                            const redislock_options *opts)
{
    return make(new_redlock, out, urls, n, opts, RL_OPTIONS_SIZE_0_1);
}

redislock_err(redislock_client_new_cluster)(redislock_client **out,
                                            const char *const *seeds, size_t n,
                                            const redislock_options *opts)
{
    return make(new_cluster, out, seeds, n, opts, RL_OPTIONS_SIZE_0_1);
}

void redislock_client_free(redislock_client *c)
{
    size_t i;

    if (c == NULL)
        return;
    /* The blocking calls' loops hand their sweeps to the keeper, which
     * gets time to finish them; both use the pools' servers. */
    rl__engine_free(c->env.engine);
    rl__keeper_free(c->env.keeper);
    for (i = 0; i < c->npools; i++)
        rl__pool_fini(&c->pools[i]);
    free(c->pools);
    rl__cluster_free(c->cluster);
    rl__sentinel_free(c->sentinel);
    /* After the pools: their connection checks refer to it. */
    if (c->have_ids)
        rl__idset_fini(&c->ids);
    rl__ring_free(&c->ring);
    free(c->env.prefix);
    rl__seen_free(c->env.replicas.seen);
    pthread_mutex_destroy(&c->env.mu);
    free(c);
}
