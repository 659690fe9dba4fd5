/*
 * Lock semantics on one server: the key holds a random token as a plain
 * string with a server-side TTL (SET key token NX PX ttl), the format
 * redis-py's Lock, node-redlock and bsm/redislock use too. Release and
 * extend compare the token first, atomically, in Lua.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "client.h"
#include "clock.h"
#include "error.h"
#include "lock.h"
#include "rand.h"
#include "watchdog.h"

redislock_err redislock_lock_new(redislock_client *c, const void *key,
                                 size_t keylen, redislock_lock **out)
{
    redislock_lock *l;

    if (out != NULL)
        *out = NULL;
    if (c == NULL || key == NULL || out == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL client, key or output");
    if (keylen == 0)
        return rl__err(REDISLOCK_EINVAL, "empty lock key");
    if (keylen > REDISLOCK_KEY_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "lock key of %zu bytes is longer than the limit of %d",
                       keylen, REDISLOCK_KEY_MAX);
    l = calloc(1, sizeof *l);
    if (l == NULL || (l->key = malloc(keylen)) == NULL) {
        free(l);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    memcpy(l->key, key, keylen);
    l->keylen = keylen;
    l->client = c;
    *out = l;
    return REDISLOCK_OK;
}

void redislock_lock_free(redislock_lock *l)
{
    if (l == NULL)
        return;
    rl__unwatch(l);
    free(l->key);
    free(l);
}

static redislock_err check_ttl(int64_t ttl_ms)
{
    if (ttl_ms <= 0)
        return rl__err(REDISLOCK_EINVAL,
                       "TTL of %" PRId64 " ms: it must be positive", ttl_ms);
    if (ttl_ms > REDISLOCK_TTL_MAX_MS)
        return rl__err(REDISLOCK_EINVAL,
                       "TTL of %" PRId64 " ms is over the limit of %lld ms "
                       "(30 days)",
                       ttl_ms, (long long)REDISLOCK_TTL_MAX_MS);
    return REDISLOCK_OK;
}

/* Runs one command on the lock's client and checks for an error reply. */
static redislock_err command(redislock_lock *l, int argc, const char **argv,
                             const size_t *lens, rl__reply **out)
{
    rl__cmd cmd = {argc, argv, lens};
    redislock_err err = rl__client_exec(l->client, 1, &cmd, out);

    if (err == REDISLOCK_OK && (err = rl__reply_check(*out, argv[0])) != 0) {
        rl__reply_free(*out);
        *out = NULL;
    }
    return err;
}

/* One SET NX PX attempt: REDISLOCK_OK when set, EHELD when the key
 * exists. */
static redislock_err try_set(redislock_lock *l, const char *token,
                             int64_t ttl_ms, int64_t *sent_us)
{
    char ttl[24];
    const char *argv[6] = {"SET", l->key, token, "NX", "PX", ttl};
    size_t lens[6] = {3, l->keylen, strlen(token), 2, 2, 0};
    rl__reply *r;
    redislock_err err;

    lens[5] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    *sent_us = rl__now_us();
    err = command(l, 6, argv, lens, &r);
    if (err != REDISLOCK_OK)
        return err;
    if (r->type == REDIS_REPLY_NIL)
        err = REDISLOCK_EHELD;
    else if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0)
        err = rl__err(REDISLOCK_EPROTOCOL, "SET answered type %d", r->type);
    rl__reply_free(r);
    return err;
}

static redislock_err pttl(redislock_lock *l, int64_t *ttl_ms)
{
    const char *argv[2] = {"PTTL", l->key};
    size_t lens[2] = {4, l->keylen};
    rl__reply *r;
    redislock_err err = command(l, 2, argv, lens, &r);

    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "PTTL answered type %d", r->type);
    else
        *ttl_ms = r->integer;
    rl__reply_free(r);
    return err;
}

