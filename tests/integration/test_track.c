/*
 * track: waiting behind a holder whose release wakes nobody (a plain
 * SET NX PX, another library's lock) without polling. The waiter's read
 * of the key is tracked (CLIENT TRACKING, src/node/track.c) and the
 * server's notice of the key's change ends its pause: it sends nothing
 * while it waits, takes the lock soon after the release or the expiry,
 * reads again when the notices may have been lost, polls as before
 * where the server refuses tracking, and leaves no connection behind.
 *
 * What the waiter sends is read from the server (INFO commandstats),
 * its connections from CLIENT LIST's flags: P a subscriber, t tracking.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/apploop.h"
#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* The foreign holder's lease: a waiter that waited it out would take
 * this long. */
#define LEASE_MS 8000
/* How soon after the release the waiter must hold the lock: a notice, a
 * round trip, thread wake-ups, on a loaded 2-core box under ASan. */
#define LATE_MS 150
/* How long a setup step (the waiter's tracking set up) may take. */
#define SETUP_MS 5000
/* The window in which a tracked waiter is watched for attempts. */
#define QUIET_MS 1000

typedef th_env env;

/* Until th_clients_flagged(r, flag) is n, at most SETUP_MS. */
static void wait_flagged(redisContext *r, char flag, int n)
{
    int64_t deadline = th_now_ms() + SETUP_MS;

    while (th_clients_flagged(r, flag) != n && th_now_ms() < deadline)
        th_sleep_ms(5);
    ASSERT_EQ_INT(th_clients_flagged(r, flag), n);
}

/* Until the keys of set (n) that r[i] serves, but skip's, are gone: a
 * refused attempt has given back what it took before the refusal, the
 * last of its requests (a quiet count started earlier may count it). */
static void given_back(redisContext *const *r, const char *const *set, int n,
                       int skip)
{
    int i;

    for (i = 0; i < n; i++)
        if (i != skip)
            WAIT_FOR(th_cmd_int(r[i], "EXISTS %s", set[i]) == 0, SETUP_MS);
}

/* The script calls on each of three servers in QUIET_MS: none. */
static void quiet_on_three(redisContext *const *r, const char *where)
{
    long long c0[3], n;
    int i;

    for (i = 0; i < 3; i++)
        c0[i] = th_script_calls(r[i]);
    th_sleep_ms(QUIET_MS);
    for (i = 0; i < 3; i++) {
        n = th_script_calls(r[i]) - c0[i];
        test_log("%s: %lld attempts on server %d in %d ms", where, n, i,
                 QUIET_MS);
        ASSERT_EQ_INT(n, 0);
    }
}

/* An acquire and release of another key: the scripts are loaded after
 * it, so that counted calls are attempts. */
static void warm(env *e)
{
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = th_lock(e->c, "tk:warm");

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
}

