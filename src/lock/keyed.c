/*
 * A lock's script requests with their keys (the layout each script
 * declares, rl__keyset_make), sent on an event loop's connection, and the
 * abandon request that makes sure a lost attempt holds nothing (keyed.h). Below
 * the handle's code (lock.c) and the engine (alock.c), which send such
 * requests.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "aroute.h"
#include "error.h"
#include "keyed.h"
#include "keys.h"
#include "topology.h"

/* Gives the script request q the keys its layout names for the lock k
 * (and req's void key), and for a set's script those of each lock of more
 * (nmore), kept in ks (rl__keyset_free after q's use). */
static redislock_err keyed(rl__request *q, const rl__lockname *k,
                           const rl__lockname *more, int nmore, const char *req,
                           rl__keyset *ks)
{
    if (rl__keyset_make_set(ks, q->s->keys, q->s->nkeys, q->s->each,
                            q->s->neach, k, more, nmore, req) != 0)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    q->nkeys = ks->n;
    q->keys = ks->k;
    q->klens = ks->len;
    return REDISLOCK_OK;
}

/* Whether a run of script s counts only on the master: a renewal or a
 * release that lands on a master the sentinels have replaced (it lives
 * on, a master by its own word, until they demote it) neither keeps nor
 * frees the lock, whose copy on the new master runs on (rl__request's
 * settle). So with an abandon, which on a loop gives back a lock the
 * guard refused as the blocking call's release does: settled, it is
 * what moves the next acquire off a replaced master, whose replicas
 * have left it and will never confirm a write there. */
static int settles(const rl__script *s)
{
    return s == &rl__script_extend || s == &rl__script_set_extend ||
           s == &rl__script_release || s == &rl__script_set_release ||
           s == &rl__script_abandon || s == &rl__script_set_abandon;
}

/* q as it is sent for the names k and more, into *out: its keys (kept
 * in ks) and whether it settles. */
static redislock_err as_sent(const rl__request *q, const rl__lockname *k,
                             const rl__lockname *more, int nmore,
                             const char *req, rl__request *out, rl__keyset *ks)
{
    *out = *q;
    out->settle = settles(q->s);
    return keyed(out, k, more, nmore, req, ks);
}

redislock_err rl__lock_keyed(redislock_lock *l, const char *req,
                             const rl__request *q, rl__request *out,
                             rl__keyset *ks)
{
    rl__lockname k = rl__lock_name(l);

    return as_sent(q, &k, l->more, l->nmore, req, out, ks);
}

/* Sends q with the keys of the names k and more (the first routes) on
 * the loop: on c, a connection to node at, or through a cluster's
 * redirections when rt is not NULL. The keys are copied on send. */
static redislock_err send_keyed(rl__aroute *rt, rl__aconn *c, rl__pool *at,
                                const rl__lockname *k, const rl__lockname *more,
                                int nmore, const char *req,
                                const rl__request *q, rl__aconn_cb cb,
                                void *arg)
{
    rl__request sent;
    rl__keyset ks;
    redislock_err err = as_sent(q, k, more, nmore, req, &sent, &ks);

    if (err != REDISLOCK_OK)
        return err;
    err = rt != NULL
              ? rl__aroute_send(rt, c, at, k->key, k->keylen, &sent, cb, arg)
              : rl__request_send_async(c, &sent, cb, arg);
    rl__keyset_free(&ks);
    return err;
}

redislock_err rl__lock_send_async(redislock_lock *l, rl__aroute *rt,
                                  rl__aconn *c, rl__pool *at, const char *req,
                                  rl__request *q, rl__aconn_cb cb, void *arg)
{
    rl__lockname k = rl__lock_name(l);

    return send_keyed(rt, c, at, &k, l->more, l->nmore, req, q, cb, arg);
}

redislock_err rl__lock_names_send_async(rl__aroute *rt, rl__aconn *c,
                                        rl__pool *at, const rl__lockname *names,
                                        int n, const char *req,
                                        const rl__request *q, rl__aconn_cb cb,
                                        void *arg)
{
    return send_keyed(rt, c, at, &names[0], names + 1, n - 1, req, q, cb, arg);
}

/* abandon.lua's request (set_abandon.lua's for a set of n), its
 * arguments' storage in a: the token voided for a minute past its TTL,
 * since a request held up in a network queue (TCP retransmissions) may
 * arrive that late. Its keys are the sender's to add. */
typedef struct rl__abandon_req {
    char ttl[24];
    const char *args[3];
    size_t lens[3];
    rl__request q;
} rl__abandon_req;

static void rl__abandon_request(int n, const char *token, const char *req,
                                int64_t ttl_ms, rl__abandon_req *a)
{
    a->args[0] = token;
    a->args[1] = a->ttl;
    a->args[2] = req;
    a->lens[0] = strlen(token);
    a->lens[1] =
        (size_t)snprintf(a->ttl, sizeof a->ttl, "%" PRId64, ttl_ms + 60000);
    a->lens[2] = strlen(req);
    a->q = (rl__request){.s = n > 1 ? &rl__script_set_abandon
                                    : &rl__script_abandon,
                         .nargs = 3,
                         .args = a->args,
                         .lens = a->lens};
}

redislock_err rl__abandon_send_async(rl__aroute *rt, rl__aconn *c, rl__pool *at,
                                     const rl__lockname *names, int n,
                                     const char *token, const char *req,
                                     int64_t ttl_ms, rl__aconn_cb cb, void *arg)
{
    rl__abandon_req a;

    rl__abandon_request(n, token, req, ttl_ms, &a);
    return rl__lock_names_send_async(rt, c, at, names, n, req, &a.q, cb, arg);
}

int rl__abandon_again(redislock_err err)
{
    return err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_EIO ||
           err == REDISLOCK_ECONNECT || err == REDISLOCK_ETRYLATER;
}
