/*
 * Fair (FIFO) shares: a semaphore's permits and a lock's readers taken in
 * the order their callers came (redislock_acquire_options.fair with limit
 * or shared; share_fair.lua, and rl_handoff in lib.lua). These tests check
 * that a release hands the room it leaves to the queue's head in the
 * release's own script (a newcomer that tries at once finds it taken),
 * the grant order by fencing token, that readers and writers of one key
 * keep one arrival order (a writer's release lets in the run of readers
 * at the head together, up to the next writer), that a waiter that gives
 * up leaves the queue, that a mismatched limit still fails, that a
 * writer that is not fair still gets in between fair readers, and that
 * the helper keys go away.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "fsh:k"
#define BASE KEY "{" KEY "}:rl-"
#define QUEUE BASE "q"
#define WAITERS BASE "ws"
#define SETUP_MS 5000
#define FOREVER REDISLOCK_WAIT_FOREVER

static redislock_acquire_options fair_permit(int limit, int64_t wait_ms)
{
    redislock_acquire_options o = th_aopts(30000, wait_ms, 0);

    o.limit = limit;
    o.fair = 1;
    return o;
}

static redislock_acquire_options fair_reader(int64_t wait_ms)
{
    redislock_acquire_options o = th_aopts(30000, wait_ms, 0);

    o.shared = 1;
    o.fair = 1;
    return o;
}

/* Waits until the queue has n members. */
static void wait_queued(redisContext *r, long long n)
{
    int64_t deadline = th_now_ms() + SETUP_MS;
    long long got;

    while ((got = th_cmd_int(r, "ZCARD " QUEUE)) != n) {
        if (th_now_ms() >= deadline)
            test_fail_(__FILE__, __LINE__,
                       "queue has %lld waiters after %d ms, want %lld", got,
                       SETUP_MS, n);
        th_sleep_ms(2);
    }
}

/* The shares in KEY's set: its members but the kind's and a waiting
 * writer's. */
static long long shares(redisContext *r)
{
    long long n = th_cmd_int(r, "ZCARD " KEY);
    redisReply *rep = th_cmd(r, "ZSCORE " KEY " redislock:writer");

    n -= rep->type == REDIS_REPLY_STRING;
    freeReplyObject(rep);
    return n > 0 ? n - 1 : 0;
}

/* Whether KEY's sorted set has member m. */
static int has_member(redisContext *r, const char *m)
{
    redisReply *rep = th_cmd(r, "ZSCORE " KEY " %s", m);
    int yes = rep->type == REDIS_REPLY_STRING;

    freeReplyObject(rep);
    return yes;
}

/* The queue's members in order, as one string "a b c". */
static void queue_now(redisContext *r, char *out, size_t len)
{
    redisReply *rep = th_cmd(r, "ZRANGE " QUEUE " 0 -1");
    size_t i, at = 0;

    out[0] = '\0';
    for (i = 0; i < rep->elements && at < len; i++)
        at += (size_t)snprintf(out + at, len - at, "%s%s", i ? " " : "",
                               rep->element[i]->str);
    freeReplyObject(rep);
}

/* A newcomer that tries once, unfair: EHELD when the room is taken. */
static redislock_err newcomer(redislock_client *c,
                              const redislock_acquire_options *like)
{
    redislock_acquire_options o = *like;
    redislock_lock *l = th_lock(c, KEY);
    redislock_err err;

    o.fair = 0;
    o.wait_ms = 0;
    err = redislock_acquire(l, &o);
    if (err == REDISLOCK_OK)
        ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    return err;
}

#define NPERMIT 5

/* Limit 2, both permits held, five fair waiters queued one after another:
 * each release hands its permit to the head in the same script, so a
 * newcomer trying straight after finds none, and the permits go out in
 * arrival order (fencing tokens rise with it). */
