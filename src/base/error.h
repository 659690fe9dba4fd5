/* The per-thread error detail behind redislock_errdetail(). */
#ifndef RL_ERROR_H
#define RL_ERROR_H

#include "redislock.h"

/* Formats the calling thread's detail text and returns err, so that a
 * failure can be reported in one statement: return rl__err(E, "...", ...). */
redislock_err rl__err(redislock_err err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Classifies an error reply (said, the server's text) to the call named
 * what: sets the detail, which names the problem and the fix, and returns
 * the code. The one place where a server's error becomes a code. */
redislock_err rl__err_reply(const char *what, const char *said);

#endif
