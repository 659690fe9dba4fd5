/*
 * A cluster's or a Sentinel client's requests on an event loop: see
 * aroute.h.
 */
#include "aroute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "script.h"

typedef struct trip trip;
typedef struct reader reader;
typedef struct asker asker;

/* A request on its way through the cluster. */
struct trip {
    rl__loop_timer timer; /* first: the loop hands it back */
    rl__aroute *rt;       /* NULL once the router has gone */
    rl__pool *at;         /* the node it was sent to last */
    int hops;
    int out; /* sent, its reply to come */
    /* Waiting out a failover: why it could not be sent (its detail),
     * what its caller hears if the budget runs out first. */
    redislock_err err;
    char detail[200];
    int64_t deadline_us;
    /* A write that counts only on the master, answered: its reply, kept
     * while the sentinels are asked whether its node still is. */
    rl__reply *held;
    size_t asked;       /* the next sentinel to ask */
    rl__pool *sentinel; /* the one asked */
    rl__hop hop;
    rl__aconn_cb cb;
    void *arg;
    rl__request r; /* the request, sent again on each hop */
    const char *key;
    size_t keylen;
    trip *prev, *next; /* the router's */
    char data[];       /* what v, len and key point into */
};

/* The map being read on the loop (cluster.c's walk). */
struct reader {
    rl__aroute *rt; /* NULL once the router has gone */
    rl__cluster_walk w;
};

/* The sentinels being asked on the loop, in turn, for a master that
 * ROLE confirms. */
struct asker {
    rl__aroute *rt; /* NULL once the router has gone */
    rl__sentinel_walk w;
};

struct rl__aroute {
    rl__topo *topo;
    rl__cluster *cl;  /* a cluster's map, or NULL */
    rl__sentinel *sn; /* a Sentinel client's, or NULL */
    asker *asking;    /* NULL: the sentinels are not being asked */
    rl__loop *lp;
    rl__aroute_conn conn;
    void *ctx;
    trip *trips;
    reader *reading; /* NULL: the map is not being read */
};

