/*
 * elect across failures: an observer's wait rides through a Sentinel
 * failover (its reads fail until the sentinels name the new master), a
 * cluster's (until the replica serves the slot) and a server that does
 * not answer for a while, and reports the changes made after; a wait
 * that ends while the server cannot be read says so.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/util.h"
#include "test.h"

/* An observer's wait in a thread of its own. */
typedef struct watcher {
    redislock_lock *l;
    redislock_leader_info s;
    int64_t timeout_ms;
    redislock_err err;
    char detail[256];
    int64_t done_ms; /* th_now_ms() when it returned */
} watcher;

static void *observe_thread(void *arg)
{
    watcher *w = arg;

    w->err = redislock_observe(w->l, &w->s, w->timeout_ms);
    if (w->err != REDISLOCK_OK)
        snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    w->done_ms = th_now_ms();
    return NULL;
}

/* The replica has what the master has: WAIT for one replica. */
static void replicated(th_sentinels *t, int master)
{
    redisContext *r = th_sentinels_node_redis(t, master);
    redisReply *rep = th_cmd(r, "WAIT 1 5000");

    ASSERT_EQ_INT(rep->type, REDIS_REPLY_INTEGER);
    ASSERT_EQ_INT(rep->integer, 1);
    freeReplyObject(rep);
    redisFree(r);
}

/* After the failover and a's resignation: b's election is w's next
 * change, with a higher term; b resigns, and the handles are freed. */
static void standby_elected(watcher *w, redislock_lock *a, redislock_lock *b,
                            const redislock_acquire_options *o)
{
    int64_t a_term = w->s.term;

    ASSERT_OK(redislock_campaign(b, "b", o));
    ASSERT_GT(redislock_fence(b), a_term);
    ASSERT_OK(redislock_observe(w->l, &w->s, 5000));
    ASSERT_EQ_INT(w->s.kind, REDISLOCK_CHANGE_ELECTED);
    ASSERT_EQ_INT(w->s.term, redislock_fence(b));
    ASSERT_EQ_STR(w->s.value, "b");
    ASSERT_OK(redislock_resign(b));
    redislock_lock_free(w->l);
    redislock_lock_free(b);
    redislock_lock_free(a);
}

/*
 * The master is killed while an observer waits for the change after
 * an election: the wait goes on through the failover (no error), and
 * the leader's resignation on the new master is the change it reports;
 * a standby's election after it is the next.
 */
void test_elect_observer_through_failover(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *ca = th_client_url(t->url, NULL);
    redislock_client *cb = th_client_url(t->url, NULL);
    redislock_client *co = th_client_url(t->url, NULL);
    redislock_lock *a = th_lock(ca, "ef"), *b = th_lock(cb, "ef");
    redislock_acquire_options o = th_aopts(60000, 0, 0);
    watcher w = {.timeout_ms = 30000};
    pthread_t th;
    int64_t a_term;
    int old;

    w.l = th_lock(co, "ef");
    ASSERT_OK(redislock_campaign(a, "a", &o));
    a_term = redislock_fence(a);
    ASSERT_OK(redislock_leader(w.l, &w.s));
    ASSERT_EQ_INT(w.s.term, a_term);
    old = th_sentinels_master(t);
    ASSERT_GE(old, 0);
    replicated(t, old);
    ASSERT_EQ_INT(pthread_create(&th, NULL, observe_thread, &w), 0);
    /* The observer's read is out, then it waits on the notices. */
    th_sleep_ms(300);
    th_sentinels_kill_master(t);
    test_log("failover in %lld ms",
             (long long)th_sentinels_wait_failover(t, old, 20000));
    ASSERT_OK(redislock_resign(a));
    ASSERT_EQ_INT(pthread_join(th, NULL), 0);
    test_log("observer: err %d (%s), kind %d, term %lld", w.err, w.detail,
             w.s.kind, (long long)w.s.term);
    ASSERT_OK(w.err);
    ASSERT_EQ_INT(w.s.kind, REDISLOCK_CHANGE_RESIGNED);
    ASSERT_EQ_INT(w.s.term, a_term);
    standby_elected(&w, a, b, &o);
    redislock_client_free(co);
    redislock_client_free(cb);
    redislock_client_free(ca);
    th_sentinels_stop(t);
}

/*
 * A server that does not answer (SIGSTOP) while an observer's reads go
 * out, with a 200 ms command timeout: a wait that ends meanwhile fails
 * with the reads' error and a detail that says so, at its deadline, not
 * at the first timeout; one that goes on past the server's return
 * reports the next change, and waits for it on the server's notices
 * (nothing sent), as before the stop.
 */
