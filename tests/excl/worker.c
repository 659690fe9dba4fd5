/*
 * A worker: a forked process that takes keys over and over in its mode,
 * through the public API only, and records what it believed. A section:
 * acquire; record the claim [when acquire returned, the end of the
 * validity it was told]; work in small steps, re-reading the validity
 * (the watchdog moves it), making fenced writes, extending, re-entering or
 * handing the token to a second handle, and asking the server for the
 * lease now and then; record the claim's end as the moment the release
 * call starts (or the validity's end if earlier); release. A section may
 * take a set of keys with one handle: its claims, acquisitions, writes
 * and lease reads are then recorded for each of its keys.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "excl_int.h"
#include "harness/util.h"

/* Ask the server for the lease at most this often while working. */
#define EXCL_LEASE_EVERY_US 40000
#define EXCL_MAX_ACTIONS 12

/* One believed interval, as it moves. */
typedef struct claim {
    excl_rec r;
    int64_t end;         /* the believed end; meaningful while open */
    int open;            /* still believed */
    redislock_lock *src; /* the handle whose validity is the belief */
    int64_t next_lease;  /* when to ask the server next */
} claim;

void excl_key_name(int key, char *buf, size_t size)
{
    snprintf(buf, size, "excl:k%d", key);
}

void excl_res_name(int key, char *buf, size_t size)
{
    snprintf(buf, size, "excl:res%d", key);
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h & ~(1ULL << 63);
}

/* ---- Records */

void excl_fill(const excl_worker *w, const excl_section *s, excl_rec *r,
               int kind)
{
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)kind;
    r->key = (uint8_t)s->key;
    r->pid = w->pid;
    r->acq = w->acq;
    r->share = s->o.shared != 0;
    r->set = s->set;
    r->ttl_ms = s->o.ttl_ms;
    snprintf(r->what, sizeof r->what, "%s", s->what);
}

static void record_acq(excl_worker *w, const excl_section *s, int64_t t0,
                       int64_t t1, int64_t fence, int64_t ttl)
{
    excl_rec r;

    excl_fill(w, s, &r, EXCL_ACQ);
    r.t0 = t0;
    r.t1 = t1;
    r.fence = fence;
    r.ttl_ms = ttl;
    /* A set's: one per key, so that its token is compared with each key's
     * earlier tokens and each key's later ones with it. */
    excl_history_add_each(w->t->hist_fd, &r);
}

/* The keys the section takes, in order; returns how many. */
static int section_keys(const excl_section *s, int *keys)
{
    int k, n = 0;

    if (s->set == 0) {
        keys[0] = s->key;
        return 1;
    }
    for (k = 0; k < EXCL_MAX_KEYS; k++)
        if (s->set & (1u << k))
            keys[n++] = k;
    return n;
}

static void publish(excl_worker *w, claim *c)
{
    excl_slot *sl = &w->sh->slot[w->idx];

    atomic_store(&sl->end_us, c->open ? c->end : 0);
    /* A set's belief covers each of its keys: one record per key. */
    excl_history_add_each(w->t->hist_fd, &c->r);
}

/* The validity the handle reports, as an end time; 0 when none. */
static int64_t believed_end(redislock_lock *l, int64_t *at)
{
    int64_t t = excl_now_us(), v = redislock_valid_ms(l);

    if (at != NULL)
        *at = t;
    return v > 0 ? t + v * 1000 : 0;
}

/* A new belief end read at time at: the same piece while the belief
 * held, a new piece when it had lapsed and came back (a renewal after a
 * stop). No validity at at ends the belief there: the handle reports 0
 * for the last part of a millisecond too (redislock_valid_ms rounds
 * down), so the end it told before may still lie ahead; a holder that
 * releases after at (an "edge" hold) and whose next section takes the
 * key at once must not be counted as believing past at. */
static void claim_move(excl_worker *w, claim *c, int64_t end, int64_t at)
{
    if (end == 0) {
        if (c->open) {
            c->open = 0;
            if (at < c->end)
                c->r.t1 = at;
            publish(w, c);
        }
        return;
    }
    if (!c->open || at >= c->end) {
        if (c->r.t1 > c->r.t0)
            c->r.piece++;
        c->r.t0 = at;
        c->r.flags = 0;
        c->open = 1;
    } else if (end > c->end - 500 && end < c->end + 500) {
        return; /* unchanged: no record */
    }
    c->end = end;
    c->r.t1 = end;
    publish(w, c);
}

