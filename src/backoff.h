/* Pure pause and deadline arithmetic for the acquire loop. No clock reads,
 * no sleeping, no randomness of its own: the caller passes them in. */
#ifndef RL_BACKOFF_H
#define RL_BACKOFF_H

#include <stdint.h>

/* A deadline that never comes. */
#define RL_NO_DEADLINE INT64_MAX

/* The deadline for a wait of wait_ms starting at now_ms: now_ms itself for a
 * wait of 0, RL_NO_DEADLINE for a negative wait (forever). */
int64_t rl__deadline(int64_t now_ms, int64_t wait_ms);

/*
 * The pause before the next attempt: drawn uniformly from
 * [delay_ms/2, delay_ms] using the random value r, then capped at the
 * holder's remaining TTL when it is known (holder_ttl_ms >= 0) and at the
 * time left before the deadline. Never negative; 0 means "try now".
 */
int64_t rl__backoff_pause(int64_t delay_ms, uint64_t r, int64_t holder_ttl_ms,
                          int64_t now_ms, int64_t deadline_ms);

#endif
