/*
 * The lock algorithm of a set of keys that no one script can reach
 * (redislock_lock_new_multi on a sharded client whose ring puts them on
 * several servers, or in a cluster on several hash slots). The keys are
 * grouped by place (rl__topo_place: the slot, or the server), and the
 * groups are taken one after another in place order, each all or none by
 * set_acquire.lua, without waiting: a group that is refused has every
 * group taken before it released, and the waiter then blocks behind the
 * key that refused it. Since nobody holds one group while waiting for
 * another, two sets cannot deadlock; the one order keeps two of them
 * from taking each other's first groups over and over.
 *
 * One token, one lease and one fencing token for the whole set: each
 * group's token is at least the one before (set_acquire.lua's floor), and
 * the earlier groups' counters are then raised to the last group's
 * (set_fence.lua), so every later token of every key is past the set's.
 * The validity counts from the first group's send.
 *
 * On the loop, driven by replies (alock.c gives the way to send a
 * request to the node of a group's keys and to sweep a request's holds,
 * and hears each chain's outcome once by a callback, never from the call
 * that starts it): an attempt takes the groups one after another, then
 * raises the earlier groups' fencing counters (those requests at once);
 * a release, an extend or a renewal goes to every group at once and
 * combines the answers. Whatever an attempt that does not succeed has
 * taken is given back (set_release.lua, or swept when that fails) before
 * its caller hears. Single-threaded: every call and callback on the
 * loop's thread.
 */
#include "agroup.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "env.h"
#include "error.h"
#include "lock.h"
#include "reply.h"
#include "topology.h"

struct rl__spread {
    /* The set's keys, grouped: group g is names[start[g] .. start[g+1]),
     * the groups in place order, each group's keys in the caller's. */
    rl__lockname names[REDISLOCK_SET_MAX];
    int start[REDISLOCK_SET_MAX + 1];
    int ngroups;
};

int rl__spread_needed(redislock_lock *l)
{
    rl__topo *t = rl__client_topo(l->client);
    unsigned long first = rl__topo_place(t, l->key, l->keylen);
    int i;

    for (i = 0; i < l->nmore; i++)
        if (rl__topo_place(t, l->more[i].key, l->more[i].keylen) != first)
            return 1;
    return 0;
}

