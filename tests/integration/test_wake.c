/*
 * wake: waiting without polling. A waiter that finds the lock held blocks
 * (BLPOP on the lock's helper lists, on the connection its attempt used,
 * out of the pool while it blocks, or else one of its own) until a
 * release wakes it or the holder's lease ends. These tests time the wake-up
 * against holders with long TTLs, count what a blocked waiter sends
 * (INFO commandstats), check that one release wakes one waiter, that a
 * dead holder or a missed wake-up costs no more than the holder's lease,
 * that the helper keys go away, that a cancel reaches a blocked waiter,
 * and that blocked waiters leave the client's pool to its other users.
 *
 * "Blocked" is read from the server: INFO clients blocked_clients.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "wk:k"
/* The lock's helper keys: "<key>{<key>}:rl-<suffix>" (lock.c). */
#define BASE KEY "{" KEY "}:rl-"
/* Round trips, thread wake-ups and Redis's 100 ms timeout tick, on a
 * loaded 2-core box under ASan. */
#define SLACK_MS 250
/* How soon a release must wake a waiter: the holder's TTL is 10 s. */
#define WAKE_MEDIAN_MS 50
#define WAKE_MAX_MS 250
/* How long a setup step (a thread blocking, a key showing up) may take. */
#define SETUP_MS 5000

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
    redislock_lock *holder;
} env;

/* A server, a client, and (ttl_ms > 0) a holder of KEY with that TTL. */
static env env_start(int64_t ttl_ms)
{
    redislock_acquire_options o = th_aopts(ttl_ms, 0, 0);
    env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    e.holder = th_lock(e.c, KEY);
    if (ttl_ms > 0)
        ASSERT_OK(redislock_acquire(e.holder, &o));
    return e;
}

