#include "reply.h"

#include <limits.h>
#include <string.h>

#include "error.h"

redislock_err rl__check_fence(long long fence, const char *what)
{
    if (fence > 0)
        return REDISLOCK_OK;
    return rl__err(REDISLOCK_EPROTOCOL,
                   "%s: the server gave fencing token %lld, which is not "
                   "positive; is the key's fence counter (the helper key "
                   "ending in \":rl-fence\") written by something else?",
                   what, fence);
}

static int integer(const rl__reply *r)
{
    return r->type == REDIS_REPLY_INTEGER;
}

int rl__acquire_bare(const rl__script *s, const char *fmt)
{
    return s == &rl__script_share_acquire || s == &rl__script_set_acquire ||
           s == &rl__script_set_take ||
           (s == &rl__script_acquire && strcmp(fmt, "plain") == 0);
}

redislock_err rl__reply_acquired(const rl__reply *r, int bare, rl__acquired *a)
{
    const rl__reply *const *e = (const rl__reply *const *)r->element;

    memset(a, 0, sizeof *a);
    if (bare && integer(r)) {
        /* A plain lock taken: its fence, negated when someone waits. */
        a->taken = 1;
        a->holds = 1;
        a->waiters = r->integer < 0;
        a->fence =
            r->integer < 0 && r->integer > LLONG_MIN ? -r->integer : r->integer;
        return rl__check_fence(a->fence, "acquire");
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || !integer(e[0]) ||
        !integer(e[1]) ||
        (e[0]->integer == 1 &&
         (r->elements < 3 || r->elements > 5 || !integer(e[2]) ||
          (r->elements >= 4 && !integer(e[3])) ||
          (r->elements == 5 && !integer(e[4])))))
        return rl__err(REDISLOCK_EPROTOCOL, "acquire script answered type %d",
                       r->type);
    a->taken = e[0]->integer == 1;
    if (a->taken) {
        a->holds = e[1]->integer;
        a->fence = e[2]->integer;
        a->gen = r->elements >= 4 ? e[3]->integer : 0;
        a->waiters = r->elements == 5 && e[4]->integer == 1;
        return rl__check_fence(a->fence, "acquire");
    }
    a->holder_ttl = e[1]->integer;
    /* A reply without the flag counts as a holder that wakes. */
    a->silent = r->elements >= 3 && integer(e[2]) && e[2]->integer == 0;
    if (r->elements >= 4 && integer(e[3]))
        a->seq = e[3]->integer;
    return REDISLOCK_OK;
}

redislock_err rl__reply_owner(const rl__reply *r, const char *what,
                              long long *n)
{
    /* An extend of a revoked lock: {1, reason} (lib.lua's rl_extend). */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        integer(r->element[0]) && r->element[0]->integer == 1 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        *n = 1;
        if (r->element[1]->len == 0)
            return rl__err(REDISLOCK_EREVOKED,
                           "revoked, no reason given; the lease was "
                           "lengthened: finish and release it");
        return rl__err(REDISLOCK_EREVOKED,
                       "revoked: '%.*s'; the lease was lengthened: finish "
                       "and release it",
                       (int)r->element[1]->len, r->element[1]->str);
    }
    if (!integer(r))
        return rl__err(REDISLOCK_EPROTOCOL, "%s script answered type %d", what,
                       r->type);
    if ((*n = r->integer) == 0)
        return rl__err(REDISLOCK_EEXPIRED, "lock had expired and is free");
    if (*n < 0)
        return rl__err(REDISLOCK_ELOST, "lock is now held by another owner");
    return REDISLOCK_OK;
}
