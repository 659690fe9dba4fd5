/*
 * The event-loop API through <redislock/libev.h>, on libev's own loop: the
 * adapters' scenarios (harness/adapters.h).
 */
#include <stdlib.h>

#include <redislock/libev.h>

#include "harness/adapters.h"
#include "test.h"

typedef struct lvh {
    struct ev_loop *ev;
    ev_timer tick;
    redislock_libev *a;
} lvh;

static void lv_tick(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)t;
    (void)revents;
}

static void *lv_open(redislock_client *c, redislock_loop **lp)
{
    lvh *h = calloc(1, sizeof *h);

    ASSERT(h != NULL);
    ASSERT((h->ev = ev_loop_new(EVFLAG_AUTO)) != NULL);
    ev_timer_init(&h->tick, lv_tick, 0.05, 0.);
    ASSERT_OK(redislock_libev_new(&h->a, c, h->ev));
    *lp = redislock_libev_loop(h->a);
    return h;
}

static void lv_turn(void *p)
{
    lvh *h = p;

    ev_timer_stop(h->ev, &h->tick);
    ev_timer_set(&h->tick, 0.05, 0.);
    ev_timer_start(h->ev, &h->tick);
    ev_run(h->ev, EVRUN_ONCE);
}

static void lv_close(void *p)
{
    lvh *h = p;

    redislock_libev_free(h->a);
    ev_timer_stop(h->ev, &h->tick);
    ev_loop_destroy(h->ev);
    free(h);
}

static void lv_stop_at(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)revents;
    *(int *)t->data = 1;
    ev_break(ev, EVBREAK_ALL);
}

/* ev_run as a program runs it, the guard timer unreferenced (ev_unref):
 * it does not keep the loop going. */
static int lv_run(void *p, int64_t ms)
{
    lvh *h = p;
    ev_timer guard;
    int stopped = 0;

    ev_timer_stop(h->ev, &h->tick);
    ev_timer_init(&guard, lv_stop_at, (ev_tstamp)ms / 1000.0, 0.);
    guard.data = &stopped;
    ev_timer_start(h->ev, &guard);
    ev_unref(h->ev);
    ev_run(h->ev, 0);
    ev_ref(h->ev);
    ev_timer_stop(h->ev, &guard);
    return !stopped;
}

static const driver libev_driver = {"libev", lv_open, lv_turn, lv_close,
                                    lv_run};

void test_adapter_libev(void)
{
    adapter_scenarios(&libev_driver);
}
