/*
 * A fair waiter's channel and what its messages say (wait.h).
 */
#include "wait.h"

#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "error.h"
#include "rand.h"
#include "reply.h"

const char *rl__wait_channel(redislock_lock *l, size_t *len)
{
    char tok[RL_TOKEN_HEXLEN + 1];

    if (l->chan == NULL && rl__token(tok) == 0)
        l->chan = rl__helper_join(l->base, l->baselen, "c:", tok, &l->chanlen);
    *len = l->chanlen;
    return l->chan;
}

int rl__wait_sharded(const redislock_lock *l)
{
    return rl__topo_cluster(rl__client_topo(l->client));
}

redislock_err rl__wait_told(redislock_lock *l, const char *req, const char *m,
                            rl__wait_result *res)
{
    size_t n = strlen(req);

    *res = RL_WAIT_TIMEOUT;
    if (strncmp(m, "handoff ", 8) == 0 && strncmp(m + 8, req, n) == 0 &&
        m[8 + n] == ' ') {
        char *end;
        long long seq = strtoll(m + 9 + n, &end, 10);
        long long fence = strtoll(end, &end, 10);
        long long lease = strtoll(end, &end, 10);
        if (*end != '\0' || lease <= 0)
            return rl__err(REDISLOCK_EPROTOCOL,
                           "bad hand-off message on the waiter's channel");
        if (seq == 0 || seq != l->wait_seq)
            return REDISLOCK_OK;
        if (rl__check_fence(fence, "hand-off") != REDISLOCK_OK)
            return REDISLOCK_EPROTOCOL;
        *res = RL_WAIT_HANDOFF;
        /* The hand-off made the key afresh (rl_hand): its life is the
         * token's. */
        rl__lock_granted(l, fence, fence);
        l->handoff_lease = lease;
    }
    return REDISLOCK_OK;
}