redislock_err rl__spread_new(redislock_lock *l)
{
    rl__topo *t = rl__client_topo(l->client);
    unsigned long place[REDISLOCK_SET_MAX];
    struct rl__spread *sp = calloc(1, sizeof *sp);
    int n = 1 + l->nmore, i, j;

    if (sp == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    /* Insertion sort by place, stable: the caller's order within one. */
    for (i = 0; i < n; i++) {
        rl__lockname k = i == 0 ? rl__lock_name(l) : l->more[i - 1];
        unsigned long p = rl__topo_place(t, k.key, k.keylen);

        for (j = i; j > 0 && place[j - 1] > p; j--) {
            place[j] = place[j - 1];
            sp->names[j] = sp->names[j - 1];
        }
        place[j] = p;
        sp->names[j] = k;
    }
    for (i = 0; i < n; i++)
        if (i == 0 || place[i] != place[i - 1])
            sp->start[sp->ngroups++] = i;
    sp->start[sp->ngroups] = n;
    l->spread = sp;
    l->algo = &rl__algo_spread;
    return REDISLOCK_OK;
}

void rl__spread_free(struct rl__spread *sp)
{
    free(sp);
}

/* Group g's keys, *n of them, which one script reaches. */
static const rl__lockname *group_keys(const redislock_lock *l, int g, int *n)
{
    const struct rl__spread *sp = l->spread;

    *n = sp->start[g + 1] - sp->start[g];
    return &sp->names[sp->start[g]];
}

/* One group's request out: the guards it was sent with and their
 * answers (which must outlive the callback). */
typedef struct gslot {
    rl__agroup *gr;
    int g;
    rl__request gq;
    rl__guard_acks acks;
} gslot;

/* A chain: an attempt, or an owner script on every group. */
struct rl__agroup {
    rl__agroup_io io;
    redislock_lock *l; /* NULL once dropped */
    rl__agroup_cb cb;
    void *arg;
    int pending;       /* replies still to come */
    redislock_err err; /* the outcome, once known */
    long long n;
    char detail[512]; /* err's */
    /* An attempt's: set_acquire.lua's request for the group it is at
     * (its keys are the group's), the tokens of the groups taken so far
     * and what their guards confirmed; set_fence.lua's and, to give back
     * what it took, set_release.lua's arguments. */
    const rl__try *t;
    char ttl[24], mark[24], floor[24], fence[24], woke[16];
    const char *args[8], *fargs[3];
    size_t lens[8], flens[3];
    rl__request q;
    int g; /* the group to take next; the number of groups once all are */
    /* The key the set waited behind before this attempt (its wake list
     * the one it may have taken a wake from): its group and its place in
     * the set's names; -1 for a first attempt, or when none of them. */
    int woke_g, woke_k;
    int64_t fences[REDISLOCK_SET_MAX];
    rl__acks acks;
    /* An owner script's: the set's script, its arguments, and the
     * answers so far: the least of them, the groups it lengthened, the
     * first failure. */
    const rl__script *s;
    int extend;
    char arg2[24];
    rl__owner_args oa;
    int added;
    long long least;
    unsigned lengthened;
    redislock_err first;
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
    const rl__lockname *names = group_keys(gr->l, g, &n);
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

/* Makes sure the attempt t holds nothing of group g, now or late. */
static void sweep_group(const rl__agroup_io *io, redislock_lock *l, int g,
                        const rl__try *t, int settle)
{
    int n;
    const rl__lockname *names = group_keys(l, g, &n);

    io->sweep(io->ctx, names, n, t->id, t->req, t->ttl_ms, settle);
}

/* ---- An attempt */

static void undo_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;
    rl__agroup *gr = s->gr;

    if (!chain_reply(s))
        return;
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_set_release.name);
    /* Not known to be given back: swept, as a lost attempt is. */
    if (err != REDISLOCK_OK)
        sweep_group(&gr->io, gr->l, s->g, gr->t, 0);
    if (gr->pending == 0)
        chain_end(gr);
}

/* set_pass.lua's answer: nothing to do but count it (a wake that was
 * not passed on leaves the key's waiters to their block's end, as
 * before). */
static void pass_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;

    (void)err;
    (void)r;
    if (chain_reply(s) && s->gr->pending == 0)
        chain_end(s->gr);
}

/* A refusal by a group before the one of the key the set waited behind:
 * the set never came back to that key, whose wake it may have taken, so
 * the key's other waiters are woken if it is free (set_pass.lua; a
 * refusal within that group passes it in set_acquire.lua, and a group
 * taken and given back wakes them by set_release.lua). On that group's
 * slot, which this attempt did not use. */
static void pass_wake(rl__agroup *gr)
{
    rl__request q = {.s = &rl__script_set_pass};
    gslot *s;

    if (gr->err != REDISLOCK_EHELD || gr->woke_g <= gr->g)
        return;
    s = &gr->slot[gr->woke_g];
    s->gr = gr;
    s->g = gr->woke_g;
    s->gq = q;
    if (gr->io.send(gr->io.ctx, &gr->l->spread->names[gr->woke_k], 1, NULL, &q,
                    pass_done, s) == REDISLOCK_OK)
        gr->pending++;
}

/* The attempt failed (gr->err): the groups it took are given back, a
 * wake it took passed on, and then the caller hears. */
static void undo(rl__agroup *gr)
{
    rl__request q = {.s = &rl__script_set_release,
                     .nargs = 1,
                     .args = gr->args,
                     .lens = gr->lens};
    int g;

    for (g = 0; g < gr->g; g++)
        if (send_group(gr, g, q, NULL, 0, undo_done) != REDISLOCK_OK)
            sweep_group(&gr->io, gr->l, g, gr->t, 0);
    pass_wake(gr);
    if (gr->pending == 0)
        chain_end(gr);
}

