/*
 * A set of keys spread over several servers or hash slots on an event
 * loop: see agroup.h. The decisions are spread.h's, shared with the
 * blocking calls (spread.c); this file only sends and gathers.
 */
#include "agroup.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lock.h"
#include "reply.h"
#include "spread.h"

/* One group's request out: the guards it was sent with and their
 * answers (which must outlive the callback). */
typedef struct gslot {
    rl__agroup *gr;
    int g;
    rl__request gq;
    rl__guard_acks acks;
} gslot;

struct rl__agroup {
    rl__agroup_io io;
    redislock_lock *l; /* NULL once dropped */
    rl__agroup_cb cb;
    void *arg;
    int pending;       /* replies still to come */
    redislock_err err; /* the outcome, once known */
    long long n;
    char detail[512]; /* err's */
    /* An attempt's: its request, steps and, to give back what it took,
     * set_release.lua's argument. */
    const rl__try *t;
    rl__spread_try st;
    rl__spread_fence f;
    const char *undo_args[1];
    size_t undo_lens[1];
    /* An owner script's: the set's script, its arguments, the answers. */
    const rl__script *s;
    char arg2[24];
    rl__owner_args oa;
    rl__spread_tally y;
    gslot slot[REDISLOCK_SET_MAX];
};

static rl__agroup *chain_new(const rl__agroup_io *io, redislock_lock *l,
                             rl__agroup_cb cb, void *arg)
{
    rl__agroup *gr = calloc(1, sizeof *gr);

    if (gr == NULL) {
        rl__err(REDISLOCK_ENOMEM, "out of memory");
        return NULL;
    }
    gr->io = *io;
    gr->l = l;
    gr->cb = cb;
    gr->arg = arg;
    return gr;
}

/* The outcome is err, its detail the one rl__err wrote last (the first
 * outcome stays). */
static void chain_fail(rl__agroup *gr, redislock_err err)
{
    if (gr->err != REDISLOCK_OK || err == REDISLOCK_OK)
        return;
    gr->err = err;
    snprintf(gr->detail, sizeof gr->detail, "%s", redislock_errdetail());
}

/* Every reply is in: the caller hears the outcome; the chain is gone. */
static void chain_end(rl__agroup *gr)
{
    rl__agroup_cb cb = gr->cb;
    void *arg = gr->arg;
    redislock_err err = gr->err;
    long long n = gr->n;

    if (err != REDISLOCK_OK)
        rl__err(err, "%s", gr->detail);
    free(gr);
    cb(arg, err, n);
}

/* A reply came back to slot s: 0 when the chain was dropped (freed once
 * its last reply is in), else 1. */
static int chain_reply(gslot *s)
{
    rl__agroup *gr = s->gr;

    gr->pending--;
    if (gr->l != NULL)
        return 1;
    if (gr->pending == 0)
        free(gr);
    return 0;
}

/* Sends q (req: the request whose void marker it takes) to group g,
 * guarded as a write of the lease when asked; cb gets slot g. */
static redislock_err send_group(rl__agroup *gr, int g, rl__request q,
                                const char *req, int guarded, rl__aconn_cb cb)
{
    gslot *s = &gr->slot[g];
    int n;
    const rl__lockname *names = rl__spread_group(gr->l, g, &n);
    redislock_err err;

    s->gr = gr;
    s->g = g;
    s->acks.acked = s->acks.need = s->acks.aof[0] = s->acks.aof[1] = -1;
    if (guarded)
        rl__lock_guard(gr->l, &q, &s->acks);
    s->gq = q;
    err = gr->io.send(gr->io.ctx, names, n, req, &q, cb, s);
    if (err == REDISLOCK_OK)
        gr->pending++;
    return err;
}

/* ---- An attempt */

static void undo_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;
    rl__agroup *gr = s->gr;
    int n;
    const rl__lockname *names;

    if (!chain_reply(s))
        return;
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_set_release.name);
    if (err != REDISLOCK_OK) {
        /* Not known to be given back: swept, as a lost attempt is. */
        names = rl__spread_group(gr->l, s->g, &n);
        gr->io.sweep(gr->io.ctx, names, n, gr->t->id, gr->t->req, gr->t->ttl_ms,
                     0);
    }
    if (gr->pending == 0)
        chain_end(gr);
}

