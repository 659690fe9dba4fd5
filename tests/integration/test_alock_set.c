/*
 * Sets of keys on the event loop (redislock_loop(3) with
 * redislock_lock_new_multi), under the tests' own application loop, one
 * thread: a set is taken all or none by one script, waits behind the key
 * that refused it and is woken by that key's release (whichever of its
 * keys that is, turn after turn), is released, extended and renewed as a
 * whole, and an attempt given up holds none of its keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/keysets.h"
#include "test.h"

/* Every test here runs on the tests' poll() loop. */
static const driver *const d = &adapter_poll;

#define SETS 6
/* The loop's blockers per server (RL_LOOP_BLOCKERS): as many waiters
 * behind another key take them all first, so that the sets wait on the
 * wake channels. */
#define FILLERS 8

/* Behind two 30 s leases on two of its keys, SETS sets of the same three
 * keys wait on one loop. The release of the first blocking key wakes
 * them, and leaves the key that now refuses them another: they must
 * listen to that key's wake-ups, or they wait out the leases. Once both
 * are released one set holds all three keys, the others take them in
 * turn, and none ever holds a part of its set. */
void test_alock_set_waits_behind_each_key(void)
{
    th_env e = th_env_start();
    const char *k[3] = {"aset:a", "aset:b", "aset:c"};
    redislock_lock *ha = th_lock(e.c, "aset:a"), *hc = th_lock(e.c, "aset:c");
    redislock_lock *hf = th_lock(e.c, "aset:f");
    redislock_lock *s[SETS], *f[FILLERS];
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    ad_done dn[SETS], df[FILLERS], dr = {0};
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    int64_t t0;
    int i, j, held;

    memset(df, 0, sizeof df);
    ASSERT_OK(redislock_acquire(hf, &o));
    o = th_aopts(5000, 20000, 0);
    for (i = 0; i < FILLERS; i++) {
        f[i] = th_lock(e.c, "aset:f");
        ASSERT_OK(redislock_loop_acquire(lp, f[i], &o, ad_record, &df[i]));
    }
    ad_run_for(d, h, 300);
    o = th_aopts(30000, 0, 0);
    memset(dn, 0, sizeof dn);
    ASSERT_OK(redislock_acquire(ha, &o));
    ASSERT_OK(redislock_acquire(hc, &o));
    o = th_aopts(5000, 10000, 0);
    for (i = 0; i < SETS; i++) {
        s[i] = th_lock_set(e.c, k, 3);
        ASSERT_OK(redislock_loop_acquire(lp, s[i], &o, ad_record, &dn[i]));
    }
    ad_run_for(d, h, 300);
    /* All or none: nothing of a set beside the holders' keys. */
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 2);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(ha));
    ad_run_for(d, h, 300);
    for (i = 0; i < SETS; i++)
        ASSERT_EQ_INT(dn[i].calls, 0);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 1);
    ASSERT_OK(redislock_release(hc));
    /* Each set in turn: held alone and whole, then released on the loop. */
    for (j = 0; j < SETS; j++) {
        int64_t until = rl__now_us() + 3000000;

        for (;;) {
            for (held = -1, i = 0; i < SETS; i++)
                if (dn[i].calls == 1 && redislock_token(s[i]) != NULL &&
                    dr.calls == j)
                    if (th_keys_holding(e.r, k, 3, redislock_token(s[i])) == 3)
                        held = i;
            if (held >= 0 || rl__now_us() > until)
                break;
            d->turn(h);
        }
        ASSERT(held >= 0);
        ASSERT_ERR(dn[held].err, REDISLOCK_OK);
        ASSERT_OK(redislock_loop_release(lp, s[held], 0, ad_record, &dr));
        ad_run_until(d, h, &dr.calls, j + 1, 3000);
        ASSERT_ERR(dr.err, REDISLOCK_OK);
    }
    test_log("%d sets through two 30 s leases in %lld ms", SETS,
             (long long)((rl__now_us() - t0) / 1000));
    for (i = 0; i < SETS; i++)
        ASSERT_EQ_INT(dn[i].calls, 1);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);
    for (i = 0; i < FILLERS; i++)
        ASSERT_EQ_INT(df[i].calls, 0);
    d->close(h);
    for (i = 0; i < FILLERS; i++) {
        ASSERT_EQ_INT(df[i].calls, 1);
        ASSERT_ERR(df[i].err, REDISLOCK_ECANCELED);
        redislock_lock_free(f[i]);
    }
    for (i = 0; i < SETS; i++)
        redislock_lock_free(s[i]);
    redislock_lock_free(hf);
    redislock_lock_free(ha);
    redislock_lock_free(hc);
    th_env_stop(&e);
}

