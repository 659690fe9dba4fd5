/*
 * redlock: a lock decided by a majority of independent servers. What each
 * server holds is read back from the servers themselves (EXISTS, GET on
 * separate connections), so the tests check what another client would
 * see, not what the library believes.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/blackhole.h"
#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define MAXN 5
#define KEY "rl:job"

static redislock_client *redlock(const th_servers *e,
                                 const redislock_options *o)
{
    redislock_client *c = NULL;

    ASSERT_OK(redislock_client_new_redlock(&c, e->urls, (size_t)e->n, o));
    ASSERT(c != NULL);
    return c;
}

/* How many of the live servers have key. */
static int holders(const th_servers *e, const char *key)
{
    int i, n = 0;

    for (i = 0; i < e->n; i++)
        if (e->r[i] != NULL)
            n += (int)th_cmd_int(e->r[i], "EXISTS %s", key);
    return n;
}

/* Lock keys (not helper keys) on all live servers. */
static long long lock_keys(const th_servers *e)
{
    long long n = 0;
    int i;

    for (i = 0; i < e->n; i++)
        if (e->r[i] != NULL)
            n += th_lock_keys(e->r[i]);
    return n;
}

void test_redlock_acquire_release_everywhere(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_err out[MAXN];
    char *v;
    int i;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_outcomes(l, out, MAXN), 3);
    for (i = 0; i < 3; i++) {
        ASSERT_EQ_INT(out[i], REDISLOCK_OK);
        /* The same token on every server, with the lease's TTL. */
        v = th_cmd_str(e.r[i], NULL, "GET " KEY);
        ASSERT_EQ_STR(v, redislock_token(l));
        free(v);
        ASSERT_GT(th_pttl(e.r[i], KEY), 9000);
    }
    ASSERT_GT(redislock_fence(l), 0);
    ASSERT_GT(redislock_valid_ms(l), 9000);
    ASSERT_OK(redislock_check(l));
    ASSERT_OK(redislock_extend(l, 20000));
    for (i = 0; i < 3; i++)
        ASSERT_GT(th_pttl(e.r[i], KEY), 19000);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(holders(&e, KEY), 0);
    ASSERT_EQ_INT(lock_keys(&e), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

void test_redlock_bad_setups_einval(void)
{
    th_servers e = th_servers_start(3);
    const char *dup[3];
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(1000, 0, 0);

    ASSERT_ERR(redislock_client_new_redlock(&c, e.urls, 2, NULL),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "odd") != NULL);
    ASSERT_ERR(redislock_client_new_redlock(&c, e.urls, 1, NULL),
               REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    dup[0] = e.urls[0];
    dup[1] = e.urls[1];
    dup[2] = e.urls[0];
    ASSERT_ERR(redislock_client_new_redlock(&c, dup, 3, NULL),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "twice") != NULL);
    ASSERT(c == NULL);
    c = redlock(&e, NULL);
    l = th_lock(c, KEY);
    o.fair = 1;
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_fenced_set(c, "res", 3, "v", 1, 5), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(holders(&e, KEY), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* Another owner on one server of three: a majority still grants it. */
void test_redlock_minority_busy_still_granted(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_err out[MAXN];

    freeReplyObject(th_cmd(e.r[1], "SET " KEY " other PX 60000"));
    ASSERT_OK(redislock_acquire(l, &o));
    redislock_outcomes(l, out, MAXN);
    ASSERT_EQ_INT(out[0], REDISLOCK_OK);
    ASSERT_EQ_INT(out[1], REDISLOCK_EHELD);
    ASSERT_EQ_INT(out[2], REDISLOCK_OK);
    ASSERT_OK(redislock_release(l));
    /* Release goes to all, and leaves the other owner's key alone. */
    ASSERT_KEY(e.r[0], KEY, NULL);
    ASSERT_KEY(e.r[1], KEY, "other");
    ASSERT_KEY(e.r[2], KEY, NULL);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* How many of the live servers hold token on KEY. */
static int token_holders(const th_servers *e, const char *token)
{
    int i, n = 0;
    char *v;

    for (i = 0; i < e->n; i++) {
        if (e->r[i] == NULL)
            continue;
        v = th_cmd_str(e->r[i], NULL, "GET " KEY);
        n += v != NULL && strcmp(v, token) == 0;
        free(v);
    }
    return n;
}

/* What a grant promises: a majority granted, each of those servers holds
 * the token with the lease, and each other one answered busy and still
 * holds the other owner's lock or, its lease run out since, nothing. */
static void assert_granted_as_reported(const th_servers *e, redislock_lock *l,
                                       int64_t ttl_ms)
{
    redislock_err out[MAXN];
    int i, n = (int)redislock_outcomes(l, out, MAXN), granted = 0;
    char who[64] = "", *v;

    ASSERT_EQ_INT(n, e->n);
    for (i = 0; i < n; i++) {
        v = th_cmd_str(e->r[i], NULL, "GET " KEY);
        if (out[i] == REDISLOCK_OK) {
            ASSERT_EQ_STR(v, redislock_token(l));
            ASSERT_GT(th_pttl(e->r[i], KEY), ttl_ms - 5000);
            granted++;
        } else {
            ASSERT_EQ_INT(out[i], REDISLOCK_EHELD);
            ASSERT(v == NULL || strcmp(v, "other") == 0);
        }
        snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s",
                 i ? " " : "", redislock_errname(out[i]));
        free(v);
    }
    ASSERT_GE(granted, n / 2 + 1);
    test_log("granted by %d of %d servers (%s)", granted, n, who);
}

/* A majority busy: EHELD, and the vote won on the third server is
 * undone at once, not left to expire. */
void test_redlock_majority_busy_undone(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(60000, 0, 0);
    redislock_err out[MAXN];
    char *token;

    freeReplyObject(th_cmd(e.r[0], "SET " KEY " other PX 5000"));
    freeReplyObject(th_cmd(e.r[2], "SET " KEY " other PX 5000"));
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    ASSERT(strstr(redislock_errdetail(), "granted") != NULL);
    ASSERT(strstr(redislock_errdetail(), "busy") != NULL);
    redislock_outcomes(l, out, MAXN);
    ASSERT_EQ_INT(out[0], REDISLOCK_EHELD);
    ASSERT_EQ_INT(out[1], REDISLOCK_OK);
    ASSERT_KEY(e.r[1], KEY, NULL);
    ASSERT_KEY(e.r[0], KEY, "other");
    ASSERT_GT(redislock_holder_ttl(l), 0);
    ASSERT_LE(redislock_holder_ttl(l), 5000);
    ASSERT(redislock_token(l) == NULL);
    /* Waiting: the other owner's leases run out, then it is ours. They
     * end a moment apart (two PEXPIREs), and the pause before a retry is
     * cut to the shortest lease a busy server reported, so a round can
     * land between the two ends: the first server and the free one grant
     * it, the third still answers busy, and two of three is a grant. All
     * three is only the likelier case, so a majority is what is checked,
     * against what each server holds. */
    o = th_aopts(60000, 10000, 50);
    freeReplyObject(th_cmd(e.r[0], "PEXPIRE " KEY " 300"));
    freeReplyObject(th_cmd(e.r[2], "PEXPIRE " KEY " 300"));
    ASSERT_OK(redislock_acquire(l, &o));
    assert_granted_as_reported(&e, l, 60000);
    token = strdup(redislock_token(l));
    ASSERT(token != NULL);
    ASSERT_OK(redislock_release(l));
    /* Released everywhere it was granted. */
    ASSERT_EQ_INT(token_holders(&e, token), 0);
    free(token);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* Two of three servers killed: a quorum error, quickly, never success. */
void test_redlock_majority_down_noquorum(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(10000, 2000, 20);
    redislock_err out[MAXN];
    int64_t t0, took;
    int i;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    th_servers_kill(&e, 0);
    th_servers_kill(&e, 2);
    for (i = 0; i < 20; i++) {
        t0 = th_now_ms();
        ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_ENOQUORUM);
        took = th_now_ms() - t0;
        /* Fails fast: not the 2 s wait, not a retry loop. */
        ASSERT_LT(took, 500);
    }
    test_log("majority down: ENOQUORUM in %lld ms (%s)", (long long)took,
             redislock_errdetail());
    redislock_outcomes(l, out, MAXN);
    ASSERT_EQ_INT(out[0], REDISLOCK_ECONNECT);
    ASSERT_EQ_INT(out[1], REDISLOCK_OK);
    ASSERT_EQ_INT(out[2], REDISLOCK_ECONNECT);
    /* The one vote won was given back. */
    ASSERT_EQ_INT(holders(&e, KEY), 0);
    ASSERT_EQ_INT(redislock_check(l), REDISLOCK_EINVAL);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* One server stopped: each acquire costs at most the per-server timeout
 * and still succeeds on the other two. */
void test_redlock_stopped_server_bounded(void)
{
    th_servers e = th_servers_start(3);
    redislock_options co = {0};
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(3000, 0, 0);
    redislock_err out[MAXN];
    int64_t t0, took, worst = 0;
    int i;

    co.server_timeout_ms = 100;
    c = redlock(&e, &co);
    l = th_lock(c, KEY);
    th_server_pause(e.s[1]);
    for (i = 0; i < 10; i++) {
        t0 = th_now_ms();
        ASSERT_OK(redislock_acquire(l, &o));
        took = th_now_ms() - t0;
        worst = took > worst ? took : worst;
        redislock_outcomes(l, out, MAXN);
        ASSERT_EQ_INT(out[1], REDISLOCK_ETIMEDOUT);
        /* Validity is what is left of the TTL after the round. */
        ASSERT_LE(redislock_valid_ms(l), 3000 - took + 1);
        ASSERT_OK(redislock_release(l));
    }
    test_log("one of 3 stopped, server timeout 100 ms: slowest acquire "
             "%lld ms",
             (long long)worst);
    ASSERT_LT(worst, 100 + 150);
    th_server_resume(e.s[1]);
    /* What the stopped server took while stopped is undone or expires:
     * none of it may stay held. */
    ASSERT(th_wait_key_gone(e.r[1], KEY, strlen(KEY), 5000));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* One server stopped and another held by someone else for 400 ms: the
 * waiter's refused rounds are given back on every server, the stopped
 * one too, and its blocking acquire waits for each give-back as it waits
 * for a release, but for the stopped server no longer than the per-server
 * timeout (it waited the 2 s command timeout before 2026-12-03: the
 * acquire returned 2 s after it took the lock, its validity 2 s shorter);
 * it returns a round or two after the other holder's lease ends, with
 * most of its own lease left. */
void test_redlock_give_back_to_stopped_server_bounded(void)
{
    th_servers e = th_servers_start(3);
    redislock_options co = {0};
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(5000, 5000, 0);
    int64_t t0, took;

    co.server_timeout_ms = 100;
    c = redlock(&e, &co);
    l = th_lock(c, KEY);
    /* Connected, its scripts loaded everywhere. */
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    th_server_pause(e.s[2]);
    freeReplyObject(th_cmd(e.r[1], "SET %s other PX 400", KEY));
    t0 = th_now_ms();
    ASSERT_OK(redislock_acquire(l, &o));
    took = th_now_ms() - t0;
    test_log("taken %lld ms after the wait began (the other lease 400 ms), "
             "%lld ms of validity left",
             (long long)took, (long long)redislock_valid_ms(l));
    ASSERT_GE(took, 350);
    ASSERT_LT(took, 400 + 600);
    ASSERT_GT(redislock_valid_ms(l), 5000 - 1000);
    ASSERT_OK(redislock_release(l));
    th_server_resume(e.s[2]);
    ASSERT(th_wait_key_gone(e.r[2], KEY, strlen(KEY), 5000));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

static void *resume_later(void *arg)
{
    th_servers *e = arg;

    th_sleep_ms(1500);
    th_server_resume(e->s[0]);
    th_server_resume(e->s[2]);
    return NULL;
}

/* A majority stopped (alive, not answering) for a moment: a round then
 * fails with ENOQUORUM, which ends an acquire that does not wait, but a
 * waiter with time left tries again and takes the lock once they answer
 * (a loaded server, or one paused, answers late; it is not down). */
void test_redlock_waiter_outlasts_stopped_majority(void)
{
    th_servers e = th_servers_start(3);
    redislock_options co = {0};
    redislock_client *c;
    redislock_lock *l, *w;
    redislock_acquire_options now = th_aopts(5000, 0, 0);
    redislock_acquire_options wo = th_aopts(5000, 8000, 0);
    redislock_err out[MAXN];
    pthread_t t;
    int64_t t0, took;
    int i, n;
    char *v;

    co.server_timeout_ms = 100;
    c = redlock(&e, &co);
    l = th_lock(c, KEY);
    w = th_lock(c, KEY);
    th_server_pause(e.s[0]);
    th_server_pause(e.s[2]);
    ASSERT_ERR(redislock_acquire(l, &now), REDISLOCK_ENOQUORUM);
    redislock_outcomes(l, out, MAXN);
    ASSERT_EQ_INT(out[0], REDISLOCK_ETIMEDOUT);
    ASSERT_EQ_INT(out[2], REDISLOCK_ETIMEDOUT);
    /* Resumed 1.5 s on: the waiter's first rounds all time out. */
    ASSERT_EQ_INT(pthread_create(&t, NULL, resume_later, &e), 0);
    t0 = th_now_ms();
    ASSERT_OK(redislock_acquire(w, &wo));
    took = th_now_ms() - t0;
    test_log("majority stopped for 1.5 s: the waiter took the lock after "
             "%lld ms",
             (long long)took);
    ASSERT_GE(took, 1000);
    th_join_within(t, 3000);
    ASSERT_GT(redislock_valid_ms(w), 0);
    /* A majority holds the waiter's token and no server another's: a
     * server just resumed may refuse the winning round's request while
     * an earlier round's late grant there is not yet given back (Valkey
     * 9.1 in the fresh-clone CI run of 2026-12-04, "key rl:job holds
     * (nil)" on one server). */
    for (i = n = 0; i < 3; i++) {
        v = th_cmd_str(e.r[i], NULL, "GET %s", KEY);
        if (v != NULL) {
            ASSERT_EQ_STR(v, redislock_token(w));
            n++;
        }
        free(v);
    }
    ASSERT_GE(n, 2);
    ASSERT_OK(redislock_release(w));
    ASSERT_EQ_INT(holders(&e, KEY), 0);
    redislock_lock_free(l);
    redislock_lock_free(w);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* A client made while one of five servers is stopped has never had a
 * connection to it: each round opens one, and that open (connect and
 * the probe of which server it reached) must cost no more than the
 * round's per-server budget, or the round outlives the lease. With a
 * 2 s TTL the budget is 200 ms; a round that waited the 2 s command
 * timeout on the probe left no validity and was undone every time. The
 * client itself is made once a majority answered within a tenth of the
 * command timeout (it waited the whole of it). */
void test_redlock_fresh_client_one_stopped(void)
{
    th_servers e = th_servers_start(5);
    redislock_acquire_options o = th_aopts(2000, 0, 0);
    redislock_err out[MAXN];
    redislock_client *c;
    redislock_lock *l;
    int64_t t0, made, took, worst = 0;
    int i, j;

    th_server_pause(e.s[2]);
    t0 = th_now_ms();
    c = redlock(&e, NULL);
    made = th_now_ms() - t0;
    l = th_lock(c, KEY);
    for (i = 0; i < 3; i++) {
        t0 = th_now_ms();
        ASSERT_OK(redislock_acquire(l, &o));
        took = th_now_ms() - t0;
        worst = took > worst ? took : worst;
        redislock_outcomes(l, out, MAXN);
        ASSERT_EQ_INT(out[2], REDISLOCK_ETIMEDOUT);
        for (j = 0; j < 5; j++)
            if (j != 2)
                ASSERT_EQ_INT(th_cmd_int(e.r[j], "EXISTS %s", KEY), 1);
        ASSERT_OK(redislock_release(l));
    }
    test_log("one of 5 stopped before the client: made in %lld ms, "
             "slowest acquire %lld ms",
             (long long)made, (long long)worst);
    /* 200 ms for the stopped server, the rest for a loaded machine; the
     * client is made in a tenth of the command timeout, too. */
    ASSERT_LT(worst, 200 + 400);
    ASSERT_LT(made, 200 + 400);
    th_server_resume(e.s[2]);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* Acquires and releases l once; its fencing token must be larger than
 * *last, and becomes *last. */
static void next_token(redislock_lock *l, int64_t *last, const char *round)
{
    redislock_acquire_options o = th_aopts(3000, 0, 0);
    int64_t f;

    ASSERT_OK(redislock_acquire(l, &o));
    f = redislock_fence(l);
    test_log("%s: fencing token %lld", round, (long long)f);
    if (f <= *last)
        test_fail_(__FILE__, __LINE__,
                   "%s: token %lld is not larger than the one before, %lld",
                   round, (long long)f, (long long)*last);
    *last = f;
    ASSERT_OK(redislock_release(l));
}

/* A Redlock token is the largest a majority gives, and each server counts
 * on its own: the tokens must keep growing when the majority changes. A
 * server that joins late starts its counter later (here: 300 ms of the
 * clock later); the majority without it after that must still give a
 * larger token than the one it took part in. */
void test_redlock_fence_grows_across_majorities(void)
{
    th_servers e = th_servers_start(3);
    redislock_options co = {0};
    redislock_client *c;
    redislock_lock *l;
    int64_t last = 0;
    int i;

    co.server_timeout_ms = 100;
    c = redlock(&e, &co);
    l = th_lock(c, KEY);
    th_server_pause(e.s[0]);
    for (i = 0; i < 3; i++)
        next_token(l, &last, "servers 1 and 2");
    th_server_resume(e.s[0]);
    th_sleep_ms(300);
    th_server_pause(e.s[2]);
    next_token(l, &last, "servers 0 and 1, 0 new");
    th_server_resume(e.s[2]);
    th_server_pause(e.s[0]);
    for (i = 0; i < 3; i++)
        next_token(l, &last, "servers 1 and 2 again");
    th_server_resume(e.s[0]);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* Two of three servers reached through a proxy that holds requests back
 * longer than the TTL: no lock may come out of such a round, and what
 * the late requests take is cleaned up. */
void test_redlock_delayed_past_ttl_no_validity(void)
{
    th_servers e = th_servers_start(3);
    th_proxy *p[2];
    char url[2][64];
    const char *urls[3];
    redislock_options co = {0};
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(200, 0, 0);
    redislock_err err;
    int i, ok = 0;

    for (i = 0; i < 2; i++) {
        p[i] = th_proxy_start(e.s[i]->port);
        snprintf(url[i], sizeof url[i], "redis://127.0.0.1:%d",
                 th_proxy_port(p[i]));
        urls[i] = url[i];
    }
    urls[2] = e.urls[2];
    /* A per-server timeout longer than the TTL: only the validity check
     * stands between a late majority and a lock with no time left. */
    co.server_timeout_ms = 1000;
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, &co));
    l = th_lock(c, KEY);
    for (i = 0; i < 2; i++)
        th_proxy_set_delay(p[i], 300);
    for (i = 0; i < 5; i++) {
        err = redislock_acquire(l, &o);
        if (err == REDISLOCK_OK) {
            ok++;
            ASSERT_GT(redislock_valid_ms(l), 0);
        }
        ASSERT(err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_OK);
    }
    test_log("delay 300 ms > TTL 200 ms: %d of 5 rounds gave a lock (%s)", ok,
             redislock_errdetail());
    ASSERT_EQ_INT(ok, 0);
    for (i = 0; i < 2; i++)
        th_proxy_set_delay(p[i], 0);
    /* No key left behind once the late requests have landed. */
    for (i = 0; i < 3; i++)
        ASSERT(th_wait_key_gone(e.r[i], KEY, strlen(KEY), 3000));
    ASSERT_EQ_INT(lock_keys(&e), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    for (i = 0; i < 2; i++)
        th_proxy_stop(p[i]);
    th_servers_stop(&e);
}

/* ---- A contended counter while servers die ------------------------- */

#define NPROCS 4
#define NINCR 150
#define COUNTER "rl:counter"

static int worker(const th_servers *e, const th_server *res)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redislock_options co = {0};
    redislock_acquire_options o = th_aopts(5000, 20000, 5);
    redisContext *r = redisConnectUnix(res->sock);
    const char *why = NULL;
    redisReply *rep;
    long long n;
    int i;

    co.server_timeout_ms = 200;
    if (r == NULL || r->err ||
        redislock_client_new_redlock(&c, e->urls, (size_t)e->n, &co) != 0 ||
        redislock_lock_new(c, KEY, strlen(KEY), &l) != 0)
        why = "setup";
    for (i = 0; why == NULL && i < NINCR; i++) {
        if (redislock_acquire(l, &o) != REDISLOCK_OK) {
            why = "acquire";
            break;
        }
        rep = redisCommand(r, "GET " COUNTER);
        n = rep && rep->type == REDIS_REPLY_STRING ? atoll(rep->str) : 0;
        freeReplyObject(rep);
        freeReplyObject(redisCommand(r, "SET " COUNTER " %lld", n + 1));
        if (redislock_release(l) != REDISLOCK_OK)
            why = "release";
    }
    if (why != NULL)
        fprintf(stderr, "worker %d: %s: %s\n", (int)getpid(), why,
                redislock_errdetail());
    redislock_lock_free(l);
    redislock_client_free(c);
    if (r != NULL)
        redisFree(r);
    return why == NULL ? 0 : 1;
}

static void counter_with_kills(int n, int kills)
{
    th_servers e = th_servers_start(n);
    th_server *res = th_server_start(NULL);
    redisContext *rr = th_server_redis(res);
    pid_t pids[NPROCS];
    int64_t t0 = th_now_ms();
    int i, st, killed = 0;
    char *v;

    fflush(NULL);
    for (i = 0; i < NPROCS; i++) {
        pids[i] = fork();
        ASSERT(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(worker(&e, res));
    }
    /* Kill a minority, one by one, once the run is under way. */
    while (killed < kills) {
        v = th_cmd_str(rr, NULL, "GET " COUNTER);
        if (v != NULL && atoll(v) >= (killed + 1) * NPROCS * NINCR / 4) {
            th_servers_kill(&e, killed * 2);
            killed++;
        }
        free(v);
        ASSERT_LT(th_now_ms() - t0, 60000);
        th_sleep_ms(2);
    }
    for (i = 0; i < NPROCS; i++) {
        while (waitpid(pids[i], &st, 0) < 0)
            ASSERT_EQ_INT(errno, EINTR);
        ASSERT(WIFEXITED(st));
        ASSERT_EQ_INT(WEXITSTATUS(st), 0);
    }
    v = th_cmd_str(rr, NULL, "GET " COUNTER);
    test_log("%d servers, %d killed mid-run: counter %s of %d in %lld ms", n,
             kills, v, NPROCS * NINCR, (long long)(th_now_ms() - t0));
    ASSERT_EQ_INT(atoll(v), NPROCS * NINCR);
    free(v);
    ASSERT_EQ_INT(holders(&e, KEY), 0);
    redisFree(rr);
    th_server_stop(res);
    th_servers_stop(&e);
}

void test_redlock_counter_3_kill_1(void)
{
    counter_with_kills(3, 1);
}

void test_redlock_counter_5_kill_2(void)
{
    counter_with_kills(5, 2);
}

/* ---- Re-entry, metadata, the watchdog ------------------------------ */

void test_redlock_reentrant_metadata(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY), *other = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_info info;
    int i;

    o.reentrant = 1;
    o.metadata = "host=a job=7";
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_holds(l), 2);
    for (i = 0; i < 3; i++) {
        char *h = th_cmd_str(e.r[i], NULL, "HGET " KEY " holds");
        ASSERT_EQ_STR(h, "2");
        free(h);
    }
    ASSERT_OK(redislock_inspect(other, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_EQ_STR(info.metadata, "host=a job=7");
    ASSERT_GT(info.ttl_ms, 9000);
    ASSERT_ERR(redislock_acquire(other, &o), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(holders(&e, KEY), 3);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(holders(&e, KEY), 0);
    ASSERT_OK(redislock_inspect(other, &info));
    ASSERT_EQ_INT(info.held, 0);
    redislock_lock_free(other);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* Held on a majority of servers only if a majority hold it: inspect and
 * ttl report the quorum's view. */
void test_redlock_inspect_majority_view(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY);
    redislock_info info;
    int64_t ttl;

    freeReplyObject(th_cmd(e.r[0], "SET " KEY " x PX 8000"));
    ASSERT_OK(redislock_inspect(l, &info));
    ASSERT_EQ_INT(info.held, 0);
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_EQ_INT(ttl, REDISLOCK_TTL_FREE);
    freeReplyObject(th_cmd(e.r[1], "SET " KEY " x PX 5000"));
    ASSERT_OK(redislock_inspect(l, &info));
    ASSERT_EQ_INT(info.held, 1);
    /* Held by a majority until the second-longest lease ends. */
    ASSERT_GT(info.ttl_ms, 4000);
    ASSERT_LE(info.ttl_ms, 5000);
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_LE(ttl, 5000);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    (void)l;
    __atomic_store_n((int *)arg, (int)why, __ATOMIC_SEQ_CST);
}

void test_redlock_watchdog_renews_and_signals(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock(&e, NULL);
    redislock_lock *l = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(1500, 5000, 0);
    int lost = 0;
    int64_t t0;
    int i;

    /* A 1.5 s lease: renewals every 500 ms, each over 3 servers, leave a
     * loaded machine (and TSan) room before the lease would end. The
     * acquire may wait: on a loaded machine its first round, three
     * connects and their handshakes, can outlast the per-server timeout
     * (ENOQUORUM seen once beside two copies of the suite). */
    o.watchdog = 1;
    o.on_lost = on_lost;
    o.on_lost_arg = &lost;
    ASSERT_OK(redislock_acquire(l, &o));
    /* Renewed past several TTLs on every server. */
    th_sleep_ms(4000);
    ASSERT_OK(redislock_check(l));
    for (i = 0; i < 3; i++)
        ASSERT_GT(th_pttl(e.r[i], KEY), 0);
    ASSERT_EQ_INT(__atomic_load_n(&lost, __ATOMIC_SEQ_CST), 0);
    /* A majority taken by someone else: the loss is signalled. */
    freeReplyObject(th_cmd(e.r[0], "SET " KEY " thief PX 60000"));
    freeReplyObject(th_cmd(e.r[1], "SET " KEY " thief PX 60000"));
    t0 = th_now_ms();
    while (__atomic_load_n(&lost, __ATOMIC_SEQ_CST) == 0 &&
           th_now_ms() - t0 < 5000)
        th_sleep_ms(5);
    test_log("majority taken: loss signalled after %lld ms (TTL 1500)",
             (long long)(th_now_ms() - t0));
    ASSERT_EQ_INT(__atomic_load_n(&lost, __ATOMIC_SEQ_CST), REDISLOCK_ELOST);
    ASSERT_ERR(redislock_check(l), REDISLOCK_ELOST);
    ASSERT_KEY(e.r[0], KEY, "thief");
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* ---- One server, listed twice -------------------------------------- */

/* A Redlock client over urls must be refused, naming needle. */
static void assert_redlock_refused(const char *const *urls, size_t n,
                                   const char *needle)
{
    /* Not NULL beforehand, so that the check below means something. */
    redislock_client *c = (redislock_client *)&c;

    ASSERT_ERR(redislock_client_new_redlock(&c, urls, n, NULL),
               REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    test_log("%s", redislock_errdetail());
    if (strstr(redislock_errdetail(), needle) == NULL ||
        strstr(redislock_errdetail(), "twice") == NULL)
        test_fail_(__FILE__, __LINE__, "detail \"%s\" does not name %s",
                   redislock_errdetail(), needle);
}

/* Two entries that are one server are one vote, however they are spelt
 * and whatever their databases: the client is refused. */
void test_redlock_same_server_spelt_twice_einval(void)
{
    th_servers e = th_servers_start(3);
    th_proxy *p = th_proxy_start(e.s[0]->port);
    char ip[64], local[64], db1[256], proxied[64], at[64];
    const char *urls[3];
    redislock_client *c = NULL;

    snprintf(ip, sizeof ip, "redis://127.0.0.1:%d", e.s[0]->port);
    snprintf(local, sizeof local, "redis://localhost:%d", e.s[0]->port);
    snprintf(db1, sizeof db1, "%s?db=1", e.urls[0]);
    snprintf(proxied, sizeof proxied, "redis://127.0.0.1:%d", th_proxy_port(p));
    snprintf(at, sizeof at, "localhost:%d/0", e.s[0]->port);
    urls[0] = ip;
    urls[1] = e.urls[1];
    urls[2] = local;
    assert_redlock_refused(urls, 3, at);
    /* Its unix socket and its TCP port. */
    urls[2] = e.urls[0];
    assert_redlock_refused(urls, 3, e.s[0]->sock);
    /* Two of its databases. */
    urls[0] = e.urls[0];
    urls[2] = db1;
    assert_redlock_refused(urls, 3, "/1");
    snprintf(local, sizeof local, "redis://localhost:%d/1", e.s[0]->port);
    snprintf(at, sizeof at, "localhost:%d/1", e.s[0]->port);
    urls[0] = ip;
    urls[2] = local;
    assert_redlock_refused(urls, 3, at);
    /* Another port in front of it: only the server can tell. */
    urls[2] = proxied;
    assert_redlock_refused(urls, 3, "run_id");
    /* Three servers, however spelt, are three votes. */
    urls[2] = e.urls[2];
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, NULL));
    redislock_client_free(c);
    th_proxy_stop(p);
    th_servers_stop(&e);
}

/*
 * An entry that was unreachable when the client was made (a socket path
 * not there yet) and turns out to be another entry's server, in another
 * database, is found out when it first answers and never votes. Two of
 * the other four servers are busy: counting it would make a majority.
 */
void test_redlock_same_server_found_late_never_votes(void)
{
    th_servers e = th_servers_start(4);
    char dir[] = "/tmp/rl-late.XXXXXX", link[64], late[96];
    const char *urls[5];
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_err out[MAXN];
    int i;

    ASSERT(mkdtemp(dir) != NULL);
    snprintf(link, sizeof link, "%s/s.sock", dir);
    snprintf(late, sizeof late, "unix://%s?db=1", link);
    for (i = 0; i < 4; i++)
        urls[i] = e.urls[i];
    urls[4] = late;
    /* A minority down at the start does not stop the client. */
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 5, NULL));
    ASSERT_EQ_INT(symlink(e.s[0]->sock, link), 0);
    l = th_lock(c, KEY);
    freeReplyObject(th_cmd(e.r[1], "SET " KEY " other PX 60000"));
    freeReplyObject(th_cmd(e.r[2], "SET " KEY " other PX 60000"));
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    test_log("%s", redislock_errdetail());
    redislock_outcomes(l, out, MAXN);
    ASSERT_EQ_INT(out[0], REDISLOCK_OK);
    ASSERT_EQ_INT(out[3], REDISLOCK_OK);
    ASSERT_EQ_INT(out[4], REDISLOCK_EINVAL);
    freeReplyObject(th_cmd(e.r[0], "SELECT 1"));
    ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS " KEY), 0);
    freeReplyObject(th_cmd(e.r[0], "SELECT 0"));
    /* With a third server free, three real votes make it. */
    freeReplyObject(th_cmd(e.r[1], "DEL " KEY));
    ASSERT_OK(redislock_acquire(l, &o));
    redislock_outcomes(l, out, MAXN);
    ASSERT_EQ_INT(out[4], REDISLOCK_EINVAL);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    unlink(link);
    rmdir(dir);
    th_servers_stop(&e);
}

/* Blackholed servers (th_blackhole: a connect that never completes),
 * their URLs, and what to close after. */
typedef struct holes {
    int n, lfd[3], fill[3];
    char url[3][64];
} holes;

static void holes_open(holes *h, int n)
{
    int i, port;

    h->n = n;
    for (i = 0; i < n; i++) {
        ASSERT((h->lfd[i] = th_blackhole(&port, &h->fill[i])) >= 0);
        snprintf(h->url[i], sizeof h->url[i], "redis://127.0.0.1:%d", port);
    }
}

static void holes_close(holes *h)
{
    int i;

    for (i = 0; i < h->n; i++) {
        close(h->fill[i]);
        close(h->lfd[i]);
    }
}

/* Two of five servers blackholed (a connect never completes): their
 * connections are tried all at once, so a new client, and each acquire
 * (which tries to connect them again), costs one connect timeout, not
 * one per server that is away. */
void test_redlock_blackholed_servers_connect_at_once(void)
{
    enum { CONNECT_MS = 700 };
    th_servers e = th_servers_start(3);
    const char *urls[5];
    holes h;
    redislock_options co = {0};
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    int64_t t0, made, took;

    holes_open(&h, 2);
    urls[0] = e.urls[0];
    urls[1] = h.url[0];
    urls[2] = e.urls[1];
    urls[3] = h.url[1];
    urls[4] = e.urls[2];
    co.connect_timeout_ms = CONNECT_MS;
    t0 = th_now_ms();
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 5, &co));
    made = th_now_ms() - t0;
    l = th_lock(c, KEY);
    t0 = th_now_ms();
    ASSERT_OK(redislock_acquire(l, &o));
    took = th_now_ms() - t0;
    ASSERT_EQ_INT(holders(&e, KEY), 3);
    ASSERT_OK(redislock_release(l));
    test_log("with 2 of 5 blackholed: a new client %lld ms, an acquire "
             "%lld ms (connect timeout %d ms)",
             (long long)made, (long long)took, CONNECT_MS);
    /* One after the other would take two connect timeouts. */
    ASSERT_LT(made, CONNECT_MS * 3 / 2);
    ASSERT_LT(took, CONNECT_MS * 3 / 2);
    redislock_lock_free(l);
    redislock_client_free(c);
    holes_close(&h);
    th_servers_stop(&e);
}

/* Three of five servers blackholed: no majority can answer, and a new
 * client says so after one connect timeout. Until 2026-12-02 the client
 * first gave every server a tenth of the command timeout, then asked the
 * three again for a whole connect timeout: the two waits one after the
 * other (CONNECT_MS + 300 ms here). Two of three stopped a while, so
 * that the majority answers late, are still waited for. */
void test_redlock_blackholed_majority_one_connect_timeout(void)
{
    enum { CONNECT_MS = 700, COMMAND_MS = 3000 };
    th_servers e = th_servers_start(3);
    const char *urls[5];
    holes h;
    redislock_options co = {0};
    redislock_client *c = NULL;
    redislock_err err;
    pthread_t t;
    int64_t t0, took;
    int i;

    holes_open(&h, 3);
    urls[0] = e.urls[0];
    urls[1] = h.url[0];
    urls[2] = h.url[1];
    urls[3] = e.urls[1];
    urls[4] = h.url[2];
    co.connect_timeout_ms = CONNECT_MS;
    co.command_timeout_ms = COMMAND_MS;
    t0 = th_now_ms();
    err = redislock_client_new_redlock(&c, urls, 5, &co);
    took = th_now_ms() - t0;
    test_log("with 3 of 5 blackholed: %s after %lld ms (connect timeout "
             "%d ms): %s",
             redislock_errname(err), (long long)took, CONNECT_MS,
             redislock_errdetail());
    ASSERT_ERR(err, REDISLOCK_ENOQUORUM);
    ASSERT(c == NULL);
    ASSERT(strstr(redislock_errdetail(), "only 2 of 5") != NULL);
    ASSERT_GE(took, CONNECT_MS - 10);
    /* The quick pass first would take CONNECT_MS + 300. */
    ASSERT_LT(took, CONNECT_MS + 200);
    holes_close(&h);

    /* Two of three stopped for 1.5 s, past the quick 300 ms: the client
     * waits for them (the pools' timeouts), and is made. */
    for (i = 0; i < 3; i++)
        urls[i] = e.urls[i];
    th_server_pause(e.s[0]);
    th_server_pause(e.s[2]);
    ASSERT_EQ_INT(pthread_create(&t, NULL, resume_later, &e), 0);
    t0 = th_now_ms();
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, &co));
    took = th_now_ms() - t0;
    th_join_within(t, 3000);
    test_log("two of three stopped for 1.5 s: made in %lld ms",
             (long long)took);
    ASSERT_GE(took, 1400);
    redislock_client_free(c);
    th_servers_stop(&e);
}
