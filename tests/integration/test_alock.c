/*
 * A client's lock operations on an event loop (src/alock.c), driven by
 * the tests' own poll() loop (harness/apploop.h), one thread: many
 * acquires, extends and releases at once; waiters woken by a release (a
 * lease of 30 s that only a wake-up can beat); a deadline, a cancel, a
 * lock freed with its wait under way, an attempt cancelled in flight
 * (nothing left held); a server that stops answering (every callback by
 * the command timeout); what the loop refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alock.h"
#include "clock.h"
#include "harness/apploop.h"
#include "harness/fixture.h"
#include "harness/server.h"
#include "test.h"

static void al_io(void *al, int fd, int what)
{
    rl__alock_io(al, fd, what);
}

static void al_timeout(void *al)
{
    rl__alock_timeout(al);
}

static rl__alock *start(redislock_client *c, app *a)
{
    rl__loop_ops ops = {app_watch, app_timer, a};
    rl__alock *al = NULL;

    ASSERT_OK(rl__alock_new(c, &ops, &al));
    a->io = al_io;
    a->timeout = al_timeout;
    a->target = al;
    return al;
}

/* What one lock's operations came back with. */
typedef struct done {
    int calls;
    redislock_err err;
    int64_t at_us;
    char detail[160];
} done;

static void record(redislock_lock *l, redislock_err err, void *arg)
{
    done *d = arg;

    (void)l;
    d->calls++;
    d->err = err;
    d->at_us = rl__now_us();
    snprintf(d->detail, sizeof d->detail, "%s",
             err ? redislock_errdetail() : "");
}

/* The key holds token (GET: a plain lock's value). */
#define expect_token(r, key, token)                                            \
    do {                                                                       \
        char *v_ = th_cmd_str(r, NULL, "GET %s", key);                         \
        ASSERT(v_ != NULL);                                                    \
        ASSERT_EQ_STR(v_, token);                                              \
        free(v_);                                                              \
    } while (0)

/* Turns the loop until *n reaches want, within ms. */
static void run_until(app *a, const int *n, int want, int64_t ms)
{
    int64_t end = rl__now_us() + ms * 1000;

    while (*n < want) {
        if (rl__now_us() > end)
            test_fail_(__FILE__, __LINE__, "%d of %d callbacks after %lld ms",
                       *n, want, (long long)ms);
        app_turn(a);
    }
}

/* Turns the loop for ms. */
static void run_for(app *a, int64_t ms)
{
    int64_t end = rl__now_us() + ms * 1000;

    while (rl__now_us() < end) {
        if (a->timer_at == 0 || a->timer_at > end)
            a->timer_at = end; /* the test's own wake-up */
        app_turn(a);
    }
}

#define MANY 200

typedef struct many {
    redislock_lock *l[MANY];
    done d[MANY];
    int n;
} many;

static void count(redislock_lock *l, redislock_err err, void *arg)
{
    many *m = arg;
    int i;

    for (i = 0; i < MANY && m->l[i] != l; i++)
        ;
    ASSERT(i < MANY);
    record(l, err, &m->d[i]);
    m->n++;
}

/* Extends every lock of m to ttl_ms, or with 0 releases it: each
 * callback comes once, with success. */
static void all_ok(app *a, rl__alock *al, many *m, int64_t ttl_ms)
{
    int i;

    m->n = 0;
    memset(m->d, 0, sizeof m->d);
    for (i = 0; i < MANY; i++)
        ASSERT_OK(ttl_ms ? rl__alock_extend(al, m->l[i], ttl_ms, count, m)
                         : rl__alock_release(al, m->l[i], 0, count, m));
    run_until(a, &m->n, MANY, 10000);
    for (i = 0; i < MANY; i++) {
        ASSERT_EQ_INT(m->d[i].calls, 1);
        ASSERT_ERR(m->d[i].err, REDISLOCK_OK);
    }
}

