/*
 * Acquire: the attempt (SET NX PX for a plain lock, the acquire script for
 * a lock with an owner id) and the wait loop around it: retry strategies
 * with jitter, a deadline, a cap on attempts, fail-fast, cancellation, and
 * pauses that never outlast the holder's TTL.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "client.h"
#include "clock.h"
#include "error.h"
#include "lock.h"
#include "rand.h"
#include "watchdog.h"

#define RL_DEFAULT_RETRY_MAX_DELAY_MS 2000

/* One acquire call's settings, defaults filled in. */
typedef struct attempt_cfg {
    const redislock_acquire_options *o;
    const char *id;  /* token or owner id */
    int rich;        /* hash format */
    int need_ttl;    /* a contended attempt should learn the holder's TTL */
    int64_t ttl_ms;
    int64_t delay_ms, cap_ms;
    char ttl[24];
} attempt_cfg;

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
    if (o->owner != NULL && (*o->owner == '\0' ||
                             strlen(o->owner) > RL_TOKEN_MAX))
        return rl__err(REDISLOCK_EINVAL, "owner id must be 1 to %d bytes",
                       RL_TOKEN_MAX);
    if (o->metadata != NULL && strlen(o->metadata) > 65536)
        return rl__err(REDISLOCK_EINVAL, "metadata longer than 64 KiB");
    return REDISLOCK_OK;
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

/* SET NX PX, with PTTL in the same round trip when the caller will wait. */
static redislock_err try_plain(redislock_lock *l, attempt_cfg *a)
{
    const char *set[6] = {"SET", l->key, a->id, "NX", "PX", a->ttl};
    size_t setl[6] = {3, l->keylen, strlen(a->id), 2, 2, strlen(a->ttl)};
    const char *pttl[2] = {"PTTL", l->key};
    size_t pttll[2] = {4, l->keylen};
    rl__cmd cmds[2] = {{6, set, setl}, {2, pttl, pttll}};
    rl__reply *r[2];
    int n = a->need_ttl ? 2 : 1;
    redislock_err err = rl__lock_command(l, n, cmds, r);

    if (err != REDISLOCK_OK)
        return err;
    if (r[0]->type == REDIS_REPLY_NIL)
        err = REDISLOCK_EHELD;
    else if (r[0]->type != REDIS_REPLY_STATUS)
        err = rl__err(REDISLOCK_EPROTOCOL, "SET answered type %d",
                      r[0]->type);
    if (err == REDISLOCK_EHELD && n == 2 && r[1]->type == REDIS_REPLY_INTEGER)
        l->holder_ttl = r[1]->integer;
    while (n-- > 0)
        rl__reply_free(r[n]);
    return err;
}

/* The acquire script: {1, holds} taken, {0, pttl} held by another. */
static redislock_err try_rich(redislock_lock *l, attempt_cfg *a)
{
    const char *meta = a->o->metadata ? a->o->metadata : "";
    const char *args[4] = {a->id, a->ttl, a->o->reentrant ? "1" : "0", meta};
    size_t lens[4] = {strlen(a->id), strlen(a->ttl), 1, strlen(meta)};
    rl__reply *r;
    redislock_err err = rl__pool_script(l->pool, &rl__script_acquire, l->key,
                                        l->keylen, 4, args, lens, &r);

    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "acquire script answered type %d",
                      r->type);
    else if (r->element[0]->integer != 1) {
        l->holder_ttl = r->element[1]->integer;
        err = REDISLOCK_EHELD;
    }
    rl__reply_free(r);
    return err;
}

static redislock_err attempt(redislock_lock *l, attempt_cfg *a,
                             int64_t *sent_us)
{
    l->holder_ttl = -2;
    *sent_us = rl__now_us();
    return a->rich ? try_rich(l, a) : try_plain(l, a);
}

/* Sleeps ms unless cancelled; returns whether it was cancelled. */
static int pause_or_cancel(redislock_lock *l, int64_t ms)
{
    int64_t until = rl__now_us() + ms * 1000;
    struct timespec ts = {(time_t)(until / 1000000),
                          (long)(until % 1000000) * 1000};
    int cancelled;

    pthread_mutex_lock(&l->mu);
    while (!l->cancelled && rl__now_us() < until)
        pthread_cond_timedwait(&l->wake, &l->mu, &ts);
    cancelled = l->cancelled;
    l->cancelled = 0;
    pthread_mutex_unlock(&l->mu);
    return cancelled;
}

/* The pause before attempt + 1, or -1 to give up. */
static int64_t next_pause(redislock_lock *l, const attempt_cfg *a,
                          int attempt_no, int64_t now, int64_t deadline)
{
    const redislock_acquire_options *o = a->o;
    int64_t d;

    if (o->max_attempts > 0 && attempt_no >= o->max_attempts)
        return -1;
    if (o->retry_fn != NULL) {
        d = o->retry_fn(o->retry_arg, attempt_no, l->holder_ttl);
        if (d < 0)
            return -1;
    } else {
        d = rl__jitter(rl__retry_delay((int)o->retry, a->delay_ms, a->cap_ms,
                                       attempt_no),
                       rl__jitter_rand());
    }
    return rl__backoff_cap(d, l->holder_ttl, now, deadline);
}

