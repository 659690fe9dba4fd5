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
#include "harness/util.h"
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

/* redislock_loop_inspect lists a fair queue's waiters as
 * redislock_inspect does: in the order they asked, an owner id shown and
 * a plain waiter's token not. */
void test_alock_fair_inspect_waiters(void)
{
    th_env e = th_env_start();
    redislock_lock *holder = th_lock(e.c, "af:k"), *seer = th_lock(e.c, "af:k");
    redislock_lock *l[2];
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_info info;
    ad_done dn[3];
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    int64_t t0;
    int i;

    memset(dn, 0, sizeof dn);
    ASSERT_OK(redislock_acquire(holder, &o));
    o = th_aopts(5000, 10000, 0);
    o.fair = 1;
    o.owner = "lw-1";
    for (i = 0; i < 2; i++) {
        l[i] = th_lock(e.c, "af:k");
        ASSERT_OK(redislock_loop_acquire(lp, l[i], &o, ad_record, &dn[i]));
        o.owner = NULL;
    }
    for (t0 = th_now_ms(); th_cmd_int(e.r, "ZCARD af:k{af:k}:rl-q") != 2;
         ad_run_for(d, h, 5))
        ASSERT_LT(th_now_ms() - t0, 5000);
    ASSERT_OK(redislock_loop_inspect(lp, seer, &info, ad_record, &dn[2]));
    ad_run_until(d, h, &dn[2].calls, 1, 3000);
    ASSERT_ERR(dn[2].err, REDISLOCK_OK);
    ASSERT_EQ_INT(info.nwaiters, 2);
    ASSERT_EQ_INT(info.queued, 2);
    ASSERT_EQ_STR(info.waiters[0].owner, "lw-1");
    ASSERT(info.waiters[1].owner == NULL);
    ASSERT_GE(info.waiters[0].waited_ms, info.waiters[1].waited_ms);
    for (i = 0; i < 2; i++) {
        redislock_loop_cancel(lp, l[i]);
        ASSERT_ERR(dn[i].err, REDISLOCK_ECANCELED);
    }
    ASSERT_OK(redislock_release(holder));
    d->close(h);
    for (i = 0; i < 2; i++)
        redislock_lock_free(l[i]);
    redislock_lock_free(seer);
    redislock_lock_free(holder);
    th_env_stop(&e);
}