static void claim_read(excl_worker *w, claim *c)
{
    int64_t at, end = believed_end(c->src, &at);

    claim_move(w, c, end, at);
}

/* After an extend or re-entry called at t_call that returned err at
 * t_ret. A shorter lease may have started before the reply: when the
 * handle then reports no validity, the belief ends at the call. */
static void claim_after(excl_worker *w, claim *c, int64_t t_call, int64_t t_ret,
                        redislock_err err)
{
    int64_t at, end = believed_end(c->src, &at);

    if (err == REDISLOCK_OK && end > 0 && c->open && at < c->end) {
        c->end = end; /* may be earlier than before: a shorter lease */
        c->r.t1 = end;
        publish(w, c);
    } else if (err == REDISLOCK_OK && end == 0 && c->open) {
        c->r.t1 = c->end < t_call ? c->end : t_call;
        c->open = 0;
        publish(w, c);
    } else if ((err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST) &&
               c->open) {
        c->r.t1 = c->end < t_ret ? c->end : t_ret;
        c->open = 0;
        publish(w, c);
    } else {
        claim_move(w, c, end, at);
    }
}

static void claim_close(excl_worker *w, claim *c, int64_t t_rel)
{
    if (c->open && t_rel < c->end)
        c->r.t1 = t_rel;
    c->r.flags |= c->open && t_rel < c->end ? EXCL_C_CLOSED : 0;
    c->open = 0;
    publish(w, c);
    atomic_store(&w->sh->slot[w->idx].state, EXCL_IDLE);
}

/* Asks the servers for the lease and records it with the belief. A
 * set's belief must outlast none of its keys' leases (one token, one
 * lease, but each key expires by itself): each key is asked in turn, and
 * each answer recorded for its key. */
static void lease_check(excl_worker *w, const excl_section *s, claim *c)
{
    const char *id = redislock_token(c->src);
    int64_t t0 = excl_now_us(), belief = c->open ? c->end : 0, pttl;
    int keys[EXCL_MAX_KEYS], n = section_keys(s, keys), i;
    excl_rec r;

    c->next_lease = t0 + EXCL_LEASE_EVERY_US;
    if (id == NULL || belief <= t0)
        return;
    for (i = 0; i < n; i++) {
        t0 = excl_now_us();
        if (!excl_truth_lease(w, keys[i], id, redislock_fence(c->src), &pttl))
            continue;
        excl_fill(w, s, &r, EXCL_LEASE);
        r.key = (uint8_t)keys[i];
        r.t0 = t0;
        r.t1 = excl_now_us();
        r.x = pttl;
        r.belief = belief;
        excl_history_add(w->t->hist_fd, &r);
    }
}

/* A loss the holder was told at t (how: EXCL_L_*, why: the error), with
 * the server's view of the holder's own lease (id, token fence) read at
 * once, for each of its keys. */
static void record_loss(excl_worker *w, const excl_section *s, const char *id,
                        int64_t fence, int how, redislock_err why,
                        const char *detail, int64_t t)
{
    int keys[EXCL_MAX_KEYS], n = section_keys(s, keys), i;
    int64_t pttl;
    excl_rec r;

    for (i = 0; i < n; i++) {
        excl_fill(w, s, &r, EXCL_LOSS);
        r.key = (uint8_t)keys[i];
        r.fence = fence;
        r.flags = (uint8_t)how;
        r.belief = why;
        snprintf(r.why, sizeof r.why, "%s", detail);
        r.t0 = t;
        r.x = id != NULL && excl_truth_kept(w, keys[i], id, fence, &pttl)
                  ? pttl
                  : EXCL_PENDING;
        r.t1 = excl_now_us();
        excl_history_add(w->t->hist_fd, &r);
    }
}

