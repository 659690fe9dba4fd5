/*
 * revoke: redislock_revoke() asks a key's holder to give the lock up. The
 * holder hears it at its next extend or renewal (REDISLOCK_EREVOKED, the
 * reason in the detail; the watchdog's loss signal), keeps its lease
 * until it releases, and its release frees the key. Keys whose holder
 * cannot hear it are refused and left as they were.
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "harness/apploop.h"
#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* What the watchdog's loss callback heard. */
typedef struct heard {
    pthread_mutex_t mu;
    int calls;
    redislock_err why;
    char detail[256];
    int64_t at_ms;
} heard;

static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    heard *h = arg;

    (void)l;
    pthread_mutex_lock(&h->mu);
    h->calls++;
    h->why = why;
    snprintf(h->detail, sizeof h->detail, "%s", redislock_errdetail());
    h->at_ms = th_now_ms();
    pthread_mutex_unlock(&h->mu);
}

/* Waits (at most ms) for l's loss fd, then for the callback's record. */
static void wait_heard(redislock_lock *l, heard *h, int64_t ms)
{
    struct pollfd p = {redislock_lost_fd(l), POLLIN, 0};
    int64_t end = th_now_ms() + ms;
    int calls;

    ASSERT(p.fd >= 0);
    ASSERT_EQ_INT(poll(&p, 1, (int)ms), 1);
    do {
        pthread_mutex_lock(&h->mu);
        calls = h->calls;
        pthread_mutex_unlock(&h->mu);
    } while (calls == 0 && th_now_ms() < end && usleep(1000) == 0);
    ASSERT_EQ_INT(calls, 1);
}

static redislock_acquire_options watched(int64_t ttl_ms, heard *h)
{
    redislock_acquire_options o = th_aopts(ttl_ms, 0, 0);

    o.watchdog = 1;
    o.on_lost = on_lost;
    o.on_lost_arg = h;
    return o;
}

/* A watched holder hears a revocation within one renewal period, as a
 * loss with its reason; it still holds the key, which nobody else can
 * take, and its release frees it. */
void test_revoke_watchdog_hears_loss(void)
{
    th_env e = th_env_start();
    heard h = {.mu = PTHREAD_MUTEX_INITIALIZER};
    redislock_acquire_options o = watched(600, &h);
    redislock_acquire_options no = th_aopts(1000, 0, 0);
    redislock_client *c2 = th_client(e.s);
    redislock_lock *l = th_lock(e.c, "rv"), *r = th_lock(c2, "rv"),
                   *x = th_lock(c2, "rv");
    int64_t asked;

    ASSERT_OK(redislock_acquire(l, &o));
    asked = th_now_ms();
    ASSERT_OK(redislock_revoke(r, "maintenance window"));
    wait_heard(l, &h, 2000);
    test_log("the holder heard the revocation %lld ms after it was asked "
             "(renewals every 200 ms)",
             (long long)(h.at_ms - asked));
    ASSERT_LE(h.at_ms - asked, 200 + 150);
    ASSERT_ERR(h.why, REDISLOCK_EREVOKED);
    ASSERT(strstr(h.detail, "maintenance window") != NULL);
    ASSERT_ERR(redislock_check(l), REDISLOCK_EREVOKED);
    ASSERT_EQ_INT(redislock_valid_ms(l), 0);
    ASSERT_ERR(redislock_acquire(x, &no), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_pttl(e.r, "rv"), -2);
    ASSERT_OK(redislock_acquire(x, &no));
    ASSERT_OK(redislock_release(x));
    redislock_lock_free(l);
    redislock_lock_free(r);
    redislock_lock_free(x);
    redislock_client_free(c2);
    th_env_stop(&e);
}

/* A holder that extends by itself is told at its extend, which still
 * lengthens the lease (the holder decides); a holder that does not listen
 * keeps the lock. A second revocation keeps the first reason. */