/* A foreign holder of key: SET NX PX of a value that is no token. */
static void hold(redisContext *c, const char *key, int64_t ms)
{
    redisReply *r =
        th_cmd(c, "SET %s foreign-holder NX PX %lld", key, (long long)ms);

    ASSERT(r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* Whether a tracked waiter's tracked attempt has run. */
static int tracked_attempt_ran(redisContext *r)
{
    return th_tracked_scripts(r) > 0;
}

/* The waiter is tracked: its notices' subscriber and its tracking
 * connection are up, and its tracked attempt has run. */
static void wait_tracked(env *e)
{
    int64_t deadline = th_now_ms() + SETUP_MS;

    wait_flagged(e->r, 'P', 1);
    while (!tracked_attempt_ran(e->r) && th_now_ms() < deadline)
        th_sleep_ms(5);
    ASSERT(tracked_attempt_ran(e->r));
}

/* key deleted, as its foreign holder's release would: the waiter w
 * takes the lock within LATE_MS, and gives it back. */
static void release_reaches(env *e, const char *key, th_waiter *w)
{
    int64_t t_del = th_now_ms();

    ASSERT_EQ_INT(th_cmd_int(e->r, "DEL %s", key), 1);
    th_waiter_join_ok(w, 5000);
    test_log("taken %lld ms after the release",
             (long long)(w->done_us / 1000 - t_del));
    ASSERT_LE(w->done_us / 1000 - t_del, LATE_MS);
    ASSERT_KEY(e->r, key, w->token);
    ASSERT_OK(redislock_release(w->l));
    redislock_lock_free(w->l);
}

/*
 * Behind a SET NX PX holder the waiter sends nothing (no attempt in a
 * second: it polled 25-50 times a second before), takes the lock within
 * LATE_MS of the release, and its tracking connections are gone after.
 */
void test_track_foreign_waiter_sends_nothing(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    long long c0, c1;
    th_waiter w;

    hold(e.r, "tk:a", LEASE_MS);
    th_waiter_start(&w, e.c, "tk:a", &o);
    wait_tracked(&e);
    c0 = th_script_calls(e.r);
    th_sleep_ms(QUIET_MS);
    c1 = th_script_calls(e.r);
    test_log("behind a SET NX PX holder: %lld attempts in %d ms", c1 - c0,
             QUIET_MS);
    ASSERT_EQ_INT(c1 - c0, 0);
    release_reaches(&e, "tk:a", &w);
    wait_flagged(e.r, 'P', 0);
    wait_flagged(e.r, 't', 0);
    th_env_stop(&e);
}

/*
 * A set spread over three servers, behind a SET NX PX holder of its key
 * on one of them, waits on that server's notices: no attempt on any
 * server in a second (it polled 25-50 times a second before, taking and
 * giving back the groups before the holder's each time), and takes the
 * set within LATE_MS of the release. Behind the key of server 0 and of
 * server 2: the first group in the set's order and the last.
 */
void test_track_spread_waiter_sends_nothing(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = NULL;
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    char keys[3][3][24];
    const char *set[3], *warm_set[3];
    char where[32];
    int got[3], i, k;
    int64_t t_del;
    redislock_lock *wl;
    th_waiter w;

    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    th_keys_by_server(e.r, 3, c, "tsp", keys, got);
    for (i = 0; i < 3; i++) {
        set[i] = keys[i][0];
        warm_set[i] = keys[i][1];
    }
    /* The scripts loaded everywhere first: counted calls are attempts. */
    wl = th_lock_set(c, warm_set, 3);
    ASSERT_OK(redislock_acquire(wl, &o));
    ASSERT_OK(redislock_release(wl));
    redislock_lock_free(wl);
    for (k = 0; k < 3; k += 2) {
        ASSERT(th_cmd_int(e.r[k], "EXISTS %s", set[k]) == 0);
        hold(e.r[k], set[k], LEASE_MS);
        th_waiter_start_lock(&w, th_lock_set(c, set, 3), &o);
        wait_flagged(e.r[k], 'P', 1);
        WAIT_FOR(th_tracked_scripts(e.r[k]) > 0, SETUP_MS);
        given_back(e.r, set, 3, k);
        snprintf(where, sizeof where, "behind server %d's key", k);
        quiet_on_three(e.r, where);
        t_del = th_now_ms();
        ASSERT_EQ_INT(th_cmd_int(e.r[k], "DEL %s", set[k]), 1);
        th_waiter_join_ok(&w, 5000);
        test_log("taken %lld ms after the release",
                 (long long)(w.done_us / 1000 - t_del));
        ASSERT_LE(w.done_us / 1000 - t_del, LATE_MS);
        ASSERT_EQ_INT(th_held_anywhere(&e, set, 3, w.token), 3);
        ASSERT_OK(redislock_release(w.l));
        redislock_lock_free(w.l);
        wait_flagged(e.r[k], 'P', 0);
        wait_flagged(e.r[k], 't', 0);
    }
    /* The holder changes sides: behind server 2's key, then server 0's
     * taken by another and server 2's released. The waiter's next
     * attempt is refused by server 0's group, untracked: it polls once,
     * then waits on server 0's notices (server 2's left) in silence. */
    hold(e.r[2], set[2], LEASE_MS);
    th_waiter_start_lock(&w, th_lock_set(c, set, 3), &o);
    WAIT_FOR(th_tracked_scripts(e.r[2]) > 0, SETUP_MS);
    /* Its tracked attempt has run, but what it took before it may not
     * be given back yet: server 0's key is the foreign holder's only
     * once it is (else the waiter takes the set at server 2's release). */
    given_back(e.r, set, 3, 2);
    hold(e.r[0], set[0], LEASE_MS);
    ASSERT_EQ_INT(th_cmd_int(e.r[2], "DEL %s", set[2]), 1);
    WAIT_FOR(th_tracked_scripts(e.r[0]) > 0, SETUP_MS);
    wait_flagged(e.r[2], 'P', 0);
    quiet_on_three(e.r, "sides changed");
    t_del = th_now_ms();
    ASSERT_EQ_INT(th_cmd_int(e.r[0], "DEL %s", set[0]), 1);
    th_waiter_join_ok(&w, 5000);
    test_log("sides changed: taken %lld ms after the release",
             (long long)(w.done_us / 1000 - t_del));
    ASSERT_LE(w.done_us / 1000 - t_del, LATE_MS);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* A holder that lets its lease run out: the waiter takes the lock at the
 * lease's end (by the notice of the expiry, or its pause, the lease),
 * with a handful of attempts, not one per poll. */
void test_track_foreign_expiry(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    long long c0;
    int64_t t0;
    th_waiter w;

    /* The scripts loaded first, so that only attempts count. */
    warm(&e);
    c0 = th_script_calls(e.r);
    t0 = th_now_ms();
    hold(e.r, "tk:x", 1500);
    th_waiter_start(&w, e.c, "tk:x", &o);
    th_waiter_join_ok(&w, 5000);
    test_log("taken %lld ms after a 1500 ms lease began, %lld attempts",
             (long long)(w.done_us / 1000 - t0), th_script_calls(e.r) - c0);
    ASSERT_GE(w.done_us / 1000 - t0, 1400);
    ASSERT_LE(w.done_us / 1000 - t0, 1500 + 250);
    /* The first, the tracked one, the one that takes it, and a few at the
     * lease's end (its PTTL is in whole ms, and the expiry's own notice
     * wakes the waiter again). Polling made 30 and more. */
    ASSERT_LE(th_script_calls(e.r) - c0, 5);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    th_env_stop(&e);
}

/* The notices' connection killed under the waiter: it reads the key
 * again and tracks it anew, and a release still reaches it. */
void test_track_notices_lost_read_again(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    long long c0;
    th_waiter w;

    hold(e.r, "tk:k", LEASE_MS);
    th_waiter_start(&w, e.c, "tk:k", &o);
    wait_tracked(&e);
    c0 = th_script_calls(e.r);
    ASSERT_EQ_INT(th_cmd_int(e.r, "CLIENT KILL TYPE pubsub"), 1);
    /* Made anew, and the key read again under tracking. */
    wait_flagged(e.r, 'P', 1);
    wait_flagged(e.r, 't', 1);
    wait_tracked(&e);
    ASSERT_GE(th_script_calls(e.r) - c0, 1);
    ASSERT_LE(th_script_calls(e.r) - c0, 3);
    release_reaches(&e, "tk:k", &w);
    th_env_stop(&e);
}

/* A client whose ACL refuses tracking (no CLIENT command): the waiter
 * polls, as before, and takes the lock soon after the release. */
void test_track_refused_polls(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    redislock_client *c;
    char url[512];
    long long c0, c1;
    th_waiter w;

    freeReplyObject(
        th_cmd(e.r, "ACL SETUSER nocache on >pw ~* &* +@all -client"));
    snprintf(url, sizeof url, "redis://nocache:pw@127.0.0.1:%d", e.s->port);
    c = th_client_url(url, NULL);
    hold(e.r, "tk:r", LEASE_MS);
    th_waiter_start(&w, c, "tk:r", &o);
    /* Its first attempt marked the lock waited on. */
    th_wait_exists(e.r, "tk:r{tk:r}:rl-waiting", SETUP_MS);
    c0 = th_script_calls(e.r);
    th_sleep_ms(QUIET_MS);
    c1 = th_script_calls(e.r);
    test_log("tracking refused: %lld attempts in %d ms", c1 - c0, QUIET_MS);
    ASSERT_GE(c1 - c0, 5);
    ASSERT_EQ_INT(th_clients_flagged(e.r, 't'), 0);
    release_reaches(&e, "tk:r", &w);
    redislock_client_free(c);
    th_env_stop(&e);
}

/* A cancel reaches a tracked waiter at once, and its connections go. */
void test_track_cancel(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    int64_t t0;
    th_waiter w;

    hold(e.r, "tk:c", LEASE_MS);
    th_waiter_start(&w, e.c, "tk:c", &o);
    wait_tracked(&e);
    t0 = th_now_ms();
    redislock_cancel(w.l);
    th_join_within(w.t, 5000);
    ASSERT_ERR(w.err, REDISLOCK_ECANCELED);
    ASSERT_LE(w.done_us / 1000 - t0, LATE_MS);
    wait_flagged(e.r, 'P', 0);
    wait_flagged(e.r, 't', 0);
    redislock_lock_free(w.l);
    th_env_stop(&e);
}

/* The event-loop API's waiter too: nothing sent while it waits, the lock
 * soon after the release. */
void test_track_loop_waiter(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    redislock_loop *lp;
    redislock_lock *l = th_lock(e.c, "tk:l");
    app_heard h;
    app a;
    long long c0;
    int64_t t_end, t_del;

    memset(&a, 0, sizeof a);
    memset(&h, 0, sizeof h);
    a.max_wait_ms = 20;
    ASSERT_OK(redislock_loop_new(&lp, e.c, app_watch, app_timer, &a));
    app_drive(&a, lp);
    hold(e.r, "tk:l", LEASE_MS);
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, app_heard_cb, &h));
    /* Turned until tracked (the loop's waiter also listens on the lock's
     * wake channel: two subscribers). */
    t_end = th_now_ms() + SETUP_MS;
    while (!tracked_attempt_ran(e.r) && th_now_ms() < t_end)
        app_turn(&a);
    ASSERT(tracked_attempt_ran(e.r));
    test_log("tracked after %lld ms",
             (long long)(th_now_ms() - (t_end - SETUP_MS)));
    /* Its reply read. */
    for (t_end = th_now_ms() + 50; th_now_ms() < t_end;)
        app_turn(&a);
    c0 = th_script_calls(e.r);
    t_end = th_now_ms() + QUIET_MS;
    while (th_now_ms() < t_end)
        app_turn(&a);
    ASSERT_EQ_INT(th_script_calls(e.r) - c0, 0);
    ASSERT_EQ_INT(h.calls, 0);
    t_del = th_now_ms();
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL tk:l"), 1);
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_OK);
    test_log("taken %lld ms after the release",
             (long long)(h.at_us / 1000 - t_del));
    ASSERT_LE(h.at_us / 1000 - t_del, LATE_MS);
    ASSERT_KEY(e.r, "tk:l", redislock_token(l));
    memset(&h, 0, sizeof h);
    ASSERT_OK(redislock_loop_release(lp, l, 0, app_heard_cb, &h));
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_OK);
    redislock_lock_free(l);
    redislock_loop_free(lp);
    th_env_stop(&e);
}

