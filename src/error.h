/* The per-thread error detail behind redislock_errdetail(). */
#ifndef RL_ERROR_H
#define RL_ERROR_H

#include "redislock.h"

/* Formats the calling thread's detail text and returns err, so that a
 * failure can be reported in one statement: return rl__err(E, "...", ...). */
redislock_err rl__err(redislock_err err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
