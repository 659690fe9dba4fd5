/*
 * A client's stack of idle private loops, and one blocking call on one
 * of them (engine.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conn.h"
#include "engine.h"
#include "env.h"
#include "error.h"
#include "keeper.h"

/* A private loop with its engine: on the stack, since when it is
 * idle. */
typedef struct idle {
    rl__ploop *pl;
    rl__alock *al;
    int64_t since_us;
} idle;

struct rl__engine {
    redislock_client *c;
    pthread_mutex_t mu;
    idle *stack; /* the idle loops, the last given back on top */
    size_t n, cap;
};

/* One call: its lock and engine, and its outcome, written by its
 * callback on the calling thread. */
typedef struct call {
    redislock_lock *l;
    rl__alock *al;
    atomic_int done;
    redislock_err err;
    char detail[512];
} call;

/* The engine of c's blocking calls: no loop is made until a call needs
 * one. */
static redislock_err rl__engine_new(redislock_client *c, rl__engine **out)
{
    rl__engine *e = calloc(1, sizeof *e);

    *out = NULL;
    if (e == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if (pthread_mutex_init(&e->mu, NULL) != 0) {
        free(e);
        return rl__err(REDISLOCK_ENOMEM, "cannot make a mutex");
    }
    e->c = c;
    *out = e;
    return REDISLOCK_OK;
}

void rl__engine_free(rl__engine *e)
{
    if (e == NULL)
        return;
    while (e->n > 0) {
        e->n--;
        rl__alock_free_on_ploop(e->stack[e->n].pl, e->stack[e->n].al);
    }
    free(e->stack);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* An idle loop, or a new one. One idle for a while first hears what came
 * meanwhile (a server's close of its connection), as the pool checks a
 * connection idle that long; a loop whose poll() fails is not kept. */
static redislock_err take(rl__engine *e, idle *out)
{
    idle i = {NULL, NULL, 0};
    redislock_err err;

    for (;;) {
        pthread_mutex_lock(&e->mu);
        if (e->n > 0)
            i = e->stack[--e->n];
        pthread_mutex_unlock(&e->mu);
        if (i.pl == NULL)
            break;
        if (rl__now_us() - i.since_us <= RL_STALE_AFTER_US ||
            rl__ploop_refresh(i.pl) == REDISLOCK_OK) {
            *out = i;
            return REDISLOCK_OK;
        }
        rl__alock_free_on_ploop(i.pl, i.al);
        i.pl = NULL;
    }
    if ((err = rl__alock_on_ploop(e->c, &out->pl, &out->al)) == REDISLOCK_OK) {
        rl__alock_hand hand;

        rl__keeper_hand(e->c, &hand);
        rl__alock_private(out->al);
        rl__alock_hand_to(out->al, &hand);
    }
    return err;
}

/* Back on the stack, what it still sweeps handed to the keeper; freed
 * when the stack holds max_connections loops already (each keeps a
 * connection to each server it has used), or cannot grow. */
static void give_back(rl__engine *e, idle i)
{
    idle *grown;

    rl__alock_idle(i.al);
    pthread_mutex_lock(&e->mu);
    if (e->n >= (size_t)rl__env_of(e->c)->max_idle) {
        pthread_mutex_unlock(&e->mu);
        rl__alock_free_on_ploop(i.pl, i.al);
        return;
    }
    if (e->n == e->cap) {
        grown = realloc(e->stack, (e->cap ? e->cap * 2 : 4) * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&e->mu);
            rl__alock_free_on_ploop(i.pl, i.al);
            return;
        }
        e->stack = grown;
        e->cap = e->cap ? e->cap * 2 : 4;
    }
    i.since_us = rl__now_us();
    e->stack[e->n++] = i;
    pthread_mutex_unlock(&e->mu);
}

/* Polls until the engine waits for no request's answer (rl__alock_busy):
 * what an operation sent without waiting for it. Each such request has
 * its deadline, so this ends. REDISLOCK_OK, or REDISLOCK_EIO when poll()
 * fails. */
static redislock_err settle(idle i)
{
    redislock_err err;

    while (rl__alock_busy(i.al))
        if ((err = rl__ploop_round(i.pl, NULL, NULL)) != REDISLOCK_OK)
            return err;
    return REDISLOCK_OK;
}

static void ended(redislock_lock *l, redislock_err err, void *arg)
{
    call *k = arg;

    (void)l;
    k->err = err;
    if (err != REDISLOCK_OK)
        snprintf(k->detail, sizeof k->detail, "%s", redislock_errdetail());
    atomic_store(&k->done, 1);
}

/* The loop was woken (redislock_cancel): a cancel of the acquire under
 * way ends it here, on the loop's thread. One that comes once the call
 * is done stays for the next acquire (sticky, as documented). */
static void woken(void *arg)
{
    call *k = arg;
    int cancel = 0;

    pthread_mutex_lock(&k->l->mu);
    if (k->l->cancelled && !atomic_load(&k->done)) {
        k->l->cancelled = 0;
        cancel = 1;
    }
    pthread_mutex_unlock(&k->l->mu);
    if (cancel)
        rl__alock_cancel(k->al, k->l);
}

/* Whether l's acquire may start: not when a cancel came first (which it
 * then takes). With pl, records that l's acquire runs on it. */
static int may_start(redislock_lock *l, rl__ploop *pl)
{
    int go;

    pthread_mutex_lock(&l->mu);
    go = !l->cancelled;
    l->cancelled = 0;
    l->running = go ? pl : NULL;
    pthread_mutex_unlock(&l->mu);
    return go;
}

/* Runs start on a private loop on the calling thread until its callback;
 * returns the operation's outcome, its detail set on this thread. An
 * acquire (acquire set) is cancellable: redislock_cancel's flag, set
 * before it starts, makes it REDISLOCK_ECANCELED at once; set while it
 * runs, rl__engine_cancel ends it on its loop. */
static redislock_err rl__engine_run(rl__engine *e, redislock_lock *l,
                                    rl__engine_start start, void *arg,
                                    int acquire)
{
    idle i;
    call k = {.l = l, .err = REDISLOCK_OK};
    redislock_err err;

    atomic_init(&k.done, 0);
    if ((err = take(e, &i)) != REDISLOCK_OK)
        return err;
    k.al = i.al;
    if (acquire && !may_start(l, i.pl)) {
        give_back(e, i);
        return rl__err(REDISLOCK_ECANCELED, "the wait was cancelled");
    }
    if ((err = start(k.al, l, arg, ended, &k)) == REDISLOCK_OK &&
        (err = rl__ploop_run(i.pl, &k.done, acquire ? woken : NULL, &k)) !=
            REDISLOCK_OK) {
        /* The operation is still under way: freeing the loop ends it
         * (its callback: REDISLOCK_ECANCELED); the poll error stands. */
        snprintf(k.detail, sizeof k.detail, "%s", redislock_errdetail());
        if (acquire)
            may_start(l, NULL);
        rl__alock_free_on_ploop(i.pl, i.al);
        return rl__err(err, "%s", k.detail);
    }
    if (acquire) {
        pthread_mutex_lock(&l->mu);
        l->running = NULL;
        pthread_mutex_unlock(&l->mu);
    }
    /* What the call sent without waiting (a fair waiter's leave, a
     * give-back) is answered before it returns, as the blocking calls'
     * are; a loop whose poll() failed is not kept. */
    if (err == REDISLOCK_OK && settle(i) != REDISLOCK_OK)
        rl__alock_free_on_ploop(i.pl, i.al);
    else
        give_back(e, i);
    if (err != REDISLOCK_OK)
        return err;
    if (k.err != REDISLOCK_OK)
        rl__err(k.err, "%s", k.detail);
    return k.err;
}

void rl__engine_cancel(redislock_lock *l)
{
    pthread_mutex_lock(&l->mu);
    if (l->running != NULL)
        rl__ploop_wake(l->running);
    pthread_mutex_unlock(&l->mu);
}

void rl__engine_chan_unkeep(redislock_lock *l)
{
    rl__env *env = rl__env_of(l->client);
    rl__engine *e;
    size_t i;

    if (l->chan == NULL)
        return;
    pthread_mutex_lock(&env->mu);
    e = env->engine;
    pthread_mutex_unlock(&env->mu);
    if (e == NULL)
        return;
    /* An idle loop is touched only by whoever takes it off the stack:
     * under the stack's mutex, nobody can meanwhile. */
    pthread_mutex_lock(&e->mu);
    for (i = 0; i < e->n; i++)
        rl__alock_chan_unkeep(e->stack[i].al, l->chan, l->chanlen);
    pthread_mutex_unlock(&e->mu);
}

/* The engine of the client's blocking calls, made on first use
 * (engine.c). */
static redislock_err rl__env_engine(redislock_client *c, rl__engine **out)
{
    rl__env *e = rl__env_of(c);
    redislock_err err = REDISLOCK_OK;

    pthread_mutex_lock(&e->mu);
    if (e->engine == NULL)
        err = rl__engine_new(c, &e->engine);
    *out = e->engine;
    pthread_mutex_unlock(&e->mu);
    return err;
}

redislock_err rl__engine_call(redislock_lock *l, rl__engine_start start,
                              void *arg, int acquire)
{
    rl__engine *e;
    redislock_err err = rl__env_engine(l->client, &e);

    return err != REDISLOCK_OK ? err
                               : rl__engine_run(e, l, start, arg, acquire);
}

/* A request of rl__engine_request's (round NULL) or rl__engine_round's,
 * and what it brought back. */
typedef struct lone {
    rl__pool *p;
    const char *key;
    size_t keylen;
    const rl__request *q;
    int64_t timeout_ms;
    rl__reply *reply;
    rl__round *round;
    rl__alock_cb cb; /* the call's end (engine_run's) */
    void *cbarg;
} lone;

static void lone_reply(void *arg, redislock_err err, const rl__reply *r)
{
    lone *o = arg;

    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__request_name(o->q));
    if (err == REDISLOCK_OK && (o->reply = rl__reply_dup(r)) == NULL)
        err = rl__err(REDISLOCK_ENOMEM, "out of memory");
    o->cb(NULL, err, o->cbarg);
}

/* The round is in: its replies are the caller's. */
static void round_in(void *arg, rl__round *r)
{
    lone *o = arg;
    size_t i;

    *o->round = *r;
    for (i = 0; i < r->n; i++)
        r->reply[i] = NULL;
    o->cb(NULL, REDISLOCK_OK, o->cbarg);
}

static redislock_err start_lone(rl__alock *al, redislock_lock *l, void *arg,
                                rl__alock_cb cb, void *cbarg)
{
    lone *o = arg;

    (void)l;
    o->cb = cb;
    o->cbarg = cbarg;
    return o->round != NULL
               ? rl__alock_round(al, o->q, o->timeout_ms, round_in, o)
               : rl__alock_send(al, o->p, o->key, o->keylen, o->q, lone_reply,
                                o);
}

/* Runs o as a call on c's engine. */
static redislock_err run_lone(redislock_client *c, lone *o)
{
    rl__engine *e;
    redislock_err err = rl__env_engine(c, &e);

    return err != REDISLOCK_OK ? err
                               : rl__engine_run(e, NULL, start_lone, o, 0);
}

redislock_err rl__engine_request(redislock_client *c, rl__pool *p,
                                 const char *key, size_t keylen,
                                 const rl__request *q, rl__reply **out)
{
    lone o = {.p = p, .key = key, .keylen = keylen, .q = q};
    redislock_err err = run_lone(c, &o);

    *out = err == REDISLOCK_OK ? o.reply : NULL;
    if (err != REDISLOCK_OK)
        rl__reply_free(o.reply);
    return err;
}

redislock_err rl__engine_round(redislock_client *c, const rl__request *q,
                               int64_t timeout_ms, rl__round *out)
{
    lone o = {.q = q, .timeout_ms = timeout_ms, .round = out};
    redislock_err err;

    memset(out, 0, sizeof *out);
    if ((err = run_lone(c, &o)) != REDISLOCK_OK)
        rl__round_free(out);
    return err;
}
