/*
 * The modes: for each, where the locks live, which faults the nemesis may
 * inject, and what one section does (its pick function draws TTLs, waits,
 * holds and actions from the worker's seeded generator).
 */
#include <stdio.h>
#include <string.h>

#include "excl_int.h"

#define F(x) (1u << EXCL_F_##x)
/* Faults every single-server mode can take. */
#define F_PROCS (F(STOP_HOLDER) | F(STOP_WAITER) | F(KILL_HOLDER))
#define F_ALL1 (F_PROCS | F(PAUSE_SERVER) | F(RACE))

const char *const excl_fault_names[EXCL_F_COUNT] = {
    "stop-holder", "stop-waiter", "kill-holder",       "pause-server",
    "delay",       "race",        "kill-master",       "sentinel-failover",
    "stop-master", "cluster-kill",      "cluster-failover",
    "unplanned-failover"};

int excl_fault_failover(int f)
{
    return f == EXCL_F_KILL_MASTER || f == EXCL_F_SENTINEL_FAILOVER ||
           f == EXCL_F_STOP_MASTER || f == EXCL_F_CLUSTER_KILL ||
           f == EXCL_F_CLUSTER_FAILOVER || f == EXCL_F_UNPLANNED;
}

static int64_t rnd(excl_worker *w, int64_t lo, int64_t hi)
{
    return excl_rng_range(&w->rng, lo, hi);
}

/* How long to hold: a short or a middling hold, until just before the
 * believed end, just past it (the release comes too late), or until the
 * moment waiters blocked in BLPOP for the holder's TTL time out. */
static void hold(excl_worker *w, excl_section *s)
{
    int64_t p = rnd(w, 0, 99);

    if (p < 30) {
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 0, 30);
    } else if (p < 50) {
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, s->o.ttl_ms / 10, s->o.ttl_ms * 6 / 10);
    } else if (p < 70) {
        s->hold = EXCL_H_EDGE;
        s->hold_ms = rnd(w, 0, 15);
    } else if (p < 80) {
        s->hold = EXCL_H_OVER;
        s->hold_ms = rnd(w, 0, 40);
    } else {
        s->hold = EXCL_H_BLPOP;
        s->hold_ms = rnd(w, -15, 15);
    }
}

/* The parts every section has: a key, a TTL, a bounded wait, a hold and
 * one or two fenced writes. */
static void basic(excl_worker *w, excl_section *s, int64_t ttl_lo,
                  int64_t ttl_hi)
{
    s->key = (int)rnd(w, 0, w->m->nkeys - 1);
    s->o.ttl_ms = rnd(w, ttl_lo, ttl_hi);
    s->o.wait_ms = rnd(w, 1000, 3000);
    s->writes = (int)rnd(w, 1, 2);
    hold(w, s);
}

static const char *const hold_names[] = {"for", "edge", "over", "blpop"};

/* The label the report shows: how the section took the lock. */
static void label(excl_section *s, const char *kind)
{
    char r[32] = "";

    if (s->o.retry_delay_ms > 0)
        snprintf(r, sizeof r, " r%lld", (long long)s->o.retry_delay_ms);
    snprintf(s->what, sizeof s->what, "%s%s%s t%lld %s%lld", kind,
             s->o.fair ? " fair" : "", r, (long long)s->o.ttl_ms,
             hold_names[s->hold], (long long)s->hold_ms);
}

static void pick_default(excl_worker *w, excl_section *s)
{
    basic(w, s, 150, 600);
    label(s, "plain");
}

static void pick_meta(excl_worker *w, excl_section *s)
{
    basic(w, s, 150, 600);
    snprintf(s->meta, sizeof s->meta, "pid %d section %u", w->pid, w->acq + 1);
    s->o.metadata = s->meta;
    if (excl_rng_chance(&w->rng, 50))
        s->hold_after = rnd(w, 10, 200);
    label(s, s->hold_after ? "meta+ha" : "meta");
}

/* Fair, waiting the default way: blocked for the holder's TTL, at most a
 * heartbeat (2 s); holds that end near a heartbeat. */
static void pick_fair(excl_worker *w, excl_section *s)
{
    basic(w, s, 1000, 3000);
    s->o.fair = 1;
    s->o.wait_ms = rnd(w, 2500, 6000);
    if (excl_rng_chance(&w->rng, 40)) {
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 1850, 2150);
        if (s->hold_ms + 100 > s->o.ttl_ms)
            s->o.ttl_ms = s->hold_ms + rnd(w, 100, 900);
    }
    label(s, "plain");
}

/* Fair with retry delays up to 250 ms: waiters sleep between attempts
 * instead of blocking, and pick a hand-off up by their next attempt. TTLs
 * above the 5 s alive window too. */
