#include "wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "algo.h"
#include "clock.h"
#include "error.h"
#include "rand.h"
#include "reply.h"

/* The pause before a waiter whose BLPOP met a cluster's change tries
 * again: enough for a slot's hand-over, short against a failover. */
#define RL_REROUTE_PAUSE_MS 20

/* Publishes the waiter's own list (or, fair, its channel) so that a
 * cancel can reach it; or says that a cancel came first. */
static int start_blocking(redislock_lock *l, char *own, size_t ownlen, int fair)
{
    int cancelled;

    pthread_mutex_lock(&l->mu);
    cancelled = l->cancelled;
    if (!cancelled) {
        l->wait_list = own;
        l->wait_list_len = ownlen;
        l->wait_fair = fair;
        l->wait_route = l->wait_name;
    }
    pthread_mutex_unlock(&l->mu);
    return cancelled;
}

static void stop_blocking(redislock_lock *l)
{
    pthread_mutex_lock(&l->mu);
    l->wait_list = NULL;
    pthread_mutex_unlock(&l->mu);
}

/* Whether a BLPOP met a slot that moved or a master that failed (in a
 * cluster). The waiter then makes its attempt again (which follows the
 * cluster) and blocks on the slot's current master, not failing the
 * acquire. */
static int must_reroute(const redislock_lock *l, redislock_err err,
                        const rl__reply *r)
{
    return rl__topo_moved(rl__client_topo(l->client), err, r);
}

static void close_waitconn(redislock_lock *l)
{
    rl__conn_close(l->waitconn);
    l->waitconn = NULL;
    l->waitpool = NULL;
    l->subscribed = 0;
}

/* After a BLPOP: a connection that failed, or met a change of the key's
 * node, is closed; one taken from the pool goes back to it. */
static void end_waitconn(redislock_lock *l, int reroute)
{
    if (l->waitconn == NULL)
        return;
    if (reroute || rl__conn_broken(l->waitconn)) {
        close_waitconn(l);
    } else if (l->waitpool != NULL) {
        rl__pool_attach(l->waitpool, l->waitconn);
        l->waitconn = NULL;
        l->waitpool = NULL;
    }
}

/* The node of the key the waiter waits behind (in a cluster, the slot's
 * master now, which may have changed). */
static rl__pool *wait_node(const redislock_lock *l)
{
    return rl__topo_node(rl__client_topo(l->client), l->wait_name.key,
                         l->wait_name.keylen);
}

/* The waiter's own connection, opened when there is none or when it is
 * to another node than the one the waiter now waits on (a set over
 * several nodes waits behind the key that refused it), with a reply
 * timeout of timeout_ms. */
static redislock_err open_waitconn(redislock_lock *l, int64_t timeout_ms,
                                   int *reroute)
{
    rl__pool *p = wait_node(l);
    redislock_err err = REDISLOCK_OK;

    if (l->waitconn != NULL && l->waitnode != p)
        close_waitconn(l);
    if (l->waitconn == NULL) {
        err = rl__conn_open(&p->cfg, &l->waitconn);
        l->waitnode = p;
    }
    if (err == REDISLOCK_OK)
        err = rl__conn_timeout(l->waitconn, timeout_ms);
    if ((*reroute = must_reroute(l, err, NULL)) != 0 && l->waitconn)
        close_waitconn(l);
    return err;
}

/* BLPOP on the lock's wake list and the waiter's own list, and then's
 * attempt behind it when then is not NULL. */
