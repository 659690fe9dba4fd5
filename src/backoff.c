#include "backoff.h"

int64_t rl__deadline(int64_t now_ms, int64_t wait_ms)
{
    if (wait_ms < 0 || wait_ms > RL_NO_DEADLINE - now_ms)
        return RL_NO_DEADLINE;
    return now_ms + wait_ms;
}

int64_t rl__backoff_pause(int64_t delay_ms, uint64_t r, int64_t holder_ttl_ms,
                          int64_t now_ms, int64_t deadline_ms)
{
    int64_t lo, span, pause;

    if (delay_ms < 1)
        delay_ms = 1;
    lo = delay_ms / 2;
    span = delay_ms - lo + 1;
    pause = lo + (int64_t)(r % (uint64_t)span);
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
