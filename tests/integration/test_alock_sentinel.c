/*
 * A Sentinel client on the event loop (redislock_loop(3)), under the
 * tests' own application loop, one thread: its master killed while a
 * lock is held, renewed and waited for, the loop asks the sentinels
 * itself, and the release, the waiter, a new lock and the renewals reach
 * the promoted replica, with nothing ever blocking the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "test.h"

/* Every test here runs on the tests' poll() loop. */
static const driver *const d = &adapter_poll;

/* Waiters behind the held lock: more than the loop's 8 blockers, so that
 * some listen on the wake channel. */
#define WAITERS 10

/* Generous: a split vote retries after twice the failover timeout. */
#define FAILOVER_MS 30000

/* key's value on node i (NULL: none). */
static char *on_node(th_sentinels *t, int i, const char *key)
{
    redisContext *r = th_sentinels_node_redis(t, i);
    char *v = th_cmd_str(r, NULL, "GET %s", key);

    redisFree(r);
    return v;
}

/* How long one turn of the loop took at most while ms ran. */
static int64_t run_for_slowest(void *h, int64_t ms)
{
    int64_t end = rl__now_us() + ms * 1000, most = 0, t0, took;

    while ((t0 = rl__now_us()) < end) {
        d->turn(h);
        if ((took = rl__now_us() - t0) > most)
            most = took;
    }
    return most / 1000;
}

/*
 * The master dies with a lock held (replicated), a waiter behind it and a
 * renewed lock. The release sent then cannot reach it: the loop asks the
 * sentinels, waits for the one they promote and releases there, which
 * wakes the waiter; a new acquire and the renewals go there too. No turn
 * of the loop takes long (nothing blocks), and every callback comes once.
 */
void test_alock_sentinel_failover(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options co = {0};
    redislock_client *c;
    redislock_acquire_options o = th_aopts(20000, 0, 0);
    redislock_lock *held, *dog, *n;
    static ad_turns tw;
    ad_done dh = {0}, dd = {0}, dn = {0};
    ad_lost gl = {0};
    redislock_loop *lp;
    void *h;
    redisContext *r;
    int64_t killed, slowest;
    char *v;
    int i;

    co.command_timeout_ms = 6000;
    c = th_client_url(t->url, &co);
    h = d->open(c, &lp);
    held = th_lock(c, "asf:held");
    memset(&tw, 0, sizeof tw);
    tw.lp = lp;
    dog = th_lock(c, "asf:dog");
    n = th_lock(c, "asf:new");
    ASSERT_OK(redislock_loop_acquire(lp, held, &o, ad_record, &dh));
    ad_run_until(d, h, &dh.calls, 1, 5000);
    ASSERT_ERR(dh.err, REDISLOCK_OK);
    o = th_aopts(8000, 0, 0);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &gl;
    ASSERT_OK(redislock_loop_acquire(lp, dog, &o, ad_record, &dd));
    ad_run_until(d, h, &dd.calls, 1, 5000);
    ASSERT_ERR(dd.err, REDISLOCK_OK);
    o = th_aopts(20000, 25000, 0);
    for (i = 0; i < WAITERS; i++) {
        tw.w[i] = th_lock(c, "asf:held");
        ASSERT_OK(redislock_loop_acquire(lp, tw.w[i], &o, ad_turn, &tw));
    }
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(tw.released, 0);
    /* Both locks on the replica before the master goes. */
    r = th_sentinels_node_redis(t, 0);
    ASSERT_EQ_INT(th_cmd_int(r, "WAIT 1 5000"), 1);
    redisFree(r);

    killed = th_now_ms();
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    /* The loop sees its connections closed (a request written to one
     * before that would have lost its reply: REDISLOCK_EIO). */
    ad_run_for(d, h, 100);
    ASSERT_OK(redislock_loop_release(lp, held, 0, ad_record, &dh));
    ad_run_until(d, h, &dh.calls, 2, 15000);
    test_log("release on the promoted replica %lld ms after the kill: %s",
             (long long)(th_now_ms() - killed), redislock_strerror(dh.err));
    ASSERT_ERR(dh.err, REDISLOCK_OK);
    /* Each waiter in turn, those on the channel too (a wake-up lost with
     * the old master's subscription must not leave them to their
     * pauses: 20 s). */
    ad_run_until(d, h, &tw.released, WAITERS, 10000);
    test_log("%d waiters had their turns %lld ms after the kill", WAITERS,
             (long long)(th_now_ms() - killed));
    for (i = 0; i < WAITERS; i++)
        ASSERT_EQ_INT(tw.d[i].calls, 1);
    v = on_node(t, 1, "asf:held");
    ASSERT(v == NULL);
    free(v);
    o = th_aopts(20000, 0, 0);
    ASSERT_OK(redislock_loop_acquire(lp, n, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    v = on_node(t, 1, "asf:new");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(n));
    free(v);
    /* Renewed at the new master within a renewal period (8 s / 3), and
     * no turn of the loop blocked meanwhile. */
    slowest = run_for_slowest(h, 3000);
    test_log("slowest turn of the loop after the failover: %lld ms",
             (long long)slowest);
    ASSERT_LT(slowest, 500);
    ASSERT_OK(redislock_check(dog));
    ASSERT_EQ_INT(gl.calls, 0);
    v = on_node(t, 1, "asf:dog");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(dog));
    free(v);
    r = th_sentinels_node_redis(t, 1);
    ASSERT_GT(th_pttl(r, "asf:dog"), 4000);
    redisFree(r);
    ASSERT_OK(redislock_loop_release(lp, n, 0, ad_record, &dn));
    ASSERT_OK(redislock_loop_release(lp, dog, 0, ad_record, &dd));
    ad_run_until(d, h, &dn.calls, 2, 5000);
    ad_run_until(d, h, &dd.calls, 2, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_ERR(dd.err, REDISLOCK_OK);
    ASSERT_EQ_INT(dh.calls, 2);
    d->close(h);
    redislock_lock_free(n);
    redislock_lock_free(dog);
    for (i = 0; i < WAITERS; i++)
        redislock_lock_free(tw.w[i]);
    redislock_lock_free(held);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/* The loop is freed while a release waits out the failover (the master
 * killed, the sentinels not yet agreed): its callback comes at once with
 * REDISLOCK_ECANCELED, and nothing the router held is left (ASan,
 * valgrind). */
void test_alock_sentinel_freed_mid_failover(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options co = {0};
    redislock_client *c;
    redislock_acquire_options o = th_aopts(20000, 0, 0);
    redislock_lock *l;
    ad_done dl = {0};
    redislock_loop *lp;
    void *h;

    co.command_timeout_ms = 6000;
    c = th_client_url(t->url, &co);
    h = d->open(c, &lp);
    l = th_lock(c, "asf:freed");
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dl));
    ad_run_until(d, h, &dl.calls, 1, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    ad_run_for(d, h, 100);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dl));
    /* Less than the sentinels' down-after time (1 s): still waiting. */
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(dl.calls, 1);
    d->close(h);
    ASSERT_EQ_INT(dl.calls, 2);
    ASSERT_ERR(dl.err, REDISLOCK_ECANCELED);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/*
 * A loop waiter's wait lasts through a failover: it waits (40 s) behind
 * a lock renewed by a blocking client's watchdog, with a command timeout
 * (300 ms) far shorter than the sentinels' down-after time (1 s). kill
 * -9 of the master: its attempts find no master for a while, and it
 * pauses on the loop until the sentinels name the promoted replica,
 * rather than end with the first REDISLOCK_ECONNECT. The holder's
 * release there frees the key, and the waiter gets it at the new master.
 */
