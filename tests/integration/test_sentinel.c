/*
 * Clients of a master found through Redis Sentinel (redis+sentinel://):
 * discovery and locking on the master; a failover followed (the holder's
 * release and a new acquire go to the new master, a waiter's wait too);
 * a sentinel that is down; a master name no sentinel knows; the data
 * nodes' and the sentinels' passwords, each checked where it belongs;
 * URLs that are not right.
 */
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Generous: a split vote retries after twice the failover timeout. */
#define FAILOVER_MS 30000

/* The token key holds on node i ("" for none), malloc'ed. */
static char *on_node(th_sentinels *t, int i, const char *key)
{
    redisContext *c = th_sentinels_node_redis(t, i);
    char *v = th_cmd_str(c, NULL, "GET %s", key);

    redisFree(c);
    return v != NULL ? v : strdup("");
}

/* A client of url takes and releases key once. */
static void lock_once(const char *url, const char *key)
{
    redislock_client *c = th_client_url(url, NULL);
    redislock_lock *l = th_lock(c, key);

    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
}

/* The client finds the master (node 0) and locks there: acquire, inspect,
 * list and release act on it, never on the replica (which has the key
 * only by replication). */
void test_sentinel_discovers_master(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c = th_client_url(t->url, NULL);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *l = th_lock(c, "sn:a");
    redislock_info info;
    char *v;

    ASSERT_OK(redislock_acquire(l, &o));
    v = on_node(t, 0, "sn:a");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(l));
    free(v);
    ASSERT_OK(redislock_inspect(l, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_OK(redislock_release(l));
    v = on_node(t, 0, "sn:a");
    ASSERT_EQ_STR(v, "");
    free(v);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/* Counts the locks a listing reports. */
static int count_listed(const redislock_info *info, void *arg)
{
    (void)info;
    ++*(int *)arg;
    return 0;
}

/*
 * kill -9 of the master while a lock is held (confirmed by its replica:
 * wait_replicas 1), another client waits for it, and a third lock is
 * renewed by the watchdog: once the sentinels promote the replica, the
 * holder's release reaches the new master, the waiter gets the lock
 * there, the watchdog's renewals reach it (the lock stays valid, its
 * lease renewed there), a listing finds the locks there, and a new
 * acquire of another key works. The command timeout (6 s) is longer
 * than the failover, so each request rides over it. Logs how long
 * locking took to come back.
 */
void test_sentinel_follows_failover(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options co = {0};
    redislock_client *c, *wc;
    redislock_acquire_options o = th_aopts(20000, 0, 0);
    redislock_acquire_options wo = th_aopts(20000, 25000, 0);
    redislock_lock *l, *n, *dog;
    th_waiter w;
    int64_t killed, failed_over, released, fresh;
    int old, listed = 0;
    char *v;

    /* The waiter's client has no replica-sync guard: the new master has
     * no replica to confirm its acquire. */
    co.command_timeout_ms = 6000;
    wc = th_client_url(t->url, &co);
    co.wait_replicas = 1;
    c = th_client_url(t->url, &co);
    l = th_lock(c, "sf:held");
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    dog = th_lock(wc, "sf:dog");
    {
        redislock_acquire_options d = th_aopts(8000, 0, 0);

        d.watchdog = 1;
        ASSERT_OK(redislock_acquire(dog, &d));
    }
    th_waiter_start(&w, wc, "sf:held", &wo);
    {
        redisContext *r = th_sentinels_node_redis(t, 0);
        th_wait_blocked(r, 1, 3000);
        redisFree(r);
    }
    killed = th_now_ms();
    old = th_sentinels_kill_master(t);
    ASSERT_EQ_INT(old, 0);
    failed_over = th_sentinels_wait_failover(t, old, FAILOVER_MS);
    v = on_node(t, 1, "sf:held");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(l));
    free(v);
    /* The holder's release goes to the new master and wakes the
     * waiter. */
    ASSERT_OK(redislock_release(l));
    released = th_now_ms() - killed;
    th_waiter_join_ok(&w, 10000);
    v = on_node(t, 1, "sf:held");
    ASSERT_VALUE_IS_TOKEN(v, w.token);
    free(v);
    ASSERT_OK(redislock_release(w.l));
    n = th_lock(wc, "sf:new");
    ASSERT_OK(redislock_acquire(n, &o));
    fresh = th_now_ms() - killed;
    v = on_node(t, 1, "sf:new");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(n));
    free(v);
    ASSERT_OK(redislock_release(n));
    /* Renewed at the new master within a renewal period (8 s / 3). */
    th_sleep_ms(3000);
    ASSERT_OK(redislock_check(dog));
    v = on_node(t, 1, "sf:dog");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(dog));
    free(v);
    {
        redisContext *r = th_sentinels_node_redis(t, 1);
        ASSERT_GT(th_pttl(r, "sf:dog"), 4000);
        redisFree(r);
    }
    ASSERT_OK(redislock_list(wc, "sf:*", count_listed, &listed));
    ASSERT_EQ_INT(listed, 1);
    ASSERT_OK(redislock_release(dog));
    redislock_lock_free(dog);
    test_log("failover %lld ms after the kill; the holder's release done "
             "%lld ms after it, the waiter in %lld ms, a new lock %lld ms",
             (long long)failed_over, (long long)released,
             (long long)(w.done_us / 1000 - killed), (long long)fresh);
    redislock_lock_free(n);
    redislock_lock_free(w.l);
    redislock_lock_free(l);
    redislock_client_free(wc);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/* The first sentinel of the URL is down: a client is made by asking the
 * next, and locks. With every sentinel down: REDISLOCK_ECONNECT, the
 * detail saying that the sentinels were asked. */
