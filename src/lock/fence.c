/* Fencing on the resource side: a Redis-backed resource that refuses
 * writes carrying a stale fencing token (see src/lua/fenced_set.lua). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "env.h"
#include "algo.h"
#include "engine.h"
#include "error.h"
#include "lock.h"

/* The largest token a fenced write takes, 2^53 - 1: the script compares
 * tokens as Lua numbers, doubles, which above it no longer tell every two
 * tokens apart, and its token key would then hold what every later write
 * refuses (lib.lua's rl_counter_num). Fencing tokens never get there: they
 * follow the server's clock in microseconds, at 2^53 in the year 2255. */
#define RL_FENCE_MAX INT64_C(9007199254740991)

int64_t redislock_fence(const redislock_lock *l)
{
    return l != NULL && l->own > 0 ? l->fence : 0;
}

static redislock_err run_fenced_set(redislock_client *c, const char **keys,
                                    const size_t *klens, const void *value,
                                    size_t vlen, int64_t fence)
{
    char f[24];
    const char *args[2] = {value, f};
    size_t lens[2] = {vlen, 0};
    rl__request q = {.s = &rl__script_fenced_set,
                     .nkeys = 2,
                     .keys = keys,
                     .klens = klens,
                     .nargs = 2,
                     .args = args,
                     .lens = lens};
    rl__reply *r;
    redislock_err err;

    lens[1] = (size_t)snprintf(f, sizeof f, "%" PRId64, fence);
    err = rl__engine_request(c, NULL, keys[0], klens[0], &q, &r);
    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "fenced write answered type %d",
                      r->type);
    else if (r->integer == 0)
        err = rl__err(REDISLOCK_ESTALE,
                      "fencing token %" PRId64 " is older than one that "
                      "already wrote this key",
                      fence);
    rl__reply_free(r);
    return err;
}

redislock_err redislock_fenced_set(redislock_client *c, const void *key,
                                   size_t keylen, const void *value,
                                   size_t vlen, int64_t fence)
{
    const char *keys[2];
    size_t klens[2];
    char *hw;
    redislock_err err;

    if (c == NULL || key == NULL || (value == NULL && vlen > 0))
        return rl__err(REDISLOCK_EINVAL, "NULL client, key or value");
    if (keylen == 0 || keylen > REDISLOCK_KEY_MAX)
        return rl__err(REDISLOCK_EINVAL, "key must be 1 to %d bytes",
                       REDISLOCK_KEY_MAX);
    if (fence <= 0)
        return rl__err(REDISLOCK_EINVAL, "fencing token must be positive");
    if (fence > RL_FENCE_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "fencing token %" PRId64 " is 2^53 or more: the "
                       "server's script compares tokens as doubles, exact "
                       "only below 2^53; pass the token redislock_fence() "
                       "gave, which stays below it",
                       fence);
    if (rl__client_algo(c)->no_fenced_set != NULL)
        return rl__err(REDISLOCK_EINVAL, "%s",
                       rl__client_algo(c)->no_fenced_set);
    /* The high-water mark is a helper key of the resource's own. */
    if ((hw = rl__helper_name(key, keylen, "fenced", &klens[1])) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    keys[0] = key;
    klens[0] = keylen;
    keys[1] = hw;
    /* One script, one slot: a cluster refuses a key whose helper would
     * hash elsewhere, as redislock_lock_new does. */
    if (!rl__topo_same_slot(rl__client_topo(c), key, keylen, hw, klens[1])) {
        free(hw);
        return rl__err(REDISLOCK_EINVAL,
                       "in a Redis Cluster this key's helper key would hash "
                       "to another slot: give it a non-empty {hash tag}");
    }
    err =
        run_fenced_set(c, keys, klens, value == NULL ? "" : value, vlen, fence);
    free(hw);
    return err;
}