redislock_err rl__aroute_new(rl__topo *topo, rl__loop *lp, rl__aroute_conn conn,
                             void *ctx, rl__aroute **out)
{
    rl__aroute *rt = calloc(1, sizeof *rt);

    *out = NULL;
    if (rt == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    rt->topo = topo;
    rt->cl = topo->kind == RL_TOPO_CLUSTER ? topo->cluster : NULL;
    rt->sn = topo->kind == RL_TOPO_SENTINEL ? topo->sentinel : NULL;
    rt->lp = lp;
    rt->conn = conn;
    rt->ctx = ctx;
    *out = rt;
    return REDISLOCK_OK;
}

static void reader_free(reader *rd)
{
    rl__cluster_walk_end(&rd->w);
    free(rd);
}

static void reader_reply(void *arg, redislock_err err, const rl__reply *r);

/* Asks the walk's next node or seed for the map; once it is over, the
 * reading ends (the next request that cannot reach a node starts
 * another). */
static void reader_next(reader *rd)
{
    static const char *argv[2] = {"CLUSTER", "SLOTS"};
    rl__aroute *rt = rd->rt;
    rl__aconn *c = NULL;
    rl__pool *p;
    redislock_err err;

    while ((p = rl__cluster_walk_next(rt->cl, &rd->w)) != NULL) {
        if ((err = rt->conn(rt->ctx, p, &c)) == REDISLOCK_OK &&
            (err = rl__aconn_send(c, 2, argv, NULL, reader_reply, rd)) ==
                REDISLOCK_OK)
            return;
        rl__cluster_walk_heard(rt->cl, &rd->w, err, NULL);
    }
    rt->reading = NULL;
    reader_free(rd);
}

static void reader_reply(void *arg, redislock_err err, const rl__reply *r)
{
    reader *rd = arg;

    if (rd->rt == NULL) {
        reader_free(rd);
        return;
    }
    rl__cluster_walk_heard(rd->rt->cl, &rd->w, err, r);
    reader_next(rd);
}

/* Starts reading the map, unless it is being read; what the caller will
 * hear (err, its detail) stays. */
static void reload(rl__aroute *rt, redislock_err err)
{
    char detail[512];
    reader *rd;

    if (rt->reading != NULL || (rd = calloc(1, sizeof *rd)) == NULL)
        return;
    snprintf(detail, sizeof detail, "%s", redislock_errdetail());
    rd->rt = rt;
    rl__cluster_walk_start(rt->cl, &rd->w);
    rt->reading = rd;
    reader_next(rd);
    rl__err(err, "%s", detail);
}

static void asked_reply(void *arg, redislock_err err, const rl__reply *r);

/* Asks sentinel *i, or the next that can be sent to, for the master
 * (cb gets the answer: settle_next's question); returns the sentinel
 * asked, NULL with none left. */
static rl__pool *ask_sentinel(rl__aroute *rt, size_t *i, rl__aconn_cb cb,
                              void *arg)
{
    const char *argv[3];
    rl__aconn *c = NULL;
    rl__pool *p;

    while ((p = rl__sentinel_asked(rt->sn, (*i)++, argv)) != NULL)
        if (rt->conn(rt->ctx, p, &c) == REDISLOCK_OK &&
            rl__aconn_send(c, 3, argv, NULL, cb, arg) == REDISLOCK_OK)
            return p;
    return NULL;
}

/* Sends the walk's next question; once it is over, the asking ends (a
 * request still waiting starts another at its next pause's end). */
static void ask_next(asker *a)
{
    rl__aroute *rt = a->rt;
    const char *argv[3];
    rl__aconn *c = NULL;
    rl__pool *to;
    redislock_err err;
    int argc;

    while (rl__sentinel_walk_next(rt->sn, &a->w, &to, argv, &argc)) {
        if ((err = rt->conn(rt->ctx, to, &c)) == REDISLOCK_OK &&
            (err = rl__aconn_send(c, argc, argv, NULL, asked_reply, a)) ==
                REDISLOCK_OK)
            return;
        rl__sentinel_walk_heard(rt->sn, &a->w, err, NULL);
    }
    rt->asking = NULL;
    free(a);
}

/* A sentinel's answer, or the named node's ROLE. */
static void asked_reply(void *arg, redislock_err err, const rl__reply *r)
{
    asker *a = arg;

    if (a->rt == NULL) {
        free(a);
        return;
    }
    rl__sentinel_walk_heard(a->rt->sn, &a->w, err, r);
    ask_next(a);
}

/* Starts asking the sentinels, unless they are being asked; what the
 * caller will hear (its error detail) stays. */
static void ask(rl__aroute *rt)
{
    char detail[512];
    asker *a;

    if (rt->asking != NULL || (a = calloc(1, sizeof *a)) == NULL)
        return;
    snprintf(detail, sizeof detail, "%s", redislock_errdetail());
    a->rt = rt;
    rl__sentinel_walk_start(&a->w);
    rt->asking = a;
    ask_next(a);
    rl__err(REDISLOCK_OK, "%s", detail);
}

static void trip_free(trip *t)
{
    rl__aroute *rt = t->rt;

    rl__reply_free(t->held);

    if (rt != NULL) {
        if (t->prev != NULL)
            t->prev->next = t->next;
        else
            rt->trips = t->next;
        if (t->next != NULL)
            t->next->prev = t->prev;
    }
    free(t);
}

/* The trip is over: its caller hears err and r. */
static void trip_end(trip *t, redislock_err err, const rl__reply *r)
{
    rl__aconn_cb cb = t->cb;
    void *arg = t->arg;

    trip_free(t);
    cb(arg, err, r);
}

static void trip_reply(void *arg, redislock_err err, const rl__reply *r);

static void asking_done(void *arg, redislock_err err, const rl__reply *r)
{
    (void)arg;
    (void)err;
    (void)r;
}

/* Sends t on c, after an ASKING when asking is set. */
static redislock_err trip_send(trip *t, rl__aconn *c, int asking)
{
    static const char *argv[1] = {"ASKING"};
    redislock_err err = REDISLOCK_OK;

    if (asking)
        err = rl__aconn_send(c, 1, argv, NULL, asking_done, NULL);
    if (err == REDISLOCK_OK)
        err = rl__request_send_async(c, &t->r, trip_reply, t);
    t->out = err == REDISLOCK_OK;
    return err;
}

/* Sends t on to node p (NULL: it could not be made). */
static void trip_go(trip *t, rl__pool *p, int asking)
{
    rl__aconn *c = NULL;
    redislock_err err;

    if (p == NULL) {
        trip_end(t, rl__err(REDISLOCK_ENOMEM, "out of memory"), NULL);
        return;
    }
    t->at = p;
    if (t->r.resent != NULL)
        *t->r.resent = 1;
    if ((err = t->rt->conn(t->rt->ctx, p, &c)) != REDISLOCK_OK ||
        (err = trip_send(t, c, asking)) != REDISLOCK_OK)
        trip_end(t, err, NULL);
}

static void trip_pause(trip *t, int64_t ms);

/* A pause is over: the key routed again by the map, or sent to the master
 * the sentinels named since; a Sentinel client's request waits on while
 * no new master is confirmed, within its budget. */
static void trip_wake(rl__loop_timer *lt)
{
    trip *t = (trip *)lt;
    rl__aroute *rt = t->rt;
    rl__pool *p;
    int suspect = 0;

    if (rt->sn == NULL) {
        trip_go(t, rl__cluster_route(rt->cl, t->key, t->keylen), 0);
        return;
    }
    p = rl__sentinel_known(rt->sn, &suspect);
    if (!suspect) {
        trip_go(t, p, 0);
        return;
    }
    ask(rt);
    if (rl__now_us() >= t->deadline_us) {
        rl__err(t->err, "%s", t->detail);
        trip_end(t, t->err, NULL);
        return;
    }
    trip_pause(t, RL_SENTINEL_PAUSE_MS);
}

/* t waits ms (no longer than its budget) on a loop timer, then goes on. */
static void trip_pause(trip *t, int64_t ms)
{
    int64_t at = rl__now_us() + ms * 1000;
    redislock_err err;

    t->timer.fire = trip_wake;
    if ((err = rl__loop_arm(t->rt->lp, &t->timer,
                            at < t->deadline_us ? at : t->deadline_us)) !=
        REDISLOCK_OK)
        trip_end(t, err, NULL);
}

/* t met a master that is gone or replaced (err, its detail written):
 * the sentinels are asked again, and a request that surely did not run
 * (not sent, refused by a replica, or run where it does not count) waits
 * for the master they name next; one whose reply was lost may have run,
 * and is its caller's (sentinel.c's rules). */
static void sentinel_moved(trip *t, redislock_err err)
{
    rl__aroute *rt = t->rt;

    rl__sentinel_suspect(rt->sn, t->at);
    t->err = err;
    snprintf(t->detail, sizeof t->detail, "%s", redislock_errdetail());
    ask(rt);
    if (err == REDISLOCK_EIO || err == REDISLOCK_ETIMEDOUT ||
        rl__now_us() >= t->deadline_us) {
        rl__err(err, "%s", t->detail);
        trip_end(t, err, NULL);
        return;
    }
    trip_pause(t, RL_SENTINEL_PAUSE_MS);
}

static void settle_reply(void *arg, redislock_err err, const rl__reply *r);

/* Asks the next sentinel whether t's node is still the master, t's reply
 * held meanwhile; with none left, t fails as sentinel.c's settled(). */
static void settle_next(trip *t)
{
    if ((t->sentinel = ask_sentinel(t->rt, &t->asked, settle_reply, t)) !=
        NULL) {
        t->out = 1;
        return;
    }
    rl__err(REDISLOCK_ECONNECT,
            "no sentinel confirmed %s as the master after a write that "
            "counts only there: %s",
            t->at->name, t->detail);
    trip_end(t, REDISLOCK_ECONNECT, NULL);
}

/* A sentinel's answer to whether t's node is still the master: t's
 * reply is its caller's, or t goes to the new master, or the next
 * sentinel is asked (rl__sentinel_settled). */
static void settle_reply(void *arg, redislock_err err, const rl__reply *r)
{
    trip *t = arg;
    rl__reply *held;

    t->out = 0;
    if (t->rt == NULL) {
        rl__reply_free(t->held);
        free(t);
        return;
    }
    if (err == REDISLOCK_OK)
        err = rl__sentinel_settled(t->rt->sn, t->sentinel, t->at, r);
    if (err == REDISLOCK_OK) {
        held = t->held;
        t->held = NULL;
        trip_end(t, REDISLOCK_OK, held);
        rl__reply_free(held);
    } else if (err == REDISLOCK_EREADONLY) {
        rl__reply_free(t->held);
        t->held = NULL;
        sentinel_moved(t, err);
    } else {
        snprintf(t->detail, sizeof t->detail, "%s", redislock_errdetail());
        settle_next(t);
    }
}

/* A Sentinel client's reply: a master that cannot be reached or has
 * become a replica is followed (sentinel_moved); a write that counts
 * only on the master is confirmed first (settle_next). */
static void sentinel_reply(trip *t, redislock_err err, const rl__reply *r)
{
    if (!rl__topo_moved(t->rt->topo, err, r)) {
        if (err != REDISLOCK_OK || !t->r.settle) {
            trip_end(t, err, r);
            return;
        }
        if ((t->held = rl__reply_dup(r)) == NULL) {
            trip_end(t, rl__err(REDISLOCK_ENOMEM, "out of memory"), NULL);
            return;
        }
        t->asked = 0;
        t->detail[0] = '\0';
        settle_next(t);
        return;
    }
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__request_name(&t->r));
    sentinel_moved(t, err);
}

