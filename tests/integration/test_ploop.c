/*
 * The private poll() loop (src/node/ploop.c), the blocking calls' way to
 * run the engine (rl__alock_on_ploop): an operation started on its engine
 * runs to its callback under rl__ploop_run on the calling thread, with no
 * application loop:
 * an acquire and release; a waiter woken by a release from another
 * process's client; a wait woken from another thread and cancelled there
 * by the woken callback; a wait that runs out; a server that stops
 * answering (the engine's timer, not a socket, ends the call).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "alock.h"
#include "test.h"

/* One operation's outcome, and the flag rl__ploop_run waits on. */
typedef struct outcome {
    atomic_int done;
    redislock_err err;
    int64_t at_us;
} outcome;

static void finished(redislock_lock *l, redislock_err err, void *arg)
{
    outcome *o = arg;

    (void)l;
    o->err = err;
    o->at_us = th_now_us();
    atomic_store(&o->done, 1);
}

/* A private loop and the engine it drives. */
typedef struct eng {
    rl__ploop *pl;
    rl__alock *al;
} eng;

static eng eng_new(redislock_client *c)
{
    eng g = {NULL, NULL};

    ASSERT_OK(rl__alock_on_ploop(c, &g.pl, &g.al));
    return g;
}

/* Starts an acquire of l on g's engine and runs the loop to its end. */
static redislock_err acquire_on(eng g, redislock_lock *l,
                                const redislock_acquire_options *o,
                                rl__ploop_woken_cb woken, void *arg)
{
    outcome out = {0};

    ASSERT_OK(rl__alock_acquire(g.al, l, o, finished, &out));
    ASSERT_OK(rl__ploop_run(g.pl, &out.done, woken, arg));
    return out.err;
}

static redislock_err release_on(eng g, redislock_lock *l)
{
    outcome out = {0};

    ASSERT_OK(rl__alock_release(g.al, l, 0, finished, &out));
    ASSERT_OK(rl__ploop_run(g.pl, &out.done, NULL, NULL));
    return out.err;
}