void test_fair_permits_fifo_order(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = fair_permit(2, FOREVER);
    redislock_lock *h[2] = {th_lock(e.c, KEY), th_lock(e.c, KEY)};
    th_waiter w[NPERMIT];
    char q[1024];
    int i;

    ASSERT_OK(redislock_acquire(h[0], &o));
    ASSERT_OK(redislock_acquire(h[1], &o));
    for (i = 0; i < NPERMIT; i++) {
        th_waiter_start(&w[i], e.c, KEY, &o);
        wait_queued(e.r, i + 1);
    }
    queue_now(e.r, q, sizeof q);
    test_log("queue: %s", q);
    /* Each release lets exactly the next waiter in, at once. */
    for (i = 0; i < NPERMIT; i++) {
        redislock_lock *rel = i < 2 ? h[i] : w[i - 2].l;

        ASSERT_OK(redislock_release(rel));
        ASSERT_ERR(newcomer(e.c, &o), REDISLOCK_EHELD);
        th_waiter_join_ok(&w[i], 5000);
        ASSERT_EQ_INT(has_member(e.r, w[i].token), 1);
        if (i + 1 < NPERMIT)
            ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD " QUEUE), NPERMIT - i - 1);
        if (i > 0)
            ASSERT_GT(redislock_fence(w[i].l), redislock_fence(w[i - 1].l));
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_OK(redislock_release(w[3].l));
    ASSERT_OK(redislock_release(w[4].l));
    /* Room and nobody queued: a fair permit is taken in one attempt. */
    ASSERT_OK(redislock_acquire(h[0], &o));
    ASSERT_OK(redislock_release(h[0]));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "HLEN " WAITERS), 0);
    for (i = 0; i < NPERMIT; i++)
        redislock_lock_free(w[i].l);
    redislock_lock_free(h[0]);
    redislock_lock_free(h[1]);
    th_env_stop(&e);
}

/* Whether KEY is a plain lock held with token t. */
static int holds_alone(redisContext *r, const char *t)
{
    char *v = th_cmd_str(r, NULL, "GET " KEY);
    int yes = v != NULL && strcmp(v, t) == 0;

    free(v);
    return yes;
}

/* One arrival order for readers and writers: behind an exclusive holder,
 * readers R1 and R2, writer W, reader R3 queue in that order. The
 * holder's release lets R1 and R2 in together (not R3: it came after
 * W); their releases hand the key to W alone; W's release lets R3 in. A
 * reader that arrives while W waits behind the readers goes behind W. */
