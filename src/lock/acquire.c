/*
 * Acquire's steps, which the engine (alock.c) sequences: the attempt's
 * request and its outcome, and the decisions of the wait around it:
 * retry strategies with jitter, a deadline, a cap on attempts,
 * fail-fast, and pauses that never outlast the holder's TTL.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "acquire.h"
#include "algo.h"
#include "backoff.h"
#include "engine.h"
#include "env.h"
#include "clock.h"
#include "error.h"
#include "lock.h"
#include "quorum.h"
#include "rand.h"
#include "wait.h"
#include "watchdog.h"

#define RL_DEFAULT_RETRY_MAX_DELAY_MS 2000
/* A waiter not heard from for this long is dead: it can stall a fair
 * queue no longer than this. Fair waiters renew it every heartbeat. */
#define RL_FAIR_ALIVE_MS 5000
#define RL_FAIR_HEARTBEAT_MS 2000
/* Pause between attempts that keep finding the lock free (or expiring). */
#define RL_FREE_RETRY_MS 5
/* Pause when the holder's TTL is unknown or it has none. */
#define RL_UNKNOWN_TTL_PAUSE_MS 1000
/* The longest pause behind a holder whose release wakes nobody (another
 * library's lock) where the server cannot tell of the key's change: each
 * pause is drawn from [d/2, d], so a waiter tries within this long of the
 * release (plus a round trip). */
#define RL_SILENT_POLL_MS 50
/* The pause behind such a holder without a TTL when the server tells of
 * the key's change (a tracked read): the notice ends it; this bounds it,
 * should a notice be lost in a way the engine does not see. */
#define RL_TRACKED_QUIET_MS 10000
/* The longest a waiting marker is set for, per attempt. */
#define RL_MARK_MAX_MS 86400000

/* A semaphore's limit, and what a share (a permit, a reader's share of a
 * lock held shared) cannot have. */
static redislock_err check_share(const redislock_acquire_options *o)
{
    const char *what = o->shared ? "a reader's share (shared)" : "a permit";

    if (o->limit < 0 || o->limit > REDISLOCK_LIMIT_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "limit of %d: a semaphore admits 1 to %d holders (0: "
                       "an exclusive lock)",
                       o->limit, REDISLOCK_LIMIT_MAX);
    if (o->shared && o->limit > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "shared and a limit of %d: a key is either a lock "
                       "(held shared or alone) or a semaphore",
                       o->limit);
    if ((o->limit > 0 || o->shared) &&
        (o->reentrant || o->owner != NULL || o->metadata != NULL))
        return rl__err(REDISLOCK_EINVAL,
                       "%s cannot be %s: shares have no owner id, metadata "
                       "or re-entry",
                       what,
                       o->reentrant ? "reentrant"
                       : o->owner   ? "given an owner id"
                                    : "given metadata");
    return REDISLOCK_OK;
}

