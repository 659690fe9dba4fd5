/* Reading locks anyone holds: one lock's state, and the listing of locks
 * by pattern with SCAN (never KEYS, which blocks the server). */
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

int rl__inspect_well_formed(const rl__reply *r)
{
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 9 ||
        r->element[8]->type != REDIS_REPLY_ARRAY ||
        r->element[8]->elements > REDISLOCK_INFO_TTLS_MAX)
        return 0;
    for (i = 0; i < r->element[8]->elements; i++)
        if (r->element[8]->element[i]->type != REDIS_REPLY_INTEGER)
            return 0;
    return r->element[0]->type == REDIS_REPLY_STRING &&
           r->element[0]->type == REDIS_REPLY_STRING &&
           r->element[1]->type == REDIS_REPLY_INTEGER &&
           r->element[5]->type == REDIS_REPLY_INTEGER &&
           r->element[6]->type == REDIS_REPLY_INTEGER &&
           r->element[6]->integer >= REDISLOCK_KIND_LOCK &&
           r->element[6]->integer <= REDISLOCK_KIND_SHARED &&
           r->element[7]->type == REDIS_REPLY_INTEGER &&
           r->element[7]->integer >= 0 &&
           r->element[7]->integer <= REDISLOCK_LIMIT_MAX;
}

/* Fills info from the inspect script's reply; strings go into *buf. The
 * script tells the key's kind; for a key that is not a lock, metadata is
 * its Redis type. */
redislock_err rl__inspect_decode(const rl__reply *r, redislock_info *info,
                                 char **buf)
{
    const rl__reply *type, *meta, *ttls;
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
    info->held = strcmp(type->str, "none") != 0;
    info->ttl_ms = info->held ? r->element[1]->integer : REDISLOCK_TTL_FREE;
    info->fence = r->element[5]->integer;
    info->reserved = (int)r->element[6]->integer;
    info->limit = (int)r->element[7]->integer;
    if (info->reserved == REDISLOCK_KIND_NOT_LOCK)
        meta = type;
    if (r->element[3]->type == REDIS_REPLY_STRING)
        info->holds = strtoll(r->element[3]->str, NULL, 10);
    /* The leases first, where malloc's alignment suits them. */
    free(*buf);
    *buf = at = malloc(ttls->elements * sizeof *shares +
                       (size_t)r->element[2]->len + (size_t)meta->len + 2);
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
    info->owner = copy_field(r->element[2], &at, &info->owner_len);
    info->metadata = copy_field(meta, &at, &info->metadata_len);
    return REDISLOCK_OK;
}

/* Reads key (found on node p, number at, by a listing; p NULL: wherever
 * it lives) by the client's algorithm. */
static redislock_err inspect_key(redislock_client *c, rl__pool *p, size_t at,
                                 const char *key, size_t keylen,
                                 redislock_info *info, char **buf,
                                 size_t *first)
{
    size_t baselen;
    char *base = rl__helper_name(key, keylen, "", &baselen);
    redislock_err err;

    if (base == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    err = rl__client_algo(c)->inspect(c, p, at, key, keylen, base, baselen,
                                      info, buf, first);
    free(base);
    return err;
}

void rl__inspect_out(const redislock_lock *l, redislock_info *own,
                     redislock_info *info, size_t info_size)
{
    own->key = l->key + l->prefixlen;
    own->keylen = l->keylen - l->prefixlen;
    rl__abi_out(info, info_size, own, REDISLOCK_INFO_SIZE);
}

/* One SCAN step on one server: the next cursor into *cursor, the keys
 * in *out (an array reply the caller frees). */
static redislock_err scan_step(rl__topo *t, rl__pool *p, char *cursor,
                               const char *match, rl__reply **out)
{
    const char *argv[6] = {"SCAN", cursor, "MATCH", match, "COUNT", "200"};
    rl__cmd cmd = {6, argv, NULL};
    rl__request q = {.n = 1, .cmds = &cmd};
    rl__reply *r;
    redislock_err err = rl__topo_run_on(t, p, &q, &r);

    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_ARRAY || r->element[0]->len > 20) {
        int type = r->type;
        rl__reply_free(r);
        return rl__err(REDISLOCK_EPROTOCOL, "SCAN answered type %d", type);
    }
    memcpy(cursor, r->element[0]->str, (size_t)r->element[0]->len);
    cursor[r->element[0]->len] = '\0';
    *out = r;
    return REDISLOCK_OK;
}

/* One listing: what to report, and to whom. */
typedef struct lister {
    redislock_client *c;
    size_t plen; /* the client's prefix, cut from each key reported */
    unsigned flags;
    redislock_list_cb cb;
    void *arg;
    /* For a caller whose redislock_info is larger than the library's (a
     * newer header): the struct the callback gets, its tail zero. NULL
     * otherwise: a caller's struct that is no larger than the library's
     * is a prefix of it, and the callback gets the library's own. */
    redislock_info *big;
} lister;

