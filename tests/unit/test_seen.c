/*
 * seen: how many replicas a write must reach when the guard waits for
 * every replica (REDISLOCK_REPLICAS_ALL), from INFO replication texts.
 * The count is per master replication ID, only grows while the ID stays
 * (a replica promoted away is still waited for), starts afresh with a
 * new ID (a promoted master), and comes down only after
 * RL_SEEN_FORGET_MS below it.
 */
#include <stdio.h>

#include "seen.h"
#include "test.h"

/* A master's INFO replication with id, online replicas and one still
 * syncing (not counted). */
static const char *info(char *buf, size_t size, const char *id, int online)
{
    int i, n = 0;

    n += snprintf(buf + n, size - (size_t)n,
                  "# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n",
                  online + 1);
    for (i = 0; i < online; i++)
        n += snprintf(buf + n, size - (size_t)n,
                      "slave%d:ip=127.0.0.1,port=%d,state=online,offset=9,"
                      "lag=0\r\n",
                      i, 7000 + i);
    n += snprintf(buf + n, size - (size_t)n,
                  "slave%d:ip=127.0.0.1,port=7999,state=wait_bgsave,"
                  "offset=0,lag=0\r\nmaster_failover_state:no-failover\r\n"
                  "master_replid:%s\r\nmaster_repl_offset:9\r\n",
                  online, id);
    return buf;
}

void test_seen_counts_grow_per_master(void)
{
    rl__seen *s = rl__seen_new();
    char b[1024];

    ASSERT(s != NULL);
    ASSERT_EQ_INT(rl__seen_guess(s), 1);
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "aaa", 2), 1000), 2);
    ASSERT_EQ_INT(rl__seen_guess(s), 2);
    /* The promoted replica left the old master: still waited for. */
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "aaa", 1), 2000), 2);
    /* The promoted one has a new ID: its own count, at least one. */
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "bbb", 0), 3000), 1);
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "bbb", 1), 3000), 1);
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "bbb", 2), 3000), 2);
    /* Below its count for longer than the horizon: it comes down. */
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "aaa", 1),
                                2000 + RL_SEEN_FORGET_MS - 1000),
                  2);
    ASSERT_EQ_INT(rl__seen_need(s, info(b, sizeof b, "aaa", 1),
                                1000 + RL_SEEN_FORGET_MS + 1),
                  1);
    rl__seen_free(s);
}

void test_seen_not_a_master(void)
{
    rl__seen *s = rl__seen_new();

    ASSERT_EQ_INT(rl__seen_need(s,
                                "# Replication\r\nrole:slave\r\n"
                                "master_replid:abc\r\n",
                                0),
                  -1);
    ASSERT_EQ_INT(rl__seen_need(s, "garbage", 0), -1);
    rl__seen_free(s);
    rl__seen_free(NULL);
}