static redislock_err check_options(const redislock_acquire_options *o)
{
    int64_t ttl = o->ttl_ms ? o->ttl_ms : REDISLOCK_DEFAULT_TTL_MS;
    redislock_err err = rl__check_ttl(ttl, "TTL");

    if (err != REDISLOCK_OK)
        return err;
    if (o->wait_ms < REDISLOCK_WAIT_FOREVER)
        return rl__err(REDISLOCK_EINVAL,
                       "wait of %" PRId64 " ms: use 0, a positive time or "
                       "REDISLOCK_WAIT_FOREVER",
                       o->wait_ms);
    if (o->retry_delay_ms < 0 || o->retry_max_delay_ms < 0 ||
        o->max_attempts < 0 || (unsigned)o->retry > REDISLOCK_RETRY_NONE)
        return rl__err(REDISLOCK_EINVAL,
                       "bad retry settings (negative delay or attempts, or "
                       "an unknown strategy)");
    if (o->drift_ms < 0 || o->max_renewals < 0 || o->max_hold_ms < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "negative drift, renewal cap or hold cap");
    if (o->drift_ms >= ttl)
        return rl__err(REDISLOCK_EINVAL,
                       "drift of %" PRId64 " ms leaves no validity: it must "
                       "be less than the TTL",
                       o->drift_ms);
    if (!o->watchdog && (o->on_lost || o->max_renewals || o->max_hold_ms))
        return rl__err(REDISLOCK_EINVAL,
                       "on_lost, max_renewals and max_hold_ms need watchdog");
    if (o->owner != NULL &&
        (*o->owner == '\0' || strlen(o->owner) > RL_TOKEN_MAX))
        return rl__err(REDISLOCK_EINVAL, "owner id must be 1 to %d bytes",
                       RL_TOKEN_MAX);
    if (o->owner != NULL && strcmp(o->owner, RL_RESERVED_VALUE) == 0)
        return rl__err(REDISLOCK_EINVAL,
                       "owner id '%s' is what marks a hold-after "
                       "reservation: choose another",
                       RL_RESERVED_VALUE);
    if (o->metadata != NULL && strlen(o->metadata) > 65536)
        return rl__err(REDISLOCK_EINVAL, "metadata longer than 64 KiB");
    if ((err = rl__check_lock_delay(o->lock_delay_ms, ttl)) != REDISLOCK_OK)
        return err;
    if (o->lock_delay_ms > 0 && (o->fair || o->limit > 0 || o->shared))
        return rl__err(REDISLOCK_EINVAL,
                       "a lock-delay is for an exclusive lock that is not "
                       "fair: not with %s (not yet)",
                       o->fair     ? "fair"
                       : o->shared ? "shared"
                                   : "a limit");
    return check_share(o);
}

/* The handle's own owner id, "host:pid:random", made once. */
static const char *default_owner(redislock_lock *l)
{
    char host[256] = "", tok[RL_TOKEN_HEXLEN + 1];
    size_t n;

    if (l->default_owner != NULL)
        return l->default_owner;
    if (rl__token(tok) != 0)
        return NULL;
    gethostname(host, sizeof host - 1);
    n = strlen(host) + RL_TOKEN_HEXLEN + 32;
    if ((l->default_owner = malloc(n)) != NULL)
        snprintf(l->default_owner, n, "%s:%ld:%s", host, (long)getpid(), tok);
    return l->default_owner;
}

/* The attempt's request, as the algorithm takes it. */
static void fill_try(const rl__acq *a, int64_t deadline, rl__try *t)
{
    int64_t left = deadline - rl__now_ms();

    /* Fair waiters pass their alive window, others how long they may
     * block (0 for a single try: no wake-up wanted). */
    if (left > RL_MARK_MAX_MS)
        left = RL_MARK_MAX_MS;
    t->id = a->id;
    t->req = a->req;
    t->fmt = a->fmt;
    t->meta = a->o->metadata ? a->o->metadata : "";
    t->ttl_ms = a->ttl_ms;
    t->delay_ms = a->lock_delay_ms;
    t->drift_ms =
        a->o->drift_ms ? a->o->drift_ms : rl__default_drift(a->ttl_ms);
    t->fair = a->o->fair;
    t->limit = a->o->shared ? RL_LIMIT_SHARED : a->o->limit;
    t->mark_ms = a->o->fair ? RL_FAIR_ALIVE_MS : a->waits ? left : 0;
    t->waited = 0;
}

/* One attempt, sent at *sent_us. Where a failed attempt was undone
 * everywhere (Redlock), its token was voided with it: a plain lock takes
 * a fresh one each time. */
redislock_err rl__acq_try(redislock_lock *l, rl__acq *a, int tries,
                          int64_t deadline, rl__try *t)
{
    l->holder_ttl = -2;
    l->holder_silent = 0;
    a->tracked = 0;
    if (l->algo->fresh_token && tries > 0 &&
        (a->rich ? rl__token(a->nonce)
                 : rl__lock_token_as(a->tok, a->native)) != 0)
        return rl__err(REDISLOCK_ERANDOM, "getrandom failed");
    fill_try(a, deadline, t);
    t->waited = tries > 0;
    return REDISLOCK_OK;
}

