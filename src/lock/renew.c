#include "renew.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "error.h"

/* The arguments of one lock in a renewal request: extend.lua's four
 * (rl__lock_owner_args). */
#define ARGS_EACH RL_OWNER_NARGS

/* Room for one lock's TTL, its format or set mark ("s" and its number
 * of keys) and its fence: three numbers and their NULs. */
#define TEXT_EACH 64

size_t rl__renew_keys(const redislock_lock *l)
{
    return 1 + (size_t)l->nmore;
}

redislock_err rl__renew_begin(size_t n, size_t nkeys, rl__renew_req *out)
{
    size_t words = nkeys + n * ARGS_EACH;

    memset(out, 0, sizeof *out);
    out->v = malloc(words * sizeof *out->v);
    out->len = malloc(words * sizeof *out->len);
    out->buf = malloc(n * TEXT_EACH);
    if (out->v == NULL || out->len == NULL || out->buf == NULL) {
        rl__renew_free(out);
        return rl__err(REDISLOCK_ENOMEM, "out of memory renewing locks");
    }
    out->q = (rl__request){.s = &rl__script_renew,
                           .keys = out->v,
                           .klens = out->len,
                           .args = out->v + nkeys,
                           .lens = out->len + nkeys,
                           .settle = 1};
    return REDISLOCK_OK;
}

/* Copies the n bytes at s into *text, NUL-terminated, and moves it on. */
static const char *keep(char **text, const char *s, size_t n)
{
    char *at = *text;

    memcpy(at, s, n);
    at[n] = '\0';
    *text += n + 1;
    return at;
}

void rl__renew_add(rl__renew_req *r, const rl__lockname *names, int n, int set,
                   const char *const *args, const size_t *lens)
{
    const char **key = r->v + r->q.nkeys;
    size_t *klen = r->len + r->q.nkeys;
    /* The arguments go after every key: r->q.args is where they start. */
    const char **a = (const char **)r->q.args + r->q.nargs;
    size_t *al = (size_t *)r->q.lens + r->q.nargs;
    char *text = r->buf + (size_t)r->q.nargs / ARGS_EACH * TEXT_EACH;
    char mark[16];
    int i;

    for (i = 0; i < n; i++) {
        key[i] = names[i].key;
        klen[i] = names[i].keylen;
    }
    a[0] = args[0];
    al[0] = lens[0];
    a[1] = keep(&text, args[1], al[1] = lens[1]);
    if (set) {
        al[2] = (size_t)snprintf(mark, sizeof mark, "s%d", n);
        a[2] = keep(&text, mark, al[2]);
    } else {
        a[2] = keep(&text, args[2], al[2] = lens[2]);
    }
    a[3] = keep(&text, args[3], al[3] = lens[3]);
    r->q.nkeys += n;
    r->q.nargs += ARGS_EACH;
}

