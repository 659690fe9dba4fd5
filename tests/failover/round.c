#include "round.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/util.h"
#include "test.h"

/* Room for every grant of a run of after_ms after the fault. */
#define FO_MAX_KEYS(after_ms) ((FO_FAULT_MS + (after_ms)) / FO_STEP_MS + 8)
#define FO_SETTLE_MS 30000
#define FO_WAITER_KEY "fo:waited"
#define FO_WAITER_HOLD_MS 300 /* the holder gives it back after the fault */

typedef struct granted {
    redislock_lock *l;
    int64_t at_ms; /* into the run */
    char key[32];
} granted;

typedef struct waiter {
    redislock_client *c;
    int64_t fault_ms; /* th_now_ms() of the fault, set before it starts */
    int64_t ms;
    redislock_err err;
} waiter;

/* The servers of a round: a Sentinel setup or a cluster. */
typedef struct env {
    th_sentinels *t;
    th_cluster *tc;
    int victim;    /* the master at the fault (its index) */
    unsigned slot; /* a cluster's: the first key's slot */
} env;

/* The waiter: wants the key the first client holds across the fault. */
static void *wait_for_key(void *arg)
{
    waiter *w = arg;
    redislock_lock *l = th_lock(w->c, FO_WAITER_KEY);
    redislock_acquire_options o = th_aopts(60000, 10000, 0);

    w->err = redislock_acquire(l, &o);
    w->ms = th_now_ms() - w->fault_ms;
    redislock_lock_free(l);
    return NULL;
}

static redislock_client *client(const env *e, int guard)
{
    redislock_options co = {0};
    redislock_client *c;
    const char *seeds[TH_CLUSTER_MAX];
    size_t n = 0;
    int i;

    co.wait_replicas = guard;
    co.wait_replicas_timeout_ms = 100;
    co.command_timeout_ms = 2000;
    if (e->t != NULL)
        return th_client_url(e->t->url, &co);
    /* Seeds of the servers still running: a killed one's are gone. */
    for (i = 0; i < e->tc->n; i++)
        if (e->tc->s[i] != NULL)
            seeds[n++] = e->tc->seeds[i];
    ASSERT_OK(redislock_client_new_cluster(&c, seeds, n, &co));
    return c;
}

static int is_cluster(fo_fault f)
{
    return f == FO_CLUSTER_FAILOVER || f == FO_CLUSTER_KILL;
}

static void env_start(env *e, const fo_opts *o)
{
    th_sentinel_opts so = {.replicas = o->replicas, .priority = {10, 100}};

    memset(e, 0, sizeof *e);
    if (!is_cluster(o->fault)) {
        e->t = th_sentinels_start(&so);
        e->victim = th_sentinels_master(e->t);
        return;
    }
    e->tc = th_cluster_start(3, o->replicas);
    e->slot = th_cluster_keyslot(e->tc, "fo:0");
    e->victim = th_cluster_owner(e->tc, e->slot);
}

/* A replica of cluster master m (its index). */
static int replica_of(th_cluster *tc, int m)
{
    char want[32];
    int i, found = -1;

    snprintf(want, sizeof want, "master_port:%d\r", tc->s[m]->port);
    for (i = 0; i < tc->n && found < 0; i++) {
        redisContext *r;
        char *info;

        if (i == m || tc->s[i] == NULL)
            continue;
        r = th_cluster_redis(tc, i);
        info = th_cmd_str(r, NULL, "INFO replication");
        if (strstr(info, want) != NULL)
            found = i;
        free(info);
        redisFree(r);
    }
    return found;
}

static void fault(env *e, fo_fault f)
{
    redisContext *s;

    if (f == FO_SENTINEL_KILL) {
        (void)th_sentinels_kill_master(e->t);
    } else if (f == FO_SENTINEL_FAILOVER) {
        s = th_sentinels_sentinel_redis(e->t, 0);
        freeReplyObject(th_cmd(s, "SENTINEL FAILOVER %s", e->t->master_name));
        redisFree(s);
    } else if (f == FO_CLUSTER_KILL) {
        th_cluster_kill(e->tc, e->victim);
    } else {
        s = th_cluster_redis(e->tc, replica_of(e->tc, e->victim));
        freeReplyObject(th_cmd(s, "CLUSTER FAILOVER"));
        redisFree(s);
    }
}