static redislock_err blpop(redislock_lock *l, const char **keys,
                           const size_t *lens, int64_t pause_ms, rl__then *then,
                           rl__reply **r, int *reroute)
{
    const char *argv[4] = {"BLPOP", keys[0], keys[1], NULL};
    size_t argl[4] = {5, lens[0], lens[1], 0};
    char secs[32];
    redislock_err err;

    /* A connection a fair wait left subscribed takes no BLPOP. */
    if (l->subscribed)
        close_waitconn(l);
    /* The idle connection the attempt just used, when there is one: the
     * waiter then holds one server connection, not two. */
    if (l->waitconn == NULL) {
        rl__pool *p = wait_node(l);
        if (rl__pool_detach(p, &l->waitconn)) {
            l->waitpool = p;
            l->waitnode = p;
        }
    }
    /* The reply may take the whole pause, plus a command's time. */
    err = open_waitconn(l, pause_ms + l->pool->cfg.command_timeout_ms, reroute);
    if (err != REDISLOCK_OK) {
        end_waitconn(l, *reroute);
        return err;
    }
    argl[3] = (size_t)snprintf(secs, sizeof secs, "%lld.%03lld",
                               (long long)(pause_ms / 1000),
                               (long long)(pause_ms % 1000));
    argv[3] = secs;
    if (then != NULL) {
        rl__cmd cmd = {4, argv, argl};
        *r = NULL;
        then->q->first = &cmd;
        then->q->first_reply = r;
        then->err =
            rl__lock_send_on(l, l->waitconn, then->req, then->q, &then->r);
        then->q->first = NULL;
        then->q->first_reply = NULL;
        then->ran = 1;
        /* No BLPOP reply: the connection failed, the attempt's fate is
         * unknown with it. */
        err = *r != NULL ? REDISLOCK_OK : then->err;
    } else {
        err = rl__conn_command(l->waitconn, 4, argv, argl, r);
    }
    if ((*reroute = must_reroute(l, err, err ? NULL : *r)) != 0 && err == 0)
        rl__reply_free(*r);
    else if (err == REDISLOCK_OK && (err = rl__reply_check(*r, "BLPOP")) != 0)
        rl__reply_free(*r);
    end_waitconn(l, *reroute);
    return err;
}

/* What BLPOP's answer says: nothing came, a release woke us, or a
 * cancel. */
