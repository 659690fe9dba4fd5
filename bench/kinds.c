/*
 * The server's CPU per uncontended acquire+release cycle of each kind of
 * lock against the plain lock's (issue 38: each at most 1.5 x): one
 * client over the unix socket, blocking calls, the kinds in rotating
 * order round after round so that drift hits each alike; per round the
 * kind's CPU per cycle over the plain lock's, the median reported.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "redislock.h"

const char *const lb_kind_name[LB_KINDS] = {"plain lock", "fair lock",
                                            "semaphore (limit 8)",
                                            "shared lock", "set of 8 keys"};

/* A handle of kind k on keys of its own. */
static redislock_lock *kind_lock(redislock_client *c, int k)
{
    static const char *const set[8] = {
        "bench:kinds:s0", "bench:kinds:s1", "bench:kinds:s2", "bench:kinds:s3",
        "bench:kinds:s4", "bench:kinds:s5", "bench:kinds:s6", "bench:kinds:s7"};
    char key[32];
    size_t lens[8];
    redislock_lock *l = NULL;
    int i;

    if (k == LB_KIND_SET) {
        for (i = 0; i < 8; i++)
            lens[i] = strlen(set[i]);
        if (redislock_lock_new_multi(c, (const void *const *)set, lens, 8,
                                     &l) != REDISLOCK_OK)
            return NULL;
        return l;
    }
    snprintf(key, sizeof key, "bench:kinds:%d", k);
    if (redislock_lock_new(c, key, strlen(key), &l) != REDISLOCK_OK)
        return NULL;
    return l;
}

/* Cycles of kind k on l for ms; returns how many. */
static long long run_kind(redislock_lock *l, int k, int ms)
{
    int64_t end = lb_now_ns() + (int64_t)ms * 1000000;
    redislock_acquire_options o = {0};
    redislock_err err;
    long long n = 0;

    o.ttl_ms = LB_TTL_MS;
    o.fair = k == LB_KIND_FAIR;
    o.limit = k == LB_KIND_SEM ? 8 : 0;
    o.shared = k == LB_KIND_SHARED;
    while (lb_now_ns() < end) {
        if ((err = redislock_acquire(l, &o)) != REDISLOCK_OK ||
            (err = redislock_release(l)) != REDISLOCK_OK)
            lb_die("%s: %s (%s)", lb_kind_name[k], redislock_strerror(err),
                   redislock_errdetail());
        n++;
    }
    return n;
}

void lb_run_kinds(const lb_env *e, lb_kinds *m, int rounds, int ms)
{
    redislock_client *c = NULL;
    redislock_lock *l[LB_KINDS] = {NULL};
    double per[LB_KINDS][32], ratio[32], cpu[LB_KINDS] = {0}, u0;
    long long n, cycles[LB_KINDS] = {0};
    int r, j, k;

    memset(m, 0, sizeof *m);
    if (rounds > 32)
        rounds = 32;
    if (redislock_client_new(&c, e->url, NULL) != REDISLOCK_OK)
        lb_die("kinds: cannot connect: %s", redislock_errdetail());
    for (k = 0; k < LB_KINDS; k++)
        if ((l[k] = kind_lock(c, k)) == NULL)
            lb_die("kinds: %s: %s", lb_kind_name[k], redislock_errdetail());
    for (k = 0; k < LB_KINDS; k++) /* warm up: connections, scripts */
        run_kind(l[k], k, 20);
    for (r = 0; r < rounds; r++)
        for (j = 0; j < LB_KINDS; j++) {
            k = (r + j) % LB_KINDS;
            u0 = lb_server_cpu_us(e->ctl);
            n = run_kind(l[k], k, ms);
            per[k][r] = (lb_server_cpu_us(e->ctl) - u0) / (double)n;
            cpu[k] += per[k][r] * (double)n;
            cycles[k] += n;
        }
    for (k = 0; k < LB_KINDS; k++) {
        for (r = 0; r < rounds; r++)
            ratio[r] = per[k][r] / per[LB_KIND_PLAIN][r];
        m->ratio[k] = lb_median(ratio, (size_t)rounds);
        m->cpu[k] = cpu[k] / (double)cycles[k];
        redislock_lock_free(l[k]);
    }
    redislock_client_free(c);
    m->rounds = rounds;
    m->ran = 1;
}