static void trip_reply(void *arg, redislock_err err, const rl__reply *r)
{
    trip *t = arg;
    rl__aroute *rt = t->rt;
    rl__go go;
    int64_t now = rl__now_us();

    t->out = 0;
    if (rt == NULL) {
        free(t);
        return;
    }
    if (rt->sn != NULL) {
        sentinel_reply(t, err, r);
        return;
    }
    go = rl__cluster_hops(rl__cluster_next(err, r, t->at, &t->hop), &t->hops);
    if (go == RL_GO_DONE || now >= t->deadline_us) {
        /* A lost reply: the next request may find a promoted replica. */
        if (err == REDISLOCK_EIO || err == REDISLOCK_ETIMEDOUT)
            reload(rt, err);
        trip_end(t, err, r);
        return;
    }
    switch (go) {
    case RL_GO_MOVED:
        trip_go(
            t, rl__cluster_moved(rt->cl, t->hop.slot, t->hop.host, t->hop.port),
            0);
        return;
    case RL_GO_ASK:
        trip_go(t, rl__cluster_node(rt->cl, t->hop.host, t->hop.port), 1);
        return;
    case RL_GO_RELOAD:
        reload(rt, err);
        /* fall through */
    default:
        trip_pause(t, rl__cluster_pause_ms());
    }
}

