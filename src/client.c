#include "client.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

struct redislock_client {
    rl__url url;
    char *password; /* the effective one, or NULL */
    rl__conn_cfg cfg;
    pthread_mutex_t mu;
    pthread_cond_t freed;
    rl__conn **idle; /* max_connections slots */
    int nidle;
    int nopen; /* idle plus borrowed */
    int max;
    rl__watchdog *watchdog; /* made on first use, under mu */
};

static int64_t or_default(int64_t v, int64_t dflt)
{
    return v > 0 ? v : dflt;
}

static redislock_err set_options(redislock_client *c,
                                 const redislock_options *o)
{
    static const redislock_options zero;
    const char *pw;

    if (o == NULL)
        o = &zero;
    if (o->connect_timeout_ms < 0 || o->command_timeout_ms < 0 ||
        o->max_connections < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "negative timeout or connection count in options");
    c->cfg.url = &c->url;
    c->cfg.connect_timeout_ms =
        or_default(o->connect_timeout_ms, REDISLOCK_DEFAULT_CONNECT_TIMEOUT_MS);
    c->cfg.command_timeout_ms =
        or_default(o->command_timeout_ms, REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS);
    c->max = o->max_connections > 0 ? o->max_connections
                                    : REDISLOCK_DEFAULT_MAX_CONNECTIONS;
    pw = o->password ? o->password
                     : c->url.password ? c->url.password
                                       : getenv("REDISCLI_AUTH");
    if (pw != NULL && (c->password = strdup(pw)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    c->cfg.password = c->password;
    c->idle = calloc((size_t)c->max, sizeof *c->idle);
    if (c->idle == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    return REDISLOCK_OK;
}

/* A first connection, checked with PING, so a wrong address, password or
 * database fails here rather than at the first lock. */
static redislock_err first_connection(redislock_client *c)
{
    const char *ping[] = {"PING"};
    rl__cmd cmd = {1, ping, NULL};
    rl__reply *r;
    redislock_err err;

    err = rl__client_exec(c, 1, &cmd, &r);
    if (err != REDISLOCK_OK)
        return err;
    err = rl__reply_check(r, "PING");
    rl__reply_free(r);
    return err;
}

redislock_err redislock_client_new(redislock_client **out, const char *url,
                                   const redislock_options *opts)
{
    redislock_client *c;
    redislock_err err;

    if (out == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL output pointer");
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->freed, NULL);
    err = rl__url_parse(url, &c->url);
    if (err == REDISLOCK_OK)
        err = set_options(c, opts);
    if (err == REDISLOCK_OK)
        err = first_connection(c);
    if (err != REDISLOCK_OK) {
        redislock_client_free(c);
        return err;
    }
    *out = c;
    return REDISLOCK_OK;
}

void redislock_client_free(redislock_client *c)
{
    int i;

    if (c == NULL)
        return;
    /* The watchdog borrows connections: stop it first. */
    rl__watchdog_free(c->watchdog);
    for (i = 0; i < c->nidle; i++)
        rl__conn_close(c->idle[i]);
    free(c->idle);
    rl__url_free(&c->url);
    if (c->password != NULL) {
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    pthread_cond_destroy(&c->freed);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Borrows an idle connection, or opens one if fewer than max are open,
 * or waits for one to be returned. */
static redislock_err borrow(redislock_client *c, rl__conn **out)
{
    redislock_err err;

    pthread_mutex_lock(&c->mu);
    while (c->nidle == 0 && c->nopen >= c->max)
        pthread_cond_wait(&c->freed, &c->mu);
    if (c->nidle > 0) {
        *out = c->idle[--c->nidle];
        pthread_mutex_unlock(&c->mu);
        return REDISLOCK_OK;
    }
    c->nopen++;
    pthread_mutex_unlock(&c->mu);
    /* Connect outside the mutex: other threads keep their connections. */
    err = rl__conn_open(&c->cfg, out);
    if (err != REDISLOCK_OK) {
        pthread_mutex_lock(&c->mu);
        c->nopen--;
        pthread_cond_signal(&c->freed);
        pthread_mutex_unlock(&c->mu);
    }
    return err;
}

/* Returns a connection; a broken one is closed, and the next borrower
 * opens a fresh one: that is how a dropped connection is re-established. */
static void give_back(redislock_client *c, rl__conn *conn)
{
    int broken = rl__conn_broken(conn);

    if (broken)
        rl__conn_close(conn);
    pthread_mutex_lock(&c->mu);
    if (broken)
        c->nopen--;
    else
        c->idle[c->nidle++] = conn;
    pthread_cond_signal(&c->freed);
    pthread_mutex_unlock(&c->mu);
}

redislock_err rl__client_exec(redislock_client *c, int n, const rl__cmd *cmds,
                              rl__reply **out)
{
    rl__conn *conn;
    redislock_err err = borrow(c, &conn);

    if (err != REDISLOCK_OK)
        return err;
    err = rl__conn_exec(conn, n, cmds, out);
    give_back(c, conn);
    return err;
}

redislock_err rl__client_script(redislock_client *c, const rl__script *s,
                                const char *key, size_t keylen, int nargs,
                                const char **args, const size_t *lens,
                                rl__reply **out)
{
    rl__conn *conn;
    redislock_err err = borrow(c, &conn);

    if (err != REDISLOCK_OK)
        return err;
    err = rl__script_run(conn, s, key, keylen, nargs, args, lens, out);
    give_back(c, conn);
    return err;
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