void test_alock_many_at_once(void)
{
    th_env e = th_env_start();
    app a = {0};
    rl__alock *al = start(e.c, &a);
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    static many m;
    char key[32];
    int i;

    memset(&m, 0, sizeof m);
    for (i = 0; i < MANY; i++) {
        snprintf(key, sizeof key, "al:many:%d", i);
        m.l[i] = th_lock(e.c, key);
        ASSERT_OK(rl__alock_acquire(al, m.l[i], &o, count, &m));
    }
    run_until(&a, &m.n, MANY, 10000);
    for (i = 0; i < MANY; i++) {
        ASSERT_EQ_INT(m.d[i].calls, 1);
        ASSERT_ERR(m.d[i].err, REDISLOCK_OK);
        ASSERT(redislock_fence(m.l[i]) > 0);
        ASSERT(redislock_valid_ms(m.l[i]) > 4000);
        snprintf(key, sizeof key, "al:many:%d", i);
        expect_token(e.r, key, redislock_token(m.l[i]));
    }
    /* Extend them all, then release them all. */
    all_ok(&a, al, &m, 60000);
    for (i = 0; i < MANY; i++)
        ASSERT(redislock_valid_ms(m.l[i]) > 50000);
    ASSERT(th_pttl(e.r, "al:many:7") > 50000);
    all_ok(&a, al, &m, 0);
    for (i = 0; i < MANY; i++) {
        ASSERT_EQ_INT(redislock_valid_ms(m.l[i]), 0);
        redislock_lock_free(m.l[i]);
    }
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    rl__alock_free(al);
    th_env_stop(&e);
}

#define WAITERS 20

typedef struct queue {
    rl__alock *al;
    redisContext *r;
    redislock_lock *l[WAITERS];
    done d[WAITERS];
    int acquired, released, holding;
} queue;

static int index_of(queue *q, redislock_lock *l)
{
    int i;

    for (i = 0; i < WAITERS && q->l[i] != l; i++)
        ;
    ASSERT(i < WAITERS);
    return i;
}

static void released(redislock_lock *l, redislock_err err, void *arg)
{
    queue *q = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    ASSERT_EQ_INT(q->holding, 1);
    q->holding = 0;
    q->released++;
}

/* Each waiter, once it holds the key alone (the server says its token),
 * gives it back at once from its callback. */
static void acquired(redislock_lock *l, redislock_err err, void *arg)
{
    queue *q = arg;
    int i = index_of(q, l);

    record(l, err, &q->d[i]);
    ASSERT_ERR(err, REDISLOCK_OK);
    ASSERT_EQ_INT(q->holding, 0);
    expect_token(q->r, "al:q", redislock_token(l));
    q->holding = 1;
    q->acquired++;
    ASSERT_OK(rl__alock_release(q->al, l, 0, released, q));
}

