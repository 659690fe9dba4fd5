/*
 * meta: what anyone can read about a lock (redislock_inspect: owner,
 * metadata, holds, TTL), the client's key prefix, and redislock_list over
 * SCAN. Readers always use a different client from the holder, because
 * the point of this metadata is that other processes can see it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Scheduling and round trips on a loaded 2-core box under ASan. */
#define SLACK_MS 300
#define TTL_MS 20000
#define MANY 2000
/* Another library's token (a uuid's hex, as redis-py writes): a lock to
 * any reader, unlike a short value such as "t". */
#define FOREIGN_TOKEN "9f0c3b2a6d1e4f5a8b7c6d5e4f3a2b1c"

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;  /* the holder's */
    redislock_client *c2; /* the reader's */
} env;

static env env_start(void)
{
    env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    e.c2 = th_client(e.s);
    return e;
}

static void env_stop(env *e)
{
    redislock_client_free(e->c2);
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

static void assert_ttl_fresh(int64_t ttl)
{
    ASSERT_GT(ttl, TTL_MS - SLACK_MS);
    ASSERT_LE(ttl, TTL_MS);
}

/* Asserts that owner is this process's default id: "host:pid:" and then
 * 32 lowercase hex digits. */
static void assert_default_owner(const char *owner)
{
    char host[256] = "", want[320];
    size_t n;

    ASSERT(owner != NULL);
    ASSERT_EQ_INT(gethostname(host, sizeof host - 1), 0);
    n = (size_t)snprintf(want, sizeof want, "%s:%ld:", host,
                         (long)getpid());
    ASSERT_LT(n, sizeof want);
    if (strncmp(owner, want, n) != 0)
        test_fail_(__FILE__, __LINE__, "owner \"%s\" does not start with "
                   "\"%s\"", owner, want);
    ASSERT_HEX32(owner + n);
}

void test_meta_inspect_metadata_default_owner(void)
{
    env e = env_start();
    redislock_lock *l = th_lock(e.c, "mt:job");
    redislock_lock *x = th_lock(e.c2, "mt:job");
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);
    redislock_info info;
    redisReply *type;
    char *owner;

    o.metadata = "job=42 host=h";
    ASSERT_OK(redislock_acquire(l, &o));
    /* Metadata needs the hash format. */
    type = th_cmd(e.r, "TYPE mt:job");
    ASSERT_EQ_STR(type->str, "hash");
    freeReplyObject(type);
    owner = th_cmd_str(e.r, NULL, "HGET mt:job owner");

    ASSERT_OK(redislock_inspect(x, &info));
    ASSERT_EQ_INT(info.held, 1);
    assert_ttl_fresh(info.ttl_ms);
    ASSERT_EQ_INT(info.holds, 1);
    assert_default_owner(info.owner);
    /* What the holder uses as its id is what readers are shown. */
    ASSERT_EQ_STR(info.owner, owner);
    ASSERT_EQ_STR(info.owner, redislock_token(l));
    ASSERT_EQ_STR(info.metadata, "job=42 host=h");
    ASSERT_EQ_INT(info.keylen, 6);
    ASSERT_EQ_MEM(info.key, "mt:job", 6);
    /* Reading changed nothing. */
    ASSERT(redislock_token(x) == NULL);
    ASSERT_ERR(redislock_acquire(x, NULL), REDISLOCK_EHELD);
    free(owner);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_lock_free(x);
    env_stop(&e);
}

void test_meta_inspect_explicit_owner(void)
{
    env e = env_start();
    redislock_lock *l = th_lock(e.c, "mt:w");
    redislock_lock *x = th_lock(e.c2, "mt:w");
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);
    redislock_info info;

    o.owner = "w1";
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_inspect(x, &info));
    ASSERT_EQ_INT(info.held, 1);
    assert_ttl_fresh(info.ttl_ms);
    ASSERT_EQ_STR(info.owner, "w1");
    ASSERT(info.metadata == NULL);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_OK(redislock_release(l));

    /* Reentrant with two holds: readers see the count. */
    o.reentrant = 1;
    o.metadata = "twice";
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_inspect(x, &info));
    ASSERT_EQ_STR(info.owner, "w1");
    ASSERT_EQ_STR(info.metadata, "twice");
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_lock_free(x);
    env_stop(&e);
}

