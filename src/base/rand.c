#include "rand.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "clock.h"

int rl__random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int rl__token(char out[RL_TOKEN_HEXLEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[RL_TOKEN_BYTES];
    size_t i;

    if (rl__random_bytes(raw, sizeof raw) != 0)
        return -1;
    for (i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[RL_TOKEN_HEXLEN] = '\0';
    return 0;
}

int rl__lock_token_as(char out[RL_LOCK_TOKEN_LEN + 1], int native)
{
    size_t n = sizeof RL_LOCK_TOKEN_PREFIX - 1;

    memcpy(out, native ? RL_NATIVE_TOKEN_PREFIX : RL_LOCK_TOKEN_PREFIX, n);
    return rl__token(out + n);
}

int rl__lock_token(char out[RL_LOCK_TOKEN_LEN + 1])
{
    return rl__lock_token_as(out, 0);
}

int rl__token_native(const char *t)
{
    return strncmp(t, RL_NATIVE_TOKEN_PREFIX,
                   sizeof RL_NATIVE_TOKEN_PREFIX - 1) == 0 &&
           strlen(t) == RL_LOCK_TOKEN_LEN;
}

uint64_t rl__jitter_rand(void)
{
    static _Thread_local uint64_t state;
    uint64_t x;

    if (state == 0 && rl__random_bytes(&state, sizeof state) != 0)
        state = (uint64_t)rl__now_us() | 1;
    if (state == 0)
        state = 0x9e3779b97f4a7c15ULL;
    /* xorshift64*: fast, and good enough to spread retry times. */
    x = state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    state = x;
    return x * 0x2545f4914f6cdd1dULL;
}
