/*
 * cluster: a client of a Redis Cluster routes each lock to the master of
 * its key's hash slot. Where a key went is read back from the servers
 * (CLUSTER KEYSLOT, CLUSTER SLOTS, EXISTS on the owner), never from the
 * library. Each test starts a cluster of its own (tests/harness/cluster.h);
 * the faults (a slot migrated, a master killed) are in test_cluster_faults.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/util.h"
#include "test.h"

#define NKEYS 2000
#define NPROCS 4
#define NINCR 150
#define NLOCKS 3
/* How soon a release must wake a waiter whose holder has a 10 s TTL. */
#define WAKE_MAX_MS 1000

static redislock_client *cluster_client(const th_cluster *tc,
                                        const redislock_options *o)
{
    redislock_client *c = NULL;

    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, o));
    ASSERT(c != NULL);
    return c;
}

void test_cluster_keys_spread_over_slots(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = cluster_client(tc, NULL);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redisContext *r[3];
    int per_master[3] = {0, 0, 0}, i, at;
    unsigned slot;
    char key[32];

    for (i = 0; i < 3; i++)
        r[i] = th_cluster_redis(tc, i);
    /* The spec's check value, and the server's own answer. */
    ASSERT_EQ_INT(rl__key_slot("123456789", 9), 0x31C3);
    ASSERT_EQ_INT(rl__key_slot("a{user1}b", 9),
                  th_cluster_keyslot(tc, "a{user1}b"));
    for (i = 0; i < NKEYS; i++) {
        redislock_lock *l;
        snprintf(key, sizeof key, "ck:%d", i);
        slot = th_cluster_keyslot(tc, key);
        ASSERT_EQ_INT(rl__key_slot(key, strlen(key)), slot);
        at = th_cluster_owner(tc, slot);
        ASSERT(at >= 0 && at < 3);
        l = th_lock(c, key);
        ASSERT_OK(redislock_acquire(l, &o));
        ASSERT_EQ_INT(th_cmd_int(r[at], "EXISTS %s", key), 1);
        ASSERT_OK(redislock_release(l));
        ASSERT_EQ_INT(th_cmd_int(r[at], "EXISTS %s", key), 0);
        redislock_lock_free(l);
        per_master[at]++;
    }
    test_log("%d keys: %d, %d and %d on the three masters", NKEYS,
             per_master[0], per_master[1], per_master[2]);
    for (i = 0; i < 3; i++) {
        ASSERT_GT(per_master[i], NKEYS / 5);
        redisFree(r[i]);
    }
    redislock_client_free(c);
    th_cluster_stop(tc);
}

typedef struct waiter {
    pthread_t t;
    redislock_lock *l;
    int fair;
    int kind; /* 0 a lock, > 0 a permit of that limit, -1 a reader */
    redislock_err err;
    int64_t got_ms;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    redislock_acquire_options o = th_aopts(10000, 8000, 0);

    o.fair = w->fair;
    o.limit = w->kind > 0 ? w->kind : 0;
    o.shared = w->kind < 0;
    w->err = redislock_acquire(w->l, &o);
    w->got_ms = th_now_ms();
    return NULL;
}

/* A holder with a 10 s lease releases; a waiter (fair: handed the lock,
 * else woken) must have it long before the lease would end. kind: what
 * the waiter asks for (see waiter); a permit's holder holds the only one,
 * a reader's holds the key alone. */
static int64_t wake_after_release(redislock_client *c, const char *key,
                                  int fair, int kind)
{
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *holder = th_lock(c, key);
    waiter w = {0};
    int64_t released;

    o.fair = fair;
    o.limit = kind > 0 ? kind : 0;
    w.l = th_lock(c, key);
    w.fair = fair;
    w.kind = kind;
    ASSERT_OK(redislock_acquire(holder, &o));
    ASSERT_EQ_INT(pthread_create(&w.t, NULL, wait_for_lock, &w), 0);
    /* Long enough for the waiter to block on the server (BLPOP). */
    th_sleep_ms(400);
    released = th_now_ms();
    ASSERT_OK(redislock_release(holder));
    th_join_within(w.t, 9000);
    ASSERT_OK(w.err);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_lock_free(holder);
    return w.got_ms - released;
}

