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
