/*
 * The cluster's slot map and nodes. The map is an array of 16384 node
 * indices behind a read-write lock: every request reads it, and only a
 * reload (CLUSTER SLOTS) or a MOVED redirection writes it. The requests
 * that follow redirections are in redirect.c.
 */
#include "cluster.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define RL_NO_NODE UINT16_MAX
/* Nodes known at most, masters and replicas, live or retired. */
#define RL_MAX_NODES 4096

struct rl__cluster {
    pthread_rwlock_t rw;       /* guards everything below but epoch */
    pthread_mutex_t reload_mu; /* one reload at a time */
    _Atomic uint64_t epoch;    /* reloads done */
    redislock_options o;       /* for new nodes, owning its strings */
    char scheme[8];            /* "redis" or "rediss", as the seeds' */
    char *user;                /* %-escaped for node URLs, or NULL */
    char *tlsq;                /* the seed's TLS query, %-escaped, or NULL */
    rl__pool *seeds;
    size_t nseeds;
    rl__pool **nodes; /* every node ever seen, never freed before the end */
    size_t nnodes, cap;
    size_t good; /* the node that answered the last reload */
    uint16_t *masters;
    size_t nmasters;
    uint16_t slots[RL_CLUSTER_SLOTS];
};

/* Appends s to b (of size n, at *at) with every byte that is not
 * unreserved in a URL %-escaped. */
static void escape(char *b, size_t n, size_t *at, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s != '\0' && *at + 4 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL) {
            b[(*at)++] = (char)ch;
        } else {
            b[(*at)++] = '%';
            b[(*at)++] = hex[ch >> 4];
            b[(*at)++] = hex[ch & 15];
        }
    }
    b[*at] = '\0';
}

/* The TLS parameters of the seed's URL (rl__url), as a query for node
 * URLs; NULL when it has none, or when out of memory (*oom). */
static char *tls_query(const rl__url *u, int *oom)
{
    const struct {
        const char *name, *v;
    } p[] = {{"tls_ca_file", u->tls_ca_file},
             {"tls_ca_dir", u->tls_ca_dir},
             {"tls_cert_file", u->tls_cert_file},
             {"tls_key_file", u->tls_key_file},
             {"tls_server_name", u->tls_server_name},
             {"tls_insecure", u->tls_insecure ? "1" : NULL}};
    size_t i, n = 1, at = 0;
    char *b;

    *oom = 0;
    for (i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i].v != NULL)
            n += strlen(p[i].name) + 2 + 3 * strlen(p[i].v);
    if (n == 1)
        return NULL;
    if ((b = malloc(n + 4)) == NULL) {
        *oom = 1;
        return NULL;
    }
    for (i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i].v != NULL) {
            at += (size_t)snprintf(b + at, n + 4 - at,
                                   "%s%s=", at > 0 ? "&" : "", p[i].name);
            escape(b, n + 4, &at, p[i].v);
        }
    return b;
}

/* Keeps what new nodes need of the seed that gave the map: its scheme,
 * ACL user, effective password and TLS parameters. Database 0 is the
 * only one a cluster has. */
