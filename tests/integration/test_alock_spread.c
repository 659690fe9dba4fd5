/*
 * Sets of keys that no one script reaches on the event loop: a sharded
 * client's keys over three servers (agroup.c). The set is
 * taken group by group, all or none, with one token and one fencing token on
 * every key; a refusal by any group leaves nothing held anywhere, and the set
 * waits behind the refusing key, on that key's server, woken by its release; it
 * is extended, renewed and released everywhere; a renewal that finds the
 * set lost reports the loss and gives back the groups it still held; a
 * wait cancelled, a loop freed, or a server that stops answering mid-way
 * leaves nothing held. On the tests' own poll() loop, one thread. A
 * cluster's sets over several slots on the loop are in test_alock_cluster.c
 * (alock_cluster_set_one_slot).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/keysets.h"
#include "test.h"

static const driver *const d = &adapter_poll;

/* Four keys over the three servers of e: k[i] on server i % 3. */
static void spread_keys(th_servers *e, redislock_client *c, char keys[3][3][24],
                        const char *k[4])
{
    int got[3];

    th_keys_by_server(e->r, 3, c, "asp", keys, got);
    k[0] = keys[0][0];
    k[1] = keys[1][0];
    k[2] = keys[2][0];
    k[3] = keys[0][1];
}

/* Runs lp's op (started by the caller, recorded in dn) to its callback,
 * the nth, and asserts its outcome. */
#define RUN(h, dn, nth, want)                                                  \
    do {                                                                       \
        ad_run_until(d, h, &(dn).calls, nth, 5000);                            \
        ASSERT_ERR((dn).err, want);                                            \
    } while (0)

