/*
 * The liveness rules (live.c) on made-up histories: each rule fires on a
 * history that breaks it and stays quiet on a near miss just inside its
 * bound or excused by a fault. Times in ms. No server.
 */
#include <string.h>

#include <redislock.h>

#include "excl/excl.h"
#include "test.h"

#define L_MAX 16
#define MS 1000

typedef struct lhist {
    excl_rec r[L_MAX];
    size_t n;
} lhist;

static excl_rec *rec(lhist *h, int kind, int pid, int64_t t0, int64_t t1)
{
    excl_rec *r = &h->r[h->n++];

    ASSERT(h->n <= L_MAX);
    memset(r, 0, sizeof *r);
    r->magic = EXCL_MAGIC;
    r->kind = (uint8_t)kind;
    r->pid = pid;
    r->acq = 1;
    r->ttl_ms = 1000;
    r->t0 = t0 * MS;
    r->t1 = t1 * MS;
    return r;
}

/* A section's acquire, called at t0 and returning x at t1 after a wait
 * of wait ms; fair or not, a share or not. */
static excl_rec *attempt(lhist *h, int pid, int64_t t0, int64_t t1, int x,
                         int64_t wait, int fair, int share)
{
    excl_rec *r = rec(h, EXCL_ATTEMPT, pid, t0, t1);

    r->x = x;
    r->belief = wait;
    r->flags = fair ? EXCL_A_FAIR : 0;
    r->share = (uint8_t)share;
    return r;
}

/* A hold: an acquire granted at once at t0, released OK at t1. */
static void hold(lhist *h, int pid, int64_t t0, int64_t t1, int fair, int share)
{
    attempt(h, pid, t0, t0 + 1, REDISLOCK_OK, 1000, fair, share);
    rec(h, EXCL_RELEASE, pid, t1 - 1, t1)->x = REDISLOCK_OK;
}

static excl_live_verdict check(const lhist *h)
{
    excl_live_verdict v;

    excl_live_check(h->r, h->n, 1, 0, "live", 0, &v);
    return v;
}

static void fault(lhist *h, int f, int pid, int64_t t0, int64_t t1)
{
    rec(h, EXCL_FAULT, pid, t0, t1)->flags = (uint8_t)f;
}

/* A false loss: told lost while the server's lease had more than the
 * drift allowance (1000 / 100 + 2 ms) plus 10 ms left; not at 22 ms, not
 * when unknown, not when the watchdog only could not reach the server. */
void test_excl_live_false_loss(void)
{
    lhist h;
    excl_rec *r;

    memset(&h, 0, sizeof h);
    r = rec(&h, EXCL_LOSS, 1, 100, 101);
    r->flags = EXCL_L_EXTEND;
    r->belief = REDISLOCK_ELOST;
    r->x = 23;
    ASSERT_EQ_INT(check(&h).false_loss, 1);
    r->x = 22;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    r->x = EXCL_PENDING;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    r->x = 500;
    r->flags = EXCL_L_CALLBACK;
    r->belief = REDISLOCK_ETIMEDOUT;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    r->belief = REDISLOCK_EEXPIRED;
    ASSERT_EQ_INT(check(&h).false_loss, 1);
    r->flags = EXCL_L_KILLED;
    ASSERT_EQ_INT(check(&h).losses, 1);
    ASSERT_EQ_INT(check(&h).false_loss, 1);
}

/* A loss told within a TTL of a server's pause or delay is not judged
 * (the renewal behind it may land after the client gave up), whatever
 * the topology; one told with no such fault near is. */
void test_excl_live_false_loss_quorum(void)
{
    lhist h;
    excl_live_verdict v;
    excl_rec *r;

    memset(&h, 0, sizeof h);
    r = rec(&h, EXCL_LOSS, 1, 2000, 2001);
    r->flags = EXCL_L_CALLBACK;
    r->belief = REDISLOCK_EEXPIRED;
    r->x = 500;
    excl_live_check(h.r, h.n, 1, 0, "redlock", 0, &v);
    ASSERT_EQ_INT(v.false_loss, 1);
    fault(&h, EXCL_F_DELAY, 0, 1500, 1800);
    excl_live_check(h.r, h.n, 1, 0, "redlock", 0, &v);
    ASSERT_EQ_INT(v.false_loss, 0);
    excl_live_check(h.r, h.n, 1, 0, "semaphore", 3, &v);
    ASSERT_EQ_INT(v.false_loss, 0);
    h.r[1].t0 = 100 * MS;
    h.r[1].t1 = 200 * MS;
    excl_live_check(h.r, h.n, 1, 0, "redlock", 0, &v);
    ASSERT_EQ_INT(v.false_loss, 1);
}

