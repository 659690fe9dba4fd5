#include "keysets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redislock.h>

#include "fixture.h"
#include "keys.h"
#include "server.h"
#include "util.h"
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
               th_value_is_token(rep->element[i]->str, token);
    freeReplyObject(rep);
    return got;
}

/* The name of key's fencing counter on a server that is not in a
 * cluster: its namespace's (rl__fence_name). */
void th_fence_counter_name(const char *key, char *name, size_t size)
{
    const char *colon = strrchr(key, ':');
    int dir = colon ? (int)(colon - key + 1) : 0;

    snprintf(name, size, "%.*s%s", dir, key, TH_FENCE_COUNTER);
}

void th_cluster_fence_name(const char *key, char *name, size_t size)
{
    char plain[256];

    th_fence_counter_name(key, plain, sizeof plain);
    snprintf(name, size, "%s{%s}", plain,
             rl__slot_tag(rl__key_slot(key, strlen(key))));
}

long long th_fence_counter(redisContext *r, const char *key)
{
    char name[256], *v;
    long long n;

    th_fence_counter_name(key, name, sizeof name);
    v = th_cmd_str(r, NULL, "GET %s", name);
    n = v ? atoll(v) : 0;
    free(v);
    return n;
}

long long th_fence_counter_pttl(redisContext *r, const char *key)
{
    char name[256];

    th_fence_counter_name(key, name, sizeof name);
    return th_cmd_int(r, "PTTL %s", name);
}

/* The server of a sharded client that key lands on, found by taking a
 * plain lock of it and looking; -1 when none has it. */
int th_shard_of(redisContext *const *r, int n, redislock_client *c,
                const char *key)
{
    redislock_lock *l = th_lock(c, key);
    int i, at = -1;

    ASSERT_OK(redislock_acquire(l, NULL));
    for (i = 0; i < n; i++)
        if (th_cmd_int(r[i], "EXISTS %s", key) == 1)
            at = i;
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    return at;
}

/* Keys "<prefix>:<i>" sorted by server: up to 3 of each of the n servers
 * into keys[server][], their counts into got[]. */
void th_keys_by_server(redisContext *const *r, int n, redislock_client *c,
                       const char *prefix, char keys[][3][24], int *got)
{
    char key[24];
    int i, at, full = 0;

    memset(got, 0, (size_t)n * sizeof *got);
    for (i = 0; i < 200 && full < n; i++) {
        snprintf(key, sizeof key, "%s:%d", prefix, i);
        at = th_shard_of(r, n, c, key);
        ASSERT_GE(at, 0);
        if (got[at] < 3) {
            snprintf(keys[at][got[at]++], 24, "%s", key);
            full += got[at] == 3;
        }
    }
    ASSERT_EQ_INT(full, n);
}

/* How many of the keys hold token, over every server. */
size_t th_held_anywhere(th_servers *e, const char *const *k, size_t n,
                        const char *token)
{
    size_t got = 0;
    int i;

    for (i = 0; i < e->n; i++)
        got += th_keys_holding(e->r[i], k, n, token);
    return got;
}

long long th_lock_keys_anywhere(th_servers *e)
{
    long long n = 0;
    int i;

    for (i = 0; i < e->n; i++)
        n += th_lock_keys(e->r[i]);
    return n;
}