void test_fair_readers_writers_in_arrival_order(void)
{
    th_env e = th_env_start();
    redislock_acquire_options x = th_aopts(30000, 0, 0), wx = x;
    redislock_acquire_options ro = fair_reader(FOREVER);
    redislock_lock *holder = th_lock(e.c, KEY);
    th_waiter r1, r2, w, r3, r4;
    int64_t f[5];
    int i;

    wx.fair = 1;
    wx.wait_ms = FOREVER;
    ASSERT_OK(redislock_acquire(holder, &x));
    th_waiter_start(&r1, e.c, KEY, &ro);
    wait_queued(e.r, 1);
    th_waiter_start(&r2, e.c, KEY, &ro);
    wait_queued(e.r, 2);
    th_waiter_start(&w, e.c, KEY, &wx);
    wait_queued(e.r, 3);
    th_waiter_start(&r3, e.c, KEY, &ro);
    wait_queued(e.r, 4);

    ASSERT_OK(redislock_release(holder));
    /* In the release's script: both readers, neither W nor R3; and W's
     * wait recorded, which stops new readers that are not fair. */
    ASSERT_EQ_INT(shares(e.r), 2);
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD " KEY), 4);
    th_waiter_join_ok(&r1, 5000);
    th_waiter_join_ok(&r2, 5000);
    ASSERT_EQ_INT(has_member(e.r, r1.token), 1);
    ASSERT_EQ_INT(has_member(e.r, r2.token), 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD " QUEUE), 2);
    /* A reader now goes behind W, though readers hold the key. */
    th_waiter_start(&r4, e.c, KEY, &ro);
    wait_queued(e.r, 3);
    ASSERT_ERR(newcomer(e.c, &ro), REDISLOCK_EHELD);

    f[0] = redislock_fence(r1.l);
    f[1] = redislock_fence(r2.l);
    ASSERT_OK(redislock_release(r1.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD " QUEUE), 3);
    ASSERT_OK(redislock_release(r2.l));
    th_waiter_join_ok(&w, 5000);
    ASSERT_EQ_INT(holds_alone(e.r, w.token), 1);
    f[2] = redislock_fence(w.l);

    ASSERT_OK(redislock_release(w.l));
    th_waiter_join_ok(&r3, 5000);
    th_waiter_join_ok(&r4, 5000);
    ASSERT_EQ_INT(has_member(e.r, r3.token), 1);
    ASSERT_EQ_INT(has_member(e.r, r4.token), 1);
    f[3] = redislock_fence(r3.l);
    f[4] = redislock_fence(r4.l);
    test_log("fencing tokens R1 %lld R2 %lld W %lld R3 %lld R4 %lld",
             (long long)f[0], (long long)f[1], (long long)f[2], (long long)f[3],
             (long long)f[4]);
    for (i = 1; i < 5; i++)
        ASSERT_GT(f[i], f[i - 1]);
    ASSERT_OK(redislock_release(r3.l));
    ASSERT_OK(redislock_release(r4.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY " " QUEUE), 0);
    /* No waiter's entry nor a share's hand-off record is left; the last
     * hand-off of the key itself stays (field "~", see rl_handed) until
     * the next, or until its lease would have ended. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "HLEN " WAITERS) -
                      th_cmd_int(e.r, "HEXISTS " WAITERS " ~"),
                  0);
    redislock_lock_free(r1.l);
    redislock_lock_free(r2.l);
    redislock_lock_free(w.l);
    redislock_lock_free(r3.l);
    redislock_lock_free(r4.l);
    redislock_lock_free(holder);
    th_env_stop(&e);
}

/* A fair writer that gives up ahead of readers, while readers hold the
 * key: its leaving lets the readers behind it in at once (leave.lua),
 * rather than at their next heartbeat. A fair permit waiter that gives
 * up leaves the queue and nothing behind. */
void test_fair_share_waiter_leaves(void)
{
    th_env e = th_env_start();
    redislock_acquire_options ro = fair_reader(FOREVER), wx;
    redislock_acquire_options po = fair_permit(1, 300);
    redislock_lock *r0 = th_lock(e.c, KEY), *wl = th_lock(e.c, KEY);
    th_waiter r1, wt;
    redislock_err err;
    int64_t t0;

    ASSERT_OK(redislock_acquire(r0, &ro));
    wx = th_aopts(30000, 400, 0);
    wx.fair = 1;
    /* W waits behind R0; R1 arrives after W and queues behind it. */
    th_waiter_start_lock(&wt, wl, &wx);
    wait_queued(e.r, 1);
    th_waiter_start(&r1, e.c, KEY, &ro);
    wait_queued(e.r, 2);
    th_join_within(wt.t, 5000);
    t0 = th_now_ms();
    ASSERT_ERR(wt.err, REDISLOCK_EHELD);
    th_waiter_join_ok(&r1, 5000);
    test_log("R1 in %lld ms after W gave up",
             (long long)(r1.done_us / 1000 - t0));
    /* Not by its heartbeat (2 s after it queued): by W's leaving. */
    ASSERT_LE(r1.done_us / 1000 - t0, 1000);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_OK(redislock_release(r1.l));
    ASSERT_OK(redislock_release(r0));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);

    /* A permit waiter whose wait ends leaves no trace. */
    ASSERT_OK(redislock_acquire(r0, &po));
    err = redislock_acquire(wl, &po);
    ASSERT_ERR(err, REDISLOCK_EHELD);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "HLEN " WAITERS), 0);
    ASSERT_EQ_INT(shares(e.r), 1);
    /* A fair waiter with another limit is still told so. */
    po.limit = 3;
    ASSERT_ERR(redislock_acquire(wl, &po), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "a semaphore of limit 1") != NULL);
    ASSERT_OK(redislock_release(r0));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY " " QUEUE), 0);
    redislock_lock_free(r1.l);
    redislock_lock_free(r0);
    redislock_lock_free(wl);
    th_env_stop(&e);
}