/*
 * Fair waiters behind a SET NX PX holder: each sends at most its
 * heartbeat while it waits (every 2 s; they polled 20-40 times a second
 * before), the first queued takes the lock within LATE_MS of the
 * release, and the second, still queued, is handed it by the first's
 * release.
 */
void test_track_fair_waiters(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    long long c0, c1;
    int64_t deadline, t_rel;
    th_waiter w1, w2;

    o.fair = 1;
    warm(&e);
    hold(e.r, "tk:f", LEASE_MS);
    th_waiter_start(&w1, e.c, "tk:f", &o);
    deadline = th_now_ms() + SETUP_MS;
    while (th_cmd_int(e.r, "ZCARD tk:f{tk:f}:rl-q") != 1 &&
           th_now_ms() < deadline)
        th_sleep_ms(5);
    th_waiter_start(&w2, e.c, "tk:f", &o);
    while (th_tracked_scripts(e.r) != 2 && th_now_ms() < deadline)
        th_sleep_ms(5);
    ASSERT_EQ_INT(th_tracked_scripts(e.r), 2);
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD tk:f{tk:f}:rl-q"), 2);
    c0 = th_script_calls(e.r);
    th_sleep_ms(QUIET_MS);
    c1 = th_script_calls(e.r);
    test_log("two fair waiters behind a SET NX PX holder: %lld attempts in "
             "%d ms",
             c1 - c0, QUIET_MS);
    ASSERT_LE(c1 - c0, 2);
    release_reaches(&e, "tk:f", &w1);
    t_rel = th_now_ms();
    th_waiter_join_ok(&w2, 5000);
    test_log("the second taken %lld ms after the first's release",
             (long long)(w2.done_us / 1000 - t_rel));
    ASSERT_LE(w2.done_us / 1000 - t_rel, LATE_MS);
    ASSERT_KEY(e.r, "tk:f", w2.token);
    ASSERT_OK(redislock_release(w2.l));
    redislock_lock_free(w2.l);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS tk:f{tk:f}:rl-q"), 0);
    wait_flagged(e.r, 't', 0);
    th_env_stop(&e);
}

