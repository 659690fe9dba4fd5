/*
 * acl: the minimal ACL of docs/ACL.md. A user with exactly those rules
 * runs every feature (plain, contended, woken and fair waits, reentrant
 * locks with metadata, hold-after, the watchdog, inspect, list, ttl,
 * fenced writes, cancel); a key outside its pattern is refused; taking
 * away any one of its commands makes some feature fail, so none is
 * superfluous. Also: no password ever shows up in an error's detail.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* The commands of docs/ACL.md's rule, in its order. */
static const char *const acl_cmds[] = {"ping",
                                       "evalsha",
                                       "eval",
                                       "blpop",
                                       "subscribe",
                                       "publish",
                                       "scan",
                                       "get",
                                       "mget",
                                       "strlen",
                                       "set",
                                       "del",
                                       "exists",
                                       "type",
                                       "time",
                                       "pexpire",
                                       "pttl",
                                       "hset",
                                       "hget",
                                       "hdel",
                                       "hmget",
                                       "hincrby",
                                       "lpush",
                                       "llen",
                                       "zadd",
                                       "zrem",
                                       "zrange",
                                       "zscore",
                                       "zremrangebyscore",
                                       "zcard",
                                       "zcount",
                                       NULL};

#define ACL_HEAD                                                               \
    "ACL SETUSER locker on >pw resetkeys ~locks:* resetchannels &locks:* "     \
    "-@all"
/* How long a setup step (a waiter blocking, a key showing up) may take. */
#define SETUP_MS 3000
/* How soon a release or a cancel must reach a blocked waiter (the holder's
 * TTL is 10 s, its wait 3 to 5 s); generous for ASan on a busy box. */
#define REACH_MS 1500

/* The whole rule line, as docs/ACL.md shows it. */
static void acl_line(char *buf, size_t size)
{
    size_t i, n = (size_t)snprintf(buf, size, "%s", ACL_HEAD);

    for (i = 0; acl_cmds[i] != NULL && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, " +%s", acl_cmds[i]);
    ASSERT(n < size);
}

