/*
 * A Redis Cluster client on the event loop (redislock_loop(3)), under the
 * tests' own application loop, one thread: keys over every master at
 * once, waiters woken by a release, inspect and extend; a slot migrated
 * under held and renewed locks and new acquires (ASK while it moves,
 * MOVED after, each followed on the loop); a master killed and its
 * replica promoted (the map read again on the loop, the lock's slot
 * served again).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness/adapters.h"
#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/keysets.h"
#include "test.h"

#define KEYS 60
#define WAITERS 6

/* Every test here runs on the tests' poll() loop. */
static const driver *const d = &adapter_poll;

static redislock_client *cluster_client(th_cluster *tc, int64_t timeout_ms)
{
    redislock_options o = {0};
    redislock_client *c = NULL;

    o.command_timeout_ms = timeout_ms;
    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, &o));
    return c;
}

/* Whether key holds nothing. */
static int free_key(th_cluster *tc, const char *key)
{
    char *v = th_cluster_value(tc, key);
    int yes = v == NULL;

    free(v);
    return yes;
}

/* Whether key's slot owner holds key with token (a plain lock's value). */
static int held_by(th_cluster *tc, const char *key, const char *token)
{
    char *v = th_cluster_value(tc, key);
    int yes = v != NULL && strcmp(v, token) == 0;

    free(v);
    return yes;
}

/* Waiters on one key: each holds it alone when it hears (its token on the
 * key's master), then gives it back. */
typedef struct line {
    redislock_loop *lp;
    th_cluster *tc;
    redislock_lock *l[KEYS];
    ad_done d[KEYS];
    int n, acquired, released;
} line;

static void line_released(redislock_lock *l, redislock_err err, void *arg)
{
    line *w = arg;

    (void)l;
    ASSERT_ERR(err, REDISLOCK_OK);
    w->released++;
}

static void line_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    line *w = arg;
    size_t len;
    const char *key = redislock_key(l, &len);
    char k[64];
    int i;

    for (i = 0; w->l[i] != l; i++)
        ;
    ad_record(l, err, &w->d[i]);
    ASSERT_ERR(err, REDISLOCK_OK);
    snprintf(k, sizeof k, "%.*s", (int)len, key);
    ASSERT(held_by(w->tc, k, redislock_token(l)));
    w->acquired++;
    ASSERT_OK(redislock_loop_release(w->lp, l, 0, line_released, w));
}

/* w's waiters, fair or not, wait behind holder's 30 s lease: none gets
 * in before its release, then each is woken or handed the lock by the
 * release before it, within 5 s, once. */
static void through_a_lease(line *w, void *h, redislock_lock *holder, int fair)
{
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    int64_t t0;
    int i;

    memset(w->d, 0, sizeof w->d);
    w->acquired = w->released = 0;
    ASSERT_OK(redislock_acquire(holder, &o));
    o = th_aopts(5000, 10000, 0);
    o.fair = fair;
    for (i = 0; i < WAITERS; i++)
        ASSERT_OK(redislock_loop_acquire(w->lp, w->l[i], &o, line_acquired, w));
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(w->acquired, 0);
    t0 = rl__now_us();
    ASSERT_OK(redislock_release(holder));
    ad_run_until(d, h, &w->released, WAITERS, 5000);
    test_log("%d %swaiters through a 30 s lease in %lld ms", WAITERS,
             fair ? "fair " : "", (long long)((rl__now_us() - t0) / 1000));
    for (i = 0; i < WAITERS; i++)
        ASSERT_EQ_INT(w->d[i].calls, 1);
}

/* Sixty keys over the three masters at once; six waiters behind a 30 s
 * lease, each woken by the release before it (all within 5 s), holding
 * alone, then six fair ones, in the order they asked; inspect and extend
 * on the key's master. */