/* A set's loss, one record a key told at one moment: false only when
 * every key kept the lease (a set is lost with any of its keys), and
 * counted once. */
void test_excl_live_false_loss_set(void)
{
    lhist h;
    excl_rec *a, *b;

    memset(&h, 0, sizeof h);
    a = rec(&h, EXCL_LOSS, 1, 100, 101);
    b = rec(&h, EXCL_LOSS, 1, 100, 102);
    a->set = b->set = 3;
    b->key = 1;
    a->flags = b->flags = EXCL_L_CALLBACK;
    a->belief = b->belief = REDISLOCK_EEXPIRED;
    a->x = 500;
    b->x = EXCL_PENDING;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    ASSERT_EQ_INT(check(&h).losses, 1);
    b->x = 5;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    b->x = 400;
    ASSERT_EQ_INT(check(&h).false_loss, 1);
}

/* A late grant: a waiter that promised a prompt grant, behind a holder
 * gone at 100 ms, granted at 2900 ms; not when granted at 1000 ms (free
 * for 900 ms < B), nor when it made no such promise, nor when a stop of
 * the waiter covered the free time. */
void test_excl_live_late_grant(void)
{
    lhist h;
    excl_rec *w;

    memset(&h, 0, sizeof h);
    hold(&h, 1, 0, 100, 0, 0);
    w = attempt(&h, 2, 50, 2900, REDISLOCK_OK, 3000, 0, 0);
    w->flags = EXCL_A_PROMPT;
    ASSERT_EQ_INT(check(&h).late_grant, 1);
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    w->t1 = 1000 * MS;
    ASSERT_EQ_INT(check(&h).late_grant, 0);
    w->t1 = 2900 * MS;
    w->flags = 0;
    ASSERT_EQ_INT(check(&h).late_grant, 0);
    w->flags = EXCL_A_PROMPT;
    fault(&h, EXCL_F_STOP_WAITER, 2, 300, 2000);
    ASSERT_EQ_INT(check(&h).late_grant, 0);
}

/* A missed grant: a waiter that timed out at 3000 ms though the key was
 * free from 100 ms on; not when the holder kept it until 2100 ms (free
 * for 900 ms < B), nor when a server pause or a fair waiter queued ahead
 * covered the free time, nor a waiter that tried once. */
void test_excl_live_missed_grant(void)
{
    lhist h;
    excl_rec *w;

    memset(&h, 0, sizeof h);
    hold(&h, 1, 0, 100, 0, 0);
    w = attempt(&h, 2, 50, 3000, REDISLOCK_EHELD, 2950, 0, 0);
    ASSERT_EQ_INT(check(&h).missed_grant, 1);
    h.r[1].t1 = 2100 * MS;
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    h.r[1].t1 = 100 * MS;
    w->belief = 0;
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    w->belief = 2950;
    fault(&h, EXCL_F_PAUSE_SERVER, 0, 900, 2000);
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    /* A stop of another worker excuses nothing; of the waiter itself,
     * it does. */
    h.r[h.n - 1].flags = EXCL_F_STOP_WAITER;
    h.r[h.n - 1].pid = 3;
    ASSERT_EQ_INT(check(&h).missed_grant, 1);
    h.r[h.n - 1].pid = 2;
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    /* A fair waiter queued ahead until 2500 ms (when its wait was
     * cancelled) holds a fair one back. */
    h.n--;
    w->flags = EXCL_A_FAIR;
    attempt(&h, 3, 20, 2500, REDISLOCK_ECANCELED, 2480, 1, 0);
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    /* Queued behind the waiter, it does not. */
    h.r[h.n - 1].t0 = 60 * MS;
    ASSERT_EQ_INT(check(&h).missed_grant, 1);
    /* A holder killed (never released) keeps the key for 3 TTLs plus
     * 2.5 s past its believed end. */
    memset(&h, 0, sizeof h);
    attempt(&h, 1, 0, 1, REDISLOCK_OK, 0, 0, 0);
    rec(&h, EXCL_CLAIM, 1, 1, 500);
    attempt(&h, 2, 50, 9000, REDISLOCK_EHELD, 8950, 0, 0);
    ASSERT_EQ_INT(check(&h).missed_grant, 1);
    h.r[2].t1 = 7000 * MS;
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    /* A killed holder of an owner id (pid 1, counted until 6000 ms) whose
     * owner re-enters at 5500 ms (pid 3, believed until 7000 ms) and
     * releases: the dead hold keeps the key until the re-entry's lease
     * ends (seen in excl_loop_reentrant_shared, 2026-11-29), so a waiter
     * that gave up at 7900 ms missed nothing; without an owner id the
     * same history is a missed grant. */
    memset(&h, 0, sizeof h);
    attempt(&h, 1, 0, 1, REDISLOCK_OK, 0, 0, 0);
    rec(&h, EXCL_CLAIM, 1, 1, 500)->group = 42;
    attempt(&h, 3, 5500, 5501, REDISLOCK_OK, 0, 0, 0);
    rec(&h, EXCL_CLAIM, 3, 5501, 7000)->group = 42;
    rec(&h, EXCL_RELEASE, 3, 5599, 5600)->x = REDISLOCK_OK;
    attempt(&h, 2, 5700, 7900, REDISLOCK_EHELD, 2200, 0, 0);
    ASSERT_EQ_INT(check(&h).missed_grant, 0);
    h.r[1].group = h.r[3].group = (uint64_t)1 << 63;
    ASSERT_EQ_INT(check(&h).missed_grant, 1);
}

