/*
 * An application's event loop, the tests' own: poll() over the fds the
 * library asked to watch, one timer set where the library said, nothing
 * else. It drives the library's loop core (src/node/loop.h) or a client's
 * lock operations on a loop (src/lock/alock.h) through the two calls it is
 * given, the way an adapter for libevent, libuv or libev would.
 */
#ifndef RL_TEST_APPLOOP_H
#define RL_TEST_APPLOOP_H

#include <stdint.h>

#include <redislock.h>

#define APP_FDS 256

typedef struct app {
    int what[APP_FDS];
    int64_t timer_at; /* 0: none */
    int timer_calls;
    int64_t early_us; /* fire the timer this much early (libuv's cached
                         loop time does) */
    int max_wait_ms;  /* a turn waits at most this long (0: 5 s, and
                         nothing to wait for fails the test) */
    /* Where the events and the timer go. */
    void (*io)(void *target, int fd, int what);
    void (*timeout)(void *target);
    void *target;
} app;

/* The callbacks the library is given (ctx: the app). */
void app_watch(void *ctx, int fd, int what);
void app_timer(void *ctx, int64_t ms);

/* Hands the events and the timer to the public event-loop API's lp
 * (redislock_loop_io, redislock_loop_timeout). */
void app_drive(app *a, redislock_loop *lp);

/* The fds watched now. */
int app_watched(const app *a);

/* One turn: poll what is watched until the timer (never longer than 5 s,
 * or max_wait_ms: the library must have asked for a timer when it needs
 * one; nothing to wait for at all fails the test, unless max_wait_ms is
 * set), then hand over the events and the timer. */
void app_turn(app *a);

/* What a loop operation's callback heard (app_heard_cb's arg). */
typedef struct app_heard {
    int calls;
    redislock_err err;
    int64_t at_us; /* CLOCK_MONOTONIC, when it was heard */
    char said[256];
} app_heard;

/* A loop operation's callback that records into its app_heard. */
void app_heard_cb(redislock_lock *l, redislock_err err, void *arg);

/* Turns the loop until h has been heard once (at most 5 s). */
void app_until_heard(app *a, app_heard *h);

#endif