/* What an extend or a release said, when it said the lock is gone. */
static void loss_if(excl_worker *w, const excl_section *s, const claim *c,
                    int how, redislock_err err)
{
    if (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED)
        record_loss(w, s, redislock_token(c->src), c->r.fence, how, err,
                    redislock_errdetail(), excl_now_us());
}

/* The watchdog's on_lost, on its thread: the worker records it. */
static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    excl_worker *w = arg;

    (void)l;
    snprintf(w->lost_detail, sizeof w->lost_detail, "%s",
             redislock_errdetail());
    atomic_store(&w->lost_why, (int)why);
    atomic_store(&w->lost_at, excl_now_us());
}

static void lost_told(excl_worker *w, const excl_section *s, const claim *c)
{
    int64_t t = atomic_exchange(&w->lost_at, 0);

    if (t != 0)
        record_loss(w, s, redislock_token(c->src), c->r.fence,
                    EXCL_L_CALLBACK, (redislock_err)atomic_load(&w->lost_why),
                    w->lost_detail, t);
}

/*
 * A fenced write with the holder's token, by writers and by readers
 * alike: the store keeps the highest token it has seen, so a reader's
 * write stands for its read of the resource, stamped with its token. What
 * is checked (the stale-write rule) holds for both: no write is accepted
 * with a token below one accepted and answered before it was sent. A
 * writer stopped past its lease thus has its late write refused once any
 * later holder, reader or writer, has written. A reader's write refused
 * because a later reader holding beside it wrote first is what the store
 * should do, counted as refused and not a violation.
 *
 * A set writes each of its keys' resources with its one token, which
 * the library makes larger than every earlier token of each key (and
 * each key's later tokens larger than it): per-key resources stay
 * ordered whether a set or a single lock wrote them last, and a set
 * stopped past its lease has each late write refused once a later
 * holder of that key has written.
 */
static void fenced_write(excl_worker *w, const excl_section *s, claim *c)
{
    char res[32], val[48];
    int keys[EXCL_MAX_KEYS], n = section_keys(s, keys), i;
    excl_rec r;
    redislock_err err;

    if (c->r.fence <= 0)
        return;
    snprintf(val, sizeof val, "%d:%u", w->pid, w->acq);
    for (i = 0; i < n; i++) {
        excl_res_name(keys[i], res, sizeof res);
        excl_fill(w, s, &r, EXCL_WRITE);
        r.key = (uint8_t)keys[i];
        r.fence = c->r.fence;
        r.t0 = excl_now_us();
        err = redislock_fenced_set(w->rc, res, strlen(res), val, strlen(val),
                                   c->r.fence);
        r.t1 = excl_now_us();
        r.x = err == REDISLOCK_OK       ? EXCL_W_ACCEPTED
              : err == REDISLOCK_ESTALE ? EXCL_W_REFUSED
                                        : EXCL_W_ERROR;
        excl_history_add(w->t->hist_fd, &r);
    }
}

/* ---- The actions of a section */

enum { A_WRITE, A_EXTEND, A_NEST, A_UNNEST, A_ADOPT };

typedef struct plan {
    int n, next;
    int kind[EXCL_MAX_ACTIONS];
    int64_t at[EXCL_MAX_ACTIONS];
    int arg[EXCL_MAX_ACTIONS];
    int nested; /* holds taken by re-entry, not yet released */
    redislock_lock *adopter;
} plan;

static void plan_add(plan *p, int kind, int64_t at, int arg)
{
    int i;

    if (p->n == EXCL_MAX_ACTIONS)
        return;
    for (i = p->n++; i > 0 && p->at[i - 1] > at; i--) {
        p->kind[i] = p->kind[i - 1];
        p->at[i] = p->at[i - 1];
        p->arg[i] = p->arg[i - 1];
    }
    p->kind[i] = kind;
    p->at[i] = at;
    p->arg[i] = arg;
}

