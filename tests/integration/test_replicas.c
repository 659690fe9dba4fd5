/*
 * replicas: the replica-sync guard and the WAITAOF guard. A master with
 * one replica (both private servers); WAIT after acquire and extend
 * tells whether the replica has the lock, so that a failover cannot
 * forget it silently; WAITAOF whether the master's and the replicas'
 * append-only files have it on disk. Servers without WAITAOF (Redis 7.0,
 * make check's) are refused when the client connects; the rest of the
 * WAITAOF tests run in the server matrix (scripts/check-servers.sh).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failover/round.h"
#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "rep:job"

typedef struct pair {
    th_server *master, *replica;
    redisContext *m, *r;
} pair;

/* A master and its replica, the replica's configuration with extra (its
 * own persistence, say) added. */
static pair pair_start_with(const char *extra)
{
    pair p;

    p.master = th_server_start(NULL);
    p.replica = th_replica_start(p.master, extra);
    p.m = th_server_redis(p.master);
    p.r = th_server_redis(p.replica);
    return p;
}

static pair pair_start(void)
{
    return pair_start_with("");
}

static void pair_stop(pair *p)
{
    redisFree(p->m);
    redisFree(p->r);
    th_server_stop(p->replica);
    th_server_stop(p->master);
}

static redislock_client *guarded(const pair *p, int lenient, int64_t ms)
{
    redislock_options o = {0};

    o.wait_replicas = 1;
    o.wait_replicas_timeout_ms = ms;
    o.wait_replicas_lenient = lenient;
    return th_client_url(p->master->unix_url, &o);
}

/* A strict loop acquire of l once the replica is back: a replica just
 * resumed, on a loaded box, may take longer than a short WAIT to confirm
 * (as in replicas_unconfirmed); each refusal gave the lock back, so it
 * tries again, at most 20 times. */
static void loop_acquire_confirmed(const driver *d, void *h, redislock_loop *lp,
                                   redislock_lock *l,
                                   const redislock_acquire_options *o,
                                   ad_done *dn)
{
    int tries = 0;

    do {
        ASSERT_OK(redislock_loop_acquire(lp, l, o, ad_record, dn));
        ad_run_until(d, h, &dn->calls, dn->calls + 1, 3000);
    } while (dn->err == REDISLOCK_ENOTDURABLE && ++tries < 20);
    test_log("confirmed on the loop after %d refusals", tries);
    ASSERT_ERR(dn->err, REDISLOCK_OK);
}

