/*
 * A Redlock client on the event loop (redislock_loop(3)), under the
 * tests' own application loop, one thread: each request goes to the three
 * servers at once as a round, and a majority decides, as in the blocking
 * calls. Contended and many-at-once acquires (each holder alone on a
 * majority), inspect, a stopped server (the round goes on without it) and
 * two (no quorum, the attempt undone where it was granted), the loop's
 * renewals and a loss, a deadline, a cancelled wait, a handle and a loop
 * freed with an attempt out (undone all the same).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/util.h"
#include "test.h"

#define KEYS 40
#define CONTENDERS 8

/* Every test here runs on the tests' poll() loop. */
static const driver *const d = &adapter_poll;

/* Turns the loop until none of the first n servers has key, within ms. */
static void run_until_gone(void *h, th_servers *sv, int n, const char *key,
                           int64_t ms)
{
    int64_t end = rl__now_us() + ms * 1000;
    int i, left;

    for (;;) {
        for (i = 0, left = 0; i < n; i++)
            left += (int)th_cmd_int(sv->r[i], "EXISTS %s", key);
        if (left == 0)
            return;
        if (rl__now_us() > end)
            test_fail_(__FILE__, __LINE__,
                       "%s still on %d servers after %lld ms", key, left,
                       (long long)ms);
        d->turn(h);
    }
}

/* Contenders for one key and many keys at once. */
typedef struct crowd {
    redislock_loop *lp;
    th_servers *sv;
    redislock_lock *l[CONTENDERS + KEYS];
    ad_done d[CONTENDERS + KEYS];
    int acquired, released;
} crowd;

static void crowd_released(redislock_lock *l, redislock_err err, void *arg)
{
    crowd *c = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    c->released++;
}

/* A contender holds the key alone: a majority has its token when it
 * hears, so no other token is on a majority then (the previous holder's
 * release has run there, though its own round may be decided later: a
 * release sent again whole after NOSCRIPT goes behind later requests on
 * that server). Given back at once. */
static void crowd_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    crowd *c = arg;
    int i;

    for (i = 0; c->l[i] != l; i++)
        ;
    ad_record(l, err, &c->d[i]);
    ASSERT_ERR(err, REDISLOCK_OK);
    ASSERT(redislock_valid_ms(l) > 0);
    if (i < CONTENDERS) {
        ASSERT_LE(2, th_servers_holding(c->sv, "alr:k", redislock_token(l)));
    } else {
        size_t len;
        const char *key = redislock_key(l, &len);
        char k[32];

        snprintf(k, sizeof k, "%.*s", (int)len, key);
        ASSERT_EQ_INT(th_servers_holding(c->sv, k, redislock_token(l)), 3);
    }
    c->acquired++;
    ASSERT_OK(redislock_loop_release(c->lp, l, 0, crowd_released, c));
}

/* A Redlock client of sv's servers that waits timeout_ms for each. */
static redislock_client *redlock(th_servers *sv, int64_t timeout_ms)
{
    redislock_options co = {0};
    redislock_client *c = NULL;

    co.server_timeout_ms = timeout_ms;
    ASSERT_OK(redislock_client_new_redlock(&c, sv->urls, sv->n, &co));
    return c;
}

/* Eight contenders for one key and forty keys at once, on one loop:
 * every callback once, each contender alone on a majority, every key
 * free at the end; inspect gives the majority's view. */