/* Runs a command line split at spaces (the rule has no quoted parts). */
static void run_line(redisContext *r, const char *line)
{
    char copy[1024], *argv[64], *save = NULL, *tok;
    int argc = 0;
    redisReply *rep;

    snprintf(copy, sizeof copy, "%s", line);
    for (tok = strtok_r(copy, " ", &save); tok != NULL && argc < 64;
         tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    rep = redisCommandArgv(r, argc, (const char **)argv, NULL);
    ASSERT(rep != NULL);
    if (rep->type == REDIS_REPLY_ERROR)
        test_fail_(__FILE__, __LINE__, "%s: %s", line, rep->str);
    freeReplyObject(rep);
}

/* Creates the user locker with exactly the documented rules. */
static void make_user(redisContext *r)
{
    char line[1024];

    acl_line(line, sizeof line);
    run_line(r, line);
}

static void user_url(const th_server *s, char *buf, size_t size)
{
    snprintf(buf, size, "redis://locker:pw@127.0.0.1:%d", s->port);
}

/* One run of every feature. Strict runs fail the test at the first
 * surprise; probing runs record it in why and return -1. */
typedef struct lc {
    th_server *s;
    redisContext *r; /* the default user, for checks and clean-up */
    redislock_client *c;
    int probe;
    char why[512];
    redislock_lock *locks[32];
    int nlocks;
} lc;

typedef struct waiter {
    redislock_lock *l;
    redislock_acquire_options o;
    redislock_err err;
    char detail[256];
    int64_t done_ms;
    atomic_int done;
    int started;
    pthread_t th;
} waiter;

static int lc_fail(lc *t, int line, const char *fmt, ...) TEST_PRINTF_(3, 4);

static int lc_fail(lc *t, int line, const char *fmt, ...)
{
    va_list ap;
    int n;

    n = snprintf(t->why, sizeof t->why, "line %d: ", line);
    va_start(ap, fmt);
    vsnprintf(t->why + n, sizeof t->why - (size_t)n, fmt, ap);
    va_end(ap);
    if (!t->probe)
        test_fail_(__FILE__, line, "%s", t->why);
    return -1;
}

/* 0 when got is want; else a failure naming the call and the detail,
 * which is read here, before any other library call. */
static int lc_err(lc *t, int line, const char *what, redislock_err got,
                  redislock_err want)
{
    if (got == want)
        return 0;
    return lc_fail(t, line, "%s returned %s, want %s (%s)", what,
                   redislock_errname(got), redislock_errname(want),
                   redislock_errdetail());
}

#define LC_ERR(t, expr, want) lc_err(t, __LINE__, #expr, (expr), want)
#define LC_OK(t, expr) LC_ERR(t, expr, REDISLOCK_OK)
#define LC_TRUE(t, cond)                                                       \
    ((cond) ? 0 : lc_fail(t, __LINE__, "%s is false", #cond))

static redislock_lock *lc_lock(lc *t, const char *key)
{
    redislock_lock *l = th_lock(t->c, key);

    ASSERT(t->nlocks < 32);
    t->locks[t->nlocks++] = l;
    return l;
}

static void *waiter_main(void *arg)
{
    waiter *w = arg;

    w->err = redislock_acquire(w->l, &w->o);
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    w->done_ms = th_now_ms();
    atomic_store(&w->done, 1);
    return NULL;
}

static void waiter_start(waiter *w, redislock_lock *l,
                         const redislock_acquire_options *o)
{
    memset(w, 0, sizeof *w);
    w->l = l;
    w->o = *o;
    ASSERT_EQ_INT(pthread_create(&w->th, NULL, waiter_main, w), 0);
    w->started = 1;
}

/* Joins a waiter, giving it grace_ms to end by itself; one still blocked
 * after that (a failed step left it) is cancelled, and its connections are
 * killed if the cancel cannot reach it. */
static void waiter_join(lc *t, waiter *w, int64_t grace_ms)
{
    int64_t until = th_now_ms() + grace_ms;

    if (!w->started)
        return;
    while (!atomic_load(&w->done) && th_now_ms() < until)
        th_sleep_ms(2);
    if (!atomic_load(&w->done))
        redislock_cancel(w->l);
    until = th_now_ms() + 500;
    while (!atomic_load(&w->done) && th_now_ms() < until)
        th_sleep_ms(5);
    if (!atomic_load(&w->done))
        freeReplyObject(th_cmd_raw(t->r, "CLIENT KILL USER locker"));
    pthread_join(w->th, NULL);
    w->started = 0;
}

/* Clients blocked in BLPOP, and fair waiters listening on a channel. */
static long long blocked_clients(redisContext *r)
{
    redisReply *rep = th_cmd(r, "INFO clients");
    const char *p = strstr(rep->str, "blocked_clients:");
    long long n = p ? strtoll(p + 16, NULL, 10) : -1;

    freeReplyObject(rep);
    return n + th_listening(r, "*");
}

/* Waits until the waiter blocks on the server (or ends, or SETUP_MS). */
static int waiter_blocked(lc *t, waiter *w)
{
    int64_t until = th_now_ms() + SETUP_MS;

    while (th_now_ms() < until) {
        if (atomic_load(&w->done))
            return lc_fail(t, __LINE__, "the waiter returned %s (%s)",
                           redislock_errname(w->err), w->detail);
        if (blocked_clients(t->r) >= 1)
            return 0;
        th_sleep_ms(5);
    }
    return lc_fail(t, __LINE__, "the waiter did not block");
}

/* Joins w, which must have got the lock within REACH_MS of since_ms. */
static int waiter_got(lc *t, waiter *w, int64_t since_ms, redislock_err want)
{
    waiter_join(t, w, since_ms + REACH_MS - th_now_ms());
    if (w->err != want)
        return lc_fail(t, __LINE__, "the waiter returned %s, want %s (%s)",
                       redislock_errname(w->err), redislock_errname(want),
                       w->detail);
    if (w->done_ms - since_ms > REACH_MS)
        return lc_fail(t, __LINE__, "the waiter took %lld ms",
                       (long long)(w->done_ms - since_ms));
    return 0;
}

static int key_is(lc *t, const char *key, const char *want)
{
    char *v = th_cmd_str(t->r, NULL, "GET %s", key);
    int same = v != NULL && want != NULL ? strcmp(v, want) == 0 : v == want;

    free(v);
    return same ? 0 : lc_fail(t, __LINE__, "%s does not hold %s", key, want);
}

/* Plain locks: acquire, contend, extend, ttl, inspect, release. */
static int step_plain(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:a"), *b = lc_lock(t, "locks:a");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_info info;
    int64_t ttl = 0;

    if (LC_OK(t, redislock_acquire(a, &o)) ||
        LC_ERR(t, redislock_acquire(b, &o), REDISLOCK_EHELD) ||
        LC_OK(t, redislock_extend(a, 10000)) ||
        LC_OK(t, redislock_ttl(a, &ttl)) ||
        LC_TRUE(t, ttl > 5000 && ttl <= 10000) ||
        LC_OK(t, redislock_inspect(a, &info)) ||
        LC_TRUE(t, info.held && !info.reserved && info.holds == 1) ||
        LC_OK(t, redislock_release(a)))
        return -1;
    return LC_TRUE(t, th_cmd_int(t->r, "EXISTS locks:a") == 0);
}

/* A semaphore of 2: two permits, a third refused, read by anyone. */
static int step_semaphore(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:s"), *b = lc_lock(t, "locks:s"),
                   *c = lc_lock(t, "locks:s");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_info info;

    o.limit = 2;
    if (LC_OK(t, redislock_acquire(a, &o)) ||
        LC_OK(t, redislock_acquire(b, &o)) ||
        LC_ERR(t, redislock_acquire(c, &o), REDISLOCK_EHELD) ||
        LC_OK(t, redislock_inspect(c, &info)) ||
        LC_TRUE(t, info.reserved == REDISLOCK_KIND_SEMAPHORE &&
                       info.holds == 2 && info.limit == 2) ||
        LC_OK(t, redislock_extend(a, 10000)) ||
        LC_OK(t, redislock_release(a)) || LC_OK(t, redislock_release(b)))
        return -1;
    return LC_TRUE(t, th_cmd_int(t->r, "EXISTS locks:s") == 0);
}

/* A waiter blocks on the server until the release wakes it. */
static int step_wake(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:w"), *b = lc_lock(t, "locks:w");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_acquire_options wo = th_aopts(10000, 3000, 0);
    waiter w;
    int64_t t0;
    int rc = -1;

    if (LC_OK(t, redislock_acquire(a, &o)))
        return -1;
    waiter_start(&w, b, &wo);
    if (waiter_blocked(t, &w) != 0)
        goto out;
    t0 = th_now_ms();
    if (LC_OK(t, redislock_release(a)) || waiter_got(t, &w, t0, REDISLOCK_OK) ||
        key_is(t, "locks:w", redislock_token(b)) ||
        LC_OK(t, redislock_release(b)))
        goto out;
    rc = 0;
out:
    waiter_join(t, &w, 0);
    return rc;
}

/* Fair mode: the release hands the lock straight to the queued waiter. */
static int step_fair(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:f"), *b = lc_lock(t, "locks:f");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_acquire_options wo = th_aopts(10000, 5000, 0);
    waiter w;
    int64_t t0, fence_a;
    int rc = -1;

    o.fair = wo.fair = 1;
    if (LC_OK(t, redislock_acquire(a, &o)))
        return -1;
    fence_a = redislock_fence(a);
    waiter_start(&w, b, &wo);
    if (waiter_blocked(t, &w) != 0 ||
        LC_TRUE(t, th_cmd_int(t->r, "ZCARD locks:f{locks:f}:rl-q") == 1))
        goto out;
    t0 = th_now_ms();
    if (LC_OK(t, redislock_release(a)) || waiter_got(t, &w, t0, REDISLOCK_OK) ||
        LC_TRUE(t, redislock_fence(b) > fence_a) ||
        key_is(t, "locks:f", redislock_token(b)) ||
        LC_OK(t, redislock_release(b)))
        goto out;
    rc = 0;
out:
    waiter_join(t, &w, 0);
    return rc;
}

/* A reentrant lock with metadata, then a fair reentrant one. */
static int step_reentrant(lc *t)
{
    redislock_lock *r = lc_lock(t, "locks:r"), *f = lc_lock(t, "locks:fr");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_info info;

    o.reentrant = 1;
    o.metadata = "job=42";
    if (LC_OK(t, redislock_acquire(r, &o)) ||
        LC_OK(t, redislock_acquire(r, &o)) ||
        LC_TRUE(t, redislock_holds(r) == 2) ||
        LC_OK(t, redislock_inspect(r, &info)) ||
        LC_TRUE(t, info.held && info.holds == 2 && info.owner != NULL) ||
        LC_TRUE(t, info.metadata != NULL &&
                       strcmp(info.metadata, "job=42") == 0) ||
        LC_OK(t, redislock_release(r)) || LC_OK(t, redislock_release(r)) ||
        LC_TRUE(t, th_cmd_int(t->r, "EXISTS locks:r") == 0))
        return -1;
    o.metadata = NULL;
    o.fair = 1;
    if (LC_OK(t, redislock_acquire(f, &o)) ||
        LC_OK(t, redislock_acquire(f, &o)) ||
        LC_TRUE(t, redislock_holds(f) == 2) || LC_OK(t, redislock_release(f)) ||
        LC_OK(t, redislock_release(f)))
        return -1;
    return LC_TRUE(t, th_cmd_int(t->r, "EXISTS locks:fr") == 0);
}

/* Hold-after: reserved after release, then free by itself. */
static int step_hold_after(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:h"), *b = lc_lock(t, "locks:h");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_info info;

    if (LC_OK(t, redislock_acquire(a, &o)) ||
        LC_OK(t, redislock_release_hold(a, 300)) ||
        LC_OK(t, redislock_inspect(a, &info)) ||
        LC_TRUE(t, info.held && info.reserved) ||
        LC_ERR(t, redislock_acquire(b, &o), REDISLOCK_EHELD) ||
        LC_TRUE(t, th_wait_key_gone(t->r, "locks:h", 7, SETUP_MS)) ||
        LC_OK(t, redislock_acquire(b, &o)) || LC_OK(t, redislock_release(b)))
        return -1;
    return 0;
}

/* The watchdog keeps a 1 s lease alive for 2 s: its renewals are
 * allowed. (A shorter lease would test a loaded machine's scheduling.) */
static int step_watchdog(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:dog");
    redislock_acquire_options o = th_aopts(1000, 0, 0);

    o.watchdog = 1;
    if (LC_OK(t, redislock_acquire(a, &o)))
        return -1;
    th_sleep_ms(2000);
    if (LC_OK(t, redislock_check(a)) ||
        key_is(t, "locks:dog", redislock_token(a)) ||
        LC_OK(t, redislock_release(a)))
        return -1;
    return 0;
}

static int count_lock(const redislock_info *info, void *arg)
{
    (void)info;
    ++*(int *)arg;
    return 0;
}

/* list finds the held locks under the pattern; fenced_set refuses an
 * older token. */
static int step_list_fence(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:l1"), *b = lc_lock(t, "locks:l2");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    int n = 0;
    int64_t f;

    if (LC_OK(t, redislock_acquire(a, &o)) ||
        LC_OK(t, redislock_acquire(b, &o)) ||
        LC_OK(t, redislock_list(t->c, "locks:l*", count_lock, &n)) ||
        LC_TRUE(t, n == 2))
        return -1;
    f = redislock_fence(b);
    if (LC_OK(t, redislock_fenced_set(t->c, "locks:res", 9, "new", 3, f)) ||
        LC_ERR(t, redislock_fenced_set(t->c, "locks:res", 9, "old", 3, f - 1),
               REDISLOCK_ESTALE) ||
        key_is(t, "locks:res", "new") || LC_OK(t, redislock_release(a)) ||
        LC_OK(t, redislock_release(b)))
        return -1;
    return 0;
}

/* A cancel reaches a waiter blocked on the server at once. */
static int step_cancel(lc *t)
{
    redislock_lock *a = lc_lock(t, "locks:c"), *b = lc_lock(t, "locks:c");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_acquire_options wo = th_aopts(10000, 5000, 0);
    waiter w;
    int64_t t0;
    int rc = -1;

    if (LC_OK(t, redislock_acquire(a, &o)))
        return -1;
    waiter_start(&w, b, &wo);
    if (waiter_blocked(t, &w) != 0)
        goto out;
    t0 = th_now_ms();
    redislock_cancel(b);
    if (waiter_got(t, &w, t0, REDISLOCK_ECANCELED) ||
        LC_OK(t, redislock_release(a)))
        goto out;
    rc = 0;
out:
    waiter_join(t, &w, 0);
    return rc;
}

/* Frees what a run made and empties the server, scripts included, so
 * that the next run has to load them (EVAL). */
static void lc_cleanup(lc *t)
{
    while (t->nlocks > 0)
        redislock_lock_free(t->locks[--t->nlocks]);
    redislock_client_free(t->c);
    t->c = NULL;
    freeReplyObject(th_cmd(t->r, "FLUSHALL"));
    freeReplyObject(th_cmd(t->r, "SCRIPT FLUSH"));
}

/* Every feature as locker; 0 when all worked. */
static int lifecycle(lc *t)
{
    static const redislock_options defaults;
    char url[128];
    int rc;

    t->why[0] = '\0';
    user_url(t->s, url, sizeof url);
    freeReplyObject(th_cmd(t->r, "SCRIPT FLUSH"));
    rc = LC_OK(t, redislock_client_new(&t->c, url, &defaults));
    if (rc == 0)
        rc = step_plain(t) || step_semaphore(t) || step_wake(t) ||
             step_fair(t) || step_reentrant(t) || step_hold_after(t) ||
             step_watchdog(t) || step_list_fence(t) || step_cancel(t);
    lc_cleanup(t);
    return rc ? -1 : 0;
}

static lc lc_setup(int probe)
{
    lc t;

    memset(&t, 0, sizeof t);
    unsetenv("REDISCLI_AUTH");
    t.s = th_server_start(NULL);
    t.r = th_server_redis(t.s);
    t.probe = probe;
    make_user(t.r);
    return t;
}

static void lc_teardown(lc *t)
{
    redisFree(t->r);
    th_server_stop(t->s);
}

/* docs/ACL.md shows the very rule this file tests. */
static void assert_doc_line(void)
{
    FILE *f = fopen(RL_SOURCE_DIR "/docs/ACL.md", "r");
    char want[1024], line[2048];
    int found = 0;

    ASSERT(f != NULL);
    acl_line(want, sizeof want);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "ACL SETUSER locker ", 19) == 0) {
            line[strcspn(line, "\n")] = '\0';
            ASSERT_EQ_STR(line, want);
            found = 1;
        }
    fclose(f);
    ASSERT(found);
}

void test_acl_minimal_lifecycle(void)
{
    lc t = lc_setup(0);

    assert_doc_line();
    ASSERT_EQ_INT(lifecycle(&t), 0);
    /* Once more, with the scripts loaded by the first run's EVAL gone. */
    ASSERT_EQ_INT(lifecycle(&t), 0);
    lc_teardown(&t);
}

void test_acl_each_command_needed(void)
{
    lc t = lc_setup(1);
    int i, failed = 0;

    /* The probing run itself must pass with every command allowed. */
    if (lifecycle(&t) != 0)
        test_fail_(__FILE__, __LINE__, "with the full rule: %s", t.why);
    for (i = 0; acl_cmds[i] != NULL; i++) {
        freeReplyObject(th_cmd(t.r, "ACL SETUSER locker -%s", acl_cmds[i]));
        if (lifecycle(&t) == 0) {
            test_log("without %s: everything still works", acl_cmds[i]);
            failed++;
        } else {
            test_log("without %s: %s", acl_cmds[i], t.why);
        }
        freeReplyObject(th_cmd(t.r, "ACL SETUSER locker +%s", acl_cmds[i]));
    }
    ASSERT_EQ_INT(failed, 0);
    ASSERT_EQ_INT(lifecycle(&t), 0);
    lc_teardown(&t);
}

/* A lock outside ~locks:* is refused before the script runs: NOPERM,
 * ENOPERM (not EAUTH: the password is right), and the detail points at
 * redislock(3)'s ACL section. */
void test_acl_key_outside_pattern_enoperm(void)
{
    lc t = lc_setup(0);
    redislock_lock *l;
    redislock_err e;
    char url[128];
    int64_t ttl;
    int n = 0;

    user_url(t.s, url, sizeof url);
    t.c = th_client_url(url, NULL);
    l = th_lock(t.c, "other:k");
    e = redislock_acquire(l, NULL);
    test_log("acquire of other:k: %s: %s", redislock_errname(e),
             redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "NOPERM") != NULL);
    ASSERT(strstr(redislock_errdetail(), "redislock(3)") != NULL);
    ASSERT_EQ_INT(th_cmd_int(t.r, "EXISTS other:k"), 0);
    ASSERT_ERR(e, REDISLOCK_ENOPERM);
    ASSERT_ERR(redislock_ttl(l, &ttl), REDISLOCK_ENOPERM);
    ASSERT_ERR(redislock_fenced_set(t.c, "other:r", 7, "v", 1, 1),
               REDISLOCK_ENOPERM);
    ASSERT_EQ_INT(th_cmd_int(t.r, "EXISTS other:r"), 0);
    /* SCAN shows every key's name, whatever the pattern: listing them all
     * reaches one outside it (docs/ACL.md); a pattern inside it works. */
    freeReplyObject(th_cmd(t.r, "SET other:x 1"));
    ASSERT_ERR(redislock_list(t.c, NULL, count_lock, &n), REDISLOCK_ENOPERM);
    n = 0;
    ASSERT_OK(redislock_list(t.c, "locks:*", count_lock, &n));
    ASSERT_EQ_INT(n, 0);
    redislock_lock_free(l);
    redislock_client_free(t.c);
    lc_teardown(&t);
}

