/*
 * concurrency: the point of a lock. Workers do a deliberately non-atomic
 * read-modify-write (GET, then SET n+1) of a counter under the lock; any
 * overlap of two critical sections loses an increment, so the final count
 * is exact only if mutual exclusion held every single time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "test.h"

#define NPROCS 8
#define NTHREADS 4
#define NINCR 500
#define COUNTER "cc:counter"
#define LOCKKEY "cc:lock"

/*
 * NINCR locked increments on a private hiredis connection. Returns NULL,
 * or what went wrong (a static string; the caller prints it).
 */
static const char *increment(redislock_lock *l, redisContext *r)
{
    /* Wait forever; a short delay keeps the run quick under contention. */
    redislock_acquire_options o = th_aopts(10000, REDISLOCK_WAIT_FOREVER, 5);
    redisReply *rep;
    long long n;
    int i;

    for (i = 0; i < NINCR; i++) {
        if (redislock_acquire(l, &o) != REDISLOCK_OK)
            return "acquire failed";
        rep = redisCommand(r, "GET " COUNTER);
        if (rep == NULL || (rep->type != REDIS_REPLY_NIL &&
                            rep->type != REDIS_REPLY_STRING))
            return "GET failed";
        n = rep->type == REDIS_REPLY_NIL ? 0 : strtoll(rep->str, NULL, 10);
        freeReplyObject(rep);
        rep = redisCommand(r, "SET " COUNTER " %lld", n + 1);
        if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
            return "SET failed";
        freeReplyObject(rep);
        /* ELOST here would mean the lease ran out mid-section. */
        if (redislock_release(l) != REDISLOCK_OK)
            return "release failed";
    }
    return NULL;
}

/* The counter's value; 0 when it was never set. */
static long long counter(redisContext *r)
{
    char *v = th_cmd_str(r, NULL, "GET " COUNTER);
    long long n = v ? strtoll(v, NULL, 10) : 0;

    free(v);
    return n;
}

/* A forked worker: its own client, handle and connection. */
static int process_worker(const th_server *s)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redisContext *r = redisConnectUnix(s->sock);
    const char *err = "cannot connect";

    if (r != NULL && !r->err &&
        redislock_client_new(&c, s->unix_url, NULL) == REDISLOCK_OK &&
        redislock_lock_new(c, LOCKKEY, strlen(LOCKKEY), &l) == REDISLOCK_OK)
        err = increment(l, r);
    if (err != NULL)
        fprintf(stderr, "worker %d: %s: %s\n", (int)getpid(), err,
                redislock_errdetail());
    redislock_lock_free(l);
    redislock_client_free(c);
    if (r != NULL)
        redisFree(r);
    return err == NULL ? 0 : 1;
}

void test_concurrency_counter_processes(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    pid_t pids[NPROCS];
    int i, st;

    fflush(NULL);
    for (i = 0; i < NPROCS; i++) {
        pids[i] = fork();
        ASSERT(pids[i] >= 0);
        /* _exit: the worker owns nothing the parent's atexit cleans. */
        if (pids[i] == 0)
            _exit(process_worker(s));
    }
    for (i = 0; i < NPROCS; i++) {
        while (waitpid(pids[i], &st, 0) < 0)
            ASSERT_EQ_INT(errno, EINTR);
        ASSERT(WIFEXITED(st));
        ASSERT_EQ_INT(WEXITSTATUS(st), 0);
    }
    ASSERT_EQ_INT(counter(r), NPROCS * NINCR);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS " LOCKKEY), 0);
    redisFree(r);
    th_server_stop(s);
}

typedef struct worker {
    pthread_t thread;
    redislock_client *c; /* Shared by all threads. */
    const th_server *s;
    const char *err;
    char detail[256];
} worker;

static void *thread_worker(void *arg)
{
    worker *w = arg;
    redisContext *r = redisConnectUnix(w->s->sock);
    redislock_lock *l = NULL;

    w->err = "cannot connect";
    if (r != NULL && !r->err &&
        redislock_lock_new(w->c, LOCKKEY, strlen(LOCKKEY), &l) ==
            REDISLOCK_OK)
        w->err = increment(l, r);
    /* The detail is per thread: read it here, not in the main thread. */
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    redislock_lock_free(l);
    if (r != NULL)
        redisFree(r);
    return NULL;
}

void test_concurrency_counter_threads(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    worker w[NTHREADS];
    redislock_client *c = th_client(s);
    int i;

    memset(w, 0, sizeof w);
    for (i = 0; i < NTHREADS; i++) {
        w[i].c = c;
        w[i].s = s;
        ASSERT_EQ_INT(pthread_create(&w[i].thread, NULL, thread_worker, &w[i]),
                      0);
    }
    for (i = 0; i < NTHREADS; i++)
        ASSERT_EQ_INT(pthread_join(w[i].thread, NULL), 0);
    for (i = 0; i < NTHREADS; i++)
        if (w[i].err != NULL)
            test_fail_(__FILE__, __LINE__, "thread %d: %s: %s", i, w[i].err,
                       w[i].detail);
    ASSERT_EQ_INT(counter(r), NTHREADS * NINCR);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS " LOCKKEY), 0);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}
