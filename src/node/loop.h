/*
 * One event loop's share of the library: the non-blocking connections
 * and the timers of everything run on that loop, behind the two
 * callbacks an application gives (libcurl's multi-socket model): "watch
 * this fd for these events" and "call me back in this many ms". The
 * application hands events back with rl__loop_io and its timer with
 * rl__loop_timeout. The base of the event-loop API (redislock_loop(3),
 * through alock.h).
 *
 * Each connection's deadline is a timer of the loop's heap, so one
 * application timer serves every connection and every user timer
 * (waits, renewals). Single-threaded: the loop's thread only.
 */
#ifndef RL_LOOP_H
#define RL_LOOP_H

#include <stdint.h>

#include "aconn.h"
#include "timers.h"

typedef struct rl__loop rl__loop;

typedef struct rl__loop_ops {
    /* Watch fd for what (RL_WATCH_READ | RL_WATCH_WRITE), replacing what
     * was asked before; 0: stop watching it. */
    void (*watch)(void *ctx, int fd, int what);
    /* Call rl__loop_timeout once in ms (0: at once), replacing the timer
     * asked for before; -1: no timer. */
    void (*timer)(void *ctx, int64_t ms);
    void *ctx;
} rl__loop_ops;

/* A timer of the loop's user: fire is called when it is due. */
typedef struct rl__loop_timer {
    rl__timer t; /* first: the heap's entry */
    void (*fire)(struct rl__loop_timer *lt);
} rl__loop_timer;

redislock_err rl__loop_new(const rl__loop_ops *ops, rl__loop **out);

/* Closes every connection (their pending requests: REDISLOCK_ECANCELED)
 * and disarms every timer. NULL is a no-op. Not from a callback. */
void rl__loop_free(rl__loop *lp);

/* A connection to cfg's server on the loop (see rl__aconn_open). Send on
 * it with rl__aconn_send and the like; close it with rl__loop_close,
 * never rl__aconn_close. */
redislock_err rl__loop_connect(rl__loop *lp, const rl__conn_cfg *cfg,
                               rl__aconn **out);

/* Takes c, an idle connection of no loop (rl__loop_detach), onto the
 * loop; it is the loop's from here, failed or not. */
redislock_err rl__loop_adopt(rl__loop *lp, rl__aconn *c);

/* Takes c, idle, off the loop, which stops watching it: the caller's
 * from here (to adopt on another loop, or close with rl__aconn_close). */
void rl__loop_detach(rl__loop *lp, rl__aconn *c);

/* Closes c (its pending requests: REDISLOCK_ECANCELED). May be called
 * from a callback. */
void rl__loop_close(rl__loop *lp, rl__aconn *c);

/* Arms t (its fire set) for at_us, or moves it; disarms it. */
redislock_err rl__loop_arm(rl__loop *lp, rl__loop_timer *t, int64_t at_us);
void rl__loop_disarm(rl__loop *lp, rl__loop_timer *t);

/* Whether the loop parks its connections once it has had nothing to do
 * for a moment (no timer armed but its own: no request, wait, renewal
 * or sweep under way): the application is told to stop watching them
 * (watch(fd, 0)), so that a loop that ends when nothing is watched
 * ends; they are watched again with the next timer armed. Off for a new
 * loop. */
void rl__loop_parks(rl__loop *lp, int on);

/* Brackets an application's call that may start work (an operation):
 * enter reads every parked connection first, as the loop would have
 * had it watched them (a connection the server closed is then broken,
 * and opened again by its user); leave tells the application what to
 * watch, and when, once the call's work is under way. */
void rl__loop_enter(rl__loop *lp);
void rl__loop_leave(rl__loop *lp);

/* The application saw what on fd. */
void rl__loop_io(rl__loop *lp, int fd, int what);

/* When all the loop can be waiting for is fresh replies, one on each of
 * some connections (no subscription, nothing else pending), waits in a
 * blocking read (rl__aconn_wait) for the reply to the request sent last,
 * until the first timer at most, then reads the others' sockets without
 * waiting, and hands on what came; whether it did. For a private loop
 * (ploop.h) only: the call blocks its thread, up to the first timer (a
 * request's deadline, a Redlock round's per-server timeout). */
int rl__loop_wait(rl__loop *lp);

/* The application's timer ran out: every connection past its deadline
 * fails its requests, and user timers due fire, earliest first. */
void rl__loop_timeout(rl__loop *lp);

#endif
