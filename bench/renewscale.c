/*
 * renewscale N SOCK1 PID1 SOCK2 PID2 SOCK3 PID3 [redlock|sets]: renewals
 * by node (issue 38, item 5). One client sharded over the three servers
 * (or, with "redlock", a Redlock client of the three: every lock on each)
 * holds N locks (with "sets", N sets of three keys, placed by the ring:
 * most over two or three servers, some on one) with the watchdog on,
 * taken and renewed on a libevent loop (as a
 * service holding that many would: a blocking call's watched lock has an
 * eventfd of its own). Once their renewals have come due together, it counts each
 * server's script requests over three renewal periods (INFO
 * commandstats: while the locks are held, the renewals are the only
 * scripts sent); then it stops the third server (SIGSTOP) for a TTL and
 * a period, and counts the locks on the other two that were lost
 * meanwhile (for Redlock: every lock, whose majority is the other two).
 * Prints the targets with PASS or MISS, and ends with a
 * machine-readable line.
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <event2/event.h>

#include <redislock.h>
#include <redislock/libevent.h>

#include "bench.h"

#define TTL_MS 6000
#define PERIOD_MS (TTL_MS / 3)
#define PERIODS 3
/* The done-when's bounds. */
#define MAX_PER_PERIOD 10

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Turns the loop for ms. */
static void run_for(struct event_base *b, int64_t ms)
{
    int64_t end = now_ms() + ms;
    struct timeval tv = {0, 50000};

    while (now_ms() < end) {
        event_base_loopexit(b, &tv);
        event_base_loop(b, EVLOOP_ONCE);
    }
}

static void taken(redislock_lock *l, redislock_err err, void *arg)
{
    int *n = arg;

    (void)l;
    if (err != REDISLOCK_OK && n[1] == 0)
        fprintf(stderr, "renewscale: acquire: %s\n", redislock_errdetail());
    n[err == REDISLOCK_OK ? 0 : 1]++;
}

/* A set's three keys, from its number (three times). */
#define SET_KEYS "renewscale:%d:a renewscale:%d:b renewscale:%d:c"

/* Lock i: renewscale:i, or with sets the set of its three keys. */
static redislock_err new_lock(redislock_client *c, int i, int sets,
                              redislock_lock **out)
{
    char key[3][48];
    const void *keys[3];
    size_t lens[3];
    int j;

    if (!sets) {
        snprintf(key[0], sizeof key[0], "renewscale:%d", i);
        return redislock_lock_new(c, key[0], strlen(key[0]), out);
    }
    for (j = 0; j < 3; j++) {
        snprintf(key[j], sizeof key[j], "renewscale:%d:%c", i, 'a' + j);
        keys[j] = key[j];
        lens[j] = strlen(key[j]);
    }
    return redislock_lock_new_multi(c, keys, lens, 3, out);
}

/* The three servers' script calls so far. */
static long long calls_now(redisContext **ctl)
{
    long long us, n = 0;
    int j;

    for (j = 0; j < 3; j++)
        n += lb_script_calls(ctl[j], &us);
    return n;
}

/* Turns the loop until a period's renewals have begun and then ended
 * (no request for 300 ms); a period and a half at most. */
static void after_renewals(struct event_base *b, redisContext **ctl)
{
    int64_t end = now_ms() + PERIOD_MS * 3 / 2, quiet_since = 0;
    long long last = calls_now(ctl), n;
    int began = 0;

    while (now_ms() < end) {
        run_for(b, 20);
        n = calls_now(ctl);
        if (n != last) {
            began = 1;
            quiet_since = now_ms();
            last = n;
        } else if (began && now_ms() - quiet_since >= 300) {
            return;
        }
    }
}

static void die(const char *what)
{
    fprintf(stderr, "renewscale: %s: %s\n", what, redislock_errdetail());
    exit(1);
}

