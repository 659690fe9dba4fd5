/*
 * The event-loop API through <redislock/libevent.h>, on libevent's own loop:
 * the adapters' scenarios (harness/adapters.h).
 */
#include <stdlib.h>

#include <redislock/libevent.h>

#include "harness/adapters.h"
#include "test.h"

typedef struct evh {
    struct event_base *base;
    redislock_libevent *a;
} evh;

static void *ev_open(redislock_client *c, redislock_loop **lp)
{
    evh *h = calloc(1, sizeof *h);

    ASSERT(h != NULL);
    ASSERT((h->base = event_base_new()) != NULL);
    ASSERT_OK(redislock_libevent_new(&h->a, c, h->base));
    *lp = redislock_libevent_loop(h->a);
    return h;
}

static void ev_turn(void *p)
{
    evh *h = p;
    struct timeval tv = {0, 50000};

    event_base_loopexit(h->base, &tv);
    event_base_loop(h->base, EVLOOP_ONCE);
}

static void ev_close(void *p)
{
    evh *h = p;

    redislock_libevent_free(h->a);
    event_base_free(h->base);
    free(h);
}

static void ev_stop_at(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

/* event_base_dispatch as a program calls it. libevent has no event that
 * leaves the loop free to end, so the guard timer counts: the loop turns
 * while any other event is added, then the dispatch itself, which
 * returns at once (1: nothing added) once none is. */
static int ev_run_all(void *p, int64_t ms)
{
    evh *h = p;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
    struct event *guard;
    int stopped = 0;

    ASSERT((guard = evtimer_new(h->base, ev_stop_at, &stopped)) != NULL);
    evtimer_add(guard, &tv);
    while (!stopped &&
           event_base_get_num_events(h->base, EVENT_BASE_COUNT_ADDED) > 1)
        event_base_loop(h->base, EVLOOP_ONCE);
    event_free(guard);
    if (stopped)
        return 0;
    ASSERT_EQ_INT(event_base_dispatch(h->base), 1);
    return 1;
}

static const driver libevent_driver = {"libevent", ev_open, ev_turn, ev_close,
                                       ev_run_all};

void test_adapter_libevent(void)
{
    adapter_scenarios(&libevent_driver);
}
