/*
 * The adapters' scenarios: see adapters.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "apploop.h"
#include "clock.h"
#include "fixture.h"
#include "server.h"
#include "util.h"
#include "test.h"

/* What one lock's operations came back with. */
void ad_record(redislock_lock *l, redislock_err err, void *arg)
{
    ad_done *d = arg;

    (void)l;
    d->calls++;
    d->err = err;
    d->at_us = rl__now_us();
    snprintf(d->detail, sizeof d->detail, "%s", redislock_errdetail());
}

void ad_run_until_at_(const char *file, int line, const driver *d, void *h,
                      const int *n, int want, int64_t ms)
{
    int64_t end = rl__now_us() + ms * 1000;

    while (*n < want) {
        if (rl__now_us() > end)
            test_fail_(file, line, "%s: %d of %d callbacks after %lld ms",
                       d->name, *n, want, (long long)ms);
        d->turn(h);
    }
}

void ad_run_for(const driver *d, void *h, int64_t ms)
{
    int64_t end = rl__now_us() + ms * 1000;

    while (rl__now_us() < end)
        d->turn(h);
}

void ad_on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    ad_lost *g = arg;

    g->calls++;
    g->why = why;
    g->valid = redislock_valid_ms(l);
}

void ad_holder_turn(void *arg)
{
    ad_holder *x = arg;

    ad_run_for(x->d, x->h, 20);
}

int ad_holder_holds(void *arg)
{
    ad_holder *x = arg;

    return x->lost.calls == 0 && redislock_check(x->l) == REDISLOCK_OK;
}

static void turn_released(redislock_lock *l, redislock_err err, void *arg)
{
    ad_turns *t = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    t->released++;
}

void ad_turn(redislock_lock *l, redislock_err err, void *arg)
{
    ad_turns *t = arg;
    int i;

    for (i = 0; i < AD_TURNS_MAX && t->w[i] != l; i++)
        ;
    ASSERT(i < AD_TURNS_MAX);
    ad_record(l, err, &t->d[i]);
    ASSERT_ERR(err, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_release(t->lp, l, 0, turn_released, t));
}

/* The tests' own application loop (apploop.h) as a driver. */
static void *poll_open(redislock_client *c, redislock_loop **lp)
{
    app *a = calloc(1, sizeof *a);

    ASSERT(a != NULL);
    ASSERT_OK(redislock_loop_new(lp, c, app_watch, app_timer, a));
    app_drive(a, *lp);
    a->max_wait_ms = 50;
    return a;
}

static void poll_turn(void *h)
{
    app_turn(h);
}

static void poll_close(void *h)
{
    app *a = h;

    redislock_loop_free(a->target);
    /* Every socket unwatched, the timer cancelled. */
    ASSERT_EQ_INT(app_watched(a), 0);
    ASSERT_EQ_INT(a->timer_at, 0);
    free(a);
}

/* Turns while anything is watched or timed: what an application's loop
 * over app_watch and app_timer would do before it ends. */
static int poll_run(void *h, int64_t ms)
{
    app *a = h;
    int64_t end = rl__now_us() + ms * 1000;

    while (app_watched(a) > 0 || a->timer_at != 0) {
        if (rl__now_us() > end)
            return 0;
        app_turn(a);
    }
    return 1;
}

const driver adapter_poll = {"poll", poll_open, poll_turn, poll_close,
                             poll_run};

#define MANY 100
#define WAITERS 10

/* The key holds token (GET: a plain lock's value, perhaps marked by a
 * waiter: th_value_is_token). */
static void expect_token(redisContext *r, const char *key, const char *token)
{
    char *v = th_cmd_str(r, NULL, "GET %s", key);

    ASSERT(v != NULL);
    if (!th_value_is_token(v, token))
        ASSERT_EQ_STR(v, token);
    free(v);
}

/* Locks of a batch and the batch's counts. */
typedef struct batch {
    redislock_loop *lp;
    redisContext *r;
    const char *key; /* exclusive waiters' key: each holds it alone */
    redislock_lock *l[MANY];
    ad_done d[MANY];
    int n, acquired, released, holding, most;
    int release_all_at; /* 0: each gives its lock back at once; else all
                           of them once this many hold (sharers) */
    const char *sem;    /* a semaphore's key, and its limit */
    int limit;
} batch;

static void batch_released(redislock_lock *l, redislock_err err, void *arg)
{
    batch *b = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    b->holding--;
    b->released++;
}