static redislock_err check_acquire_options(const redislock_acquire_options *o)
{
    if (o->ttl_ms < 0)
        return check_ttl(o->ttl_ms);
    if (o->ttl_ms > 0 && check_ttl(o->ttl_ms) != REDISLOCK_OK)
        return REDISLOCK_EINVAL;
    if (o->wait_ms < REDISLOCK_WAIT_FOREVER)
        return rl__err(REDISLOCK_EINVAL,
                       "wait of %" PRId64 " ms: use 0, a positive time or "
                       "REDISLOCK_WAIT_FOREVER",
                       o->wait_ms);
    if (o->retry_delay_ms < 0)
        return rl__err(REDISLOCK_EINVAL, "negative retry delay");
    if (o->drift_ms < 0 || o->max_renewals < 0 || o->max_hold_ms < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "negative drift, renewal cap or hold cap");
    if (o->drift_ms >= (o->ttl_ms ? o->ttl_ms : REDISLOCK_DEFAULT_TTL_MS))
        return rl__err(REDISLOCK_EINVAL,
                       "drift of %" PRId64 " ms leaves no validity: it must "
                       "be less than the TTL",
                       o->drift_ms);
    if (!o->watchdog && (o->on_lost || o->max_renewals || o->max_hold_ms))
        return rl__err(REDISLOCK_EINVAL,
                       "on_lost, max_renewals and max_hold_ms need watchdog");
    return REDISLOCK_OK;
}

/* The wait loop: try, and while the lock is held and the deadline allows,
 * pause (jittered, capped by the holder's TTL and the deadline) and try
 * again. Only a contended attempt costs a PTTL round trip. */
static redislock_err acquire_loop(redislock_lock *l, const char *token,
                                  int64_t ttl_ms,
                                  const redislock_acquire_options *o,
                                  int64_t *sent_us)
{
    int64_t delay = o->retry_delay_ms > 0 ? o->retry_delay_ms
                                          : REDISLOCK_DEFAULT_RETRY_DELAY_MS;
    int64_t start = rl__now_ms(), now, holder_ttl;
    int64_t deadline = rl__deadline(start, o->wait_ms);
    redislock_err err;

    for (;;) {
        err = try_set(l, token, ttl_ms, sent_us);
        if (err != REDISLOCK_EHELD)
            return err;
        now = rl__now_ms();
        if (now >= deadline)
            break;
        err = pttl(l, &holder_ttl);
        if (err != REDISLOCK_OK)
            return err;
        if (holder_ttl == REDISLOCK_TTL_FREE)
            continue; /* released in between: try at once */
        rl__sleep_ms(rl__backoff_pause(delay, rl__jitter_rand(), holder_ttl,
                                       rl__now_ms(), deadline));
    }
    if (o->wait_ms == REDISLOCK_NO_WAIT)
        return rl__err(REDISLOCK_EHELD, "lock is held by another owner");
    return rl__err(REDISLOCK_EHELD,
                   "lock still held by another owner after waiting %" PRId64
                   " ms",
                   now - start);
}

/* The validity a request sent at sent_us grants. */
static void set_validity(redislock_lock *l, int64_t sent_us, int64_t ttl_ms)
{
    atomic_store(&l->valid_until_us, sent_us + (ttl_ms - l->drift_ms) * 1000);
}

static void take_token(redislock_lock *l, const char *token, int64_t ttl_ms,
                       int64_t drift_ms)
{
    snprintf(l->token, sizeof l->token, "%s", token);
    l->held = 1;
    l->ttl_ms = ttl_ms;
    l->drift_ms = drift_ms >= 0 ? drift_ms : ttl_ms / 100 + 2;
    atomic_store(&l->lost, 0);
}

redislock_err redislock_acquire(redislock_lock *l,
                                const redislock_acquire_options *opts)
{
    static const redislock_acquire_options defaults;
    char token[RL_TOKEN_HEXLEN + 1];
    int64_t ttl, sent_us = 0;
    redislock_err err;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if (opts == NULL)
        opts = &defaults;
    if ((err = check_acquire_options(opts)) != REDISLOCK_OK)
        return err;
    if (l->held)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle already holds the lock; release it "
                       "first");
    if (rl__token(token) != 0)
        return rl__err(REDISLOCK_ERANDOM, "getrandom failed");
    ttl = opts->ttl_ms ? opts->ttl_ms : REDISLOCK_DEFAULT_TTL_MS;
    err = acquire_loop(l, token, ttl, opts, &sent_us);
    if (err != REDISLOCK_OK)
        return err;
    take_token(l, token, ttl, opts->drift_ms ? opts->drift_ms : -1);
    set_validity(l, sent_us, ttl);
    if (opts->watchdog && (err = rl__watch(l, opts, sent_us)) != 0) {
        /* Without its watchdog the caller would hold a lease nobody
         * renews: give it back. */
        redislock_release(l);
        return err;
    }
    return REDISLOCK_OK;
}