void test_alock_spread_sharded(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c;
    char keys[3][3][24];
    const char *k[4];
    redislock_lock *s, *h, *t;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    ad_done dn = {0};
    ad_lost gl = {0};
    redislock_info info;
    redislock_loop *lp;
    void *lh;
    int i, at;
    int64_t t0;

    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    spread_keys(&e, c, keys, k);
    s = th_lock_set(c, k, 4);
    t = th_lock_set(c, k, 4);
    h = th_lock(c, k[2]);
    lh = d->open(c, &lp);

    /* Taken whole: each key on its server with the token; each key's
     * fencing counter at the set's token (raised where it was below). */
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    RUN(lh, dn, 1, REDISLOCK_OK);
    ASSERT_EQ_INT(th_held_anywhere(&e, k, 4, redislock_token(s)), 4);
    for (i = 0; i < 4; i++) {
        at = i % 3; /* spread_keys' servers */
        ASSERT_EQ_INT(th_fence_counter(e.r[at], k[i]), redislock_fence(s));
    }
    ASSERT_GT(redislock_valid_ms(s), 4000);
    /* Inspected by its first key, as the blocking call reads it. */
    ASSERT_OK(redislock_loop_inspect(lp, s, &info, ad_record, &dn));
    RUN(lh, dn, 2, REDISLOCK_OK);
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.fence, 0); /* a plain lock keeps none */
    ASSERT_GT(info.ttl_ms, 4000);
    ASSERT_OK(redislock_inspect(s, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.fence, 0); /* a plain lock keeps none */
    /* The blocking calls are refused by it. */
    ASSERT_ERR(redislock_acquire(t, &o), REDISLOCK_EHELD);
    ASSERT_OK(redislock_loop_extend(lp, s, 60000, ad_record, &dn));
    RUN(lh, dn, 3, REDISLOCK_OK);
    for (i = 0; i < 3; i++)
        ASSERT_GT(th_pttl(e.r[i], keys[i][0]), 50000);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    RUN(lh, dn, 4, REDISLOCK_OK);
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);

    /* Refused by the third server's key: nothing held anywhere. */
    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    RUN(lh, dn, 5, REDISLOCK_EHELD);
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 1);

    /* Waiting behind it, on its server, silent elsewhere; woken by its
     * release well before the 30 s lease would end. */
    ASSERT_OK(redislock_release(h));
    o = th_aopts(30000, 0, 0);
    ASSERT_OK(redislock_acquire(h, &o));
    o = th_aopts(5000, 10000, 0);
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    ad_run_for(d, lh, 400);
    ASSERT_EQ_INT(dn.calls, 5);
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 1);
    ASSERT_EQ_INT(th_blocked_clients(e.r[0]) + th_blocked_clients(e.r[1]), 0);
    t0 = th_now_ms();
    ASSERT_OK(redislock_release(h));
    RUN(lh, dn, 6, REDISLOCK_OK);
    ASSERT_LT(th_now_ms() - t0, 2000);
    ASSERT_EQ_INT(th_held_anywhere(&e, k, 4, redislock_token(s)), 4);

    /* A blocking waiter gets it once the loop releases it. */
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    RUN(lh, dn, 7, REDISLOCK_OK);
    ASSERT_OK(redislock_acquire(t, &o));
    ASSERT_OK(redislock_release(t));

    /* Renewed: 600 ms leases held for 1.5 s. Then one key is taken from
     * under it: the loss is reported, and the keys it still held are
     * given back at once, not at the end of their leases. */
    o = th_aopts(600, 0, 0);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &gl;
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    RUN(lh, dn, 8, REDISLOCK_OK);
    ad_run_for(d, lh, 1500);
    ASSERT_EQ_INT(th_held_anywhere(&e, k, 4, redislock_token(s)), 4);
    ASSERT_GT(redislock_valid_ms(s), 0);
    ASSERT_EQ_INT(gl.calls, 0);
    th_cmd_int(e.r[1], "DEL %s", keys[1][0]);
    freeReplyObject(th_cmd(e.r[1], "SET %s intruder PX 60000", keys[1][0]));
    ad_run_until(d, lh, &gl.calls, 1, 2000);
    ASSERT_ERR(gl.why, REDISLOCK_ELOST);
    ad_run_for(d, lh, 100);
    ASSERT_EQ_INT(th_held_anywhere(&e, k, 4, redislock_token(s)), 0);
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 1);
    th_cmd_int(e.r[1], "DEL %s", keys[1][0]);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    RUN(lh, dn, 9, REDISLOCK_EEXPIRED);

    /* A wait cancelled, and a wait under way when the loop is freed:
     * nothing is left held. */
    o = th_aopts(30000, 0, 0);
    ASSERT_OK(redislock_acquire(h, &o));
    o = th_aopts(5000, 10000, 0);
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    ad_run_for(d, lh, 200);
    redislock_loop_cancel(lp, s);
    ASSERT_EQ_INT(dn.calls, 10);
    ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
    for (i = 0; i < 20; i++) {
        /* Cancelled with its first group's request out. */
        ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
        redislock_loop_cancel(lp, s);
        ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
        d->turn(lh);
    }
    ASSERT_OK(redislock_release(h));
    for (i = 0; i < 20; i++) {
        /* Cancelled mid-way through its groups, or taken. */
        int before = dn.calls;

        ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
        d->turn(lh);
        if (dn.calls > before) {
            ASSERT_ERR(dn.err, REDISLOCK_OK);
            ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
            RUN(lh, dn, before + 2, REDISLOCK_OK);
            continue;
        }
        redislock_loop_cancel(lp, s);
        ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
    }
    ad_run_for(d, lh, 300);
    if (redislock_holds(s) > 0) {
        ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
        ad_run_until(d, lh, &dn.calls, dn.calls + 1, 3000);
    }
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    d->close(lh);
    ASSERT_ERR(dn.err, REDISLOCK_ECANCELED);
    o.wait_ms = 3000;
    ASSERT_OK(redislock_acquire(t, &o));
    ASSERT_EQ_INT(th_held_anywhere(&e, k, 4, redislock_token(t)), 4);
    ASSERT_OK(redislock_release(t));
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);

    redislock_lock_free(s);
    redislock_lock_free(t);
    redislock_lock_free(h);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* The second group's server stops answering with the set's attempt out,
 * and again with its release out: each callback comes by the 300 ms
 * command timeout, and once the server answers again no key is held. */
