/*
 * abbench: the figures the one-engine issue compares across builds, from
 * the public API only, so that one source links against the library of
 * any commit (bench/ab.sh builds it twice and runs the two in turns):
 *
 *   block    uncontended acquire+release, the blocking calls, p50 in us
 *   loop     the same on an event loop (libevent)
 *   k8       K=8 processes on one lock, hand-off p50 in us (contend.c's:
 *            next acquire returned - release began), the blocking calls
 *   k8loop   the same, each process waiting on an event loop
 *   k8fair   the same as k8 in fair mode (issue 38 saw its hand-off slow)
 *
 * usage: abbench --sock PATH [--n CYCLES] [--m CYCLES-PER-PROCESS]
 * Prints one line: "abbench: block=X loop=Y k8=Z k8loop=W k8fair=V" (us).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redislock.h>
#include <redislock/libevent.h>

#include "bench.h"

#define SOLO "bench:ab:solo"

/* p50 in us of n uncontended acquire+release cycles of l, on the loop a
 * (NULL: the blocking calls), after n / 10 to warm up. */
static double uncontended(redislock_lock *l, redislock_libevent *a,
                          struct event_base *base, int n)
{
    redislock_acquire_options o = {0};
    int64_t *lat = malloc((size_t)n * sizeof *lat), t0, t1;
    double p50;
    int i;

    if (lat == NULL)
        lb_die("out of memory");
    o.ttl_ms = LB_TTL_MS;
    for (i = -n / 10; i < n; i++) {
        redislock_err err;

        t0 = lb_now_ns();
        err = lb_lock_op(a, base, l, &o, 1, &t1);
        if (err == REDISLOCK_OK)
            err = lb_lock_op(a, base, l, NULL, 0, &t1);
        if (err != REDISLOCK_OK)
            lb_die("uncontended cycle: %s", redislock_errdetail());
        if (i >= 0)
            lat[i] = t1 - t0;
    }
    lb_sort_i64(lat, (size_t)n);
    p50 = (double)lb_pct(lat, (size_t)n, 50) / 1e3;
    free(lat);
    return p50;
}

/* Hand-off p50 in us of K=8 processes, m cycles each, on event loops or
 * in fair mode when asked. */
static double k8(const lb_env *e, int m, int loop, int fair)
{
    lb_series s = {0};
    double h;

    s.name = loop   ? "redislock on an event loop"
             : fair ? "redislock fair"
                    : "redislock";
    s.slug = loop ? "ab-loop" : fair ? "ab-fair" : "ab";
    s.lib = LB_REDISLOCK;
    s.loop = loop;
    s.fair = fair;
    s.k = 8;
    s.m = m;
    lb_run_series(e, &s);
    if (!s.ran || s.overlaps != 0)
        lb_die("K=8%s: %s%s", loop ? " on a loop" : "",
               s.ran ? "exclusion broken" : "failed: ", s.err);
    h = s.h50;
    free(s.hand);
    free(s.xhand);
    return h;
}

int main(int argc, char **argv)
{
    lb_env e;
    redislock_client *c;
    redislock_lock *l;
    redislock_libevent *a;
    struct event_base *base;
    double block, loop, h, hl, hf;
    int i, n = 20000, m = 500;

    memset(&e, 0, sizeof e);
    e.out_dir = "bench/out";
    e.timeout_s = 120;
    e.sock = getenv("REDIS_SOCK");
    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--sock") == 0)
            e.sock = argv[i + 1];
        else if (strcmp(argv[i], "--n") == 0)
            n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--m") == 0)
            m = atoi(argv[i + 1]);
        else
            break;
    }
    if (i != argc || e.sock == NULL || n < 10 || m < 10) {
        fprintf(stderr,
                "usage: abbench --sock PATH [--n CYCLES] [--m CYCLES]\n");
        return 2;
    }
    snprintf(e.url, sizeof e.url, "unix://%s", e.sock);
    if ((e.ctl = lb_connect(e.sock)) == NULL)
        return 2;
    if (redislock_client_new(&c, e.url, NULL) != REDISLOCK_OK ||
        redislock_lock_new(c, SOLO, strlen(SOLO), &l) != REDISLOCK_OK)
        lb_die("cannot connect: %s", redislock_errdetail());
    if ((base = event_base_new()) == NULL ||
        redislock_libevent_new(&a, c, base) != REDISLOCK_OK)
        lb_die("no event loop: %s", redislock_errdetail());
    block = uncontended(l, NULL, NULL, n);
    loop = uncontended(l, a, base, n);
    redislock_libevent_free(a);
    event_base_free(base);
    redislock_lock_free(l);
    redislock_client_free(c);
    h = k8(&e, m, 0, 0);
    hl = k8(&e, m, 1, 0);
    hf = k8(&e, m, 0, 1);
    printf("abbench: block=%.1f loop=%.1f k8=%.1f k8loop=%.1f k8fair=%.1f\n",
           block, loop, h, hl, hf);
    redisFree(e.ctl);
    return 0;
}
