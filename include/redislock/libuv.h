/*
 * redislock's event-loop API (redislock_loop(3)) on a libuv loop: a
 * uv_poll_t per socket the library asks to watch and one uv_timer_t.
 * Header-only; link with libuv (pkg-config: libuv) and libredislock.
 *
 *     redislock_libuv *a;
 *     redislock_libuv_new(&a, client, uv_default_loop());
 *     redislock_loop_acquire(redislock_libuv_loop(a), lock, &o, done, arg);
 *     uv_run(uv_default_loop(), UV_RUN_DEFAULT);   (returns once nothing
 *                                                  is under way)
 *     ...
 *     redislock_libuv_free(a);   (its handles close as libuv runs on)
 */
#ifndef REDISLOCK_LIBUV_H
#define REDISLOCK_LIBUV_H

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <redislock.h>
#include <redislock/fds.h>

typedef struct redislock_libuv {
    redislock_loop *loop;
    uv_loop_t *uv;
    uv_timer_t *timer;
    void **poll; /* uv_poll_t *, by fd; NULL: not watched */
    int npoll;
} redislock_libuv;

/* Handles are freed once libuv has closed them. */
static inline void redislock_libuv_closed_(uv_handle_t *h)
{
    free(h);
}

static inline void redislock_libuv_io_(uv_poll_t *p, int status, int events)
{
    redislock_libuv *a = (redislock_libuv *)p->data;
    uv_os_fd_t fd;
    int what =
        (events & (UV_READABLE | UV_DISCONNECT)) ? REDISLOCK_WATCH_READ : 0;

    if (events & UV_WRITABLE)
        what |= REDISLOCK_WATCH_WRITE;
    /* An error on the socket: the library reads it there. */
    if (status < 0)
        what = REDISLOCK_WATCH_READ | REDISLOCK_WATCH_WRITE;
    if (uv_fileno((uv_handle_t *)p, &fd) == 0)
        redislock_loop_io(a->loop, (int)fd, what);
}

static inline void redislock_libuv_timeout_(uv_timer_t *t)
{
    redislock_loop_timeout(((redislock_libuv *)t->data)->loop);
}

static inline void redislock_libuv_watch_(void *ctx, int fd, int what)
{
    redislock_libuv *a = (redislock_libuv *)ctx;
    int events = ((what & REDISLOCK_WATCH_READ) ? UV_READABLE : 0) |
                 ((what & REDISLOCK_WATCH_WRITE) ? UV_WRITABLE : 0);
    uv_poll_t *p;

    if (fd < 0 || (what == 0 && fd >= a->npoll) ||
        !redislock_fds_room_(&a->poll, &a->npoll, fd))
        return;
    p = (uv_poll_t *)a->poll[fd];
    if (what == 0) {
        if (p != NULL) {
            uv_poll_stop(p);
            uv_close((uv_handle_t *)p, redislock_libuv_closed_);
            a->poll[fd] = NULL;
        }
        return;
    }
    if (p == NULL) {
        if ((p = (uv_poll_t *)malloc(sizeof *p)) == NULL)
            return;
        if (uv_poll_init(a->uv, p, fd) != 0) {
            free(p);
            return;
        }
        p->data = a;
        a->poll[fd] = p;
    }
    uv_poll_start(p, events, redislock_libuv_io_);
}

static inline void redislock_libuv_timer_(void *ctx, int64_t ms)
{
    redislock_libuv *a = (redislock_libuv *)ctx;

    if (ms < 0)
        uv_timer_stop(a->timer);
    else
        uv_timer_start(a->timer, redislock_libuv_timeout_, (uint64_t)ms, 0);
}

/* A loop for c's locks on uv. REDISLOCK_ENOMEM when libuv or the
 * library cannot allocate. */
static inline redislock_err
redislock_libuv_new(redislock_libuv **out, redislock_client *c, uv_loop_t *uv)
{
    redislock_libuv *a = (redislock_libuv *)calloc(1, sizeof(redislock_libuv));
    redislock_err err;

    *out = NULL;
    if (a == NULL)
        return REDISLOCK_ENOMEM;
    a->uv = uv;
    if ((a->timer = (uv_timer_t *)malloc(sizeof *a->timer)) == NULL ||
        uv_timer_init(uv, a->timer) != 0) {
        free(a->timer);
        free(a);
        return REDISLOCK_ENOMEM;
    }
    a->timer->data = a;
    err = redislock_loop_new(&a->loop, c, redislock_libuv_watch_,
                             redislock_libuv_timer_, a);
    if (err != REDISLOCK_OK) {
        uv_close((uv_handle_t *)a->timer, redislock_libuv_closed_);
        free(a);
        return err;
    }
    *out = a;
    return REDISLOCK_OK;
}

static inline redislock_loop *redislock_libuv_loop(redislock_libuv *a)
{
    return a->loop;
}

/* Frees the loop (its operations' callbacks run first, with
 * REDISLOCK_ECANCELED); its handles are closed, and their memory goes
 * when libuv runs their close callbacks. NULL is a no-op. */
static inline void redislock_libuv_free(redislock_libuv *a)
{
    int fd;

    if (a == NULL)
        return;
    redislock_loop_free(a->loop);
    for (fd = 0; fd < a->npoll; fd++)
        if (a->poll[fd] != NULL)
            uv_close((uv_handle_t *)a->poll[fd], redislock_libuv_closed_);
    uv_close((uv_handle_t *)a->timer, redislock_libuv_closed_);
    free(a->poll);
    free(a);
}

#endif
