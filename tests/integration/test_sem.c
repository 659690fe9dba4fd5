/*
 * Counting semaphores (redislock_acquire_options.limit): at most limit
 * holders of a key at once, each with its own lease, token, fencing token
 * and renewal; expiry judged on the server's clock; a mismatched limit
 * named; an expired permit never reported as released; waiters woken by
 * a release and silent while blocked; a killed holder's permit back within
 * its TTL; and a model-based run of random operations by several owners.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "sem:key"
/* KEY as a set of one, for the harness's holders. */
static const char *const one_key[1] = {KEY};

static redislock_acquire_options permit(int limit, int64_t ttl, int64_t wait)
{
    redislock_acquire_options o = th_aopts(ttl, wait, 0);

    o.limit = limit;
    return o;
}

/* The permits the key's sorted set holds (its limit member left out). */
static long long permits(redisContext *r)
{
    long long n = th_cmd_int(r, "ZCARD %s", KEY);

    return n > 0 ? n - 1 : 0;
}

void test_sem_admits_limit_holders(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = permit(3, 10000, 0);
    redislock_lock *l[4];
    redislock_info info;
    redisReply *rep;
    int64_t last = 0, t0, spent;
    int i;

    for (i = 0; i < 4; i++)
        l[i] = th_lock(e.c, KEY);
    /* Times left are bounded by the time this test has taken, not by a
     * fixed margin: a loaded box can stall for a second between calls. */
    t0 = th_now_ms();
    for (i = 0; i < 3; i++) {
        ASSERT_OK(redislock_acquire(l[i], &o));
        ASSERT(redislock_fence(l[i]) > last);
        last = redislock_fence(l[i]);
        /* From the send, less the default drift (1 % + 2 ms). */
        spent = th_now_ms() - t0 + 1;
        ASSERT_LE(redislock_valid_ms(l[i]), 10000 - 102);
        ASSERT(redislock_valid_ms(l[i]) >= 10000 - 102 - spent);
    }
    ASSERT_EQ_INT(redislock_acquire(l[3], &o), REDISLOCK_EHELD);
    ASSERT_EQ_INT(permits(e.r), 3);
    /* Anyone can read it: a semaphore, its live permits and limit. */
    ASSERT_OK(redislock_inspect(l[3], &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SEMAPHORE);
    ASSERT_EQ_INT(info.holds, 3);
    ASSERT_EQ_INT(info.limit, 3);
    ASSERT_EQ_INT(info.fence, 0); /* the permits' tokens are theirs */
    ASSERT(info.owner == NULL);
    /* Each permit's time left, shortest (the first taken) first. */
    ASSERT_EQ_INT(info.nshare_ttls, 3);
    spent = th_now_ms() - t0 + 1;
    for (i = 0; i < 3; i++) {
        ASSERT(info.share_ttls[i] >= 10000 - spent);
        ASSERT_LE(info.share_ttls[i], 10000);
        ASSERT(i == 0 || info.share_ttls[i] >= info.share_ttls[i - 1]);
    }
    /* Held for other libraries too: their SET NX fails. */
    rep = th_cmd(e.r, "SET %s x NX PX 1000", KEY);
    ASSERT_EQ_INT(rep->type, REDIS_REPLY_NIL);
    freeReplyObject(rep);
    ASSERT(th_pttl(e.r, KEY) >= 10000 - (th_now_ms() - t0 + 1));
    ASSERT_OK(redislock_release(l[1]));
    ASSERT_OK(redislock_acquire(l[3], &o));
    ASSERT(redislock_fence(l[3]) > last);
    ASSERT_EQ_INT(redislock_release(l[1]), REDISLOCK_EINVAL);
    for (i = 0; i < 4; i++)
        if (i != 1)
            ASSERT_OK(redislock_release(l[i]));
    /* The last permit given back takes the key with it. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    for (i = 0; i < 4; i++)
        redislock_lock_free(l[i]);
    th_env_stop(&e);
}

void test_sem_limit_mismatch_named(void)
{
    th_env e = th_env_start();
    redislock_acquire_options two = permit(2, 10000, 0);
    redislock_acquire_options three = permit(3, 10000, 2000);
    redislock_acquire_options lock = th_aopts(10000, 0, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    long long keys;

    ASSERT_OK(redislock_acquire(a, &two));
    keys = th_cmd_int(e.r, "DBSIZE");
    ASSERT_EQ_INT(redislock_acquire(b, &three), REDISLOCK_EINVAL);
    test_log("%s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(),
                  "in use as a semaphore of limit 2 and this call asked "
                  "for a semaphore of limit 3: use one kind") != NULL);
    ASSERT(strstr(redislock_errdetail(), "RLLIMIT") == NULL);
    /* Nothing written: no permit, no waiting marker. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "DBSIZE"), keys);
    ASSERT_EQ_INT(permits(e.r), 1);
    /* A lock and a semaphore on one key exclude each other. */
    ASSERT_EQ_INT(redislock_acquire(b, &lock), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_acquire(b, &lock));
    two.wait_ms = 0;
    ASSERT_EQ_INT(redislock_acquire(a, &two), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(b));
    /* Once no permit is held, the next caller's limit is the key's. */
    ASSERT_OK(redislock_acquire(b, &three));
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

void test_sem_expired_permit_not_released(void)
{
    th_env e = th_env_start();
    redislock_acquire_options shortl = permit(2, 60, 0);
    redislock_acquire_options longl = permit(2, 10000, 0);

    th_share_expiry(&e, KEY, &shortl, &longl);
    th_env_stop(&e);
}

/* A permit's token adopted by another handle (as the CLI's release and
 * extend do): it extends and releases the permit, refuses hold-after, and
 * an adopted token of a permit that ran out is expired. */
void test_sem_adopted_permit(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = permit(2, 5000, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    char tok[300];

    ASSERT_OK(redislock_acquire(a, &o));
    snprintf(tok, sizeof tok, "%s", redislock_token(a));
    ASSERT_OK(redislock_adopt(b, tok));
    ASSERT_OK(redislock_extend(b, 20000));
    ASSERT_GT(th_cmd_int(e.r, "PTTL %s", KEY), 15000);
    ASSERT_ERR(redislock_release_hold(b, 1000), REDISLOCK_EINVAL);
    test_log("%s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "semaphore") != NULL);
    ASSERT_EQ_INT(permits(e.r), 1);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    o.ttl_ms = 50;
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_adopt(b, redislock_token(a)));
    th_sleep_ms(100);
    ASSERT_ERR(redislock_release(b), REDISLOCK_EEXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

void test_sem_watchdog_renews_own_permit(void)
{
    th_env e = th_env_start();
    redislock_acquire_options w = permit(2, 200, 0);
    redislock_acquire_options o = permit(2, 200, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY),
                   *c = th_lock(e.c, KEY), *d = th_lock(e.c, KEY);
    redisReply *rep;

    w.watchdog = 1;
    ASSERT_OK(redislock_acquire(a, &w));
    ASSERT_OK(redislock_acquire(b, &o));
    th_sleep_ms(700);
    /* a's permit was renewed, b's ran out: one place is free. */
    ASSERT_OK(redislock_check(a));
    ASSERT(redislock_valid_ms(a) > 0);
    ASSERT_OK(redislock_acquire(c, &o));
    ASSERT_EQ_INT(redislock_acquire(d, &o), REDISLOCK_EHELD);
    ASSERT_EQ_INT(redislock_release(b), REDISLOCK_EEXPIRED);
    /* Each renewal moved only a's own member's lease. */
    rep = th_cmd(e.r, "ZSCORE %s %s", KEY, redislock_token(c));
    ASSERT(rep->type == REDIS_REPLY_STRING);
    freeReplyObject(rep);
    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_release(c));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(c);
    redislock_lock_free(d);
    th_env_stop(&e);
}

void test_sem_waiter_woken_and_silent(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = permit(2, 30000, 0);
    redislock_acquire_options wo = permit(2, 30000, REDISLOCK_WAIT_FOREVER);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    th_waiter w;
    int64_t t0;

    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_acquire(b, &o));
    th_waiter_start(&w, e.c, KEY, &wo);
    th_wait_blocked(e.r, 1, 2000);
    th_assert_silent(e.r, 1000);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(b));
    th_waiter_join_ok(&w, 3000);
    test_log("release to the woken waiter's return: %lld us",
             (long long)(w.done_us - t0));
    /* Woken, not timed out: the holders' leases have 29 s left. */
    ASSERT((w.done_us - t0) / 1000 < 1000);
    ASSERT_EQ_INT(permits(e.r), 2);
    ASSERT_OK(redislock_release(w.l));
    ASSERT_OK(redislock_release(a));
    redislock_lock_free(w.l);
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

void test_sem_bad_input_leaves_nothing(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, KEY);
    redislock_acquire_options o;
    static const char *const what[] = {"reentrant", "owner", "metadata"};
    int i;

    o = permit(-1, 1000, 0);
    ASSERT_EQ_INT(redislock_acquire(a, &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "limit of -1") != NULL);
    o = permit(REDISLOCK_LIMIT_MAX + 1, 1000, 0);
    ASSERT_EQ_INT(redislock_acquire(a, &o), REDISLOCK_EINVAL);
    for (i = 0; i < 3; i++) {
        o = permit(2, 1000, 0);
        o.reentrant = i == 0;
        o.owner = i == 1 ? "me" : NULL;
        o.metadata = i == 2 ? "job" : NULL;
        ASSERT_EQ_INT(redislock_acquire(a, &o), REDISLOCK_EINVAL);
        ASSERT(strstr(redislock_errdetail(), what[i]) != NULL);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "DBSIZE"), 0);
    /* A permit has no hold-after: refused, and still held. */
    o = permit(2, 5000, 0);
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_EQ_INT(redislock_release_hold(a, 1000), REDISLOCK_EINVAL);
    ASSERT(redislock_valid_ms(a) > 0);
    ASSERT_EQ_INT(permits(e.r), 1);
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    /* Redlock: refused with the reason, nothing sent. */
    th_redlock_refuses(&o, "semaphore needs one server");
    redislock_lock_free(a);
    th_env_stop(&e);
}

/* kill -9 of a permit's holder: its place is back when its lease ends. */
void test_sem_killed_holder_freed_within_ttl(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = permit(1, 300, 3000);
    redislock_lock *b = th_lock(e.c, KEY);
    int64_t killed, t[2];
    int st, pid = th_start_holder(&e, one_key, 1, &o, t);

    kill(pid, SIGKILL);
    killed = th_now_ms();
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    ASSERT_OK(redislock_acquire(b, &o));
    test_log("taken %lld ms after the kill (lease 300 ms)",
             (long long)(th_now_ms() - killed));
    ASSERT_LE(th_now_ms() - killed, 300 + 100);
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(b);
    th_env_stop(&e);
}

/*
 * Processes on one semaphore of limit 3, each acquiring (waiting), raising
 * an occupancy counter, holding briefly, lowering it and releasing. The
 * counter's highest value is kept by a script, in one step with the
 * raise: it must never pass the limit, and should reach it.
 */
#define SEM_PROCS 8
#define SEM_ROUNDS 200
#define SEM_LIMIT 3

#define RAISE                                                                  \
    "local n = redis.call('INCR', KEYS[1]) "                                   \
    "if n > tonumber(redis.call('GET', KEYS[2]) or '0') then "                 \
    "redis.call('SET', KEYS[2], n) end return n"

static void occupant(const th_server *s, unsigned seed)
{
    redislock_client *c = th_client(s);
    redislock_lock *l = th_lock(c, KEY);
    redisContext *r = th_server_redis(s);
    redislock_acquire_options o =
        permit(SEM_LIMIT, 5000, REDISLOCK_WAIT_FOREVER);
    int i;

    for (i = 0; i < SEM_ROUNDS; i++) {
        if (redislock_acquire(l, &o) != REDISLOCK_OK)
            _exit(2);
        freeReplyObject(redisCommand(r, "EVAL %s 2 sem:occ sem:max", RAISE));
        usleep((useconds_t)(rand_r(&seed) % 300));
        freeReplyObject(redisCommand(r, "DECR sem:occ"));
        if (redislock_release(l) != REDISLOCK_OK)
            _exit(3);
    }
    _exit(0);
}

void test_sem_processes_never_exceed_limit(void)
{
    th_env e = th_env_start();
    long long max, rounds;
    char *str;

    th_run_workers(&e, SEM_PROCS, occupant);
    str = th_cmd_str(e.r, NULL, "GET sem:max");
    max = str ? atoll(str) : 0;
    free(str);
    rounds = th_server_calls(e.r, "incr");
    test_log("%lld sections, highest occupancy %lld (limit %d)", rounds, max,
             SEM_LIMIT);
    ASSERT_EQ_INT(rounds, SEM_PROCS * SEM_ROUNDS);
    ASSERT_LE(max, SEM_LIMIT);
    ASSERT_EQ_INT(max, SEM_LIMIT);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    th_env_stop(&e);
}

/*
 * A permit request held up in the network (see test_ghost.c): the acquire
 * times out, the request arrives later and takes a permit nobody knows
 * of, and the watchdog thread's abandon gives it back once the network
 * lets it through; the key is then gone.
 */
void test_sem_ghost_permit_given_back(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    th_proxy *p = th_proxy_start(s->port);
    redislock_options co = {0};
    redislock_acquire_options o = permit(2, 5000, 0);
    redislock_client *c;
    redislock_lock *l;
    char url[64];
    int64_t t0, seen = -1, undelayed = -1, gone = -1, now;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(p));
    co.command_timeout_ms = 200;
    c = th_client_url(url, &co);
    l = th_lock(c, KEY);
    /* Once through, so that the server has the scripts. */
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    th_proxy_set_delay(p, 1000);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_ETIMEDOUT);
    ASSERT_EQ_INT(redislock_holds(l), 0);
    while ((now = th_now_ms() - t0) < 3000 && gone < 0) {
        long long n = permits(r);

        if (n > 0 && seen < 0) {
            seen = now;
            th_proxy_set_delay(p, 0);
            undelayed = now;
        }
        if (n == 0 && seen >= 0)
            gone = now;
        th_sleep_ms(2);
    }
    test_log("ghost permit seen at %lld ms, gone at %lld ms (undelayed at "
             "%lld ms)",
             (long long)seen, (long long)gone, (long long)undelayed);
    ASSERT_GE(seen, 1000 - 50);
    ASSERT_GE(gone, 0);
    ASSERT_LE(gone - undelayed, 400);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", KEY), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_proxy_stop(p);
    redisFree(r);
    th_server_stop(s);
}