void test_replicas_confirmed(void)
{
    pair p = pair_start();
    /* Generous: a loaded machine may take a while to ack. */
    redislock_client *c = guarded(&p, 0, 3000), *plain = th_client(p.master);
    redislock_lock *l = th_lock(c, KEY), *u = th_lock(plain, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    char *v;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    /* Confirmed means the replica has it already: read it there. */
    v = th_cmd_str(p.r, NULL, "GET " KEY);
    ASSERT_EQ_STR(v, redislock_token(l));
    free(v);
    ASSERT_OK(redislock_extend(l, 20000));
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    ASSERT_GT(th_pttl(p.r, KEY), 19000);
    ASSERT_OK(redislock_release(l));
    /* Without the guard nothing is asked. */
    ASSERT_OK(redislock_acquire(u, &o));
    ASSERT_EQ_INT(redislock_replicas(u), -1);
    ASSERT_OK(redislock_release(u));
    redislock_lock_free(u);
    redislock_lock_free(l);
    redislock_client_free(plain);
    redislock_client_free(c);
    pair_stop(&p);
}

/* The replica stalls: strict mode gives the lock back and says why;
 * lenient mode keeps it and reports 0 replicas. */
void test_replicas_unconfirmed(void)
{
    pair p = pair_start();
    redislock_client *strict = guarded(&p, 0, 200);
    redislock_client *lenient = guarded(&p, 1, 200);
    redislock_lock *l = th_lock(strict, KEY), *w = th_lock(lenient, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_err err;
    int64_t t0, took;
    int tries = 0;

    th_server_pause(p.replica);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_ENOTDURABLE);
    took = th_now_ms() - t0;
    test_log("replica stopped: ENOTDURABLE after %lld ms (WAIT 200 ms): %s",
             (long long)took, redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "0 of 1 replicas") != NULL);
    ASSERT_GE(took, 190);
    ASSERT_LT(took, 1000);
    ASSERT_EQ_INT(redislock_replicas(l), 0);
    ASSERT(redislock_token(l) == NULL);
    ASSERT_KEY(p.m, KEY, NULL);
    ASSERT_OK(redislock_acquire(w, &o));
    ASSERT_EQ_INT(redislock_replicas(w), 0);
    ASSERT_OK(redislock_check(w));
    ASSERT_EQ_INT(th_cmd_int(p.m, "EXISTS " KEY), 1);
    ASSERT_OK(redislock_release(w));
    /* Strict extend: refused, and the lock kept (the master has it). */
    th_server_resume(p.replica);
    /* Caught up again before the next confirmation is asked for. */
    ASSERT_EQ_INT(th_cmd_int(p.m, "WAIT 1 10000"), 1);
    /* A replica just resumed, on a loaded box, may take longer than the
     * WAIT's 200 ms to confirm (Valkey 8.1 at load 14, 2026-11-29): each
     * refusal gave the lock back, so trying again is clean. */
    while ((err = redislock_acquire(l, &o)) == REDISLOCK_ENOTDURABLE &&
           ++tries < 20)
        ;
    test_log("confirmed after %d refusals", tries);
    ASSERT_OK(err);
    th_server_pause(p.replica);
    ASSERT_ERR(redislock_extend(l, 20000), REDISLOCK_ENOTDURABLE);
    ASSERT(redislock_token(l) != NULL);
    th_server_resume(p.replica);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(w);
    redislock_lock_free(l);
    redislock_client_free(lenient);
    redislock_client_free(strict);
    pair_stop(&p);
}

/*
 * The guard on the event loop (the tests' poll loop): an acquire, an
 * extend and the loop's renewals are each followed by WAIT on the loop's
 * connection and count what it confirms, as the blocking calls do. With
 * the replica stopped, a strict acquire ends ENOTDURABLE by the WAIT's
 * timeout and gives the lock back on the loop, a lenient one keeps it
 * with 0 replicas, and a strict extend is refused with the lock kept.
 */