void test_alock_spread_server_stops(void)
{
    th_servers e = th_servers_start(3);
    redislock_options opts = {0};
    redislock_client *c;
    char keys[3][3][24];
    const char *k[4];
    redislock_lock *s;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    ad_done dn = {0};
    redislock_loop *lp;
    void *lh;
    int64_t t0;

    opts.connect_timeout_ms = 300;
    opts.command_timeout_ms = 300;
    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    spread_keys(&e, c, keys, k);
    redislock_client_free(c);
    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, &opts));
    s = th_lock_set(c, k, 4);
    lh = d->open(c, &lp);
    /* Connected to every server first. */
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    RUN(lh, dn, 1, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    RUN(lh, dn, 2, REDISLOCK_OK);

    th_server_pause(e.s[1]);
    t0 = th_now_ms();
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    ad_run_until(d, lh, &dn.calls, 3, 3000);
    ASSERT(dn.err != REDISLOCK_OK);
    ASSERT_LT(th_now_ms() - t0, 1500);
    th_server_resume(e.s[1]);
    ad_run_for(d, lh, 500);
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);

    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &dn));
    RUN(lh, dn, 4, REDISLOCK_OK);
    th_server_pause(e.s[1]);
    t0 = th_now_ms();
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &dn));
    ad_run_until(d, lh, &dn.calls, 5, 3000);
    ASSERT(dn.err != REDISLOCK_OK);
    ASSERT_LT(th_now_ms() - t0, 1500);
    th_server_resume(e.s[1]);
    /* The release's outcome on that server was unknown: the lease ends
     * it there; the others are free now. */
    ASSERT_LE(th_lock_keys_anywhere(&e), 1);

    d->close(lh);
    redislock_lock_free(s);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* The loop renews its spread sets by node: three watched sets of a key
 * on each of servers 0 and 1 go in one request to each server. Server 1
 * stopped holds its request up to the 500 ms command timeout; one set is
 * released while it is out, another's handle freed, and the loop freed
 * with it still out: the release ends cancelled, the request with the
 * loop's connections, nothing is read after it is freed (the
 * sanitizers'), no loss reported. */
void test_alock_spread_renew_batch_out(void)
{
    th_servers e = th_servers_start(3);
    redislock_options opts = {0};
    redislock_client *c;
    char keys[3][3][24];
    const char *k[3][2];
    redislock_lock *l[3];
    redislock_acquire_options o = th_aopts(900, 0, 0);
    ad_done dn[3];
    ad_lost gl[3];
    redislock_loop *lp;
    void *h;
    long long before;
    int got[3], i;

    memset(dn, 0, sizeof dn);
    memset(gl, 0, sizeof gl);
    opts.command_timeout_ms = 500;
    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, &opts));
    th_keys_by_server(e.r, 3, c, "asb", keys, got);
    ASSERT(got[0] == 3 && got[1] == 3);
    h = d->open(c, &lp);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    for (i = 0; i < 3; i++) {
        k[i][0] = keys[0][i];
        k[i][1] = keys[1][i];
        l[i] = th_lock_set(c, k[i], 2);
        o.on_lost_arg = &gl[i];
        ASSERT_OK(redislock_loop_acquire(lp, l[i], &o, ad_record, &dn[i]));
        RUN(h, dn[i], 1, REDISLOCK_OK);
    }
    before = th_script_calls(e.r[0]);
    th_server_pause(e.s[1]);
    /* The renewals come due 300 ms in, together; server 1's request
     * waits until 800 ms. */
    ad_run_for(d, h, 450);
    ASSERT_EQ_INT(th_script_calls(e.r[0]) - before, 1);
    ASSERT_KEY(e.r[0], k[1][0], redislock_token(l[1]));
    ASSERT_OK(redislock_loop_release(lp, l[0], 0, ad_record, &dn[0]));
    redislock_lock_free(l[2]);
    l[2] = NULL;
    ad_run_for(d, h, 50);
    d->close(h);
    ASSERT_ERR(dn[0].err, REDISLOCK_ECANCELED);
    th_server_resume(e.s[1]);
    for (i = 0; i < 3; i++) {
        ASSERT_EQ_INT(gl[i].calls, 0);
        redislock_lock_free(l[i]);
    }
    redislock_client_free(c);
    th_servers_stop(&e);
}