/* The pause before attempt + 1, or -1 to give up. Without a strategy of
 * the caller's, a waiter blocks until a release wakes it or the holder's
 * lease ends (and a fair waiter at least once per heartbeat); behind a
 * holder whose release wakes nobody, likewise when the server tells it of
 * the key's change (a tracked read), else it polls. */
static int64_t next_pause(redislock_lock *l, const rl__acq *a, int attempt_no,
                          int64_t now, int64_t deadline)
{
    const redislock_acquire_options *o = a->o;
    int64_t d;

    if (o->max_attempts > 0 && attempt_no >= o->max_attempts)
        return -1;
    if (o->retry_fn != NULL) {
        d = o->retry_fn(o->retry_arg, attempt_no, l->holder_ttl);
        if (d < 0)
            return -1;
    } else if (a->strategy || (!l->algo->wakes && !a->tracked)) {
        /* Without wake-ups (Redlock) waiters retry after a random pause,
         * unless the servers tell them of the key's change (a round's
         * tracked reads). */
        d = rl__jitter(
            rl__retry_delay((int)o->retry, a->delay_ms, a->cap_ms, attempt_no),
            rl__jitter_rand());
    } else if (l->holder_silent && !a->tracked) {
        d = rl__jitter(RL_SILENT_POLL_MS, rl__jitter_rand());
    } else if (l->holder_silent && l->holder_ttl < 0) {
        d = RL_TRACKED_QUIET_MS;
    } else {
        d = l->holder_ttl >= 0 ? l->holder_ttl : RL_UNKNOWN_TTL_PAUSE_MS;
    }
    if (o->fair && d > RL_FAIR_HEARTBEAT_MS)
        d = RL_FAIR_HEARTBEAT_MS;
    return rl__backoff_cap(d, l->holder_ttl, now, deadline);
}

/* Fail-fast: the holder keeps the lock past our deadline. */
static int hopeless(const redislock_lock *l, int64_t now, int64_t deadline)
{
    if (l->holder_ttl == REDISLOCK_TTL_NO_EXPIRY)
        return 1;
    return deadline != RL_NO_DEADLINE && l->holder_ttl >= 0 &&
           l->holder_ttl > deadline - now;
}

static redislock_err gave_up(redislock_lock *l, int64_t waited, int tries,
                             const char *why)
{
    char who[512] = "";
    redislock_err o[RL_MAX_QUORUM];
    size_t n = redislock_outcomes(l, o, RL_MAX_QUORUM);

    /* Redlock: which servers said what in the last round. */
    if (n > 1) {
        memcpy(who, "; last round: ", 14);
        rl__outcomes_describe(l->client, o, n, who + 14, sizeof who - 14);
    }
    return rl__err(REDISLOCK_EHELD,
                   "lock is held by another owner (holder's TTL %" PRId64
                   " ms; %d attempt%s in %" PRId64 " ms%s%s%s)",
                   l->holder_ttl, tries, tries == 1 ? "" : "s", waited,
                   why ? "; " : "", why ? why : "", who);
}

/* After a held attempt (the tries-th): whether and how long to pause
 * within the wait, or why not. */
static redislock_err plan_pause(redislock_lock *l, rl__acq *a, int64_t *pause)
{
    int64_t now = rl__now_ms(), start = a->start_ms, deadline = a->deadline_ms;
    int tries = a->tries;

    if (now >= deadline)
        return gave_up(l, now - start, tries, NULL);
    if (a->o->fail_fast && hopeless(l, now, deadline))
        return gave_up(l, now - start, tries,
                       "fail-fast: it outlasts the wait");
    *pause = next_pause(l, a, tries, now, deadline);
    if (*pause < 0)
        return gave_up(l, now - start, tries, "attempts exhausted");
    /* Released in between, or about to expire: try again at once, but
     * only once in a row (a server that keeps saying so is not to be
     * hammered). A queued fair waiter told the key is free waits for the
     * waiters ahead of it to take it: their hand-off message or its
     * heartbeat wakes it. */
    if (a->queued && l->holder_ttl == REDISLOCK_TTL_FREE)
        a->free_retries = 0;
    else if (l->holder_ttl == REDISLOCK_TTL_FREE || l->holder_ttl == 0)
        *pause = a->free_retries++ == 0 ? 0 : RL_FREE_RETRY_MS;
    else
        a->free_retries = 0;
    return REDISLOCK_OK;
}

