/*
 * The liveness check of a run's history (see excl.h), the other half of
 * checker.c: not "never two holders" but "never a waiter left waiting, or
 * a holder told it lost, for no reason". The history says when each
 * section's acquire was called and returned and how, when its release
 * returned, every loss a holder was told with the server's view read at
 * that moment, and every fault of the nemesis with its times. Rules:
 *
 *  - false loss: a holder told its lock was lost (an extend or release
 *    said ELOST or EEXPIRED, the watchdog's on_lost said so, or redislock
 *    run killed its command) while the server, asked at once on another
 *    connection, still held the holder's own lease with more than its
 *    drift allowance (ttl / 100 + 2 ms) plus 10 ms left. A watchdog that
 *    gave up because it could not reach the server in time is not told a
 *    loss by the server and is not counted; nor is redislock_valid_ms()
 *    reaching 0, the lease running out as the holder was told it would.
 *  - missed grant: a waiter (wait > 0) that failed although, inside its
 *    wait, its key (each key of a set) was surely free for longer than B
 *    (EXCL_LIVE_FREE_MS) with nobody queued ahead of it. "Possibly held"
 *    is counted generously: from an acquire's call until its release
 *    returned (plus any hold-after), or, for a holder that never released
 *    (killed, stopped, released late or in error), until its last
 *    believed end plus 3 TTLs plus 2.5 s (extends to 3 TTLs, re-entries
 *    to 2 s, the watchdog's renewals recorded half a second late), and
 *    for an owner id's hold, at least until the latest believed end of
 *    the owner's later acquisitions (held_by_owner); an
 *    acquire that failed with an error other than EHELD may hold until its
 *    return plus its TTL. A fair waiter queued before (for a non-fair
 *    waiter: at all) blocks the key until its acquire returned. A server
 *    paused or a proxy delaying, and a stop of the waiter itself, block
 *    everything until EXCL_LIVE_FAULT_TAIL_MS after they end. For a
 *    semaphore the key is free while fewer than its limit may hold; for a
 *    shared lock any holder, share or not, blocks. B is 1 s: above the
 *    longest retry delay of a mode (300 ms) plus a server tick (100 ms)
 *    and the time a loaded 2-core box with sanitizers takes to schedule a
 *    waiter (up to about half a second, seen in runs).
 *  - late grant: a waiter that promised a prompt grant (EXCL_A_PROMPT:
 *    told of a release by its wake-up, a hand-off or the server's notice
 *    of the key's change, with no pauses of its own) and got the key,
 *    but only after it had been surely free for longer than B within its
 *    wait, as for a missed grant: a release it did not hear, waited out
 *    to its deadline or the holder's lease. Only the modes whose waiters
 *    are so flagged (the foreign ones) are held to it yet.
 *  - starvation of a writer: an exclusive waiter that failed while, for
 *    longer than max(its wait - EXCL_LIVE_GRACE_MS, its wait / 2), only
 *    shares held the key (no fault in force), and at least one share that
 *    was asked for after it came (EXCL_LIVE_ARRIVAL_MS later) was granted
 *    before it gave up: readers kept the key from it.
 *  - starvation of a fair waiter: a fair waiter that timed out (EHELD),
 *    not stopped meanwhile, although a fair waiter that came after it
 *    (EXCL_LIVE_ARRIVAL_MS later) was granted the key before the
 *    waiter's deadline less EXCL_LIVE_ARRIVAL_MS (a hand-off just before
 *    the deadline may miss it, and its giving up passes the key on).
 *    The writer's rule counts shares granted by then too.
 *  - failover (a master killed or replaced by a planned failover, the
 *    fault in force until the new master is confirmed): no waiter fails
 *    other than by EHELD, with over a second of its wait left, between
 *    the fault and R (EXCL_LIVE_FAILOVER_MS: a command timeout of
 *    1 s, a fresh look at the sentinels and a retry, with room) after the
 *    new master was confirmed; some acquire returns OK by then (when the
 *    run lasted that long); none called after that fails but by EHELD.
 *    Through a failover guarded by the strict replica-sync guard
 *    (EXCL_FAULT_GUARDED), ENOTDURABLE is the documented refusal while
 *    the new master lacks replicas, not a failure, and R is
 *    EXCL_LIVE_FAILOVER_GUARD_MS; a loss told from the fault until then
 *    is not a false loss either (renewals refused so, the lease
 *    extended on the server but not counted). Both are counted apart
 *    (guard_refused). A waiter on a stopped master that
 *    ended with ETIMEDOUT while it was stopped is counted apart
 *    (reply_lost): its request's outcome is unknown, and the docs say
 *    such an acquire is reported and abandoned, not sent again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redislock.h>

#include "excl.h"
#include "test.h"

#define LIVE_PRINT_MAX 12
#define LIVE_FOREVER INT64_MAX
/* A hold never released: its last believed end plus 3 TTLs plus this. */
#define LIVE_UNRELEASED_PAD_US 2500000
#define LIVE_LOSS_SLACK_MS 10

