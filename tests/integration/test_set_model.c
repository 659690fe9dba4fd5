/*
 * Sets of keys under many owners: random acquires, releases, extends and
 * pauses of overlapping sets checked against a model of each lease, on
 * one server and over three (agroup.c);
 * processes taking random sets around non-atomic counters; and a set's
 * holder stopped past its lease, whose fenced write is refused.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/*
 * Random acquires (no wait), releases, extends and pauses by 8 handles of
 * 4 clients, each handle a set of 1 to 3 of 5 keys, against a model of
 * each handle's lease, known to within the call's round trip: it ends no
 * earlier than the call's send plus the TTL and no later than its return
 * plus the TTL. An extend that fails writes nothing, so the keys that
 * still hold its token linger until the old lease's end at the latest.
 * An acquire is refused only when a lease over one of its keys may still
 * run, and granted only when none surely runs, with a fencing token above
 * every earlier one of each of its keys. After every step, read from the
 * server in one step: no key is believed by two handles; every key of a
 * handle that counts validity holds its token; every key's token is a
 * lease the model knows. RL_SET_SEED replays a run (the seed is logged).
 */
#define MODEL_KEYS 5
#define MODEL_HANDLES 8
#define MODEL_CLIENTS 4
#define MODEL_STEPS 10000
#define MODEL_SLACK_MS 3

static const char *const model_key[MODEL_KEYS] = {"sm:0", "sm:1", "sm:2",
                                                  "sm:3", "sm:4"};

typedef struct model_h {
    redislock_lock *l;
    int n, key[3];
    /* held: the handle believes it holds; lingers: a failed extend left
     * keys that may hold its token until hi. */
    int held, lingers;
    int64_t lo, hi; /* the lease's end: surely after lo, surely by hi */
    char token[300];
} model_h;

typedef struct model {
    model_h h[MODEL_HANDLES];
    redisContext *kr[MODEL_KEYS]; /* the server of each key */
    int kat[MODEL_KEYS];          /* its number */
    uint64_t rng, seed;
    int64_t fence[MODEL_KEYS]; /* the last fencing token of each key */
    int step;
    /* Acquires, of them granted to sets of 2+ keys, refusals (of them,
     * sets whose own lease ended while they were taken), releases or
     * extends that found the lease ended (and of those, ELOST). */
    long long acq, multi, refused, outrun, ended, lost;
    long long spread; /* granted to sets over 2+ servers */
} model;

