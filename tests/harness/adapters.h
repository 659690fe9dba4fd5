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
 * never past their limit; and a loop that ends by itself once nothing is
 * under way (run), even after the server closed its idle connections.
 */
#ifndef RL_TEST_ADAPTERS_H
#define RL_TEST_ADAPTERS_H

#include <stdint.h>

#include <redislock.h>

/* One adapter: its library's loop with redislock wired to it. */
typedef struct driver {
    const char *name;
    void *(*open)(redislock_client *c, redislock_loop **lp);
    /* One turn of the library's loop: what is ready, or at most 50 ms. */
    void (*turn)(void *h);
    void (*close)(void *h);
    /* Runs the library's loop as an application runs it to its end
     * (event_base_dispatch, uv_run, ev_run), for at most ms: 1 when it
     * ended by itself, 0 when it was stopped at ms. */
    int (*run)(void *h, int64_t ms);
} driver;

/* Runs every scenario on d's loops (one per scenario). */
void adapter_scenarios(const driver *d);

/* The tests' own poll() loop (apploop.h) as a driver. */
extern const driver adapter_poll;

/* What one operation's callback came with (ad_record's arg). */
typedef struct ad_done {
    int calls;
    redislock_err err;
    int64_t at_us;
    char detail[256]; /* redislock_errdetail() in the callback */
} ad_done;

void ad_record(redislock_lock *l, redislock_err err, void *arg);

/* Turns d's loop until *n reaches want; fails the test after ms. */
#define ad_run_until(d, h, n, want, ms)                                        \
    ad_run_until_at_(__FILE__, __LINE__, d, h, n, want, ms)
void ad_run_until_at_(const char *file, int line, const driver *d, void *h,
                      const int *n, int want, int64_t ms);

/* Turns d's loop for ms. */
void ad_run_for(const driver *d, void *h, int64_t ms);

/* What the loss callback saw (ad_on_lost's arg). */
typedef struct ad_lost {
    int calls;
    redislock_err why;
    int64_t valid; /* redislock_valid_ms in the callback */
} ad_lost;

void ad_on_lost(redislock_lock *l, redislock_err why, void *arg);

/* A holder on a loop, watched by a rival between the loop's turns
 * (th_cluster_rival's between and holds): ad_holder_turn turns d's loop
 * for 20 ms; ad_holder_holds says whether the holder still believes it
 * holds (no loss reported through lost, redislock_check OK). */
typedef struct ad_holder {
    const driver *d;
    void *h;
    redislock_lock *l;
    ad_lost lost;
} ad_holder;

void ad_holder_turn(void *arg);
int ad_holder_holds(void *arg);

/* Waiters that take turns on one key (ad_turn's arg, each acquire's
 * callback): each records its callback in d[i] (its handle w[i]), must
 * have the lock, and releases it at once on lp, counted in released. */
#define AD_TURNS_MAX 16
typedef struct ad_turns {
    redislock_loop *lp;
    redislock_lock *w[AD_TURNS_MAX];
    ad_done d[AD_TURNS_MAX];
    int released;
} ad_turns;

void ad_turn(redislock_lock *l, redislock_err err, void *arg);

#endif
