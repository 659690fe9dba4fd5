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
#include "watchdog.h"

/* One attempt's tally. */
typedef struct votes {
    size_t granted, busy, answered;
    int64_t fence;      /* the largest granted */
    int64_t holder_ttl; /* the least a busy server reported, or -2 */
} votes;

/* Sorts server i's reply to the acquire script into the tally. */
static redislock_err count_vote(const rl__reply *r, votes *v)
{
    rl__acquired a;
    redislock_err err = rl__reply_acquired(r, &a);

    if (err != REDISLOCK_OK)
        return err;
    v->answered++;
    if (a.taken) {
        v->granted++;
        if (a.fence > v->fence)
            v->fence = a.fence;
        return REDISLOCK_OK;
    }
    v->busy++;
    if (a.holder_ttl >= -1 &&
        (v->holder_ttl == -2 || a.holder_ttl < v->holder_ttl))
        v->holder_ttl = a.holder_ttl;
    return REDISLOCK_EHELD;
}

/* Each server's outcome into oc, and the votes into v. */
static void tally(const rl__round *round, redislock_err *oc, votes *v)
{
    size_t i;

    memset(v, 0, sizeof *v);
    v->holder_ttl = -2;
    for (i = 0; i < round->n; i++)
        oc[i] = round->reply[i] != NULL ? count_vote(round->reply[i], v)
                                        : round->err[i];
}

/* The round's request req must not hold the lock on any server, now or
 * when a request still on its way arrives (abandon.lua voids it and undoes
 * what it did, whatever the lock's format); a server that does not
 * confirm that within the timeout is left to the watchdog's janitor,
 * which retries it. */
static void undo(redislock_lock *l, const char *id, const char *req,
                 int64_t ttl_ms, int64_t timeout_ms)
{
    char ttl[24];
    const char *args[3] = {id, ttl, req};
    size_t lens[3] = {strlen(id), 0, strlen(req)}, i;
    rl__lockname k = {l->key, l->keylen, l->base, l->baselen};
    rl__watchdog *wd;
    rl__round r;

    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms + 60000);
    rl__quorum_script(l->client, NULL, timeout_ms, &rl__script_abandon, &k, req,
                      3, args, lens, &r);
    for (i = 0; i < r.n; i++)
        if (r.err[i] != REDISLOCK_OK &&
            rl__client_watchdog(l->client, &wd) == REDISLOCK_OK)
            rl__janitor_abandon(wd, rl__client_topo(l->client),
                                rl__topo_each(rl__client_topo(l->client), i),
                                &k, 1, id, req, ttl_ms);
    rl__round_free(&r);
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

/* One attempt: the acquire script on every server at once (no waiting
 * marker: nobody is woken), decided by a majority within the lease's
 * validity; undone on every server when it fails. */
static redislock_err attempt(redislock_lock *l, const rl__try *t,
                             int64_t *sent_us)
{
    char ttl[24];
    const char *args[6] = {t->id, ttl, t->fmt, t->meta, "0", t->req};
    size_t lens[6] = {strlen(t->id),   0, strlen(t->fmt),
                      strlen(t->meta), 1, strlen(t->req)};
    rl__lockname k = {l->key, l->keylen, l->base, l->baselen};
    const char *id = t->id, *req = t->req;
    int64_t ttl_ms = t->ttl_ms, drift_ms = t->drift_ms;
    int64_t timeout = rl__client_server_timeout(l->client, ttl_ms), took;
    redislock_err oc[RL_MAX_QUORUM];
    rl__round r;
    votes v;

    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    *sent_us = rl__now_us();
    rl__quorum_script(l->client, NULL, timeout, &rl__script_acquire, &k, req, 6,
                      args, lens, &r);
    tally(&r, oc, &v);
    rl__lock_set_outcomes(l, oc, r.n);
    rl__round_free(&r);
    /* Validity counts from before the first send; the ceiling keeps a
     * round of 0.9 ms from being taken for free. */
    took = (rl__now_us() - *sent_us + 999) / 1000;
    if (v.granted >= RL_QUORUM(r.n) && ttl_ms - took - drift_ms > 0) {
        l->fence = v.fence;
        return REDISLOCK_OK;
    }
    undo(l, id, req, ttl_ms, timeout);
    return refused(l, oc, r.n, &v, took);
}

/* The outcome a majority gives, or, where none is definite, the first
 * failure that leaves it unknown. */
