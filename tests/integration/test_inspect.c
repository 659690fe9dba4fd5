/*
 * inspect: which keys redislock_inspect() and redislock_list() call locks.
 * A key is a lock when it is in a lock format: a token-like string (any
 * library's plain lock), a redislock hash (owner field), or a hold-after
 * reservation; any other key is "not a lock", reported with its Redis type
 * in metadata. Keys are written by hand through a separate connection, as
 * another program would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define TTL_MS 20000
/* A uuid's hex, as redis-py writes with SET NX PX. */
#define PY_TOKEN "0f3c8d6e2b7a4c1d9e5f6a7b8c9d0e1f"
/* 16 random bytes in base64, as redsync writes. */
#define B64_TOKEN "q3JvbGxpbmdUb2tlbnM2Ng=="

static void set_key(th_env *e, const char *key, const char *value)
{
    freeReplyObject(th_cmd(e->r, "SET %s %s PX %d", key, value, TTL_MS));
}

/* Inspects key through a fresh handle of e's client into *info. */
static void inspect(th_env *e, const char *key, redislock_info *info)
{
    redislock_lock *l = th_lock(e->c, key);

    ASSERT_OK(redislock_inspect(l, info));
    /* The strings went with the handle: only NULL or not can be read. */
    redislock_lock_free(l);
}

/* Asserts that key is held but not a lock, and that its type is type. */
static void assert_not_lock(th_env *e, const char *key, const char *type,
                            int with_ttl)
{
    redislock_lock *l = th_lock(e->c, key);
    redislock_info info;

    ASSERT_OK(redislock_inspect(l, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_NOT_LOCK);
    ASSERT(info.metadata != NULL);
    ASSERT_EQ_STR(info.metadata, type);
    ASSERT_EQ_INT(info.metadata_len, strlen(type));
    ASSERT(info.owner == NULL);
    ASSERT_EQ_INT(info.holds, 0);
    if (with_ttl)
        ASSERT_GT(info.ttl_ms, 0);
    else
        ASSERT_EQ_INT(info.ttl_ms, REDISLOCK_TTL_NO_EXPIRY);
    redislock_lock_free(l);
}

void test_inspect_other_types_not_locks(void)
{
    th_env e = th_env_start();

    freeReplyObject(th_cmd(e.r, "RPUSH in:list a b"));
    freeReplyObject(th_cmd(e.r, "PEXPIRE in:list %d", TTL_MS));
    freeReplyObject(th_cmd(e.r, "ZADD in:zset 1 a"));
    freeReplyObject(th_cmd(e.r, "PEXPIRE in:zset %d", TTL_MS));
    /* A hash without an owner field is someone's data. */
    freeReplyObject(th_cmd(e.r, "HSET in:hash holds 3 meta x"));
    freeReplyObject(th_cmd(e.r, "PEXPIRE in:hash %d", TTL_MS));
    assert_not_lock(&e, "in:list", "list", 1);
    assert_not_lock(&e, "in:zset", "zset", 1);
    assert_not_lock(&e, "in:hash", "hash", 1);
    th_env_stop(&e);
}

void test_inspect_cached_strings_not_locks(void)
{
    th_env e = th_env_start();
    char big[200];

    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[7] = '7';
    set_key(&e, "in:json", "{\"user\":42,\"name\":\"x\"}");
    set_key(&e, "in:count", "1234567890");
    set_key(&e, "in:state", "processing");
    set_key(&e, "in:short", "ab12");
    set_key(&e, "in:big", big);
    freeReplyObject(
        th_cmd(e.r, "SET in:space %s PX %d", "ab 12 cd 34", TTL_MS));
    assert_not_lock(&e, "in:json", "string", 1);
    assert_not_lock(&e, "in:count", "string", 1);
    assert_not_lock(&e, "in:state", "string", 1);
    assert_not_lock(&e, "in:short", "string", 1);
    assert_not_lock(&e, "in:big", "string", 1);
    assert_not_lock(&e, "in:space", "string", 1);
    /* Without a TTL too: the value decides, not the expiry. */
    freeReplyObject(th_cmd(e.r, "SET in:plain forever"));
    assert_not_lock(&e, "in:plain", "string", 0);
    th_env_stop(&e);
}

/* Another library's plain lock: a lock of unknown hold count, no owner
 * and no fence (redislock issued none). */
static void assert_foreign(th_env *e, const char *key, int64_t ttl)
{
    redislock_info info;

    inspect(e, key, &info);
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_LOCK);
    ASSERT_EQ_INT(info.holds, 0);
    ASSERT_EQ_INT(info.fence, 0);
    ASSERT(info.owner == NULL);
    ASSERT(info.metadata == NULL);
    if (ttl > 0)
        ASSERT_GT(info.ttl_ms, 0);
    else
        ASSERT_EQ_INT(info.ttl_ms, ttl);
}