static void pick_fair_retry_short(excl_worker *w, excl_section *s)
{
    static const int64_t delays[] = {20, 100, 200};

    basic(w, s, 300, 1000);
    s->o.fair = 1;
    s->o.retry_delay_ms = delays[rnd(w, 0, 2)];
    if (excl_rng_chance(&w->rng, 50)) {
        s->o.ttl_ms = rnd(w, 8000, 10000);
        s->o.wait_ms = rnd(w, 3000, 6000);
        if (s->hold != EXCL_H_FOR || excl_rng_chance(&w->rng, 50)) {
            s->hold = EXCL_H_FOR;
            s->hold_ms = rnd(w, 20, 300);
        }
    }
    label(s, "plain");
}

/* Issue 11's case: fair, retry delay 300 ms, TTL 1 s, no faults. */
static void pick_fair_retry_300(excl_worker *w, excl_section *s)
{
    basic(w, s, 1000, 1000);
    s->o.fair = 1;
    s->o.retry_delay_ms = 300;
    label(s, "plain");
}

/* Re-entrant with this process's own owner id: re-entries while held,
 * with shorter and longer TTLs than the first. */
static void pick_reentrant(excl_worker *w, excl_section *s)
{
    basic(w, s, 200, 1500);
    s->o.reentrant = 1;
    snprintf(s->owner, sizeof s->owner, "%s", w->owner);
    s->o.owner = s->owner;
    s->nested = (int)rnd(w, 0, 2);
    s->nested_ttl[0] = rnd(w, 100, 2000);
    s->nested_ttl[1] = rnd(w, 100, 2000);
    if (excl_rng_chance(&w->rng, 30)) {
        snprintf(s->meta, sizeof s->meta, "re %d", w->pid);
        s->o.metadata = s->meta;
    }
    label(s, s->nested ? "re+nest" : "re");
}

/* Re-entrant, two processes per owner id: both may hold at once, with
 * TTLs as different as 1.5 s and 0.15 s. One hold in three lasts past the
 * lease: its release comes late, when the other process of its owner id
 * may hold the key afresh (a later life of the key, which the release
 * must not touch). */
static void pick_reentrant_shared(excl_worker *w, excl_section *s)
{
    int64_t p = rnd(w, 0, 3);

    basic(w, s, 150, 600);
    if (p == 0)
        s->o.ttl_ms = 1500;
    else if (p == 1)
        s->o.ttl_ms = 300;
    s->o.reentrant = 1;
    s->shared = 1;
    snprintf(s->owner, sizeof s->owner, "shared-%d", w->idx / 2);
    s->o.owner = s->owner;
    s->o.wait_ms = rnd(w, 500, 3000);
    s->hold = EXCL_H_FOR;
    p = rnd(w, 0, 2);
    if (p == 0)
        s->hold_ms = rnd(w, 0, 30);
    else if (p == 1)
        s->hold_ms = rnd(w, 20, s->o.ttl_ms * 8 / 10);
    else
        s->hold_ms = s->o.ttl_ms + rnd(w, 0, 400);
    /* Idle now and then, or the two processes of an owner id keep the
     * lock between them and nobody else gets it. */
    s->rest_ms = excl_rng_chance(&w->rng, 30) ? rnd(w, 0, 300) : 0;
    label(s, "shared");
}

static void pick_extend(excl_worker *w, excl_section *s)
{
    basic(w, s, 200, 800);
    if (excl_rng_chance(&w->rng, 40)) {
        snprintf(s->meta, sizeof s->meta, "x %d", w->pid);
        s->o.metadata = s->meta;
    }
    s->extends = (int)rnd(w, 1, 3);
    s->extend_ttl[0] = rnd(w, 50, 200);
    s->extend_ttl[1] = rnd(w, s->o.ttl_ms, 3 * s->o.ttl_ms);
    s->extend_ttl[2] = rnd(w, 50, 3 * s->o.ttl_ms);
    if (s->hold == EXCL_H_FOR)
        s->hold_ms = rnd(w, 0, 2 * s->o.ttl_ms);
    label(s, s->o.metadata ? "hash+ext" : "plain+ext");
}

static void pick_adopt(excl_worker *w, excl_section *s)
{
    basic(w, s, 200, 800);
    s->adopt = (int)rnd(w, 1, 2);
    s->extend_ttl[2] = excl_rng_chance(&w->rng, 50)
                           ? rnd(w, 50, s->o.ttl_ms)
                           : rnd(w, s->o.ttl_ms, 3 * s->o.ttl_ms);
    label(s, s->adopt == 1 ? "adopt+rel" : "adopt+ext");
}

/* The caller's retry strategies, with short and long delays. */
static void pick_retry(excl_worker *w, excl_section *s)
{
    static const int64_t delays[] = {20, 300, 20, 20, 100};
    static const redislock_retry kinds[] = {
        REDISLOCK_RETRY_CONSTANT, REDISLOCK_RETRY_CONSTANT,
        REDISLOCK_RETRY_LINEAR, REDISLOCK_RETRY_EXPONENTIAL,
        REDISLOCK_RETRY_CONSTANT};
    int k = (int)rnd(w, 0, 4);

    basic(w, s, 150, 800);
    s->o.retry = kinds[k];
    s->o.retry_delay_ms = delays[k];
    s->o.retry_max_delay_ms = k == 3 ? 300 : 0;
    s->o.fail_fast = excl_rng_chance(&w->rng, 15);
    s->o.max_attempts = excl_rng_chance(&w->rng, 15) ? (int)rnd(w, 2, 8) : 0;
    label(s, s->o.fail_fast ? "retry ff" : "retry");
}

