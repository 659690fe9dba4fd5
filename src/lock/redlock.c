/*
 * The Redlock algorithm (rl__algo_redlock): an acquire attempt decided by
 * a majority of independent servers within the lease's validity and
 * undone everywhere when it fails, the owner's extend and release sent to
 * every server, and inspect by the majority's view. The wait loop around
 * attempts (acquire.c) and the watchdog are the ones one-server locks
 * use; waiters sleep, since no one server's release could wake them.
 */
#include "algo.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "quorum.h"
#include "reply.h"

/* One attempt's tally. */
typedef struct votes {
    size_t granted, busy, answered;
    int64_t fence;      /* the largest granted */
    int64_t gen;        /* the latest life of the key a grant is in */
    int64_t holder_ttl; /* the least a busy server reported, or -2 */
} votes;

/* Sorts server i's reply to the acquire script into the tally (bare: the
 * attempt was a plain lock's, see rl__reply_acquired). */
static redislock_err count_vote(const rl__reply *r, int bare, votes *v)
{
    rl__acquired a;
    redislock_err err = rl__reply_acquired(r, bare, &a);

    if (err != REDISLOCK_OK)
        return err;
    v->answered++;
    if (a.taken) {
        v->granted++;
        if (a.fence > v->fence)
            v->fence = a.fence;
        if (a.gen > v->gen)
            v->gen = a.gen;
        return REDISLOCK_OK;
    }
    v->busy++;
    if (a.holder_ttl >= -1 &&
        (v->holder_ttl == -2 || a.holder_ttl < v->holder_ttl))
        v->holder_ttl = a.holder_ttl;
    return REDISLOCK_EHELD;
}

/* Each server's outcome into oc, and the votes into v, of attempt t. */
static void tally(const rl__round *round, const rl__try *t, redislock_err *oc,
                  votes *v)
{
    int bare = rl__acquire_bare(&rl__script_acquire, t->fmt);
    size_t i;

    memset(v, 0, sizeof *v);
    v->holder_ttl = -2;
    for (i = 0; i < round->n; i++)
        oc[i] = round->reply[i] != NULL ? count_vote(round->reply[i], bare, v)
                                        : round->err[i];
}

static redislock_err refused(redislock_lock *l, const redislock_err *oc,
                             size_t n, const votes *v, int64_t took)
{
    char who[512];
    size_t q = RL_QUORUM(n);

    rl__outcomes_describe(l->client, oc, n, who, sizeof who);
    if (v->granted >= q)
        return rl__err(REDISLOCK_ETIMEDOUT,
                       "a majority granted the lock but the round took %" PRId64
                       " ms, leaving no validity; undone (%s)",
                       took, who);
    if (v->answered >= q) {
        l->holder_ttl = v->holder_ttl;
        return rl__err(REDISLOCK_EHELD,
                       "lock is held by another owner: %zu of %zu servers "
                       "granted it, %zu needed (%s)",
                       v->granted, n, q, who);
    }
    return rl__err(REDISLOCK_ENOQUORUM,
                   "only %zu of %zu servers answered, %zu needed (%s)",
                   v->answered, n, q, who);
}

/* An attempt's request, the same on every server: the acquire script
 * with no waiting marker (nobody is woken). */
static redislock_err attempt_prepare(redislock_lock *l, const rl__try *t,
                                     rl__attempt_req *a)
{
    (void)l;
    memset(a, 0, sizeof *a);
    a->args[0] = t->id;
    a->args[1] = a->ttl;
    a->args[2] = t->fmt;
    a->args[3] = t->meta;
    a->args[4] = "0";
    a->args[5] = t->req;
    a->lens[0] = strlen(t->id);
    /* The key outlives the lease by the lock-delay. */
    a->lens[1] = (size_t)snprintf(a->ttl, sizeof a->ttl, "%" PRId64,
                                  t->ttl_ms + t->delay_ms);
    a->lens[2] = strlen(t->fmt);
    a->lens[3] = strlen(t->meta);
    a->lens[4] = 1;
    a->lens[5] = strlen(t->req);
    a->q = (rl__request){
        .s = &rl__script_acquire, .nargs = 6, .args = a->args, .lens = a->lens};
    return REDISLOCK_OK;
}