void test_revoke_extend_told_and_lengthened(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(2000, 0, 0);
    redislock_lock *l = th_lock(e.c, "rv"), *r = th_lock(e.c, "rv"),
                   *x = th_lock(e.c, "rv");

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_revoke(r, "first"));
    ASSERT_OK(redislock_revoke(r, "second"));
    ASSERT_ERR(redislock_extend(l, 20000), REDISLOCK_EREVOKED);
    ASSERT(strstr(redislock_errdetail(), "'first'") != NULL);
    ASSERT_GT(th_pttl(e.r, "rv"), 15000);
    ASSERT_ERR(redislock_check(l), REDISLOCK_EREVOKED);
    ASSERT_EQ_INT(redislock_valid_ms(l), 0);
    ASSERT_ERR(redislock_extend(l, 30000), REDISLOCK_EREVOKED);
    ASSERT_GT(th_pttl(e.r, "rv"), 25000);
    ASSERT_ERR(redislock_acquire(x, &o), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_pttl(e.r, "rv"), -2);
    redislock_lock_free(l);
    redislock_lock_free(r);
    redislock_lock_free(x);
    th_env_stop(&e);
}

/* A lock with an owner id (a hash, two holds): the same, and the holds
 * are released as ever. */
void test_revoke_owner_lock(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = th_lock(e.c, "rv"), *r = th_lock(e.c, "rv");

    o.owner = "worker-1";
    o.reentrant = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_revoke(r, "drain"));
    ASSERT_FIELD(e.r, "rv", "revoked", "drain");
    ASSERT_ERR(redislock_extend(l, 5000), REDISLOCK_EREVOKED);
    ASSERT(strstr(redislock_errdetail(), "'drain'") != NULL);
    ASSERT_OK(redislock_release(l));
    ASSERT_FIELD(e.r, "rv", "holds", "1");
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_pttl(e.r, "rv"), -2);
    redislock_lock_free(l);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* Renewed in one batch (renew.lua): only the revoked lock hears it. */
void test_revoke_batch_only_that_lock(void)
{
    static const char *const keys[3] = {"rv:a", "rv:b", "rv:c"};
    th_env e = th_env_start();
    heard h[3] = {{.mu = PTHREAD_MUTEX_INITIALIZER},
                  {.mu = PTHREAD_MUTEX_INITIALIZER},
                  {.mu = PTHREAD_MUTEX_INITIALIZER}};
    redislock_lock *l[3], *r = th_lock(e.c, "rv:b");
    redislock_acquire_options o;
    int i;

    for (i = 0; i < 3; i++) {
        o = watched(600, &h[i]);
        l[i] = th_lock(e.c, keys[i]);
        ASSERT_OK(redislock_acquire(l[i], &o));
    }
    ASSERT_OK(redislock_revoke(r, "b only"));
    wait_heard(l[1], &h[1], 2000);
    ASSERT_ERR(h[1].why, REDISLOCK_EREVOKED);
    /* Two more periods: the others renew on. */
    usleep(500 * 1000);
    ASSERT_EQ_INT(h[0].calls, 0);
    ASSERT_EQ_INT(h[2].calls, 0);
    ASSERT_OK(redislock_check(l[0]));
    ASSERT_OK(redislock_check(l[2]));
    ASSERT_GT(redislock_valid_ms(l[0]), 0);
    for (i = 0; i < 3; i++) {
        ASSERT_OK(redislock_release(l[i]));
        ASSERT_EQ_INT(th_pttl(e.r, keys[i]), -2);
        redislock_lock_free(l[i]);
    }
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* Keys whose holder cannot hear a revocation are refused, each named,
 * and left exactly as they were; so are bad reasons. */
void test_revoke_refusals(void)
{
    static const char *const set[2] = {"rv:s1", "rv:s2"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *r = th_lock(e.c, "rv"), *l = th_lock(e.c, "rv");
    redislock_lock *s = th_lock_set(e.c, set, 2);
    char longer[REDISLOCK_REVOKE_REASON_MAX + 2];

    ASSERT_ERR(redislock_revoke(NULL, "x"), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_revoke(r, NULL), REDISLOCK_EEXPIRED);
    ASSERT(strstr(redislock_errdetail(), "free") != NULL);
    ASSERT_EQ_INT(th_pttl(e.r, "rv"), -2);
    /* Another library's lock: its holder would never hear it. */
    freeReplyObject(th_cmd(e.r, "SET rv 9f2c4e1ab37d44c0 PX 5000"));
    ASSERT_ERR(redislock_revoke(r, "x"), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "another library") != NULL);
    ASSERT_KEY(e.r, "rv", "9f2c4e1ab37d44c0");
    freeReplyObject(th_cmd(e.r, "DEL rv"));
    /* A hold-after reservation. */
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release_hold(l, 5000));
    ASSERT_ERR(redislock_revoke(r, "x"), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "hold-after") != NULL);
    ASSERT_KEY(e.r, "rv", "redislock:hold-after");
    freeReplyObject(th_cmd(e.r, "DEL rv"));
    /* Held by many. */
    o.shared = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_ERR(redislock_revoke(r, "x"), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "not built yet") != NULL);
    ASSERT_OK(redislock_release(l));
    o.shared = 0;
    /* Bad reasons and a set handle: nothing sent. */
    ASSERT_OK(redislock_acquire(l, &o));
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    ASSERT_ERR(redislock_revoke(r, longer), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_revoke(r, "tab\there"), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_revoke(s, "x"), REDISLOCK_EINVAL);
    ASSERT_KEY(e.r, "rv", redislock_token(l));
    ASSERT_OK(redislock_extend(l, 5000));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_lock_free(r);
    redislock_lock_free(s);
    th_env_stop(&e);
}