/* Until a tracked attempt has run on r, at most SETUP_MS. */
static void wait_tracked_on(redisContext *r)
{
    int64_t deadline = th_now_ms() + SETUP_MS;

    while (!tracked_attempt_ran(r) && th_now_ms() < deadline)
        th_sleep_ms(5);
    ASSERT(tracked_attempt_ran(r));
}

/* No attempt reaches r in QUIET_MS. */
static void quiet_on(redisContext *r, const char *where)
{
    long long c0 = th_script_calls(r);

    th_sleep_ms(QUIET_MS);
    test_log("%s: %lld attempts in %d ms", where, th_script_calls(r) - c0,
             QUIET_MS);
    ASSERT_EQ_INT(th_script_calls(r) - c0, 0);
}

/*
 * In a cluster: the waiter behind a SET NX PX holder is tracked on the
 * key's master, and when the key's slot moves to another master under
 * it (ASK while it migrates, then MOVED), it is tracked there: an
 * attempt that a redirection sent on was read untracked, so it does not
 * wait for the old master's notices. The release on the new master
 * reaches it within LATE_MS.
 */
void test_track_cluster_slot_moves(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    const char *key = "{tk}c";
    unsigned slot = th_cluster_keyslot(tc, key);
    int src = th_cluster_owner(tc, slot), dst = (src + 1) % 3;
    char *sid = th_cluster_node_id(tc, src), *did = th_cluster_node_id(tc, dst);
    redisContext *rs = th_cluster_redis(tc, src),
                 *rd = th_cluster_redis(tc, dst);
    redislock_acquire_options o = th_aopts(5000, 30000, 0);
    redislock_client *c = NULL;
    int64_t deadline, t_del;
    char *v;
    th_waiter w;

    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    hold(rs, key, 2 * LEASE_MS);
    th_waiter_start(&w, c, key, &o);
    wait_tracked_on(rs);
    quiet_on(rs, "tracked on the key's master");
    freeReplyObject(th_cmd(rd, "CLUSTER SETSLOT %u IMPORTING %s", slot, sid));
    freeReplyObject(th_cmd(rs, "CLUSTER SETSLOT %u MIGRATING %s", slot, did));
    /* The key's move deletes it on src: the notice wakes the waiter, whose
     * attempt src sends on with ASK, to find the holder on dst. */
    th_cluster_migrate_keys(rs, tc->s[dst]->port, slot);
    deadline = th_now_ms() + SETUP_MS;
    while (th_cluster_errorstat(tc, src, "ASK") == 0 && th_now_ms() < deadline)
        th_sleep_ms(5);
    ASSERT_GT(th_cluster_errorstat(tc, src, "ASK"), 0);
    th_cluster_slot_to(tc, slot, did, -1);
    wait_tracked_on(rd);
    quiet_on(rd, "tracked on the slot's new master");
    t_del = th_now_ms();
    ASSERT_EQ_INT(th_cmd_int(rd, "DEL %s", key), 1);
    th_waiter_join_ok(&w, 5000);
    test_log("taken %lld ms after the release on the new master",
             (long long)(w.done_us / 1000 - t_del));
    ASSERT_LE(w.done_us / 1000 - t_del, LATE_MS);
    v = th_cmd_str(rd, NULL, "GET %s", key);
    ASSERT_EQ_STR(v, w.token);
    free(v);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_client_free(c);
    free(sid);
    free(did);
    redisFree(rs);
    redisFree(rd);
    th_cluster_stop(tc);
}