/* SELECT is needed only for a database other than 0. */
void test_acl_select_nonzero_db(void)
{
    lc t = lc_setup(0);
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_err e;
    char url[128];

    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d/1", t.s->port);
    e = redislock_client_new(&c, url, NULL);
    test_log("database 1 without +select: %s: %s", redislock_errname(e),
             redislock_errdetail());
    ASSERT(e != REDISLOCK_OK && c == NULL);
    ASSERT(strstr(redislock_errdetail(), "select") != NULL);
    freeReplyObject(th_cmd(t.r, "ACL SETUSER locker +select"));
    c = th_client_url(url, NULL);
    l = th_lock(c, "locks:db1");
    ASSERT_OK(redislock_acquire(l, NULL));
    freeReplyObject(th_cmd(t.r, "SELECT 1"));
    ASSERT_KEY(t.r, "locks:db1", redislock_token(l));
    freeReplyObject(th_cmd(t.r, "SELECT 0"));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    lc_teardown(&t);
}

/* The fencing counter is the one key named after the lock's namespace,
 * not the lock: a pattern that covers the namespace covers it (the
 * prefix option included), a narrower one refuses every acquire, which
 * takes nothing. */
void test_acl_fence_counter_pattern(void)
{
    lc t = lc_setup(0);
    redislock_options opts = {0};
    redislock_client *c;
    redislock_lock *l;
    char url[128];

    user_url(t.s, url, sizeof url);
    opts.prefix = "locks:";
    c = th_client_url(url, &opts);
    l = th_lock(c, "fc");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_KEY(t.r, "locks:fc", redislock_token(l));
    ASSERT_GT(th_cmd_int(t.r, "PTTL locks:redislock:rl-fence"), 0);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);

    freeReplyObject(th_cmd(t.r, "FLUSHALL"));
    freeReplyObject(th_cmd(t.r, "ACL SETUSER locker resetkeys ~locks:f*"));
    c = th_client_url(url, NULL);
    l = th_lock(c, "locks:fc");
    ASSERT_ERR(redislock_acquire(l, NULL), REDISLOCK_ENOPERM);
    test_log("with ~locks:f* only: %s", redislock_errdetail());
    ASSERT_EQ_INT(th_cmd_int(t.r, "DBSIZE"), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    lc_teardown(&t);
}