/* A key of a set, revoked through a handle of its own: the set's holder
 * does not hear it yet, but its renewals and its release still see the
 * key as its own and free it. */
void test_revoke_set_key_still_released(void)
{
    static const char *const set[2] = {"rv:s1", "rv:s2"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *s = th_lock_set(e.c, set, 2), *r = th_lock(e.c, "rv:s2");

    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(redislock_revoke(r, "one key"));
    ASSERT_OK(redislock_extend(s, 8000));
    ASSERT_GT(th_pttl(e.r, "rv:s2"), 6000);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_pttl(e.r, "rv:s1"), -2);
    ASSERT_EQ_INT(th_pttl(e.r, "rv:s2"), -2);
    redislock_lock_free(s);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* Redlock: every server is marked; the watched holder hears it from the
 * majority's renewal, and its release frees every server. */
void test_revoke_redlock(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c1 = NULL, *c2 = NULL;
    heard h = {.mu = PTHREAD_MUTEX_INITIALIZER};
    redislock_acquire_options o = watched(600, &h);
    redislock_lock *l, *r;
    int i;

    ASSERT_OK(redislock_client_new_redlock(&c1, sv.urls, 3, NULL));
    ASSERT_OK(redislock_client_new_redlock(&c2, sv.urls, 3, NULL));
    l = th_lock(c1, "rv");
    r = th_lock(c2, "rv");
    ASSERT_ERR(redislock_revoke(r, "x"), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_revoke(r, "quorum"));
    wait_heard(l, &h, 2000);
    ASSERT_ERR(h.why, REDISLOCK_EREVOKED);
    ASSERT(strstr(h.detail, "revoked") != NULL);
    ASSERT_OK(redislock_release(l));
    for (i = 0; i < 3; i++)
        ASSERT_EQ_INT(th_pttl(sv.r[i], "rv"), -2);
    redislock_lock_free(l);
    redislock_lock_free(r);
    redislock_client_free(c1);
    redislock_client_free(c2);
    th_servers_stop(&sv);
}

/* The event-loop API: revoke on the loop, and the holder's extend on the
 * loop told why. */
void test_revoke_loop(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = th_lock(e.c, "rv"), *r = th_lock(e.c, "rv");
    redislock_loop *lp = NULL;
    app a;
    app_heard h = {0}, x = {0};

    memset(&a, 0, sizeof a);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_loop_new(&lp, e.c, app_watch, app_timer, &a));
    app_drive(&a, lp);
    ASSERT_ERR(redislock_loop_revoke(lp, r, "bad\nreason", app_heard_cb, &h),
               REDISLOCK_EINVAL);
    ASSERT_OK(redislock_loop_revoke(lp, r, "from the loop", app_heard_cb, &h));
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_extend(lp, l, 5000, app_heard_cb, &x));
    app_until_heard(&a, &x);
    ASSERT_ERR(x.err, REDISLOCK_EREVOKED);
    ASSERT(strstr(x.said, "from the loop") != NULL);
    ASSERT_OK(redislock_release(l));
    redislock_loop_free(lp);
    redislock_lock_free(l);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* inspect (and so status) shows a revocation and its reason while the
 * revoked holder's lease lives, and not for the next holder. */
