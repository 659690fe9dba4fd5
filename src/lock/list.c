/* The listing of locks by pattern: SCAN on every server (never KEYS,
 * which blocks the server), each key read by the inspect script, all on
 * the engine as blocking calls (engine.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "algo.h"
#include "engine.h"
#include "env.h"
#include "error.h"
#include "lock.h"

/* Reads key, found on node p (number at) by a listing, by the client's
 * algorithm: on p, or for Redlock on every server (the majority's view);
 * *first gets the number of the node that reports the key (a lock on
 * several servers is listed once). */
static redislock_err inspect_key(redislock_client *c, rl__pool *p, size_t at,
                                 const char *key, size_t keylen,
                                 redislock_info *info, char **buf,
                                 size_t *first)
{
    size_t baselen;
    char *base = rl__helper_name(key, keylen, "", &baselen);
    rl__lockname k = {key, keylen, base, baselen, NULL, 0};
    rl__request q = {.s = &rl__script_inspect};
    const rl__algo *algo = rl__client_algo(c);
    rl__keyset ks;
    rl__reply *r;
    rl__round rd;
    redislock_err err;

    if (base == NULL ||
        rl__keyset_make(&ks, q.s->keys, q.s->nkeys, &k, NULL) != 0) {
        free(base);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    q.nkeys = ks.n;
    q.keys = ks.k;
    q.klens = ks.len;
    *first = at;
    if (algo->every) {
        err = rl__engine_round(
            c, &q, rl__client_server_timeout(c, REDISLOCK_TTL_MAX_MS), &rd);
        if (err == REDISLOCK_OK)
            err = algo->round_inspect(c, &rd, info, buf, first);
        rl__round_free(&rd);
    } else if ((err = rl__engine_request(c, p, NULL, 0, &q, &r)) ==
               REDISLOCK_OK) {
        err = rl__inspect_decode(r, info, buf);
        rl__reply_free(r);
    }
    rl__keyset_free(&ks);
    free(base);
    return err;
}

/* One SCAN step on one server: the next cursor into *cursor, the keys
 * in *out (an array reply the caller frees). */
static redislock_err scan_step(redislock_client *c, rl__pool *p, char *cursor,
                               const char *match, rl__reply **out)
{
    const char *argv[6] = {"SCAN", cursor, "MATCH", match, "COUNT", "200"};
    size_t lens[6] = {4, strlen(cursor), 5, strlen(match), 5, 3};
    rl__request q = {.nargs = 6, .args = argv, .lens = lens};
    rl__reply *r;
    redislock_err err = rl__engine_request(c, p, NULL, 0, &q, &r);

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
        if ((err = scan_step(ls->c, p, cursor, match, &r)) != REDISLOCK_OK)
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
