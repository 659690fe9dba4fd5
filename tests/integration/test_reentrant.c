/*
 * reentrant: locks with an owner id, kept as a hash (owner, holds, meta).
 * The same owner may take such a lock again, each acquire needing its own
 * release; ownership belongs to the handle's owner id, not to a thread.
 * The key itself is checked through a separate hiredis connection, and a
 * seeded random walk of acquire/release/extend over two owners is checked
 * against a model after every step.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Scheduling and round trips on a loaded 2-core box under ASan. */
#define SLACK_MS 300

/* Reentrant acquire options: no wait, the given TTL and owner id. */
static redislock_acquire_options reopts(int64_t ttl_ms, const char *owner)
{
    redislock_acquire_options o = th_aopts(ttl_ms, 0, 0);

    o.reentrant = 1;
    o.owner = owner;
    return o;
}

/* Asserts that key's type is want ("hash", "string", "none"). */
#define ASSERT_TYPE(c, key, want)                                              \
    do {                                                                       \
        char *test_t_ = th_cmd_str(c, NULL, "TYPE %s", key);                   \
        ASSERT_EQ_STR(test_t_, want);                                          \
        free(test_t_);                                                         \
    } while (0)

/* The number of field/value pairs HGETALL returns for key. */
static size_t hash_pairs(redisContext *c, const char *key)
{
    redisReply *r = th_cmd(c, "HGETALL %s", key);
    size_t n;

    ASSERT_EQ_INT(r->type, REDIS_REPLY_ARRAY);
    n = r->elements / 2;
    freeReplyObject(r);
    return n;
}

void test_reentrant_acquire_twice_holds_two(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "re:twice");
    redislock_lock *other = th_lock(e.c, "re:twice");
    redislock_lock *plain = th_lock(e.c, "re:twice");
    redislock_acquire_options o = reopts(5000, NULL);
    char owner[300], gen[24];

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_holds(l), 1);
    ASSERT(redislock_token(l) != NULL);
    snprintf(owner, sizeof owner, "%s", redislock_token(l));
    /* The default owner id is "host:pid:random". */
    ASSERT(strchr(owner, ':') != NULL);
    ASSERT_TYPE(e.r, "re:twice", "hash");
    ASSERT_FIELD(e.r, "re:twice", "owner", owner);
    ASSERT_FIELD(e.r, "re:twice", "holds", "1");
    snprintf(gen, sizeof gen, "%lld", (long long)redislock_fence(l));

    /* Let the TTL run down a little, so that the refresh shows. */
    th_sleep_ms(400);
    ASSERT_LT(th_pttl(e.r, "re:twice"), 5000 - 350);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_GT(th_pttl(e.r, "re:twice"), 5000 - 100);
    ASSERT_EQ_INT(redislock_holds(l), 2);
    ASSERT_EQ_STR(redislock_token(l), owner);
    /* owner, holds, req: the request that added the last hold (what an
     * abandon after a lost reply undoes), and gen: the fencing token that
     * made the hash, which a re-entry keeps. */
    ASSERT_EQ_INT(hash_pairs(e.r, "re:twice"), 4);
    ASSERT_FIELD(e.r, "re:twice", "gen", gen);
    ASSERT(redislock_fence(l) > atoll(gen));
    ASSERT_FIELD(e.r, "re:twice", "owner", owner);
    ASSERT_FIELD(e.r, "re:twice", "holds", "2");

    /* One release leaves it held, for everybody else too. */
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(redislock_holds(l), 1);
    ASSERT_FIELD(e.r, "re:twice", "holds", "1");
    ASSERT_ERR(redislock_acquire(other, &o), REDISLOCK_EHELD);
    ASSERT_ERR(redislock_acquire(plain, NULL), REDISLOCK_EHELD);
    ASSERT_EQ_INT(redislock_holds(other), 0);

    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(redislock_holds(l), 0);
    ASSERT(redislock_token(l) == NULL);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS re:twice"), 0);
    ASSERT_ERR(redislock_release(l), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_acquire(other, &o));
    ASSERT_OK(redislock_release(other));

    redislock_lock_free(l);
    redislock_lock_free(other);
    redislock_lock_free(plain);
    th_env_stop(&e);
}