void test_meta_inspect_plain_and_free(void)
{
    env e = env_start();
    redislock_lock *l = th_lock(e.c, "mt:p");
    redislock_lock *x = th_lock(e.c2, "mt:p");
    redislock_lock *f = th_lock(e.c2, "mt:free");
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);
    redislock_info info;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_inspect(x, &info));
    ASSERT_EQ_INT(info.held, 1);
    assert_ttl_fresh(info.ttl_ms);
    ASSERT(info.owner == NULL);
    ASSERT(info.metadata == NULL);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.keylen, 4);
    ASSERT_EQ_MEM(info.key, "mt:p", 4);

    ASSERT_OK(redislock_inspect(f, &info));
    ASSERT_EQ_INT(info.held, 0);
    ASSERT_EQ_INT(info.ttl_ms, REDISLOCK_TTL_FREE);
    ASSERT(info.owner == NULL);
    ASSERT(info.metadata == NULL);
    ASSERT_EQ_INT(info.keylen, 7);
    ASSERT_EQ_MEM(info.key, "mt:free", 7);

    /* Released: free again, for the same reader handle. */
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_inspect(x, &info));
    ASSERT_EQ_INT(info.held, 0);
    redislock_lock_free(l);
    redislock_lock_free(x);
    redislock_lock_free(f);
    env_stop(&e);
}

static redislock_client *prefixed_client(const th_server *s,
                                         const char *prefix)
{
    redislock_options opts = {0};

    opts.prefix = prefix;
    return th_client_url(s->unix_url, &opts);
}

void test_meta_prefix_applied_to_key(void)
{
    env e = env_start();
    redislock_client *p = prefixed_client(e.s, "lock@");
    redislock_lock *l = th_lock(p, "job");
    redislock_acquire_options o = th_aopts(TTL_MS, 0, 0);
    redislock_info info;
    const void *key;
    size_t len = 0;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS lock@job"), 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS job"), 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 1);
    ASSERT_KEY(e.r, "lock@job", redislock_token(l));
    key = redislock_key(l, &len);
    ASSERT_EQ_INT(len, 3);
    ASSERT_EQ_MEM(key, "job", 3);
    ASSERT_OK(redislock_inspect(l, &info));
    ASSERT_EQ_INT(info.keylen, 3);
    ASSERT_EQ_MEM(info.key, "job", 3);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS lock@job"), 0);
    redislock_lock_free(l);
    redislock_client_free(p);
    env_stop(&e);
}

void test_meta_prefixes_do_not_conflict(void)
{
    env e = env_start();
    redislock_client *a = prefixed_client(e.s, "a:");
    redislock_client *b = prefixed_client(e.s, "b:");
    redislock_lock *la = th_lock(a, "job");
    redislock_lock *lb = th_lock(b, "job");
    redislock_lock *lp = th_lock(e.c, "job");

    ASSERT_OK(redislock_acquire(la, NULL));
    ASSERT_OK(redislock_acquire(lb, NULL));
    ASSERT_OK(redislock_acquire(lp, NULL));
    ASSERT_KEY(e.r, "a:job", redislock_token(la));
    ASSERT_KEY(e.r, "b:job", redislock_token(lb));
    ASSERT_KEY(e.r, "job", redislock_token(lp));
    ASSERT_OK(redislock_release(la));
    ASSERT_KEY(e.r, "b:job", redislock_token(lb));
    ASSERT_OK(redislock_release(lb));
    ASSERT_OK(redislock_release(lp));
    redislock_lock_free(la);
    redislock_lock_free(lb);
    redislock_lock_free(lp);
    redislock_client_free(a);
    redislock_client_free(b);
    env_stop(&e);
}

/* What one redislock_list() call reported, keys copied. */
#define SEEN_MAX 16
typedef struct seen {
    int n;
    int stop_after; /* 0: never stop */
    struct {
        char key[64];
        int64_t ttl;
        int64_t holds;
        char owner[300]; /* "" for NULL */
        char meta[64];   /* "" for NULL */
    } e[SEEN_MAX];
} seen;

static int collect(const redislock_info *info, void *arg)
{
    seen *s = arg;

    ASSERT_LT(s->n, SEEN_MAX);
    ASSERT_LT(info->keylen, sizeof s->e[0].key);
    memcpy(s->e[s->n].key, info->key, info->keylen);
    s->e[s->n].key[info->keylen] = '\0';
    s->e[s->n].ttl = info->ttl_ms;
    s->e[s->n].holds = info->holds;
    snprintf(s->e[s->n].owner, sizeof s->e[0].owner, "%s",
             info->owner ? info->owner : "");
    snprintf(s->e[s->n].meta, sizeof s->e[0].meta, "%s",
             info->metadata ? info->metadata : "");
    s->n++;
    return s->stop_after > 0 && s->n >= s->stop_after;
}