/* Runs a compare-and-X script and maps its 1 / 0 / -1 answer. */
static redislock_err owner_script(redislock_lock *l, const rl__script *s,
                                  int nargs, const char **args,
                                  const size_t *lens)
{
    rl__reply *r;
    redislock_err err;

    err = rl__client_script(l->client, s, l->key, l->keylen, nargs, args,
                            lens, &r);
    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "%s script answered type %d",
                      s->name, r->type);
    else if (r->integer == 0)
        err = rl__err(REDISLOCK_EEXPIRED, "lock had expired and is free");
    else if (r->integer < 0)
        err = rl__err(REDISLOCK_ELOST, "lock is now held by another owner");
    rl__reply_free(r);
    return err;
}

static redislock_err check_held(const redislock_lock *l)
{
    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if (!l->held)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle holds no lock (acquire or adopt first)");
    return REDISLOCK_OK;
}

/* Forgets the token after a definite answer; an unknown outcome (the
 * connection failed) keeps it so the caller can try again. */
static void settle(redislock_lock *l, redislock_err err, int keep_on_success)
{
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST) {
        rl__lock_mark_lost(l, err);
        l->held = 0;
    } else if (err == REDISLOCK_OK && !keep_on_success) {
        l->held = 0;
    }
    if (!l->held)
        atomic_store(&l->valid_until_us, 0);
}

redislock_err redislock_release(redislock_lock *l)
{
    const char *args[1];
    size_t lens[1];
    redislock_err err = check_held(l);

    if (err != REDISLOCK_OK)
        return err;
    /* Stop renewals first, and wait for one in flight: after release no
     * renewal is ever sent. */
    rl__unwatch(l);
    args[0] = l->token;
    lens[0] = strlen(l->token);
    err = owner_script(l, &rl__script_release, 1, args, lens);
    settle(l, err, 0);
    return err;
}

/* The extend request itself, for redislock_extend and the watchdog. */
static redislock_err send_extend(redislock_lock *l, int64_t ttl_ms)
{
    char ttl[24];
    const char *args[2] = {l->token, ttl};
    size_t lens[2];
    int64_t sent_us;
    redislock_err err;

    lens[0] = strlen(l->token);
    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    sent_us = rl__now_us();
    err = owner_script(l, &rl__script_extend, 2, args, lens);
    if (err == REDISLOCK_OK)
        set_validity(l, sent_us, ttl_ms);
    return err;
}

redislock_err rl__lock_renew(redislock_lock *l)
{
    return send_extend(l, l->ttl_ms);
}

int rl__lock_mark_lost(redislock_lock *l, redislock_err why)
{
    int expected = 0;

    if (!atomic_compare_exchange_strong(&l->lost, &expected, (int)why))
        return 0;
    atomic_store(&l->valid_until_us, 0);
    return 1;
}

redislock_err redislock_extend(redislock_lock *l, int64_t ttl_ms)
{
    redislock_err err = check_held(l);

    if (err != REDISLOCK_OK)
        return err;
    if ((err = check_ttl(ttl_ms)) != REDISLOCK_OK)
        return err;
    if (l->watch == NULL) {
        /* A watched lock keeps the lease length it was acquired with. */
        l->ttl_ms = ttl_ms;
        l->drift_ms = ttl_ms / 100 + 2;
    }
    err = send_extend(l, ttl_ms);
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST)
        rl__unwatch(l);
    settle(l, err, 1);
    return err;
}

redislock_err redislock_adopt(redislock_lock *l, const char *token)
{
    size_t i, n;

    if (l == NULL || token == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or token");
    if (l->held)
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
    /* Nothing is known of this lease's age: no validity until an extend. */
    take_token(l, token, REDISLOCK_DEFAULT_TTL_MS, -1);
    atomic_store(&l->valid_until_us, 0);
    return REDISLOCK_OK;
}

redislock_err redislock_ttl(redislock_lock *l, int64_t *ttl_ms)
{
    if (l == NULL || ttl_ms == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or output");
    return pttl(l, ttl_ms);
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
    if (!l->held)
        return rl__err(REDISLOCK_EINVAL, "this handle holds no lock");
    if (redislock_valid_ms(l) <= 0)
        return rl__err(REDISLOCK_EEXPIRED,
                       "the lease's validity has run out");
    return REDISLOCK_OK;
}

int redislock_lost_fd(const redislock_lock *l)
{
    return l != NULL ? rl__watch_fd(l) : -1;
}

const void *redislock_key(const redislock_lock *l, size_t *len)
{
    if (l == NULL)
        return NULL;
    if (len != NULL)
        *len = l->keylen;
    return l->key;
}

const char *redislock_token(const redislock_lock *l)
{
    return l != NULL && l->held ? l->token : NULL;
}