/* Whether err leaves an attempt's outcome unknown: the request may have
 * run without its reply reaching us. */
static int lost_reply(redislock_err err)
{
    return err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_EIO ||
           err == REDISLOCK_EPROTOCOL;
}

/* The attempt, whose reply was lost, must not hold the lock, now or when
 * it arrives late: the algorithm sees to it (in the background), unless
 * a failed attempt has undone itself. */
void rl__acq_abandon(redislock_lock *l, const rl__acq *a)
{
    rl__try t;

    if (!l->algo->abandons)
        return;
    fill_try(a, rl__now_ms(), &t);
    a->abandon(a->drv, l, &t, 0);
}

/* Whether a hand-off told on the waiter's channel is taken as it is:
 * its lease began after the waiter's last attempt was sent (the message
 * names this call's request, and the call is queued only from its first
 * attempt on), so counting it from then is safe, if short: when less than
 * half the lease is left by that count (the release came late in the
 * waiter's pause, or this thread was held up), the waiter confirms with
 * an attempt instead, which finds the hand-off (rl_handed,
 * rl_share_handed), makes the lease the TTL and counts from its own
 * sending. Otherwise the caller would start with a validity a watchdog
 * held up for a moment lets run out, reporting as lost a lease the server
 * keeps. A waiter that was paused past the lease tries again alike. */
static int handoff_valid(const redislock_lock *l, const rl__acq *a,
                         int64_t sent_us)
{
    int64_t drift =
        a->o->drift_ms ? a->o->drift_ms : rl__default_drift(a->ttl_ms);
    int64_t lease = l->handoff_lease < a->ttl_ms ? l->handoff_lease : a->ttl_ms;
    int64_t valid_us = (lease - drift) * 1000;

    return sent_us + valid_us - rl__now_us() > valid_us / 2;
}

/* Whether an attempt that failed with err waits out a failover: it
 * surely did not run, the topology says the key's node is being
 * replaced, and the wait has time left; the pause, no longer than that,
 * in *pause. A waiter thus fails only when its wait does, not at the
 * first request that finds the old master gone: the sentinels take
 * their down-after time and an election to name another, a cluster its
 * node timeout and an election to promote a replica. */
static int failover_pause(redislock_lock *l, rl__acq *a, redislock_err err,
                          int64_t *pause)
{
    int64_t now = rl__now_ms(),
            d = rl__topo_failover_pause(rl__client_topo(l->client), err);

    if (d <= 0 || !a->waits || now >= a->deadline_ms ||
        (a->o->max_attempts > 0 && a->tries >= a->o->max_attempts))
        return 0;
    *pause = d < a->deadline_ms - now ? d : a->deadline_ms - now;
    a->blind = 1;
    return 1;
}

/* After an attempt whose reply was lost, abandoned: whether the wait
 * goes on, the pause in *pause. Where the key's node may be being
 * replaced (a master killed mid-request), a waiter with time left goes
 * on with a fresh token, which is also its request id: the abandon
 * voids the old one, never sent again. Only a plain lock, not fair: its
 * fresh token cannot meet the hold the lost attempt may have taken,
 * where an owner id's attempt would add to that hold (re-entry) before
 * the abandon, in the background, takes it back, and a fair waiter's
 * place in the queue is its request id's. */
static int lost_goes_on(redislock_lock *l, rl__acq *a, int64_t *pause)
{
    if (a->rich || a->o->fair || l->algo->fresh_token ||
        !failover_pause(l, a, REDISLOCK_ECONNECT, pause))
        return 0;
    if (rl__lock_token_as(a->tok, a->native) != 0) {
        a->blind = 0;
        return 0;
    }
    return 1;
}

