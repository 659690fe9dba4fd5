/*
 * redislock's event-loop API (redislock_loop(3)) on a libevent loop: one
 * event per socket the library asks to watch and one timer, all on the
 * event_base given. Header-only; link with libevent (pkg-config:
 * libevent) and libredislock.
 *
 *     redislock_libevent *a;
 *     redislock_libevent_new(&a, client, base);
 *     redislock_loop_acquire(redislock_libevent_loop(a), lock, &o, done, arg);
 *     event_base_dispatch(base);   (returns once nothing is under way)
 *     ...
 *     redislock_libevent_free(a);   (before the base and the client go)
 */
#ifndef REDISLOCK_LIBEVENT_H
#define REDISLOCK_LIBEVENT_H

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include <redislock.h>
#include <redislock/fds.h>

typedef struct redislock_libevent {
    redislock_loop *loop;
    struct event_base *base;
    struct event *timer;
    void **ev; /* struct event *, by fd; NULL: never watched */
    int nev;
} redislock_libevent;

static inline void redislock_libevent_io_(evutil_socket_t fd, short what,
                                          void *arg)
{
    redislock_libevent *a = (redislock_libevent *)arg;

    redislock_loop_io(a->loop, (int)fd,
                      ((what & EV_READ) ? REDISLOCK_WATCH_READ : 0) |
                          ((what & EV_WRITE) ? REDISLOCK_WATCH_WRITE : 0));
}

static inline void redislock_libevent_timeout_(evutil_socket_t fd, short what,
                                               void *arg)
{
    (void)fd;
    (void)what;
    redislock_loop_timeout(((redislock_libevent *)arg)->loop);
}

static inline void redislock_libevent_watch_(void *ctx, int fd, int what)
{
    redislock_libevent *a = (redislock_libevent *)ctx;
    short flags =
        (short)(EV_PERSIST | ((what & REDISLOCK_WATCH_READ) ? EV_READ : 0) |
                ((what & REDISLOCK_WATCH_WRITE) ? EV_WRITE : 0));
    struct event *e;

    if (fd < 0 || (what == 0 && fd >= a->nev) ||
        !redislock_fds_room_(&a->ev, &a->nev, fd))
        return;
    if ((e = (struct event *)a->ev[fd]) != NULL)
        event_del(e);
    if (what == 0)
        return;
    if (e == NULL)
        a->ev[fd] = e =
            event_new(a->base, fd, flags, redislock_libevent_io_, a);
    else
        event_assign(e, a->base, fd, flags, redislock_libevent_io_, a);
    if (e != NULL)
        event_add(e, NULL);
}

static inline void redislock_libevent_timer_(void *ctx, int64_t ms)
{
    redislock_libevent *a = (redislock_libevent *)ctx;
    struct timeval tv;

    if (ms < 0) {
        evtimer_del(a->timer);
        return;
    }
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    evtimer_add(a->timer, &tv);
}

/* A loop for c's locks on base. REDISLOCK_ENOMEM when libevent or the
 * library cannot allocate. */
static inline redislock_err redislock_libevent_new(redislock_libevent **out,
                                                   redislock_client *c,
                                                   struct event_base *base)
{
    redislock_libevent *a =
        (redislock_libevent *)calloc(1, sizeof(redislock_libevent));
    redislock_err err;

    *out = NULL;
    if (a == NULL)
        return REDISLOCK_ENOMEM;
    a->base = base;
    if ((a->timer = evtimer_new(base, redislock_libevent_timeout_, a)) ==
        NULL) {
        free(a);
        return REDISLOCK_ENOMEM;
    }
    err = redislock_loop_new(&a->loop, c, redislock_libevent_watch_,
                             redislock_libevent_timer_, a);
    if (err != REDISLOCK_OK) {
        event_free(a->timer);
        free(a);
        return err;
    }
    *out = a;
    return REDISLOCK_OK;
}

static inline redislock_loop *redislock_libevent_loop(redislock_libevent *a)
{
    return a->loop;
}

/* Frees the loop (its operations' callbacks run first, with
 * REDISLOCK_ECANCELED), then the events. NULL is a no-op. */
static inline void redislock_libevent_free(redislock_libevent *a)
{
    int fd;

    if (a == NULL)
        return;
    redislock_loop_free(a->loop);
    for (fd = 0; fd < a->nev; fd++)
        if (a->ev[fd] != NULL)
            event_free((struct event *)a->ev[fd]);
    event_free(a->timer);
    free(a->ev);
    free(a);
}

#endif