/* Whether the listing reports a key read as info: only locks with a TTL,
 * and hold-after reservations, unless REDISLOCK_LIST_ALL. */
static int wanted(const lister *ls, const redislock_info *info)
{
    if (!info->held)
        return 0;
    return (ls->flags & REDISLOCK_LIST_ALL) != 0 ||
           (info->ttl_ms >= 0 && info->reserved != REDISLOCK_KIND_NOT_LOCK);
}

/* Reports each wanted key among one SCAN batch of server p (number n); 1
 * when the callback stopped. A Redlock lock is reported once, by the first
 * server that has it, and only when a majority hold it. */
static int report_batch(const lister *ls, rl__pool *p, size_t n,
                        const rl__reply *keys, redislock_err *err)
{
    redislock_info info;
    char *buf = NULL;
    size_t i, first;
    int stop = 0;

    for (i = 0; i < keys->elements && !stop && *err == REDISLOCK_OK; i++) {
        const rl__reply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING || (size_t)k->len < ls->plen ||
            rl__is_helper_key(k->str, (size_t)k->len))
            continue;
        *err = inspect_key(ls->c, p, n, k->str, (size_t)k->len, &info, &buf,
                           &first);
        /* A lock on several servers is reported by one of them. */
        if (*err != REDISLOCK_OK || !wanted(ls, &info) || first != n)
            continue;
        info.key = k->str + ls->plen;
        info.keylen = (size_t)k->len - ls->plen;
        if (ls->big != NULL)
            memcpy(ls->big, &info, REDISLOCK_INFO_SIZE);
        stop = ls->cb(ls->big != NULL ? ls->big : &info, ls->arg) != 0;
    }
    free(buf);
    return stop;
}

static redislock_err list_server(const lister *ls, rl__pool *p, size_t n,
                                 const char *match, int *stop)
{
    char cursor[24] = "0";
    rl__reply *r = NULL;
    redislock_err err;

    do {
        if ((err = scan_step(rl__client_topo(ls->c), p, cursor, match, &r)) !=
            REDISLOCK_OK)
            return err;
        *stop = report_batch(ls, p, n, r->element[1], &err);
        rl__reply_free(r);
    } while (err == REDISLOCK_OK && !*stop && strcmp(cursor, "0") != 0);
    return err;
}

redislock_err redislock_list_sized(redislock_client *c, const char *pattern,
                                   unsigned flags, redislock_list_cb cb,
                                   void *arg, size_t info_size)
{
    lister ls = {c, 0, flags, cb, arg, NULL};
    size_t i, n;
    rl__pool *p;
    const char *prefix;
    char *match;
    redislock_err err = REDISLOCK_OK;
    int stop = 0;

    if (c == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL client or callback");
    if ((flags & ~REDISLOCK_LIST_ALL) != 0)
        return rl__err(REDISLOCK_EINVAL, "unknown list flags 0x%x", flags);
    err = rl__abi_check(info_size, RL_INFO_SIZE_0_1, "redislock_info");
    if (err != REDISLOCK_OK)
        return err;
    if (info_size > REDISLOCK_INFO_SIZE &&
        (ls.big = calloc(1, info_size)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    prefix = rl__client_prefix(c, &ls.plen);
    if (pattern == NULL)
        pattern = "*";
    /* The prefix is matched literally: escape glob characters in it. */
    if ((match = malloc(2 * ls.plen + strlen(pattern) + 1)) == NULL) {
        free(ls.big);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    for (i = 0, n = 0; i < ls.plen; i++) {
        if (strchr("*?[]\\", prefix[i]) != NULL)
            match[n++] = '\\';
        match[n++] = prefix[i];
    }
    strcpy(match + n, pattern);
    for (i = 0; err == REDISLOCK_OK && !stop &&
                (p = rl__topo_each(rl__client_topo(c), i)) != NULL;
         i++)
        err = list_server(&ls, p, i, match, &stop);
    free(match);
    free(ls.big);
    return err;
}

/* The 0.1 entry points (in parentheses: the header makes the names
 * macros). Their callbacks get the library's redislock_info, whose first
 * fields are 0.1's, at 0.1's offsets. */
redislock_err(redislock_list_flags)(redislock_client *c, const char *pattern,
                                    unsigned flags, redislock_list_cb cb,
                                    void *arg)
{
    return redislock_list_sized(c, pattern, flags, cb, arg, RL_INFO_SIZE_0_1);
}

redislock_err(redislock_list)(redislock_client *c, const char *pattern,
                              redislock_list_cb cb, void *arg)
{
    return redislock_list_sized(c, pattern, 0, cb, arg, RL_INFO_SIZE_0_1);
}
