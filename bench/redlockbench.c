/*
 * redlockbench SOCK1 .. SOCK5: acquire latency of one server against a
 * Redlock quorum of 3 and of 5, measured in the same run, rounds of each
 * interleaved so that the machine's drift touches all alike. Each cycle
 * is acquire then release; only the acquire is timed. Also PING on a
 * hiredis connection to the first server, the floor of one round trip,
 * and the client's own CPU per cycle, beside a raw hiredis loop's (the
 * same two kinds of request a plain lock needs, SET NX PX and a
 * compare-and-delete EVALSHA, to one server and to five: sent to each,
 * then each reply read) as the floor of what a quorum costs a client on
 * this machine. Then servers that are away: two and
 * three of five blackholed (a TCP connect that never completes), timing
 * a new client and its first acquire. Then a waiter behind a holder on
 * the quorum of 3 (issue 38, item 4): the requests the servers get while
 * it waits, and the time from the holder's release to its grant. Prints
 * the targets of issues 14 and 38 with PASS or MISS, and ends with a
 * machine-readable line.
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <redislock.h>

#include "../tests/harness/blackhole.h"
#include "bench.h"

#define ROUNDS 10
#define PER_ROUND 300
/* The waiter's rounds behind a holder, and how long it waits unwatched
 * before the release (the first round: the window its requests are
 * counted in). */
#define WAIT_ROUNDS 30
#define WAIT_QUIET_MS 100
#define WAIT_COUNT_MS 1000
/* The blackhole runs' timeouts. */
#define BH_CONNECT_MS 500
#define BH_COMMAND_MS 500

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

/* The client's own CPU time per cycle, per variant (single, N=3, N=5,
 * raw single, raw N=5): what stays when the servers run on cores of
 * their own. */
static int64_t cpu_used[5];

/* The raw loop's compare-and-delete, loaded on each server. */
static const char raw_del[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) end return 0";
static char raw_sha[41];

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

/* One request of the raw loop to each of the n servers: every command
 * written, then every reply read (blocking). */
static void raw_round(redisContext **r, int n, const char *fmt,
                      const char *a, const char *b)
{
    redisReply *rep;
    int k, done;

    for (k = 0; k < n; k++)
        redisAppendCommand(r[k], fmt, a, b);
    for (k = 0; k < n; k++)
        do {
            if (redisBufferWrite(r[k], &done) != REDIS_OK) {
                fprintf(stderr, "redlockbench: raw loop: %s\n", r[k]->errstr);
                exit(1);
            }
        } while (!done);
    for (k = 0; k < n; k++) {
        if (redisGetReply(r[k], (void **)&rep) != REDIS_OK || rep == NULL) {
            fprintf(stderr, "redlockbench: raw loop: %s\n", r[k]->errstr);
            exit(1);
        }
        freeReplyObject(rep);
    }
}

/* PER_ROUND raw cycles (variant v) on the first n of r. */
static void raw_cycles(int v, redisContext **r, int n)
{
    char tok[32];
    int64_t c0 = cpu_ns();
    int i;

    for (i = 0; i < PER_ROUND; i++) {
        snprintf(tok, sizeof tok, "raw-%d-%d", v, i);
        raw_round(r, n, "SET bench:raw %s NX PX %s", tok, "10000");
        raw_round(r, n, "EVALSHA %s 1 bench:raw %s", raw_sha, tok);
    }
    cpu_used[v] += cpu_ns() - c0;
}

/* Connections to the five servers for the raw loop, its script loaded. */
static void raw_connect(char (*sock)[160], redisContext **r)
{
    redisReply *rep;
    int k;

    for (k = 0; k < 5; k++) {
        r[k] = redisConnectUnix(sock[k] + strlen("unix://"));
        rep = r[k] == NULL || r[k]->err
                  ? NULL
                  : redisCommand(r[k], "SCRIPT LOAD %s", raw_del);
        if (rep == NULL || rep->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "redlockbench: raw loop: cannot load a script\n");
            exit(1);
        }
        snprintf(raw_sha, sizeof raw_sha, "%s", rep->str);
        freeReplyObject(rep);
    }
}

