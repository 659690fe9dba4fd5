/*
 * The replicas a master has been seen with, for the replica-sync guard
 * that waits for every replica (REDISLOCK_REPLICAS_ALL). A master is
 * known by its replication ID (INFO replication's master_replid), which
 * a promoted replica changes: the count of a master only grows, so that
 * a replica that stops following it (promoted elsewhere, in a failover
 * the master has not heard of) is still waited for, and the writes it
 * lacks are refused rather than granted. A count comes down only after
 * it was not reached for RL_SEEN_FORGET_MS, longer than Sentinel's
 * default horizon for promoting a disconnected replica (ten times a
 * down-after of 30 s). Shared by a client's threads.
 */
#ifndef RL_SEEN_H
#define RL_SEEN_H

#include <stdint.h>

#define RL_SEEN_FORGET_MS 300000

typedef struct rl__seen rl__seen;

/* NULL when out of memory. */
rl__seen *rl__seen_new(void);
void rl__seen_free(rl__seen *s);

/* How many replicas to WAIT for before a master's count is read: the
 * last count found, at least 1. */
int rl__seen_guess(rl__seen *s);

/* The replicas a write must reach on the master whose INFO replication
 * text is info, taken before the write: the most it was seen with
 * (online replicas, counted now too), at least 1; -1 when info is not a
 * master's. */
int rl__seen_need(rl__seen *s, const char *info, int64_t now_ms);

#endif