void test_ploop_acquire_release(void)
{
    th_env e = th_env_start();
    eng pl;
    redislock_lock *l = th_lock(e.c, "pl:a");
    redislock_acquire_options o = th_aopts(5000, 0, 0);

    pl = eng_new(e.c);
    ASSERT_OK(acquire_on(pl, l, &o, NULL, NULL));
    ASSERT_KEY(e.r, "pl:a", redislock_token(l));
    ASSERT_GT(redislock_valid_ms(l), 4000);
    ASSERT_OK(release_on(pl, l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS pl:a"), 0);
    /* Again on the same loop: its connection is kept. */
    ASSERT_OK(acquire_on(pl, l, &o, NULL, NULL));
    ASSERT_OK(release_on(pl, l));
    rl__alock_free_on_ploop(pl.pl, pl.al);
    rl__ploop_free(NULL);
    redislock_lock_free(l);
    th_env_stop(&e);
}

/* A holder on another client releases after delay_ms, on its thread. */
typedef struct releaser {
    pthread_t t;
    redislock_lock *l;
    int64_t delay_ms;
    int64_t at_us;
} releaser;

static void *release_later(void *arg)
{
    releaser *r = arg;

    th_sleep_ms(r->delay_ms);
    r->at_us = th_now_us();
    if (redislock_release(r->l) != REDISLOCK_OK)
        r->at_us = -1;
    return NULL;
}

/* Behind a 30 s lease only a wake-up can let the waiter in in time. */
void test_ploop_waiter_woken(void)
{
    th_env e = th_env_start();
    redislock_client *other = th_client(e.s);
    eng pl;
    redislock_lock *l = th_lock(e.c, "pl:w");
    releaser r = {0};
    redislock_acquire_options o = th_aopts(5000, 10000, 0);
    int64_t t0;

    r.l = th_lock(other, "pl:w");
    r.delay_ms = 200;
    ASSERT_OK(
        redislock_acquire(r.l, &(redislock_acquire_options){.ttl_ms = 30000}));
    pl = eng_new(e.c);
    ASSERT_EQ_INT(pthread_create(&r.t, NULL, release_later, &r), 0);
    t0 = th_now_us();
    ASSERT_OK(acquire_on(pl, l, &o, NULL, NULL));
    th_join_within(r.t, 5000);
    ASSERT_GT(r.at_us, 0);
    test_log("in %lld ms after the release, %lld after the call",
             (long long)((th_now_us() - r.at_us) / 1000),
             (long long)((th_now_us() - t0) / 1000));
    ASSERT_LT(th_now_us() - r.at_us, 1000000);
    ASSERT_KEY(e.r, "pl:w", redislock_token(l));
    ASSERT_OK(release_on(pl, l));
    rl__alock_free_on_ploop(pl.pl, pl.al);
    redislock_lock_free(l);
    redislock_lock_free(r.l);
    redislock_client_free(other);
    th_env_stop(&e);
}

/* The woken callback's argument: the loop's engine and the waiting lock. */
typedef struct canceller {
    pthread_t t;
    eng pl;
    redislock_lock *l;
    atomic_llong at_us; /* written before the wake-up, on its thread */
    int woken;
} canceller;

static void *wake_later(void *arg)
{
    canceller *c = arg;

    th_sleep_ms(200);
    atomic_store(&c->at_us, th_now_us());
    rl__ploop_wake(c->pl.pl);
    return NULL;
}

static void cancel_waiter(void *arg)
{
    canceller *c = arg;

    c->woken++;
    rl__alock_cancel(c->pl.al, c->l);
}

void test_ploop_cancel_from_another_thread(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "pl:c"), *l = th_lock(e.c, "pl:c");
    redislock_acquire_options o = th_aopts(5000, 10000, 0);
    canceller c = {0};

    ASSERT_OK(
        redislock_acquire(h, &(redislock_acquire_options){.ttl_ms = 30000}));
    c.pl = eng_new(e.c);
    c.l = l;
    ASSERT_EQ_INT(pthread_create(&c.t, NULL, wake_later, &c), 0);
    ASSERT_ERR(acquire_on(c.pl, l, &o, cancel_waiter, &c), REDISLOCK_ECANCELED);
    test_log("cancelled %lld ms after the wake-up",
             (long long)((th_now_us() - atomic_load(&c.at_us)) / 1000));
    ASSERT_LT(th_now_us() - atomic_load(&c.at_us), 1000000);
    ASSERT_EQ_INT(c.woken, 1);
    th_join_within(c.t, 5000);
    ASSERT_KEY(e.r, "pl:c", redislock_token(h));
    rl__alock_free_on_ploop(c.pl.pl, c.pl.al);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(l);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/* The wait runs out on the engine's timer: EHELD after about wait_ms. */
void test_ploop_wait_runs_out(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "pl:t"), *l = th_lock(e.c, "pl:t");
    redislock_acquire_options o = th_aopts(5000, 300, 0);
    eng pl;
    int64_t t0;

    ASSERT_OK(
        redislock_acquire(h, &(redislock_acquire_options){.ttl_ms = 30000}));
    pl = eng_new(e.c);
    t0 = th_now_us();
    ASSERT_ERR(acquire_on(pl, l, &o, NULL, NULL), REDISLOCK_EHELD);
    test_log("EHELD after %lld ms", (long long)((th_now_us() - t0) / 1000));
    ASSERT_GE(th_now_us() - t0, 290000);
    ASSERT_LT(th_now_us() - t0, 2000000);
    rl__alock_free_on_ploop(pl.pl, pl.al);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(l);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/* A server that stops answering: the command timeout (300 ms) ends the
 * call, by the engine's timer. */
void test_ploop_server_stops_answering(void)
{
    th_server *s = th_server_start(NULL);
    redislock_options co;
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    eng pl;
    redislock_err err;
    int64_t t0;

    memset(&co, 0, sizeof co);
    co.command_timeout_ms = 300;
    c = th_client_url(s->unix_url, &co);
    l = th_lock(c, "pl:s");
    pl = eng_new(c);
    ASSERT_OK(acquire_on(pl, l, &o, NULL, NULL));
    ASSERT_OK(release_on(pl, l));
    th_server_pause(s);
    t0 = th_now_us();
    err = acquire_on(pl, l, &o, NULL, NULL);
    th_server_resume(s);
    test_log("%s after %lld ms", redislock_errname(err),
             (long long)((th_now_us() - t0) / 1000));
    ASSERT_ERR(err, REDISLOCK_ETIMEDOUT);
    ASSERT_LT(th_now_us() - t0, 3000000);
    rl__alock_free_on_ploop(pl.pl, pl.al);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_server_stop(s);
}
