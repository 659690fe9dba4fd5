/*
 * topology: which failures a waiter waits out while a key's node is
 * being replaced (rl__topo_failover_pause). Only a request that surely
 * did not run may be made again: a lost reply (it may have run) is
 * never a pause, on any topology.
 */
#include "test.h"
#include "topology.h"

/* The failures that may have run: their callers report them. */
static const redislock_err lost[] = {REDISLOCK_EIO, REDISLOCK_ETIMEDOUT,
                                     REDISLOCK_EPROTOCOL};

static void no_pause_for_lost_replies(const rl__topo *t)
{
    size_t i;

    for (i = 0; i < sizeof lost / sizeof lost[0]; i++)
        ASSERT_EQ_INT(rl__topo_failover_pause(t, lost[i]), 0);
    ASSERT_EQ_INT(rl__topo_failover_pause(t, REDISLOCK_OK), 0);
    ASSERT_EQ_INT(rl__topo_failover_pause(t, REDISLOCK_EHELD), 0);
}

void test_topology_failover_pause(void)
{
    rl__topo cluster = {.kind = RL_TOPO_CLUSTER};
    rl__topo sentinel = {.kind = RL_TOPO_SENTINEL};
    rl__topo single = {.kind = RL_TOPO_SINGLE};

    /* A cluster: a master that cannot be reached, or CLUSTERDOWN and
     * the other try-later refusals, until the replica is promoted. */
    ASSERT_GT(rl__topo_failover_pause(&cluster, REDISLOCK_ECONNECT), 0);
    ASSERT_GT(rl__topo_failover_pause(&cluster, REDISLOCK_ETRYLATER), 0);
    ASSERT_EQ_INT(rl__topo_failover_pause(&cluster, REDISLOCK_EREADONLY), 0);
    no_pause_for_lost_replies(&cluster);
    ASSERT_GT(rl__topo_failover_pause(&sentinel, REDISLOCK_ECONNECT), 0);
    ASSERT_GT(rl__topo_failover_pause(&sentinel, REDISLOCK_EREADONLY), 0);
    ASSERT_EQ_INT(rl__topo_failover_pause(&sentinel, REDISLOCK_ETRYLATER), 0);
    no_pause_for_lost_replies(&sentinel);
    /* A strict guard's refusal of a lock given back: a new master's
     * replicas may still be attaching. */
    ASSERT_GT(rl__topo_failover_pause(&cluster, REDISLOCK_ENOTDURABLE), 0);
    ASSERT_GT(rl__topo_failover_pause(&sentinel, REDISLOCK_ENOTDURABLE), 0);
    /* One server is not replaced: its failures are answers. */
    ASSERT_EQ_INT(rl__topo_failover_pause(&single, REDISLOCK_ECONNECT), 0);
    ASSERT_EQ_INT(rl__topo_failover_pause(&single, REDISLOCK_ENOTDURABLE), 0);
    no_pause_for_lost_replies(&single);
}