void test_alock_redlock_contended(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = redlock(&sv, 1000);
    static crowd cr;
    redislock_acquire_options o = th_aopts(5000, 10000, 20);
    redislock_info info;
    ad_done di = {0};
    void *h;
    char key[32];
    int i;

    memset(&cr, 0, sizeof cr);
    h = d->open(c, &cr.lp);
    cr.sv = &sv;
    for (i = 0; i < CONTENDERS + KEYS; i++) {
        if (i < CONTENDERS)
            snprintf(key, sizeof key, "alr:k");
        else
            snprintf(key, sizeof key, "alr:k%d", i);
        cr.l[i] = th_lock(c, key);
        ASSERT_OK(
            redislock_loop_acquire(cr.lp, cr.l[i], &o, crowd_acquired, &cr));
    }
    ad_run_until(d, h, &cr.released, CONTENDERS + KEYS, 20000);
    ASSERT_EQ_INT(cr.acquired, CONTENDERS + KEYS);
    for (i = 0; i < CONTENDERS + KEYS; i++)
        ASSERT_EQ_INT(cr.d[i].calls, 1);
    for (i = 0; i < sv.n; i++)
        ASSERT_EQ_INT(th_lock_keys(sv.r[i]), 0);
    /* Inspect: held by the majority, with the largest fencing token. */
    o.wait_ms = 0;
    di.calls = 0;
    ASSERT_OK(redislock_loop_acquire(cr.lp, cr.l[0], &o, ad_record, &di));
    ad_run_until(d, h, &di.calls, 1, 3000);
    ASSERT_ERR(di.err, REDISLOCK_OK);
    memset(&info, 0, sizeof info);
    ASSERT_OK(redislock_loop_inspect(cr.lp, cr.l[0], &info, ad_record, &di));
    ad_run_until(d, h, &di.calls, 2, 3000);
    ASSERT_ERR(di.err, REDISLOCK_OK);
    ASSERT_EQ_INT(info.held, 1);
    ASSERT(info.ttl_ms > 0 && info.ttl_ms <= 5000);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.fence, 0); /* a plain lock keeps none */
    ASSERT_EQ_MEM(info.key, "alr:k", 5);
    /* Extended by the majority, then released. */
    ASSERT_OK(redislock_loop_extend(cr.lp, cr.l[0], 20000, ad_record, &di));
    ad_run_until(d, h, &di.calls, 3, 3000);
    ASSERT_ERR(di.err, REDISLOCK_OK);
    ASSERT(redislock_valid_ms(cr.l[0]) > 5000);
    for (i = 0; i < sv.n; i++)
        ASSERT(th_pttl(sv.r[i], "alr:k") > 5000);
    ASSERT_OK(redislock_loop_release(cr.lp, cr.l[0], 0, ad_record, &di));
    ad_run_until(d, h, &di.calls, 4, 3000);
    ASSERT_ERR(di.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_servers_holding(&sv, "alr:k", redislock_token(cr.l[0])),
                  0);
    d->close(h);
    for (i = 0; i < CONTENDERS + KEYS; i++)
        redislock_lock_free(cr.l[i]);
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* One server stopped: each round goes on without it by the 100 ms
 * server timeout. Two stopped: no quorum, by that timeout, and the
 * attempt undone on the server that granted it; what the stopped ones
 * granted goes once they answer again. */