static uint64_t model_next(model *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

#define MODEL_FAIL(m, ...)                                                     \
    test_fail_(__FILE__, __LINE__, "step %d (RL_SET_SEED=%llu): %s",           \
               (m)->step, (unsigned long long)(m)->seed,                       \
               model_msg_(__VA_ARGS__))

static const char *model_msg_(const char *fmt, ...) TEST_PRINTF_(1, 2);

static const char *model_msg_(const char *fmt, ...)
{
    static char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

static int model_has(const model_h *h, int k)
{
    int i;

    for (i = 0; i < h->n; i++)
        if (h->key[i] == k)
            return 1;
    return 0;
}

static int model_overlap(const model_h *a, const model_h *b)
{
    int i;

    for (i = 0; i < a->n; i++)
        if (model_has(b, a->key[i]))
            return 1;
    return 0;
}

/* Leases over a key of h, of other handles than h (and h's own lingering
 * keys), that may still run at t, and that surely do. */
static void model_conflicts(const model *m, const model_h *h, int64_t t,
                            int *maybe, int *surely)
{
    int i;

    *maybe = *surely = 0;
    for (i = 0; i < MODEL_HANDLES; i++) {
        const model_h *o = &m->h[i];

        if ((o == h && !o->lingers) || !model_overlap(o, h))
            continue;
        *maybe += (o->held || o->lingers) && o->hi + MODEL_SLACK_MS > t;
        *surely += o->held && o != h && o->lo - MODEL_SLACK_MS > t;
    }
}

/* The fencing counter of the model's key k: its server's. */
static long long model_counter(const model *m, int k)
{
    return th_fence_counter(m->kr[k], model_key[k]);
}

/* A granted acquire: above every earlier token of each key, which each
 * key's server's counter now holds. */
static void model_granted(model *m, model_h *h, int64_t t0, int64_t t1,
                          int64_t ttl)
{
    int64_t f = redislock_fence(h->l);
    int i, k, apart = 0;

    for (i = 0; i < h->n; i++) {
        k = h->key[i];
        if (f <= m->fence[k])
            MODEL_FAIL(m, "fence %lld, key %s's last %lld", (long long)f,
                       model_key[k], (long long)m->fence[k]);
        if (model_counter(m, k) != f)
            MODEL_FAIL(m, "key %s's counter %lld, the set's fence %lld",
                       model_key[k], model_counter(m, k), (long long)f);
        m->fence[k] = f;
        apart |= m->kat[k] != m->kat[h->key[0]];
    }
    m->spread += apart;
    h->held = 1, h->lingers = 0;
    h->lo = t0 + ttl, h->hi = t1 + ttl;
    snprintf(h->token, sizeof h->token, "%s", redislock_token(h->l));
    m->multi += h->n > 1;
}

/* Logs what the server holds on h's keys at t (ms), and which of the
 * model's handles each token is: the context of a failure. */
static void model_explain(const model *m, const model_h *h, int64_t t)
{
    int i, j, k;
    char *v;

    for (i = 0; i < h->n; i++) {
        k = h->key[i];
        v = th_cmd_str(m->kr[k], NULL, "GET %s", model_key[k]);
        test_log("%s: %s, PTTL %lld", model_key[k], v ? v : "(free)",
                 th_cmd_int(m->kr[k], "PTTL %s", model_key[k]));
        for (j = 0; v != NULL && j < MODEL_HANDLES; j++)
            if (strcmp(m->h[j].token, v) == 0)
                test_log("  handle %d's: held %d lingers %d, lease end "
                         "%lld..%lld ms after the call's start",
                         j, m->h[j].held, m->h[j].lingers,
                         (long long)(m->h[j].lo - t),
                         (long long)(m->h[j].hi - t));
        free(v);
    }
    test_log("refused with the holder's TTL %lld ms; handles over its keys:",
             (long long)redislock_holder_ttl(h->l));
    for (j = 0; j < MODEL_HANDLES; j++)
        if (&m->h[j] != h && model_overlap(&m->h[j], h))
            test_log("  handle %d: held %d lingers %d, lease end %lld..%lld "
                     "ms after the call's start",
                     j, m->h[j].held, m->h[j].lingers,
                     (long long)(m->h[j].lo - t), (long long)(m->h[j].hi - t));
}

static void model_acquire(model *m, model_h *h)
{
    int64_t ttl =
        model_next(m) % 20 == 0 ? 300 : 10 + (int64_t)(model_next(m) % 50);
    redislock_acquire_options o = th_aopts(ttl, 0, 0);
    int64_t t0 = th_now_ms(), t1;
    redislock_err err = redislock_acquire(h->l, &o);
    int maybe, surely;

    t1 = th_now_ms();
    m->acq++;
    if (err == REDISLOCK_OK) {
        model_conflicts(m, h, t1, &maybe, &surely);
        if (surely > 0)
            MODEL_FAIL(m, "a set granted beside %d live leases over its keys",
                       surely);
        model_granted(m, h, t0, t1, ttl);
        return;
    }
    ASSERT_ERR(err, REDISLOCK_EHELD);
    model_conflicts(m, h, t0, &maybe, &surely);
    /* A set over several servers takes its groups one after another: when
     * that takes longer than the TTL (a loaded machine, a TTL of 10 ms),
     * the first group's lease has ended before the last is taken, and the
     * acquire, having given back what it took, says the keys are free. */
    if (maybe == 0 && redislock_holder_ttl(h->l) == REDISLOCK_TTL_FREE &&
        t1 - t0 + MODEL_SLACK_MS > ttl) {
        m->outrun++;
    } else if (maybe == 0) {
        test_log("the call took %lld ms", (long long)(t1 - t0));
        model_explain(m, h, t0);
        MODEL_FAIL(m, "a set refused with no lease over its keys running");
    }
    m->refused++;
}

/* How many of h's keys hold its token now, read from the server. */
static int model_holding(const model *m, const model_h *h)
{
    int i, k, n = 0;
    char *v;

    for (i = 0; i < h->n; i++) {
        k = h->key[i];
        v = th_cmd_str(m->kr[k], NULL, "GET %s", model_key[k]);
        n += v != NULL && strcmp(v, h->token) == 0;
        free(v);
    }
    return n;
}

/* A release or extend, judged by what the server shows, not by the
 * validity the handle counted before sending it: a call sent with 1 ms
 * of validity may reach the server after the lease (the drift allowance
 * does not cover a sender descheduled for longer), and then must fail.
 * A failure is wrong when the lease surely ran through the call, or,
 * for an extend (which writes nothing when it fails), when every key
 * still holds the token: a key that lost it never gets it back, so all
 * held it when the extend ran. */
static void model_release_or_extend(model *m, model_h *h, int release)
{
    int64_t ttl = 10 + (int64_t)(model_next(m) % 50);
    int64_t valid = redislock_valid_ms(h->l), t0 = th_now_ms(), t1;
    redislock_err err =
        release ? redislock_release(h->l) : redislock_extend(h->l, ttl);
    int maybe, surely;

    t1 = th_now_ms();
    if (!release && err != REDISLOCK_OK && model_holding(m, h) == h->n)
        MODEL_FAIL(m,
                   "extend sent with %lld ms valid: %s, yet every key "
                   "holds its token",
                   (long long)valid, redislock_errname(err));
    if (err != REDISLOCK_OK && h->lo - MODEL_SLACK_MS > t1)
        MODEL_FAIL(m, "%s of a lease that surely runs: %s",
                   release ? "release" : "extend", redislock_errname(err));
    if (h->hi + MODEL_SLACK_MS < t0 && err == REDISLOCK_OK)
        MODEL_FAIL(m, "%s of a lease that surely ended succeeded",
                   release ? "release" : "extend");
    if (err == REDISLOCK_ELOST) {
        /* Another lease holds a key: only one the model knows of. */
        model_conflicts(m, h, t0, &maybe, &surely);
        if (maybe == 0)
            MODEL_FAIL(m, "ELOST with no other lease over its keys");
    } else if (err != REDISLOCK_OK) {
        ASSERT_ERR(err, REDISLOCK_EEXPIRED);
    }
    m->ended += err != REDISLOCK_OK;
    m->lost += err == REDISLOCK_ELOST;
    if (release || err != REDISLOCK_OK) {
        /* A release frees every key that holds the token; a failed
         * extend leaves them to their lease. */
        h->held = 0;
        h->lingers = !release;
    } else {
        /* Never shortened: the later of the old end and the new. */
        h->lo = h->lo > t0 + ttl ? h->lo : t0 + ttl;
        h->hi = h->hi > t1 + ttl ? h->hi : t1 + ttl;
    }
}

/* The handle, held or lingering, over key k whose token is tok, or -1. */
static int model_owner(const model *m, int k, const char *tok)
{
    int i;

    for (i = 0; i < MODEL_HANDLES; i++)
        if ((m->h[i].held || m->h[i].lingers) && model_has(&m->h[i], k) &&
            strcmp(m->h[i].token, tok) == 0)
            return i;
    return -1;
}

/* Checks the servers' keys against the beliefs: the keys are read first,
 * each in one step, so a handle that still counts validity after the
 * reads held its lease at each read. */
static void model_check(model *m)
{
    redisReply *st[MODEL_KEYS];
    int believer[MODEL_KEYS], i, j, k;

    for (k = 0; k < MODEL_KEYS; k++)
        st[k] = th_cmd(m->kr[k], "GET %s", model_key[k]);
    for (k = 0; k < MODEL_KEYS; k++) {
        const redisReply *v = st[k];

        believer[k] = -1;
        if (v->type == REDIS_REPLY_STRING && model_owner(m, k, v->str) < 0)
            MODEL_FAIL(m, "key %s holds %s, no lease the model knows",
                       model_key[k], v->str);
    }
    for (i = 0; i < MODEL_HANDLES; i++) {
        const model_h *h = &m->h[i];

        if (redislock_valid_ms(h->l) <= 0)
            continue;
        if (!h->held)
            MODEL_FAIL(m, "handle %d counts validity the model ended", i);
        for (j = 0; j < h->n; j++) {
            const redisReply *v = st[k = h->key[j]];

            if (believer[k] >= 0)
                MODEL_FAIL(m, "key %s believed by handles %d and %d",
                           model_key[k], believer[k], i);
            believer[k] = i;
            if (v->type != REDIS_REPLY_STRING ||
                !th_value_is_token(v->str, h->token))
                MODEL_FAIL(m, "handle %d believes in key %s, which holds %s", i,
                           model_key[k],
                           v->type == REDIS_REPLY_STRING ? v->str : "nothing");
        }
    }
    for (k = 0; k < MODEL_KEYS; k++)
        freeReplyObject(st[k]);
}

/* h's set: 1 to 3 distinct keys, in a random order. */
static void model_pick(model *m, model_h *h)
{
    int n = 1 + (int)(model_next(m) % 3), k;

    h->n = 0;
    while (h->n < n) {
        k = (int)(model_next(m) % MODEL_KEYS);
        if (!model_has(h, k))
            h->key[h->n++] = k;
    }
}

/* Whether some handle's set has keys on two servers (m->kat). */
static int model_spans(const model *m)
{
    int i, j;

    for (i = 0; i < MODEL_HANDLES; i++)
        for (j = 1; j < m->h[i].n; j++)
            if (m->kat[m->h[i].key[j]] != m->kat[m->h[i].key[0]])
                return 1;
    return 0;
}

/* The handles' sets, and their handles on clients c. With want_spread,
 * sets are picked again (a bounded number of times) until one spans two
 * servers: with the keys four on one server and one on another, the
 * sets of a seed may all keep to one server, and a run that never takes
 * a set over two servers tests nothing of agroup.c. */
static void model_handles(model *m, redislock_client **c, int want_spread)
{
    const char *names[3];
    int i, k, tries = 0;

    do
        for (i = 0; i < MODEL_HANDLES; i++)
            model_pick(m, &m->h[i]);
    while (want_spread && !model_spans(m) && ++tries < 100);
    for (i = 0; i < MODEL_HANDLES; i++) {
        model_h *h = &m->h[i];

        for (k = 0; k < h->n; k++)
            names[k] = model_key[h->key[k]];
        h->l = th_lock_set(c[i % MODEL_CLIENTS], names, (size_t)h->n);
        test_log("handle %d: %d keys, %s %s %s", i, h->n, names[0],
                 h->n > 1 ? names[1] : "", h->n > 2 ? names[2] : "");
    }
}

/* The model's run on clients c (MODEL_CLIENTS), with m->kr and m->kat
 * set (want_spread: the keys on several servers; see model_handles);
 * fails unless each outcome was met. */
static void model_run(model *m, redislock_client **c, int want_spread)
{
    int64_t t0 = th_now_ms();
    int i, op;

    m->seed = th_seed("RL_SET_SEED");
    m->rng = m->seed | 1;
    model_handles(m, c, want_spread);
    for (m->step = 0; m->step < MODEL_STEPS; m->step++) {
        model_h *h = &m->h[model_next(m) % MODEL_HANDLES];

        op = (int)(model_next(m) % 100);
        if (op < 5)
            th_sleep_ms((int64_t)(model_next(m) % 16));
        else if (!h->held)
            model_acquire(m, h);
        else
            model_release_or_extend(m, h, op < 70);
        model_check(m);
    }
    test_log("%d steps in %lld ms: %lld acquires, %lld refused (%lld of "
             "them sets that outran their TTL), %lld granted to sets of 2+ "
             "keys (%lld over 2+ servers); %lld releases or extends found "
             "the lease ended (%lld of them ELOST)",
             MODEL_STEPS, (long long)(th_now_ms() - t0), m->acq, m->refused,
             m->outrun, m->multi, m->spread, m->ended, m->lost);
    /* Each outcome was met. */
    ASSERT_GT(m->refused, 0);
    ASSERT_GT(m->multi, 0);
    ASSERT_GT(m->ended, 0);
    ASSERT_GT(m->lost, 0);
    for (i = 0; i < MODEL_HANDLES; i++)
        redislock_lock_free(m->h[i].l);
}

void test_set_model_random_operations(void)
{
    th_env e = th_env_start();
    redislock_client *c[MODEL_CLIENTS];
    model *m = calloc(1, sizeof *m);
    int i;

    ASSERT(m != NULL);
    for (i = 0; i < MODEL_KEYS; i++)
        m->kr[i] = e.r;
    for (i = 0; i < MODEL_CLIENTS; i++)
        c[i] = th_client(e.s);
    model_run(m, c, 0);
    for (i = 0; i < MODEL_CLIENTS; i++)
        redislock_client_free(c[i]);
    free(m);
    th_env_stop(&e);
}

/* Resumes a stopped server after a pause, on a thread of its own. */
typedef struct late_resume {
    th_server *s;
    int64_t after_ms;
    pthread_t th;
} late_resume;

static void *late_resume_main(void *arg)
{
    late_resume *lr = arg;

    th_sleep_ms(lr->after_ms);
    th_server_resume(lr->s);
    return NULL;
}

/* The model's extend when it arrives after the lease: the handle counts
 * 1 to 10 ms of validity when it sends the extend, and the server,
 * stopped, runs it only after the lease has ended (as a loaded machine
 * may delay a send by more than the drift allowance). The extend is
 * refused, and the model must accept that, since the server shows a key
 * gone, and not take the validity read before the send for a promise of
 * success. */
void test_set_model_extend_arrives_late(void)
{
    th_env e = th_env_start();
    const char *names[2] = {model_key[0], model_key[1]};
    model *m = calloc(1, sizeof *m);
    model_h *h;
    late_resume lr;
    int64_t valid = 0, deadline, giveup;
    int i, tries;

    ASSERT(m != NULL);
    for (i = 0; i < MODEL_KEYS; i++)
        m->kr[i] = e.r;
    m->seed = th_seed("RL_SET_SEED");
    m->rng = m->seed | 1;
    h = &m->h[0];
    h->n = 2, h->key[0] = 0, h->key[1] = 1;
    h->l = th_lock_set(e.c, names, 2);
    /* The model's leases are 10 to 60 ms: on a loaded machine the
     * acquire, or a sleep, may outlast one. Such a lease ends by itself
     * (lingering in the model), and the set is taken again. */
    giveup = th_now_ms() + 5000;
    for (tries = 0;; tries++) {
        ASSERT_LT(th_now_ms(), giveup);
        model_acquire(m, h);
        deadline = th_now_ms() + 1000;
        while (h->held && (valid = redislock_valid_ms(h->l)) > 10 &&
               th_now_ms() < deadline)
            th_sleep_ms(1);
        if (h->held && (valid = redislock_valid_ms(h->l)) > 0)
            break;
        if (!h->held) /* refused: the last lease still lingers */
            th_sleep_ms(5);
        /* Taken, but its validity ran out before the extend could be
         * sent: the handle still holds it (a second acquire on it is
         * EINVAL), so it lets go first; on the server the lease may
         * still run, which the model counts as lingering. */
        if (h->held)
            (void)redislock_release(h->l);
        h->held = 0;
        h->lingers = 1;
    }
    test_log("extend sent with %lld ms valid, after %d retries",
             (long long)valid, tries);
    th_server_pause(e.s);
    /* Past the lease on the server: the validity left, the drift
     * allowance (at most 5 ms here), and a margin. */
    lr = (late_resume){e.s, valid + 5 + 30, 0};
    ASSERT_EQ_INT(pthread_create(&lr.th, NULL, late_resume_main, &lr), 0);
    model_release_or_extend(m, h, 0);
    pthread_join(lr.th, NULL);
    ASSERT_EQ_INT(m->ended, 1);
    ASSERT(!h->held && h->lingers);
    model_check(m);
    redislock_lock_free(h->l);
    free(m);
    th_env_stop(&e);
}

/* Where each of the model's keys lives on e (take it and look, through
 * c): m->kat and m->kr; returns the servers used, a bit each. */
static int place_keys(th_servers *e, redislock_client *c, model *m)
{
    int i, j, servers = 0;

    for (i = 0; i < MODEL_KEYS; i++) {
        redislock_lock *l = th_lock(c, model_key[i]);

        ASSERT_OK(redislock_acquire(l, NULL));
        m->kat[i] = -1;
        for (j = 0; j < 3; j++)
            if (th_cmd_int(e->r[j], "EXISTS %s", model_key[i]) == 1)
                m->kat[i] = j;
        ASSERT_GE(m->kat[i], 0);
        m->kr[i] = e->r[m->kat[i]];
        servers |= 1 << m->kat[i];
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
        test_log("%s on server %d", model_key[i], m->kat[i]);
    }
    return servers;
}

/* The same on sharded clients of three servers, the keys spread over
 * them: sets over several servers (agroup.c) among them. The ring hashes
 * the servers' socket paths, new each start, so the five keys all land
 * on one server in a few runs in a hundred: then the servers are started
 * again (new paths, a new ring), at most 20 times. */
void test_spread_model_random_operations(void)
{
    th_servers e;
    redislock_client *c[MODEL_CLIENTS];
    model *m = calloc(1, sizeof *m);
    int i, tries, servers = 0;

    ASSERT(m != NULL);
    for (tries = 0; tries < 20; tries++) {
        e = th_servers_start(3);
        for (i = 0; i < MODEL_CLIENTS; i++)
            ASSERT_OK(redislock_client_new_sharded(&c[i], e.urls, 3, NULL));
        servers = place_keys(&e, c[0], m);
        if (servers != 1 && servers != 2 && servers != 4)
            break;
        test_log("all on one server: the servers started again");
        for (i = 0; i < MODEL_CLIENTS; i++)
            redislock_client_free(c[i]);
        th_servers_stop(&e);
    }
    ASSERT(servers != 1 && servers != 2 && servers != 4);
    model_run(m, c, 1);
    ASSERT_GT(m->spread, 0);
    for (i = 0; i < MODEL_CLIENTS; i++)
        redislock_client_free(c[i]);
    free(m);
    th_servers_stop(&e);
}

/*
 * Processes taking random sets of 2 or 3 of 4 keys (waiting), each
 * section a deliberately non-atomic increment of every taken key's
 * counter (GET each, a pause, SET each). Entering and leaving raise and
 * lower a per-key "in" count in one script each, which counts any
 * overlap (an "in" count other than 1 on entry or 0 on leaving) in
 * px:bad, the sections per key, and the sections in at once.
 */
#define PROCS 8
#define ROUNDS 200
#define PKEYS 4

/* KEYS: px:bad, px:occ, px:max, then each key's in count and sections. */
#define ENTER                                                                  \
    "for i = 4, #KEYS, 2 do "                                                  \
    "if redis.call('INCR', KEYS[i]) ~= 1 then redis.call('INCR', KEYS[1]) "    \
    "end redis.call('INCR', KEYS[i + 1]) end "                                 \
    "local n = redis.call('INCR', KEYS[2]) "                                   \
    "if n > tonumber(redis.call('GET', KEYS[3]) or '0') then "                 \
    "redis.call('SET', KEYS[3], n) end return n"
#define LEAVE                                                                  \
    "for i = 4, #KEYS, 2 do "                                                  \
    "if redis.call('DECR', KEYS[i]) ~= 0 then redis.call('INCR', KEYS[1]) "    \
    "end end return redis.call('DECR', KEYS[2])"

/* Runs a command given as argv for a worker; exits it with status 4 on
 * an error. Returns the reply's number (or a string's). */
static long long worker_argv(redisContext *r, int argc, const char **argv)
{
    redisReply *rep = redisCommandArgv(r, argc, argv, NULL);
    long long v;

    if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "worker %d: %s\n", (int)getpid(),
                rep ? rep->str : r->errstr);
        _exit(4);
    }
    v = rep->type == REDIS_REPLY_INTEGER  ? rep->integer
        : rep->type == REDIS_REPLY_STRING ? atoll(rep->str)
                                          : 0;
    freeReplyObject(rep);
    return v;
}