void test_replicas_on_loop(void)
{
    const driver *d = &adapter_poll;
    pair p = pair_start();
    redislock_client *c = guarded(&p, 0, 3000);
    redislock_client *strict = guarded(&p, 0, 200);
    redislock_client *lenient = guarded(&p, 1, 200);
    redislock_lock *l = th_lock(c, KEY), *t = th_lock(strict, KEY);
    redislock_lock *w = th_lock(lenient, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_loop *lp, *sp, *wp;
    void *h = d->open(c, &lp), *sh = d->open(strict, &sp);
    void *wh = d->open(lenient, &wp);
    ad_done dn = {0}, dt = {0}, dw = {0};
    ad_lost gl = {0};
    char *v;
    int64_t t0;

    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    v = th_cmd_str(p.r, NULL, "GET " KEY);
    ASSERT_EQ_STR(v, redislock_token(l));
    free(v);
    ASSERT_OK(redislock_loop_extend(lp, l, 20000, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    ASSERT_GT(th_pttl(p.r, KEY), 19000);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 3, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    /* Renewed on the loop, each renewal confirmed by the replica. */
    o = th_aopts(600, 0, 0);
    o.watchdog = 1;
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 4, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ad_run_for(d, h, 1500);
    ASSERT_OK(redislock_check(l));
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    v = th_cmd_str(p.r, NULL, "GET " KEY);
    ASSERT_EQ_STR(v, redislock_token(l));
    free(v);
    ASSERT_GT(th_pttl(p.r, KEY), 0);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 5, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);

    /* The replica stopped. */
    o = th_aopts(10000, 0, 0);
    th_server_pause(p.replica);
    t0 = th_now_ms();
    ASSERT_OK(redislock_loop_acquire(sp, t, &o, ad_record, &dt));
    ad_run_until(d, sh, &dt.calls, 1, 3000);
    test_log("replica stopped, on the loop: %s after %lld ms (WAIT 200 ms): "
             "%s",
             redislock_strerror(dt.err), (long long)(th_now_ms() - t0),
             dt.detail);
    ASSERT_ERR(dt.err, REDISLOCK_ENOTDURABLE);
    ASSERT(strstr(dt.detail, "0 of 1 replicas") != NULL);
    ASSERT_GE(th_now_ms() - t0, 190);
    ASSERT_EQ_INT(redislock_replicas(t), 0);
    ASSERT(redislock_token(t) == NULL);
    ad_run_for(d, sh, 200); /* the give-back, swept on the loop */
    ASSERT_KEY(p.m, KEY, NULL);
    ASSERT_OK(redislock_loop_acquire(wp, w, &o, ad_record, &dw));
    ad_run_until(d, wh, &dw.calls, 1, 3000);
    ASSERT_ERR(dw.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(w), 0);
    ASSERT_EQ_INT(th_cmd_int(p.m, "EXISTS " KEY), 1);
    ASSERT_OK(redislock_loop_release(wp, w, 0, ad_record, &dw));
    ad_run_until(d, wh, &dw.calls, 2, 3000);
    ASSERT_ERR(dw.err, REDISLOCK_OK);
    /* A strict extend: refused, the lock kept (the master has it). */
    th_server_resume(p.replica);
    ASSERT_EQ_INT(th_cmd_int(p.m, "WAIT 1 10000"), 1);
    loop_acquire_confirmed(d, sh, sp, t, &o, &dt);
    th_server_pause(p.replica);
    ASSERT_OK(redislock_loop_extend(sp, t, 20000, ad_record, &dt));
    ad_run_until(d, sh, &dt.calls, dt.calls + 1, 3000);
    ASSERT_ERR(dt.err, REDISLOCK_ENOTDURABLE);
    ASSERT(redislock_token(t) != NULL);
    /* The master has the new lease; the validity is the old one. */
    ASSERT_LT(redislock_valid_ms(t), 11000);
    th_server_resume(p.replica);
    ASSERT_OK(redislock_loop_release(sp, t, 0, ad_record, &dt));
    ad_run_until(d, sh, &dt.calls, dt.calls + 1, 3000);
    ASSERT_ERR(dt.err, REDISLOCK_OK);
    /* Renewals the stopped replica does not confirm renew nothing: the
     * lease runs out and is reported lost, on the loop. */
    ASSERT_EQ_INT(th_cmd_int(p.m, "WAIT 1 10000"), 1);
    o = th_aopts(900, 0, 0);
    o.watchdog = 1;
    o.on_lost = ad_on_lost;
    o.on_lost_arg = &gl;
    loop_acquire_confirmed(d, sh, sp, t, &o, &dt);
    th_server_pause(p.replica);
    ad_run_until(d, sh, &gl.calls, 1, 3000);
    ASSERT_EQ_INT(redislock_valid_ms(t), 0);
    th_server_resume(p.replica);
    ad_run_for(d, sh, 300);
    ASSERT_EQ_INT(gl.calls, 1);
    d->close(h);
    d->close(sh);
    d->close(wh);
    redislock_lock_free(w);
    redislock_lock_free(t);
    redislock_lock_free(l);
    redislock_client_free(lenient);
    redislock_client_free(strict);
    redislock_client_free(c);
    pair_stop(&p);
}

/* Whether the server r reaches has WAITAOF (COMMAND INFO answers nil for
 * a command it lacks). */
static int has_waitaof(redisContext *r)
{
    redisReply *rep = th_cmd(r, "COMMAND INFO WAITAOF");
    int has = rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
              rep->element[0]->type == REDIS_REPLY_ARRAY;

    freeReplyObject(rep);
    return has;
}

/* redislock_client_new on s with the WAITAOF guard (local, replicas):
 * REDISLOCK_ECONFIG, the detail holding word. */
static void aof_refused(const th_server *s, int local, int replicas,
                        const char *word)
{
    redislock_options o = {0};
    redislock_client *c = (redislock_client *)1;

    o.wait_aof_local = local;
    o.wait_aof_replicas = replicas;
    ASSERT_ERR(redislock_client_new(&c, s->unix_url, &o), REDISLOCK_ECONFIG);
    test_log("wait_aof_local %d, wait_aof_replicas %d: %s", local, replicas,
             redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), word) != NULL);
    ASSERT(c == NULL);
}

