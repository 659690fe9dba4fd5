/*
 * Fencing tokens: they only grow, across owners, releases, expiries,
 * re-entries, hand-offs and a server that lost everything; a fenced
 * resource refuses stale writers; and the end-to-end case that motivates
 * them: a holder stopped past its lease loses an update unless the
 * resource checks the token.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define ROUNDS 20

void test_fence_grows_across_owners(void)
{
    th_server *s = th_server_start(NULL);
    redislock_client *c = th_client(s);
    redislock_lock *a = th_lock(c, "fe:k"), *b = th_lock(c, "fe:k");
    redislock_acquire_options o = th_aopts(200, REDISLOCK_WAIT_FOREVER, 0);
    int64_t last = 0, f;
    int i;

    for (i = 0; i < 30; i++) {
        redislock_lock *l = i % 2 ? a : b;
        ASSERT_OK(redislock_acquire(l, &o));
        f = redislock_fence(l);
        ASSERT_GT(f, last);
        last = f;
        ASSERT_OK(redislock_release(l));
    }
    /* Expiry: the next token is still larger. */
    ASSERT_OK(redislock_acquire(a, &o));
    last = redislock_fence(a);
    th_sleep_ms(300);
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_GT(redislock_fence(b), last);
    ASSERT_EQ_INT(redislock_fence(a), last);
    ASSERT_ERR(redislock_release(a), REDISLOCK_ELOST);
    ASSERT_EQ_INT(redislock_fence(a), 0);
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_client_free(c);
    th_server_stop(s);
}

void test_fence_reentry_and_restart(void)
{
    th_server *s = th_server_start(NULL);
    redislock_client *c = th_client(s);
    redislock_lock *l = th_lock(c, "fe:r");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    int64_t f1, f2;

    o.reentrant = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    f1 = redislock_fence(l);
    ASSERT_OK(redislock_acquire(l, &o));
    f2 = redislock_fence(l);
    ASSERT_GT(f2, f1);
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_server_stop(s);

    /* A new server without the old one's data: tokens still grow, from
     * the clock. */
    s = th_server_start(NULL);
    c = th_client(s);
    l = th_lock(c, "fe:r");
    ASSERT_OK(redislock_acquire(l, &o));
    test_log("fence before the restart %lld, after %lld", (long long)f2,
             (long long)redislock_fence(l));
    ASSERT_GT(redislock_fence(l), f2);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_server_stop(s);
}

