/*
 * The lock handle's lease and what every operation on it shares: the
 * owner scripts and what their answers do to the handle (release,
 * extend, renew), validity, guards, events. A plain lock's key holds a random
 * token as a string with a server-side TTL (SET key token NX PX ttl), the
 * format redis-py's Lock, node-redlock and bsm/redislock use too; a lock
 * with an owner id (reentrant, or with metadata) is a hash. Release and
 * extend compare the token or owner first, atomically, in Lua, and work on
 * both formats.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "clock.h"
#include "error.h"
#include "lock.h"
#include "rand.h"
#include "keyed.h"
#include "algo.h"
#include "watchdog.h"

void rl__lock_unwatch(redislock_lock *l)
{
    if (l->lwatch_stop != NULL)
        l->lwatch_stop(l);
    l->lwatch_stop = NULL;
    l->kept = 0;
    rl__watch_stop(l->watch);
    l->watch = NULL;
}

redislock_err rl__check_text(const char *s, size_t max, const char *what)
{
    size_t i, n = strlen(s);

    if (n > max)
        return rl__err(REDISLOCK_EINVAL, "%s of %zu bytes: at most %zu", what,
                       n, max);
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return rl__err(REDISLOCK_EINVAL,
                           "%s has a byte that is not printable ASCII at %zu",
                           what, i);
    return REDISLOCK_OK;
}

int64_t rl__default_drift(int64_t ttl_ms)
{
    return ttl_ms / 100 + 2;
}

redislock_err rl__check_lock_delay(int64_t delay_ms, int64_t ttl_ms)
{
    if (delay_ms < 0 || delay_ms > REDISLOCK_LOCK_DELAY_MAX_MS)
        return rl__err(REDISLOCK_EINVAL,
                       "lock-delay of %" PRId64 " ms: use 0 (none) to %d ms "
                       "(a minute, the bound Chubby and Consul keep)",
                       delay_ms, REDISLOCK_LOCK_DELAY_MAX_MS);
    if (ttl_ms > REDISLOCK_TTL_MAX_MS - delay_ms)
        return rl__err(REDISLOCK_EINVAL,
                       "a TTL of %" PRId64 " ms and a lock-delay of %" PRId64
                       " ms: the key would live longer than %lld ms "
                       "(REDISLOCK_TTL_MAX_MS); shorten the TTL",
                       ttl_ms, delay_ms, (long long)REDISLOCK_TTL_MAX_MS);
    return REDISLOCK_OK;
}

redislock_err rl__check_ttl(int64_t ttl_ms, const char *what)
{
    if (ttl_ms <= 0)
        return rl__err(REDISLOCK_EINVAL,
                       "%s of %" PRId64 " ms: it must be positive", what,
                       ttl_ms);
    if (ttl_ms > REDISLOCK_TTL_MAX_MS)
        return rl__err(REDISLOCK_EINVAL,
                       "%s of %" PRId64 " ms is over the limit of %lld ms "
                       "(30 days)",
                       what, ttl_ms, (long long)REDISLOCK_TTL_MAX_MS);
    return REDISLOCK_OK;
}

static const char *pingv[1] = {"PING"};
static const rl__cmd ping = {1, pingv, NULL};

const rl__cmd *rl__lock_first(const redislock_lock *l, const rl__script *s)
{
    return l->fair_queued && s == &rl__script_release ? &ping : NULL;
}

int rl__lock_native_release(const redislock_lock *l, const rl__script *s,
                            int64_t hold_after_ms)
{
    return s == &rl__script_release && hold_after_ms == 0 && !l->rich &&
           l->limit == 0 && l->nmore == 0 && !l->fair_queued && !l->waited &&
           l->own == 1 && rl__token_native(l->token);
}

void rl__lock_lean_release(const redislock_lock *l, int64_t hold_after_ms,
                           rl__request *q)
{
    const rl__script *s = q->s;

    /* A plain lock on a node without a compare-and-delete of its own (the
     * request layer sends the lean script only there): release.lua's
     * first key is the lock. */
    if (s == &rl__script_release) {
        if (!l->algo->every && s->keys[0] == RL_KEY_LOCK &&
            rl__lock_native_release(l, s, hold_after_ms)) {
            q->lean = &rl__script_set_free;
            q->lean_stride = s->nkeys;
        }
        return;
    }
    /* set_release.lua's keys: each lock's, the lock first in each. */
    if (s != &rl__script_set_release || s->nkeys != s->neach ||
        s->keys[0] != RL_KEY_LOCK || s->each[0] != RL_KEY_LOCK)
        return;
    if (hold_after_ms != 0 || l->nmore == 0 || l->algo->every || l->waited ||
        l->own != 1 || !rl__token_native(l->token))
        return;
    q->lean = &rl__script_set_free;
    q->lean_stride = s->neach;
}

