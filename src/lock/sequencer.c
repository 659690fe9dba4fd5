/* Sequencers (Chubby's): a holder's proof, "FENCE:DIGEST", that a
 * resource shows the lock's server to ask whether the writer that brought
 * it still holds the lock (src/lua/sequencer.lua, seqcheck.lua). Both
 * are one operation on the engine, for the blocking calls and the event
 * loop's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "alock.h"
#include "engine.h"
#include "env.h"
#include "error.h"
#include "lock.h"

/* The hex digest a sequencer carries (SHA1: redis.sha1hex). */
#define DIGEST_LEN 40

/* A sequencer asked for or checked: the handle, the caller's buffer for a
 * new one, and whom to tell. */
typedef struct seq_op {
    redislock_lock *l;
    char *buf;
    size_t size;
    int64_t fence;
    rl__alock_cb cb;
    void *arg;
} seq_op;

/* An integer answer of script s, as an error code; the scripts answer
 * alike: 0 free, -1 someone else's, -3 held by many. */
static redislock_err common_answer(const rl__reply *r, const rl__script *s,
                                   const char *stale)
{
    if (r->type != REDIS_REPLY_INTEGER)
        return rl__err(REDISLOCK_EPROTOCOL, "%s script answered type %d",
                       s->name, r->type);
    switch (r->integer) {
    case 0:
        return rl__err(REDISLOCK_EEXPIRED, "the lock is free: %s", stale);
    case -1:
        return rl__err(REDISLOCK_ESTALE,
                       "the lock is held by another holder, or was taken "
                       "again since: %s",
                       stale);
    case -3:
        return rl__err(REDISLOCK_EINVAL,
                       "the key is held by many (a semaphore or a lock held "
                       "shared): sequencers for shares are not built yet");
    }
    return rl__err(REDISLOCK_EPROTOCOL, "%s script answered %lld", s->name,
                   (long long)r->integer);
}

/* sequencer.lua's answer: {1, digest} written into the op's buffer. */
static redislock_err made(const rl__reply *r, void *arg)
{
    seq_op *op = arg;
    const rl__reply *d;
    redislock_err err = rl__reply_check(r, rl__script_sequencer.name);

    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_ARRAY)
        return common_answer(r, &rl__script_sequencer,
                             "this handle no longer holds it");
    d = r->elements == 2 ? r->element[1] : NULL;
    if (d == NULL || d->type != REDIS_REPLY_STRING || d->len != DIGEST_LEN ||
        strspn(d->str, "0123456789abcdef") != DIGEST_LEN)
        return rl__err(REDISLOCK_EPROTOCOL,
                       "sequencer script answered no digest");
    snprintf(op->buf, op->size, "%" PRId64 ":%s", op->fence, d->str);
    return REDISLOCK_OK;
}

/* seqcheck.lua's answer. */
static redislock_err checked(const rl__reply *r, void *arg)
{
    redislock_err err = rl__reply_check(r, rl__script_seqcheck.name);

    (void)arg;
    if (err != REDISLOCK_OK)
        return err;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        return REDISLOCK_OK;
    return common_answer(r, &rl__script_seqcheck,
                         "the sequencer's holder no longer holds it");
}

static void finish(seq_op *op, redislock_err err)
{
    op->cb(op->l, err, op->arg);
    free(op);
}

static void made_one(void *arg, redislock_err err, const rl__reply *r)
{
    finish(arg, err == REDISLOCK_OK ? made(r, arg) : err);
}

static void checked_one(void *arg, redislock_err err, const rl__reply *r)
{
    finish(arg, err == REDISLOCK_OK ? checked(r, arg) : err);
}

/* Redlock: every server was asked; a majority decides, as for a lock. */
static void made_round(void *arg, rl__round *r)
{
    finish(arg, rl__round_majority(r, made, arg, "sequencer"));
}

static void checked_round(void *arg, rl__round *r)
{
    finish(arg, rl__round_majority(r, checked, arg, "sequencer check"));
}

/* Sends q, script of l's key with its args, for op; done or round_done
 * gets the answer. */
static redislock_err send(rl__alock *al, seq_op *op, rl__request *q,
                          rl__aconn_cb done, rl__alock_round_cb round)
{
    redislock_lock *l = op->l;
    rl__lockname k = rl__lock_name(l);
    const char *keys[1] = {k.key};
    size_t klens[1] = {k.keylen};
    redislock_err err;

    q->nkeys = 1;
    q->keys = keys;
    q->klens = klens;
    if (l->algo->every)
        err = rl__alock_round(
            al, q,
            rl__client_server_timeout(l->client, REDISLOCK_DEFAULT_TTL_MS),
            round, op);
    else
        err = rl__alock_send(al, NULL, k.key, k.keylen, q, done, op);
    if (err != REDISLOCK_OK)
        free(op);
    return err;
}

