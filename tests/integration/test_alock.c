/*
 * The event-loop API (redislock_loop(3), src/lock/alock.c) under the tests'
 * own application loop (harness/apploop.h: poll() over what the library
 * asks to watch, one timer), one thread: the scenarios every adapter
 * runs (harness/adapters.h), and what the API refuses.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/adapters.h"
#include "harness/apploop.h"
#include "harness/fixture.h"
#include "test.h"

void test_alock_scenarios(void)
{
    adapter_scenarios(&adapter_poll);
}

/* What a callback that must not come would record. */
static void never(redislock_lock *l, redislock_err err, void *arg)
{
    (void)l;
    (void)err;
    (*(int *)arg)++;
}

void test_alock_refused(void)
{
    th_env e = th_env_start();
    app a = {0};
    redislock_client *other = th_client(e.s);
    redislock_lock *l = th_lock(e.c, "al:r"), *lo = th_lock(other, "al:r");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_loop *lp = (redislock_loop *)&a;
    int calls = 0;

    ASSERT_ERR(redislock_loop_new(NULL, e.c, app_watch, app_timer, &a),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_new(&lp, NULL, app_watch, app_timer, &a),
               REDISLOCK_EINVAL);
    ASSERT(lp == NULL);
    ASSERT_ERR(redislock_loop_new(&lp, e.c, NULL, app_timer, &a),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_new(&lp, e.c, app_watch, NULL, &a),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_acquire(NULL, l, &o, never, &calls),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_release(NULL, l, 0, never, &calls),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_extend(NULL, l, 1000, never, &calls),
               REDISLOCK_EINVAL);
    redislock_loop_io(NULL, 0, 0);
    redislock_loop_timeout(NULL);
    redislock_loop_free(NULL);
    ASSERT_OK(redislock_loop_new(&lp, e.c, app_watch, app_timer, &a));
    ASSERT_ERR(redislock_loop_acquire(lp, NULL, &o, never, &calls),
               REDISLOCK_EINVAL);
    /* A lock of another client; no callback. */
    ASSERT_ERR(redislock_loop_acquire(lp, lo, &o, never, &calls),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_acquire(lp, l, &o, NULL, NULL), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_acquire_sized(lp, l, &o, 3, never, &calls),
               REDISLOCK_EINVAL);
    o.on_lost = (redislock_lost_cb)never; /* without watchdog */
    ASSERT_ERR(redislock_loop_acquire(lp, l, &o, never, &calls),
               REDISLOCK_EINVAL);
    o.on_lost = NULL;
    o.ttl_ms = -5;
    ASSERT_ERR(redislock_loop_acquire(lp, l, &o, never, &calls),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_inspect(lp, l, NULL, never, &calls),
               REDISLOCK_EINVAL);
    {
        redislock_info info;

        ASSERT_ERR(redislock_loop_inspect_sized(lp, l, &info, 3, never, &calls),
                   REDISLOCK_EINVAL);
    }
    /* Not held: nothing to release or extend. */
    ASSERT_ERR(redislock_loop_release(lp, l, 0, never, &calls),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_loop_extend(lp, l, 1000, never, &calls),
               REDISLOCK_EINVAL);
    redislock_loop_cancel(NULL, l);
    redislock_loop_cancel(lp, NULL);
    redislock_loop_free(lp);
    ASSERT_EQ_INT(calls, 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_lock_free(l);
    redislock_lock_free(lo);
    redislock_client_free(other);
    th_env_stop(&e);
}

/* On a Redlock client, what the blocking calls refuse (a share), with
 * their reason (sets on the loop: test_alock_set.c). */
void test_alock_refused_kinds(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *rl;
    redislock_lock *l;
    redislock_loop *lp;
    app a = {0};
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    int calls = 0;

    ASSERT_OK(redislock_client_new_redlock(&rl, sv.urls, 3, NULL));
    ASSERT_OK(redislock_loop_new(&lp, rl, app_watch, app_timer, &a));
    l = th_lock(rl, "al:k");
    o.shared = 1;
    ASSERT_ERR(redislock_loop_acquire(lp, l, &o, never, &calls),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "shared is not built for Redlock") !=
           NULL);
    redislock_loop_free(lp);
    redislock_lock_free(l);
    redislock_client_free(rl);
    ASSERT_EQ_INT(calls, 0);
    th_servers_stop(&sv);
}