/* keys[m]: "{<stem><i>}k" for the first i whose slot master m serves,
 * for each of tc's three masters. */
static void cluster_keys_by_master(th_cluster *tc, const char *stem,
                                   char keys[3][24])
{
    int got = 0, i, m;
    char k[24];

    for (i = 0; got != 7 && i < 200; i++) {
        snprintf(k, sizeof k, "{%s%d}k", stem, i);
        m = th_cluster_owner(tc, th_cluster_keyslot(tc, k));
        ASSERT(m >= 0 && m < 3);
        if (!(got & 1 << m)) {
            memcpy(keys[m], k, sizeof k);
            got |= 1 << m;
        }
    }
    ASSERT_EQ_INT(got, 7);
}

/* set[k]'s foreign holder released on master at (DEL): the waiter w
 * takes the set within LATE_MS, every key (on master k but k's, which
 * may have moved to at), and gives it back. */
static void spread_release_reaches(redisContext *r[3], const char *set[3],
                                   int k, int at, th_waiter *w,
                                   const char *where)
{
    int64_t t_del = th_now_ms();
    char *v;
    int i;

    ASSERT_EQ_INT(th_cmd_int(r[at], "DEL %s", set[k]), 1);
    th_waiter_join_ok(w, 5000);
    test_log("%s: taken %lld ms after the release", where,
             (long long)(w->done_us / 1000 - t_del));
    ASSERT_LE(w->done_us / 1000 - t_del, LATE_MS);
    for (i = 0; i < 3; i++) {
        v = th_cmd_str(r[i == k ? at : i], NULL, "GET %s", set[i]);
        ASSERT_EQ_STR(v, w->token);
        free(v);
    }
    ASSERT_OK(redislock_release(w->l));
    redislock_lock_free(w->l);
}

