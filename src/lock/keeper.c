/*
 * The client's keeper thread (keeper.h): its inbox, the locks handed
 * over that wait for their first renewal, and its loop.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acquire.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "keeper.h"
#include "watchdog.h"

/* What a thread hands the keeper. */
typedef enum { MSG_KEEP, MSG_UNKEEP, MSG_SWEEP } msg_kind;

typedef struct rl__keep_msg {
    msg_kind kind;
    rl__keeper *k;
    redislock_lock *l; /* KEEP, UNKEEP */
    int64_t due_us;    /* KEEP: its first renewal's time */
    int done;          /* UNKEEP: the keeper has stopped (under mu) */
    /* SWEEP: its data, the strings in data. */
    rl__pool *pool;
    rl__lockname names[1 + REDISLOCK_SET_MAX];
    int n;
    int64_t ttl_ms;
    const char *token, *req;
    struct rl__keep_msg *next;
    char data[];
} msg;

struct rl__keeper {
    pthread_t thread;
    rl__ploop *pl;
    rl__alock *al; /* the engine pl drives */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* an UNKEEP done, or the thread gone */
    msg *head, **tail; /* the inbox, in order */
    /* KEEPs whose first renewal is not due yet: served once it nearly is,
     * dropped (no wake-up, no wait) by a release that comes first. */
    msg *pending;
    int64_t wake_us;     /* when the thread looks at them next */
    rl__loop_timer tick; /* its loop's timer for that */
    int stop;            /* rl__keeper_free has begun */
    int gone;            /* the thread has ended: nothing is served */
};

