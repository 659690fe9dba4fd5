/*
 * Fair (FIFO) waiters on the event loop (redislock_loop(3)), under the
 * tests' own application loop, one thread: they queue in the order they
 * asked, each is handed the lock by the release before it (behind a
 * 30 s lease, only hand-offs get them in), and one that gives up or is
 * cancelled leaves the queue, so the next release hands the lock past
 * it at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness/adapters.h"
#include "harness/fixture.h"
#include "test.h"

#define WAITERS 6

/* Every test here runs on the tests' poll() loop. */
static const driver *const d = &adapter_poll;

typedef struct queue {
    redislock_loop *lp;
    redisContext *r;
    redislock_lock *l[WAITERS];
    ad_done d[WAITERS];
    int order[WAITERS];
    int acquired, released;
} queue;

static void queue_released(redislock_lock *l, redislock_err err, void *arg)
{
    queue *q = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    q->released++;
}

/* Handed the lock: it holds it alone (its token is the key's), in its
 * turn; given back at once, to the next in the queue. */
static void queue_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    queue *q = arg;
    char *v;
    int i;

    for (i = 0; q->l[i] != l; i++)
        ;
    ad_record(l, err, &q->d[i]);
    ASSERT_ERR(err, REDISLOCK_OK);
    v = th_cmd_str(q->r, NULL, "GET af:k");
    ASSERT(v != NULL);
    ASSERT_EQ_STR(v, redislock_token(l));
    free(v);
    q->order[q->acquired++] = i;
    ASSERT_OK(redislock_loop_release(q->lp, l, 0, queue_released, q));
}

/* Six fair waiters on one loop behind a 30 s lease: the lock goes to
 * each in the order they asked, by hand-offs, all within 3 s. */
void test_alock_fair_fifo(void)
{
    th_env e = th_env_start();
    redislock_lock *holder = th_lock(e.c, "af:k");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    static queue q;
    void *h;
    int64_t t0;
    int i;

    memset(&q, 0, sizeof q);
    q.r = e.r;
    h = d->open(e.c, &q.lp);
    ASSERT_OK(redislock_acquire(holder, &o));
    o = th_aopts(5000, 10000, 0);
    o.fair = 1;
    /* Their first attempts go out in this order on the loop's one
     * request connection: the queue's order. */
    for (i = 0; i < WAITERS; i++) {
        q.l[i] = th_lock(e.c, "af:k");
        ASSERT_OK(redislock_loop_acquire(q.lp, q.l[i], &o, queue_acquired, &q));
    }
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(q.acquired, 0);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    ad_run_until(d, h, &q.released, WAITERS, 3000);
    test_log("%d fair waiters through a 30 s lease in %lld ms", WAITERS,
             (long long)((rl__now_us() - t0) / 1000));
    for (i = 0; i < WAITERS; i++) {
        ASSERT_EQ_INT(q.order[i], i);
        ASSERT_EQ_INT(q.d[i].calls, 1);
    }
    d->close(h);
    for (i = 0; i < WAITERS; i++)
        redislock_lock_free(q.l[i]);
    redislock_lock_free(holder);
    th_env_stop(&e);
}

/* Behind a 30 s lease, a fair waiter whose 300 ms wait runs out
 * (REDISLOCK_EHELD by then) and one cancelled leave the queue: the
 * release hands the lock past them to the third at once. */
void test_alock_fair_leaves_queue(void)
{
    th_env e = th_env_start();
    redislock_lock *holder = th_lock(e.c, "af:k");
    redislock_lock *l[3];
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    ad_done dn[3];
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    int64_t t0;
    int i;

    memset(dn, 0, sizeof dn);
    ASSERT_OK(redislock_acquire(holder, &o));
    for (i = 0; i < 3; i++)
        l[i] = th_lock(e.c, "af:k");
    o = th_aopts(5000, 300, 0);
    o.fair = 1;
    t0 = rl__now_us();
    ASSERT_OK(redislock_loop_acquire(lp, l[0], &o, ad_record, &dn[0]));
    o.wait_ms = 10000;
    ASSERT_OK(redislock_loop_acquire(lp, l[1], &o, ad_record, &dn[1]));
    ASSERT_OK(redislock_loop_acquire(lp, l[2], &o, ad_record, &dn[2]));
    ad_run_until(d, h, &dn[0].calls, 1, 3000);
    ASSERT_ERR(dn[0].err, REDISLOCK_EHELD);
    ASSERT((dn[0].at_us - t0) / 1000 >= 300 - 20);
    ASSERT_LT((dn[0].at_us - t0) / 1000, 300 + 250);
    redislock_loop_cancel(lp, l[1]);
    ASSERT_EQ_INT(dn[1].calls, 1);
    ASSERT_ERR(dn[1].err, REDISLOCK_ECANCELED);
    /* Their leave requests go out before the release below. */
    ad_run_for(d, h, 100);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    ad_run_until(d, h, &dn[2].calls, 1, 3000);
    ASSERT_ERR(dn[2].err, REDISLOCK_OK);
    ASSERT_LT((dn[2].at_us - t0) / 1000, 500);
    ASSERT_OK(redislock_loop_release(lp, l[2], 0, ad_record, &dn[2]));
    ad_run_until(d, h, &dn[2].calls, 2, 3000);
    ASSERT_ERR(dn[2].err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    d->close(h);
    for (i = 0; i < 3; i++)
        redislock_lock_free(l[i]);
    redislock_lock_free(holder);
    th_env_stop(&e);
}