/* Spreads the section's actions over [from, to]. */
static void plan_make(excl_worker *w, const excl_section *s, plan *p,
                      int64_t from, int64_t to)
{
    int i;
    int64_t t;

    memset(p, 0, sizeof *p);
    if (to < from)
        to = from;
    for (i = 0; i < s->writes; i++)
        plan_add(p, A_WRITE, excl_rng_range(&w->rng, from, to), i);
    for (i = 0; i < s->extends; i++)
        plan_add(p, A_EXTEND, excl_rng_range(&w->rng, from, to), i);
    for (i = 0; i < s->nested; i++) {
        t = excl_rng_range(&w->rng, from, to);
        plan_add(p, A_NEST, t, i);
        plan_add(p, A_UNNEST, excl_rng_range(&w->rng, t, to), i);
    }
    if (s->adopt)
        plan_add(p, A_ADOPT, excl_rng_range(&w->rng, from, to), s->adopt);
}

/* ---- The calls, blocking or, in a loop mode, on the event loop (the
 * worker's poll() loop turned until the callback comes). */

typedef struct loop_op {
    int done;
    redislock_err err;
} loop_op;

static void loop_op_done(redislock_lock *l, redislock_err err, void *arg)
{
    loop_op *op = arg;

    (void)l;
    op->err = err;
    op->done = 1;
}

static redislock_err loop_wait(excl_worker *w, redislock_err err, loop_op *op)
{
    while (err == REDISLOCK_OK && !op->done)
        app_turn(&w->app);
    return err != REDISLOCK_OK ? err : op->err;
}

static redislock_err w_acquire(excl_worker *w, redislock_lock *l,
                               const redislock_acquire_options *o)
{
    loop_op op = {0};

    if (w->lp == NULL)
        return redislock_acquire(l, o);
    return loop_wait(w, redislock_loop_acquire(w->lp, l, o, loop_op_done, &op),
                     &op);
}

static redislock_err w_release(excl_worker *w, redislock_lock *l,
                               int64_t hold_ms)
{
    loop_op op = {0};

    if (w->lp == NULL)
        return hold_ms ? redislock_release_hold(l, hold_ms)
                       : redislock_release(l);
    return loop_wait(
        w, redislock_loop_release(w->lp, l, hold_ms, loop_op_done, &op), &op);
}

/* An election's campaign, proclaim and resignation, as w_acquire,
 * w_extend and w_release. */
static redislock_err w_campaign(excl_worker *w, redislock_lock *l,
                                const excl_section *s)
{
    loop_op op = {0};

    if (w->lp == NULL)
        return redislock_campaign(l, s->meta, &s->o);
    return loop_wait(w,
                     redislock_loop_campaign(w->lp, l, s->meta, &s->o,
                                             loop_op_done, &op),
                     &op);
}

static redislock_err w_proclaim(excl_worker *w, redislock_lock *l,
                                const char *value)
{
    loop_op op = {0};

    if (w->lp == NULL)
        return redislock_proclaim(l, value);
    return loop_wait(
        w, redislock_loop_proclaim(w->lp, l, value, loop_op_done, &op), &op);
}

static redislock_err w_resign(excl_worker *w, redislock_lock *l)
{
    loop_op op = {0};

    if (w->lp == NULL)
        return redislock_resign(l);
    return loop_wait(w, redislock_loop_resign(w->lp, l, loop_op_done, &op),
                     &op);
}

static redislock_err w_extend(excl_worker *w, redislock_lock *l, int64_t ttl)
{
    loop_op op = {0};

    if (w->lp == NULL)
        return redislock_extend(l, ttl);
    return loop_wait(w, redislock_loop_extend(w->lp, l, ttl, loop_op_done, &op),
                     &op);
}

static void do_extend(excl_worker *w, const excl_section *s, claim *c,
                      int64_t ttl)
{
    int64_t t0 = excl_now_us();
    char value[80];
    redislock_err err;

    /* An election's extends are proclaims: they leave the lease as it
     * is, and must fail as an extend does once it has gone. */
    snprintf(value, sizeof value, "%s +%lld", s->meta, (long long)ttl);
    err = s->elect ? w_proclaim(w, c->src, value) : w_extend(w, c->src, ttl);

    claim_after(w, c, t0, excl_now_us(), err);
    loss_if(w, s, c, EXCL_L_EXTEND, err);
    lease_check(w, s, c);
}