static redislock_err classify(const rl__reply *r, rl__wait_result *res)
{
    const rl__reply *v;

    if (r->type == REDIS_REPLY_NIL) {
        *res = RL_WAIT_TIMEOUT;
        return REDISLOCK_OK;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return rl__err(REDISLOCK_EPROTOCOL, "BLPOP answered type %d", r->type);
    v = r->element[1];
    *res = strcmp(v->str, "cancel") == 0 ? RL_WAIT_CANCELLED : RL_WAIT_WOKEN;
    return REDISLOCK_OK;
}

/* Sleeps ms unless cancelled first. */
static rl__wait_result sleep_or_cancel(redislock_lock *l, int64_t ms)
{
    int64_t until = rl__now_us() + ms * 1000;
    struct timespec ts = {(time_t)(until / 1000000),
                          (long)(until % 1000000) * 1000};
    int cancelled;

    pthread_mutex_lock(&l->mu);
    while (!l->cancelled && rl__now_us() < until)
        pthread_cond_timedwait(&l->wake, &l->mu, &ts);
    cancelled = l->cancelled;
    pthread_mutex_unlock(&l->mu);
    return cancelled ? RL_WAIT_CANCELLED : RL_WAIT_TIMEOUT;
}

const char *rl__wait_channel(redislock_lock *l, size_t *len)
{
    char tok[RL_TOKEN_HEXLEN + 1];

    if (l->chan == NULL && rl__token(tok) == 0)
        l->chan = rl__helper_join(l->base, l->baselen, "c:", tok, &l->chanlen);
    *len = l->chanlen;
    return l->chan;
}

int rl__wait_sharded(const redislock_lock *l)
{
    return rl__topo_cluster(rl__client_topo(l->client));
}

/* Whether r is a Pub/Sub push of kind (or its shard twin, "s" + kind). */
static int push_of(const rl__reply *r, const char *kind)
{
    const rl__reply *k;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return 0;
    k = r->element[0];
    if (k->type != REDIS_REPLY_STRING)
        return 0;
    return strcmp(k->str, kind) == 0 ||
           (k->str[0] == 's' && strcmp(k->str + 1, kind) == 0);
}

/* Subscribes the waiter's own connection to its channel (SSUBSCRIBE in a
 * cluster: the channel carries the key's hash tag, so it lives on the
 * key's master). */
static redislock_err subscribe(redislock_lock *l, int *reroute)
{
    int64_t timeout = l->pool->cfg.command_timeout_ms;
    const char *argv[2] = {rl__wait_sharded(l) ? "SSUBSCRIBE" : "SUBSCRIBE",
                           l->chan};
    size_t argl[2] = {strlen(argv[0]), l->chanlen};
    rl__reply *r = NULL;
    redislock_err err = open_waitconn(l, timeout, reroute);

    if (err == REDISLOCK_OK &&
        (err = rl__conn_send(l->waitconn, 2, argv, argl)) == REDISLOCK_OK &&
        (err = rl__conn_listen(l->waitconn, timeout, &r)) == REDISLOCK_OK &&
        r == NULL)
        err = rl__err(REDISLOCK_ETIMEDOUT, "%s: Redis did not answer in time",
                      argv[0]);
    if (err == REDISLOCK_OK && !(*reroute = must_reroute(l, err, r))) {
        if (r->type == REDIS_REPLY_ERROR)
            err = rl__reply_check(r, argv[0]);
        else if (!push_of(r, "subscribe"))
            err = rl__err(REDISLOCK_EPROTOCOL, "%s answered type %d", argv[0],
                          r->type);
    }
    rl__reply_free(r);
    if (err == REDISLOCK_OK && !*reroute)
        l->subscribed = 1;
    else
        close_waitconn(l);
    return *reroute ? REDISLOCK_OK : err;
}

/* What a message on the waiter's channel says to the wait of request req:
 * its hand-off (the place its last attempt was given), a cancel that is
 * still in force, or nothing (a message for another wait of the handle,
 * or a cancel that came after the wait it was meant for): RL_WAIT_TIMEOUT,
 * meaning "go on listening". */
static redislock_err told(redislock_lock *l, const char *req,
                          const rl__reply *r, rl__wait_result *res)
{
    *res = RL_WAIT_TIMEOUT;
    /* The server's own unsubscribe (a cluster slot that moved away). */
    if (push_of(r, "unsubscribe")) {
        close_waitconn(l);
        *res = RL_WAIT_WOKEN;
        return REDISLOCK_OK;
    }
    if (!push_of(r, "message") || r->element[2]->type != REDIS_REPLY_STRING)
        return rl__err(REDISLOCK_EPROTOCOL,
                       "unexpected reply type %d on the "
                       "waiter's channel",
                       r->type);
    return rl__wait_told(l, req, r->element[2]->str, res);
}

redislock_err rl__wait_told(redislock_lock *l, const char *req, const char *m,
                            rl__wait_result *res)
{
    size_t n = strlen(req);

    *res = RL_WAIT_TIMEOUT;
    if (strncmp(m, "handoff ", 8) == 0 && strncmp(m + 8, req, n) == 0 &&
        m[8 + n] == ' ') {
        char *end;
        long long seq = strtoll(m + 9 + n, &end, 10);
        long long fence = strtoll(end, &end, 10);
        long long lease = strtoll(end, &end, 10);
        if (*end != '\0' || lease <= 0)
            return rl__err(REDISLOCK_EPROTOCOL,
                           "bad hand-off message on the waiter's channel");
        if (seq == 0 || seq != l->wait_seq)
            return REDISLOCK_OK;
        if (rl__check_fence(fence, "hand-off") != REDISLOCK_OK)
            return REDISLOCK_EPROTOCOL;
        *res = RL_WAIT_HANDOFF;
        /* The hand-off made the key afresh (rl_hand): its life is the
         * token's. */
        rl__lock_granted(l, fence, fence);
        l->handoff_lease = lease;
    } else if (strcmp(m, "cancel") == 0) {
        pthread_mutex_lock(&l->mu);
        if (l->cancelled)
            *res = RL_WAIT_CANCELLED;
        pthread_mutex_unlock(&l->mu);
    }
    return REDISLOCK_OK;
}

/* A fair waiter listens on its channel for up to pause_ms. Before its
 * first listen the connection subscribes, and the wait returns at once
 * (RL_WAIT_WOKEN): a hand-off told before the subscription is found by
 * the attempt that follows. A connection that fails is dropped and the
 * waiter tries again (its attempt says what is wrong). */
static redislock_err wait_fair(redislock_lock *l, const char *req,
                               int64_t pause_ms, rl__wait_result *res)
{
    int64_t end_us = rl__now_us() + pause_ms * 1000, left;
    int reroute = 0;
    rl__reply *r;
    redislock_err err;

    if (!l->subscribed) {
        if ((err = subscribe(l, &reroute)) != REDISLOCK_OK)
            return err;
        *res =
            reroute ? sleep_or_cancel(l, RL_REROUTE_PAUSE_MS) : RL_WAIT_WOKEN;
        return REDISLOCK_OK;
    }
    if (start_blocking(l, l->chan, l->chanlen, 1)) {
        *res = RL_WAIT_CANCELLED;
        return REDISLOCK_OK;
    }
    *res = RL_WAIT_TIMEOUT;
    err = REDISLOCK_OK;
    while (*res == RL_WAIT_TIMEOUT && err == REDISLOCK_OK &&
           (left = (end_us - rl__now_us() + 999) / 1000) > 0) {
        if (rl__conn_listen(l->waitconn, left, &r) != REDISLOCK_OK) {
            close_waitconn(l);
            *res = RL_WAIT_WOKEN;
        } else if (r != NULL) {
            err = told(l, req, r, res);
            rl__reply_free(r);
        }
    }
    stop_blocking(l);
    if (err != REDISLOCK_OK)
        close_waitconn(l);
    return err;
}

redislock_err rl__wait(redislock_lock *l, const char *token, const char *req,
                       int fair, int64_t pause_ms, rl__then *then,
                       rl__wait_result *res)
{
    const char *keys[2];
    size_t lens[2];
    char *own, *shared;
    int64_t end_us;
    rl__reply *r;
    redislock_err err;
    int reroute = 0;

    *res = RL_WAIT_TIMEOUT;
    if (pause_ms < 1)
        return REDISLOCK_OK;
    if (fair)
        return wait_fair(l, req, pause_ms, res);
    /* Without wake-ups (a Redlock quorum has no one server whose release
     * could wake us), sleep. */
    if (pause_ms < RL_BLOCK_MIN_MS || !l->algo->wakes) {
        *res = sleep_or_cancel(l, pause_ms);
        return REDISLOCK_OK;
    }
    /* Block until a tick before the pause ends, and sleep the rest here:
     * the server's timeout would come up to a tick late. */
    end_us = rl__now_us() + pause_ms * 1000;
    pause_ms -= RL_SERVER_TICK_MS;
    /* Both lists where the key waited behind lives (BLPOP's keys must
     * share its node, and in a cluster its slot). */
    own = rl__helper_join(l->wait_name.base, l->wait_name.baselen, "h:", token,
                          &lens[1]);
    shared = rl__helper_join(l->wait_name.base, l->wait_name.baselen,
                             l->reader ? "rwake" : "wake", NULL, &lens[0]);
    if (own == NULL || shared == NULL) {
        free(own);
        free(shared);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    keys[0] = shared;
    keys[1] = own;
    if (start_blocking(l, own, lens[1], 0)) {
        *res = RL_WAIT_CANCELLED;
        err = REDISLOCK_OK;
    } else {
        err = blpop(l, keys, lens, pause_ms, then, &r, &reroute);
        stop_blocking(l);
        if (reroute) {
            err = REDISLOCK_OK;
            *res = sleep_or_cancel(l, RL_REROUTE_PAUSE_MS);
        } else if (err == REDISLOCK_OK) {
            err = classify(r, res);
            rl__reply_free(r);
        }
        /* With then sent, the attempt ran when the BLPOP ended; after a
         * reroute, the next attempt finds the key's node at once. */
        if (err == REDISLOCK_OK && *res == RL_WAIT_TIMEOUT && !reroute &&
            (then == NULL || !then->ran) && end_us > rl__now_us())
            *res = sleep_or_cancel(l, (end_us - rl__now_us() + 999) / 1000);
    }
    free(own);
    free(shared);
    return err;
}

void rl__wait_interrupt(redislock_lock *l)
{
    const char *push[3] = {"LPUSH", NULL, "cancel"};
    const char *expire[3] = {"PEXPIRE", NULL, "10000"};
    size_t pushl[3] = {5, 0, 6}, expl[3] = {7, 0, 5};
    rl__cmd cmds[2] = {{3, push, pushl}, {3, expire, expl}};
    rl__reply *r[2];
    rl__request q = {.cmds = cmds};
    rl__lockname route = {0};
    char *name = NULL;
    size_t len = 0;
    int fair = 0;

    pthread_mutex_lock(&l->mu);
    if (l->wait_list != NULL && (name = malloc(l->wait_list_len)) != NULL) {
        memcpy(name, l->wait_list, l->wait_list_len);
        len = l->wait_list_len;
        fair = l->wait_fair;
        route = l->wait_route;
    }
    pthread_mutex_unlock(&l->mu);
    if (name == NULL)
        return;
    push[1] = expire[1] = name;
    pushl[1] = expl[1] = len;
    if (fair) {
        /* Told on the fair waiter's channel. */
        push[0] = rl__wait_sharded(l) ? "SPUBLISH" : "PUBLISH";
        pushl[0] = strlen(push[0]);
        push[1] = name;
    }
    /* The waiter's own list expires soon, whoever pops it. It lives on
     * the node of the key the waiter waits behind. */
    q.n = fair ? 1 : 2;
    if (rl__topo_run(rl__client_topo(l->client), route.key, route.keylen, &q,
                     r) == REDISLOCK_OK) {
        rl__reply_free(r[0]);
        if (!fair)
            rl__reply_free(r[1]);
    }
    free(name);
}
