#include "round.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

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

static redislock_client *guarded_client(const th_sentinels *t, int guard)
{
    redislock_options co = {0};

    co.wait_replicas = guard;
    co.wait_replicas_timeout_ms = 100;
    co.command_timeout_ms = 2000;
    return th_client_url(t->url, guard != 0 ? &co : NULL);
}

static void fault(th_sentinels *t, fo_fault f)
{
    redisContext *s;

    if (f == FO_SENTINEL_KILL) {
        (void)th_sentinels_kill_master(t);
        return;
    }
    s = th_sentinels_sentinel_redis(t, 0);
    freeReplyObject(th_cmd(s, "SENTINEL FAILOVER %s", t->master_name));
    redisFree(s);
}

static int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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
static int grant_through(th_sentinels *t, const fo_opts *o, redislock_client *c,
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
            fault(t, o->fault);
            faulted = 1;
        }
        if (faulted && !released && now >= *fault_ms + FO_WAITER_HOLD_MS) {
            (void)redislock_release(held);
            released = 1;
        }
        snprintf(g[n].key, sizeof g[n].key, "fo:%d", i++);
        g[n].l = th_lock(c, g[n].key);
        sent = now_us();
        err = redislock_acquire(g[n].l, &ao);
        if (!faulted && nus < (int)(sizeof us / sizeof us[0]))
            us[nus++] = now_us() - sent;
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
static void count_lost(const th_sentinels *t, granted *g, int n,
                       int64_t fault_ms, int64_t bad_ms, fo_result *r)
{
    redislock_client *plain = th_client_url(t->url, NULL);
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
    th_sentinel_opts so = {.replicas = o->replicas, .priority = {10, 100}};
    th_sentinels *t = th_sentinels_start(&so);
    redislock_client *c = guarded_client(t, o->guard);
    redislock_acquire_options ao = th_aopts(60000, 0, 0);
    waiter w = {.c = guarded_client(t, o->guard)};
    granted *g = calloc(
        FO_MAX_KEYS(o->after_ms > 0 ? o->after_ms : FO_AFTER_MS), sizeof *g);
    redislock_lock *held = th_lock(c, FO_WAITER_KEY);
    int64_t fault_ms = -1, bad_ms = -1;
    int n, i, old = th_sentinels_master(t);

    ASSERT(g != NULL);
    memset(r, 0, sizeof *r);
    r->back_ms = r->lost_first_ms = r->lost_last_ms = -1;
    ASSERT_OK(redislock_acquire(held, &ao));
    n = grant_through(t, o, c, held, &w, g, r, &fault_ms, &bad_ms);
    r->waiter_ms = w.ms;
    r->waiter_err = w.err;
    (void)th_sentinels_wait_failover(t, old, FO_SETTLE_MS);
    count_lost(t, g, n, fault_ms, bad_ms, r);
    for (i = 0; i < n; i++)
        redislock_lock_free(g[i].l);
    free(g);
    redislock_lock_free(held);
    redislock_client_free(w.c);
    redislock_client_free(c);
    th_sentinels_stop(t);
}

void fo_format(const fo_opts *o, const fo_result *r, char *buf, size_t size)
{
    snprintf(
        buf, size,
        "%s replicas=%d guard=%s: grants %d refused %d lost %d "
        "(granted %lld-%lld ms into the run), granting (kept) again %lld ms "
        "after the fault, waiter %s after %lld ms",
        o->fault == FO_SENTINEL_KILL ? "sentinel-kill" : "sentinel-failover",
        o->replicas,
        o->guard == 0   ? "off"
        : o->guard < 0  ? "all"
        : o->guard == 1 ? "1"
                        : "N",
        r->grants, r->refused, r->lost, (long long)r->lost_first_ms,
        (long long)r->lost_last_ms, (long long)r->back_ms,
        redislock_strerror(r->waiter_err), (long long)r->waiter_ms);
}