/* One section's acquire as the history tells it. */
typedef struct att {
    const excl_rec *r;   /* its last record */
    unsigned mask;       /* its keys */
    int64_t claim_end;   /* the latest believed end recorded */
    uint64_t group;      /* its claims' (an owner id's, or its own) */
    const excl_rec *rel; /* its release, or NULL */
    int64_t held_to;     /* until when it may have held (OK only) */
} att;

/* A stretch during which something blocks or holds the key. */
typedef struct ev {
    int64_t t;
    int held, block; /* +1 at a start, -1 at an end */
} ev;

typedef struct live {
    uint64_t seed;
    int64_t base;
    const char *mode;
    int limit;
    excl_live_verdict *v;
    int64_t first_us;
    att *at;
    size_t nat;
    const excl_rec **fault;
    size_t nfault;
    ev *ev;
    size_t nev;
} live;

static double rel_s(const live *c, int64_t t)
{
    return (double)(t - c->base) / 1e6;
}

static void violation(live *c, int64_t when)
{
    if (c->first_us == 0 || when < c->first_us)
        c->first_us = when;
}

static unsigned mask_of(const excl_rec *r)
{
    return r->set != 0 ? r->set : 1u << r->key;
}

static int by_id(const void *a, const void *b)
{
    const att *x = a, *y = b;

    if (x->r->pid != y->r->pid)
        return x->r->pid < y->r->pid ? -1 : 1;
    if (x->r->acq != y->r->acq)
        return x->r->acq < y->r->acq ? -1 : 1;
    return x->r < y->r ? -1 : x->r > y->r; /* the later record last */
}

