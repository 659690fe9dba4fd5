/*
 * Renewals by node: a client's watched locks on one server are renewed
 * together, a few requests per renewal period however many there are
 * (renew.lua, alock.c's batches); each lock still gets its own answer (a
 * lock taken over or deleted is lost alone, and not re-created); a
 * request the server refuses as a whole goes lock by lock, so one lock
 * the client may no longer touch costs the others nothing. Requests are
 * counted with INFO commandstats: while the locks are held the renewals
 * are the only scripts sent.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Locks per server in the count, and their TTL: a renewal period (a
 * third of it) of 300 ms. */
#define PER_SERVER 100
#define TTL_MS 900
#define PERIOD_MS (TTL_MS / 3)

/* What a lock's loss callback saw (the keeper thread's). */
typedef struct lost {
    pthread_mutex_t mu;
    int calls;
    redislock_err why;
} lost;

static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    lost *g = arg;

    (void)l;
    pthread_mutex_lock(&g->mu);
    g->calls++;
    g->why = why;
    pthread_mutex_unlock(&g->mu);
}

/* A command whose reply must not be an error. */
#define cmd_ok(r, ...) freeReplyObject(th_cmd(r, __VA_ARGS__))

static int lost_calls(lost *g, redislock_err *why)
{
    int n;

    pthread_mutex_lock(&g->mu);
    n = g->calls;
    if (why != NULL)
        *why = g->why;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static redislock_acquire_options watched(lost *g)
{
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);

    o.watchdog = 1;
    o.on_lost = on_lost;
    o.on_lost_arg = g;
    return o;
}

/* n watched locks "<prefix>:<i>" on c, each with its loss log. */
typedef struct held {
    int n;
    redislock_lock **l;
    lost *g;
    char (*key)[32];
} held;

static held hold(redislock_client *c, const char *prefix, int n)
{
    held h = {n, calloc((size_t)n, sizeof *h.l), calloc((size_t)n, sizeof *h.g),
              calloc((size_t)n, sizeof *h.key)};
    int i;

    ASSERT(h.l != NULL && h.g != NULL && h.key != NULL);
    for (i = 0; i < n; i++) {
        redislock_acquire_options o = watched(&h.g[i]);

        pthread_mutex_init(&h.g[i].mu, NULL);
        snprintf(h.key[i], sizeof h.key[i], "%s:%d", prefix, i);
        h.l[i] = th_lock(c, h.key[i]);
        ASSERT_OK(redislock_acquire(h.l[i], &o));
    }
    return h;
}

static void unhold(held *h)
{
    int i;

    for (i = 0; i < h->n; i++) {
        redislock_lock_free(h->l[i]);
        pthread_mutex_destroy(&h->g[i].mu);
    }
    free(h->l);
    free(h->g);
    free(h->key);
}

/* Every lock of h but skip (-1: none) is held: no loss, checked valid. */
static void all_held(held *h, int skip, int skip2)
{
    int i;

    for (i = 0; i < h->n; i++) {
        if (i == skip || i == skip2)
            continue;
        if (lost_calls(&h->g[i], NULL) != 0)
            test_fail_(__FILE__, __LINE__, "%s was reported lost", h->key[i]);
        ASSERT_OK(redislock_check(h->l[i]));
    }
}

/* The lock whose key was taken over (its loss log taken) and the one
 * whose key was deleted (deleted) are each reported lost once, with
 * ELOST and EEXPIRED, within three periods. */
static void taken_and_deleted_lost(lost *taken, lost *deleted)
{
    int64_t until = th_now_ms() + 3 * PERIOD_MS + 1000;
    redislock_err why = REDISLOCK_OK;

    while ((lost_calls(taken, NULL) == 0 || lost_calls(deleted, NULL) == 0) &&
           th_now_ms() < until)
        th_sleep_ms(20);
    ASSERT_EQ_INT(lost_calls(taken, &why), 1);
    ASSERT_EQ_INT(why, REDISLOCK_ELOST);
    ASSERT_EQ_INT(lost_calls(deleted, &why), 1);
    ASSERT_EQ_INT(why, REDISLOCK_EEXPIRED);
}