/* Attempt t's round r, sent at sent_us: taken by a majority within the
 * lease's validity, or refused with *undo set (it must be undone on every
 * server). */
static redislock_err round_attempt(redislock_lock *l, const rl__try *t,
                                   const rl__round *r, int64_t sent_us,
                                   int *undo)
{
    redislock_err oc[RL_MAX_QUORUM] = {0};
    int64_t took;
    votes v;

    tally(r, t, oc, &v);
    rl__lock_set_outcomes(l, oc, r->n);
    /* Validity counts from before the first send; the ceiling keeps a
     * round of 0.9 ms from being taken for free. */
    took = (rl__now_us() - sent_us + 999) / 1000;
    *undo =
        !(v.granted >= RL_QUORUM(r->n) && t->ttl_ms - took - t->drift_ms > 0);
    if (!*undo) {
        rl__lock_granted(l, v.fence, v.gen);
        return REDISLOCK_OK;
    }
    return refused(l, oc, r->n, &v, took);
}

/* The outcome a majority gives, or, where none is definite, the first
 * failure that leaves it unknown. */
static redislock_err majority(redislock_lock *l, const redislock_err *oc,
                              size_t n, int release, const char *what)
{
    size_t i, q = RL_QUORUM(n), ok = 0, gone = 0, lost = 0, revoked = 0;
    redislock_err unknown = REDISLOCK_OK;
    char who[512];

    for (i = 0; i < n; i++) {
        redislock_err e = oc[i];
        revoked += e == REDISLOCK_EREVOKED;
        ok += e == REDISLOCK_OK || e == REDISLOCK_EREVOKED;
        gone += e == REDISLOCK_EEXPIRED;
        lost += e == REDISLOCK_ELOST;
        if (unknown == REDISLOCK_OK && e != REDISLOCK_OK &&
            e != REDISLOCK_EEXPIRED && e != REDISLOCK_ELOST &&
            e != REDISLOCK_EREVOKED)
            unknown = e;
    }
    /* An extend that a majority did, some of them telling of a
     * revocation (revoke.lua marks every server it reaches). */
    if (!release && ok >= q && revoked > 0)
        return rl__err(REDISLOCK_EREVOKED,
                       "%s: the lock was revoked (on %zu of %zu servers): "
                       "its lease was lengthened, but it is asked to "
                       "release it",
                       what, revoked, n);
    /* A release is done once a majority no longer hold the token: what it
     * freed, what had gone already, and what another owner holds now. */
    if (ok >= q || (release && ok > 0 && ok + gone + lost >= q))
        return REDISLOCK_OK;
    rl__outcomes_describe(l->client, oc, n, who, sizeof who);
    /* Unknown: the servers that did not answer could still make, with
     * those that did it (an extend), a majority; for a release, the ones
     * it freed no longer count. */
    if ((release ? 0 : ok) + (n - ok - gone - lost) >= q)
        return rl__err(unknown,
                       "%s confirmed by %zu of %zu servers, %zu "
                       "needed; the others' outcome is unknown (%s)",
                       what, ok, n, q, who);
    return rl__err(lost > 0 ? REDISLOCK_ELOST : REDISLOCK_EEXPIRED,
                   "%s: a majority no longer hold the lock (%s)", what, who);
}

/* The round r of the owner's script s (arg2 its second argument), sent
 * at start_us: the majority decides; *n gets the least count a server
 * answered. */