redislock_err rl__aroute_send(rl__aroute *rt, rl__aconn *c, rl__pool *at,
                              const void *key, size_t keylen,
                              const rl__request *q, rl__aconn_cb cb, void *arg)
{
    long bytes = rl__request_bytes(q);
    trip *t;
    redislock_err err;

    if (bytes < 0)
        return REDISLOCK_EINVAL;
    if ((t = calloc(1, sizeof *t + (size_t)bytes + keylen + 1)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    t->key = memcpy(rl__request_copy(&t->r, q, t->data), key, keylen);
    t->keylen = keylen;
    t->cb = cb;
    t->arg = arg;
    t->at = at;
    t->deadline_us =
        rl__now_us() +
        (at->cfg.command_timeout_ms + rl__request_wait_ms(q)) * 1000;
    if ((err = trip_send(t, c, 0)) != REDISLOCK_OK) {
        free(t);
        return err;
    }
    t->rt = rt;
    t->next = rt->trips;
    if (rt->trips != NULL)
        rt->trips->prev = t;
    rt->trips = t;
    return REDISLOCK_OK;
}

void rl__aroute_free(rl__aroute *rt)
{
    trip *t;

    if (rt == NULL)
        return;
    while ((t = rt->trips) != NULL) {
        rl__aconn_cb cb = t->cb;
        void *arg = t->arg;

        rt->trips = t->next;
        t->rt = NULL;
        /* A trip whose reply is to come is freed by its callback. */
        if (!t->out) {
            rl__loop_disarm(rt->lp, &t->timer);
            free(t);
        }
        rl__err(REDISLOCK_ECANCELED,
                "the event loop was freed with the request under way");
        cb(arg, REDISLOCK_ECANCELED, NULL);
    }
    if (rt->reading != NULL)
        rt->reading->rt = NULL;
    if (rt->asking != NULL)
        rt->asking->rt = NULL;
    free(rt);
}