/* Once the renewals of locks taken at different times have come due
 * together (after at most two rounds, alock.c), each of e's servers gets
 * at most two renewal requests a period for five periods. */
static void few_requests(th_servers *e)
{
    long long before[TH_SERVERS_MAX], calls;
    int i, periods = 5;

    th_sleep_ms(2 * PERIOD_MS + 100);
    for (i = 0; i < e->n; i++)
        before[i] = th_script_calls(e->r[i]);
    th_sleep_ms(periods * PERIOD_MS);
    for (i = 0; i < e->n; i++) {
        calls = th_script_calls(e->r[i]) - before[i];
        test_log("server %d: %lld renewal requests in %d periods", i, calls,
                 periods);
        ASSERT_GT(calls, 0);
        ASSERT_LE(calls, 2 * periods);
    }
}

/*
 * 3 servers, PER_SERVER watched locks on each (a sharded client): once
 * their renewals have come due together, each server gets at most two
 * renewal requests a period, where one per lock (PER_SERVER) came
 * before; every lease is kept all along.
 */
void test_renew_by_node_few_requests(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = NULL;
    held h;
    int i;

    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    h = hold(c, "rn", 3 * PER_SERVER);
    few_requests(&e);
    all_held(&h, -1, -1);
    for (i = 0; i < h.n; i++) {
        ASSERT_OK(redislock_release(h.l[i]));
        ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS %s", h.key[i]) +
                          th_cmd_int(e.r[1], "EXISTS %s", h.key[i]) +
                          th_cmd_int(e.r[2], "EXISTS %s", h.key[i]),
                      0);
    }
    unhold(&h);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * 20 watched locks renewed together; one is taken over by another owner
 * and one deleted: each of those two is reported lost with its own
 * reason (ELOST, EEXPIRED) and the deleted one is not re-created, while
 * the other 18 are kept.
 */
