/* Cooperative revocation (src/lua/revoke.lua): whoever holds a key is
 * asked to give it up, and hears it at its next extend or renewal. One
 * operation on the engine, for the blocking call and the event loop's. */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "alock.h"
#include "engine.h"
#include "env.h"
#include "error.h"
#include "lock.h"

/* A revocation under way: its key's name, and whom to tell. */
typedef struct revoke_op {
    redislock_lock *l;
    rl__alock_cb cb;
    void *arg;
} revoke_op;

/* What revoke.lua's answer r says, as an error code (see the script). */
static redislock_err answer(const rl__reply *r, void *unused)
{
    redislock_err err = rl__reply_check(r, rl__script_revoke.name);

    (void)unused;
    if (err != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        return rl__err(REDISLOCK_EPROTOCOL, "revoke script answered type %d",
                       r->type);
    switch (r->integer) {
    case 1:
    case 2:
        return REDISLOCK_OK;
    case 0:
        return rl__err(REDISLOCK_EEXPIRED,
                       "nothing to revoke: the lock is free");
    case -1:
        return rl__err(REDISLOCK_EINVAL,
                       "the key holds no redislock lock (another library's "
                       "lock, whose holder cannot hear a revocation, or not "
                       "a lock): nothing was changed");
    case -2:
        return rl__err(REDISLOCK_EINVAL,
                       "the key is a hold-after reservation, which nobody "
                       "holds: nothing to revoke");
    case -3:
        return rl__err(REDISLOCK_EINVAL,
                       "the key is held by many (a semaphore or a lock held "
                       "shared): revoking their holders is not built yet");
    }
    return rl__err(REDISLOCK_EPROTOCOL, "revoke script answered %lld",
                   (long long)r->integer);
}

static void sent_done(void *arg, redislock_err err, const rl__reply *r)
{
    revoke_op *op = arg;

    if (err == REDISLOCK_OK)
        err = answer(r, NULL);
    op->cb(op->l, err, op->arg);
    free(op);
}

/* Redlock: every server was asked; a majority decides, as for a lock. */
static void round_done(void *arg, rl__round *r)
{
    revoke_op *op = arg;

    op->cb(op->l, rl__round_majority(r, answer, NULL, "revoke"), op->arg);
    free(op);
}

redislock_err rl__alock_revoke(rl__alock *al, redislock_lock *l,
                               const char *reason, rl__alock_cb cb, void *arg)
{
    rl__lockname k;
    const char *keys[1], *args[1];
    size_t klens[1], lens[1];
    rl__request q = {.s = &rl__script_revoke,
                     .nkeys = 1,
                     .keys = keys,
                     .klens = klens,
                     .nargs = 1,
                     .args = args,
                     .lens = lens};
    revoke_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle or callback");
    if (reason == NULL)
        reason = "";
    if ((err = rl__check_text(reason, REDISLOCK_REVOKE_REASON_MAX,
                              "revocation reason")) != REDISLOCK_OK)
        return err;
    if (l->nmore > 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a set of %d keys: revoke its keys one by one (a "
                       "set's holder does not hear it yet)",
                       l->nmore + 1);
    if ((op = malloc(sizeof *op)) == NULL)
        return REDISLOCK_ENOMEM;
    *op = (revoke_op){l, cb, arg};
    k = rl__lock_name(l);
    keys[0] = k.key;
    klens[0] = k.keylen;
    args[0] = reason;
    lens[0] = strlen(reason);
    if (l->algo->every)
        err = rl__alock_round(
            al, &q,
            rl__client_server_timeout(l->client, REDISLOCK_DEFAULT_TTL_MS),
            round_done, op);
    else
        err = rl__alock_send(al, NULL, k.key, k.keylen, &q, sent_done, op);
    if (err != REDISLOCK_OK)
        free(op);
    return err;
}

typedef struct revoke_args {
    const char *reason;
} revoke_args;

static redislock_err start_revoke(rl__alock *al, redislock_lock *l, void *arg,
                                  rl__alock_cb cb, void *cbarg)
{
    const revoke_args *a = arg;

    return rl__alock_revoke(al, l, a->reason, cb, cbarg);
}

redislock_err redislock_revoke(redislock_lock *l, const char *reason)
{
    revoke_args a = {reason};

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_revoke, &a, 0);
}