static int count_lock(const redislock_info *info, void *arg)
{
    (void)info;
    (*(int *)arg)++;
    return 0;
}

/* Shared locks (test_shared.c) on a master's key: shares together, a
 * writer kept out, the kind read where the key lives, and a waiting
 * writer's record (in the key's set) and its wake-up by the last
 * reader's release. Returns the wake-up's latency in ms. */
static int64_t shared_features(th_cluster *tc, redislock_client *c)
{
    redislock_acquire_options so = th_aopts(30000, 0, 0);
    redislock_acquire_options xo = th_aopts(30000, 0, 0);
    redislock_lock *l[3];
    redislock_info info;
    redisContext *r;
    th_waiter w;
    int64_t released, t0;
    int i;

    so.shared = 1;
    r = th_cluster_redis(
        tc, th_cluster_owner(tc, th_cluster_keyslot(tc, "feat:shr")));
    for (i = 0; i < 3; i++)
        l[i] = th_lock(c, "feat:shr");
    ASSERT_OK(redislock_acquire(l[0], &so));
    ASSERT_OK(redislock_acquire(l[1], &so));
    ASSERT_ERR(redislock_acquire(l[2], &xo), REDISLOCK_EHELD);
    ASSERT_OK(redislock_inspect(l[2], &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SHARED);
    ASSERT_EQ_INT(info.holds, 2);
    xo.wait_ms = 8000;
    th_waiter_start(&w, c, "feat:shr", &xo);
    for (t0 = th_now_ms();; th_sleep_ms(2)) {
        redisReply *rep = th_cmd(r, "ZSCORE feat:shr redislock:writer");
        int seen = rep->type == REDIS_REPLY_STRING;

        freeReplyObject(rep);
        if (seen)
            break;
        ASSERT_LT(th_now_ms() - t0, 2000);
    }
    ASSERT_ERR(redislock_acquire(l[2], &so), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(l[0]));
    released = th_now_us();
    ASSERT_OK(redislock_release(l[1]));
    th_waiter_join_ok(&w, 9000);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    for (i = 0; i < 3; i++)
        redislock_lock_free(l[i]);
    redisFree(r);
    return (w.done_us - released) / 1000;
}

/* A key's fencing counter on the cluster node r (its slot's), 0 for
 * none. */
static long long fence_of(redisContext *r, const char *key)
{
    char name[64], *v;

    th_cluster_fence_name(key, name, sizeof name);
    v = th_cmd_str(r, NULL, "GET %s", name);
    long long n = v ? atoll(v) : 0;

    free(v);
    return n;
}

/* Sets of keys (redislock_lock_new_multi): keys of one hash slot are
 * taken together on its master, with their fencing counters; keys of
 * several slots, of one master and of another, are taken slot by slot
 * (agroup.c) with one token and one fencing token, and a key held in any
 * slot makes the set take nothing. */
static void set_features(th_cluster *tc, redislock_client *c)
{
    static const char *const same[3] = {"{fs}a", "{fs}b", "{fs}c"};
    const char *apart[3] = {"fs:0", NULL, NULL};
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    unsigned slot = th_cluster_keyslot(tc, "fs:0");
    int at = th_cluster_owner(tc, th_cluster_keyslot(tc, "{fs}a")), i;
    int node[3];
    redislock_lock *s = th_lock_set(c, same, 3), *h;
    redisContext *r = th_cluster_redis(tc, at), *rn[3];
    char key[2][16];

    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS {fs}a {fs}b {fs}c"), 3);
    ASSERT_KEY(r, "{fs}c", redislock_token(s));
    ASSERT_EQ_INT(fence_of(r, "{fs}c"), redislock_fence(s));
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS {fs}a {fs}b {fs}c"), 0);
    redislock_lock_free(s);
    redisFree(r);
    /* A key of another slot on fs:0's master, and one of another
     * master. */
    for (i = 1; i < 200 && (apart[1] == NULL || apart[2] == NULL); i++) {
        unsigned ks;

        snprintf(key[apart[1] == NULL ? 0 : 1], sizeof key[0], "fs:%d", i);
        ks = th_cluster_keyslot(tc, key[apart[1] == NULL ? 0 : 1]);
        if (apart[1] == NULL && ks != slot &&
            th_cluster_owner(tc, ks) == th_cluster_owner(tc, slot))
            apart[1] = key[0];
        else if (apart[1] != NULL &&
                 th_cluster_owner(tc, ks) != th_cluster_owner(tc, slot))
            apart[2] = key[1];
    }
    ASSERT(apart[1] != NULL && apart[2] != NULL);
    for (i = 0; i < 3; i++) {
        node[i] = th_cluster_owner(tc, th_cluster_keyslot(tc, apart[i]));
        rn[i] = th_cluster_redis(tc, node[i]);
    }
    test_log("set %s %s (one master, two slots) and %s (another master)",
             apart[0], apart[1], apart[2]);
    s = th_lock_set(c, apart, 3);
    ASSERT_OK(redislock_acquire(s, &o));
    for (i = 0; i < 3; i++) {
        ASSERT_KEY(rn[i], apart[i], redislock_token(s));
        ASSERT_EQ_INT(fence_of(rn[i], apart[i]), redislock_fence(s));
    }
    ASSERT_OK(redislock_release(s));
    for (i = 0; i < 3; i++)
        ASSERT_KEY(rn[i], apart[i], NULL);
    /* Held in one slot: nothing taken in the others. */
    h = th_lock(c, apart[1]);
    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_ERR(redislock_acquire(s, &o), REDISLOCK_EHELD);
    ASSERT_KEY(rn[0], apart[0], NULL);
    ASSERT_KEY(rn[2], apart[2], NULL);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(h);
    redislock_lock_free(s);
    for (i = 0; i < 3; i++)
        redisFree(rn[i]);
}

/* Reentrant and metadata locks, fair hand-off, wake-up, listing,
 * fencing and sets of keys: every script touches its helper keys in the
 * key's slot. */
void test_cluster_lock_features(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = cluster_client(tc, NULL);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_lock *l[3];
    redislock_info info;
    int64_t woke, handed, shared_woke;
    int i, listed = 0;

    o.reentrant = 1;
    o.metadata = "job 42";
    l[0] = th_lock(c, "feat:re");
    ASSERT_OK(redislock_acquire(l[0], &o));
    ASSERT_OK(redislock_acquire(l[0], &o));
    ASSERT_EQ_INT(redislock_holds(l[0]), 2);
    ASSERT_OK(redislock_inspect(l[0], &info));
    ASSERT_EQ_STR(info.metadata, "job 42");
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_OK(redislock_release(l[0]));
    /* Locks on keys of other masters, listed from every master. */
    o = th_aopts(30000, 0, 0);
    l[1] = th_lock(c, "feat:a");
    l[2] = th_lock(c, "feat:bb");
    ASSERT_OK(redislock_acquire(l[1], &o));
    ASSERT_OK(redislock_acquire(l[2], &o));
    ASSERT_OK(redislock_list(c, "feat:*", count_lock, &listed));
    ASSERT_EQ_INT(listed, 3);
    ASSERT_OK(
        redislock_fenced_set(c, "feat:res", 8, "v", 1, redislock_fence(l[1])));
    ASSERT_ERR(redislock_fenced_set(c, "feat:res", 8, "v", 1, 1),
               REDISLOCK_ESTALE);
    for (i = 0; i < 3; i++) {
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    /* A semaphore on a master's key: its limit, read where it lives. */
    o.limit = 2;
    for (i = 0; i < 3; i++)
        l[i] = th_lock(c, "feat:sem");
    ASSERT_OK(redislock_acquire(l[0], &o));
    ASSERT_OK(redislock_acquire(l[1], &o));
    ASSERT_ERR(redislock_acquire(l[2], &o), REDISLOCK_EHELD);
    ASSERT_OK(redislock_inspect(l[2], &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SEMAPHORE);
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_OK(redislock_release(l[0]));
    ASSERT_OK(redislock_acquire(l[2], &o));
    for (i = 0; i < 3; i++) {
        if (i > 0)
            ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    shared_woke = shared_features(tc, c);
    test_log("writer woken %lld ms after the last reader's release",
             (long long)shared_woke);
    ASSERT_LT(shared_woke, WAKE_MAX_MS);
    woke = wake_after_release(c, "feat:wake", 0, 0);
    handed = wake_after_release(c, "feat:fair", 1, 0);
    test_log("woken %lld ms, handed over %lld ms after release (TTL 10 s)",
             (long long)woke, (long long)handed);
    ASSERT_LT(woke, WAKE_MAX_MS);
    ASSERT_LT(handed, WAKE_MAX_MS);
    /* Fair shares, told on the key's shard channel. */
    handed = wake_after_release(c, "feat:fsem", 1, 1);
    shared_woke = wake_after_release(c, "feat:fshr", 1, -1);
    test_log("fair permit handed over %lld ms, fair reader %lld ms after "
             "release",
             (long long)handed, (long long)shared_woke);
    ASSERT_LT(handed, WAKE_MAX_MS);
    ASSERT_LT(shared_woke, WAKE_MAX_MS);
    set_features(tc, c);
    redislock_client_free(c);
    th_cluster_stop(tc);
}

void test_cluster_key_refused(void)
{
    static const char *const bad[] = {"a{}b", "x{y", "}{", "p{}{q}"};
    static const char *const good[] = {"plain", "a{b}c", "}x{y}", "{t}"};
    th_cluster *tc = th_cluster_start(1, 0);
    redislock_client *c = cluster_client(tc, NULL), *pc;
    redislock_options po = {0};
    redislock_lock *l = NULL;
    size_t i;

    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        ASSERT_ERR(redislock_lock_new(c, bad[i], strlen(bad[i]), &l),
                   REDISLOCK_EINVAL);
        ASSERT(l == NULL);
        ASSERT(strstr(redislock_errdetail(), "hash tag") != NULL);
        ASSERT_ERR(redislock_fenced_set(c, bad[i], strlen(bad[i]), "v", 1, 1),
                   REDISLOCK_EINVAL);
    }
    test_log("refused: %s", redislock_errdetail());
    for (i = 0; i < sizeof good / sizeof *good; i++) {
        l = th_lock(c, good[i]);
        ASSERT_OK(redislock_acquire(l, NULL));
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
    }
    /* The prefix is part of the key: "{" makes "{}" of key "}". */
    po.prefix = "{";
    pc = cluster_client(tc, &po);
    ASSERT_ERR(redislock_lock_new(pc, "}", 1, &l), REDISLOCK_EINVAL);
    redislock_client_free(pc);
    redislock_client_free(c);
    th_cluster_stop(tc);
}

/* A forked worker: its own client; NINCR increments spread over NLOCKS
 * locks, each counter in its lock's slot, on that slot's master. */
static int process_worker(th_cluster *tc, const int *owner)
{
    redislock_acquire_options o = th_aopts(10000, REDISLOCK_WAIT_FOREVER, 5);
    redislock_client *c = NULL;
    redislock_lock *l[NLOCKS] = {NULL};
    redisContext *r[NLOCKS] = {NULL};
    char key[32], counter[32];
    int i, ok = redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n,
                                             NULL) == REDISLOCK_OK;

    for (i = 0; ok && i < NLOCKS; i++) {
        snprintf(key, sizeof key, "{cnt%d}lock", i);
        r[i] = redisConnectUnix(tc->s[owner[i]]->sock);
        ok = r[i] != NULL && !r[i]->err &&
             redislock_lock_new(c, key, strlen(key), &l[i]) == REDISLOCK_OK;
    }
    for (i = 0; ok && i < NINCR * NLOCKS; i++) {
        snprintf(counter, sizeof counter, "{cnt%d}n", i % NLOCKS);
        ok = redislock_acquire(l[i % NLOCKS], &o) == REDISLOCK_OK &&
             th_cluster_incr(r[i % NLOCKS], counter) == 0 &&
             redislock_release(l[i % NLOCKS]) == REDISLOCK_OK;
    }
    if (!ok)
        fprintf(stderr, "worker %d: %s\n", (int)getpid(),
                redislock_errdetail());
    for (i = 0; i < NLOCKS; i++) {
        redislock_lock_free(l[i]);
        if (r[i] != NULL)
            redisFree(r[i]);
    }
    redislock_client_free(c);
    return ok ? 0 : 1;
}

void test_cluster_counter_processes(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    int owner[NLOCKS], i, st;
    pid_t pids[NPROCS];
    int64_t start = th_now_ms();
    char counter[32];

    for (i = 0; i < NLOCKS; i++) {
        snprintf(counter, sizeof counter, "{cnt%d}n", i);
        owner[i] = th_cluster_owner(tc, th_cluster_keyslot(tc, counter));
    }
    fflush(NULL);
    for (i = 0; i < NPROCS; i++) {
        pids[i] = fork();
        ASSERT(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(process_worker(tc, owner));
    }
    for (i = 0; i < NPROCS; i++) {
        while (waitpid(pids[i], &st, 0) < 0)
            ASSERT_EQ_INT(errno, EINTR);
        ASSERT(WIFEXITED(st));
        ASSERT_EQ_INT(WEXITSTATUS(st), 0);
    }
    test_log("%d processes x %d increments on each of %d locks in %lld ms",
             NPROCS, NINCR, NLOCKS, (long long)(th_now_ms() - start));
    for (i = 0; i < NLOCKS; i++) {
        redisContext *r = th_cluster_redis(tc, owner[i]);
        snprintf(counter, sizeof counter, "{cnt%d}n", i);
        ASSERT_EQ_INT(th_cluster_counter(r, counter), NPROCS * NINCR);
        redisFree(r);
    }
    th_cluster_stop(tc);
}

/* Elections in a cluster: each record is in its key's slot, on that
 * slot's master, for keys of every master; campaign, proclaim, observe
 * and resign go where the key goes. */
void test_cluster_elect_record_in_slot(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = cluster_client(tc, NULL);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_lock *a, *ob;
    redislock_leader_info s;
    redisContext *r;
    char buf[32], rec[80];
    const char *key = buf;
    int m, at, i = 0;

    for (m = 0; m < 3; m++) {
        /* A key of master m's. */
        do
            snprintf(buf, sizeof buf, "{el%d}k", i++);
        while ((at = th_cluster_owner(tc, th_cluster_keyslot(tc, key))) != m);
        snprintf(rec, sizeof rec, "%s:rl-elect", key);
        ASSERT_EQ_INT(th_cluster_keyslot(tc, rec), th_cluster_keyslot(tc, key));
        a = th_lock(c, key);
        ob = th_lock(c, key);
        memset(&s, 0, sizeof s);
        ASSERT_OK(redislock_campaign(a, "v", &o));
        ASSERT_OK(redislock_proclaim(a, "w"));
        r = th_cluster_redis(tc, at);
        ASSERT_EQ_INT(th_cmd_int(r, "XLEN %s", rec), 2);
        redisFree(r);
        ASSERT_OK(redislock_observe(ob, &s, 0));
        ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_ELECTED);
        ASSERT_EQ_INT(s.term, redislock_fence(a));
        ASSERT_OK(redislock_observe(ob, &s, 0));
        ASSERT_EQ_STR(s.value, "w");
        ASSERT_OK(redislock_resign(a));
        ASSERT_OK(redislock_leader(ob, &s));
        ASSERT_EQ_INT(s.has_leader, 0);
        ASSERT_EQ_INT(s.n, 3);
        redislock_lock_free(a);
        redislock_lock_free(ob);
    }
    redislock_client_free(c);
    th_cluster_stop(tc);
}