static void do_nest(excl_worker *w, const excl_section *s, claim *c, plan *p,
                    int i)
{
    redislock_acquire_options o = s->o;
    int64_t t0 = excl_now_us(), t1;
    redislock_err err;

    o.ttl_ms = s->nested_ttl[i];
    o.wait_ms = 0;
    err = w_acquire(w, c->src, &o);
    t1 = excl_now_us();
    if (err == REDISLOCK_OK) {
        p->nested++;
        record_acq(w, s, t0, t1, redislock_fence(c->src), o.ttl_ms);
    }
    claim_after(w, c, t0, t1, err);
    lease_check(w, s, c);
}

/* A second handle, on another client, takes over the token: it releases
 * at once, or extends and carries on. The first handle is then retired
 * without a release: the second acts for it. The belief stays the first
 * handle's (an adopted token comes with no validity) until the second's
 * extend tells it a new one. */
static void do_adopt(excl_worker *w, const excl_section *s, claim *c, plan *p,
                     int how)
{
    char key[32];
    int64_t t0, t1;
    redislock_err err;

    excl_key_name(s->key, key, sizeof key);
    if (redislock_lock_new(w->c2, key, strlen(key), &p->adopter) != 0)
        return;
    if (redislock_adopt(p->adopter, redislock_token(c->src)) != 0) {
        redislock_lock_free(p->adopter);
        p->adopter = NULL;
        return;
    }
    if (how == 1)
        return; /* released by the caller at once */
    t0 = excl_now_us();
    err = redislock_extend(p->adopter, s->extend_ttl[2]);
    t1 = excl_now_us();
    if (err == REDISLOCK_OK)
        c->src = p->adopter;
    if (err == REDISLOCK_OK || err == REDISLOCK_EEXPIRED ||
        err == REDISLOCK_ELOST)
        claim_after(w, c, t0, t1, err);
    lease_check(w, s, c);
}

/* Drops one re-entry's hold. Should the server say that was the last
 * (the key had lapsed and the re-entry took it afresh), the release freed
 * the lock: the belief ended when it was called. */
static void do_unnest(excl_worker *w, claim *c, plan *p)
{
    int64_t t0 = excl_now_us();
    redislock_err err = w_release(w, c->src, 0);

    if (err == REDISLOCK_OK)
        p->nested--;
    if (err == REDISLOCK_OK && redislock_holds(c->src) == 0)
        claim_close(w, c, t0);
    else
        claim_after(w, c, t0, excl_now_us(), err);
}

static void do_action(excl_worker *w, const excl_section *s, claim *c, plan *p)
{
    int k = p->kind[p->next], arg = p->arg[p->next];

    p->next++;
    if (k == A_WRITE)
        fenced_write(w, s, c);
    else if (k == A_EXTEND && p->adopter == NULL)
        do_extend(w, s, c, s->extend_ttl[arg]);
    else if (k == A_NEST && p->adopter == NULL)
        do_nest(w, s, c, p, arg);
    else if (k == A_UNNEST && p->nested > 0 && redislock_holds(c->src) > 1)
        do_unnest(w, c, p);
    else if (k == A_ADOPT && p->adopter == NULL && p->nested == 0)
        do_adopt(w, s, c, p, arg);
}

/* ---- A section */

/* When the holder means to release, as things stand. */
static int64_t release_time(const excl_worker *w, const excl_section *s,
                            const claim *c)
{
    int64_t ra = atomic_load(&w->sh->slot[w->idx].release_at);
    int64_t drift = atomic_load(&w->sh->slot[w->idx].drift_us);
    int64_t at;

    if (s->hold == EXCL_H_FOR)
        at = c->r.t0 + s->hold_ms * 1000;
    else if (s->hold == EXCL_H_EDGE)
        at = c->end - s->hold_ms * 1000;
    else if (s->hold == EXCL_H_OVER)
        at = c->end + s->hold_ms * 1000;
    else
        at = c->end + drift - 100000 + s->hold_ms * 1000;
    return ra > 0 && ra < at ? ra : at;
}

