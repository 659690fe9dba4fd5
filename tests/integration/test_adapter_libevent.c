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

static const driver libevent_driver = {"libevent", ev_open, ev_turn, ev_close};

void test_adapter_libevent(void)
{
    adapter_scenarios(&libevent_driver);
}