/* The server's clock in ms. */
static long long server_ms(redisContext *r)
{
    redisReply *t = th_cmd(r, "TIME");
    long long now = strtoll(t->element[0]->str, NULL, 10) * 1000 +
                    strtoll(t->element[1]->str, NULL, 10) / 1000;

    freeReplyObject(t);
    return now;
}

/* Puts a waiter that is not there into the queue at place seq: its entry
 * (lib.lua's rl_waiter_entry) says it waits in format fmt (meta: the
 * limit of a permit) and is alive until alive_ms on the server's clock. */
static void fake_waiter(redisContext *r, const char *id, long long seq,
                        const char *fmt, const char *meta, long long alive_ms)
{
    char entry[256];

    snprintf(entry, sizeof entry, "%lld 30000 %s P 4 %zu chan%sowner-%s",
             alive_ms, fmt, strlen(meta), meta, id);
    freeReplyObject(th_cmd(r, "ZADD " QUEUE " %lld %s", seq, id));
    freeReplyObject(th_cmd(r, "HSET " WAITERS " %s %s", id, entry));
}

/* A fair newcomer that finds room hands it to the queue's head first
 * (the live waiters ahead get their permits or shares, in order), then
 * looks ahead: a reader takes none behind a writer; dead waiters are
 * dropped. One that finds no room leaves the queue at once (its wait is
 * 0). */