/* After a failed round of an algorithm that undoes it everywhere and
 * takes a fresh token for the next (Redlock): whether the wait goes on,
 * the pause in *pause. Too few servers answering in time (ENOQUORUM), or
 * a majority's answer too late to leave validity (ETIMEDOUT), says no
 * more about the next round than a refusal does while a majority of the
 * servers is still there to answer (a loaded or paused server answers
 * late): a waiter with time left tries again, ending with the last
 * round's error only when its wait does. A majority that refuses
 * connections is down: that fails at once, as without a wait. */
static int round_goes_on(redislock_lock *l, rl__acq *a, redislock_err err,
                         int64_t *pause)
{
    redislock_err oc[RL_MAX_QUORUM];
    size_t n, i, there = 0;
    int64_t now = rl__now_ms();

    if (!l->algo->fresh_token || !a->waits || now >= a->deadline_ms ||
        (err != REDISLOCK_ENOQUORUM && !lost_reply(err)))
        return 0;
    n = redislock_outcomes(l, oc, RL_MAX_QUORUM);
    for (i = 0; i < n; i++)
        there += oc[i] != REDISLOCK_ECONNECT;
    if (there < RL_QUORUM(n))
        return 0;
    *pause = next_pause(l, a, a->tries, now, a->deadline_ms);
    return *pause >= 0;
}

/* After an attempt that came back with *err: RL_NEXT_DONE with *err the
 * call's outcome (REDISLOCK_OK: taken; an attempt whose reply was lost
 * is abandoned), or RL_NEXT_PAUSE with the pause in *pause. */
rl__next rl__acq_after_attempt(redislock_lock *l, rl__acq *a,
                               redislock_err *err, int64_t *pause)
{
    a->tries++;
    a->blind = 0;
    /* A fair attempt that is refused queues the call; one that takes the
     * lock leaves the queue (fair.lua). */
    if (*err == REDISLOCK_EHELD)
        a->queued = a->was_queued = a->o->fair;
    if (*err == REDISLOCK_OK)
        a->queued = 0;
    if (*err != REDISLOCK_EHELD && failover_pause(l, a, *err, pause)) {
        rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_RETRY,
                                            .err = *err,
                                            .attempts = a->tries,
                                            .ms = *pause});
        return RL_NEXT_PAUSE;
    }
    if (*err != REDISLOCK_EHELD && *err != REDISLOCK_OK &&
        round_goes_on(l, a, *err, pause)) {
        rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_RETRY,
                                            .err = *err,
                                            .attempts = a->tries,
                                            .ms = *pause});
        return RL_NEXT_PAUSE;
    }
    if (*err != REDISLOCK_EHELD) {
        if (*err == REDISLOCK_OK || !lost_reply(*err))
            return RL_NEXT_DONE;
        rl__acq_abandon(l, a);
        if (!lost_goes_on(l, a, pause))
            return RL_NEXT_DONE;
        rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_RETRY,
                                            .err = *err,
                                            .attempts = a->tries,
                                            .ms = *pause});
        return RL_NEXT_PAUSE;
    }
    rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_CONTENDED,
                                        .attempts = a->tries,
                                        .ms = l->holder_ttl});
    *err = plan_pause(l, a, pause);
    if (*err != REDISLOCK_OK)
        return RL_NEXT_DONE;
    rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_RETRY,
                                        .attempts = a->tries,
                                        .ms = *pause});
    return RL_NEXT_PAUSE;
}

int rl__acq_after_pause(redislock_lock *l, rl__acq *a, rl__wait_result res,
                        int64_t sent_us)
{
    if (res != RL_WAIT_HANDOFF || !handoff_valid(l, a, sent_us))
        return 0;
    /* Handed over after our last attempt ran: the lease started no
     * earlier than that attempt was sent. */
    a->queued = 0;
    a->handed = 1;
    return 1;
}

/* The id of this call's requests: a plain lock's token is unique to the
 * call already; an owner id is not, so its requests get one of their
 * own. */
