/* The monotonic clock and sleeping, in one place so tests can reason about
 * them. Wall-clock time is never used for lock decisions. */
#ifndef RL_CLOCK_H
#define RL_CLOCK_H

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t rl__now_ms(void);

/* Microseconds on CLOCK_MONOTONIC. */
int64_t rl__now_us(void);

/* Sleeps ms milliseconds (restarting after signals). */
void rl__sleep_ms(int64_t ms);

#endif
