/*
 * redlock -u URL -u URL -u URL [-u ...] [-k KEY] [-t TTL_MS]: one job run
 * under a Redlock quorum of independent Redis servers.
 *
 * The lock is held only when a majority of the servers grant it with
 * validity left; the watchdog renews it on a majority; the job checks
 * redislock_check() between steps and stops if the lock was lost. The
 * program prints what each server said, the validity and the fencing
 * token, then releases everywhere.
 *
 * Exit status: 0 the job ran; 1 another owner holds the lock; 69 too few
 * servers answered (no quorum); 2 usage or other errors.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <redislock.h>

#define MAX_SERVERS 15

static int fail(const char *what, redislock_err err)
{
    fprintf(stderr, "redlock: %s: %s (%s)\n", what, redislock_strerror(err),
            redislock_errdetail());
    return err == REDISLOCK_EHELD ? 1 : err == REDISLOCK_ENOQUORUM ? 69 : 2;
}

/* Prints each server's answer to the last request. */
static void show_outcomes(const redislock_lock *l, const char *const *urls)
{
    redislock_err out[MAX_SERVERS];
    size_t i, n = redislock_outcomes(l, out, MAX_SERVERS);

    for (i = 0; i < n && i < MAX_SERVERS; i++)
        printf("  %s: %s\n", urls[i], redislock_errname(out[i]));
}

/* The job: a few steps, each only while the lock is still ours. */
static int job(redislock_lock *l)
{
    redislock_err err;
    int step;

    for (step = 1; step <= 3; step++) {
        if ((err = redislock_check(l)) != REDISLOCK_OK)
            return fail("lock lost mid-job", err);
        printf("step %d, %" PRId64 " ms of validity left\n", step,
               redislock_valid_ms(l));
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *urls[MAX_SERVERS], *key = "example:redlock";
    redislock_acquire_options o = {0};
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redislock_err err;
    size_t n = 0;
    int opt, rc;

    o.ttl_ms = 10000;
    while ((opt = getopt(argc, argv, "u:k:t:")) != -1) {
        if (opt == 'u' && n < MAX_SERVERS)
            urls[n++] = optarg;
        else if (opt == 'k')
            key = optarg;
        else if (opt == 't')
            o.ttl_ms = atoll(optarg);
        else
            return fprintf(stderr, "usage: redlock -u URL -u URL -u URL "
                                   "[-k KEY] [-t TTL_MS]\n"),
                   2;
    }
    if ((err = redislock_client_new_redlock(&c, urls, n, NULL)) != 0)
        return fail("servers", err);
    if ((err = redislock_lock_new(c, key, strlen(key), &l)) != 0) {
        redislock_client_free(c);
        return fail("lock", err);
    }
    o.watchdog = 1; /* renewed on a majority while the job runs */
    err = redislock_acquire(l, &o);
    printf("acquire %s: %s\n", key, redislock_errname(err));
    show_outcomes(l, urls);
    if (err != REDISLOCK_OK) {
        rc = fail("acquire", err);
    } else {
        printf("fencing token %" PRId64 "\n", redislock_fence(l));
        rc = job(l);
        if ((err = redislock_release(l)) != REDISLOCK_OK && rc == 0)
            rc = fail("release", err);
        else
            printf("released\n");
    }
    redislock_lock_free(l);
    redislock_client_free(c);
    return rc;
}
