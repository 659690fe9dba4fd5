#include "renew.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "error.h"

/* The words of one lock in a renewal request: its key, then extend.lua's
 * four arguments (rl__lock_owner_args). */
#define ARGS_EACH RL_OWNER_NARGS

/* Room for one lock's TTL and fence text: two numbers and their NULs. */
#define TEXT_EACH 48

int rl__renew_batchable(const redislock_lock *l)
{
    return l->nmore == 0 &&
           rl__lock_owner_script(l, &rl__script_extend) == &rl__script_extend;
}

redislock_err rl__renew_request(redislock_lock *const *ls, size_t n,
                                rl__renew_req *out)
{
    size_t i, j, words = n * (1 + ARGS_EACH);
    char *text;

    memset(out, 0, sizeof *out);
    out->v = malloc(words * sizeof *out->v);
    out->len = malloc(words * sizeof *out->len);
    out->buf = text = malloc(n * TEXT_EACH);
    if (out->v == NULL || out->len == NULL || out->buf == NULL) {
        rl__renew_free(out);
        return rl__err(REDISLOCK_ENOMEM, "out of memory renewing locks");
    }
    for (i = 0; i < n; i++) {
        const redislock_lock *l = ls[i];
        const char **a = out->v + n + i * ARGS_EACH;
        size_t *al = out->len + n + i * ARGS_EACH;
        rl__owner_args oa;
        /* The key outlives the lease by the lock-delay. */
        int w =
            snprintf(text, TEXT_EACH / 2, "%" PRId64, l->ttl_ms + l->delay_ms);

        out->v[i] = l->key;
        out->len[i] = l->keylen;
        rl__lock_owner_args(l, text, &oa);
        /* The fence's text is in oa: kept beside the TTL's. */
        snprintf(text + w + 1, TEXT_EACH - (size_t)w - 1, "%s", oa.fence);
        oa.args[3] = text + w + 1;
        for (j = 0; j < ARGS_EACH; j++) {
            a[j] = oa.args[j];
            al[j] = oa.lens[j];
        }
        text += TEXT_EACH;
    }
    out->q = (rl__request){.s = &rl__script_renew,
                           .nkeys = (int)n,
                           .keys = out->v,
                           .klens = out->len,
                           .nargs = (int)(n * ARGS_EACH),
                           .args = out->v + n,
                           .lens = out->len + n,
                           .settle = 1};
    return REDISLOCK_OK;
}

void rl__renew_free(rl__renew_req *r)
{
    free(r->v);
    free(r->len);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

int rl__renew_answered(const rl__reply *r, size_t n)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == n;
}

const rl__reply *rl__renew_answer(const rl__reply *r, size_t i)
{
    return r->element[i];
}

int rl__renew_round_answered(const rl__round *r, size_t n)
{
    size_t s;

    for (s = 0; s < r->n; s++)
        if (r->reply[s] != NULL && !rl__renew_answered(r->reply[s], n))
            return 0;
    return 1;
}

void rl__renew_round_answer(const rl__round *r, size_t i, rl__round *one)
{
    size_t s;

    one->n = r->n;
    for (s = 0; s < r->n; s++) {
        rl__reply *a = r->reply[s] != NULL ? r->reply[s]->element[i] : NULL;

        one->err[s] = r->err[s];
        one->reply[s] = NULL;
        /* An answer that is an error is that server's failure, as the
         * round of an extend alone would have it. */
        if (a != NULL &&
            (one->err[s] = rl__reply_check(a, "extend")) == REDISLOCK_OK)
            one->reply[s] = a;
    }
}