/* The watchdog renews; holds last up to three TTLs. */
static void pick_watchdog(excl_worker *w, excl_section *s)
{
    basic(w, s, 300, 300);
    if (excl_rng_chance(&w->rng, 50))
        s->o.ttl_ms = 1000;
    s->o.watchdog = 1;
    /* The believed end keeps moving: holds are timed from the start. */
    s->hold = EXCL_H_FOR;
    s->hold_ms = rnd(w, s->o.ttl_ms / 5, 2 * s->o.ttl_ms);
    label(s, "watchdog");
}

/* Leader election: a campaign for the key with a value, the lease
 * renewed as the watchdog's, proclaims while leading (they are the
 * section's extends: owner-checked writes that must fail once the lease
 * has gone), then a resignation. */
static void pick_elect(excl_worker *w, excl_section *s)
{
    pick_watchdog(w, s);
    snprintf(s->meta, sizeof s->meta, "pid %d term %u", w->pid, w->acq + 1);
    s->elect = 1;
    s->extends = (int)rnd(w, 0, 2);
    label(s, "elect");
}

/* A mix, for the modes that are about where the locks live. */
static void pick_mix(excl_worker *w, excl_section *s, int fair_ok)
{
    int64_t p = rnd(w, 0, 99);

    basic(w, s, 200, 1000);
    if (p < 25 && fair_ok) {
        s->o.fair = 1;
        s->o.retry_delay_ms = excl_rng_chance(&w->rng, 50) ? 100 : 0;
        label(s, "plain");
    } else if (p < 45) {
        s->o.watchdog = 1;
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 0, 2 * s->o.ttl_ms);
        label(s, "watchdog");
    } else if (p < 60) {
        s->o.reentrant = 1;
        snprintf(s->owner, sizeof s->owner, "%s", w->owner);
        s->o.owner = s->owner;
        s->nested = (int)rnd(w, 0, 1);
        s->nested_ttl[0] = rnd(w, 100, 1500);
        label(s, "re");
    } else {
        s->o.retry_delay_ms = excl_rng_chance(&w->rng, 50) ? 50 : 0;
        label(s, "plain");
    }
}

/* Whether a section of a mode that mixes fair and unfair waiters (one in
 * two fair) or of an all-fair mode ("_fair") waits in the queue. */
static int fair_share(excl_worker *w)
{
    return strstr(w->m->name, "_fair") != NULL || excl_rng_chance(&w->rng, 50);
}

/* A permit of a semaphore of limit 3 (the mode's), plain or renewed by
 * the watchdog, fair or not; no fenced writes, since holders overlap by
 * design. */
static void pick_semaphore(excl_worker *w, excl_section *s)
{
    basic(w, s, 150, 600);
    s->o.limit = w->m->limit;
    s->o.fair = fair_share(w);
    s->writes = 0;
    if (excl_rng_chance(&w->rng, 30)) {
        s->o.watchdog = 1;
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 0, 2 * s->o.ttl_ms);
    }
    label(s, s->o.watchdog ? "permit wd" : "permit");
}

/*
 * A shared (read-write) lock: two sections in three take a share (a
 * reader), the rest the key itself (a writer). Shares overlap one
 * another and never a writer, which the checker tells by each belief's
 * kind. Sections wait (a waiting writer stops new readers until it gets
 * the key) or, one in ten, try once; some are renewed by the watchdog.
 * One section in two waits in the fair queue (readers and writers in
 * arrival order), every one in the "_fair" mode. Both kinds make fenced
 * writes (see fenced_write in worker.c).
 */
static void pick_shared(excl_worker *w, excl_section *s)
{
    char kind[24];

    basic(w, s, 150, 600);
    s->o.shared = rnd(w, 0, 2) < 2;
    s->o.fair = fair_share(w);
    if (excl_rng_chance(&w->rng, 10))
        s->o.wait_ms = 0;
    if (excl_rng_chance(&w->rng, 30)) {
        s->o.watchdog = 1;
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 0, 2 * s->o.ttl_ms);
    }
    snprintf(kind, sizeof kind, "%s%s%s", s->o.shared ? "share" : "excl",
             s->o.watchdog ? " wd" : "", s->o.wait_ms == 0 ? " once" : "");
    label(s, kind);
}

/*
 * Sets of keys taken all or none (redislock_lock_new_multi) among the
 * mode's 3 keys: three sections in five take a pair (each of the three
 * pairs alike), the rest one key: a set of one, or a plain lock (some of
 * them fair), so that sets contend with one another on a shared key and
 * with plain locks, and a set's release hands a key to a fair waiter.
 * Sets wait behind the key that refused them, or one in ten try once;
 * some are renewed by the watchdog or extended; every section makes
 * fenced writes (a set to each of its keys' resources, see fenced_write
 * in worker.c). Re-entry, owners, metadata, fairness and hold-after are
 * not for sets (EINVAL).
 */
