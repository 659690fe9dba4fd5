/*
 * An event loop's connections and timers behind two application
 * callbacks (see loop.h). Sockets are found by fd in a table; each
 * connection's deadline is a timer in the heap; the application's one
 * timer follows the heap's earliest entry, asked again after every call
 * that may have moved it (not inside one: once, at its end).
 *
 * A loop with no timer armed has nothing to do: no request awaits a
 * reply (each has its deadline in the heap), no wait, renewal or sweep
 * is under way. When it has had nothing to do for RL_PARK_AFTER_US (a
 * timer of its own), its connections are parked: the application is
 * told to stop watching them, so that a loop that ends when nothing is
 * watched (libevent's, libuv's, libev's) ends. The next operation's
 * rl__loop_enter reads each of them before it is used, so a connection
 * the server closed meanwhile shows as broken and is opened again.
 */
#include <stddef.h>
#include <stdlib.h>

#include "clock.h"
#include "error.h"
#include "loop.h"

/* One connection on the loop. */
typedef struct rl__lconn {
    rl__loop_timer deadline; /* its deadline, in the heap */
    rl__loop *lp;
    rl__aconn *c;
    int fd;
    int want;   /* what the connection asked to be watched for */
    int told;   /* what the application was told (0 while parked) */
    int unread; /* parked: to be read by rl__loop_enter */
    struct rl__lconn *next;
} rl__lconn;

struct rl__loop {
    rl__loop_ops ops;
    rl__timers timers;
    rl__lconn **byfd; /* the connection watching each fd, or NULL */
    size_t nfd;
    rl__lconn *conns;
    int64_t told_us;     /* what the application timer was set for (0: none) */
    int depth;           /* calls under way: the timer is set at their end */
    int parks;           /* idle connections are parked (rl__loop_parks) */
    int parked;          /* they are */
    rl__loop_timer park; /* parks them once due (settle) */
};

/* How long a loop has nothing to do before it parks its connections. */
#define RL_PARK_AFTER_US 10000

/* Tells the application what to watch on lc's fd, if that changed. */
static void tell(rl__loop *lp, rl__lconn *lc)
{
    int w = lp->parked ? 0 : lc->want;

    if (w != lc->told && lc->fd >= 0) {
        lc->told = w;
        lp->ops.watch(lp->ops.ctx, lc->fd, w);
    }
}

static void tell_all(rl__loop *lp)
{
    rl__lconn *lc;

    for (lc = lp->conns; lc != NULL; lc = lc->next)
        tell(lp, lc);
}

/* Whether a request awaits its reply on one of lp's connections. */
static int awaiting(const rl__loop *lp)
{
    const rl__lconn *lc;

    for (lc = lp->conns; lc != NULL; lc = lc->next)
        if (rl__aconn_pending(lc->c) > 0)
            return 1;
    return 0;
}

/* The park timer: the loop has had nothing to do since it was armed,
 * unless another timer or a request came meanwhile. */
static void park_due(rl__loop_timer *t)
{
    rl__loop *lp = (rl__loop *)((char *)t - offsetof(rl__loop, park));
    rl__lconn *lc;

    if (lp->parked || lp->timers.n > 0 || awaiting(lp))
        return;
    lp->parked = 1;
    for (lc = lp->conns; lc != NULL; lc = lc->next)
        lc->unread = lc->want != 0;
    tell_all(lp);
}

/* Once the loop has nothing to do, arms the park timer, which parks the
 * connections RL_PARK_AFTER_US later if nothing came: operations run
 * back to back keep theirs watched (a park and the next operation's
 * reads cost a few system calls). */
static void settle(rl__loop *lp)
{
    if (!lp->parks || lp->parked || rl__timer_armed(&lp->park.t) ||
        lp->timers.n > 0 || awaiting(lp))
        return;
    /* Out of memory leaves the loop unparked: it then does not end. */
    (void)rl__timer_arm(&lp->timers, &lp->park.t,
                        rl__now_us() + RL_PARK_AFTER_US);
}

static void unpark(rl__loop *lp)
{
    if (!lp->parked)
        return;
    lp->parked = 0;
    tell_all(lp);
}

/* Sets the application's timer to the heap's earliest entry. */
static void retime(rl__loop *lp)
{
    rl__timer *t;
    int64_t at, ms;

    if (lp->depth > 0)
        return;
    settle(lp);
    t = rl__timers_first(&lp->timers);
    at = t != NULL ? t->at_us : 0;
    if (at == lp->told_us)
        return;
    lp->told_us = at;
    if (at == 0) {
        lp->ops.timer(lp->ops.ctx, -1);
        return;
    }
    /* Rounded up, so that the timer never runs before it is due. */
    ms = (at - rl__now_us() + 999) / 1000;
    lp->ops.timer(lp->ops.ctx, ms > 0 ? ms : 0);
}