static void work(excl_worker *w, const excl_section *s, claim *c, plan *p)
{
    int64_t now, until, step;

    for (;;) {
        now = excl_now_us();
        if (atomic_load(&w->sh->stop) || now >= release_time(w, s, c))
            break;
        if (p->next < p->n && now >= p->at[p->next]) {
            do_action(w, s, c, p);
        } else {
            until = release_time(w, s, c);
            if (p->next < p->n && p->at[p->next] < until)
                until = p->at[p->next];
            step = excl_rng_range(&w->rng, 1000, 12000);
            if (until - now < step)
                step = until - now;
            th_sleep_ms((step + 999) / 1000);
        }
        claim_read(w, c);
        lost_told(w, s, c);
        if (c->open && now >= c->next_lease)
            lease_check(w, s, c);
        if (p->adopter != NULL && s->adopt == 1)
            break;
    }
}

/* Where the section's handle is kept: a single lock's by its key, a
 * set's by its keys. */
static redislock_lock **handle_of(excl_worker *w, const excl_section *s)
{
    return s->set != 0 ? &w->ls[s->set] : &w->l[s->key];
}

/* The section's handle, made when first needed: a single lock, or a set
 * of the section's keys (a set of one key too). */
static redislock_lock *lock_for(excl_worker *w, const excl_section *s)
{
    redislock_lock **l = handle_of(w, s);
    char name[EXCL_MAX_KEYS][32];
    const void *keys[EXCL_MAX_KEYS];
    size_t lens[EXCL_MAX_KEYS];
    int k[EXCL_MAX_KEYS], n = section_keys(s, k), i;
    redislock_err err;

    if (*l != NULL)
        return *l;
    for (i = 0; i < n; i++) {
        excl_key_name(k[i], name[i], sizeof name[i]);
        keys[i] = name[i];
        lens[i] = strlen(name[i]);
    }
    err = s->set != 0 ? redislock_lock_new_multi(w->c, keys, lens, (size_t)n, l)
                      : redislock_lock_new(w->c, name[0], lens[0], l);
    if (err == REDISLOCK_EINVAL) {
        /* A mistake of the mode's, not a fault: say so and stop. */
        fprintf(stderr, "excl: worker %d: handle [%s]: %s\n", w->pid, s->what,
                redislock_errdetail());
        _exit(4);
    }
    if (err != REDISLOCK_OK)
        *l = NULL;
    return *l;
}

/* The end of a section with s->retake set (excl_section): the key
 * deleted by hand, taken at once by a second handle on the second
 * client (a set of the key and the next one when retake is 2) that does
 * not wait, held a moment and released, as a release that wakes nobody
 * followed by a first-try take would leave it. Returns what became of
 * it: REDISLOCK_OK once the key was deleted and the take released or
 * refused (a waiter got in first: its own section records its hold). */
static redislock_err retake(excl_worker *w, const excl_section *s)
{
    char name[2][32];
    const void *keys[2];
    size_t lens[2];
    redislock_acquire_options o;
    redislock_lock *l = NULL;
    int i, n = s->retake == 2 ? 2 : 1;
    redislock_err err;

    if (!excl_truth_del(w, s->key))
        return REDISLOCK_EIO;
    for (i = 0; i < n; i++) {
        excl_key_name((s->key + i) % w->m->nkeys, name[i], sizeof name[i]);
        keys[i] = name[i];
        lens[i] = strlen(name[i]);
    }
    err = n == 2 ? redislock_lock_new_multi(w->c2, keys, lens, 2, &l)
                 : redislock_lock_new(w->c2, name[0], lens[0], &l);
    if (err != REDISLOCK_OK)
        return err;
    memset(&o, 0, sizeof o);
    o.ttl_ms = s->o.ttl_ms;
    err = redislock_acquire(l, &o);
    if (err == REDISLOCK_OK) {
        th_sleep_ms(excl_rng_range(&w->rng, 1, 20));
        err = redislock_release(l);
    } else if (err == REDISLOCK_EHELD) {
        err = REDISLOCK_OK;
    }
    redislock_lock_free(l);
    return err;
}

/* Releases what the section still holds: re-entries, then the last hold
 * (ending the claim when the first release call starts), late or not: a
 * release after the lease ran out must touch nobody's lock, not even one
 * that another process of a shared owner id took afresh meanwhile. A
 * handle whose release failed (the outcome unknown) is dropped. */
