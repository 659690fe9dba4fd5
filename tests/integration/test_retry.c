/*
 * retry: the wait for a held lock. Attempts are counted on the server
 * (INFO commandstats: a waiting acquire of a plain lock pipelines SET and
 * PTTL, a lock with an owner id runs one script), pauses are timed against
 * each strategy's jittered range, and the wait's limits are checked: a
 * custom strategy, no retry, fail-fast, the cap by the holder's TTL,
 * cancellation from another thread, and exclusion among threads sharing
 * one client.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Round trips and scheduling on a loaded 2-core box under ASan. */
#define SLACK_MS 300
/* The same for a wait made of pauses only, where timing is the point. */
#define PAUSE_SLACK_MS 120
/* ms clocks read twice: up to a ms lost to rounding at each end. */
#define ROUNDING_MS 2

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
    redislock_lock *holder;
} env;

/* Loads the acquire script into the server's cache, so that later counts
 * of script calls are not thrown off by one NOSCRIPT and its EVAL. */
static void warm_scripts(env *e, const char *held)
{
    redislock_lock *w = th_lock(e->c, held);
    redislock_acquire_options o = th_aopts(1000, 1000, 1);

    o.max_attempts = 1;
    ASSERT_ERR(redislock_acquire(w, &o), REDISLOCK_EHELD);
    redislock_lock_free(w);
}

/* A server, a client, and a holder of key with a plain lock of ttl_ms. */
static env env_start(const char *key, int64_t ttl_ms)
{
    redislock_acquire_options o = th_aopts(ttl_ms, 0, 0);
    env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    e.holder = th_lock(e.c, key);
    ASSERT_OK(redislock_acquire(e.holder, &o));
    warm_scripts(&e, key);
    return e;
}