static void conn_watch(void *ctx, int fd, int what)
{
    rl__lconn *lc = ctx;
    rl__loop *lp = lc->lp;

    lc->fd = fd;
    if (what != 0 && (size_t)fd >= lp->nfd) {
        size_t n = (size_t)fd + 16, i;
        rl__lconn **v = realloc(lp->byfd, n * sizeof *v);

        if (v == NULL)
            return; /* its events cannot reach it: its deadline fails it */
        for (i = lp->nfd; i < n; i++)
            v[i] = NULL;
        lp->byfd = v;
        lp->nfd = n;
    }
    if ((size_t)fd < lp->nfd)
        lp->byfd[fd] = what != 0 ? lc : NULL;
    lc->want = what;
    tell(lp, lc);
}

static void conn_deadline(void *ctx, int64_t at_us)
{
    rl__lconn *lc = ctx;

    if (at_us == 0)
        rl__loop_disarm(lc->lp, &lc->deadline);
    else
        rl__loop_arm(lc->lp, &lc->deadline, at_us);
}

static void conn_due(rl__loop_timer *t)
{
    rl__lconn *lc = (rl__lconn *)((char *)t - offsetof(rl__lconn, deadline));

    /* Re-arms itself through conn_deadline if it is not past due. */
    rl__aconn_tick(lc->c);
}