static void pick_set(excl_worker *w, excl_section *s)
{
    int64_t p = rnd(w, 0, 99);
    int a, b;
    char kind[24];

    basic(w, s, 150, 600);
    if (p < 60) {
        a = (int)rnd(w, 0, 2);
        b = (a + (int)rnd(w, 1, 2)) % 3;
        s->set = (1u << a) | (1u << b);
        s->key = a < b ? a : b;
    } else if (p < 75) {
        s->set = 1u << s->key;
    } else if (excl_rng_chance(&w->rng, 40)) {
        s->o.fair = 1;
        s->o.retry_delay_ms = excl_rng_chance(&w->rng, 50) ? 100 : 0;
    }
    if (!s->o.fair && excl_rng_chance(&w->rng, 10))
        s->o.wait_ms = 0;
    if (excl_rng_chance(&w->rng, 25)) {
        s->o.watchdog = 1;
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 0, 2 * s->o.ttl_ms);
    } else if (excl_rng_chance(&w->rng, 20)) {
        s->extends = (int)rnd(w, 1, 2);
        s->extend_ttl[0] = rnd(w, 50, 200);
        s->extend_ttl[1] = rnd(w, s->o.ttl_ms, 3 * s->o.ttl_ms);
    }
    snprintf(kind, sizeof kind, "%s%s%s%s",
             s->set == 0                    ? "plain"
             : (s->set & (s->set - 1)) != 0 ? "set2"
                                            : "set1",
             s->o.watchdog ? " wd" : "", s->extends ? "+ext" : "",
             s->o.wait_ms == 0 ? " once" : "");
    label(s, kind);
}

/*
 * Issue 35's second case: fair readers that keep a share held all the
 * time (holds of 300 ms, no rest, staggered by the scheduler), and one
 * writer (worker 0) that does not queue and waits 3 s. A waiting writer
 * stops new readers, fair or not, so it must get the key well within
 * its wait; the starvation rule fails the run when shares asked for
 * after it came keep being granted until it gives up.
 */
static void pick_shared_fair_writer(excl_worker *w, excl_section *s)
{
    s->key = 0;
    s->o.ttl_ms = 2000;
    s->o.wait_ms = 3000;
    s->writes = 1;
    s->hold = EXCL_H_FOR;
    if (w->idx == 0) {
        s->hold_ms = rnd(w, 0, 30);
        s->rest_ms = rnd(w, 100, 300);
        label(s, "excl");
        return;
    }
    s->o.shared = 1;
    s->o.fair = 1;
    s->hold_ms = rnd(w, 250, 350);
    label(s, "share");
}

/*
 * Issue 35's first case, through the CLI: `redislock run --fair` with a
 * 30 s TTL (renewed every 10 s) and a command that holds for 3.5 to
 * 4.5 s, past the validity a fair hand-off first reports (about 3 s);
 * the first holder holds briefly, so that the hand-offs start at once. The
 * watchdog renews the lease at once after a hand-off, so a command killed then
 * (exit 75) is a false loss: the server still kept the lease for it.
 */
static void pick_cli_fair(excl_worker *w, excl_section *s)
{
    s->key = 0;
    s->o.ttl_ms = 30000;
    s->o.wait_ms = 15000;
    s->o.fair = 1;
    s->hold = EXCL_H_FOR;
    /* Worker 0 starts the chain with a short hold; every other hold
     * comes by a hand-off and outlasts its first validity. */
    s->hold_ms = w->idx == 0 && w->acq == 0 ? rnd(w, 200, 600)
                                            : rnd(w, 3500, 4500);
    label(s, "cli run");
}

/*
 * Issue 35's fourth case: plain locks through redis+sentinel:// with
 * waits of 20 s, far longer than a failover (the master down after 1 s,
 * a vote, the replica promoted), and short holds, so that when the
 * nemesis kills the master some workers wait and one may hold. Waiters
 * must wait through the failover, and locks be taken again soon after.
 */
static void pick_sentinel(excl_worker *w, excl_section *s)
{
    s->key = 0;
    s->o.ttl_ms = rnd(w, 1000, 2000);
    s->o.wait_ms = 20000;
    s->writes = 1;
    s->hold = EXCL_H_FOR;
    s->hold_ms = rnd(w, 100, 600);
    label(s, "plain");
}

/*
 * Issue 35's failover cases: locks through redis+sentinel:// (or a
 * cluster's seeds) renewed by
 * the watchdog (TTL 1 to 1.5 s, renewed every third of it) and held for
 * up to two TTLs, with waits of 20 s, so that when the master is
 * replaced some workers wait and one holds across the switch. Its
 * renewals must follow the new master: kept there when the key was
 * replicated, told lost at the next one when not (without the guard).
 */
