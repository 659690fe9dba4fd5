/*
 * The scenarios every adapter of the event-loop API runs (tests of
 * <redislock/libevent.h>, <redislock/libuv.h> and <redislock/libev.h>),
 * on that library's own loop, one thread: many acquires and releases at
 * once; waiters woken by a release (behind a 30 s lease only a wake-up
 * can beat), each holding alone; a server that stops answering (every
 * callback by the 300 ms command timeout, then the loop connects again,
 * and lost attempts hold nothing); a deadline, a cancelled wait, a
 * handle freed with its wait under way, an attempt cancelled before its
 * reply, a waiter after the channel's last one left, the loop freed with
 * an operation under way; readers all in at once after a writer, permits
 * never past their limit.
 */
#ifndef RL_TEST_ADAPTERS_H
#define RL_TEST_ADAPTERS_H

#include <redislock.h>

/* One adapter: its library's loop with redislock wired to it. */
typedef struct driver {
    const char *name;
    void *(*open)(redislock_client *c, redislock_loop **lp);
    /* One turn of the library's loop: what is ready, or at most 50 ms. */
    void (*turn)(void *h);
    void (*close)(void *h);
} driver;

/* Runs every scenario on d's loops (one per scenario). */
void adapter_scenarios(const driver *d);

#endif
