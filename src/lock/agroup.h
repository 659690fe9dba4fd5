/*
 * A set of keys spread over several servers or hash slots (agroup.c has
 * the algorithm), on the engine's loop: an attempt, a release, an
 * extend or a renewal as a chain of requests to the set's groups. The
 * engine (alock.c) gives the way to send a request to the node of a
 * group's keys and to sweep a request's holds, and hears each chain's
 * outcome once by a callback, never from the call that starts it.
 * Single-threaded: every call and callback on the loop's thread.
 */
#ifndef RL_AGROUP_H
#define RL_AGROUP_H

#include "aconn.h"
#include "algo.h"

typedef struct rl__agroup_io {
    void *ctx;
    /* Sends q with the keys names (n of them, the first routing it to its
     * node), req the request whose void marker it takes (or NULL); cb
     * gets the reply or failure, never from here. */
    redislock_err (*send)(void *ctx, const rl__lockname *names, int n,
                          const char *req, const rl__request *q,
                          rl__aconn_cb cb, void *arg);
    /* Makes sure the request req of token holds nothing of the keys
     * names, now or when it arrives late (an abandon, tried again while
     * the node cannot be reached); with settle, a blocking call waits
     * for its first try before it returns. */
    void (*sweep)(void *ctx, const rl__lockname *names, int n,
                  const char *token, const char *req, int64_t ttl_ms,
                  int settle);
} rl__agroup_io;

typedef struct rl__agroup rl__agroup;

/* A chain's outcome (n: an owner script's answer, as rl__algo's owner
 * gives it). */
typedef void (*rl__agroup_cb)(void *arg, redislock_err err, long long n);

/* The attempt t of l: cb hears REDISLOCK_OK (l holds the set, its fence
 * and acks set), REDISLOCK_EHELD (refused; l's waiting fields name the
 * key to wait behind) or a failure (one group's outcome unknown: the
 * caller's abandon sweeps the set). t and its strings must live until
 * then. An error return: nothing was sent. */
redislock_err rl__agroup_attempt(const rl__agroup_io *io, redislock_lock *l,
                                 const rl__try *t, rl__agroup_cb cb, void *arg,
                                 rl__agroup **out);

/* The attempt t of l, whose reply was lost (or, settle, whose set must
 * be given back): swept on every group, now (io's sweep). */
void rl__agroup_abandon(const rl__agroup_io *io, redislock_lock *l,
                        const rl__try *t, int settle);

/* l's release or extend (s: rl__script_release or rl__script_extend,
 * arg2 its hold-after or TTL) on every group: cb hears what rl__algo's
 * owner gives for one server, with n; an extend's guards judged
 * (REDISLOCK_ENOTDURABLE). An error return: nothing was sent. */
redislock_err rl__agroup_owner(const rl__agroup_io *io, redislock_lock *l,
                               const rl__script *s, const char *arg2,
                               rl__agroup_cb cb, void *arg, rl__agroup **out);

/* The caller no longer wants the outcome, nor the chain to touch l or
 * use io again: cb is not called, replies still to come are dropped.
 * NULL is a no-op. */
void rl__agroup_drop(rl__agroup *gr);

#endif
