/*
 * The one-server lock algorithm: one server holds each key (single,
 * sharded and cluster clients; the topology says which). An attempt is
 * one script on that server, a release wakes its waiters, and a request
 * whose reply was lost is abandoned by the watchdog's janitor.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "algo.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "reply.h"
#include "wait.h"
#include "watchdog.h"

/* The acquire or fair script: {1, holds, fence} taken, {0, pttl, wakes}
 * held by another. One round trip when the lock is free. A fair waiter
 * names the channel a release tells it of a hand-off on. */
static redislock_err attempt(redislock_lock *l, const rl__try *t,
                             int64_t *sent_us)
{
    char ttl[24], mark[24];
    const char *args[8] = {t->id, ttl, t->fmt, t->meta, mark, t->req};
    size_t lens[8] = {strlen(t->id),   0, strlen(t->fmt),
                      strlen(t->meta), 0, strlen(t->req)};
    rl__acquired a;
    rl__reply *r;
    redislock_err err;

    lens[1] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, t->ttl_ms);
    lens[4] = (size_t)snprintf(mark, sizeof mark, "%" PRId64, t->mark_ms);
    if (t->fair) {
        if ((args[6] = rl__wait_channel(l, &lens[6])) == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        args[7] = rl__wait_sharded(l) ? "S" : "P";
        lens[7] = 1;
    }
    *sent_us = rl__now_us();
    err = rl__lock_write_script(
        l, 0, t->fair ? &rl__script_fair : &rl__script_acquire, t->req,
        t->fair ? 8 : 6, args, lens, &r);
    if (err == REDISLOCK_OK) {
        err = rl__reply_acquired(r, &a);
        rl__reply_free(r);
    }
    if (err == REDISLOCK_OK && a.taken) {
        l->fence = a.fence;
    } else if (err == REDISLOCK_OK) {
        l->holder_ttl = a.holder_ttl;
        l->holder_silent = a.silent;
        l->wait_seq = a.seq;
        err = REDISLOCK_EHELD;
    }
    rl__lock_set_outcomes(l, &err, 1);
    return err;
}

/* The attempt must not hold the lock, now or if the request arrives
 * late, whatever the lock's format: the client's watchdog thread sees to
 * it, retrying until the server answers, so the caller's call is not made
 * any longer (and redislock_client_free() finishes it first). */
static void abandon(redislock_lock *l, const rl__try *t)
{
    rl__watchdog *wd;

    if (rl__client_watchdog(l->client, &wd) == REDISLOCK_OK)
        rl__janitor_abandon(wd, rl__client_topo(l->client), NULL, l->key,
                            l->keylen, l->base, l->baselen, t->id, t->req,
                            t->ttl_ms);
}

static redislock_err owner(redislock_lock *l, const rl__script *s,
                           const char *arg2, int64_t timeout_ms, long long *n)
{
    const char *args[3];
    size_t lens[3];
    rl__reply *r;
    redislock_err err;

    rl__lock_owner_args(l, arg2, args, lens);
    /* An extend writes the lease: the replica-sync guard follows it. */
    err = s == &rl__script_extend
              ? rl__lock_write_script(l, timeout_ms, s, NULL, 3, args, lens, &r)
              : rl__lock_script(l, timeout_ms, s, NULL, 3, args, lens, &r);
    rl__lock_set_outcomes(l, &err, 1);
    if (err != REDISLOCK_OK)
        return err;
    err = rl__reply_owner(r, s->name, n);
    rl__reply_free(r);
    return err;
}

static redislock_err ttl(redislock_lock *l, int64_t *ttl_ms)
{
    const char *argv[2] = {"PTTL", l->key};
    size_t lens[2] = {4, l->keylen};
    rl__cmd cmd = {2, argv, lens};
    rl__reply *r;
    redislock_err err;

    if ((err = rl__lock_command(l, 1, &cmd, &r)) != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_INTEGER)
        err = rl__err(REDISLOCK_EPROTOCOL, "PTTL answered type %d", r->type);
    else
        *ttl_ms = r->integer;
    rl__reply_free(r);
    return err;
}

static redislock_err inspect(redislock_client *c, rl__pool *p, size_t at,
                             const char *key, size_t keylen, const char *base,
                             size_t baselen, redislock_info *info, char **buf,
                             size_t *first)
{
    rl__lockname k = {key, keylen, base, baselen};
    rl__request q = {.s = &rl__script_inspect};
    rl__reply *r;
    redislock_err err = rl__lock_run(rl__client_topo(c), p, &k, NULL, &q, &r);

    *first = at;
    if (err != REDISLOCK_OK)
        return err;
    err = rl__inspect_decode(r, info, buf);
    rl__reply_free(r);
    return err;
}

const rl__algo rl__algo_one = {1,       0,     NULL, NULL,   attempt,
                               abandon, owner, ttl,  inspect};