/* The outcome of a run with nbh of five servers blackholed. */
typedef struct away {
    redislock_err err; /* of the client or its first acquire */
    double client_ms, acquire_ms;
} away;

/* A Redlock client over five servers, nbh of them blackholed (placed
 * among the real ones), and its first acquire, each timed. */
static away blackholed(char (*real)[160], int nbh)
{
    redislock_options co = {0};
    redislock_acquire_options o = {0};
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    const char *urls[5];
    char bh[3][64];
    int lfd[3], fill[3], port, i, b = 0, r = 0;
    away w = {REDISLOCK_OK, -1, -1};
    int64_t t0;

    for (i = 0; i < nbh; i++) {
        if ((lfd[i] = th_blackhole(&port, &fill[i])) < 0) {
            fprintf(stderr, "redlockbench: cannot make a blackhole\n");
            exit(1);
        }
        snprintf(bh[i], sizeof bh[i], "redis://127.0.0.1:%d", port);
    }
    /* Alternate: real, away, real, away, ... */
    for (i = 0; i < 5; i++)
        urls[i] = (i % 2 == 1 && b < nbh) || r >= 5 - nbh ? bh[b++] : real[r++];
    co.connect_timeout_ms = BH_CONNECT_MS;
    co.command_timeout_ms = BH_COMMAND_MS;
    o.ttl_ms = 10000;
    t0 = now_ns();
    w.err = redislock_client_new_redlock(&c, urls, 5, &co);
    w.client_ms = (double)(now_ns() - t0) / 1e6;
    if (w.err == REDISLOCK_OK &&
        (w.err = redislock_lock_new(c, "bench:away", 10, &l)) == 0) {
        t0 = now_ns();
        w.err = redislock_acquire(l, &o);
        w.acquire_ms = (double)(now_ns() - t0) / 1e6;
        if (w.err == REDISLOCK_OK)
            redislock_release(l);
    }
    redislock_lock_free(l);
    redislock_client_free(c);
    for (i = 0; i < nbh; i++) {
        close(fill[i]);
        close(lfd[i]);
    }
    return w;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

/* A waiter's acquire on a thread of its own. */
typedef struct waiter {
    redislock_lock *l;
    redislock_err err;
    int64_t done_ns;
} waiter;

static void *wait_for(void *arg)
{
    waiter *w = arg;
    redislock_acquire_options o = {0};

    o.ttl_ms = 10000;
    o.wait_ms = 20000;
    w->err = redislock_acquire(w->l, &o);
    w->done_ns = now_ns();
    return NULL;
}

/* The waiter's figures: requests per second while it waits, and the
 * release-to-grant times (ns, WAIT_ROUNDS of them). */
typedef struct waited {
    double per_s;
    int64_t grant[WAIT_ROUNDS];
} waited;

/* WAIT_ROUNDS times: a holder on c (a Redlock client of the first n of
 * the servers r) takes the key for 30 s, a waiter on a thread waits for
 * it, and the holder releases it; the first round counts the servers'
 * requests over WAIT_COUNT_MS of the wait. */
static waited behind(redislock_client *c, redisContext **r, int n)
{
    redislock_acquire_options o = {0};
    redislock_lock *h, *l;
    waited out = {0};
    long long c0 = 0, c1 = 0;
    int64_t t_rel;
    waiter w;
    pthread_t t;
    redislock_err err;
    int k, i;

    o.ttl_ms = 30000;
    if ((err = redislock_lock_new(c, "bench:wait", 10, &h)) != 0 ||
        (err = redislock_lock_new(c, "bench:wait", 10, &l)) != 0)
        die("lock", err);
    for (k = 0; k < WAIT_ROUNDS; k++) {
        if ((err = redislock_acquire(h, &o)) != REDISLOCK_OK)
            die("holder", err);
        w = (waiter){l, REDISLOCK_OK, 0};
        if (pthread_create(&t, NULL, wait_for, &w) != 0)
            die("thread", REDISLOCK_ENOMEM);
        sleep_ms(WAIT_QUIET_MS);
        if (k == 0) {
            for (i = 0; i < n; i++)
                c0 += lb_script_calls(r[i], NULL);
            sleep_ms(WAIT_COUNT_MS);
            for (i = 0; i < n; i++)
                c1 += lb_script_calls(r[i], NULL);
            out.per_s = (double)(c1 - c0) * 1000.0 / WAIT_COUNT_MS;
        }
        t_rel = now_ns();
        if ((err = redislock_release(h)) != REDISLOCK_OK)
            die("holder's release", err);
        pthread_join(t, NULL);
        if (w.err != REDISLOCK_OK)
            die("waiter", w.err);
        out.grant[k] = w.done_ns - t_rel;
        if ((err = redislock_release(l)) != REDISLOCK_OK)
            die("waiter's release", err);
    }
    redislock_lock_free(h);
    redislock_lock_free(l);
    return out;
}

static const char *yes(int ok)
{
    return ok ? "PASS" : "MISS";
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
    redisContext *r, *raw[5];
    redislock_err err;
    size_t n = (size_t)ROUNDS * PER_ROUND;
    double cpu1, cpu5, raw1, raw5, fail3;
    away two, three;
    waited wt;
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
    raw_connect(buf, raw);
    for (i = 0; i < 4; i++)
        if ((lat[i] = malloc(n * sizeof *lat[i])) == NULL)
            return 1;
    /* Warm up: connections, scripts loaded. */
    for (i = 0; i < 3; i++)
        cycles(i, l[i], lat[i]);
    raw_cycles(3, raw, 1);
    raw_cycles(4, raw, 5);
    memset(cpu_used, 0, sizeof cpu_used);
    for (k = 0; k < ROUNDS; k++) {
        pings(r, lat[3] + k * PER_ROUND);
        for (i = 0; i < 3; i++)
            cycles(i, l[i], lat[i] + k * PER_ROUND);
        raw_cycles(3, raw, 1);
        raw_cycles(4, raw, 5);
    }
    cpu1 = (double)cpu_used[0] / (double)n / 1000.0;
    cpu5 = (double)cpu_used[2] / (double)n / 1000.0;
    raw1 = (double)cpu_used[3] / (double)n / 1000.0;
    raw5 = (double)cpu_used[4] / (double)n / 1000.0;
    printf("client CPU per acquire+release cycle (us): single %.1f, N=3 "
           "%.1f, N=5 %.1f (%.2f x single)\n",
           cpu1, (double)cpu_used[1] / (double)n / 1000.0, cpu5, cpu5 / cpu1);
    printf("raw hiredis loop's (SET NX PX, compare-and-delete EVALSHA): "
           "single %.1f, N=5 %.1f (%.2f x single)\n",
           raw1, raw5, raw5 / raw1);
    printf("%-22s %10s %10s\n", "acquire latency (us)", "p50", "p99");
    printf("%-22s %10.1f %10.1f\n", "PING round trip", pct(lat[3], n, 0.5),
           pct(lat[3], n, 0.99));
    printf("%-22s %10.1f %10.1f\n", "single server", pct(lat[0], n, 0.5),
           pct(lat[0], n, 0.99));
    printf("%-22s %10.1f %10.1f\n", "Redlock N=3", pct(lat[1], n, 0.5),
           pct(lat[1], n, 0.99));
    printf("%-22s %10.1f %10.1f\n", "Redlock N=5", pct(lat[2], n, 0.5),
           pct(lat[2], n, 0.99));
    two = blackholed(buf, 2);
    three = blackholed(buf, 3);
    printf("2 of 5 blackholed (connect timeout %d ms, command timeout %d "
           "ms): new client %.0f ms, first acquire %s in %.0f ms\n",
           BH_CONNECT_MS, BH_COMMAND_MS, two.client_ms,
           redislock_errname(two.err), two.acquire_ms);
    fail3 = three.client_ms + (three.acquire_ms > 0 ? three.acquire_ms : 0);
    if (three.acquire_ms < 0)
        printf("3 of 5 blackholed: new client fails with %s in %.0f ms\n",
               redislock_errname(three.err), three.client_ms);
    else
        printf("3 of 5 blackholed: new client %.0f ms, first acquire %s in "
               "%.0f ms\n",
               three.client_ms, redislock_errname(three.err),
               three.acquire_ms);
    wt = behind(c[1], raw, 3);
    printf("waiter behind a holder (N=3): %.1f requests/s while it waits; "
           "release to grant p50 %.2f ms, max %.2f ms (%d rounds)\n",
           wt.per_s, pct(wt.grant, WAIT_ROUNDS, 0.5) / 1000.0,
           pct(wt.grant, WAIT_ROUNDS, 1.0) / 1000.0, WAIT_ROUNDS);
    printf("\nRedlock targets:\n");
    printf("  N=5 client CPU per cycle <= 2 x single's (%.1f us): %.1f us "
           "%s\n",
           2 * cpu1, cpu5, yes(cpu5 <= 2 * cpu1));
    if (cpu5 > 2 * cpu1)
        printf("    (the raw loop's N=5 is %.2f x its single on this "
               "machine: five sends and five reads a request)\n",
               raw5 / raw1);
    printf("  N=5 client CPU per cycle <= 1.2 x the raw loop's N=5 (%.1f "
           "us): %.1f us %s\n",
           1.2 * raw5, cpu5, yes(cpu5 <= 1.2 * raw5));
    printf("  N=5 acquire p50 <= 1.3 x single's (%.1f us): %.1f us %s\n",
           1.3 * pct(lat[0], n, 0.5), pct(lat[2], n, 0.5),
           yes(pct(lat[2], n, 0.5) <= 1.3 * pct(lat[0], n, 0.5)));
    printf("  2 of 5 blackholed: acquire succeeds within connect + command "
           "timeout (%d ms): %.0f ms %s\n",
           BH_CONNECT_MS + BH_COMMAND_MS, two.acquire_ms,
           yes(two.err == REDISLOCK_OK &&
               two.acquire_ms <= BH_CONNECT_MS + BH_COMMAND_MS));
    /* One connect timeout, not one per server away; 10 % for the timer
     * and the scheduler. */
    printf("  3 of 5 blackholed: fails within one connect timeout (%d ms, "
           "+10 %%): %s after %.0f ms %s\n",
           BH_CONNECT_MS, redislock_errname(three.err), fail3,
           yes(three.err != REDISLOCK_OK && fail3 <= BH_CONNECT_MS * 1.1));
    printf("  waiter behind a holder (N=3) sends 0 requests/s while it "
           "waits: %.1f/s %s\n",
           wt.per_s, yes(wt.per_s == 0));
    /* A notice, the random pause of up to 5 ms, a round. */
    printf("  waiter behind a holder (N=3): release to grant p50 <= 10 ms: "
           "%.2f ms %s\n",
           pct(wt.grant, WAIT_ROUNDS, 0.5) / 1000.0,
           yes(pct(wt.grant, WAIT_ROUNDS, 0.5) <= 10000));
    printf("redlock_p50_ratio_n5=%.2f redlock_p50_ratio_n3=%.2f "
           "single_p50_us=%.1f n5_p50_us=%.1f ping_p50_us=%.1f "
           "cpu_single_us=%.1f cpu_n5_us=%.1f cpu_raw_single_us=%.1f "
           "cpu_raw_n5_us=%.1f bh2_acquire_ms=%.0f bh3_fail_ms=%.0f "
           "waiter_req_per_s=%.1f waiter_grant_p50_ms=%.2f\n",
           pct(lat[2], n, 0.5) / pct(lat[0], n, 0.5),
           pct(lat[1], n, 0.5) / pct(lat[0], n, 0.5), pct(lat[0], n, 0.5),
           pct(lat[2], n, 0.5), pct(lat[3], n, 0.5), cpu1, cpu5, raw1, raw5,
           two.acquire_ms, fail3, wt.per_s,
           pct(wt.grant, WAIT_ROUNDS, 0.5) / 1000.0);
    for (i = 0; i < 3; i++) {
        redislock_lock_free(l[i]);
        redislock_client_free(c[i]);
    }
    redisFree(r);
    for (i = 0; i < 5; i++)
        redisFree(raw[i]);
    for (i = 0; i < 4; i++)
        free(lat[i]);
    return 0;
}
