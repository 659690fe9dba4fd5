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
    redislock_err why = REDISLOCK_OK;
    int64_t until;
    long long before = th_script_calls(r);

    th_sleep_ms(2 * PERIOD_MS + 100);
    /* Renewed together: far fewer requests than locks. */
    ASSERT_LE(th_script_calls(r) - before, 10);
    cmd_ok(r, "SET %s other-owner PX 60000", h.key[5]);
    cmd_ok(r, "DEL %s", h.key[7]);
    until = th_now_ms() + 3 * PERIOD_MS + 1000;
    while ((lost_calls(&h.g[5], NULL) == 0 || lost_calls(&h.g[7], NULL) == 0) &&
           th_now_ms() < until)
        th_sleep_ms(20);
    ASSERT_EQ_INT(lost_calls(&h.g[5], &why), 1);
    ASSERT_EQ_INT(why, REDISLOCK_ELOST);
    ASSERT_EQ_INT(lost_calls(&h.g[7], &why), 1);
    ASSERT_EQ_INT(why, REDISLOCK_EEXPIRED);
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
    long long before = 0, calls = 0;
    int i, j, distinct = 0, periods = 5;

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
    th_sleep_ms(2 * PERIOD_MS + 100);
    for (i = 0; i < tc->n; i++) {
        redisContext *r = th_cluster_redis(tc, i);

        before += th_script_calls(r);
        redisFree(r);
    }
    th_sleep_ms(periods * PERIOD_MS);
    for (i = 0; i < tc->n; i++) {
        redisContext *r = th_cluster_redis(tc, i);

        calls += th_script_calls(r);
        redisFree(r);
    }
    calls -= before;
    test_log("%d slots: %lld renewal requests in %d periods", distinct, calls,
             periods);
    ASSERT_GT(calls, 0);
    /* One a slot a period; half as many again for a late straggler. */
    ASSERT_LE(calls, (long long)(distinct * periods * 3 / 2));
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