void test_reentrant_shared_owner_id(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "re:job");
    redislock_lock *b = th_lock(e.c, "re:job");
    redislock_lock *x = th_lock(e.c, "re:job");
    redislock_acquire_options o = reopts(5000, "job-7");
    redislock_acquire_options ox = reopts(5000, "job-8");

    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_EQ_INT(redislock_holds(a), 1);
    ASSERT_EQ_INT(redislock_holds(b), 1);
    ASSERT_EQ_STR(redislock_token(a), "job-7");
    ASSERT_EQ_STR(redislock_token(b), "job-7");
    ASSERT_FIELD(e.r, "re:job", "owner", "job-7");
    ASSERT_FIELD(e.r, "re:job", "holds", "2");

    ASSERT_ERR(redislock_acquire(x, &ox), REDISLOCK_EHELD);
    ASSERT_EQ_INT(redislock_holds(x), 0);
    ASSERT_FIELD(e.r, "re:job", "holds", "2");

    /* Each handle gives back its own hold; the last one frees the key. */
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(redislock_holds(a), 0);
    ASSERT_FIELD(e.r, "re:job", "holds", "1");
    ASSERT_ERR(redislock_acquire(x, &ox), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS re:job"), 0);
    ASSERT_OK(redislock_acquire(x, &ox));
    ASSERT_FIELD(e.r, "re:job", "owner", "job-8");
    ASSERT_OK(redislock_release(x));

    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(x);
    th_env_stop(&e);
}

/* One step run on another thread: an acquire or a release of l. */
typedef struct step {
    redislock_lock *l;
    const redislock_acquire_options *o; /* NULL: release */
    redislock_err err;
} step;

static void *run_step(void *arg)
{
    step *s = arg;

    s->err =
        s->o != NULL ? redislock_acquire(s->l, s->o) : redislock_release(s->l);
    return NULL;
}

/* Runs the step on a fresh thread, waits for it, returns its result. */
static redislock_err on_thread(redislock_lock *l,
                               const redislock_acquire_options *o)
{
    step s = {l, o, REDISLOCK_EPROTOCOL};
    pthread_t t;

    ASSERT_EQ_INT(pthread_create(&t, NULL, run_step, &s), 0);
    ASSERT_EQ_INT(pthread_join(t, NULL), 0);
    return s.err;
}

void test_reentrant_release_on_other_thread(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "re:thr");
    redislock_acquire_options o = reopts(5000, NULL);

    /* Acquired on thread A, released on thread B, one after the other. */
    ASSERT_OK(on_thread(l, &o));
    ASSERT_EQ_INT(redislock_holds(l), 1);
    ASSERT_TYPE(e.r, "re:thr", "hash");
    ASSERT_OK(on_thread(l, NULL));
    ASSERT_EQ_INT(redislock_holds(l), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS re:thr"), 0);

    /* Re-entry across threads: two acquires on two threads, then the
     * main thread and a third thread release one hold each. */
    ASSERT_OK(on_thread(l, &o));
    ASSERT_OK(on_thread(l, &o));
    ASSERT_FIELD(e.r, "re:thr", "holds", "2");
    ASSERT_OK(redislock_release(l));
    ASSERT_FIELD(e.r, "re:thr", "holds", "1");
    ASSERT_OK(on_thread(l, NULL));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS re:thr"), 0);

    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_reentrant_plain_acquire_twice_einval(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "re:plain");
    redislock_lock *r = th_lock(e.c, "re:rich");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_acquire_options ro = reopts(5000, NULL);
    char tok[64];

    ASSERT_OK(redislock_acquire(l, &o));
    snprintf(tok, sizeof tok, "%s", redislock_token(l));
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EINVAL);
    /* A plain hold cannot be re-entered by asking for reentrancy late. */
    ASSERT_ERR(redislock_acquire(l, &ro), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(redislock_holds(l), 1);
    ASSERT_EQ_STR(redislock_token(l), tok);
    ASSERT_KEY(e.r, "re:plain", tok);

    /* A reentrant hold re-entered without .reentrant is refused too. */
    ASSERT_OK(redislock_acquire(r, &ro));
    ASSERT_ERR(redislock_acquire(r, &o), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(redislock_holds(r), 1);
    ASSERT_FIELD(e.r, "re:rich", "holds", "1");

    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release(r));
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_lock_free(l);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* A hash an older redislock wrote (owner and holds, no gen): taken
 * again, extended and released by its owner id as before, and given no
 * gen, which would tell nothing of its life. */
void test_reentrant_hash_without_gen(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "re:old");
    redislock_acquire_options o = reopts(5000, "old-1");

    freeReplyObject(th_cmd(e.r, "HSET re:old owner old-1 holds 1"));
    ASSERT_EQ_INT(th_cmd_int(e.r, "PEXPIRE re:old 5000"), 1);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_FIELD(e.r, "re:old", "holds", "2");
    ASSERT_FIELD(e.r, "re:old", "gen", NULL);
    ASSERT_OK(redislock_extend(l, 20000));
    ASSERT_GT(th_pttl(e.r, "re:old"), 15000);
    ASSERT_OK(redislock_release(l));
    ASSERT_FIELD(e.r, "re:old", "holds", "1");
    ASSERT_FIELD(e.r, "re:old", "gen", NULL);
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL re:old"), 1);
    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_reentrant_wrong_token_release_elost(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "re:h");
    redislock_lock *p = th_lock(e.c, "re:h");
    redislock_acquire_options o = reopts(20000, "job-1");
    int64_t before;

    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_OK(redislock_adopt(p, TH_WRONG_TOKEN));
    before = th_pttl(e.r, "re:h");
    ASSERT_ERR(redislock_extend(p, 60000), REDISLOCK_ELOST);
    ASSERT_LE(th_pttl(e.r, "re:h"), before);
    ASSERT_OK(redislock_adopt(p, TH_WRONG_TOKEN));
    ASSERT_ERR(redislock_release(p), REDISLOCK_ELOST);
    ASSERT_EQ_INT(redislock_holds(p), 0);

    /* The hash lock is untouched: same owner, same holds. */
    ASSERT_TYPE(e.r, "re:h", "hash");
    ASSERT_FIELD(e.r, "re:h", "owner", "job-1");
    ASSERT_FIELD(e.r, "re:h", "holds", "2");
    ASSERT_GT(th_pttl(e.r, "re:h"), 0);
    ASSERT_OK(redislock_release(h));
    ASSERT_OK(redislock_release(h));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS re:h"), 0);
    redislock_lock_free(h);
    redislock_lock_free(p);
    th_env_stop(&e);
}

