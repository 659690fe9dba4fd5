/*
 * sequencer: redislock_sequencer() gives a holder's proof, "FENCE:DIGEST",
 * and redislock_check_sequencer() tells a resource whether the holder it
 * names still holds the lock: OK while it does, ESTALE once another holds
 * it (or the owner id's key began a new life), EEXPIRED while it is free.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/apploop.h"
#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* A plain lock: the sequencer carries the fencing token, never the token;
 * it checks out while its holder holds, and not once the lock is free
 * or another's, a second handle of the key asking. */
void test_sequencer_plain_current_then_stale(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a = th_lock(e.c, "sq"), *b = th_lock(e.c, "sq");
    redislock_lock *r = th_lock(e.c, "sq");
    char seq[REDISLOCK_SEQUENCER_MAX], again[REDISLOCK_SEQUENCER_MAX];
    char fence[24];

    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_sequencer(a, seq, sizeof seq));
    snprintf(fence, sizeof fence, "%" PRId64 ":", redislock_fence(a));
    ASSERT(strncmp(seq, fence, strlen(fence)) == 0);
    ASSERT_EQ_INT((long long)strlen(seq), (long long)strlen(fence) + 40);
    /* No part of the token: whoever knows it can release the lock. */
    ASSERT(strstr(seq, redislock_token(a) + 4) == NULL);
    ASSERT(strstr(redislock_token(a), seq + strlen(fence)) == NULL);
    ASSERT_OK(redislock_check_sequencer(r, seq));
    /* Asked twice, the same. */
    ASSERT_OK(redislock_sequencer(a, again, sizeof again));
    ASSERT_EQ_STR(again, seq);
    ASSERT_OK(redislock_extend(a, 5000));
    ASSERT_OK(redislock_check_sequencer(r, seq));
    ASSERT_OK(redislock_release(a));
    ASSERT_ERR(redislock_check_sequencer(r, seq), REDISLOCK_EEXPIRED);
    ASSERT(strstr(redislock_errdetail(), "free") != NULL);
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_ERR(redislock_check_sequencer(r, seq), REDISLOCK_ESTALE);
    ASSERT(strstr(redislock_errdetail(), "another holder") != NULL);
    ASSERT_OK(redislock_sequencer(b, again, sizeof again));
    ASSERT(strcmp(again, seq) != 0);
    ASSERT_OK(redislock_check_sequencer(r, again));
    /* The check only reads: the holder's key is as it was. */
    ASSERT_KEY(e.r, "sq", redislock_token(b));
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* A holder whose lease ran out and whose key another took: its own
 * sequencer call and the resource's check both say so, and the handle is
 * left as it was. */