/* An UNKEEP served (its sender waits for done). */
static void unkept(void *arg)
{
    msg *m = arg;
    rl__keeper *k = m->k;

    pthread_mutex_lock(&k->mu);
    m->done = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void serve(rl__keeper *k, msg *m, int stopping)
{
    rl__alock *al = k->al;

    switch (m->kind) {
    case MSG_KEEP:
        /* Out of memory, or the client going: the lock is renewed no
         * more, and its lease runs out (its validity says so). */
        if (!stopping)
            rl__alock_keep(al, m->l);
        free(m);
        break;
    case MSG_UNKEEP:
        rl__alock_unkeep(al, m->l, unkept, m);
        break;
    case MSG_SWEEP:
        rl__alock_sweep(al, m->pool, m->names, m->n, m->token, m->req,
                        m->ttl_ms);
        free(m);
        break;
    }
}

/* How soon before its first renewal a pending KEEP is served: its
 * watch's own timer then sends the renewal on time. */
#define KEEP_AHEAD_US 20000

/* The pending KEEPs due by now (unlinked, in *due, in order) and the
 * time of the next one (INT64_MAX: none), under k->mu. */
static int64_t take_due(rl__keeper *k, msg **due)
{
    int64_t now = rl__now_us(), next = INT64_MAX;
    msg **pp = &k->pending, *m, **tail = due;

    *due = NULL;
    while ((m = *pp) != NULL) {
        if (m->due_us - KEEP_AHEAD_US <= now) {
            *pp = m->next;
            m->l->keeping = NULL;
            m->next = NULL;
            *tail = m;
            tail = &m->next;
        } else {
            next = m->due_us < next ? m->due_us : next;
            pp = &m->next;
        }
    }
    return next;
}

static void tick(rl__loop_timer *t)
{
    (void)t; /* the round ends: run() takes what is due */
}

/* Serves the pending KEEPs now due, then what the inbox holds, and arms
 * the thread's timer for the next pending one. */
static void take(rl__keeper *k, int stopping)
{
    msg *m, *next, *due;
    int64_t at;

    pthread_mutex_lock(&k->mu);
    at = take_due(k, &due);
    k->wake_us = at == INT64_MAX ? at : at - KEEP_AHEAD_US;
    m = k->head;
    k->head = NULL;
    k->tail = &k->head;
    pthread_mutex_unlock(&k->mu);
    if (at == INT64_MAX)
        rl__alock_disarm(k->al, &k->tick);
    else
        rl__alock_arm(k->al, &k->tick, at - KEEP_AHEAD_US);
    /* Before the inbox: an UNKEEP there of a lock just taken from the
     * pending ones is served after its KEEP. */
    for (; due != NULL; due = next) {
        next = due->next;
        serve(k, due, stopping);
    }
    for (; m != NULL; m = next) {
        next = m->next;
        serve(k, m, stopping);
    }
}

/* The thread ends: what came too late is answered or dropped. */
static void close_inbox(rl__keeper *k)
{
    msg *m, *next;

    pthread_mutex_lock(&k->mu);
    k->gone = 1;
    for (m = k->pending; m != NULL; m = next) {
        next = m->next;
        m->l->keeping = NULL;
        free(m);
    }
    k->pending = NULL;
    for (m = k->head; m != NULL; m = next) {
        next = m->next;
        if (m->kind == MSG_UNKEEP)
            m->done = 1; /* its sender's, on its stack */
        else
            free(m);
    }
    k->head = NULL;
    k->tail = &k->head;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void *run(void *arg)
{
    rl__keeper *k = arg;
    rl__alock *al = k->al;
    int64_t drain_until = 0, slowest_ms;
    int stop, stopping = 0;
    struct timespec pause = {0, 10 * 1000000};

    for (;;) {
        pthread_mutex_lock(&k->mu);
        stop = k->stop;
        pthread_mutex_unlock(&k->mu);
        /* What came before the stop is served first: the sweeps the
         * client's loops handed over as they were freed. */
        take(k, stopping);
        if (stop && !stopping) {
            /* No more renewals: every lock has been released or freed;
             * the sweeps get their time. */
            stopping = 1;
            rl__alock_unkeep_all(al);
            rl__alock_sweeping(al, &slowest_ms);
            drain_until = rl__now_us() + slowest_ms * 1000;
        }
        if (stopping && (rl__alock_sweeping(al, &slowest_ms) == 0 ||
                         rl__now_us() >= drain_until))
            break;
        /* poll() failed (out of memory): the deadlines of the requests
         * out go on, and so does this, a little later. */
        if (rl__ploop_round(k->pl, NULL, NULL) != REDISLOCK_OK)
            nanosleep(&pause, NULL);
    }
    rl__alock_disarm(al, &k->tick);
    close_inbox(k);
    return NULL;
}

static redislock_err keeper_new(redislock_client *c, rl__keeper **out)
{
    rl__keeper *k = calloc(1, sizeof *k);
    pthread_condattr_t attr;
    redislock_err err;

    *out = NULL;
    if (k == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if ((err = rl__alock_on_ploop(c, &k->pl, &k->al)) != REDISLOCK_OK) {
        free(k);
        return err;
    }
    rl__ploop_polls(k->pl);
    k->tail = &k->head;
    k->wake_us = INT64_MAX;
    k->tick.fire = tick;
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&k->thread, NULL, run, k) != 0) {
        pthread_cond_destroy(&k->cv);
        pthread_mutex_destroy(&k->mu);
        rl__alock_free_on_ploop(k->pl, k->al);
        free(k);
        return rl__err(REDISLOCK_ENOMEM, "cannot start the keeper thread");
    }
    *out = k;
    return REDISLOCK_OK;
}

/* The client's keeper, started on first use. */
static redislock_err keeper_of(redislock_client *c, rl__keeper **out)
{
    rl__env *e = rl__env_of(c);
    redislock_err err = REDISLOCK_OK;

    pthread_mutex_lock(&e->mu);
    if (e->keeper == NULL)
        err = keeper_new(c, &e->keeper);
    *out = e->keeper;
    pthread_mutex_unlock(&e->mu);
    return err;
}

static void post(rl__keeper *k, msg *m)
{
    pthread_mutex_lock(&k->mu);
    m->next = NULL;
    *k->tail = m;
    k->tail = &m->next;
    pthread_mutex_unlock(&k->mu);
    rl__ploop_wake(k->pl);
}

/* A kept lock's l->lwatch_stop: drops its KEEP if the keeper has not
 * served it yet (its first renewal is not due), else asks the keeper to
 * stop, and waits. */
static void unkeep(redislock_lock *l)
{
    rl__keeper *k;
    msg m = {.kind = MSG_UNKEEP, .l = l}, **pp;

    /* There since the lock was handed over. */
    if (keeper_of(l->client, &k) != REDISLOCK_OK)
        return;
    m.k = k;
    pthread_mutex_lock(&k->mu);
    if (l->keeping != NULL) {
        for (pp = &k->pending; *pp != NULL && *pp != l->keeping;
             pp = &(*pp)->next)
            ;
        if (*pp != NULL)
            *pp = l->keeping->next;
        free(l->keeping);
        l->keeping = NULL;
    } else if (!k->gone) {
        *k->tail = &m;
        k->tail = &m.next;
        rl__ploop_wake(k->pl);
        while (!m.done)
            pthread_cond_wait(&k->cv, &k->mu);
    }
    pthread_mutex_unlock(&k->mu);
}

/* Hands l over: pending until its first renewal is nearly due, so that a
 * lock released before then (a fair hand-off's short lease extended once,
 * a short hold with the watchdog) costs the keeper nothing; the thread is
 * woken only when it would look too late. */
static redislock_err hand_keep(void *ctx, redislock_lock *l,
                               const redislock_acquire_options *o,
                               int64_t sent_us, int64_t first_us)
{
    rl__keeper *k;
    msg *m;
    int wake = 0;
    redislock_err err;

    if ((err = keeper_of(ctx, &k)) != REDISLOCK_OK)
        return err;
    if ((m = calloc(1, sizeof *m)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if ((err = rl__acq_watch_loop(l, o, sent_us, first_us, 1)) !=
        REDISLOCK_OK) {
        free(m);
        return err;
    }
    m->kind = MSG_KEEP;
    m->k = k;
    m->l = l;
    m->due_us = rl__watch_due(l->watch);
    l->kept = 1;
    l->lwatch_stop = unkeep;
    pthread_mutex_lock(&k->mu);
    if (k->gone) {
        /* The client is going: renewed no more (as serve's stopping). */
        free(m);
    } else {
        m->next = k->pending;
        k->pending = m;
        l->keeping = m;
        if (m->due_us - KEEP_AHEAD_US < k->wake_us) {
            k->wake_us = m->due_us - KEEP_AHEAD_US;
            wake = 1;
        }
    }
    pthread_mutex_unlock(&k->mu);
    if (wake)
        rl__ploop_wake(k->pl);
    return REDISLOCK_OK;
}

/* Best effort, as a sweep is: out of memory, the lease ends it. */
static void hand_sweep(void *ctx, rl__pool *pool, const rl__lockname *names,
                       int n, const char *token, const char *req,
                       int64_t ttl_ms)
{
    size_t tl = strlen(token) + 1, ql = strlen(req) + 1;
    rl__keeper *k;
    msg *m;
    char *at;

    if (keeper_of(ctx, &k) != REDISLOCK_OK ||
        (m = calloc(1, sizeof *m + rl__lockname_size(names, n) + tl + ql)) ==
            NULL)
        return;
    m->kind = MSG_SWEEP;
    m->pool = pool;
    m->n = n;
    m->ttl_ms = ttl_ms;
    at = rl__lockname_copy(m->names, names, n, m->data);
    m->token = memcpy(at, token, tl);
    m->req = memcpy(at + tl, req, ql);
    post(k, m);
}

void rl__keeper_hand(redislock_client *c, rl__alock_hand *h)
{
    h->keep = hand_keep;
    h->sweep = hand_sweep;
    h->ctx = c;
}

void rl__keeper_free(rl__keeper *k)
{
    if (k == NULL)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_mutex_unlock(&k->mu);
    rl__ploop_wake(k->pl);
    pthread_join(k->thread, NULL);
    rl__alock_free_on_ploop(k->pl, k->al);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}