void test_elect_observer_through_stopped_server(void)
{
    th_env e = th_env_start();
    redislock_options co = {0};
    redislock_client *c;
    redislock_lock *a = th_lock(e.c, "es");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    watcher w = {.timeout_ms = 20000};
    pthread_t th;
    int64_t t0, took;

    co.command_timeout_ms = 200;
    c = th_client_url(e.s->unix_url, &co);
    w.l = th_lock(c, "es");
    ASSERT_OK(redislock_campaign(a, "a", &o));
    ASSERT_OK(redislock_leader(w.l, &w.s));
    th_server_pause(e.s);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_observe(w.l, &w.s, 1000), REDISLOCK_ETIMEDOUT);
    took = th_now_ms() - t0;
    test_log("a 1000 ms wait, the server stopped: %lld ms, %s", (long long)took,
             redislock_errdetail());
    ASSERT_GE(took, 950);
    ASSERT_LE(took, 3000);
    ASSERT(strstr(redislock_errdetail(), "could not be read") != NULL);
    ASSERT_EQ_INT(pthread_create(&th, NULL, observe_thread, &w), 0);
    th_sleep_ms(700);
    th_server_resume(e.s);
    /* Back to waiting on the notices: no read for a second. */
    WAIT_FOR(th_tracked_scripts(e.r) > 0, 5000);
    th_assert_silent(e.r, 1000);
    t0 = th_now_ms();
    ASSERT_OK(redislock_proclaim(a, "a2"));
    ASSERT_EQ_INT(pthread_join(th, NULL), 0);
    test_log("observer: err %d (%s), kind %d, %lld ms after the proclaim",
             w.err, w.detail, w.s.kind, (long long)(w.done_ms - t0));
    ASSERT_OK(w.err);
    ASSERT_EQ_INT(w.s.kind, REDISLOCK_CHANGE_PROCLAIMED);
    ASSERT_EQ_STR(w.s.value, "a2");
    ASSERT_LE(w.done_ms - t0, 1000);
    ASSERT_OK(redislock_resign(a));
    redislock_lock_free(w.l);
    redislock_lock_free(a);
    redislock_client_free(c);
    th_env_stop(&e);
}

/*
 * In a cluster, the record's master is killed while an observer waits,
 * tracked there, for the change after an election: the wait goes on
 * through the failover (no error) and, once the replica serves the
 * slot, waits on that server's notices (no read in a second); the
 * leader's resignation there is the change it reports, within a second;
 * a standby's election after it is the next.
 */
void test_elect_observer_through_cluster_failover(void)
{
    th_cluster *tc = th_cluster_start(3, 1);
    int victim, heir;
    char buf[32];
    const char *key =
        th_cluster_key_away(tc, "eo", -1, &victim, buf, sizeof buf);
    redislock_client *ca, *cb, *co;
    redislock_lock *a, *b;
    redislock_acquire_options o = th_aopts(60000, 0, 0);
    watcher w = {.timeout_ms = 30000};
    pthread_t th;
    redisContext *r;
    int64_t a_term, t0;
    long long calls;

    heir = th_cluster_replica_of(tc, victim);
    ASSERT(heir >= 0);
    ASSERT_OK(
        redislock_client_new_cluster(&ca, tc->seeds, (size_t)tc->n, NULL));
    ASSERT_OK(
        redislock_client_new_cluster(&cb, tc->seeds, (size_t)tc->n, NULL));
    ASSERT_OK(
        redislock_client_new_cluster(&co, tc->seeds, (size_t)tc->n, NULL));
    a = th_lock(ca, key);
    b = th_lock(cb, key);
    w.l = th_lock(co, key);
    ASSERT_OK(redislock_campaign(a, "a", &o));
    a_term = redislock_fence(a);
    ASSERT_OK(redislock_leader(w.l, &w.s));
    ASSERT_EQ_INT(w.s.term, a_term);
    th_cluster_synced(tc, victim, key);
    ASSERT_EQ_INT(pthread_create(&th, NULL, observe_thread, &w), 0);
    r = th_cluster_redis(tc, victim);
    WAIT_FOR(th_tracked_scripts(r) > 0, 5000);
    redisFree(r);
    t0 = th_now_ms();
    th_cluster_kill(tc, victim);
    th_cluster_wait_ok(tc, 8000);
    test_log("the replica serves the slot %lld ms after the kill",
             (long long)(th_now_ms() - t0));
    /* The observer reads there, then waits on the notices. */
    r = th_cluster_redis(tc, heir);
    WAIT_FOR(th_tracked_scripts(r) > 0, 10000);
    test_log("tracked on the new master %lld ms after the kill",
             (long long)(th_now_ms() - t0));
    calls = th_script_calls(r);
    th_sleep_ms(1000);
    calls = th_script_calls(r) - calls;
    test_log("reads on the new master in 1000 ms: %lld", calls);
    ASSERT_EQ_INT(calls, 0);
    t0 = th_now_ms();
    ASSERT_OK(redislock_resign(a));
    ASSERT_EQ_INT(pthread_join(th, NULL), 0);
    test_log("observer: err %d (%s), kind %d, term %lld, %lld ms after the "
             "resignation",
             w.err, w.detail, w.s.kind, (long long)w.s.term,
             (long long)(w.done_ms - t0));
    ASSERT_OK(w.err);
    ASSERT_EQ_INT(w.s.kind, REDISLOCK_CHANGE_RESIGNED);
    ASSERT_EQ_INT(w.s.term, a_term);
    ASSERT_LE(w.done_ms - t0, 1000);
    redisFree(r);
    standby_elected(&w, a, b, &o);
    redislock_client_free(co);
    redislock_client_free(cb);
    redislock_client_free(ca);
    th_cluster_stop(tc);
}
