/*
 * watchdog: the client's renewal thread keeps a watched lease alive (no
 * contender ever gets in), reports a loss once (state, eventfd, callback)
 * when the key is taken, deleted, or cannot be renewed in time, never
 * re-creates a key that has gone, stops at its caps and at release, and is
 * one thread however many locks it watches. Renewals are counted with
 * INFO commandstats: the extend script is the only EVALSHA these tests
 * send while a lock is held.
 */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Scheduling and round trips on a loaded 2-core box under ASan. */
#define SLACK_MS 300
/* The default drift allowance of a TTL. */
#define DRIFT(ttl) ((ttl) / 100 + 2)

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
} env;

static env env_start(const redislock_options *o)
{
    env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client_url(e.s->unix_url, o);
    return e;
}

static void env_stop(env *e)
{
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

/* Loads the extend and release scripts with a throwaway lock, so that
 * later renewals are one EVALSHA each. */
static void warm_scripts(redislock_client *c)
{
    redislock_lock *w = th_lock(c, "wd:warm");

    ASSERT_OK(redislock_acquire(w, NULL));
    ASSERT_OK(redislock_extend(w, 5000));
    ASSERT_OK(redislock_release(w));
    redislock_lock_free(w);
}

/* Waits up to ms for fd to become readable; the time it took, or -1. */
static int64_t wait_readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int64_t t0 = th_now_ms();
    int n;

    do {
        n = poll(&p, 1, ms);
    } while (n < 0 && th_now_ms() - t0 < ms);
    if (n != 1 || !(p.revents & POLLIN))
        return -1;
    return th_now_ms() - t0;
}

/* What the loss callback saw, from the watchdog thread. */
typedef struct lost_log {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    redislock_err why;
    redislock_lock *l;
} lost_log;

static void lost_log_init(lost_log *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
}