/* The attempt's outcome is err (the groups', then the fences'): the lock
 * granted, or what it took given back. */
static void attempt_end(rl__agroup *gr, redislock_err err)
{
    redislock_lock *l = gr->l;

    chain_fail(gr, err);
    if (gr->err == REDISLOCK_OK) {
        l->acks = gr->acks;
        rl__lock_granted(l, gr->fences[gr->g - 1], 0);
    } else if (gr->err == REDISLOCK_EHELD && gr->g == gr->l->spread->ngroups) {
        /* A fence found a key no longer the set's: its lease ended while
         * the later groups were taken. Free now. */
        l->holder_ttl = REDISLOCK_TTL_FREE;
        l->holder_silent = 0;
    }
    rl__lock_set_outcomes(l, &gr->err, 1);
    if (gr->err == REDISLOCK_OK)
        chain_end(gr);
    else
        undo(gr);
}

/* A fence's answer: 0 when the key no longer held the set's token. */
static void fence_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;
    rl__agroup *gr = s->gr;

    if (!chain_reply(s))
        return;
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_set_fence.name);
    if (err == REDISLOCK_OK && r->type != REDIS_REPLY_INTEGER)
        err =
            rl__err(REDISLOCK_EPROTOCOL, "set_fence answered type %d", r->type);
    if (err == REDISLOCK_OK && r->integer == 0)
        err = REDISLOCK_EHELD;
    chain_fail(gr, err);
    if (gr->pending == 0)
        attempt_end(gr, gr->err);
}

/* Every group taken: the groups before the last whose counters are below
 * the set's token have them raised (set_fence.lua), all at once. */
static void fences(rl__agroup *gr)
{
    int g, last = gr->l->spread->ngroups - 1;
    rl__request q = {.s = &rl__script_set_fence,
                     .nargs = 3,
                     .args = gr->fargs,
                     .lens = gr->flens};
    redislock_err err;

    /* The token, the set's fence, the TTL. */
    gr->fargs[0] = gr->args[0];
    gr->flens[0] = gr->lens[0];
    gr->fargs[1] = gr->fence;
    gr->flens[1] = (size_t)snprintf(gr->fence, sizeof gr->fence, "%" PRId64,
                                    gr->fences[last]);
    gr->fargs[2] = gr->ttl;
    gr->flens[2] = gr->lens[1];
    for (g = 0; g < last; g++)
        if (gr->fences[g] < gr->fences[last] &&
            (err = send_group(gr, g, q, NULL, 0, fence_done)) != REDISLOCK_OK)
            chain_fail(gr, err);
    if (gr->pending == 0)
        attempt_end(gr, gr->err);
}

/* Where the key the set waits behind is, as a retry starts (a first
 * attempt took no wake). */
static void woke_find(rl__agroup *gr)
{
    const struct rl__spread *sp = gr->l->spread;
    int g, k;

    gr->woke_g = gr->woke_k = -1;
    if (!gr->t->waited)
        return;
    for (g = 0; g < sp->ngroups; g++)
        for (k = sp->start[g]; k < sp->start[g + 1]; k++)
            if (sp->names[k].key == gr->l->wait_name.key) {
                gr->woke_g = g;
                gr->woke_k = k;
                return;
            }
}

/* Group g's script: set_acquire.lua, its ARGV[8] the place in the group
 * of the key the set waited behind, when that key is the group's (its
 * wake is passed on); else set_take.lua, which takes no ARGV[8], when
 * the group's keys share one counter (as one.c's attempt_script). */