/* The attempt failed (gr->err): the groups before upto, which it took,
 * are given back, and then the caller hears. */
static void undo(rl__agroup *gr, int upto)
{
    rl__request q = {.s = &rl__script_set_release,
                     .nargs = 1,
                     .args = gr->undo_args,
                     .lens = gr->undo_lens};
    int g, n;

    gr->undo_args[0] = gr->t->id;
    gr->undo_lens[0] = strlen(gr->t->id);
    for (g = 0; g < upto; g++)
        if (send_group(gr, g, q, NULL, 0, undo_done) != REDISLOCK_OK) {
            const rl__lockname *names = rl__spread_group(gr->l, g, &n);

            gr->io.sweep(gr->io.ctx, names, n, gr->t->id, gr->t->req,
                         gr->t->ttl_ms, 0);
        }
    if (gr->pending == 0)
        chain_end(gr);
}

/* The attempt's outcome is err: granted, or what it took given back. */
static void attempt_end(rl__agroup *gr, redislock_err err)
{
    chain_fail(gr, err);
    rl__spread_try_end(gr->l, &gr->st, gr->err);
    rl__lock_set_outcomes(gr->l, &gr->err, 1);
    if (gr->err == REDISLOCK_OK)
        chain_end(gr);
    else
        undo(gr, gr->st.g);
}

static void fence_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;
    rl__agroup *gr = s->gr;

    if (!chain_reply(s))
        return;
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_set_fence.name);
    chain_fail(gr, rl__spread_fence_answer(err, r));
    if (gr->pending == 0)
        attempt_end(gr, gr->err);
}

/* Every group taken: the earlier groups' counters raised, all at once. */
static void fences(rl__agroup *gr)
{
    int g, ng = rl__spread_ngroups(gr->l);
    redislock_err err;

    rl__spread_fence_start(gr->t, &gr->st, &gr->f);
    for (g = 0; g < ng; g++)
        if (rl__spread_fence_needed(gr->l, &gr->st, g) &&
            (err = send_group(gr, g, gr->f.q, NULL, 0, fence_done)) !=
                REDISLOCK_OK)
            chain_fail(gr, err);
    if (gr->pending == 0)
        attempt_end(gr, gr->err);
}

static void group_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;
    rl__agroup *gr = s->gr;
    redislock_lock *l = gr->l;

    if (!chain_reply(s))
        return;
    rl__lock_acks(l, &s->gq, err);
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_set_acquire.name);
    err = rl__spread_try_group(l, &gr->st, err, err == REDISLOCK_OK ? r : NULL);
    if (err == REDISLOCK_OK && gr->st.g == rl__spread_ngroups(l)) {
        fences(gr);
        return;
    }
    if (err == REDISLOCK_OK)
        err = send_group(gr, gr->st.g, gr->st.q, gr->t->req, 1, group_done);
    if (err != REDISLOCK_OK)
        attempt_end(gr, err);
}

redislock_err rl__agroup_attempt(const rl__agroup_io *io, redislock_lock *l,
                                 const rl__try *t, rl__agroup_cb cb, void *arg,
                                 rl__agroup **out)
{
    rl__agroup *gr = chain_new(io, l, cb, arg);
    redislock_err err;

    *out = NULL;
    if (gr == NULL)
        return REDISLOCK_ENOMEM;
    gr->t = t;
    rl__spread_try_start(t, &gr->st);
    if ((err = send_group(gr, 0, gr->st.q, t->req, 1, group_done)) !=
        REDISLOCK_OK) {
        free(gr);
        return err;
    }
    *out = gr;
    return REDISLOCK_OK;
}

void rl__agroup_abandon(const rl__agroup_io *io, redislock_lock *l,
                        const rl__try *t, int settle)
{
    int g, n;

    for (g = 0; g < rl__spread_ngroups(l); g++) {
        const rl__lockname *names = rl__spread_group(l, g, &n);

        io->sweep(io->ctx, names, n, t->id, t->req, t->ttl_ms, settle);
    }
}