/* Waits until another node serves the victim's keys. */
static void env_settle(env *e)
{
    int64_t t0 = th_now_ms();

    if (e->t != NULL) {
        (void)th_sentinels_wait_failover(e->t, e->victim, FO_SETTLE_MS);
        return;
    }
    while (th_cluster_owner(e->tc, e->slot) == e->victim ||
           th_cluster_owner(e->tc, e->slot) < 0) {
        ASSERT_LT(th_now_ms() - t0, FO_SETTLE_MS);
        th_sleep_ms(50);
    }
    th_cluster_wait_ok(e->tc, FO_SETTLE_MS);
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The median and the most of the n latencies in us (sorted here). */
static void latency(int64_t *us, int n, fo_result *r)
{
    if (n == 0)
        return;
    qsort(us, (size_t)n, sizeof *us, by_value);
    r->p50_us = us[n / 2];
    r->max_us = us[n - 1];
}

/* Takes a fresh key every FO_STEP_MS, the fault at FO_FAULT_MS; keeps
 * the grants in g. Returns how many. */
static int grant_through(env *e, const fo_opts *o, redislock_client *c,
                         redislock_lock *held, waiter *w, granted *g,
                         fo_result *r, int64_t *fault_ms, int64_t *bad_ms)
{
    redislock_acquire_options ao = th_aopts(60000, 0, 0);
    int64_t t0 = th_now_ms(), now,
            after = o->after_ms > 0 ? o->after_ms : FO_AFTER_MS;
    pthread_t wt;
    int n = 0, i = 0, faulted = 0, released = 0;
    int64_t us[FO_FAULT_MS / FO_STEP_MS + 1], sent;
    int nus = 0;
    redislock_err err;

    while ((now = th_now_ms() - t0) < FO_FAULT_MS + after &&
           n < FO_MAX_KEYS(after)) {
        if (!faulted && now >= FO_FAULT_MS) {
            *fault_ms = now;
            w->fault_ms = th_now_ms();
            ASSERT_EQ_INT(pthread_create(&wt, NULL, wait_for_key, w), 0);
            fault(e, o->fault);
            faulted = 1;
        }
        if (faulted && !released && now >= *fault_ms + FO_WAITER_HOLD_MS) {
            (void)redislock_release(held);
            released = 1;
        }
        snprintf(g[n].key, sizeof g[n].key, "fo:%d", i++);
        g[n].l = th_lock(c, g[n].key);
        sent = th_now_us();
        err = redislock_acquire(g[n].l, &ao);
        if (!faulted && nus < (int)(sizeof us / sizeof us[0]))
            us[nus++] = th_now_us() - sent;
        if (err == REDISLOCK_OK) {
            g[n++].at_ms = th_now_ms() - t0;
            r->grants++;
        } else {
            r->refused += err == REDISLOCK_ENOTDURABLE;
            if (faulted)
                *bad_ms = th_now_ms() - t0;
            redislock_lock_free(g[n].l);
        }
        th_sleep_ms(FO_STEP_MS);
    }
    ASSERT(faulted);
    pthread_join(wt, NULL);
    latency(us, nus, r);
    return n;
}

/* After the failover settled: the plain client tries each grant's key.
 * Locking is back with the first grant kept after the last failure or
 * loss (bad_ms: the last failed acquisition's time). */
static void count_lost(const env *e, granted *g, int n, int64_t fault_ms,
                       int64_t bad_ms, fo_result *r)
{
    redislock_client *plain = client(e, 0);
    redislock_acquire_options ao = th_aopts(60000, 0, 0);
    int i, *kept = calloc((size_t)n + 1, sizeof *kept);

    ASSERT(kept != NULL);
    for (i = 0; i < n; i++) {
        redislock_lock *l = th_lock(plain, g[i].key);

        kept[i] = redislock_acquire(l, &ao) != REDISLOCK_OK;
        if (!kept[i]) {
            r->lost++;
            if (r->lost_first_ms < 0)
                r->lost_first_ms = g[i].at_ms;
            r->lost_last_ms = g[i].at_ms;
        }
        redislock_lock_free(l);
    }
    if (r->lost_last_ms > bad_ms)
        bad_ms = r->lost_last_ms;
    for (i = 0; i < n && r->back_ms < 0; i++)
        if (kept[i] && g[i].at_ms > fault_ms && g[i].at_ms > bad_ms)
            r->back_ms = g[i].at_ms - fault_ms;
    free(kept);
    redislock_client_free(plain);
}

void fo_round(const fo_opts *o, fo_result *r)
{
    env e;
    redislock_client *c;
    redislock_acquire_options ao = th_aopts(60000, 0, 0);
    waiter w;
    granted *g = calloc(
        FO_MAX_KEYS(o->after_ms > 0 ? o->after_ms : FO_AFTER_MS), sizeof *g);
    redislock_lock *held;
    int64_t fault_ms = -1, bad_ms = -1;
    int n, i;

    ASSERT(g != NULL);
    env_start(&e, o);
    c = client(&e, o->guard);
    w = (waiter){.c = client(&e, o->guard)};
    held = th_lock(c, FO_WAITER_KEY);
    memset(r, 0, sizeof *r);
    r->back_ms = r->lost_first_ms = r->lost_last_ms = -1;
    ASSERT_OK(redislock_acquire(held, &ao));
    n = grant_through(&e, o, c, held, &w, g, r, &fault_ms, &bad_ms);
    r->waiter_ms = w.ms;
    r->waiter_err = w.err;
    env_settle(&e);
    count_lost(&e, g, n, fault_ms, bad_ms, r);
    for (i = 0; i < n; i++)
        redislock_lock_free(g[i].l);
    free(g);
    redislock_lock_free(held);
    redislock_client_free(w.c);
    redislock_client_free(c);
    th_sentinels_stop(e.t);
    th_cluster_stop(e.tc);
}

void fo_format(const fo_opts *o, const fo_result *r, char *buf, size_t size)
{
    static const char *const names[] = {"sentinel-failover", "sentinel-kill",
                                        "cluster-failover", "cluster-kill"};
    char n[16];

    snprintf(n, sizeof n, "%d", o->guard);
    snprintf(
        buf, size,
        "%s replicas=%d guard=%s: grants %d refused %d lost %d "
        "(granted %lld-%lld ms into the run), granting (kept) again %lld ms "
        "after the fault, waiter %s after %lld ms; acquire p50 %lld us, "
        "max %lld us before the fault",
        names[o->fault], o->replicas,
        o->guard == 0  ? "off"
        : o->guard < 0 ? "all"
                       : n,
        r->grants, r->refused, r->lost, (long long)r->lost_first_ms,
        (long long)r->lost_last_ms, (long long)r->back_ms,
        redislock_strerror(r->waiter_err), (long long)r->waiter_ms,
        (long long)r->p50_us, (long long)r->max_us);
}
