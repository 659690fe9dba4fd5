/*
 * The tests' application loop: see apploop.h.
 */
#include <poll.h>

#include "apploop.h"
#include "aconn.h"
#include "clock.h"
#include "test.h"

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
    a->timer_at = ms < 0 ? 0 : rl__now_us() + ms * 1000;
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
            p[n].events = (short)((a->what[fd] & RL_WATCH_READ ? POLLIN : 0) |
                                  (a->what[fd] & RL_WATCH_WRITE ? POLLOUT : 0));
            p[n++].revents = 0;
        }
    if (a->timer_at != 0) {
        int64_t left = (a->timer_at - a->early_us - rl__now_us() + 999) / 1000;
        wait = left < 0 ? 0 : left < wait ? (int)left : wait;
    }
    if (poll(p, (nfds_t)n, wait) == 0 && a->timer_at == 0 && n == 0 &&
        a->max_wait_ms == 0)
        test_fail_(__FILE__, __LINE__, "nothing to wait for");
    for (i = 0; i < n; i++) {
        int what = 0;

        if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
            what |= RL_WATCH_READ;
        if (p[i].revents & (POLLOUT | POLLERR))
            what |= RL_WATCH_WRITE;
        if (what != 0)
            a->io(a->target, p[i].fd, what);
    }
    if (a->timer_at != 0 && rl__now_us() >= a->timer_at - a->early_us) {
        a->timer_at = 0;
        a->timeout(a->target);
    }
}
