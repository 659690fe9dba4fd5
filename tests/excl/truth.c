/*
 * What the servers themselves say of a lease, asked by a worker on
 * connections of its own (unix sockets, not the client's): the lease
 * rule compares beliefs with it, the false-loss rule losses. Under
 * Sentinel it is read on the node the sentinels name at that moment, so
 * that the rules follow a failover: a holder whose key the new master
 * lacks believes past that master's lease. The same connections delete
 * a key by hand for the retaken modes (excl_truth_del), as an operator
 * would, beside the client.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "excl_int.h"

#define EXCL_TRUTH_TIMEOUT_MS 300

/* Reads the lease of the key whose holder is ARGV[1]: its PTTL, or -2
 * when the key is gone or held by another token or owner; for a
 * semaphore or a lock held shared (both sorted sets, members scored by
 * the end of their leases), the permit's or share's own lease: its score
 * less the server's clock, in ms, not the key's PTTL, which is the
 * longest lease of all. An exclusive holder of a key that readers also
 * take finds a string there, as for any lock; a sorted set then (or the
 * marker of a waiting writer) is not its hold: -2. A hash that an owner id
 * holds is its hold only in the life of the key that the holder's last
 * acquisition (its fencing token, ARGV[2]) was in: a later life, made by
 * another handle of the owner id once the holder's lease ran out, has a
 * larger gen (rl_create in lib.lua): -2 too. A token of the native prefix
 * that a waiter has marked ("+w", rl_mark_holder) is still its holder's. */
static const char lease_lua[] =
    "local t = redis.call('TYPE', KEYS[1]).ok "
    "if t == 'zset' then "
    "local sc = redis.call('ZSCORE', KEYS[1], ARGV[1]) "
    "if not sc then return -2 end "
    "local now = redis.call('TIME') "
    "local left = math.floor(tonumber(sc) - (tonumber(now[1]) * 1000 + "
    "tonumber(now[2]) / 1000)) "
    "if left <= 0 then return -2 end return left end "
    "local v = false "
    "if t == 'string' then v = redis.call('GET', KEYS[1]) "
    "if v == ARGV[1] .. '+w' and string.sub(v, 1, 4) == 'rl2-' then "
    "v = ARGV[1] end "
    "elseif t == 'hash' then v = redis.call('HGET', KEYS[1], 'owner') "
    "local g = redis.call('HGET', KEYS[1], 'gen') "
    "if g and ARGV[2] ~= '0' and tonumber(g) > tonumber(ARGV[2]) then "
    "return -2 end end "
    "if v ~= ARGV[1] then return -2 end "
    "return redis.call('PTTL', KEYS[1])";

/* The index of the node the sentinels name as master now (asking each in
 * turn), or -1 when none answers or names a node of the run. */
static int named_node(excl_worker *w)
{
    const th_sentinels *t = w->t->sentinels;
    struct timeval tv = {0, EXCL_TRUTH_TIMEOUT_MS * 1000};
    redisReply *r = NULL;
    int i, k, port = -1;

    for (i = 0; i < TH_SENTINEL_N && port < 0; i++) {
        if (w->sent == NULL)
            w->sent = redisConnectWithTimeout("127.0.0.1", t->sent_port[i], tv);
        if (w->sent != NULL && !w->sent->err) {
            redisSetTimeout(w->sent, tv);
            r = redisCommand(w->sent, "SENTINEL get-master-addr-by-name %s",
                             t->master_name);
        }
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING)
            port = atoi(r->element[1]->str);
        freeReplyObject(r);
        r = NULL;
        if (port < 0 && w->sent != NULL) {
            redisFree(w->sent);
            w->sent = NULL;
        }
    }
    for (k = 0; k < (int)(sizeof t->node / sizeof t->node[0]); k++)
        if (port > 0 && t->node[k] != NULL && t->node[k]->port == port)
            return k;
    return -1;
}

/* Where server i's truth is read: its socket, or under Sentinel the
 * named master's (*slot: that node); NULL when none is named. */
static const char *truth_path(excl_worker *w, int i, int *slot)
{
    *slot = i;
    if (w->t->kind != EXCL_SENTINEL)
        return w->t->sock[i];
    if ((*slot = named_node(w)) < 0)
        return NULL;
    return w->t->sentinels->node[*slot]->sock;
}

static redisContext *truth_conn(excl_worker *w, int i, const char *path)
{
    struct timeval tv = {0, EXCL_TRUTH_TIMEOUT_MS * 1000};

    if (w->truth[i] == NULL) {
        w->truth[i] = redisConnectUnixWithTimeout(path, tv);
        if (w->truth[i] != NULL && !w->truth[i]->err)
            redisSetTimeout(w->truth[i], tv);
    }
    if (w->truth[i] != NULL && w->truth[i]->err) {
        redisFree(w->truth[i]);
        w->truth[i] = NULL;
    }
    return w->truth[i];
}

