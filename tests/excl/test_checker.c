/*
 * The exclusion checker's rules on made-up histories: each rule fires on
 * a violation and stays quiet at its boundary, and a later record of a
 * claim replaces an earlier one. No server.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "excl/excl.h"
#include "test.h"

#define H_MAX 16

typedef struct hist {
    excl_rec r[H_MAX];
    size_t n;
} hist;

static excl_rec *add(hist *h, int kind, int pid, int64_t t0, int64_t t1)
{
    excl_rec *r = &h->r[h->n++];

    ASSERT(h->n <= H_MAX);
    memset(r, 0, sizeof *r);
    r->magic = EXCL_MAGIC;
    r->kind = (uint8_t)kind;
    r->pid = pid;
    r->acq = 1;
    r->group = (uint64_t)pid;
    r->t0 = t0;
    r->t1 = t1;
    r->fence = 1;
    return r;
}

static excl_verdict check(const hist *h)
{
    excl_verdict v;

    excl_check(h->r, h->n, 1, 0, "rules", 0, &v);
    return v;
}

/* As check(), for semaphores of limit 2. */
static excl_verdict check2(const hist *h)
{
    excl_verdict v;

    excl_check(h->r, h->n, 1, 0, "rules", 2, &v);
    return v;
}

/* A semaphore's overlap: three beliefs at once over a limit of 2, and not
 * two, nor three that only touch. */
void test_excl_checker_limit(void)
{
    hist h;

    memset(&h, 0, sizeof h);
    add(&h, EXCL_CLAIM, 1, 0, 100);
    add(&h, EXCL_CLAIM, 2, 10, 60);
    ASSERT_EQ_INT(check2(&h).overlaps, 0);
    add(&h, EXCL_CLAIM, 3, 60, 120);
    ASSERT_EQ_INT(check2(&h).overlaps, 0);
    add(&h, EXCL_CLAIM, 4, 99, 130);
    ASSERT_EQ_INT(check2(&h).overlaps, 1);
    /* The same history as a lock: every pair that intersects. */
    ASSERT_EQ_INT(check(&h).overlaps, 4);
}

/* As check(), keeping what the checker printed in out (and printing it
 * still, for the log). */