/* The callback of b's lock l came with err, which must be success:
 * recorded. */
static void batch_record(batch *b, redislock_lock *l, redislock_err err)
{
    int i;

    for (i = 0; i < b->n && b->l[i] != l; i++)
        ;
    ASSERT(i < b->n);
    ad_record(l, err, &b->d[i]);
    ASSERT_ERR(err, REDISLOCK_OK);
}

/* An acquired lock: an exclusive one holds alone (the server says its
 * token), a semaphore's permit is one of at most limit (the server's
 * set counts them). Given back from the callback, or with the others
 * once release_all_at hold. The checks ask the server: the release's
 * reply and the next holder's acquire come on different connections, in
 * either order. */
static void batch_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    batch *b = arg;
    int i;

    batch_record(b, l, err);
    if (b->key != NULL)
        expect_token(b->r, b->key, redislock_token(l));
    if (b->limit > 0) /* less the member that names the kind */
        ASSERT_LE(th_cmd_int(b->r, "ZCARD %s", b->sem) - 1, b->limit);
    b->acquired++;
    if (++b->holding > b->most)
        b->most = b->holding;
    if (b->release_all_at == 0) {
        ASSERT_OK(redislock_loop_release(b->lp, l, 0, batch_released, b));
    } else if (b->acquired == b->release_all_at) {
        for (i = 0; i < b->n; i++)
            ASSERT_OK(
                redislock_loop_release(b->lp, b->l[i], 0, batch_released, b));
    }
}

static void free_batch(batch *b)
{
    int i;

    for (i = 0; i < b->n; i++) {
        ASSERT_EQ_INT(b->d[i].calls, 1);
        redislock_lock_free(b->l[i]);
    }
}

/* A callback of the many's: counts, and checks the outcome. */
static void many_done(redislock_lock *l, redislock_err err, void *arg)
{
    batch *b = arg;

    batch_record(b, l, err);
    b->released++;
}

/* Many acquires at once, on keys of their own; then many extends, then
 * many releases: each callback once, with success. */
static void many_at_once(const driver *d)
{
    th_env e = th_env_start();
    static batch b;
    void *h;
    char key[32];
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    int64_t valid[MANY], t0, spent;
    int i, round;

    memset(&b, 0, sizeof b);
    h = d->open(e.c, &b.lp);
    b.n = MANY;
    b.r = e.r;
    for (round = 0; round < 3; round++) {
        b.released = 0;
        memset(b.d, 0, sizeof b.d);
        t0 = th_now_ms();
        for (i = 0; i < MANY; i++) {
            if (round == 0) {
                snprintf(key, sizeof key, "ad:many:%d", i);
                b.l[i] = th_lock(e.c, key);
            }
            ASSERT_OK(
                round == 0
                    ? redislock_loop_acquire(b.lp, b.l[i], &o, many_done, &b)
                : round == 1
                    ? redislock_loop_extend(b.lp, b.l[i], 60000, many_done, &b)
                    : redislock_loop_release(b.lp, b.l[i], 0, many_done, &b));
        }
        ad_run_until(d, h, &b.released, MANY, 10000);
        /* Every validity read first: the checks below ask the server one
         * lock at a time, which on a loaded box takes seconds. */
        for (i = 0; i < MANY; i++)
            valid[i] = redislock_valid_ms(b.l[i]);
        /* The validity counts from each request's send, less the default
         * drift (1 % + 2 ms): between the lease less the time this round
         * took (a loaded TSan run takes seconds) and the lease. */
        spent = th_now_ms() - t0 + 1;
        for (i = 0; i < MANY; i++) {
            ASSERT_EQ_INT(b.d[i].calls, 1);
            snprintf(key, sizeof key, "ad:many:%d", i);
            if (round == 0) {
                ASSERT(redislock_fence(b.l[i]) > 0);
                ASSERT_LE(valid[i], 5000 - 52);
                ASSERT(valid[i] >= 5000 - 52 - spent);
                expect_token(e.r, key, redislock_token(b.l[i]));
            } else if (round == 1) {
                ASSERT_LE(valid[i], 60000 - 602);
                ASSERT(valid[i] >= 60000 - 602 - spent);
                ASSERT(th_pttl(e.r, key) > 50000);
            } else {
                ASSERT_EQ_INT(redislock_valid_ms(b.l[i]), 0);
            }
        }
    }
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    free_batch(&b);
    d->close(h);
    th_env_stop(&e);
}