void test_alock_sentinel_waiter_waits_through_failover(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options co = {0};
    redislock_client *hc = th_client_url(t->url, NULL), *c;
    redislock_acquire_options ho = th_aopts(4000, 0, 0);
    redislock_acquire_options o = th_aopts(20000, 40000, 0);
    redislock_lock *h = th_lock(hc, "asw:held"), *w;
    ad_done dw = {0};
    redislock_loop *lp;
    redisContext *r;
    int64_t killed, failed_over;
    redislock_err err;
    void *lh;
    char *v;

    co.command_timeout_ms = 300;
    c = th_client_url(t->url, &co);
    lh = d->open(c, &lp);
    w = th_lock(c, "asw:held");
    ho.watchdog = 1;
    ASSERT_OK(redislock_acquire(h, &ho));
    ASSERT_OK(redislock_loop_acquire(lp, w, &o, ad_record, &dw));
    ad_run_for(d, lh, 300);
    ASSERT_EQ_INT(dw.calls, 0);
    r = th_sentinels_node_redis(t, 0);
    ASSERT_EQ_INT(th_cmd_int(r, "WAIT 1 5000"), 1);
    redisFree(r);
    killed = th_now_ms();
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    /* The loop turns while the sentinels fail over: the waiter waits on
     * (its callback would come with REDISLOCK_ECONNECT). */
    while (th_sentinels_master(t) != 1) {
        ad_run_for(d, lh, 50);
        ASSERT(th_now_ms() - killed < FAILOVER_MS);
        if (dw.calls != 0)
            break;
    }
    failed_over = th_now_ms() - killed;
    test_log("the sentinels named the new master %lld ms after the kill; "
             "the waiter's callbacks by then: %d (%s: %s)",
             (long long)failed_over, dw.calls, redislock_strerror(dw.err),
             dw.detail);
    ASSERT_EQ_INT(dw.calls, 0);
    err = redislock_release(h);
    test_log("the holder's release after the failover: %s",
             redislock_strerror(err));
    ad_run_until(d, lh, &dw.calls, 1, 10000);
    test_log("the waiter got the lock %lld ms after the kill",
             (long long)(dw.at_us / 1000 - killed));
    ASSERT_ERR(dw.err, REDISLOCK_OK);
    v = on_node(t, 1, "asw:held");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(w));
    free(v);
    ASSERT_OK(redislock_loop_release(lp, w, 0, ad_record, &dw));
    ad_run_until(d, lh, &dw.calls, 2, 5000);
    ASSERT_ERR(dw.err, REDISLOCK_OK);
    d->close(lh);
    redislock_lock_free(w);
    redislock_lock_free(h);
    redislock_client_free(c);
    redislock_client_free(hc);
    th_sentinels_stop(t);
}

