/*
 * Shared (read-write) locks against a model: random shared and exclusive
 * acquires, releases, extends and pauses by several owners, each step's
 * outcome checked against what the leases allow and the server's state
 * against every handle's belief.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "shm:key"
/* The member of a shared key's set that names its kind. */
#define MARK "redislock:shared"

static redislock_acquire_options share(int64_t ttl, int64_t wait)
{
    redislock_acquire_options o = th_aopts(ttl, wait, 0);

    o.shared = 1;
    return o;
}

/*
 * Random acquires (shared or exclusive, no wait), releases, extends and
 * pauses by 8 handles of 4 clients on one key, against a model of each
 * handle's lease, known to within the call's round trip: it ends no
 * earlier than the call's send plus the TTL and no later than its return
 * plus the TTL. An acquire is refused only when a conflicting lease may
 * still run (for a share, an exclusive one; for an exclusive request,
 * any), and granted only when none surely runs. After every step the
 * handles that count validity agree with each other (one exclusive alone,
 * or shares only) and with the server: an exclusive believer's token is
 * the key's value, a believed share is a live member of the set, and
 * every live member or value belongs to a lease the model holds. Writers
 * that try once record no wait (a fair one's record goes when it leaves
 * the queue), so writer preference never turns a reader away here. One
 * acquire in two is fair. RL_SHARED_SEED replays a run (the seed is
 * logged).
 */
#define MODEL_HANDLES 8
#define MODEL_CLIENTS 4
#define MODEL_STEPS 10000
#define MODEL_SLACK_MS 3

typedef struct model_h {
    redislock_lock *l;
    int held, shared;
    int64_t lo, hi; /* the lease's end: surely after lo, surely by hi */
    char token[300];
} model_h;

typedef struct model {
    model_h h[MODEL_HANDLES];
    uint64_t rng, seed;
    int64_t fence;
    int step;
    /* Acquires [shared], refusals [shared], releases or extends that found
     * the lease ended (and of those, ELOST), and steps ending with 2+
     * shares believed or with an exclusive lock believed. */
    long long acq[2], refused[2], ended, lost, together, alone;
} model;