static att *find(const live *c, const excl_rec *r)
{
    att key;
    excl_rec probe;
    size_t lo = 0, hi = c->nat, mid;

    probe.pid = r->pid;
    probe.acq = r->acq;
    key.r = &probe;
    while (lo < hi) {
        mid = (lo + hi) / 2;
        if (c->at[mid].r->pid == r->pid && c->at[mid].r->acq == r->acq)
            return &c->at[mid];
        if (by_id(&c->at[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* When a hold that returned OK may have ended on the server. */
static int64_t held_to(const att *a)
{
    int64_t end = a->claim_end > a->r->t1 ? a->claim_end : a->r->t1;

    if (a->rel != NULL && a->rel->x == REDISLOCK_OK)
        return a->rel->t1 + a->rel->belief * 1000;
    return end + 3 * a->r->ttl_ms * 1000 + LIVE_UNRELEASED_PAD_US;
}

/* A hold of an owner id that was never released (its process killed,
 * or stopped past its lease) stays counted in the key's holds: a later
 * acquire of the same owner id (another process of it, or the worker
 * that took the killed one's place) re-enters the key, renews it, and
 * its release leaves the key to that count, alive until the lease the
 * re-entry last set runs out. So the hold may last until the latest
 * believed end of those re-entries. */
static void held_by_owner(live *c, att *a)
{
    size_t i;
    const att *b;

    if (a->r->x != REDISLOCK_OK ||
        (a->rel != NULL && a->rel->x == REDISLOCK_OK) || a->group == 0 ||
        (a->group >> 63) != 0)
        return;
    for (i = 0; i < c->nat; i++) {
        b = &c->at[i];
        if (b->group == a->group && b->r->x == REDISLOCK_OK &&
            b->r->t0 >= a->r->t0 && b->claim_end > a->held_to)
            a->held_to = b->claim_end;
    }
}

/* Every section's acquire (its last record), with its release and the
 * latest end its claims believed; the nemesis's faults. */
static void collect(live *c, const excl_rec *h, size_t n)
{
    size_t i, k = 0;
    att *a;

    c->at = calloc(n + 1, sizeof *c->at);
    c->fault = calloc(n + 1, sizeof *c->fault);
    c->ev = calloc(4 * n + 8, sizeof *c->ev);
    ASSERT(c->at != NULL && c->fault != NULL && c->ev != NULL);
    for (i = 0; i < n; i++) {
        if (h[i].kind == EXCL_ATTEMPT)
            c->at[c->nat++].r = &h[i];
        else if (h[i].kind == EXCL_FAULT)
            c->fault[c->nfault++] = &h[i];
    }
    qsort(c->at, c->nat, sizeof *c->at, by_id);
    for (i = 0; i < c->nat; i++)
        if (i + 1 == c->nat || c->at[i].r->pid != c->at[i + 1].r->pid ||
            c->at[i].r->acq != c->at[i + 1].r->acq)
            c->at[k++] = c->at[i];
    c->nat = k;
    for (i = 0; i < c->nat; i++)
        c->at[i].mask = mask_of(c->at[i].r);
    for (i = 0; i < n; i++) {
        if ((h[i].kind != EXCL_CLAIM && h[i].kind != EXCL_RELEASE) ||
            (a = find(c, &h[i])) == NULL)
            continue;
        if (h[i].kind == EXCL_RELEASE)
            a->rel = &h[i];
        else {
            a->group = h[i].group;
            if (h[i].t1 > a->claim_end)
                a->claim_end = h[i].t1;
        }
    }
    for (i = 0; i < c->nat; i++)
        c->at[i].held_to = held_to(&c->at[i]);
    for (i = 0; i < c->nat; i++)
        held_by_owner(c, &c->at[i]);
}

/* ---- What blocked a waiter, as a sweep over events */

static void add_ev(live *c, int64_t a, int64_t b, int held, int block)
{
    if (b <= a)
        return;
    c->ev[c->nev++] = (ev){a, held, block};
    c->ev[c->nev++] = (ev){b, -held, -block};
}

static int by_t(const void *a, const void *b)
{
    const ev *x = a, *y = b;

    return x->t < y->t ? -1 : x->t > y->t;
}

static int outcome_known(const excl_rec *r)
{
    return r->x != EXCL_PENDING;
}

static int64_t end_or_forever(const excl_rec *r)
{
    return outcome_known(r) ? r->t1 : LIVE_FOREVER;
}

/* Faults that stall everyone (a paused server, a delaying proxy), and
 * stops of the waiter pid itself, as blocks. */
static void fault_events(live *c, int pid)
{
    size_t i;
    const excl_rec *f;

    for (i = 0; i < c->nfault; i++) {
        f = c->fault[i];
        if (f->flags == EXCL_F_PAUSE_SERVER || f->flags == EXCL_F_DELAY ||
            excl_fault_failover(f->flags) ||
            ((f->flags == EXCL_F_STOP_HOLDER ||
              f->flags == EXCL_F_STOP_WAITER) &&
             f->pid == pid))
            add_ev(c, f->t0, f->t1 + EXCL_LIVE_FAULT_TAIL_MS * 1000, 0, 1);
    }
}

/* What may have held w's keys, and (holders) whether as shares: share
 * -1 any, 0 exclusive only, 1 shares only. */
static void hold_events(live *c, const att *w, int share)
{
    size_t i;
    const att *o;
    const excl_rec *r;

    for (i = 0; i < c->nat; i++) {
        o = &c->at[i];
        r = o->r;
        if (o == w || !(o->mask & w->mask))
            continue;
        if (r->x == REDISLOCK_OK && (share < 0 || r->share == share))
            add_ev(c, r->t0, o->held_to, 1, 0);
        else if (share < 0 && r->x != REDISLOCK_EHELD &&
                 r->x != REDISLOCK_EINVAL && r->x != REDISLOCK_ECANCELED)
            add_ev(c, r->t0,
                   outcome_known(r) ? r->t1 + r->ttl_ms * 1000 : LIVE_FOREVER,
                   1, 0);
    }
}

/* Fair waiters queued ahead of w (any, when w is not fair) block it. */
static void queue_events(live *c, const att *w)
{
    size_t i;
    const excl_rec *r;

    for (i = 0; i < c->nat; i++) {
        r = c->at[i].r;
        if (&c->at[i] == w || !(c->at[i].mask & w->mask) ||
            !(r->flags & EXCL_A_FAIR) || r->pid == w->r->pid)
            continue;
        if (!(w->r->flags & EXCL_A_FAIR) || r->t0 < w->r->t0)
            add_ev(c, r->t0, end_or_forever(r), 0, 1);
    }
}

/* The longest stretch of [from, to] in which the events leave the key
 * free: nothing blocks, and fewer than lim hold (held_only: in which
 * something holds, nothing blocks). Consumes the events. */
static int64_t longest(live *c, int64_t from, int64_t to, int lim,
                       int held_only, int64_t *total)
{
    int held = 0, block = 0, ok;
    int64_t best = 0, start = from, t, a;
    size_t i;

    qsort(c->ev, c->nev, sizeof *c->ev, by_t);
    *total = 0;
    for (i = 0; i <= c->nev; i++) {
        t = i < c->nev ? c->ev[i].t : to;
        if (t > to)
            t = to;
        ok = block == 0 && (held_only ? held > 0 : held < lim);
        a = start > from ? start : from;
        if (ok && t > a) {
            *total += t - a;
            if (t - a > best)
                best = t - a;
        }
        start = t;
        if (i < c->nev) {
            held += c->ev[i].held;
            block += c->ev[i].block;
        }
    }
    c->nev = 0;
    return best;
}

/* ---- The rules */

static void describe(const live *c, const char *role, const excl_rec *r)
{
    printf("    %s pid %d acquisition %u [%s]%s%s ttl %" PRId64 " wait %" PRId64
           " called %.3f s",
           role, r->pid, r->acq, r->what, r->share ? " shared" : "",
           r->flags & EXCL_A_FAIR ? " fair" : "", r->ttl_ms, r->belief,
           rel_s(c, r->t0));
    if (outcome_known(r))
        printf(", returned %.3f s: %s\n", rel_s(c, r->t1),
               redislock_strerror((redislock_err)r->x));
    else
        printf(", never returned\n");
}

static void report(live *c, const char *rule, long count, const att *w,
                   int64_t when)
{
    violation(c, when);
    if (count > LIVE_PRINT_MAX)
        return;
    printf("excl %s: VIOLATION %s #%ld on key %d (seed %" PRIu64 ")\n", c->mode,
           rule, count, w->r->key, c->seed);
    describe(c, "waiter", w->r);
}

static int waited_and_failed(const excl_rec *r)
{
    return outcome_known(r) && r->x != REDISLOCK_OK &&
           r->x != REDISLOCK_EINVAL && r->x != REDISLOCK_ECANCELED &&
           r->belief > 0;
}

/* The longest time w's key was surely free at once within its wait (in
 * all: *total), others' holds, fair queues ahead and faults excused. */
static int64_t free_within(live *c, const att *w, int64_t *total)
{
    hold_events(c, w, -1);
    queue_events(c, w);
    fault_events(c, w->r->pid);
    return longest(c, w->r->t0, w->r->t1, c->limit > 1 ? c->limit : 1, 0,
                   total);
}

/* A waiter that failed (missed grant), or one that promised a prompt
 * grant and got the key late (late grant), its key surely free for
 * longer than B within its wait; *count the rule's. */
static void check_free(live *c, const att *w, const char *rule, long *count)
{
    int64_t total, best = free_within(c, w, &total);

    if (best <= EXCL_LIVE_FREE_MS * 1000)
        return;
    report(c, rule, ++*count, w, w->r->t1);
    if (*count <= LIVE_PRINT_MAX)
        printf("    its key surely free for %.3f s at once (%.3f s in all) "
               "within its wait\n",
               (double)best / 1e6, (double)total / 1e6);
}

/* When w should have been served by, to count as passed over: its
 * deadline less EXCL_LIVE_ARRIVAL_MS (a hand-off that came just before
 * the deadline may find it gone; its giving up then passes the key on),
 * and not after it returned. */
static int64_t served_by(const att *w)
{
    int64_t t = w->r->t0 + (w->r->belief - EXCL_LIVE_ARRIVAL_MS) * 1000;

    return t < w->r->t1 ? t : w->r->t1;
}

/* The first share asked for after w came and granted before it gave
 * up, or NULL. */
static const att *later_share(const live *c, const att *w)
{
    size_t i;
    const excl_rec *r;

    for (i = 0; i < c->nat; i++) {
        r = c->at[i].r;
        if ((c->at[i].mask & w->mask) && r->share && r->x == REDISLOCK_OK &&
            r->pid != w->r->pid &&
            r->t0 > w->r->t0 + EXCL_LIVE_ARRIVAL_MS * 1000 &&
            r->t1 < served_by(w))
            return &c->at[i];
    }
    return NULL;
}

static void check_writer(live *c, const att *w)
{
    int64_t total, wait = w->r->belief * 1000;
    int64_t need = wait - EXCL_LIVE_GRACE_MS * 1000;
    const att *s;
    size_t i;

    if (w->r->share || (s = later_share(c, w)) == NULL)
        return;
    if (need < wait / 2)
        need = wait / 2;
    /* The time in which shares held and nothing else did: exclusive
     * holders (and faults) count as blocks, shares as holders. */
    hold_events(c, w, 0);
    fault_events(c, w->r->pid);
    for (i = 0; i < c->nev; i++) {
        c->ev[i].block += c->ev[i].held;
        c->ev[i].held = 0;
    }
    hold_events(c, w, 1);
    longest(c, w->r->t0, w->r->t1, 1, 1, &total);
    if (total <= need)
        return;
    report(c, "starvation (a writer behind shares)", ++c->v->starved, w,
           w->r->t1);
    if (c->v->starved <= LIVE_PRINT_MAX) {
        printf("    only shares held its key for %.3f s of its wait\n",
               (double)total / 1e6);
        describe(c, "while granted", s->r);
    }
}

static int stopped_in(const live *c, int pid, int64_t a, int64_t b)
{
    size_t i;
    const excl_rec *f;

    for (i = 0; i < c->nfault; i++) {
        f = c->fault[i];
        if (f->pid == pid && f->t0 < b && f->t1 > a)
            return 1;
    }
    return 0;
}

/* Whether a fault that holds requests back (a delaying proxy, a paused
 * server) was in force at some time in [a, b]: requests sent then may
 * reach the server after later ones. check_fair asks it of the time in
 * which the waiter's join was sent (EXCL_LIVE_ARRIVAL_MS from its call;
 * the other called after it). The proxy holds each chunk for the
 * delay in force when it was read, so one read after the delay ends
 * overtakes a held one (a -j3 suite of 2026-12-04: a fair waiter
 * overtaken by one that called 494 ms after it, in excl_proxy); a paused
 * server reads the sockets in its own order when it resumes. */
static int reordered_in(const live *c, int64_t a, int64_t b)
{
    size_t i;
    const excl_rec *f;

    for (i = 0; i < c->nfault; i++) {
        f = c->fault[i];
        if ((f->flags == EXCL_F_DELAY || f->flags == EXCL_F_PAUSE_SERVER) &&
            f->t0 <= b && f->t1 >= a)
            return 1;
    }
    return 0;
}

static void check_fair(live *c, const att *w)
{
    size_t i;
    const excl_rec *r;

    if (!(w->r->flags & EXCL_A_FAIR) || w->r->x != REDISLOCK_EHELD)
        return;
    for (i = 0; i < c->nat; i++) {
        r = c->at[i].r;
        if (!(c->at[i].mask & w->mask) || !(r->flags & EXCL_A_FAIR) ||
            r->x != REDISLOCK_OK || r->pid == w->r->pid ||
            r->t0 <= w->r->t0 + EXCL_LIVE_ARRIVAL_MS * 1000 ||
            r->t1 >= served_by(w) || stopped_in(c, w->r->pid, w->r->t0, r->t1) ||
            reordered_in(c, w->r->t0, w->r->t0 + EXCL_LIVE_ARRIVAL_MS * 1000))
            continue;
        c->v->overtaken++;
        report(c, "starvation (a fair waiter overtaken)", ++c->v->starved, w,
               r->t1);
        if (c->v->starved <= LIVE_PRINT_MAX)
            describe(c, "overtaken by", r);
        return;
    }
}

static int loss_counts(const excl_rec *r)
{
    if (r->x == EXCL_PENDING)
        return 0;
    if (r->flags == EXCL_L_CALLBACK)
        return r->belief == REDISLOCK_ELOST || r->belief == REDISLOCK_EEXPIRED;
    return 1;
}

/* The lease left (ms) that the server kept, when the loss r was told, on
 * every key of r's section: a set is lost when any of its keys is, so
 * its loss is false only if each key's read (one record per key, told
 * at the same moment) found the lease still there (EXCL_PENDING, below
 * every lease, when one did not). */
static int64_t loss_kept(const excl_rec *h, size_t n, const excl_rec *r)
{
    int64_t kept = r->x;
    size_t i;

    for (i = 0; r->set != 0 && i < n; i++)
        if (h[i].kind == EXCL_LOSS && h[i].pid == r->pid &&
            h[i].acq == r->acq && h[i].t0 == r->t0 && h[i].x < kept)
            kept = h[i].x;
    return kept;
}

/* Whether r is the first of its section's loss records (one a key): a
 * set's loss is judged and reported once. */
static int loss_first(const excl_rec *h, const excl_rec *r)
{
    const excl_rec *p;

    for (p = h; r->set != 0 && p < r; p++)
        if (p->kind == EXCL_LOSS && p->pid == r->pid && p->acq == r->acq &&
            p->t0 == r->t0)
            return 0;
    return 1;
}

/* Whether a loss told at t came while a strictly guarded failover's new
 * master lacked replicas: its renewals were refused (ENOTDURABLE, the
 * lease extended on the server but not counted), as documented. */
static int guard_refused(const live *c, int64_t t)
{
    size_t i;
    const excl_rec *f;

    for (i = 0; i < c->nfault; i++) {
        f = c->fault[i];
        if (excl_fault_failover(f->flags) && f->x == EXCL_FAULT_GUARDED &&
            t >= f->t0 && t <= f->t1 + EXCL_LIVE_FAILOVER_GUARD_MS * 1000)
            return 1;
    }
    return 0;
}

/* Whether the loss r came from a renewal that a paused or delayed
 * server may have cut short: the renewal ran within the TTL before r
 * was told, and such a fault was in force then (or ended less than
 * EXCL_LIVE_FAULT_TAIL_MS before). The watchdog that gets no answer in
 * time must report the loss when the lease it can vouch for ends, and
 * a Redlock round that one server does not answer and another says is
 * expired cannot confirm a majority; the renewal stuck behind the pause
 * may still run once the server resumes, so the server, read after,
 * holds a lease the client rightly gave up on: the "could not reach the
 * server in time" the rule does not count. */
static int renewal_unsure(const live *c, const excl_rec *r)
{
    int64_t from = r->t0 - r->ttl_ms * 1000;
    size_t i;
    const excl_rec *f;

    for (i = 0; i < c->nfault; i++) {
        f = c->fault[i];
        if ((f->flags == EXCL_F_PAUSE_SERVER || f->flags == EXCL_F_DELAY) &&
            f->t0 <= r->t0 && f->t1 + EXCL_LIVE_FAULT_TAIL_MS * 1000 >= from)
            return 1;
    }
    return 0;
}

/* Whether the loss r was told just after its holder's process was
 * stopped (EXCL_F_STOP_HOLDER, which stops it past its validity): the
 * watchdog could not renew, and once continued it rightly reports the
 * loss. The server's lease then outlives the validity by the drift
 * allowance and by however long the last renewal took to run after it
 * was sent, which a loaded machine makes 100 ms and more (2026-11-29,
 * a flake hunt at load 9). A stop meant for a waiter counts too: the
 * nemesis picks a waiting process and stops it a moment later, by when
 * it may hold the lock (a CI run of 2026-12-02: a 300 ms lease told
 * lost after a waiter's stop, the server's with 49 ms left). */
static int holder_stopped(const live *c, const excl_rec *r)
{
    size_t i;
    const excl_rec *f;

    for (i = 0; i < c->nfault; i++) {
        f = c->fault[i];
        if ((f->flags == EXCL_F_STOP_HOLDER ||
             f->flags == EXCL_F_STOP_WAITER) &&
            f->pid == r->pid &&
            f->t0 <= r->t0 && f->t1 + EXCL_LIVE_FAULT_TAIL_MS * 1000 >= r->t0)
            return 1;
    }
    return 0;
}

static void check_losses(live *c, const excl_rec *h, size_t n)
{
    static const char *const how[] = {"?", "the watchdog's on_lost",
                                      "an extend", "the release",
                                      "redislock run killing its command"};
    size_t i;
    const excl_rec *r;
    int64_t kept;

    for (i = 0; i < n; i++) {
        r = &h[i];
        if (r->kind != EXCL_LOSS)
            continue;
        if (!loss_first(h, r))
            continue;
        c->v->losses++;
        kept = loss_kept(h, n, r);
        if (!loss_counts(r) || renewal_unsure(c, r) || holder_stopped(c, r) ||
            kept <= r->ttl_ms / 100 + 2 + LIVE_LOSS_SLACK_MS)
            continue;
        if (guard_refused(c, r->t0)) {
            c->v->guard_refused++;
            continue;
        }
        violation(c, r->t0);
        if (++c->v->false_loss > LIVE_PRINT_MAX)
            continue;
        printf("excl %s: VIOLATION false loss #%ld on key %d (seed %" PRIu64
               ")\n    pid %d acquisition %u [%s] ttl %" PRId64
               " told lost at %.3f s by %s (%s); the server's lease for it "
               "had %" PRId64 " ms left then, on each key it held (read at "
               "%.3f s)\n",
               c->mode, c->v->false_loss, r->key, c->seed, r->pid, r->acq,
               r->what, r->ttl_ms, rel_s(c, r->t0),
               how[r->flags <= EXCL_L_KILLED ? r->flags : 0],
               r->flags == EXCL_L_KILLED ? "exit 75"
               : r->why[0] != '\0'
                   ? r->why
                   : redislock_strerror((redislock_err)r->belief),
               kept, rel_s(c, r->t1));
    }
}

/* The latest time the history tells of. */
static int64_t last_time(const excl_rec *h, size_t n)
{
    int64_t t = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (h[i].t0 > t)
            t = h[i].t0;
        if (h[i].t1 > t)
            t = h[i].t1;
    }
    return t;
}

/* The first grant after the master was killed (its return), or 0. */
static int64_t first_grant_after(const live *c, int64_t t)
{
    int64_t first = 0;
    size_t i;
    const excl_rec *r;

    for (i = 0; i < c->nat; i++) {
        r = c->at[i].r;
        if (r->x == REDISLOCK_OK && r->t1 > t && (first == 0 || r->t1 < first))
            first = r->t1;
    }
    return first;
}

/* Whether r ended because a stopped master did not answer: its outcome
 * unknown, the acquire is reported and abandoned, as documented (a
 * request whose reply was lost is not sent again). */
static int reply_lost(const excl_rec *f, const excl_rec *r)
{
    return f->flags == EXCL_F_STOP_MASTER && r->x == REDISLOCK_ETIMEDOUT &&
           r->t1 >= f->t0 && r->t1 <= f->t1 + EXCL_LIVE_FAULT_TAIL_MS * 1000;
}

static void failover_violation(live *c, const char *what, const att *w,
                               const excl_rec *f, int64_t when)
{
    violation(c, when);
    if (++c->v->failover > LIVE_PRINT_MAX)
        return;
    printf("excl %s: VIOLATION failover #%ld (seed %" PRIu64
           "): %s; %s at %.3f s, the new master confirmed at "
           "%.3f s\n",
           c->mode, c->v->failover, c->seed, what, f->what, rel_s(c, f->t0),
           rel_s(c, f->t1));
    if (w != NULL)
        describe(c, "waiter", w->r);
}

/* Around a master killed (f: from the kill to the new master
 * confirmed): no waiter gives up for want of a server with over a second
 * of its wait left, from the kill until R after the confirmation; some
 * acquire returns OK within R of it; no acquire begun after that fails
 * but by waiting out its wait. */
static void check_failover(live *c, const excl_rec *f, int64_t last)
{
    int guarded = f->x == EXCL_FAULT_GUARDED;
    int64_t r_end = f->t1 + (guarded ? EXCL_LIVE_FAILOVER_GUARD_MS
                                     : EXCL_LIVE_FAILOVER_MS) *
                                1000,
            first;
    size_t i;
    const excl_rec *r;

    for (i = 0; i < c->nat; i++) {
        r = c->at[i].r;
        if (!waited_and_failed(r) || r->x == REDISLOCK_EHELD)
            continue;
        if (guarded && r->x == REDISLOCK_ENOTDURABLE) {
            c->v->guard_refused++;
            continue;
        }
        if (reply_lost(f, r)) {
            c->v->reply_lost++;
            continue;
        }
        if (r->t1 >= f->t0 && r->t1 <= r_end &&
            r->t0 + r->belief * 1000 > r->t1 + 1000000)
            failover_violation(c, "a waiter gave up with its wait to go",
                               &c->at[i], f, r->t1);
        else if (r->t0 > r_end)
            failover_violation(c, "an acquire failed after it", &c->at[i], f,
                               r->t1);
    }
    first = first_grant_after(c, f->t0);
    if (last > r_end && (first == 0 || first > r_end))
        failover_violation(c, "no lock taken within R after it", NULL, f,
                           r_end);
}

long excl_live_check(const excl_rec *h, size_t n, uint64_t seed, int64_t t_base,
                     const char *mode, int limit, excl_live_verdict *v)
{
    live c;
    size_t i;
    int shares = 0;

    memset(v, 0, sizeof *v);
    memset(&c, 0, sizeof c);
    c.seed = seed;
    c.base = t_base;
    c.mode = mode;
    c.limit = limit;
    c.v = v;
    collect(&c, h, n);
    for (i = 0; i < c.nat; i++)
        shares |= c.at[i].r->share;
    for (i = 0; i < c.nat; i++) {
        if (!outcome_known(c.at[i].r))
            continue;
        v->attempts++;
        if (c.at[i].r->x == REDISLOCK_OK &&
            (c.at[i].r->flags & EXCL_A_PROMPT) && c.at[i].r->belief > 0)
            check_free(&c, &c.at[i], "late grant", &v->late_grant);
        if (!waited_and_failed(c.at[i].r))
            continue;
        v->failed++;
        check_free(&c, &c.at[i], "missed grant", &v->missed_grant);
        if (shares)
            check_writer(&c, &c.at[i]);
        check_fair(&c, &c.at[i]);
    }
    check_losses(&c, h, n);
    for (i = 0; i < c.nfault; i++)
        if (excl_fault_failover(c.fault[i]->flags))
            check_failover(&c, c.fault[i], last_time(h, n));
    v->first_s = c.first_us != 0 ? rel_s(&c, c.first_us) : -1;
    free(c.at);
    free(c.fault);
    free(c.ev);
    return v->false_loss + v->missed_grant + v->late_grant + v->starved +
           v->failover;
}
