/*
 * redlockbench SOCK1 .. SOCK5: acquire latency of one server against a
 * Redlock quorum of 3 and of 5, measured in the same run, rounds of each
 * interleaved so that the machine's drift touches all alike. Each cycle
 * is acquire then release; only the acquire is timed. Also PING on a
 * hiredis connection to the first server, the floor of one round trip.
 * Ends with a machine-readable line.
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redislock.h>

#define ROUNDS 10
#define PER_ROUND 300

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The client's own CPU time per cycle, per variant: what stays when the
 * servers run on cores of their own. */
static int64_t cpu_used[3];

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static double pct(int64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp);
    return (double)v[(size_t)(p * (double)(n - 1))] / 1000.0;
}

static void die(const char *what, redislock_err err)
{
    fprintf(stderr, "redlockbench: %s: %s (%s)\n", what,
            redislock_strerror(err), redislock_errdetail());
    exit(1);
}

/* PER_ROUND timed acquires on l (variant v), into out. */
static void cycles(int v, redislock_lock *l, int64_t *out)
{
    redislock_acquire_options o = {0};
    redislock_err err;
    int64_t t0, c0 = cpu_ns();
    int i;

    o.ttl_ms = 10000;
    for (i = 0; i < PER_ROUND; i++) {
        t0 = now_ns();
        if ((err = redislock_acquire(l, &o)) != REDISLOCK_OK)
            die("acquire", err);
        out[i] = now_ns() - t0;
        if ((err = redislock_release(l)) != REDISLOCK_OK)
            die("release", err);
    }
    cpu_used[v] += cpu_ns() - c0;
}

static void pings(redisContext *c, int64_t *out)
{
    int64_t t0;
    int i;

    for (i = 0; i < PER_ROUND; i++) {
        t0 = now_ns();
        freeReplyObject(redisCommand(c, "PING"));
        out[i] = now_ns() - t0;
    }
}

int main(int argc, char **argv)
{
    const char *urls[5];
    char buf[5][160];
    redislock_client *c[3];
    redislock_lock *l[3];
    int64_t *lat[4];
    redisContext *r;
    redislock_err err;
    size_t n = (size_t)ROUNDS * PER_ROUND;
    int i, k;

    if (argc != 6) {
        fprintf(stderr, "usage: redlockbench SOCK1 SOCK2 SOCK3 SOCK4 SOCK5\n");
        return 64;
    }
    for (i = 0; i < 5; i++) {
        snprintf(buf[i], sizeof buf[i], "unix://%s", argv[i + 1]);
        urls[i] = buf[i];
    }
    if ((err = redislock_client_new(&c[0], urls[0], NULL)) != 0 ||
        (err = redislock_client_new_redlock(&c[1], urls, 3, NULL)) != 0 ||
        (err = redislock_client_new_redlock(&c[2], urls, 5, NULL)) != 0)
        die("client", err);
    for (i = 0; i < 3; i++)
        if ((err = redislock_lock_new(c[i], "bench:rl", 8, &l[i])) != 0)
            die("lock", err);
    r = redisConnectUnix(argv[1]);
    for (i = 0; i < 4; i++)
        if ((lat[i] = malloc(n * sizeof *lat[i])) == NULL)
            return 1;
    /* Warm up: connections, scripts loaded. */
    for (i = 0; i < 3; i++)
        cycles(i, l[i], lat[i]);
    memset(cpu_used, 0, sizeof cpu_used);
    for (k = 0; k < ROUNDS; k++) {
        pings(r, lat[3] + k * PER_ROUND);
        for (i = 0; i < 3; i++)
            cycles(i, l[i], lat[i] + k * PER_ROUND);
    }
    printf("client CPU per acquire+release cycle (us): single %.1f, N=3 "
           "%.1f, N=5 %.1f\n",
           (double)cpu_used[0] / (double)n / 1000.0,
           (double)cpu_used[1] / (double)n / 1000.0,
           (double)cpu_used[2] / (double)n / 1000.0);
    printf("%-22s %10s %10s\n", "acquire latency (us)", "p50", "p99");
    printf("%-22s %10.1f %10.1f\n", "PING round trip", pct(lat[3], n, 0.5),
           pct(lat[3], n, 0.99));
    printf("%-22s %10.1f %10.1f\n", "single server", pct(lat[0], n, 0.5),
           pct(lat[0], n, 0.99));
    printf("%-22s %10.1f %10.1f\n", "Redlock N=3", pct(lat[1], n, 0.5),
           pct(lat[1], n, 0.99));
    printf("%-22s %10.1f %10.1f\n", "Redlock N=5", pct(lat[2], n, 0.5),
           pct(lat[2], n, 0.99));
    printf("redlock_p50_ratio_n5=%.2f redlock_p50_ratio_n3=%.2f "
           "single_p50_us=%.1f n5_p50_us=%.1f ping_p50_us=%.1f "
           "(target n5 <= 1.30: %s)\n",
           pct(lat[2], n, 0.5) / pct(lat[0], n, 0.5),
           pct(lat[1], n, 0.5) / pct(lat[0], n, 0.5), pct(lat[0], n, 0.5),
           pct(lat[2], n, 0.5), pct(lat[3], n, 0.5),
           pct(lat[2], n, 0.5) <= 1.3 * pct(lat[0], n, 0.5) ? "PASS" : "MISS");
    for (i = 0; i < 3; i++) {
        redislock_lock_free(l[i]);
        redislock_client_free(c[i]);
    }
    redisFree(r);
    for (i = 0; i < 4; i++)
        free(lat[i]);
    return 0;
}