void test_inspect_foreign_plain_locks(void)
{
    th_env e = th_env_start();

    freeReplyObject(th_cmd(e.r, "SET in:py %s NX PX %d", PY_TOKEN, TTL_MS));
    set_key(&e, "in:b64", B64_TOKEN);
    /* redis-py's default lock has no timeout: SET NX without PX. Acquire
     * treats it as held for ever, and so does inspect. */
    freeReplyObject(th_cmd(e.r, "SET in:forever %s NX", PY_TOKEN));
    assert_foreign(&e, "in:py", 1);
    assert_foreign(&e, "in:b64", 1);
    assert_foreign(&e, "in:forever", REDISLOCK_TTL_NO_EXPIRY);
    th_env_stop(&e);
}

void test_inspect_own_locks(void)
{
    th_env e = th_env_start();
    redislock_lock *p = th_lock(e.c, "in:mine"), *h = th_lock(e.c, "in:h");
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);
    redislock_info info;
    int64_t first;

    ASSERT_OK(redislock_acquire(p, &o));
    inspect(&e, "in:mine", &info);
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_LOCK);
    ASSERT_EQ_INT(info.holds, 1);
    /* A plain lock's key keeps no token: its holder knows it. */
    ASSERT_GT(redislock_fence(p), 0);
    ASSERT_EQ_INT(info.fence, 0);
    ASSERT(info.owner == NULL);
    ASSERT(info.metadata == NULL);

    o.owner = "w1";
    o.reentrant = 1;
    o.metadata = "m1";
    ASSERT_OK(redislock_acquire(h, &o));
    first = redislock_fence(h);
    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_GT(redislock_fence(h), first);
    ASSERT_OK(redislock_inspect(h, &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_LOCK);
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_EQ_STR(info.owner, "w1");
    ASSERT_EQ_STR(info.metadata, "m1");
    /* A hash lock's: the token its life began with. */
    ASSERT_EQ_INT(info.fence, first);

    /* A hold-after reservation is kind 1: held, but nobody's lock. */
    ASSERT_OK(redislock_release_hold(p, TTL_MS));
    inspect(&e, "in:mine", &info);
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_RESERVED);
    ASSERT(info.owner == NULL);
    ASSERT(info.metadata == NULL);
    ASSERT_GT(info.ttl_ms, 0);
    redislock_lock_free(p);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/* The keys held by many list their shares' leases (never their tokens):
 * the first REDISLOCK_INFO_TTLS_MAX, shortest first, and not the entries
 * that are not shares (the kind's, a waiting writer's). */