/*
 * In a cluster, a set spread over three masters' slots behind a SET NX
 * PX holder of its last key waits on that master's notices: no attempt
 * on any master in a second (it polled 25-50 times a second before),
 * and takes the set within LATE_MS of the release. That master loses
 * the scripts under a waiter: its read sent again after their load is
 * untracked, and the waiter must not wait as if it were (it would be
 * deaf to the release). Then the key's slot moves to another master
 * under the waiter: once it has, the waiter waits on the new master's
 * notices in silence. Each release reaches it within LATE_MS.
 */
void test_track_cluster_spread_waiter(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_acquire_options o = th_aopts(5000, 30000, 0);
    redislock_client *c = NULL;
    redisContext *r[3];
    char keys[3][24], warm_keys[3][24];
    const char *set[3], *warm_set[3];
    const int src = 2, dst = 0;
    unsigned slot;
    long long loads, calls;
    int i;
    char *sid, *did;
    redislock_lock *wl;
    th_waiter w;

    for (i = 0; i < 3; i++)
        r[i] = th_cluster_redis(tc, i);
    cluster_keys_by_master(tc, "tcs", keys);
    cluster_keys_by_master(tc, "tcw", warm_keys);
    for (i = 0; i < 3; i++) {
        set[i] = keys[i];
        warm_set[i] = warm_keys[i];
    }
    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    /* The scripts loaded everywhere first: counted calls are attempts. */
    wl = th_lock_set(c, warm_set, 3);
    ASSERT_OK(redislock_acquire(wl, &o));
    ASSERT_OK(redislock_release(wl));
    redislock_lock_free(wl);

    hold(r[src], set[src], LEASE_MS);
    th_waiter_start_lock(&w, th_lock_set(c, set, 3), &o);
    wait_tracked_on(r[src]);
    given_back(r, set, 3, src);
    quiet_on_three(r, "behind master 2's key");
    spread_release_reaches(r, set, src, src, &w, "behind master 2's key");

    /* Master 2, where the set has only the key it waits behind, loses
     * the scripts; the holder's key changes (a renewal) to wake it. */
    hold(r[src], set[src], LEASE_MS);
    th_waiter_start_lock(&w, th_lock_set(c, set, 3), &o);
    wait_tracked_on(r[src]);
    loads = th_script_loads(r[src]);
    calls = th_script_calls(r[src]);
    freeReplyObject(th_cmd(r[src], "FUNCTION FLUSH"));
    freeReplyObject(th_cmd(r[src], "SCRIPT FLUSH"));
    ASSERT_EQ_INT(th_cmd_int(r[src], "PEXPIRE %s %d", set[src], LEASE_MS), 1);
    /* Its attempt has run twice there: refused for the missing script
     * (a failed call counts), then, after the load, by the holder. */
    WAIT_FOR(th_script_loads(r[src]) > loads &&
                 th_script_calls(r[src]) >= calls + 2,
             SETUP_MS);
    spread_release_reaches(r, set, src, src, &w, "scripts flushed");

    /* The holder's slot moves from master 2 to master 0 under the
     * waiter. */
    slot = th_cluster_keyslot(tc, set[src]);
    sid = th_cluster_node_id(tc, src);
    did = th_cluster_node_id(tc, dst);
    hold(r[src], set[src], LEASE_MS);
    th_waiter_start_lock(&w, th_lock_set(c, set, 3), &o);
    wait_tracked_on(r[src]);
    freeReplyObject(
        th_cmd(r[dst], "CLUSTER SETSLOT %u IMPORTING %s", slot, sid));
    freeReplyObject(
        th_cmd(r[src], "CLUSTER SETSLOT %u MIGRATING %s", slot, did));
    /* The key's move deletes it on master 2: the notice wakes the
     * waiter, whose attempt is sent on while the slot migrates. */
    th_cluster_migrate_keys(r[src], tc->s[dst]->port, slot);
    WAIT_FOR(th_cluster_errorstat(tc, src, "ASK") > 0, SETUP_MS);
    th_cluster_slot_to(tc, slot, did, -1);
    WAIT_FOR(th_tracked_scripts(r[dst]) > 0, SETUP_MS);
    given_back(r, set, 3, src);
    quiet_on_three(r, "the slot moved");
    spread_release_reaches(r, set, src, dst, &w, "the slot moved");
    redislock_client_free(c);
    free(sid);
    free(did);
    for (i = 0; i < 3; i++)
        redisFree(r[i]);
    th_cluster_stop(tc);
}

/* The server loses the scripts while the waiter waits tracked (FUNCTION
 * FLUSH, SCRIPT FLUSH): the attempt that loads them again goes after the
 * request that asked for its read's tracking, so it is not tracked; the
 * waiter must not wait as if it were. The holder renews (its key alone
 * changes: the waiter tries, and loads), then releases: the waiter takes
 * the lock within LATE_MS. */
void test_track_scripts_flushed(void)
{
    env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    long long loads;
    th_waiter w;

    hold(e.r, "tk:s", LEASE_MS);
    th_waiter_start(&w, e.c, "tk:s", &o);
    wait_tracked(&e);
    loads = th_script_loads(e.r);
    freeReplyObject(th_cmd(e.r, "FUNCTION FLUSH"));
    freeReplyObject(th_cmd(e.r, "SCRIPT FLUSH"));
    ASSERT_EQ_INT(th_cmd_int(e.r, "PEXPIRE tk:s %d", LEASE_MS), 1);
    WAIT_FOR(th_script_loads(e.r) > loads, SETUP_MS);
    /* Its attempt has run (refused) and it pauses. */
    th_sleep_ms(100);
    release_reaches(&e, "tk:s", &w);
    th_env_stop(&e);
}