void test_reentrant_metadata_inspect(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "re:meta");
    redislock_lock *look = th_lock(e.c, "re:meta");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_info info;

    o.metadata = "host=a pid=1";
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_TYPE(e.r, "re:meta", "hash");
    ASSERT_FIELD(e.r, "re:meta", "owner", redislock_token(l));
    ASSERT_FIELD(e.r, "re:meta", "meta", "host=a pid=1");

    /* Anyone can read it, through a handle that holds nothing. */
    ASSERT_OK(redislock_inspect(look, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_STR(info.owner, redislock_token(l));
    ASSERT_EQ_STR(info.metadata, "host=a pid=1");
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_GT(info.ttl_ms, 5000 - SLACK_MS);
    ASSERT_LE(info.ttl_ms, 5000);
    ASSERT_EQ_INT(info.keylen, 7);
    ASSERT_EQ_MEM(info.key, "re:meta", 7);

    /* Metadata with re-entry: the count shows in inspect. */
    ASSERT_OK(redislock_release(l));
    o.reentrant = 1;
    o.owner = "worker-3";
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_inspect(look, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_STR(info.owner, "worker-3");
    ASSERT_EQ_STR(info.metadata, "host=a pid=1");
    ASSERT_EQ_INT(info.holds, 2);

    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_inspect(look, &info));
    ASSERT_EQ_INT(info.held, 0);
    ASSERT_EQ_INT(info.ttl_ms, REDISLOCK_TTL_FREE);
    ASSERT_EQ_INT(info.holds, 0);
    ASSERT(info.owner == NULL);
    ASSERT(info.metadata == NULL);
    redislock_lock_free(l);
    redislock_lock_free(look);
    th_env_stop(&e);
}

void test_reentrant_watched_reacquire(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "re:wd");
    redislock_acquire_options o = reopts(300, "w-1");
    int64_t t0;
    int cycles = 0;

    /* Re-entry and release of a watched lock while the watchdog renews
     * it every 100 ms: the hold count and the lease both survive. */
    o.watchdog = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    t0 = th_now_ms();
    while (th_now_ms() - t0 < 1000) {
        ASSERT_OK(redislock_acquire(l, &o));
        ASSERT_EQ_INT(redislock_holds(l), 2);
        ASSERT_FIELD(e.r, "re:wd", "holds", "2");
        ASSERT_OK(redislock_release(l));
        ASSERT_EQ_INT(redislock_holds(l), 1);
        cycles++;
    }
    test_log("%d re-entries over 1 s of a watched lock with TTL 300", cycles);
    ASSERT_OK(redislock_check(l));
    ASSERT_GT(redislock_valid_ms(l), 0);
    ASSERT_FIELD(e.r, "re:wd", "owner", "w-1");
    ASSERT_FIELD(e.r, "re:wd", "holds", "1");
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS re:wd"), 0);
    redislock_lock_free(l);
    th_env_stop(&e);
}

/*
 * The property test: a seeded random walk over two owners, each with one
 * reentrant handle and an explicit owner id. The model is who owns the
 * lock and with how many holds; nothing expires (a long TTL), so every
 * outcome is determined.
 */

#define PROP_STEPS 10000
#define PROP_KEY "re:prop"

enum { OP_ACQUIRE, OP_RELEASE, OP_EXTEND };
static const char *const op_names[] = {"acquire", "release", "extend"};
static const char *const prop_owners[] = {"owner-0", "owner-1"};