void rl__lock_queued_release(const redislock_lock *l, rl__owner_args *a)
{
    if (l->fair_queued && a->args[2][0] == 'p')
        a->args[2] = "q";
}

void rl__lock_copy_wake(const redislock_lock *l, int64_t hold_after_ms,
                        rl__owner_args *a, rl__request *q)
{
    if (q->s != &rl__script_release || q->nargs != RL_OWNER_NARGS ||
        hold_after_ms != 0 || l->limit != 0 || l->nmore != 0 ||
        l->fair_queued || l->algo->every || l->algo->groups ||
        rl__lock_guarded(l) || rl__topo_moves(rl__client_topo(l->client)))
        return;
    a->args[RL_OWNER_NARGS] = "";
    a->lens[RL_OWNER_NARGS] = 0;
    q->nargs = RL_OWNER_NARGS + 1;
    q->copy_wake = l->waited ? 1 : 2;
}

rl__lockname rl__lock_name(const redislock_lock *l)
{
    return (rl__lockname){l->key,     l->keylen, l->base,
                          l->baselen, l->fname,  l->fnamelen};
}

int rl__lock_names(const redislock_lock *l,
                   rl__lockname names[1 + REDISLOCK_SET_MAX])
{
    int i;

    names[0] = rl__lock_name(l);
    for (i = 0; i < l->nmore; i++)
        names[1 + i] = l->more[i];
    return 1 + l->nmore;
}

int rl__lock_guarded(const redislock_lock *l)
{
    const rl__replicas *g = rl__client_replicas(l->client);

    return g->want != 0 || g->aof_local > 0 || g->aof_replicas > 0;
}

void rl__lock_guard(const redislock_lock *l, rl__request *q, rl__guard_acks *a)
{
    rl__client_guard(l->client, q, a);
}

void rl__client_guard(const redislock_client *c, rl__request *q,
                      rl__guard_acks *a)
{
    const rl__replicas *g = rl__client_replicas(c);

    a->acked = a->need = a->aof[0] = a->aof[1] = -1;
    q->all = g->want < 0 ? g->seen : NULL;
    q->wait_replicas = g->want < 0 ? rl__seen_guess(g->seen) : g->want;
    q->wait_ms = g->timeout_ms;
    q->acked = &a->acked;
    q->need = &a->need;
    q->wait_aof_local = g->aof_local;
    q->wait_aof_replicas = g->aof_replicas;
    q->aof_acked = a->aof;
}

void rl__lock_acks(redislock_lock *l, const rl__request *q, redislock_err err)
{
    if (q->wait_replicas > 0) {
        l->acks.replicas = err == REDISLOCK_OK ? (int)*q->acked : -1;
        l->acks.need = q->all == NULL ? q->wait_replicas
                       : q->need != NULL && err == REDISLOCK_OK ? (int)*q->need
                                                                : -1;
    }
    if (rl__request_waitaof(q)) {
        l->acks.aof_local = err == REDISLOCK_OK ? (int)q->aof_acked[0] : -1;
        l->acks.aof_replicas = err == REDISLOCK_OK ? (int)q->aof_acked[1] : -1;
    }
}

void rl__acks_least(rl__acks *into, const rl__acks *a, int first)
{
    if (first) {
        *into = *a;
        return;
    }
    into->replicas =
        a->replicas < into->replicas ? a->replicas : into->replicas;
    into->need = a->need > into->need ? a->need : into->need;
    into->aof_local =
        a->aof_local < into->aof_local ? a->aof_local : into->aof_local;
    into->aof_replicas = a->aof_replicas < into->aof_replicas
                             ? a->aof_replicas
                             : into->aof_replicas;
}

/* How many of want confirmed (got; -1: none could), for a message. */
static int confirmed(int got)
{
    return got < 0 ? 0 : got;
}