static redislock_err set_req(rl__acq *a)
{
    if (!a->rich) {
        a->req = a->id;
        return REDISLOCK_OK;
    }
    if (rl__token(a->nonce) != 0)
        return rl__err(REDISLOCK_ERANDOM, "getrandom failed");
    a->req = a->nonce;
    return REDISLOCK_OK;
}

static redislock_err setup(redislock_lock *l,
                           const redislock_acquire_options *o, rl__acq *a)
{
    a->o = o;
    l->reader = o->shared;
    a->rich = o->reentrant || o->owner != NULL || o->metadata != NULL;
    a->fmt = o->reentrant ? "reentrant" : a->rich ? "hash" : "plain";
    a->waits =
        o->wait_ms != REDISLOCK_NO_WAIT && o->retry != REDISLOCK_RETRY_NONE;
    a->strategy = o->retry != REDISLOCK_RETRY_CONSTANT || o->retry_delay_ms;
    a->ttl_ms = o->ttl_ms ? o->ttl_ms : REDISLOCK_DEFAULT_TTL_MS;
    a->lock_delay_ms = l->own > 0 ? l->delay_ms : o->lock_delay_ms;
    a->delay_ms = o->retry_delay_ms ? o->retry_delay_ms
                                    : REDISLOCK_DEFAULT_RETRY_DELAY_MS;
    a->cap_ms = o->retry_max_delay_ms ? o->retry_max_delay_ms
                                      : RL_DEFAULT_RETRY_MAX_DELAY_MS;
    if (a->cap_ms < a->delay_ms)
        a->cap_ms = a->delay_ms;
    if (l->own > 0) {
        /* Re-entry: the owner id this handle already holds with. */
        a->id = l->token;
        return set_req(a);
    }
    /* Tokens of the native prefix, which waiters mark: one key, held
     * alone and not fair (fair waiters are most likely behind it, and
     * their hand-off is the script's), whose release may be a node's own
     * compare-and-delete (rl__lock_native_release) or elsewhere a script
     * of its key alone (rl__lock_lean_release), on any node; a Redlock
     * quorum's only where some server has the command (it takes no lean
     * script); and a set on any node (Redlock's aside), whose release
     * tries a script of its lock keys alone. A set takes no option that
     * would stop it (rl__acq_begin's checks). */
    if (l->nmore > 0)
        a->native = !l->algo->every;
    else
        a->native =
            !a->rich && !o->shared && o->limit == 0 && !o->fair &&
            l->spread == NULL &&
            (!l->algo->every ||
             rl__topo_native(rl__client_topo(l->client), l->key, l->keylen));
    if (o->owner != NULL) {
        a->id = o->owner;
    } else if (a->rich) {
        if ((a->id = default_owner(l)) == NULL)
            return rl__err(REDISLOCK_ERANDOM, "cannot make an owner id");
    } else {
        if (rl__lock_token_as(a->tok, a->native) != 0)
            return rl__err(REDISLOCK_ERANDOM, "getrandom failed");
        a->id = a->tok;
    }
    return set_req(a);
}

redislock_err rl__acq_begin(redislock_lock *l,
                            const redislock_acquire_options *opts, rl__acq *a)
{
    redislock_err err;

    memset(a, 0, sizeof *a);
    a->t0_us = rl__now_us();
    if ((err = check_options(opts)) != REDISLOCK_OK)
        return err;
    if (l->own > 0 && (!opts->reentrant || !l->rich))
        return rl__err(REDISLOCK_EINVAL,
                       "this handle already holds the lock (only a lock "
                       "acquired reentrant can be taken again)");
    if ((err = setup(l, opts, a)) != REDISLOCK_OK)
        return err;
    if (opts->fair && l->algo->no_fair != NULL)
        return rl__err(REDISLOCK_EINVAL, "%s", l->algo->no_fair);
    if (opts->limit && l->algo->no_semaphore != NULL)
        return rl__err(REDISLOCK_EINVAL, "%s", l->algo->no_semaphore);
    if (opts->shared && l->algo->no_shared != NULL)
        return rl__err(REDISLOCK_EINVAL, "%s", l->algo->no_shared);
    if (l->nmore > 0 && opts->fair)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys cannot be fair: it holds none of its "
                       "keys while it waits, so it has no place in their "
                       "queues (a place in each would be a hold while waiting, "
                       "and sets could then deadlock)",
                       l->nmore + 1);
    if (l->nmore > 0 && opts->lock_delay_ms > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys has no lock-delay (not yet)",
                       l->nmore + 1);
    if (l->nmore > 0 && (a->rich || opts->limit || opts->shared))
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys cannot be %s: a set is a plain lock "
                       "(one token), not yet any other kind",
                       l->nmore + 1,
                       opts->reentrant  ? "reentrant"
                       : opts->owner    ? "given an owner id"
                       : opts->metadata ? "given metadata"
                       : opts->limit    ? "a semaphore"
                                        : "shared");
    a->start_ms = rl__now_ms();
    a->deadline_ms =
        a->waits ? rl__deadline(a->start_ms, opts->wait_ms) : a->start_ms;
    return REDISLOCK_OK;
}