void test_alock_waiters_woken_by_release(void)
{
    th_env e = th_env_start();
    app a = {0};
    static queue q;
    redislock_client *other = th_client(e.s);
    redislock_lock *holder = th_lock(other, "al:q");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    int64_t t0;
    int i;

    memset(&q, 0, sizeof q);
    q.al = start(e.c, &a);
    q.r = e.r;
    /* A holder with a lease of 30 s, on a blocking client. */
    ASSERT_OK(redislock_acquire(holder, &o));
    o = th_aopts(5000, 20000, 0);
    for (i = 0; i < WAITERS; i++) {
        q.l[i] = th_lock(e.c, "al:q");
        ASSERT_OK(rl__alock_acquire(q.al, q.l[i], &o, acquired, &q));
    }
    /* All refused, subscribed, paused. */
    run_for(&a, 300);
    ASSERT_EQ_INT(q.acquired, 0);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    /* Each release wakes the next: without wake-ups, the first would
     * wait for the 30 s lease. */
    run_until(&a, &q.released, WAITERS, 10000);
    ASSERT_LT((rl__now_us() - t0) / 1000, 5000);
    for (i = 0; i < WAITERS; i++)
        ASSERT_EQ_INT(q.d[i].calls, 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS al:q"), 0);
    for (i = 0; i < WAITERS; i++)
        redislock_lock_free(q.l[i]);
    rl__alock_free(q.al);
    redislock_lock_free(holder);
    redislock_client_free(other);
    th_env_stop(&e);
}

void test_alock_deadline_cancel_and_free(void)
{
    th_env e = th_env_start();
    app a = {0};
    rl__alock *al = start(e.c, &a);
    redislock_client *other = th_client(e.s);
    redislock_lock *holder = th_lock(other, "al:d");
    redislock_lock *la = th_lock(e.c, "al:d"), *lb = th_lock(e.c, "al:d"),
                   *lc = th_lock(e.c, "al:d"), *ld = th_lock(e.c, "al:free"),
                   *le = th_lock(e.c, "al:d");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    done da = {0}, db = {0}, dc = {0}, dd = {0}, de = {0};
    int64_t t0;
    int i;

    ASSERT_OK(redislock_acquire(holder, &o));
    t0 = rl__now_us();
    o = th_aopts(5000, 300, 0);
    ASSERT_OK(rl__alock_acquire(al, la, &o, record, &da));
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    ASSERT_OK(rl__alock_acquire(al, lb, &o, record, &db));
    ASSERT_OK(rl__alock_acquire(al, lc, &o, record, &dc));
    /* One operation at a time per handle. */
    ASSERT_ERR(rl__alock_acquire(al, lb, &o, record, &db), REDISLOCK_EINVAL);
    run_until(&a, &da.calls, 1, 3000);
    ASSERT_ERR(da.err, REDISLOCK_EHELD);
    ASSERT_GE((da.at_us - t0) / 1000, 290);
    ASSERT_LT((da.at_us - t0) / 1000, 1500);
    /* Cancelled: its callback comes from the cancel itself. */
    rl__alock_cancel(lb);
    ASSERT_EQ_INT(db.calls, 1);
    ASSERT_ERR(db.err, REDISLOCK_ECANCELED);
    /* Freed with its wait under way: the same. */
    redislock_lock_free(lc);
    ASSERT_EQ_INT(dc.calls, 1);
    ASSERT_ERR(dc.err, REDISLOCK_ECANCELED);
    /* An attempt cancelled before its reply (here before it was even
     * written): whatever it did is undone. */
    o.wait_ms = 0;
    ASSERT_OK(rl__alock_acquire(al, ld, &o, record, &dd));
    rl__alock_cancel(ld);
    ASSERT_ERR(dd.err, REDISLOCK_ECANCELED);
    run_for(&a, 300); /* the attempt went out and ran */
    for (i = 0; i < 300 && th_cmd_int(e.r, "EXISTS al:free") != 0; i++)
        run_for(&a, 10);
    run_for(&a, 200);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS al:free"), 0);
    /* Nobody took the key behind the holder's back. */
    expect_token(e.r, "al:d", redislock_token(holder));
    ASSERT_EQ_INT(da.calls + db.calls + dc.calls + dd.calls, 4);
    /* The channel's last waiter has gone (its unsubscribe may be under
     * way): a new waiter listens again, and the release wakes it well
     * before the 10 s lease it would otherwise wait out. */
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    ASSERT_OK(rl__alock_acquire(al, le, &o, record, &de));
    run_for(&a, 200);
    ASSERT_EQ_INT(de.calls, 0);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    run_until(&a, &de.calls, 1, 3000);
    ASSERT_ERR(de.err, REDISLOCK_OK);
    ASSERT_LT((de.at_us - t0) / 1000, 1000);
    expect_token(e.r, "al:d", redislock_token(le));
    ASSERT_OK(rl__alock_release(al, le, 0, record, &de));
    run_until(&a, &de.calls, 2, 3000);
    ASSERT_ERR(de.err, REDISLOCK_OK);
    redislock_lock_free(le);
    redislock_lock_free(la);
    redislock_lock_free(lb);
    redislock_lock_free(ld);
    rl__alock_free(al);
    redislock_lock_free(holder);
    redislock_client_free(other);
    th_env_stop(&e);
}

void test_alock_server_stops_answering(void)
{
    th_server *s = th_server_start(NULL);
    redislock_options opts = {0};
    redislock_client *c;
    app a = {0};
    rl__alock *al;
    redislock_lock *l[5];
    done d[5] = {{0}};
    redisContext *r;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    int64_t t0;
    int i, n = 0;

    opts.connect_timeout_ms = 300;
    opts.command_timeout_ms = 300;
    c = th_client_url(s->unix_url, &opts);
    al = start(c, &a);
    l[0] = th_lock(c, "al:s:0");
    ASSERT_OK(rl__alock_acquire(al, l[0], &o, record, &d[0]));
    run_until(&a, &d[0].calls, 1, 3000);
    ASSERT_ERR(d[0].err, REDISLOCK_OK);
    th_server_pause(s);
    t0 = rl__now_us();
    ASSERT_OK(rl__alock_release(al, l[0], 0, record, &d[0]));
    for (i = 1; i < 4; i++) {
        char key[16];

        snprintf(key, sizeof key, "al:s:%d", i);
        l[i] = th_lock(c, key);
        ASSERT_OK(rl__alock_acquire(al, l[i], &o, record, &d[i]));
    }
    for (;;) {
        for (n = 0, i = 0; i < 4; i++)
            n += d[i].calls;
        if (n == 5)
            break;
        ASSERT_LT((rl__now_us() - t0) / 1000, 2000);
        app_turn(&a);
    }
    /* Every callback by the command timeout (300 ms, and a turn). */
    for (i = 0; i < 4; i++) {
        ASSERT_ERR(d[i].err, REDISLOCK_ETIMEDOUT);
        ASSERT_LT((d[i].at_us - t0) / 1000, 1000);
    }
    th_server_resume(s);
    /* The loop connects again. */
    memset(d, 0, sizeof d);
    l[4] = th_lock(c, "al:s:new");
    ASSERT_OK(rl__alock_acquire(al, l[4], &o, record, &d[4]));
    run_until(&a, &d[4].calls, 1, 3000);
    ASSERT_ERR(d[4].err, REDISLOCK_OK);
    ASSERT_OK(rl__alock_release(al, l[4], 0, record, &d[4]));
    run_until(&a, &d[4].calls, 2, 3000);
    ASSERT_ERR(d[4].err, REDISLOCK_OK);
    /* The attempts whose replies were lost hold nothing (never run, or
     * undone by the janitor): their keys are gone long before their 5 s
     * leases end. The release whose reply was lost leaves its lock to
     * its lease. */
    r = th_server_redis(s);
    for (i = 0; i < 40 && th_cmd_int(r, "EXISTS al:s:1 al:s:2 al:s:3"); i++)
        run_for(&a, 50);
    test_log("lost attempts undone after %d ms", i * 50);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS al:s:1 al:s:2 al:s:3"), 0);
    ASSERT_LE(th_pttl(r, "al:s:0"), 5000);
    redisFree(r);
    for (i = 0; i < 5; i++)
        redislock_lock_free(l[i]);
    rl__alock_free(al);
    redislock_client_free(c);
    th_server_stop(s);
}

void test_alock_refused(void)
{
    th_env e = th_env_start();
    app a = {0};
    rl__alock *al = start(e.c, &a);
    redislock_client *other = th_client(e.s);
    redislock_lock *l = th_lock(e.c, "al:r"), *lo = th_lock(other, "al:r");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    done d = {0};

    ASSERT_ERR(rl__alock_acquire(al, NULL, &o, record, &d), REDISLOCK_EINVAL);
    ASSERT_ERR(rl__alock_acquire(al, lo, &o, record, &d), REDISLOCK_EINVAL);
    ASSERT_ERR(rl__alock_acquire(al, l, &o, NULL, &d), REDISLOCK_EINVAL);
    o.fair = 1;
    ASSERT_ERR(rl__alock_acquire(al, l, &o, record, &d), REDISLOCK_EINVAL);
    o.fair = 0;
    o.watchdog = 1;
    ASSERT_ERR(rl__alock_acquire(al, l, &o, record, &d), REDISLOCK_EINVAL);
    o.watchdog = 0;
    o.ttl_ms = -5;
    ASSERT_ERR(rl__alock_acquire(al, l, &o, record, &d), REDISLOCK_EINVAL);
    /* Not held: nothing to release or extend. */
    ASSERT_ERR(rl__alock_release(al, l, 0, record, &d), REDISLOCK_EINVAL);
    ASSERT_ERR(rl__alock_extend(al, l, 1000, record, &d), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(d.calls, 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_lock_free(l);
    redislock_lock_free(lo);
    rl__alock_free(al);
    redislock_client_free(other);
    th_env_stop(&e);
}

#define SHARERS 6

typedef struct sharers {
    rl__alock *al;
    redisContext *r;
    redislock_lock *l[SHARERS];
    int n, acquired, released, holding, most;
    int release_all_at; /* readers: hold until this many have come */
} sharers;

static void share_released(redislock_lock *l, redislock_err err, void *arg)
{
    sharers *s = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    s->holding--;
    s->released++;
}

static void share_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    sharers *s = arg;
    int i;

    ASSERT_ERR(err, REDISLOCK_OK);
    s->acquired++;
    if (++s->holding > s->most)
        s->most = s->holding;
    if (s->release_all_at == 0) {
        ASSERT_OK(rl__alock_release(s->al, l, 0, share_released, s));
    } else if (s->acquired == s->release_all_at) {
        for (i = 0; i < s->n; i++)
            ASSERT_OK(rl__alock_release(s->al, s->l[i], 0, share_released, s));
    }
}

/* n sharers on key with o wait behind a blocking holder (hold_o, a 30 s
 * lease) until it releases; then all get in within 3 s. */
static sharers *share_run(th_env *e, app *a, rl__alock *al, const char *key,
                          int n, const redislock_acquire_options *hold_o,
                          int holders, const redislock_acquire_options *o,
                          int release_all_at)
{
    static sharers s;
    redislock_lock *h[2];
    int64_t t0;
    int i;

    memset(&s, 0, sizeof s);
    s.al = al;
    s.r = e->r;
    s.n = n;
    s.release_all_at = release_all_at;
    for (i = 0; i < holders; i++) {
        h[i] = th_lock(e->c, key);
        ASSERT_OK(redislock_acquire(h[i], hold_o));
    }
    for (i = 0; i < n; i++) {
        s.l[i] = th_lock(e->c, key);
        ASSERT_OK(rl__alock_acquire(al, s.l[i], o, share_acquired, &s));
    }
    run_for(a, 300);
    ASSERT_EQ_INT(s.acquired, 0);
    t0 = rl__now_us();
    for (i = 0; i < holders; i++) {
        ASSERT_OK(redislock_release(h[i]));
        redislock_lock_free(h[i]);
    }
    run_until(a, &s.released, n, 10000);
    ASSERT_LT((rl__now_us() - t0) / 1000, 3000);
    for (i = 0; i < n; i++)
        redislock_lock_free(s.l[i]);
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", key), 0);
    return &s;
}

void test_alock_readers_and_permits_woken(void)
{
    th_env e = th_env_start();
    app a = {0};
    rl__alock *al = start(e.c, &a);
    redislock_acquire_options hold = th_aopts(30000, 0, 0);
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    sharers *s;

    /* Readers behind a writer: the writer's release wakes one, each
     * reader that gets in wakes the next, and all hold at once. */
    o.shared = 1;
    s = share_run(&e, &a, al, "al:rw", SHARERS, &hold, 1, &o, SHARERS);
    ASSERT_EQ_INT(s->most, SHARERS);
    /* Permits of a semaphore of 2 behind two holders: never more than 2
     * at once, each given back at once. */
    o.shared = 0;
    o.limit = 2;
    hold.limit = 2;
    s = share_run(&e, &a, al, "al:sem", SHARERS, &hold, 2, &o, 0);
    ASSERT_LE(s->most, 2);
    ASSERT_EQ_INT(s->acquired, SHARERS);
    rl__alock_free(al);
    th_env_stop(&e);
}