/*
 * Random acquires, releases, extends and pauses by 8 handles of 4 clients
 * on one semaphore, against a model of each handle's lease. The model
 * knows each lease's end within the call's round trip: no earlier than
 * its send plus the TTL, no later than its return plus the TTL. After
 * every step: no more than the limit of handles count validity, and the
 * server's set never holds more; an acquire is refused only when the
 * model has the limit's worth of leases that may still run, and granted
 * only when fewer surely run; a release or extend succeeds while the
 * handle counts validity and reports expiry once its lease surely ended.
 * RL_SEM_SEED replays a run (the seed is logged).
 */
#define MODEL_HANDLES 8
#define MODEL_LIMIT 3
#define MODEL_STEPS 10000
#define MODEL_SLACK_MS 3

typedef struct model_h {
    redislock_lock *l;
    int held;
    int64_t lo, hi; /* the lease's end: surely after lo, surely by hi */
} model_h;

static uint64_t model_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Leases of h[] that may still run at t, and that surely do. */
static void model_count(const model_h *h, int64_t t, int *maybe, int *surely)
{
    int i;

    *maybe = *surely = 0;
    for (i = 0; i < MODEL_HANDLES; i++) {
        if (!h[i].held)
            continue;
        *maybe += h[i].hi + MODEL_SLACK_MS > t;
        *surely += h[i].lo - MODEL_SLACK_MS > t;
    }
}