/* A writer starved: it timed out at 3000 ms while shares held the key
 * all along and a share asked for at 1000 ms was granted. Not when no
 * share came after it (beyond 300 ms), nor when an exclusive holder had
 * the key for half its wait. */
void test_excl_live_starved_writer(void)
{
    lhist h;
    excl_rec *late;

    memset(&h, 0, sizeof h);
    hold(&h, 1, 0, 1500, 0, 1);
    attempt(&h, 2, 10, 3000, REDISLOCK_EHELD, 2990, 0, 0);
    hold(&h, 3, 1000, 3100, 1, 1);
    late = &h.r[3];
    ASSERT_EQ_INT(check(&h).starved, 1);
    late->t0 = 300 * MS;
    ASSERT_EQ_INT(check(&h).starved, 0);
    late->t0 = 1000 * MS;
    hold(&h, 4, 1500, 3000, 0, 0);
    ASSERT_EQ_INT(check(&h).starved, 0);
    /* Excused by a server pause over the same time. */
    h.n -= 2;
    ASSERT_EQ_INT(check(&h).starved, 1);
    fault(&h, EXCL_F_PAUSE_SERVER, 0, 1500, 3000);
    ASSERT_EQ_INT(check(&h).starved, 0);
}

/* A fair waiter overtaken: it timed out at 4000 ms though a fair waiter
 * that came at 1000 ms was granted at 2000 ms. Not when that one came
 * within 300 ms of it, nor when it was granted after the timeout or in
 * its last 300 ms, nor when the waiter was stopped meanwhile (out of the
 * queue). */
