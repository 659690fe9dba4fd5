/*
 * Requests to a Redis Cluster that follow its redirections: MOVED (the
 * slot has a new master: the map is updated and the request goes there),
 * ASK (the slot is being migrated and this key has gone: the request goes
 * to the importing node once, after ASKING, and the map stays), TRYAGAIN
 * and CLUSTERDOWN (a short jittered pause, then again), and a connection
 * that cannot be made (the master may have died: the map is read again).
 * All of it within the request's time budget, after which the last
 * answer is returned as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "cluster.h"
#include "clock.h"
#include "error.h"
#include "rand.h"

/* Redirections followed at most by one request, as redis-cli does. */
#define RL_MAX_HOPS 16
/* The pause before asking again, drawn from [d/2, d]: a failover or a
 * slot's hand-over takes some tens or hundreds of milliseconds. */
#define RL_CLUSTER_PAUSE_MS 40
/* The most commands of one pipeline that can be sent after ASKING. */
#define RL_MAX_PIPELINE 8

typedef enum { GO_DONE, GO_MOVED, GO_ASK, GO_PAUSE, GO_RELOAD } rl__go;

typedef struct request {
    rl__cluster *cl;
    int64_t deadline_us;
    /* A script with its keys and arguments, or n commands. */
    const rl__script *s;
    int nkeys, nargs;
    const char **keys, **args;
    const size_t *klens, *lens;
    int n;
    const rl__cmd *cmds;
    /* Where the last redirection pointed. */
    unsigned slot;
    char host[256];
    int port;
} request;

static void free_replies(rl__reply **r, int n)
{
    while (n-- > 0)
        rl__reply_free(r[n]);
}

/* Sends cmds, each after an ASKING when asking; out gets their replies
 * (the ASKING ones are dropped). */
static redislock_err send_asking(rl__conn *c, int asking, int n,
                                 const rl__cmd *cmds, rl__reply **out)
{
    static const char *const askv[1] = {"ASKING"};
    rl__cmd v[2 * RL_MAX_PIPELINE] = {{0, NULL, NULL}};
    rl__reply *r[2 * RL_MAX_PIPELINE];
    redislock_err err;
    int i;

    if (!asking)
        return rl__conn_exec(c, n, cmds, out);
    if (n < 1 || n > RL_MAX_PIPELINE)
        return rl__err(REDISLOCK_EINVAL, "pipeline too long to redirect");
    for (i = 0; i < n; i++) {
        v[2 * i] = (rl__cmd){1, (const char **)askv, NULL};
        v[2 * i + 1] = cmds[i];
    }
    if ((err = rl__conn_exec(c, 2 * n, v, r)) != REDISLOCK_OK)
        return err;
    for (i = 0; i < n; i++) {
        rl__reply_free(r[2 * i]);
        out[i] = r[2 * i + 1];
    }
    return REDISLOCK_OK;
}

/* EVALSHA (or EVAL for a script always sent whole), and EVAL when the
 * node lacks the script: a node that was just promoted or added has
 * never seen it. */
static redislock_err send_script(const request *q, rl__conn *c, int asking,
                                 rl__reply **out)
{
    const char *argv[RL_SCRIPT_ARGV_MAX];
    size_t argl[RL_SCRIPT_ARGV_MAX];
    char nk[8];
    int eval = q->s->eval_only;
    rl__cmd cmd = {0, argv, argl};
    redislock_err err;

    for (;;) {
        cmd.argc = rl__script_argv(q->s, eval, q->nkeys, q->keys, q->klens,
                                   q->nargs, q->args, q->lens, nk, argv, argl);
        if (cmd.argc < 0)
            return rl__err(REDISLOCK_EINVAL, "too many script arguments");
        err = send_asking(c, asking, 1, &cmd, out);
        if (err != REDISLOCK_OK || eval || !rl__script_is_noscript(*out))
            return err;
        rl__reply_free(*out);
        eval = 1;
    }
}

/* One try on node p, its reply awaited no longer than the budget left. */
static redislock_err attempt(const request *q, rl__pool *p, int asking,
                             rl__reply **out)
{
    int64_t left = (q->deadline_us - rl__now_us()) / 1000;
    int tighter = left < p->cfg.command_timeout_ms;
    rl__conn *conn;
    redislock_err err = rl__pool_borrow(p, &conn);

    if (err != REDISLOCK_OK)
        return err;
    if (tighter)
        err = rl__conn_timeout(conn, left > 1 ? left : 1);
    if (err == REDISLOCK_OK && q->s != NULL)
        err = send_script(q, conn, asking, out);
    else if (err == REDISLOCK_OK)
        err = send_asking(conn, asking, q->n, q->cmds, out);
    if (tighter && !rl__conn_broken(conn))
        rl__conn_timeout(conn, p->cfg.command_timeout_ms);
    rl__pool_give_back(p, conn);
    return err;
}

/* Reads "<slot> <host>:<port>" of a redirection; an empty host is the
 * asked node's. */
static int parse_target(request *q, const char *s, const rl__pool *at)
{
    char *end;
    const char *colon;
    unsigned long slot = strtoul(s, &end, 10);
    size_t hlen;

    if (end == s || *end != ' ' || slot >= RL_CLUSTER_SLOTS)
        return 0;
    s = end + 1;
    if ((colon = strrchr(s, ':')) == NULL)
        return 0;
    hlen = (size_t)(colon - s);
    if (hlen == 0 && at->url.host != NULL) {
        s = at->url.host;
        hlen = strlen(s);
    }
    if (hlen == 0 || hlen >= sizeof q->host)
        return 0;
    memcpy(q->host, s, hlen);
    q->host[hlen] = '\0';
    q->port = atoi(colon + 1);
    q->slot = (unsigned)slot;
    return q->port > 0 && q->port < 65536;
}

