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
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "reply.h"
#include "spread.h"
#include "topology.h"

struct rl__spread {
    /* The set's keys, grouped: group g is names[start[g] .. start[g+1]),
     * the groups in place order, each group's keys in the caller's. */
    rl__lockname names[REDISLOCK_SET_MAX];
    int start[REDISLOCK_SET_MAX + 1];
    int ngroups;
    int lost; /* the group whose acquire reply was lost, or -1 */
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
    sp->lost = -1;
    /* Insertion sort by place, stable: the caller's order within one. */
    for (i = 0; i < n; i++) {
        rl__lockname k =
            i == 0 ? (rl__lockname){l->key, l->keylen, l->base, l->baselen}
                   : l->more[i - 1];
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

int rl__spread_ngroups(const redislock_lock *l)
{
    return l->spread->ngroups;
}

const rl__lockname *rl__spread_group(const redislock_lock *l, int g, int *n)
{
    const struct rl__spread *sp = l->spread;

    *n = sp->start[g + 1] - sp->start[g];
    return &sp->names[sp->start[g]];
}

void rl__spread_try_start(const rl__try *t, rl__spread_try *st)
{
    memset(st, 0, sizeof *st);
    st->args[0] = t->id;
    st->args[1] = st->ttl;
    st->args[2] = "plain";
    st->args[3] = "";
    st->args[4] = st->mark;
    st->args[5] = t->req;
    st->args[6] = st->floor;
    st->lens[0] = strlen(t->id);
    st->lens[1] =
        (size_t)snprintf(st->ttl, sizeof st->ttl, "%" PRId64, t->ttl_ms);
    st->lens[2] = 5;
    st->lens[3] = 0;
    st->lens[4] =
        (size_t)snprintf(st->mark, sizeof st->mark, "%" PRId64, t->mark_ms);
    st->lens[5] = strlen(t->req);
    st->lens[6] = (size_t)snprintf(st->floor, sizeof st->floor, "0");
    st->q = (rl__request){.s = &rl__script_set_acquire,
                          .nargs = 7,
                          .args = st->args,
                          .lens = st->lens};
}

/* A refusal by group g: the holder's TTL, whether its release wakes, and
 * the key to wait behind (the reply's fourth element: its place in the
 * group, 1 the first). */
static void refused(redislock_lock *l, int g, const rl__acquired *a)
{
    const struct rl__spread *sp = l->spread;
    int at = sp->start[g], n = sp->start[g + 1] - at;

    l->holder_ttl = a->holder_ttl;
    l->holder_silent = a->silent;
    l->wait_name = sp->names[at];
    if (a->seq >= 1 && a->seq <= n)
        l->wait_name = sp->names[at + a->seq - 1];
}

redislock_err rl__spread_try_group(redislock_lock *l, rl__spread_try *st,
                                   redislock_err err, const rl__reply *r)
{
    rl__acquired a;

    if (err == REDISLOCK_OK)
        err = rl__reply_acquired(r, &a);
    if (err != REDISLOCK_OK)
        return err;
    if (!a.taken) {
        refused(l, st->g, &a);
        return REDISLOCK_EHELD;
    }
    rl__acks_least(&st->acks, &l->acks, st->g == 0);
    st->fences[st->g++] = a.fence;
    st->lens[6] =
        (size_t)snprintf(st->floor, sizeof st->floor, "%" PRId64, a.fence);
    return REDISLOCK_OK;
}

int rl__spread_fence_needed(const redislock_lock *l, const rl__spread_try *st,
                            int g)
{
    int last = l->spread->ngroups - 1;

    return g < last && st->fences[g] < st->fences[last];
}

void rl__spread_fence_start(const rl__try *t, const rl__spread_try *st,
                            rl__spread_fence *f)
{
    f->args[0] = t->id;
    f->args[1] = f->v;
    f->args[2] = f->ttl;
    f->lens[0] = strlen(t->id);
    f->lens[1] =
        (size_t)snprintf(f->v, sizeof f->v, "%" PRId64, st->fences[st->g - 1]);
    f->lens[2] = (size_t)snprintf(f->ttl, sizeof f->ttl, "%" PRId64, t->ttl_ms);
    f->q = (rl__request){.s = &rl__script_set_fence,
                         .nargs = 3,
                         .args = f->args,
                         .lens = f->lens};
}

redislock_err rl__spread_fence_answer(redislock_err err, const rl__reply *r)
{
    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        return rl__err(REDISLOCK_EPROTOCOL, "set_fence answered type %d",
                       r->type);
    return r->integer == 0 ? REDISLOCK_EHELD : REDISLOCK_OK;
}

void rl__spread_try_end(redislock_lock *l, rl__spread_try *st,
                        redislock_err err)
{
    if (err == REDISLOCK_OK) {
        l->acks = st->acks;
        rl__lock_granted(l, st->fences[st->g - 1], 0);
    } else if (err == REDISLOCK_EHELD && st->g == l->spread->ngroups) {
        /* A lease ended while the later groups were taken: free now. */
        l->holder_ttl = REDISLOCK_TTL_FREE;
        l->holder_silent = 0;
    }
}

void rl__spread_tally_start(rl__spread_tally *y, const rl__script *s)
{
    memset(y, 0, sizeof *y);
    y->extend = s == &rl__script_set_extend || s == &rl__script_extend;
    y->least = 1;
}

void rl__spread_tally_add(redislock_lock *l, rl__spread_tally *y, int g,
                          redislock_err err, const rl__reply *r)
{
    const char *name =
        y->extend ? rl__script_set_extend.name : rl__script_set_release.name;
    long long m;

    if (err == REDISLOCK_OK) {
        err = rl__reply_owner(r, name, &m);
        if (err == REDISLOCK_OK || err == REDISLOCK_EEXPIRED ||
            err == REDISLOCK_ELOST) {
            err = REDISLOCK_OK;
            y->least = m < y->least ? m : y->least;
            if (m > 0)
                y->lengthened |= 1u << g;
        }
    }
    if (y->extend)
        rl__acks_least(&y->acks, &l->acks, y->added == 0);
    y->added++;
    if (y->first == REDISLOCK_OK && err != REDISLOCK_OK)
        y->first = err;
}

redislock_err rl__spread_tally_end(redislock_lock *l, rl__spread_tally *y,
                                   long long *n)
{
    if (y->extend)
        l->acks = y->acks;
    rl__lock_set_outcomes(l, &y->first, 1);
    if (y->first != REDISLOCK_OK)
        return y->first;
    *n = y->least;
    return y->least == 0 ? rl__err(REDISLOCK_EEXPIRED, "lock had expired and "
                                                       "is free")
           : y->least < 0
               ? rl__err(REDISLOCK_ELOST, "lock is now held by another owner")
               : REDISLOCK_OK;
}

int rl__spread_tally_undo(const rl__spread_tally *y, int g)
{
    return y->extend && y->least <= 0 && (y->lengthened & (1u << g)) != 0;
}

const rl__algo rl__algo_spread = {.wakes = 1, .groups = 1, .abandons = 1};
