#include "error.h"

#include <stdarg.h>
#include <stdio.h>

/* Per thread, because one client serves many threads at once. */
static _Thread_local char detail[512];

redislock_err rl__err(redislock_err err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return err;
}

const char *redislock_errdetail(void)
{
    return detail;
}

const char *redislock_strerror(redislock_err err)
{
    switch (err) {
#define RL_STRERROR_(name, value, msg)                                         \
    case REDISLOCK_##name:                                                     \
        return msg;
        REDISLOCK_ERR_MAP(RL_STRERROR_)
#undef RL_STRERROR_
    default:
        return "unknown error code";
    }
}

const char *redislock_errname(redislock_err err)
{
    switch (err) {
#define RL_ERRNAME_(name, value, msg)                                          \
    case REDISLOCK_##name:                                                     \
        return "REDISLOCK_" #name;
        REDISLOCK_ERR_MAP(RL_ERRNAME_)
#undef RL_ERRNAME_
    default:
        return "REDISLOCK_UNKNOWN";
    }
}