#define SECRET "Zq8-hunter2-Wv3"

/* Makes a client for url (opts may be NULL), which must fail, and checks
 * that the detail does not show the password. */
static void assert_hidden(const char *url, const redislock_options *opts)
{
    redislock_client *c = NULL;
    redislock_err e = redislock_client_new(&c, url, opts);
    const char *d = redislock_errdetail();
    char shown[512];

    ASSERT(e != REDISLOCK_OK && c == NULL);
    test_escape_(d, strlen(d), shown, sizeof shown);
    test_log("%s: %s", redislock_errname(e), shown);
    if (strstr(d, SECRET) != NULL || strstr(d, "hunter2") != NULL)
        test_fail_(__FILE__, __LINE__, "the detail shows the password: %s",
                   shown);
}

void test_acl_errdetail_hides_password(void)
{
    th_server_opts so = {.requirepass = SECRET};
    th_server *s;
    redisContext *r;
    redislock_options o = {0};
    char url[256];
    size_t i;
    /* URLs that cannot be parsed, each with the password in it. */
    static const char *const bad[] = {
        "redis://u:" SECRET "@127.0.0.1:99999",
        "redis://u:" SECRET "@127.0.0.1:6379/x",
        "redis://u:" SECRET "@127.0.0.1:6379?db=1",
        "redis://u:" SECRET "%zz@127.0.0.1",
        "redis://u:" SECRET "@",
        "redis://u:" SECRET "@[::1",
        "rediss://u:" SECRET "@127.0.0.1",
        "http://u:" SECRET "@127.0.0.1",
        "redis:/u:" SECRET "@127.0.0.1",
        "u:" SECRET "@127.0.0.1",
    };

    unsetenv("REDISCLI_AUTH");
    s = th_server_start(&so);
    r = th_server_redis(s);
    freeReplyObject(
        th_cmd(r, "ACL SETUSER locker on >%s ~locks:* +@all", SECRET));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_hidden(bad[i], NULL);

    /* Refused passwords, from each source: the URL, the options, the
     * environment; for a user and for the default user. */
    snprintf(url, sizeof url, "redis://locker:%s-x@127.0.0.1:%d", SECRET,
             s->port);
    assert_hidden(url, NULL);
    snprintf(url, sizeof url, "redis://:%s-x@127.0.0.1:%d", SECRET, s->port);
    assert_hidden(url, NULL);
    snprintf(url, sizeof url, "redis://locker@127.0.0.1:%d", s->port);
    o.password = SECRET "-x";
    assert_hidden(url, &o);
    setenv("REDISCLI_AUTH", SECRET "-x", 1);
    assert_hidden(url, NULL);
    unsetenv("REDISCLI_AUTH");
    /* The right one works, through each source. */
    snprintf(url, sizeof url, "redis://locker:%s@127.0.0.1:%d", SECRET,
             s->port);
    redislock_client_free(th_client_url(url, NULL));
    snprintf(url, sizeof url, "redis://locker@127.0.0.1:%d", s->port);
    o.password = SECRET;
    redislock_client_free(th_client_url(url, &o));
    redisFree(r);
    th_server_stop(s);
}

