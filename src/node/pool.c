#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int64_t or_default(int64_t v, int64_t dflt)
{
    return v > 0 ? v : dflt;
}

static redislock_err set_name(rl__pool *p)
{
    size_t n;

    if (p->url.path != NULL) {
        p->name = strdup(p->url.path);
    } else {
        n = strlen(p->url.host) + 16;
        if ((p->name = malloc(n)) != NULL)
            snprintf(p->name, n, "%s:%d", p->url.host, p->url.port);
    }
    return p->name ? REDISLOCK_OK : rl__err(REDISLOCK_ENOMEM, "out of memory");
}

/* own_auth: the URL's password only. */
static redislock_err pool_init(rl__pool *p, const char *url,
                               const redislock_options *o, int own_auth)
{
    const char *pw;
    redislock_err err;

    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->freed, NULL);
    if ((err = rl__url_parse(url, &p->url)) != REDISLOCK_OK)
        return err;
    p->cfg.url = &p->url;
    /* The options win over the URL's query, which wins over the
     * defaults. */
    p->cfg.connect_timeout_ms =
        or_default(o->connect_timeout_ms,
                   or_default(p->url.connect_timeout_ms,
                              REDISLOCK_DEFAULT_CONNECT_TIMEOUT_MS));
    p->cfg.command_timeout_ms =
        or_default(o->command_timeout_ms,
                   or_default(p->url.command_timeout_ms,
                              REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS));
    p->max = o->max_connections > 0 ? o->max_connections
                                    : REDISLOCK_DEFAULT_MAX_CONNECTIONS;
    p->aof_local = o->wait_aof_local;
    p->aof_replicas = o->wait_aof_replicas;
    pw = own_auth          ? p->url.password
         : o->password     ? o->password
         : p->url.password ? p->url.password
                           : getenv("REDISCLI_AUTH");
    if (pw != NULL && (p->password = strdup(pw)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    p->cfg.password = p->password;
    if ((err = rl__conn_tls_new(&p->url, o, &p->cfg.tls)) != REDISLOCK_OK)
        return err;
    p->idle = calloc((size_t)p->max, sizeof *p->idle);
    if (p->idle == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    return set_name(p);
}

redislock_err rl__pool_init(rl__pool *p, const char *url,
                            const redislock_options *o)
{
    return pool_init(p, url, o, 0);
}

redislock_err rl__pool_init_own_auth(rl__pool *p, const char *url,
                                     const redislock_options *o)
{
    return pool_init(p, url, o, 1);
}

void rl__pool_fini(rl__pool *p)
{
    int i;

    for (i = 0; i < p->nidle; i++)
        rl__conn_close(p->idle[i]);
    free(p->idle);
    rl__conn_tls_free(p->cfg.tls);
    free(p->name);
    rl__url_free(&p->url);
    if (p->password != NULL) {
        memset(p->password, 0, strlen(p->password));
        free(p->password);
    }
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->mu);
    memset(p, 0, sizeof *p);
}

/* A connection slot whose connection could not be (re)opened. */
static void forget_one(rl__pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->nopen--;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
}

/* The value of field ("aof_enabled:") in an INFO reply r, or NULL. */
static const char *info_field(const rl__reply *r, const char *field)
{
    const char *at;

    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
        r->type != 14 /* RESP3 verbatim */)
        return NULL;
    at = strstr(r->str, field);
    return at != NULL ? at + strlen(field) : NULL;
}

/* Whether the server conn reaches can confirm what the WAITAOF guard
 * asks: it has the command (COMMAND INFO answers nil for an unknown one),
 * and for the master's own fsync, AOF on with a policy under which
 * WAITAOF's count means an fsync (appendfsync always or everysec: with
 * "no" the kernel flushes when it likes, and WAITAOF cannot know).
 * Asked once per connection; no guessing from versions. */