static void lost_log_fini(lost_log *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    lost_log *g = arg;

    pthread_mutex_lock(&g->mu);
    g->calls++;
    g->why = why;
    g->l = l;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* The callback comes after the eventfd: wait up to ms for its first call.
 * Returns the number of calls so far. */
static int lost_calls(lost_log *g, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    struct timespec ts;
    int n;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g->mu);
    while (g->calls == 0 && th_now_ms() < deadline)
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    n = g->calls;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* Watched acquire options with a TTL, and a loss callback when g. */
static redislock_acquire_options watched(int64_t ttl_ms, lost_log *g)
{
    redislock_acquire_options o = th_aopts(ttl_ms, 0, 0);

    o.watchdog = 1;
    if (g != NULL) {
        o.on_lost = on_lost;
        o.on_lost_arg = g;
    }
    return o;
}

/* A contender on its own client: a no-wait acquire every 50 ms. */
typedef struct contender {
    const th_server *s;
    int64_t until_ms;
    int attempts, wins;
    redislock_err bad; /* an outcome other than OK or EHELD */
} contender;

static void *contend(void *arg)
{
    contender *k = arg;
    redislock_client *c = th_client(k->s);
    redislock_lock *l = th_lock(c, "wd:hold");
    redislock_acquire_options o = th_aopts(1000, REDISLOCK_NO_WAIT, 0);
    redislock_err err;

    while (th_now_ms() < k->until_ms) {
        err = redislock_acquire(l, &o);
        k->attempts++;
        if (err == REDISLOCK_OK) {
            k->wins++;
            redislock_release(l);
        } else if (err != REDISLOCK_EHELD) {
            k->bad = err;
        }
        th_sleep_ms(50);
    }
    redislock_lock_free(l);
    redislock_client_free(c);
    return NULL;
}

void test_watchdog_contender_never_wins(void)
{
    env e = env_start(NULL);
    redislock_lock *l = th_lock(e.c, "wd:hold");
    redislock_acquire_options o = watched(1000, NULL);
    contender k = {e.s, 0, 0, 0, REDISLOCK_OK};
    pthread_t t;
    long long calls0, renewals;
    int64_t t0, held;

    warm_scripts(e.c);
    calls0 = th_script_calls(e.r);
    ASSERT_OK(redislock_acquire(l, &o));
    t0 = th_now_ms();
    /* The contender's loop is the 10 s hold; joining it ends the hold. */
    k.until_ms = t0 + 10000;
    ASSERT_EQ_INT(pthread_create(&t, NULL, contend, &k), 0);
    ASSERT_EQ_INT(pthread_join(t, NULL), 0);
    held = th_now_ms() - t0;
    /* Less the acquire and the contender's attempts: scripts too. */
    renewals = th_script_calls(e.r) - calls0 - 1 - k.attempts;
    ASSERT_OK(redislock_check(l));
    ASSERT_GT(redislock_valid_ms(l), 0);
    ASSERT_OK(redislock_release(l));

    test_log("held %lld ms with TTL 1000: %lld renewals, %.2f per second; "
             "contender: %d attempts, %d wins",
             (long long)held, renewals, renewals * 1000.0 / (double)held,
             k.attempts, k.wins);
    ASSERT_EQ_INT(k.bad, REDISLOCK_OK);
    ASSERT_EQ_INT(k.wins, 0);
    ASSERT_GE(k.attempts, 100);
    /* Every ttl/3: about 3 per second. */
    ASSERT_GE(renewals * 1000, 2 * held);
    ASSERT_LE(renewals * 1000, 4 * held);
    redislock_lock_free(l);
    env_stop(&e);
}

void test_watchdog_takeover_signals_elost(void)
{
    env e = env_start(NULL);
    redislock_lock *l = th_lock(e.c, "wd:take");
    lost_log g;
    redislock_acquire_options o;
    long long calls;
    int64_t t0, ms;
    int fd;

    lost_log_init(&g);
    o = watched(1000, &g);
    ASSERT_OK(redislock_acquire(l, &o));
    fd = redislock_lost_fd(l);
    ASSERT_GE(fd, 0);
    ASSERT_EQ_INT(wait_readable(fd, 0), -1);
    freeReplyObject(th_cmd(e.r, "SET wd:take intruder"));
    t0 = th_now_ms();
    ms = wait_readable(fd, 3000);
    ASSERT_GE(ms, 0);
    test_log("takeover: SET to loss signal %lld ms (TTL 1000, renewals "
             "every ~333 ms)",
             (long long)(th_now_ms() - t0));
    ASSERT_LE(th_now_ms() - t0, 1000 / 3 + SLACK_MS);
    ASSERT_EQ_INT(lost_calls(&g, 1000), 1);
    ASSERT_EQ_INT(g.why, REDISLOCK_ELOST);
    ASSERT(g.l == l);
    ASSERT_ERR(redislock_check(l), REDISLOCK_ELOST);
    ASSERT_EQ_INT(redislock_valid_ms(l), 0);

    /* Once only, and no renewal after the loss: watch two periods. */
    calls = th_script_calls(e.r);
    th_sleep_ms(700);
    ASSERT_EQ_INT(th_script_calls(e.r), calls);
    pthread_mutex_lock(&g.mu);
    ASSERT_EQ_INT(g.calls, 1);
    pthread_mutex_unlock(&g.mu);
    ASSERT_KEY(e.r, "wd:take", "intruder");
    ASSERT_ERR(redislock_release(l), REDISLOCK_ELOST);
    ASSERT_KEY(e.r, "wd:take", "intruder");
    redislock_lock_free(l);
    lost_log_fini(&g);
    env_stop(&e);
}

/*
 * Polls valid_ms every 2 ms until it is 0 (at most timeout_ms); returns
 * whether it got there. *end gets the latest end of validity the lock
 * reported (now + valid_ms), which does not depend on how late a poll
 * ran.
 */
static int valid_runs_out(const redislock_lock *l, int64_t timeout_ms,
                          int64_t *end)
{
    int64_t deadline = th_now_ms() + timeout_ms, now, v;

    *end = 0;
    for (;;) {
        now = th_now_ms();
        if ((v = redislock_valid_ms(l)) == 0)
            return 1;
        if (now + v > *end)
            *end = now + v;
        if (now >= deadline)
            return 0;
        th_sleep_ms(2);
    }
}

void test_watchdog_stopped_server_signals_loss(void)
{
    redislock_options co = {0};
    env e;
    redislock_lock *l;
    redislock_acquire_options o = watched(1000, NULL);
    int64_t t_stop, t_zero, end, ms;
    redislock_err why;
    int fd;

    co.command_timeout_ms = 200;
    e = env_start(&co);
    l = th_lock(e.c, "wd:stop");
    ASSERT_OK(redislock_acquire(l, &o));
    fd = redislock_lost_fd(l);
    ASSERT_GE(fd, 0);
    /* Let a renewal or two happen first. */
    th_sleep_ms(500);
    th_server_pause(e.s);
    /* Taken once the server is surely stopped: any renewal that succeeded
     * was sent before now, so the validity ends by now + TTL. */
    t_stop = th_now_ms();
    ASSERT(valid_runs_out(l, 3000, &end));
    t_zero = th_now_ms();
    ms = wait_readable(fd, 3000);
    ASSERT_GE(ms, 0);
    why = redislock_check(l);
    test_log("SIGSTOP: validity ended %lld ms after the stop (seen at "
             "%lld ms), loss signal after %lld ms (%s); TTL 1000, command "
             "timeout 200",
             (long long)(end - t_stop), (long long)(t_zero - t_stop),
             (long long)(th_now_ms() - t_stop), redislock_errname(why));
    /* 2 ms for the rounding of two clocks read in whole ms. */
    ASSERT_LE(end - t_stop, 1000 - DRIFT(1000) + 2);
    ASSERT_LE(th_now_ms() - t_stop, 1000 + 200 + SLACK_MS);
    /* The same reason check() gave the moment the validity ran out. */
    ASSERT_EQ_INT(why, REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(redislock_valid_ms(l), 0);
    th_server_resume(e.s);

    /* The server's copy expired by its own clock; release says so. */
    ASSERT(th_wait_key_gone(e.r, "wd:stop", 7, 3000));
    ASSERT_ERR(redislock_release(l), REDISLOCK_EEXPIRED);
    redislock_lock_free(l);
    env_stop(&e);
}

void test_watchdog_no_renewals_after_release(void)
{
    env e = env_start(NULL);
    redislock_lock *l = th_lock(e.c, "wd:rel");
    redislock_acquire_options o = watched(300, NULL);
    long long c0, c1;

    warm_scripts(e.c);
    c0 = th_script_calls(e.r);
    ASSERT_OK(redislock_acquire(l, &o));
    th_sleep_ms(1000);
    /* Held past three TTLs: renewed about every 100 ms. */
    ASSERT_OK(redislock_check(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS wd:rel"), 1);
    c1 = th_script_calls(e.r);
    ASSERT_GE(c1 - c0, 5);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS wd:rel"), 0);
    ASSERT_EQ_INT(redislock_lost_fd(l), -1);
    c1 = th_script_calls(e.r);
    th_sleep_ms(1500);
    ASSERT_EQ_INT(th_script_calls(e.r), c1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS wd:rel"), 0);
    test_log("%lld renewals in the 1 s hold with TTL 300", c1 - c0 - 1);
    redislock_lock_free(l);
    env_stop(&e);
}

/* DEL a watched lock: EEXPIRED, and the key stays gone. */
static void deleted_once(env *e, const char *key, int reentrant)
{
    redislock_lock *l = th_lock(e->c, key);
    lost_log g;
    redislock_acquire_options o;
    long long calls;
    int64_t t0;

    lost_log_init(&g);
    o = watched(600, &g);
    o.reentrant = reentrant;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(th_cmd_int(e->r, "DEL %s", key), 1);
    t0 = th_now_ms();
    ASSERT_GE(wait_readable(redislock_lost_fd(l), 3000), 0);
    test_log("%s: DEL to loss signal %lld ms (TTL 600)", key,
             (long long)(th_now_ms() - t0));
    ASSERT_EQ_INT(lost_calls(&g, 1000), 1);
    ASSERT_EQ_INT(g.why, REDISLOCK_EEXPIRED);
    ASSERT_ERR(redislock_check(l), REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(redislock_valid_ms(l), 0);
    /* Over two renewal periods: nothing sent, nothing re-created. */
    calls = th_script_calls(e->r);
    th_sleep_ms(500);
    ASSERT_EQ_INT(th_script_calls(e->r), calls);
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", key), 0);
    ASSERT_ERR(redislock_release(l), REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", key), 0);
    redislock_lock_free(l);
    lost_log_fini(&g);
}

void test_watchdog_deleted_key_not_recreated(void)
{
    env e = env_start(NULL);

    deleted_once(&e, "wd:del:plain", 0);
    deleted_once(&e, "wd:del:hash", 1);
    env_stop(&e);
}

/* A capped watched lock: the loss signal's time after acquire, and the
 * renewals sent, in *renewals. Asserts EEXPIRED and the key's expiry. */
static int64_t run_capped(env *e, const char *key,
                          const redislock_acquire_options *o,
                          long long *renewals)
{
    redislock_lock *l = th_lock(e->c, key);
    lost_log g;
    redislock_acquire_options oo = *o;
    long long c0;
    int64_t t0, ms;

    lost_log_init(&g);
    oo.on_lost = on_lost;
    oo.on_lost_arg = &g;
    c0 = th_script_calls(e->r);
    t0 = th_now_ms();
    ASSERT_OK(redislock_acquire(l, &oo));
    ASSERT_GE(wait_readable(redislock_lost_fd(l), 5000), 0);
    ms = th_now_ms() - t0;
    ASSERT_EQ_INT(lost_calls(&g, 1000), 1);
    ASSERT_EQ_INT(g.why, REDISLOCK_EEXPIRED);
    ASSERT_ERR(redislock_check(l), REDISLOCK_EEXPIRED);
    /* The lease runs out on the server too, soon after. */
    ASSERT(th_wait_key_gone(e->r, key, strlen(key), SLACK_MS));
    *renewals = th_script_calls(e->r) - c0 - 1; /* less the acquire */
    ASSERT_ERR(redislock_release(l), REDISLOCK_EEXPIRED);
    redislock_lock_free(l);
    lost_log_fini(&g);
    return ms;
}

void test_watchdog_max_renewals_cap(void)
{
    env e = env_start(NULL);
    redislock_acquire_options o = watched(600, NULL);
    long long renewals;
    int64_t ms;

    warm_scripts(e.c);
    o.max_renewals = 2;
    ms = run_capped(&e, "wd:capn", &o, &renewals);
    test_log("max_renewals 2, TTL 600: %lld renewals, loss signal %lld ms "
             "after acquire (expected ~%d)",
             renewals, (long long)ms, 600 * 2 / 3 + 600);
    ASSERT_EQ_INT(renewals, 2);
    /* Two renewals a third of the TTL apart, then one full lease. */
    ASSERT_GE(ms, 600 * 2 / 3 + 600 - DRIFT(600) - 5);
    ASSERT_LE(ms, 600 * 2 / 3 + 600 + SLACK_MS);
    env_stop(&e);
}

void test_watchdog_max_hold_cap(void)
{
    env e = env_start(NULL);
    redislock_acquire_options o = watched(600, NULL);
    long long renewals;
    int64_t ms;

    warm_scripts(e.c);
    o.max_hold_ms = 1000;
    ms = run_capped(&e, "wd:caph", &o, &renewals);
    test_log("max_hold_ms 1000, TTL 600: %lld renewals, loss signal %lld ms "
             "after acquire",
             renewals, (long long)ms);
    /* No renewal once held 1000 ms; the last lease ends within a TTL. */
    ASSERT_GE(ms, 1000);
    ASSERT_LE(ms, 1000 + 600 + SLACK_MS);
    ASSERT_GE(renewals, 3);
    ASSERT_LE(renewals, 5);
    env_stop(&e);
}

/* Acquires l and returns its validity right after, and in *took_ms how
 * long the call and the read took together. */
static int64_t valid_after_acquire(redislock_lock *l,
                                   const redislock_acquire_options *o,
                                   int64_t *took_ms)
{
    int64_t t0 = th_now_ms(), v;

    ASSERT_OK(redislock_acquire(l, o));
    v = redislock_valid_ms(l);
    *took_ms = th_now_ms() - t0;
    return v;
}

/* The validity counts from before the request, less the drift: at most
 * TTL - drift, and at least that less the call's own time (1 ms for
 * rounding), which a loaded machine makes 100 ms and more. */
void test_watchdog_validity_after_acquire(void)
{
    env e = env_start(NULL);
    redislock_lock *w = th_lock(e.c, "wd:valid:w");
    redislock_lock *p = th_lock(e.c, "wd:valid:p");
    redislock_lock *d = th_lock(e.c, "wd:valid:d");
    redislock_acquire_options o = watched(10000, NULL);
    redislock_acquire_options po = th_aopts(10000, 0, 0);
    int64_t v, took;

    ASSERT_EQ_INT(redislock_valid_ms(w), 0);
    v = valid_after_acquire(w, &o, &took);
    ASSERT_GE(v, 10000 - DRIFT(10000) - took - 1);
    ASSERT_LE(v, 10000 - DRIFT(10000));
    v = valid_after_acquire(p, &po, &took);
    ASSERT_GE(v, 10000 - DRIFT(10000) - took - 1);
    ASSERT_LE(v, 10000 - DRIFT(10000));
    /* An explicit drift replaces the default. */
    po.drift_ms = 500;
    v = valid_after_acquire(d, &po, &took);
    ASSERT_GE(v, 10000 - 500 - took - 1);
    ASSERT_LE(v, 10000 - 500);
    test_log("valid_ms right after acquire, TTL 10000, drift 102: %lld",
             (long long)redislock_valid_ms(p));

    ASSERT_OK(redislock_release(w));
    ASSERT_OK(redislock_release(p));
    ASSERT_OK(redislock_release(d));
    ASSERT_EQ_INT(redislock_valid_ms(w), 0);
    ASSERT_EQ_INT(redislock_valid_ms(p), 0);
    ASSERT_ERR(redislock_check(p), REDISLOCK_EINVAL);
    redislock_lock_free(w);
    redislock_lock_free(p);
    redislock_lock_free(d);
    env_stop(&e);
}

/* The Threads: line of /proc/self/status. */
static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;

    ASSERT(f != NULL);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    ASSERT_GT(n, 0);
    return n;
}

/* Logs the name of every thread of the process. */
static void log_threads(const char *when)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *ent;
    char path[300], name[64], all[1024] = "";
    FILE *f;

    ASSERT(d != NULL);
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", ent->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(name, sizeof name, f) != NULL) {
            name[strcspn(name, "\n")] = '\0';
            snprintf(all + strlen(all), sizeof all - strlen(all), " %s:%s",
                     ent->d_name, name);
        }
        fclose(f);
    }
    closedir(d);
    test_log("threads %s:%s", when, all);
}

static void *idle_thread(void *arg)
{
    return arg;
}

/* TSan starts a thread of its own at the first pthread_create of a
 * process; make that happen before counting. */
static void start_runtime_threads(void)
{
    pthread_t t;

    ASSERT_EQ_INT(pthread_create(&t, NULL, idle_thread, NULL), 0);
    ASSERT_EQ_INT(pthread_join(t, NULL), 0);
}

#define NWATCHED 50

void test_watchdog_one_thread_many_locks(void)
{
    env e = env_start(NULL);
    redislock_lock *l[NWATCHED];
    redislock_acquire_options o = watched(1500, NULL);
    int64_t deadline;
    long long c0;
    int before, after, i;
    char key[32];

    start_runtime_threads();
    before = thread_count();
    warm_scripts(e.c);
    c0 = th_script_calls(e.r);
    for (i = 0; i < NWATCHED; i++) {
        snprintf(key, sizeof key, "wd:many:%d", i);
        l[i] = th_lock(e.c, key);
        ASSERT_OK(redislock_acquire(l[i], &o));
    }
    after = thread_count();
    if (after > before + 1)
        log_threads("watching");
    /* Every lock gets renewed (at 500 ms) by that one thread. */
    deadline = th_now_ms() + 3000;
    while (th_script_calls(e.r) - c0 < NWATCHED && th_now_ms() < deadline)
        th_sleep_ms(20);
    ASSERT_GE(th_script_calls(e.r) - c0, NWATCHED);
    test_log("threads: %d before, %d with %d watched locks, %d after their "
             "renewals",
             before, after, NWATCHED, thread_count());
    ASSERT_LE(after, before + 1);
    ASSERT_LE(thread_count(), before + 1);
    for (i = 0; i < NWATCHED; i++) {
        ASSERT_OK(redislock_check(l[i]));
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    env_stop(&e);
}

/* Calls the any-thread functions on a lock another thread is using. */
typedef struct monitor {
    const redislock_lock *l;
    atomic_int stop;
    long calls;
    long bad; /* an outcome no state of the lock explains */
} monitor;

static void *watch_lock(void *arg)
{
    monitor *m = arg;
    redislock_err err;
    int64_t v;

    while (!atomic_load(&m->stop)) {
        err = redislock_check(m->l);
        v = redislock_valid_ms(m->l);
        m->calls++;
        if ((err != REDISLOCK_OK && err != REDISLOCK_EINVAL &&
             err != REDISLOCK_EEXPIRED) ||
            v < 0 || v > 1000)
            m->bad++;
    }
    return NULL;
}

void test_watchdog_check_from_other_thread(void)
{
    env e = env_start(NULL);
    redislock_lock *l = th_lock(e.c, "wd:mon");
    redislock_acquire_options o = watched(1000, NULL);
    monitor m;
    pthread_t t;
    int i;

    /* redislock_check and redislock_valid_ms are documented safe from
     * any thread: call them while the owner acquires and releases. */
    memset(&m, 0, sizeof m);
    m.l = l;
    ASSERT_EQ_INT(pthread_create(&t, NULL, watch_lock, &m), 0);
    for (i = 0; i < 100; i++) {
        ASSERT_OK(redislock_acquire(l, &o));
        ASSERT_OK(redislock_release(l));
    }
    atomic_store(&m.stop, 1);
    ASSERT_EQ_INT(pthread_join(t, NULL), 0);
    test_log("%ld checks from another thread", m.calls);
    ASSERT_GT(m.calls, 0);
    ASSERT_EQ_INT(m.bad, 0);
    redislock_lock_free(l);
    env_stop(&e);
}

/* An event callback that holds up the watchdog thread once, at the first
 * renewal of lock l, for ms: as a stopped process or a starved thread
 * would (on_event must return quickly; this one does not on purpose). */
typedef struct holdup {
    const redislock_lock *l;
    int64_t ms;
    atomic_int done;
    char detail[256]; /* the loss's detail, from the watchdog thread */
} holdup;

static void hold_thread(const redislock_event *ev, void *arg)
{
    holdup *h = arg;

    if (ev->kind == REDISLOCK_EVENT_RENEWED && ev->lock == h->l &&
        !atomic_exchange(&h->done, 1))
        th_sleep_ms(h->ms);
    if (ev->kind == REDISLOCK_EVENT_LOST && ev->lock != h->l)
        snprintf(h->detail, sizeof h->detail, "%s", redislock_errdetail());
}

/* A renewal that is due once the validity has run out is not sent: the
 * holder is told the lock is lost (EEXPIRED), and the server's lease,
 * which outlives the validity by the drift allowance, runs out as it
 * would have. Sent then (as before 2026-11-29), it either renewed a
 * lease the holder had been unable to vouch for, or, answered after its
 * one-millisecond wait, was reported lost while it kept the key held for
 * a whole TTL by nobody (the checker's false loss in the sharded mode's
 * soak). A holds a lock for 1.5 s with a drift allowance of 0.5 s: its
 * validity ends at 1 s, the server's lease at 1.5 s, its renewal is due
 * at 0.5 s. B's first renewal, at 0.1 s, holds the watchdog thread up
 * until 1.2 s. */
void test_watchdog_no_renewal_past_validity(void)
{
    holdup h = {0};
    redislock_options co = {0};
    env e;
    lost_log g;
    redislock_lock *a, *b;
    redislock_acquire_options oa = watched(1500, NULL), ob = watched(300, NULL);
    long long pttl;

    lost_log_init(&g);
    co.on_event = hold_thread;
    co.on_event_arg = &h;
    e = env_start(&co);
    a = th_lock(e.c, "wd:late");
    b = th_lock(e.c, "wd:other");
    oa.on_lost = on_lost;
    oa.on_lost_arg = &g;
    oa.drift_ms = 500;
    h.l = b;
    h.ms = 1100;
    ASSERT_OK(redislock_acquire(a, &oa));
    ASSERT_OK(redislock_acquire(b, &ob));
    ASSERT_EQ_INT(lost_calls(&g, 5000), 1);
    pttl = th_pttl(e.r, "wd:late");
    test_log("lost: %s (%s); the server's lease: %lld ms left",
             redislock_errname(g.why), h.detail, pttl);
    ASSERT_EQ_INT(g.why, REDISLOCK_EEXPIRED);
    ASSERT(strstr(h.detail, "held up") != NULL);
    /* Not renewed: what is left of the lease from 0 s (or, had A been
     * renewed before the hold-up, from 0.5 s), never a fresh 1.5 s. */
    ASSERT_LE(pttl, 1000);
    ASSERT(th_wait_key_gone(e.r, "wd:late", 7, 2000));
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    /* B's lease (0.3 s) ran out while its own event held the thread. */
    ASSERT_ERR(redislock_release(b), REDISLOCK_EEXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(b);
    env_stop(&e);
    lost_log_fini(&g);
}

/* Renewals over a slow link keep the validity from running out: each
 * renewal is due a period after the previous one was sent, not after its
 * reply. Through a proxy that holds every request for 500 ms, a watched
 * lock of TTL 1200 ms (period 400, validity 1186 ms from a sending) is
 * renewed as each reply comes, and redislock_valid_ms() is lowest, about
 * 1186 - 2 x 500 ms, just before a reply. Timed from the reply (as
 * before 2026-12-02), the renewal went 400 ms after a reply that came
 * 500 ms after the sending, its own reply 500 ms later still: the
 * validity ran out for about 200 ms of every 900 though the server's
 * lease never did. */
void test_watchdog_slow_link_keeps_validity(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    th_proxy *p = th_proxy_start(s->port);
    redislock_options co = {0};
    redislock_acquire_options o = watched(1200, NULL);
    redislock_client *c;
    redislock_lock *l;
    lost_log g;
    char url[64];
    int64_t t0, v, low = INT64_MAX;
    int samples = 0;

    lost_log_init(&g);
    o.on_lost = on_lost;
    o.on_lost_arg = &g;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(p));
    co.command_timeout_ms = 3000;
    c = th_client_url(url, &co);
    l = th_lock(c, "wd:slow");
    /* Every script loaded before the delay (the extend too: where the
     * scripts are sent one by one, a renewal's NOSCRIPT and the script
     * sent again cost another 500 ms through the proxy): one request a
     * renewal. */
    warm_scripts(c);
    th_proxy_set_delay(p, 500);
    ASSERT_OK(redislock_acquire(l, &o));
    t0 = th_now_ms();
    while (th_now_ms() - t0 < 4000) {
        v = redislock_valid_ms(l);
        if (v < low)
            low = v;
        samples++;
        th_sleep_ms(5);
    }
    test_log("valid_ms over 4 s (%d samples): lowest %lld; losses %d", samples,
             (long long)low, lost_calls(&g, 0));
    ASSERT_EQ_INT(lost_calls(&g, 0), 0);
    ASSERT_GE(low, 50);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_proxy_stop(p);
    redisFree(r);
    th_server_stop(s);
    lost_log_fini(&g);
}