/* ---- Release and extend */

static void owner_end(rl__agroup *gr)
{
    redislock_lock *l = gr->l;
    redislock_err err = rl__spread_tally_end(l, &gr->y, &gr->n);

    if (gr->y.first != REDISLOCK_OK)
        rl__err(err, "%s", gr->detail);
    /* Not durable: the masters have the new lease, promoted replicas may
     * not; the validity stays where the last confirmed one left it. */
    if (err == REDISLOCK_OK && gr->y.extend && rl__lock_guarded(l))
        err = rl__lock_durable(l, "extend");
    chain_fail(gr, err);
    chain_end(gr);
}

static void lengthened_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;

    (void)err;
    (void)r;
    if (chain_reply(s) && s->gr->pending == 0)
        owner_end(s->gr);
}

/* Group g's answer (or failure err) goes to the tally. */
static void owner_add(rl__agroup *gr, int g, redislock_err err,
                      const rl__reply *r)
{
    rl__lock_acks(gr->l, &gr->slot[g].gq, err);
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, gr->s->name);
    if (err != REDISLOCK_OK && gr->y.first == REDISLOCK_OK)
        snprintf(gr->detail, sizeof gr->detail, "%s", redislock_errdetail());
    rl__spread_tally_add(gr->l, &gr->y, g, err, err == REDISLOCK_OK ? r : NULL);
}

/* Every group has answered: an extend that found the set lost gives
 * back the groups it lengthened (at once, their answers awaited), then
 * the caller hears. */
static void owner_answered(rl__agroup *gr)
{
    rl__request q = {.s = &rl__script_set_release,
                     .nargs = RL_OWNER_NARGS,
                     .args = gr->oa.args,
                     .lens = gr->oa.lens};
    int g, ng = rl__spread_ngroups(gr->l);

    for (g = 0; g < ng; g++)
        if (rl__spread_tally_undo(&gr->y, g))
            (void)send_group(gr, g, q, NULL, 0, lengthened_done);
    if (gr->pending == 0)
        owner_end(gr);
}

static void owner_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;

    if (!chain_reply(s))
        return;
    owner_add(s->gr, s->g, err, r);
    if (s->gr->pending == 0)
        owner_answered(s->gr);
}

redislock_err rl__agroup_owner(const rl__agroup_io *io, redislock_lock *l,
                               const rl__script *s, const char *arg2,
                               rl__agroup_cb cb, void *arg, rl__agroup **out)
{
    rl__agroup *gr = chain_new(io, l, cb, arg);
    int g, ng = rl__spread_ngroups(l), extend = s == &rl__script_extend;
    rl__request q;
    redislock_err err, first = REDISLOCK_OK;

    *out = NULL;
    if (gr == NULL)
        return REDISLOCK_ENOMEM;
    gr->s = extend ? &rl__script_set_extend : &rl__script_set_release;
    snprintf(gr->arg2, sizeof gr->arg2, "%s", arg2);
    rl__lock_owner_args(l, gr->arg2, &gr->oa);
    rl__spread_tally_start(&gr->y, gr->s);
    q = (rl__request){.s = gr->s,
                      .nargs = RL_OWNER_NARGS,
                      .args = gr->oa.args,
                      .lens = gr->oa.lens};
    for (g = 0; g < ng; g++)
        if ((err = send_group(gr, g, q, NULL, extend, owner_done)) !=
            REDISLOCK_OK) {
            if (first == REDISLOCK_OK)
                first = err;
            owner_add(gr, g, err, NULL);
        }
    if (gr->pending == 0) {
        /* Nothing went out. */
        free(gr);
        return first;
    }
    *out = gr;
    return REDISLOCK_OK;
}

void rl__agroup_drop(rl__agroup *gr)
{
    if (gr == NULL)
        return;
    gr->l = NULL;
    if (gr->pending == 0)
        free(gr);
}