/* Fail-fast: the holder keeps the lock past our deadline. */
static int hopeless(const redislock_lock *l, int64_t now, int64_t deadline)
{
    if (l->holder_ttl == REDISLOCK_TTL_NO_EXPIRY)
        return 1;
    return deadline != RL_NO_DEADLINE && l->holder_ttl >= 0 &&
           now + l->holder_ttl > deadline;
}

static redislock_err gave_up(redislock_lock *l, int64_t waited, int tries,
                             const char *why)
{
    return rl__err(REDISLOCK_EHELD,
                   "lock is held by another owner (holder's TTL %" PRId64
                   " ms; %d attempt%s in %" PRId64 " ms%s%s)",
                   l->holder_ttl, tries, tries == 1 ? "" : "s", waited,
                   why ? "; " : "",
                   why ? why : "");
}

static int take_cancel(redislock_lock *l)
{
    int c;

    pthread_mutex_lock(&l->mu);
    c = l->cancelled;
    l->cancelled = 0;
    pthread_mutex_unlock(&l->mu);
    return c;
}

static redislock_err wait_loop(redislock_lock *l, attempt_cfg *a,
                               int64_t *sent_us)
{
    const redislock_acquire_options *o = a->o;
    int64_t start = rl__now_ms(), now, pause;
    int64_t deadline = o->retry == REDISLOCK_RETRY_NONE
                           ? start
                           : rl__deadline(start, o->wait_ms);
    int tries = 0;
    redislock_err err;

    for (;;) {
        if (take_cancel(l))
            return rl__err(REDISLOCK_ECANCELED, "the wait was cancelled");
        err = attempt(l, a, sent_us);
        tries++;
        if (err != REDISLOCK_EHELD)
            return err;
        now = rl__now_ms();
        if (now >= deadline)
            return gave_up(l, now - start, tries, NULL);
        if (o->fail_fast && hopeless(l, now, deadline))
            return gave_up(l, now - start, tries,
                           "fail-fast: it outlasts the wait");
        pause = next_pause(l, a, tries, now, deadline);
        if (pause < 0)
            return gave_up(l, now - start, tries, "attempts exhausted");
        if (l->holder_ttl == REDISLOCK_TTL_FREE)
            pause = 0; /* released in between: try at once */
        if (pause > 0 && pause_or_cancel(l, pause))
            return rl__err(REDISLOCK_ECANCELED, "the wait was cancelled");
    }
}

static redislock_err setup(redislock_lock *l, const redislock_acquire_options *o,
                           attempt_cfg *a, char *tok)
{
    a->o = o;
    a->rich = o->reentrant || o->owner != NULL || o->metadata != NULL;
    a->need_ttl = o->wait_ms != REDISLOCK_NO_WAIT || o->fail_fast;
    a->ttl_ms = o->ttl_ms ? o->ttl_ms : REDISLOCK_DEFAULT_TTL_MS;
    snprintf(a->ttl, sizeof a->ttl, "%" PRId64, a->ttl_ms);
    a->delay_ms = o->retry_delay_ms ? o->retry_delay_ms
                                    : REDISLOCK_DEFAULT_RETRY_DELAY_MS;
    a->cap_ms = o->retry_max_delay_ms ? o->retry_max_delay_ms
                                      : RL_DEFAULT_RETRY_MAX_DELAY_MS;
    if (a->cap_ms < a->delay_ms)
        a->cap_ms = a->delay_ms;
    if (l->own > 0) {
        /* Re-entry: the owner id this handle already holds with. */
        a->id = l->token;
        return REDISLOCK_OK;
    }
    if (o->owner != NULL) {
        a->id = o->owner;
    } else if (a->rich) {
        if ((a->id = default_owner(l)) == NULL)
            return rl__err(REDISLOCK_ERANDOM, "cannot make an owner id");
    } else {
        if (rl__token(tok) != 0)
            return rl__err(REDISLOCK_ERANDOM, "getrandom failed");
        a->id = tok;
    }
    return REDISLOCK_OK;
}

redislock_err redislock_acquire(redislock_lock *l,
                                const redislock_acquire_options *opts)
{
    static const redislock_acquire_options defaults;
    char tok[RL_TOKEN_HEXLEN + 1];
    attempt_cfg a;
    int64_t sent_us = 0;
    redislock_err err;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if (opts == NULL)
        opts = &defaults;
    if ((err = check_options(opts)) != REDISLOCK_OK)
        return err;
    if (l->own > 0 && (!opts->reentrant || !l->rich))
        return rl__err(REDISLOCK_EINVAL,
                       "this handle already holds the lock (only a lock "
                       "acquired reentrant can be taken again)");
    if ((err = setup(l, opts, &a, tok)) != REDISLOCK_OK)
        return err;
    if ((err = wait_loop(l, &a, &sent_us)) != REDISLOCK_OK)
        return err;
    rl__lock_take(l, a.id, a.ttl_ms, opts->drift_ms ? opts->drift_ms : -1,
                  sent_us);
    l->rich = a.rich;
    if (opts->watchdog && l->watch == NULL &&
        (err = rl__watch(l, opts, sent_us)) != REDISLOCK_OK) {
        /* Without its watchdog the caller would hold a lease nobody
         * renews: give it back. */
        redislock_release(l);
        return err;
    }
    return REDISLOCK_OK;
}

void redislock_cancel(redislock_lock *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    l->cancelled = 1;
    pthread_cond_broadcast(&l->wake);
    pthread_mutex_unlock(&l->mu);
}
