#include "clock.h"

#include <errno.h>
#include <time.h>

int64_t rl__now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rl__now_ms(void)
{
    return rl__now_us() / 1000;
}
