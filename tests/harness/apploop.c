/*
 * The tests' application loop: see apploop.h.
 */
#include <poll.h>
#include <stdio.h>
#include <time.h>

#include <redislock.h>

#include "apploop.h"
#include "test.h"

static int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void app_watch(void *ctx, int fd, int what)
{
    app *a = ctx;

    if (fd < 0 || fd >= APP_FDS)
        test_fail_(__FILE__, __LINE__, "fd %d out of the test's range", fd);
    a->what[fd] = what;
}

void app_timer(void *ctx, int64_t ms)
{
    app *a = ctx;

    a->timer_calls++;
    a->timer_at = ms < 0 ? 0 : now_us() + ms * 1000;
}

static void drive_io(void *lp, int fd, int what)
{
    redislock_loop_io(lp, fd, what);
}

static void drive_timeout(void *lp)
{
    redislock_loop_timeout(lp);
}

void app_drive(app *a, redislock_loop *lp)
{
    a->io = drive_io;
    a->timeout = drive_timeout;
    a->target = lp;
}

int app_watched(const app *a)
{
    int fd, n = 0;

    for (fd = 0; fd < APP_FDS; fd++)
        n += a->what[fd] != 0;
    return n;
}

void app_turn(app *a)
{
    struct pollfd p[APP_FDS];
    int fd, n = 0, i, wait = a->max_wait_ms ? a->max_wait_ms : 5000;

    for (fd = 0; fd < APP_FDS; fd++)
        if (a->what[fd] != 0) {
            p[n].fd = fd;
            p[n].events =
                (short)((a->what[fd] & REDISLOCK_WATCH_READ ? POLLIN : 0) |
                        (a->what[fd] & REDISLOCK_WATCH_WRITE ? POLLOUT : 0));
            p[n++].revents = 0;
        }
    if (a->timer_at != 0) {
        int64_t left = (a->timer_at - a->early_us - now_us() + 999) / 1000;
        wait = left < 0 ? 0 : left < wait ? (int)left : wait;
    }
    if (poll(p, (nfds_t)n, wait) == 0 && a->timer_at == 0 && n == 0 &&
        a->max_wait_ms == 0)
        test_fail_(__FILE__, __LINE__, "nothing to wait for");
    for (i = 0; i < n; i++) {
        int what = 0;

        if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
            what |= REDISLOCK_WATCH_READ;
        if (p[i].revents & (POLLOUT | POLLERR))
            what |= REDISLOCK_WATCH_WRITE;
        if (what != 0)
            a->io(a->target, p[i].fd, what);
    }
    if (a->timer_at != 0 && now_us() >= a->timer_at - a->early_us) {
        a->timer_at = 0;
        a->timeout(a->target);
    }
}

void app_heard_cb(redislock_lock *l, redislock_err err, void *arg)
{
    app_heard *h = arg;

    (void)l;
    h->calls++;
    h->err = err;
    h->at_us = now_us();
    snprintf(h->said, sizeof h->said, "%s", redislock_errdetail());
}

void app_until_heard(app *a, app_heard *h)
{
    int64_t deadline = now_us() + 5000000;

    while (h->calls == 0 && now_us() < deadline)
        app_turn(a);
    ASSERT_EQ_INT(h->calls, 1);
}