redislock_err rl__lock_durable(const redislock_lock *l, const char *what)
{
    const rl__replicas *g = rl__client_replicas(l->client);
    const rl__acks *a = &l->acks;

    if (g->lenient)
        return REDISLOCK_OK;
    if (g->want != 0 && (a->need < 0 || a->replicas < a->need))
        return rl__err(REDISLOCK_ENOTDURABLE,
                       "%s: %d of %d replicas confirmed the write within "
                       "%lld ms",
                       what, confirmed(a->replicas), a->need < 0 ? 1 : a->need,
                       (long long)g->timeout_ms);
    if (g->aof_local > 0 && a->aof_local < g->aof_local)
        return rl__err(REDISLOCK_ENOTDURABLE,
                       "%s: the master did not confirm the write's fsync to "
                       "its append-only file within %lld ms (WAITAOF)",
                       what, (long long)g->timeout_ms);
    if (g->aof_replicas > 0 && a->aof_replicas < g->aof_replicas)
        return rl__err(REDISLOCK_ENOTDURABLE,
                       "%s: %d of %d replicas confirmed the write's fsync to "
                       "their append-only files within %lld ms (WAITAOF)",
                       what, confirmed(a->aof_replicas), g->aof_replicas,
                       (long long)g->timeout_ms);
    return REDISLOCK_OK;
}

void rl__lock_set_validity(redislock_lock *l, int64_t sent_us, int64_t ttl_ms)
{
    int64_t until = sent_us + (ttl_ms - l->drift_ms) * 1000;
    int64_t was = atomic_load(&l->valid_until_us);

    /* The owner's extend and the watchdog's renewal may race: the later
     * end wins. */
    while (until > was &&
           !atomic_compare_exchange_weak(&l->valid_until_us, &was, until))
        ;
}

void rl__lock_take(redislock_lock *l, const char *token, int64_t ttl_ms,
                   int64_t drift_ms, int64_t sent_us, int64_t lease_ms)
{
    if (l->own == 0) {
        /* A re-entry whose earlier holds had lapsed (rl__lock_granted)
         * takes with the token it has. */
        if (token != l->token)
            snprintf(l->token, sizeof l->token, "%s", token);
        atomic_store(&l->lost, 0);
        atomic_store(&l->valid_until_us, 0);
        l->taken_us = rl__now_us();
    }
    l->own++;
    /* The keeper's renewals read the lease settings of a watched lock: a
     * re-entry keeps those it was first acquired with. */
    if (l->watch == NULL) {
        l->ttl_ms = ttl_ms;
        l->drift_fixed = drift_ms >= 0;
        l->drift_ms = drift_ms >= 0 ? drift_ms : rl__default_drift(ttl_ms);
    }
    rl__lock_set_validity(l, sent_us, lease_ms);
}

int rl__lock_mark_lost(redislock_lock *l, redislock_err why)
{
    int expected = 0;

    if (!atomic_compare_exchange_strong(&l->lost, &expected, (int)why))
        return 0;
    atomic_store(&l->valid_until_us, 0);
    rl__lock_event(l,
                   (redislock_event){.kind = REDISLOCK_EVENT_LOST, .err = why});
    return 1;
}

void rl__lock_event(redislock_lock *l, redislock_event ev)
{
    const rl__events *e = rl__client_events(l->client);

    if (e->cb == NULL)
        return;
    ev.lock = l;
    ev.key = redislock_key(l, &ev.keylen);
    e->cb(&ev, e->arg);
}

void rl__lock_granted(redislock_lock *l, int64_t fence, int64_t gen)
{
    if (l->own > 0 && l->fence > 0 && gen > l->fence)
        l->own = 0;
    l->fence = fence;
}

void rl__lock_owner_args(const redislock_lock *l, const char *arg2,
                         rl__owner_args *a)
{
    a->fence[0] = '\0';
    if (l->fence > 0)
        snprintf(a->fence, sizeof a->fence, "%" PRId64, l->fence);
    a->args[0] = l->token;
    a->args[1] = arg2;
    a->args[2] = l->limit ? "z" : l->rich ? "h" : "p";
    a->args[3] = a->fence;
    a->lens[0] = strlen(l->token);
    a->lens[1] = strlen(arg2);
    a->lens[2] = 1;
    a->lens[3] = strlen(a->fence);
}

void rl__lock_extend_args(const redislock_lock *l, int64_t ttl_ms,
                          rl__owner_args *a)
{
    snprintf(a->ttl, sizeof a->ttl, "%" PRId64, ttl_ms + l->delay_ms);
    rl__lock_owner_args(l, a->ttl, a);
}

const rl__script *rl__lock_owner_script(const redislock_lock *l,
                                        const rl__script *s)
{
    if (l->nmore == 0)
        return s;
    return s == &rl__script_extend ? &rl__script_set_extend
                                   : &rl__script_set_release;
}