/* Waiters behind a 30 s lease, woken in turn by the release. */
static void waiters_woken(const driver *d)
{
    th_env e = th_env_start();
    static batch b;
    redislock_client *other = th_client(e.s);
    redislock_lock *holder = th_lock(other, "ad:q");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    void *h;
    int64_t t0;
    int i;

    memset(&b, 0, sizeof b);
    h = d->open(e.c, &b.lp);
    b.n = WAITERS;
    b.r = e.r;
    b.key = "ad:q";
    ASSERT_OK(redislock_acquire(holder, &o));
    o = th_aopts(5000, 20000, 0);
    for (i = 0; i < WAITERS; i++) {
        b.l[i] = th_lock(e.c, "ad:q");
        ASSERT_OK(redislock_loop_acquire(b.lp, b.l[i], &o, batch_acquired, &b));
    }
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(b.acquired, 0);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    ad_run_until(d, h, &b.released, WAITERS, 10000);
    ASSERT_LT((rl__now_us() - t0) / 1000, 5000);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS ad:q"), 0);
    free_batch(&b);
    d->close(h);
    redislock_lock_free(holder);
    redislock_client_free(other);
    th_env_stop(&e);
}

/* A server that stops answering: every callback by the command timeout;
 * then the loop connects again. */
static void server_stops(const driver *d)
{
    th_server *s = th_server_start(NULL);
    redislock_options opts = {0};
    redislock_client *c;
    redislock_loop *lp;
    redislock_lock *l[3];
    ad_done dn[3] = {{0}};
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redisContext *r;
    void *h;
    int64_t t0;
    int i, n, threads;

    opts.connect_timeout_ms = 300;
    opts.command_timeout_ms = 300;
    c = th_client_url(s->unix_url, &opts);
    h = d->open(c, &lp);
    threads = th_threads();
    l[0] = th_lock(c, "ad:s:0");
    ASSERT_OK(redislock_loop_acquire(lp, l[0], &o, ad_record, &dn[0]));
    ad_run_until(d, h, &dn[0].calls, 1, 3000);
    ASSERT_ERR(dn[0].err, REDISLOCK_OK);
    th_server_pause(s);
    t0 = rl__now_us();
    ASSERT_OK(redislock_loop_release(lp, l[0], 0, ad_record, &dn[0]));
    for (i = 1; i < 3; i++) {
        char key[16];

        snprintf(key, sizeof key, "ad:s:%d", i);
        l[i] = th_lock(c, key);
        ASSERT_OK(redislock_loop_acquire(lp, l[i], &o, ad_record, &dn[i]));
    }
    for (n = 0; n < 4;) {
        ASSERT_LT((rl__now_us() - t0) / 1000, 2000);
        d->turn(h);
        n = dn[0].calls + dn[1].calls + dn[2].calls;
    }
    for (i = 0; i < 3; i++) {
        ASSERT_ERR(dn[i].err, REDISLOCK_ETIMEDOUT);
        ASSERT_LT((dn[i].at_us - t0) / 1000, 1000);
    }
    th_server_resume(s);
    memset(dn, 0, sizeof dn);
    redislock_lock_free(l[1]);
    l[1] = th_lock(c, "ad:s:new");
    ASSERT_OK(redislock_loop_acquire(lp, l[1], &o, ad_record, &dn[1]));
    ad_run_until(d, h, &dn[1].calls, 1, 3000);
    ASSERT_ERR(dn[1].err, REDISLOCK_OK);
    /* The attempt whose reply was lost holds nothing (never run, or
     * undone on the loop): its key is gone long before its 5 s lease
     * ends, and no thread was started for it (no janitor).
     * The release whose reply was lost leaves its lock to its lease. */
    r = th_server_redis(s);
    for (i = 0; i < 40 && th_cmd_int(r, "EXISTS ad:s:2"); i++)
        ad_run_for(d, h, 50);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS ad:s:2"), 0);
    ASSERT_EQ_INT(th_threads(), threads);
    ASSERT_LE(th_pttl(r, "ad:s:0"), 5000);
    redisFree(r);
    for (i = 0; i < 3; i++)
        redislock_lock_free(l[i]);
    d->close(h);
    redislock_client_free(c);
    th_server_stop(s);
}

