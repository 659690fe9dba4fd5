/*
 * redislock's event-loop API (redislock_loop(3)) on a libev loop: an
 * ev_io per socket the library asks to watch and one ev_timer.
 * Header-only; link with libev (-lev) and libredislock. libev's shared
 * library also defines libevent's event_* names (its compatibility
 * layer): a program that uses libevent too links libev statically
 * (libev.a), or libevent first.
 *
 *     redislock_libev *a;
 *     redislock_libev_new(&a, client, EV_DEFAULT);
 *     redislock_loop_acquire(redislock_libev_loop(a), lock, &o, done, arg);
 *     ev_run(EV_DEFAULT, 0);   (returns once nothing is under way)
 *     ...
 *     redislock_libev_free(a);   (before the loop and the client go)
 */
#ifndef REDISLOCK_LIBEV_H
#define REDISLOCK_LIBEV_H

#include <ev.h>
#include <stdlib.h>
#include <string.h>

#include <redislock.h>
#include <redislock/fds.h>

typedef struct redislock_libev {
    redislock_loop *loop;
    struct ev_loop *ev;
    ev_timer timer;
    void **io; /* ev_io *, by fd; NULL: never watched */
    int nio;
} redislock_libev;

static inline void redislock_libev_io_(struct ev_loop *ev, ev_io *w,
                                       int revents)
{
    redislock_libev *a = (redislock_libev *)w->data;

    (void)ev;
    redislock_loop_io(a->loop, w->fd,
                      ((revents & EV_READ) ? REDISLOCK_WATCH_READ : 0) |
                          ((revents & EV_WRITE) ? REDISLOCK_WATCH_WRITE : 0));
}

static inline void redislock_libev_timeout_(struct ev_loop *ev, ev_timer *t,
                                            int revents)
{
    (void)ev;
    (void)revents;
    redislock_loop_timeout(((redislock_libev *)t->data)->loop);
}

static inline void redislock_libev_watch_(void *ctx, int fd, int what)
{
    redislock_libev *a = (redislock_libev *)ctx;
    int events = ((what & REDISLOCK_WATCH_READ) ? EV_READ : 0) |
                 ((what & REDISLOCK_WATCH_WRITE) ? EV_WRITE : 0);
    ev_io *w;

    if (fd < 0 || (what == 0 && fd >= a->nio) ||
        !redislock_fds_room_(&a->io, &a->nio, fd))
        return;
    if ((w = (ev_io *)a->io[fd]) != NULL)
        ev_io_stop(a->ev, w);
    if (what == 0)
        return;
    if (w == NULL) {
        if ((w = (ev_io *)malloc(sizeof *w)) == NULL)
            return;
        ev_io_init(w, redislock_libev_io_, fd, events);
        w->data = a;
        a->io[fd] = w;
    } else {
        ev_io_set(w, fd, events);
    }
    ev_io_start(a->ev, w);
}

static inline void redislock_libev_timer_(void *ctx, int64_t ms)
{
    redislock_libev *a = (redislock_libev *)ctx;

    ev_timer_stop(a->ev, &a->timer);
    if (ms < 0)
        return;
    /* ev's clock is the one its last turn read: bring it up to date. */
    ev_now_update(a->ev);
    ev_timer_set(&a->timer, (ev_tstamp)ms / 1000.0, 0.);
    ev_timer_start(a->ev, &a->timer);
}

/* A loop for c's locks on ev. REDISLOCK_ENOMEM when the library cannot
 * allocate. */
static inline redislock_err redislock_libev_new(redislock_libev **out,
                                                redislock_client *c,
                                                struct ev_loop *ev)
{
    redislock_libev *a = (redislock_libev *)calloc(1, sizeof(redislock_libev));
    redislock_err err;

    *out = NULL;
    if (a == NULL)
        return REDISLOCK_ENOMEM;
    a->ev = ev;
    ev_timer_init(&a->timer, redislock_libev_timeout_, 0., 0.);
    a->timer.data = a;
    err = redislock_loop_new(&a->loop, c, redislock_libev_watch_,
                             redislock_libev_timer_, a);
    if (err != REDISLOCK_OK) {
        free(a);
        return err;
    }
    *out = a;
    return REDISLOCK_OK;
}

static inline redislock_loop *redislock_libev_loop(redislock_libev *a)
{
    return a->loop;
}

/* Frees the loop (its operations' callbacks run first, with
 * REDISLOCK_ECANCELED), then the watchers. NULL is a no-op. */
static inline void redislock_libev_free(redislock_libev *a)
{
    int fd;

    if (a == NULL)
        return;
    redislock_loop_free(a->loop);
    for (fd = 0; fd < a->nio; fd++)
        if (a->io[fd] != NULL) {
            ev_io_stop(a->ev, (ev_io *)a->io[fd]);
            free(a->io[fd]);
        }
    ev_timer_stop(a->ev, &a->timer);
    free(a->io);
    free(a);
}

#endif