void test_fence_fenced_set(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client(s);
    char *v;

    ASSERT_OK(redislock_fenced_set(c, "fe:res", 6, "one", 3, 10));
    ASSERT_OK(redislock_fenced_set(c, "fe:res", 6, "two", 3, 10));
    ASSERT_ERR(redislock_fenced_set(c, "fe:res", 6, "old", 3, 9),
               REDISLOCK_ESTALE);
    v = th_cmd_str(r, NULL, "GET fe:res");
    ASSERT_EQ_STR(v, "two");
    free(v);
    ASSERT_OK(redislock_fenced_set(c, "fe:res", 6, "three", 5, 11));
    ASSERT_ERR(redislock_fenced_set(c, "fe:res", 6, "x", 1, 0),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_fenced_set(c, "fe:res", 0, "x", 1, 12),
               REDISLOCK_EINVAL);
    v = th_cmd_str(r, NULL, "GET fe:res");
    ASSERT_EQ_STR(v, "three");
    free(v);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/*
 * One round of the paused holder: a child takes the lock (TTL 200 ms),
 * reads the counter and stops itself; the parent takes the lock after the
 * lease ran out, increments, releases, and lets the child go on, which
 * writes its stale increment, fenced or not. The child's exit status:
 * 0 its write was accepted, 1 refused as stale, 2 something else; +10
 * when redislock_check did not report the loss on resume.
 */
static int child_round(const char *url, int fenced)
{
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(200, REDISLOCK_WAIT_FOREVER, 0);
    redisContext *r;
    redisReply *rep;
    char val[32];
    long long n;
    int rc, lost_seen;

    if (redislock_client_new(&c, url, NULL) != REDISLOCK_OK ||
        redislock_lock_new(c, "fe:lock", 7, &l) != REDISLOCK_OK ||
        redislock_acquire(l, &o) != REDISLOCK_OK)
        return 2;
    r = redisConnectUnix(url + strlen("unix://"));
    rep = r ? redisCommand(r, "GET fe:counter") : NULL;
    if (rep == NULL)
        return 2;
    n = rep->type == REDIS_REPLY_STRING ? atoll(rep->str) : 0;
    freeReplyObject(rep);
    raise(SIGSTOP); /* the pause: longer than the lease */
    lost_seen = redislock_check(l) != REDISLOCK_OK;
    snprintf(val, sizeof val, "%lld", n + 1);
    if (fenced) {
        redislock_err e = redislock_fenced_set(c, "fe:counter", 10, val,
                                               strlen(val),
                                               redislock_fence(l));
        rc = e == REDISLOCK_OK ? 0 : e == REDISLOCK_ESTALE ? 1 : 2;
    } else {
        rep = redisCommand(r, "SET fe:counter %s", val);
        rc = rep != NULL ? 0 : 2;
        freeReplyObject(rep);
    }
    redisFree(r);
    return rc + (lost_seen ? 0 : 10);
}

/* The parent's part of a round: the next holder. */
static void next_holder(redislock_client *c, redisContext *r, int fenced)
{
    redislock_lock *l = th_lock(c, "fe:lock");
    redislock_acquire_options o = th_aopts(5000, REDISLOCK_WAIT_FOREVER, 0);
    char val[32];
    long long n;
    char *v;

    ASSERT_OK(redislock_acquire(l, &o));
    v = th_cmd_str(r, NULL, "GET fe:counter");
    n = v ? atoll(v) : 0;
    free(v);
    snprintf(val, sizeof val, "%lld", n + 1);
    if (fenced)
        ASSERT_OK(redislock_fenced_set(c, "fe:counter", 10, val,
                                       strlen(val), redislock_fence(l)));
    else
        freeReplyObject(th_cmd(r, "SET fe:counter %s", val));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
}

/* Runs ROUNDS rounds; returns how many stale writes were accepted. */
static int paused_holder_rounds(int fenced)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client(s);
    int i, st, stale = 0;
    long long want = 0;
    char *v;

    for (i = 0; i < ROUNDS; i++) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0)
            _exit(child_round(s->unix_url, fenced));
        ASSERT_EQ_INT(waitpid(pid, &st, WUNTRACED), pid);
        ASSERT(WIFSTOPPED(st));
        next_holder(c, r, fenced);
        want += 2;
        ASSERT_EQ_INT(kill(pid, SIGCONT), 0);
        ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
        ASSERT(WIFEXITED(st));
        /* On resume the stopped holder always knew it had lost. */
        ASSERT_LT(WEXITSTATUS(st), 10);
        ASSERT_NE_INT(WEXITSTATUS(st), 2);
        stale += WEXITSTATUS(st) == 0;
    }
    v = th_cmd_str(r, NULL, "GET fe:counter");
    test_log("%s: %d rounds, %d stale writes accepted, counter %s of %lld",
             fenced ? "fenced" : "unfenced", ROUNDS, stale, v, want);
    if (fenced)
        ASSERT_EQ_INT(atoll(v), want / 2);
    else
        ASSERT_LT(atoll(v), want);
    free(v);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
    return stale;
}

void test_fence_paused_holder_unfenced_loses_updates(void)
{
    /* Proves the checker: every paused holder's stale write lands. */
    ASSERT_EQ_INT(paused_holder_rounds(0), ROUNDS);
}

void test_fence_paused_holder_fenced_refused(void)
{
    ASSERT_EQ_INT(paused_holder_rounds(1), 0);
}
