#include "wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "algo.h"
#include "clock.h"
#include "error.h"
#include "reply.h"

/* The pause before a waiter whose BLPOP met a cluster's change tries
 * again: enough for a slot's hand-over, short against a failover. */
#define RL_REROUTE_PAUSE_MS 20

/* Publishes the waiter's own list so that a cancel can push to it; or
 * says that a cancel came first. */
static int start_blocking(redislock_lock *l, char *own, size_t ownlen)
{
    int cancelled;

    pthread_mutex_lock(&l->mu);
    cancelled = l->cancelled;
    if (!cancelled) {
        l->wait_list = own;
        l->wait_list_len = ownlen;
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

static redislock_err blpop(redislock_lock *l, int nkeys, const char **keys,
                           const size_t *lens, int64_t pause_ms, rl__reply **r,
                           int *reroute)
{
    const char *argv[4] = {"BLPOP", keys[0], keys[1], NULL};
    size_t argl[4] = {5, lens[0], lens[1], 0};
    char secs[32];
    redislock_err err = REDISLOCK_OK;

    /* In a cluster, on the slot's master now, which may have changed. */
    if (l->waitconn == NULL)
        err = rl__conn_open(
            &rl__topo_node(rl__client_topo(l->client), l->key, l->keylen)->cfg,
            &l->waitconn);
    /* The reply may take the whole pause, plus a command's time. */
    if (err == REDISLOCK_OK)
        err = rl__conn_timeout(l->waitconn,
                               pause_ms + l->pool->cfg.command_timeout_ms);
    if ((*reroute = must_reroute(l, err, NULL)) != 0 && l->waitconn) {
        rl__conn_close(l->waitconn);
        l->waitconn = NULL;
    }
    if (err != REDISLOCK_OK)
        return err;
    argl[1 + nkeys] = (size_t)snprintf(secs, sizeof secs, "%lld.%03lld",
                                       (long long)(pause_ms / 1000),
                                       (long long)(pause_ms % 1000));
    argv[1 + nkeys] = secs;
    err = rl__conn_command(l->waitconn, 2 + nkeys, argv, argl, r);
    if ((*reroute = must_reroute(l, err, err ? NULL : *r)) != 0 && err == 0)
        rl__reply_free(*r);
    else if (err == REDISLOCK_OK && (err = rl__reply_check(*r, "BLPOP")) != 0)
        rl__reply_free(*r);
    if (*reroute || rl__conn_broken(l->waitconn)) {
        rl__conn_close(l->waitconn);
        l->waitconn = NULL;
    }
    return err;
}

static redislock_err classify(redislock_lock *l, const rl__reply *r,
                              rl__wait_result *res)
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
    if (strncmp(v->str, "handoff ", 8) == 0) {
        char *end;
        long long fence = strtoll(v->str + 8, &end, 10);
        long long lease = strtoll(end, &end, 10);
        if (*end != '\0' || lease <= 0)
            return rl__err(REDISLOCK_EPROTOCOL,
                           "bad hand-off message in the waiter's list");
        if (rl__check_fence(fence, "hand-off") != REDISLOCK_OK)
            return REDISLOCK_EPROTOCOL;
        *res = RL_WAIT_HANDOFF;
        l->fence = fence;
        l->handoff_lease = lease;
    } else if (strcmp(v->str, "cancel") == 0)
        *res = RL_WAIT_CANCELLED;
    else
        *res = RL_WAIT_WOKEN;
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

redislock_err rl__wait(redislock_lock *l, const char *token, int fair,
                       int64_t pause_ms, rl__wait_result *res)
{
    const char *keys[2];
    size_t lens[2];
    char *own, *shared = NULL;
    int64_t end_us;
    rl__reply *r;
    redislock_err err;
    int reroute = 0;

    *res = RL_WAIT_TIMEOUT;
    if (pause_ms < 1)
        return REDISLOCK_OK;
    /* Without wake-ups (a Redlock quorum has no one server whose release
     * could wake us), sleep. */
    if (pause_ms < RL_BLOCK_MIN_MS || !rl__client_algo(l->client)->wakes) {
        *res = sleep_or_cancel(l, pause_ms);
        return REDISLOCK_OK;
    }
    /* Block until a tick before the pause ends, and sleep the rest here:
     * the server's timeout would come up to a tick late. */
    end_us = rl__now_us() + pause_ms * 1000;
    pause_ms -= RL_SERVER_TICK_MS;
    own =
        rl__helper_join(l->base, l->baselen, "h:", token, &lens[fair ? 0 : 1]);
    if (!fair)
        shared = rl__helper_join(l->base, l->baselen, "wake", NULL, &lens[0]);
    if (own == NULL || (!fair && shared == NULL)) {
        free(own);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    keys[0] = fair ? own : shared;
    keys[1] = own;
    if (start_blocking(l, own, lens[fair ? 0 : 1])) {
        *res = RL_WAIT_CANCELLED;
        err = REDISLOCK_OK;
    } else {
        err = blpop(l, fair ? 1 : 2, keys, lens, pause_ms, &r, &reroute);
        stop_blocking(l);
        if (reroute) {
            err = REDISLOCK_OK;
            *res = sleep_or_cancel(l, RL_REROUTE_PAUSE_MS);
        } else if (err == REDISLOCK_OK) {
            err = classify(l, r, res);
            rl__reply_free(r);
        }
        if (err == REDISLOCK_OK && *res == RL_WAIT_TIMEOUT &&
            end_us > rl__now_us())
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
    char *name = NULL;
    size_t len = 0;

    pthread_mutex_lock(&l->mu);
    if (l->wait_list != NULL && (name = malloc(l->wait_list_len)) != NULL) {
        memcpy(name, l->wait_list, l->wait_list_len);
        len = l->wait_list_len;
    }
    pthread_mutex_unlock(&l->mu);
    if (name == NULL)
        return;
    /* The waiter's own list expires soon, whoever pops it. */
    push[1] = expire[1] = name;
    pushl[1] = expl[1] = len;
    if (rl__lock_command(l, 2, cmds, r) == REDISLOCK_OK) {
        rl__reply_free(r[0]);
        rl__reply_free(r[1]);
    }
    free(name);
}