static void pick_failover(excl_worker *w, excl_section *s)
{
    s->key = 0;
    s->o.ttl_ms = rnd(w, 1000, 1500);
    s->o.wait_ms = 20000;
    s->o.watchdog = 1;
    s->writes = 1;
    s->hold = EXCL_H_FOR;
    s->hold_ms = rnd(w, 100, 2 * s->o.ttl_ms);
    /* Where the strict guard leaves no section after the failover, each
     * worker's first hold is short: the run has sections before it. */
    if (w->m->guard == 1 && w->acq == 0)
        s->hold_ms = rnd(w, 100, 500);
    label(s, "watchdog");
}

/* A waiter of the modes held to the late-grant rule (live.c): no
 * strategy of its own, a short hold, a short rest. */
static void prompt_waiter(excl_worker *w, excl_section *s, int64_t ttl_lo,
                          int64_t ttl_hi)
{
    basic(w, s, ttl_lo, ttl_hi);
    s->prompt = 1;
    /* Released in time: a late release is "possibly held" for seconds,
     * which would hide the late grants these modes are for. */
    s->hold = EXCL_H_FOR;
    s->hold_ms = rnd(w, 0, 100);
    /* Rests, so that the key is often free: a waiter that slept through
     * a release then leaves it free, which the rule sees. */
    s->rest_ms = rnd(w, 0, 300);
    label(s, "plain");
}

/* The holder of those modes: a 2-6 s lease, then a rest of 1.3-2 s,
 * so that the key it gives back stays free for longer than the
 * liveness check's bound unless the waiter takes it. */
static void rare_holder(excl_worker *w, excl_section *s)
{
    basic(w, s, 2000, 6000);
    s->hold = EXCL_H_FOR;
    s->rest_ms = rnd(w, 1300, 2000);
}

/* Worker 0 holds as another library does (foreign.c): leases of 2-6 s,
 * mostly given back after 100-600 ms (long enough for its waiters to
 * have their reads tracked), so that a waiter that missed the
 * release would wait out the lease, past its own wait of 1-3 s; now and
 * then held past the lease, for the expiry's notice. It rests 1.5-3 s
 * after, so that the key it gave back stays free for longer than the
 * liveness check's bound unless a waiter takes it. The others wait
 * behind it, fair in the "_fair" modes, with no strategy of their own: the waiters
 * that track the key, held to the late-grant rule (live.c). One waiter
 * only: another's acquire counts as holding from its call, so two that
 * slept through a release would excuse each other. No faults but in
 * the loop mode, and sparse there, since a fault excuses the waiter. */
static void pick_foreign(excl_worker *w, excl_section *s)
{
    if (w->idx != 0) {
        prompt_waiter(w, s, 150, 600);
        /* All fair or none: a fair waiter blocks every waiter that is
         * not (live.c), and would excuse its lateness. */
        s->o.fair = strstr(w->m->name, "_fair") != NULL;
        label(s, "plain");
        return;
    }
    rare_holder(w, s);
    s->foreign = 1;
    s->writes = 0;
    s->hold_ms = excl_rng_chance(&w->rng, 90) ? rnd(w, 100, 600)
                                              : s->o.ttl_ms + rnd(w, 0, 40);
    label(s, "foreign");
}

/* Worker 0 takes key 0 and ends its hold as an operator or another tool
 * might: the key deleted by hand (no script: nobody woken), then taken
 * at its first try by a second handle, alone or as a set with key 1,
 * held a moment and released (worker.c's retake). Its leases of 2-6 s
 * outlast the waiter's wait, so a waiter that slept through that
 * release would sleep past the liveness check's bound. Worker 1 waits
 * behind it with no strategy of its own, held to the late-grant rule
 * (live.c): one waiter only, as in the foreign modes. Its leases are
 * as long: a waiter blocks no longer than half its own TTL (the attempt
 * behind its BLPOP takes a lease counted from its send; pause_blocked
 * in alock.c), so with the foreign modes' 150-600 ms it tried again
 * within the bound anyway, and the set's gap fixed in 3a543b9 went
 * unseen (with 2-6 s, 2 or 3 late grants a run). */
static void pick_retaken(excl_worker *w, excl_section *s)
{
    if (w->idx != 0) {
        prompt_waiter(w, s, 2000, 6000);
        s->key = 0;
        return;
    }
    rare_holder(w, s);
    s->key = 0;
    s->retake = (int)rnd(w, 1, 2);
    s->hold_ms = rnd(w, 100, 600);
    label(s, s->retake == 1 ? "del+take" : "del+take set");
}

/* A writer's release leaves the readers' wake-up to the COPY behind it
 * when a writer waited for the lock (docs/ARCHITECTURE.md, "A writer's
 * release and the readers"): worker 0 is that writer (2-6 s leases, held
 * 100-600 ms, then a rest of 1.3-2 s, so that the key it gives back
 * stays free past the liveness bound unless the reader takes it);
 * worker 1 a reader, held to the late-grant rule (live.c), that holds its
 * share 100-400 ms and rests at most 100 ms, so that the writer most
 * often finds it in and waits, and its release then goes with the COPY.
 * A reader the COPY failed to wake would sleep to its wait's end. One
 * waiter held to the rule, as in the foreign modes. */