static redislock_err probe_aof(rl__pool *p, rl__conn *conn)
{
    const char *cmdv[3] = {"COMMAND", "INFO", "WAITAOF"};
    const char *infov[2] = {"INFO", "persistence"};
    const char *cfgv[3] = {"CONFIG", "GET", "appendfsync"};
    rl__cmd cmds[3] = {{3, cmdv, NULL}, {2, infov, NULL}, {3, cfgv, NULL}};
    rl__reply *r[3];
    const char *v;
    int n = p->aof_local ? 3 : 1, i;
    redislock_err err = rl__conn_exec(conn, n, cmds, r);

    if (err != REDISLOCK_OK)
        return err;
    if (r[0]->type == REDIS_REPLY_ERROR)
        err = rl__err(REDISLOCK_ECONFIG,
                      "%s: cannot ask whether it has WAITAOF (COMMAND INFO: "
                      "%.80s): allow the user COMMAND, or turn the "
                      "wait_aof_* options off",
                      p->name, r[0]->str);
    else if (r[0]->type != REDIS_REPLY_ARRAY || r[0]->elements != 1 ||
             r[0]->element[0]->type != REDIS_REPLY_ARRAY)
        err = rl__err(REDISLOCK_ECONFIG,
                      "%s has no WAITAOF (Redis and Valkey have it from "
                      "7.2): turn wait_aof_local and wait_aof_replicas off, "
                      "or use wait_replicas",
                      p->name);
    else if (n == 3 &&
             ((v = info_field(r[1], "aof_enabled:")) == NULL || *v != '1'))
        err = rl__err(REDISLOCK_ECONFIG,
                      "%s has AOF off (appendonly no): WAITAOF cannot confirm "
                      "a local fsync; turn appendonly on, or wait_aof_local "
                      "off",
                      p->name);
    else if (n == 3 && r[2]->type == REDIS_REPLY_ERROR)
        err = rl__err(REDISLOCK_ECONFIG,
                      "%s: cannot read appendfsync (%.80s), which decides "
                      "whether WAITAOF's local count is an fsync: allow the "
                      "user CONFIG GET, or turn wait_aof_local off",
                      p->name, r[2]->str);
    else if (n == 3 &&
             (r[2]->type != REDIS_REPLY_ARRAY || r[2]->elements != 2 ||
              r[2]->element[1]->type != REDIS_REPLY_STRING ||
              strcmp(r[2]->element[1]->str, "no") == 0))
        err = rl__err(REDISLOCK_ECONFIG,
                      "%s has appendfsync no: the kernel, not Redis, decides "
                      "when the AOF reaches the disk, so WAITAOF's local "
                      "count means nothing; set appendfsync everysec or "
                      "always, or turn wait_aof_local off",
                      p->name);
    for (i = 0; i < n; i++)
        rl__reply_free(r[i]);
    return err;
}

/* Opens a connection in a slot already counted, each step waited for at
 * most budget_ms when that is positive, vets it, and checks it for the
 * WAITAOF guard. */
static redislock_err open_one(rl__pool *p, int64_t budget_ms, rl__conn **out)
{
    rl__conn_cfg cfg = p->cfg;
    redislock_err err;

    if (budget_ms > 0 && budget_ms < cfg.connect_timeout_ms)
        cfg.connect_timeout_ms = budget_ms;
    if (budget_ms > 0 && budget_ms < cfg.command_timeout_ms)
        cfg.command_timeout_ms = budget_ms;
    if ((err = rl__conn_open(&cfg, out)) != REDISLOCK_OK) {
        forget_one(p);
        return err;
    }
    if (p->aof_local || p->aof_replicas)
        err = probe_aof(p, *out);
    if (err == REDISLOCK_OK && p->vet != NULL)
        err = p->vet(p, *out, budget_ms, p->vet_arg);
    if (err == REDISLOCK_OK &&
        cfg.command_timeout_ms != p->cfg.command_timeout_ms)
        err = rl__conn_timeout(*out, p->cfg.command_timeout_ms);
    if (err != REDISLOCK_OK) {
        rl__conn_close(*out);
        *out = NULL;
        forget_one(p);
    }
    return err;
}

redislock_err rl__pool_borrow(rl__pool *p, rl__conn **out)
{
    return rl__pool_borrow_within(p, 0, out);
}

redislock_err rl__pool_borrow_within(rl__pool *p, int64_t budget_ms,
                                     rl__conn **out)
{
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0 && p->nopen >= p->max)
        pthread_cond_wait(&p->freed, &p->mu);
    if (p->nidle > 0) {
        *out = p->idle[--p->nidle];
        pthread_mutex_unlock(&p->mu);
        /* Bytes nobody asked for, or the server's close, arrived while it
         * sat idle: a fresh connection rather than a false reply. */
        if (!rl__conn_stale(*out))
            return REDISLOCK_OK;
        rl__conn_close(*out);
        return open_one(p, budget_ms, out);
    }
    p->nopen++;
    pthread_mutex_unlock(&p->mu);
    /* Connect outside the mutex: other threads keep their connections. */
    return open_one(p, budget_ms, out);
}

