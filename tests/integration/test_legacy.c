/*
 * legacy: the lock recipes that older write-ups taught, each replayed with
 * raw hiredis to show how it fails, next to the same situation handled by
 * redislock. docs/LEGACY.md explains each case; the test names match its
 * sections.
 */
#include <errno.h>
#include <poll.h>
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

/* Scheduling and round trips on a loaded 2-core box under ASan. */
#define SLACK_MS 300


/* ---- 1. SETNX, then EXPIRE ------------------------------------------ */

void test_legacy_setnx_expire_eternal_lock(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "lg:eternal");
    redislock_acquire_options o = th_aopts(1000, 2000, 50);
    int64_t t0, ttl = 0;

    /* The old recipe's first step; the process dies before EXPIRE. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "SETNX lg:eternal crashed-holder"), 1);
    ASSERT_EQ_INT(th_pttl(e.r, "lg:eternal"), -1);
    th_sleep_ms(300);
    /* Nothing will ever free it. */
    ASSERT_EQ_INT(th_pttl(e.r, "lg:eternal"), -1);

    /* redislock does not wait for an expiry that cannot come: with
     * fail_fast it says so at once, and reports why. */
    o.fail_fast = 1;
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EHELD);
    ASSERT_LT(th_now_ms() - t0, SLACK_MS);
    ASSERT_EQ_INT(redislock_holder_ttl(l), REDISLOCK_TTL_NO_EXPIRY);
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_EQ_INT(ttl, REDISLOCK_TTL_NO_EXPIRY);
    ASSERT_EQ_INT(th_pttl(e.r, "lg:eternal"), -1);
    redislock_lock_free(l);
    th_env_stop(&e);
}

/* Watches the key's PTTL from its own connection while the main thread
 * acquires and releases it; a key without expiry is never acceptable. */
typedef struct observer {
    pthread_t thread;
    const th_server *s;
    atomic_int stop;
    long long looks, seen_held, seen_eternal;
} observer;

static void *observe(void *arg)
{
    observer *o = arg;
    redisContext *r = th_server_redis(o->s);
    long long pttl;

    while (!atomic_load(&o->stop)) {
        pttl = th_cmd_int(r, "PTTL lg:ttl");
        o->looks++;
        if (pttl == -1)
            o->seen_eternal++;
        else if (pttl > 0)
            o->seen_held++;
    }
    redisFree(r);
    return NULL;
}

void test_legacy_acquire_always_sets_ttl(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "lg:ttl");
    redislock_acquire_options o;
    observer ob;
    long long pttl;
    int i;

    memset(&ob, 0, sizeof ob);
    ob.s = e.s;
    ASSERT_EQ_INT(pthread_create(&ob.thread, NULL, observe, &ob), 0);
    for (i = 0; i < 1000; i++) {
        /* Both formats: SET NX PX, and the hash written by a script. */
        o = th_aopts(5000, 0, 0);
        if (i % 2)
            o.metadata = "m";
        ASSERT_OK(redislock_acquire(l, &o));
        pttl = th_pttl(e.r, "lg:ttl");
        if (pttl <= 0 || pttl > 5000)
            test_fail_(__FILE__, __LINE__,
                       "acquisition %d left PTTL %lld", i, pttl);
        ASSERT_OK(redislock_release(l));
    }
    atomic_store(&ob.stop, 1);
    ASSERT_EQ_INT(pthread_join(ob.thread, NULL), 0);
    test_log("observer: %lld looks, %lld while held, %lld without expiry",
             ob.looks, ob.seen_held, ob.seen_eternal);
    ASSERT_EQ_INT(ob.seen_eternal, 0);
    redislock_lock_free(l);
    th_env_stop(&e);
}

/* A child that takes key and dies holding it: by SIGKILL, or by _exit()
 * without releasing. Its token goes up the pipe first. */