/* One section's script over the set's keys k (n of them). */
static void worker_script(redisContext *r, const char *script, int n,
                          const int *k)
{
    static const char *const in[PKEYS] = {"px:in0", "px:in1", "px:in2",
                                          "px:in3"};
    static const char *const sec[PKEYS] = {"px:sec0", "px:sec1", "px:sec2",
                                           "px:sec3"};
    const char *argv[16] = {"EVAL", script, NULL, "px:bad", "px:occ", "px:max"};
    char nkeys[16];
    int i;

    snprintf(nkeys, sizeof nkeys, "%d", 3 + 2 * n);
    argv[2] = nkeys;
    for (i = 0; i < n; i++) {
        argv[6 + 2 * i] = in[k[i]];
        argv[7 + 2 * i] = sec[k[i]];
    }
    worker_argv(r, 6 + 2 * n, argv);
}

/* The section: each taken key's counter read, a pause, each written. */
static void worker_section(redisContext *r, int n, const int *k, unsigned *seed)
{
    static const char *const cnt[PKEYS] = {"px:n0", "px:n1", "px:n2", "px:n3"};
    const char *argv[3];
    long long v[3];
    char num[3][24];
    int i;

    for (i = 0; i < n; i++) {
        argv[0] = "GET", argv[1] = cnt[k[i]];
        v[i] = worker_argv(r, 2, argv);
    }
    usleep((useconds_t)(rand_r(seed) % 300));
    for (i = 0; i < n; i++) {
        snprintf(num[i], sizeof num[i], "%lld", v[i] + 1);
        argv[0] = "SET", argv[1] = cnt[k[i]], argv[2] = num[i];
        worker_argv(r, 3, argv);
    }
}