/* Server i's PTTL of key as held by id, whose last fencing token is fence
 * (-2: not so held); 0 if unknown. */
/* A command on a truth connection. A server killed with -9 (a Sentinel
 * master) leaves it closed, and the write's SIGPIPE would kill the
 * worker: blocked meanwhile, and one it raised consumed. */
static redisReply *truth_command(redisContext *r, const char *key,
                                 const char *id, int64_t fence)
{
    static const struct timespec now = {0, 0};
    sigset_t pipe, old;
    redisReply *rep;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    rep = redisCommand(r, "EVAL %s 1 %s %s %lld", lease_lua, key, id,
                       (long long)fence);
    while (sigtimedwait(&pipe, NULL, &now) == SIGPIPE)
        ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rep;
}

static int truth_one(excl_worker *w, int i, const char *key, const char *id,
                     int64_t fence, int64_t *pttl)
{
    const char *path = truth_path(w, i, &i);
    redisContext *r = path != NULL ? truth_conn(w, i, path) : NULL;
    redisReply *rep = r ? truth_command(r, key, id, fence) : NULL;
    int known = 0;

    if (rep != NULL && rep->type == REDIS_REPLY_INTEGER) {
        *pttl = rep->integer;
        known = 1;
    } else if (rep != NULL && rep->type == REDIS_REPLY_ERROR &&
               strncmp(rep->str, "MOVED", 5) == 0) {
        *pttl = -2; /* a cluster node that does not serve the key */
        known = 1;
    }
    if (rep == NULL && path != NULL && w->truth[i] != NULL) {
        redisFree(w->truth[i]);
        w->truth[i] = NULL;
    }
    freeReplyObject(rep);
    return known;
}

int excl_truth_del(excl_worker *w, int key)
{
    char name[32];
    const char *path;
    redisContext *r;
    redisReply *rep;
    int i, ok = 0;

    if (w->t->kind != EXCL_SINGLE ||
        (path = truth_path(w, 0, &i)) == NULL ||
        (r = truth_conn(w, i, path)) == NULL)
        return 0;
    excl_key_name(key, name, sizeof name);
    rep = redisCommand(r, "DEL %s", name);
    ok = rep != NULL && rep->type == REDIS_REPLY_INTEGER;
    if (rep == NULL) {
        redisFree(w->truth[i]);
        w->truth[i] = NULL;
    }
    freeReplyObject(rep);
    return ok;
}

static int by_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x > y ? -1 : x < y;
}

/* The lease as the servers see it: one server's PTTL (-2 when no server
 * holds it for id), or for Redlock the majority-th largest, a server that
 * did not answer counting as unknown (INT64_MAX: holding it forever, or
 * -2: not holding it). 0 when unknown. */
static int truth_lease(excl_worker *w, int key, const char *id, int64_t fence,
                       int64_t unknown, int64_t *pttl)
{
    int64_t v[EXCL_MAX_SERVERS];
    int i, n = w->t->n, known = 0, held = 0;
    char name[32];

    excl_key_name(key, name, sizeof name);
    for (i = 0; i < n; i++) {
        if (truth_one(w, i, name, id, fence, &v[i]))
            known++;
        else
            v[i] = unknown;
        if (v[i] == -1)
            v[i] = INT64_MAX; /* no expiry: no bound */
        held += v[i] != -2;
    }
    if (w->t->kind == EXCL_REDLOCK) {
        qsort(v, (size_t)n, sizeof *v, by_desc);
        *pttl = v[n / 2];
        return *pttl != INT64_MAX;
    }
    for (i = 0; i < n; i++)
        if (v[i] != -2 && v[i] != INT64_MAX) {
            *pttl = v[i];
            return 1;
        }
    *pttl = -2;
    return known == n && held == 0;
}

/* The lease at its longest: a belief must not outlast it. */
int excl_truth_lease(excl_worker *w, int key, const char *id, int64_t fence,
                     int64_t *pttl)
{
    return truth_lease(w, key, id, fence, INT64_MAX, pttl);
}

/* The lease at its shortest: what the servers surely still keep, for a
 * loss the holder was told (a Redlock server that does not answer, say
 * one paused, may have let it go). */
int excl_truth_kept(excl_worker *w, int key, const char *id, int64_t fence,
                    int64_t *pttl)
{
    return truth_lease(w, key, id, fence, -2, pttl);
}