static redislock_err round_owner(redislock_lock *l, const rl__script *s,
                                 const char *arg2, const rl__round *r,
                                 int64_t start_us, long long *n)
{
    int extend = s == &rl__script_extend;
    int64_t ttl = extend ? strtoll(arg2, NULL, 10) : l->ttl_ms;
    long long least = 0, one = 0;
    redislock_err oc[RL_MAX_QUORUM] = {0}, err;
    size_t i;

    for (i = 0; i < r->n; i++) {
        oc[i] = r->err[i];
        if (r->reply[i] != NULL &&
            (oc[i] = rl__reply_owner(r->reply[i], s->name, &one)) == 0 &&
            (least == 0 || one < least))
            least = one;
    }
    rl__lock_set_outcomes(l, oc, r->n);
    err = majority(l, oc, r->n, s == &rl__script_release, s->name);
    *n = least;
    if (err == REDISLOCK_OK && extend &&
        rl__now_us() - start_us >= (ttl - l->drift_ms) * 1000)
        err = rl__err(REDISLOCK_ETIMEDOUT,
                      "extend: the majority answered after the new lease's "
                      "validity had run out");
    return err;
}

/* Longest TTL first; -1 (no expiry) is the longest of all. */
static int longer_first(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

    a = a < 0 ? INT64_MAX : a;
    b = b < 0 ? INT64_MAX : b;
    return (a < b) - (a > b);
}

/* The TTL a majority of q still holds the lock for: the q-th longest of
 * the held servers' TTLs. */
static int64_t quorum_ttl(int64_t *ttls, size_t n, size_t q)
{
    qsort(ttls, n, sizeof *ttls, longer_first);
    return ttls[q - 1];
}

/* The majority's view (see redislock_client_new_redlock) from the
 * inspect round r, and in *first the lowest-numbered server that has the
 * key: a listing reports it there only. */
static redislock_err round_inspect(redislock_client *c, const rl__round *r,
                                   redislock_info *info, char **buf,
                                   size_t *first)
{
    int64_t ttls[RL_MAX_QUORUM], fence = 0;
    size_t i, held = 0, answered = 0, q = RL_QUORUM(r->n);
    redislock_err err = REDISLOCK_OK;

    (void)c;
    *first = r->n;
    for (i = 0; i < r->n; i++) {
        if (r->reply[i] == NULL || !rl__inspect_well_formed(r->reply[i]))
            continue;
        answered++;
        if (r->reply[i]->element[5]->integer > fence)
            fence = r->reply[i]->element[5]->integer;
        if (strcmp(r->reply[i]->element[0]->str, "none") == 0)
            continue;
        ttls[held++] = r->reply[i]->element[1]->integer;
        *first = *first < r->n ? *first : i;
    }
    if (answered < q)
        err = rl__err(REDISLOCK_ENOQUORUM,
                      "only %zu of %zu servers answered, %zu needed", answered,
                      r->n, q);
    else if (held >= q &&
             (err = rl__inspect_decode(r->reply[*first], info, buf)) == 0)
        info->ttl_ms = quorum_ttl(ttls, held, q);
    else if (held < q) {
        memset(info, 0, sizeof *info);
        info->ttl_ms = REDISLOCK_TTL_FREE;
    }
    info->fence = fence;
    return err;
}

const rl__algo rl__algo_redlock = {
    .wakes = 0,
    .fresh_token = 1,
    .no_fair = "fair mode needs one server: a Redlock quorum has no single "
               "queue to hand the lock down",
    .no_fenced_set = "a fenced resource lives on one server: use a client of "
                     "the resource's own server, not the Redlock one",
    .no_semaphore = "a semaphore needs one server: majorities of independent "
                    "servers, each admitting its limit, together admit more "
                    "holders than the limit",
    .no_shared = "a lock held shared is not built for Redlock yet: its readers "
                 "would need a majority each and their undoing on every "
                 "server; use a single, sharded or cluster client",
    .no_set = "a set of keys is not built for Redlock yet: each server would "
              "take the set in one script, and a majority of whole sets be "
              "needed; use a single, sharded or cluster client",
    .attempt_prepare = attempt_prepare,
    .every = 1,
    .round_attempt = round_attempt,
    .round_owner = round_owner,
    .round_inspect = round_inspect};