redislock_err rl__renew_request(redislock_lock *const *ls, size_t n,
                                rl__renew_req *out)
{
    rl__lockname names[1 + REDISLOCK_SET_MAX];
    rl__owner_args oa;
    char ttl[24];
    size_t i, nkeys = 0;
    redislock_err err;

    for (i = 0; i < n; i++)
        nkeys += rl__renew_keys(ls[i]);
    if ((err = rl__renew_begin(n, nkeys, out)) != REDISLOCK_OK)
        return err;
    for (i = 0; i < n; i++) {
        const redislock_lock *l = ls[i];

        /* The key outlives the lease by the lock-delay. */
        snprintf(ttl, sizeof ttl, "%" PRId64, l->ttl_ms + l->delay_ms);
        rl__lock_owner_args(l, ttl, &oa);
        rl__renew_add(out, names, rl__lock_names(l, names), l->nmore > 0,
                      oa.args, oa.lens);
    }
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

/* ---- A spread set's renewals by node */

struct rl__parcel {
    void *node;
    unsigned slot;
    rl__request q; /* as its sender made it: arguments, guards */
    rl__aconn_cb cb;
    void *arg;
    int n;
    rl__lockname names[REDISLOCK_SET_MAX]; /* the keys, copied */
    char keys[];
};

redislock_err rl__parcel_keep(rl__parcels *box, void *node, unsigned slot,
                              const rl__lockname *names, int n,
                              const rl__request *q, rl__aconn_cb cb, void *arg)
{
    size_t bytes = 0, cap;
    rl__parcel *p, **more;
    char *at;
    int i;

    if (n < 1 || n > REDISLOCK_SET_MAX || q->nargs != ARGS_EACH)
        return rl__err(REDISLOCK_EINVAL, "not a set's extend");
    for (i = 0; i < n; i++)
        bytes += names[i].keylen + 1;
    if (box->n == box->cap) {
        cap = box->cap == 0 ? 16 : 2 * box->cap;
        if ((more = realloc(box->p, cap * sizeof *more)) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        box->p = more;
        box->cap = cap;
    }
    if ((p = calloc(1, sizeof *p + bytes)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    p->node = node;
    p->slot = slot;
    p->q = *q;
    p->cb = cb;
    p->arg = arg;
    p->n = n;
    at = p->keys;
    for (i = 0; i < n; i++) {
        p->names[i].key = keep(&at, names[i].key, names[i].keylen);
        p->names[i].keylen = names[i].keylen;
    }
    box->p[box->n++] = p;
    return REDISLOCK_OK;
}

/* One renewal request of several parcels, out. */
typedef struct pbatch {
    rl__parcel_io io;
    rl__guard_acks acks; /* the request's guards' answers */
    size_t n;
    rl__parcel *p[];
} pbatch;

/* Sends p's request alone, as its sender would have; or gives its
 * sender the failure. Frees p. */
static void parcel_alone(const rl__parcel_io *io, rl__parcel *p)
{
    redislock_err err =
        io->alone(io->ctx, p->node, p->names, p->n, &p->q, p->cb, p->arg);

    if (err != REDISLOCK_OK)
        p->cb(p->arg, err, NULL);
    free(p);
}

/* The guards' answers b's request got go where each parcel's sender
 * looks for its own. */
static void parcel_acks(const pbatch *b, const rl__parcel *p)
{
    if (p->q.acked != NULL)
        *p->q.acked = b->acks.acked;
    if (p->q.need != NULL)
        *p->q.need = b->acks.need;
    if (p->q.aof_acked != NULL) {
        p->q.aof_acked[0] = b->acks.aof[0];
        p->q.aof_acked[1] = b->acks.aof[1];
    }
}

/* Each parcel's answer in r (or the request's failure err) goes to its
 * sender as the reply to its own request; a reply that does not answer
 * each (an error of the script as a whole: an ACL's refusal of one key)
 * sends each parcel alone. */
static void pbatch_done(void *arg, redislock_err err, const rl__reply *r)
{
    pbatch *b = arg;
    int whole = err != REDISLOCK_OK || rl__renew_answered(r, b->n);
    size_t i;

    for (i = 0; i < b->n; i++) {
        rl__parcel *p = b->p[i];

        if (!whole) {
            parcel_alone(&b->io, p);
            continue;
        }
        parcel_acks(b, p);
        p->cb(p->arg, err, err == REDISLOCK_OK ? rl__renew_answer(r, i) : NULL);
        free(p);
    }
    free(b);
}

/* Sends the k parcels v (k > 1, of one node and slot) as one renewal
 * request, with the client's guards (each parcel's own); 0 when it could
 * not be sent. */
static int pbatch_send(const rl__parcel_io *io, rl__parcel **v, size_t k)
{
    pbatch *b = malloc(sizeof *b + k * sizeof *b->p);
    rl__renew_req rq;
    size_t i, nkeys = 0;
    redislock_err err;

    for (i = 0; i < k; i++)
        nkeys += (size_t)v[i]->n;
    if (b == NULL || rl__renew_begin(k, nkeys, &rq) != REDISLOCK_OK) {
        free(b);
        return 0;
    }
    for (i = 0; i < k; i++)
        rl__renew_add(&rq, v[i]->names, v[i]->n, 1, v[i]->q.args, v[i]->q.lens);
    b->io = *io;
    b->n = k;
    memcpy(b->p, v, k * sizeof *v);
    rl__client_guard(io->c, &rq.q, &b->acks);
    err = io->send(io->ctx, v[0]->node, &rq.q, pbatch_done, b);
    rl__renew_free(&rq);
    if (err != REDISLOCK_OK)
        free(b);
    return err == REDISLOCK_OK;
}

static int by_place(const void *x, const void *y)
{
    const rl__parcel *a = *(rl__parcel *const *)x, *b = *(rl__parcel *const *)y;

    if (a->node != b->node)
        return (uintptr_t)a->node < (uintptr_t)b->node ? -1 : 1;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

void rl__parcels_send(rl__parcels *box, const rl__parcel_io *io)
{
    rl__parcel **v = box->p;
    size_t k = box->n, i, j, end, keys;

    if (k == 0)
        return;
    /* The box is empty again before any callback can fill it. */
    box->p = NULL;
    box->n = box->cap = 0;
    qsort(v, k, sizeof *v, by_place);
    for (i = 0; i < k; i = end) {
        keys = (size_t)v[i]->n;
        for (end = i + 1; end < k && by_place(&v[end], &v[i]) == 0 &&
                          keys + (size_t)v[end]->n <= RL_RENEW_BATCH;
             end++)
            keys += (size_t)v[end]->n;
        if (end - i > 1 && pbatch_send(io, v + i, end - i))
            continue;
        for (j = i; j < end; j++)
            parcel_alone(io, v[j]);
    }
    free(v);
}