void test_inspect_share_leases_listed(void)
{
    enum { N = REDISLOCK_INFO_TTLS_MAX + 20 };
    th_env e = th_env_start();
    redislock_lock **l = calloc(N, sizeof *l);
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);
    redislock_info info;
    th_waiter w;
    char *score;
    int64_t t0;
    size_t i;

    ASSERT(l != NULL);
    o.limit = N;
    for (i = 0; i < N; i++) {
        l[i] = th_lock(e.c, "in:sem");
        ASSERT_OK(redislock_acquire(l[i], &o));
    }
    ASSERT_OK(redislock_inspect(l[0], &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SEMAPHORE);
    ASSERT_EQ_INT(info.holds, N);
    ASSERT_EQ_INT(info.nshare_ttls, REDISLOCK_INFO_TTLS_MAX);
    for (i = 0; i < info.nshare_ttls; i++) {
        ASSERT(info.share_ttls[i] > 0 && info.share_ttls[i] <= TTL_MS);
        ASSERT(i == 0 || info.share_ttls[i] >= info.share_ttls[i - 1]);
    }
    for (i = 0; i < N; i++) {
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    free(l);

    /* Two readers and a waiting writer's record, as a writer's wait
     * leaves it: two leases, the record not among them. */
    l = calloc(2, sizeof *l);
    ASSERT(l != NULL);
    o.limit = 0;
    o.shared = 1;
    o.ttl_ms = 2000;
    l[0] = th_lock(e.c, "in:rw");
    ASSERT_OK(redislock_acquire(l[0], &o));
    o.ttl_ms = TTL_MS;
    l[1] = th_lock(e.c, "in:rw");
    ASSERT_OK(redislock_acquire(l[1], &o));
    o.shared = 0;
    o.wait_ms = 10000;
    th_waiter_start(&w, e.c, "in:rw", &o);
    for (t0 = th_now_ms();
         (score = th_cmd_str(e.r, NULL, "ZSCORE %s %s", "in:rw",
                             "redislock:writer")) == NULL;
         th_sleep_ms(2))
        ASSERT_LT(th_now_ms() - t0, 2000);
    free(score);
    ASSERT_OK(redislock_inspect(l[0], &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SHARED);
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_EQ_INT(info.limit, 0);
    ASSERT_EQ_INT(info.nshare_ttls, 2);
    ASSERT(info.share_ttls[0] > 0 && info.share_ttls[0] <= 2000);
    ASSERT(info.share_ttls[1] > 2000 && info.share_ttls[1] <= TTL_MS);
    /* Shares' tokens are their holders' alone. */
    ASSERT_GT(redislock_fence(l[1]), 0);
    ASSERT_EQ_INT(info.fence, 0);
    /* The writer gets the key once both readers have gone: a lock held
     * alone lists none. */
    ASSERT_OK(redislock_release(l[0]));
    ASSERT_OK(redislock_release(l[1]));
    th_waiter_join_ok(&w, 3000);
    redislock_lock_free(l[1]);
    l[1] = w.l;
    ASSERT_OK(redislock_inspect(l[1], &info));
    ASSERT(info.share_ttls == NULL);
    ASSERT_EQ_INT(info.nshare_ttls, 0);
    redislock_lock_free(l[0]);
    redislock_lock_free(l[1]);
    free(l);
    th_env_stop(&e);
}

/* What one listing reported: each key with its kind and type. */
typedef struct seen {
    int n;
    char line[16][64];
} seen;

static int collect(const redislock_info *info, void *arg)
{
    seen *s = arg;

    ASSERT_LT(s->n, 16);
    snprintf(s->line[s->n++], sizeof s->line[0], "%.*s %d %s",
             (int)info->keylen, info->key, info->reserved,
             info->reserved == REDISLOCK_KIND_NOT_LOCK ? info->metadata : "-");
    return 0;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The listing's lines, sorted and joined by ", ". */
static void listing(redislock_client *c, unsigned flags, char *out, size_t size)
{
    seen s;
    size_t n = 0;
    int i;

    memset(&s, 0, sizeof s);
    if (flags == 0)
        ASSERT_OK(redislock_list(c, "ls:*", collect, &s));
    else
        ASSERT_OK(redislock_list_flags(c, "ls:*", flags, collect, &s));
    qsort(s.line, (size_t)s.n, sizeof s.line[0], by_text);
    out[0] = '\0';
    for (i = 0; i < s.n; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", i ? ", " : "",
                              s.line[i]);
    ASSERT_LT(n, size);
}

void test_inspect_list_skips_non_locks(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "ls:mine");
    char got[512];

    ASSERT_OK(redislock_acquire(l, NULL));
    set_key(&e, "ls:py", PY_TOKEN);
    set_key(&e, "ls:cache", "{\"a\":1}");
    freeReplyObject(th_cmd(e.r, "RPUSH ls:queue job"));
    freeReplyObject(th_cmd(e.r, "PEXPIRE ls:queue %d", TTL_MS));
    freeReplyObject(th_cmd(e.r, "SET ls:forever %s", PY_TOKEN));

    listing(e.c, 0, got, sizeof got);
    ASSERT_EQ_STR(got, "ls:mine 0 -, ls:py 0 -");
    /* All: the keys that are not locks, and the lock without a TTL. */
    listing(e.c, REDISLOCK_LIST_ALL, got, sizeof got);
    ASSERT_EQ_STR(got, "ls:cache 2 string, ls:forever 0 -, ls:mine 0 -, "
                       "ls:py 0 -, ls:queue 2 list");
    ASSERT_ERR(redislock_list_flags(e.c, NULL, 0x2, collect, NULL),
               REDISLOCK_EINVAL);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}

/* A fair queue's keys (fair.lua): "<key>{<key>}:rl-<suffix>" (lock.c). */
#define FQ "in:fq"
#define FQ_QUEUE FQ "{" FQ "}:rl-q"
#define FQ_WAITERS FQ "{" FQ "}:rl-ws"
/* Round trips and scheduling on a loaded 2-core box under ASan. */
#define SLACK_MS 250
/* Between the first waiter's arrival and the second's. */
#define GAP_MS 60

/* Waits, for 5 s at most, until the queue at q has n members. */
static void wait_queue_len(th_env *e, const char *q, long long n)
{
    int64_t t0 = th_now_ms();

    while (th_cmd_int(e->r, "ZCARD %s", q) != n) {
        ASSERT_LT(th_now_ms() - t0, 5000);
        th_sleep_ms(2);
    }
}

/* What the queue's n-th member (from 0) has in its entry after the
 * fields rl_waiter_entry writes first: its token or owner id, into out. */
static void entry_owner(th_env *e, long n, char *out, size_t size)
{
    redisReply *id = th_cmd(e->r, "ZRANGE " FQ_QUEUE " %ld %ld", n, n);
    char *v, fmt[16], pub[4];
    long long alive, ttl, nc, nm;
    int at = 0;

    ASSERT_EQ_INT(id->elements, 1);
    v = th_cmd_str(e->r, NULL, "HGET " FQ_WAITERS " %s", id->element[0]->str);
    ASSERT(v != NULL);
    ASSERT_EQ_INT(sscanf(v, "%lld %lld %15s %3s %lld %lld %n", &alive, &ttl,
                         fmt, pub, &nc, &nm, &at),
                  6);
    ASSERT_GT(at, 0);
    snprintf(out, size, "%s", v + at + nc + nm);
    free(v);
    freeReplyObject(id);
}

/* Whether the n bytes at p hold the string s anywhere. */
static int holds_text(const char *p, size_t n, const char *s)
{
    size_t i, len = strlen(s);

    for (i = 0; i + len <= n; i++)
        if (memcmp(p + i, s, len) == 0)
            return 1;
    return 0;
}

/* The waiters info lists: owners w (NULL: none shown) in order, each
 * waited_ms no more than the one before it, and no token among them. */
static void assert_waiters(const redislock_info *info, const char *const *w,
                           size_t n, const char *token)
{
    size_t i;

    ASSERT_EQ_INT(info->nwaiters, n);
    ASSERT_EQ_INT(info->queued, n);
    ASSERT(n == 0 ? info->waiters == NULL : info->waiters != NULL);
    for (i = 0; i < n; i++) {
        const redislock_waiter *x = &info->waiters[i];
        ASSERT_EQ_STR(x->owner, w[i]);
        ASSERT_EQ_INT(x->owner_len, w[i] ? strlen(w[i]) : 0);
        ASSERT_GE(x->waited_ms, 0);
        if (i > 0)
            ASSERT_LE(x->waited_ms, info->waiters[i - 1].waited_ms);
        if (x->owner != NULL)
            ASSERT(!holds_text(x->owner, x->owner_len, token));
    }
    if (info->owner != NULL)
        ASSERT(!holds_text(info->owner, info->owner_len, token));
    if (info->metadata != NULL)
        ASSERT(!holds_text(info->metadata, info->metadata_len, token));
}

typedef struct listed_waiters {
    int calls;
    size_t nwaiters;
    char first[32];
} listed_waiters;

static int on_fair(const redislock_info *info, void *arg)
{
    listed_waiters *s = arg;

    s->calls++;
    s->nwaiters = info->nwaiters;
    if (info->nwaiters > 0 && info->waiters[0].owner != NULL)
        snprintf(s->first, sizeof s->first, "%s", info->waiters[0].owner);
    return 0;
}

/* A fair queue's live waiters are listed in queue order, with their
 * owner ids and how long each has waited; a waiter of a plain lock
 * shows no owner, and its token appears nowhere. Dead waiters and places
 * whose entries have gone are not listed, and one handed the lock leaves
 * the list. */
void test_inspect_fair_waiters_in_order(void)
{
    static const char *const three[] = {"w-1", NULL, "w-2"};
    static const char *const two[] = {NULL, "w-2"};
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, FQ);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    const char *owners[] = {"w-1", NULL, "w-2"};
    listed_waiters ls = {0, 0, ""};
    redislock_info info;
    th_waiter w[3];
    int64_t started, queued0 = 0, before, after;
    char token[300];
    int i;

    o.fair = 1;
    ASSERT_OK(redislock_acquire(h, &o));
    o.wait_ms = 20000;
    started = th_now_ms();
    for (i = 0; i < 3; i++) {
        o.owner = owners[i];
        th_waiter_start(&w[i], e.c, FQ, &o);
        wait_queue_len(&e, FQ_QUEUE, i + 1);
        /* A gap the waits tell apart. */
        if (i == 0) {
            queued0 = th_now_ms();
            th_sleep_ms(GAP_MS);
        }
    }
    entry_owner(&e, 1, token, sizeof token);
    ASSERT_EQ_INT(strlen(token), 36);
    before = th_now_ms();
    ASSERT_OK(redislock_inspect(h, &info));
    after = th_now_ms();
    assert_waiters(&info, three, 3, token);
    /* The first took its place after started and by queued0, on the
     * server's clock, which is this host's. */
    ASSERT_GE(info.waiters[0].waited_ms, before - queued0 - SLACK_MS);
    ASSERT_LE(info.waiters[0].waited_ms, after - started + SLACK_MS);
    ASSERT_GE(info.waiters[0].waited_ms,
              info.waiters[1].waited_ms + GAP_MS - 10);
    ASSERT_OK(redislock_list(e.c, FQ, on_fair, &ls));
    ASSERT_EQ_INT(ls.calls, 1);
    ASSERT_EQ_INT(ls.nwaiters, 3);
    ASSERT_EQ_STR(ls.first, "w-1");

    /* The release hands the lock to w-1; two wait on. */
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w[0], 5000);
    /* A dead waiter's place (its alive time long past) and a place whose
     * entry has gone, both at the head: neither is listed nor counted. */
    freeReplyObject(th_cmd(e.r, "ZADD " FQ_QUEUE " 1 dead 2 gone"));
    freeReplyObject(th_cmd(e.r, "HSET " FQ_WAITERS " dead %s",
                           "1 30000 hash P 1 0 cdead-owner"));
    ASSERT_OK(redislock_inspect(h, &info));
    ASSERT_EQ_STR(info.owner, "w-1");
    assert_waiters(&info, two, 2, token);

    /* Each release hands the lock to the next. */
    for (i = 0; i < 2; i++) {
        ASSERT_OK(redislock_release(w[i].l));
        th_waiter_join_ok(&w[i + 1], 5000);
    }
    ASSERT_OK(redislock_release(w[2].l));
    ASSERT_OK(redislock_inspect(h, &info));
    assert_waiters(&info, NULL, 0, token);
    for (i = 0; i < 3; i++)
        redislock_lock_free(w[i].l);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/* Waiters that are not fair keep no queue: none are listed. A fair
 * waiter for a semaphore's permit is, without an owner (its entry holds
 * its share's token). */
void test_inspect_fair_waiters_other_kinds(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "in:unfair"), *s = th_lock(e.c, "in:fs");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_info info;
    th_waiter w[2];
    int64_t t0;

    ASSERT_OK(redislock_acquire(h, &o));
    o.wait_ms = 20000;
    th_waiter_start(&w[0], e.c, "in:unfair", &o);
    for (t0 = th_now_ms();
         th_cmd_int(e.r, "EXISTS in:unfair{in:unfair}:rl-waiting") == 0;
         th_sleep_ms(2))
        ASSERT_LT(th_now_ms() - t0, 5000);
    ASSERT_OK(redislock_inspect(h, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.nwaiters, 0);
    ASSERT_EQ_INT(info.queued, 0);
    ASSERT(info.waiters == NULL);
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w[0], 5000);
    ASSERT_OK(redislock_release(w[0].l));

    o.wait_ms = 0;
    o.limit = 1;
    ASSERT_OK(redislock_acquire(s, &o));
    o.wait_ms = 20000;
    o.fair = 1;
    th_waiter_start(&w[1], e.c, "in:fs", &o);
    wait_queue_len(&e, "in:fs{in:fs}:rl-q", 1);
    ASSERT_OK(redislock_inspect(s, &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SEMAPHORE);
    ASSERT_EQ_INT(info.nwaiters, 1);
    ASSERT_EQ_INT(info.queued, 1);
    ASSERT(info.waiters[0].owner == NULL);
    ASSERT_EQ_INT(info.waiters[0].owner_len, 0);
    ASSERT_OK(redislock_release(s));
    th_waiter_join_ok(&w[1], 5000);
    ASSERT_OK(redislock_release(w[1].l));
    redislock_lock_free(w[0].l);
    redislock_lock_free(w[1].l);
    redislock_lock_free(h);
    redislock_lock_free(s);
    th_env_stop(&e);
}
