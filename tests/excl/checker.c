/*
 * The check of a run's history (see excl.h). Every rule compares what one
 * process saw before with what another saw after, on the one clock all
 * processes share, so none needs a tolerance but the lease rule's 2 ms
 * (the server counts whole milliseconds):
 *
 *  - overlap: two believed intervals of one key, of different groups,
 *    intersect, unless both are shares of a shared lock (for a semaphore:
 *    more than its limit at one moment). A holder's belief starts when
 *    acquire returned and ends at the earlier of its release call and the
 *    end of the validity it was told; the next holder's acquire returned
 *    after the server granted it.
 *  - stale write: an accepted write whose fencing token is below that of
 *    a write accepted and answered before it was sent.
 *  - fence order: an acquisition called after another returned has a
 *    token no larger than that one's.
 *  - lease: a belief reaching past the end of the lease the server
 *    reported (PTTL, read while the holder still believed) by over 2 ms.
 *
 * A failover without the replica-sync guard (EXCL_FAULT_LOSSY) may lose
 * a lock, as docs/SAFETY.md says, and the old master may grant one until
 * the sentinels demote it: an overlap of two beliefs, one begun after
 * the failover began, or a lease read after it began, is counted as such
 * a loss, not a violation, when the other belief (for a lease read, its
 * own) began by the new master's confirmation plus
 * EXCL_FAILOVER_SETTLE_MS and lasted no more than one TTL past the later
 * of its start and the confirmation: no renewal after the switch
 * extended it. A lease read is judged by the belief it was read
 * against, not by where its claim ended: a holder that renewed on the
 * old master before the switch, and on the new one after it while the
 * key was still there, kept its lock rightly. A holder that believes
 * longer (it renewed where the key no longer counts) still breaks the
 * rules.
 *
 * A set of keys taken all or none is recorded once per key (its claims,
 * acquisitions, writes and lease reads, each naming its key), so every
 * rule holds for each of its keys: no belief of another group overlaps
 * it on any key, its token is above every earlier one of each key, and
 * its belief outlasts none of its keys' leases. Two sets that share two
 * keys and overlap are two overlaps, one per key.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "excl.h"
#include "test.h"

/* Violations printed per rule; all are counted. */
#define EXCL_PRINT_MAX 12
#define EXCL_LEASE_SLACK_US 2000

typedef struct ctx {
    uint64_t seed;
    int64_t base;
    const char *mode;
    excl_verdict *v;
    int64_t first_us; /* the earliest violation's time */
    const excl_rec **claims;
    size_t nclaims;
    const excl_rec *lossy[4]; /* lossy failovers (EXCL_FAULT_LOSSY) */
    int nlossy;
} ctx;

static double rel(const ctx *c, int64_t t)
{
    return (double)(t - c->base) / 1e6;
}

static void violation(ctx *c, int64_t when)
{
    if (c->first_us == 0 || when < c->first_us)
        c->first_us = when;
}

/* Whether r stands for its section: a single lock's claim, or a set's
 * claim on its lowest key (the set's other keys repeat it). */
static int first_of_set(const excl_rec *r)
{
    return r->set == 0 || (r->set & ((1u << r->key) - 1)) == 0;
}

/* The number of keys of r's set; 0 for a single lock. */
static int set_size(const excl_rec *r)
{
    int k, n = 0;

    for (k = 0; k < EXCL_MAX_KEYS; k++)
        n += (r->set >> k) & 1;
    return n;
}

/* Sections (of every key; a set once) begun by t. */
static long begun(const ctx *c, int64_t t)
{
    long n = 0;
    size_t i;

    for (i = 0; i < c->nclaims; i++)
        n += c->claims[i]->t0 <= t && first_of_set(c->claims[i]);
    return n;
}

static void header(const ctx *c, const char *rule, long count, int key,
                   int64_t when)
{
    printf("VIOLATION %s #%ld on key %d at %.3f s, after %ld sections "
           "(mode %s, seed %" PRIu64 "):\n",
           rule, count, key, rel(c, when), begun(c, when), c->mode, c->seed);
}

/* The keys of r's set as " set {0,2}"; "" for a single lock. */
static const char *set_keys(const excl_rec *r, char *buf, size_t size)
{
    size_t n = 0;
    int k;

    buf[0] = '\0';
    for (k = 0; k < EXCL_MAX_KEYS && r->set != 0; k++)
        if (r->set & (1u << k))
            n += (size_t)snprintf(buf + n, size - n, "%s%d",
                                  n == 0 ? " set {" : ",", k);
    if (n > 0)
        snprintf(buf + n, size - n, "}");
    return buf;
}