/* An unescaped '/' in a password ends the URL's host part early, so that
 * part of the password reads as the port or the database: neither may be
 * echoed either. */
void test_acl_url_slash_password_hidden(void)
{
    assert_hidden("redis://u:hunter2/" SECRET "@127.0.0.1", NULL);
    assert_hidden("redis://u:6379/" SECRET "@127.0.0.1", NULL);
    assert_hidden("redis://u:6379/1/" SECRET "@127.0.0.1", NULL);
}

/* An event-loop waiter whose user may not run BLPOP ends its acquire with
 * ENOPERM naming BLPOP and redislock(3), as a blocking waiter does. Until
 * 2026-11-29 it ignored the BLPOP's error reply and sent BLPOP and an
 * attempt again in a loop as fast as the server answered, for its whole
 * wait: 6663 commands in a 3 s wait then, under 20 now. */
void test_acl_loop_waiter_without_blpop(void)
{
    lc t = lc_setup(0);
    redislock_acquire_options o = th_aopts(10000, 3000, 0);
    ad_done d = {0};
    redislock_lock *h, *l;
    redislock_loop *lp;
    char url[128];
    long long before, sent;
    int64_t t0;
    void *drv;

    user_url(t.s, url, sizeof url);
    t.c = th_client_url(url, NULL);
    freeReplyObject(th_cmd(t.r, "ACL SETUSER locker -blpop"));
    h = th_lock(t.c, "locks:bl");
    l = th_lock(t.c, "locks:bl");
    ASSERT_OK(redislock_acquire(h, &o));
    drv = adapter_poll.open(t.c, &lp);
    before = th_info_field(t.r, "stats", "total_commands_processed");
    t0 = th_now_ms();
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &d));
    ad_run_until(&adapter_poll, drv, &d.calls, 1, 5000);
    sent = th_info_field(t.r, "stats", "total_commands_processed") - before;
    test_log("after %lld ms and %lld commands: %s: %s",
             (long long)(th_now_ms() - t0), sent, redislock_errname(d.err),
             d.detail);
    ASSERT_ERR(d.err, REDISLOCK_ENOPERM);
    ASSERT(strstr(d.detail, "BLPOP") != NULL);
    ASSERT(strstr(d.detail, "redislock(3)") != NULL);
    ASSERT_LE(th_now_ms() - t0, 2000);
    ASSERT_LE(sent, 100);
    ASSERT_EQ_INT(redislock_holds(l), 0);
    adapter_poll.close(drv);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(l);
    redislock_lock_free(h);
    redislock_client_free(t.c);
    lc_teardown(&t);
}