/* The entry for key, which must have been reported exactly once. */
static int seen_once(const seen *s, const char *key)
{
    int i, at = -1;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->e[i].key, key) == 0) {
            if (at >= 0)
                test_fail_(__FILE__, __LINE__, "%s listed twice", key);
            at = i;
        }
    if (at < 0)
        test_fail_(__FILE__, __LINE__, "%s not listed", key);
    return at;
}

void test_meta_prefix_glob_chars_literal(void)
{
    env e = env_start();
    redislock_client *g = prefixed_client(e.s, "a*[b]?");
    redislock_lock *l1 = th_lock(g, "k1");
    redislock_lock *l2 = th_lock(g, "k2");
    seen s;

    ASSERT_OK(redislock_acquire(l1, NULL));
    ASSERT_OK(redislock_acquire(l2, NULL));
    /* Locks the prefix would match if it were read as a glob. */
    freeReplyObject(th_cmd(e.r, "SET abxk3 %s PX 20000", FOREIGN_TOKEN));
    freeReplyObject(th_cmd(e.r, "SET a--b!k4 %s PX 20000", FOREIGN_TOKEN));
    freeReplyObject(
        th_cmd(e.r, "SET %s %s PX 20000", "a*[b]!k5", FOREIGN_TOKEN));

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(g, NULL, collect, &s));
    ASSERT_EQ_INT(s.n, 2);
    seen_once(&s, "k1");
    seen_once(&s, "k2");

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(g, "k[2-9]", collect, &s));
    ASSERT_EQ_INT(s.n, 1);
    seen_once(&s, "k2");
    ASSERT_OK(redislock_release(l1));
    ASSERT_OK(redislock_release(l2));
    redislock_lock_free(l1);
    redislock_lock_free(l2);
    redislock_client_free(g);
    env_stop(&e);
}

/* Five locks under "app:" in both formats, and keys that are not ours. */
static void make_listing(env *e, redislock_client *p, redislock_lock **l)
{
    static const char *const keys[5] = {"job1", "job2", "job3", "job4",
                                        "task5"};
    redislock_acquire_options o;
    int i;

    for (i = 0; i < 5; i++) {
        o = th_aopts(TTL_MS, 0, 0);
        if (i == 3)
            o.metadata = "m4";
        if (i == 4)
            o.owner = "w5";
        l[i] = th_lock(p, keys[i]);
        ASSERT_OK(redislock_acquire(l[i], &o));
    }
    /* Not locks: no TTL, under the prefix and outside it. */
    freeReplyObject(th_cmd(e->r, "SET app:plain v"));
    freeReplyObject(th_cmd(e->r, "HSET app:hash owner x holds 1"));
    freeReplyObject(th_cmd(e->r, "SET job1 v"));
    /* Locks under other prefixes. */
    freeReplyObject(th_cmd(e->r, "SET other:job1 %s PX 20000", FOREIGN_TOKEN));
    freeReplyObject(th_cmd(e->r, "SET apps:job9 %s PX 20000", FOREIGN_TOKEN));
    freeReplyObject(th_cmd(e->r, "SET app-job8 %s PX 20000", FOREIGN_TOKEN));
}

static void assert_listing_entry(const seen *s, const char *key,
                                 const char *owner, const char *meta)
{
    int i = seen_once(s, key);

    ASSERT_GT(s->e[i].ttl, TTL_MS - 5000);
    ASSERT_LE(s->e[i].ttl, TTL_MS);
    ASSERT_EQ_INT(s->e[i].holds, 1);
    ASSERT_EQ_STR(s->e[i].owner, owner);
    ASSERT_EQ_STR(s->e[i].meta, meta);
}

void test_meta_list_exact_set(void)
{
    env e = env_start();
    redislock_client *p = prefixed_client(e.s, "app:");
    redislock_client *reader = prefixed_client(e.s, "app:");
    redislock_lock *l[5];
    seen s;
    int i;

    make_listing(&e, p, l);
    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(reader, NULL, collect, &s));
    ASSERT_EQ_INT(s.n, 5);
    assert_listing_entry(&s, "job1", "", "");
    assert_listing_entry(&s, "job2", "", "");
    assert_listing_entry(&s, "job3", "", "");
    assert_default_owner(s.e[seen_once(&s, "job4")].owner);
    assert_listing_entry(&s, "job4", redislock_token(l[3]), "m4");
    assert_listing_entry(&s, "task5", "w5", "");

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(reader, "job*", collect, &s));
    ASSERT_EQ_INT(s.n, 4);
    for (i = 1; i <= 4; i++) {
        char k[8];
        snprintf(k, sizeof k, "job%d", i);
        seen_once(&s, k);
    }
    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(reader, "task?", collect, &s));
    ASSERT_EQ_INT(s.n, 1);
    assert_listing_entry(&s, "task5", "w5", "");
    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(reader, "nomatch*", collect, &s));
    ASSERT_EQ_INT(s.n, 0);
    ASSERT_EQ_INT(th_server_calls(e.r, "keys"), 0);

    for (i = 0; i < 5; i++) {
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    redislock_client_free(reader);
    redislock_client_free(p);
    env_stop(&e);
}

