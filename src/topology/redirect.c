/*
 * What a Redis Cluster's answers to a request ask of it (aroute.c takes
 * the steps on an event loop): MOVED (the slot has a new master: the map
 * is updated and the request goes there), ASK (the slot is being
 * migrated and this key has gone: the request goes to the importing node
 * once, after ASKING, and the map stays), TRYAGAIN and CLUSTERDOWN (a
 * short jittered pause, then again), and a connection that cannot be
 * made (the master may have died: the map is read again).
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

int rl__cluster_redirection(const rl__reply *r)
{
    return said(r) != RL_GO_DONE;
}