/* An election's record is a stream: the rule plus +xadd +xrange
 * +xrevrange (docs/ACL.md) runs a campaign, proclaim, observe and
 * resignation. Without +xadd or +xrevrange the campaign is refused
 * (ENOPERM) and leaves no key held; without +xrange an observer is. */
void test_acl_elect_stream_commands(void)
{
    static const char *const x[] = {"xadd", "xrevrange"};
    lc t = lc_setup(0);
    redislock_lock *l, *ob;
    redislock_leader_info s;
    redislock_acquire_options o;
    char url[128];
    int i;

    user_url(t.s, url, sizeof url);
    t.c = th_client_url(url, NULL);
    l = th_lock(t.c, "locks:el");
    ob = th_lock(t.c, "locks:el");
    memset(&o, 0, sizeof o);
    o.ttl_ms = 5000;
    freeReplyObject(th_cmd(t.r, "ACL SETUSER locker +xadd +xrange +xrevrange"));
    for (i = 0; i < 2; i++) {
        freeReplyObject(th_cmd(t.r, "ACL SETUSER locker -%s", x[i]));
        ASSERT_ERR(redislock_campaign(l, "v", &o), REDISLOCK_ENOPERM);
        test_log("without %s: %s", x[i], redislock_errdetail());
        ASSERT_EQ_INT(th_cmd_int(t.r, "EXISTS locks:el"), 0);
        freeReplyObject(th_cmd(t.r, "ACL SETUSER locker +%s", x[i]));
    }
    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_campaign(l, "v", &o));
    freeReplyObject(th_cmd(t.r, "ACL SETUSER locker -xrange"));
    ASSERT_ERR(redislock_observe(ob, &s, 0), REDISLOCK_ENOPERM);
    freeReplyObject(th_cmd(t.r, "ACL SETUSER locker +xrange"));
    ASSERT_OK(redislock_proclaim(l, "w"));
    ASSERT_OK(redislock_observe(ob, &s, 0));
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_ELECTED);
    ASSERT_OK(redislock_leader(ob, &s));
    ASSERT_EQ_STR(s.value, "w");
    ASSERT_OK(redislock_resign(l));
    redislock_lock_free(l);
    redislock_lock_free(ob);
    redislock_client_free(t.c);
    lc_teardown(&t);
}