static void env_stop(env *e)
{
    redislock_lock_free(e->holder);
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

/* Calls of the commands an attempt sends, from one snapshot. */
typedef struct calls {
    long long set, pttl, script;
} calls;

static calls read_calls(redisContext *r)
{
    th_cmdstats *st = malloc(sizeof *st);
    calls n;

    ASSERT(st != NULL);
    th_cmdstats_read(r, st);
    n.set = th_cmdstats_calls(st, "set");
    n.pttl = th_cmdstats_calls(st, "pttl");
    n.script = th_cmdstats_scripts(st);
    free(st);
    return n;
}

/*
 * Waits behind the holder with a strategy, at most max_attempts attempts
 * and a wait far longer than they take. Asserts EHELD after exactly that
 * many attempts and returns the time it took. An attempt is one acquire
 * script call; commandstats also counts the commands scripts run inside
 * the server, so only script calls are counted.
 */
static int64_t wait_attempts(env *e, redislock_retry strategy, int64_t delay,
                             int64_t cap, int max_attempts)
{
    redislock_lock *l = th_lock(e->c, "rt:k");
    redislock_acquire_options o = th_aopts(5000, 30000, delay);
    calls c0, c1;
    int64_t t0, ms;

    o.retry = strategy;
    o.retry_max_delay_ms = cap;
    o.max_attempts = max_attempts;
    c0 = read_calls(e->r);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    ms = th_now_ms() - t0;
    c1 = read_calls(e->r);
    ASSERT_EQ_INT(c1.script - c0.script, max_attempts);
    ASSERT_EQ_INT(redislock_holds(l), 0);
    redislock_lock_free(l);
    return ms;
}

/* Asserts ms within the jittered range [lo, hi] of the pauses' sum. */
#define ASSERT_PAUSES(ms, lo, hi)                                             \
    do {                                                                      \
        ASSERT_GE(ms, (lo)-ROUNDING_MS);                                      \
        ASSERT_LE(ms, (hi) + PAUSE_SLACK_MS);                                 \
    } while (0)

void test_retry_constant_pauses(void)
{
    env e = env_start("rt:k", 60000);
    int64_t ms = wait_attempts(&e, REDISLOCK_RETRY_CONSTANT, 100, 0, 5);

    /* Four pauses, each in [50, 100]. */
    test_log("constant 100 ms, 5 attempts: %lld ms (range 200..400)",
             (long long)ms);
    ASSERT_PAUSES(ms, 200, 400);
    env_stop(&e);
}

void test_retry_linear_pauses(void)
{
    env e = env_start("rt:k", 60000);
    int64_t ms = wait_attempts(&e, REDISLOCK_RETRY_LINEAR, 60, 0, 5);

    /* 60, 120, 180, 240, each jittered down to half. */
    test_log("linear 60 ms, 5 attempts: %lld ms (range 300..600)",
             (long long)ms);
    ASSERT_PAUSES(ms, 300, 600);
    env_stop(&e);
}

void test_retry_exponential_pauses(void)
{
    env e = env_start("rt:k", 60000);
    int64_t ms = wait_attempts(&e, REDISLOCK_RETRY_EXPONENTIAL, 10, 0, 5);
    int64_t ms6;

    /* 10, 20, 40, 80: [5+10+20+40, 150]. */
    test_log("exponential 10 ms, 5 attempts: %lld ms (range 75..150)",
             (long long)ms);
    ASSERT_PAUSES(ms, 75, 150);
    /* 10 .. 160 doubling: apart from what linear growth would give (at
     * most 10 + 20 + 30 + 40 + 50 = 150). Every pause stays under
     * RL_BLOCK_MIN_MS, so each is slept whole: a longer one blocks in a
     * BLPOP whose attempt behind it may run up to RL_SERVER_TICK_MS
     * early (on 2026-11-29, pauses of 25 .. 400 summed to 382 ms, under
     * their jittered minimum of 387). */
    ms6 = wait_attempts(&e, REDISLOCK_RETRY_EXPONENTIAL, 10, 0, 6);
    test_log("exponential 10 ms, 6 attempts: %lld ms (range 155..310)",
             (long long)ms6);
    /* The lower bound is what tells doubling from linear growth; above,
     * a loaded machine's oversleeping adds up over five pauses (1014 ms
     * seen beside another make check for pauses of 25 .. 400), so only
     * a runaway (each pause doubled again: 3410) is caught. */
    ASSERT_GE(ms6, 5 + 10 + 20 + 40 + 80 - ROUNDING_MS);
    ASSERT_LE(ms6, 1400);
    env_stop(&e);
}

void test_retry_exponential_capped(void)
{
    env e = env_start("rt:k", 60000);
    int64_t ms = wait_attempts(&e, REDISLOCK_RETRY_EXPONENTIAL, 25, 60, 6);

    /* 25, 50, then the cap: 60, 60, 60. */
    test_log("exponential 25 ms capped at 60, 6 attempts: %lld ms "
             "(range 127..255)",
             (long long)ms);
    ASSERT_PAUSES(ms, 12 + 25 + 30 + 30 + 30, 255);
    env_stop(&e);
}

void test_retry_max_attempts_hash_lock(void)
{
    env e = env_start("rt:other", 60000);
    redislock_lock *h = th_lock(e.c, "rt:h");
    redislock_lock *w = th_lock(e.c, "rt:h");
    redislock_acquire_options o = th_aopts(60000, 30000, 5);
    calls c0, c1;

    o.reentrant = 1;
    o.owner = "holder";
    ASSERT_OK(redislock_acquire(h, &o));
    o.owner = "waiter";
    o.max_attempts = 3;
    c0 = read_calls(e.r);
    ASSERT_ERR(redislock_acquire(w, &o), REDISLOCK_EHELD);
    c1 = read_calls(e.r);
    /* One script call per attempt. */
    ASSERT_EQ_INT(c1.script - c0.script, 3);
    ASSERT_GT(redislock_holder_ttl(w), 60000 - SLACK_MS);
    ASSERT_LE(redislock_holder_ttl(w), 60000);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(h);
    redislock_lock_free(w);
    env_stop(&e);
}

/* What a custom strategy was called with. */
#define FN_MAX 16
typedef struct fn_log {
    int n;
    int attempt[FN_MAX];
    int64_t holder_ttl[FN_MAX];
} fn_log;

/* Pauses 5 ms twice, then gives up. */
static int64_t give_up_third(void *arg, int attempt, int64_t holder_ttl_ms)
{
    fn_log *g = arg;

    if (g->n < FN_MAX) {
        g->attempt[g->n] = attempt;
        g->holder_ttl[g->n] = holder_ttl_ms;
        g->n++;
    }
    return attempt < 3 ? 5 : -1;
}

void test_retry_custom_fn_sees_attempts(void)
{
    env e = env_start("rt:k", 60000);
    redislock_lock *l = th_lock(e.c, "rt:k");
    redislock_acquire_options o = th_aopts(5000, 30000, 0);
    fn_log g;
    calls c0, c1;
    int64_t t0, ms;
    int i;

    memset(&g, 0, sizeof g);
    o.retry_fn = give_up_third;
    o.retry_arg = &g;
    /* The function overrides the strategy. */
    o.retry = REDISLOCK_RETRY_EXPONENTIAL;
    c0 = read_calls(e.r);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    ms = th_now_ms() - t0;
    c1 = read_calls(e.r);
    ASSERT_EQ_INT(g.n, 3);
    ASSERT_EQ_INT(c1.script - c0.script, 3);
    for (i = 0; i < g.n; i++) {
        ASSERT_EQ_INT(g.attempt[i], i + 1);
        ASSERT_GT(g.holder_ttl[i], 60000 - SLACK_MS);
        ASSERT_LE(g.holder_ttl[i], 60000);
    }
    /* Two pauses of exactly 5 ms: no jitter is added. */
    ASSERT_GE(ms, 10 - ROUNDING_MS);
    ASSERT_LE(ms, 10 + PAUSE_SLACK_MS);
    test_log("custom: attempts %d,%d,%d, holder TTLs %lld,%lld,%lld, %lld ms",
             g.attempt[0], g.attempt[1], g.attempt[2],
             (long long)g.holder_ttl[0], (long long)g.holder_ttl[1],
             (long long)g.holder_ttl[2], (long long)ms);
    redislock_lock_free(l);
    env_stop(&e);
}

/* One acquire behind the holder; the time it took. */
static int64_t timed_acquire(redislock_lock *l,
                             const redislock_acquire_options *o,
                             redislock_err want)
{
    int64_t t0 = th_now_ms();

    ASSERT_ERR(redislock_acquire(l, o), want);
    return th_now_ms() - t0;
}

void test_retry_none_returns_at_once(void)
{
    env e = env_start("rt:k", 60000);
    redislock_lock *l = th_lock(e.c, "rt:k");
    redislock_acquire_options o = th_aopts(5000, 5000, 10);
    calls c0, c1;
    int64_t ms;

    o.retry = REDISLOCK_RETRY_NONE;
    c0 = read_calls(e.r);
    ms = timed_acquire(l, &o, REDISLOCK_EHELD);
    c1 = read_calls(e.r);
    test_log("RETRY_NONE with wait 5000: EHELD after %lld ms", (long long)ms);
    ASSERT_LT(ms, 100);
    /* A single try: one script call. */
    ASSERT_EQ_INT(c1.script - c0.script, 1);
    redislock_lock_free(l);
    env_stop(&e);
}

void test_retry_fail_fast(void)
{
    env e = env_start("rt:k", 10000);
    redislock_lock *l = th_lock(e.c, "rt:k");
    redislock_lock *n = th_lock(e.c, "rt:forever");
    redislock_acquire_options o = th_aopts(5000, 500, 50);
    calls c0, c1;
    int64_t fast, slow, never;

    /* The holder's 10 s outlast a 500 ms wait: give up at once. */
    o.fail_fast = 1;
    c0 = read_calls(e.r);
    fast = timed_acquire(l, &o, REDISLOCK_EHELD);
    c1 = read_calls(e.r);
    /* One attempt, which also learns the holder's TTL. */
    ASSERT_EQ_INT(c1.script - c0.script, 1);
    ASSERT_LT(fast, 100);
    ASSERT_GT(redislock_holder_ttl(l), 10000 - SLACK_MS);

    /* A key with no expiry is hopeless too, even with a long wait. */
    freeReplyObject(th_cmd(e.r, "SET rt:forever someone"));
    o.wait_ms = 5000;
    never = timed_acquire(n, &o, REDISLOCK_EHELD);
    ASSERT_LT(never, 100);
    ASSERT_EQ_INT(redislock_holder_ttl(n), REDISLOCK_TTL_NO_EXPIRY);

    /* Without fail-fast the same wait runs to its deadline. */
    o.fail_fast = 0;
    o.wait_ms = 500;
    slow = timed_acquire(l, &o, REDISLOCK_EHELD);
    ASSERT_GE(slow, 500 - ROUNDING_MS);
    ASSERT_LE(slow, 500 + SLACK_MS);
    test_log("holder TTL 10 s, wait 500: fail-fast %lld ms, no-expiry key "
             "%lld ms, without fail-fast %lld ms",
             (long long)fast, (long long)never, (long long)slow);
    redislock_lock_free(l);
    redislock_lock_free(n);
    env_stop(&e);
}

void test_retry_fail_fast_waits_for_short_holder(void)
{
    env e = env_start("rt:k", 300);
    redislock_lock *l = th_lock(e.c, "rt:k");
    redislock_acquire_options o = th_aopts(5000, 2000, 50);
    int64_t ms;

    /* The holder's lease ends within the wait: worth waiting for. */
    o.fail_fast = 1;
    ms = timed_acquire(l, &o, REDISLOCK_OK);
    ASSERT_LE(ms, 300 + SLACK_MS);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    env_stop(&e);
}

void test_retry_pause_capped_by_holder_ttl(void)
{
    int64_t t0 = 0, ms;
    env e = env_start("rt:k", 300);
    redislock_lock *l = th_lock(e.c, "rt:k");
    redislock_acquire_options o = th_aopts(5000, 10000, 5000);

    t0 = th_now_ms();
    /* A pause of 2.5 .. 5 s would overshoot; the holder's 300 ms bound
     * it. Timed from the holder's acquire. */
    ASSERT_OK(redislock_acquire(l, &o));
    ms = th_now_ms() - t0;
    test_log("retry delay 5000 behind a 300 ms holder: got it in %lld ms",
             (long long)ms);
    ASSERT_LE(ms, 300 + SLACK_MS);
    ASSERT_KEY(e.r, "rt:k", redislock_token(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    env_stop(&e);
}

void test_retry_holder_ttl_after_eheld(void)
{
    env e = env_start("rt:k", 20000);
    redislock_lock *l = th_lock(e.c, "rt:k");
    redislock_acquire_options o = th_aopts(5000, 50, 10);
    int64_t once;

    ASSERT_EQ_INT(redislock_holder_ttl(l), -2);
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    ASSERT_GT(redislock_holder_ttl(l), 20000 - SLACK_MS);
    ASSERT_LE(redislock_holder_ttl(l), 20000);
    ASSERT_LE(redislock_holder_ttl(l), th_pttl(e.r, "rt:k") + SLACK_MS);

    /* A single try may skip the PTTL: then the TTL is unknown (-2). */
    o.wait_ms = REDISLOCK_NO_WAIT;
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    once = redislock_holder_ttl(l);
    test_log("holder_ttl after a no-wait EHELD: %lld", (long long)once);
    ASSERT(once == -2 || (once > 20000 - SLACK_MS && once <= 20000));
    redislock_lock_free(l);
    env_stop(&e);
}

/* A waiter on another thread, with the time its acquire returned. */
typedef struct waiter {
    redislock_lock *l;
    redislock_acquire_options o;
    redislock_err err;
    int64_t done_ms;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;

    w->err = redislock_acquire(w->l, &w->o);
    w->done_ms = th_now_ms();
    return NULL;
}

void test_retry_cancel_wakes_waiter(void)
{
    env e = env_start("rt:k", 60000);
    waiter w;
    pthread_t t;
    calls c0;
    int64_t deadline, t_cancel;

    memset(&w, 0, sizeof w);
    w.l = th_lock(e.c, "rt:k");
    /* Long pauses: without the cancel it would sleep for seconds. */
    w.o = th_aopts(5000, REDISLOCK_WAIT_FOREVER, 5000);
    c0 = read_calls(e.r);
    ASSERT_EQ_INT(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    /* The first attempt reaching the server means it is waiting now. */
    deadline = th_now_ms() + 5000;
    while (read_calls(e.r).script == c0.script && th_now_ms() < deadline)
        th_sleep_ms(2);
    ASSERT_GT(read_calls(e.r).script, c0.script);
    t_cancel = th_now_ms();
    redislock_cancel(w.l);
    th_join_within(t, 2000);
    test_log("cancel to ECANCELED: %lld ms", (long long)(w.done_ms - t_cancel));
    ASSERT_ERR(w.err, REDISLOCK_ECANCELED);
    ASSERT_LT(w.done_ms - t_cancel, 100);
    ASSERT_EQ_INT(redislock_holds(w.l), 0);

    /* The cancel was used up: the next acquire is an ordinary one. */
    w.o.wait_ms = REDISLOCK_NO_WAIT;
    ASSERT_ERR(redislock_acquire(w.l, &w.o), REDISLOCK_EHELD);
    redislock_lock_free(w.l);
    env_stop(&e);
}

void test_retry_cancel_before_acquire(void)
{
    env e = env_start("rt:other", 60000);
    redislock_lock *l = th_lock(e.c, "rt:free");
    redislock_acquire_options o = th_aopts(5000, 1000, 10);
    calls c0, c1;
    int64_t ms;

    redislock_cancel(l);
    redislock_cancel(l); /* Not counted: one acquire clears it. */
    c0 = read_calls(e.r);
    ms = timed_acquire(l, &o, REDISLOCK_ECANCELED);
    c1 = read_calls(e.r);
    ASSERT_LT(ms, 100);
    /* Free as it is, the lock is not even tried. */
    ASSERT_EQ_INT(c1.script - c0.script, 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS rt:free"), 0);
    ASSERT_EQ_INT(redislock_holds(l), 0);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_KEY(e.r, "rt:free", redislock_token(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    env_stop(&e);
}

/*
 * Four threads share one client, each with its own handle and its own
 * hiredis connection, and do non-atomic GET/SET increments under the lock,
 * waiting forever; any overlap would lose an increment.
 */
#define NCOUNTERS 4
#define NINCRS 200

typedef struct counter_worker {
    pthread_t t;
    redislock_client *c;
    const th_server *s;
    const char *err;
    char detail[256];
} counter_worker;

static const char *one_increment(redislock_lock *l, redisContext *r,
                                 const redislock_acquire_options *o)
{
    redisReply *rep;
    long long n;

    if (redislock_acquire(l, o) != REDISLOCK_OK)
        return "acquire";
    rep = redisCommand(r, "GET rt:counter");
    if (rep == NULL ||
        (rep->type != REDIS_REPLY_NIL && rep->type != REDIS_REPLY_STRING))
        return "GET";
    n = rep->type == REDIS_REPLY_NIL ? 0 : strtoll(rep->str, NULL, 10);
    freeReplyObject(rep);
    rep = redisCommand(r, "SET rt:counter %lld", n + 1);
    if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
        return "SET";
    freeReplyObject(rep);
    if (redislock_release(l) != REDISLOCK_OK)
        return "release";
    return NULL;
}

static void *count_up(void *arg)
{
    counter_worker *w = arg;
    redislock_acquire_options o =
        th_aopts(10000, REDISLOCK_WAIT_FOREVER, 2);
    redisContext *r = redisConnectUnix(w->s->sock);
    redislock_lock *l = NULL;
    int i;

    w->err = "connect";
    if (r != NULL && !r->err &&
        redislock_lock_new(w->c, "rt:lock", 7, &l) == REDISLOCK_OK)
        for (w->err = NULL, i = 0; w->err == NULL && i < NINCRS; i++)
            w->err = one_increment(l, r, &o);
    /* The detail is per thread: read it here. */
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    redislock_lock_free(l);
    if (r != NULL)
        redisFree(r);
    return NULL;
}

void test_retry_shared_client_counter(void)
{
    env e = env_start("rt:other", 60000);
    counter_worker w[NCOUNTERS];
    char *v;
    int i;

    memset(w, 0, sizeof w);
    for (i = 0; i < NCOUNTERS; i++) {
        w[i].c = e.c;
        w[i].s = e.s;
        ASSERT_EQ_INT(pthread_create(&w[i].t, NULL, count_up, &w[i]), 0);
    }
    for (i = 0; i < NCOUNTERS; i++)
        th_join_within(w[i].t, 100000);
    for (i = 0; i < NCOUNTERS; i++)
        if (w[i].err != NULL)
            test_fail_(__FILE__, __LINE__, "thread %d: %s failed: %s", i,
                       w[i].err, w[i].detail);
    v = th_cmd_str(e.r, NULL, "GET rt:counter");
    ASSERT(v != NULL);
    ASSERT_EQ_INT(strtoll(v, NULL, 10), NCOUNTERS * NINCRS);
    free(v);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS rt:lock"), 0);
    env_stop(&e);
}
