/*
 * A private poll() loop that drives one event loop's share of the
 * library (loop.h) on the calling thread: the way the blocking calls run
 * the one engine (the lock layer's alock.h), as libcurl's easy interface
 * runs its multi interface with curl_multi_poll, and the way the
 * constructors ask the servers their first questions (pool.h). The loop
 * answers the two callbacks of loop.h (watch this fd, call me back in
 * this many ms) with a table of fds and one deadline, and rl__ploop_run()
 * polls them until the caller's operation says it is done.
 *
 * One thread at a time runs a loop; rl__ploop_wake() may be called from
 * any thread (a cancel): the running loop then calls the woken callback
 * on its own thread, where what it drives may be touched.
 */
#ifndef RL_PLOOP_H
#define RL_PLOOP_H

#include <stdatomic.h>

#include "loop.h"

typedef struct rl__ploop rl__ploop;

/* A private loop; *ops gets the callbacks to make the loop it is to
 * drive with (rl__loop_new, or through the lock layer's rl__alock_new),
 * which rl__ploop_drive then names. The driven loop is freed first. */
redislock_err rl__ploop_new(rl__ploop **out, rl__loop_ops *ops);
void rl__ploop_drive(rl__ploop *pl, rl__loop *lp);

/* NULL is a no-op. Not while it runs, and after the loop it drives. */
void rl__ploop_free(rl__ploop *pl);

/* Called on the running loop's thread after rl__ploop_wake(). */
typedef void (*rl__ploop_woken_cb)(void *arg);

/* Polls and dispatches until *done is non-zero (an operation's callback
 * sets it), calling woken(arg) (when not NULL) after each wake-up.
 * REDISLOCK_OK, or REDISLOCK_EIO when poll() fails (errno in the
 * detail): the operations are then still under way. */
redislock_err rl__ploop_run(rl__ploop *pl, const atomic_int *done,
                            rl__ploop_woken_cb woken, void *arg);

/* One poll() round that does not wait: what came while the loop was
 * idle (a server's close of an idle connection, a stray reply) reaches
 * the loop before a new operation sends on it. REDISLOCK_OK, or
 * REDISLOCK_EIO when poll() fails. */
redislock_err rl__ploop_refresh(rl__ploop *pl);

/* One round: poll() until an fd is ready, the loop's timer is due or
 * the loop is woken (then woken(arg), when not NULL), and dispatch. For a
 * loop that runs for as long as its owner decides (the keeper's), or
 * until what it waits for is done. REDISLOCK_OK, or REDISLOCK_EIO when
 * poll() fails. */
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
