/*
 * backoff: the pure pause and deadline maths of the acquire loop. Pauses
 * must stay in [delay/2, delay], never outlast the holder's TTL or the
 * deadline, and never go negative, whatever the inputs; the growing retry
 * strategies stop at their cap without overflowing.
 */
#include <limits.h>
#include <stdint.h>

#include "backoff.h"
#include "rand.h"
#include "test.h"

/* The holder's TTL is unknown. */
#define NO_TTL (-1)

void test_backoff_deadline(void)
{
    ASSERT_EQ_INT(rl__deadline(1000, 0), 1000);
    ASSERT_EQ_INT(rl__deadline(1000, 1), 1001);
    ASSERT_EQ_INT(rl__deadline(1000, 2500), 3500);
    ASSERT_EQ_INT(rl__deadline(0, 0), 0);
    /* A negative wait is forever. */
    ASSERT_EQ_INT(rl__deadline(1000, REDISLOCK_WAIT_FOREVER), RL_NO_DEADLINE);
    ASSERT_EQ_INT(rl__deadline(1000, -12345), RL_NO_DEADLINE);
    ASSERT_EQ_INT(rl__deadline(1000, INT64_MIN), RL_NO_DEADLINE);
    /* Huge waits saturate rather than overflow (UBSan would see it). */
    ASSERT_EQ_INT(rl__deadline(1000, INT64_MAX), RL_NO_DEADLINE);
    ASSERT_EQ_INT(rl__deadline(INT64_MAX - 10, 11), RL_NO_DEADLINE);
    ASSERT_EQ_INT(rl__deadline(INT64_MAX - 10, 10), INT64_MAX);
    ASSERT_EQ_INT(rl__deadline(INT64_MAX - 10, 9), INT64_MAX - 1);
}

/* Pause for delay d with random value r, nothing capping it. */
static int64_t free_pause(int64_t d, uint64_t r)
{
    return rl__backoff_pause(d, r, NO_TTL, 5000, RL_NO_DEADLINE);
}

void test_backoff_pause_jitter_range(void)
{
    static const int64_t delays[] = {1, 2, 3, 7, 10, 100, 101, 1000, 65537};
    int64_t d, p, lo_seen, hi_seen;
    size_t i;
    uint64_t r;
    int k;

    for (i = 0; i < sizeof delays / sizeof delays[0]; i++) {
        d = delays[i];
        lo_seen = INT64_MAX;
        hi_seen = INT64_MIN;
        /* Small r values walk the whole span; random ones sample it. */
        for (k = 0; k < 20000; k++) {
            r = k < 10000 ? (uint64_t)k : rl__jitter_rand();
            p = free_pause(d, r);
            ASSERT_GE(p, d / 2);
            ASSERT_LE(p, d);
            lo_seen = p < lo_seen ? p : lo_seen;
            hi_seen = p > hi_seen ? p : hi_seen;
        }
        /* Both ends of [d/2, d] are reachable. */
        if (d <= 10000) {
            ASSERT_EQ_INT(lo_seen, d / 2);
            ASSERT_EQ_INT(hi_seen, d);
        }
    }
    /* Extreme random values stay in range too. */
    ASSERT_GE(free_pause(100, UINT64_MAX), 50);
    ASSERT_LE(free_pause(100, UINT64_MAX), 100);
    ASSERT_GE(free_pause(INT64_MAX, UINT64_MAX), INT64_MAX / 2);
    ASSERT_LE(free_pause(INT64_MAX, 0), INT64_MAX);
}

void test_backoff_pause_capped_by_holder_ttl(void)
{
    int k;

    /* A holder whose lease ends in 10 ms frees the lock by then. */
    for (k = 0; k < 1000; k++) {
        uint64_t r = rl__jitter_rand();
        ASSERT_LE(rl__backoff_pause(100, r, 10, 0, RL_NO_DEADLINE), 10);
        ASSERT_EQ_INT(rl__backoff_pause(10000, r, 0, 0, RL_NO_DEADLINE), 0);
        ASSERT_EQ_INT(rl__backoff_pause(10000, r, 1, 0, RL_NO_DEADLINE), 1);
    }
    /* A TTL longer than the pause does not lengthen it. */
    ASSERT_EQ_INT(rl__backoff_pause(100, 0, 5000, 0, RL_NO_DEADLINE), 50);
    /* Negative TTLs (free, no expiry) mean "unknown": no cap. */
    ASSERT_EQ_INT(rl__backoff_pause(100, 0, REDISLOCK_TTL_FREE, 0,
                                    RL_NO_DEADLINE),
                  50);
    ASSERT_EQ_INT(rl__backoff_pause(100, 0, REDISLOCK_TTL_NO_EXPIRY, 0,
                                    RL_NO_DEADLINE),
                  50);
}