static void group_script(rl__agroup *gr, int g)
{
    int n;
    const rl__lockname *names = group_keys(gr->l, g, &n);

    gr->woke[0] = '\0';
    if (g == gr->woke_g)
        snprintf(gr->woke, sizeof gr->woke, "%d",
                 gr->woke_k - gr->l->spread->start[g] + 1);
    gr->lens[7] = strlen(gr->woke);
    if (g != gr->woke_g &&
        rl__lockname_fence_is(names, n, names[0].fence, names[0].fencelen)) {
        gr->q.s = &rl__script_set_take;
        gr->q.nargs = 7;
    } else {
        gr->q.s = &rl__script_set_acquire;
        gr->q.nargs = 8;
    }
}

/* A refusal by group g: the holder's TTL, whether its release wakes, and
 * the key to wait behind (the reply's fourth element: its place in the
 * group, 1 the first). */
static void refused(redislock_lock *l, int g, const rl__acquired *a)
{
    int n;
    const rl__lockname *names = group_keys(l, g, &n);

    l->holder_ttl = a->holder_ttl;
    l->holder_silent = a->silent;
    l->wait_name = names[a->seq >= 1 && a->seq <= n ? a->seq - 1 : 0];
}

/* Group gr->g's reply: taken (the next group asked, its floor this
 * group's token, or the fences once all are), refused (taking none of
 * it; l's waiting fields name the key to wait behind), or failed (that
 * group's outcome unknown: an abandon's to undo). */
static void group_done(void *arg, redislock_err err, const rl__reply *r)
{
    gslot *s = arg;
    rl__agroup *gr = s->gr;
    redislock_lock *l = gr->l;
    rl__acquired a;

    if (!chain_reply(s))
        return;
    rl__lock_acks(l, &s->gq, err);
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, s->gq.s->name);
    if (err == REDISLOCK_OK)
        err = rl__reply_acquired(r, rl__acquire_bare(s->gq.s, NULL), &a);
    if (err == REDISLOCK_OK && !a.taken) {
        refused(l, gr->g, &a);
        err = REDISLOCK_EHELD;
    }
    if (err != REDISLOCK_OK) {
        attempt_end(gr, err);
        return;
    }
    rl__acks_least(&gr->acks, &l->acks, gr->g == 0);
    /* Someone waits for a key of some group: the set's release wakes
     * them (rl__acq_take reads it; each attempt starts afresh). */
    l->met_waiters = (gr->g > 0 && l->met_waiters) || a.waiters;
    gr->fences[gr->g++] = a.fence;
    gr->lens[6] =
        (size_t)snprintf(gr->floor, sizeof gr->floor, "%" PRId64, a.fence);
    if (gr->g == gr->l->spread->ngroups) {
        fences(gr);
        return;
    }
    group_script(gr, gr->g);
    if ((err = send_group(gr, gr->g, gr->q, gr->t->req, 1, group_done)) !=
        REDISLOCK_OK)
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
    /* set_acquire.lua's arguments (the first is set_release.lua's). */
    gr->args[0] = t->id;
    gr->args[1] = gr->ttl;
    gr->args[2] = "plain";
    gr->args[3] = "";
    gr->args[4] = gr->mark;
    gr->args[5] = t->req;
    gr->args[6] = gr->floor;
    gr->args[7] = gr->woke;
    gr->lens[0] = strlen(t->id);
    gr->lens[1] =
        (size_t)snprintf(gr->ttl, sizeof gr->ttl, "%" PRId64, t->ttl_ms);
    gr->lens[2] = 5;
    gr->lens[3] = 0;
    gr->lens[4] =
        (size_t)snprintf(gr->mark, sizeof gr->mark, "%" PRId64, t->mark_ms);
    gr->lens[5] = strlen(t->req);
    gr->lens[6] = (size_t)snprintf(gr->floor, sizeof gr->floor, "0");
    gr->q = (rl__request){.args = gr->args, .lens = gr->lens};
    woke_find(gr);
    group_script(gr, 0);
    if ((err = send_group(gr, 0, gr->q, t->req, 1, group_done)) !=
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
    int g;

    for (g = 0; g < l->spread->ngroups; g++)
        sweep_group(io, l, g, t, settle);
}