/* What a reply asks for. */
static rl__go classify(request *q, const rl__reply *r, const rl__pool *at)
{
    if (r->type != REDIS_REPLY_ERROR)
        return GO_DONE;
    if (strncmp(r->str, "MOVED ", 6) == 0)
        return parse_target(q, r->str + 6, at) ? GO_MOVED : GO_DONE;
    if (strncmp(r->str, "ASK ", 4) == 0)
        return parse_target(q, r->str + 4, at) ? GO_ASK : GO_DONE;
    /* A script on a slot being migrated away, whose helper key has left
     * (or was never made) while the lock's key is still here, is refused
     * like a multi-key command would be: TRYAGAIN. */
    if (strncmp(r->str, "TRYAGAIN", 8) == 0 ||
        strncmp(r->str, "CLUSTERDOWN", 11) == 0 ||
        strstr(r->str, "non local key in a cluster node") != NULL)
        return GO_PAUSE;
    return GO_DONE;
}

/* What the replies to a try, or its failure, ask for. A request that
 * could not be sent is sent again; one whose reply was lost is not (it
 * may have run), but the map is read again for the next. */
static rl__go next_step(request *q, redislock_err err, rl__reply **out,
                        const rl__pool *at)
{
    int i, n = q->s != NULL ? 1 : q->n;
    rl__go go = GO_DONE;

    if (err == REDISLOCK_ECONNECT)
        return GO_RELOAD;
    if (err != REDISLOCK_OK)
        return GO_DONE;
    for (i = 0; i < n && go == GO_DONE; i++)
        go = classify(q, out[i], at);
    return go;
}

static void pause_briefly(const request *q)
{
    int64_t d = rl__jitter(RL_CLUSTER_PAUSE_MS, rl__jitter_rand());
    int64_t left = (q->deadline_us - rl__now_us()) / 1000;

    rl__sleep_ms(d < left ? d : left);
}

/* After a lost reply: reads the map again so that the next request finds
 * a promoted replica, keeping the detail of the error returned. */
static redislock_err reload_after(request *q, uint64_t epoch, redislock_err err)
{
    char detail[512];

    if (err != REDISLOCK_EIO && err != REDISLOCK_ETIMEDOUT)
        return err;
    snprintf(detail, sizeof detail, "%s", redislock_errdetail());
    rl__cluster_reload(q->cl, epoch);
    return rl__err(err, "%s", detail);
}

/* Sends q to p, then wherever the cluster says, until it is answered or
 * the budget runs out; key (or NULL) is routed again after a pause. */
static redislock_err run(request *q, rl__pool *p, const char *key,
                         size_t keylen, rl__reply **out)
{
    int asking = 0, hops = 0;
    uint64_t epoch;
    redislock_err err;
    rl__go go;

    for (;;) {
        epoch = rl__cluster_epoch(q->cl);
        err = attempt(q, p, asking, out);
        go = next_step(q, err, out, p);
        if (go == GO_DONE || rl__now_us() >= q->deadline_us ||
            ((go == GO_MOVED || go == GO_ASK) && ++hops > RL_MAX_HOPS))
            return reload_after(q, epoch, err);
        if (err == REDISLOCK_OK)
            free_replies(out, q->s != NULL ? 1 : q->n);
        asking = go == GO_ASK;
        if (go == GO_MOVED)
            p = rl__cluster_moved(q->cl, q->slot, q->host, q->port);
        else if (go == GO_ASK)
            p = rl__cluster_node(q->cl, q->host, q->port);
        if (go == GO_RELOAD)
            rl__cluster_reload(q->cl, epoch);
        if (go == GO_RELOAD || go == GO_PAUSE) {
            pause_briefly(q);
            if (key != NULL)
                p = rl__cluster_route(q->cl, key, keylen);
        }
        if (p == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
}

static int64_t deadline(const rl__pool *p, int64_t timeout_ms)
{
    int64_t t = p->cfg.command_timeout_ms;

    if (timeout_ms > 0 && timeout_ms < t)
        t = timeout_ms;
    return rl__now_us() + t * 1000;
}

redislock_err rl__cluster_script(rl__cluster *cl, int64_t timeout_ms,
                                 const rl__script *s, int nkeys,
                                 const char **keys, const size_t *klens,
                                 int nargs, const char **args,
                                 const size_t *lens, rl__reply **out)
{
    rl__pool *p = rl__cluster_route(cl, keys[0], klens[0]);
    request q = {cl,    deadline(p, timeout_ms),
                 s,     nkeys,
                 nargs, keys,
                 args,  klens,
                 lens,  0,
                 NULL,  0,
                 "",    0};
    redislock_err err = run(&q, p, keys[0], klens[0], out);

    if (err == REDISLOCK_OK && (err = rl__reply_check(*out, s->name)) != 0) {
        rl__reply_free(*out);
        *out = NULL;
    }
    return err;
}

redislock_err rl__cluster_exec(rl__cluster *cl, rl__pool *p, const char *key,
                               size_t keylen, int n, const rl__cmd *cmds,
                               rl__reply **out)
{
    request q = {cl, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, n, cmds, 0, "", 0};

    if (key != NULL)
        p = rl__cluster_route(cl, key, keylen);
    q.deadline_us = deadline(p, 0);
    return run(&q, p, key, keylen, out);
}