void test_sentinel_one_down(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c;
    int i;

    th_sentinels_kill_sentinel(t, 0);
    lock_once(t->url, "sd:a");
    for (i = 1; i < TH_SENTINEL_N; i++)
        th_sentinels_kill_sentinel(t, i);
    c = (redislock_client *)1;
    ASSERT_ERR(redislock_client_new(&c, t->url, NULL), REDISLOCK_ECONNECT);
    test_log("every sentinel down: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "sentinel") != NULL);
    ASSERT(c == NULL);
    th_sentinels_stop(t);
}

/* A master name no sentinel knows: REDISLOCK_EINVAL naming it; and URLs
 * that are not right. */
void test_sentinel_unknown_master_name(void)
{
    static const char *const bad[] = {
        "redis+sentinel://127.0.0.1:1",
        "redis+sentinel://127.0.0.1:1/",
        "redis+sentinel://,127.0.0.1:1/name",
        "redis+sentinel://127.0.0.1:1/%zz",
    };
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c = (redislock_client *)1;
    const char *urls[2];
    char url[600], *slash;
    size_t i;

    snprintf(url, sizeof url, "%s", t->url);
    slash = strrchr(url, '/');
    snprintf(slash, sizeof url - (size_t)(slash - url), "/no-such-master");
    ASSERT_ERR(redislock_client_new(&c, url, NULL), REDISLOCK_EINVAL);
    test_log("unknown name: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "no-such-master") != NULL);
    ASSERT(c == NULL);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = (redislock_client *)1;
        ASSERT_ERR(redislock_client_new(&c, bad[i], NULL), REDISLOCK_EINVAL);
        test_log("%s: %s", bad[i], redislock_errdetail());
        ASSERT(c == NULL);
    }
    /* A Sentinel URL is a client of its own, not one server of several. */
    urls[0] = t->url;
    urls[1] = "redis://127.0.0.1:1";
    ASSERT_ERR(redislock_client_new_sharded(&c, urls, 2, NULL),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "alone") != NULL);
    th_sentinels_stop(t);
}

/* Passwords: the data nodes' in the URL's userinfo (or the options'),
 * the sentinels' in sentinel_password; each wrong one is REDISLOCK_EAUTH
 * naming where it failed; both right, the client locks on the master. */