static void set_worker(const th_server *s, unsigned seed)
{
    static const char *const lk[PKEYS] = {"px:0", "px:1", "px:2", "px:3"};
    redislock_client *c = th_client(s);
    redisContext *r = th_server_redis(s);
    redislock_acquire_options o = th_aopts(10000, 30000, 0);
    const char *names[3];
    int round, n, i, j, k[PKEYS] = {0, 1, 2, 3};

    for (round = 0; round < ROUNDS; round++) {
        redislock_lock *l;

        /* A random 2 or 3 of the keys, in a random order. */
        for (i = PKEYS - 1; i > 0; i--) {
            j = (int)(rand_r(&seed) % (unsigned)(i + 1));
            n = k[i], k[i] = k[j], k[j] = n;
        }
        n = 2 + (int)(rand_r(&seed) % 2);
        for (i = 0; i < n; i++)
            names[i] = lk[k[i]];
        l = th_lock_set(c, names, (size_t)n);
        if (redislock_acquire(l, &o) != REDISLOCK_OK) {
            fprintf(stderr, "worker %d: %s\n", (int)getpid(),
                    redislock_errdetail());
            _exit(2);
        }
        worker_script(r, ENTER, n, k);
        worker_section(r, n, k, &seed);
        worker_script(r, LEAVE, n, k);
        if (redislock_release(l) != REDISLOCK_OK)
            _exit(3);
        redislock_lock_free(l);
    }
    _exit(0);
}

