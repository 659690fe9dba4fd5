/*
 * The Redlock algorithm on a lock handle: an acquire attempt decided by a
 * majority within the lease's validity and undone everywhere when it
 * fails, and the owner's extend and release sent to every server. The
 * wait loop around attempts (acquire.c) and the watchdog are the ones
 * single-server locks use.
 */
#ifndef RL_REDLOCK_H
#define RL_REDLOCK_H

#include "lock.h"
#include "script.h"

/* One attempt: the acquire script with id (token or owner id) and
 * request id req (see acquire.lua) in format fmt on every server at once.
 * REDISLOCK_OK with l->fence set (the largest of the majority's) and
 * *sent_us the moment before the first send; otherwise undone on every server,
 * and REDISLOCK_EHELD (a majority answered, too few granted: l->holder_ttl
 * set), REDISLOCK_ENOQUORUM (too few answered) or REDISLOCK_ETIMEDOUT (a
 * majority granted, but too late to leave any validity). */
redislock_err rl__redlock_attempt(redislock_lock *l, const char *id,
                                  const char *req, const char *fmt,
                                  int64_t ttl_ms, int64_t drift_ms,
                                  const char *meta, int64_t *sent_us);

/* An owner script (release or extend, see owner_script in lock.c) on
 * every server: *n is its answer where a majority agree. For extend,
 * arg2 is the TTL and the majority must answer within the validity it
 * grants. timeout_ms > 0 bounds each server's wait further. */
redislock_err rl__redlock_owner(redislock_lock *l, const rl__script *s,
                                const char *arg2, int64_t timeout_ms,
                                long long *n);

#endif