/* Behind a holder with a 10 s lease: a wait of 300 ms ends with
 * REDISLOCK_EHELD by then; a cancelled wait, a handle freed with its wait
 * under way and the loop freed with one under way end at once with
 * REDISLOCK_ECANCELED; an attempt cancelled before its reply leaves its
 * key free; a waiter that comes once the channel's last waiter has gone
 * (its unsubscribe perhaps under way) is woken by the release all the
 * same. Every callback once; the holder's lock untouched throughout. */
static void deadline_cancel_free(const driver *d)
{
    th_env e = th_env_start();
    redislock_client *other = th_client(e.s);
    redislock_lock *holder = th_lock(other, "ad:c");
    redislock_lock *l[6];
    ad_done dn[6] = {{0}};
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    int64_t t0;
    int i;

    ASSERT_OK(redislock_acquire(holder, &o));
    for (i = 0; i < 6; i++)
        l[i] = th_lock(e.c, i == 3 ? "ad:free" : "ad:c");
    t0 = rl__now_us();
    o = th_aopts(5000, 300, 0);
    ASSERT_OK(redislock_loop_acquire(lp, l[0], &o, ad_record, &dn[0]));
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    for (i = 1; i < 3; i++)
        ASSERT_OK(redislock_loop_acquire(lp, l[i], &o, ad_record, &dn[i]));
    /* One operation at a time per handle. */
    ASSERT_ERR(redislock_loop_acquire(lp, l[1], &o, ad_record, &dn[1]),
               REDISLOCK_EINVAL);
    ad_run_until(d, h, &dn[0].calls, 1, 3000);
    ASSERT_ERR(dn[0].err, REDISLOCK_EHELD);
    ASSERT_GE((dn[0].at_us - t0) / 1000, 290);
    ASSERT_LT((dn[0].at_us - t0) / 1000, 1500);
    redislock_loop_cancel(lp, l[1]);
    ASSERT_EQ_INT(dn[1].calls, 1);
    ASSERT_ERR(dn[1].err, REDISLOCK_ECANCELED);
    redislock_lock_free(l[2]);
    l[2] = NULL;
    ASSERT_EQ_INT(dn[2].calls, 1);
    ASSERT_ERR(dn[2].err, REDISLOCK_ECANCELED);
    /* Cancelled before its reply (before it was even written). */
    o.wait_ms = 0;
    ASSERT_OK(redislock_loop_acquire(lp, l[3], &o, ad_record, &dn[3]));
    redislock_loop_cancel(lp, l[3]);
    ASSERT_ERR(dn[3].err, REDISLOCK_ECANCELED);
    ad_run_for(d, h, 300); /* the attempt went out and ran */
    for (i = 0; i < 300 && th_cmd_int(e.r, "EXISTS ad:free") != 0; i++)
        ad_run_for(d, h, 10);
    ad_run_for(d, h, 200);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS ad:free"), 0);
    expect_token(e.r, "ad:c", redislock_token(holder));
    /* A waiter after the channel's last one has gone. */
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    ASSERT_OK(redislock_loop_acquire(lp, l[4], &o, ad_record, &dn[4]));
    ad_run_for(d, h, 200);
    ASSERT_EQ_INT(dn[4].calls, 0);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    ad_run_until(d, h, &dn[4].calls, 1, 3000);
    ASSERT_ERR(dn[4].err, REDISLOCK_OK);
    ASSERT_LT((dn[4].at_us - t0) / 1000, 1000);
    expect_token(e.r, "ad:c", redislock_token(l[4]));
    /* The loop freed with a wait under way. */
    ASSERT_OK(redislock_loop_acquire(lp, l[5], &o, ad_record, &dn[5]));
    ad_run_for(d, h, 100);
    d->close(h);
    ASSERT_EQ_INT(dn[5].calls, 1);
    ASSERT_ERR(dn[5].err, REDISLOCK_ECANCELED);
    for (i = 0; i < 6; i++)
        ASSERT_EQ_INT(dn[i].calls, 1);
    ASSERT_OK(redislock_release(l[4]));
    for (i = 0; i < 6; i++)
        redislock_lock_free(l[i]);
    redislock_lock_free(holder);
    redislock_client_free(other);
    th_env_stop(&e);
}

/* WAITERS sharers of key with o wait behind blocking holders (hold_o, a
 * 30 s lease) until they release; then all get in within 3 s. */
