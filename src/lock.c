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
#include "rand.h"

/* Longest token accepted by redislock_adopt() (other libraries' tokens
 * are UUIDs or base64 strings well below this). */
#define RL_TOKEN_MAX 256

struct redislock_lock {
    redislock_client *client;
    char *key;
    size_t keylen;
    char token[RL_TOKEN_MAX + 1];
    int held;
};

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
                             int64_t ttl_ms)
{
    char ttl[24];
    const char *argv[6] = {"SET", l->key, token, "NX", "PX", ttl};
    size_t lens[6] = {3, l->keylen, strlen(token), 2, 2, 0};
    rl__reply *r;
    redislock_err err;

    lens[5] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
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
    return REDISLOCK_OK;
}

/* The wait loop: try, and while the lock is held and the deadline allows,
 * pause (jittered, capped by the holder's TTL and the deadline) and try
 * again. Only a contended attempt costs a PTTL round trip. */
static redislock_err acquire_loop(redislock_lock *l, const char *token,
                                  int64_t ttl_ms,
                                  const redislock_acquire_options *o)
{
    int64_t delay = o->retry_delay_ms > 0 ? o->retry_delay_ms
                                          : REDISLOCK_DEFAULT_RETRY_DELAY_MS;
    int64_t start = rl__now_ms(), now, holder_ttl;
    int64_t deadline = rl__deadline(start, o->wait_ms);
    redislock_err err;

    for (;;) {
        err = try_set(l, token, ttl_ms);
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

redislock_err redislock_acquire(redislock_lock *l,
                                const redislock_acquire_options *opts)
{
    static const redislock_acquire_options defaults;
    char token[RL_TOKEN_HEXLEN + 1];
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
    err = acquire_loop(l, token,
                       opts->ttl_ms ? opts->ttl_ms : REDISLOCK_DEFAULT_TTL_MS,
                       opts);
    if (err == REDISLOCK_OK) {
        memcpy(l->token, token, sizeof token);
        l->held = 1;
    }
    return err;
}

/* Runs a compare-and-X script and maps its 1 / 0 / -1 answer. After a
 * definite answer the handle no longer holds the lock unless it was kept. */
static redislock_err owner_script(redislock_lock *l, const rl__script *s,
                                  int nargs, const char **args,
                                  const size_t *lens, int keep_on_success)
{
    rl__reply *r;
    redislock_err err;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if (!l->held)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle holds no lock (acquire or adopt first)");
    err = rl__client_script(l->client, s, l->key, l->keylen, nargs, args,
                            lens, &r);
    if (err != REDISLOCK_OK)
        return err; /* outcome unknown: keep the token to try again */
    if (r->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "%s script answered type %d",
                      s->name, r->type);
    else if (r->integer == 0)
        err = rl__err(REDISLOCK_EEXPIRED, "lock had expired and is free");
    else if (r->integer < 0)
        err = rl__err(REDISLOCK_ELOST, "lock is now held by another owner");
    rl__reply_free(r);
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST ||
        (err == REDISLOCK_OK && !keep_on_success))
        l->held = 0;
    return err;
}

redislock_err redislock_release(redislock_lock *l)
{
    const char *args[1];
    size_t lens[1];

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    args[0] = l->token;
    lens[0] = strlen(l->token);
    return owner_script(l, &rl__script_release, 1, args, lens, 0);
}

redislock_err redislock_extend(redislock_lock *l, int64_t ttl_ms)
{
    char ttl[24];
    const char *args[2] = {NULL, ttl};
    size_t lens[2];
    redislock_err err;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if ((err = check_ttl(ttl_ms)) != REDISLOCK_OK)
        return err;
    args[0] = l->token;
    lens[0] = strlen(l->token);
    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    return owner_script(l, &rl__script_extend, 2, args, lens, 1);
}

redislock_err redislock_adopt(redislock_lock *l, const char *token)
{
    size_t i, n;

    if (l == NULL || token == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or token");
    n = strlen(token);
    if (n == 0 || n > RL_TOKEN_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "token must be 1 to %d bytes long, not %zu",
                       RL_TOKEN_MAX, n);
    for (i = 0; i < n; i++)
        if ((unsigned char)token[i] < 0x20 || token[i] == 0x7f)
            return rl__err(REDISLOCK_EINVAL,
                           "token has a control character at byte %zu", i);
    memcpy(l->token, token, n + 1);
    l->held = 1;
    return REDISLOCK_OK;
}

redislock_err redislock_ttl(redislock_lock *l, int64_t *ttl_ms)
{
    if (l == NULL || ttl_ms == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or output");
    return pttl(l, ttl_ms);
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
