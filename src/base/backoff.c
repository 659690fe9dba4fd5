#include "backoff.h"

#include "redislock.h"

int64_t rl__deadline(int64_t now_ms, int64_t wait_ms)
{
    if (wait_ms < 0 || wait_ms > RL_NO_DEADLINE - now_ms)
        return RL_NO_DEADLINE;
    return now_ms + wait_ms;
}

int64_t rl__retry_delay(int kind, int64_t base_ms, int64_t cap_ms, int attempt)
{
    int64_t d = base_ms < 1 ? 1 : base_ms;

    if (attempt < 1)
        attempt = 1;
    if (kind == REDISLOCK_RETRY_LINEAR)
        d = attempt > cap_ms / d ? cap_ms : d * attempt;
    else if (kind == REDISLOCK_RETRY_EXPONENTIAL)
        /* Doubling stops at the cap, so there is no overflow. */
        while (--attempt > 0 && d < cap_ms)
            d = d > cap_ms / 2 ? cap_ms : 2 * d;
    if (kind != REDISLOCK_RETRY_CONSTANT && d > cap_ms)
        d = cap_ms;
    return d < 1 ? 1 : d;
}

int64_t rl__jitter(int64_t delay_ms, uint64_t r)
{
    int64_t lo, span;

    if (delay_ms < 1)
        delay_ms = 1;
    lo = delay_ms / 2;
    span = delay_ms - lo + 1;
    return lo + (int64_t)(r % (uint64_t)span);
}

int64_t rl__backoff_cap(int64_t pause, int64_t holder_ttl_ms, int64_t now_ms,
                        int64_t deadline_ms)
{
    /* A holder whose lease ends sooner frees the lock then at the latest. */
    if (holder_ttl_ms >= 0 && holder_ttl_ms < pause)
        pause = holder_ttl_ms;
    if (deadline_ms != RL_NO_DEADLINE) {
        int64_t left = deadline_ms - now_ms;
        if (left < pause)
            pause = left;
    }
    return pause < 0 ? 0 : pause;
}

int64_t rl__backoff_pause(int64_t delay_ms, uint64_t r, int64_t holder_ttl_ms,
                          int64_t now_ms, int64_t deadline_ms)
{
    return rl__backoff_cap(rl__jitter(delay_ms, r), holder_ttl_ms, now_ms,
                           deadline_ms);
}
