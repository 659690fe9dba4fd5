#include "keysets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redislock.h>

#include "server.h"
#include "test.h"

/* A command over the n keys (EXISTS, MGET), as the server answers it. */
static redisReply *over_keys(redisContext *r, const char *cmd,
                             const char *const *keys, size_t n)
{
    const char *argv[REDISLOCK_SET_MAX + 1];
    redisReply *rep;
    size_t i;

    ASSERT_LE(n, REDISLOCK_SET_MAX);
    argv[0] = cmd;
    for (i = 0; i < n; i++)
        argv[i + 1] = keys[i];
    rep = redisCommandArgv(r, (int)n + 1, argv, NULL);
    ASSERT(rep != NULL && rep->type != REDIS_REPLY_ERROR);
    return rep;
}

long long th_keys_existing(redisContext *r, const char *const *keys, size_t n)
{
    redisReply *rep = over_keys(r, "EXISTS", keys, n);
    long long v = rep->integer;

    freeReplyObject(rep);
    return v;
}

size_t th_keys_holding(redisContext *r, const char *const *keys, size_t n,
                       const char *token)
{
    redisReply *rep = over_keys(r, "MGET", keys, n);
    size_t i, got = 0;

    for (i = 0; i < rep->elements; i++)
        got += rep->element[i]->type == REDIS_REPLY_STRING &&
               strcmp(rep->element[i]->str, token) == 0;
    freeReplyObject(rep);
    return got;
}

/* The name of key's fencing counter. */
static void counter_name(const char *key, char *name, size_t size)
{
    const char *open = strchr(key, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;

    if (close != NULL && close > open + 1)
        snprintf(name, size, "%s:rl-fence", key);
    else
        snprintf(name, size, "%s{%s}:rl-fence", key, key);
}

long long th_fence_counter(redisContext *r, const char *key)
{
    char name[256], *v;
    long long n;

    counter_name(key, name, sizeof name);
    v = th_cmd_str(r, NULL, "GET %s", name);
    n = v ? atoll(v) : 0;
    free(v);
    return n;
}

long long th_fence_counter_pttl(redisContext *r, const char *key)
{
    char name[256];

    counter_name(key, name, sizeof name);
    return th_cmd_int(r, "PTTL %s", name);
}