/* What no sequencer is made or checked for: a set, a share. */
static redislock_err check_kind(const redislock_lock *l)
{
    if (l->nmore > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys: sequencers for sets are not built "
                       "yet",
                       l->nmore + 1);
    if (l->limit)
        return rl__err(REDISLOCK_EINVAL,
                       "a share (a semaphore's permit or a reader's share): "
                       "sequencers for shares are not built yet");
    return REDISLOCK_OK;
}

static seq_op *op_new(redislock_lock *l, rl__alock_cb cb, void *arg)
{
    seq_op *op = calloc(1, sizeof *op);

    if (op != NULL) {
        op->l = l;
        op->cb = cb;
        op->arg = arg;
    }
    return op;
}

redislock_err rl__alock_sequencer(rl__alock *al, redislock_lock *l, char *buf,
                                  size_t size, rl__alock_cb cb, void *arg)
{
    rl__owner_args a;
    rl__request q = {.s = &rl__script_sequencer, .nargs = RL_OWNER_NARGS};
    seq_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL || buf == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle, buffer or "
                                         "callback");
    if (size < REDISLOCK_SEQUENCER_MAX)
        return rl__err(REDISLOCK_EINVAL,
                       "a buffer of %zu bytes: a sequencer needs "
                       "REDISLOCK_SEQUENCER_MAX (%d)",
                       size, REDISLOCK_SEQUENCER_MAX);
    if ((err = check_kind(l)) != REDISLOCK_OK)
        return err;
    if (l->own == 0)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle holds no lock (acquire first)");
    if (l->fence <= 0)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle adopted its token and does not know its "
                       "fencing token: make the sequencer where the lock "
                       "was acquired");
    if ((op = op_new(l, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    op->buf = buf;
    op->size = size;
    op->fence = l->fence;
    rl__lock_owner_args(l, "", &a);
    q.args = a.args;
    q.lens = a.lens;
    return send(al, op, &q, made_one, made_round);
}

/* Splits sequencer s into its fencing token (*fence, in decimal) and
 * digest (into digest). */
static redislock_err parse(const char *s, char *fence, char *digest)
{
    const char *colon = s != NULL ? strchr(s, ':') : NULL;
    size_t n = colon != NULL ? (size_t)(colon - s) : 0;

    if (colon == NULL || n == 0 || n > 16 || strspn(s, "0123456789") != n ||
        s[0] == '0' || strlen(colon + 1) != DIGEST_LEN ||
        strspn(colon + 1, "0123456789abcdef") != DIGEST_LEN)
        return rl__err(REDISLOCK_EINVAL,
                       "not a sequencer: want FENCE:DIGEST (a fencing token "
                       "and 40 hex digits), as redislock_sequencer() makes");
    memcpy(fence, s, n);
    fence[n] = '\0';
    memcpy(digest, colon + 1, DIGEST_LEN + 1);
    return REDISLOCK_OK;
}

redislock_err rl__alock_check_sequencer(rl__alock *al, redislock_lock *l,
                                        const char *sequencer, rl__alock_cb cb,
                                        void *arg)
{
    char fence[17], digest[DIGEST_LEN + 1];
    const char *args[2] = {digest, fence};
    size_t lens[2] = {DIGEST_LEN, 0};
    rl__request q = {
        .s = &rl__script_seqcheck, .nargs = 2, .args = args, .lens = lens};
    seq_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or callback");
    if ((err = parse(sequencer, fence, digest)) != REDISLOCK_OK ||
        (err = check_kind(l)) != REDISLOCK_OK)
        return err;
    lens[1] = strlen(fence);
    if ((op = op_new(l, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    return send(al, op, &q, checked_one, checked_round);
}

typedef struct seq_args {
    char *buf;
    size_t size;
    const char *sequencer;
} seq_args;

static redislock_err start_make(rl__alock *al, redislock_lock *l, void *arg,
                                rl__alock_cb cb, void *cbarg)
{
    const seq_args *a = arg;

    return rl__alock_sequencer(al, l, a->buf, a->size, cb, cbarg);
}

static redislock_err start_check(rl__alock *al, redislock_lock *l, void *arg,
                                 rl__alock_cb cb, void *cbarg)
{
    const seq_args *a = arg;

    return rl__alock_check_sequencer(al, l, a->sequencer, cb, cbarg);
}

redislock_err redislock_sequencer(redislock_lock *l, char *buf, size_t size)
{
    seq_args a = {buf, size, NULL};

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_make, &a, 0);
}

redislock_err redislock_check_sequencer(redislock_lock *l,
                                        const char *sequencer)
{
    seq_args a = {NULL, 0, sequencer};

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_check, &a, 0);
}