void test_fair_share_looks_ahead(void)
{
    th_env e = th_env_start();
    redislock_acquire_options po = fair_permit(2, 0), ro = fair_reader(0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    long long now = server_ms(e.r);

    /* Limit 2, one live waiter ahead: it is handed a permit, and the
     * other is the newcomer's. */
    fake_waiter(e.r, "ahead", 1, "permit", "2", now + 60000);
    ASSERT_OK(redislock_acquire(a, &po));
    ASSERT_EQ_INT(has_member(e.r, "owner-ahead"), 1);
    ASSERT_ERR(redislock_acquire(b, &po), REDISLOCK_EHELD);
    ASSERT_EQ_INT(has_member(e.r, "owner-ahead"), 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL " KEY " " WAITERS), 2);
    /* A dead waiter ahead is dropped: limit 1, and the room is the
     * newcomer's. */
    po.limit = 1;
    fake_waiter(e.r, "dead", 1, "permit", "1", now - 1);
    ASSERT_OK(redislock_acquire(b, &po));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE " " WAITERS), 0);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);

    /* A writer ahead: the key is free, but a fair reader waits for it,
     * and the writer gets the key. */
    fake_waiter(e.r, "writer", 1, "plain", "", now + 60000);
    ASSERT_ERR(redislock_acquire(a, &ro), REDISLOCK_EHELD);
    ASSERT(holds_alone(e.r, "owner-writer"));
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL " KEY " " WAITERS), 2);
    /* Readers ahead only: they are handed their shares, and a fair
     * reader goes in beside them. */
    fake_waiter(e.r, "reader", 1, "reader", "", now + 60000);
    ASSERT_OK(redislock_acquire(a, &ro));
    ASSERT_EQ_INT(has_member(e.r, "owner-reader"), 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_OK(redislock_release(a));
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

/* A fair reader that takes a share of KEY, holds it for READ_HOLD_MS and
 * gives it back, over and over until told to stop: two of them, the
 * second half a hold behind the first, keep the key held shared without
 * a gap (the shell's `redislock run -s --fair` in two loops), and each
 * release but one comes while the other loop holds. */
#define READ_HOLD_MS 300
#define WRITER_WAIT_MS 3000

typedef struct reader_loop {
    pthread_t t;
    redislock_lock *l;
    atomic_int *stop;
    int lag_ms;         /* before the first acquire */
    atomic_int rounds;  /* shares taken and given back */
    atomic_llong fence; /* the last share's fencing token */
    redislock_err err;  /* the first failure, if any */
} reader_loop;

static void *reader_loop_main(void *arg)
{
    reader_loop *rd = arg;
    redislock_acquire_options o = th_aopts(2000, 10000, 0);

    o.shared = 1;
    o.fair = 1;
    th_sleep_ms(rd->lag_ms);
    while (!atomic_load(rd->stop) && rd->err == REDISLOCK_OK) {
        if ((rd->err = redislock_acquire(rd->l, &o)) != REDISLOCK_OK)
            break;
        atomic_store(&rd->fence, (long long)redislock_fence(rd->l));
        th_sleep_ms(READ_HOLD_MS);
        rd->err = redislock_release(rd->l);
        atomic_fetch_add(&rd->rounds, 1);
    }
    return NULL;
}

/* Waits until each loop has gone round more times than since[i]. */
static void wait_rounds(reader_loop *rd, const int since[2], int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;

    while (atomic_load(&rd[0].rounds) <= since[0] ||
           atomic_load(&rd[1].rounds) <= since[1]) {
        if (th_now_ms() >= deadline)
            test_fail_(__FILE__, __LINE__,
                       "reader loops at %d and %d rounds after %lld ms, "
                       "want past %d and %d",
                       atomic_load(&rd[0].rounds), atomic_load(&rd[1].rounds),
                       (long long)ms, since[0], since[1]);
        th_sleep_ms(5);
    }
}

/* Fair readers in two overlapping loops never leave the key free, and
 * each release of theirs has a queued reader to hand a share to. A
 * writer that is not fair records its wait, which stops those hand-offs
 * too: it gets the key when the last share goes, woken by that release
 * (the readers' leases are 2 s; it is in long before), within its wait.
 * Its release lets the readers in again, with later fencing tokens. */
void test_fair_readers_let_writer_in(void)
{
    th_env e = th_env_start();
    redislock_acquire_options x = th_aopts(30000, WRITER_WAIT_MS, 0);
    redislock_lock *w = th_lock(e.c, KEY);
    atomic_int stop = 0;
    reader_loop rd[2];
    int since[2] = {0, 0}, i;
    int64_t t0, waited, wfence;
    redislock_err err;

    for (i = 0; i < 2; i++) {
        memset(&rd[i], 0, sizeof rd[i]);
        rd[i].l = th_lock(e.c, KEY);
        rd[i].stop = &stop;
        rd[i].lag_ms = i * READ_HOLD_MS / 2;
        ASSERT_EQ_INT(pthread_create(&rd[i].t, NULL, reader_loop_main, &rd[i]),
                      0);
    }
    wait_rounds(rd, since, SETUP_MS);
    t0 = th_now_ms();
    err = redislock_acquire(w, &x);
    waited = th_now_ms() - t0;
    test_log("writer: %s after %lld ms; reader rounds %d and %d",
             redislock_strerror(err), (long long)waited,
             atomic_load(&rd[0].rounds), atomic_load(&rd[1].rounds));
    ASSERT_OK(err);
    /* Woken by the last share's release, not at a lease's end. */
    ASSERT_LT(waited, 1500);
    wfence = redislock_fence(w);
    for (i = 0; i < 2; i++)
        since[i] = atomic_load(&rd[i].rounds);
    ASSERT_OK(redislock_release(w));
    /* No reader starves either: both loops go round again. */
    wait_rounds(rd, since, SETUP_MS);
    atomic_store(&stop, 1);
    for (i = 0; i < 2; i++) {
        th_join_within(rd[i].t, 5000);
        ASSERT_OK(rd[i].err);
        ASSERT_GT(atomic_load(&rd[i].fence), wfence);
        redislock_lock_free(rd[i].l);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY " " QUEUE), 0);
    redislock_lock_free(w);
    th_env_stop(&e);
}

