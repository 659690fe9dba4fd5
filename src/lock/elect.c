/* Leader election (etcd's Campaign, Proclaim, Resign): a lock held under
 * an owner id, whose metadata is the leader's value and whose fencing
 * token is its term, with each change recorded by src/lua/elect.lua in
 * the same script as the change. Each is one operation on the engine,
 * for the blocking calls and the event loop's; observe.c reads the
 * record. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "algo.h"
#include "alock.h"
#include "clock.h"
#include "elect.h"
#include "engine.h"
#include "env.h"
#include "error.h"
#include "lock.h"

/* elect.lua's request for l with args, its keys in ks (freed by the
 * caller). */
static redislock_err elect_request(redislock_lock *l, const char *const *args,
                                   const size_t *lens, int nargs,
                                   rl__keyset *ks, rl__request *q)
{
    rl__lockname k = rl__lock_name(l);

    if (rl__keyset_make(ks, rl__script_elect.keys, rl__script_elect.nkeys, &k,
                        NULL) != 0)
        return REDISLOCK_ENOMEM;
    *q = (rl__request){.s = &rl__script_elect,
                       .nkeys = ks->n,
                       .keys = ks->k,
                       .klens = ks->len,
                       .nargs = nargs,
                       .args = args,
                       .lens = lens};
    return REDISLOCK_OK;
}

redislock_err rl__elect_send(rl__alock *al, redislock_lock *l,
                             const char *const *args, const size_t *lens,
                             int nargs, rl__aconn_cb cb, void *arg)
{
    rl__keyset ks;
    rl__request q;
    redislock_err err = elect_request(l, args, lens, nargs, &ks, &q);

    if (err != REDISLOCK_OK)
        return err;
    err = rl__alock_send(al, NULL, l->key, l->keylen, &q, cb, arg);
    rl__keyset_free(&ks);
    return err;
}

redislock_err rl__elect_send_tracked(rl__alock *al, redislock_lock *l,
                                     const char *const *args,
                                     const size_t *lens, int nargs,
                                     rl__track_wait *w, int *tracked,
                                     int *resent, rl__aconn_cb cb, void *arg)
{
    rl__keyset ks;
    rl__request q;
    redislock_err err = elect_request(l, args, lens, nargs, &ks, &q);

    if (err != REDISLOCK_OK)
        return err;
    /* The key changes with every change the record gets (the election,
     * a proclaim's value, a resignation) and with a lease that runs out;
     * the caller may also listen for the record's own notices. */
    w->key = l->key;
    w->keylen = l->keylen;
    *resent = 0;
    q.resent = resent;
    err = rl__alock_send_tracked(al, w, &q, cb, arg, tracked);
    rl__keyset_free(&ks);
    return err;
}

redislock_err rl__elect_check_value(const char *value)
{
    /* Printable, so that every observer and `redislock leader` prints it
     * as it is: a caller encodes other bytes (hex, base64). */
    return value == NULL ? REDISLOCK_OK
                         : rl__check_text(value, REDISLOCK_ELECT_VALUE_MAX,
                                          "a leader's value");
}

redislock_err rl__elect_check_lock(const redislock_lock *l)
{
    if (l->nmore > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys: an election is one key",
                       l->nmore + 1);
    if (l->algo->every)
        return rl__err(REDISLOCK_EINVAL,
                       "elections on a Redlock client are not built yet: "
                       "use a single, sharded, cluster or Sentinel client");
    return REDISLOCK_OK;
}

/* The integer answer of elect.lua's changes, as an error code. */
static redislock_err change_answer(redislock_err err, const rl__reply *r,
                                   int64_t *n)
{
    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_elect.name);
    if (err != REDISLOCK_OK)
        return err;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER) {
        *n = r->element[1]->integer;
        return REDISLOCK_OK;
    }
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        return rl__err(REDISLOCK_EEXPIRED,
                       "no longer the leader: its lease ran out");
    if (r->type == REDIS_REPLY_INTEGER && r->integer == -1)
        return rl__err(REDISLOCK_ELOST,
                       "no longer the leader: another candidate leads");
    return rl__err(REDISLOCK_EPROTOCOL, "elect script answered type %d",
                   r->type);
}

/* A change (kind 'elected', 'proclaimed' or 'resigned') of l's term
 * recorded with value; cb gets elect.lua's reply. */
static redislock_err send_change(rl__alock *al, redislock_lock *l,
                                 const char *kind, const char *value,
                                 rl__aconn_cb cb, void *arg)
{
    char term[24];
    const char *args[4] = {kind, l->token, term, value != NULL ? value : ""};
    size_t lens[4];
    int i;

    snprintf(term, sizeof term, "%" PRId64, (int64_t)l->fence);
    for (i = 0; i < 4; i++)
        lens[i] = strlen(args[i]);
    return rl__elect_send(al, l, args, lens, 4, cb, arg);
}