static void describe(const ctx *c, const char *role, const excl_rec *r)
{
    char set[32];

    printf("    %s pid %d acquisition %u.%u [%s]%s%s ttl %" PRId64
           " ms fence %" PRId64 ": [%.6f, %.6f] s%s\n",
           role, (int)r->pid, r->acq, r->piece, r->what,
           r->share ? " shared" : "", set_keys(r, set, sizeof set), r->ttl_ms,
           r->fence, rel(c, r->t0), rel(c, r->t1),
           r->kind == EXCL_CLAIM && (r->flags & EXCL_C_CLOSED)
               ? " (ended by its release call)"
               : "");
}

static int by_claim_id(const void *a, const void *b)
{
    const excl_rec *x = *(const excl_rec *const *)a;
    const excl_rec *y = *(const excl_rec *const *)b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->acq != y->acq)
        return x->acq < y->acq ? -1 : 1;
    if (x->piece != y->piece)
        return x->piece < y->piece ? -1 : 1;
    /* A set's claim has one record per key. */
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    /* File order: the later record of a claim replaces the earlier. */
    return x < y ? -1 : x > y;
}

static int by_key_start(const void *a, const void *b)
{
    const excl_rec *x = *(const excl_rec *const *)a;
    const excl_rec *y = *(const excl_rec *const *)b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* The last record of each claim (of each key, for a set), non-empty
 * ones, sorted by key and start. */
static void collect_claims(ctx *c, const excl_rec *h, size_t n)
{
    const excl_rec **all = malloc((n + 1) * sizeof *all);
    size_t i, k = 0, m = 0;

    ASSERT(all != NULL);
    for (i = 0; i < n; i++)
        if (h[i].kind == EXCL_CLAIM)
            all[k++] = &h[i];
    qsort(all, k, sizeof *all, by_claim_id);
    for (i = 0; i < k; i++) {
        const excl_rec *r = all[i];
        if (i + 1 < k && r->pid == all[i + 1]->pid &&
            r->acq == all[i + 1]->acq && r->piece == all[i + 1]->piece &&
            r->key == all[i + 1]->key)
            continue;
        if (r->t1 > r->t0)
            all[m++] = r;
    }
    qsort(all, m, sizeof *all, by_key_start);
    c->claims = all;
    c->nclaims = m;
    for (i = 0; i < m; i++) {
        if (!first_of_set(all[i]))
            continue;
        c->v->sections++;
        c->v->shares += all[i]->share != 0;
        c->v->sets[set_size(all[i])] += all[i]->set != 0;
    }
}

static void collect_lossy(ctx *c, const excl_rec *h, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (h[i].kind == EXCL_FAULT && h[i].x == EXCL_FAULT_LOSSY &&
            c->nlossy < (int)(sizeof c->lossy / sizeof c->lossy[0]))
            c->lossy[c->nlossy++] = &h[i];
}

/* Whether a belief that began at t0 and was believed until end (ttl
 * ms a lease) may have been lost in a lossy failover that began by
 * 'after' (see the header): begun while the old master may still grant
 * (by the confirmation plus EXCL_FAILOVER_SETTLE_MS), and believed no
 * longer than one TTL past the later of its start and the confirmation,
 * so that no renewal after the switch extended it. Counted, not a
 * violation. */
static int lost_in_failover(ctx *c, int64_t t0, int64_t end, int64_t ttl_ms,
                            int64_t after)
{
    const excl_rec *f;
    int64_t from;
    int i;

    for (i = 0; i < c->nlossy; i++) {
        f = c->lossy[i];
        from = t0 > f->t1 ? t0 : f->t1;
        if (after >= f->t0 && t0 <= f->t1 + EXCL_FAILOVER_SETTLE_MS * 1000 &&
            end <= from + ttl_ms * 1000 + EXCL_LEASE_SLACK_US) {
            c->v->failover_lost++;
            return 1;
        }
    }
    return 0;
}

/* The same for the whole of claim a: an overlap with it. */
static int claim_lost_in_failover(ctx *c, const excl_rec *a, int64_t after)
{
    return lost_in_failover(c, a->t0, a->t1, a->ttl_ms, after);
}

/* The claim a lease read r was made for, or NULL. */
static const excl_rec *claim_of(const ctx *c, const excl_rec *r)
{
    size_t i;

    for (i = 0; i < c->nclaims; i++)
        if (c->claims[i]->pid == r->pid && c->claims[i]->acq == r->acq &&
            c->claims[i]->key == r->key && c->claims[i]->t0 <= r->t0)
            return c->claims[i];
    return NULL;
}

static void check_overlaps(ctx *c)
{
    size_t i, j;

    for (i = 0; i < c->nclaims; i++) {
        const excl_rec *a = c->claims[i];
        for (j = i + 1; j < c->nclaims; j++) {
            const excl_rec *b = c->claims[j];
            if (b->key != a->key || b->t0 >= a->t1)
                break;
            if (b->group == a->group)
                continue;
            /* Readers may read together; a writer is alone. */
            if (a->share && b->share) {
                c->v->share_pairs++;
                continue;
            }
            if (claim_lost_in_failover(c, a, b->t0) ||
                claim_lost_in_failover(c, b, a->t0))
                continue;
            violation(c, b->t0);
            if (++c->v->overlaps > EXCL_PRINT_MAX)
                continue;
            header(c,
                   a->share || b->share
                       ? "overlap of a share and an exclusive holder"
                       : "overlap",
                   c->v->overlaps, a->key, b->t0);
            describe(c, "held by", a);
            describe(c, "and by ", b);
            printf("    overlap %.3f ms\n",
                   (double)((a->t1 < b->t1 ? a->t1 : b->t1) - b->t0) / 1e3);
        }
    }
}

/* A semaphore's: at the start of each belief, the beliefs of the key
 * still running then (every belief its own holder's) must be at most
 * limit, that one included. The most at once is reached at a start. */
static void check_limit(ctx *c, int limit)
{
    size_t i, j;

    for (i = 0; i < c->nclaims; i++) {
        const excl_rec *a = c->claims[i];
        int live = 1;

        for (j = i; j-- > 0 && c->claims[j]->key == a->key;)
            live += c->claims[j]->t1 > a->t0;
        if (live <= limit)
            continue;
        violation(c, a->t0);
        if (++c->v->overlaps > EXCL_PRINT_MAX)
            continue;
        header(c, "overlap", c->v->overlaps, a->key, a->t0);
        printf("    %d beliefs at once, limit %d; the latest:\n", live, limit);
        describe(c, "held by", a);
        for (j = i; j-- > 0 && c->claims[j]->key == a->key;)
            if (c->claims[j]->t1 > a->t0)
                describe(c, "and by ", c->claims[j]);
    }
}

static int by_t0(const void *a, const void *b)
{
    const excl_rec *x = *(const excl_rec *const *)a;
    const excl_rec *y = *(const excl_rec *const *)b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int by_t1(const void *a, const void *b)
{
    const excl_rec *x = *(const excl_rec *const *)a;
    const excl_rec *y = *(const excl_rec *const *)b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

/* Records of one kind (and, for writes, accepted), twice: sorted by when
 * they were sent and by when they were answered. */
static size_t pick(const excl_rec *h, size_t n, int kind, const excl_rec ***s,
                   const excl_rec ***a)
{
    size_t i, k = 0;

    *s = malloc((n + 1) * sizeof **s);
    *a = malloc((n + 1) * sizeof **a);
    ASSERT(*s != NULL && *a != NULL);
    for (i = 0; i < n; i++) {
        if (h[i].kind != kind || h[i].fence <= 0)
            continue;
        if (kind == EXCL_WRITE && h[i].x != EXCL_W_ACCEPTED)
            continue;
        (*s)[k] = (*a)[k] = &h[i];
        k++;
    }
    qsort(*s, k, sizeof **s, by_t0);
    qsort(*a, k, sizeof **a, by_t1);
    return k;
}

/*
 * For each record x in sent order, the record with the largest token
 * among those of its key answered before x was sent; calls bad() when
 * x's token is below it (writes: stale) or not above it (acquisitions).
 */
static void sweep(ctx *c, const excl_rec **sent, const excl_rec **answered,
                  size_t k, int strict, const char *rule, long *count)
{
    const excl_rec *best = NULL;
    size_t i, j = 0;
    int key = -1;

    for (i = 0; i < k; i++) {
        const excl_rec *x = sent[i];
        if (x->key != key) {
            key = x->key;
            best = NULL;
            while (j < k && answered[j]->key < key)
                j++;
        }
        for (; j < k && answered[j]->key == key && answered[j]->t1 < x->t0; j++)
            if (best == NULL || answered[j]->fence > best->fence)
                best = answered[j];
        if (best == NULL ||
            (strict ? x->fence > best->fence : x->fence >= best->fence))
            continue;
        violation(c, x->t1);
        if (++*count > EXCL_PRINT_MAX)
            continue;
        header(c, rule, *count, key, x->t1);
        describe(c, strict ? "acquired by" : "written by", x);
        describe(c, strict ? "after     " : "after     ", best);
    }
}

static void check_fences(ctx *c, const excl_rec *h, size_t n)
{
    const excl_rec **s, **a;
    size_t k;

    k = pick(h, n, EXCL_WRITE, &s, &a);
    sweep(c, s, a, k, 0, "stale fenced write accepted", &c->v->stale);
    free(s);
    free(a);
    k = pick(h, n, EXCL_ACQ, &s, &a);
    c->v->acquires = (long)k;
    sweep(c, s, a, k, 1, "fencing token not larger than an earlier one's",
          &c->v->fence_order);
    free(s);
    free(a);
}

static void check_leases(ctx *c, const excl_rec *h, size_t n)
{
    const excl_rec *a;
    char set[32];
    size_t i;

    for (i = 0; i < n; i++) {
        const excl_rec *r = &h[i];
        /* PTTL -2: not held (for this holder) when it answered. */
        int64_t end = r->t1 + (r->x == -2 ? 0 : r->x * 1000);
        if (r->kind != EXCL_LEASE)
            continue;
        c->v->leases_checked++;
        if (r->belief <= r->t0 || r->belief <= end + EXCL_LEASE_SLACK_US)
            continue;
        /* Judged by the belief the read was made against, not by the
         * claim's end: a renewal sent to the old master after the
         * promotion, before the sentinels switched, lengthens the belief
         * but not the new master's lease; the next renewal, sent to the
         * new master once they name it, may then find the key still
         * there and keep it, rightly, while the read in between found
         * the lease shorter than the belief. */
        if (c->nlossy > 0 && (a = claim_of(c, r)) != NULL &&
            lost_in_failover(c, a->t0, r->belief, a->ttl_ms, r->t1))
            continue;
        violation(c, r->t1);
        if (++c->v->lease > EXCL_PRINT_MAX)
            continue;
        header(c, "belief outlasts the server's lease", c->v->lease, r->key,
               r->t1);
        printf("    pid %d acquisition %u [%s]%s ttl %" PRId64
               " ms believed it held until %.6f s; the server, asked in "
               "[%.6f, %.6f] s, said PTTL %" PRId64 " ms (%s): ends by "
               "%.6f s, %.3f ms earlier\n",
               (int)r->pid, r->acq, r->what, set_keys(r, set, sizeof set),
               r->ttl_ms, rel(c, r->belief), rel(c, r->t0), rel(c, r->t1), r->x,
               r->x == -2 ? "not held with this token" : "held", rel(c, end),
               (double)(r->belief - end) / 1e3);
    }
}

static void count_writes(excl_verdict *v, const excl_rec *h, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (h[i].kind != EXCL_WRITE)
            continue;
        if (h[i].x == EXCL_W_ACCEPTED)
            v->writes_ok++;
        else if (h[i].x == EXCL_W_REFUSED)
            v->writes_refused++;
        else
            v->writes_failed++;
    }
}

long excl_check(const excl_rec *h, size_t n, uint64_t seed, int64_t t_base,
                const char *mode, int limit, excl_verdict *v)
{
    ctx c;

    memset(v, 0, sizeof *v);
    memset(&c, 0, sizeof c);
    c.seed = seed;
    c.base = t_base;
    c.mode = mode;
    c.v = v;
    collect_claims(&c, h, n);
    collect_lossy(&c, h, n);
    if (limit > 1)
        check_limit(&c, limit);
    else
        check_overlaps(&c);
    check_fences(&c, h, n);
    check_leases(&c, h, n);
    count_writes(v, h, n);
    v->first_s = -1;
    v->first_sections = -1;
    if (c.first_us != 0) {
        v->first_s = rel(&c, c.first_us);
        v->first_sections = begun(&c, c.first_us);
    }
    free(c.claims);
    return v->overlaps + v->stale + v->fence_order + v->lease;
}