void test_set_processes_exclusion(void)
{
    th_env e = th_env_start();
    long long sec[PKEYS], cnt[PKEYS], all = 0;
    int64_t t0 = th_now_ms();
    char key[16];
    int i;

    th_run_workers(&e, PROCS, set_worker);
    for (i = 0; i < PKEYS; i++) {
        snprintf(key, sizeof key, "px:sec%d", i);
        sec[i] = th_get_num(e.r, key);
        snprintf(key, sizeof key, "px:n%d", i);
        cnt[i] = th_get_num(e.r, key);
        all += sec[i];
        test_log("key px:%d: %lld sections, counter %lld", i, sec[i], cnt[i]);
    }
    test_log("%d sets in %lld ms; overlaps seen %lld; most sets in at once "
             "%lld",
             PROCS * ROUNDS, (long long)(th_now_ms() - t0),
             th_get_num(e.r, "px:bad"), th_get_num(e.r, "px:max"));
    ASSERT_EQ_INT(th_get_num(e.r, "px:bad"), 0);
    for (i = 0; i < PKEYS; i++)
        ASSERT_EQ_INT(cnt[i], sec[i]);
    /* Every set took 2 or 3 keys. */
    ASSERT_GE(all, 2 * PROCS * ROUNDS);
    ASSERT_LE(all, 3 * PROCS * ROUNDS);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS px:0 px:1 px:2 px:3"), 0);
    th_env_stop(&e);
}

/* A set's holder stopped (SIGSTOP) past its 200 ms lease: an overlapping
 * set takes the keys and writes the resource with its fencing token; the
 * stopped one, resumed, knows it lost the set, and its write with its
 * own older token is refused (th_resume_refused). */
void test_set_stopped_holder_write_refused(void)
{
    static const char *const k[3] = {"st:a", "st:b", "st:c"};
    static const char *const over[2] = {"st:c", "st:d"};
    th_env e = th_env_start();
    redislock_acquire_options brief = th_aopts(200, 0, 0);
    redislock_acquire_options o = th_aopts(5000, 3000, 0);
    redislock_lock *s = th_lock_set(e.c, over, 2);
    int pid = th_start_stopped_holder(&e, k, 3, &brief, "st:res");

    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS st:a st:b st:c"), 3);
    /* The set gets its keys once the stopped holder's lease ends. */
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(
        redislock_fenced_set(e.c, "st:res", 6, "fresh", 5, redislock_fence(s)));
    th_resume_refused(pid);
    ASSERT_KEY(e.r, "st:res", "fresh");
    ASSERT_OK(redislock_release(s));
    redislock_lock_free(s);
    th_env_stop(&e);
}