/* Waits until KEY's set holds a waiting writer's record. */
static void wait_writer_recorded(redisContext *r)
{
    int64_t deadline = th_now_ms() + SETUP_MS;

    while (!has_member(r, "redislock:writer")) {
        if (th_now_ms() >= deadline)
            test_fail_(__FILE__, __LINE__, "no writer's record after %d ms",
                       SETUP_MS);
        th_sleep_ms(2);
    }
}

/* A fair writer queued behind a fair reader keeps the arrival order both
 * ways: its wait holds up neither the reader's attempts nor a hand-off to
 * it. R0 holds a share for long; writer W (not fair) waits 1 s, so fair
 * reader R1 queues, and fair writer FW behind R1. Once W's wait has
 * ended, R1 goes in beside R0 (not after R0's lease, nor after FW); their
 * releases hand the key to FW. */
void test_fair_writer_keeps_readers_ahead(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_acquire_options ro = fair_reader(FOREVER), fo = o;
    redislock_lock *r0 = th_lock(e.c, KEY);
    th_waiter w, r1, fw;
    int64_t gone;

    ro.ttl_ms = 30000;
    fo.fair = 1;
    fo.wait_ms = FOREVER;
    o.shared = 1;
    ASSERT_OK(redislock_acquire(r0, &o));
    o.shared = 0;
    o.wait_ms = 1000;
    th_waiter_start(&w, e.c, KEY, &o);
    wait_writer_recorded(e.r);
    th_waiter_start(&r1, e.c, KEY, &ro);
    wait_queued(e.r, 1);
    th_waiter_start(&fw, e.c, KEY, &fo);
    wait_queued(e.r, 2);
    th_join_within(w.t, 5000);
    ASSERT_ERR(w.err, REDISLOCK_EHELD);
    gone = th_now_ms();
    th_waiter_join_ok(&r1, 5000);
    test_log("R1 in %lld ms after W's wait ended",
             (long long)(r1.done_us / 1000 - gone));
    /* Its next attempt, at the end of W's wait (a heartbeat at most). */
    ASSERT_LE(r1.done_us / 1000 - gone, 2500);
    ASSERT_EQ_INT(shares(e.r), 2);
    ASSERT_OK(redislock_release(r0));
    ASSERT_OK(redislock_release(r1.l));
    th_waiter_join_ok(&fw, 5000);
    ASSERT_EQ_INT(holds_alone(e.r, fw.token), 1);
    ASSERT_GT(redislock_fence(fw.l), redislock_fence(r1.l));
    ASSERT_OK(redislock_release(fw.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY " " QUEUE), 0);
    redislock_lock_free(w.l);
    redislock_lock_free(r1.l);
    redislock_lock_free(fw.l);
    redislock_lock_free(r0);
    th_env_stop(&e);
}

/* A fair waiter's retry strategy of fixed pauses: p[0] after its first
 * two attempts (the first pause only subscribes to its channel, and the
 * second attempt follows at once), then p[1]. */
static int64_t pauses(void *arg, int attempt, int64_t holder_ttl_ms)
{
    const int64_t *p = arg;

    (void)holder_ttl_ms;
    return attempt <= 2 ? p[0] : p[1];
}

/* A fair writer whose attempt finds the lock held shared with every
 * share's lease over, behind another waiter, is told the key is free
 * and keeps its place: the hand-off to it, when the one ahead has had
 * the key, must reach it (the 2026-11-29 soak's overtaken writer: that
 * reply lost its place number, so the message went unheeded, the short
 * lease ran out before the next attempt, and readers queued behind it
 * went first). A share whose holder stopped (its lease ends at 300 ms)
 * holds KEY; fair writer X queues at the head, retrying at 1.5 s; fair
 * writer W behind it tries again at 0.4 s, then pauses 2 s. X takes the
 * key and releases at once: W must have it within 300 ms, long before
 * its next attempt. */
