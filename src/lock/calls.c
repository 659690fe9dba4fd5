/*
 * The public calls on a lock handle that reach across the lock layer:
 * making and freeing it, and the blocking acquire, release, extend,
 * inspect and cancel, each run on the engine (engine.c: a private loop on
 * the calling thread), a watched lock's too, beside the keeper thread
 * that renews it (keeper.c).
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "acquire.h"
#include "algo.h"
#include "alock.h"
#include "engine.h"
#include "env.h"
#include "error.h"
#include "lock.h"

/* Names key (keylen bytes) as c's lock key n: the client's prefix, then
 * the key, the helper base and the fencing counter; all malloc'ed. In a
 * cluster the helper keys must share the key's slot, as every script that
 * touches both needs; a key whose braces make no valid tag ("a{}b",
 * "x{y") may not: computed, not reasoned about. */
static redislock_err name_key(redislock_client *c, const void *key,
                              size_t keylen, rl__lockname *n)
{
    const char *prefix;
    size_t plen;
    char *k;

    memset(n, 0, sizeof *n);
    if (key == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL key");
    if (keylen == 0)
        return rl__err(REDISLOCK_EINVAL, "empty lock key");
    if (keylen > REDISLOCK_KEY_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "lock key of %zu bytes is longer than the limit of %d",
                       keylen, REDISLOCK_KEY_MAX);
    prefix = rl__client_prefix(c, &plen);
    if ((k = malloc(plen + keylen)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    memcpy(k, prefix, plen);
    memcpy(k + plen, key, keylen);
    /* A helper's name as a lock would share a key with a helper of other
     * locks (a namespace's fencing counter, whose acquires would then
     * write into this lock's key). */
    if (rl__is_helper_key(k, plen + keylen)) {
        free(k);
        return rl__err(REDISLOCK_EINVAL,
                       "this lock key is the name of one of redislock's "
                       "helper keys (NAMESPACE:redislock:rl-fence, "
                       "KEY{KEY}:rl-...): choose another name");
    }
    n->key = k;
    n->keylen = plen + keylen;
    n->base = rl__helper_name(n->key, n->keylen, "", &n->baselen);
    if (n->base == NULL) {
        free(k);
        memset(n, 0, sizeof *n);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    if (!rl__topo_same_slot(rl__client_topo(c), n->key, n->keylen, n->base,
                            n->baselen)) {
        free(k);
        free((char *)n->base);
        memset(n, 0, sizeof *n);
        return rl__err(REDISLOCK_EINVAL,
                       "in a Redis Cluster this key's helper keys would "
                       "hash to another slot than the key: give it a "
                       "non-empty {hash tag}");
    }
    n->fence = rl__fence_name(n->key, n->keylen, n->base, n->baselen,
                              rl__client_topo(c)->kind == RL_TOPO_CLUSTER,
                              &n->fencelen);
    if (n->fence == NULL) {
        free(k);
        free((char *)n->base);
        memset(n, 0, sizeof *n);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    return REDISLOCK_OK;
}

static void unname(rl__lockname *n)
{
    free((char *)n->key);
    free((char *)n->base);
    free((char *)n->fence);
}

redislock_err redislock_lock_new(redislock_client *c, const void *key,
                                 size_t keylen, redislock_lock **out)
{
    redislock_lock *l;
    rl__lockname n;
    redislock_err err;

    if (out != NULL)
        *out = NULL;
    if (c == NULL || key == NULL || out == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL client, key or output");
    if ((err = name_key(c, key, keylen, &n)) != REDISLOCK_OK)
        return err;
    if ((l = calloc(1, sizeof *l)) == NULL) {
        unname(&n);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    l->key = (char *)n.key;
    l->keylen = n.keylen;
    l->prefixlen = l->keylen - keylen;
    l->base = (char *)n.base;
    l->baselen = n.baselen;
    l->fname = (char *)n.fence;
    l->fnamelen = n.fencelen;
    l->wait_name = rl__lock_name(l);
    l->client = c;
    l->algo = rl__client_algo(c);
    l->holder_ttl = -2;
    l->acks = RL_ACKS_NONE;
    pthread_mutex_init(&l->mu, NULL);
    *out = l;
    return REDISLOCK_OK;
}

/* Why a set's further key i (its name n) cannot join the set of l: given
 * before. Positions count from 1, as the caller lists them. */
static redislock_err check_member(redislock_lock *l, const rl__lockname *n,
                                  int i)
{
    int j;

    for (j = 0; j < i; j++) {
        const char *k = j == 0 ? l->key : l->more[j - 1].key;
        size_t len = j == 0 ? l->keylen : l->more[j - 1].keylen;

        if (n->keylen == len && memcmp(n->key, k, len) == 0)
            return rl__err(REDISLOCK_EINVAL,
                           "keys %d and %d of the set are the same key: give "
                           "each key once",
                           j + 1, i + 1);
    }
    return REDISLOCK_OK;
}

redislock_err redislock_lock_new_multi(redislock_client *c,
                                       const void *const *keys,
                                       const size_t *keylens, size_t n,
                                       redislock_lock **out)
{
    redislock_lock *l;
    redislock_err err;
    size_t i;

    if (out != NULL)
        *out = NULL;
    if (c == NULL || keys == NULL || keylens == NULL || out == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL client, keys or output");
    if (n == 0 || n > REDISLOCK_SET_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %zu keys: a set has 1 to %d keys", n,
                       REDISLOCK_SET_MAX);
    if (n > 1 && rl__client_algo(c)->no_set != NULL)
        return rl__err(REDISLOCK_EINVAL, "%s", rl__client_algo(c)->no_set);
    if ((err = redislock_lock_new(c, keys[0], keylens[0], &l)) != REDISLOCK_OK)
        return err;
    if (n > 1 && (l->more = calloc(n - 1, sizeof *l->more)) == NULL) {
        redislock_lock_free(l);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    for (i = 1; i < n; i++) {
        err = name_key(c, keys[i], keylens[i], &l->more[i - 1]);
        if (err == REDISLOCK_OK)
            err = check_member(l, &l->more[i - 1], (int)i);
        if (err != REDISLOCK_OK) {
            if (l->more[i - 1].key != NULL)
                l->nmore = (int)i;
            redislock_lock_free(l);
            return err;
        }
        l->nmore = (int)i;
    }
    l->one_fence =
        rl__lockname_fence_is(l->more, l->nmore, l->fname, l->fnamelen);
    /* Keys that one script cannot reach together are taken group by
     * group (agroup.c). */
    if (rl__spread_needed(l) && (err = rl__spread_new(l)) != REDISLOCK_OK) {
        redislock_lock_free(l);
        return err;
    }
    *out = l;
    return REDISLOCK_OK;
}

void redislock_lock_free(redislock_lock *l)
{
    if (l == NULL)
        return;
    if (l->aop != NULL)
        rl__alock_forget(l);
    rl__lock_unwatch(l);
    rl__engine_chan_unkeep(l);
    pthread_mutex_destroy(&l->mu);
    free(l->default_owner);
    free(l->info_buf);
    free(l->elect_buf);
    free(l->chan);
    while (l->nmore > 0)
        unname(&l->more[--l->nmore]);
    free(l->more);
    rl__spread_free(l->spread);
    free(l->base);
    free(l->fname);
    free(l->key);
    free(l);
}

static redislock_err start_release(rl__alock *al, redislock_lock *l, void *arg,
                                   rl__alock_cb cb, void *cbarg)
{
    return rl__alock_release(al, l, *(const int64_t *)arg, cb, cbarg);
}

static redislock_err start_extend(rl__alock *al, redislock_lock *l, void *arg,
                                  rl__alock_cb cb, void *cbarg)
{
    return rl__alock_extend(al, l, *(const int64_t *)arg, cb, cbarg);
}

redislock_err redislock_release_hold(redislock_lock *l, int64_t hold_after_ms)
{
    redislock_err err = rl__lock_release_check(l, hold_after_ms);

    if (err != REDISLOCK_OK)
        return err;
    /* The last hold: stop renewals first, and wait for one in flight, so
     * that no renewal is ever sent after release. */
    if (l->own == 1)
        rl__lock_unwatch(l);
    return rl__engine_call(l, start_release, &hold_after_ms, 0);
}

redislock_err redislock_release(redislock_lock *l)
{
    return redislock_release_hold(l, 0);
}

redislock_err redislock_extend(redislock_lock *l, int64_t ttl_ms)
{
    redislock_err err = rl__lock_extend_check(l, ttl_ms);

    if (err != REDISLOCK_OK)
        return err;
    return rl__engine_call(l, start_extend, &ttl_ms, 0);
}

int redislock_lost_fd(const redislock_lock *l)
{
    return l != NULL ? rl__watch_efd(l->watch) : -1;
}

static redislock_err start_acquire(rl__alock *al, redislock_lock *l, void *arg,
                                   rl__alock_cb cb, void *cbarg)
{
    return rl__alock_acquire(al, l, arg, cb, cbarg);
}

/* On a private loop (engine.c), as every blocking call. */
static redislock_err acquire(redislock_lock *l,
                             const redislock_acquire_options *opts)
{
    static const redislock_acquire_options defaults;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_acquire,
                           (void *)(opts != NULL ? opts : &defaults), 1);
}

redislock_err redislock_acquire_sized(redislock_lock *l,
                                      const redislock_acquire_options *opts,
                                      size_t opts_size)
{
    redislock_acquire_options o;
    redislock_err err;

    if (opts != NULL &&
        (err = rl__abi_check(opts_size, RL_ACQUIRE_OPTIONS_SIZE_0_1,
                             "redislock_acquire_options")) != REDISLOCK_OK)
        return err;
    return acquire(l, rl__abi_in(&o, sizeof o, opts, opts_size));
}

/* The 0.1 entry point, which takes 0.1's redislock_acquire_options. The
 * name is in parentheses because the header makes it a macro. */
redislock_err(redislock_acquire)(redislock_lock *l,
                                 const redislock_acquire_options *opts)
{
    return redislock_acquire_sized(l, opts, RL_ACQUIRE_OPTIONS_SIZE_0_1);
}

/* What an inspect fills: the caller's info, of its size. */
typedef struct inspect_out {
    redislock_info *info;
    size_t size;
} inspect_out;

static redislock_err start_inspect(rl__alock *al, redislock_lock *l, void *arg,
                                   rl__alock_cb cb, void *cbarg)
{
    const inspect_out *o = arg;

    return rl__alock_inspect(al, l, o->info, o->size, cb, cbarg);
}

/* The library's info is filled in a struct of its own and then copied to
 * the caller's, of info_size bytes (see "ABI" in redislock.h): a failed
 * read leaves its fields as they were. */
redislock_err redislock_inspect_sized(redislock_lock *l, redislock_info *info,
                                      size_t info_size)
{
    inspect_out o = {info, info_size};

    if (l == NULL || info == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or output");
    return rl__engine_call(l, start_inspect, &o, 0);
}

/* The 0.1 entry point (in parentheses: the header makes the name a macro),
 * which fills 0.1's redislock_info. */
redislock_err(redislock_inspect)(redislock_lock *l, redislock_info *info)
{
    return redislock_inspect_sized(l, info, RL_INFO_SIZE_0_1);
}

void redislock_cancel(redislock_lock *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    l->cancelled = 1;
    pthread_mutex_unlock(&l->mu);
    rl__engine_cancel(l);
}

/* The shorter of two TTLs as PTTL answers them: a key that is free
 * (-2) is the shortest, one without an expiry (-1) the longest. */
static int64_t shorter(int64_t a, int64_t b)
{
    if (a == REDISLOCK_TTL_FREE || b == REDISLOCK_TTL_FREE)
        return REDISLOCK_TTL_FREE;
    if (a == REDISLOCK_TTL_NO_EXPIRY)
        return b;
    if (b == REDISLOCK_TTL_NO_EXPIRY)
        return a;
    return a < b ? a : b;
}

/* PTTL of one key, on its node. */
static redislock_err pttl(redislock_client *c, const rl__lockname *k,
                          int64_t *ttl_ms)
{
    const char *argv[2] = {"PTTL", k->key};
    size_t lens[2] = {4, k->keylen};
    rl__request q = {.nargs = 2, .args = argv, .lens = lens};
    rl__reply *r;
    redislock_err err = rl__engine_request(c, NULL, k->key, k->keylen, &q, &r);

    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "PTTL answered type %d", r->type);
    else
        *ttl_ms = r->integer;
    rl__reply_free(r);
    return err;
}

redislock_err redislock_ttl(redislock_lock *l, int64_t *ttl_ms)
{
    rl__lockname names[1 + REDISLOCK_SET_MAX];
    redislock_info info;
    int64_t least = REDISLOCK_TTL_NO_EXPIRY, one = 0;
    redislock_err err = REDISLOCK_OK;
    int i, n;

    if (l == NULL || ttl_ms == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or output");
    /* No one server's PTTL answers for a quorum: the majority's. */
    if (l->algo->every) {
        if ((err = redislock_inspect(l, &info)) == REDISLOCK_OK)
            *ttl_ms = info.ttl_ms;
        return err;
    }
    /* A set over several servers or slots: its shortest key; one script
     * takes a set on one node whole, so its first key tells. */
    n = rl__lock_names(l, names);
    if (!l->algo->groups)
        n = 1;
    for (i = 0; i < n && err == REDISLOCK_OK; i++)
        if ((err = pttl(l->client, &names[i], &one)) == REDISLOCK_OK)
            least = shorter(least, one);
    if (err == REDISLOCK_OK)
        *ttl_ms = least;
    return err;
}