void test_sentinel_auth(void)
{
    th_sentinel_opts so = {0};
    th_sentinels *t;
    redislock_client *c;
    redislock_options co = {0};
    char url[700], *q;

    so.data_password = "data-pw";
    so.sentinel_password = "sent pw@1";
    t = th_sentinels_start(&so);
    lock_once(t->url, "sa:a");
    /* A wrong sentinel password. */
    snprintf(url, sizeof url, "%s", t->url);
    q = strstr(url, "?sentinel_password=");
    ASSERT(q != NULL);
    snprintf(q, sizeof url - (size_t)(q - url), "?sentinel_password=wrong");
    c = (redislock_client *)1;
    ASSERT_ERR(redislock_client_new(&c, url, NULL), REDISLOCK_EAUTH);
    test_log("wrong sentinel password: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "sentinel") != NULL);
    /* A wrong data password, from the options (which win over the
     * URL's): the sentinels answer, the master refuses. */
    co.password = "wrong";
    c = (redislock_client *)1;
    ASSERT_ERR(redislock_client_new(&c, t->url, &co), REDISLOCK_EAUTH);
    test_log("wrong data password: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "master") != NULL);
    ASSERT(c == NULL);
    th_sentinels_stop(t);
}

/* The CLI: -u redis+sentinel://... and --sentinel NAME with the
 * sentinels' -u URLs (their password becoming sentinel_password, the data
 * nodes' from $REDISCLI_AUTH) lock on the master; --sentinel with another
 * kind of URL, or with --shard, is a usage error (64). */
void test_sentinel_cli(void)
{
    th_sentinel_opts so = {0};
    th_sentinels *t;
    char out[512], err[512], u[3][64], *v, *nl;
    const char *acq[] = {"-u", NULL, "acquire", "-t", "20s", "sc:a", NULL};
    const char *rel[] = {"--sentinel", "authed", "-u",      u[0],   "-u", u[1],
                         "-u",         u[2],     "release", "sc:a", out,  NULL};
    const char *bad[] = {"--sentinel", "authed", "-u", "unix:///tmp/x.sock",
                         "status",     "sc:a",   NULL};
    const char *both[] = {"--sentinel", "authed", "--shard", "-u",
                          u[0],         "status", "sc:a",    NULL};
    int i, st;

    so.master_name = "authed";
    so.data_password = "data-pw";
    so.sentinel_password = "sent pw@1";
    t = th_sentinels_start(&so);
    acq[1] = t->url;
    st = th_cli(acq, NULL, out, sizeof out, err, sizeof err);
    test_log("acquire through %s: exit %d, %s", t->url, st, err);
    ASSERT_EQ_INT(st, 0);
    if ((nl = strchr(out, '\n')) != NULL)
        *nl = '\0';
    v = on_node(t, 0, "sc:a");
    ASSERT_EQ_STR(v, out);
    free(v);
    for (i = 0; i < 3; i++)
        snprintf(u[i], sizeof u[i], "redis://:sent%%20pw%%401@127.0.0.1:%d",
                 t->sent_port[i]);
    st = th_cli(rel, "data-pw", NULL, 0, err, sizeof err);
    test_log("release with --sentinel: exit %d, %s", st, err);
    ASSERT_EQ_INT(st, 0);
    v = on_node(t, 0, "sc:a");
    ASSERT_EQ_STR(v, "");
    free(v);
    /* Without the data password: the master refuses (69, EAUTH's). */
    st = th_cli(rel, NULL, NULL, 0, err, sizeof err);
    test_log("no data password: exit %d, %s", st, err);
    ASSERT(st != 0 && st != 64);
    ASSERT(strstr(err, "sent pw") == NULL && strstr(err, "sent%20pw") == NULL);
    ASSERT_EQ_INT(th_cli(bad, NULL, NULL, 0, err, sizeof err), 64);
    test_log("--sentinel with a unix URL: %s", err);
    ASSERT_EQ_INT(th_cli(both, NULL, NULL, 0, err, sizeof err), 64);
    test_log("--sentinel with --shard: %s", err);
    th_sentinels_stop(t);
}

/* Locks the failover test takes on each side of the guard. */
#define FO_LOCKS 20

/* How many of n keys a contender takes now (each lock it gets is a lock
 * lost by its holder). */
static int taken_by_contender(redislock_client *c, const char *prefix, int n)
{
    redislock_acquire_options o = th_aopts(60000, 0, 0);
    char key[32];
    int i, got = 0;

    for (i = 0; i < n; i++) {
        redislock_lock *l;

        snprintf(key, sizeof key, "%s%d", prefix, i);
        l = th_lock(c, key);
        got += redislock_acquire(l, &o) == REDISLOCK_OK;
        redislock_lock_free(l);
    }
    return got;
}

/*
 * Failover safety, measured. FO_LOCKS locks are taken with the
 * replica-sync guard (wait_replicas 1, strict) and confirmed; then the
 * replica stops, a 40 MB write fills the master's own output buffer for
 * it (a stream in the kernel's socket buffers would still arrive), and
 * FO_LOCKS locks are taken without the guard, their writes stuck behind
 * it. kill -9 of the master, the replica resumed: the sentinels promote
 * it. A contender then gets every unguarded lock (lost: a second holder)
 * and none of the guarded ones. Strict mode refuses new acquisitions
 * (REDISLOCK_ENOTDURABLE) while the new master has no replica, and takes
 * them again once the old master is back as its replica. Logs the time
 * until locking resumed, without and with the guard.
 */
void test_sentinel_failover_locks_lost_and_kept(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options go = {0}, po = {0};
    redislock_client *guarded, *plain, *rival;
    redislock_acquire_options o = th_aopts(60000, 0, 0);
    redislock_lock *held[2 * FO_LOCKS], *l;
    redisContext *m = th_sentinels_node_redis(t, 0);
    size_t big = 40u << 20;
    char *blob = malloc(big), key[32];
    int64_t killed, resumed = -1, strict_back = -1;
    int i, lost_plain, lost_guarded;
    redislock_err err;

    ASSERT(blob != NULL);
    memset(blob, 'x', big);
    go.wait_replicas = 1;
    go.wait_replicas_timeout_ms = 1000;
    go.command_timeout_ms = 5000;
    po.command_timeout_ms = 5000;
    guarded = th_client_url(t->url, &go);
    plain = th_client_url(t->url, &po);
    rival = th_client_url(t->url, &po);
    for (i = 0; i < FO_LOCKS; i++) {
        snprintf(key, sizeof key, "fg:%d", i);
        held[i] = th_lock(guarded, key);
        ASSERT_OK(redislock_acquire(held[i], &o));
        ASSERT_EQ_INT(redislock_replicas(held[i]), 1);
    }
    th_server_pause(t->node[1]);
    freeReplyObject(th_cmd(m, "SET fo:blob %b", blob, big));
    for (i = 0; i < FO_LOCKS; i++) {
        snprintf(key, sizeof key, "fp:%d", i);
        held[FO_LOCKS + i] = th_lock(plain, key);
        ASSERT_OK(redislock_acquire(held[FO_LOCKS + i], &o));
    }
    killed = th_now_ms();
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    th_server_resume(t->node[1]);
    /* Locking resumes: a fresh key, without the guard. */
    l = th_lock(rival, "fo:fresh");
    while ((err = redislock_acquire(l, &o)) != REDISLOCK_OK) {
        ASSERT(th_now_ms() - killed < FAILOVER_MS);
        th_sleep_ms(20);
    }
    resumed = th_now_ms() - killed;
    redislock_lock_free(l);
    (void)th_sentinels_wait_failover(t, 0, FAILOVER_MS);
    lost_plain = taken_by_contender(rival, "fp:", FO_LOCKS);
    lost_guarded = taken_by_contender(rival, "fg:", FO_LOCKS);
    /* Strict: no replica of the new master confirms. */
    l = th_lock(guarded, "fo:strict");
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_ENOTDURABLE);
    th_sentinels_restart_node(t, 0);
    while ((err = redislock_acquire(l, &o)) != REDISLOCK_OK) {
        ASSERT_ERR(err, REDISLOCK_ENOTDURABLE);
        ASSERT(th_now_ms() - killed < 2 * FAILOVER_MS);
        th_sleep_ms(20);
    }
    strict_back = th_now_ms() - killed;
    test_log("after kill -9 of the master: locking resumed in %lld ms; "
             "locks lost: %d of %d unguarded, %d of %d guarded; the strict "
             "guard took locks again %lld ms after the kill (once the old "
             "master was back as a replica)",
             (long long)resumed, lost_plain, FO_LOCKS, lost_guarded, FO_LOCKS,
             (long long)strict_back);
    ASSERT_EQ_INT(lost_guarded, 0);
    ASSERT_EQ_INT(lost_plain, FO_LOCKS);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    for (i = 0; i < 2 * FO_LOCKS; i++)
        redislock_lock_free(held[i]);
    free(blob);
    redisFree(m);
    redislock_client_free(rival);
    redislock_client_free(plain);
    redislock_client_free(guarded);
    th_sentinels_stop(t);
}

/* The role node i says it has (ROLE's first word), malloc'ed. */
static char *role_of(th_sentinels *t, int i)
{
    redisContext *c = th_sentinels_node_redis(t, i);
    redisReply *r = th_cmd(c, "ROLE");
    char *v = strdup(r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                             r->element[0]->type == REDIS_REPLY_STRING
                         ? r->element[0]->str
                         : "?");

    freeReplyObject(r);
    redisFree(c);
    return v;
}

/*
 * A manual failover (SENTINEL FAILOVER): the old master lives on as a
 * replica, so the client's connection to it stays up and its next write
 * meets READONLY. The client asks the sentinels again and the acquire
 * goes to the new master, in the same call.
 */
void test_sentinel_readonly_followed(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c = th_client_url(t->url, NULL);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *l = th_lock(c, "sr:a");
    redisContext *s = th_sentinels_sentinel_redis(t, 0);
    int64_t t0;
    char *v;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    freeReplyObject(th_cmd(s, "SENTINEL FAILOVER %s", t->master_name));
    (void)th_sentinels_wait_failover(t, 0, FAILOVER_MS);
    /* The old master becomes the new one's replica: the sentinels would
     * tell it so at their next INFO round (10 s); sooner by hand. */
    {
        redisContext *n0 = th_sentinels_node_redis(t, 0);

        freeReplyObject(th_cmd(n0, "REPLICAOF 127.0.0.1 %d", t->node[1]->port));
        redisFree(n0);
    }
    t0 = th_now_ms();
    while (strcmp(v = role_of(t, 0), "slave") != 0) {
        free(v);
        ASSERT(th_now_ms() - t0 < FAILOVER_MS);
        th_sleep_ms(20);
    }
    free(v);
    ASSERT_OK(redislock_acquire(l, &o));
    v = on_node(t, 1, "sr:a");
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(l));
    free(v);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redisFree(s);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/*
 * A waiter's wait lasts through a failover: it waits (40 s) behind a
 * lock renewed by its watchdog, with a command timeout (300 ms) far
 * shorter than the sentinels' down-after time (1 s). kill -9 of the
 * master: the waiter's requests find no master for a while, and it asks
 * the sentinels again and pauses until they name the promoted replica,
 * rather than fail with the first REDISLOCK_ECONNECT. The holder's
 * release there wakes it, and it gets the lock at the new master.
 */
void test_sentinel_waiter_waits_through_failover(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options wo = {0};
    redislock_client *hc = th_client_url(t->url, NULL), *wc;
    redislock_acquire_options ho = th_aopts(4000, 0, 0);
    redislock_acquire_options o = th_aopts(20000, 40000, 0);
    redislock_lock *h = th_lock(hc, "sw:held");
    redisContext *r;
    th_waiter w;
    int64_t killed;
    redislock_err err;
    char *v;

    wo.command_timeout_ms = 300;
    wc = th_client_url(t->url, &wo);
    ho.watchdog = 1;
    ASSERT_OK(redislock_acquire(h, &ho));
    th_waiter_start(&w, wc, "sw:held", &o);
    r = th_sentinels_node_redis(t, 0);
    th_wait_blocked(r, 1, 3000);
    ASSERT_EQ_INT(th_cmd_int(r, "WAIT 1 5000"), 1);
    redisFree(r);
    killed = th_now_ms();
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    (void)th_sentinels_wait_failover(t, 0, FAILOVER_MS);
    /* Its lease may have lapsed at the new master meanwhile: either
     * way the key is free for the waiter after this. */
    err = redislock_release(h);
    test_log("the holder's release after the failover: %s",
             redislock_strerror(err));
    th_waiter_join_ok(&w, 10000);
    test_log("the waiter got the lock %lld ms after the kill",
             (long long)(w.done_us / 1000 - killed));
    v = on_node(t, 1, "sw:held");
    ASSERT_VALUE_IS_TOKEN(v, w.token);
    free(v);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_lock_free(h);
    redislock_client_free(wc);
    redislock_client_free(hc);
    th_sentinels_stop(t);
}

static void count_lost(const redislock_event *ev, void *arg)
{
    if (ev->kind == REDISLOCK_EVENT_RETRY && ev->err == REDISLOCK_EIO)
        atomic_fetch_add((atomic_int *)arg, 1);
}

/*
 * A waiter whose attempt was out when the master died: the master is
 * frozen, the waiter's attempt sent on its open connection, then kill
 * -9; the reply is lost (REDISLOCK_EIO: the attempt may have run). The
 * attempt is abandoned (its token voided and, had it run, undone) and
 * the waiter waits on (10 s) with a fresh token through the failover,
 * rather than fail, and gets the lock at the promoted replica.
 */
void test_sentinel_waiter_waits_through_lost_reply(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options wo = {0};
    redislock_client *wc;
    redislock_acquire_options o = th_aopts(5000, 10000, 0);
    redislock_lock *warm;
    atomic_int lost;
    th_waiter w;
    char *v;

    atomic_init(&lost, 0);
    wo.command_timeout_ms = 3000;
    wo.on_event = count_lost;
    wo.on_event_arg = &lost;
    wc = th_client_url(t->url, &wo);
    /* A connection to the master, open before it is frozen. */
    warm = th_lock(wc, "sl:warm");
    ASSERT_OK(redislock_acquire(warm, &o));
    ASSERT_OK(redislock_release(warm));
    redislock_lock_free(warm);
    th_server_pause(t->node[0]);
    th_waiter_start(&w, wc, "sl:lock", &o);
    /* Nothing tells when the attempt has gone out: it is one write on
     * an open connection, well within this. */
    th_sleep_ms(300);
    ASSERT_EQ_INT(th_sentinels_kill_master(t), 0);
    th_waiter_join_ok(&w, 10000);
    test_log("lost replies waited on: %d", atomic_load(&lost));
    ASSERT_GT(atomic_load(&lost), 0);
    v = on_node(t, 1, "sl:lock");
    ASSERT_VALUE_IS_TOKEN(v, w.token);
    free(v);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_client_free(wc);
    th_sentinels_stop(t);
}

/* How long the switch test watches the new master: past two leases of
 * the holder's (3 s) after the failover, before the sentinels demote
 * the old master (their next INFO round, 10 s). */
#define SWITCH_WATCH_MS 6000

static void pause_poll(void *arg)
{
    (void)arg;
    th_sleep_ms(20);
}

static int still_holds(void *arg)
{
    return redislock_check(arg) == REDISLOCK_OK;
}

/*
 * A planned failover (SENTINEL FAILOVER) leaves the old master up, and a
 * master by its own word until the sentinels demote it seconds later. A
 * lock renewed by its watchdog (TTL 3 s) follows the switch: a renewal
 * that lands on the old master once the sentinels name the new one is
 * not a renewal, and goes to the new master (which has the key by
 * replication: renewed there, no loss). A rival polling the new master
 * with SET NX must never get the key while the holder believes it holds
 * (no loss reported, validity left). Fails before the fix: the holder
 * renews on the old master, the new master's copy expires and the rival
 * takes it while the holder holds on.
 */
void test_sentinel_renewal_follows_switch(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *hc = th_client_url(t->url, NULL);
    redislock_acquire_options o = th_aopts(3000, 0, 0);
    redislock_lock *h = th_lock(hc, "ss:k");
    redisContext *s = th_sentinels_sentinel_redis(t, 0);
    int64_t got;
    int held = 0;
    char *v;

    o.watchdog = 1;
    ASSERT_OK(redislock_acquire(h, &o));
    freeReplyObject(th_cmd(s, "SENTINEL FAILOVER %s", t->master_name));
    got = th_sentinels_rival(t, 1, "ss:k", SWITCH_WATCH_MS, pause_poll,
                             still_holds, h, &held);
    ASSERT(!(got >= 0 && held));
    if (got < 0) {
        /* No false loss: the lease renewed at the new master. */
        ASSERT_OK(redislock_check(h));
        v = on_node(t, 1, "ss:k");
        ASSERT_VALUE_IS_TOKEN(v, redislock_token(h));
        free(v);
        ASSERT_OK(redislock_release(h));
    }
    redisFree(s);
    redislock_lock_free(h);
    redislock_client_free(hc);
    th_sentinels_stop(t);
}

/*
 * A renewal that no sentinel can confirm does not count: with every
 * sentinel down (the master up), an extend fails with
 * REDISLOCK_ECONNECT, the detail saying why, and a lock renewed by its
 * watchdog (TTL 1.5 s) is reported lost once its lease runs out, rather
 * than kept on a node that may have been replaced meanwhile.
 */
void test_sentinel_renewal_unconfirmed_fails(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c = th_client_url(t->url, NULL);
    redislock_acquire_options o = th_aopts(20000, 0, 0);
    redislock_lock *l = th_lock(c, "su:a"), *w = th_lock(c, "su:w");
    struct pollfd pfd = {.events = POLLIN};
    int i;

    ASSERT_OK(redislock_acquire(l, &o));
    o = th_aopts(1500, 0, 0);
    o.watchdog = 1;
    ASSERT_OK(redislock_acquire(w, &o));
    pfd.fd = redislock_lost_fd(w);
    ASSERT_GE(pfd.fd, 0);
    for (i = 0; i < TH_SENTINEL_N; i++)
        th_sentinels_kill_sentinel(t, i);
    ASSERT_ERR(redislock_extend(l, 20000), REDISLOCK_ECONNECT);
    test_log("extend with every sentinel down: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "no sentinel confirmed") != NULL);
    ASSERT_EQ_INT(poll(&pfd, 1, 4000), 1);
    ASSERT_ERR(redislock_check(w), REDISLOCK_EEXPIRED);
    redislock_lock_free(w);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

/* A plain redis:// URL (or one of several for sharding) at a sentinel's
 * port: REDISLOCK_ECONNECT at construction, naming the sentinel and the
 * redis+sentinel:// URL to use, not a failure of the first lock's script
 * (the sentinel knows no EVALSHA). The CLI exits 69 with that message. */
void test_sentinel_plain_url_named(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_client *c = (redislock_client *)1;
    char url[64], want[128], err[512];
    const char *urls[2];
    const char *acq[] = {"-u", url, "acquire", "sp:a", NULL};
    int st;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", t->sent_port[0]);
    snprintf(want, sizeof want, "redis+sentinel://127.0.0.1:%d/",
             t->sent_port[0]);
    ASSERT_ERR(redislock_client_new(&c, url, NULL), REDISLOCK_ECONNECT);
    test_log("%s: %s", url, redislock_errdetail());
    ASSERT(c == NULL);
    ASSERT(strstr(redislock_errdetail(), "Sentinel") != NULL);
    ASSERT(strstr(redislock_errdetail(), want) != NULL);
    urls[0] = t->node[0]->tcp_url;
    urls[1] = url;
    c = (redislock_client *)1;
    ASSERT_ERR(redislock_client_new_sharded(&c, urls, 2, NULL),
               REDISLOCK_ECONNECT);
    ASSERT(strstr(redislock_errdetail(), want) != NULL);
    ASSERT(c == NULL);
    /* A lazy client hears it at its first call instead (item 9). */
    {
        redislock_options lz = {0};
        redislock_lock *l;

        lz.lazy_connect = 1;
        ASSERT_OK(redislock_client_new(&c, url, &lz));
        ASSERT_OK(redislock_lock_new(c, "sp:a", 4, &l));
        ASSERT_ERR(redislock_acquire(l, NULL), REDISLOCK_ECONNECT);
        ASSERT(strstr(redislock_errdetail(), want) != NULL);
        redislock_lock_free(l);
        redislock_client_free(c);
    }
    st = th_cli(acq, NULL, NULL, 0, err, sizeof err);
    test_log("CLI: exit %d, %s", st, err);
    ASSERT_EQ_INT(st, 69);
    ASSERT(strstr(err, want) != NULL);
    /* The data node itself is fine. */
    c = th_client_url(t->node[0]->tcp_url, NULL);
    redislock_client_free(c);
    th_sentinels_stop(t);
}
