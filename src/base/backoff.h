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

/* The strategy's pause before jitter for attempt (1 for the pause after
 * the first attempt): kind is a redislock_retry; linear and exponential
 * growth stop at cap_ms. Never below 1. */
int64_t rl__retry_delay(int kind, int64_t base_ms, int64_t cap_ms, int attempt);

/* A pause drawn uniformly from [delay_ms/2, delay_ms] with the random r. */
int64_t rl__jitter(int64_t delay_ms, uint64_t r);

/* pause_ms capped at the holder's remaining TTL when it is known
 * (holder_ttl_ms >= 0) and at the time left before the deadline; never
 * negative. */
int64_t rl__backoff_cap(int64_t pause_ms, int64_t holder_ttl_ms, int64_t now_ms,
                        int64_t deadline_ms);

/* rl__backoff_cap(rl__jitter(delay_ms, r), ...): the constant strategy. */
int64_t rl__backoff_pause(int64_t delay_ms, uint64_t r, int64_t holder_ttl_ms,
                          int64_t now_ms, int64_t deadline_ms);

#endif