static void pick_shared_prompt(excl_worker *w, excl_section *s)
{
    if (w->idx != 0) {
        prompt_waiter(w, s, 2000, 6000);
        s->key = 0;
        s->o.shared = 1;
        s->writes = 0;
        s->hold_ms = rnd(w, 100, 400);
        s->rest_ms = rnd(w, 0, 100);
        label(s, "share");
        return;
    }
    rare_holder(w, s);
    s->key = 0;
    s->hold_ms = rnd(w, 100, 600);
    label(s, "excl");
}

/* A set's waiter woken by its key's release and refused by its other
 * key passes the wake on to that key's other waiters (set_acquire.lua's
 * ARGV[8]). Worker 0 holds key 0 for 0.3-1 s at a time, then rests as
 * rare_holder does; worker 1 waits for key 0, held to the late-grant
 * rule (live.c), and rests 0.3-0.9 s, so that a set often blocks behind
 * key 0 before it; workers 2 and 4 wait 0.5-1.5 s for the set of keys 0
 * and 1, which worker 3 holds 6-7 s at a time: the sets are refused
 * every time, woken behind key 0 or not, and give up (EHELD: they held
 * nothing, and excuse no lateness). A wake a set took and kept would
 * leave worker 1 asleep behind a free key 0 to its block's end; two sets
 * also pass it from one to the other. With the pass undone, 6 runs of 10
 * had a late or missed grant (2026-12-07). An event loop's waiters
 * block the same way (BLPOP on the loop's blocker connections) and send
 * the same attempt, so the blocking calls stand for both. */
static void pick_set_prompt(excl_worker *w, excl_section *s)
{
    if (w->idx == 1) {
        prompt_waiter(w, s, 2000, 6000);
        s->key = 0;
        s->rest_ms = rnd(w, 300, 900);
        return;
    }
    if (w->idx >= 2 && w->idx != 3) {
        basic(w, s, 2000, 6000);
        s->key = 0;
        s->set = 3u;
        s->o.wait_ms = rnd(w, 500, 1500);
        s->hold = EXCL_H_FOR;
        s->hold_ms = rnd(w, 0, 100);
        s->rest_ms = rnd(w, 0, 100);
        label(s, "set");
        return;
    }
    rare_holder(w, s);
    if (w->idx == 0) {
        s->key = 0;
        s->hold_ms = rnd(w, 300, 1000);
    } else {
        s->key = 1;
        s->o.ttl_ms = rnd(w, 9000, 10000);
        s->hold_ms = rnd(w, 6000, 7000);
        s->rest_ms = rnd(w, 0, 100);
    }
    label(s, "excl");
}

static void pick_mix_fair(excl_worker *w, excl_section *s)
{
    pick_mix(w, s, 1);
}

static void pick_mix_unfair(excl_worker *w, excl_section *s)
{
    pick_mix(w, s, 0);
}

/* name, where, keys, workers, faults, gap between faults, short run ms,
 * pick, a semaphore's limit (0: a lock, shared or not), how the workers
 * lock (1: on the event loop) and their replica-sync guard. */