static redislock_err check_held(const redislock_lock *l)
{
    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if (l->own == 0)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle holds no lock (acquire or adopt first)");
    return REDISLOCK_OK;
}

/* After a definite "expired" or "lost" the handle holds nothing. */
static void forget(redislock_lock *l, redislock_err why)
{
    rl__lock_unwatch(l);
    if (why != REDISLOCK_OK)
        rl__lock_mark_lost(l, why);
    l->own = 0;
    atomic_store(&l->valid_until_us, 0);
}

redislock_err rl__lock_release_check(const redislock_lock *l,
                                     int64_t hold_after_ms)
{
    redislock_err err = check_held(l);

    if (err != REDISLOCK_OK)
        return err;
    if (hold_after_ms != 0 &&
        (err = rl__check_ttl(hold_after_ms, "hold-after")) != REDISLOCK_OK)
        return err;
    if (hold_after_ms != 0 && l->nmore > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "hold-after on a set of keys: not built yet (release "
                       "it without)");
    if (hold_after_ms != 0 && l->limit)
        return rl__err(REDISLOCK_EINVAL,
                       "hold-after on a %s: a share is given back at once "
                       "(release it without)",
                       l->limit > 0 ? "semaphore's permit" : "reader's share");
    return REDISLOCK_OK;
}

void rl__lock_released(redislock_lock *l, redislock_err err, long long n)
{
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST)
        forget(l, err);
    else if (err == REDISLOCK_OK && (n == 1 || --l->own == 0))
        forget(l, REDISLOCK_OK); /* n == 1: the server's last hold went */
    rl__lock_event(
        l, (redislock_event){.kind = REDISLOCK_EVENT_RELEASED,
                             .err = err,
                             .ms = (rl__now_us() - l->taken_us) / 1000});
}

/* The event of an extend or renewal that ended with err: a final error
 * is the loss's. */
static void extend_event(redislock_lock *l, redislock_err err)
{
    if (err == REDISLOCK_OK)
        rl__lock_event(l, (redislock_event){.kind = REDISLOCK_EVENT_RENEWED,
                                            .ms = redislock_valid_ms(l)});
    else if (err != REDISLOCK_EEXPIRED && err != REDISLOCK_ELOST)
        rl__lock_event(l,
                       (redislock_event){.kind = REDISLOCK_EVENT_RENEW_FAILED,
                                         .err = err});
}

redislock_err rl__lock_extend_check(redislock_lock *l, int64_t ttl_ms)
{
    redislock_err err = check_held(l);

    if (err != REDISLOCK_OK)
        return err;
    if ((err = rl__check_ttl(ttl_ms, "TTL")) != REDISLOCK_OK ||
        (err = rl__check_lock_delay(l->delay_ms, ttl_ms)) != REDISLOCK_OK)
        return err;
    /* A watched lock keeps the lease length it was acquired with; its
     * renewals read it. */
    if (l->watch == NULL) {
        l->ttl_ms = ttl_ms;
        if (!l->drift_fixed)
            l->drift_ms = rl__default_drift(ttl_ms);
    }
    return REDISLOCK_OK;
}

void rl__lock_renewed(redislock_lock *l, redislock_err err, int64_t sent_us)
{
    if (err == REDISLOCK_OK)
        rl__lock_set_validity(l, sent_us, l->ttl_ms);
    extend_event(l, err);
}

void rl__lock_extended(redislock_lock *l, redislock_err err)
{
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST)
        forget(l, err);
    /* Revoked: the handle still holds the key (its release frees it),
     * but counts it as lost: no validity, redislock_check says why. */
    else if (err == REDISLOCK_EREVOKED)
        rl__lock_mark_lost(l, err);
    extend_event(l, err);
}