/* A set's lease on the loop: an extend lengthens every key's, the
 * watchdog renews every key's, and a key taken from under it is reported
 * as the set's loss, on the loop. */
void test_alock_set_extend_and_watchdog(void)
{
    th_env e = th_env_start();
    const char *k[3] = {"asw:a", "asw:b", "asw:c"};
    const char *w[2] = {"asw:x", "asw:y"};
    redislock_lock *s = th_lock_set(e.c, k, 3), *x = th_lock_set(e.c, w, 2);
    redislock_acquire_options o = th_aopts(2000, 0, 0);
    ad_done dn = {0}, dx = {0};
    ad_lost gl = {0}, gx = {0};
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    int i;

    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_extend(lp, s, 60000, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    for (i = 0; i < 3; i++)
        ASSERT(th_cmd_int(e.r, "PTTL %s", k[i]) > 50000);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 3, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);

    /* Renewed: 600 ms leases held for 1.8 s; y replaced under x. */
    o = th_aopts(600, 0, 0);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &gl;
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    o.on_lost_arg = &gx;
    ASSERT_OK(redislock_loop_acquire(lp, x, &o, ad_record, &dx));
    ad_run_until(d, h, &dn.calls, 4, 3000);
    ad_run_until(d, h, &dx.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_ERR(dx.err, REDISLOCK_OK);
    th_cmd_int(e.r, "DEL asw:y");
    freeReplyObject(th_cmd(e.r, "SET asw:y intruder PX 60000"));
    ad_run_for(d, h, 1800);
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 3, redislock_token(s)), 3);
    ASSERT(redislock_valid_ms(s) > 0);
    ASSERT_EQ_INT(gl.calls, 0);
    ASSERT_EQ_INT(gx.calls, 1);
    ASSERT_ERR(gx.why, REDISLOCK_ELOST);
    ASSERT_ERR(redislock_check(x), REDISLOCK_ELOST);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 5, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);
    ASSERT_EQ_INT(gl.calls, 0);
    d->close(h);
    redislock_lock_free(s);
    redislock_lock_free(x);
    th_env_stop(&e);
}

/* A set's attempt in flight when its acquire is cancelled, and when its
 * loop is freed: the attempt is made to hold none of the keys, on the
 * loop while it lives and by the janitor after; the keys are free for
 * the next. (A set whose keys no one script reaches: test_alock_spread.c.) */
void test_alock_set_cancel_and_refused(void)
{
    th_env e = th_env_start();
    const char *k[3] = {"asc:a", "asc:b", "asc:c"};
    redislock_lock *s = th_lock_set(e.c, k, 3), *t = th_lock_set(e.c, k, 3);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    ad_done dn = {0};
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    int i;

    /* Taken and given back first, so that the loop is connected: the
     * attempts below are written at once. */
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    for (i = 0; i < 20; i++) {
        /* Cancelled as soon as written: the server runs it, then the
         * sweep that undoes it. */
        ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
        redislock_loop_cancel(lp, s);
        ASSERT_EQ_INT(dn.calls, i + 3);
        ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
        d->turn(h);
    }
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);
    ASSERT_OK(redislock_acquire(t, &o));
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 3, redislock_token(t)), 3);
    ASSERT_OK(redislock_release(t));
    /* The loop freed with the attempt out: the janitor finishes it. */
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    d->close(h);
    ASSERT_EQ_INT(dn.calls, 23);
    ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
    o.wait_ms = 3000;
    ASSERT_OK(redislock_acquire(t, &o));
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 3, redislock_token(t)), 3);
    ASSERT_OK(redislock_release(t));
    redislock_lock_free(s);
    redislock_lock_free(t);
    th_env_stop(&e);
}
