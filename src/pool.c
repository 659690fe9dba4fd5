#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
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

redislock_err rl__pool_init(rl__pool *p, const char *url,
                            const redislock_options *o)
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
    pw = o->password       ? o->password
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

/* Opens a connection in a slot already counted, and vets it. */
static redislock_err open_one(rl__pool *p, rl__conn **out)
{
    redislock_err err = rl__conn_open(&p->cfg, out);

    if (err == REDISLOCK_OK && p->vet != NULL &&
        (err = p->vet(p, *out, p->vet_arg)) != REDISLOCK_OK) {
        rl__conn_close(*out);
        *out = NULL;
    }
    if (err != REDISLOCK_OK)
        forget_one(p);
    return err;
}

redislock_err rl__pool_borrow(rl__pool *p, rl__conn **out)
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
        return open_one(p, out);
    }
    p->nopen++;
    pthread_mutex_unlock(&p->mu);
    /* Connect outside the mutex: other threads keep their connections. */
    return open_one(p, out);
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

redislock_err rl__pool_exec_here(rl__pool *p, int n, const rl__cmd *cmds,
                                 rl__reply **out)
{
    rl__conn *conn;
    redislock_err err = rl__pool_borrow(p, &conn);

    if (err != REDISLOCK_OK)
        return err;
    err = rl__conn_exec(conn, n, cmds, out);
    rl__pool_give_back(p, conn);
    return err;
}

redislock_err rl__pool_exec(rl__pool *p, int n, const rl__cmd *cmds,
                            rl__reply **out)
{
    if (p->cluster != NULL)
        return rl__cluster_exec(p->cluster, p, NULL, 0, n, cmds, out);
    return rl__pool_exec_here(p, n, cmds, out);
}

redislock_err rl__pool_exec_key(rl__pool *p, const char *key, size_t keylen,
                                int n, const rl__cmd *cmds, rl__reply **out)
{
    if (p->cluster != NULL)
        return rl__cluster_exec(p->cluster, p, key, keylen, n, cmds, out);
    return rl__pool_exec_here(p, n, cmds, out);
}

redislock_err rl__pool_script_within(rl__pool *p, int64_t timeout_ms,
                                     const rl__script *s, const char *key,
                                     size_t keylen, int nargs,
                                     const char **args, const size_t *lens,
                                     rl__reply **out)
{
    int tighter = timeout_ms > 0 && timeout_ms < p->cfg.command_timeout_ms;
    rl__conn *conn;
    redislock_err err;

    if (p->cluster != NULL)
        return rl__cluster_script(p->cluster, timeout_ms, s, 1, &key, &keylen,
                                  nargs, args, lens, out);
    if ((err = rl__pool_borrow(p, &conn)) != REDISLOCK_OK)
        return err;
    if (tighter)
        err = rl__conn_timeout(conn, timeout_ms);
    if (err == REDISLOCK_OK && s->eval_only)
        err = rl__script_eval(conn, s, key, keylen, nargs, args, lens, out);
    else if (err == REDISLOCK_OK)
        err = rl__script_run(conn, s, key, keylen, nargs, args, lens, out);
    if (tighter && !rl__conn_broken(conn))
        rl__conn_timeout(conn, p->cfg.command_timeout_ms);
    rl__pool_give_back(p, conn);
    return err;
}

/* The script, then WAIT, in one write; EVAL again on NOSCRIPT. */
static redislock_err script_then_wait(rl__conn *conn, int eval,
                                      const rl__script *s, const char *key,
                                      size_t keylen, int nargs,
                                      const char **args, const size_t *lens,
                                      const char **wait, rl__reply **r)
{
    const char *argv[RL_SCRIPT_ARGV_MAX];
    size_t argl[RL_SCRIPT_ARGV_MAX];
    char nk[8];
    rl__cmd cmds[2];

    cmds[0].argc = rl__script_argv(s, eval, 1, &key, &keylen, nargs, args, lens,
                                   nk, argv, argl);
    cmds[0].argv = argv;
    cmds[0].lens = argl;
    cmds[1] = (rl__cmd){3, wait, NULL};
    if (cmds[0].argc < 0)
        return rl__err(REDISLOCK_EINVAL, "too many script arguments");
    return rl__conn_exec(conn, 2, cmds, r);
}

redislock_err rl__pool_script_wait(rl__pool *p, int64_t timeout_ms,
                                   const rl__script *s, const char *key,
                                   size_t keylen, int nargs, const char **args,
                                   const size_t *lens, int replicas,
                                   int64_t wait_ms, rl__reply **out,
                                   long long *acked)
{
    char n[16], ms[24];
    const char *wait[3] = {"WAIT", n, ms};
    int64_t t = timeout_ms > 0 ? timeout_ms : p->cfg.command_timeout_ms;
    rl__reply *r[2];
    rl__conn *conn;
    redislock_err err;
    int eval = s->eval_only;

    /* In a cluster, the slot's master by the current map. (A redirection
     * on the way fails the call: the WAIT must follow the write on one
     * connection.) */
    if (p->cluster != NULL)
        p = rl__cluster_route(p->cluster, key, keylen);
    if ((err = rl__pool_borrow(p, &conn)) != REDISLOCK_OK)
        return err;

    if (err != REDISLOCK_OK)
        return err;
    snprintf(n, sizeof n, "%d", replicas);
    snprintf(ms, sizeof ms, "%lld", (long long)wait_ms);
    /* The reply may take the WAIT's time on top of a command's. */
    err = rl__conn_timeout(conn, t + wait_ms);
    while (err == REDISLOCK_OK &&
           (err = script_then_wait(conn, eval, s, key, keylen, nargs, args,
                                   lens, wait, r)) == REDISLOCK_OK &&
           !eval && rl__script_is_noscript(r[0])) {
        rl__reply_free(r[0]);
        rl__reply_free(r[1]);
        eval = 1;
    }
    if (err == REDISLOCK_OK) {
        *acked = r[1]->type == REDIS_REPLY_INTEGER ? r[1]->integer : -1;
        rl__reply_free(r[1]);
        if ((err = rl__reply_check(r[0], s->name)) != REDISLOCK_OK)
            rl__reply_free(r[0]);
        else
            *out = r[0];
    }
    if (!rl__conn_broken(conn))
        rl__conn_timeout(conn, p->cfg.command_timeout_ms);
    rl__pool_give_back(p, conn);
    return err;
}

redislock_err rl__pool_script_keys(rl__pool *p, const rl__script *s, int nkeys,
                                   const char **keys, const size_t *klens,
                                   int nargs, const char **args,
                                   const size_t *lens, rl__reply **out)
{
    rl__conn *conn;
    redislock_err err;

    if (p->cluster != NULL)
        return rl__cluster_script(p->cluster, 0, s, nkeys, keys, klens, nargs,
                                  args, lens, out);
    if ((err = rl__pool_borrow(p, &conn)) != REDISLOCK_OK)
        return err;
    err = rl__script_run_n(conn, s, nkeys, keys, klens, nargs, args, lens, out);
    rl__pool_give_back(p, conn);
    return err;
}

redislock_err rl__pool_script(rl__pool *p, const rl__script *s, const char *key,
                              size_t keylen, int nargs, const char **args,
                              const size_t *lens, rl__reply **out)
{
    return rl__pool_script_within(p, 0, s, key, keylen, nargs, args, lens, out);
}

redislock_err rl__pool_check(rl__pool *p)
{
    const char *ping[] = {"PING"};
    rl__cmd cmd = {1, ping, NULL};
    rl__reply *r;
    redislock_err err;

    err = rl__pool_exec_here(p, 1, &cmd, &r);
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