/* How long the switch test watches the new master: past two leases of
 * the holder's (3 s) after the failover, before the sentinels demote
 * the old master (their next INFO round, 10 s). */
#define SWITCH_WATCH_MS 6000

static void count_lost(const redislock_event *ev, void *arg)
{
    if (ev->kind == REDISLOCK_EVENT_RETRY && ev->err == REDISLOCK_EIO)
        ++*(int *)arg;
}

/*
 * A loop waiter whose attempt was out when the master died (frozen,
 * the attempt sent on the loop's open connection, then kill -9): its
 * reply lost (REDISLOCK_EIO), the attempt is swept on the loop and the
 * waiter waits on (10 s) with a fresh token through the failover,
 * getting the lock at the promoted replica.
 */
void test_alock_sentinel_waiter_waits_through_lost_reply(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options co = {0};
    redislock_acquire_options o = th_aopts(5000, 10000, 0);
    redislock_client *c;
    redislock_lock *l;
    redislock_loop *lp;
    ad_done dl = {0};
    int lost = 0;
    void *h;
    char *v;

    co.command_timeout_ms = 3000;
    co.on_event = count_lost;
    co.on_event_arg = &lost;
    c = th_client_url(t->url, &co);
    h = d->open(c, &lp);
    l = th_lock(c, "asl:lock");
    /* The loop's connection to the master, open before it is frozen. */
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dl));
    ad_run_until(d, h, &dl.calls, 1, 5000);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dl));
    ad_run_until(d, h, &dl.calls, 2, 5000);
    th_server_pause(t->node[0]);
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dl));
    /* Sent at the first turn: nothing says when it has gone out. */
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    ad_run_until(d, h, &dl.calls, 3, 10000);
    test_log("the waiter: %s (%s); lost replies waited on: %d",
             redislock_strerror(dl.err), dl.detail, lost);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    ASSERT_GT(lost, 0);
    v = on_node(t, 1, "asl:lock");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(l));
    free(v);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dl));
    ad_run_until(d, h, &dl.calls, 4, 5000);
    d->close(h);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/*
 * A planned failover (SENTINEL FAILOVER) leaves the old master up, and a
 * master by its own word until the sentinels demote it. A lock the loop
 * renews (TTL 3 s) follows the switch: a renewal that lands on the old
 * master once the sentinels name the new one is not a renewal, and goes
 * to the new master, which has the key by replication. A rival polling
 * the new master with SET NX between the loop's turns must never get
 * the key while the holder believes it holds. Fails before the fix.
 */
void test_alock_sentinel_renewal_follows_switch(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c = th_client_url(t->url, NULL);
    redislock_acquire_options o = th_aopts(3000, 0, 0);
    redisContext *s = th_sentinels_sentinel_redis(t, 0);
    ad_holder x = {.d = d};
    ad_done dl = {0};
    redislock_loop *lp;
    int64_t got;
    int held = 0;
    char *v;

    x.l = th_lock(c, "ass:k");
    x.h = d->open(c, &lp);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &x.lost;
    ASSERT_OK(redislock_loop_acquire(lp, x.l, &o, ad_record, &dl));
    ad_run_until(d, x.h, &dl.calls, 1, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    freeReplyObject(th_cmd(s, "SENTINEL FAILOVER %s", t->master_name));
    got = th_sentinels_rival(t, 1, "ass:k", SWITCH_WATCH_MS, ad_holder_turn,
                             ad_holder_holds, &x, &held);
    ASSERT(!(got >= 0 && held));
    if (got < 0) {
        /* No false loss: the lease renewed at the new master. */
        ASSERT(ad_holder_holds(&x));
        v = on_node(t, 1, "ass:k");
        ASSERT_VALUE_IS_TOKEN(v, redislock_token(x.l));
        free(v);
        ASSERT_OK(redislock_loop_release(lp, x.l, 0, ad_record, &dl));
        ad_run_until(d, x.h, &dl.calls, 2, 5000);
        ASSERT_ERR(dl.err, REDISLOCK_OK);
    }
    d->close(x.h);
    redisFree(s);
    redislock_lock_free(x.l);
    redislock_client_free(c);
    th_sentinels_stop(t);
}
