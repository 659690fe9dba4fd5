/*
 * A server's notices of changed keys, for the waiters of one loop
 * (track.h).
 */
#include "track.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define RL_TRACK_CHANNEL "__redis__:invalidate"

struct rl__track {
    rl__loop *lp;
    const rl__conn_cfg *cfg;
    rl__aconn *inv;   /* subscribed to the notices */
    rl__aconn *trk;   /* tracking on, its notices sent to inv */
    long long inv_id; /* inv's CLIENT ID; 0 until known */
    int subscribed;   /* the server confirmed inv's subscription */
    int tracking;     /* the server said yes to trk's CLIENT TRACKING */
    int refused;      /* a command was refused: never asked again */
    rl__track_wait *waiters;
    unsigned pass; /* tells the waiters heard in one round */
};

redislock_err rl__track_new(rl__loop *lp, const rl__conn_cfg *cfg,
                            rl__track **out)
{
    rl__track *t = calloc(1, sizeof *t);

    *out = t;
    if (t == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    t->lp = lp;
    t->cfg = cfg;
    return REDISLOCK_OK;
}

/* Closes both connections (their callbacks hear ECANCELED, which they
 * ignore, as the state is reset first). */
static void disconnect(rl__track *t)
{
    rl__aconn *inv = t->inv, *trk = t->trk;

    t->inv = t->trk = NULL;
    t->inv_id = 0;
    t->subscribed = t->tracking = 0;
    if (inv != NULL)
        rl__loop_close(t->lp, inv);
    if (trk != NULL)
        rl__loop_close(t->lp, trk);
}

/* Every waiter hears "changed", or those whose key is key (keylen bytes),
 * once each, whatever their callbacks join or leave meanwhile. */
static void tell(rl__track *t, const char *key, size_t keylen, int all)
{
    unsigned pass = ++t->pass;
    rl__track_wait *w;

    for (;;) {
        for (w = t->waiters; w != NULL; w = w->next)
            if (w->pass != pass && (all || (w->keylen == keylen &&
                                            memcmp(w->key, key, keylen) == 0)))
                break;
        if (w == NULL)
            return;
        w->pass = pass;
        w->changed(w);
    }
}

/* The notices may have been lost: the connections go, and every waiter
 * reads its key again (the next read makes them anew). refused: the
 * server or its ACL said no, so tracking is not tried again. */
static void lost(rl__track *t, int refused)
{
    if (refused)
        t->refused = 1;
    disconnect(t);
    tell(t, NULL, 0, 1);
}

static void start(rl__track *t);

/* An error reply is a refusal (an old server, an ACL); no reply at all a
 * failure. Either way the notices are lost. Returns 1 when so. */
static int failed(rl__track *t, redislock_err err, const rl__reply *r)
{
    if (err == REDISLOCK_ECANCELED)
        return 1;
    if (err == REDISLOCK_OK && r->type != REDIS_REPLY_ERROR)
        return 0;
    lost(t, err == REDISLOCK_OK);
    return 1;
}

static void id_done(void *arg, redislock_err err, const rl__reply *r)
{
    rl__track *t = arg;

    if (failed(t, err, r))
        return;
    if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
        lost(t, 1);
        return;
    }
    t->inv_id = r->integer;
    start(t);
}

/* Tracking has just become ready: every waiter reads its key again, now
 * tracked, rather than at the end of the pause it took meanwhile. */
static void if_ready(rl__track *t)
{
    if (rl__track_ready(t))
        tell(t, NULL, 0, 1);
}

static void tracking_done(void *arg, redislock_err err, const rl__reply *r)
{
    rl__track *t = arg;

    if (failed(t, err, r))
        return;
    t->tracking = 1;
    if_ready(t);
}

/* The subscription: confirmed, a notice (an array of keys, or nil for
 * every key), or its end. */