static void model_step(model_h *h, uint64_t *rng, int64_t *fence, long long *n)
{
    model_h *m = &h[model_next(rng) % MODEL_HANDLES];
    int op = (int)(model_next(rng) % 100), maybe, surely;
    int64_t ttl =
        model_next(rng) % 4 == 0 ? 2000 : 20 + (int64_t)(model_next(rng) % 60);
    redislock_acquire_options o = permit(MODEL_LIMIT, ttl, 0);
    int64_t t0, t1;
    redislock_err err;

    /* One acquire in two queues fair (and leaves the queue at once). */
    o.fair = model_next(rng) % 2;
    if (op < 5) {
        th_sleep_ms((int64_t)(model_next(rng) % 16));
        return;
    }
    t0 = th_now_ms();
    if (!m->held) {
        err = redislock_acquire(m->l, &o);
        t1 = th_now_ms();
        n[0]++;
        if (err == REDISLOCK_OK) {
            model_count(h, t1, &maybe, &surely);
            ASSERT_LT(surely, MODEL_LIMIT);
            ASSERT_GT(redislock_fence(m->l), *fence);
            *fence = redislock_fence(m->l);
            m->held = 1, m->lo = t0 + ttl, m->hi = t1 + ttl;
        } else {
            ASSERT_ERR(err, REDISLOCK_EHELD);
            model_count(h, t0, &maybe, &surely);
            ASSERT_GE(maybe, MODEL_LIMIT);
            n[1]++;
        }
        return;
    }
    err = op < 50 ? redislock_release(m->l) : redislock_extend(m->l, ttl);
    t1 = th_now_ms();
    /* Judged by the lease, not by the validity counted before sending (a
     * call sent with 1 ms valid may reach the server after the lease on
     * a loaded machine): a failure is wrong when the lease surely ran
     * through the call. */
    if (m->lo - MODEL_SLACK_MS > t1)
        ASSERT_OK(err);
    if (m->hi + MODEL_SLACK_MS < t0)
        ASSERT_ERR(err, REDISLOCK_EEXPIRED);
    if (err != REDISLOCK_OK)
        ASSERT_ERR(err, REDISLOCK_EEXPIRED);
    n[2] += err != REDISLOCK_OK;
    if (op < 50 || err != REDISLOCK_OK) {
        m->held = 0;
    } else {
        /* Never shortened: the later of the old end and the new. */
        m->lo = m->lo > t0 + ttl ? m->lo : t0 + ttl;
        m->hi = m->hi > t1 + ttl ? m->hi : t1 + ttl;
    }
}

