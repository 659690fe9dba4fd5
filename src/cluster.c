/* Placeholder until the cluster module lands: every call refuses. */
#include "cluster.h"

#include "error.h"

redislock_err rl__cluster_new(const char *const *seeds, size_t n,
                              const redislock_options *o, rl__cluster **out)
{
    (void)seeds;
    (void)n;
    (void)o;
    *out = NULL;
    return rl__err(REDISLOCK_EINVAL, "Redis Cluster is not supported yet");
}

void rl__cluster_free(rl__cluster *cl)
{
    (void)cl;
}

rl__pool *rl__cluster_route(rl__cluster *cl, const void *key, size_t len)
{
    (void)cl;
    (void)key;
    (void)len;
    return NULL;
}
