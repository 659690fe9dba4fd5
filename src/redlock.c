#include "redlock.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "quorum.h"
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
    const rl__reply *const *e = (const rl__reply *const *)r->element;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        e[0]->type != REDIS_REPLY_INTEGER ||
        e[1]->type != REDIS_REPLY_INTEGER ||
        (e[0]->integer == 1 &&
         (r->elements != 3 || e[2]->type != REDIS_REPLY_INTEGER)))
        return rl__err(REDISLOCK_EPROTOCOL, "acquire script answered type %d",
                       r->type);
    if (e[0]->integer == 1 &&
        rl__check_fence(e[2]->integer, "acquire") != REDISLOCK_OK)
        return REDISLOCK_EPROTOCOL;
    v->answered++;
    if (e[0]->integer == 1) {
        v->granted++;
        if (e[2]->integer > v->fence)
            v->fence = e[2]->integer;
        return REDISLOCK_OK;
    }
    v->busy++;
    if (e[1]->integer >= -1 &&
        (v->holder_ttl == -2 || e[1]->integer < v->holder_ttl))
        v->holder_ttl = e[1]->integer;
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
    const char *args[4] = {id, ttl, l->base, req};
    size_t lens[4] = {strlen(id), 0, l->baselen, strlen(req)}, i;
    rl__watchdog *wd;
    rl__round r;

    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms + 60000);
    rl__quorum_script(l->client, NULL, timeout_ms, &rl__script_abandon, l->key,
                      l->keylen, 4, args, lens, &r);
    for (i = 0; i < r.n; i++)
        if (r.err[i] != REDISLOCK_OK &&
            rl__client_watchdog(l->client, &wd) == REDISLOCK_OK)
            rl__janitor_abandon(
                wd, rl__client_topo(l->client), rl__client_pool(l->client, i),
                l->key, l->keylen, l->base, l->baselen, id, req, ttl_ms);
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

redislock_err rl__redlock_attempt(redislock_lock *l, const char *id,
                                  const char *req, const char *fmt,
                                  int64_t ttl_ms, int64_t drift_ms,
                                  const char *meta, int64_t *sent_us)
{
    char ttl[24];
    const char *args[7] = {id, ttl, fmt, meta, "0", l->base, req};
    size_t lens[7] = {strlen(id), 0,          strlen(fmt), strlen(meta),
                      1,          l->baselen, strlen(req)};
    int64_t timeout = rl__client_server_timeout(l->client, ttl_ms), took;
    redislock_err oc[RL_MAX_QUORUM];
    rl__round r;
    votes v;

    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    *sent_us = rl__now_us();
    rl__quorum_script(l->client, NULL, timeout, &rl__script_acquire, l->key,
                      l->keylen, 7, args, lens, &r);
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

/* Maps one server's answer to an owner script as owner_script does. */
static redislock_err owner_outcome(const rl__reply *r, long long *n)
{
    if (r->type != REDIS_REPLY_INTEGER)
        return rl__err(REDISLOCK_EPROTOCOL, "owner script answered type %d",
                       r->type);
    *n = r->integer;
    return *n > 0    ? REDISLOCK_OK
           : *n == 0 ? REDISLOCK_EEXPIRED
                     : REDISLOCK_ELOST;
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

redislock_err rl__redlock_owner(redislock_lock *l, const rl__script *s,
                                const char *arg2, int64_t timeout_ms,
                                long long *n)
{
    const char *args[3] = {l->token, arg2, l->base};
    size_t lens[3] = {strlen(l->token), strlen(arg2), l->baselen}, i;
    int extend = s == &rl__script_extend;
    int64_t ttl = extend ? strtoll(arg2, NULL, 10) : l->ttl_ms;
    int64_t timeout = rl__client_server_timeout(l->client, ttl);
    int64_t start = rl__now_us();
    long long least = 0, one = 0;
    redislock_err oc[RL_MAX_QUORUM], err;
    rl__round r;

    if (timeout_ms > 0 && timeout_ms < timeout)
        timeout = timeout_ms;
    rl__quorum_script(l->client, NULL, timeout, s, l->key, l->keylen, 3, args,
                      lens, &r);
    for (i = 0; i < r.n; i++) {
        oc[i] = r.err[i];
        if (r.reply[i] != NULL &&
            (oc[i] = owner_outcome(r.reply[i], &one)) == 0 &&
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
