#include "quorum.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

/* Borrows one connection per server: idle ones at once, the others
 * opened in parallel, each open's steps bounded by the round's
 * per-server timeout (a server never reached, or reached but stopped,
 * costs the round that much and no more, as it does once connected); a
 * server that cannot be reached in time fails here and takes no part. */
static void borrow_all(redislock_client *c, const int *only, int64_t timeout_ms,
                       rl__round *r, rl__conn **conns)
{
    rl__pool *pools[RL_MAX_QUORUM];
    int want[RL_MAX_QUORUM];
    size_t i;

    for (i = 0; i < r->n; i++) {
        conns[i] = NULL;
        pools[i] = rl__topo_each(rl__client_topo(c), i);
        want[i] = (only == NULL || only[i]) &&
                  !rl__pool_take_idle(pools[i], &conns[i]);
    }
    rl__pools_borrow(pools, r->n, want, timeout_ms, conns, r->err, r->detail);
}

void rl__quorum_script(redislock_client *c, const int *only, int64_t timeout_ms,
                       const rl__script *s, const rl__lockname *k,
                       const char *req, int nargs, const char **args,
                       const size_t *lens, rl__round *out)
{
    rl__conn *conns[RL_MAX_QUORUM];
    rl__keyset ks;
    rl__request q = {.s = s, .nargs = nargs, .args = args, .lens = lens};
    size_t i;

    memset(out, 0, sizeof *out);
    out->n = rl__client_topo(c)->npools;
    if (rl__keyset_make(&ks, s->keys, s->nkeys, k, req) != 0) {
        for (i = 0; i < out->n; i++)
            if (only == NULL || only[i])
                out->err[i] = REDISLOCK_ENOMEM;
        return;
    }
    q.nkeys = ks.n;
    q.keys = ks.k;
    q.klens = ks.len;
    borrow_all(c, only, timeout_ms, out, conns);
    rl__request_par(conns, out->n, &q, timeout_ms, out);
    for (i = 0; i < out->n; i++)
        if (conns[i] != NULL)
            rl__pool_give_back(rl__topo_each(rl__client_topo(c), i), conns[i]);
    rl__keyset_free(&ks);
}

void rl__round_free(rl__round *r)
{
    rl__replies_free(r);
}

static const char *outcome_word(redislock_err e)
{
    switch (e) {
    case REDISLOCK_OK:
        return "granted";
    case REDISLOCK_EHELD:
        return "busy";
    case REDISLOCK_EEXPIRED:
        return "gone";
    case REDISLOCK_ELOST:
        return "other owner";
    case REDISLOCK_ECONNECT:
        return "down";
    case REDISLOCK_ETIMEDOUT:
        return "timeout";
    default:
        return "error";
    }
}

void rl__outcomes_describe(redislock_client *c, const redislock_err *o,
                           size_t n, char *buf, size_t len)
{
    size_t i, used = 0;
    int w;

    buf[0] = '\0';
    for (i = 0; i < n && used < len; i++) {
        w = snprintf(buf + used, len - used, "%s%s %s", i ? ", " : "",
                     rl__topo_each(rl__client_topo(c), i)->name,
                     outcome_word(o[i]));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