static void finish(excl_worker *w, const excl_section *s, claim *c, plan *p)
{
    redislock_lock *l = p->adopter != NULL ? p->adopter : c->src;
    redislock_err err = REDISLOCK_OK;
    /* A retaken key's handle still counts its hold: freed, not used. */
    int drop = p->adopter != NULL || s->retake;
    char *id = redislock_token(l) ? strdup(redislock_token(l)) : NULL;
    excl_rec r;

    lost_told(w, s, c);
    /* The belief ends as the first release call starts. */
    claim_close(w, c, excl_now_us());
    while (p->nested > 0 && err == REDISLOCK_OK && redislock_holds(l) > 1) {
        err = w_release(w, l, 0);
        p->nested--;
    }
    if (err == REDISLOCK_OK && redislock_holds(l) > 0) {
        /* A retake's record spans the deletion and the take: the key is
         * possibly held until the second handle's release returned. */
        excl_fill(w, s, &r, EXCL_RELEASE);
        r.t0 = excl_now_us();
        err = s->retake  ? retake(w, s)
              : s->elect ? w_resign(w, l)
                         : w_release(w, l, s->hold_after);
        r.t1 = excl_now_us();
        r.x = err;
        r.belief = s->hold_after;
        excl_history_add(w->t->hist_fd, &r);
        if (!s->retake &&
            (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED))
            record_loss(w, s, id, c->r.fence, EXCL_L_RELEASE, err,
                        redislock_errdetail(), r.t1);
    }
    free(id);
    if (drop || (err != REDISLOCK_OK && err != REDISLOCK_EEXPIRED &&
                 err != REDISLOCK_ELOST)) {
        redislock_lock_free(*handle_of(w, s));
        *handle_of(w, s) = NULL;
    }
    redislock_lock_free(p->adopter);
}

static void section_begin(excl_worker *w, const excl_section *s, claim *c,
                          redislock_lock *l, int64_t t_call)
{
    excl_slot *sl = &w->sh->slot[w->idx];
    int64_t t_ok = excl_now_us(), at, end;

    memset(c, 0, sizeof *c);
    c->src = l;
    excl_fill(w, s, &c->r, EXCL_CLAIM);
    c->r.fence = redislock_fence(l);
    c->r.group = s->shared || s->o.reentrant
                     ? fnv(s->owner)
                     : ((uint64_t)1 << 63) | ((uint64_t)w->pid << 24) | w->acq;
    record_acq(w, s, t_call, t_ok, c->r.fence, s->o.ttl_ms);
    atomic_store(&sl->release_at, 0);
    atomic_store(&sl->drift_us,
                 (s->o.drift_ms ? s->o.drift_ms : s->o.ttl_ms / 100 + 2) *
                     1000);
    end = believed_end(l, &at);
    c->r.t0 = t_ok;
    c->r.t1 = end > 0 ? end : t_ok;
    c->end = end;
    c->open = end > 0;
    publish(w, c);
    atomic_store(&sl->state, EXCL_HOLDING);
    atomic_fetch_add(&w->sh->sections, 1);
}

static void section(excl_worker *w, excl_section *s)
{
    excl_slot *sl = &w->sh->slot[w->idx];
    redislock_lock *l = lock_for(w, s);
    int64_t t_call;
    redislock_err err;
    excl_rec a;
    claim c;
    plan p;

    if (l == NULL)
        return;
    atomic_store(&sl->key, s->key);
    atomic_store(&sl->fair, s->o.fair);
    atomic_store(&sl->state, EXCL_WAITING);
    w->acq++;
    /* A loss told after the last section's release is no news. */
    atomic_store(&w->lost_at, 0);
    if (s->o.watchdog) {
        s->o.on_lost = on_lost;
        s->o.on_lost_arg = w;
    }
    excl_fill(w, s, &a, EXCL_ATTEMPT);
    a.flags = (s->o.fair ? EXCL_A_FAIR : 0) | (s->prompt ? EXCL_A_PROMPT : 0);
    a.belief = s->o.wait_ms;
    a.x = EXCL_PENDING;
    t_call = a.t0 = excl_now_us();
    excl_history_add(w->t->hist_fd, &a);
    err = s->elect ? w_campaign(w, l, s) : w_acquire(w, l, &s->o);
    a.t1 = excl_now_us();
    a.x = err;
    a.fence = err == REDISLOCK_OK ? redislock_fence(l) : 0;
    excl_history_add(w->t->hist_fd, &a);
    if (err != REDISLOCK_OK) {
        atomic_store(&sl->state, EXCL_IDLE);
        if (err == REDISLOCK_EINVAL) {
            /* A mistake of the mode's, not a fault: say so and stop. */
            fprintf(stderr, "excl: worker %d: acquire [%s]: %s\n", w->pid,
                    s->what, redislock_errdetail());
            _exit(4);
        }
        if (err != REDISLOCK_EHELD) {
            redislock_lock_free(l);
            *handle_of(w, s) = NULL;
            th_sleep_ms(excl_rng_range(&w->rng, 5, 50));
        }
        return;
    }
    section_begin(w, s, &c, l, t_call);
    lease_check(w, s, &c);
    plan_make(w, s, &p, excl_now_us(), release_time(w, s, &c));
    work(w, s, &c, &p);
    finish(w, s, &c, &p);
    th_sleep_ms(s->rest_ms);
}