/* A writer that takes key behind holder (both under o): its release is
 * then by the script, with COPY behind it where the node runs COPY. */
static void acl_writer_behind(lc *t, redislock_lock *holder, const char *key,
                              const redislock_acquire_options *o,
                              th_waiter *w)
{
    ASSERT_OK(redislock_acquire(holder, o));
    th_waiter_start(w, t->c, key, o);
    th_wait_blocked(t->r, 1, SETUP_MS);
    ASSERT_OK(redislock_release(holder));
    th_waiter_join_ok(w, 5000);
}

/* A writer's release may leave the readers' wake-up to the COPY it sends
 * behind its script, where the node runs COPY: the rule does not give
 * it, so the first such release hears the refusal and every release
 * wakes the readers itself. A reader blocked behind a writer is woken
 * at once by its release, each time, without COPY and with it (+copy,
 * the optional addition docs/ACL.md names). */
void test_acl_shared_reader_woken_without_copy(void)
{
    redislock_acquire_options x = th_aopts(10000, 5000, 0);
    redislock_acquire_options ow = th_aopts(10000, 5000, 0);
    th_waiter w, r;
    int pass, i;

    ow.shared = 1;
    for (pass = 0; pass < 2; pass++) {
        lc t = lc_setup(0);
        redislock_lock *a;
        char url[128];
        int64_t t0;

        if (pass == 1)
            freeReplyObject(th_cmd(t.r, "ACL SETUSER locker +copy"));
        user_url(t.s, url, sizeof url);
        t.c = th_client_url(url, NULL);
        a = th_lock(t.c, "locks:rw");
        for (i = 0; i < 3; i++) {
            acl_writer_behind(&t, a, "locks:rw", &x, &w);
            th_waiter_start(&r, t.c, "locks:rw", &ow);
            th_wait_blocked(t.r, 1, SETUP_MS);
            t0 = th_now_us();
            ASSERT_OK(redislock_release(w.l));
            th_waiter_join_ok(&r, 5000);
            test_log("%s COPY, release %d: the reader in %lld us",
                     pass ? "with" : "without", i,
                     (long long)(r.done_us - t0));
            ASSERT_LE((r.done_us - t0) / 1000, REACH_MS);
            ASSERT_OK(redislock_release(r.l));
            redislock_lock_free(r.l);
            redislock_lock_free(w.l);
        }
        ASSERT_EQ_INT(th_cmd_int(t.r, "EXISTS locks:rw"), 0);
        redislock_lock_free(a);
        redislock_client_free(t.c);
        lc_teardown(&t);
    }
}
