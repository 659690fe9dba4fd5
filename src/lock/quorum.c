#include "quorum.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

void rl__round_free(rl__round *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        rl__reply_free(r->reply[i]);
        r->reply[i] = NULL;
    }
}

/* Server i's outcome in r, its detail set. */
static redislock_err
outcome_of(const rl__round *r, size_t i,
           redislock_err (*answer)(const rl__reply *, void *), void *arg)
{
    if (r->reply[i] != NULL)
        return answer(r->reply[i], arg);
    return rl__err(r->err[i], "server %zu of %zu: %s", i + 1, r->n,
                   redislock_strerror(r->err[i]));
}

redislock_err rl__round_majority(const rl__round *r,
                                 redislock_err (*answer)(const rl__reply *r,
                                                         void *arg),
                                 void *arg, const char *what)
{
    redislock_err got[RL_MAX_QUORUM];
    size_t i, j, same;

    for (i = 0; i < r->n; i++)
        got[i] = outcome_of(r, i, answer, arg);
    for (i = 0; i < r->n; i++) {
        for (same = 0, j = 0; j < r->n; j++)
            same += got[j] == got[i];
        if (same >= RL_QUORUM(r->n))
            /* Its detail again: a later server's answer replaced it. */
            return outcome_of(r, i, answer, arg);
    }
    return rl__err(REDISLOCK_ENOQUORUM,
                   "%s: no outcome on a majority of the %zu servers (%zu "
                   "needed)",
                   what, r->n, (size_t)RL_QUORUM(r->n));
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
