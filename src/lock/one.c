/*
 * The one-server lock algorithm: one server holds each key (single,
 * sharded and cluster clients; the topology says which). An attempt is
 * one script on that server, a release wakes its waiters, and a request
 * whose reply was lost is abandoned by a sweep on the engine.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "algo.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "keyed.h"
#include "reply.h"
#include "wait.h"

/* The place in the set l (1: its first key) of the key it waits behind
 * (set_acquire.lua's ARGV[8]). */
static int waited_place(const redislock_lock *l)
{
    int i;

    for (i = 0; i < l->nmore; i++)
        if (l->wait_name.key == l->more[i].key)
            return i + 2;
    return 1;
}

/* The acquire or fair script: {1, holds, fence} taken (the fence alone
 * from some, rl__acquire_bare), {0, pttl, wakes} held by another. One
 * round trip when the lock is free. A fair waiter names the channel a
 * release tells it of a hand-off on. A share takes share_acquire.lua,
 * whose arguments and answers are acquire.lua's but for the limit (or
 * "shared") in the format's place (a fair one share_fair.lua, whose
 * answers are fair.lua's); a set set_acquire.lua, which also says which
 * of its keys refused, told which one it waited behind, or on a first
 * attempt, its keys of one counter, set_take.lua, which names each key
 * once and has no wake to pass on. */
static const rl__script *attempt_script(const redislock_lock *l,
                                        const rl__try *t)
{
    return l->nmore > 0 && l->one_fence && !t->waited ? &rl__script_set_take
           : l->nmore > 0                             ? &rl__script_set_acquire
           : t->fair && t->limit                      ? &rl__script_share_fair
           : t->fair                                  ? &rl__script_fair
           : t->limit ? &rl__script_share_acquire
                      : &rl__script_acquire;
}

static redislock_err attempt_prepare(redislock_lock *l, const rl__try *t,
                                     rl__attempt_req *a)
{
    int n = t->fair ? 8 : 6;

    memset(a, 0, sizeof *a);
    a->args[0] = t->id;
    a->args[1] = a->ttl;
    a->args[2] = t->limit > 0                  ? a->limit
                 : t->limit == RL_LIMIT_SHARED ? "shared"
                                               : t->fmt;
    a->args[3] = t->meta;
    a->args[4] = a->mark;
    a->args[5] = t->req;
    a->lens[0] = strlen(t->id);
    /* The key outlives the lease by the lock-delay. */
    a->lens[1] = (size_t)snprintf(a->ttl, sizeof a->ttl, "%" PRId64,
                                  t->ttl_ms + t->delay_ms);
    a->lens[2] = t->limit > 0 ? (size_t)snprintf(a->limit, sizeof a->limit,
                                                 "%d", t->limit)
                              : strlen(a->args[2]);
    a->lens[3] = strlen(t->meta);
    a->lens[4] =
        (size_t)snprintf(a->mark, sizeof a->mark, "%" PRId64, t->mark_ms);
    a->lens[5] = strlen(t->req);
    if (l->nmore > 0) {
        /* No floor; the key whose wake list it waited on, on a retry
         * (set_take.lua, a first attempt's, takes no eighth). */
        n = attempt_script(l, t) == &rl__script_set_take ? 7 : 8;
        a->args[6] = "";
        a->args[7] = a->woke;
        a->lens[7] = t->waited ? (size_t)snprintf(a->woke, sizeof a->woke, "%d",
                                                  waited_place(l))
                               : 0;
    } else if (t->fair) {
        if ((a->args[6] = rl__wait_channel(l, &a->lens[6])) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        a->args[7] = rl__wait_sharded(l) ? "S" : "P";
        a->lens[7] = 1;
    }
    a->q = (rl__request){.s = attempt_script(l, t),
                         .nargs = n,
                         .args = a->args,
                         .lens = a->lens};
    return REDISLOCK_OK;
}

/* What the reply r to attempt t (or its failure err) says. */
static redislock_err attempt_outcome(redislock_lock *l, const rl__try *t,
                                     redislock_err err, const rl__reply *r)
{
    rl__acquired a;

    if (err == REDISLOCK_OK)
        err = rl__reply_acquired(
            r, rl__acquire_bare(attempt_script(l, t), t->fmt), &a);
    if (err == REDISLOCK_OK && a.taken) {
        rl__lock_granted(l, a.fence, a.gen);
        l->met_waiters = a.waiters;
    } else if (err == REDISLOCK_OK) {
        l->holder_ttl = a.holder_ttl;
        l->holder_silent = a.silent;
        l->wait_seq = a.seq;
        /* A set waits behind the key that refused it (the reply's fourth
         * element: its place in the set, 1 the first). */
        l->wait_name = rl__lock_name(l);
        if (l->nmore > 0 && a.seq >= 2 && a.seq <= l->nmore + 1)
            l->wait_name = l->more[a.seq - 2];
        err = REDISLOCK_EHELD;
    }
    rl__lock_set_outcomes(l, &err, 1);
    return err;
}

const rl__algo rl__algo_one = {.wakes = 1,
                               .attempt_prepare = attempt_prepare,
                               .attempt_outcome = attempt_outcome,
                               .abandons = 1};