void test_backoff_pause_capped_by_deadline(void)
{
    int k;

    for (k = 0; k < 1000; k++) {
        uint64_t r = rl__jitter_rand();
        /* 30 ms left before the deadline. */
        ASSERT_LE(rl__backoff_pause(100, r, NO_TTL, 1000, 1030), 30);
        /* Both caps: the smaller wins. */
        ASSERT_LE(rl__backoff_pause(100, r, 20, 1000, 1030), 20);
        ASSERT_LE(rl__backoff_pause(100, r, 40, 1000, 1015), 15);
        /* At the deadline: try now, once more. */
        ASSERT_EQ_INT(rl__backoff_pause(100, r, NO_TTL, 1030, 1030), 0);
    }
    /* A deadline far away does not cap. */
    ASSERT_EQ_INT(rl__backoff_pause(100, 0, NO_TTL, 1000, 900000), 50);
}

void test_backoff_pause_never_negative(void)
{
    static const int64_t delays[] = {INT64_MIN, -100, -1, 0, 1, 2, 100};
    size_t i;
    int64_t p;

    /* Past the deadline, with any delay: 0, not a negative pause. */
    for (i = 0; i < sizeof delays / sizeof delays[0]; i++) {
        p = rl__backoff_pause(delays[i], 12345, NO_TTL, 2000, 1000);
        ASSERT_EQ_INT(p, 0);
        p = rl__backoff_pause(delays[i], UINT64_MAX, NO_TTL, INT64_MAX, 0);
        ASSERT_EQ_INT(p, 0);
        /* Nonsense delays still give a small non-negative pause. */
        p = rl__backoff_pause(delays[i], 777, NO_TTL, 0, RL_NO_DEADLINE);
        ASSERT_GE(p, 0);
        ASSERT_LE(p, delays[i] > 1 ? delays[i] : 1);
    }
}

void test_backoff_pause_wait_forever(void)
{
    int64_t deadline = rl__deadline(1000, REDISLOCK_WAIT_FOREVER);
    int64_t now, p;
    int k;

    /* Waiting forever, the deadline never caps, even late in time. */
    for (k = 0; k < 1000; k++) {
        now = k % 2 ? 1000 : INT64_MAX - 1;
        p = rl__backoff_pause(200, rl__jitter_rand(), NO_TTL, now, deadline);
        ASSERT_GE(p, 100);
        ASSERT_LE(p, 200);
        p = rl__backoff_pause(200, rl__jitter_rand(), 42, now, deadline);
        ASSERT_LE(p, 42);
    }
}

/* The linear and exponential strategies, before jitter. */
static int64_t want_delay(int kind, int64_t base, int64_t cap, int attempt)
{
    int64_t d = base;
    int i;

    if (kind == REDISLOCK_RETRY_LINEAR)
        d = base * attempt;
    for (i = 1; kind == REDISLOCK_RETRY_EXPONENTIAL && i < attempt; i++)
        d = d >= cap ? cap : 2 * d;
    return d > cap ? cap : d;
}

void test_backoff_retry_delay_growth(void)
{
    int a;

    for (a = 1; a <= 64; a++) {
        ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_CONSTANT, 100, 2000, a),
                      100);
        ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_LINEAR, 100, 2000, a),
                      want_delay(REDISLOCK_RETRY_LINEAR, 100, 2000, a));
        ASSERT_EQ_INT(
            rl__retry_delay(REDISLOCK_RETRY_EXPONENTIAL, 100, 2000, a),
            want_delay(REDISLOCK_RETRY_EXPONENTIAL, 100, 2000, a));
    }
    ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_EXPONENTIAL, 100, 2000, 4),
                  800);
    /* Attempts below 1 count as the first; delays below 1 ms as 1 ms. */
    ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_LINEAR, 100, 2000, 0), 100);
    ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_EXPONENTIAL, 100, 2000, -7),
                  100);
    ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_CONSTANT, 0, 2000, 3), 1);
    ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_CONSTANT, -5, 2000, 3), 1);
    /* Growth far past the cap neither overflows nor passes it. */
    ASSERT_EQ_INT(rl__retry_delay(REDISLOCK_RETRY_LINEAR, 100, 2000, INT_MAX),
                  2000);
    ASSERT_EQ_INT(
        rl__retry_delay(REDISLOCK_RETRY_EXPONENTIAL, 100, 2000, INT_MAX), 2000);
    ASSERT_EQ_INT(
        rl__retry_delay(REDISLOCK_RETRY_EXPONENTIAL, 3, INT64_MAX, INT_MAX),
        INT64_MAX);
    ASSERT_EQ_INT(
        rl__retry_delay(REDISLOCK_RETRY_LINEAR, INT64_MAX / 2, INT64_MAX, 3),
        INT64_MAX);
}
