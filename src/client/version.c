#include "redislock.h"

#define RL_STR_(x) #x
#define RL_XSTR_(x) RL_STR_(x)

const char *redislock_version(void)
{
    return RL_XSTR_(REDISLOCK_VERSION_MAJOR) "." RL_XSTR_(
        REDISLOCK_VERSION_MINOR) "." RL_XSTR_(REDISLOCK_VERSION_PATCH);
}

int redislock_has_tls(void)
{
#ifdef REDISLOCK_HAVE_TLS
    return 1;
#else
    return 0;
#endif
}