void test_fair_handoff_after_shares_ran_out(void)
{
    th_env e = th_env_start();
    int64_t xp[2] = {1500, 1500}, wp[2] = {400, 2000};
    redislock_acquire_options xo = th_aopts(30000, FOREVER, 0), wo;
    long long t;
    th_waiter x, w;
    int64_t freed;

    t = server_ms(e.r);
    ASSERT_EQ_INT(th_cmd_int(e.r,
                             "ZADD " KEY " inf redislock:shared %lld ghost",
                             t + 300),
                  2);
    ASSERT_EQ_INT(th_cmd_int(e.r, "PEXPIRE " KEY " 5000"), 1);
    xo.fair = 1;
    wo = xo;
    xo.retry_fn = pauses;
    xo.retry_arg = xp;
    wo.ttl_ms = 600;
    wo.wait_ms = 5000;
    wo.retry_fn = pauses;
    wo.retry_arg = wp;
    th_waiter_start(&x, e.c, KEY, &xo);
    wait_queued(e.r, 1);
    th_waiter_start(&w, e.c, KEY, &wo);
    wait_queued(e.r, 2);
    th_waiter_join_ok(&x, 5000);
    ASSERT_OK(redislock_release(x.l));
    freed = th_now_us();
    th_waiter_join_ok(&w, 5000);
    test_log("W in %lld ms after X's release",
             (long long)((w.done_us - freed) / 1000));
    ASSERT_LT(w.done_us - freed, 300000);
    ASSERT_GT(redislock_fence(w.l), redislock_fence(x.l));
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(x.l);
    redislock_lock_free(w.l);
    th_env_stop(&e);
}

/* pauses() that also counts the pauses planned, for a test to know that
 * the waiter is in the pause after a given attempt. */
typedef struct counted {
    int64_t p[2];
    atomic_int planned;
} counted;

static int64_t counted_pauses(void *arg, int attempt, int64_t holder_ttl_ms)
{
    counted *c = arg;

    atomic_fetch_add(&c->planned, 1);
    return pauses(c->p, attempt, holder_ttl_ms);
}

/* A fair reader queued behind a holder whose lease ends without a
 * release (no hand-off: the key is deleted here, as an expiry would) is
 * let in by the next fair reader's attempt, not left to its own next
 * heartbeat: the room goes to the queue's head first (the 2026-11-29
 * flake hunt's overtaken reader, which woke to find a non-fair writer's
 * wait and timed out, the later reader holding). A queues behind a
 * foreign holder and, after its second attempt, pauses 2 s; then the
 * holder's key goes; B, a fair reader, takes a share at once: A must
 * hold within 300 ms of B, with the earlier fencing token. */
void test_fair_reader_let_in_after_missed_handoff(void)
{
    th_env e = th_env_start();
    counted ap = {{2000, 2000}, 0};
    redislock_acquire_options ao = fair_reader(10000);
    redislock_acquire_options bo = fair_reader(5000);
    int64_t deadline = th_now_ms() + SETUP_MS;
    th_waiter a, b;

    freeReplyObject(th_cmd(e.r, "SET " KEY " ghost PX 30000"));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 1);
    ao.retry_fn = counted_pauses;
    ao.retry_arg = &ap;
    th_waiter_start(&a, e.c, KEY, &ao);
    /* The second pause is planned after the second attempt (the first
     * only subscribed). */
    while (atomic_load(&ap.planned) < 2) {
        ASSERT_LT(th_now_ms(), deadline);
        th_sleep_ms(2);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD " QUEUE), 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL " KEY), 1);
    th_waiter_start(&b, e.c, KEY, &bo);
    th_waiter_join_ok(&b, 5000);
    th_waiter_join_ok(&a, 5000);
    test_log("A in %lld ms after B",
             (long long)((a.done_us - b.done_us) / 1000));
    ASSERT_LT(a.done_us - b.done_us, 300000);
    ASSERT_LT(redislock_fence(a.l), redislock_fence(b.l));
    ASSERT_EQ_INT(shares(e.r), 2);
    ASSERT_OK(redislock_release(a.l));
    ASSERT_OK(redislock_release(b.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY " " QUEUE), 0);
    redislock_lock_free(a.l);
    redislock_lock_free(b.l);
    th_env_stop(&e);
}