static uint64_t model_next(model *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

/* Leases of others than self that conflict with a request (shared or
 * not) and may still run at t, or surely do. */
static void model_conflicts(const model *m, const model_h *self, int shared,
                            int64_t t, int *maybe, int *surely)
{
    int i;

    *maybe = *surely = 0;
    for (i = 0; i < MODEL_HANDLES; i++) {
        const model_h *o = &m->h[i];

        if (o == self || !o->held || (shared && o->shared))
            continue;
        *maybe += o->hi + MODEL_SLACK_MS > t;
        *surely += o->lo - MODEL_SLACK_MS > t;
    }
}

#define MODEL_FAIL(m, ...)                                                     \
    test_fail_(__FILE__, __LINE__, "step %d (RL_SHARED_SEED=%llu): %s",        \
               (m)->step, (unsigned long long)(m)->seed,                       \
               model_msg_(__VA_ARGS__))

static const char *model_msg_(const char *fmt, ...) TEST_PRINTF_(1, 2);

static void model_acquire(model *m, model_h *h)
{
    int shared = model_next(m) % 3 == 0, maybe, surely;
    int64_t ttl =
        model_next(m) % 20 == 0 ? 300 : 10 + (int64_t)(model_next(m) % 50);
    redislock_acquire_options o = shared ? share(ttl, 0) : th_aopts(ttl, 0, 0);
    int64_t t0, t1;
    redislock_err err;

    /* One acquire in two queues fair (and leaves the queue at once). */
    o.fair = model_next(m) % 2;
    t0 = th_now_ms();
    err = redislock_acquire(h->l, &o);

    t1 = th_now_ms();
    m->acq[shared]++;
    if (err == REDISLOCK_OK) {
        model_conflicts(m, h, shared, t1, &maybe, &surely);
        if (surely > 0)
            MODEL_FAIL(m, "%s granted beside %d conflicting live leases",
                       shared ? "a share" : "an exclusive lock", surely);
        if (redislock_fence(h->l) <= m->fence)
            MODEL_FAIL(m, "fence %lld after %lld",
                       (long long)redislock_fence(h->l), (long long)m->fence);
        m->fence = redislock_fence(h->l);
        h->held = 1, h->shared = shared;
        h->lo = t0 + ttl, h->hi = t1 + ttl;
        snprintf(h->token, sizeof h->token, "%s", redislock_token(h->l));
        return;
    }
    ASSERT_ERR(err, REDISLOCK_EHELD);
    model_conflicts(m, h, shared, t0, &maybe, &surely);
    if (maybe == 0)
        MODEL_FAIL(m, "%s refused with no conflicting lease running",
                   shared ? "a share" : "an exclusive lock");
    m->refused[shared]++;
}

static void model_release_or_extend(model *m, model_h *h, int release)
{
    int64_t ttl = 10 + (int64_t)(model_next(m) % 50);
    int64_t valid = redislock_valid_ms(h->l), t0 = th_now_ms(), t1;
    redislock_err err =
        release ? redislock_release(h->l) : redislock_extend(h->l, ttl);
    int maybe, surely;

    t1 = th_now_ms();
    /* Judged by the lease, not by the validity the handle counted before
     * sending: a call sent with 1 ms valid may reach the server after
     * the lease (on a loaded machine the sender can be descheduled for
     * longer than the drift allowance), and then must fail. A failure is
     * wrong when the lease surely ran through the call. */
    if (err != REDISLOCK_OK && h->lo - MODEL_SLACK_MS > t1)
        MODEL_FAIL(m, "%s of a lease that surely runs (%lld ms valid at "
                   "the call): %s",
                   release ? "release" : "extend", (long long)valid,
                   redislock_errname(err));
    if (h->hi + MODEL_SLACK_MS < t0 && err == REDISLOCK_OK)
        MODEL_FAIL(m, "%s of a lease that surely ended succeeded",
                   release ? "release" : "extend");
    if (err == REDISLOCK_ELOST) {
        /* Another owner holds the key: only one the model knows of. */
        model_conflicts(m, h, 0, t0, &maybe, &surely);
        if (maybe == 0)
            MODEL_FAIL(m, "ELOST with no other lease running");
    } else if (err != REDISLOCK_OK) {
        ASSERT_ERR(err, REDISLOCK_EEXPIRED);
    }
    m->ended += err != REDISLOCK_OK;
    m->lost += err == REDISLOCK_ELOST;
    if (release || err != REDISLOCK_OK) {
        h->held = 0;
    } else {
        /* Never shortened: the later of the old end and the new. */
        h->lo = h->lo > t0 + ttl ? h->lo : t0 + ttl;
        h->hi = h->hi > t1 + ttl ? h->hi : t1 + ttl;
    }
}

/* The key's type and, in one step, its value (a string) or the members
 * whose scores are past the server's now (a sorted set), the kind marker
 * among them; then whether a writer's record is in the set. */
#define MODEL_STATE                                                            \
    "local t = redis.call('TYPE', KEYS[1]).ok "                                \
    "local c = redis.call('TIME') "                                            \
    "local now = tonumber(c[1]) * 1000 + math.floor(tonumber(c[2]) / 1000) "   \
    "if t == 'string' then return {t, redis.call('GET', KEYS[1])} end "        \
    "if t ~= 'zset' then return {t} end "                                      \
    "local w = redis.call('ZSCORE', KEYS[1], 'redislock:writer') and 1 or 0 "  \
    "local r = {t, tostring(w)} "                                              \
    "for _, v in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, "     \
    "'+inf')) do r[#r + 1] = v end "                                           \
    "return r"

/* The held handle whose token is tok (a key's value, perhaps marked by
 * a waiter: th_value_is_token), of the kind shared, or NULL. */
static const model_h *model_find(const model *m, const char *tok, int shared)
{
    int i;

    for (i = 0; i < MODEL_HANDLES; i++)
        if (m->h[i].held && m->h[i].shared == shared &&
            th_value_is_token(tok, m->h[i].token))
            return &m->h[i];
    return NULL;
}

static int model_live_member(const redisReply *st, const char *tok)
{
    size_t i;

    for (i = 2; i < st->elements; i++)
        if (strcmp(st->element[i]->str, tok) == 0)
            return 1;
    return 0;
}

/* Checks the server's state against the beliefs: the state is read
 * first, so a handle that still counts validity after the read held its
 * lease at the read. */
static void model_check(model *m, redisContext *r)
{
    redisReply *st = th_cmd(r, "EVAL %s 1 %s", MODEL_STATE, KEY);
    const char *type = st->element[0]->str;
    const model_h *excl = NULL;
    int i, nexcl = 0, nshared = 0, marked = 0;
    size_t j;

    for (i = 0; i < MODEL_HANDLES; i++) {
        const model_h *h = &m->h[i];

        if (redislock_valid_ms(h->l) <= 0)
            continue;
        if (!h->held)
            MODEL_FAIL(m, "handle %d counts validity the model ended", i);
        if (h->shared) {
            nshared++;
            if (strcmp(type, "zset") != 0 || !model_live_member(st, h->token))
                MODEL_FAIL(m, "believed share %s not live in a %s key",
                           h->token, type);
        } else {
            nexcl++, excl = h;
        }
    }
    if (nexcl > 1 || (nexcl == 1 && nshared > 0))
        MODEL_FAIL(m, "%d exclusive and %d shared believers", nexcl, nshared);
    if (excl != NULL && (strcmp(type, "string") != 0 ||
                         !th_value_is_token(st->element[1]->str, excl->token)))
        MODEL_FAIL(m, "exclusive believer %s, the key a %s", excl->token, type);
    if (strcmp(type, "string") == 0 &&
        model_find(m, st->element[1]->str, 0) == NULL)
        MODEL_FAIL(m, "the key holds %s, no exclusive lease the model holds",
                   st->element[1]->str);
    if (strcmp(type, "zset") == 0) {
        if (strcmp(st->element[1]->str, "0") != 0)
            MODEL_FAIL(m, "a writer's record, with no writer waiting");
        for (j = 2; j < st->elements; j++) {
            const char *tok = st->element[j]->str;

            if (strcmp(tok, MARK) == 0)
                marked = 1;
            else if (model_find(m, tok, 1) == NULL)
                MODEL_FAIL(m, "live member %s: no share the model holds", tok);
        }
        if (!marked)
            MODEL_FAIL(m, "a sorted set without %s", MARK);
    } else if (strcmp(type, "string") != 0 && strcmp(type, "none") != 0) {
        MODEL_FAIL(m, "the key is a %s", type);
    }
    m->together += nshared > 1;
    m->alone += nexcl;
    freeReplyObject(st);
}

static const char *model_msg_(const char *fmt, ...)
{
    static char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

void test_shared_model_random_operations(void)
{
    th_env e = th_env_start();
    redislock_client *c[MODEL_CLIENTS];
    model *m = calloc(1, sizeof *m);
    int64_t t0 = th_now_ms();
    int i, op;

    ASSERT(m != NULL);
    m->seed = th_seed("RL_SHARED_SEED");
    m->rng = m->seed | 1;
    for (i = 0; i < MODEL_CLIENTS; i++)
        c[i] = th_client(e.s);
    for (i = 0; i < MODEL_HANDLES; i++)
        m->h[i].l = th_lock(c[i % MODEL_CLIENTS], KEY);
    for (m->step = 0; m->step < MODEL_STEPS; m->step++) {
        model_h *h = &m->h[model_next(m) % MODEL_HANDLES];

        op = (int)(model_next(m) % 100);
        if (op < 5)
            th_sleep_ms((int64_t)(model_next(m) % 16));
        else if (!h->held)
            model_acquire(m, h);
        else
            model_release_or_extend(m, h, op < 70);
        model_check(m, e.r);
    }
    test_log("%d steps in %lld ms: %lld shared and %lld exclusive acquires, "
             "%lld and %lld refused; %lld releases or extends found the "
             "lease ended (%lld of them ELOST); %lld steps with 2+ shares "
             "believed, %lld with an exclusive one",
             MODEL_STEPS, (long long)(th_now_ms() - t0), m->acq[1], m->acq[0],
             m->refused[1], m->refused[0], m->ended, m->lost, m->together,
             m->alone);
    /* Each outcome was met. */
    ASSERT_GT(m->refused[0], 0);
    ASSERT_GT(m->refused[1], 0);
    ASSERT_GT(m->acq[0] - m->refused[0], 0);
    ASSERT_GT(m->ended, 0);
    ASSERT_GT(m->together, 0);
    ASSERT_GT(m->alone, 0);
    for (i = 0; i < MODEL_HANDLES; i++)
        redislock_lock_free(m->h[i].l);
    for (i = 0; i < MODEL_CLIENTS; i++)
        redislock_client_free(c[i]);
    free(m);
    th_env_stop(&e);
}
