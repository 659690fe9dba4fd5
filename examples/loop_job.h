/*
 * The job of the event-loop examples (loop_libevent.c, loop_libuv.c,
 * loop_libev.c), the same on every loop: take the lock, waiting up to
 * 5 s without blocking the loop; do the work; give the lock back. All of
 * it runs in callbacks; once the lock is given back the library has
 * nothing left to do on the loop, which then ends by itself.
 *
 * Exit status of the examples: 0 the job ran; 1 another owner held the
 * lock for the whole wait; 2 any other error.
 */
#ifndef LOOP_JOB_H
#define LOOP_JOB_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <redislock.h>

typedef struct job {
    redislock_loop *lp;
    int status; /* the exit status, once the callbacks have run */
} job;

static void job_released(redislock_lock *l, redislock_err err, void *arg)
{
    job *j = (job *)arg;

    (void)l;
    printf("released: %s\n", redislock_errname(err));
    j->status = err == REDISLOCK_OK ? 0 : 2;
}

static void job_taken(redislock_lock *l, redislock_err err, void *arg)
{
    job *j = (job *)arg;

    if (err != REDISLOCK_OK) {
        fprintf(stderr, "acquire: %s (%s)\n", redislock_strerror(err),
                redislock_errdetail());
        j->status = err == REDISLOCK_EHELD ? 1 : 2;
        return;
    }
    /* The critical section: a store that takes fencing tokens would be
     * given this one with each write. */
    printf("acquired, fencing token %" PRId64 "\n", redislock_fence(l));
    if ((err = redislock_loop_release(j->lp, l, 0, job_released, j)) !=
        REDISLOCK_OK) {
        fprintf(stderr, "release: %s\n", redislock_errdetail());
        j->status = 2;
    }
}

/* Starts the job on lp; 0, or 2 when it could not start. */
static int job_start(job *j, redislock_loop *lp, redislock_lock *l)
{
    redislock_acquire_options o = {0};

    j->lp = lp;
    j->status = 2;
    o.ttl_ms = 10000;
    o.wait_ms = 5000;
    if (redislock_loop_acquire(lp, l, &o, job_taken, j) != REDISLOCK_OK) {
        fprintf(stderr, "acquire: %s\n", redislock_errdetail());
        return 2;
    }
    return 0;
}

/* The client and the lock of the examples: URL and key from argv (URL
 * else $REDISLOCK_URL, else redis://127.0.0.1:6379; key else
 * "example:loop"). 0, or 2 with the reason printed. */
static int job_open(int argc, char **argv, redislock_client **c,
                    redislock_lock **l)
{
    const char *url = argc > 1 ? argv[1] : getenv("REDISLOCK_URL");
    const char *key = argc > 2 ? argv[2] : "example:loop";
    size_t n = 0;

    if (url == NULL)
        url = "redis://127.0.0.1:6379";
    while (key[n] != '\0')
        n++;
    if (redislock_client_new(c, url, NULL) != REDISLOCK_OK ||
        redislock_lock_new(*c, key, n, l) != REDISLOCK_OK) {
        fprintf(stderr, "%s: %s\n", url, redislock_errdetail());
        redislock_client_free(*c);
        return 2;
    }
    return 0;
}

#endif
