/*
 * Timers for one event loop: a binary min-heap of deadlines, for the
 * event-loop API (issue 16), where one loop keeps thousands of locks'
 * waits, deadlines and renewals and hands the loop one timer, the
 * earliest. Timers are intrusive (embedded in what they time, found back
 * with their address), armed, re-armed and disarmed in O(log n); timers
 * due at the same moment fire in the order they were armed. Not thread
 * safe: the loop's thread only.
 */
#ifndef RL_TIMERS_H
#define RL_TIMERS_H

#include <stddef.h>
#include <stdint.h>

#include "redislock.h"

typedef struct rl__timer {
    int64_t at_us;  /* when it is due (CLOCK_MONOTONIC us) */
    uint64_t order; /* arming order: ties go to the earlier */
    size_t slot;    /* its place in the heap + 1; 0: not armed */
} rl__timer;

typedef struct rl__timers {
    rl__timer **heap;
    size_t n, cap;
    uint64_t armed; /* timers armed so far, for their order */
} rl__timers;

/* An empty heap (all zero is one too). */
void rl__timers_init(rl__timers *h);

/* Frees the heap's storage; the timers (the caller's) are left disarmed. */
void rl__timers_free(rl__timers *h);

/* Arms t for at_us, or moves it there when armed. Fails only for memory
 * (REDISLOCK_ENOMEM), t then as it was. */
redislock_err rl__timer_arm(rl__timers *h, rl__timer *t, int64_t at_us);

/* Disarms t; a timer not armed is left alone. */
void rl__timer_disarm(rl__timers *h, rl__timer *t);

int rl__timer_armed(const rl__timer *t);

/* The earliest armed timer, or NULL. */
rl__timer *rl__timers_first(const rl__timers *h);

/* Disarms and returns the earliest timer due by now_us, or NULL. */
rl__timer *rl__timers_due(rl__timers *h, int64_t now_us);

#endif