/* ---- The process */

static redislock_err connect_lock(excl_worker *w, redislock_client **c)
{
    const excl_topo *t = w->t;
    const char *urls[EXCL_MAX_SERVERS];
    redislock_options o;
    int i;

    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = EXCL_CMD_TIMEOUT_MS;
    o.command_timeout_ms = EXCL_CMD_TIMEOUT_MS;
    o.wait_replicas = w->m->guard;
    for (i = 0; i < t->n; i++)
        urls[i] = t->url[i];
    switch (t->kind) {
    case EXCL_SHARDED:
        return redislock_client_new_sharded(c, urls, (size_t)t->n, &o);
    case EXCL_CLUSTER:
        return redislock_client_new_cluster(c, urls, (size_t)t->n, &o);
    case EXCL_REDLOCK:
        return redislock_client_new_redlock(c, urls, (size_t)t->n, &o);
    default:
        return redislock_client_new(c, urls[0], &o);
    }
}

/* The clients, retried while a server is paused. */
static int connect_all(excl_worker *w)
{
    redislock_options o;

    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = EXCL_CMD_TIMEOUT_MS;
    o.command_timeout_ms = EXCL_CMD_TIMEOUT_MS;
    while (!atomic_load(&w->sh->stop)) {
        if ((w->c != NULL || connect_lock(w, &w->c) == 0) &&
            (w->c2 != NULL || connect_lock(w, &w->c2) == 0) &&
            (w->rc != NULL ||
             redislock_client_new(&w->rc, w->t->res_url, &o) == 0))
            return 0;
        th_sleep_ms(excl_rng_range(&w->rng, 20, 100));
    }
    return -1;
}

_Noreturn void excl_worker_main(const excl_mode *m, const excl_topo *t,
                                excl_shared *sh, int idx, int gen)
{
    excl_worker w;
    excl_section s;

#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    memset(&w, 0, sizeof w);
    w.m = m;
    w.t = t;
    w.sh = sh;
    w.idx = idx;
    w.pid = (int)getpid();
    excl_rng_seed(&w.rng, t->seed, (uint64_t)idx * 1000 + (uint64_t)gen + 1);
    snprintf(w.owner, sizeof w.owner, "w%d.%d-%d", idx, gen, w.pid);
    if (connect_all(&w) != 0)
        _exit(0);
    if (m->loop == EXCL_ON_LOOP) {
        w.app.max_wait_ms = 50;
        if (redislock_loop_new(&w.lp, w.c, app_watch, app_timer, &w.app) !=
            REDISLOCK_OK)
            _exit(0);
        app_drive(&w.app, w.lp);
    }
    while (!atomic_load(&sh->stop)) {
        memset(&s, 0, sizeof s);
        m->pick(&w, &s);
        if (s.foreign)
            excl_foreign_section(&w, &s);
        else if (m->loop == EXCL_VIA_CLI)
            excl_cli_section(&w, &s);
        else
            section(&w, &s);
    }
    /* No clean-up: the parent kills what is left of the run. */
    _exit(0);
}