static void share_run(th_env *e, const driver *d, void *h, batch *b,
                      const char *key, const redislock_acquire_options *hold_o,
                      int holders, const redislock_acquire_options *o)
{
    redislock_lock *hl[2];
    int64_t t0;
    int i;

    b->n = WAITERS;
    for (i = 0; i < holders; i++) {
        hl[i] = th_lock(e->c, key);
        ASSERT_OK(redislock_acquire(hl[i], hold_o));
    }
    for (i = 0; i < WAITERS; i++) {
        b->l[i] = th_lock(e->c, key);
        ASSERT_OK(redislock_loop_acquire(b->lp, b->l[i], o, batch_acquired, b));
    }
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(b->acquired, 0);
    t0 = rl__now_us();
    for (i = 0; i < holders; i++) {
        ASSERT_OK(redislock_release(hl[i]));
        redislock_lock_free(hl[i]);
    }
    ad_run_until(d, h, &b->released, WAITERS, 10000);
    ASSERT_LT((rl__now_us() - t0) / 1000, 3000);
    ASSERT_EQ_INT(b->acquired, WAITERS);
    free_batch(b);
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", key), 0);
}

/* Readers behind a writer: its release wakes one, each reader that gets
 * in wakes the next, and all hold at once. Permits of a semaphore of 2
 * behind two holders: never more than 2 at once. */
static void readers_and_permits(const driver *d)
{
    th_env e = th_env_start();
    redislock_acquire_options hold = th_aopts(30000, 0, 0);
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    static batch b;
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);

    memset(&b, 0, sizeof b);
    b.lp = lp;
    b.release_all_at = WAITERS;
    o.shared = 1;
    share_run(&e, d, h, &b, "ad:rw", &hold, 1, &o);
    ASSERT_EQ_INT(b.most, WAITERS);
    memset(&b, 0, sizeof b);
    b.lp = lp;
    o.shared = 0;
    o.limit = hold.limit = 2;
    b.r = e.r;
    b.sem = "ad:sem";
    b.limit = 2;
    share_run(&e, d, h, &b, "ad:sem", &hold, 2, &o);
    d->close(h);
    th_env_stop(&e);
}

/* The loop renews a lock acquired with watchdog: past three leases of
 * 500 ms it is still held, its validity renewed; a release stops the
 * renewals. A lock whose key another writes over is lost: on_lost runs
 * on the loop, once, and the handle holds nothing valid. */
static void watchdog_on_loop(const driver *d)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "ad:wd"), *x = th_lock(e.c, "ad:wdx");
    redislock_acquire_options o = th_aopts(500, 0, 0);
    redislock_loop *lp;
    void *h = d->open(e.c, &lp);
    ad_done dn = {0}, dx = {0};
    ad_lost gl = {0}, gx = {0};

    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &gl;
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    o.on_lost_arg = &gx;
    ASSERT_OK(redislock_loop_acquire(lp, x, &o, ad_record, &dx));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ad_run_until(d, h, &dx.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_ERR(dx.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_lost_fd(l), -1);
    /* Inspected on the loop, as redislock_inspect would. */
    {
        redislock_info info;

        memset(&info, 0, sizeof info);
        dn.calls = 0;
        ASSERT_OK(redislock_loop_inspect(lp, l, &info, ad_record, &dn));
        ad_run_until(d, h, &dn.calls, 1, 3000);
        ASSERT_ERR(dn.err, REDISLOCK_OK);
        ASSERT_EQ_INT(info.held, 1);
        ASSERT(info.ttl_ms > 0 && info.ttl_ms <= 500);
        ASSERT_EQ_INT(info.holds, 1);
        ASSERT_EQ_INT(info.fence, 0); /* a plain lock keeps none */
        ASSERT_EQ_INT(info.keylen, 5);
        ASSERT_EQ_MEM(info.key, "ad:wd", 5);
    }
    /* Someone else's now. */
    th_cmd_int(e.r, "DEL ad:wdx");
    freeReplyObject(th_cmd(e.r, "SET ad:wdx intruder PX 60000"));
    ad_run_for(d, h, 1500);
    expect_token(e.r, "ad:wd", redislock_token(l));
    ASSERT(redislock_valid_ms(l) > 0);
    ASSERT_OK(redislock_check(l));
    ASSERT_EQ_INT(gl.calls, 0);
    ASSERT_EQ_INT(gx.calls, 1);
    ASSERT_ERR(gx.why, REDISLOCK_ELOST);
    ASSERT_EQ_INT(gx.valid, 0);
    ASSERT_ERR(redislock_check(x), REDISLOCK_ELOST);
    expect_token(e.r, "ad:wdx", "intruder");
    /* Released: no renewal after it (one would find the key gone). */
    dn.calls = 0;
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ad_run_for(d, h, 600);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS ad:wd"), 0);
    ASSERT_EQ_INT(gl.calls, 0);
    d->close(h);
    redislock_lock_free(l);
    redislock_lock_free(x);
    th_env_stop(&e);
}