int rl__pool_take_idle(rl__pool *p, rl__conn **out)
{
    pthread_mutex_lock(&p->mu);
    if (p->nidle == 0) {
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    *out = p->idle[--p->nidle];
    pthread_mutex_unlock(&p->mu);
    if (!rl__conn_stale(*out))
        return 1;
    rl__conn_close(*out);
    forget_one(p);
    return 0;
}

int rl__pool_detach(rl__pool *p, rl__conn **out)
{
    if (!rl__pool_take_idle(p, out))
        return 0;
    forget_one(p);
    return 1;
}

void rl__pool_attach(rl__pool *p, rl__conn *conn)
{
    int keep =
        !rl__conn_broken(conn) &&
        rl__conn_timeout(conn, p->cfg.command_timeout_ms) == REDISLOCK_OK;

    pthread_mutex_lock(&p->mu);
    keep = keep && p->nopen < p->max;
    if (keep) {
        p->nopen++;
        p->idle[p->nidle++] = conn;
        pthread_cond_signal(&p->freed);
    }
    pthread_mutex_unlock(&p->mu);
    if (!keep)
        rl__conn_close(conn);
}

void rl__pool_give_back(rl__pool *p, rl__conn *conn)
{
    int broken = rl__conn_broken(conn);

    if (broken)
        rl__conn_close(conn);
    pthread_mutex_lock(&p->mu);
    if (broken)
        p->nopen--;
    else
        p->idle[p->nidle++] = conn;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
}

redislock_err rl__pool_command(rl__pool *p, int argc, const char **argv,
                               rl__reply **out)
{
    rl__conn *conn;
    redislock_err err = rl__pool_borrow(p, &conn);

    if (err != REDISLOCK_OK)
        return err;
    err = rl__conn_command(conn, argc, argv, NULL, out);
    rl__pool_give_back(p, conn);
    return err;
}

redislock_err rl__pool_check(rl__pool *p)
{
    const char *ping[] = {"PING"};
    rl__reply *r;
    redislock_err err;

    err = rl__pool_command(p, 1, ping, &r);
    if (err != REDISLOCK_OK)
        return err;
    err = rl__reply_check(r, "PING");
    if (err == REDISLOCK_OK &&
        (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0))
        err = rl__err(REDISLOCK_EPROTOCOL,
                      "PING answered something other than PONG: is this "
                      "a Redis server?");
    rl__reply_free(r);
    return err;
}

/* A connection being borrowed from one pool, on a thread of its own. */
typedef struct borrowing {
    rl__pool *pool;
    int64_t budget_ms;
    rl__conn **out;
    redislock_err *err;
    char *detail;
    pthread_t thread;
    int started;
} borrowing;

static void *borrow_one(void *arg)
{
    borrowing *b = arg;

    *b->err = rl__pool_borrow_within(b->pool, b->budget_ms, b->out);
    if (*b->err != REDISLOCK_OK)
        snprintf(b->detail, RL_POOL_DETAIL, "%s", redislock_errdetail());
    return NULL;
}

void rl__pools_borrow(rl__pool *const *pools, size_t n, const int *want,
                      int64_t budget_ms, rl__conn **out, redislock_err *err,
                      char (*detail)[RL_POOL_DETAIL])
{
    borrowing b[RL_POOLS_PAR_MAX];
    size_t i, count = 0;

    if (n > RL_POOLS_PAR_MAX)
        n = RL_POOLS_PAR_MAX;
    for (i = 0; i < n; i++) {
        b[i] =
            (borrowing){pools[i], budget_ms, &out[i], &err[i], detail[i], 0, 0};
        count += want[i] != 0;
    }
    /* A thread each when more than one connection may take a connect
     * timeout; one on this thread (as when no thread can be had). */
    for (i = 0; i < n && count > 1; i++)
        if (want[i])
            b[i].started =
                pthread_create(&b[i].thread, NULL, borrow_one, &b[i]) == 0;
    for (i = 0; i < n; i++) {
        if (!want[i])
            continue;
        if (b[i].started)
            pthread_join(b[i].thread, NULL);
        else
            borrow_one(&b[i]);
    }
}