void test_excl_live_starved_fair(void)
{
    lhist h;
    excl_rec *c;

    memset(&h, 0, sizeof h);
    hold(&h, 1, 0, 3500, 1, 0);
    attempt(&h, 2, 10, 4000, REDISLOCK_EHELD, 3990, 1, 0);
    c = attempt(&h, 3, 1000, 2000, REDISLOCK_OK, 3000, 1, 0);
    ASSERT_EQ_INT(check(&h).starved, 1);
    c->t0 = 300 * MS;
    ASSERT_EQ_INT(check(&h).starved, 0);
    c->t0 = 1000 * MS;
    c->t1 = 4001 * MS;
    ASSERT_EQ_INT(check(&h).starved, 0);
    /* Granted within 300 ms of the waiter's deadline (4000 ms): the
     * hand-off may have found it gone. */
    c->t1 = 3701 * MS;
    ASSERT_EQ_INT(check(&h).starved, 0);
    c->t1 = 3699 * MS;
    ASSERT_EQ_INT(check(&h).starved, 1);
    c->t1 = 2000 * MS;
    fault(&h, EXCL_F_STOP_WAITER, 2, 500, 1500);
    ASSERT_EQ_INT(check(&h).starved, 0);
    /* A delay or a pause while the waiter joined (its first 300 ms) may
     * have held its join back past the later one's: excused. One that
     * ended before the waiter called, or began after it joined, is
     * not. */
    h.n--;
    fault(&h, EXCL_F_DELAY, 0, 5, 600);
    ASSERT_EQ_INT(check(&h).starved, 0);
    h.r[h.n - 1].flags = EXCL_F_PAUSE_SERVER;
    ASSERT_EQ_INT(check(&h).starved, 0);
    h.r[h.n - 1].t1 = 9 * MS;
    ASSERT_EQ_INT(check(&h).starved, 1);
    h.r[h.n - 1].flags = EXCL_F_DELAY;
    h.r[h.n - 1].t0 = 200 * MS;
    h.r[h.n - 1].t1 = 900 * MS;
    ASSERT_EQ_INT(check(&h).starved, 0);
    h.r[h.n - 1].t0 = 311 * MS;
    ASSERT_EQ_INT(check(&h).starved, 1);
    /* Overtaken by a waiter that is not fair: allowed. */
    h.n--;
    c->flags = 0;
    ASSERT_EQ_INT(check(&h).starved, 0);
}

/* Around a master killed at 1000 ms and replaced at 3000 ms: a waiter
 * that failed with ECONNECT at 2000 ms, 18.5 s of its wait to go, gave
 * up; not one with under a second left. A lock must be taken by 8000 ms
 * (R after the new master) when the run went on that long; an acquire
 * begun after that must not fail for want of a server. */
void test_excl_live_failover(void)
{
    lhist h;
    excl_rec *w, *g;

    memset(&h, 0, sizeof h);
    fault(&h, EXCL_F_KILL_MASTER, 0, 1000, 3000);
    g = attempt(&h, 1, 3100, 3200, REDISLOCK_OK, 20000, 0, 0);
    w = attempt(&h, 2, 500, 2000, REDISLOCK_ECONNECT, 20000, 0, 0);
    ASSERT_EQ_INT(check(&h).failover, 1);
    w->belief = 2400;
    ASSERT_EQ_INT(check(&h).failover, 0);
    /* The first grant at 9000 ms, the run going on to 9500 ms. */
    g->t0 = 8500 * MS;
    g->t1 = 9000 * MS;
    rec(&h, EXCL_WRITE, 1, 9400, 9500);
    ASSERT_EQ_INT(check(&h).failover, 1);
    g->t1 = 7900 * MS;
    g->t0 = 7800 * MS;
    ASSERT_EQ_INT(check(&h).failover, 0);
    /* An acquire begun at 8100 ms that cannot connect. */
    attempt(&h, 3, 8100, 8200, REDISLOCK_ECONNECT, 5000, 0, 0);
    ASSERT_EQ_INT(check(&h).failover, 1);
    h.r[h.n - 1].x = REDISLOCK_EHELD;
    ASSERT_EQ_INT(check(&h).failover, 0);
}

/* A loss told just after the holder's own process was stopped (past its
 * validity) is not judged: its last renewal may have run long after it
 * was sent, so the server's lease outlives the validity by more than the
 * drift allowance. A stop the nemesis meant for a waiter stops a process
 * that may hold by then, and counts alike. Another process's stop, or
 * one long before, does not excuse it. */
void test_excl_live_false_loss_holder_stopped(void)
{
    lhist h;
    excl_rec *r;

    memset(&h, 0, sizeof h);
    r = rec(&h, EXCL_LOSS, 1, 2000, 2001);
    r->flags = EXCL_L_CALLBACK;
    r->belief = REDISLOCK_EEXPIRED;
    r->x = 107;
    ASSERT_EQ_INT(check(&h).false_loss, 1);
    fault(&h, EXCL_F_STOP_HOLDER, 2, 1200, 1990);
    ASSERT_EQ_INT(check(&h).false_loss, 1);
    h.r[1].pid = 1;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    h.r[1].flags = EXCL_F_STOP_WAITER;
    ASSERT_EQ_INT(check(&h).false_loss, 0);
    h.r[1].t0 = 100 * MS;
    h.r[1].t1 = 200 * MS;
    ASSERT_EQ_INT(check(&h).false_loss, 1);
}
