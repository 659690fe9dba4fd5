/*
 * Fencing tokens: they only grow, across owners, releases, expiries,
 * re-entries, hand-offs and a server that lost everything; a fenced
 * resource refuses stale writers; and the end-to-end case that motivates
 * them: a holder stopped past its lease loses an update unless the
 * resource checks the token.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/server.h"
#include "harness/util.h"
#include "script.h"
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

/* A held plain lock is one key: the locks of a namespace (the key up to
 * its last ':') share one fencing counter, which orders all their tokens,
 * and outlives them by a second at most. */
void test_fence_one_key_per_held_lock(void)
{
    th_server *s = th_server_start(NULL);
    redislock_client *c = th_client(s);
    redisContext *r = th_server_redis(s);
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l[41];
    int64_t last = 0;
    char key[32];
    int i;

    for (i = 0; i < 41; i++) {
        snprintf(key, sizeof key, i < 40 ? "fo:%d" : "fp:%d", i);
        l[i] = th_lock(c, key);
        ASSERT_OK(redislock_acquire(l[i], &o));
        ASSERT_GT(redislock_fence(l[i]), last);
        last = redislock_fence(l[i]);
        if (i == 39) {
            /* 40 locks and their namespace's counter. */
            ASSERT_EQ_INT(th_cmd_int(r, "DBSIZE"), 41);
            ASSERT_EQ_INT(th_fence_counter(r, "fo:0"), last);
        }
    }
    /* Another namespace, another counter. */
    ASSERT_EQ_INT(th_cmd_int(r, "DBSIZE"), 43);
    ASSERT_EQ_INT(th_fence_counter(r, "fp:40"), last);
    ASSERT_LT(th_fence_counter(r, "fo:0"), last);
    for (i = 0; i < 41; i++) {
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    ASSERT_EQ_INT(th_cmd_int(r, "DBSIZE"), 2);
    ASSERT_LE(th_fence_counter_pttl(r, "fo:0"), 5000 + 1000);
    ASSERT_LE(th_fence_counter_pttl(r, "fp:40"), 5000 + 1000);
    redisFree(r);
    redislock_client_free(c);
    th_server_stop(s);
}

/* A server whose wall clock steps back a minute after a token was given
 * leaves the namespace's counter a minute ahead of the clock: tokens
 * still grow while the counter lives (the longest lease given since its
 * last acquisition, plus a second), and only the clock is left once it
 * has gone, as redislock_fence(3) says. The step is made by moving the
 * counter a minute ahead, which is what a step leaves behind: Debian's
 * redis-server does not start under libfaketime (its allocator reads the
 * clock before libfaketime is ready). */
void test_fence_counter_covers_clock_step(void)
{
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    th_server *s = th_server_start(NULL);
    redislock_client *c = th_client(s);
    redisContext *r = th_server_redis(s);
    redislock_lock *a = th_lock(c, "fc:a"), *b = th_lock(c, "fc:b");
    redislock_lock *z = th_lock(c, "fc:z");
    redisReply *rep;
    int64_t f, ahead;

    ASSERT_OK(redislock_acquire(a, &o));
    f = redislock_fence(a);
    ASSERT_OK(redislock_release(a));
    ahead = f + 60LL * 1000000;
    rep = th_cmd(r, "SET fc:%s %lld KEEPTTL", "redislock:rl-fence",
                 (long long)ahead);
    ASSERT_EQ_INT(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    /* The counter has the lead: another lock of the namespace, then the
     * same key again. */
    ASSERT_OK(redislock_acquire(b, &o));
    test_log("before the step %lld, after it %lld", (long long)f,
             (long long)redislock_fence(b));
    ASSERT_GT(redislock_fence(b), ahead);
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_GT(redislock_fence(a), redislock_fence(b));
    f = redislock_fence(a);
    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_release(b));
    /* Without it (gone, as a minute idle would see to), the clock, a
     * minute behind: the step the counter covered was real. */
    freeReplyObject(th_cmd(r, "DEL fc:%s", "redislock:rl-fence"));
    ASSERT_OK(redislock_acquire(z, &o));
    ASSERT_LT(redislock_fence(z), f - 30LL * 1000000);
    ASSERT_OK(redislock_release(z));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(z);
    redisFree(r);
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

/* The fenced-set script compares tokens as Lua numbers, doubles, exact
 * only below 2^53. A token from 2^53 up is refused before anything is
 * sent: written, it left a token key every later write refused
 * (RLBADCOUNTER) until someone deleted it. 2^53 - 1 is the largest
 * accepted, and can be written again. */
void test_fence_fenced_set_refuses_past_2_53(void)
{
    static const int64_t big[] = {INT64_C(9007199254740992),
                                  INT64_C(9007199254740993), INT64_MAX};
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client(s);
    int64_t before = th_script_runs(r), top;
    redisReply *rep;
    char *v;
    size_t i;

    ASSERT_OK(redislock_fenced_set(c, "fe:big", 6, "one", 3, 10));
    for (i = 0; i < sizeof big / sizeof big[0]; i++) {
        ASSERT_ERR(redislock_fenced_set(c, "fe:big", 6, "x", 1, big[i]),
                   REDISLOCK_EINVAL);
        ASSERT(strstr(redislock_errdetail(), "2^53") != NULL);
    }
    test_log("%s", redislock_errdetail());
    /* Nothing sent: one script ran, the first write. */
    ASSERT_EQ_INT(th_script_runs(r) - before, 1);
    v = th_cmd_str(r, NULL, "GET fe:big");
    ASSERT_EQ_STR(v, "one");
    free(v);
    ASSERT_OK(redislock_fenced_set(c, "fe:big", 6, "two", 3, 11));
    top = INT64_C(9007199254740991);
    ASSERT_OK(redislock_fenced_set(c, "fe:big", 6, "top", 3, top));
    ASSERT_OK(redislock_fenced_set(c, "fe:big", 6, "top", 3, top));
    ASSERT_ERR(redislock_fenced_set(c, "fe:big", 6, "old", 3, 11),
               REDISLOCK_ESTALE);
    /* The script refuses such a token too, writing nothing. */
    rep = redisCommand(r, "EVAL %s 2 fe:big2 fe:big2:h x 9007199254740992",
                       rl__script_fenced_set.source);
    ASSERT(rep != NULL);
    ASSERT_EQ_INT(rep->type, REDIS_REPLY_ERROR);
    ASSERT(strncmp(rep->str, "RLBADTOKEN", 10) == 0);
    freeReplyObject(rep);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS fe:big2 fe:big2:h"), 0);
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
                                               strlen(val), redislock_fence(l));
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
        ASSERT_OK(redislock_fenced_set(c, "fe:counter", 10, val, strlen(val),
                                       redislock_fence(l)));
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

/* Asserts that err is REDISLOCK_ESERVER with a detail that names key and
 * says to delete it. */
static void assert_bad_counter(redislock_err err, const char *key)
{
    const char *d = redislock_errdetail();

    ASSERT_ERR(err, REDISLOCK_ESERVER);
    if (strstr(d, key) == NULL || strstr(d, "delete that key") == NULL)
        test_fail_(__FILE__, __LINE__,
                   "detail names neither %s nor the "
                   "fix: %s",
                   key, d);
}

/* A counter key that holds what redislock did not write (a fencing
 * counter, the fair queue's sequence, a fenced resource's token key):
 * acquire, a fair attempt, inspect and a fenced write stop with an error
 * that names the key and the fix, take nothing, and work again once the
 * key is deleted, with tokens still above the last one issued. */
void test_fence_bad_counter_named(void)
{
    static const char *const bad[] = {"garbage", "-5", "1.5", "1e300", ""};
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client(s);
    redislock_lock *l = th_lock(c, "fe:bad");
    redislock_acquire_options o = th_aopts(5000, 0, 0), fo = o;
    redislock_info info;
    int64_t first, deadline;
    th_waiter w;
    size_t i;

    fo.fair = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    first = redislock_fence(l);
    ASSERT_OK(redislock_release(l));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        freeReplyObject(
            th_cmd(r, "SET %s %s", "fe:" TH_FENCE_COUNTER, bad[i]));
        assert_bad_counter(redislock_acquire(l, &o), "fe:" TH_FENCE_COUNTER);
        if (i == 0)
            test_log("acquire: %s", redislock_errdetail());
        assert_bad_counter(redislock_acquire(l, &fo),
                           "fe:" TH_FENCE_COUNTER);
        /* Reading a lock never needs the counter. */
        ASSERT_OK(redislock_inspect(l, &info));
        ASSERT_EQ_INT(th_cmd_int(r, "EXISTS fe:bad"), 0);
    }
    freeReplyObject(th_cmd(r, "DEL %s", "fe:" TH_FENCE_COUNTER));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_GT(redislock_fence(l), first);
    ASSERT_OK(redislock_release(l));

    /* A release with a fair waiter queued: it releases, hands nothing
     * over, and the waiter's next attempt meets the error. */
    fo.wait_ms = 10000;
    ASSERT_OK(redislock_acquire(l, &fo));
    th_waiter_start(&w, c, "fe:bad", &fo);
    deadline = th_now_ms() + 5000;
    while (th_cmd_int(r, "ZCARD %s", "fe:bad{fe:bad}:rl-q") == 0 &&
           th_now_ms() < deadline)
        th_sleep_ms(2);
    freeReplyObject(
        th_cmd(r, "SET %s %s", "fe:" TH_FENCE_COUNTER, "garbage"));
    ASSERT_OK(redislock_release(l));
    th_join_within(w.t, 5000);
    ASSERT_ERR(w.err, REDISLOCK_ESERVER);
    if (strstr(w.detail, "fe:" TH_FENCE_COUNTER) == NULL)
        test_fail_(__FILE__, __LINE__, "waiter's detail: %s", w.detail);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS fe:bad"), 0);
    redislock_lock_free(w.l);

    freeReplyObject(th_cmd(r, "SET %s %s", "fe:res{fe:res}:rl-fenced", "x"));
    assert_bad_counter(redislock_fenced_set(c, "fe:res", 6, "v", 1, 10),
                       "fe:res{fe:res}:rl-fenced");
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS fe:res"), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}
