/*
 * A client's lock operations on an application's event loop: see alock.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "acquire.h"
#include "agroup.h"
#include "alock.h"
#include "aroute.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "keyed.h"
#include "keys.h"
#include "rand.h"
#include "renew.h"
#include "reply.h"
#include "topology.h"
#include "track.h"
#include "wait.h"
#include "watchdog.h"

enum { OP_ACQUIRE, OP_RELEASE, OP_EXTEND, OP_INSPECT };

/* Per server, the most waiters that block as the blocking calls' do
 * (BLPOP, their next attempt behind it), each on a connection of its
 * own; the others listen on the wake channels. */
#define RL_LOOP_BLOCKERS 8

typedef struct node node;
typedef struct chan chan;
typedef struct rl__aop aop;
struct told {
    struct told *next;
    char msg[];
};
typedef struct round round;
typedef struct sweep sweep;

/* One server, as the loop reaches it. */
struct node {
    rl__pool *pool;  /* the client's: its address and timeouts */
    rl__aconn *cmd;  /* requests */
    rl__aconn *sub;  /* wake channels */
    rl__aconn *ssub; /* fair waiters' shard channels (a cluster's) */
    rl__aconn *blk[RL_LOOP_BLOCKERS]; /* waiters' BLPOPs */
    aop *blk_op[RL_LOOP_BLOCKERS];    /* the waiter on each; NULL: free */
    chan *chans;    /* the channels subscribed, or being subscribed or left */
    rl__track *trk; /* notices of changed keys (track.h), made on first use */
    node *next;
};

/* A channel the loop listens on for its waiters: a lock's wake channel,
 * or a fair waiter's own (its handle's), where a release tells it of a
 * hand-off. */
struct chan {
    char *name;
    size_t len;
    int fair;    /* a fair waiter's: messages are hand-offs to parse */
    int sharded; /* a shard channel (SSUBSCRIBE: a cluster's fair ones) */
    int ready;   /* the server confirmed the subscription */
    int leaving; /* unsubscribed, the server's confirmation awaited */
    int ended;   /* no subscription (the connection went): renewed by the
                    next waiter that pauses */
    int missed;  /* a wake-up came while none of its waiters was paused */
    /* A fair channel kept subscribed with nobody on it (chan_leave): what
     * came meanwhile, for its next waiter (its attempt's reply and a
     * hand-off just after it may be read in either order). */
    struct told *early;
    int nearly;
    aop *head, *tail; /* its waiters, longest paused first */
    rl__aconn *on;    /* the connection it is subscribed on */
    node *n;
    chan *next;
};

/* An operation under way. */
struct rl__aop {
    rl__loop_timer timer; /* first: the loop hands it back */
    rl__alock *al;
    redislock_lock *l; /* NULL once its caller has heard */
    int kind;
    rl__alock_cb cb;
    void *arg;
    int inflight; /* requests whose callbacks are still to come */
    const rl__script *script;
    int64_t sent_us;
    /* An acquire: its options and steps, the channel it listens on. */
    redislock_acquire_options o;
    rl__acq a;
    chan *ch;
    const char *ch_key; /* the key whose wake channel ch is (a set's) */
    aop *wnext;
    int paused;
    node *bn;   /* the node of its blocker, and the blocker's place + 1 */
    int blk;    /* (0: none) */
    int behind; /* its attempt went behind its BLPOP */
    /* Its BLPOP's error reply (an ACL without it, a wake list of another
     * type): the acquire ends with it at its next pause. */
    redislock_err blk_refused;
    char blk_why[256];
    int blk_skip;   /* its BLPOP met a cluster's change: one pause without */
    int confirming; /* its lease's confirming extend is out */
    int64_t confirm_us; /* when that was sent */
    int recheck;        /* to try again once the channel is confirmed */
    /* Behind a holder whose release wakes nobody: its wait on the node's
     * notices (joined while it wants its attempts' reads tracked), the
     * pause that a notice ends, and a notice that came while it was not
     * paused (its next pause tries again at once instead). */
    rl__track_wait tw;
    rl__track *trk_sent; /* the notices its tracked attempt went by */
    int trk_pause;
    int trk_missed;
    int resent; /* its attempt was sent again (rl__request.resent) */
    /* A spread set's: the way its attempt's groups go (gio_send's, but
     * the group of the key it waits behind on that node's tracking
     * connection, where the notices are ready), and that group's keys
     * when its request went so in the attempt under way. */
    rl__agroup_io tio;
    const rl__lockname *trk_names;
    int trk_n;
    /* Redlock's: its waits on each server's notices (rtrack), made when
     * it first pauses behind a holder; nrt of them. */
    struct rtrack *rtw;
    size_t nrt;
    rl__try t; /* its attempt out (one request or a round): what it asked */
    /* A fair waiter's messages heard while it was not paused, in order:
     * read at its next pause, as a blocked waiter reads them at its next
     * listen (a hand-off is judged against its place then). */
    struct told *told;
    round *rd;       /* its request out to every server, if any */
    rl__agroup *grp; /* its requests out to a set's groups, if any */
    /* The guards of its write (acquire, extend) and their answers:
     * rl__lock_guard's, read by rl__lock_acks. */
    rl__request gq;
    rl__guard_acks acks;
    /* A release's hold-after or an extend's TTL. */
    int64_t ms;
    /* An inspect's output, the caller's, of info_size bytes. */
    redislock_info *info;
    size_t info_size;
    aop *prev, *next; /* the operations under way */
};

/* A lock the loop renews (acquired with watchdog): its watch
 * (l->watch, watchdog.c's decisions) is driven by this timer. */
typedef struct rl__lwatch lwatch;
struct rl__lwatch {
    rl__loop_timer timer; /* first: the loop hands it back */
    rl__alock *al;
    redislock_lock *l; /* NULL once stopped */
    int inflight;      /* a renewal out */
    round *rd;         /* a renewal out to every server */
    rl__agroup *grp;   /* a renewal out to a set's groups */
    int64_t sent_us;
    rl__request gq; /* its guards (as an aop's) */
    rl__guard_acks acks;
    node *n;       /* its node when last sent, or taken (renewals by node) */
    unsigned slot; /* and its key's hash slot, in a cluster (else 0) */
    /* Being stopped by rl__alock_unkeep, which waits for the renewal out:
     * called once it has been answered, and the watch gone. */
    void (*gone)(void *arg);
    void *gone_arg;
    lwatch *prev, *next; /* the loop's */
};

static void round_track_leave(aop *op);

struct rl__alock {
    redislock_client *c;
    rl__loop *lp;
    rl__aroute *rt; /* a cluster's or Sentinel client's router; else NULL */
    node *nodes;
    aop *ops;
    lwatch *watches;
    sweep *sweeps;           /* lost attempts being abandoned */
    rl__agroup_io gio;       /* how a set's groups are reached (agroup.c) */
    rl__parcels parcels;     /* spread sets' renewals being gathered */
    rl__parcel_io pio;       /* how they are sent (renew.h) */
    int parking;             /* gathering them: gio_send keeps extends */
    int private_loop;        /* rl__alock_private */
    rl__alock_hand hand;     /* where leftovers go (rl__alock_hand_to) */
    aop *spare;              /* an ended op's memory, for the next one */
    int loose;               /* requests out that no operation waits for */
    rl__alock_pause *pauses; /* other files' operations' pauses */
};

/* An abandoned attempt made to hold nothing, on the loop. abandon.lua on the
 * key's node (or one Redlock server), tried again every 50 ms while the
 * server cannot be reached or cannot serve yet, for at most the TTL plus
 * a minute. Owns a copy of what it needs: the handle may go first. */
#define RL_SWEEP_RETRY_US 50000
struct sweep {
    rl__loop_timer timer; /* first: the loop hands it back */
    rl__alock *al;        /* NULL once the loop has gone */
    rl__pool *pool;       /* a Redlock server; NULL: the key's node */
    int out;              /* a try's reply to come */
    int settle; /* a blocking call waits for its first try (rl__alock_busy):
                   a give-back, as a release; not a lost attempt's. On a
                   Redlock server, for the server timeout at most, as the
                   round it gives back waited */
    int64_t give_up_us, ttl_ms;
    rl__lockname names[1 + REDISLOCK_SET_MAX]; /* the lock's keys */
    int n;
    const char *token, *req;
    sweep *prev, *next; /* the loop's */
    char data[];
};

/* A request sent to every server of the client at once (an algorithm
 * whose requests go to every server: Redlock): each server's reply (a
 * copy) or failure gathered until all are in or the per-server timeout
 * has passed, then handed to done; what comes later is dropped. */
typedef void (*round_fn)(round *rd);
typedef struct rslot {
    round *rd;
    size_t i;
} rslot;
struct round {
    rl__loop_timer timer; /* first: the loop hands it back */
    rl__alock *al;
    const char *name; /* what it runs, for messages */
    rl__round r;
    size_t left;   /* servers yet to answer */
    int pending;   /* callbacks yet to come, answered or not */
    round_fn done; /* NULL once decided, or dropped */
    void *arg;
    int raw; /* error replies kept as replies (a batch reads them) */
    /* A request was sent again (rl__request.resent): the round's flag,
     * since the round outlives its caller (an attempt's operation). */
    int resent;
    rl__alock_round_cb out; /* rl__alock_round's caller, through round_out */
    rslot slot[RL_MAX_QUORUM];
};

static redislock_err route_conn(void *ctx, rl__pool *p, rl__aconn **out);
static redislock_err gio_send(void *ctx, const rl__lockname *names, int n,
                              const char *req, const rl__request *q,
                              rl__aconn_cb cb, void *arg);
static void gio_sweep(void *ctx, const rl__lockname *names, int n,
                      const char *token, const char *req, int64_t ttl_ms,
                      int settle);
static redislock_err pio_send(void *ctx, void *nd, const rl__request *q,
                              rl__aconn_cb cb, void *arg);
static redislock_err pio_alone(void *ctx, void *nd, const rl__lockname *names,
                               int n, const rl__request *q, rl__aconn_cb cb,
                               void *arg);