static void doomed_holder(const th_server *s, const char *key, int fd,
                          int sigkill)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redislock_acquire_options o = th_aopts(1000, 0, 0);
    char tok[64] = "";

    if (redislock_client_new(&c, s->unix_url, NULL) == REDISLOCK_OK &&
        redislock_lock_new(c, key, strlen(key), &l) == REDISLOCK_OK &&
        redislock_acquire(l, &o) == REDISLOCK_OK)
        snprintf(tok, sizeof tok, "%s", redislock_token(l));
    if (write(fd, tok, sizeof tok) != (ssize_t)sizeof tok)
        _exit(2);
    if (sigkill)
        raise(SIGKILL);
    _exit(0);
}

/* Reads a child's token, waiting at most 10 s. */
static void read_token(int fd, char *tok, size_t size)
{
    struct pollfd p = {fd, POLLIN, 0};
    size_t got = 0;
    ssize_t n;

    while (got < size) {
        ASSERT_EQ_INT(poll(&p, 1, 10000), 1);
        n = read(fd, tok + got, size - got);
        ASSERT_GT(n, 0);
        got += (size_t)n;
    }
    tok[size - 1] = '\0';
    ASSERT_TOKEN(tok);
}

static pid_t spawn_holder(const th_server *s, const char *key, int fd,
                          int sigkill)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        doomed_holder(s, key, fd, sigkill);
    return pid;
}

static void reap(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0)
        ASSERT_EQ_INT(errno, EINTR);
}

void test_legacy_killed_holder_expires(void)
{
    static const char *const keys[2] = {"lg:killed", "lg:exited"};
    th_env e = th_env_start();
    redislock_lock *l;
    char tok[64];
    int fds[2], st, i;
    int64_t acked, gone_after;
    pid_t pid;

    ASSERT_EQ_INT(pipe(fds), 0);
    for (i = 0; i < 2; i++) {
        pid = spawn_holder(e.s, keys[i], fds[1], i == 0);
        read_token(fds[0], tok, sizeof tok);
        acked = th_now_ms();
        /* It died holding the lock: the key is still its token. */
        ASSERT_KEY(e.r, keys[i], tok);
        reap(pid, &st);
        if (i == 0)
            ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        else
            ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* The lease set at acquisition ends it; the server's expiry was
         * set before the token reached us, so TTL + 100 ms after that is
         * a strict bound. */
        ASSERT(th_wait_key_gone(e.r, keys[i], strlen(keys[i]),
                                1000 + 100 - (th_now_ms() - acked)));
        gone_after = th_now_ms() - acked;
        test_log("%s: free %lld ms after the holder took it (TTL 1000)",
                 keys[i], (long long)gone_after);
        l = th_lock(e.c, keys[i]);
        ASSERT_OK(redislock_acquire(l, NULL));
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
    }
    close(fds[0]);
    close(fds[1]);
    th_env_stop(&e);
}

/* ---- 2. Timestamps and GETSET ---------------------------------------- */

/*
 * The old timestamp recipe, as a client whose clock reads clock_ms: the
 * value is the holder's expiry on its own clock; a value in the past
 * means "expired", and GETSET decides who takes it over. 1: "won".
 */
static int legacy_ts_acquire(redisContext *r, const char *key,
                             long long clock_ms, long long timeout_ms)
{
    long long stamp = clock_ms + timeout_ms + 1;
    char *cur, *old;
    int won;

    if (th_cmd_int(r, "SETNX %s %lld", key, stamp) == 1)
        return 1;
    cur = th_cmd_str(r, NULL, "GET %s", key);
    won = cur != NULL && atoll(cur) < clock_ms;
    free(cur);
    if (!won)
        return 0;
    old = th_cmd_str(r, NULL, "GETSET %s %lld", key, stamp);
    won = old == NULL || atoll(old) < clock_ms;
    free(old);
    return won;
}