const excl_mode excl_modes[] = {
    {"default", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_default, 0, 0,
     0},
    {"meta_holdafter", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_meta, 0,
     0, 0},
    {"fair", EXCL_SINGLE, 1, 4, F_ALL1, 500, 1500, 10000, pick_fair, 0, 0, 0},
    {"fair_retry_short", EXCL_SINGLE, 1, 4,
     F(STOP_HOLDER) | F(KILL_HOLDER) | F(RACE), 300, 900, 6000,
     pick_fair_retry_short, 0, 0, 0},
    {"fair_retry_300", EXCL_SINGLE, 1, 4, 0, 0, 0, 6000, pick_fair_retry_300, 0,
     0, 0},
    {"reentrant", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_reentrant, 0,
     0, 0},
    {"reentrant_shared", EXCL_SINGLE, 1, 4, F_ALL1, 300, 900, 6000,
     pick_reentrant_shared, 0, 0, 0},
    {"extend", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_extend, 0, 0, 0},
    {"adopt", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_adopt, 0, 0, 0},
    {"retry", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_retry, 0, 0, 0},
    /* Leader election: campaigns, proclaims and resignations under the
     * single-server faults (a candidate stopped past its lease, killed,
     * the server paused). */
    {"elect", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_elect, 0, 0, 0},
    {"loop_elect", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_elect, 0, 1,
     0},
    {"watchdog", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_watchdog, 0, 0,
     0},
    {"foreign", EXCL_SINGLE, 1, 2, 0, 0, 0, 8000, pick_foreign, 0,
     0, 0},
    {"foreign_fair", EXCL_SINGLE, 1, 2, 0, 0, 0, 8000,
     pick_foreign, 0, 0, 0},
    /* A key deleted by hand under a waiter, then taken at the first try
     * (a lock or a set) and released: the waiter must be woken. */
    {"retaken", EXCL_SINGLE, 2, 2, 0, 0, 0, 8000, pick_retaken, 0, 0, 0},
    {"shared_prompt", EXCL_SINGLE, 1, 2, 0, 0, 0, 8000, pick_shared_prompt, 0,
     0, 0},
    {"set_prompt", EXCL_SINGLE, 2, 5, 0, 0, 0, 8000, pick_set_prompt, 0, 0, 0},
    {"proxy", EXCL_PROXIED, 1, 4, F_PROCS | F(DELAY) | F(RACE), 300, 900, 6000,
     pick_mix_fair, 0, 0, 0},
    {"sharded", EXCL_SHARDED, 3, 5, F_ALL1, 200, 700, 6000, pick_mix_fair, 0, 0,
     0},
    {"cluster", EXCL_CLUSTER, 2, 4, F_ALL1, 200, 700, 6000, pick_mix_fair, 0, 0,
     0},
    {"redlock", EXCL_REDLOCK, 1, 4, F_PROCS | F(PAUSE_SERVER) | F(DELAY), 200,
     700, 6000, pick_mix_unfair, 0, 0, 0},
    {"semaphore", EXCL_SINGLE, 1, 7, F_ALL1, 200, 700, 6000, pick_semaphore, 3,
     0, 0},
    /* All fair: a stopped waiter may stall the queue for its alive window
     * (5 s), so faults come less often and the run is longer, as for
     * "fair". */
    {"semaphore_fair", EXCL_SINGLE, 1, 7, F_ALL1, 500, 1500, 10000,
     pick_semaphore, 3, 0, 0},
    {"shared", EXCL_SINGLE, 1, 6, F_ALL1, 200, 700, 6000, pick_shared, 0, 0, 0},
    {"shared_fair", EXCL_SINGLE, 1, 6, F_ALL1, 500, 1500, 10000, pick_shared, 0,
     0, 0},
    /* Fair readers overlapping all the time, one writer not queued: no
     * faults, the readers are the writer's trouble. */
    {"shared_fair_writer", EXCL_SINGLE, 1, 4, 0, 0, 0, 6000,
     pick_shared_fair_writer, 0, 0, 0},
    {"set", EXCL_SINGLE, 3, 6, F_ALL1, 200, 700, 6000, pick_set, 0, 0, 0},
    /* The same sets over several servers (agroup.c): the cluster's slots
     * put the three keys apart; the ring, which hashes the servers'
     * socket paths (new each run), does in 8 runs of 9. */
    {"set_sharded", EXCL_SHARDED, 3, 6, F_ALL1, 200, 700, 6000, pick_set, 0, 0,
     0},
    {"set_cluster", EXCL_CLUSTER, 3, 5, F_ALL1, 200, 700, 6000, pick_set, 0, 0,
     0},
    /* The event-loop API: the same sections, every acquire, release and
     * extend on the worker's loop (blocked waiters, listeners, renewals
     * on the loop's timer). */
    {"loop", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_default, 0, 1, 0},
    {"loop_watchdog", EXCL_SINGLE, 1, 4, F_ALL1, 200, 700, 6000, pick_watchdog,
     0, 1, 0},
    {"loop_shared", EXCL_SINGLE, 1, 6, F_ALL1, 200, 700, 6000, pick_shared, 0,
     1, 0},
    /* Redlock's rounds on the loop (each request to the three servers at
     * once, a majority deciding), under the blocking mode's faults. */
    {"loop_redlock", EXCL_REDLOCK, 1, 4, F_PROCS | F(PAUSE_SERVER) | F(DELAY),
     200, 700, 6000, pick_mix_unfair, 0, 1, 0},
    {"loop_cluster", EXCL_CLUSTER, 2, 4, F_ALL1, 200, 700, 6000,
     pick_mix_unfair, 0, 1, 0},
    /* Fair waiters on the loop (hand-offs heard on their channels), with
     * "fair"'s spacing of faults. */
    {"loop_fair", EXCL_SINGLE, 1, 4, F_ALL1, 500, 1500, 10000, pick_fair, 0, 1,
     0},
    /* Sets of keys on one server on the loop (each waiter behind the key
     * that refused it, woken by that key's release). */
    {"loop_foreign", EXCL_SINGLE, 1, 2, F_PROCS, 300, 1000, 8000,
     pick_foreign, 0, EXCL_ON_LOOP, 0},
    {"loop_shared_prompt", EXCL_SINGLE, 1, 2, 0, 0, 0, 8000,
     pick_shared_prompt, 0, EXCL_ON_LOOP, 0},
    {"loop_retaken", EXCL_SINGLE, 2, 2, 0, 0, 0, 8000, pick_retaken, 0,
     EXCL_ON_LOOP, 0},
    {"loop_set", EXCL_SINGLE, 3, 6, F_ALL1, 200, 700, 6000, pick_set, 0, 1, 0},
    /* The same over several servers and over a cluster's slots on the
     * loop (agroup.c: group after group, each group's refusal giving back
     * the ones before it, waits behind the refusing key's node). */
    {"loop_set_sharded", EXCL_SHARDED, 3, 6, F_ALL1, 200, 700, 6000, pick_set,
     0, 1, 0},
    {"loop_set_cluster", EXCL_CLUSTER, 3, 5, F_ALL1, 200, 700, 6000, pick_set,
     0, 1, 0},
    /* Two processes per owner id on their loops: late releases meet the
     * other process's later life of the key (see pick_reentrant_shared). */
    {"loop_reentrant_shared", EXCL_SINGLE, 1, 4, F_ALL1, 300, 900, 6000,
     pick_reentrant_shared, 0, 1, 0},
    /* redislock run --fair, three at a time, no faults: hand-offs and
     * long commands. */
    {"cli_fair", EXCL_SINGLE, 1, 3, 0, 0, 0, 10000, pick_cli_fair, 0,
     EXCL_VIA_CLI, 0},
    /* Sentinel: the master killed once, 1 to 1.5 s in; the failover
     * takes about 2.5 s, and the run goes on past R (5 s) after it. */
    {"sentinel_kill_master", EXCL_SENTINEL, 1, 3, F(KILL_MASTER), 1000, 1500,
     9500, pick_sentinel, 0, 0, 0},
    /* SENTINEL FAILOVER with the old master alive, 1 to 1.5 s in, under
     * renewed locks: without the guard a lock the replica missed may be
     * lost (a second holder is excused while the first's belief ends by
     * its next renewal, see EXCL_FAULT_LOSSY); with it (wait_replicas 1)
     * every rule holds as it is, but for ENOTDURABLE refusals while the
     * new master has no replica. */
    {"sentinel_failover", EXCL_SENTINEL, 1, 3, F(SENTINEL_FAILOVER), 1000, 1500,
     9500, pick_failover, 0, 0, 0},
    /* With one replica the strict guard refuses for about 10 s after the
     * switch (see EXCL_LIVE_FAILOVER_GUARD_MS), so the short run's
     * sections come before the failover: it comes 4 to 4.5 s in, and
     * each worker's first hold is short (pick_failover). At 2.5 to 3 s,
     * with first holds of up to 3 s, a first hold of nearly 3 s left one
     * section (seed 79143770429353, 2026-12-04). */
    {"sentinel_failover_guard", EXCL_SENTINEL, 1, 3, F(SENTINEL_FAILOVER), 4000,
     4500, 11000, pick_failover, 0, 0, 1},
    /* The old master cut off and back: stopped (SIGSTOP) until the
     * sentinels promote the replica, then resumed, a master with its
     * clients' connections until they demote it. */
    {"sentinel_partition", EXCL_SENTINEL, 1, 3, F(STOP_MASTER), 1000, 1500,
     9500, pick_failover, 0, 0, 0},
    {"sentinel_partition_guard", EXCL_SENTINEL, 1, 3, F(STOP_MASTER), 4000,
     4500, 11000, pick_failover, 0, 0, 1},
    /* Issue 40: the failover modes with two replicas. The guard is
     * REDISLOCK_REPLICAS_ALL, every replica the master has had: with
     * wait_replicas 1, a lock the old master granted after the promotion
     * and its other replica confirmed was lost (seed 139573955731484,
     * 2026-11-29). The new master then has one until the old one is
     * demoted, as with one replica: the failover comes later. */
    {"sentinel_kill_master_2r", EXCL_SENTINEL2, 1, 3, F(KILL_MASTER), 1000,
     1500, 9500, pick_failover, 0, 0, 0},
    {"sentinel_failover_2r", EXCL_SENTINEL2, 1, 3, F(SENTINEL_FAILOVER), 1000,
     1500, 9500, pick_failover, 0, 0, 0},
    {"sentinel_failover_2r_guard", EXCL_SENTINEL2, 1, 3, F(SENTINEL_FAILOVER),
     2500, 3000, 9500, pick_failover, 0, 0, REDISLOCK_REPLICAS_ALL},
    {"sentinel_partition_2r", EXCL_SENTINEL2, 1, 3, F(STOP_MASTER), 1000, 1500,
     9500, pick_failover, 0, 0, 0},
    {"sentinel_partition_2r_guard", EXCL_SENTINEL2, 1, 3, F(STOP_MASTER), 2500,
     3000, 9500, pick_failover, 0, 0, REDISLOCK_REPLICAS_ALL},
    /* A cluster of three masters with a replica each: the master of the
     * key killed with -9, or its replica taking over by CLUSTER FAILOVER,
     * 1 to 1.5 s in. */
    {"cluster_kill_master", EXCL_CLUSTER_R, 1, 3, F(CLUSTER_KILL), 1000, 1500,
     9500, pick_failover, 0, 0, 0},
    {"cluster_failover", EXCL_CLUSTER_R, 1, 3, F(CLUSTER_FAILOVER), 1000, 1500,
     9500, pick_failover, 0, 0, 0},
};

const int excl_nmodes = (int)(sizeof excl_modes / sizeof excl_modes[0]);

const excl_mode *excl_mode_find(const char *name)
{
    int i;

    for (i = 0; i < excl_nmodes; i++)
        if (strcmp(excl_modes[i].name, name) == 0)
            return &excl_modes[i];
    return NULL;
}