void test_sequencer_after_expiry(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(200, 0, 0);
    redislock_lock *a = th_lock(e.c, "sq"), *b = th_lock(e.c, "sq");
    redislock_lock *r = th_lock(e.c, "sq");
    char seq[REDISLOCK_SEQUENCER_MAX], late[REDISLOCK_SEQUENCER_MAX];

    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_sequencer(a, seq, sizeof seq));
    /* The key's expiry, not a sleep: PEXPIRE it now. */
    freeReplyObject(th_cmd(e.r, "PEXPIRE sq 1"));
    o.wait_ms = 2000;
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_ERR(redislock_check_sequencer(r, seq), REDISLOCK_ESTALE);
    ASSERT_ERR(redislock_sequencer(a, late, sizeof late), REDISLOCK_ESTALE);
    ASSERT_OK(redislock_release(b));
    ASSERT_ERR(redislock_sequencer(a, late, sizeof late), REDISLOCK_EEXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* An owner id's holds (a hash lock): every handle's sequencer checks out
 * while the key lives; once it has gone and the same owner id took the
 * key afresh, the sequencers of the earlier life are stale. */
void test_sequencer_owner_life(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a = th_lock(e.c, "sq"), *b = th_lock(e.c, "sq");
    redislock_lock *r = th_lock(e.c, "sq");
    char sa[REDISLOCK_SEQUENCER_MAX], sb[REDISLOCK_SEQUENCER_MAX];
    char later[REDISLOCK_SEQUENCER_MAX];

    o.owner = "worker-1";
    o.reentrant = 1;
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT(redislock_fence(b) > redislock_fence(a));
    ASSERT_OK(redislock_sequencer(a, sa, sizeof sa));
    ASSERT_OK(redislock_sequencer(b, sb, sizeof sb));
    ASSERT_OK(redislock_check_sequencer(r, sa));
    ASSERT_OK(redislock_check_sequencer(r, sb));
    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_release(b));
    ASSERT_ERR(redislock_check_sequencer(r, sa), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_ERR(redislock_check_sequencer(r, sa), REDISLOCK_ESTALE);
    ASSERT_ERR(redislock_check_sequencer(r, sb), REDISLOCK_ESTALE);
    ASSERT_OK(redislock_sequencer(a, later, sizeof later));
    ASSERT_OK(redislock_check_sequencer(r, later));
    /* Another owner id's lock. */
    ASSERT_OK(redislock_release(a));
    o.owner = "worker-2";
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_ERR(redislock_check_sequencer(r, later), REDISLOCK_ESTALE);
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(r);
    th_env_stop(&e);
}

/* What is not a sequencer, and what none is made for, is refused with
 * nothing sent; another library's lock never checks out. */
void test_sequencer_refusals(void)
{
    static const char *const set[2] = {"sq:s1", "sq:s2"};
    static const char *const bad[] = {
        "",
        "12",
        "12:",
        ":da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "0:da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "-1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "12:DA39A3EE5E6B4B0D3255BFEF95601890AFD80709",
        "12:da39a3ee5e6b4b0d3255bfef95601890afd8070",
        "12:da39a3ee5e6b4b0d3255bfef95601890afd807090",
        "12345678901234567:da39a3ee5e6b4b0d3255bfef95601890afd80709",
    };
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = th_lock(e.c, "sq"), *r = th_lock(e.c, "sq");
    redislock_lock *s = th_lock_set(e.c, set, 2);
    char seq[REDISLOCK_SEQUENCER_MAX];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_ERR(redislock_check_sequencer(r, bad[i]), REDISLOCK_EINVAL);
        ASSERT(strstr(redislock_errdetail(), "not a sequencer") != NULL);
    }
    ASSERT_ERR(redislock_check_sequencer(r, NULL), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_check_sequencer(NULL, bad[0]), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_sequencer(NULL, seq, sizeof seq), REDISLOCK_EINVAL);
    /* Not held, too small a buffer, an adopted token. */
    ASSERT_ERR(redislock_sequencer(l, seq, sizeof seq), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_ERR(redislock_sequencer(l, seq, sizeof seq - 1), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_adopt(r, redislock_token(l)));
    ASSERT_ERR(redislock_sequencer(r, seq, sizeof seq), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "adopted") != NULL);
    ASSERT_OK(redislock_release(l));
    /* A set. */
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_ERR(redislock_sequencer(s, seq, sizeof seq), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_check_sequencer(s, "12:da39a3ee5e6b4b0d3255bfef9560"
                                            "1890afd80709"),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "set") != NULL);
    ASSERT_OK(redislock_release(s));
    /* Shares. */
    o.shared = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_ERR(redislock_sequencer(l, seq, sizeof seq), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_check_sequencer(r, "12:da39a3ee5e6b4b0d3255bfef95601"
                                            "890afd80709"),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "not built yet") != NULL);
    ASSERT_OK(redislock_release(l));
    /* Another library's lock: the sequencer's holder is not it. */
    freeReplyObject(th_cmd(e.r, "SET sq 9f2c4e1ab37d44c0 PX 5000"));
    ASSERT_ERR(redislock_check_sequencer(r, "12:da39a3ee5e6b4b0d3255bfef9560"
                                            "1890afd80709"),
               REDISLOCK_ESTALE);
    ASSERT_KEY(e.r, "sq", "9f2c4e1ab37d44c0");
    redislock_lock_free(l);
    redislock_lock_free(r);
    redislock_lock_free(s);
    th_env_stop(&e);
}

/* Redlock: a majority decides, for the sequencer and its check; one
 * server down changes neither. */
void test_sequencer_redlock(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c1 = NULL, *c2 = NULL;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l, *r;
    char seq[REDISLOCK_SEQUENCER_MAX];

    ASSERT_OK(redislock_client_new_redlock(&c1, sv.urls, 3, NULL));
    ASSERT_OK(redislock_client_new_redlock(&c2, sv.urls, 3, NULL));
    l = th_lock(c1, "sq");
    r = th_lock(c2, "sq");
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_sequencer(l, seq, sizeof seq));
    ASSERT_OK(redislock_check_sequencer(r, seq));
    th_servers_kill(&sv, 2);
    ASSERT_OK(redislock_check_sequencer(r, seq));
    ASSERT_OK(redislock_release(l));
    ASSERT_ERR(redislock_check_sequencer(r, seq), REDISLOCK_EEXPIRED);
    redislock_lock_free(l);
    redislock_lock_free(r);
    redislock_client_free(c1);
    redislock_client_free(c2);
    th_servers_stop(&sv);
}

/* The event-loop API: both calls on the loop. */
void test_sequencer_loop(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = th_lock(e.c, "sq"), *r = th_lock(e.c, "sq");
    redislock_loop *lp = NULL;
    char seq[REDISLOCK_SEQUENCER_MAX];
    app a;
    app_heard h = {0}, x = {0}, y = {0};

    memset(&a, 0, sizeof a);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_loop_new(&lp, e.c, app_watch, app_timer, &a));
    app_drive(&a, lp);
    ASSERT_OK(redislock_loop_sequencer(lp, l, seq, sizeof seq, app_heard_cb,
                                       &h));
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_OK);
    ASSERT(strchr(seq, ':') != NULL);
    ASSERT_ERR(redislock_loop_check_sequencer(lp, r, "x", app_heard_cb, &x),
               REDISLOCK_EINVAL);
    ASSERT_OK(redislock_loop_check_sequencer(lp, r, seq, app_heard_cb, &x));
    app_until_heard(&a, &x);
    ASSERT_ERR(x.err, REDISLOCK_OK);
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_loop_check_sequencer(lp, r, seq, app_heard_cb, &y));
    app_until_heard(&a, &y);
    ASSERT_ERR(y.err, REDISLOCK_EEXPIRED);
    redislock_loop_free(lp);
    redislock_lock_free(l);
    redislock_lock_free(r);
    th_env_stop(&e);
}