/* A campaign: the acquire with the caller's wait, then its record; a
 * lock that has gone before it is recorded is campaigned for again
 * while the wait lasts. */
typedef struct camp_op {
    rl__alock *al;
    redislock_lock *l;
    redislock_acquire_options o;
    char value[REDISLOCK_ELECT_VALUE_MAX + 1];
    char owner[RL_TOKEN_MAX + 1];
    int64_t deadline_us; /* 0: waits without one */
    redislock_err lost;  /* why the last term ended unrecorded */
    rl__alock_cb cb;
    void *arg;
} camp_op;

static void camp_finish(camp_op *op, redislock_err err)
{
    rl__alock_cb cb = op->cb;
    redislock_lock *l = op->l;
    void *arg = op->arg;

    if (err == REDISLOCK_OK)
        l->elected = 1;
    free(op);
    cb(l, err, arg);
}

static void camp_acquired(redislock_lock *l, redislock_err err, void *arg);

/* Acquires for op, with what is left of its wait. */
static redislock_err camp_try(camp_op *op)
{
    int64_t left;

    if (op->deadline_us > 0) {
        left = (op->deadline_us - rl__now_us()) / 1000;
        op->o.wait_ms = left > 0 ? left : REDISLOCK_NO_WAIT;
    }
    return rl__alock_acquire(op->al, op->l, &op->o, camp_acquired, op);
}

/* The term that ended before its record has been given back: campaign
 * again while the wait lasts. */
static void camp_released(redislock_lock *l, redislock_err err, void *arg)
{
    camp_op *op = arg;

    (void)l;
    (void)err;
    if ((op->lost != REDISLOCK_EEXPIRED && op->lost != REDISLOCK_ELOST) ||
        op->o.wait_ms == REDISLOCK_NO_WAIT ||
        (op->deadline_us > 0 && rl__now_us() >= op->deadline_us)) {
        camp_finish(op, op->lost);
        return;
    }
    if ((err = camp_try(op)) != REDISLOCK_OK)
        camp_finish(op, err);
}

static void camp_recorded(void *arg, redislock_err err, const rl__reply *r)
{
    camp_op *op = arg;
    int64_t n;

    err = change_answer(err, r, &n);
    if (err == REDISLOCK_OK) {
        camp_finish(op, err);
        return;
    }
    /* The lease ended between the grant and its record (that term never
     * led), or the record could not be written: the handle lets go (no
     * renewal after), then, for a lease that ended, tries again. */
    op->lost = err;
    rl__lock_unwatch(op->l);
    if (rl__alock_release(op->al, op->l, 0, camp_released, op) != REDISLOCK_OK)
        camp_released(op->l, err, op);
}

static void camp_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    camp_op *op = arg;

    if (err == REDISLOCK_OK)
        err = send_change(op->al, l, "elected", op->value, camp_recorded, op);
    if (err != REDISLOCK_OK)
        camp_finish(op, err);
}

redislock_err rl__alock_campaign(rl__alock *al, redislock_lock *l,
                                 const char *value,
                                 const redislock_acquire_options *o,
                                 rl__alock_cb cb, void *arg)
{
    camp_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or callback");
    if ((err = rl__elect_check_lock(l)) != REDISLOCK_OK ||
        (err = rl__elect_check_value(value)) != REDISLOCK_OK)
        return err;
    if (o->reentrant || o->limit || o->shared)
        return rl__err(REDISLOCK_EINVAL,
                       "a campaign is an exclusive lock taken once: not "
                       "with reentrant, limit or shared");
    if (o->owner != NULL && strlen(o->owner) > RL_TOKEN_MAX)
        return rl__err(REDISLOCK_EINVAL, "owner id must be 1 to %d bytes",
                       RL_TOKEN_MAX);
    if (l->own > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle already holds the lock: resign or "
                       "release first");
    if ((op = calloc(1, sizeof *op)) == NULL)
        return REDISLOCK_ENOMEM;
    *op = (camp_op){.al = al, .l = l, .o = *o, .cb = cb, .arg = arg};
    snprintf(op->value, sizeof op->value, "%s", value != NULL ? value : "");
    /* An owner id and metadata (even empty) make the hash format. */
    op->o.metadata = op->value;
    if (o->owner != NULL) {
        snprintf(op->owner, sizeof op->owner, "%s", o->owner);
        op->o.owner = op->owner;
    }
    op->o.watchdog = 1;
    if (o->wait_ms > 0)
        op->deadline_us = rl__now_us() + o->wait_ms * 1000;
    l->elected = 0;
    if ((err = camp_try(op)) != REDISLOCK_OK)
        free(op);
    return err;
}

/* A proclaim or a resignation under way. */
typedef struct own_op {
    rl__alock *al;
    redislock_lock *l;
    redislock_err err; /* the resignation's record, for its outcome */
    rl__alock_cb cb;
    void *arg;
} own_op;

