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

/* The pause before asking again, drawn from [d/2, d]: a failover or a
 * slot's hand-over takes some tens or hundreds of milliseconds. */
#define RL_CLUSTER_PAUSE_MS 40

/* A request on its way through the cluster. */
typedef struct journey {
    rl__cluster *cl;
    const rl__request *q;
    int64_t deadline_us;
    rl__hop hop; /* where the last redirection pointed */
} journey;

static void free_replies(rl__reply **r, int n)
{
    while (n-- > 0)
        rl__reply_free(r[n]);
}

/* One try on node p, its reply awaited no longer than the budget left
 * (a WAIT's time on top, as the node adds it). */
static redislock_err attempt(const journey *j, rl__pool *p, int asking,
                             rl__reply **out)
{
    rl__request q = *j->q;
    int64_t left = (j->deadline_us - rl__now_us()) / 1000;

    left -= rl__request_wait_ms(&q);
    q.timeout_ms = left > 1 ? left : 1;
    return rl__pool_run(p, &q, asking, out);
}

/* Reads "<slot> <host>:<port>" of a redirection; an empty host is the
 * asked node's. */
static int parse_target(rl__hop *q, const char *s, const rl__pool *at)
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

/* What a reply asks for, by its words. */
static rl__go said(const rl__reply *r)
{
    if (r->type != REDIS_REPLY_ERROR)
        return RL_GO_DONE;
    if (strncmp(r->str, "MOVED ", 6) == 0)
        return RL_GO_MOVED;
    if (strncmp(r->str, "ASK ", 4) == 0)
        return RL_GO_ASK;
    /* A script on a slot being migrated away, whose helper key has left
     * (or was never made) while the lock's key is still here, is refused
     * like a multi-key command would be: TRYAGAIN. */
    if (strncmp(r->str, "TRYAGAIN", 8) == 0 ||
        strncmp(r->str, "CLUSTERDOWN", 11) == 0 ||
        strstr(r->str, "non local key in a cluster node") != NULL)
        return RL_GO_PAUSE;
    return RL_GO_DONE;
}

rl__go rl__cluster_next(redislock_err err, const rl__reply *r,
                        const rl__pool *at, rl__hop *h)
{
    rl__go go;

    if (err == REDISLOCK_ECONNECT)
        return RL_GO_RELOAD;
    if (err != REDISLOCK_OK)
        return RL_GO_DONE;
    go = said(r);
    if (go == RL_GO_MOVED || go == RL_GO_ASK)
        return parse_target(h, r->str + (go == RL_GO_MOVED ? 6 : 4), at)
                   ? go
                   : RL_GO_DONE;
    return go;
}

rl__go rl__cluster_hops(rl__go go, int *hops)
{
    if ((go != RL_GO_MOVED && go != RL_GO_ASK) ||
        ++*hops <= RL_CLUSTER_MAX_HOPS)
        return go;
    *hops = 0;
    return RL_GO_RELOAD;
}

int64_t rl__cluster_pause_ms(void)
{
    return rl__jitter(RL_CLUSTER_PAUSE_MS, rl__jitter_rand());
}

/* What the replies to a try, or its failure, ask for. */
static rl__go next_step(journey *q, redislock_err err, rl__reply **out,
                        const rl__pool *at)
{
    int i, n = rl__request_nreplies(q->q);
    rl__go go = RL_GO_DONE;

    if (err != REDISLOCK_OK)
        return rl__cluster_next(err, NULL, at, &q->hop);
    for (i = 0; i < n && go == RL_GO_DONE; i++)
        go = rl__cluster_next(err, out[i], at, &q->hop);
    return go;
}

static void pause_briefly(const journey *q)
{
    int64_t d = rl__cluster_pause_ms();
    int64_t left = (q->deadline_us - rl__now_us()) / 1000;

    rl__sleep_ms(d < left ? d : left);
}

/* After a lost reply: reads the map again so that the next request finds
 * a promoted replica, keeping the detail of the error returned. */
static redislock_err reload_after(journey *q, uint64_t epoch, redislock_err err)
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
static redislock_err run(journey *q, rl__pool *p, const char *key,
                         size_t keylen, rl__reply **out)
{
    int asking = 0, hops = 0;
    uint64_t epoch;
    redislock_err err;
    rl__go go;

    for (;;) {
        epoch = rl__cluster_epoch(q->cl);
        err = attempt(q, p, asking, out);
        go = rl__cluster_hops(next_step(q, err, out, p), &hops);
        if (go == RL_GO_DONE || rl__now_us() >= q->deadline_us)
            return reload_after(q, epoch, err);
        if (err == REDISLOCK_OK)
            free_replies(out, rl__request_nreplies(q->q));
        asking = go == RL_GO_ASK;
        if (go == RL_GO_MOVED)
            p = rl__cluster_moved(q->cl, q->hop.slot, q->hop.host, q->hop.port);
        else if (go == RL_GO_ASK)
            p = rl__cluster_node(q->cl, q->hop.host, q->hop.port);
        if (go == RL_GO_RELOAD)
            rl__cluster_reload(q->cl, epoch);
        if (go == RL_GO_RELOAD || go == RL_GO_PAUSE) {
            pause_briefly(q);
            if (key != NULL)
                p = rl__cluster_route(q->cl, key, keylen);
        }
        if (p == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
}

int rl__cluster_redirection(const rl__reply *r)
{
    return said(r) != RL_GO_DONE;
}

redislock_err rl__cluster_run(rl__cluster *cl, rl__pool *p, const char *key,
                              size_t keylen, const rl__request *q,
                              rl__reply **out)
{
    journey j = {cl, q, 0, {0, "", 0}};
    int64_t t;

    if (p == NULL)
        p = rl__cluster_route(cl, key, keylen);
    t = p->cfg.command_timeout_ms;
    if (q->timeout_ms > 0 && q->timeout_ms < t)
        t = q->timeout_ms;
    t += rl__request_wait_ms(q);
    j.deadline_us = rl__now_us() + t * 1000;
    return run(&j, p, key, keylen, out);
}