void test_sem_model_random_operations(void)
{
    th_env e = th_env_start();
    redislock_client *c[4];
    model_h h[MODEL_HANDLES];
    uint64_t seed = th_seed("RL_SEM_SEED");
    uint64_t rng = seed | 1;
    int64_t fence = 0;
    long long n[3] = {0, 0, 0};
    int i, step, believers;

    for (i = 0; i < 4; i++)
        c[i] = th_client(e.s);
    for (i = 0; i < MODEL_HANDLES; i++) {
        h[i].l = th_lock(c[i % 4], KEY);
        h[i].held = 0;
    }
    for (step = 0; step < MODEL_STEPS; step++) {
        model_step(h, &rng, &fence, n);
        for (i = believers = 0; i < MODEL_HANDLES; i++)
            believers += redislock_valid_ms(h[i].l) > 0;
        if (believers > MODEL_LIMIT || permits(e.r) > MODEL_LIMIT)
            test_fail_(__FILE__, __LINE__,
                       "step %d (seed %llu): %d handles count validity, the "
                       "set holds %lld permits; limit %d",
                       step, (unsigned long long)seed, believers, permits(e.r),
                       MODEL_LIMIT);
    }
    test_log("%lld acquires, %lld refused, %lld releases or extends found "
             "the lease ended",
             n[0], n[1], n[2]);
    /* Each outcome was met. */
    ASSERT_GT(n[1], 0);
    ASSERT_GT(n[2], 0);
    for (i = 0; i < MODEL_HANDLES; i++)
        redislock_lock_free(h[i].l);
    for (i = 0; i < 4; i++)
        redislock_client_free(c[i]);
    th_env_stop(&e);
}

/* On a sharded client each key's semaphore lives on the key's server:
 * keys spread over three servers, each admitting its limit. */
void test_sem_sharded_keys(void)
{
    redislock_acquire_options o = permit(2, 10000, 0);

    th_sharded_shares(12, &o, &o, "redislock:limit:2");
    /* The same fair: each key's queue lives beside it. */
    o.fair = 1;
    th_sharded_shares(12, &o, &o, "redislock:limit:2");
}

/* A permit holder stopped (SIGSTOP) past its lease: two others take the
 * limit's places meanwhile, the newer writes the resource with its
 * fencing token, and the stopped holder, resumed, knows it lost the
 * permit, and its write with its own older token is refused. */
void test_sem_stopped_holder_write_refused(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = permit(2, 5000, 3000);
    redislock_acquire_options brief = permit(2, 200, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    int pid = th_start_stopped_holder(&e, one_key, 1, &brief, "sem:res");

    /* One place is free; the other once the stopped holder's lease ends. */
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_OK(redislock_fenced_set(e.c, "sem:res", 7, "fresh", 5,
                                   redislock_fence(b)));
    th_resume_refused(pid);
    ASSERT_KEY(e.r, "sem:res", "fresh");
    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}