static long long wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void test_legacy_getset_skewed_clocks(void)
{
    th_env e = th_env_start();
    long long now = wall_ms(), timeout = 2000;
    int slow_won, fast_won;

    /* A holder that crashed long ago left its stamp behind. */
    freeReplyObject(th_cmd(e.r, "SET lg:ts %lld", now - 4000));
    /* Client A's clock is 3 s slow, client B's 3 s fast. */
    slow_won = legacy_ts_acquire(e.r, "lg:ts", now - 3000, timeout);
    fast_won = legacy_ts_acquire(e.r, "lg:ts", now + 3000, timeout);
    test_log("legacy timestamps: slow clock won %d, fast clock won %d",
             slow_won, fast_won);
    /* A's lease has 2 s to run, yet B judged it expired by its own
     * clock: two winners at once. */
    ASSERT_EQ_INT(slow_won, 1);
    ASSERT_EQ_INT(fast_won, 1);
    th_env_stop(&e);
}

/* Two contenders released together onto one key. */
#define ROUNDS 200
typedef struct racer {
    pthread_t thread;
    redislock_client *c;
    pthread_barrier_t *start, *done;
    int wins[ROUNDS];
    redislock_err bad; /* anything but OK / EHELD */
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *l;
    redislock_err err;
    char key[32];
    int i;

    for (i = 0; i < ROUNDS; i++) {
        snprintf(key, sizeof key, "lg:race:%d", i);
        if (redislock_lock_new(r->c, key, strlen(key), &l) != REDISLOCK_OK)
            r->bad = REDISLOCK_ENOMEM;
        pthread_barrier_wait(r->start);
        err = l != NULL ? redislock_acquire(l, &o) : REDISLOCK_EINVAL;
        r->wins[i] = err == REDISLOCK_OK;
        if (err != REDISLOCK_OK && err != REDISLOCK_EHELD)
            r->bad = err;
        pthread_barrier_wait(r->done);
        redislock_lock_free(l);
    }
    return NULL;
}

/* The key's value is no clock reading of anyone's: a token. */
static void assert_value_is_token(redisContext *r, const char *key)
{
    char *v = th_cmd_str(r, NULL, "GET %s", key);

    ASSERT_TOKEN(v);
    free(v);
}