static void notice(void *arg, redislock_err err, const rl__reply *r)
{
    rl__track *t = arg;
    size_t i;

    if (err == REDISLOCK_ECANCELED)
        return;
    if (err != REDISLOCK_OK) {
        lost(t, err == REDISLOCK_ENOPERM);
        return;
    }
    if (r == NULL) {
        t->subscribed = 1;
        if_ready(t);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        tell(t, NULL, 0, 1);
        return;
    }
    for (i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            tell(t, r->element[i]->str, r->element[i]->len, 0);
}

/* Makes what is missing: inv (CLIENT ID, then the subscription), then,
 * once inv's id is known, trk with tracking sent to it. */
static void start(rl__track *t)
{
    char id[32];
    const char *sub_id[2] = {"CLIENT", "ID"};
    const char *on[6] = {"CLIENT", "TRACKING", "ON", "REDIRECT", id, "OPTIN"};

    if (t->refused || t->waiters == NULL)
        return;
    if ((t->inv != NULL && rl__aconn_broken(t->inv)) ||
        (t->trk != NULL && rl__aconn_broken(t->trk))) {
        lost(t, 0);
        return;
    }
    if (t->inv == NULL) {
        if (rl__loop_connect(t->lp, t->cfg, &t->inv) != REDISLOCK_OK ||
            rl__aconn_send(t->inv, 2, sub_id, NULL, id_done, t) !=
                REDISLOCK_OK ||
            rl__aconn_subscribe(t->inv, RL_TRACK_CHANNEL,
                                strlen(RL_TRACK_CHANNEL), 0, notice,
                                t) != REDISLOCK_OK)
            disconnect(t);
        return;
    }
    if (t->trk == NULL && t->inv_id > 0) {
        snprintf(id, sizeof id, "%lld", t->inv_id);
        if (rl__loop_connect(t->lp, t->cfg, &t->trk) != REDISLOCK_OK ||
            rl__aconn_send(t->trk, 6, on, NULL, tracking_done, t) !=
                REDISLOCK_OK)
            disconnect(t);
    }
}

void rl__track_free(rl__track *t)
{
    rl__track_wait *w;

    if (t == NULL)
        return;
    while ((w = t->waiters) != NULL) {
        t->waiters = w->next;
        w->t = NULL;
        w->next = NULL;
    }
    disconnect(t);
    free(t);
}

void rl__track_join(rl__track *t, rl__track_wait *w)
{
    if (w->t != t) {
        rl__track_leave(w);
        w->t = t;
        w->pass = t->pass;
        w->next = t->waiters;
        t->waiters = w;
    }
    start(t);
}

void rl__track_leave(rl__track_wait *w)
{
    rl__track *t = w->t;
    rl__track_wait **pp;

    if (t == NULL)
        return;
    for (pp = &t->waiters; *pp != NULL && *pp != w; pp = &(*pp)->next)
        ;
    if (*pp == w)
        *pp = w->next;
    w->t = NULL;
    w->next = NULL;
    if (t->waiters == NULL)
        disconnect(t);
}

int rl__track_ready(const rl__track *t)
{
    return !t->refused && t->subscribed && t->tracking && t->inv != NULL &&
           t->trk != NULL && !rl__aconn_broken(t->inv) &&
           !rl__aconn_broken(t->trk);
}

static void caching_done(void *arg, redislock_err err, const rl__reply *r)
{
    (void)failed(arg, err, r);
}

redislock_err rl__track_conn(rl__track *t, rl__aconn **out)
{
    const char *argv[3] = {"CLIENT", "CACHING", "yes"};
    redislock_err err;

    if (!rl__track_ready(t))
        return rl__err(REDISLOCK_EINVAL, "no tracking connection is ready");
    if ((err = rl__aconn_send(t->trk, 3, argv, NULL, caching_done, t)) !=
        REDISLOCK_OK)
        return err;
    *out = t->trk;
    return REDISLOCK_OK;
}