redislock_err rl__alock_new(redislock_client *c, const rl__loop_ops *ops,
                            rl__alock **out)
{
    rl__alock *al = calloc(1, sizeof *al);
    redislock_err err;

    *out = NULL;
    if (al == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if ((err = rl__loop_new(ops, &al->lp)) != REDISLOCK_OK) {
        free(al);
        return err;
    }
    al->c = c;
    al->gio = (rl__agroup_io){al, gio_send, gio_sweep};
    al->pio = (rl__parcel_io){al, c, pio_send, pio_alone};
    /* An application's loop can end once nothing is under way. */
    rl__loop_parks(al->lp, 1);
    /* A cluster's and a Sentinel client's requests find their way. */
    if (rl__topo_moves(rl__client_topo(c)) &&
        (err = rl__aroute_new(rl__client_topo(c), al->lp, route_conn, al,
                              &al->rt)) != REDISLOCK_OK) {
        rl__loop_free(al->lp);
        free(al);
        return err;
    }
    *out = al;
    return REDISLOCK_OK;
}

void rl__alock_io(rl__alock *al, int fd, int what)
{
    rl__loop_io(al->lp, fd, what);
}

redislock_err rl__alock_on_ploop(redislock_client *c, rl__ploop **pl,
                                 rl__alock **al)
{
    rl__loop_ops ops;
    redislock_err err;

    *al = NULL;
    if ((err = rl__ploop_new(pl, &ops)) != REDISLOCK_OK)
        return err;
    if ((err = rl__alock_new(c, &ops, al)) != REDISLOCK_OK) {
        rl__ploop_free(*pl);
        *pl = NULL;
        return err;
    }
    /* A private loop is driven only while a call waits on it. */
    rl__loop_parks((*al)->lp, 0);
    rl__ploop_drive(*pl, (*al)->lp);
    return REDISLOCK_OK;
}

void rl__alock_free_on_ploop(rl__ploop *pl, rl__alock *al)
{
    rl__alock_free(al);
    rl__ploop_free(pl);
}

void rl__alock_timeout(rl__alock *al)
{
    rl__loop_timeout(al->lp);
}

/* The node of the server p. */
static redislock_err node_at(rl__alock *al, rl__pool *p, node **out)
{
    node *n = NULL;

    for (n = al->nodes; n != NULL && n->pool != p; n = n->next)
        ;
    if (n == NULL) {
        if ((n = calloc(1, sizeof *n)) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        n->pool = p;
        n->next = al->nodes;
        al->nodes = n;
    }
    *out = n;
    return REDISLOCK_OK;
}

/* The node of key, by the topology as it stands (asking no one). */
static redislock_err node_of(rl__alock *al, const void *key, size_t keylen,
                             node **out)
{
    return node_at(al, rl__topo_node_now(rl__client_topo(al->c), key, keylen),
                   out);
}

/* The node of the key a waiter of l waits behind: the one that refused
 * it (a set's), which for a set spread over several nodes is not the
 * first key's. */
static rl__pool *wait_pool(const rl__alock *al, const redislock_lock *l)
{
    const rl__lockname *k = &l->wait_name;

    if (k->key == NULL)
        return rl__topo_node_now(rl__client_topo(al->c), l->key, l->keylen);
    return rl__topo_node_now(rl__client_topo(al->c), k->key, k->keylen);
}

/* A private loop's request connection to n without a new connect: the
 * one its waiter blocked on (pause_blocked lends it), once idle, or one
 * the constructor's checks left idle in the client's pool; 0: none. A
 * blocking call then holds one connection per server. */
static int node_reuse(rl__alock *al, node *n)
{
    rl__aconn *pc;
    int i;

    for (i = 0; i < RL_LOOP_BLOCKERS; i++)
        if (n->blk[i] != NULL && !rl__aconn_broken(n->blk[i]) &&
            rl__aconn_pending(n->blk[i]) == 0) {
            n->cmd = n->blk[i];
            n->blk[i] = NULL;
            return 1;
        }
    if ((pc = rl__pool_take(n->pool)) == NULL ||
        rl__loop_adopt(al->lp, pc) != REDISLOCK_OK)
        return 0;
    n->cmd = pc;
    return 1;
}

/* n's request connection, opened again if it has failed. */
static redislock_err node_cmd(rl__alock *al, node *n)
{
    if (n->cmd != NULL && rl__aconn_broken(n->cmd)) {
        rl__loop_close(al->lp, n->cmd);
        n->cmd = NULL;
    }
    if (n->cmd != NULL || (al->private_loop && node_reuse(al, n)))
        return REDISLOCK_OK;
    return rl__loop_connect(al->lp, &n->pool->cfg, &n->cmd);
}

/* The router's way to a node's request connection. */
static redislock_err route_conn(void *ctx, rl__pool *p, rl__aconn **out)
{
    rl__alock *al = ctx;
    node *n = NULL;
    redislock_err err = node_at(al, p, &n);

    if (err == REDISLOCK_OK && (err = node_cmd(al, n)) == REDISLOCK_OK)
        *out = n->cmd;
    return err;
}

/* The node of l's key, with a request connection that has not failed. */
static redislock_err node_for(rl__alock *al, const redislock_lock *l,
                              node **out)
{
    redislock_err err = node_of(al, l->key, l->keylen, out);

    return err != REDISLOCK_OK ? err : node_cmd(al, *out);
}

/* Server i of round rd failed with err. */
static void round_failed(round *rd, size_t i, redislock_err err)
{
    rd->r.err[i] = err;
}

static void round_free_if_idle(round *rd)
{
    if (rd->done == NULL && rd->pending == 0)
        free(rd);
}

/* The round is decided: done hears it, once; later replies are dropped. */
static void round_decide(round *rd)
{
    round_fn done = rd->done;

    rd->done = NULL;
    rl__loop_disarm(rd->al->lp, &rd->timer);
    /* Kept while done runs: a connection it closes (a tracker's) ends a
     * request of the round still out. */
    rd->pending++;
    done(rd);
    rd->pending--;
    rl__round_free(&rd->r);
    round_free_if_idle(rd);
}

/* Its owner no longer wants the round's outcome. */
static void round_drop(round *rd)
{
    if (rd == NULL || rd->done == NULL)
        return;
    rd->done = NULL;
    rl__loop_disarm(rd->al->lp, &rd->timer);
    rl__round_free(&rd->r);
    round_free_if_idle(rd);
}

/* Every server that has not answered yet fails with err. */
static void round_give_up(round *rd, redislock_err err, const char *why)
{
    size_t i;

    for (i = 0; i < rd->r.n; i++)
        if (rd->r.reply[i] == NULL && rd->r.err[i] == REDISLOCK_OK) {
            rl__err(err, "%s: %s",
                    rl__topo_each(rl__client_topo(rd->al->c), i)->name, why);
            round_failed(rd, i, err);
        }
    rd->left = 0;
}

static void round_timeout(rl__loop_timer *lt)
{
    round *rd = (round *)lt;

    round_give_up(rd, REDISLOCK_ETIMEDOUT,
                  "no reply within the per-server timeout");
    round_decide(rd);
}

/* A server's reply to a round, or its failure; error replies are that
 * server's failure, as in the blocking calls' rounds. */
static void round_reply(void *arg, redislock_err err, const rl__reply *r)
{
    rslot *sl = arg;
    round *rd = sl->rd;

    rd->pending--;
    if (rd->done == NULL) {
        round_free_if_idle(rd);
        return;
    }
    if (err == REDISLOCK_OK && !rd->raw)
        err = rl__reply_check(r, rd->name);
    if (err == REDISLOCK_OK && (rd->r.reply[sl->i] = rl__reply_dup(r)) == NULL)
        err = rl__err(REDISLOCK_ENOMEM, "out of memory");
    if (err != REDISLOCK_OK)
        round_failed(rd, sl->i, err);
    if (--rd->left == 0)
        round_decide(rd);
}

/* A new round, zeroed. Not calloc: glibc's calloc bypasses the
 * per-thread cache, and a round is small enough for it. */
static round *round_new(void)
{
    round *rd = malloc(sizeof *rd);

    if (rd != NULL)
        memset(rd, 0, sizeof *rd);
    return rd;
}

/* The connection a round's request goes on at server i (node n), where
 * it is not n's request connection: an attempt's tracked read. */
typedef struct round_via {
    rl__aconn *(*conn)(void *arg, size_t i, node *n);
    void *arg;
} round_via;

/* Sends q to server i of rd, on via's connection (via NULL: the
 * node's request connection); or, when making its keys failed (keyed,
 * why its detail), fails there as every server does. */
static redislock_err round_one(rl__alock *al, round *rd, size_t i,
                               const rl__request *q, const round_via *via,
                               redislock_err keyed, const char *why)
{
    node *n = NULL;
    redislock_err err;

    if ((err = node_at(al, rl__topo_each(rl__client_topo(al->c), i), &n)) !=
            REDISLOCK_OK ||
        (err = node_cmd(al, n)) != REDISLOCK_OK)
        return err;
    if (keyed != REDISLOCK_OK)
        return rl__err(keyed, "%s", why);
    return rl__request_send_async(via != NULL ? via->conn(via->arg, i, n)
                                              : n->cmd,
                                  q, round_reply, &rd->slot[i]);
}

/* Sends q (req: the request whose void key it takes, or NULL) for l to
 * every server of the client, or with l NULL q as it is (its keys
 * given), each answered within timeout_ms, on via's connections (NULL:
 * the nodes' request connections); done gets the round on the loop,
 * never from here. A server that cannot be sent to fails in the round. */
static redislock_err round_send_via(rl__alock *al, redislock_lock *l,
                                    rl__request *q, const char *req,
                                    int64_t timeout_ms, round_fn done,
                                    void *arg, round **out,
                                    const round_via *via)
{
    rl__topo *topo = rl__client_topo(al->c);
    round *rd = round_new();
    rl__request sent = *q;
    rl__keyset ks;
    redislock_err err, kerr = REDISLOCK_OK;
    char why[256] = "";
    size_t i;

    *out = NULL;
    if (rd == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    rd->al = al;
    rd->name = rl__request_name(q);
    rd->r.n = topo->npools;
    rd->timer.fire = round_timeout;
    if ((err = rl__loop_arm(al->lp, &rd->timer,
                            rl__now_us() + timeout_ms * 1000)) != 0) {
        free(rd);
        return err;
    }
    rd->done = done;
    rd->arg = arg;
    /* The same request goes to every server: l's keys are made once. */
    if (l != NULL && (kerr = rl__lock_keyed(l, req, q, &sent, &ks)) != 0)
        snprintf(why, sizeof why, "%s", redislock_errdetail());
    if (q->resent != NULL)
        sent.resent = &rd->resent;
    for (i = 0; i < rd->r.n; i++) {
        rd->slot[i] = (rslot){rd, i};
        if ((err = round_one(al, rd, i, &sent, via, kerr, why)) ==
            REDISLOCK_OK) {
            rd->pending++;
            rd->left++;
        } else {
            round_failed(rd, i, err);
        }
    }
    if (l != NULL && kerr == REDISLOCK_OK)
        rl__keyset_free(&ks);
    /* None sent: decided at the loop's next timeout. */
    if (rd->left == 0)
        rl__loop_arm(al->lp, &rd->timer, rl__now_us());
    *out = rd;
    return REDISLOCK_OK;
}

static redislock_err round_send(rl__alock *al, redislock_lock *l,
                                rl__request *q, const char *req,
                                int64_t timeout_ms, round_fn done, void *arg,
                                round **out)
{
    return round_send_via(al, l, q, req, timeout_ms, done, arg, out, NULL);
}

/* A round of rl__alock_round's is decided. */
static void round_out(round *rd)
{
    rd->out(rd->arg, &rd->r);
}

redislock_err rl__alock_round(rl__alock *al, const rl__request *q,
                              int64_t timeout_ms, rl__alock_round_cb done,
                              void *arg)
{
    rl__request sent = *q;
    round *rd;
    redislock_err err =
        round_send(al, NULL, &sent, NULL, timeout_ms, round_out, arg, &rd);

    if (err == REDISLOCK_OK)
        rd->out = done;
    return err;
}

/* Sends q on c, a connection of n: through a cluster's or Sentinel's
 * router (redirections followed) where there is one and key says where q
 * goes, else as it is. */
static redislock_err node_send(rl__alock *al, node *n, rl__aconn *c,
                               const char *key, size_t keylen,
                               const rl__request *q, rl__aconn_cb cb, void *arg)
{
    return al->rt != NULL && key != NULL
               ? rl__aroute_send(al->rt, c, n->pool, key, keylen, q, cb, arg)
               : rl__request_send_async(c, q, cb, arg);
}

redislock_err rl__alock_send(rl__alock *al, rl__pool *p, const char *key,
                             size_t keylen, const rl__request *q,
                             rl__aconn_cb cb, void *arg)
{
    node *n = NULL;
    redislock_err err =
        p != NULL ? node_at(al, p, &n) : node_of(al, key, keylen, &n);

    if (err == REDISLOCK_OK)
        err = node_cmd(al, n);
    if (err != REDISLOCK_OK)
        return err;
    return node_send(al, n, n->cmd, p == NULL ? key : NULL, keylen, q, cb, arg);
}

redislock_err rl__alock_send_tracked(rl__alock *al, rl__track_wait *w,
                                     const rl__request *q, rl__aconn_cb cb,
                                     void *arg, int *tracked)
{
    node *n = NULL;
    rl__aconn *c;
    redislock_err err = node_of(al, w->key, w->keylen, &n);

    *tracked = 0;
    if (err == REDISLOCK_OK)
        err = node_cmd(al, n);
    if (err != REDISLOCK_OK)
        return err;
    c = n->cmd;
    if (n->trk != NULL ||
        rl__track_new(al->lp, &n->pool->cfg, &n->trk) == REDISLOCK_OK) {
        rl__track_join(n->trk, w);
        /* c stays the request connection unless this gives the other. */
        *tracked = rl__track_ready(n->trk) &&
                   rl__track_conn(n->trk, &c) == REDISLOCK_OK;
    }
    return node_send(al, n, c, w->key, w->keylen, q, cb, arg);
}

static void sweep_free(sweep *sw)
{
    rl__alock *al = sw->al;

    if (al != NULL) {
        rl__loop_disarm(al->lp, &sw->timer);
        if (sw->prev != NULL)
            sw->prev->next = sw->next;
        else
            al->sweeps = sw->next;
        if (sw->next != NULL)
            sw->next->prev = sw->prev;
    }
    free(sw);
}

static void sweep_try(sweep *sw);

static void sweep_fire(rl__loop_timer *lt)
{
    sweep_try((sweep *)lt);
}

/* Tries again in a while, or, past the TTL and a minute, gives up. */
static void sweep_later(sweep *sw)
{
    int64_t now = rl__now_us();

    sw->timer.fire = sweep_fire;
    if (now >= sw->give_up_us ||
        rl__loop_arm(sw->al->lp, &sw->timer, now + RL_SWEEP_RETRY_US) != 0)
        sweep_free(sw);
}

static void sweep_done(void *arg, redislock_err err, const rl__reply *r)
{
    sweep *sw = arg;

    sw->out = 0;
    if (sw->al == NULL) {
        free(sw);
        return;
    }
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, "abandon");
    if (rl__abandon_again(err))
        sweep_later(sw);
    else
        sweep_free(sw);
}

/* A Redlock server's give-back has waited its server timeout: the
 * blocking call goes on without it (it is tried on all the same). */
static void sweep_settle_over(rl__loop_timer *lt)
{
    ((sweep *)lt)->settle = 0;
}

static void sweep_try(sweep *sw)
{
    rl__alock *al = sw->al;
    rl__pool *p = sw->pool != NULL ? sw->pool
                                   : rl__topo_node_now(rl__client_topo(al->c),
                                                       sw->names[0].key,
                                                       sw->names[0].keylen);
    node *n = NULL;

    if (node_at(al, p, &n) == REDISLOCK_OK && node_cmd(al, n) == REDISLOCK_OK &&
        rl__abandon_send_async(sw->pool != NULL ? NULL : al->rt, n->cmd,
                               n->pool, sw->names, sw->n, sw->token, sw->req,
                               sw->ttl_ms, sweep_done, sw) == REDISLOCK_OK) {
        sw->out = 1;
        /* Its timer is free while the try is out. */
        if (sw->settle && sw->pool != NULL) {
            sw->timer.fire = sweep_settle_over;
            if (rl__loop_arm(al->lp, &sw->timer,
                             rl__now_us() +
                                 rl__client_server_timeout(al->c, sw->ttl_ms) *
                                     1000) != REDISLOCK_OK)
                sw->settle = 0;
        }
        return;
    }
    sweep_later(sw);
}

/* Starts making sure the request req (for token, with ttl_ms) holds
 * nothing of the lock named names (n: a set's keys, which one script
 * reaches): on server pool, or with pool NULL on the keys' node. Out of
 * memory, the lease ends it. The caller's error detail stays. */
static void sweep_start(rl__alock *al, rl__pool *pool,
                        const rl__lockname *names, int n, const char *token,
                        const char *req, int64_t ttl_ms, int settle)
{
    size_t tl = strlen(token), ql = strlen(req);
    sweep *sw;
    char detail[512], *at;

    if ((sw = calloc(1, sizeof *sw + rl__lockname_size(names, n) + tl + ql +
                            2)) == NULL)
        return;
    at = rl__lockname_copy(sw->names, names, n, sw->data);
    sw->n = n;
    sw->token = memcpy(at, token, tl + 1);
    sw->req = memcpy(at + tl + 1, req, ql + 1);
    sw->al = al;
    sw->pool = pool;
    sw->ttl_ms = ttl_ms;
    sw->settle = settle;
    sw->give_up_us = rl__now_us() + (ttl_ms + 60000) * 1000;
    sw->next = al->sweeps;
    if (al->sweeps != NULL)
        al->sweeps->prev = sw;
    al->sweeps = sw;
    snprintf(detail, sizeof detail, "%s", redislock_errdetail());
    sweep_try(sw);
    rl__err(REDISLOCK_OK, "%s", detail);
}

/* The acquire's hook (rl__acq's abandon): a lost attempt is swept on the
 * loop itself (a private one hands what is left to the keeper); a set's groups
 * each on their node. */
static void loop_abandon(void *ctx, redislock_lock *l, const rl__try *t,
                         int settle)
{
    rl__alock *al = ctx;
    rl__lockname names[1 + REDISLOCK_SET_MAX];
    int n;

    if (l->algo->groups) {
        rl__agroup_abandon(&al->gio, l, t, settle);
        return;
    }
    n = rl__lock_names(l, names);
    sweep_start(al, NULL, names, n, t->id, t->req, t->ttl_ms, settle);
}

static unsigned slot_of_key(const rl__alock *al, const char *key, size_t keylen)
{
    return rl__topo_cluster(rl__client_topo(al->c)) ? rl__key_slot(key, keylen)
                                                    : 0;
}

/* Sends q of the keys names (req: the request whose void marker it
 * takes, or NULL) on node nd's request connection, routed on by a
 * cluster's router. */
static redislock_err names_send(rl__alock *al, node *nd,
                                const rl__lockname *names, int n,
                                const char *req, const rl__request *q,
                                rl__aconn_cb cb, void *arg)
{
    redislock_err err = node_cmd(al, nd);

    if (err == REDISLOCK_OK)
        err = rl__lock_names_send_async(al->rt, nd->cmd, nd->pool, names, n,
                                        req, q, cb, arg);
    return err;
}

/* agroup.c's way to a group's node: the request connection of the node
 * of its first key, routed on by a cluster's router. While spread sets'
 * renewals are gathered (spread_send), their extends are kept to go by
 * node. */
static redislock_err gio_send(void *ctx, const rl__lockname *names, int n,
                              const char *req, const rl__request *q,
                              rl__aconn_cb cb, void *arg)
{
    rl__alock *al = ctx;
    node *nd = NULL;
    redislock_err err = node_of(al, names[0].key, names[0].keylen, &nd);

    if (err == REDISLOCK_OK && al->parking && req == NULL &&
        q->s == &rl__script_set_extend &&
        rl__parcel_keep(&al->parcels, nd,
                        slot_of_key(al, names[0].key, names[0].keylen), names,
                        n, q, cb, arg) == REDISLOCK_OK)
        return REDISLOCK_OK;
    return err == REDISLOCK_OK ? names_send(al, nd, names, n, req, q, cb, arg)
                               : err;
}

/* A kept extend that goes alone after all. */
static redislock_err pio_alone(void *ctx, void *nd, const rl__lockname *names,
                               int n, const rl__request *q, rl__aconn_cb cb,
                               void *arg)
{
    return names_send(ctx, nd, names, n, NULL, q, cb, arg);
}

/* Kept extends of one node and slot, as one renewal request. */
static redislock_err pio_send(void *ctx, void *nd, const rl__request *q,
                              rl__aconn_cb cb, void *arg)
{
    rl__alock *al = ctx;
    node *x = nd;
    redislock_err err = node_cmd(al, x);

    if (err == REDISLOCK_OK)
        err = node_send(al, x, x->cmd, q->keys[0], q->klens[0], q, cb, arg);
    return err;
}

static void gio_sweep(void *ctx, const rl__lockname *names, int n,
                      const char *token, const char *req, int64_t ttl_ms,
                      int settle)
{
    sweep_start(ctx, NULL, names, n, token, req, ttl_ms, settle);
}

/* The loop goes idle or away: what it was still sweeping goes to its
 * hand (the keeper). */
static void sweeps_hand_over(rl__alock *al)
{
    sweep *sw;

    while ((sw = al->sweeps) != NULL) {
        if (al->hand.sweep != NULL)
            al->hand.sweep(al->hand.ctx, sw->pool, sw->names, sw->n, sw->token,
                           sw->req, sw->ttl_ms);
        if (sw->out) {
            /* Freed by its callback, when the loop's end reaches it. */
            al->sweeps = sw->next;
            if (al->sweeps != NULL)
                al->sweeps->prev = NULL;
            rl__loop_disarm(al->lp, &sw->timer);
            sw->al = NULL;
        } else {
            sweep_free(sw);
        }
    }
}

void rl__alock_sweep(rl__alock *al, rl__pool *pool, const rl__lockname *names,
                     int n, const char *token, const char *req, int64_t ttl_ms)
{
    sweep_start(al, pool, names, n, token, req, ttl_ms, 0);
}

size_t rl__alock_sweeping(const rl__alock *al, int64_t *slowest_ms)
{
    const sweep *sw;
    const rl__pool *p;
    size_t n = 0;
    int64_t ms;

    *slowest_ms = 0;
    for (sw = al->sweeps; sw != NULL; sw = sw->next, n++) {
        p = sw->pool != NULL
                ? sw->pool
                : rl__topo_node_now(rl__client_topo(al->c), sw->names[0].key,
                                    sw->names[0].keylen);
        ms = p->cfg.connect_timeout_ms + p->cfg.command_timeout_ms;
        if (ms > *slowest_ms)
            *slowest_ms = ms;
    }
    return n;
}

/* The attempt t of l, refused or given up, must hold nothing on any
 * server, now or when it arrives late: a sweep on every server (sent at
 * once, tried again while a server cannot be reached). The caller's error
 * detail stays. */
static void undo_send(rl__alock *al, redislock_lock *l, const rl__try *t)
{
    rl__topo *topo = rl__client_topo(al->c);
    rl__lockname names[1 + REDISLOCK_SET_MAX];
    int n = rl__lock_names(l, names);
    size_t i;

    for (i = 0; i < topo->npools; i++)
        sweep_start(al, rl__topo_each(topo, i), names, n, t->id, t->req,
                    t->ttl_ms, 1);
}

/* What the loop cannot do yet for l, or with l under way already. */
static redislock_err check_lock(rl__alock *al, const redislock_lock *l)
{
    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if (l->client != al->c)
        return rl__err(REDISLOCK_EINVAL,
                       "the lock handle is of another client than the loop's");
    if (l->aop != NULL)
        return rl__err(REDISLOCK_EINVAL,
                       "an operation is under way on this lock handle: wait "
                       "for its callback");
    return REDISLOCK_OK;
}

static aop *op_new(rl__alock *al, redislock_lock *l, int kind, rl__alock_cb cb,
                   void *arg)
{
    aop *op = al->spare;

    /* A blocking call runs one op after another on its loop: one op's
     * memory serves the next (an aop is over 1 KiB: no calloc's clear and
     * no consolidation of the heap per call). */
    if (op != NULL) {
        al->spare = NULL;
        memset(op, 0, sizeof *op);
    } else if ((op = calloc(1, sizeof *op)) == NULL) {
        rl__err(REDISLOCK_ENOMEM, "out of memory");
        return NULL;
    }
    op->al = al;
    op->l = l;
    op->kind = kind;
    op->cb = cb;
    op->arg = arg;
    return op;
}

/* An op that has ended, or never started: kept as the spare, or freed. */
static void op_drop(aop *op)
{
    if (op->al->spare == NULL)
        op->al->spare = op;
    else
        free(op);
}

/* The operation is under way: l's, and in the loop's list. */
static void op_start(aop *op)
{
    rl__alock *al = op->al;

    op->l->aop = op;
    op->next = al->ops;
    if (al->ops != NULL)
        al->ops->prev = op;
    al->ops = op;
}

/* Sends a request of a release, extend or inspect op on c, whose reply
 * goes to cb; started once sent, freed if not. */
static redislock_err op_send(aop *op, node *n, rl__request *q, rl__aconn_cb cb)
{
    redislock_err err = rl__lock_send_async(op->l, op->al->rt, n->cmd, n->pool,
                                            NULL, q, cb, op);

    if (err != REDISLOCK_OK) {
        op_drop(op);
        return err;
    }
    op->inflight = 1;
    op_start(op);
    return REDISLOCK_OK;
}

/* Sends a request of a release, extend or inspect op to every server,
 * whose round goes to done; started once sent, freed if not. */
static redislock_err op_round(aop *op, rl__request *q, int64_t timeout_ms,
                              round_fn done)
{
    redislock_err err =
        round_send(op->al, op->l, q, NULL, timeout_ms, done, op, &op->rd);

    if (err != REDISLOCK_OK) {
        op_drop(op);
        return err;
    }
    op_start(op);
    return REDISLOCK_OK;
}

static void op_free_if_idle(aop *op)
{
    if (op->l == NULL && op->inflight == 0)
        op_drop(op);
}

/* Puts the messages m (a list) at the end of the list at pp. */
static void told_append(struct told **pp, struct told *m)
{
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = m;
}

static void told_free(struct told *m)
{
    struct told *next;

    for (; m != NULL; m = next) {
        next = m->next;
        free(m);
    }
}

static void chan_free(chan *ch)
{
    node *n = ch->n;
    chan **pp;

    for (pp = &n->chans; *pp != NULL && *pp != ch; pp = &(*pp)->next)
        ;
    if (*pp == ch)
        *pp = ch->next;
    told_free(ch->early);
    free(ch->name);
    free(ch);
}

static void chan_event(void *arg, redislock_err err, const rl__reply *r);

/* Subscribes ch on its node's subscribed connection (the shard
 * channels' own in a cluster), opened if need be. */
static redislock_err chan_subscribe(rl__alock *al, chan *ch)
{
    node *n = ch->n;
    rl__aconn **sub = ch->sharded ? &n->ssub : &n->sub;
    redislock_err err;

    if (*sub != NULL && rl__aconn_broken(*sub)) {
        rl__loop_close(al->lp, *sub);
        *sub = NULL;
    }
    if (*sub == NULL &&
        (err = rl__loop_connect(al->lp, &n->pool->cfg, sub)) != 0)
        return err;
    if ((err = rl__aconn_subscribe(*sub, ch->name, ch->len, ch->sharded,
                                   chan_event, ch)) != REDISLOCK_OK)
        return err;
    ch->on = *sub;
    ch->ended = ch->ready = 0;
    return REDISLOCK_OK;
}

/* ch, which nobody listens on, is unsubscribed (or freed, ended). */
static void chan_drop(chan *ch)
{
    if (ch->ended)
        chan_free(ch);
    else if (rl__aconn_unsubscribe(ch->on, ch->name, ch->len) == REDISLOCK_OK)
        ch->leaving = 1;
}

/* n's channel named name (len bytes), or NULL. */
static chan *chan_find(const node *n, const char *name, size_t len)
{
    chan *ch;

    for (ch = n->chans; ch != NULL; ch = ch->next)
        if (ch->len == len && memcmp(ch->name, name, len) == 0)
            return ch;
    return NULL;
}

/* Whether ch is a fair channel a private loop kept subscribed after its
 * waits (chan_leave), nobody on it and not already leaving. */
static int chan_kept(const chan *ch)
{
    return ch->fair && ch->head == NULL && !ch->leaving;
}

/* The fair channels of n that a private loop kept subscribed after their
 * waits (chan_leave), but keep: unsubscribed, so that a loop holds one at
 * most, the last handle's that waited on it. */
static void chan_drop_kept(node *n, const chan *keep)
{
    chan *ch, *next;

    for (ch = n->chans; ch != NULL; ch = next) {
        next = ch->next;
        if (ch != keep && chan_kept(ch))
            chan_drop(ch);
    }
}

/* op no longer listens on its channel; the last to go unsubscribes. */
static void chan_leave(aop *op)
{
    chan *ch = op->ch;
    aop **pp;

    if (ch == NULL)
        return;
    op->ch = NULL;
    for (pp = &ch->head; *pp != NULL && *pp != op; pp = &(*pp)->wnext)
        ;
    if (*pp == op) {
        *pp = op->wnext;
        if (ch->tail == op) {
            aop *t;

            ch->tail = NULL;
            for (t = ch->head; t != NULL; t = t->wnext)
                ch->tail = t;
        }
    }
    op->wnext = NULL;
    if (ch->head != NULL || ch->leaving)
        return;
    /* A blocking call's fair channel (its handle's own) stays subscribed
     * for the handle's next wait on this loop: no SUBSCRIBE, UNSUBSCRIBE
     * and second attempt per wait (chan_join). Messages that come while
     * nobody listens are kept for the next waiter (fair_message), which
     * ignores those of waits that are over. */
    if (ch->fair && !ch->ended && op->al->private_loop)
        return;
    chan_drop(ch);
}

/* The wake list (and channel) that a waiter on l listens to: the one of
 * the key that refused it (a set's), readers' or writers'. Malloc'd. */
static char *wake_list(const redislock_lock *l, size_t *len)
{
    return rl__helper_join(l->wait_name.base, l->wait_name.baselen,
                           l->reader ? "rwake" : "wake", NULL, len);
}

/* op listens on the wake channel of its lock (readers' or writers'),
 * its subscription asked for if there is none; *fresh says whether the
 * server has yet to confirm it. */
static redislock_err chan_join(aop *op, node *n, int *fresh)
{
    redislock_lock *l = op->l;
    int fair = op->o.fair;
    size_t len = 0;
    const char *own = fair ? rl__wait_channel(l, &len) : NULL;
    char *name =
        fair ? (own != NULL ? malloc(len + 1) : NULL) : wake_list(l, &len);
    chan *ch;
    redislock_err err = REDISLOCK_OK;

    if (name == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if (fair) {
        memcpy(name, own, len);
        name[len] = '\0';
    }
    ch = chan_find(n, name, len);
    if (fair && op->al->private_loop)
        chan_drop_kept(n, ch);
    if (ch != NULL) {
        free(name);
    } else if ((ch = calloc(1, sizeof *ch)) == NULL) {
        free(name);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    } else {
        ch->name = name;
        ch->len = len;
        ch->fair = fair;
        ch->sharded = fair && rl__wait_sharded(l);
        ch->n = n;
        ch->ended = 1;
        ch->next = n->chans;
        n->chans = ch;
    }
    /* Leaving: subscribed again once the server has confirmed. */
    if (ch->ended && !ch->leaving)
        err = chan_subscribe(op->al, ch);
    if (err != REDISLOCK_OK) {
        if (ch->head == NULL)
            chan_free(ch);
        return err;
    }
    op->ch = ch;
    op->ch_key = l->wait_name.key;
    if (ch->tail != NULL)
        ch->tail->wnext = op;
    else
        ch->head = op;
    ch->tail = op;
    told_append(&op->told, ch->early);
    ch->early = NULL;
    ch->nearly = 0;
    *fresh = !ch->ready;
    return REDISLOCK_OK;
}

/* op gives its blocker back; one still blocked (a cancel) is closed. */
static void blocker_leave(aop *op)
{
    node *n = op->bn;
    int i = op->blk - 1;

    if (i < 0)
        return;
    op->blk = 0;
    op->bn = NULL;
    n->blk_op[i] = NULL;
    if (n->blk[i] != NULL && rl__aconn_pending(n->blk[i]) > 0) {
        rl__loop_close(op->al->lp, n->blk[i]);
        n->blk[i] = NULL;
    }
}

static void leave_done(void *arg, redislock_err err, const rl__reply *r)
{
    rl__alock *al = arg;

    (void)err;
    (void)r;
    al->loose--;
}

/* The acquire op's call leaves the fair queue (leave.lua; one try, as
 * the blocking calls': a waiter that stays queued is dropped from the
 * queue once its heartbeat window passes). */
static void leave_queue(aop *op)
{
    redislock_lock *l = op->l;
    const char *args[2] = {op->a.id, op->a.req};
    size_t lens[2] = {strlen(op->a.id), strlen(op->a.req)};
    rl__request q = {
        .s = &rl__script_leave, .nargs = 2, .args = args, .lens = lens};
    node *n = NULL;

    op->a.queued = 0;
    if (node_for(op->al, l, &n) == REDISLOCK_OK &&
        rl__lock_send_async(l, op->al->rt, n->cmd, n->pool, NULL, &q,
                            leave_done, op->al) == REDISLOCK_OK)
        op->al->loose++;
}

/* The caller hears: the operation is over for l (which may start another
 * from the callback); what is still in flight is ignored when it comes. */
static void complete(aop *op, redislock_err err)
{
    rl__alock *al = op->al;
    redislock_lock *l = op->l;
    char detail[512];

    snprintf(detail, sizeof detail, "%s", redislock_errdetail());
    /* A fair waiter that gives up leaves the queue (a lock a release
     * handed it meanwhile goes on to the next waiter), as the blocking
     * calls' does. */
    if (op->kind == OP_ACQUIRE && op->a.queued)
        leave_queue(op);
    told_free(op->told);
    op->told = NULL;
    /* Detached first: what closing its blocker ends below (the BLPOP and
     * the attempt behind it) reaches an operation already over, which
     * that must not free yet. */
    l->aop = NULL;
    op->l = NULL;
    op->inflight++;
    chan_leave(op);
    blocker_leave(op);
    rl__track_leave(&op->tw);
    op->inflight--;
    /* Its round dropped before its trackers go: the connections they
     * close may have the round's requests out. */
    round_drop(op->rd);
    op->rd = NULL;
    round_track_leave(op);
    rl__agroup_drop(op->grp);
    op->grp = NULL;
    rl__loop_disarm(al->lp, &op->timer);
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        al->ops = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    if (err != REDISLOCK_OK)
        rl__err(err, "%s", detail);
    op->cb(l, err, op->arg);
    op_free_if_idle(op);
}

static void attempt(aop *op);
static int pause_blocked(aop *op, int64_t pause_ms);
static void pause_for(aop *op, int64_t pause_ms);

static void lwatch_fire(rl__loop_timer *lt);

/* Arms the next renewal, or, the watch over (a loss reported), leaves
 * it to the unwatch. */
static void loop_unwatch(redislock_lock *l);

static void lwatch_next(lwatch *w, rl__renew_step step)
{
    void (*gone)(void *) = w->gone;
    void *arg = w->gone_arg;

    if (gone != NULL) {
        loop_unwatch(w->l);
        gone(arg);
        return;
    }
    if (step == RL_RENEW_KEEP) {
        w->timer.fire = lwatch_fire;
        rl__loop_arm(w->al->lp, &w->timer, rl__watch_due(w->l->watch));
    }
}

/* The guards (replica-sync, AOF) of a write of l's lease on q, as the
 * blocking calls send them: WAIT and WAITAOF behind it on the same
 * connection; *gq keeps them for rl__lock_acks and guarded(). */
static void guard(const redislock_lock *l, rl__request *q, rl__request *gq,
                  rl__guard_acks *acks)
{
    rl__lock_guard(l, q, acks);
    *gq = *q;
}

/* Whether gq's write was followed by a guard. */
static int guarded(const rl__request *gq)
{
    return gq->wait_replicas > 0 || rl__request_waitaof(gq);
}

/* What the guards of gq's write confirmed goes to l->acks; a write they
 * did not confirm enough (a strict guard) is REDISLOCK_ENOTDURABLE. */
static redislock_err guard_outcome(redislock_lock *l, const rl__request *gq,
                                   redislock_err err, const char *what)
{
    if (!guarded(gq))
        return err;
    rl__lock_acks(l, gq, err);
    return err == REDISLOCK_OK ? rl__lock_durable(l, what) : err;
}

/* What the reply r to an extend of l (a renewal, a confirmation) says,
 * or its failure err: recorded as the server's outcome. */
static redislock_err extend_outcome(redislock_lock *l, redislock_err err,
                                    const rl__reply *r)
{
    const char *name = rl__lock_owner_script(l, &rl__script_extend)->name;
    long long n = 0;

    if (err == REDISLOCK_OK && (err = rl__reply_check(r, name)) == REDISLOCK_OK)
        err = rl__reply_owner(r, name, &n);
    rl__lock_set_outcomes(l, &err, 1);
    return err;
}

/* A renewal's reply, or its failure. */
static void lwatch_done(void *arg, redislock_err err, const rl__reply *r)
{
    lwatch *w = arg;
    redislock_lock *l = w->l;

    w->inflight--;
    if (l == NULL) {
        free(w);
        return;
    }
    err = guard_outcome(l, &w->gq, extend_outcome(l, err, r), "extend");
    rl__lock_renewed(l, err, w->sent_us);
    lwatch_next(w, rl__watch_after(l->watch, err, w->sent_us));
}

/* A renewal's round: the majority decides. */
static void lwatch_round_done(round *rd)
{
    lwatch *w = rd->arg;
    redislock_lock *l = w->l;
    char ttl[24];
    long long n = 0;
    redislock_err err;

    w->rd = NULL;
    snprintf(ttl, sizeof ttl, "%" PRId64, l->ttl_ms);
    err = l->algo->round_owner(l, &rl__script_extend, ttl, &rd->r, w->sent_us,
                               &n);
    rl__lock_renewed(l, err, w->sent_us);
    lwatch_next(w, rl__watch_after(l->watch, err, w->sent_us));
}

/* A renewal of a set's groups is answered. */
static void lwatch_group_done(void *arg, redislock_err err, long long n)
{
    lwatch *w = arg;

    (void)n;
    w->grp = NULL;
    rl__lock_renewed(w->l, err, w->sent_us);
    lwatch_next(w, rl__watch_after(w->l->watch, err, w->sent_us));
}

/* Renewals by node: a renewal that comes due takes along the other locks
 * of its node whose renewals come due within half a period, in one
 * request per hash slot in a cluster, per node elsewhere (renew.c),
 * RL_RENEW_BATCH keys at most in each: plain, fair and shared locks,
 * semaphores, and sets whose keys one request reaches (a spread set's
 * groups go by node too, spread_send). Their leases are lengthened a
 * little early, which never shortens one (extend.lua), and from then on
 * come due together, so that a node's renewals fall into a few requests
 * per period however many locks a client watches, and a node that does
 * not answer holds up no other node's. Redlock's go the same way, every
 * lock's on every server: the request goes to every server as a round,
 * and each lock's answers are read out of the servers' replies as the
 * round of its own extend would have them (rl__renew_round_answer). A
 * watch stopped while its batch is out is freed when the batch's answer
 * comes (a freed loop's connections end it). */
typedef struct batch {
    size_t n;
    int64_t sent_us;
    rl__request gq; /* the guards, as every lock's: the client's */
    rl__guard_acks acks;
    lwatch *w[];
} batch;

static void lwatch_send_one(lwatch *w, node *n);
static void lwatch_send_round(lwatch *w);

/* Sends w's renewal alone: on its node n, or, n NULL, as Redlock's
 * round of its own. */
static void send_alone(lwatch *w, node *n)
{
    if (n != NULL)
        lwatch_send_one(w, n);
    else
        lwatch_send_round(w);
}

/* The hash slot of l's key where a request holds one slot's keys only. */
static unsigned slot_of(const rl__alock *al, const redislock_lock *l)
{
    return slot_of_key(al, l->key, l->keylen);
}

/* Whether x's renewal goes along with w's (sent at now): idle, renewed
 * alike, of the same node (Redlock's: of every server, n NULL), due
 * within half a period, and its watch (caps, validity) would send one
 * now. */
static int batch_joins(const lwatch *x, const lwatch *w, int64_t now)
{
    const redislock_lock *l = x->l;

    return x != w && l != NULL && x->n == w->n && x->inflight == 0 &&
           x->rd == NULL && x->grp == NULL && x->gone == NULL &&
           l->algo->every == w->l->algo->every &&
           l->algo->groups == w->l->algo->groups &&
           rl__watch_due(l->watch) <= now + l->ttl_ms * 1000 / 6 &&
           rl__watch_before(l->watch) == RL_RENEW_SEND;
}

/* The renewals that go with w's, w first, into *out (*n of them,
 * malloc'ed); 0 when out of memory. */
static int batch_gather(lwatch *w, int64_t now, lwatch ***out, size_t *n)
{
    size_t cap = 16;
    lwatch **v = malloc(cap * sizeof *v), **more, *x;

    if (v == NULL)
        return 0;
    *n = 1;
    v[0] = w;
    for (x = w->al->watches; x != NULL; x = x->next) {
        if (!batch_joins(x, w, now))
            continue;
        if (*n == cap) {
            if ((more = realloc(v, 2 * cap * sizeof *v)) == NULL)
                break;
            v = more;
            cap *= 2;
        }
        v[(*n)++] = x;
    }
    *out = v;
    return 1;
}

static int by_slot(const void *a, const void *b)
{
    unsigned x = (*(lwatch *const *)a)->slot, y = (*(lwatch *const *)b)->slot;

    return x < y ? -1 : x > y;
}

/* The verdict err on the renewal of b's i-th lock goes to its watch. */
static void batch_answered(batch *b, size_t i, redislock_err err)
{
    lwatch *w = b->w[i];

    rl__lock_renewed(w->l, err, b->sent_us);
    lwatch_next(w, rl__watch_after(w->l->watch, err, b->sent_us));
}

/* Takes b's i-th watch off the batch: 0 when it needs nothing more (it
 * was stopped meanwhile, and freed), or the batch was not answered whole
 * (its renewal goes again alone, or, being stopped, fails). */
static int batch_take(batch *b, size_t i, int whole, node *n)
{
    lwatch *w = b->w[i];

    w->inflight--;
    if (w->l == NULL) {
        free(w);
        return 0;
    }
    if (whole)
        return 1;
    if (w->gone == NULL)
        send_alone(w, n);
    else
        batch_answered(b, i,
                       rl__err(REDISLOCK_ESERVER,
                               "renew: the renewals' request was refused "
                               "as a whole"));
    return 0;
}

/* Each lock's answer in r (or the request's failure err) goes to its
 * watch; a reply that does not answer each lock (an error of the script
 * as a whole) sends each renewal alone. */
static void batch_done(void *arg, redislock_err err, const rl__reply *r)
{
    batch *b = arg;
    int whole = err != REDISLOCK_OK || rl__renew_answered(r, b->n);
    size_t i;

    for (i = 0; i < b->n; i++) {
        redislock_lock *l = b->w[i]->l;
        redislock_err e = err;

        if (!batch_take(b, i, whole, b->w[i]->n))
            continue;
        if (e == REDISLOCK_OK)
            e = extend_outcome(l, e, rl__renew_answer(r, i));
        batch_answered(b, i, guard_outcome(l, &b->gq, e, "extend"));
    }
    free(b);
}

/* Redlock's batch is answered: each lock's majority, from its answers;
 * a server that refused the request as a whole (an error reply, such as
 * an ACL's refusal of one key) sends each renewal again alone. */
static void batch_round_done(round *rd)
{
    batch *b = rd->arg;
    int whole = rl__renew_round_answered(&rd->r, b->n);
    size_t i;

    for (i = 0; i < b->n; i++) {
        redislock_lock *l = b->w[i]->l;
        rl__round one;
        char ttl[24];
        long long n = 0;

        if (!batch_take(b, i, whole, NULL))
            continue;
        rl__renew_round_answer(&rd->r, i, &one);
        snprintf(ttl, sizeof ttl, "%" PRId64, l->ttl_ms);
        batch_answered(b, i,
                       l->algo->round_owner(l, &rl__script_extend, ttl, &one,
                                            b->sent_us, &n));
    }
    free(b);
}

/* Sends b's request q: to node n, with the client's guards, or, n NULL,
 * to every server as a round, each given the shortest of its locks'
 * server timeouts. */
static redislock_err batch_out(rl__alock *al, node *n, batch *b, rl__request *q)
{
    int64_t timeout = INT64_MAX, t;
    round *rd = NULL;
    redislock_err err;
    size_t i;

    if (n != NULL) {
        guard(b->w[0]->l, q, &b->gq, &b->acks);
        return node_send(al, n, n->cmd, q->keys[0], q->klens[0], q, batch_done,
                         b);
    }
    for (i = 0; i < b->n; i++) {
        t = rl__client_server_timeout(al->c, b->w[i]->l->ttl_ms);
        timeout = t < timeout ? t : timeout;
    }
    if ((err = round_send(al, NULL, q, NULL, timeout, batch_round_done, b,
                          &rd)) == REDISLOCK_OK)
        rd->raw = 1;
    return err;
}

/* Sends the renewals of the k watches v (k > 1, one slot, node n; n
 * NULL: Redlock's) as one request; 0 when it could not be sent. */
static int batch_one(rl__alock *al, node *n, lwatch **v, size_t k, int64_t now)
{
    batch *b = malloc(sizeof *b + k * sizeof *b->w);
    redislock_lock **ls = malloc(k * sizeof *ls);
    rl__renew_req rq;
    redislock_err err = REDISLOCK_ENOMEM;
    size_t i;

    if (b != NULL && ls != NULL) {
        for (i = 0; i < k; i++)
            ls[i] = v[i]->l;
        err = rl__renew_request(ls, k, &rq);
    }
    free(ls);
    if (err == REDISLOCK_OK) {
        memset(b, 0, sizeof *b);
        b->n = k;
        b->sent_us = now;
        memcpy(b->w, v, k * sizeof *v);
        err = batch_out(al, n, b, &rq.q);
        rl__renew_free(&rq);
    }
    if (err != REDISLOCK_OK) {
        free(b);
        return 0;
    }
    for (i = 0; i < k; i++) {
        v[i]->inflight++;
        v[i]->sent_us = now;
    }
    return 1;
}

/* Sends w's renewal (due; its node n, its connection ready, or n NULL:
 * Redlock's, to every server) with those that go with it: a request per
 * slot, RL_RENEW_BATCH keys at most in each; one that goes alone, or whose
 * request could not be sent, as before. */
static void batch_send(lwatch *w, node *n)
{
    rl__alock *al = w->al;
    int64_t now = rl__now_us();
    lwatch **v;
    size_t k, i, j, end, keys;

    if (!batch_gather(w, now, &v, &k)) {
        send_alone(w, n);
        return;
    }
    for (i = 1; i < k; i++)
        rl__loop_disarm(al->lp, &v[i]->timer);
    if (k > 2 && rl__topo_cluster(rl__client_topo(al->c)))
        qsort(v, k, sizeof *v, by_slot);
    for (i = 0; i < k; i = end) {
        keys = rl__renew_keys(v[i]->l);
        for (end = i + 1; end < k && v[end]->slot == v[i]->slot &&
                          keys + rl__renew_keys(v[end]->l) <= RL_RENEW_BATCH;
             end++)
            keys += rl__renew_keys(v[end]->l);
        if (end - i > 1 && batch_one(al, n, v + i, end - i, now))
            continue;
        for (j = i; j < end; j++)
            send_alone(v[j], n);
    }
    free(v);
}

/* The extend of l for its TTL, its arguments (and the TTL's text) in a. */
static rl__request extend_req(const redislock_lock *l, rl__owner_args *a)
{
    rl__lock_extend_args(l, l->ttl_ms, a);
    return (rl__request){.s = rl__lock_owner_script(l, &rl__script_extend),
                         .nargs = RL_OWNER_NARGS,
                         .args = a->args,
                         .lens = a->lens};
}

/* Sends w's renewal alone on n's request connection (n: its lock's node,
 * its connection ready), or, not sent, counts it as failed. */
static void lwatch_send_one(lwatch *w, node *n)
{
    redislock_lock *l = w->l;
    rl__owner_args a;
    rl__request q = extend_req(l, &a);
    redislock_err err;

    w->sent_us = rl__now_us();
    guard(l, &q, &w->gq, &w->acks);
    if ((err = node_cmd(w->al, n)) == REDISLOCK_OK &&
        (err = rl__lock_send_async(l, w->al->rt, n->cmd, n->pool, NULL, &q,
                                   lwatch_done, w)) == REDISLOCK_OK) {
        w->inflight++;
        return;
    }
    rl__lock_renewed(l, err, w->sent_us);
    lwatch_next(w, rl__watch_after(l->watch, err, w->sent_us));
}

/* Sends spread set watch w's renewal to its groups (agroup.c), its
 * lease counted from now_us; or, not sent, counts it as failed. */
static void lwatch_send_groups(lwatch *w, int64_t now_us)
{
    redislock_lock *l = w->l;
    rl__owner_args a;
    redislock_err err;

    extend_req(l, &a);
    w->sent_us = now_us;
    if ((err = rl__agroup_owner(&w->al->gio, l, &rl__script_extend, a.ttl,
                                lwatch_group_done, w, &w->grp)) == REDISLOCK_OK)
        return;
    rl__lock_renewed(l, err, w->sent_us);
    lwatch_next(w, rl__watch_after(l->watch, err, w->sent_us));
}

/* A spread set's renewal is due: with the other spread sets' due within
 * half a period (batch_joins), each to its groups, their groups' extends
 * kept as they are sent (gio_send) and then sent by node and slot
 * (rl__parcels_send): the sets' renewals fall into a few requests per
 * node a period, as the other kinds' do. */
static void spread_send(lwatch *w)
{
    rl__alock *al = w->al;
    int64_t now = rl__now_us();
    lwatch **v;
    size_t k, i;

    if (!batch_gather(w, now, &v, &k)) {
        lwatch_send_groups(w, now);
        return;
    }
    al->parking = 1;
    for (i = 0; i < k; i++) {
        if (i > 0)
            rl__loop_disarm(al->lp, &v[i]->timer);
        /* One lease start for all, as a batch's (before any is sent). */
        lwatch_send_groups(v[i], now);
    }
    al->parking = 0;
    free(v);
    rl__parcels_send(&al->parcels, &al->pio);
}

/* A renewal is due: sent on the node's request connection (with the
 * node's others due soon), to every server, or to a set's groups (with
 * the other spread sets' due soon; the same decisions as the keeper's:
 * caps, retries, the loss). */
static void lwatch_fire(rl__loop_timer *lt)
{
    lwatch *w = (lwatch *)lt;
    redislock_lock *l = w->l;
    rl__renew_step step = rl__watch_before(l->watch);
    node *n = NULL;
    redislock_err err;

    if (step != RL_RENEW_SEND) {
        lwatch_next(w, step);
        return;
    }
    if (!l->algo->every && !l->algo->groups) {
        if ((err = node_for(w->al, l, &n)) == REDISLOCK_OK) {
            w->n = n;
            w->slot = slot_of(w->al, l);
            batch_send(w, n);
            return;
        }
        w->sent_us = rl__now_us();
        rl__lock_renewed(l, err, w->sent_us);
        lwatch_next(w, rl__watch_after(l->watch, err, w->sent_us));
        return;
    }
    if (!l->algo->groups) {
        /* Redlock's: with the others due, to every server. */
        batch_send(w, NULL);
        return;
    }
    spread_send(w);
}

/* Sends Redlock watch w's renewal alone, a round of its own; or, not
 * sent, counts it as failed. */
static void lwatch_send_round(lwatch *w)
{
    redislock_lock *l = w->l;
    rl__owner_args a;
    rl__request q = extend_req(l, &a);
    redislock_err err;

    w->sent_us = rl__now_us();
    if ((err = round_send(w->al, l, &q, NULL,
                          rl__client_server_timeout(l->client, l->ttl_ms),
                          lwatch_round_done, w, &w->rd)) == REDISLOCK_OK)
        return;
    rl__lock_renewed(l, err, w->sent_us);
    lwatch_next(w, rl__watch_after(l->watch, err, w->sent_us));
}

/* Renewals of l (its watch made) on this loop, from its watch's due time. */
static redislock_err lwatch_link(rl__alock *al, redislock_lock *l)
{
    lwatch *w = calloc(1, sizeof *w);

    if (w == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    w->al = al;
    w->l = l;
    /* Its node as the topology stands: others' renewals may take it along
     * before its own first comes due. */
    if (!l->algo->every && !l->algo->groups &&
        node_of(al, l->key, l->keylen, &w->n) != REDISLOCK_OK)
        w->n = NULL;
    w->slot = slot_of(al, l);
    l->lwatch = w;
    w->next = al->watches;
    if (al->watches != NULL)
        al->watches->prev = w;
    al->watches = w;
    lwatch_next(w, RL_RENEW_KEEP);
    return REDISLOCK_OK;
}

/* Starts the loop's renewals of l, just taken by a request sent at
 * sent_us, as o asks (watchdog.c's watch, driven here): the acquire's
 * watch hook (rl__acq), so that a hand-off's short lease is extended on
 * the loop too (its one renewal due at first_us). */
static redislock_err lwatch_start(void *drv, redislock_lock *l,
                                  const redislock_acquire_options *o,
                                  int64_t sent_us, int64_t first_us)
{
    redislock_err err = rl__acq_watch_loop(l, o, sent_us, first_us, 0);

    if (err == REDISLOCK_OK && (err = lwatch_link(drv, l)) != REDISLOCK_OK)
        rl__lock_unwatch(l);
    else if (err == REDISLOCK_OK)
        l->lwatch_stop = loop_unwatch;
    return err;
}

/* A private loop's watch hook: the lock goes to the keeper. */
static redislock_err private_keep(void *drv, redislock_lock *l,
                                  const redislock_acquire_options *o,
                                  int64_t sent_us, int64_t first_us)
{
    rl__alock *al = drv;

    if (al->hand.keep == NULL)
        return rl__err(REDISLOCK_EINVAL, "this loop cannot hand a watched "
                                         "lock over");
    return al->hand.keep(al->hand.ctx, l, o, sent_us, first_us);
}

redislock_err rl__alock_arm(rl__alock *al, rl__loop_timer *t, int64_t at_us)
{
    return rl__loop_arm(al->lp, t, at_us);
}

void rl__alock_disarm(rl__alock *al, rl__loop_timer *t)
{
    rl__loop_disarm(al->lp, t);
}

/* p leaves its loop's list of pauses. */
static void pause_unlink(rl__alock_pause *p)
{
    rl__alock_pause **at = &p->al->pauses;

    while (*at != NULL && *at != p)
        at = &(*at)->next;
    if (*at != NULL)
        *at = p->next;
}

static void pause_due(rl__loop_timer *t)
{
    rl__alock_pause *p = (rl__alock_pause *)t;

    pause_unlink(p);
    p->fire(p);
}

void rl__alock_pause_end(rl__alock_pause *p)
{
    rl__loop_disarm(p->al->lp, &p->tm);
    pause_unlink(p);
}

redislock_err rl__alock_pause_arm(rl__alock *al, rl__alock_pause *p,
                                  int64_t at_us)
{
    redislock_err err;

    p->tm.fire = pause_due;
    p->al = al;
    if ((err = rl__loop_arm(al->lp, &p->tm, at_us)) != REDISLOCK_OK)
        return err;
    p->next = al->pauses;
    al->pauses = p;
    return REDISLOCK_OK;
}

redislock_err rl__alock_keep(rl__alock *al, redislock_lock *l)
{
    return lwatch_link(al, l);
}

void rl__alock_unkeep(rl__alock *al, redislock_lock *l, void (*gone)(void *),
                      void *arg)
{
    lwatch *w = l->lwatch;

    if (w != NULL && (w->inflight > 0 || w->rd != NULL || w->grp != NULL)) {
        /* Its answer may still move the lease, as a renewal finished
         * before the release: it comes first. */
        rl__loop_disarm(al->lp, &w->timer);
        w->gone = gone;
        w->gone_arg = arg;
        return;
    }
    loop_unwatch(l);
    gone(arg);
}

void rl__alock_unkeep_all(rl__alock *al)
{
    lwatch *w;
    void (*gone)(void *);
    void *arg;

    while ((w = al->watches) != NULL) {
        /* One being stopped is stopped now: its sender waits no more. */
        gone = w->gone;
        arg = w->gone_arg;
        w->gone = NULL;
        loop_unwatch(w->l);
        if (gone != NULL)
            gone(arg);
    }
}

void rl__alock_hand_to(rl__alock *al, const rl__alock_hand *h)
{
    al->hand = *h;
}

/* Stops the loop's renewals of l (rl__lock_unwatch, through
 * l->lwatch_stop, or the keeper's rl__alock_unkeep). */
static void loop_unwatch(redislock_lock *l)
{
    lwatch *w = l->lwatch;
    rl__alock *al;

    if (w == NULL)
        return;
    al = w->al;
    rl__loop_disarm(al->lp, &w->timer);
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        al->watches = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    l->lwatch = NULL;
    w->l = NULL;
    round_drop(w->rd);
    w->rd = NULL;
    rl__agroup_drop(w->grp);
    w->grp = NULL;
    /* The watch itself goes with rl__lock_unwatch; a renewal out is
     * ignored when it comes. */
    if (w->inflight == 0)
        free(w);
}

/* The lock taken, its lease confirmed if it had to be (or err): with
 * watchdog, or a hand-off's short lease, the loop renews it (the watch
 * hook); the acquire ends, or on a failure may wait on or try again. */
static void acquire_kept(aop *op, redislock_err err)
{
    redislock_lock *l = op->l;
    int64_t pause = 0;

    if (err == REDISLOCK_OK)
        err = rl__acq_keep(l, &op->o, &op->a, op->sent_us);
    if (err != REDISLOCK_OK &&
        rl__acq_after_finish(l, &op->a, &err, &pause) == RL_NEXT_PAUSE) {
        pause_for(op, pause);
        return;
    }
    if (err != REDISLOCK_OK && rl__acq_again(&op->a, &err)) {
        attempt(op);
        return;
    }
    rl__acq_end(l, &op->a, err);
    complete(op, err);
}

/* The confirming extend's reply, or its failure (as an extend's). */
static void confirm_done(void *arg, redislock_err err, const rl__reply *r)
{
    aop *op = arg;
    redislock_lock *l = op->l;

    op->inflight--;
    if (l == NULL) {
        op_free_if_idle(op);
        return;
    }
    op->confirming = 0;
    if ((err = extend_outcome(l, err, r)) == REDISLOCK_OK)
        rl__lock_set_validity(l, op->confirm_us, l->ttl_ms);
    acquire_kept(op, rl__acq_confirmed(l, &op->a, err));
}

/* Confirms the lease just taken with an extend of its TTL (the lock's
 * one node: only a single server's attempt goes behind a BLPOP). */
static redislock_err confirm_send(aop *op)
{
    redislock_lock *l = op->l;
    rl__owner_args a;
    rl__request q = {.s = rl__lock_owner_script(l, &rl__script_extend),
                     .nargs = RL_OWNER_NARGS,
                     .args = a.args,
                     .lens = a.lens};
    node *n = NULL;
    redislock_err err = node_for(op->al, l, &n);

    if (err != REDISLOCK_OK)
        return err;
    rl__lock_extend_args(l, l->ttl_ms, &a);
    op->confirm_us = rl__now_us();
    err = rl__lock_send_async(l, op->al->rt, n->cmd, n->pool, NULL, &q,
                              confirm_done, op);
    if (err != REDISLOCK_OK)
        return err;
    op->inflight++;
    op->confirming = 1;
    return REDISLOCK_OK;
}

/* The acquire ends with err: taken (the handle then holds the lock), or
 * not. A lease an attempt behind a BLPOP took is confirmed first when
 * the waiter read it late, as the blocking calls do. */
static void acquire_done(aop *op, redislock_err err)
{
    redislock_lock *l = op->l;
    redislock_err sent;

    if (err == REDISLOCK_OK &&
        (err = rl__acq_take(l, &op->o, &op->a, op->sent_us)) == REDISLOCK_OK &&
        rl__acq_confirm_due(l, &op->a)) {
        if ((sent = confirm_send(op)) == REDISLOCK_OK)
            return;
        err = rl__acq_confirmed(l, &op->a, sent);
    }
    acquire_kept(op, err);
}

/* A paused waiter's pause ends with res: woken, or its time ran out. */
static void resume(aop *op, rl__wait_result res)
{
    op->paused = 0;
    op->trk_pause = 0;
    rl__loop_disarm(op->al->lp, &op->timer);
    if (rl__acq_after_pause(op->l, &op->a, res, op->sent_us))
        acquire_done(op, REDISLOCK_OK);
    else
        attempt(op);
}

static void pause_over(rl__loop_timer *lt)
{
    resume((aop *)lt, RL_WAIT_TIMEOUT);
}

/* Wakes the channel's longest-paused waiter (a message), or with all set
 * every paused one (the subscription confirmed: a release may have come
 * between their attempts and it). */
static void chan_wake(chan *ch, int all)
{
    aop *op;

    for (op = ch->head; op != NULL; op = op->wnext)
        op->recheck = op->paused;
    for (;;) {
        for (op = ch->head; op != NULL && !op->recheck; op = op->wnext)
            ;
        if (op == NULL) {
            /* Nobody paused: the release came while the waiters' attempts
             * were out, which may have run before it and been refused.
             * The next to pause tries again at once (pause_for). */
            if (!all)
                ch->missed = 1;
            return;
        }
        op->recheck = 0;
        resume(op, RL_WAIT_WOKEN);
        if (!all)
            return;
    }
}

/* A paused fair waiter reads what its channel told it, oldest first: a
 * hand-off to it ends its pause; a message that does not parse ends its
 * acquire (REDISLOCK_EPROTOCOL), as a blocked waiter's. */
static void fair_heard(aop *op)
{
    struct told *m;
    rl__wait_result res = RL_WAIT_TIMEOUT;
    redislock_err err = REDISLOCK_OK;

    while (op->paused && (m = op->told) != NULL) {
        op->told = m->next;
        err = rl__wait_told(op->l, op->a.req, m->msg, &res);
        free(m);
        if (err != REDISLOCK_OK) {
            op->paused = 0;
            rl__acq_end(op->l, &op->a, err);
            complete(op, err);
            return;
        }
        if (res == RL_WAIT_HANDOFF) {
            resume(op, RL_WAIT_HANDOFF);
            return;
        }
    }
}

/* A message on a fair waiter's channel: kept until its next pause, read
 * now if it is paused. */
static void fair_message(chan *ch, const rl__reply *r)
{
    aop *op = ch->head;
    struct told *m;

    if (r->type != REDIS_REPLY_STRING ||
        (m = malloc(sizeof *m + r->len + 1)) == NULL)
        return;
    memcpy(m->msg, r->str, r->len);
    m->msg[r->len] = '\0';
    m->next = NULL;
    if (op == NULL) {
        /* Kept for the next waiter, the latest few: older ones name
         * waits that are over, which it ignores (rl__wait_told). */
        if (ch->nearly == 8) {
            struct told *old = ch->early;

            ch->early = old->next;
            free(old);
            ch->nearly--;
        }
        told_append(&ch->early, m);
        ch->nearly++;
        return;
    }
    told_append(&op->told, m);
    fair_heard(op);
}

/* Every paused waiter on ch, whose subscription has ended, tries again
 * now. Unlike chan_wake's walk of the list, the waiters are taken first:
 * the last to leave an ended channel frees it. */
static void chan_retry(chan *ch)
{
    aop *op, **v;
    size_t n = 0, i;

    for (op = ch->head; op != NULL; op = op->wnext)
        n += op->paused;
    if (n == 0 || (v = malloc(n * sizeof *v)) == NULL)
        return;
    for (i = 0, op = ch->head; op != NULL; op = op->wnext)
        if (op->paused)
            v[i++] = op;
    for (i = 0; i < n; i++)
        resume(v[i], RL_WAIT_WOKEN);
    free(v);
}

static void chan_event(void *arg, redislock_err err, const rl__reply *r)
{
    chan *ch = arg;

    if (err == REDISLOCK_OK && r == NULL) {
        ch->ready = 1;
        chan_wake(ch, 1);
        return;
    }
    if (err == REDISLOCK_OK) {
        if (ch->fair)
            fair_message(ch, r);
        else
            chan_wake(ch, 0);
        return;
    }
    /* The subscription's end: a fair waiter (whose hand-off could come
     * while it is not subscribed) tries again at once, as a blocked one
     * does. So do the others when the server or the connection ended it
     * (a dead master, a slot moved): a release may have gone unheard, and
     * the next may be on another node, where their attempts find it. */
    ch->ready = 0;
    ch->ended = 1;
    ch->on = NULL;
    if (ch->fair && !ch->leaving && ch->head != NULL && ch->head->paused) {
        resume(ch->head, RL_WAIT_WOKEN);
        return;
    }
    if (!ch->fair && !ch->leaving && err != REDISLOCK_ECANCELED &&
        ch->head != NULL) {
        chan_retry(ch);
        return;
    }
    if (ch->leaving) {
        ch->leaving = 0;
        if (ch->head != NULL && err == REDISLOCK_ECANCELED &&
            chan_subscribe(ch->head->al, ch) == REDISLOCK_OK)
            return;
    }
    if (ch->head == NULL)
        chan_free(ch);
}

/* Whether key (the one a set waits behind) is one of names. */
static int names_hold(const rl__lockname *names, int n, const rl__lockname *key)
{
    int i;

    for (i = 0; i < n; i++)
        if (names[i].keylen == key->keylen &&
            memcmp(names[i].key, key->key, key->keylen) == 0)
            return 1;
    return 0;
}

/* A spread set's tracked read out: its group's reply goes to the
 * chain's cb after op has heard whether the read was sent on elsewhere
 * (a cluster's redirection, a script loaded first: read untracked). op
 * is held (inflight) until then: a group's request may outlive the
 * attempt it was sent for. */
typedef struct tsend {
    aop *op;
    rl__aconn_cb cb;
    void *arg;
    int resent;
} tsend;

static void tsend_reply(void *arg, redislock_err err, const rl__reply *r)
{
    tsend *ts = arg;
    aop *op = ts->op;

    if (ts->resent)
        op->resent = 1;
    ts->cb(ts->arg, err, r);
    free(ts);
    op->inflight--;
    op_free_if_idle(op);
}

/* A spread set's attempt's way to a group's node (op->tio): the group
 * that holds the key op waits behind goes on that node's tracking
 * connection, where op listens there and the notices are ready, so its
 * read is tracked (unless sent on: tsend_reply); every other request as
 * gio_send sends it. */
static redislock_err tio_send(void *ctx, const rl__lockname *names, int n,
                              const char *req, const rl__request *q,
                              rl__aconn_cb cb, void *arg)
{
    aop *op = ctx;
    rl__alock *al = op->al;
    node *nd = NULL;
    rl__aconn *c = NULL;
    rl__request tq;
    tsend *ts;
    redislock_err err;

    if (op->l == NULL || q->s != &rl__script_set_acquire || op->tw.t == NULL ||
        !names_hold(names, n, &op->l->wait_name) ||
        node_of(al, names[0].key, names[0].keylen, &nd) != REDISLOCK_OK ||
        nd->trk != op->tw.t || !rl__track_ready(nd->trk) ||
        rl__track_conn(nd->trk, &c) != REDISLOCK_OK ||
        (ts = malloc(sizeof *ts)) == NULL)
        return gio_send(al, names, n, req, q, cb, arg);
    *ts = (tsend){op, cb, arg, 0};
    tq = *q;
    tq.resent = &ts->resent;
    err = rl__lock_names_send_async(al->rt, c, nd->pool, names, n, req, &tq,
                                    tsend_reply, ts);
    if (err != REDISLOCK_OK) {
        free(ts);
        return err;
    }
    op->inflight++;
    op->trk_names = names;
    op->trk_n = n;
    op->trk_sent = nd->trk;
    op->trk_missed = 0;
    return REDISLOCK_OK;
}

static void tio_sweep(void *ctx, const rl__lockname *names, int n,
                      const char *token, const char *req, int64_t ttl_ms,
                      int settle)
{
    gio_sweep(((aop *)ctx)->al, names, n, token, req, ttl_ms, settle);
}

/* Whether op's pauses behind a holder whose release wakes nobody can end
 * at the server's notice of the key's change (track.h) rather than
 * poll: a waiter on one node or a spread set's (a quorum's has
 * round_track_*), without a way of pausing of the
 * caller's, and not waiting out a failover. A fair one too: its pause stays
 * capped at its heartbeat, and a hand-off to it, a write of the key, is a
 * notice as well as its message. In a cluster an attempt sent again elsewhere
 * (MOVED, ASK, TRYAGAIN) was read untracked: attempt_done says so. */
static int trackable(const aop *op)
{
    const redislock_lock *l = op->l;

    return l->holder_silent && l->algo->wakes && !l->algo->every &&
           !op->a.strategy && op->o.retry_fn == NULL && !op->a.blind;
}

/* The key op waits behind changed, or may have, or tracking has just
 * become ready: a pause behind the holder ends (its notice's, or the
 * poll's before its reads were tracked); a notice while its attempt is
 * out is kept for its next pause. */
static void track_changed(rl__track_wait *w)
{
    aop *op = (aop *)(void *)((char *)w - offsetof(aop, tw));

    if (op->paused && (op->trk_pause || !op->a.tracked))
        resume(op, RL_WAIT_WOKEN);
    else
        op->trk_missed = 1;
}

/*
 * A Redlock waiter behind a holder: each release deletes the key on
 * every server and wakes nobody, so rather than try again after a random
 * pause it waits on every server's notices of the key (track.h): its
 * attempt's read goes tracked on each server (round_track_via), and once
 * a round every server answered is refused with each refusing server's
 * read tracked, it pauses until the key changes on one of the servers
 * that refused it, or the holder's lease ends. Its own grants and their
 * undoing change the key on the others: their notices are not waited
 * for. The next attempt goes after a random pause of up to
 * RL_TRACKED_JITTER_MS, so that the waiters a release wakes together do
 * not split the servers' votes again and again (the algorithm's random
 * retry, shortened). A round that was not all answered, or whose reads
 * were not all tracked (a server without tracking, a script loaded
 * first), pauses as before.
 */
#define RL_TRACKED_JITTER_MS 5

/* A pause behind a tracked read, of pause_ms, that a notice ends: 1
 * when it is under way. */
static int track_pause_arm(aop *op, int64_t pause_ms)
{
    op->timer.fire = pause_over;
    if (rl__loop_arm(op->al->lp, &op->timer, rl__now_us() + pause_ms * 1000) !=
        REDISLOCK_OK)
        return 0;
    op->paused = 1;
    op->trk_pause = 1;
    return 1;
}

typedef struct rtrack {
    rl__track_wait w; /* first: the tracker hands it back */
    aop *op;
    int sent;  /* the last attempt's read here was tracked */
    int watch; /* this server refused the last attempt */
} rtrack;

/* Whether op may wait on the servers' notices: a Redlock waiter without
 * a way of pausing of the caller's. */
static int round_trackable(const aop *op)
{
    return op->l->algo->every && !op->a.strategy && op->o.retry_fn == NULL &&
           !op->a.blind;
}

/* Whether every server's notices are ready for op's reads. */
static int round_track_ready(const aop *op)
{
    size_t i;

    for (i = 0; i < op->nrt; i++)
        if (op->rtw[i].w.t == NULL || !rl__track_ready(op->rtw[i].w.t))
            return 0;
    return 1;
}

/* Random, up to RL_TRACKED_JITTER_MS. */
static int64_t round_track_jitter(void)
{
    return (int64_t)(rl__jitter_rand() % (RL_TRACKED_JITTER_MS + 1));
}

static void round_track_jitter_over(rl__loop_timer *lt)
{
    resume((aop *)lt, RL_WAIT_WOKEN);
}

/* Server x's key changed, or may have, or its notices became ready. */
static void round_track_changed(rl__track_wait *w)
{
    rtrack *x = (rtrack *)w;
    aop *op = x->op;

    if (op->paused && op->trk_pause) {
        if (!x->watch)
            return;
        /* Where the holder refused it: try again shortly. */
        op->trk_pause = 0;
        op->timer.fire = round_track_jitter_over;
        if (rl__loop_arm(op->al->lp, &op->timer,
                         rl__now_us() + round_track_jitter() * 1000) !=
            REDISLOCK_OK)
            resume(op, RL_WAIT_WOKEN);
        return;
    }
    if (op->paused) {
        /* A poll's pause: once every server's notices are ready, the
         * next attempt goes now, tracked. */
        if (!op->a.tracked && op->timer.fire == pause_over &&
            round_track_ready(op))
            resume(op, RL_WAIT_WOKEN);
        return;
    }
    /* Its attempt is out: its next pause is a short one. */
    if (x->watch)
        op->trk_missed = 1;
}

/* op joins every server's notices of its key; 0 if it cannot. */
static int round_track_join(aop *op)
{
    rl__alock *al = op->al;
    rl__topo *topo = rl__client_topo(al->c);
    node *n = NULL;
    size_t i;

    if (op->rtw != NULL)
        return 1;
    if ((op->rtw = calloc(topo->npools, sizeof *op->rtw)) == NULL)
        return 0;
    op->nrt = topo->npools;
    for (i = 0; i < op->nrt; i++) {
        rtrack *x = &op->rtw[i];

        x->op = op;
        x->w.key = op->l->key;
        x->w.keylen = op->l->keylen;
        x->w.changed = round_track_changed;
        if (node_at(al, rl__topo_each(topo, i), &n) == REDISLOCK_OK &&
            (n->trk != NULL ||
             rl__track_new(al->lp, &n->pool->cfg, &n->trk) == REDISLOCK_OK))
            rl__track_join(n->trk, &x->w);
    }
    return 1;
}

static void round_track_leave(aop *op)
{
    size_t i;

    for (i = 0; i < op->nrt; i++)
        rl__track_leave(&op->rtw[i].w);
    free(op->rtw);
    op->rtw = NULL;
    op->nrt = 0;
}

/* The connection of op's attempt at server i (node n): tracked where the
 * server's notices are ready. */
static rl__aconn *round_track_via(void *arg, size_t i, node *n)
{
    aop *op = arg;
    rtrack *x = &op->rtw[i];
    rl__aconn *c = n->cmd;

    x->sent = x->w.t != NULL && x->w.t == n->trk && rl__track_ready(n->trk) &&
              rl__track_conn(n->trk, &c) == REDISLOCK_OK;
    return x->sent ? c : n->cmd;
}

/* op's attempt round r was refused (err): whether its pause may wait on
 * the notices (a.tracked), and which servers' notices end it. */
static void round_track_outcome(aop *op, const rl__round *r, redislock_err err)
{
    redislock_err oc[RL_MAX_QUORUM];
    size_t i, n = redislock_outcomes(op->l, oc, RL_MAX_QUORUM);
    int tracked = err == REDISLOCK_EHELD && n == op->nrt && !op->resent;

    for (i = 0; i < op->nrt; i++) {
        op->rtw[i].watch = i < n && oc[i] == REDISLOCK_EHELD;
        if (r->reply[i] == NULL || (op->rtw[i].watch && !op->rtw[i].sent))
            tracked = 0;
    }
    op->a.tracked = tracked;
}

/* A Redlock waiter's pause (track_pause's): 1 when it waits on the
 * notices; 0 for an ordinary one of *pause_ms, shortened to a random few
 * milliseconds where a notice came while the attempt was out, or where
 * the notices have just become ready for its next attempt. */
static int round_track_pause(aop *op, int64_t *pause_ms)
{
    if (!round_trackable(op) || !round_track_join(op))
        return 0;
    if (!op->a.tracked) {
        if (round_track_ready(op) && !op->resent)
            *pause_ms = round_track_jitter();
        return 0;
    }
    if (op->trk_missed || *pause_ms <= 0) {
        op->trk_missed = 0;
        *pause_ms = round_track_jitter();
        return 0;
    }
    return track_pause_arm(op, *pause_ms);
}

/*
 * A pause behind a holder whose release wakes nobody. After an attempt
 * whose read was tracked, the notice of the key's change ends it (or the
 * holder's lease, the pause rl__acq_after_attempt chose); one that came
 * while the attempt was out makes it try again at once. Before such an
 * attempt, the waiter joins its node's notices and its next attempt is
 * tracked: at once when they are ready, else after this pause, a poll's.
 * Returns 1 when the pause is under way; 0 for an ordinary one, of
 * *pause_ms (0: at once).
 */
static int track_pause(aop *op, int64_t *pause_ms)
{
    rl__alock *al = op->al;
    redislock_lock *l = op->l;
    node *n = NULL;

    if (l->algo->every)
        return round_track_pause(op, pause_ms);
    if (!trackable(op) || node_at(al, wait_pool(al, l), &n) != REDISLOCK_OK ||
        (n->trk == NULL &&
         rl__track_new(al->lp, &n->pool->cfg, &n->trk) != REDISLOCK_OK)) {
        rl__track_leave(&op->tw);
        return 0;
    }
    op->tw.key = l->wait_name.key;
    op->tw.keylen = l->wait_name.keylen;
    op->tw.changed = track_changed;
    rl__track_join(n->trk, &op->tw);
    /* Sent by another node's notices (the key's node has changed since:
     * a Sentinel's failover), its reply came from this one, untracked. */
    if (op->a.tracked && op->trk_sent != n->trk) {
        op->a.tracked = 0;
        *pause_ms = 0;
    }
    /* Ready: the next attempt is tracked, at once; not after one that a
     * redirection sent on, which keeps its poll's pause (a slot that is
     * migrating would send every attempt on again). */
    if (!op->a.tracked) {
        if (rl__track_ready(n->trk) && !op->resent)
            *pause_ms = 0;
        return 0;
    }
    if (op->trk_missed || *pause_ms <= 0) {
        op->trk_missed = 0;
        *pause_ms = 0;
        return 0;
    }
    return track_pause_arm(op, *pause_ms);
}

/* The connection op's next attempt goes on: n's request connection, or
 * where its read is tracked, when it waits for the server's notices and
 * they are ready (a.tracked says which). */
static rl__aconn *attempt_conn(aop *op, node *n)
{
    rl__aconn *c = n->cmd;

    if (op->tw.t != NULL && n->trk != NULL && op->tw.t == n->trk &&
        rl__track_ready(n->trk) && rl__track_conn(n->trk, &c) == REDISLOCK_OK) {
        op->a.tracked = 1;
        op->trk_sent = n->trk;
        op->trk_missed = 0;
    }
    return c;
}

/* A refused attempt's pause: listening on the wake channel, with a
 * timer for its end. */
static void pause_for(aop *op, int64_t pause_ms)
{
    rl__alock *al = op->al;
    node *n = NULL;
    int fresh = 0;
    redislock_err err;

    if (track_pause(op, &pause_ms))
        return;
    if (pause_ms <= 0) {
        resume(op, RL_WAIT_TIMEOUT);
        return;
    }
    if (op->blk_refused != REDISLOCK_OK) {
        err = rl__err(op->blk_refused, "%s", op->blk_why);
        rl__acq_end(op->l, &op->a, err);
        complete(op, err);
        return;
    }
    if (!op->o.fair && !op->a.blind && !op->blk_skip &&
        pause_blocked(op, pause_ms))
        return;
    op->blk_skip = 0;
    op->timer.fire = pause_over;
    if ((err = rl__loop_arm(al->lp, &op->timer,
                            rl__now_us() + pause_ms * 1000)) != REDISLOCK_OK) {
        rl__acq_end(op->l, &op->a, err);
        complete(op, err);
        return;
    }
    op->paused = 1;
    /* Without a subscription the pause is a plain timer: a release ends
     * it no sooner (a server that cannot be reached gives no wake-up, nor
     * does one of a quorum's). A fresh one tries again once confirmed
     * (chan_event). Nor does a node that is gone (a failover waited
     * out). Nor on a private loop, whose ordinary waiter sleeps a pause
     * too short to block on the server precisely. */
    if (!op->l->algo->wakes || op->a.blind || (al->private_loop && !op->o.fair))
        return;
    /* A subscription that ended on a node that no longer serves the key
     * (its slot moved): the channel is joined anew, on the key's node. */
    if (op->ch != NULL && op->ch->ended && !op->ch->leaving &&
        op->ch->n->pool != wait_pool(al, op->l))
        chan_leave(op);
    /* A set refused by another of its keys this time: that key's. */
    if (op->ch != NULL && !op->ch->fair && op->ch_key != op->l->wait_name.key)
        chan_leave(op);
    if (op->ch == NULL) {
        if (node_at(al, wait_pool(al, op->l), &n) == REDISLOCK_OK)
            chan_join(op, n, &fresh);
    } else if (op->ch->ended && !op->ch->leaving) {
        chan_subscribe(al, op->ch);
    } else if (op->ch->missed && op->ch->ready) {
        /* A wake-up no paused waiter took: this one tries again now. */
        op->ch->missed = 0;
        resume(op, RL_WAIT_WOKEN);
        return;
    }
    fair_heard(op);
}

/* An attempt's reply, or its failure. */
static void attempt_done(void *arg, redislock_err err, const rl__reply *r)
{
    aop *op = arg;
    redislock_lock *l = op->l;
    int64_t pause = 0;
    int piped = 0;

    op->inflight--;
    if (l == NULL) {
        op_free_if_idle(op);
        return;
    }
    if (op->behind) {
        /* The pause it ended (woken, or its time out): nothing to act on
         * for a waiter that is not fair; its attempt's outcome below. */
        op->behind = 0;
        piped = 1;
    }
    rl__lock_acks(l, &op->gq, err);
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, op->script->name);
    err = l->algo->attempt_outcome(l, &op->t, err,
                                   err == REDISLOCK_OK ? r : NULL);
    op->a.piped = piped && err == REDISLOCK_OK;
    /* Its read was sent again (a cluster's redirection, a script
     * loaded first), untracked. */
    if (op->resent)
        op->a.tracked = 0;
    if (rl__acq_after_attempt(l, &op->a, &err, &pause) == RL_NEXT_DONE)
        acquire_done(op, err);
    else
        pause_for(op, pause);
}

/* Sends the attempt t on c (cut: ms the waiting marker need not cover,
 * spent blocked before it runs). */
static redislock_err send_attempt(aop *op, node *n, rl__aconn *c, rl__try *t,
                                  int64_t cut)
{
    redislock_lock *l = op->l;
    rl__attempt_req req;
    redislock_err err;

    t->mark_ms = t->mark_ms > cut ? t->mark_ms - cut : 0;
    if ((err = l->algo->attempt_prepare(l, t, &req)) != REDISLOCK_OK)
        return err;
    op->t = *t;
    op->script = req.q.s;
    guard(l, &req.q, &op->gq, &op->acks);
    op->sent_us = rl__now_us();
    op->resent = 0;
    req.q.resent = &op->resent;
    err = rl__lock_send_async(l, op->al->rt, c, n->pool, t->req, &req.q,
                              attempt_done, op);
    if (err == REDISLOCK_OK)
        op->inflight++;
    return err;
}

/* An attempt's round is decided: taken by a majority, or refused and
 * undone on every server. */
static void attempt_round_done(round *rd)
{
    aop *op = rd->arg;
    redislock_lock *l = op->l;
    int64_t pause = 0;
    int undo = 0;
    redislock_err err;

    op->rd = NULL;
    op->resent = rd->resent;
    err = l->algo->round_attempt(l, &op->t, &rd->r, op->sent_us, &undo);
    if (undo)
        undo_send(op->al, l, &op->t);
    if (op->rtw != NULL && err != REDISLOCK_OK)
        round_track_outcome(op, &rd->r, err);
    if (rl__acq_after_attempt(l, &op->a, &err, &pause) == RL_NEXT_DONE)
        acquire_done(op, err);
    else
        pause_for(op, pause);
}

/* Sends the attempt t to every server at once. */
static redislock_err send_round_attempt(aop *op, const rl__try *t)
{
    redislock_lock *l = op->l;
    rl__attempt_req req;
    redislock_err err = l->algo->attempt_prepare(l, t, &req);
    round_via via = {round_track_via, op};

    if (err != REDISLOCK_OK)
        return err;
    op->t = *t;
    op->script = req.q.s;
    op->sent_us = rl__now_us();
    /* A script sent again after its load was read untracked: the round
     * says so (round_send_via points the flag at its own). */
    op->resent = 0;
    req.q.resent = &op->resent;
    /* A notice heard before this round is stale: its reads come after
     * it. Kept, it would send one round more after the first whose reads
     * were all tracked. */
    op->trk_missed = 0;
    return round_send_via(op->al, l, &req.q, t->req,
                          rl__client_server_timeout(l->client, t->ttl_ms),
                          attempt_round_done, op, &op->rd,
                          op->rtw != NULL ? &via : NULL);
}

/* A set's attempt over its groups is over: taken, refused (what it took
 * given back) or failed. */
static void attempt_group_done(void *arg, redislock_err err, long long n)
{
    aop *op = arg;
    int64_t pause = 0;

    (void)n;
    op->grp = NULL;
    /* Refused by the group whose read went tracked: its pause may wait
     * for the notice of the key it now waits behind, if that is one of
     * the group's. */
    op->a.tracked = err == REDISLOCK_EHELD && op->trk_names != NULL &&
                    !op->resent &&
                    names_hold(op->trk_names, op->trk_n, &op->l->wait_name);
    op->trk_names = NULL;
    if (rl__acq_after_attempt(op->l, &op->a, &err, &pause) == RL_NEXT_DONE)
        acquire_done(op, err);
    else
        pause_for(op, pause);
}

/* The next attempt, sent on the key's node, to every server, or to a
 * set's groups one after another. */
static void attempt(aop *op)
{
    redislock_lock *l = op->l;
    rl__try t;
    node *n = NULL;
    int64_t pause = 0;
    redislock_err err =
        rl__acq_try(l, &op->a, op->a.tries, op->a.deadline_ms, &t);

    if (err == REDISLOCK_OK && l->algo->every) {
        err = send_round_attempt(op, &t);
    } else if (err == REDISLOCK_OK && l->algo->groups) {
        op->t = t;
        op->sent_us = rl__now_us();
        op->trk_names = NULL;
        op->resent = 0;
        op->tio = (rl__agroup_io){op, tio_send, tio_sweep};
        err = rl__agroup_attempt(op->tw.t != NULL ? &op->tio : &op->al->gio, l,
                                 &op->t, attempt_group_done, op, &op->grp);
    } else if (err == REDISLOCK_OK && (err = node_for(op->al, l, &n)) == 0)
        err = send_attempt(op, n, attempt_conn(op, n), &t, 0);
    if (err == REDISLOCK_OK)
        return;
    /* Not sent: nothing to abandon; a failover is waited out, as a sent
     * one's. */
    if (rl__acq_after_attempt(l, &op->a, &err, &pause) == RL_NEXT_PAUSE)
        pause_for(op, pause);
    else
        acquire_done(op, err);
}

/* A blocked waiter's BLPOP came back (woken, or its time ran out), or
 * failed: its attempt, sent behind it, answers next; without one, it
 * tries now. An error reply other than a cluster's change ends the
 * acquire at its next pause, as the blocking driver's waiter did: waiting on,
 * it would send BLPOP and an attempt in a loop as fast as the server
 * answers. */
static void blocked_done(void *arg, redislock_err err, const rl__reply *r)
{
    aop *op = arg;

    op->inflight--;
    if (op->l != NULL && err == REDISLOCK_OK && r != NULL &&
        r->type == REDIS_REPLY_ERROR) {
        /* A slot that moved or a master that failed: its next pause is
         * the loop's (a timer), and its attempts follow the change. */
        if (rl__topo_moved(rl__client_topo(op->al->c), err, r)) {
            op->blk_skip = 1;
        } else {
            op->blk_refused = rl__reply_check(r, "BLPOP");
            snprintf(op->blk_why, sizeof op->blk_why, "%s",
                     redislock_errdetail());
        }
    }
    if (op->l == NULL)
        op_free_if_idle(op);
    else if (!op->behind)
        resume(op, RL_WAIT_WOKEN);
}

/* A waiter's pause blocked on the server, where a blocker is free: BLPOP
 * on the wake list for the pause, less a server tick (its timeout's
 * grain), and no longer than half the lease (the attempt's validity
 * counts from the BLPOP's send), with the next attempt behind it, which
 * the server runs as soon as a release wakes the BLPOP, with no round
 * trip between. Returns 0 when the pause must be the loop's. */
static int pause_blocked(aop *op, int64_t pause_ms)
{
    rl__alock *al = op->al;
    redislock_lock *l = op->l;
    const char *argv[3] = {"BLPOP", NULL, NULL};
    size_t lens[3] = {5, 0, 0};
    char secs[32], *list;
    int64_t block = pause_ms - RL_SERVER_TICK_MS;
    node *n = op->bn;
    int i = op->blk - 1;
    rl__try t;
    redislock_err err;

    if (pause_ms < RL_BLOCK_MIN_MS || op->ch != NULL || !l->algo->wakes)
        return 0;
    /* The key's slot has moved to another node since, or a set waits
     * behind a key of another node this time: a blocker there. */
    if (i >= 0 && n->pool != wait_pool(al, l)) {
        blocker_leave(op);
        i = -1;
    }
    if (i < 0) {
        if (node_at(al, wait_pool(al, l), &n) != REDISLOCK_OK)
            return 0;
        for (i = 0; i < RL_LOOP_BLOCKERS && n->blk_op[i] != NULL; i++)
            ;
        if (i == RL_LOOP_BLOCKERS)
            return 0;
        n->blk_op[i] = op;
        op->bn = n;
        op->blk = i + 1;
    }
    if (n->blk[i] != NULL && rl__aconn_broken(n->blk[i])) {
        rl__loop_close(al->lp, n->blk[i]);
        n->blk[i] = NULL;
    }
    /* A private loop's waiter blocks on its request connection, idle
     * once the attempt's reply came, as the blocking driver's waiter did
     * (node_reuse takes it back). */
    if (n->blk[i] == NULL && al->private_loop && n->cmd != NULL &&
        !rl__aconn_broken(n->cmd) && rl__aconn_pending(n->cmd) == 0) {
        n->blk[i] = n->cmd;
        n->cmd = NULL;
    }
    if (n->blk[i] == NULL &&
        rl__loop_connect(al->lp, &n->pool->cfg, &n->blk[i]) != REDISLOCK_OK) {
        blocker_leave(op);
        return 0;
    }
    if (block > op->a.ttl_ms / 2)
        block = op->a.ttl_ms / 2;
    if ((list = wake_list(l, &lens[1])) == NULL)
        return 0;
    argv[1] = list;
    argv[2] = secs;
    lens[2] =
        (size_t)snprintf(secs, sizeof secs, "%lld.%03lld",
                         (long long)(block / 1000), (long long)(block % 1000));
    err =
        rl__aconn_send_block(n->blk[i], 3, argv, lens, block, blocked_done, op);
    free(list);
    if (err != REDISLOCK_OK)
        return 0;
    op->inflight++;
    /* Its attempt behind it; without one, it tries when the BLPOP ends.
     * None where the key's node may change (a cluster, Sentinel: when it
     * dies the attempt's reply is lost with the BLPOP's, and the call with
     * it, where one sent after finds the new node) or where an attempt is
     * followed by WAIT (the guards). */
    if (!rl__topo_moves(rl__client_topo(al->c)) && !rl__lock_guarded(l) &&
        l->algo->attempt_prepare != NULL &&
        rl__acq_try(l, &op->a, op->a.tries, op->a.deadline_ms, &t) ==
            REDISLOCK_OK &&
        send_attempt(op, n, n->blk[i], &t, block) == REDISLOCK_OK)
        op->behind = 1;
    return 1;
}

static redislock_err acquire(rl__alock *al, redislock_lock *l,
                             const redislock_acquire_options *o,
                             rl__alock_cb cb, void *arg)
{
    static const redislock_acquire_options defaults;
    redislock_err err = check_lock(al, l);
    aop *op;

    if (err != REDISLOCK_OK)
        return err;
    if (o == NULL)
        o = &defaults;
    if (cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "an operation needs a callback");
    if ((op = op_new(al, l, OP_ACQUIRE, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    op->o = *o;
    if ((err = rl__acq_begin(l, &op->o, &op->a)) != REDISLOCK_OK) {
        op_drop(op);
        return err;
    }
    op->a.abandon = loop_abandon;
    op->a.drv = al;
    /* A private loop runs only during its call: the keeper renews. */
    op->a.watch = al->private_loop ? private_keep : lwatch_start;
    op_start(op);
    attempt(op);
    return REDISLOCK_OK;
}

/* A release or an extend came back with err, the script's answer n. */
static void owner_finish(aop *op, redislock_err err, long long n)
{
    redislock_lock *l = op->l;

    if (op->kind == OP_RELEASE) {
        rl__lock_released(l, err, n);
    } else {
        if (err == REDISLOCK_OK)
            rl__lock_set_validity(l, op->sent_us, op->ms);
        rl__lock_extended(l, err);
    }
    complete(op, err);
}

/* A release's or an extend's reply, or its failure. */
static void owner_done(void *arg, redislock_err err, const rl__reply *r)
{
    aop *op = arg;
    long long n = 0;

    op->inflight--;
    if (op->l == NULL) {
        op_free_if_idle(op);
        return;
    }
    if (err == REDISLOCK_OK &&
        (err = rl__reply_check(r, op->script->name)) == REDISLOCK_OK)
        err = rl__reply_owner(r, op->script->name, &n);
    rl__lock_set_outcomes(op->l, &err, 1);
    /* Not durable: the master has the new lease, a promoted replica may
     * not; the validity stays where the last confirmed one left it. */
    err = guard_outcome(op->l, &op->gq, err, "extend");
    owner_finish(op, err, n);
}

/* A release's or an extend's round: the majority decides. */
static void owner_round_done(round *rd)
{
    aop *op = rd->arg;
    char arg2[24];
    long long n = 0;
    redislock_err err;

    op->rd = NULL;
    snprintf(arg2, sizeof arg2, "%" PRId64, op->ms);
    err = op->l->algo->round_owner(op->l, op->script, arg2, &rd->r, op->sent_us,
                                   &n);
    owner_finish(op, err, n);
}

/* A release's or an extend's requests to a set's groups are answered. */
static void owner_group_done(void *arg, redislock_err err, long long n)
{
    aop *op = arg;

    op->grp = NULL;
    owner_finish(op, err, n);
}

/* Sends a release or an extend op (s, arg2) to its set's groups;
 * started once sent, freed if not. */
static redislock_err op_groups(aop *op, const rl__script *s, const char *arg2)
{
    redislock_err err = rl__agroup_owner(&op->al->gio, op->l, s, arg2,
                                         owner_group_done, op, &op->grp);

    if (err != REDISLOCK_OK) {
        op_drop(op);
        return err;
    }
    op_start(op);
    return REDISLOCK_OK;
}

/* Sends the owner script s (release, extend) with arg2 for l. */
static redislock_err owner_op(rl__alock *al, redislock_lock *l, int kind,
                              const rl__script *s, int64_t ms, rl__alock_cb cb,
                              void *arg)
{
    char arg2[24];
    rl__owner_args a;
    rl__request q = {.s = rl__lock_owner_script(l, s),
                     .nargs = RL_OWNER_NARGS,
                     .args = a.args,
                     .lens = a.lens};
    node *n = NULL;
    aop *op;
    redislock_err err;

    if (cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "an operation needs a callback");
    /* A private loop runs a blocking call, which may (as the keeper.s
     * renewals run beside it on their own connections). */
    if (l->kept && !al->private_loop)
        return rl__err(REDISLOCK_EINVAL,
                       "the lock is renewed by the watchdog thread: release "
                       "or extend it with the blocking calls");
    if (!l->algo->every && !l->algo->groups &&
        (err = node_for(al, l, &n)) != REDISLOCK_OK)
        return err;
    /* The last hold: its renewals stop before the release is sent (one
     * out goes first on the same connection, and is then ignored). */
    if (kind == OP_RELEASE && l->own == 1)
        rl__lock_unwatch(l);
    if ((op = op_new(al, l, kind, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    snprintf(arg2, sizeof arg2, "%" PRId64, ms);
    op->ms = ms;
    op->sent_us = rl__now_us();
    if (l->algo->groups)
        return op_groups(op, s, arg2);
    if (kind == OP_EXTEND)
        rl__lock_extend_args(l, ms, &a);
    else
        rl__lock_owner_args(l, arg2, &a);
    op->script = q.s;
    q.native = kind == OP_RELEASE && rl__lock_native_release(l, q.s, ms);
    if (kind == OP_RELEASE) {
        rl__lock_queued_release(l, &a);
        rl__lock_lean_release(l, ms, &q);
        rl__lock_copy_wake(l, ms, &a, &q);
    }
    if (kind == OP_EXTEND && !l->algo->every)
        guard(l, &q, &op->gq, &op->acks);
    if (l->algo->every)
        return op_round(op, &q,
                        rl__client_server_timeout(
                            al->c, kind == OP_EXTEND ? ms : l->ttl_ms),
                        owner_round_done);
    q.first = rl__lock_first(l, q.s);
    return op_send(op, n, &q, owner_done);
}

/* An inspect's reply, or its failure: decoded as the blocking call's. */
static void inspect_done(void *arg, redislock_err err, const rl__reply *r)
{
    aop *op = arg;
    redislock_lock *l = op->l;
    redislock_info own;

    op->inflight--;
    if (l == NULL) {
        op_free_if_idle(op);
        return;
    }
    rl__abi_in(&own, sizeof own, op->info, op->info_size);
    if (err == REDISLOCK_OK &&
        (err = rl__reply_check(r, rl__script_inspect.name)) == REDISLOCK_OK)
        err = rl__inspect_decode(r, &own, &l->info_buf);
    rl__inspect_out(l, &own, op->info, op->info_size);
    complete(op, err);
}

/* An inspect's round: the majority's view. */
static void inspect_round_done(round *rd)
{
    aop *op = rd->arg;
    redislock_lock *l = op->l;
    redislock_info own;
    size_t first = 0;
    redislock_err err;

    op->rd = NULL;
    rl__abi_in(&own, sizeof own, op->info, op->info_size);
    err = l->algo->round_inspect(l->client, &rd->r, &own, &l->info_buf, &first);
    rl__inspect_out(l, &own, op->info, op->info_size);
    complete(op, err);
}

static redislock_err inspect(rl__alock *al, redislock_lock *l,
                             redislock_info *info, size_t info_size,
                             rl__alock_cb cb, void *arg)
{
    rl__request q = {.s = &rl__script_inspect};
    node *n = NULL;
    aop *op;
    redislock_err err = check_lock(al, l);

    if (err != REDISLOCK_OK)
        return err;
    if (info == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL output or callback");
    if ((err = rl__abi_check(info_size, RL_INFO_SIZE_0_1, "redislock_info")) !=
            REDISLOCK_OK ||
        (!l->algo->every && (err = node_for(al, l, &n)) != REDISLOCK_OK))
        return err;
    if ((op = op_new(al, l, OP_INSPECT, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    op->info = info;
    op->info_size = info_size;
    op->script = q.s;
    if (l->algo->every)
        return op_round(op, &q,
                        rl__client_server_timeout(al->c, REDISLOCK_TTL_MAX_MS),
                        inspect_round_done);
    return op_send(op, n, &q, inspect_done);
}

/* The loop's operations start between rl__loop_enter and
 * rl__loop_leave: connections parked while the loop had nothing to do
 * are read before anything is sent on them. */
redislock_err rl__alock_acquire(rl__alock *al, redislock_lock *l,
                                const redislock_acquire_options *o,
                                rl__alock_cb cb, void *arg)
{
    redislock_err err;

    rl__loop_enter(al->lp);
    err = acquire(al, l, o, cb, arg);
    rl__loop_leave(al->lp);
    return err;
}

redislock_err rl__alock_inspect(rl__alock *al, redislock_lock *l,
                                redislock_info *info, size_t info_size,
                                rl__alock_cb cb, void *arg)
{
    redislock_err err;

    rl__loop_enter(al->lp);
    err = inspect(al, l, info, info_size, cb, arg);
    rl__loop_leave(al->lp);
    return err;
}

/* A release (hold_after_ms) or an extend (ttl_ms) of l. */
static redislock_err owned(rl__alock *al, redislock_lock *l, int kind,
                           int64_t ms, rl__alock_cb cb, void *arg)
{
    redislock_err err = check_lock(al, l);

    if (err == REDISLOCK_OK)
        err = kind == OP_RELEASE ? rl__lock_release_check(l, ms)
                                 : rl__lock_extend_check(l, ms);
    if (err != REDISLOCK_OK)
        return err;
    rl__loop_enter(al->lp);
    err =
        owner_op(al, l, kind,
                 kind == OP_RELEASE ? &rl__script_release : &rl__script_extend,
                 ms, cb, arg);
    rl__loop_leave(al->lp);
    return err;
}

redislock_err rl__alock_release(rl__alock *al, redislock_lock *l,
                                int64_t hold_after_ms, rl__alock_cb cb,
                                void *arg)
{
    return owned(al, l, OP_RELEASE, hold_after_ms, cb, arg);
}

redislock_err rl__alock_extend(rl__alock *al, redislock_lock *l, int64_t ttl_ms,
                               rl__alock_cb cb, void *arg)
{
    return owned(al, l, OP_EXTEND, ttl_ms, cb, arg);
}

/* Ends op with REDISLOCK_ECANCELED; an acquire's attempt in flight is
 * abandoned. */
static void cancel(aop *op)
{
    if (op->kind == OP_ACQUIRE) {
        /* Taken, its lease being confirmed: given back. */
        if (op->confirming)
            rl__acq_confirmed(op->l, &op->a, REDISLOCK_ECANCELED);
        else if (op->inflight > 0 || op->grp != NULL)
            rl__acq_abandon(op->l, &op->a);
        rl__err(REDISLOCK_ECANCELED, "the wait was cancelled");
        if (op->rd != NULL)
            undo_send(op->al, op->l, &op->t);
        rl__acq_end(op->l, &op->a, REDISLOCK_ECANCELED);
    } else {
        rl__err(REDISLOCK_ECANCELED,
                "the lock handle was freed with its %s under way",
                op->kind == OP_RELEASE  ? "release"
                : op->kind == OP_EXTEND ? "extend"
                                        : "inspect");
    }
    complete(op, REDISLOCK_ECANCELED);
}

void rl__alock_cancel(rl__alock *al, redislock_lock *l)
{
    if (l != NULL && l->aop != NULL && l->aop->al == al &&
        l->aop->kind == OP_ACQUIRE)
        cancel(l->aop);
}

void rl__alock_forget(redislock_lock *l)
{
    if (l->aop != NULL)
        cancel(l->aop);
}

void rl__alock_free(rl__alock *al)
{
    node *n = NULL;

    if (al == NULL)
        return;
    while (al->ops != NULL)
        cancel(al->ops);
    while (al->pauses != NULL) {
        rl__alock_pause *p = al->pauses;

        al->pauses = p->next;
        rl__loop_disarm(al->lp, &p->tm);
        p->gone(p);
    }
    /* Locks this loop renews are renewed no more: their leases run out
     * unless released or watched again. */
    while (al->watches != NULL)
        rl__lock_unwatch(al->watches->l);
    /* What is still being swept goes to the keeper. */
    sweeps_hand_over(al);
    /* Requests paused between a cluster's nodes end; the connections'
     * ends reach the requests and channels still out: their callbacks
     * free what is left of them. */
    rl__aroute_free(al->rt);
    for (n = al->nodes; n != NULL; n = n->next) {
        rl__track_free(n->trk);
        n->trk = NULL;
    }
    rl__loop_free(al->lp);
    while ((n = al->nodes) != NULL) {
        al->nodes = n->next;
        while (n->chans != NULL)
            chan_free(n->chans);
        free(n);
    }
    free(al->spare);
    free(al);
}

void rl__alock_private(rl__alock *al)
{
    al->private_loop = 1;
}

int rl__alock_busy(const rl__alock *al)
{
    const sweep *sw;

    if (al->loose > 0)
        return 1;
    for (sw = al->sweeps; sw != NULL; sw = sw->next)
        if (sw->out && sw->settle)
            return 1;
    return 0;
}

void rl__alock_idle(rl__alock *al)
{
    sweeps_hand_over(al);
}

void rl__alock_chan_unkeep(rl__alock *al, const char *name, size_t len)
{
    node *n;
    chan *ch;

    for (n = al->nodes; n != NULL; n = n->next)
        /* A connection that failed holds no subscription; the loop finds
         * that out when it next runs (and nothing here may set the
         * caller's error detail). */
        if ((ch = chan_find(n, name, len)) != NULL && chan_kept(ch) &&
            (ch->ended || !rl__aconn_broken(ch->on)))
            chan_drop(ch);
}