/* ROUNDS races between two clients; each round must have one winner. */
static void run_races(th_env *e, redislock_client *c[2])
{
    pthread_barrier_t start, done;
    racer *rc = calloc(2, sizeof *rc);
    int i, j, first = 0;

    ASSERT(rc != NULL);
    pthread_barrier_init(&start, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    /* Odd rounds race over a stale lock that the server has expired. */
    for (i = 1; i < ROUNDS; i += 2)
        freeReplyObject(th_cmd(e->r, "SET lg:race:%d stale PX 1", i));
    th_sleep_ms(10);
    for (j = 0; j < 2; j++) {
        rc[j].c = c[j];
        rc[j].start = &start;
        rc[j].done = &done;
        ASSERT_EQ_INT(pthread_create(&rc[j].thread, NULL, race, &rc[j]), 0);
    }
    for (j = 0; j < 2; j++)
        ASSERT_EQ_INT(pthread_join(rc[j].thread, NULL), 0);
    ASSERT_EQ_INT(rc[0].bad, REDISLOCK_OK);
    ASSERT_EQ_INT(rc[1].bad, REDISLOCK_OK);
    for (i = 0; i < ROUNDS; i++) {
        if (rc[0].wins[i] + rc[1].wins[i] != 1)
            test_fail_(__FILE__, __LINE__, "round %d: %d winners", i,
                       rc[0].wins[i] + rc[1].wins[i]);
        first += rc[0].wins[i];
    }
    test_log("%d rounds, one winner each; first racer won %d", ROUNDS,
             first);
    assert_value_is_token(e->r, "lg:race:1");
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    free(rc);
}

/* The lease is the server's TTL, not the holder's nor anyone's clock. */
static void assert_server_judges_lease(th_env *e, redislock_client *other)
{
    redislock_lock *h = th_lock(e->c, "lg:lease");
    redislock_lock *x = th_lock(other, "lg:lease");
    redislock_acquire_options o = th_aopts(300, 0, 0);
    redislock_acquire_options ow = th_aopts(10000, 200, 20);

    ASSERT_OK(redislock_acquire(h, &o));
    assert_value_is_token(e->r, "lg:lease");
    /* The holder asked for 300 ms; the server now says 5 s. */
    ASSERT_EQ_INT(th_cmd_int(e->r, "PEXPIRE lg:lease 5000"), 1);
    th_sleep_ms(600);
    ASSERT_ERR(redislock_acquire(x, &ow), REDISLOCK_EHELD);
    ASSERT_GT(redislock_holder_ttl(x), 5000 - 600 - SLACK_MS - 200);
    /* And when the server ends it early, it is free at once. */
    ASSERT_EQ_INT(th_cmd_int(e->r, "PEXPIRE lg:lease 1"), 1);
    th_sleep_ms(5);
    ASSERT_OK(redislock_acquire(x, NULL));
    ASSERT_OK(redislock_release(x));
    redislock_lock_free(h);
    redislock_lock_free(x);
}

void test_legacy_one_winner_server_ttl(void)
{
    th_env e = th_env_start();
    redislock_client *c[2];

    c[0] = th_client(e.s);
    c[1] = th_client(e.s);
    run_races(&e, c);
    assert_server_judges_lease(&e, c[1]);
    redislock_client_free(c[0]);
    redislock_client_free(c[1]);
    th_env_stop(&e);
}

/* ---- 3. Unlock by DEL ------------------------------------------------- */

void test_legacy_del_unlock(void)
{
    th_env e = th_env_start();
    redislock_client *cb = th_client(e.s);
    redislock_lock *a = th_lock(e.c, "lg:del");
    redislock_lock *b = th_lock(cb, "lg:del");
    redislock_lock *c3 = th_lock(cb, "lg:del");
    redislock_acquire_options short_ttl = th_aopts(150, 0, 0);
    redislock_acquire_options long_ttl = th_aopts(10000, 0, 0);

    /* Legacy: A's lease runs out while it works; B takes the lock; A
     * finishes and "unlocks" with a plain DEL. */
    freeReplyObject(th_cmd(e.r, "SET lg:del token-a NX PX 150"));
    ASSERT(th_wait_key_gone(e.r, "lg:del", 6, 150 + 2000));
    ASSERT_OK(redislock_acquire(b, &long_ttl));
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL lg:del"), 1);
    /* B's lock is gone while B goes on working: a third party gets in. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS lg:del"), 0);
    ASSERT_OK(redislock_acquire(c3, &long_ttl));
    ASSERT_ERR(redislock_release(b), REDISLOCK_ELOST);
    ASSERT_OK(redislock_release(c3));

    /* redislock: the same story, but A's release compares its token. */
    ASSERT_OK(redislock_acquire(a, &short_ttl));
    ASSERT(th_wait_key_gone(e.r, "lg:del", 6, 150 + 2000));
    ASSERT_OK(redislock_acquire(b, &long_ttl));
    ASSERT_ERR(redislock_release(a), REDISLOCK_ELOST);
    ASSERT_KEY(e.r, "lg:del", redislock_token(b));
    ASSERT_GT(th_pttl(e.r, "lg:del"), 10000 - SLACK_MS);
    ASSERT_ERR(redislock_acquire(c3, NULL), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(c3);
    redislock_client_free(cb);
    th_env_stop(&e);
}

/* ---- 4. A fixed retry delay ------------------------------------------ */

#define WAITERS 16
#define HERD_DELAY_MS 200
#define HERD_HOLD_MS 1200
#define MAX_SEEN 8192

typedef struct herd {
    redislock_client *c;
    pthread_barrier_t go;
    int fixed;
    atomic_int calls;  /* of the fixed strategy */
    atomic_int failed; /* waiters that did not get the lock */
} herd;

/* The legacy strategy: the same pause every time, no jitter. */
static int64_t fixed_delay(void *arg, int attempt, int64_t holder_ttl_ms)
{
    herd *h = arg;

    (void)attempt;
    (void)holder_ttl_ms;
    atomic_fetch_add(&h->calls, 1);
    return HERD_DELAY_MS;
}

static void *waiter(void *arg)
{
    herd *h = arg;
    redislock_acquire_options o = th_aopts(30000, 20000, HERD_DELAY_MS);
    redislock_lock *l = NULL;
    int ok = redislock_lock_new(h->c, "lg:herd", 7, &l) == REDISLOCK_OK;

    if (h->fixed) {
        o.retry_fn = fixed_delay;
        o.retry_arg = h;
    }
    pthread_barrier_wait(&h->go);
    ok = ok && redislock_acquire(l, &o) == REDISLOCK_OK;
    if (ok) {
        th_sleep_ms(2);
        ok = redislock_release(l) == REDISLOCK_OK;
    }
    if (!ok)
        atomic_fetch_add(&h->failed, 1);
    redislock_lock_free(l);
    return NULL;
}

/* Server times, in us, of the attempts MONITOR saw. */
typedef struct attempts {
    int n;
    int64_t t[MAX_SEEN];
} attempts;

static int64_t monitor_time(const char *line)
{
    char *end;
    long long sec = strtoll(line, &end, 10);

    ASSERT(*end == '.');
    return (int64_t)sec * 1000000 + strtoll(end + 1, NULL, 10);
}

/* What a MONITOR line is: 1 an attempt (an acquire script call, whose
 * arguments carry the "plain" format), 2 a release script call, 0
 * anything else (commands a script runs inside the server show "lua]"). */
static int classify_line(const char *line)
{
    if (strstr(line, "lua]") != NULL)
        return 0;
    if ((strstr(line, "\"FCALL\"") == NULL &&
         strstr(line, "\"EVALSHA\"") == NULL) ||
        strstr(line, "\" \"lg:herd\" \"") == NULL)
        return 0;
    return strstr(line, "\"plain\"") != NULL ? 1 : 2;
}

/* Reads what MONITOR on m recorded, up to a mark sent now on r. */
static void monitor_drain(redisContext *m, redisContext *r, attempts *a)
{
    char mark[64];
    redisReply *rep;
    void *reply;
    int kind, released = 0;

    snprintf(mark, sizeof mark, "lg-herd-mark-%d", (int)getpid());
    freeReplyObject(th_cmd(r, "ECHO %s", mark));
    a->n = 0;
    for (;;) {
        if (redisGetReply(m, &reply) != REDIS_OK)
            test_fail_(__FILE__, __LINE__, "MONITOR: %s", m->errstr);
        rep = reply;
        ASSERT_EQ_INT(rep->type, REDIS_REPLY_STATUS);
        if (strstr(rep->str, mark) != NULL) {
            freeReplyObject(rep);
            return;
        }
        /* Only the polling while the holder keeps the lock: after its
         * release, waiters are woken one by one and no longer poll. */
        kind = released ? 0 : classify_line(rep->str);
        released = released || kind == 2;
        if (kind == 1) {
            ASSERT_LT(a->n, MAX_SEEN);
            a->t[a->n++] = monitor_time(rep->str);
        }
        freeReplyObject(rep);
    }
}

/* How crowded the attempts were, the first (simultaneous) wave left out:
 * the mean number of other attempts within +-1 ms and +-5 ms of each,
 * and the most attempts in any 2 ms window. */
typedef struct crowding {
    int n;
    double near2, near10;
    int max2;
} crowding;

static crowding measure(const attempts *a)
{
    crowding c = {0, 0, 0, 0};
    int64_t from = a->n ? a->t[0] + HERD_DELAY_MS * 1000 / 2 : 0;
    long long sum2 = 0, sum10 = 0;
    int i, j, in2;

    for (i = 0; i < a->n; i++) {
        if (a->t[i] < from)
            continue;
        c.n++;
        in2 = 0;
        for (j = 0; j < a->n; j++) {
            int64_t d = a->t[j] - a->t[i];
            if (a->t[j] < from)
                continue;
            if (j != i && d >= -1000 && d <= 1000)
                sum2++;
            if (j != i && d >= -5000 && d <= 5000)
                sum10++;
            if (d >= 0 && d < 2000)
                in2++;
        }
        if (in2 > c.max2)
            c.max2 = in2;
    }
    if (c.n > 0) {
        c.near2 = (double)sum2 / c.n;
        c.near10 = (double)sum10 / c.n;
    }
    return c;
}

/* WAITERS threads on one shared client queue behind a holder that lets
 * go after HERD_HOLD_MS; returns how crowded their attempts were. */
static crowding herd_run(const th_server *s, int fixed)
{
    redislock_options co = {0};
    redisContext *m = th_server_redis(s), *r = th_server_redis(s);
    pthread_t th[WAITERS];
    attempts *a = malloc(sizeof *a);
    redislock_lock *holder;
    crowding c;
    herd h;
    int i;

    ASSERT(a != NULL);
    memset(&h, 0, sizeof h);
    h.fixed = fixed;
    /* A connection per waiter, so that none queues inside the client. */
    co.max_connections = WAITERS + 4;
    h.c = th_client_url(s->unix_url, &co);
    holder = th_lock(h.c, "lg:herd");
    ASSERT_OK(redislock_acquire(holder, NULL));
    freeReplyObject(th_cmd(m, "MONITOR"));
    pthread_barrier_init(&h.go, NULL, WAITERS + 1);
    for (i = 0; i < WAITERS; i++)
        ASSERT_EQ_INT(pthread_create(&th[i], NULL, waiter, &h), 0);
    pthread_barrier_wait(&h.go);
    th_sleep_ms(HERD_HOLD_MS);
    ASSERT_OK(redislock_release(holder));
    for (i = 0; i < WAITERS; i++)
        ASSERT_EQ_INT(pthread_join(th[i], NULL), 0);
    ASSERT_EQ_INT(atomic_load(&h.failed), 0);
    monitor_drain(m, r, a);
    c = measure(a);
    test_log("%s: %d attempts (%d after the first wave); others within "
             "+-1 ms %.2f, within +-5 ms %.2f; most in a 2 ms window %d",
             fixed ? "fixed delay" : "jitter", a->n, c.n, c.near2, c.near10,
             c.max2);
    if (fixed)
        ASSERT_GT(atomic_load(&h.calls), 0);
    pthread_barrier_destroy(&h.go);
    redislock_lock_free(holder);
    redislock_client_free(h.c);
    redisFree(r);
    redisFree(m);
    free(a);
    return c;
}

void test_legacy_fixed_delay_herd(void)
{
    th_server *s = th_server_start(NULL);
    crowding fixed, jitter;
    int round, apart = 0;

    /* A statistical property: on a loaded machine the scheduler can wake
     * jittered waiters in batches too (6.2 against 14.8 seen beside
     * another make check). Three rounds; the jitter must show in one.
     * Without jitter no round can show it. */
    for (round = 0; round < 3 && !apart; round++) {
        fixed = herd_run(s, 1);
        jitter = herd_run(s, 0);
        /* Enough retries for the figures to mean something: the holder
         * keeps everyone waiting for several delays. */
        ASSERT_GE(fixed.n, 3 * WAITERS);
        ASSERT_GE(jitter.n, 3 * WAITERS);
        /* Fixed pauses keep the waiters in step; with jitter they drift
         * apart. Expected near10 is about 13 against 1; a factor of 3
         * leaves room for a loaded machine smearing the fixed waves. */
        apart = fixed.near10 * 100 >= 3 * jitter.near10 * 100 &&
                fixed.max2 >= jitter.max2;
    }
    ASSERT(apart);
    th_server_stop(s);
}