/* A lock just taken that the caller must not keep (not durable, its
 * lease unconfirmed, no watchdog for it) is given back: swept as an
 * abandoned attempt is (the attempt's request undone, whatever it took),
 * which never blocks. */
static void give_back(redislock_lock *l, const rl__acq *a)
{
    rl__try t;

    fill_try(a, rl__now_ms(), &t);
    a->abandon(a->drv, l, &t, 1);
    /* 2: holds of a re-entrant lock remain (abandon.lua took back this
     * request's only). */
    rl__lock_released(l, REDISLOCK_OK, l->own > 1 ? 2 : 1);
}

/* A lock given back on a loop voided its request id (abandon.lua): it is
 * never sent again; the next attempts carry a fresh one. A plain lock's
 * token is that id. -1 (*err set) when none can be made. */
static int fresh_req(rl__acq *a, redislock_err *err)
{
    if ((!a->rich && rl__lock_token_as(a->tok, a->native) != 0) ||
        set_req(a) != 0) {
        *err = rl__err(REDISLOCK_ERANDOM, "getrandom failed");
        return -1;
    }
    return 0;
}

/* Whether a hand-off granted less than the TTL (see rl_handoff in
 * lib.lua): its renewals extend it after a third of that lease,
 * off the caller's path; a lock released sooner (the common case) costs
 * no extension at all. */
static int short_lease(const redislock_lock *l, const rl__acq *a)
{
    return a->handed && l->handoff_lease < a->ttl_ms;
}

redislock_err rl__acq_take(redislock_lock *l,
                           const redislock_acquire_options *opts, rl__acq *a,
                           int64_t sent_us)
{
    redislock_err err;

    /* Set on the first hold only: the keeper's renewals read the format
     * (the one release and extend expect), and a re-entry keeps it. A
     * fair call that queued is likely to have fair waiters behind it,
     * whom its release hands the lock to (see rl__lock_first). */
    if (l->own == 0) {
        l->rich = a->rich;
        l->fair_queued = a->was_queued;
        l->waited =
            a->tries > 1 || a->handed || a->was_queued || l->met_waiters;
        l->met_waiters = 0;
        l->limit = opts->shared ? RL_LIMIT_SHARED : opts->limit;
        l->delay_ms = a->lock_delay_ms;
    }
    rl__lock_take(l, a->id, a->ttl_ms, opts->drift_ms ? opts->drift_ms : -1,
                  sent_us, short_lease(l, a) ? l->handoff_lease : a->ttl_ms);
    if (!a->handed && (err = rl__lock_durable(l, "acquire")) != 0) {
        /* A lock only the master knows of dies with it: give it back. */
        char said[256];
        snprintf(said, sizeof said, "%s", redislock_errdetail());
        give_back(l, a);
        a->refused = 1;
        return rl__err(REDISLOCK_ENOTDURABLE, "%s; released", said);
    }
    return REDISLOCK_OK;
}