static void env_stop(env *e)
{
    redislock_lock_free(e->holder);
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

/* Calls of every command, and of INFO and the scripts, in one snapshot. */
typedef struct calls {
    long long total, info, script;
} calls;

static calls read_calls(redisContext *r)
{
    th_cmdstats *st = malloc(sizeof *st);
    calls n = {0, 0, 0};
    int i;

    ASSERT(st != NULL);
    th_cmdstats_read(r, st);
    for (i = 0; i < st->n; i++)
        n.total += st->e[i].calls;
    n.info = th_cmdstats_calls(st, "info");
    n.script = th_cmdstats_scripts(st);
    free(st);
    return n;
}

/* One acquire on another thread, with when it returned and the token. */
typedef th_waiter waiter;

/* Starts a waiter on key that waits forever with default options. */
static void waiter_start(waiter *w, redislock_client *c, const char *key)
{
    redislock_acquire_options o = {0};

    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    th_waiter_start(w, c, key, &o);
}

#define waiter_join_ok(w, ms) th_waiter_join_ok(w, ms)

/* The holder takes KEY with ho, and w blocks behind it. */
static void block_behind_holder(env *e, const redislock_acquire_options *ho,
                                waiter *w)
{
    ASSERT_OK(redislock_acquire(e->holder, ho));
    waiter_start(w, e->c, KEY);
    th_wait_blocked(e->r, 1, SETUP_MS);
}

#define WAKE_ROUNDS 5

void test_wake_release_wakes_waiter(void)
{
    env e = env_start(0);
    redislock_acquire_options ho = th_aopts(10000, 0, 0);
    int64_t lat[WAKE_ROUNDS], t0;
    waiter w;
    int i;

    for (i = 0; i < WAKE_ROUNDS; i++) {
        block_behind_holder(&e, &ho, &w);
        th_sleep_ms(20);
        t0 = th_now_us();
        ASSERT_OK(redislock_release(e.holder));
        /* Unwoken, it would sleep out the holder's 10 s. */
        waiter_join_ok(&w, 3000);
        lat[i] = w.done_us - t0;
        ASSERT_KEY(e.r, KEY, w.token);
        ASSERT_LE(lat[i] / 1000, WAKE_MAX_MS);
        ASSERT_OK(redislock_release(w.l));
        redislock_lock_free(w.l);
    }
    test_log("release start to waiter's acquire return (us): %lld %lld "
             "%lld %lld %lld; holder TTL 10 s",
             (long long)lat[0], (long long)lat[1], (long long)lat[2],
             (long long)lat[3], (long long)lat[4]);
    qsort(lat, WAKE_ROUNDS, sizeof lat[0], th_cmp_i64);
    test_log("median %lld us", (long long)lat[WAKE_ROUNDS / 2]);
    ASSERT_LE(lat[WAKE_ROUNDS / 2] / 1000, WAKE_MEDIAN_MS);
    env_stop(&e);
}

void test_wake_blocked_waiter_is_silent(void)
{
    env e = env_start(60000);
    calls c0, c1;
    waiter w;

    waiter_start(&w, e.c, KEY);
    th_wait_blocked(e.r, 1, SETUP_MS);
    th_sleep_ms(300);
    c0 = read_calls(e.r);
    th_sleep_ms(1000);
    c1 = read_calls(e.r);
    test_log("1 s while blocked: %lld commands in all, %lld of them our "
             "INFO",
             c1.total - c0.total, c1.info - c0.info);
    /* Only the INFO of the first snapshot ran in the window. */
    ASSERT_EQ_INT(c1.total - c0.total, c1.info - c0.info);
    ASSERT_EQ_INT(c1.info - c0.info, 1);
    ASSERT_EQ_INT(th_blocked_clients(e.r), 1);
    ASSERT_OK(redislock_release(e.holder));
    waiter_join_ok(&w, 3000);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    env_stop(&e);
}

/*
 * Four waiters on threads; each records the order in which it got the
 * lock, then holds it until told to release.
 */
#define NHERD 4

typedef struct herd_waiter {
    pthread_t t;
    redislock_lock *l;
    _Atomic int *got;    /* acquisitions so far, shared */
    _Atomic int order;   /* 1-based; 0 while waiting */
    _Atomic int release; /* set by the main thread */
    _Atomic int released;
    redislock_err err;
    char detail[256];
} herd_waiter;

static void *herd_thread(void *arg)
{
    herd_waiter *w = arg;
    redislock_acquire_options o = th_aopts(30000, REDISLOCK_WAIT_FOREVER, 0);
    int64_t deadline;

    w->err = redislock_acquire(w->l, &o);
    if (w->err == REDISLOCK_OK) {
        atomic_store(&w->order, atomic_fetch_add(w->got, 1) + 1);
        deadline = th_now_ms() + 20000;
        while (!atomic_load(&w->release) && th_now_ms() < deadline)
            th_sleep_ms(1);
        w->err = redislock_release(w->l);
    }
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    atomic_store(&w->released, 1);
    return NULL;
}

/* Waits until got reaches n; fails the test after ms. */
static void wait_got(_Atomic int *got, int n, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;

    while (atomic_load(got) < n && th_now_ms() < deadline)
        th_sleep_ms(1);
    ASSERT_EQ_INT(atomic_load(got), n);
}

static int herd_holder(herd_waiter *w, int order)
{
    int i;

    for (i = 0; i < NHERD; i++)
        if (atomic_load(&w[i].order) == order)
            return i;
    test_fail_(__FILE__, __LINE__, "no waiter got the lock as #%d", order);
}

void test_wake_one_release_one_waiter(void)
{
    env e = env_start(30000);
    herd_waiter w[NHERD];
    redislock_lock *warm;
    _Atomic int got = 0;
    int64_t deadline, t_rel;
    calls c0, c1;
    int i, k, cur = -1;
    long long rel;
    /* The first holder took the key before anyone waited: its release
     * tries the server's own compare-and-delete, or elsewhere the lean
     * script (one script call more), which fails on the waiters' mark
     * before release.lua runs. The holders after it took the key after a
     * wait and release by release.lua at once. */
    long long first_scripts = th_native_release(e.r) ? 1 : 2;

    /* The release scripts are loaded now (the lean one by an uncontended
     * release, release.lua by a hold-after's), so that the count below is
     * not thrown off by a NOSCRIPT and its EVAL. */
    warm = th_lock(e.c, "wk:warm");
    ASSERT_OK(redislock_acquire(warm, NULL));
    ASSERT_OK(redislock_release(warm));
    ASSERT_OK(redislock_acquire(warm, NULL));
    ASSERT_OK(redislock_release_hold(warm, 1));
    redislock_lock_free(warm);
    memset(w, 0, sizeof w);
    for (i = 0; i < NHERD; i++) {
        w[i].l = th_lock(e.c, KEY);
        w[i].got = &got;
        ASSERT_EQ_INT(pthread_create(&w[i].t, NULL, herd_thread, &w[i]), 0);
    }
    th_wait_blocked(e.r, NHERD, SETUP_MS);
    for (k = 1; k <= NHERD; k++) {
        /* The window takes in the release itself: its script calls. */
        c0 = read_calls(e.r);
        if (k == 1) {
            ASSERT_OK(redislock_release(e.holder));
        } else {
            atomic_store(&w[cur].release, 1);
            deadline = th_now_ms() + SETUP_MS;
            while (!atomic_load(&w[cur].released) && th_now_ms() < deadline)
                th_sleep_ms(1);
            ASSERT(atomic_load(&w[cur].released));
            ASSERT_ERR(w[cur].err, REDISLOCK_OK);
        }
        t_rel = th_now_ms();
        wait_got(&got, k, SETUP_MS);
        th_sleep_ms(t_rel + 200 - th_now_ms());
        c1 = read_calls(e.r);
        rel = k == 1 ? first_scripts : 1;
        test_log("release %d: %lld acquire attempts in 200 ms, %d of %d "
                 "waiters have had the lock, %lld still blocked",
                 k, c1.script - c0.script - rel, atomic_load(&got), NHERD,
                 th_blocked_clients(e.r));
        /* Exactly one more waiter got it; the others sleep on. */
        ASSERT_EQ_INT(atomic_load(&got), k);
        ASSERT_LE(c1.script - c0.script - rel, 2);
        ASSERT_EQ_INT(th_blocked_clients(e.r), NHERD - k);
        cur = herd_holder(w, k);
    }
    atomic_store(&w[cur].release, 1);
    for (i = 0; i < NHERD; i++) {
        th_join_within(w[i].t, SETUP_MS);
        if (w[i].err != REDISLOCK_OK)
            test_fail_(__FILE__, __LINE__, "waiter %d: %s; %s", i,
                       redislock_errname(w[i].err), w[i].detail);
        redislock_lock_free(w[i].l);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);
    env_stop(&e);
}

/* A forked holder: takes KEY for ttl_ms, writes its token to fd, then
 * waits to be killed. */
static void doomed_holder(const th_server *s, int fd, int64_t ttl_ms)
{
    redislock_acquire_options o = th_aopts(ttl_ms, 0, 0);
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    const char *t;
    int i;

    if (redislock_client_new(&c, s->unix_url, NULL) != REDISLOCK_OK ||
        redislock_lock_new(c, KEY, strlen(KEY), &l) != REDISLOCK_OK ||
        redislock_acquire(l, &o) != REDISLOCK_OK)
        _exit(1);
    t = redislock_token(l);
    if (write(fd, t, strlen(t) + 1) != (ssize_t)strlen(t) + 1)
        _exit(1);
    for (i = 0; i < 600; i++)
        th_sleep_ms(100);
    _exit(0);
}

void test_wake_killed_holder_costs_ttl(void)
{
    env e = env_start(0);
    char tok[300] = "";
    int64_t t_fork, t_tok;
    size_t got = 0;
    ssize_t n;
    int fds[2], st;
    waiter w;
    pid_t pid;

    ASSERT_EQ_INT(pipe(fds), 0);
    fflush(NULL);
    t_fork = th_now_us();
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        doomed_holder(e.s, fds[1], 800);
    close(fds[1]);
    while (got < sizeof tok - 1 && (got == 0 || tok[got - 1] != '\0')) {
        n = read(fds[0], tok + got, sizeof tok - 1 - got);
        ASSERT_GT(n, 0);
        got += (size_t)n;
    }
    t_tok = th_now_us();
    close(fds[0]);
    ASSERT_KEY(e.r, KEY, tok);
    waiter_start(&w, e.c, KEY);
    th_wait_blocked(e.r, 1, 500);
    ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
    while (waitpid(pid, &st, 0) < 0)
        ASSERT_EQ_INT(errno, EINTR);
    ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    waiter_join_ok(&w, 3000);
    test_log("holder TTL 800 ms, SIGKILLed: the waiter got the lock %lld ms "
             "after the holder's acquire returned (%lld ms after fork)",
             (long long)(w.done_us - t_tok) / 1000,
             (long long)(w.done_us - t_fork) / 1000);
    /* Not before the dead holder's lease ended, and soon after. */
    ASSERT_GE((w.done_us - t_fork) / 1000, 800 - 2);
    ASSERT_LE((w.done_us - t_tok) / 1000, 800 + SLACK_MS);
    ASSERT_KEY(e.r, KEY, w.token);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    env_stop(&e);
}

void test_wake_missed_wakeup_bounded(void)
{
    env e = env_start(0);
    redislock_acquire_options ho = th_aopts(2000, 0, 0);
    int64_t t_acq, t_got, t_rel;
    waiter w;

    t_acq = th_now_us();
    ASSERT_OK(redislock_acquire(e.holder, &ho));
    t_got = th_now_us();
    waiter_start(&w, e.c, KEY);
    th_wait_blocked(e.r, 1, 1000);
    /* The wake-up is lost: the release sees nobody waiting. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL " BASE "waiting"), 1);
    th_sleep_ms(100);
    t_rel = th_now_us();
    ASSERT_OK(redislock_release(e.holder));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " BASE "wake"), 0);
    waiter_join_ok(&w, 5000);
    test_log("wake-up lost: the waiter got the lock %lld ms after the "
             "release, %lld ms after the 2000 ms holder's acquire returned",
             (long long)(w.done_us - t_rel) / 1000,
             (long long)(w.done_us - t_got) / 1000);
    /* It waited out the holder's lease, and no longer: its BLPOP times
     * out a server tick (100 ms) before the lease ends, and the attempt
     * sent behind it runs then, finding the lock free. Woken by the
     * release it would have taken the lock about 100 ms in. */
    ASSERT_GE((w.done_us - t_acq) / 1000, 2000 - 100 - 50);
    ASSERT_LE((w.done_us - t_got) / 1000, 2000 + SLACK_MS);
    ASSERT_KEY(e.r, KEY, w.token);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    env_stop(&e);
}

/* Threads taking KEY in turn, each checking that it really holds it. */
#define NCYCLERS 4
#define NCYCLES 20

typedef struct cycler {
    pthread_t t;
    redislock_client *c;
    const th_server *s;
    const char *err;
    char detail[256];
} cycler;

static const char *one_cycle(redislock_lock *l, redisContext *r)
{
    redislock_acquire_options o = th_aopts(500, REDISLOCK_WAIT_FOREVER, 0);
    redisReply *rep;
    int mine;

    if (redislock_acquire(l, &o) != REDISLOCK_OK)
        return "acquire";
    rep = redisCommand(r, "GET " KEY);
    if (rep == NULL)
        return "GET";
    mine = rep->type == REDIS_REPLY_STRING &&
           th_value_is_token(rep->str, redislock_token(l));
    freeReplyObject(rep);
    if (!mine)
        return "GET: the key is not this holder's token";
    th_sleep_ms(1);
    if (redislock_release(l) != REDISLOCK_OK)
        return "release";
    return NULL;
}

static void *cycle_thread(void *arg)
{
    cycler *w = arg;
    redisContext *r = redisConnectUnix(w->s->sock);
    redislock_lock *l = NULL;
    int i;

    w->err = "connect";
    if (r != NULL && !r->err &&
        redislock_lock_new(w->c, KEY, strlen(KEY), &l) == REDISLOCK_OK)
        for (w->err = NULL, i = 0; w->err == NULL && i < NCYCLES; i++)
            w->err = one_cycle(l, r);
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    redislock_lock_free(l);
    if (r != NULL)
        redisFree(r);
    return NULL;
}

void test_wake_no_leftovers(void)
{
    env e = env_start(0);
    cycler w[NCYCLERS];
    int64_t t0, t_done, t_empty;
    long long n;
    int i;

    memset(w, 0, sizeof w);
    t0 = th_now_ms();
    for (i = 0; i < NCYCLERS; i++) {
        w[i].c = e.c;
        w[i].s = e.s;
        ASSERT_EQ_INT(pthread_create(&w[i].t, NULL, cycle_thread, &w[i]), 0);
    }
    for (i = 0; i < NCYCLERS; i++)
        th_join_within(w[i].t, 60000);
    t_done = th_now_ms();
    for (i = 0; i < NCYCLERS; i++)
        if (w[i].err != NULL)
            test_fail_(__FILE__, __LINE__, "thread %d: %s failed: %s", i,
                       w[i].err, w[i].detail);
    while ((n = th_cmd_int(e.r, "DBSIZE")) != 0 && th_now_ms() < t_done + 3000)
        th_sleep_ms(10);
    t_empty = th_now_ms();
    test_log("%d threads x %d cycles (TTL 500 ms) in %lld ms; DBSIZE 0 "
             "%lld ms after the last release",
             NCYCLERS, NCYCLES, (long long)(t_done - t0),
             (long long)(t_empty - t_done));
    ASSERT_EQ_INT(n, 0);
    env_stop(&e);
}

void test_wake_cancel_blocked_waiter(void)
{
    env e = env_start(30000);
    redisReply *rep;
    int64_t t0;
    waiter w;

    waiter_start(&w, e.c, KEY);
    th_wait_blocked(e.r, 1, SETUP_MS);
    t0 = th_now_us();
    redislock_cancel(w.l);
    th_join_within(w.t, 3000);
    test_log("cancel of a waiter blocked behind a 30 s holder: ECANCELED "
             "in %lld us",
             (long long)(w.done_us - t0));
    ASSERT_ERR(w.err, REDISLOCK_ECANCELED);
    ASSERT_LE((w.done_us - t0) / 1000, 100);
    ASSERT_EQ_INT(redislock_holds(w.l), 0);
    /* The cancelled call closed its blocked connection before it returned;
     * the server hears that close on its own time (over TCP loopback
     * another CPU's packets may come first: this INFO did once, on
     * 2026-11-30, beside two other suites), so it is given a moment. */
    th_wait_blocked(e.r, 0, 1000);
    /* A cancel reaches the call directly: no per-waiter list is made
     * (until 2026-11-30 the cancel pushed to one). */
    rep = th_cmd(e.r, "KEYS %s", BASE "h:*");
    ASSERT_EQ_INT(rep->elements, 0);
    freeReplyObject(rep);
    ASSERT_KEY(e.r, KEY, redislock_token(e.holder));
    redislock_lock_free(w.l);
    env_stop(&e);
}

/* A third thread sharing the waiters' client: acquire and release a free
 * key NUSES times, recording the slowest round. */
#define NUSES 20

typedef struct user {
    pthread_t t;
    redislock_client *c;
    redislock_err err;
    int64_t worst_us;
    char detail[256];
} user;

static void *use_thread(void *arg)
{
    user *u = arg;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = NULL;
    int64_t t0;
    int i;

    u->err = redislock_lock_new(u->c, "wk:free", 7, &l);
    for (i = 0; u->err == REDISLOCK_OK && i < NUSES; i++) {
        t0 = th_now_us();
        u->err = redislock_acquire(l, &o);
        if (u->err == REDISLOCK_OK)
            u->err = redislock_release(l);
        if (th_now_us() - t0 > u->worst_us)
            u->worst_us = th_now_us() - t0;
    }
    snprintf(u->detail, sizeof u->detail, "%s", redislock_errdetail());
    redislock_lock_free(l);
    return NULL;
}

void test_wake_waiters_leave_pool_free(void)
{
    env e = env_start(0);
    redislock_options co = {0};
    redislock_acquire_options ho = th_aopts(30000, 0, 0);
    redislock_client *shared;
    redislock_lock *ha = th_lock(e.c, "wk:a"), *hb = th_lock(e.c, "wk:b");
    long long base, waiting, after, freed;
    waiter wa, wb;
    user u;

    ASSERT_OK(redislock_acquire(ha, &ho));
    ASSERT_OK(redislock_acquire(hb, &ho));
    co.max_connections = 2;
    shared = th_client_url(e.s->unix_url, &co);
    base = th_info_field(e.r, "clients", "connected_clients");
    waiter_start(&wa, shared, "wk:a");
    waiter_start(&wb, shared, "wk:b");
    th_wait_blocked(e.r, 2, SETUP_MS);
    waiting = th_info_field(e.r, "clients", "connected_clients");

    memset(&u, 0, sizeof u);
    u.c = shared;
    ASSERT_EQ_INT(pthread_create(&u.t, NULL, use_thread, &u), 0);
    /* With the pool taken by the waiters this would never end. */
    th_join_within(u.t, 5000);
    if (u.err != REDISLOCK_OK)
        test_fail_(__FILE__, __LINE__, "third thread: %s; %s",
                   redislock_errname(u.err), u.detail);
    ASSERT_EQ_INT(th_blocked_clients(e.r), 2);

    ASSERT_OK(redislock_release(ha));
    ASSERT_OK(redislock_release(hb));
    waiter_join_ok(&wa, 3000);
    waiter_join_ok(&wb, 3000);
    ASSERT_OK(redislock_release(wa.l));
    ASSERT_OK(redislock_release(wb.l));
    after = th_info_field(e.r, "clients", "connected_clients");
    redislock_lock_free(wa.l);
    redislock_lock_free(wb.l);
    freed = th_info_field(e.r, "clients", "connected_clients");
    test_log("max_connections 2: %d acquire+release rounds beside 2 "
             "blocked waiters, slowest %lld us",
             NUSES, (long long)u.worst_us);
    test_log("connections: %lld before the waits, %lld while 2 wait, "
             "%lld after the waits ended, %lld after the handles were "
             "freed",
             base, waiting, after, freed);
    ASSERT_LE(u.worst_us / 1000, 100);
    /* Each blocked waiter blocks on one connection, taken out of the
     * pool while it blocks (the pool may open others meanwhile, up to its
     * max): the two blocked clients above, and no more than that max
     * besides. */
    ASSERT_LE(waiting - base, 2 + co.max_connections);
    redislock_client_free(shared);
    redislock_lock_free(ha);
    redislock_lock_free(hb);
    env_stop(&e);
}

/* connected_clients once it reads want, polled (a connection the client
 * closes leaves the server's count a little later); fails after ms. */
static long long wait_connected(redisContext *r, long long want, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    long long got;

    while ((got = th_info_field(r, "clients", "connected_clients")) != want &&
           th_now_ms() < deadline)
        th_sleep_ms(2);
    return got;
}

/* A handle that blocks right after its attempt blocks on the connection
 * the attempt used (taken out of the pool while it blocks, given back
 * after): its client holds one server connection while it waits, and
 * still one after it got the lock and released it. */
void test_wake_waiter_holds_one_connection(void)
{
    env e = env_start(30000);
    redislock_client *own;
    long long base, waiting, after;
    waiter w;

    base = th_info_field(e.r, "clients", "connected_clients");
    own = th_client_url(e.s->unix_url, NULL);
    waiter_start(&w, own, KEY);
    th_wait_blocked(e.r, 1, SETUP_MS);
    waiting = wait_connected(e.r, base + 1, 1000);
    ASSERT_OK(redislock_release(e.holder));
    waiter_join_ok(&w, 3000);
    ASSERT_OK(redislock_release(w.l));
    after = wait_connected(e.r, base + 1, 1000);
    test_log("server connections of the waiter's client: %lld while it "
             "waits, %lld after it took and released the lock",
             waiting - base, after - base);
    ASSERT_EQ_INT(waiting - base, 1);
    ASSERT_EQ_INT(after - base, 1);
    redislock_lock_free(w.l);
    redislock_client_free(own);
    env_stop(&e);
}

/* The constructor's connection lies idle until the first call takes it
 * over. One the server closed meanwhile (CLIENT KILL here; a timeout or
 * a restart alike) is replaced, not used: the first acquire succeeds. */
void test_wake_idle_connection_closed_is_replaced(void)
{
    env e = env_start(0);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_client *own = th_client_url(e.s->unix_url, NULL);
    redislock_lock *l = th_lock(own, "wk:killed");

    /* Every connection but e.r's: the constructor's among them. */
    ASSERT_GE(th_cmd_int(e.r, "CLIENT KILL TYPE normal SKIPME yes"), 1);
    ASSERT_EQ_INT(wait_connected(e.r, 1, 2000), 1);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_KEY(e.r, "wk:killed", redislock_token(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(own);
    env_stop(&e);
}

/* N threads calling at once hold N connections (each waiter blocks on
 * its own); once their calls end, the client keeps max_connections of
 * them idle per server and closes the rest. */
#define IDLE_WAITERS 5

void test_wake_idle_connections_bounded(void)
{
    env e = env_start(0);
    redislock_acquire_options ho = th_aopts(30000, 0, 0);
    redislock_options co = {0};
    redislock_client *shared;
    redislock_lock *h[IDLE_WAITERS];
    waiter w[IDLE_WAITERS];
    long long base, waiting, after;
    char key[32];
    int i;

    for (i = 0; i < IDLE_WAITERS; i++) {
        snprintf(key, sizeof key, "wk:idle:%d", i);
        h[i] = th_lock(e.c, key);
        ASSERT_OK(redislock_acquire(h[i], &ho));
    }
    base = th_info_field(e.r, "clients", "connected_clients");
    co.max_connections = 2;
    shared = th_client_url(e.s->unix_url, &co);
    for (i = 0; i < IDLE_WAITERS; i++) {
        snprintf(key, sizeof key, "wk:idle:%d", i);
        waiter_start(&w[i], shared, key);
    }
    th_wait_blocked(e.r, IDLE_WAITERS, SETUP_MS);
    waiting = wait_connected(e.r, base + IDLE_WAITERS, 1000);
    for (i = 0; i < IDLE_WAITERS; i++)
        ASSERT_OK(redislock_release(h[i]));
    for (i = 0; i < IDLE_WAITERS; i++)
        waiter_join_ok(&w[i], 3000);
    for (i = 0; i < IDLE_WAITERS; i++) {
        ASSERT_OK(redislock_release(w[i].l));
        redislock_lock_free(w[i].l);
    }
    after = wait_connected(e.r, base + co.max_connections, 2000);
    test_log("connections of a client with max_connections %d: %lld while "
             "%d threads wait, %lld once their calls have ended",
             co.max_connections, waiting - base, IDLE_WAITERS, after - base);
    ASSERT_EQ_INT(waiting - base, IDLE_WAITERS);
    ASSERT_EQ_INT(after - base, co.max_connections);
    redislock_client_free(shared);
    ASSERT_EQ_INT(wait_connected(e.r, base, 2000), base);
    for (i = 0; i < IDLE_WAITERS; i++)
        redislock_lock_free(h[i]);
    env_stop(&e);
}

/* A woken waiter's next attempt goes out behind its BLPOP, so Redis runs
 * it as soon as the release wakes it: by the time the releaser has its
 * reply, the waiter holds the lock, and a request sent after the release
 * (here another client's single try) cannot take it first. */
#define DIRECT_ROUNDS 20

void test_wake_release_hands_over_directly(void)
{
    env e = env_start(0);
    redislock_acquire_options ho = th_aopts(30000, 0, 0);
    redislock_client *other = th_client(e.s);
    redislock_lock *late = th_lock(other, KEY);
    waiter w;
    int i;

    for (i = 0; i < DIRECT_ROUNDS; i++) {
        block_behind_holder(&e, &ho, &w);
        ASSERT_OK(redislock_release(e.holder));
        /* Straight after the release's reply: the waiter's already. */
        ASSERT_ERR(redislock_acquire(late, &ho), REDISLOCK_EHELD);
        waiter_join_ok(&w, 3000);
        ASSERT_KEY(e.r, KEY, w.token);
        ASSERT_OK(redislock_release(w.l));
        redislock_lock_free(w.l);
    }
    test_log("%d releases, each found the woken waiter holding the lock "
             "before any later request ran",
             DIRECT_ROUNDS);
    redislock_lock_free(late);
    redislock_client_free(other);
    env_stop(&e);
}

/* A cancel that reaches a waiter whose attempt, sent behind its BLPOP,
 * then took the lock (freed without a release: deleted here, as an
 * eviction would) must not leave it held: the attempt is undone. */
void test_wake_cancel_undoes_attempt_behind_it(void)
{
    env e = env_start(30000);
    int64_t deadline;
    long long n;
    waiter w;

    waiter_start(&w, e.c, KEY);
    th_wait_blocked(e.r, 1, SETUP_MS);
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL %s", KEY), 1);
    redislock_cancel(w.l);
    th_join_within(w.t, 3000);
    ASSERT_ERR(w.err, REDISLOCK_ECANCELED);
    ASSERT_EQ_INT(redislock_holds(w.l), 0);
    deadline = th_now_ms() + 3000;
    while ((n = th_cmd_int(e.r, "EXISTS %s", KEY)) != 0 &&
           th_now_ms() < deadline)
        th_sleep_ms(5);
    test_log("cancelled waiter: ECANCELED, lock key gone %s",
             n == 0 ? "within 3 s" : "NOT within 3 s");
    ASSERT_EQ_INT(n, 0);
    redislock_lock_free(w.l);
    env_stop(&e);
}

/* A waiter that blocked for longer than its own lease takes the lock with
 * the attempt behind its BLPOP, whose validity would count from before
 * the block: it confirms the lease instead, and returns with (nearly)
 * its whole TTL valid. */
void test_wake_long_wait_keeps_validity(void)
{
    env e = env_start(1500);
    redislock_acquire_options o = th_aopts(1000, REDISLOCK_WAIT_FOREVER, 0);
    int64_t valid, pttl;
    waiter w;

    th_waiter_start(&w, e.c, KEY, &o);
    th_wait_blocked(e.r, 1, SETUP_MS);
    th_sleep_ms(1100);
    ASSERT_OK(redislock_release(e.holder));
    waiter_join_ok(&w, 3000);
    valid = redislock_valid_ms(w.l);
    pttl = th_cmd_int(e.r, "PTTL %s", KEY);
    test_log("1000 ms lease taken after a 1.1 s wait: valid %lld ms, "
             "PTTL %lld ms",
             (long long)valid, (long long)pttl);
    ASSERT_GE(valid, 1000 / 2);
    ASSERT_LE(valid, pttl);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    env_stop(&e);
}

/* The server lost the scripts while the waiter blocked (SCRIPT FLUSH, a
 * restart): the attempt behind its BLPOP meets NOSCRIPT and goes again
 * whole, without a second BLPOP. */
void test_wake_script_flushed_while_blocked(void)
{
    env e = env_start(30000);
    waiter w;

    waiter_start(&w, e.c, KEY);
    th_wait_blocked(e.r, 1, SETUP_MS);
    freeReplyObject(th_cmd(e.r, "SCRIPT FLUSH"));
    ASSERT_OK(redislock_release(e.holder));
    waiter_join_ok(&w, 3000);
    ASSERT_KEY(e.r, KEY, w.token);
    ASSERT_EQ_INT(th_blocked_clients(e.r), 0);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    env_stop(&e);
}