redislock_err rl__loop_new(const rl__loop_ops *ops, rl__loop **out)
{
    rl__loop *lp = calloc(1, sizeof *lp);

    *out = NULL;
    if (lp == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory for a loop");
    lp->ops = *ops;
    rl__timers_init(&lp->timers);
    lp->park.fire = park_due;
    *out = lp;
    return REDISLOCK_OK;
}

/* A new entry for a connection on lp, its ops in *ops. */
static rl__lconn *entry(rl__loop *lp, rl__aconn_ops *ops)
{
    rl__lconn *lc = calloc(1, sizeof *lc);

    if (lc == NULL)
        return NULL;
    lc->lp = lp;
    lc->fd = -1;
    lc->deadline.fire = conn_due;
    *ops = (rl__aconn_ops){conn_watch, conn_deadline, lc};
    return lc;
}

/* lc, its connection made, is the loop's. */
static void link_entry(rl__loop *lp, rl__lconn *lc)
{
    lc->next = lp->conns;
    lp->conns = lc;
    retime(lp);
}

redislock_err rl__loop_connect(rl__loop *lp, const rl__conn_cfg *cfg,
                               rl__aconn **out)
{
    rl__aconn_ops ops;
    rl__lconn *lc = entry(lp, &ops);
    redislock_err err;

    *out = NULL;
    if (lc == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    lp->depth++;
    err = rl__aconn_open(cfg, &ops, &lc->c);
    lp->depth--;
    if (err != REDISLOCK_OK) {
        rl__loop_disarm(lp, &lc->deadline);
        free(lc);
        retime(lp);
        return err;
    }
    link_entry(lp, lc);
    *out = lc->c;
    return REDISLOCK_OK;
}

redislock_err rl__loop_adopt(rl__loop *lp, rl__aconn *c)
{
    rl__aconn_ops ops;
    rl__lconn *lc = entry(lp, &ops);

    if (lc == NULL) {
        rl__aconn_close(c);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    lc->c = c;
    lp->depth++;
    rl__aconn_rebind(c, &ops);
    lp->depth--;
    link_entry(lp, lc);
    return REDISLOCK_OK;
}

/* c's entry, taken off the loop's list; NULL when c is not the loop's. */
static rl__lconn *unlink_entry(rl__loop *lp, const rl__aconn *c)
{
    rl__lconn **p, *lc;

    for (p = &lp->conns; *p != NULL; p = &(*p)->next)
        if ((*p)->c == c) {
            lc = *p;
            *p = lc->next;
            return lc;
        }
    return NULL;
}

/* Takes c off the loop, closed or (keep) idle and bound to no loop. */
static void drop(rl__loop *lp, rl__aconn *c, int keep)
{
    rl__lconn *lc = unlink_entry(lp, c);

    if (lc == NULL)
        return;
    rl__loop_disarm(lp, &lc->deadline);
    lp->depth++;
    /* Its last watch(fd, 0) still finds lc. */
    if (keep)
        rl__aconn_rebind(c, NULL);
    else
        rl__aconn_close(c);
    lp->depth--;
    free(lc);
    retime(lp);
}

void rl__loop_detach(rl__loop *lp, rl__aconn *c)
{
    drop(lp, c, 1);
}

void rl__loop_close(rl__loop *lp, rl__aconn *c)
{
    drop(lp, c, 0);
}

redislock_err rl__loop_arm(rl__loop *lp, rl__loop_timer *t, int64_t at_us)
{
    redislock_err err = rl__timer_arm(&lp->timers, &t->t, at_us);

    /* Work: what the connections receive matters again. */
    unpark(lp);
    retime(lp);
    return err;
}

void rl__loop_disarm(rl__loop *lp, rl__loop_timer *t)
{
    rl__timer_disarm(&lp->timers, &t->t);
    retime(lp);
}

void rl__loop_parks(rl__loop *lp, int on)
{
    lp->parks = on;
    if (!on) {
        rl__timer_disarm(&lp->timers, &lp->park.t);
        unpark(lp);
    }
}

void rl__loop_enter(rl__loop *lp)
{
    size_t fd;

    lp->depth++;
    if (!lp->parked)
        return;
    unpark(lp);
    /* What came while no one watched, as a watching loop would have
     * handed it on: a close, an error, a message on a channel. The table
     * is read by fd, since a connection read may end others. */
    for (fd = 0; fd < lp->nfd; fd++) {
        rl__lconn *lc = lp->byfd[fd];

        if (lc != NULL && lc->unread) {
            lc->unread = 0;
            rl__aconn_io(lc->c, RL_WATCH_READ);
        }
    }
}

void rl__loop_leave(rl__loop *lp)
{
    lp->depth--;
    retime(lp);
}

void rl__loop_io(rl__loop *lp, int fd, int what)
{
    rl__lconn *lc = fd >= 0 && (size_t)fd < lp->nfd ? lp->byfd[fd] : NULL;

    if (lc == NULL)
        return;
    lp->depth++;
    rl__aconn_io(lc->c, what); /* lc may be gone after */
    lp->depth--;
    retime(lp);
}

/* The most connections one blocking wait covers (a Redlock round has at
 * most 15 servers). */
#define RL_WAIT_MAX 16

int rl__loop_wait(rl__loop *lp)
{
    rl__timer *first = rl__timers_first(&lp->timers);
    rl__lconn *lc, *last = NULL;
    int fds[RL_WAIT_MAX], n = 0, i, lastfd = -1, done;
    int64_t d, latest = 0;

    /* Every connection that waits for something waits for a fresh reply;
     * the one sent last, whose reply is likely to come last, is waited
     * for. */
    for (lc = lp->conns; lc != NULL; lc = lc->next) {
        if (rl__aconn_pending(lc->c) == 0 && !rl__aconn_subscribed(lc->c))
            continue;
        if (n == RL_WAIT_MAX || !rl__aconn_waitable(lc->c, &d))
            return 0;
        fds[n++] = lc->fd;
        if (last == NULL || d >= latest) {
            last = lc;
            latest = d;
        }
    }
    if (last == NULL || first == NULL)
        return 0;
    lastfd = last->fd;
    lp->depth++;
    /* Until the first timer at most: the loop's next round fires it. */
    done = rl__aconn_wait(last->c, first->at_us); /* last may be gone */
    lp->depth--;
    /* The others' replies have mostly come by then: read without waiting
     * (a socket with nothing yet reads nothing, and the next round waits
     * for it). */
    for (i = 0; done && i < n; i++)
        if (fds[i] != lastfd)
            rl__loop_io(lp, fds[i], RL_WATCH_READ);
    retime(lp);
    return done;
}

void rl__loop_timeout(rl__loop *lp)
{
    int64_t now = rl__now_us();
    size_t n = lp->timers.n;
    rl__timer *t;

    /* The application's timer is spent. */
    lp->told_us = 0;
    lp->depth++;
    /* No more than were armed on entry: one that re-arms itself for now
     * waits for the next round. */
    while (n-- > 0 && (t = rl__timers_due(&lp->timers, now)) != NULL) {
        rl__loop_timer *lt = (rl__loop_timer *)t;

        lt->fire(lt);
    }
    lp->depth--;
    retime(lp);
}

void rl__loop_free(rl__loop *lp)
{
    if (lp == NULL)
        return;
    lp->depth++;
    while (lp->conns != NULL)
        rl__loop_close(lp, lp->conns->c);
    lp->depth--;
    rl__timers_free(&lp->timers);
    if (lp->told_us != 0)
        lp->ops.timer(lp->ops.ctx, -1);
    free(lp->byfd);
    free(lp);
}
