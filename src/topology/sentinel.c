#include "sentinel.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "reply.h"
#include "url.h"

struct rl__sentinel {
    rl__sentinel_url u;
    rl__pool *sent; /* one per sentinel, in the URL's order */
    size_t first;   /* the sentinel to ask first: the last that answered */
    /* The options, with copies of their strings, for each new node. */
    redislock_options o;
    char *strs[5];
    pthread_mutex_t mu; /* guards what follows */
    rl__pool **nodes;   /* every node the sentinels named */
    size_t nnodes;
    rl__pool *master; /* NULL until found */
    int suspect;      /* a request found it gone: ask again first */
};

/* Copies o's strings into s, so that new nodes can be set up later. */
static redislock_err keep_options(rl__sentinel *s, const redislock_options *o)
{
    const char *from[5] = {o->password, o->tls_ca_file, o->tls_cert_file,
                           o->tls_key_file, o->tls_server_name};
    const char **to[5] = {&s->o.password, &s->o.tls_ca_file,
                          &s->o.tls_cert_file, &s->o.tls_key_file,
                          &s->o.tls_server_name};
    int i;

    s->o = *o;
    s->o.prefix = NULL;
    for (i = 0; i < 5; i++) {
        *to[i] = NULL;
        if (from[i] != NULL && (*to[i] = s->strs[i] = strdup(from[i])) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    return REDISLOCK_OK;
}

/* The node at host:port, set up on first sight. */
static redislock_err node_at(rl__sentinel *s, const char *host, int port,
                             rl__pool **out)
{
    rl__pool **grown, *p;
    char *url;
    size_t i, n;
    int v6 = strchr(host, ':') != NULL;
    redislock_err err;

    for (i = 0; i < s->nnodes; i++)
        if (s->nodes[i]->url.host != NULL &&
            strcmp(s->nodes[i]->url.host, host) == 0 &&
            s->nodes[i]->url.port == port) {
            *out = s->nodes[i];
            return REDISLOCK_OK;
        }
    n = strlen(s->u.node_pre) + strlen(host) + strlen(s->u.node_post) + 16;
    grown = realloc(s->nodes, (s->nnodes + 1) * sizeof *s->nodes);
    if (grown == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    s->nodes = grown;
    if ((url = malloc(n)) == NULL || (p = malloc(sizeof *p)) == NULL) {
        free(url);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    snprintf(url, n, "%s%s%s%s:%d%s", s->u.node_pre, v6 ? "[" : "", host,
             v6 ? "]" : "", port, s->u.node_post);
    err = rl__pool_init(p, url, &s->o);
    free(url);
    if (err != REDISLOCK_OK) {
        rl__pool_fini(p);
        free(p);
        return err;
    }
    rl__pool_probe(p);
    *out = s->nodes[s->nnodes++] = p;
    return REDISLOCK_OK;
}

/* Whether ROLE's reply r says node p is the master. */
static redislock_err role_of(const rl__sentinel *s, const rl__pool *p,
                             const rl__reply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return rl__err(REDISLOCK_EPROTOCOL, "ROLE of %s answered type %d",
                       p->name, r->type);
    if (strcmp(r->element[0]->str, "master") != 0)
        return rl__err(REDISLOCK_EREADONLY,
                       "the sentinels name %s the master of '%s', but it "
                       "says it is a %s (a failover under way?)",
                       p->name, s->u.name, r->element[0]->str);
    return REDISLOCK_OK;
}

/* What sentinel k answered in r (SENTINEL get-master-addr-by-name):
 * REDISLOCK_OK with the node it names in *p, REDISLOCK_EINVAL when it
 * knows no such name (*unknown set), or why not. */
static redislock_err answer(rl__sentinel *s, size_t k, const rl__reply *r,
                            rl__pool **p, int *unknown)
{
    const rl__reply *h, *port;

    *unknown = 0;
    if (r->type == REDIS_REPLY_NIL) {
        *unknown = 1;
        return rl__err(REDISLOCK_EINVAL, "sentinel %s knows no master '%s'",
                       s->sent[k].name, s->u.name);
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        (h = r->element[0])->type != REDIS_REPLY_STRING ||
        (port = r->element[1])->type != REDIS_REPLY_STRING ||
        atoi(port->str) <= 0 || atoi(port->str) > 65535)
        return rl__err(REDISLOCK_EPROTOCOL,
                       "sentinel %s answered SENTINEL "
                       "get-master-addr-by-name with no address",
                       s->sent[k].name);
    return node_at(s, h->str, atoi(port->str), p);
}

/* The question to ask a sentinel. */
static void question(const rl__sentinel *s, const char *argv[3])
{
    argv[0] = "SENTINEL";
    argv[1] = "get-master-addr-by-name";
    argv[2] = s->u.name;
}

/* p is the master, as sentinel k said: asked first next time. Called
 * with s->mu held. */
static void found(rl__sentinel *s, size_t k, rl__pool *p)
{
    s->first = k;
    s->master = p;
    s->suspect = 0;
}

void rl__sentinel_walk_start(rl__sentinel_walk *w)
{
    memset(w, 0, sizeof *w);
}

int rl__sentinel_walk_next(rl__sentinel *s, rl__sentinel_walk *w, rl__pool **to,
                           const char *argv[3], int *argc)
{
    if (w->done)
        return 0;
    if (w->named != NULL) {
        argv[0] = "ROLE";
        *argc = 1;
        *to = w->named;
        return 1;
    }
    if (w->i == s->u.n) {
        w->done = 1;
        if (w->unknown == s->u.n)
            w->err = rl__err(REDISLOCK_EINVAL,
                             "no sentinel knows a master named '%s' (check "
                             "the name at the end of the redis+sentinel:// "
                             "URL)",
                             s->u.name);
        else
            w->err =
                rl__err(w->err, "%zu sentinel%s asked for master '%s': %s",
                        s->u.n, s->u.n == 1 ? "" : "s", s->u.name, w->said);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    w->k = (s->first + w->i++) % s->u.n;
    pthread_mutex_unlock(&s->mu);
    question(s, argv);
    *argc = 3;
    *to = &s->sent[w->k];
    return 1;
}

void rl__sentinel_walk_heard(rl__sentinel *s, rl__sentinel_walk *w,
                             redislock_err err, const rl__reply *r)
{
    rl__pool *p = w->named;
    char said[200];
    int nil = 0;

    w->named = NULL;
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, p == NULL ? "SENTINEL" : "ROLE");
    if (err != REDISLOCK_OK) {
        snprintf(said, sizeof said, "%s", redislock_errdetail());
        err = p == NULL
                  ? rl__err(err, "sentinel %s: %s", s->sent[w->k].name, said)
                  : rl__err(err,
                            "the sentinels name %s the master of '%s', "
                            "and it fails: %s",
                            p->name, s->u.name, said);
    } else if (p == NULL) {
        /* The sentinel's answer: the node it names is asked next. */
        pthread_mutex_lock(&s->mu);
        err = answer(s, w->k, r, &w->named, &nil);
        pthread_mutex_unlock(&s->mu);
        if (err == REDISLOCK_OK)
            return;
    } else if ((err = role_of(s, p, r)) == REDISLOCK_OK) {
        pthread_mutex_lock(&s->mu);
        found(s, w->k, p);
        pthread_mutex_unlock(&s->mu);
        w->done = 1;
        w->err = REDISLOCK_OK;
        return;
    }
    /* This sentinel's turn failed; a node's failure says more than a
     * sentinel's refusal. */
    w->unknown += (size_t)nil;
    if (w->err == REDISLOCK_OK || (!nil && w->err == REDISLOCK_EINVAL)) {
        w->err = err;
        snprintf(w->said, sizeof w->said, "%s", redislock_errdetail());
    }
}

/* Asks the sentinels in turn, from the last that answered, until one
 * names a node that says it is the master (the walk, each question on a
 * private loop). */
static redislock_err discover(rl__sentinel *s)
{
    rl__sentinel_walk w;
    const char *argv[3];
    rl__reply *r;
    rl__pool *to;
    int argc;

    rl__sentinel_walk_start(&w);
    while (rl__sentinel_walk_next(s, &w, &to, argv, &argc)) {
        redislock_err err = rl__pool_command(to, argc, argv, &r);

        rl__sentinel_walk_heard(s, &w, err, r);
        rl__reply_free(r);
    }
    return w.err;
}

void rl__sentinel_free(rl__sentinel *s)
{
    size_t i;

    if (s == NULL)
        return;
    for (i = 0; s->sent != NULL && i < s->u.n; i++)
        rl__pool_fini(&s->sent[i]);
    free(s->sent);
    for (i = 0; i < s->nnodes; i++) {
        rl__pool_fini(s->nodes[i]);
        free(s->nodes[i]);
    }
    free(s->nodes);
    for (i = 0; i < 5; i++)
        free(s->strs[i]);
    rl__sentinel_url_free(&s->u);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

redislock_err rl__sentinel_new(const char *url, const redislock_options *o,
                               rl__sentinel **out)
{
    rl__sentinel *s = calloc(1, sizeof *s);
    redislock_options so;
    redislock_err err;
    size_t i;

    *out = NULL;
    if (s == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    if ((err = rl__sentinel_url_parse(url, &s->u)) != REDISLOCK_OK ||
        (err = keep_options(s, o)) != REDISLOCK_OK) {
        rl__sentinel_free(s);
        return err;
    }
    /* The sentinels: their URLs' passwords only, one idle connection
     * kept each. */
    so = s->o;
    so.max_connections = 1;
    so.wait_aof_local = so.wait_aof_replicas = 0;
    if ((s->sent = calloc(s->u.n, sizeof *s->sent)) == NULL)
        err = rl__err(REDISLOCK_ENOMEM, "out of memory");
    for (i = 0; err == REDISLOCK_OK && i < s->u.n; i++)
        err = rl__pool_init_own_auth(&s->sent[i], s->u.sentinels[i], &so);
    if (err == REDISLOCK_OK)
        err = discover(s);
    if (err != REDISLOCK_OK) {
        rl__sentinel_free(s);
        return err;
    }
    *out = s;
    return REDISLOCK_OK;
}

rl__pool *rl__sentinel_node(rl__sentinel *s)
{
    rl__pool *p;
    int suspect;

    /* Asked again first when a request found the master gone (whatever
     * that finds, the master last known is the answer). */
    p = rl__sentinel_known(s, &suspect);
    if (suspect) {
        (void)discover(s);
        p = rl__sentinel_known(s, &suspect);
    }
    return p;
}

static void suspect(rl__sentinel *s, const rl__pool *p)
{
    pthread_mutex_lock(&s->mu);
    if (s->master == p)
        s->suspect = 1;
    pthread_mutex_unlock(&s->mu);
}

rl__pool *rl__sentinel_known(rl__sentinel *s, int *suspect)
{
    rl__pool *p;

    pthread_mutex_lock(&s->mu);
    p = s->master;
    *suspect = s->suspect;
    pthread_mutex_unlock(&s->mu);
    return p;
}

void rl__sentinel_suspect(rl__sentinel *s, const rl__pool *p)
{
    suspect(s, p);
}

rl__pool *rl__sentinel_asked(rl__sentinel *s, size_t i, const char *argv[3])
{
    size_t k;

    if (i >= s->u.n)
        return NULL;
    pthread_mutex_lock(&s->mu);
    k = (s->first + i) % s->u.n;
    pthread_mutex_unlock(&s->mu);
    question(s, argv);
    return &s->sent[k];
}

redislock_err rl__sentinel_settled(rl__sentinel *s, const rl__pool *sentinel,
                                   const rl__pool *p, const rl__reply *r)
{
    rl__pool *named = NULL;
    char said[200];
    int unknown;
    redislock_err err = rl__reply_check(r, "SENTINEL");

    if (err != REDISLOCK_OK) {
        snprintf(said, sizeof said, "%s", redislock_errdetail());
        return rl__err(err, "sentinel %s: %s", sentinel->name, said);
    }
    pthread_mutex_lock(&s->mu);
    err = answer(s, (size_t)(sentinel - s->sent), r, &named, &unknown);
    pthread_mutex_unlock(&s->mu);
    if (err != REDISLOCK_OK || named == p)
        return err;
    suspect(s, p);
    return rl__err(REDISLOCK_EREADONLY,
                   "sentinel %s names %s the master of '%s' now, not %s, "
                   "where the write ran",
                   sentinel->name, named->name, s->u.name, p->name);
}