/* ---- Release and extend */

/* Every answer is in: the outcome as rl__algo's owner gives it. */
static void owner_end(rl__agroup *gr)
{
    redislock_lock *l = gr->l;
    redislock_err err = gr->first;

    if (gr->extend)
        l->acks = gr->acks;
    rl__lock_set_outcomes(l, &gr->first, 1);
    if (err != REDISLOCK_OK)
        rl__err(err, "%s", gr->detail);
    else if ((gr->n = gr->least) == 0)
        err = rl__err(REDISLOCK_EEXPIRED, "lock had expired and is free");
    else if (gr->least < 0)
        err = rl__err(REDISLOCK_ELOST, "lock is now held by another owner");
    /* Not durable: the masters have the new lease, promoted replicas may
     * not; the validity stays where the last confirmed one left it. */
    if (err == REDISLOCK_OK && gr->extend && rl__lock_guarded(l))
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

/* Group g's answer (or failure err), answers coming in any order: the
 * least kept (0 a group expired, -1 another owner's), the groups an
 * extend lengthened, the first failure. */
static void owner_add(rl__agroup *gr, int g, redislock_err err,
                      const rl__reply *r)
{
    long long m;

    rl__lock_acks(gr->l, &gr->slot[g].gq, err);
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, gr->s->name);
    if (err == REDISLOCK_OK) {
        err = rl__reply_owner(r, gr->s->name, &m);
        if (err == REDISLOCK_OK || err == REDISLOCK_EEXPIRED ||
            err == REDISLOCK_ELOST) {
            err = REDISLOCK_OK;
            gr->least = m < gr->least ? m : gr->least;
            if (m > 0)
                gr->lengthened |= 1u << g;
        }
    }
    if (gr->extend)
        rl__acks_least(&gr->acks, &gr->l->acks, gr->added == 0);
    gr->added++;
    if (err != REDISLOCK_OK && gr->first == REDISLOCK_OK) {
        gr->first = err;
        snprintf(gr->detail, sizeof gr->detail, "%s", redislock_errdetail());
    }
}

/* Every group has answered: an extend that found the set lost (a group
 * gone or another owner's) has lengthened the groups that still held it,
 * and gives those back (at once, their answers awaited), so that a lost
 * set holds nothing past its old lease; then the caller hears. */
static void owner_answered(rl__agroup *gr)
{
    rl__request q = {.s = &rl__script_set_release,
                     .nargs = RL_OWNER_NARGS,
                     .args = gr->oa.args,
                     .lens = gr->oa.lens};
    int g;

    for (g = 0; g < gr->l->spread->ngroups; g++)
        if (gr->extend && gr->least <= 0 && (gr->lengthened & (1u << g)))
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
    int g;
    rl__request q;
    redislock_err err, first = REDISLOCK_OK;

    *out = NULL;
    if (gr == NULL)
        return REDISLOCK_ENOMEM;
    gr->extend = s == &rl__script_extend;
    gr->s = gr->extend ? &rl__script_set_extend : &rl__script_set_release;
    gr->least = 1;
    snprintf(gr->arg2, sizeof gr->arg2, "%s", arg2);
    rl__lock_owner_args(l, gr->arg2, &gr->oa);
    q = (rl__request){.s = gr->s,
                      .nargs = RL_OWNER_NARGS,
                      .args = gr->oa.args,
                      .lens = gr->oa.lens};
    /* Each group's release as a set on one node's. */
    if (!gr->extend)
        rl__lock_lean_release(l, strtoll(arg2, NULL, 10), &q);
    for (g = 0; g < gr->l->spread->ngroups; g++)
        if ((err = send_group(gr, g, q, NULL, gr->extend, owner_done)) !=
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

const rl__algo rl__algo_spread = {.wakes = 1, .groups = 1, .abandons = 1};
