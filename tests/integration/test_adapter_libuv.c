/*
 * The event-loop API through <redislock/libuv.h>, on libuv's own loop: the
 * adapters' scenarios (harness/adapters.h).
 */
#include <stdlib.h>

#include <redislock/libuv.h>

#include "harness/adapters.h"
#include "test.h"

typedef struct uvh {
    uv_loop_t uv;
    uv_timer_t tick;
    redislock_libuv *a;
} uvh;

static void uv_tick(uv_timer_t *t)
{
    (void)t;
}

static void *uv_open(redislock_client *c, redislock_loop **lp)
{
    uvh *h = calloc(1, sizeof *h);

    ASSERT(h != NULL);
    ASSERT_EQ_INT(uv_loop_init(&h->uv), 0);
    ASSERT_EQ_INT(uv_timer_init(&h->uv, &h->tick), 0);
    ASSERT_OK(redislock_libuv_new(&h->a, c, &h->uv));
    *lp = redislock_libuv_loop(h->a);
    return h;
}

static void uv_turn(void *p)
{
    uvh *h = p;

    uv_timer_start(&h->tick, uv_tick, 50, 0);
    uv_run(&h->uv, UV_RUN_ONCE);
}

static void uv_close_all(void *p)
{
    uvh *h = p;

    redislock_libuv_free(h->a);
    uv_close((uv_handle_t *)&h->tick, NULL);
    /* The handles' close callbacks free them. */
    uv_run(&h->uv, UV_RUN_DEFAULT);
    ASSERT_EQ_INT(uv_loop_close(&h->uv), 0);
    free(h);
}

static void uv_stop_at(uv_timer_t *t)
{
    *(int *)t->data = 1;
    uv_stop(t->loop);
}

/* uv_run as a program runs it, the guard timer unreferenced: it does not
 * keep the loop going. */
static int uv_run_all(void *p, int64_t ms)
{
    uvh *h = p;
    uv_timer_t guard;
    int stopped = 0;

    uv_timer_stop(&h->tick);
    ASSERT_EQ_INT(uv_timer_init(&h->uv, &guard), 0);
    guard.data = &stopped;
    uv_timer_start(&guard, uv_stop_at, (uint64_t)ms, 0);
    uv_unref((uv_handle_t *)&guard);
    uv_run(&h->uv, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(&h->uv, UV_RUN_NOWAIT);
    return !stopped;
}

static const driver libuv_driver = {"libuv", uv_open, uv_turn, uv_close_all,
                                    uv_run_all};

void test_adapter_libuv(void)
{
    adapter_scenarios(&libuv_driver);
}
