/* Reading locks anyone holds: the inspect script's reply, decoded. The
 * listing of locks by pattern is list.c's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "algo.h"
#include "env.h"
#include "error.h"
#include "lock.h"

/* A string of one inspect reply, copied into the buffer at *at. */
static char *copy_field(const rl__reply *r, char **at, size_t *len)
{
    char *s = *at;

    *len = 0;
    if (r->type != REDIS_REPLY_STRING)
        return NULL;
    memcpy(s, r->str, (size_t)r->len);
    s[r->len] = '\0';
    *len = (size_t)r->len;
    *at += r->len + 1;
    return s;
}

/* Whether r, an inspect reply's list of waiters, is pairs of an owner
 * (a string, or nil for a waiter without one) and a wait in ms, for no
 * more waiters than redislock_info lists. */
static int waiters_well_formed(const rl__reply *r)
{
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0 ||
        r->elements > 2 * REDISLOCK_INFO_WAITERS_MAX)
        return 0;
    for (i = 0; i < r->elements; i += 2)
        if ((r->element[i]->type != REDIS_REPLY_STRING &&
             r->element[i]->type != REDIS_REPLY_NIL) ||
            r->element[i + 1]->type != REDIS_REPLY_INTEGER ||
            r->element[i + 1]->integer < 0)
            return 0;
    return 1;
}

int rl__inspect_well_formed(const rl__reply *r)
{
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 12 ||
        r->element[8]->type != REDIS_REPLY_ARRAY ||
        r->element[8]->elements > REDISLOCK_INFO_TTLS_MAX ||
        !waiters_well_formed(r->element[9]) ||
        r->element[10]->type != REDIS_REPLY_INTEGER ||
        r->element[10]->integer < (long long)(r->element[9]->elements / 2))
        return 0;
    for (i = 0; i < r->element[8]->elements; i++)
        if (r->element[8]->element[i]->type != REDIS_REPLY_INTEGER)
            return 0;
    return r->element[0]->type == REDIS_REPLY_STRING &&
           (r->element[11]->type == REDIS_REPLY_STRING ||
            r->element[11]->type == REDIS_REPLY_NIL) &&
           r->element[1]->type == REDIS_REPLY_INTEGER &&
           r->element[5]->type == REDIS_REPLY_INTEGER &&
           r->element[6]->type == REDIS_REPLY_INTEGER &&
           r->element[6]->integer >= REDISLOCK_KIND_LOCK &&
           r->element[6]->integer <= REDISLOCK_KIND_SHARED &&
           r->element[7]->type == REDIS_REPLY_INTEGER &&
           r->element[7]->integer >= 0 &&
           r->element[7]->integer <= REDISLOCK_LIMIT_MAX;
}

/* The bytes the strings of the reply's waiters (w, well formed) take in
 * the buffer, each with its NUL. */
static size_t waiters_size(const rl__reply *w)
{
    size_t i, n = 0;

    for (i = 0; i < w->elements; i += 2)
        n += (size_t)w->element[i]->len + 1;
    return n;
}

/* The reply's waiters w (owner, ms pairs) into info: the entries at *at,
 * then their owners' strings. */
static void copy_waiters(const rl__reply *w, redislock_info *info, char **at)
{
    redislock_waiter *out = (redislock_waiter *)(void *)*at;
    size_t i, n = w->elements / 2;

    if (n == 0)
        return;
    *at += n * sizeof *out;
    for (i = 0; i < n; i++) {
        out[i].owner = copy_field(w->element[2 * i], at, &out[i].owner_len);
        out[i].waited_ms = w->element[2 * i + 1]->integer;
    }
    info->waiters = out;
    info->nwaiters = n;
}

/* Fills info from the inspect script's reply; strings go into *buf. The
 * script tells the key's kind; for a key that is not a lock, metadata is
 * its Redis type. */
redislock_err rl__inspect_decode(const rl__reply *r, redislock_info *info,
                                 char **buf)
{
    const rl__reply *type, *meta, *ttls, *waiters;
    int64_t *shares;
    char *at;
    size_t i;

    memset(info, 0, sizeof *info);
    /* Lua hands the type name back as a bulk string. */
    if (!rl__inspect_well_formed(r))
        return rl__err(REDISLOCK_EPROTOCOL, "inspect script answered type %d",
                       r->type);
    type = r->element[0];
    meta = r->element[4];
    ttls = r->element[8];
    waiters = r->element[9];
    info->held = strcmp(type->str, "none") != 0;
    info->ttl_ms = info->held ? r->element[1]->integer : REDISLOCK_TTL_FREE;
    info->fence = r->element[5]->integer;
    info->reserved = (int)r->element[6]->integer;
    info->limit = (int)r->element[7]->integer;
    info->queued = r->element[10]->integer;
    if (info->reserved == REDISLOCK_KIND_NOT_LOCK)
        meta = type;
    if (r->element[3]->type == REDIS_REPLY_STRING)
        info->holds = strtoll(r->element[3]->str, NULL, 10);
    /* The leases and the waiters first, where malloc's alignment suits
     * them, then the strings. */
    free(*buf);
    *buf = at = malloc(ttls->elements * sizeof *shares +
                       waiters->elements / 2 * sizeof *info->waiters +
                       waiters_size(waiters) + (size_t)r->element[2]->len +
                       (size_t)meta->len + (size_t)r->element[11]->len + 3);
    if (at == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    shares = (int64_t *)(void *)at;
    for (i = 0; i < ttls->elements; i++)
        shares[i] = ttls->element[i]->integer;
    if (ttls->elements > 0) {
        info->share_ttls = shares;
        info->nshare_ttls = ttls->elements;
    }
    at += ttls->elements * sizeof *shares;
    copy_waiters(waiters, info, &at);
    info->owner = copy_field(r->element[2], &at, &info->owner_len);
    info->metadata = copy_field(meta, &at, &info->metadata_len);
    info->revoked = copy_field(r->element[11], &at, &info->revoked_len);
    return REDISLOCK_OK;
}

void rl__inspect_out(const redislock_lock *l, redislock_info *own,
                     redislock_info *info, size_t info_size)
{
    own->key = l->key + l->prefixlen;
    own->keylen = l->keylen - l->prefixlen;
    rl__abi_out(info, info_size, own, REDISLOCK_INFO_SIZE);
}