void test_alock_cluster_spread_and_wake(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = cluster_client(tc, 2000);
    redislock_lock *holder = th_lock(c, "alc:w");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    static line w;
    redislock_info info;
    ad_done dn = {0};
    int owners[3] = {0, 0, 0};
    char key[32];
    void *h;
    int i;

    memset(&w, 0, sizeof w);
    w.tc = tc;
    h = d->open(c, &w.lp);
    for (i = 0; i < KEYS; i++) {
        snprintf(key, sizeof key, "alc:k%d", i);
        owners[th_cluster_owner(tc, th_cluster_keyslot(tc, key))]++;
        w.l[i] = th_lock(c, key);
        ASSERT_OK(redislock_loop_acquire(w.lp, w.l[i], &o, line_acquired, &w));
    }
    ASSERT(owners[0] > 0 && owners[1] > 0 && owners[2] > 0);
    ad_run_until(d, h, &w.released, KEYS, 10000);
    for (i = 0; i < KEYS; i++) {
        ASSERT_EQ_INT(w.d[i].calls, 1);
        redislock_lock_free(w.l[i]);
    }
    /* Waiters behind a 30 s lease: only wake-ups get them in; fair
     * ones (a shard channel each, on the key's master) in the order they
     * asked. */
    memset(&w, 0, sizeof w);
    w.tc = tc;
    d->close(h);
    h = d->open(c, &w.lp);
    for (i = 0; i < WAITERS; i++)
        w.l[i] = th_lock(c, "alc:w");
    through_a_lease(&w, h, holder, 0);
    through_a_lease(&w, h, holder, 1);
    for (i = 1; i < WAITERS; i++)
        ASSERT(w.d[i].at_us > w.d[i - 1].at_us);
    /* Inspect and extend, on the key's master. */
    o = th_aopts(5000, 0, 0);
    ASSERT_OK(redislock_loop_acquire(w.lp, w.l[0], &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    memset(&info, 0, sizeof info);
    ASSERT_OK(redislock_loop_inspect(w.lp, w.l[0], &info, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.fence, 0); /* a plain lock keeps none */
    ASSERT_OK(redislock_loop_extend(w.lp, w.l[0], 20000, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 3, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT(redislock_valid_ms(w.l[0]) > 5000);
    ASSERT_OK(redislock_loop_release(w.lp, w.l[0], 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 4, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT(!held_by(tc, "alc:w", redislock_token(w.l[0])));
    d->close(h);
    for (i = 0; i < WAITERS; i++)
        redislock_lock_free(w.l[i]);
    redislock_lock_free(holder);
    redislock_client_free(c);
    th_cluster_stop(tc);
}

/* A lock renewed on the loop while its slot moves to another master, and
 * a free key of that slot acquired while it moves: the acquire meets ASK
 * and, on the importing node, TRYAGAIN (its keys do not all exist there
 * yet) until the keys have moved; the renewals meet TRYAGAIN, ASK and
 * then MOVED; each is followed on the loop, and neither lock is lost. */
void test_alock_cluster_slot_migration(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = cluster_client(tc, 2000);
    unsigned slot = th_cluster_keyslot(tc, "{alm}a");
    int src = th_cluster_owner(tc, slot), dst = (src + 1) % 3, i;
    char *sid = th_cluster_node_id(tc, src), *did = th_cluster_node_id(tc, dst);
    redisContext *rs = th_cluster_redis(tc, src);
    redisContext *rd = th_cluster_redis(tc, dst);
    redislock_lock *a = th_lock(c, "{alm}a"), *b = th_lock(c, "{alm}b");
    redislock_lock *x = th_lock(c, "{alm}x");
    redislock_acquire_options o = th_aopts(1500, 0, 0);
    ad_done da = {0}, db = {0};
    ad_lost ga = {0}, gb = {0};
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    char *v, name[64];

    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &ga;
    ASSERT_OK(redislock_loop_acquire(lp, a, &o, ad_record, &da));
    ad_run_until(d, h, &da.calls, 1, 3000);
    ASSERT_ERR(da.err, REDISLOCK_OK);
    freeReplyObject(th_cmd(rd, "CLUSTER SETSLOT %u IMPORTING %s", slot, sid));
    freeReplyObject(th_cmd(rs, "CLUSTER SETSLOT %u MIGRATING %s", slot, did));
    /* A free key of the migrating slot: not on src, so ASK to dst, once
     * the slot's fencing counter, which a's acquire left on src, has gone
     * too (its lease long over; while it is there, src answers
     * TRYAGAIN). */
    th_cluster_fence_name("{alm}b", name, sizeof name);
    freeReplyObject(th_cmd(rs, "DEL %s", name));
    o.on_lost_arg = &gb;
    o.wait_ms = 3000;
    ASSERT_OK(redislock_loop_acquire(lp, b, &o, ad_record, &db));
    ad_run_for(d, h, 200);
    ASSERT_EQ_INT(db.calls, 0);
    ASSERT_GT(th_cluster_errorstat(tc, src, "ASK"), 0);
    ASSERT_GT(th_cluster_errorstat(tc, dst, "TRYAGAIN"), 0);
    /* A loop freed while its request bounces between the two (out, or
     * pausing on a timer): its callback comes then, with
     * REDISLOCK_ECANCELED, and nothing of it is left behind. */
    {
        redislock_loop *lp2;
        void *h2 = d->open(c, &lp2);
        ad_done dc = {0};

        ASSERT_OK(redislock_loop_acquire(lp2, x, &o, ad_record, &dc));
        ad_run_for(d, h2, 120);
        ASSERT_EQ_INT(dc.calls, 0);
        d->close(h2);
        ASSERT_EQ_INT(dc.calls, 1);
        ASSERT_ERR(dc.err, REDISLOCK_ECANCELED);
    }
    th_cluster_migrate_keys(rs, tc->s[dst]->port, slot);
    for (i = 0; i < 3; i++) {
        redisContext *r = th_cluster_redis(tc, i);
        freeReplyObject(th_cmd(r, "CLUSTER SETSLOT %u NODE %s", slot, did));
        redisFree(r);
    }
    ad_run_until(d, h, &db.calls, 1, 3000);
    ASSERT_ERR(db.err, REDISLOCK_OK);
    v = th_cmd_str(rd, NULL, "GET {alm}b");
    ASSERT(v != NULL);
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(b));
    free(v);
    /* Two leases more: both renewed on dst, after MOVED. */
    ad_run_for(d, h, 3000);
    ASSERT_GT(th_cluster_errorstat(tc, src, "MOVED"), 0);
    ASSERT_EQ_INT(ga.calls, 0);
    ASSERT_EQ_INT(gb.calls, 0);
    v = th_cmd_str(rd, NULL, "GET {alm}a");
    ASSERT(v != NULL);
    ASSERT_VALUE_IS_TOKEN(v, redislock_token(a));
    free(v);
    ASSERT_OK(redislock_check(a));
    ASSERT_OK(redislock_check(b));
    ASSERT_OK(redislock_loop_release(lp, a, 0, ad_record, &da));
    ASSERT_OK(redislock_loop_release(lp, b, 0, ad_record, &db));
    ad_run_until(d, h, &da.calls, 2, 3000);
    ad_run_until(d, h, &db.calls, 2, 3000);
    ASSERT_ERR(da.err, REDISLOCK_OK);
    ASSERT_ERR(db.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_cmd_int(rd, "EXISTS {alm}a {alm}b {alm}x"), 0);
    d->close(h);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(x);
    redislock_client_free(c);
    free(sid);
    free(did);
    redisFree(rs);
    redisFree(rd);
    th_cluster_stop(tc);
}

/* The master of a lock's slot killed; its replica takes over. The loop's
 * requests to the dead master cannot connect: the map is read again on
 * the loop, and an acquire of that slot that started during the failover
 * is served by the promoted replica, within its command timeout. */
void test_alock_cluster_failover(void)
{
    th_cluster *tc = th_cluster_start(3, 1);
    redislock_client *c = cluster_client(tc, 8000);
    unsigned slot = th_cluster_keyslot(tc, "{alf}x");
    int victim = th_cluster_owner(tc, slot), owner;
    redislock_lock *l = th_lock(c, "{alf}x"), *l2 = th_lock(c, "{alf}y");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    ad_done dn = {0}, d2 = {0};
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    int64_t killed;

    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 3000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 3000);
    th_cluster_kill(tc, victim);
    killed = rl__now_us();
    /* The loop sees the master's connection close. */
    ad_run_for(d, h, 100);
    ASSERT_OK(redislock_loop_acquire(lp, l2, &o, ad_record, &d2));
    ad_run_until(d, h, &d2.calls, 1, 10000);
    test_log("acquire during the failover: %s after %lld ms",
             redislock_strerror(d2.err),
             (long long)((d2.at_us - killed) / 1000));
    ASSERT_ERR(d2.err, REDISLOCK_OK);
    owner = th_cluster_owner(tc, slot);
    ASSERT(owner >= 0 && owner != victim);
    ASSERT(held_by(tc, "{alf}y", redislock_token(l2)));
    ASSERT_OK(redislock_loop_release(lp, l2, 0, ad_record, &d2));
    ad_run_until(d, h, &d2.calls, 2, 3000);
    ASSERT_ERR(d2.err, REDISLOCK_OK);
    d->close(h);
    redislock_lock_free(l);
    redislock_lock_free(l2);
    redislock_client_free(c);
    th_cluster_stop(tc);
}

/* A set of three keys with one hash tag (one slot, one script) on the
 * loop of a cluster client: it waits behind a 30 s lease on its second
 * key, holding none of the others meanwhile, is woken by the release on
 * the slot's master, holds all three there with one token, and a second
 * set behind it gets them once the first is released. A set whose keys
 * are in several slots (agroup.c's groups) waits
 * behind the key that refused it, holding none of the others, is woken
 * by its release on its slot's master, holds each key on its own master,
 * is renewed there, and is released everywhere. */
void test_alock_cluster_set_one_slot(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    redislock_client *c = cluster_client(tc, 2000);
    const char *k[3] = {"{acs}a", "{acs}b", "{acs}c"};
    const char *apart[3] = {"acs:x", "acs:y", "acs:z"};
    redislock_lock *holder = th_lock(c, "{acs}b");
    redislock_lock *s = th_lock_set(c, k, 3), *t = th_lock_set(c, k, 3);
    redislock_lock *x = th_lock_set(c, apart, 3), *hy = th_lock(c, "acs:y");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    ad_done ds = {0}, dt = {0}, dx = {0};
    redislock_info info;
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    int i;

    ASSERT_OK(redislock_acquire(holder, &o));
    o = th_aopts(5000, 10000, 0);
    ASSERT_OK(redislock_loop_acquire(lp, s, &o, ad_record, &ds));
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(ds.calls, 0);
    ASSERT(th_cluster_value(tc, "{acs}a") == NULL);
    ASSERT(th_cluster_value(tc, "{acs}c") == NULL);
    ASSERT_OK(redislock_release(holder));
    ad_run_until(d, h, &ds.calls, 1, 3000);
    ASSERT_ERR(ds.err, REDISLOCK_OK);
    for (i = 0; i < 3; i++)
        ASSERT(held_by(tc, k[i], redislock_token(s)));
    ASSERT_OK(redislock_loop_acquire(lp, t, &o, ad_record, &dt));
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(dt.calls, 0);
    ASSERT_OK(redislock_loop_release(lp, s, 0, ad_record, &ds));
    ad_run_until(d, h, &dt.calls, 1, 3000);
    ASSERT_ERR(dt.err, REDISLOCK_OK);
    for (i = 0; i < 3; i++)
        ASSERT(held_by(tc, k[i], redislock_token(t)));
    ASSERT_OK(redislock_loop_release(lp, t, 0, ad_record, &dt));
    ad_run_until(d, h, &dt.calls, 2, 3000);
    ASSERT_ERR(dt.err, REDISLOCK_OK);
    for (i = 0; i < 3; i++)
        ASSERT(th_cluster_keyslot(tc, apart[i]) !=
               th_cluster_keyslot(tc, apart[(i + 1) % 3]));
    o = th_aopts(30000, 0, 0);
    ASSERT_OK(redislock_acquire(hy, &o));
    o = th_aopts(600, 10000, 0);
    o.watchdog = 1;
    ASSERT_OK(redislock_loop_acquire(lp, x, &o, ad_record, &dx));
    /* Refused at acs:y, the set gives back what its attempt took of the
     * others (a set over several slots takes them one after another):
     * it waits holding none. On a loaded machine the give-back may come
     * after a fixed 400 ms, so the loop runs until it has (3 s at most). */
    for (i = 0; i < 60 && (!free_key(tc, "acs:x") || !free_key(tc, "acs:z"));
         i++)
        ad_run_for(d, h, 50);
    ASSERT_EQ_INT(dx.calls, 0);
    ASSERT(free_key(tc, "acs:x"));
    ASSERT(free_key(tc, "acs:z"));
    ASSERT_OK(redislock_release(hy));
    ad_run_until(d, h, &dx.calls, 1, 3000);
    ASSERT_ERR(dx.err, REDISLOCK_OK);
    /* Renewed past two leases of 600 ms. */
    ad_run_for(d, h, 1400);
    for (i = 0; i < 3; i++)
        ASSERT(held_by(tc, apart[i], redislock_token(x)));
    ASSERT_GT(redislock_valid_ms(x), 0);
    /* Inspected by its first key (no cross-slot request). */
    ASSERT_OK(redislock_loop_inspect(lp, x, &info, ad_record, &dx));
    ad_run_until(d, h, &dx.calls, 2, 3000);
    ASSERT_ERR(dx.err, REDISLOCK_OK);
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_INT(info.holds, 1);
    ASSERT_EQ_INT(info.fence, 0); /* a plain lock keeps none */
    ASSERT_OK(redislock_loop_release(lp, x, 0, ad_record, &dx));
    ad_run_until(d, h, &dx.calls, 3, 3000);
    ASSERT_ERR(dx.err, REDISLOCK_OK);
    for (i = 0; i < 3; i++)
        ASSERT(th_cluster_value(tc, apart[i]) == NULL);
    d->close(h);
    redislock_lock_free(hy);
    redislock_lock_free(x);
    redislock_lock_free(t);
    redislock_lock_free(s);
    redislock_lock_free(holder);
    redislock_client_free(c);
    th_cluster_stop(tc);
}

/* The loop's twin of cluster_moved_back_and_forth: the old owner of the
 * lock's slot is told the new one owns it, the others not yet, so the two
 * send the loop's acquire back and forth with MOVED. Past the hops it
 * reads the map again and goes on (rl__cluster_hops, aroute.c), and is
 * taken on the new owner once the others are told, 300 ms later. */
void test_alock_cluster_moved_back_and_forth(void)
{
    th_cluster *tc = th_cluster_start(3, 0);
    unsigned slot = th_cluster_keyslot(tc, "{acm}lock");
    int src = th_cluster_owner(tc, slot), dst = (src + 1) % 3;
    char *did = th_cluster_node_id(tc, dst);
    redislock_client *c = cluster_client(tc, 5000);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_lock *l = th_lock(c, "{acm}lock");
    ad_done dl = {0};
    redislock_loop *lp;
    void *lh = d->open(c, &lp);
    redisContext *r = th_cluster_redis(tc, src);
    int64_t t0;

    freeReplyObject(th_cmd(r, "CLUSTER SETSLOT %u NODE %s", slot, did));
    redisFree(r);
    t0 = th_now_ms();
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dl));
    ad_run_for(d, lh, 300);
    ASSERT_EQ_INT(dl.calls, 0);
    th_cluster_slot_to(tc, slot, did, src);
    ad_run_until(d, lh, &dl.calls, 1, 7000);
    test_log("taken on the loop %lld ms after the first MOVED, on node %d",
             (long long)(th_now_ms() - t0), dst);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    ASSERT(held_by(tc, "{acm}lock", redislock_token(l)));
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dl));
    ad_run_until(d, lh, &dl.calls, 2, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    d->close(lh);
    redislock_lock_free(l);
    redislock_client_free(c);
    free(did);
    th_cluster_stop(tc);
}

/* The end of a loop waiter's test: its callback came with the lock,
 * which it holds on key's master now and gives back on the loop; the
 * loop and the locks end. */
static void loop_waiter_holds(th_cluster *tc, const char *key,
                              redislock_loop *lp, void *lh, ad_done *dw,
                              redislock_lock *w, redislock_lock *h)
{
    ASSERT_ERR(dw->err, REDISLOCK_OK);
    ASSERT(held_by(tc, key, redislock_token(w)));
    ASSERT_OK(redislock_loop_release(lp, w, 0, ad_record, dw));
    ad_run_until(d, lh, &dw->calls, 2, 5000);
    ASSERT_ERR(dw->err, REDISLOCK_OK);
    d->close(lh);
    redislock_lock_free(w);
    redislock_lock_free(h);
}

/*
 * A loop waiter's wait lasts through a failover: it waits (10 s) behind
 * a lock renewed by a blocking client's watchdog, with a command timeout
 * (300 ms) far shorter than the cluster's node timeout (1 s); then kill
 * -9 of a master: the key's own (elsewhere 0), whose slot finds no
 * master for a while, or another of a cluster that requires full
 * coverage (elsewhere 1), where every node answers CLUSTERDOWN until the
 * replica is promoted. The waiter pauses on the loop through either,
 * rather than end with the first REDISLOCK_ECONNECT or
 * REDISLOCK_ETRYLATER. The holder's release frees the key, and the
 * waiter gets it.
 */
static void loop_waiter_through_kill(int elsewhere)
{
    th_cluster *tc = th_cluster_start(3, 1);
    int victim, owner, lock_at;
    char buf[32], vbuf[32];
    const char *vkey =
        th_cluster_key_away(tc, "acw", -1, &victim, vbuf, sizeof vbuf);
    const char *key = vkey;
    redislock_client *hc = cluster_client(tc, 0), *c = cluster_client(tc, 300);
    /* The holder's lease outlasts the failover (2.9 s from the kill to
     * the promotion seen in a flake hunt at load 9; 3 s leases ran out
     * first, and the waiter's success came before the check below). */
    redislock_acquire_options ho = th_aopts(6000, 0, 0);
    redislock_acquire_options o = th_aopts(10000, 10000, 0);
    redislock_lock *h, *w;
    ad_done dw = {0};
    redislock_loop *lp;
    void *lh = d->open(c, &lp);
    int64_t killed;
    redislock_err err;

    lock_at = owner = victim;
    if (elsewhere) {
        key = th_cluster_key_away(tc, "acw", victim, &lock_at, buf, sizeof buf);
        th_cluster_config_set(tc, "cluster-require-full-coverage", "yes");
    }
    h = th_lock(hc, key);
    w = th_lock(c, key);
    ho.watchdog = 1;
    ASSERT_OK(redislock_acquire(h, &ho));
    ASSERT_OK(redislock_loop_acquire(lp, w, &o, ad_record, &dw));
    ad_run_for(d, lh, 300);
    ASSERT_EQ_INT(dw.calls, 0);
    th_cluster_synced(tc, lock_at, key);
    killed = th_now_ms();
    th_cluster_kill(tc, victim);
    /* The loop turns while the replica is elected: the waiter waits on
     * (its callback would come with the failure). */
    while (dw.calls == 0 && (owner == victim || owner < 0)) {
        ad_run_for(d, lh, 50);
        ASSERT(th_now_ms() - killed < 8000);
        owner = th_cluster_owner(tc, th_cluster_keyslot(tc, vkey));
    }
    test_log("the replica serves the slot %lld ms after the kill; the "
             "waiter's callbacks by then: %d (%s: %s)",
             (long long)(th_now_ms() - killed), dw.calls,
             redislock_strerror(dw.err), dw.detail);
    ASSERT_EQ_INT(dw.calls, 0);
    err = redislock_release(h);
    test_log("the holder's release after the failover: %s",
             redislock_strerror(err));
    ad_run_until(d, lh, &dw.calls, 1, 8000);
    test_log("the waiter got the lock %lld ms after the kill",
             (long long)(dw.at_us / 1000 - killed));
    loop_waiter_holds(tc, key, lp, lh, &dw, w, h);
    redislock_client_free(c);
    redislock_client_free(hc);
    th_cluster_stop(tc);
}

void test_alock_cluster_waiter_waits_through_failover(void)
{
    loop_waiter_through_kill(0);
}

void test_alock_cluster_waiter_waits_through_clusterdown(void)
{
    loop_waiter_through_kill(1);
}

/*
 * A loop waiter blocked (BLPOP) on a master that CLUSTER FAILOVER turns
 * into a replica: Redis ends the BLPOP with -UNBLOCKED. The waiter
 * tries again on the loop, follows MOVED to the promoted replica and
 * waits on behind the holder there (10 s), getting the lock at the
 * holder's release.
 */
void test_alock_cluster_waiter_waits_through_manual_failover(void)
{
    th_cluster *tc = th_cluster_start(3, 1);
    unsigned slot = th_cluster_keyslot(tc, "{acu}lock");
    int victim = th_cluster_owner(tc, slot);
    int rep = th_cluster_replica_of(tc, victim);
    redislock_client *hc = cluster_client(tc, 0), *c = cluster_client(tc, 0);
    redislock_acquire_options ho = th_aopts(3000, 0, 0);
    redislock_acquire_options o = th_aopts(10000, 10000, 0);
    redislock_lock *h = th_lock(hc, "{acu}lock"), *w = th_lock(c, "{acu}lock");
    ad_done dw = {0};
    redislock_loop *lp;
    void *lh = d->open(c, &lp);
    redisContext *r = th_cluster_redis(tc, victim);
    int64_t t0 = th_now_ms();

    ASSERT(rep >= 0);
    ho.watchdog = 1;
    ASSERT_OK(redislock_acquire(h, &ho));
    ASSERT_OK(redislock_loop_acquire(lp, w, &o, ad_record, &dw));
    while (th_blocked_clients(r) < 1) {
        ad_run_for(d, lh, 20);
        ASSERT(th_now_ms() - t0 < 3000);
    }
    redisFree(r);
    th_cluster_synced(tc, victim, "{acu}lock");
    r = th_cluster_redis(tc, rep);
    freeReplyObject(th_cmd(r, "CLUSTER FAILOVER"));
    redisFree(r);
    t0 = th_now_ms();
    while (th_cluster_owner(tc, slot) != rep) {
        ad_run_for(d, lh, 50);
        ASSERT(th_now_ms() - t0 < 5000);
    }
    ad_run_for(d, lh, 300);
    ASSERT_EQ_INT(dw.calls, 0);
    ASSERT_OK(redislock_release(h));
    ad_run_until(d, lh, &dw.calls, 1, 5000);
    loop_waiter_holds(tc, "{acu}lock", lp, lh, &dw, w, h);
    redislock_client_free(c);
    redislock_client_free(hc);
    th_cluster_stop(tc);
}

/*
 * A planned failover (CLUSTER FAILOVER on the replica) leaves the old
 * master up, a replica that answers MOVED for the slot. A lock the loop
 * renews (TTL 1.5 s) follows the switch: its renewals follow MOVED on
 * the loop to the new master, which has the key by replication. A rival
 * polling the new master with SET NX between the loop's turns never
 * gets the key, the holder having lost nothing.
 */
void test_alock_cluster_renewal_follows_failover(void)
{
    th_cluster *tc = th_cluster_start(3, 1);
    unsigned slot = th_cluster_keyslot(tc, "{acr}held");
    int victim = th_cluster_owner(tc, slot);
    int rep = th_cluster_replica_of(tc, victim);
    redislock_client *c = cluster_client(tc, 0);
    redislock_acquire_options o = th_aopts(1500, 0, 0);
    ad_holder x = {.d = d};
    ad_done dl = {0};
    redislock_loop *lp;
    redisContext *r;
    int held = 0;

    ASSERT(rep >= 0);
    x.l = th_lock(c, "{acr}held");
    x.h = d->open(c, &lp);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &x.lost;
    ASSERT_OK(redislock_loop_acquire(lp, x.l, &o, ad_record, &dl));
    ad_run_until(d, x.h, &dl.calls, 1, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    r = th_cluster_redis(tc, rep);
    freeReplyObject(th_cmd(r, "CLUSTER FAILOVER"));
    redisFree(r);
    ASSERT_LT(th_cluster_rival(tc, rep, "{acr}held", 3500, ad_holder_turn,
                               ad_holder_holds, &x, &held),
              0);
    ASSERT_EQ_INT(th_cluster_owner(tc, slot), rep);
    ASSERT_GT(th_cluster_errorstat(tc, victim, "MOVED"), 0);
    ASSERT(ad_holder_holds(&x));
    ASSERT(held_by(tc, "{acr}held", redislock_token(x.l)));
    ASSERT_OK(redislock_loop_release(lp, x.l, 0, ad_record, &dl));
    ad_run_until(d, x.h, &dl.calls, 2, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    d->close(x.h);
    redislock_lock_free(x.l);
    redislock_client_free(c);
    th_cluster_stop(tc);
}