void test_alock_redlock_stopped(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = redlock(&sv, 100);
    redislock_acquire_options o = th_aopts(3000, 0, 0);
    redislock_err out[3];
    redislock_lock *l[5];
    ad_done dn[5];
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    int64_t t0;
    int i;

    int threads = th_threads();

    memset(dn, 0, sizeof dn);
    th_server_pause(sv.s[1]);
    t0 = rl__now_us();
    for (i = 0; i < 4; i++) {
        char key[16];

        snprintf(key, sizeof key, "alr:s%d", i);
        l[i] = th_lock(c, key);
        ASSERT_OK(redislock_loop_acquire(lp, l[i], &o, ad_record, &dn[i]));
    }
    for (i = 0; i < 4; i++) {
        ad_run_until(d, h, &dn[i].calls, 1, 3000);
        ASSERT_ERR(dn[i].err, REDISLOCK_OK);
        ASSERT_LT((dn[i].at_us - t0) / 1000, 100 + 150);
        redislock_outcomes(l[i], out, 3);
        ASSERT_ERR(out[0], REDISLOCK_OK);
        ASSERT_ERR(out[1], REDISLOCK_ETIMEDOUT);
        ASSERT_ERR(out[2], REDISLOCK_OK);
        ASSERT_LE(redislock_valid_ms(l[i]), 3000);
        ASSERT_OK(redislock_loop_release(lp, l[i], 0, ad_record, &dn[i]));
    }
    for (i = 0; i < 4; i++) {
        ad_run_until(d, h, &dn[i].calls, 2, 3000);
        ASSERT_ERR(dn[i].err, REDISLOCK_OK);
    }
    th_server_pause(sv.s[2]);
    l[4] = th_lock(c, "alr:q");
    t0 = rl__now_us();
    ASSERT_OK(redislock_loop_acquire(lp, l[4], &o, ad_record, &dn[4]));
    ad_run_until(d, h, &dn[4].calls, 1, 3000);
    ASSERT_ERR(dn[4].err, REDISLOCK_ENOQUORUM);
    ASSERT(strstr(dn[4].detail, "only 1 of 3 servers answered") != NULL);
    ASSERT_LT((dn[4].at_us - t0) / 1000, 100 + 150);
    ASSERT_EQ_INT(redislock_valid_ms(l[4]), 0);
    /* Undone where it was granted, by the loop's sweeps. */
    run_until_gone(h, &sv, 1, "alr:q", 1000);
    th_server_resume(sv.s[1]);
    th_server_resume(sv.s[2]);
    /* The stopped servers' undos are swept on the loop once they answer
     * again: no thread started (no janitor). */
    for (i = 1; i < 3; i++)
        run_until_gone(h, &sv, i + 1, "alr:q", 5000);
    for (i = 0; i < 3; i++)
        ASSERT(th_wait_key_gone(sv.r[i], "alr:s0", 6, 5000));
    ASSERT_EQ_INT(th_threads(), threads);
    d->close(h);
    for (i = 0; i < 5; i++)
        redislock_lock_free(l[i]);
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* The loop renews a Redlock lock on every server past three leases; one
 * whose key a majority gives to another is lost, on the loop, once. */
void test_alock_redlock_watchdog(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = redlock(&sv, 300);
    redislock_acquire_options o = th_aopts(600, 0, 0);
    redislock_lock *l = th_lock(c, "alr:w"), *x = th_lock(c, "alr:wx");
    ad_done dn = {0}, dx = {0};
    ad_lost gl = {0}, gx = {0};
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    int i;

    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &gl;
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    o.on_lost_arg = &gx;
    ASSERT_OK(redislock_loop_acquire(lp, x, &o, ad_record, &dx));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ad_run_until(d, h, &dx.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_ERR(dx.err, REDISLOCK_OK);
    for (i = 0; i < 2; i++) {
        th_cmd_int(sv.r[i], "DEL alr:wx");
        freeReplyObject(th_cmd(sv.r[i], "SET alr:wx intruder PX 60000"));
    }
    ad_run_for(d, h, 1800);
    ASSERT_EQ_INT(th_servers_holding(&sv, "alr:w", redislock_token(l)), 3);
    ASSERT(redislock_valid_ms(l) > 0);
    ASSERT_OK(redislock_check(l));
    ASSERT_EQ_INT(gl.calls, 0);
    ASSERT_EQ_INT(gx.calls, 1);
    ASSERT_ERR(gx.why, REDISLOCK_ELOST);
    ASSERT_ERR(redislock_check(x), REDISLOCK_ELOST);
    dn.calls = 0;
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ad_run_for(d, h, 700);
    ASSERT_EQ_INT(th_servers_holding(&sv, "alr:w", redislock_token(l)), 0);
    ASSERT_EQ_INT(gl.calls, 0);
    d->close(h);
    redislock_lock_free(l);
    redislock_lock_free(x);
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* The loop renews its Redlock locks by node: three watched locks go in
 * one request to each server (a round of renew.lua). A server stopped
 * holds the batch's round up to the 500 ms server timeout; one of the
 * locks released while it is out, and the loop freed with it still out:
 * the release ends cancelled, the round with the loop's connections,
 * nothing is read after it is freed (the sanitizers'), no loss reported. */
void test_alock_redlock_renew_batch_out(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = redlock(&sv, 500);
    redislock_acquire_options o = th_aopts(900, 0, 0);
    redislock_lock *l[3];
    ad_done dn[3];
    ad_lost gl[3];
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    long long before;
    int i;

    memset(dn, 0, sizeof dn);
    memset(gl, 0, sizeof gl);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    for (i = 0; i < 3; i++) {
        char key[16];

        snprintf(key, sizeof key, "alr:b%d", i);
        l[i] = th_lock(c, key);
        o.on_lost_arg = &gl[i];
        ASSERT_OK(redislock_loop_acquire(lp, l[i], &o, ad_record, &dn[i]));
    }
    for (i = 0; i < 3; i++) {
        ad_run_until(d, h, &dn[i].calls, 1, 3000);
        ASSERT_ERR(dn[i].err, REDISLOCK_OK);
    }
    before = th_script_calls(sv.r[0]);
    th_server_pause(sv.s[2]);
    /* The renewals come due 300 ms in, together; their round waits for
     * server 2 until 800 ms. */
    ad_run_for(d, h, 450);
    ASSERT_EQ_INT(th_script_calls(sv.r[0]) - before, 1);
    ASSERT_KEY(sv.r[0], "alr:b1", redislock_token(l[1]));
    ASSERT_KEY(sv.r[1], "alr:b1", redislock_token(l[1]));
    ASSERT_OK(redislock_loop_release(lp, l[0], 0, ad_record, &dn[0]));
    ad_run_for(d, h, 50);
    d->close(h);
    ASSERT_ERR(dn[0].err, REDISLOCK_ECANCELED);
    th_server_resume(sv.s[2]);
    for (i = 0; i < 3; i++) {
        ASSERT_EQ_INT(gl[i].calls, 0);
        redislock_lock_free(l[i]);
    }
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* A waiter behind a holder has its attempts' reads tracked on every
 * server; with one server stopped, the round a notice starts waits for
 * it (500 ms), and the wait cancelled then ends at once, its round
 * dropped before its trackers close the connections that round is out
 * on (they answered an operation already over). */
void test_alock_redlock_cancel_tracked_round(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = redlock(&sv, 500), *hc = redlock(&sv, 500);
    redislock_acquire_options ho = th_aopts(10000, 0, 0),
                              o = th_aopts(5000, 10000, 0);
    redislock_lock *h = th_lock(hc, "alr:t"), *l = th_lock(c, "alr:t");
    ad_done dn = {0};
    redislock_loop *lp;
    void *hd = d->open(c, &lp);
    int64_t until;
    int i, tracked;

    ASSERT_OK(redislock_acquire(h, &ho));
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    until = rl__now_us() + 5000 * 1000;
    do {
        ad_run_for(d, hd, 20);
        for (i = 0, tracked = 0; i < 3; i++)
            tracked += th_tracked_scripts(sv.r[i]) > 0;
    } while (tracked < 3 && rl__now_us() < until);
    ASSERT_EQ_INT(tracked, 3);
    th_server_pause(sv.s[2]);
    /* The holder gone from one server: its notice starts a round. */
    ASSERT_EQ_INT(th_cmd_int(sv.r[0], "DEL alr:t"), 1);
    ad_run_for(d, hd, 100);
    ASSERT_EQ_INT(dn.calls, 0);
    redislock_loop_cancel(lp, l);
    ASSERT_EQ_INT(dn.calls, 1);
    ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
    ad_run_for(d, hd, 600);
    ASSERT_EQ_INT(dn.calls, 1);
    th_server_resume(sv.s[2]);
    d->close(hd);
    redislock_lock_free(l);
    redislock_lock_free(h);
    redislock_client_free(hc);
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* Behind a holder with a 10 s lease: a wait of 300 ms ends with
 * REDISLOCK_EHELD by then, a cancelled wait at once; a handle freed, and
 * a loop freed, with an attempt out end with REDISLOCK_ECANCELED, and the
 * attempt holds nothing once undone. */
void test_alock_redlock_cancel(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = redlock(&sv, 1000);
    redislock_lock *holder = th_lock(c, "alr:c");
    redislock_lock *l[4];
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    ad_done dn[4];
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    int64_t t0;
    int i;

    memset(dn, 0, sizeof dn);
    ASSERT_OK(redislock_acquire(holder, &o));
    for (i = 0; i < 2; i++)
        l[i] = th_lock(c, "alr:c");
    l[2] = th_lock(c, "alr:f");
    l[3] = th_lock(c, "alr:g");
    o = th_aopts(5000, 300, 20);
    t0 = rl__now_us();
    ASSERT_OK(redislock_loop_acquire(lp, l[0], &o, ad_record, &dn[0]));
    o.wait_ms = 5000;
    ASSERT_OK(redislock_loop_acquire(lp, l[1], &o, ad_record, &dn[1]));
    ad_run_until(d, h, &dn[0].calls, 1, 3000);
    ASSERT_ERR(dn[0].err, REDISLOCK_EHELD);
    ASSERT_LT((dn[0].at_us - t0) / 1000, 300 + 250);
    ASSERT((dn[0].at_us - t0) / 1000 >= 300 - 20);
    redislock_loop_cancel(lp, l[1]);
    ASSERT_EQ_INT(dn[1].calls, 1);
    ASSERT_ERR(dn[1].err, REDISLOCK_ECANCELED);
    /* A handle freed with its attempt out. */
    ASSERT_OK(redislock_loop_acquire(lp, l[2], &o, ad_record, &dn[2]));
    redislock_lock_free(l[2]);
    l[2] = NULL;
    ASSERT_EQ_INT(dn[2].calls, 1);
    ASSERT_ERR(dn[2].err, REDISLOCK_ECANCELED);
    run_until_gone(h, &sv, 3, "alr:f", 2000);
    /* The loop freed with an attempt out: the janitor undoes it. */
    ASSERT_OK(redislock_loop_acquire(lp, l[3], &o, ad_record, &dn[3]));
    d->close(h);
    ASSERT_EQ_INT(dn[3].calls, 1);
    ASSERT_ERR(dn[3].err, REDISLOCK_ECANCELED);
    for (i = 0; i < 3; i++)
        ASSERT(th_wait_key_gone(sv.r[i], "alr:g", 5, 3000));
    ASSERT_EQ_INT(th_servers_holding(&sv, "alr:c", redislock_token(holder)), 3);
    ASSERT_OK(redislock_release(holder));
    for (i = 0; i < 4; i++)
        redislock_lock_free(l[i]);
    redislock_lock_free(holder);
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* The loop's connections are not vetted as the pools' are: an entry
 * down when the client was made, which turns out to be another entry's
 * server (here server 0's database 1, by a socket that appears later),
 * must not vote on the loop either. The first round asks it which server
 * it is and goes on without it; later rounds refuse it as a repeat. */
void test_alock_redlock_same_server_found_late_never_votes(void)
{
    th_servers sv = th_servers_start(4);
    char dir[] = "/tmp/rl-late.XXXXXX", link[64], late[96];
    const char *urls[5];
    redislock_client *c = NULL;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_err out[5];
    redislock_lock *l;
    redislock_loop *lp;
    ad_done dn;
    void *h;
    int i;

    ASSERT(mkdtemp(dir) != NULL);
    snprintf(link, sizeof link, "%s/s.sock", dir);
    snprintf(late, sizeof late, "unix://%s?db=1", link);
    for (i = 0; i < 4; i++)
        urls[i] = sv.urls[i];
    urls[4] = late;
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 5, NULL));
    ASSERT_EQ_INT(symlink(sv.s[0]->sock, link), 0);
    h = d->open(c, &lp);
    l = th_lock(c, "alr:dup");
    freeReplyObject(th_cmd(sv.r[1], "SET alr:dup other PX 60000"));
    freeReplyObject(th_cmd(sv.r[2], "SET alr:dup other PX 60000"));
    memset(&dn, 0, sizeof dn);
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_EHELD);
    redislock_outcomes(l, out, 5);
    ASSERT_ERR(out[0], REDISLOCK_OK);
    ASSERT_ERR(out[3], REDISLOCK_OK);
    ASSERT(out[4] == REDISLOCK_ECONNECT || out[4] == REDISLOCK_EINVAL);
    freeReplyObject(th_cmd(sv.r[0], "SELECT 1"));
    ASSERT_EQ_INT(th_cmd_int(sv.r[0], "EXISTS alr:dup"), 0);
    freeReplyObject(th_cmd(sv.r[0], "SELECT 0"));
    /* With a third server free, three real votes make it. */
    freeReplyObject(th_cmd(sv.r[1], "DEL alr:dup"));
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    redislock_outcomes(l, out, 5);
    ASSERT_ERR(out[4], REDISLOCK_EINVAL);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 3, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    d->close(h);
    redislock_lock_free(l);
    redislock_client_free(c);
    unlink(link);
    rmdir(dir);
    th_servers_stop(&sv);
}