/* A lock taken, then given back from the taking callback. */
typedef struct cycle {
    redislock_loop *lp;
    ad_done taken, released;
} cycle;

static void cycle_taken(redislock_lock *l, redislock_err err, void *arg)
{
    cycle *cy = arg;

    ad_record(l, err, &cy->taken);
    if (err == REDISLOCK_OK)
        ASSERT_OK(redislock_loop_release(cy->lp, l, 0, ad_record,
                                         &cy->released));
}

/* Takes l on h's loop (o) and gives it back, the loop run to its end:
 * it must end by itself, both callbacks in, with success. */
static void cycle_run(const driver *d, void *h, redislock_loop *lp,
                      redislock_lock *l, const redislock_acquire_options *o)
{
    cycle cy = {0};

    cy.lp = lp;
    ASSERT_OK(redislock_loop_acquire(lp, l, o, cycle_taken, &cy));
    ASSERT(d->run(h, 10000));
    ASSERT_EQ_INT(cy.taken.calls, 1);
    ASSERT_ERR(cy.taken.err, REDISLOCK_OK);
    ASSERT_EQ_INT(cy.released.calls, 1);
    ASSERT_ERR(cy.released.err, REDISLOCK_OK);
}

/* The application's loop ends by itself once nothing is under way: the
 * lock released, or held with no renewals; a waiter, and a lock the loop
 * renews, keep it going. Connections the server closes while the loop
 * is idle (CLIENT KILL: every client but the tests') are opened again
 * by the next operation, which succeeds. */
static void loop_ends(const driver *d)
{
    th_env e = th_env_start();
    redislock_client *other = th_client(e.s);
    redislock_lock *holder = th_lock(other, "ad:end");
    redislock_lock *l = th_lock(e.c, "ad:end");
    redislock_acquire_options o = th_aopts(5000, 5000, 0), ho;
    redislock_loop *lp;
    ad_done dn = {0};
    void *h = d->open(e.c, &lp);
    int64_t t0;

    cycle_run(d, h, lp, l, &o);
    cycle_run(d, h, lp, l, &o);
    ASSERT(th_cmd_int(e.r, "CLIENT KILL TYPE normal") >= 1);
    cycle_run(d, h, lp, l, &o);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS ad:end"), 0);
    /* Held, not renewed: the loop ends, the lock still held. */
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ASSERT(d->run(h, 10000));
    ASSERT_EQ_INT(dn.calls, 1);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    expect_token(e.r, "ad:end", redislock_token(l));
    dn.calls = 0;
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ASSERT(d->run(h, 10000));
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    /* A waiter behind a 700 ms lease: the loop goes on until it has the
     * lock (it listened on the wake channel, then tried at the lease's
     * end), then ends once it gave it back. */
    ho = th_aopts(700, 0, 0);
    ASSERT_OK(redislock_acquire(holder, &ho));
    t0 = rl__now_us();
    ASSERT(th_cmd_int(e.r, "CLIENT KILL TYPE normal") >= 1);
    cycle_run(d, h, lp, l, &o);
    ASSERT_GE((rl__now_us() - t0) / 1000, 500);
    /* A lock the loop renews: the loop goes on, the lease kept past
     * three TTLs; released, it ends. */
    o = th_aopts(400, 0, 0);
    o.watchdog = 1;
    dn.calls = 0;
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ASSERT(!d->run(h, 1500));
    ASSERT_EQ_INT(dn.calls, 1);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    expect_token(e.r, "ad:end", redislock_token(l));
    ASSERT(th_pttl(e.r, "ad:end") > 0);
    dn.calls = 0;
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ASSERT(d->run(h, 10000));
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    d->close(h);
    redislock_lock_free(l);
    redislock_lock_free(holder);
    redislock_client_free(other);
    th_env_stop(&e);
}

void adapter_scenarios(const driver *d)
{
    loop_ends(d);
    many_at_once(d);
    waiters_woken(d);
    server_stops(d);
    deadline_cancel_free(d);
    readers_and_permits(d);
    watchdog_on_loop(d);
}