typedef struct model {
    int owner;        /* -1: free */
    int64_t holds[2]; /* per owner; only the owner's is nonzero */
} model;

/* splitmix64: small, seedable, good enough to pick operations. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The seed: $RL_SEED to replay a failure, else the time. */
static uint64_t prop_seed(void)
{
    const char *env = getenv("RL_SEED");

    if (env != NULL && env[0] != '\0')
        return strtoull(env, NULL, 0);
    return (uint64_t)time(NULL) ^ ((uint64_t)th_now_ms() << 20);
}

/* What the model says op by owner i returns, updating the model. */
static redislock_err model_step(model *m, int op, int i)
{
    if (op == OP_ACQUIRE) {
        if (m->owner != -1 && m->owner != i)
            return REDISLOCK_EHELD;
        m->owner = i;
        m->holds[i]++;
        return REDISLOCK_OK;
    }
    if (m->holds[i] == 0)
        return REDISLOCK_EINVAL;
    if (op == OP_RELEASE && --m->holds[i] == 0)
        m->owner = -1;
    return REDISLOCK_OK;
}

typedef struct prop {
    redisContext *r;
    redislock_lock *h[2];
    redislock_acquire_options o[2];
    uint64_t seed;
    int step;
} prop;

#define PROP_FAIL(p, ...)                                                      \
    do {                                                                       \
        test_log("seed %" PRIu64 " (RL_SEED to replay), step %d", (p)->seed,   \
                 (p)->step);                                                   \
        test_fail_(__FILE__, __LINE__, __VA_ARGS__);                           \
    } while (0)

static redislock_err prop_run(prop *p, int op, int i)
{
    if (op == OP_ACQUIRE)
        return redislock_acquire(p->h[i], &p->o[i]);
    if (op == OP_RELEASE)
        return redislock_release(p->h[i]);
    return redislock_extend(p->h[i], p->o[i].ttl_ms);
}

/* The handles and the server agree with the model. */
static void prop_check(prop *p, const model *m)
{
    redisReply *rep;
    long long exists;
    int i;

    for (i = 0; i < 2; i++)
        if (redislock_holds(p->h[i]) != m->holds[i])
            PROP_FAIL(p, "owner %d: holds %" PRId64 ", model %" PRId64, i,
                      redislock_holds(p->h[i]), m->holds[i]);
    exists = th_cmd_int(p->r, "EXISTS " PROP_KEY);
    if (exists != (m->owner != -1))
        PROP_FAIL(p, "EXISTS %lld, model owner %d", exists, m->owner);
    if (m->owner == -1)
        return;
    rep = th_cmd(p->r, "HMGET " PROP_KEY " owner holds");
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_STRING ||
        strcmp(rep->element[0]->str, prop_owners[m->owner]) != 0 ||
        strtoll(rep->element[1]->str, NULL, 10) != m->holds[m->owner])
        PROP_FAIL(p, "server owner/holds differ from model %s/%" PRId64,
                  prop_owners[m->owner], m->holds[m->owner]);
    freeReplyObject(rep);
}

void test_reentrant_property_random_ops(void)
{
    th_env e = th_env_start();
    model m = {-1, {0, 0}};
    prop p;
    uint64_t rng;
    int counts[3] = {0, 0, 0}, i, op, who;
    int64_t t0 = th_now_ms();
    redislock_err got, want;

    p.r = e.r;
    p.seed = prop_seed();
    rng = p.seed;
    test_log("seed %" PRIu64, p.seed);
    for (i = 0; i < 2; i++) {
        p.h[i] = th_lock(e.c, PROP_KEY);
        /* An hour: nothing expires during the walk. */
        p.o[i] = reopts(3600000, prop_owners[i]);
    }
    for (p.step = 0; p.step < PROP_STEPS; p.step++) {
        op = (int)(next_rand(&rng) % 3);
        who = (int)(next_rand(&rng) % 2);
        want = model_step(&m, op, who);
        got = prop_run(&p, op, who);
        if (got != want)
            PROP_FAIL(&p, "%s by owner %d returned %s, want %s (%s)",
                      op_names[op], who, redislock_errname(got),
                      redislock_errname(want), redislock_errdetail());
        counts[op] += got == REDISLOCK_OK;
        prop_check(&p, &m);
    }
    test_log("%d steps in %lld ms; successful acquires %d, releases %d, "
             "extends %d",
             PROP_STEPS, (long long)(th_now_ms() - t0), counts[0], counts[1],
             counts[2]);
    /* Give every hold back; the key must go with the last. */
    for (i = 0; i < 2; i++)
        while (redislock_holds(p.h[i]) > 0)
            ASSERT_OK(redislock_release(p.h[i]));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " PROP_KEY), 0);
    redislock_lock_free(p.h[0]);
    redislock_lock_free(p.h[1]);
    th_env_stop(&e);
}