int main(int argc, char **argv)
{
    int n, i, j, lost_kept = 0, lost_stopped = 0, on_kept = 0;
    redisContext *ctl[3];
    const char *urls[3];
    char url[3][300];
    pid_t pid[3];
    redislock_client *c = NULL;
    redislock_libevent *a = NULL;
    struct event_base *base = event_base_new();
    int done[2] = {0, 0};
    redislock_lock **l;
    unsigned char *where;
    redislock_acquire_options o = {0};
    long long before[3], per[3], us0[3], us, calls, all = 0, all_us = 0,
        worst = 0, keys[3] = {0, 0, 0};
    int64_t t0, stop_ms;
    int redlock = argc == 9 && strcmp(argv[8], "redlock") == 0;
    int sets = argc == 9 && strcmp(argv[8], "sets") == 0;
    const char *kind = redlock ? "Redlock" : sets ? "sets of 3 keys, sharded"
                                                  : "sharded";
    const char *tag = redlock ? "redlock_" : sets ? "sets_" : "";
    const char *what = sets ? "sets" : "locks";

    if ((argc != 8 && !redlock && !sets) || (n = atoi(argv[1])) <= 0) {
        fprintf(stderr, "usage: renewscale N SOCK1 PID1 SOCK2 PID2 SOCK3 "
                        "PID3 [redlock|sets]\n");
        return 2;
    }
    for (i = 0; i < 3; i++) {
        snprintf(url[i], sizeof url[i], "unix://%s", argv[2 + 2 * i]);
        urls[i] = url[i];
        pid[i] = (pid_t)atol(argv[3 + 2 * i]);
        if ((ctl[i] = redisConnectUnix(argv[2 + 2 * i])) == NULL ||
            ctl[i]->err) {
            fprintf(stderr, "renewscale: cannot reach %s\n", argv[2 + 2 * i]);
            return 1;
        }
    }
    if (base == NULL ||
        (redlock ? redislock_client_new_redlock(&c, urls, 3, NULL)
                 : redislock_client_new_sharded(&c, urls, 3, NULL)) !=
            REDISLOCK_OK ||
        redislock_libevent_new(&a, c, base) != REDISLOCK_OK)
        die("client");
    l = calloc((size_t)n, sizeof *l);
    where = calloc((size_t)n, 1);
    if (l == NULL || where == NULL)
        return 1;
    o.ttl_ms = TTL_MS;
    o.watchdog = 1;
    t0 = now_ms();
    /* Taken 1000 at a time (Redlock's 100: its rounds wait a tenth of the
     * TTL for each server): a loop with every acquire of 10^5 out at once
     * meets its command timeout before it has written them all. */
    for (i = 0; i < n; i++) {
        if (new_lock(c, i, sets, &l[i]) != REDISLOCK_OK ||
            redislock_loop_acquire(redislock_libevent_loop(a), l[i], &o,
                                   taken, done) != REDISLOCK_OK)
            die("acquire");
        while (done[0] + done[1] + (redlock ? 100 : 1000) <= i + 1 &&
               done[1] == 0)
            event_base_loop(base, EVLOOP_ONCE);
    }
    while (done[0] + done[1] < n && now_ms() - t0 < 300000)
        run_for(base, 50);
    if (done[0] != n) {
        fprintf(stderr, "renewscale: %d of %d taken, %d failed\n", done[0], n,
                done[1]);
        return 1;
    }
    printf("renewscale: %d watched %s of %d ms over 3 servers (%s), "
           "taken in %lld ms\n",
           n, what, TTL_MS, kind, (long long)(now_ms() - t0));
    /* The servers that hold each lock's keys, a bit each: pipelined
     * EXISTS (Redlock: all, and the first two are the majority kept). */
    if (redlock)
        memset(where, 1, (size_t)n);
    for (j = 0; j < 3 && !redlock; j++) {
        for (i = 0; i < n; i++)
            if (sets)
                redisAppendCommand(ctl[j], "EXISTS " SET_KEYS, i, i, i);
            else
                redisAppendCommand(ctl[j], "EXISTS renewscale:%d", i);
        for (i = 0; i < n; i++) {
            redisReply *r;

            if (redisGetReply(ctl[j], (void **)&r) != REDIS_OK)
                return 1;
            if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
                where[i] |= (unsigned char)(1u << j);
                keys[j] += r->integer;
            }
            freeReplyObject(r);
        }
    }
    /* Two periods: renewals that came due apart come due together. */
    run_for(base, 2 * PERIOD_MS + 200);
    /* Counted from just after a period's renewals, for whole periods:
     * a count that began among one period's requests would count some
     * of them twice (a fourth period's, at the window's end). */
    after_renewals(base, ctl);
    for (j = 0; j < 3; j++)
        before[j] = lb_script_calls(ctl[j], &us0[j]);
    run_for(base, PERIODS * PERIOD_MS);
    for (j = 0; j < 3; j++) {
        calls = lb_script_calls(ctl[j], &us) - before[j];
        all += calls;
        all_us += us - us0[j];
        per[j] = (calls + PERIODS - 1) / PERIODS;
        worst = per[j] > worst ? per[j] : worst;
    }
    printf("renewscale: renewal requests per period (%d ms) per server: "
           "%lld / %lld / %lld",
           PERIOD_MS, per[0], per[1], per[2]);
    if (!redlock)
        printf(" (keys held: %lld / %lld / %lld)", keys[0], keys[1], keys[2]);
    printf("\n");
    printf("renewscale: server time per renewal request %.2f ms, per lock "
           "renewed %.2f us\n",
           all > 0 ? (double)all_us / (double)all / 1000 : 0.0,
           (double)all_us / ((double)n * PERIODS));
    /* The third server stopped for a TTL and a period. */
    stop_ms = TTL_MS + PERIOD_MS;
    kill(pid[2], SIGSTOP);
    run_for(base, stop_ms);
    for (i = 0; i < n; i++) {
        int gone = redislock_valid_ms(l[i]) <= 0;

        if (where[i] & 4)
            lost_stopped += gone;
        else if (where[i] != 0) {
            on_kept++;
            lost_kept += gone;
        }
    }
    kill(pid[2], SIGCONT);
    printf("renewscale: third server stopped %lld ms: %d of %d %s on the "
           "other two lost; %d of %d with a key on the stopped one\n",
           (long long)stop_ms, lost_kept, on_kept, what, lost_stopped,
           n - on_kept);
    printf("  renewal requests per period per server with %d %s (%s) "
           "<= %d: %lld %s\n",
           n, what, kind, MAX_PER_PERIOD, worst,
           worst <= MAX_PER_PERIOD ? "PASS" : "MISS");
    printf("  no loss on two servers while the third is stopped: %d lost "
           "%s\n",
           lost_kept, lost_kept == 0 ? "PASS" : "MISS");
    redislock_libevent_free(a);
    for (i = 0; i < n; i++)
        redislock_lock_free(l[i]);
    redislock_client_free(c);
    event_base_free(base);
    for (j = 0; j < 3; j++)
        redisFree(ctl[j]);
    free(l);
    free(where);
    printf("renew_%slocks=%d renew_%sper_period_max=%lld "
           "renew_%slost_kept=%d\n",
           tag, n, tag, worst, tag, lost_kept);
    return 0;
}