static excl_verdict check_report(const hist *h, char *out, size_t size)
{
    excl_verdict v;
    FILE *f = tmpfile();
    int saved;
    size_t n;

    ASSERT(f != NULL);
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    ASSERT(saved >= 0 && dup2(fileno(f), STDOUT_FILENO) >= 0);
    excl_check(h->r, h->n, 1, 0, "rules", 0, &v);
    fflush(stdout);
    ASSERT(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    rewind(f);
    n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
    fputs(out, stdout);
    return v;
}

/* A claim taken as a share (share 1) or exclusively (0), labelled what. */
static excl_rec *claim(hist *h, int pid, int share, const char *what,
                       int64_t t0, int64_t t1)
{
    excl_rec *r = add(h, EXCL_CLAIM, pid, t0, t1);

    r->share = (uint8_t)share;
    snprintf(r->what, sizeof r->what, "%s", what);
    return r;
}

/* A shared lock's overlap: shares overlap one another freely (counted),
 * an exclusive belief overlaps nothing, touching is not overlapping, and
 * the report says which holders and which kind each was. */
void test_excl_checker_shared(void)
{
    char out[4096];
    excl_verdict v;
    hist h;

    /* Two shares at once: allowed, and counted as a pair. */
    memset(&h, 0, sizeof h);
    claim(&h, 1, 1, "r1", 0, 100);
    claim(&h, 2, 1, "r2", 50, 150);
    v = check(&h);
    ASSERT_EQ_INT(v.overlaps, 0);
    ASSERT_EQ_INT(v.share_pairs, 1);
    ASSERT_EQ_INT(v.shares, 2);
    /* A writer that starts as the first share ends: only the second. */
    claim(&h, 3, 0, "w3", 100, 120);
    v = check_report(&h, out, sizeof out);
    ASSERT_EQ_INT(v.overlaps, 1);
    ASSERT_EQ_INT(v.share_pairs, 1);
    ASSERT(strstr(out, "overlap of a share and an exclusive holder #1 on "
                       "key 0") != NULL);
    ASSERT(strstr(out, "held by pid 2 acquisition 1.0 [r2] shared ttl") !=
           NULL);
    ASSERT(strstr(out, "and by  pid 3 acquisition 1.0 [w3] ttl") != NULL);
    ASSERT(strstr(out, "pid 1 ") == NULL);
    /* Once the second share ends where the writer starts, no overlap. */
    h.r[1].t1 = 100;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    /* A share that begins inside the writer's belief. */
    claim(&h, 4, 1, "r4", 119, 200);
    ASSERT_EQ_INT(check(&h).overlaps, 1);

    /* Two exclusive beliefs still may not overlap, whatever else runs. */
    memset(&h, 0, sizeof h);
    claim(&h, 1, 1, "r1", 0, 300);
    claim(&h, 2, 0, "w2", 100, 200);
    claim(&h, 3, 0, "w3", 150, 250);
    v = check_report(&h, out, sizeof out);
    ASSERT_EQ_INT(v.overlaps, 3);
    ASSERT_EQ_INT(v.share_pairs, 0);
    ASSERT(strstr(out, "VIOLATION overlap #3 on key 0") != NULL);
    ASSERT(strstr(out, "held by pid 2 acquisition 1.0 [w2] ttl") != NULL);
    ASSERT(strstr(out, "and by  pid 3 acquisition 1.0 [w3] ttl") != NULL);
    /* As shares, the three are fine. */
    h.r[1].share = h.r[2].share = 1;
    v = check(&h);
    ASSERT_EQ_INT(v.overlaps, 0);
    ASSERT_EQ_INT(v.share_pairs, 3);

    /* A share's fencing token is ordered like any other's. */
    memset(&h, 0, sizeof h);
    add(&h, EXCL_ACQ, 1, 50, 100)->fence = 10;
    add(&h, EXCL_ACQ, 2, 101, 120)->fence = 10;
    h.r[1].share = 1;
    ASSERT_EQ_INT(check(&h).fence_order, 1);
}

/* A set's belief as the worker records it: one claim per key of set
 * (bit k: key k), each naming its key, with the same pid, acquisition,
 * interval and token. Returns the first key's. */
static excl_rec *set_claim(hist *h, int pid, unsigned set, const char *what,
                           int64_t t0, int64_t t1)
{
    excl_rec *r, *first = NULL;
    int k;

    for (k = 0; k < EXCL_MAX_KEYS; k++) {
        if (!(set & (1u << k)))
            continue;
        r = claim(h, pid, 0, what, t0, t1);
        r->key = (uint8_t)k;
        r->set = set;
        first = first != NULL ? first : r;
    }
    return first;
}

/* Sets: a belief on every key of the set, each checked against that
 * key's other beliefs, and a later record of one key's claim replacing
 * only that key's. The cases of test_excl_checker_rules, for sets. */
static void rules_of_sets(void)
{
    char out[4096];
    excl_verdict v;
    hist h;
    excl_rec *r;

    /* A set of keys 0 and 1 and a plain lock of key 0: an overlap on key
     * 0, though the set's record of key 1 came later; the set counts as
     * one section of two keys. */
    memset(&h, 0, sizeof h);
    set_claim(&h, 1, 3, "s01", 0, 100);
    claim(&h, 2, 0, "p0", 50, 150);
    v = check_report(&h, out, sizeof out);
    ASSERT_EQ_INT(v.overlaps, 1);
    ASSERT_EQ_INT(v.sections, 2);
    ASSERT_EQ_INT(v.sets[2], 1);
    ASSERT_EQ_INT(v.first_sections, 2);
    ASSERT(strstr(out, "VIOLATION overlap #1 on key 0") != NULL);
    ASSERT(strstr(out, "held by pid 1 acquisition 1.0 [s01] set {0,1} ttl") !=
           NULL);
    /* The plain lock on the set's second key instead. */
    h.r[2].key = 1;
    v = check_report(&h, out, sizeof out);
    ASSERT_EQ_INT(v.overlaps, 1);
    ASSERT(strstr(out, "VIOLATION overlap #1 on key 1") != NULL);
    /* On a key outside the set: none. */
    h.r[2].key = 2;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    /* A later record of the set's claim replaces the earlier, key by key:
     * the set's belief of key 1 ending at 50 leaves key 0's as it was. */
    h.r[2].key = 0;
    r = claim(&h, 1, 0, "s01", 0, 50);
    r->key = 1;
    r->set = 3;
    ASSERT_EQ_INT(check(&h).overlaps, 1);
    r->key = 0;
    ASSERT_EQ_INT(check(&h).overlaps, 0);

    /* Two sets sharing key 1 overlap there; two disjoint ones never. */
    memset(&h, 0, sizeof h);
    set_claim(&h, 1, 3, "s01", 0, 100);
    set_claim(&h, 2, 6, "s12", 99, 200);
    v = check_report(&h, out, sizeof out);
    ASSERT_EQ_INT(v.overlaps, 1);
    ASSERT_EQ_INT(v.sets[2], 2);
    ASSERT(strstr(out, "VIOLATION overlap #1 on key 1") != NULL);
    ASSERT(strstr(out, "and by  pid 2 acquisition 1.0 [s12] set {1,2}") !=
           NULL);
    memset(&h, 0, sizeof h);
    set_claim(&h, 1, 3, "s01", 0, 100);
    set_claim(&h, 2, 4, "s2", 50, 200);
    v = check(&h);
    ASSERT_EQ_INT(v.overlaps, 0);
    ASSERT_EQ_INT(v.sets[1], 1);
    ASSERT_EQ_INT(v.sets[2], 1);

    /* Fence order, key by key: a set's token above each key's earlier
     * ones, and each key's later ones above the set's. */
    memset(&h, 0, sizeof h);
    r = add(&h, EXCL_ACQ, 1, 0, 10);
    r->fence = 20;
    r = add(&h, EXCL_ACQ, 2, 11, 20);
    r->fence = 15;
    r->set = 3;
    r = add(&h, EXCL_ACQ, 2, 11, 20);
    r->fence = 15;
    r->set = 3;
    r->key = 1;
    ASSERT_EQ_INT(check(&h).fence_order, 1);
    h.r[1].fence = h.r[2].fence = 21;
    ASSERT_EQ_INT(check(&h).fence_order, 0);
    r = add(&h, EXCL_ACQ, 3, 21, 30);
    r->key = 1;
    r->fence = 21;
    ASSERT_EQ_INT(check(&h).fence_order, 1);
    r->fence = 22;
    ASSERT_EQ_INT(check(&h).fence_order, 0);

    /* Lease: the set's belief against each key's PTTL; one key gone while
     * believed is enough. */
    memset(&h, 0, sizeof h);
    r = add(&h, EXCL_LEASE, 1, 1000, 2000);
    r->set = 3;
    r->x = 100;
    r->belief = 2000 + 100 * 1000;
    r = add(&h, EXCL_LEASE, 1, 2000, 3000);
    r->set = 3;
    r->key = 1;
    r->x = 100;
    r->belief = 2000 + 100 * 1000;
    ASSERT_EQ_INT(check(&h).lease, 0);
    r->x = -2;
    ASSERT_EQ_INT(check(&h).lease, 1);
}

void test_excl_checker_rules(void)
{
    hist h;
    excl_rec *r;

    /* Overlap: different groups only, and touching is not overlapping. */
    memset(&h, 0, sizeof h);
    add(&h, EXCL_CLAIM, 1, 100, 200);
    add(&h, EXCL_CLAIM, 2, 199, 300);
    ASSERT_EQ_INT(check(&h).overlaps, 1);
    ASSERT_EQ_INT(check(&h).first_sections, 2);
    h.r[1].group = 1;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    h.r[1].group = 2;
    h.r[1].t0 = 200;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    /* A later record of the same claim replaces the earlier one. */
    h.r[1].t0 = 150;
    ASSERT_EQ_INT(check(&h).overlaps, 1);
    r = add(&h, EXCL_CLAIM, 1, 100, 140);
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    r->t1 = 160;
    ASSERT_EQ_INT(check(&h).overlaps, 1);

    /* Stale write: accepted, token below one accepted and answered before
     * it was sent. */
    memset(&h, 0, sizeof h);
    r = add(&h, EXCL_WRITE, 1, 90, 100);
    r->fence = 10;
    r->x = EXCL_W_ACCEPTED;
    r = add(&h, EXCL_WRITE, 2, 101, 110);
    r->fence = 9;
    r->x = EXCL_W_ACCEPTED;
    ASSERT_EQ_INT(check(&h).stale, 1);
    r->t0 = 100; /* sent before the other's answer */
    ASSERT_EQ_INT(check(&h).stale, 0);
    r->t0 = 101;
    r->x = EXCL_W_REFUSED;
    ASSERT_EQ_INT(check(&h).stale, 0);
    r->x = EXCL_W_ACCEPTED;
    r->fence = 10; /* the same token: the same holder's */
    ASSERT_EQ_INT(check(&h).stale, 0);

    /* Fence order: called after another returned, a larger token. */
    memset(&h, 0, sizeof h);
    r = add(&h, EXCL_ACQ, 1, 50, 100);
    r->fence = 10;
    r = add(&h, EXCL_ACQ, 2, 101, 120);
    r->fence = 10;
    ASSERT_EQ_INT(check(&h).fence_order, 1);
    r->fence = 11;
    ASSERT_EQ_INT(check(&h).fence_order, 0);
    r->fence = 5;
    r->t0 = 99; /* called before the other returned */
    ASSERT_EQ_INT(check(&h).fence_order, 0);

    /* Lease: a belief past the server's end (answer + PTTL) by over 2 ms,
     * while still believed when asked. */
    memset(&h, 0, sizeof h);
    r = add(&h, EXCL_LEASE, 1, 1000, 2000);
    r->x = 100;
    r->belief = 2000 + 100 * 1000 + 2001;
    ASSERT_EQ_INT(check(&h).lease, 1);
    r->belief = 2000 + 100 * 1000 + 2000;
    ASSERT_EQ_INT(check(&h).lease, 0);
    r->x = -2; /* gone, while believed */
    r->belief = 2000 + 2001;
    ASSERT_EQ_INT(check(&h).lease, 1);
    r->belief = 2000 + 2000;
    ASSERT_EQ_INT(check(&h).lease, 0);
    r->belief = 900; /* no longer believed when asked */
    ASSERT_EQ_INT(check(&h).lease, 0);

    rules_of_sets();
}

/* A failover without the guard (EXCL_FAULT_LOSSY) may lose a lock: a
 * second holder that came after it began, while the first still
 * believes, is counted as such a loss while the first belief lasted no
 * more than a TTL past the later of its start and the new master's
 * confirmation (no renewal after the switch extended it); past that,
 * before the failover, or through a guarded one it is an overlap, and
 * the same for a lease read. */
void test_excl_checker_failover_loss(void)
{
    excl_rec *a, *f, *l;
    hist h;

    memset(&h, 0, sizeof h);
    f = add(&h, EXCL_FAULT, 0, 1000000, 3000000);
    f->flags = EXCL_F_SENTINEL_FAILOVER;
    f->x = EXCL_FAULT_LOSSY;
    /* Taken on the old master after the switch, believed a TTL. */
    a = add(&h, EXCL_CLAIM, 1, 5000000, 6000000);
    a->ttl_ms = 1000;
    add(&h, EXCL_CLAIM, 2, 5500000, 5600000)->fence = 2;
    l = add(&h, EXCL_LEASE, 1, 5700000, 5700100);
    l->x = -2;
    l->belief = 6000000;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    ASSERT_EQ_INT(check(&h).lease, 0);
    ASSERT_EQ_INT(check(&h).failover_lost, 2);
    /* The lost belief the later one. */
    h.r[2].t0 = 4000000;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    h.r[2].t0 = 5500000;
    /* Renewed there once: past a TTL from its start. */
    a->t1 = l->belief = 6000000 + 3000;
    ASSERT_EQ_INT(check(&h).overlaps, 1);
    ASSERT_EQ_INT(check(&h).lease, 1);
    /* Held from before the switch: a TTL past the confirmation. */
    a->t0 = 500000;
    a->t1 = l->belief = 4000000;
    h.r[2].t0 = 3500000;
    h.r[2].t1 = 3600000;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    a->t1 = l->belief = 4000000 + 3000;
    ASSERT_EQ_INT(check(&h).overlaps, 1);
    /* A second holder before the failover began. */
    a->t1 = l->belief = 4000000;
    h.r[2].t0 = 900000;
    h.r[2].t1 = 950000;
    ASSERT_EQ_INT(check(&h).overlaps, 1);
    h.r[2].t0 = 3500000;
    h.r[2].t1 = 3600000;
    ASSERT_EQ_INT(check(&h).overlaps, 0);
    /* A lease read during the switch, against a belief a renewal on the
     * old master lengthened before the confirmation (2.5 s + the TTL),
     * while the claim goes on (renewed on the new master once named):
     * judged by the belief read against, not by the claim's end. */
    a->t1 = 9000000;
    l->t0 = 2800000;
    l->t1 = 2800100;
    l->x = 200;
    l->belief = 3500000;
    ASSERT_EQ_INT(check(&h).lease, 0);
    /* A belief a TTL past the confirmation is not excused. */
    l->belief = 4000000 + 3000;
    ASSERT_EQ_INT(check(&h).lease, 1);
    a->t1 = l->belief = 4000000;
    l->t0 = 5700000;
    l->t1 = 5700100;
    l->x = -2;
    /* Guarded: no loss is allowed. */
    f->x = EXCL_FAULT_GUARDED;
    l->t0 = 3500000;
    l->t1 = 3500100;
    ASSERT_EQ_INT(check(&h).lease, 1);
    ASSERT_EQ_INT(check(&h).overlaps, 1);
}
