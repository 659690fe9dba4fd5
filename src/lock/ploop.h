/*
 * A private poll() loop that drives a client's loop operations (alock.h)
 * on the calling thread: the way the blocking calls are to run the one
 * engine, as libcurl's easy interface runs its multi interface with
 * curl_multi_poll. The loop answers the engine's two callbacks (watch
 * this fd, call me back in this many ms) with a table of fds and one
 * deadline, and rl__ploop_run() polls them until the caller's operation
 * says it is done.
 *
 * One thread at a time runs a loop; rl__ploop_wake() may be called from
 * any thread (a cancel): the running loop then calls the woken callback
 * on its own thread, where the engine may be touched.
 */
#ifndef RL_PLOOP_H
#define RL_PLOOP_H

#include <stdatomic.h>

#include "alock.h"

typedef struct rl__ploop rl__ploop;

/* A loop for c's operations. c must outlive it. */
redislock_err rl__ploop_new(redislock_client *c, rl__ploop **out);

/* Ends every operation under way (their callbacks: REDISLOCK_ECANCELED)
 * and closes what the loop holds. NULL is a no-op. Not while it runs. */
void rl__ploop_free(rl__ploop *pl);

/* The engine the loop drives: start operations on it (rl__alock_*). */
rl__alock *rl__ploop_alock(rl__ploop *pl);

/* Called on the running loop's thread after rl__ploop_wake(). */
typedef void (*rl__ploop_woken_cb)(void *arg);

/* Polls and dispatches until *done is non-zero (an operation's callback
 * sets it), calling woken(arg) (when not NULL) after each wake-up.
 * REDISLOCK_OK, or REDISLOCK_EIO when poll() fails (errno in the
 * detail): the operations are then still under way. */
redislock_err rl__ploop_run(rl__ploop *pl, const atomic_int *done,
                            rl__ploop_woken_cb woken, void *arg);

/* Polls and dispatches until the engine waits for no request's answer
 * (rl__alock_busy): what an operation sent without waiting for it. Each
 * such request has its deadline, so this ends. REDISLOCK_OK, or
 * REDISLOCK_EIO when poll() fails. */
redislock_err rl__ploop_settle(rl__ploop *pl);

/* One poll() round that does not wait: what came while the loop was
 * idle (a server's close of an idle connection, a stray reply) reaches
 * the engine before a new operation sends on it, as the blocking
 * connections' stale check does. REDISLOCK_OK, or REDISLOCK_EIO when
 * poll() fails. */
redislock_err rl__ploop_refresh(rl__ploop *pl);

/* One round: poll() until an fd is ready, the engine's timer is due or
 * the loop is woken (then woken(arg), when not NULL), and dispatch. For a
 * loop that runs for as long as its owner decides (the keeper's).
 * REDISLOCK_OK, or REDISLOCK_EIO when poll() fails. */
redislock_err rl__ploop_round(rl__ploop *pl, rl__ploop_woken_cb woken,
                              void *arg);

/* The loop always polls, even when one reply is all it awaits (which a
 * call's loop reads blocking): a wake-up must reach a loop that serves
 * other threads (the keeper's) without waiting for that reply. */
void rl__ploop_polls(rl__ploop *pl);

/* From any thread: makes the running (or next) rl__ploop_run call its
 * woken callback. Async-signal-safe. */
void rl__ploop_wake(rl__ploop *pl);

#endif
