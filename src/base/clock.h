/* The monotonic clock and sleeping, in one place so tests can reason about
 * them. Wall-clock time is never used for lock decisions. */
#ifndef RL_CLOCK_H
#define RL_CLOCK_H

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t rl__now_ms(void);

/* Microseconds on CLOCK_MONOTONIC. */
int64_t rl__now_us(void);

#endif