void test_renew_by_node_each_answer(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client_url(s->unix_url, NULL);
    held h = hold(c, "rna", 20);
    long long before = th_script_calls(r);

    th_sleep_ms(2 * PERIOD_MS + 100);
    /* Renewed together: far fewer requests than locks. */
    ASSERT_LE(th_script_calls(r) - before, 10);
    cmd_ok(r, "SET %s other-owner PX 60000", h.key[5]);
    cmd_ok(r, "DEL %s", h.key[7]);
    taken_and_deleted_lost(&h.g[5], &h.g[7]);
    /* Another period: the others renewed on, the deleted key not back. */
    th_sleep_ms(PERIOD_MS + 100);
    all_held(&h, 5, 7);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", h.key[7]), 0);
    ASSERT_KEY(r, h.key[5], "other-owner");
    ASSERT_KEY(r, h.key[6], redislock_token(h.l[6]));
    ASSERT_GT(th_pttl(r, h.key[6]), 0);
    unhold(&h);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/*
 * A request refused as a whole goes lock by lock: the client's user loses
 * the right to one of its 10 locks' keys (ACL), so every renewal request
 * that carries it fails; the other 9 are renewed alone and kept for three
 * TTLs, and the one is reported lost once its validity runs out.
 */
void test_renew_by_node_refused_goes_alone(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c;
    char url[128];
    held h;
    redislock_err why = REDISLOCK_OK;
    int64_t until;

    cmd_ok(r, "ACL SETUSER rnu on >pw ~rnr:* &* +@all");
    snprintf(url, sizeof url, "redis://rnu:pw@127.0.0.1:%d", s->port);
    c = th_client_url(url, NULL);
    h = hold(c, "rnr", 10);
    /* rnr:3 and its helper keys ("rnr:3{rnr:3}:rl-...") go out of reach. */
    cmd_ok(r, "ACL SETUSER rnu resetkeys ~rnr:0* ~rnr:1* ~rnr:2* ~rnr:4* "
              "~rnr:5* ~rnr:6* ~rnr:7* ~rnr:8* ~rnr:9*");
    until = th_now_ms() + 3 * TTL_MS;
    while (th_now_ms() < until) {
        all_held(&h, 3, -1);
        th_sleep_ms(50);
    }
    ASSERT_EQ_INT(lost_calls(&h.g[3], &why), 1);
    ASSERT_EQ_INT(why, REDISLOCK_EEXPIRED);
    ASSERT_KEY(r, h.key[4], redislock_token(h.l[4]));
    unhold(&h);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/* The cluster's script calls on every master. */
static long long cluster_script_calls(th_cluster *tc)
{
    long long n = 0;
    int i;

    for (i = 0; i < tc->n; i++) {
        redisContext *r = th_cluster_redis(tc, i);

        n += th_script_calls(r);
        redisFree(r);
    }
    return n;
}

/* Once renewals taken at different times have come due together, tc's
 * watched locks of slots slots cost one request a slot a period, half as
 * many again for a late straggler, for five periods. */
static void slot_requests(th_cluster *tc, int slots)
{
    long long before, calls;
    int periods = 5;

    th_sleep_ms(2 * PERIOD_MS + 100);
    before = cluster_script_calls(tc);
    th_sleep_ms(periods * PERIOD_MS);
    calls = cluster_script_calls(tc) - before;
    test_log("%d slots: %lld renewal requests in %d periods", slots, calls,
             periods);
    ASSERT_GT(calls, 0);
    ASSERT_LE(calls, (long long)(slots * periods * 3 / 2));
}

/*
 * In a cluster a script's keys share a slot: 30 watched locks under
 * three hash tags and 10 of slots of their own are renewed in one
 * request per slot a period (13 a period at most, where 40 went before),
 * and every lease is kept.
 */
void test_renew_by_node_cluster_slots(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = NULL;
    redislock_lock *l[40];
    lost g[40];
    char key[40][32];
    unsigned slots[40];
    int i, j, distinct = 0;

    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    for (i = 0; i < 40; i++) {
        redislock_acquire_options o = watched(&g[i]);

        memset(&g[i], 0, sizeof g[i]);
        pthread_mutex_init(&g[i].mu, NULL);
        if (i < 30)
            snprintf(key[i], sizeof key[i], "{rnc%d}:%d", i % 3, i);
        else
            snprintf(key[i], sizeof key[i], "rnc:%d", i);
        slots[i] = th_cluster_keyslot(tc, key[i]);
        for (j = 0; j < i && slots[j] != slots[i]; j++)
            ;
        distinct += j == i;
        l[i] = th_lock(c, key[i]);
        ASSERT_OK(redislock_acquire(l[i], &o));
    }
    slot_requests(tc, distinct);
    for (i = 0; i < 40; i++) {
        ASSERT_EQ_INT(lost_calls(&g[i], NULL), 0);
        ASSERT_OK(redislock_check(l[i]));
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
        pthread_mutex_destroy(&g[i].mu);
    }
    redislock_client_free(c);
    th_cluster_stop(tc);
}

/* A Redlock client of user (NULL: the default) over e's servers. */
static redislock_client *redlock_of(th_servers *e, const char *user)
{
    redislock_client *c = NULL;
    char url[TH_SERVERS_MAX][128];
    const char *urls[TH_SERVERS_MAX];
    int i;

    for (i = 0; i < e->n; i++) {
        if (user != NULL)
            snprintf(url[i], sizeof url[i], "redis://%s:pw@127.0.0.1:%d", user,
                     e->s[i]->port);
        else
            snprintf(url[i], sizeof url[i], "%s", e->urls[i]);
        urls[i] = url[i];
    }
    ASSERT_OK(redislock_client_new_redlock(&c, urls, (size_t)e->n, NULL));
    return c;
}

/*
 * Redlock renews by node too: 60 watched locks over 3 servers are renewed
 * in one request to each server a period (renew.lua to every server, read
 * lock by lock), where a round of 60 extends went before; with one server
 * stopped, the other two keep every lease for three TTLs.
 */
void test_renew_redlock_by_node(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock_of(&e, NULL);
    held h = hold(c, "rrl", 60);
    int i;
    int64_t until;

    few_requests(&e);
    all_held(&h, -1, -1);
    th_servers_kill(&e, 2);
    until = th_now_ms() + 3 * TTL_MS;
    while (th_now_ms() < until) {
        all_held(&h, -1, -1);
        th_sleep_ms(50);
    }
    for (i = 0; i < h.n; i++) {
        ASSERT_KEY(e.r[0], h.key[i], redislock_token(h.l[i]));
        ASSERT_OK(redislock_release(h.l[i]));
        ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS %s", h.key[i]) +
                          th_cmd_int(e.r[1], "EXISTS %s", h.key[i]),
                      0);
    }
    unhold(&h);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * Each Redlock lock of a batch gets its own majority: of 10 locks renewed
 * together, one taken over on two servers of three is reported lost
 * (ELOST), one taken over on one server only is kept, as are the other 8.
 */
void test_renew_redlock_each_answer(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = redlock_of(&e, NULL);
    held h = hold(c, "rra", 10);
    redislock_err why = REDISLOCK_OK;
    int64_t until;
    long long before = th_script_calls(e.r[2]);

    th_sleep_ms(2 * PERIOD_MS + 100);
    ASSERT_LE(th_script_calls(e.r[2]) - before, 6);
    cmd_ok(e.r[0], "SET %s other-owner PX 60000", h.key[5]);
    cmd_ok(e.r[1], "SET %s other-owner PX 60000", h.key[5]);
    cmd_ok(e.r[0], "SET %s other-owner PX 60000", h.key[7]);
    until = th_now_ms() + 3 * PERIOD_MS + 1000;
    while (lost_calls(&h.g[5], NULL) == 0 && th_now_ms() < until)
        th_sleep_ms(20);
    ASSERT_EQ_INT(lost_calls(&h.g[5], &why), 1);
    ASSERT_EQ_INT(why, REDISLOCK_ELOST);
    /* Two more periods: the others renewed on, lock 7 on two servers. */
    th_sleep_ms(2 * PERIOD_MS + 100);
    all_held(&h, 5, -1);
    ASSERT_KEY(e.r[1], h.key[7], redislock_token(h.l[7]));
    ASSERT_KEY(e.r[2], h.key[7], redislock_token(h.l[7]));
    ASSERT_GT(th_pttl(e.r[2], h.key[7]), TTL_MS / 2);
    ASSERT_KEY(e.r[0], h.key[7], "other-owner");
    unhold(&h);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * A Redlock batch refused as a whole by a server goes lock by lock: the
 * client's user loses the right to one of its 10 locks' keys on two
 * servers of three, so every batch fails there; the other 9 are renewed
 * alone and kept for three TTLs (a batch refused by two servers would
 * lose them all), and the one is reported lost.
 */
void test_renew_redlock_refused_goes_alone(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c;
    held h;
    int64_t until;
    int i;

    for (i = 0; i < 3; i++)
        cmd_ok(e.r[i], "ACL SETUSER rru on >pw ~rrr:* &* +@all");
    c = redlock_of(&e, "rru");
    h = hold(c, "rrr", 10);
    for (i = 0; i < 2; i++)
        cmd_ok(e.r[i], "ACL SETUSER rru resetkeys ~rrr:0* ~rrr:1* ~rrr:2* "
                       "~rrr:4* ~rrr:5* ~rrr:6* ~rrr:7* ~rrr:8* ~rrr:9*");
    until = th_now_ms() + 3 * TTL_MS;
    while (th_now_ms() < until) {
        all_held(&h, 3, -1);
        th_sleep_ms(50);
    }
    ASSERT_EQ_INT(lost_calls(&h.g[3], NULL), 1);
    ASSERT_KEY(e.r[1], h.key[4], redislock_token(h.l[4]));
    unhold(&h);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* SETS watched sets of up to 3 keys, each with its loss log. */
#define SETS 30

typedef struct sets {
    redislock_lock *l[SETS];
    lost g[SETS];
    char key[SETS][3][32];
    const char *k[SETS][3];
} sets;

/* Watches the SETS sets of s->key (their first n keys each) with base,
 * each with its loss log. */
static void hold_spread(redislock_client *c, sets *s, int n,
                        const redislock_acquire_options *base)
{
    int i, j;

    for (i = 0; i < SETS; i++) {
        redislock_acquire_options o = *base;

        o.on_lost_arg = &s->g[i];
        pthread_mutex_init(&s->g[i].mu, NULL);
        for (j = 0; j < n; j++)
            s->k[i][j] = s->key[i][j];
        s->l[i] = th_lock_set(c, s->k[i], (size_t)n);
        ASSERT_OK(redislock_acquire(s->l[i], &o));
    }
}

/* Every set but skip and skip2 is held: no loss, each key its token's. */
static void sets_held(sets *s, redisContext *r, int skip, int skip2)
{
    int i;

    for (i = 0; i < SETS; i++) {
        if (i == skip || i == skip2)
            continue;
        if (lost_calls(&s->g[i], NULL) != 0)
            test_fail_(__FILE__, __LINE__, "set %d was reported lost", i);
        ASSERT_OK(redislock_check(s->l[i]));
        ASSERT_EQ_INT(th_keys_holding(r, s->k[i], 3, redislock_token(s->l[i])),
                      3);
    }
}

static void unhold_sets(sets *s)
{
    int i;

    for (i = 0; i < SETS; i++) {
        redislock_lock_free(s->l[i]);
        pthread_mutex_destroy(&s->g[i].mu);
    }
}

/*
 * Sets renew by node too, in the same requests as the other kinds: 30
 * watched sets of 3 keys, 10 plain locks, a shared lock's 5 shares and a
 * semaphore's 3 permits on one server are renewed in at most two
 * requests a period (48 went before, one a lock); each set gets its own
 * answer: one with a key taken over is lost (ELOST) and one with a key
 * deleted is lost (EEXPIRED), the key not coming back and neither set's
 * other keys lengthened again (they expire), while the other 28 sets and
 * every other lock are kept.
 */
void test_renew_sets_by_node(void)
{
    th_servers e = th_servers_start(1);
    redisContext *r = e.r[0];
    redislock_client *c = th_client_url(e.urls[0], NULL);
    static sets s;
    held h;
    redislock_lock *sh[8];
    lost g[8];
    lost unused;
    redislock_acquire_options o = watched(&unused);
    int i, j;

    memset(&s, 0, sizeof s);
    for (i = 0; i < SETS; i++)
        for (j = 0; j < 3; j++)
            snprintf(s.key[i][j], sizeof s.key[i][j], "rss:%d:%c", i, 'a' + j);
    hold_spread(c, &s, 3, &o);
    h = hold(c, "rsp", 10);
    for (i = 0; i < 8; i++) {
        redislock_acquire_options o = watched(&g[i]);

        memset(&g[i], 0, sizeof g[i]);
        pthread_mutex_init(&g[i].mu, NULL);
        if (i < 5)
            o.shared = 1;
        else
            o.limit = 3;
        sh[i] = th_lock(c, i < 5 ? "rss-shared" : "rss-sem");
        ASSERT_OK(redislock_acquire(sh[i], &o));
    }
    few_requests(&e);
    sets_held(&s, r, -1, -1);
    all_held(&h, -1, -1);
    /* Each lost set's first key is left 400 ms: a renewal that
     * lengthened it (as a lock of its own) would give it a lease. */
    cmd_ok(r, "SET %s other-owner PX 60000", s.key[4][1]);
    cmd_ok(r, "PEXPIRE %s 400", s.key[4][0]);
    cmd_ok(r, "DEL %s", s.key[9][2]);
    cmd_ok(r, "PEXPIRE %s 400", s.key[9][0]);
    taken_and_deleted_lost(&s.g[4], &s.g[9]);
    ASSERT_LE(th_pttl(r, s.key[4][0]), 400);
    ASSERT_LE(th_pttl(r, s.key[9][0]), 400);
    /* A lease later: the others renewed on, the lost sets' own keys
     * never lengthened again (expired). */
    th_sleep_ms(TTL_MS + 200);
    sets_held(&s, r, 4, 9);
    all_held(&h, -1, -1);
    for (i = 0; i < 8; i++) {
        ASSERT_EQ_INT(lost_calls(&g[i], NULL), 0);
        ASSERT_OK(redislock_check(sh[i]));
    }
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", s.key[9][2]), 0);
    ASSERT_KEY(r, s.key[4][1], "other-owner");
    ASSERT_EQ_INT(th_keys_existing(r, s.k[4], 3), 1);
    ASSERT_EQ_INT(th_keys_existing(r, s.k[9], 3), 0);
    for (i = 0; i < SETS; i++)
        if (i != 4 && i != 9)
            ASSERT_OK(redislock_release(s.l[i]));
    for (i = 0; i < 8; i++) {
        ASSERT_OK(redislock_release(sh[i]));
        redislock_lock_free(sh[i]);
        pthread_mutex_destroy(&g[i].mu);
    }
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS rss-shared rss-sem"), 0);
    unhold_sets(&s);
    unhold(&h);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* For SETS sets spread over the n servers of e (a sharded client c):
 * key[i][s] a key of server s. */
static void spread_keys(th_servers *e, redislock_client *c, const char *prefix,
                        char (*key)[3][32])
{
    int got[3] = {0}, i, at, full = 0;
    char k[32];

    for (i = 0; full < e->n; i++) {
        ASSERT_LT(i, 50 * SETS);
        snprintf(k, sizeof k, "%s:%d", prefix, i);
        at = th_shard_of(e->r, e->n, c, k);
        ASSERT(at >= 0 && at < 3);
        if (got[at] == SETS)
            continue;
        snprintf(key[got[at]][at], sizeof key[0][0], "%s", k);
        full += ++got[at] == SETS;
    }
}

/* Set i of s holds each of its n keys on the server of each (e->r[j] the
 * j-th key's). */
static void spread_held(th_servers *e, sets *s, int i, int n)
{
    int j;

    ASSERT_EQ_INT(lost_calls(&s->g[i], NULL), 0);
    ASSERT_OK(redislock_check(s->l[i]));
    for (j = 0; j < n; j++)
        ASSERT_KEY(e->r[j], s->key[i][j], redislock_token(s->l[i]));
}

/*
 * A spread set's groups renew by node: 30 watched sets, each of a key on
 * each of 3 servers (a sharded client), are renewed in at most two
 * requests per server a period (30 went to each before, one a set); each
 * set gets its own answer: one whose key on server 1 is taken over is
 * lost (ELOST) and one whose key on server 2 is deleted is lost
 * (EEXPIRED), each giving back its keys on the other servers at once,
 * while the other 28 are kept.
 */
void test_renew_spread_sets_by_node(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = NULL;
    static sets s;
    lost unused;
    redislock_acquire_options o = watched(&unused);
    int i;

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    spread_keys(&e, c, "rsg", s.key);
    hold_spread(c, &s, 3, &o);
    few_requests(&e);
    for (i = 0; i < SETS; i++)
        spread_held(&e, &s, i, 3);
    cmd_ok(e.r[1], "SET %s other-owner PX 60000", s.key[4][1]);
    cmd_ok(e.r[2], "DEL %s", s.key[9][2]);
    taken_and_deleted_lost(&s.g[4], &s.g[9]);
    /* Given back where they were still held (agroup.c). */
    ASSERT(th_wait_key_gone(e.r[0], s.key[4][0], strlen(s.key[4][0]), 1000));
    ASSERT(th_wait_key_gone(e.r[2], s.key[4][2], strlen(s.key[4][2]), 1000));
    ASSERT(th_wait_key_gone(e.r[0], s.key[9][0], strlen(s.key[9][0]), 1000));
    ASSERT(th_wait_key_gone(e.r[1], s.key[9][1], strlen(s.key[9][1]), 1000));
    ASSERT_KEY(e.r[1], s.key[4][1], "other-owner");
    /* Another period: the others renewed on. */
    th_sleep_ms(PERIOD_MS + 100);
    for (i = 0; i < SETS; i++)
        if (i != 4 && i != 9) {
            spread_held(&e, &s, i, 3);
            ASSERT_OK(redislock_release(s.l[i]));
        }
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 1);
    unhold_sets(&s);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * A guarded spread set's renewals by node hear their guard: 2 masters,
 * each with a replica, a sharded client with a strict wait_replicas 1;
 * 30 watched sets of a key on each master are renewed in a few requests
 * per master a period, each renewal confirmed by the one replica
 * (redislock_replicas 1), none lost over three TTLs.
 */
void test_renew_spread_sets_guarded(void)
{
    th_servers e = th_servers_start(2);
    th_server *rep[2];
    redislock_client *c = NULL;
    redislock_options co = {0};
    static sets s;
    lost unused;
    redislock_acquire_options o = watched(&unused);
    int i;

    memset(&s, 0, sizeof s);
    for (i = 0; i < 2; i++)
        rep[i] = th_replica_start(e.s[i], NULL);
    co.wait_replicas = 1;
    co.wait_replicas_timeout_ms = 1000;
    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 2, &co));
    spread_keys(&e, c, "rsw", s.key);
    hold_spread(c, &s, 2, &o);
    few_requests(&e);
    th_sleep_ms(2 * TTL_MS);
    for (i = 0; i < SETS; i++) {
        spread_held(&e, &s, i, 2);
        ASSERT_EQ_INT(redislock_replicas(s.l[i]), 1);
        ASSERT_OK(redislock_release(s.l[i]));
    }
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);
    unhold_sets(&s);
    redislock_client_free(c);
    for (i = 0; i < 2; i++)
        th_server_stop(rep[i]);
    th_servers_stop(&e);
}

/*
 * In a cluster a spread set's groups renew by slot: 30 watched sets of
 * three keys under three hash tags (each set a group in each of three
 * slots) are renewed in one request per slot a period (at most 1.5 × 3
 * a period, where 90 went before), routed to each slot's master, and
 * every lease is kept.
 */
void test_renew_spread_sets_cluster(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = NULL;
    static sets s;
    lost unused;
    redislock_acquire_options o = watched(&unused);
    int i, j;

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    for (i = 0; i < SETS; i++)
        for (j = 0; j < 3; j++)
            snprintf(s.key[i][j], sizeof s.key[i][j], "{rsc%c}:%d", 'a' + j, i);
    hold_spread(c, &s, 3, &o);
    slot_requests(tc, 3);
    for (i = 0; i < SETS; i++) {
        ASSERT_EQ_INT(lost_calls(&s.g[i], NULL), 0);
        ASSERT_OK(redislock_check(s.l[i]));
        ASSERT_OK(redislock_release(s.l[i]));
    }
    unhold_sets(&s);
    redislock_client_free(c);
    th_cluster_stop(tc);
}

/*
 * A spread sets' request refused as a whole goes group by group: the
 * client's user loses the right to one set's key on server 0 of two
 * (ACL), so every request of renewals there fails; the other 29 sets'
 * groups are renewed alone and kept for three TTLs, and the one set is
 * reported lost.
 */
void test_renew_spread_refused_goes_alone(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = NULL;
    char url[2][128], acl[4096];
    const char *urls[2];
    static sets s;
    lost unused;
    redislock_acquire_options o = watched(&unused);
    int64_t until;
    size_t at;
    int i;

    memset(&s, 0, sizeof s);
    for (i = 0; i < 2; i++) {
        cmd_ok(e.r[i], "ACL SETUSER rsu on >pw ~* &* +@all");
        snprintf(url[i], sizeof url[i], "redis://rsu:pw@127.0.0.1:%d",
                 e.s[i]->port);
        urls[i] = url[i];
    }
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 2, NULL));
    spread_keys(&e, c, "rsr", s.key);
    hold_spread(c, &s, 2, &o);
    /* Every set's key on server 0 but set 3's. */
    at = (size_t)snprintf(acl, sizeof acl, "ACL SETUSER rsu resetkeys");
    for (i = 0; i < SETS; i++)
        if (i != 3)
            at += (size_t)snprintf(acl + at, sizeof acl - at, " ~%s",
                                   s.key[i][0]);
    ASSERT_LT(at, sizeof acl);
    cmd_ok(e.r[0], acl);
    until = th_now_ms() + 3 * TTL_MS;
    while (th_now_ms() < until) {
        for (i = 0; i < SETS; i++)
            if (i != 3)
                spread_held(&e, &s, i, 2);
        th_sleep_ms(50);
    }
    ASSERT_EQ_INT(lost_calls(&s.g[3], NULL), 1);
    unhold_sets(&s);
    redislock_client_free(c);
    th_servers_stop(&e);
}