static redislock_err majority(redislock_lock *l, const redislock_err *oc,
                              size_t n, int release, const char *what)
{
    size_t i, q = RL_QUORUM(n), ok = 0, gone = 0, lost = 0;
    redislock_err unknown = REDISLOCK_OK;
    char who[512];

    for (i = 0; i < n; i++) {
        redislock_err e = oc[i];
        ok += e == REDISLOCK_OK;
        gone += e == REDISLOCK_EEXPIRED;
        lost += e == REDISLOCK_ELOST;
        if (unknown == REDISLOCK_OK && e != REDISLOCK_OK &&
            e != REDISLOCK_EEXPIRED && e != REDISLOCK_ELOST)
            unknown = e;
    }
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

/* The owner's script on every server at once; the majority decides. */
static redislock_err owner(redislock_lock *l, const rl__script *s,
                           const char *arg2, int64_t timeout_ms, long long *n)
{
    const char *args[3];
    size_t lens[3], i;
    rl__lockname k = {l->key, l->keylen, l->base, l->baselen};
    int extend = s == &rl__script_extend;
    int64_t ttl = extend ? strtoll(arg2, NULL, 10) : l->ttl_ms;
    int64_t timeout = rl__client_server_timeout(l->client, ttl);
    int64_t start = rl__now_us();
    long long least = 0, one = 0;
    redislock_err oc[RL_MAX_QUORUM], err;
    rl__round r;

    if (timeout_ms > 0 && timeout_ms < timeout)
        timeout = timeout_ms;
    rl__lock_owner_args(l, arg2, args, lens);
    rl__quorum_script(l->client, NULL, timeout, s, &k, NULL, 3, args, lens, &r);
    for (i = 0; i < r.n; i++) {
        oc[i] = r.err[i];
        if (r.reply[i] != NULL &&
            (oc[i] = rl__reply_owner(r.reply[i], s->name, &one)) == 0 &&
            (least == 0 || one < least))
            least = one;
    }
    rl__lock_set_outcomes(l, oc, r.n);
    rl__round_free(&r);
    err = majority(l, oc, r.n, s == &rl__script_release, s->name);
    *n = least;
    if (err == REDISLOCK_OK && extend &&
        rl__now_us() - start >= (ttl - l->drift_ms) * 1000)
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

/* The majority's view (see redislock_client_new_redlock), and in *first
 * the lowest-numbered server that has the key: a listing reports it there
 * only. */
static redislock_err inspect(redislock_client *c, rl__pool *p, size_t at,
                             const char *key, size_t keylen, const char *base,
                             size_t baselen, redislock_info *info, char **buf,
                             size_t *first)
{
    int64_t ttls[RL_MAX_QUORUM], fence = 0;
    size_t i, held = 0, answered = 0, q;
    redislock_err err = REDISLOCK_OK;
    rl__lockname k = {key, keylen, base, baselen};
    rl__round r;

    (void)p;
    (void)at;
    rl__quorum_script(c, NULL,
                      rl__client_server_timeout(c, REDISLOCK_TTL_MAX_MS),
                      &rl__script_inspect, &k, NULL, 0, NULL, NULL, &r);
    q = RL_QUORUM(r.n);
    *first = r.n;
    for (i = 0; i < r.n; i++) {
        if (r.reply[i] == NULL || !rl__inspect_well_formed(r.reply[i]))
            continue;
        answered++;
        if (r.reply[i]->element[5]->integer > fence)
            fence = r.reply[i]->element[5]->integer;
        if (strcmp(r.reply[i]->element[0]->str, "none") == 0)
            continue;
        ttls[held++] = r.reply[i]->element[1]->integer;
        *first = *first < r.n ? *first : i;
    }
    if (answered < q)
        err = rl__err(REDISLOCK_ENOQUORUM,
                      "only %zu of %zu servers answered, %zu needed", answered,
                      r.n, q);
    else if (held >= q &&
             (err = rl__inspect_decode(r.reply[*first], info, buf)) == 0)
        info->ttl_ms = quorum_ttl(ttls, held, q);
    else if (held < q) {
        memset(info, 0, sizeof *info);
        info->ttl_ms = REDISLOCK_TTL_FREE;
    }
    info->fence = fence;
    rl__round_free(&r);
    return err;
}

/* No one server's PTTL answers for a quorum: the majority's, by inspect. */
static redislock_err ttl(redislock_lock *l, int64_t *ttl_ms)
{
    redislock_info info;
    redislock_err err = redislock_inspect(l, &info);

    if (err == REDISLOCK_OK)
        *ttl_ms = info.ttl_ms;
    return err;
}

const rl__algo rl__algo_redlock = {
    0,
    1,
    "fair mode needs one server: a Redlock quorum has no single queue to "
    "hand the lock down",
    "a fenced resource lives on one server: use a client of the resource's "
    "own server, not the Redlock one",
    "a semaphore needs one server: majorities of independent servers, each "
    "admitting its limit, together admit more holders than the limit",
    "a lock held shared is not built for Redlock yet: its readers would "
    "need a majority each and their undoing on every server; use a "
    "single, sharded or cluster client",
    "a set of keys is not built for Redlock yet: each server would take "
    "the set in one script, and a majority of whole sets be needed; use a "
    "single, sharded or cluster client",
    attempt,
    NULL, /* attempts are a round over every server */
    NULL,
    NULL,
    NULL,
    owner,
    ttl,
    inspect};