int rl__acq_confirm_due(const redislock_lock *l, const rl__acq *a)
{
    /* Taken by an attempt sent behind a BLPOP: its validity counts from
     * before the block, though the lease began when the attempt ran.
     * After a long block (more than half the lease) it is confirmed now,
     * counted from that extend. */
    return a->piped && redislock_valid_ms(l) < (a->ttl_ms - l->drift_ms) / 2;
}

redislock_err rl__acq_confirmed(redislock_lock *l, rl__acq *a,
                                redislock_err err)
{
    char said[256];

    if (err == REDISLOCK_OK)
        return REDISLOCK_OK;
    snprintf(said, sizeof said, "%s", redislock_errdetail());
    give_back(l, a);
    a->lapsed = err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST;
    return rl__err(err, "confirming the lease after a long wait: %s; released",
                   said);
}

redislock_err rl__acq_keep(redislock_lock *l,
                           const redislock_acquire_options *opts, rl__acq *a,
                           int64_t sent_us)
{
    int64_t first_us =
        short_lease(l, a) ? sent_us + l->handoff_lease * 1000 / 3 : 0;
    redislock_err err;

    if ((opts->watchdog || short_lease(l, a)) && l->watch == NULL &&
        (err = a->watch(a->drv, l, opts, sent_us, first_us)) != REDISLOCK_OK) {
        /* Without its watchdog the caller would hold a lease nobody
         * renews: give it back. */
        give_back(l, a);
        return err;
    }
    return REDISLOCK_OK;
}

int rl__acq_again(rl__acq *a, redislock_err *err)
{
    /* The lease an attempt behind the BLPOP took had ended by the time
     * the waiter read it (it was stopped, or the reply was slow), and
     * someone, maybe another handle of its owner id, took the key:
     * nothing it learned then holds. It tries again and waits, as long
     * as its deadline lets it. */
    if (!a->lapsed || rl__now_ms() >= a->deadline_ms)
        return 0;
    a->lapsed = 0;
    a->piped = 0;
    return fresh_req(a, err) == 0;
}

rl__next rl__acq_after_finish(redislock_lock *l, rl__acq *a, redislock_err *err,
                              int64_t *pause)
{
    int refused = a->refused;

    a->refused = 0;
    /* A failover's new master takes writes before its replicas are back
     * (the old master among them), and the old one, until it is told,
     * writes what its promoted replica no longer confirms: the guard
     * refuses, and the wait goes on as through any failover. Should the
     * refusal last to the deadline, the caller hears it (with the
     * guard's detail), not a bare timeout. */
    if (!refused || !failover_pause(l, a, *err, pause))
        return RL_NEXT_DONE;
    if (fresh_req(a, err) != 0)
        return RL_NEXT_DONE;
    a->piped = 0;
    rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_RETRY,
                                        .err = *err,
                                        .attempts = a->tries,
                                        .ms = *pause});
    return RL_NEXT_PAUSE;
}

/* The lease a watch watches: the lock's, through these. */
static int64_t lease_valid_until(const redislock_lock *l)
{
    return atomic_load(&l->valid_until_us);
}

static const rl__lease lock_lease = {lease_valid_until, rl__lock_mark_lost};

redislock_err rl__acq_watch_loop(redislock_lock *l,
                                 const redislock_acquire_options *o,
                                 int64_t sent_us, int64_t first_us, int efd)
{
    return rl__watch_start(&lock_lease, l, l->ttl_ms, o, sent_us, first_us, efd,
                           &l->watch);
}

void rl__acq_end(redislock_lock *l, const rl__acq *a, redislock_err err)
{
    /* Events for calls that tried: refused options made no attempt. */
    if (a->tries > 0)
        rl__lock_event(
            l, (redislock_event){.kind = err == REDISLOCK_OK
                                             ? REDISLOCK_EVENT_ACQUIRED
                                             : REDISLOCK_EVENT_NOT_ACQUIRED,
                                 .err = err,
                                 .attempts = a->tries,
                                 .ms = (rl__now_us() - a->t0_us) / 1000,
                                 .fence = err == REDISLOCK_OK ? l->fence : 0});
}