void test_meta_list_callback_stops(void)
{
    env e = env_start();
    redislock_client *p = prefixed_client(e.s, "app:");
    redislock_lock *l[5];
    seen s;
    int i;

    make_listing(&e, p, l);
    memset(&s, 0, sizeof s);
    s.stop_after = 2;
    ASSERT_OK(redislock_list(p, NULL, collect, &s));
    ASSERT_EQ_INT(s.n, 2);
    memset(&s, 0, sizeof s);
    s.stop_after = 1;
    ASSERT_OK(redislock_list(p, NULL, collect, &s));
    ASSERT_EQ_INT(s.n, 1);
    for (i = 0; i < 5; i++)
        redislock_lock_free(l[i]);
    redislock_client_free(p);
    env_stop(&e);
}

void test_meta_list_empty_server(void)
{
    env e = env_start();
    redislock_client *p = prefixed_client(e.s, "app:");
    seen s;

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_list(e.c, NULL, collect, &s));
    ASSERT_EQ_INT(s.n, 0);
    ASSERT_OK(redislock_list(p, "*", collect, &s));
    ASSERT_EQ_INT(s.n, 0);
    /* Keys without a TTL are not locks: still nothing to report. */
    freeReplyObject(th_cmd(e.r, "SET app:x v"));
    freeReplyObject(th_cmd(e.r, "SET y v"));
    ASSERT_OK(redislock_list(e.c, NULL, collect, &s));
    ASSERT_OK(redislock_list(p, NULL, collect, &s));
    ASSERT_EQ_INT(s.n, 0);
    redislock_client_free(p);
    env_stop(&e);
}

/* Counts each "bulk:<n>" key reported. */
static int count_many(const redislock_info *info, void *arg)
{
    int *hits = arg;
    char buf[16];
    long n;
    char *end;

    ASSERT_GT(info->keylen, 0);
    ASSERT_LT(info->keylen, sizeof buf);
    memcpy(buf, info->key, info->keylen);
    buf[info->keylen] = '\0';
    n = strtol(buf, &end, 10);
    if (*end != '\0' || n < 0 || n >= MANY)
        test_fail_(__FILE__, __LINE__, "unexpected key \"%s\"", buf);
    ASSERT_GT(info->ttl_ms, 0);
    hits[n]++;
    return 0;
}

void test_meta_list_many_exactly_once(void)
{
    env e = env_start();
    redislock_client *p = prefixed_client(e.s, "bulk:");
    redislock_acquire_options o = th_aopts(60000, 0, 0);
    redislock_lock *l;
    int *hits = calloc(MANY, sizeof *hits);
    long long scans;
    char key[16];
    int i;

    ASSERT(hits != NULL);
    for (i = 0; i < MANY; i++) {
        snprintf(key, sizeof key, "%d", i);
        l = th_lock(p, key);
        ASSERT_OK(redislock_acquire(l, &o));
        /* Freeing the handle leaves the lock to its TTL. */
        redislock_lock_free(l);
    }
    ASSERT_EQ_INT(th_lock_keys(e.r), MANY);
    scans = th_server_calls(e.r, "scan");
    ASSERT_OK(redislock_list(p, NULL, count_many, hits));
    for (i = 0; i < MANY; i++)
        if (hits[i] != 1)
            test_fail_(__FILE__, __LINE__, "bulk:%d listed %d times", i,
                       hits[i]);
    scans = th_server_calls(e.r, "scan") - scans;
    test_log("%d locks listed in %lld SCAN calls", MANY, scans);
    /* Several batches, and never the blocking KEYS. */
    ASSERT_GT(scans, 1);
    ASSERT_EQ_INT(th_server_calls(e.r, "keys"), 0);
    free(hits);
    redislock_client_free(p);
    env_stop(&e);
}