void test_revoke_inspect_shows_reason(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = th_lock(e.c, "rv"), *r = th_lock(e.c, "rv");
    redislock_info info;

    ASSERT_OK(redislock_inspect(r, &info));
    ASSERT(info.revoked == NULL);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_inspect(r, &info));
    ASSERT(info.revoked == NULL);
    ASSERT_OK(redislock_revoke(r, "deploy 42"));
    ASSERT_OK(redislock_inspect(r, &info));
    ASSERT(info.revoked != NULL);
    ASSERT_EQ_STR(info.revoked, "deploy 42");
    ASSERT_EQ_INT((long long)info.revoked_len, 9);
    /* The mark is no part of what inspect shows of the holder. */
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_LOCK);
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_inspect(r, &info));
    ASSERT(info.revoked == NULL);
    /* No reason given: an empty one. */
    ASSERT_OK(redislock_revoke(r, NULL));
    ASSERT_OK(redislock_inspect(r, &info));
    ASSERT(info.revoked != NULL);
    ASSERT_EQ_INT((long long)info.revoked_len, 0);
    ASSERT_OK(redislock_release(l));
    /* An owner id's lock. */
    o.owner = "worker-1";
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_revoke(r, "hash"));
    ASSERT_OK(redislock_inspect(r, &info));
    ASSERT(info.revoked != NULL);
    ASSERT_EQ_STR(info.revoked, "hash");
    ASSERT_EQ_STR(info.owner, "worker-1");
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* Where the key's node is found, not given: on a Redis Cluster and
 * through Sentinel, a watched holder hears a revocation, and a
 * sequencer checks out while its holder holds and not after. */
static void revoke_and_check_on(redislock_client *c)
{
    heard h = {.mu = PTHREAD_MUTEX_INITIALIZER};
    redislock_acquire_options o = watched(900, &h);
    redislock_lock *l = th_lock(c, "{rv}k"), *r = th_lock(c, "{rv}k");
    char seq[REDISLOCK_SEQUENCER_MAX];

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_sequencer(l, seq, sizeof seq));
    ASSERT_OK(redislock_check_sequencer(r, seq));
    ASSERT_OK(redislock_revoke(r, "topology"));
    wait_heard(l, &h, 3000);
    ASSERT_ERR(h.why, REDISLOCK_EREVOKED);
    ASSERT(strstr(h.detail, "topology") != NULL);
    ASSERT_OK(redislock_release(l));
    ASSERT_ERR(redislock_check_sequencer(r, seq), REDISLOCK_EEXPIRED);
    redislock_lock_free(l);
    redislock_lock_free(r);
}

void test_revoke_cluster_and_sentinel(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    th_sentinels *t;
    redislock_client *c = NULL;

    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    revoke_and_check_on(c);
    redislock_client_free(c);
    th_cluster_stop(tc);
    t = th_sentinels_start(NULL);
    c = th_client_url(t->url, NULL);
    revoke_and_check_on(c);
    redislock_client_free(c);
    th_sentinels_stop(t);
}