static void own_finish(own_op *op, redislock_err err)
{
    rl__alock_cb cb = op->cb;
    redislock_lock *l = op->l;
    void *arg = op->arg;

    free(op);
    cb(l, err, arg);
}

static void proclaimed(void *arg, redislock_err err, const rl__reply *r)
{
    int64_t n;

    own_finish(arg, change_answer(err, r, &n));
}

/* The lock l leads with: its handle still holds it, as a leader. */
static redislock_err check_leads(const redislock_lock *l)
{
    if (!l->elected)
        return rl__err(REDISLOCK_EINVAL,
                       "this handle does not lead: campaign first");
    if (l->own == 0)
        return rl__err(REDISLOCK_EEXPIRED,
                       "this handle no longer holds the election's lock");
    return REDISLOCK_OK;
}

static own_op *own_new(rl__alock *al, redislock_lock *l, rl__alock_cb cb,
                       void *arg)
{
    own_op *op = calloc(1, sizeof *op);

    if (op != NULL)
        *op = (own_op){.al = al, .l = l, .cb = cb, .arg = arg};
    return op;
}

redislock_err rl__alock_proclaim(rl__alock *al, redislock_lock *l,
                                 const char *value, rl__alock_cb cb, void *arg)
{
    own_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or callback");
    if ((err = rl__elect_check_value(value)) != REDISLOCK_OK ||
        (err = check_leads(l)) != REDISLOCK_OK)
        return err;
    if ((op = own_new(al, l, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    if ((err = send_change(al, l, "proclaimed", value, proclaimed, op)) !=
        REDISLOCK_OK)
        free(op);
    return err;
}

static void resign_released(redislock_lock *l, redislock_err err, void *arg)
{
    own_op *op = arg;

    (void)l;
    /* Recorded, it has stepped down: a lease that ran out meanwhile only
     * let go of the lock first. */
    if (op->err == REDISLOCK_OK &&
        (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST))
        err = REDISLOCK_OK;
    own_finish(op, op->err != REDISLOCK_OK ? op->err : err);
}

/* The resignation is recorded (or the term had ended): let go of the
 * lock, which hands it to the next candidate. */
static void resign_recorded(void *arg, redislock_err err, const rl__reply *r)
{
    own_op *op = arg;
    int64_t n;

    op->err = change_answer(err, r, &n);
    rl__lock_unwatch(op->l);
    if ((err = rl__alock_release(op->al, op->l, 0, resign_released, op)) !=
        REDISLOCK_OK)
        own_finish(op, op->err != REDISLOCK_OK ? op->err : err);
}

redislock_err rl__alock_resign(rl__alock *al, redislock_lock *l,
                               rl__alock_cb cb, void *arg)
{
    own_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or callback");
    if ((err = check_leads(l)) != REDISLOCK_OK) {
        l->elected = 0;
        return err;
    }
    /* It stops leading before anyone can hear that it resigned. */
    l->elected = 0;
    if ((op = own_new(al, l, cb, arg)) == NULL)
        return REDISLOCK_ENOMEM;
    if ((err = send_change(al, l, "resigned", "", resign_recorded, op)) !=
        REDISLOCK_OK)
        free(op);
    return err;
}

typedef struct elect_args {
    const char *value;
    const redislock_acquire_options *o;
} elect_args;

static redislock_err start_campaign(rl__alock *al, redislock_lock *l, void *arg,
                                    rl__alock_cb cb, void *cbarg)
{
    const elect_args *a = arg;

    return rl__alock_campaign(al, l, a->value, a->o, cb, cbarg);
}

static redislock_err start_proclaim(rl__alock *al, redislock_lock *l, void *arg,
                                    rl__alock_cb cb, void *cbarg)
{
    const elect_args *a = arg;

    return rl__alock_proclaim(al, l, a->value, cb, cbarg);
}

static redislock_err start_resign(rl__alock *al, redislock_lock *l, void *arg,
                                  rl__alock_cb cb, void *cbarg)
{
    (void)arg;
    return rl__alock_resign(al, l, cb, cbarg);
}

redislock_err redislock_campaign_sized(redislock_lock *l, const char *value,
                                       const redislock_acquire_options *opts,
                                       size_t opts_size)
{
    redislock_acquire_options o;
    elect_args a = {value, &o};
    redislock_err err;

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    if ((err = rl__abi_acquire_options(&o, opts, opts_size)) != REDISLOCK_OK)
        return err;
    return rl__engine_call(l, start_campaign, &a, 1);
}

redislock_err redislock_proclaim(redislock_lock *l, const char *value)
{
    elect_args a = {value, NULL};

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_proclaim, &a, 0);
}

redislock_err redislock_resign(redislock_lock *l)
{
    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_resign, NULL, 0);
}