static redislock_err adopt_seed(rl__cluster *cl, const rl__pool *seed)
{
    char buf[3 * 256 + 8];
    size_t at = 0;
    int oom;

    snprintf(cl->scheme, sizeof cl->scheme, "%s",
             seed->url.tls ? "rediss" : "redis");
    /* Nodes found later get the seed's timeouts, its URL's included. */
    cl->o.connect_timeout_ms = seed->cfg.connect_timeout_ms;
    cl->o.command_timeout_ms = seed->cfg.command_timeout_ms;
    if (seed->url.user != NULL) {
        if (strlen(seed->url.user) > 256)
            return rl__err(REDISLOCK_EINVAL, "ACL user name too long");
        escape(buf, sizeof buf, &at, seed->url.user);
        if ((cl->user = strdup(buf)) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    if (seed->password != NULL &&
        (cl->o.password = strdup(seed->password)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if ((cl->tlsq = tls_query(&seed->url, &oom)) == NULL && oom)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    return REDISLOCK_OK;
}

/* The node at host:port, made if new; its index or -1. Write-locked. */
static int node_index(rl__cluster *cl, const char *host, int port)
{
    char *url;
    int v6 = strchr(host, ':') != NULL, ok;
    rl__pool *p, **grown;
    size_t i, n;

    for (i = 0; i < cl->nnodes; i++)
        if (cl->nodes[i]->url.port == port &&
            strcmp(cl->nodes[i]->url.host, host) == 0)
            return (int)i;
    if (cl->nnodes == RL_MAX_NODES || strlen(host) > 256)
        return -1;
    if (cl->nnodes == cl->cap) {
        grown = realloc(cl->nodes, (cl->cap * 2 + 8) * sizeof *grown);
        if (grown == NULL)
            return -1;
        cl->nodes = grown;
        cl->cap = cl->cap * 2 + 8;
    }
    n = 600 + (cl->tlsq != NULL ? strlen(cl->tlsq) : 0);
    if ((url = malloc(n)) == NULL)
        return -1;
    snprintf(url, n, "%s://%s%s%s%s%s:%d%s%s", cl->scheme,
             cl->user ? cl->user : "", cl->user ? "@" : "", v6 ? "[" : "", host,
             v6 ? "]" : "", port, cl->tlsq ? "?" : "",
             cl->tlsq ? cl->tlsq : "");
    if ((p = malloc(sizeof *p)) == NULL) {
        free(url);
        return -1;
    }
    ok = rl__pool_init(p, url, &cl->o) == REDISLOCK_OK;
    free(url);
    if (!ok) {
        rl__pool_fini(p);
        free(p);
        return -1;
    }
    rl__pool_probe(p);
    cl->nodes[cl->nnodes] = p;
    return (int)cl->nnodes++;
}

/* Rebuilds the list of masters from the map. Write-locked. */
static redislock_err list_masters(rl__cluster *cl)
{
    unsigned char *seen = calloc(cl->nnodes + 1, 1);
    uint16_t *m = malloc((cl->nnodes + 1) * sizeof *m);
    size_t i, n = 0;

    if (seen == NULL || m == NULL) {
        free(seen);
        free(m);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    for (i = 0; i < RL_CLUSTER_SLOTS; i++)
        if (cl->slots[i] != RL_NO_NODE && !seen[cl->slots[i]]) {
            seen[cl->slots[i]] = 1;
            m[n++] = cl->slots[i];
        }
    free(seen);
    free(cl->masters);
    cl->masters = m;
    cl->nmasters = n;
    return REDISLOCK_OK;
}

/* Whether r is a node entry of CLUSTER SLOTS: [host, port, id, ...]. */
static int node_entry(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
           r->element[0]->type == REDIS_REPLY_STRING &&
           r->element[1]->type == REDIS_REPLY_INTEGER;
}

/* The index of a node entry's node (an empty host is the asked node's,
 * "?" an unknown one); -1 when it has none. Write-locked. */
static int entry_node(rl__cluster *cl, const rl__reply *e, const char *asked)
{
    const char *host = e->element[0]->str;

    if (host[0] == '\0' && asked != NULL)
        host = asked;
    if (host[0] == '\0' || strcmp(host, "?") == 0)
        return -1;
    return node_index(cl, host, (int)e->element[1]->integer);
}

/* Applies one range [start, end, master, replicas...] to map. */
static int apply_range(rl__cluster *cl, const rl__reply *r, const char *asked,
                       uint16_t *map)
{
    long long lo, hi, i;
    int master = -1;
    size_t k;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER)
        return -1;
    lo = r->element[0]->integer;
    hi = r->element[1]->integer;
    if (lo < 0 || hi >= RL_CLUSTER_SLOTS || lo > hi)
        return -1;
    /* Replicas are made nodes too: one may be promoted, and any node can
     * tell the map when a master is down. */
    for (k = 2; k < r->elements; k++) {
        int idx = node_entry(r->element[k])
                      ? entry_node(cl, r->element[k], asked)
                      : -1;
        if (k == 2)
            master = idx;
    }
    for (i = lo; i <= hi; i++)
        map[i] = master < 0 ? RL_NO_NODE : (uint16_t)master;
    return 0;
}

/* Replaces the map by a CLUSTER SLOTS reply from the node at asked. */
static redislock_err apply_slots(rl__cluster *cl, const rl__reply *r,
                                 const char *asked)
{
    uint16_t *map = malloc(sizeof cl->slots);
    redislock_err err = REDISLOCK_OK;
    size_t i;

    if (map == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    for (i = 0; i < RL_CLUSTER_SLOTS; i++)
        map[i] = RL_NO_NODE;
    pthread_rwlock_wrlock(&cl->rw);
    for (i = 0; i < r->elements && err == REDISLOCK_OK; i++)
        if (apply_range(cl, r->element[i], asked, map) != 0)
            err = rl__err(REDISLOCK_EPROTOCOL,
                          "CLUSTER SLOTS answered a malformed range");
    if (err == REDISLOCK_OK) {
        memcpy(cl->slots, map, sizeof cl->slots);
        err = list_masters(cl);
    }
    pthread_rwlock_unlock(&cl->rw);
    free(map);
    return err;
}

redislock_err rl__cluster_load_reply(rl__cluster *cl, const rl__pool *p,
                                     const rl__reply *r)
{
    redislock_err err = rl__reply_check(r, "CLUSTER SLOTS");

    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return rl__err(REDISLOCK_EPROTOCOL,
                       "CLUSTER SLOTS answered no slots: is the cluster set "
                       "up?");
    return apply_slots(cl, r, p->url.host);
}

/* The nodes to ask for the map, the one that answered last first. */
static rl__pool **sources(rl__cluster *cl, size_t *n)
{
    rl__pool **v;
    size_t i;

    pthread_rwlock_rdlock(&cl->rw);
    *n = cl->nnodes;
    if ((v = malloc((*n + 1) * sizeof *v)) != NULL)
        for (i = 0; i < *n; i++)
            v[i] = cl->nodes[(cl->good + i) % *n];
    pthread_rwlock_unlock(&cl->rw);
    return v;
}

/* The node that answered the last reload, p, is asked first next time;
 * the epoch moves on. */
static void loaded(rl__cluster *cl, const rl__pool *p)
{
    size_t n;

    pthread_rwlock_wrlock(&cl->rw);
    for (n = 0; n < cl->nnodes && cl->nodes[n] != p; n++)
        ;
    cl->good = n < cl->nnodes ? n : 0;
    pthread_rwlock_unlock(&cl->rw);
    atomic_fetch_add(&cl->epoch, 1);
}

void rl__cluster_walk_start(rl__cluster *cl, rl__cluster_walk *w)
{
    memset(w, 0, sizeof *w);
    if ((w->v = sources(cl, &w->n)) == NULL)
        w->n = 0;
    w->err = REDISLOCK_ECONNECT;
    snprintf(w->said, sizeof w->said, "no cluster node known");
}

rl__pool *rl__cluster_walk_next(rl__cluster *cl, rl__cluster_walk *w)
{
    if (w->done)
        w->asked = NULL;
    else if (w->i < w->n)
        w->asked = w->v[w->i++];
    else /* every known node failed: the seeds may still answer */
        w->asked = w->seed < cl->nseeds ? &cl->seeds[w->seed++] : NULL;
    if (w->asked == NULL && !w->done) {
        w->done = 1;
        rl__err(w->err, "%s", w->said);
    }
    return w->asked;
}

void rl__cluster_walk_heard(rl__cluster *cl, rl__cluster_walk *w,
                            redislock_err err, const rl__reply *r)
{
    if (err == REDISLOCK_OK &&
        (err = rl__cluster_load_reply(cl, w->asked, r)) == REDISLOCK_OK) {
        loaded(cl, w->asked);
        w->done = 1;
    }
    w->err = err;
    snprintf(w->said, sizeof w->said, "%s", redislock_errdetail());
}

void rl__cluster_walk_end(rl__cluster_walk *w)
{
    free(w->v);
    w->v = NULL;
}

/* The map read from the nodes in turn, then the seeds (the walk, each
 * question on a private loop). */
static redislock_err reload_now(rl__cluster *cl)
{
    static const char *argv[2] = {"CLUSTER", "SLOTS"};
    rl__cluster_walk w;
    rl__reply *r;
    rl__pool *p;

    rl__cluster_walk_start(cl, &w);
    while ((p = rl__cluster_walk_next(cl, &w)) != NULL) {
        redislock_err err = rl__pool_command(p, 2, argv, &r);

        rl__cluster_walk_heard(cl, &w, err, r);
        rl__reply_free(r);
    }
    rl__cluster_walk_end(&w);
    return w.err == REDISLOCK_OK ? REDISLOCK_OK : rl__err(w.err, "%s", w.said);
}

redislock_err rl__cluster_reload(rl__cluster *cl, uint64_t epoch)
{
    redislock_err err = REDISLOCK_OK;

    pthread_mutex_lock(&cl->reload_mu);
    if (atomic_load(&cl->epoch) == epoch &&
        (err = reload_now(cl)) != REDISLOCK_OK)
        atomic_fetch_add(&cl->epoch, 1);
    pthread_mutex_unlock(&cl->reload_mu);
    return err;
}

uint64_t rl__cluster_epoch(rl__cluster *cl)
{
    return atomic_load(&cl->epoch);
}

/* Copies the options' strings, which the caller may free after new. */
static redislock_err own_options(rl__cluster *cl, const redislock_options *o)
{
    const char **s[4] = {&cl->o.tls_ca_file, &cl->o.tls_cert_file,
                         &cl->o.tls_key_file, &cl->o.tls_server_name};
    int i;

    cl->o = *o;
    cl->o.password = NULL;
    cl->o.prefix = NULL;
    for (i = 0; i < 4; i++)
        if (*s[i] != NULL && (*s[i] = strdup(*s[i])) == NULL) {
            while (++i < 4)
                *s[i] = NULL;
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        }
    return REDISLOCK_OK;
}

/* The map read from seed p. */
static redislock_err load_from(rl__cluster *cl, rl__pool *p)
{
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    rl__reply *r;
    redislock_err err = rl__pool_command(p, 2, argv, &r);

    if (err != REDISLOCK_OK)
        return err;
    err = rl__cluster_load_reply(cl, p, r);
    rl__reply_free(r);
    return err;
}

static redislock_err first_map(rl__cluster *cl, const char *const *seeds,
                               const redislock_options *o)
{
    redislock_err err = REDISLOCK_OK;
    size_t i;

    for (i = 0; i < cl->nseeds; i++) {
        if ((err = rl__pool_init(&cl->seeds[i], seeds[i], o)) != REDISLOCK_OK)
            return err;
        if (cl->seeds[i].url.db != 0)
            return rl__err(REDISLOCK_EINVAL,
                           "seed %s names database %d: a Redis Cluster has "
                           "only database 0",
                           cl->seeds[i].name, cl->seeds[i].url.db);
    }
    for (i = 0; i < cl->nseeds; i++) {
        if ((err = adopt_seed(cl, &cl->seeds[i])) != REDISLOCK_OK)
            return err;
        if ((err = load_from(cl, &cl->seeds[i])) == REDISLOCK_OK)
            return REDISLOCK_OK;
        free(cl->user);
        free(cl->tlsq);
        free((char *)cl->o.password);
        cl->user = NULL;
        cl->tlsq = NULL;
        cl->o.password = NULL;
    }
    return err;
}

redislock_err rl__cluster_new(const char *const *seeds, size_t n,
                              const redislock_options *o, rl__cluster **out)
{
    rl__cluster *cl = calloc(1, sizeof *cl);
    redislock_err err;

    *out = NULL;
    if (cl == NULL || (cl->seeds = calloc(n, sizeof *cl->seeds)) == NULL) {
        free(cl);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    pthread_rwlock_init(&cl->rw, NULL);
    pthread_mutex_init(&cl->reload_mu, NULL);
    cl->nseeds = n;
    err = own_options(cl, o);
    if (err == REDISLOCK_OK)
        err = first_map(cl, seeds, o);
    if (err != REDISLOCK_OK) {
        rl__cluster_free(cl);
        return err;
    }
    *out = cl;
    return REDISLOCK_OK;
}

void rl__cluster_free(rl__cluster *cl)
{
    size_t i;

    if (cl == NULL)
        return;
    for (i = 0; i < cl->nnodes; i++) {
        rl__pool_fini(cl->nodes[i]);
        free(cl->nodes[i]);
    }
    for (i = 0; i < cl->nseeds; i++)
        rl__pool_fini(&cl->seeds[i]);
    free(cl->nodes);
    free(cl->seeds);
    free(cl->masters);
    free(cl->user);
    free(cl->tlsq);
    free((char *)cl->o.password);
    free((char *)cl->o.tls_ca_file);
    free((char *)cl->o.tls_cert_file);
    free((char *)cl->o.tls_key_file);
    free((char *)cl->o.tls_server_name);
    pthread_mutex_destroy(&cl->reload_mu);
    pthread_rwlock_destroy(&cl->rw);
    free(cl);
}

rl__pool *rl__cluster_route(rl__cluster *cl, const void *key, size_t len)
{
    unsigned slot = rl__key_slot(key, len);
    rl__pool *p;

    pthread_rwlock_rdlock(&cl->rw);
    /* A slot without a master: any node answers with where to go, or
     * CLUSTERDOWN, which is retried. */
    if (cl->slots[slot] != RL_NO_NODE)
        p = cl->nodes[cl->slots[slot]];
    else
        p = cl->nodes[cl->good];
    pthread_rwlock_unlock(&cl->rw);
    return p;
}

rl__pool *rl__cluster_master(rl__cluster *cl, size_t i)
{
    rl__pool *p = NULL;

    pthread_rwlock_rdlock(&cl->rw);
    if (i < cl->nmasters)
        p = cl->nodes[cl->masters[i]];
    pthread_rwlock_unlock(&cl->rw);
    return p;
}

rl__pool *rl__cluster_node(rl__cluster *cl, const char *host, int port)
{
    rl__pool *p = NULL;
    int idx;

    pthread_rwlock_wrlock(&cl->rw);
    if ((idx = node_index(cl, host, port)) >= 0)
        p = cl->nodes[idx];
    pthread_rwlock_unlock(&cl->rw);
    return p;
}

rl__pool *rl__cluster_moved(rl__cluster *cl, unsigned slot, const char *host,
                            int port)
{
    rl__pool *p = NULL;
    int idx;
    size_t i;

    pthread_rwlock_wrlock(&cl->rw);
    if ((idx = node_index(cl, host, port)) >= 0) {
        p = cl->nodes[idx];
        cl->slots[slot & (RL_CLUSTER_SLOTS - 1)] = (uint16_t)idx;
        for (i = 0; i < cl->nmasters && cl->masters[i] != idx; i++)
            ;
        /* A new master: the list has room, one per node. */
        if (i == cl->nmasters && list_masters(cl) != REDISLOCK_OK)
            p = NULL;
    }
    pthread_rwlock_unlock(&cl->rw);
    return p;
}
