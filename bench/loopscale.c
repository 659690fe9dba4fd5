/*
 * The event loop at scale (issue 16's targets): one loop thread holds
 * n locks with the watchdog on while m more wait for keys held by
 * another client, then takes those as their holders release them. It
 * reports the server connections the loop holds, the client's memory and
 * CPU per held lock (the CPU over a window in which every lock is
 * renewed twice), and how long the m waiters took once released.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <redislock/libevent.h>

#include "bench.h"

/* The held locks' lease: renewed every third of it. */
#define SCALE_TTL_MS 6000

typedef struct scale_run {
    int acquired, failed;
} scale_run;

static void scale_done(redislock_lock *l, redislock_err err, void *arg)
{
    scale_run *r = arg;

    (void)l;
    if (err == REDISLOCK_OK)
        r->acquired++;
    else
        r->failed++;
}

/* Resident memory of this process, in bytes. */
static long long rss_bytes(void)
{
    long long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%lld %lld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * sysconf(_SC_PAGESIZE);
}

static double cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Turns the loop until *n reaches want or ms pass; 0 when it did not. */
static int run_until(struct event_base *b, const int *n, int want, int64_t ms)
{
    int64_t end = lb_now_ns() + ms * 1000000;
    struct timeval tv = {0, 50000};

    while (*n < want) {
        if (lb_now_ns() > end)
            return 0;
        event_base_loopexit(b, &tv);
        event_base_loop(b, EVLOOP_ONCE);
    }
    return 1;
}

static void run_for(struct event_base *b, int64_t ms)
{
    int64_t end = lb_now_ns() + ms * 1000000;
    struct timeval tv = {0, 50000};

    while (lb_now_ns() < end) {
        event_base_loopexit(b, &tv);
        event_base_loop(b, EVLOOP_ONCE);
    }
}

void lb_run_loop_scale(const lb_env *e, lb_scale *s, int n, int m)
{
    redislock_client *c = NULL, *other = NULL;
    redislock_lock **l = calloc((size_t)(n + 2 * m), sizeof *l);
    redislock_libevent *a = NULL;
    struct event_base *base = event_base_new();
    redislock_acquire_options o = {0}, hold = {0};
    scale_run held = {0}, waited = {0};
    long long conns0, rss0;
    double cpu0;
    int64_t t0;
    char key[48];
    int i;

    memset(s, 0, sizeof *s);
    s->n = n;
    s->m = m;
    if (l == NULL || base == NULL ||
        redislock_client_new(&c, e->url, NULL) != REDISLOCK_OK ||
        redislock_client_new(&other, e->url, NULL) != REDISLOCK_OK ||
        redislock_libevent_new(&a, c, base) != REDISLOCK_OK) {
        snprintf(s->err, sizeof s->err, "setup: %s", redislock_errdetail());
        goto out;
    }
    freeReplyObject(lb_cmd(e->ctl, "FLUSHALL"));
    conns0 = lb_info_field(e->ctl, "clients", "connected_clients");
    rss0 = rss_bytes();
    o.ttl_ms = SCALE_TTL_MS;
    o.watchdog = 1;
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "scale:held:%d", i);
        if (redislock_lock_new(c, key, strlen(key), &l[i]) != REDISLOCK_OK ||
            redislock_loop_acquire(redislock_libevent_loop(a), l[i], &o,
                                   scale_done, &held) != REDISLOCK_OK) {
            snprintf(s->err, sizeof s->err, "acquire %d: %s", i,
                     redislock_errdetail());
            goto out;
        }
    }
    if (!run_until(base, &held.acquired, n, 60000) || held.failed) {
        snprintf(s->err, sizeof s->err, "%d of %d held, %d failed",
                 held.acquired, n, held.failed);
        goto out;
    }
    s->rss_per_lock = (double)(rss_bytes() - rss0) / n;
    /* A window of two renewal periods: every lock renewed twice. */
    cpu0 = cpu_us();
    t0 = lb_now_ns();
    run_for(base, 2 * SCALE_TTL_MS / 3 + 200);
    s->cpu_us_per_lock_s = (cpu_us() - cpu0) / n /
                           ((double)(lb_now_ns() - t0) / 1e9);
    for (i = 0; i < n; i++)
        if (redislock_valid_ms(l[i]) <= 0)
            s->lost++;
    /* m waiters behind another client's holders, on keys of their own. */
    hold.ttl_ms = 60000;
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    o.watchdog = 0;
    for (i = 0; i < m; i++) {
        snprintf(key, sizeof key, "scale:wait:%d", i);
        if (redislock_lock_new(other, key, strlen(key), &l[n + m + i]) != 0 ||
            redislock_acquire(l[n + m + i], &hold) != REDISLOCK_OK ||
            redislock_lock_new(c, key, strlen(key), &l[n + i]) != 0 ||
            redislock_loop_acquire(redislock_libevent_loop(a), l[n + i], &o,
                                   scale_done, &waited) != REDISLOCK_OK) {
            snprintf(s->err, sizeof s->err, "waiter %d: %s", i,
                     redislock_errdetail());
            goto out;
        }
    }
    run_for(base, 500);
    s->waiting = m - waited.acquired;
    s->conns =
        lb_info_field(e->ctl, "clients", "connected_clients") - conns0;
    t0 = lb_now_ns();
    for (i = 0; i < m; i++)
        redislock_release(l[n + m + i]);
    s->woke = run_until(base, &waited.acquired, m, 30000);
    s->wake_all_ms = (double)(lb_now_ns() - t0) / 1e6;
    s->ok = s->woke && !waited.failed && s->lost == 0;
out:
    redislock_libevent_free(a);
    for (i = 0; l != NULL && i < n + 2 * m; i++)
        redislock_lock_free(l[i]);
    free(l);
    redislock_client_free(c);
    redislock_client_free(other);
    if (base != NULL)
        event_base_free(base);
    freeReplyObject(lb_cmd(e->ctl, "FLUSHALL"));
}