redislock_err redislock_adopt(redislock_lock *l, const char *token)
{
    size_t i, n;

    if (l == NULL || token == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or token");
    if (l->own != 0)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle already holds a lock; release it first");
    n = strlen(token);
    if (n == 0 || n > RL_TOKEN_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "token must be 1 to %d bytes long, not %zu",
                       RL_TOKEN_MAX, n);
    for (i = 0; i < n; i++)
        if ((unsigned char)token[i] < 0x20 || token[i] == 0x7f)
            return rl__err(REDISLOCK_EINVAL,
                           "token has a control character at byte %zu", i);
    if (strcmp(token, RL_RESERVED_VALUE) == 0)
        return rl__err(REDISLOCK_EINVAL,
                       "'%s' marks a hold-after reservation, which nobody "
                       "owns: it cannot be adopted, released or extended",
                       RL_RESERVED_VALUE);
    if (strncmp(token, RL_MEMBER_PREFIX, strlen(RL_MEMBER_PREFIX)) == 0)
        return rl__err(REDISLOCK_EINVAL,
                       "tokens beginning '%s' name redislock's own entries "
                       "in a key held by many (its kind, a waiting writer), "
                       "which nobody holds: they cannot be adopted",
                       RL_MEMBER_PREFIX);
    /* Whatever the token holds (a lock, a share): the owner scripts tell
     * by the key's type. */
    l->limit = 0;
    /* Nothing is known of this lease's age: no validity until an extend. */
    rl__lock_take(l, token, REDISLOCK_DEFAULT_TTL_MS, -1, 0, 0);
    atomic_store(&l->valid_until_us, 0);
    /* Nor is it known who waits: waiters that blocked before the token's
     * holder took the key marked an earlier holder's value, not this
     * one's, and a native compare-and-delete would wake none of them.
     * Release by script, as after a wait (rl__lock_native_release). */
    l->waited = 1;
    return REDISLOCK_OK;
}

redislock_err redislock_set_lock_delay(redislock_lock *l, int64_t delay_ms)
{
    redislock_err err;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if ((err = rl__check_lock_delay(delay_ms, l->ttl_ms)) != REDISLOCK_OK)
        return err;
    if (l->nmore > 0 && delay_ms > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys has no lock-delay (not yet)",
                       l->nmore + 1);
    /* The watchdog's renewals read it on another thread. */
    if (l->watch != NULL)
        return rl__err(REDISLOCK_EINVAL,
                       "the lock is watched: a lock-delay is set before the "
                       "acquire (its options) or for an adopted token");
    l->delay_ms = delay_ms;
    return REDISLOCK_OK;
}

int64_t redislock_valid_ms(const redislock_lock *l)
{
    int64_t left;

    if (l == NULL || atomic_load(&l->lost) != 0)
        return 0;
    left = atomic_load(&l->valid_until_us) - rl__now_us();
    return left > 0 ? left / 1000 : 0;
}

redislock_err redislock_check(const redislock_lock *l)
{
    int lost;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    lost = atomic_load(&l->lost);
    if (lost != 0)
        return rl__err((redislock_err)lost, "the lock was lost");
    if (l->own == 0)
        return rl__err(REDISLOCK_EINVAL, "this handle holds no lock");
    if (redislock_valid_ms(l) <= 0)
        return rl__err(REDISLOCK_EEXPIRED, "the lease's validity has run out");
    return REDISLOCK_OK;
}

int64_t redislock_holds(const redislock_lock *l)
{
    return l != NULL ? l->own : 0;
}

int64_t redislock_holder_ttl(const redislock_lock *l)
{
    return l != NULL ? l->holder_ttl : -2;
}

const void *redislock_key(const redislock_lock *l, size_t *len)
{
    if (l == NULL)
        return NULL;
    if (len != NULL)
        *len = l->keylen - l->prefixlen;
    return l->key + l->prefixlen;
}

const char *redislock_token(const redislock_lock *l)
{
    return l != NULL && l->own > 0 ? l->token : NULL;
}

void rl__lock_set_outcomes(redislock_lock *l, const redislock_err *o, size_t n)
{
    pthread_mutex_lock(&l->mu);
    memcpy(l->outcomes, o, n * sizeof *o);
    l->noutcomes = n;
    pthread_mutex_unlock(&l->mu);
}

size_t redislock_outcomes(const redislock_lock *l, redislock_err *out, size_t n)
{
    pthread_mutex_t *mu;
    size_t i, all;

    if (l == NULL)
        return 0;
    mu = (pthread_mutex_t *)&l->mu; /* only the outcomes' guard */
    pthread_mutex_lock(mu);
    for (i = 0; out != NULL && i < n && i < l->noutcomes; i++)
        out[i] = l->outcomes[i];
    all = l->noutcomes;
    pthread_mutex_unlock(mu);
    return all;
}

int redislock_replicas(const redislock_lock *l)
{
    return l != NULL ? l->acks.replicas : -1;
}

int redislock_aof(const redislock_lock *l, int *local)
{
    if (local != NULL)
        *local = l != NULL ? l->acks.aof_local : -1;
    return l != NULL ? l->acks.aof_replicas : -1;
}