/*
 * The WAITAOF guard's check of each connection: a server without WAITAOF
 * is refused whatever is asked; with it, the master's own fsync is
 * refused with AOF off and with appendfsync no, and confirmed with
 * appendfsync always (redislock_aof's local count 1, after acquire and
 * extend). Bad values are EINVAL.
 */
void test_replicas_waitaof_probe(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_options o = {0};
    redislock_client *c = (redislock_client *)1;
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    redislock_lock *l;
    int local = -2;

    o.wait_aof_local = 2;
    ASSERT_ERR(redislock_client_new(&c, s->unix_url, &o), REDISLOCK_EINVAL);
    o.wait_aof_local = 0;
    o.wait_aof_replicas = -1;
    ASSERT_ERR(redislock_client_new(&c, s->unix_url, &o), REDISLOCK_EINVAL);
    if (!has_waitaof(r)) {
        test_log("this server has no WAITAOF: the probe says so");
        aof_refused(s, 1, 0, "no WAITAOF");
        aof_refused(s, 0, 1, "no WAITAOF");
        redisFree(r);
        th_server_stop(s);
        return;
    }
    aof_refused(s, 1, 0, "appendonly no");
    freeReplyObject(th_cmd(r, "CONFIG SET appendonly yes"));
    freeReplyObject(th_cmd(r, "CONFIG SET appendfsync no"));
    aof_refused(s, 1, 0, "appendfsync no");
    freeReplyObject(th_cmd(r, "CONFIG SET appendfsync always"));
    o.wait_aof_local = 1;
    o.wait_aof_replicas = 0;
    o.wait_replicas_timeout_ms = 2000;
    c = th_client_url(s->unix_url, &o);
    l = th_lock(c, "aof:local");
    ASSERT_OK(redislock_acquire(l, &ao));
    ASSERT_EQ_INT(redislock_aof(l, &local), 0);
    ASSERT_EQ_INT(local, 1);
    ASSERT_OK(redislock_extend(l, 20000));
    ASSERT_EQ_INT(redislock_aof(l, &local), 0);
    ASSERT_EQ_INT(local, 1);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/*
 * The replicas' fsyncs (wait_aof_replicas 1) with a replica whose AOF is
 * on: confirmed while it runs; once it is stopped, strict mode gives the
 * lock back (REDISLOCK_ENOTDURABLE naming the fsync) and lenient mode
 * keeps it with 0 confirmed.
 */
/* l of c (WAIT 1 and WAITAOF 0 1 after each write) on the event loop:
 * confirmed by both while the replica runs (an acquire and an extend);
 * with it stopped, ENOTDURABLE and the lock given back. */
static void aof_on_loop(pair *p, redislock_client *c, redislock_lock *l)
{
    const driver *d = &adapter_poll;
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    redislock_loop *lp;
    void *h = d->open(c, &lp);
    ad_done dn = {0};

    ASSERT_OK(redislock_loop_acquire(lp, l, &ao, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 1, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    ASSERT_EQ_INT(redislock_aof(l, NULL), 1);
    ASSERT_OK(redislock_loop_extend(lp, l, 20000, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 3, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    th_server_pause(p->replica);
    ASSERT_OK(redislock_loop_acquire(lp, l, &ao, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 4, 10000);
    test_log("replica stopped, on the loop: %s", dn.detail);
    ASSERT_ERR(dn.err, REDISLOCK_ENOTDURABLE);
    ad_run_for(d, h, 200); /* the give-back, swept on the loop */
    ASSERT_KEY(p->m, KEY, NULL);
    th_server_resume(p->replica);
    d->close(h);
}

void test_replicas_waitaof_confirmed(void)
{
    th_server *one = th_server_start(NULL);
    redisContext *r = th_server_redis(one);
    redislock_options o = {0};
    redislock_client *strict, *lenient;
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    redislock_lock *l, *w;
    pair p;
    int has = has_waitaof(r);

    if (!has) {
        test_log("this server has no WAITAOF: the probe says so");
        aof_refused(one, 0, 1, "no WAITAOF");
    }
    redisFree(r);
    th_server_stop(one);
    if (!has)
        return;
    p = pair_start_with("appendonly yes\nappendfsync always\n");
    o.wait_aof_replicas = 1;
    o.wait_replicas_timeout_ms = 2000;
    strict = th_client_url(p.master->unix_url, &o);
    o.wait_replicas_lenient = 1;
    o.wait_replicas_timeout_ms = 200;
    lenient = th_client_url(p.master->unix_url, &o);
    l = th_lock(strict, KEY);
    w = th_lock(lenient, KEY);
    ASSERT_OK(redislock_acquire(l, &ao));
    ASSERT_EQ_INT(redislock_aof(l, NULL), 1);
    ASSERT_OK(redislock_release(l));
    th_server_pause(p.replica);
    ASSERT_ERR(redislock_acquire(l, &ao), REDISLOCK_ENOTDURABLE);
    test_log("replica stopped, strict: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "fsync") != NULL);
    ASSERT_KEY(p.m, KEY, NULL);
    ASSERT_OK(redislock_acquire(w, &ao));
    ASSERT_EQ_INT(redislock_aof(w, NULL), 0);
    ASSERT_OK(redislock_release(w));
    th_server_resume(p.replica);
    redislock_lock_free(w);
    redislock_lock_free(l);
    redislock_client_free(lenient);
    redislock_client_free(strict);
    /* On the event loop, WAIT and WAITAOF both behind each write. */
    ASSERT_EQ_INT(th_cmd_int(p.m, "WAIT 1 10000"), 1);
    o.wait_replicas = 1;
    o.wait_replicas_lenient = 0;
    o.wait_replicas_timeout_ms = 2000;
    strict = th_client_url(p.master->unix_url, &o);
    l = th_lock(strict, KEY);
    aof_on_loop(&p, strict, l);
    redislock_lock_free(l);
    redislock_client_free(strict);
    pair_stop(&p);
}

/*
 * Two replicas with replica-priority 10 and 100, a planned failover
 * (SENTINEL FAILOVER) while one client takes a fresh key every 20 ms
 * with the strict guard. The old master takes writes until a sentinel
 * turns it into a replica; the replica that was not promoted still
 * confirms them, so wait_replicas 1 grants locks the new master never
 * had. Waiting for every replica the master has had counts the promoted
 * one too: none is lost.
 */
void test_replicas_two_planned_failover(void)
{
    fo_opts o = {FO_SENTINEL_FAILOVER, 2, REDISLOCK_REPLICAS_ALL, 0};
    fo_result r;
    char line[512];

    fo_round(&o, &r);
    fo_format(&o, &r, line, sizeof line);
    test_log("%s", line);
    ASSERT_GT(r.grants, 0);
    ASSERT_EQ_INT(r.lost, 0);
    ASSERT_GE(r.back_ms, 0);
}

/* A Sentinel setup with two replicas, a client of it with a strict
 * guard that counts the refusals a waiter waits on after
 * (REDISLOCK_EVENT_RETRY with REDISLOCK_ENOTDURABLE). */
typedef struct strict_set {
    th_sentinels *t;
    redislock_client *c;
    atomic_int refused;
} strict_set;

static void count_refusal(const redislock_event *ev, void *arg)
{
    strict_set *g = arg;

    if (ev->kind == REDISLOCK_EVENT_RETRY && ev->err == REDISLOCK_ENOTDURABLE)
        atomic_fetch_add(&g->refused, 1);
}

/* The set, its second replica frozen: the guard (wait_replicas guard)
 * refuses every lock. */
static void strict_start(strict_set *g, int guard)
{
    th_sentinel_opts so = {.replicas = 2};
    redislock_options co = {0};

    g->t = th_sentinels_start(&so);
    atomic_init(&g->refused, 0);
    co.wait_replicas = guard;
    co.wait_replicas_timeout_ms = 100;
    co.command_timeout_ms = 2000;
    co.on_event = count_refusal;
    co.on_event_arg = g;
    g->c = th_client_url(g->t->url, &co);
    th_server_pause(g->t->node[2]);
}

/* The waiter holds KEY on the master with token, which it took after
 * the guard had refused it. */
static void strict_held(strict_set *g, const char *token)
{
    redisContext *r = th_sentinels_node_redis(g->t, th_sentinels_master(g->t));
    char *v = th_cmd_str(r, NULL, "GET %s", KEY);

    test_log("the guard refused the waiter %d times", atomic_load(&g->refused));
    ASSERT_GT(atomic_load(&g->refused), 0);
    ASSERT_EQ_STR(v, token);
    free(v);
    redisFree(r);
}

/*
 * A waiter with the strict guard waits on through the guard's refusal
 * where a failover may be under way (Sentinel; the failover table's
 * planned failover with --guard all: the promoted replica no longer
 * confirms the old master's writes, the new master's replicas are
 * still attaching). Here a frozen replica makes the refusal certain:
 * each lock the waiter takes is refused and given back, and it waits on
 * (10 s), rather than end with REDISLOCK_ENOTDURABLE at once, until the
 * replica is back and the guard confirms one. A wait (0.6 s) that ends
 * while refused returns REDISLOCK_ENOTDURABLE with the guard's detail.
 */
void test_replicas_waiter_waits_through_guarded_failover(void)
{
    redislock_acquire_options o = th_aopts(5000, 10000, 0);
    redislock_acquire_options brief = th_aopts(5000, 600, 0);
    strict_set g;
    redislock_lock *b;
    th_waiter w;
    int64_t t0;

    strict_start(&g, REDISLOCK_REPLICAS_ALL);
    /* A refusal that lasts the wait is the call's outcome at its end. */
    b = th_lock(g.c, "rep:brief");
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(b, &brief), REDISLOCK_ENOTDURABLE);
    ASSERT_GE(th_now_ms() - t0, 600);
    redislock_lock_free(b);
    atomic_store(&g.refused, 0);
    th_waiter_start(&w, g.c, KEY, &o);
    t0 = th_now_ms();
    while (atomic_load(&g.refused) < 2 && th_now_ms() - t0 < 5000)
        th_sleep_ms(10);
    th_server_resume(g.t->node[2]);
    th_waiter_join_ok(&w, 8000);
    strict_held(&g, w.token);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_client_free(g.c);
    th_sentinels_stop(g.t);
}

/* The same on the event loop, with the same guard (every replica): each
 * lock the guard refused is given back on the loop (its request id
 * voided, a fresh one taken), and the waiter waits on; the lock it
 * takes was confirmed by the two replicas the master has. */
void test_replicas_loop_waiter_waits_through_guarded_failover(void)
{
    const driver *d = &adapter_poll;
    redislock_acquire_options o = th_aopts(5000, 10000, 0);
    strict_set g;
    redislock_loop *lp;
    redislock_lock *w;
    ad_done dw = {0};
    void *lh;
    int64_t t0;

    strict_start(&g, REDISLOCK_REPLICAS_ALL);
    lh = d->open(g.c, &lp);
    w = th_lock(g.c, KEY);
    ASSERT_OK(redislock_loop_acquire(lp, w, &o, ad_record, &dw));
    t0 = th_now_ms();
    while (atomic_load(&g.refused) < 2 && dw.calls == 0 &&
           th_now_ms() - t0 < 5000)
        ad_run_for(d, lh, 10);
    th_server_resume(g.t->node[2]);
    ad_run_until(d, lh, &dw.calls, 1, 8000);
    test_log("the waiter: %s (%s)", redislock_strerror(dw.err), dw.detail);
    ASSERT_ERR(dw.err, REDISLOCK_OK);
    strict_held(&g, redislock_token(w));
    ASSERT_EQ_INT(redislock_replicas(w), 2);
    ASSERT_OK(redislock_loop_release(lp, w, 0, ad_record, &dw));
    ad_run_until(d, lh, &dw.calls, 2, 5000);
    ASSERT_ERR(dw.err, REDISLOCK_OK);
    d->close(lh);
    redislock_lock_free(w);
    redislock_client_free(g.c);
    th_sentinels_stop(g.t);
}

/*
 * The guard for every replica on the event loop: a fresh client's first
 * acquire asks WAIT for one replica (it has seen none yet) and learns
 * from INFO, sent before the write, that the master has two. With the
 * second frozen, the first WAIT answers 1, and a second WAIT for both
 * follows: the acquire is still out 300 ms in, and once the replica
 * thaws it succeeds, confirmed by both (without that second WAIT it
 * would end at once with REDISLOCK_ENOTDURABLE). An extend then asks
 * for both at once; a frozen replica makes it fail with
 * REDISLOCK_ENOTDURABLE (strict: the lock is kept), as in the blocking
 * calls.
 */
void test_replicas_loop_every_replica(void)
{
    const driver *d = &adapter_poll;
    th_sentinel_opts so = {.replicas = 2};
    th_sentinels *t = th_sentinels_start(&so);
    redislock_options co = {0};
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_client *c;
    redislock_loop *lp;
    redislock_lock *l;
    ad_done dn = {0};
    void *h;

    co.wait_replicas = REDISLOCK_REPLICAS_ALL;
    co.wait_replicas_timeout_ms = 3000;
    co.command_timeout_ms = 3000;
    c = th_client_url(t->url, &co);
    h = d->open(c, &lp);
    l = th_lock(c, KEY);
    th_server_pause(t->node[2]);
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    ad_run_for(d, h, 300);
    test_log("300 ms in, one replica frozen: %d callbacks (%s)", dn.calls,
             dn.detail);
    ASSERT_EQ_INT(dn.calls, 0);
    th_server_resume(t->node[2]);
    ad_run_until(d, h, &dn.calls, 1, 5000);
    test_log("first acquire: %s (%s)", redislock_strerror(dn.err), dn.detail);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(l), 2);
    ASSERT_OK(redislock_loop_extend(lp, l, 20000, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_EQ_INT(redislock_replicas(l), 2);
    th_server_pause(t->node[2]);
    /* Longer than the last extend: an extend within the same millisecond
     * with the same TTL leaves the lease as it is, writes nothing, and
     * WAIT rightly answers 2 at once (CI, 2026-11-29). */
    ASSERT_OK(redislock_loop_extend(lp, l, 30000, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 3, 8000);
    test_log("a replica frozen, extend: %s (%s)", redislock_strerror(dn.err),
             dn.detail);
    ASSERT_ERR(dn.err, REDISLOCK_ENOTDURABLE);
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    ASSERT_OK(redislock_check(l));
    th_server_resume(t->node[2]);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 4, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    d->close(h);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_sentinels_stop(t);
}
