/*
 * Sets of keys taken all or none (redislock_lock_new_multi): one token,
 * one lease and one fencing token above every earlier token of each key;
 * a held key makes the set take nothing; a waiter blocks behind the key
 * that refused it and is woken by its release; release, extend and the
 * watchdog act on every key and report a key that expired or was taken;
 * a lost reply's ghost set is undone; bad input is refused with nothing
 * written; a killed holder. The model-based run, processes excluding each
 * other and a stopped holder are in test_set_model.c; sets over several
 * servers in test_spread.c.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "script.h"
#include "test.h"

/* The server counts whole milliseconds, and its clock and ours differ by
 * a little: how early a lease may look ended. */
#define SERVER_MS_SLACK 3

/* redislock_lock_new_multi of the NUL-terminated keys, for refusals. */
static redislock_err set_try(redislock_client *c, const char *const *keys,
                             size_t n, redislock_lock **out)
{
    size_t lens[16], i;

    for (i = 0; i < n && i < 16; i++)
        lens[i] = strlen(keys[i]);
    return redislock_lock_new_multi(c, (const void *const *)keys, lens, n, out);
}

/* Far ahead of the server's clock in microseconds (the year 2096), as a
 * counter may be after the clock stepped back; below 2^53. */
#define AHEAD 4000000000000000LL

void test_set_all_or_none(void)
{
    static const char *const k[4] = {"set:a", "set:b", "{t}set:c", "set:d"};
    static const char *const over[2] = {"set:e", "set:a"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *s = th_lock_set(e.c, k, 4), *s2 = th_lock_set(e.c, over, 2),
                   *b = th_lock(e.c, k[1]), *d = th_lock(e.c, k[3]);
    int64_t fb = 0, fence;
    char tok[300];
    int i;

    /* Key 1's counter (its namespace's, set:) moved on by locks of its
     * own; key 2's ({t}set:) put ahead of the clock: the set's token must
     * pass both. */
    for (i = 0; i < 5; i++) {
        ASSERT_OK(redislock_acquire(b, &o));
        ASSERT_GT(redislock_fence(b), fb);
        fb = redislock_fence(b);
        ASSERT_OK(redislock_release(b));
    }
    freeReplyObject(
        th_cmd(e.r, "SET %s %lld PX 60000", "{t}set:" TH_FENCE_COUNTER, AHEAD));
    /* The last key held by another owner: nothing taken, nothing counted. */
    ASSERT_OK(redislock_acquire(d, &o));
    ASSERT_ERR(redislock_acquire(s, &o), REDISLOCK_EHELD);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 1);
    ASSERT_KEY(e.r, k[3], redislock_token(d));
    /* Key 4 shares key 1's counter. */
    ASSERT_GT(redislock_fence(d), fb);
    ASSERT_EQ_INT(th_fence_counter(e.r, k[1]), redislock_fence(d));
    ASSERT_EQ_INT(th_fence_counter(e.r, k[2]), AHEAD);
    ASSERT(redislock_token(s) == NULL);
    ASSERT_EQ_INT(redislock_fence(s), 0);
    ASSERT_EQ_INT(redislock_holds(s), 0);
    ASSERT_OK(redislock_release(d));
    /* Free: all four, with one token, one lease and one fencing token,
     * which every key's counter now holds. */
    ASSERT_OK(redislock_acquire(s, &o));
    snprintf(tok, sizeof tok, "%s", redislock_token(s));
    ASSERT_TOKEN(tok);
    fence = redislock_fence(s);
    test_log("set fence %lld; key 1's last %lld, key 2's counter %lld",
             (long long)fence, (long long)fb, AHEAD);
    ASSERT_GT(fence, AHEAD);
    for (i = 0; i < 4; i++) {
        ASSERT_KEY(e.r, k[i], tok);
        ASSERT_GT(th_pttl(e.r, k[i]), 9000);
        ASSERT_LE(th_pttl(e.r, k[i]), 10000);
        ASSERT_EQ_INT(th_fence_counter(e.r, k[i]), fence);
    }
    ASSERT_EQ_INT(redislock_holds(s), 1);
    ASSERT_GT(redislock_valid_ms(s), 9000);
    ASSERT_OK(redislock_check(s));
    /* Each key keeps out a lock of its own and a set over it. */
    ASSERT_ERR(redislock_acquire(b, &o), REDISLOCK_EHELD);
    ASSERT_ERR(redislock_acquire(s2, &o), REDISLOCK_EHELD);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS set:e"), 0);
    /* Release frees all four; a second release has nothing to free. */
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 4), 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    ASSERT_ERR(redislock_release(s), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(redislock_fence(s), 0);
    /* Every key's next token passes the set's. */
    ASSERT_OK(redislock_acquire(b, &o));
    ASSERT_GT(redislock_fence(b), fence);
    ASSERT_OK(redislock_release(b));
    ASSERT_OK(redislock_acquire(s2, &o));
    ASSERT_GT(redislock_fence(s2), fence);
    ASSERT_OK(redislock_release(s2));
    /* The token adopted by another handle of the set releases it all. */
    ASSERT_OK(redislock_acquire(s, &o));
    redislock_lock_free(s2);
    s2 = th_lock_set(e.c, k, 4);
    ASSERT_OK(redislock_adopt(s2, redislock_token(s)));
    ASSERT_OK(redislock_release(s2));
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 4), 0);
    ASSERT_ERR(redislock_release(s), REDISLOCK_EEXPIRED);
    redislock_lock_free(s);
    redislock_lock_free(s2);
    redislock_lock_free(b);
    redislock_lock_free(d);
    th_env_stop(&e);
}

/* One key of the set gone (as expired): release frees the rest and says
 * EEXPIRED; extend lengthens nothing and says EEXPIRED. */
static void one_key_expired(th_env *e, const char *const *k)
{
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *s = th_lock_set(e->c, k, 3);

    /* First the whole set lengthens. */
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(redislock_extend(s, 20000));
    ASSERT_EQ_INT(th_keys_holding(e->r, k, 3, redislock_token(s)), 3);
    ASSERT_GT(th_pttl(e->r, k[0]), 15000);
    ASSERT_GT(th_pttl(e->r, k[2]), 15000);
    freeReplyObject(th_cmd(e->r, "PEXPIRE %s 20", k[1]));
    ASSERT(th_wait_key_gone(e->r, k[1], strlen(k[1]), 1000));
    ASSERT_ERR(redislock_release(s), REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(th_keys_existing(e->r, k, 3), 0);
    ASSERT_ERR(redislock_release(s), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_acquire(s, &o));
    freeReplyObject(th_cmd(e->r, "DEL %s", k[2]));
    ASSERT_ERR(redislock_extend(s, 20000), REDISLOCK_EEXPIRED);
    ASSERT_LE(th_pttl(e->r, k[0]), 5000);
    ASSERT_LE(th_pttl(e->r, k[1]), 5000);
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", k[2]), 0);
    ASSERT_EQ_INT(redislock_valid_ms(s), 0);
    ASSERT(redislock_check(s) != REDISLOCK_OK);
    freeReplyObject(th_cmd(e->r, "DEL %s %s", k[0], k[1]));
    redislock_lock_free(s);
}

/* One key of the set re-taken by another owner: release frees the rest
 * and leaves that key alone; extend lengthens nothing. Both say ELOST. */
static void one_key_taken(th_env *e, const char *const *k)
{
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_acquire_options other = th_aopts(8000, 0, 0);
    redislock_lock *s = th_lock_set(e->c, k, 3), *x = th_lock(e->c, k[1]);
    char tok[300];

    ASSERT_OK(redislock_acquire(s, &o));
    freeReplyObject(th_cmd(e->r, "DEL %s", k[1]));
    ASSERT_OK(redislock_acquire(x, &other));
    snprintf(tok, sizeof tok, "%s", redislock_token(x));
    ASSERT_ERR(redislock_release(s), REDISLOCK_ELOST);
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s %s", k[0], k[2]), 0);
    ASSERT_KEY(e->r, k[1], tok);
    ASSERT_GT(th_pttl(e->r, k[1]), 7000);
    ASSERT_OK(redislock_release(x));
    ASSERT_OK(redislock_acquire(s, &o));
    freeReplyObject(th_cmd(e->r, "DEL %s", k[1]));
    ASSERT_OK(redislock_acquire(x, &other));
    snprintf(tok, sizeof tok, "%s", redislock_token(x));
    ASSERT_ERR(redislock_extend(s, 20000), REDISLOCK_ELOST);
    ASSERT_EQ_INT(th_keys_holding(e->r, k, 3, tok), 1);
    ASSERT_LE(th_pttl(e->r, k[0]), 5000);
    ASSERT_LE(th_pttl(e->r, k[1]), 8000);
    ASSERT_LE(th_pttl(e->r, k[2]), 5000);
    ASSERT_ERR(redislock_check(s), REDISLOCK_ELOST);
    ASSERT_OK(redislock_release(x));
    redislock_lock_free(s);
    redislock_lock_free(x);
}

void test_set_release_and_extend_partial(void)
{
    static const char *const k[3] = {"p:a", "p:b", "p:c"};
    th_env e = th_env_start();

    one_key_expired(&e, k);
    one_key_taken(&e, k);
    th_env_stop(&e);
}

/* A set's token adopted by a handle of other keys (a, c for the set a,
 * b): release and extend are REDISLOCK_EINVAL and touch nothing, so that
 * no key of the set is freed while the rest is held; the set's own keys
 * still release it. */
void test_set_adopted_keys_must_match(void)
{
    static const char *const k[3] = {"m:a", "m:b", "m:c"};
    static const char *const odd[2] = {"m:a", "m:c"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(20000, 0, 0);
    redislock_lock *s = th_lock_set(e.c, k, 2), *w = th_lock_set(e.c, odd, 2);

    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(redislock_adopt(w, redislock_token(s)));
    ASSERT_ERR(redislock_release(w), REDISLOCK_EINVAL);
    test_log("refused: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "not the set it was taken with") !=
           NULL);
    ASSERT(strstr(redislock_errdetail(), "RLSETKEYS") == NULL);
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 2, redislock_token(s)), 2);
    ASSERT_ERR(redislock_extend(w, 60000), REDISLOCK_EINVAL);
    ASSERT_LE(th_pttl(e.r, k[0]), 20000);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", k[2]), 0);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);
    redislock_lock_free(s);
    redislock_lock_free(w);
    th_env_stop(&e);
}

/* A set waiting behind its key held (index held) by another handle, a
 * lock of that key or with byset a set of it and another key: blocked,
 * taking none of its free keys; woken by the holder's release, well
 * before its 30 s lease would end. With silent, also silent while
 * blocked. Returns the release-to-return time in us. */
static int64_t woken_behind(th_env *e, const char *const *k, int held,
                            int byset, int silent)
{
    const char *hk[2] = {k[held], "w:other"};
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 10000, 0);
    redislock_lock *h = th_lock_set(e->c, hk, byset ? 2 : 1),
                   *s = th_lock_set(e->c, k, 3);
    th_waiter w;
    int64_t t0;

    ASSERT_OK(redislock_acquire(h, &o));
    th_waiter_start_lock(&w, s, &wo);
    th_wait_blocked(e->r, 1, 2000);
    if (silent)
        th_assert_silent(e->r, 1000);
    ASSERT_EQ_INT(th_keys_existing(e->r, k, 3), 1);
    ASSERT_GT(th_pttl(e->r, k[held]), 20000);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w, 3000);
    ASSERT_EQ_INT(th_keys_holding(e->r, k, 3, redislock_token(s)), 3);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_keys_existing(e->r, k, 3), 0);
    redislock_lock_free(h);
    redislock_lock_free(s);
    return w.done_us - t0;
}

void test_set_waiter_woken_and_silent(void)
{
    static const char *const k[3] = {"w:a", "w:b", "w:c"};
    th_env e = th_env_start();
    int64_t second = woken_behind(&e, k, 1, 0, 1);
    int64_t third = woken_behind(&e, k, 2, 0, 0);
    int64_t byset = woken_behind(&e, k, 1, 1, 0);

    test_log("release to the set's return: %lld us behind its second key, "
             "%lld us behind its third, %lld us behind another set "
             "(holder's lease 30 s)",
             (long long)second, (long long)third, (long long)byset);
    ASSERT_LT(second, 1000 * 1000);
    ASSERT_LT(third, 1000 * 1000);
    ASSERT_LT(byset, 1000 * 1000);
    th_env_stop(&e);
}

/* What the loss callback saw, from the watchdog thread. */
typedef struct lost_log {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    redislock_err why;
} lost_log;

static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    lost_log *g = arg;

    (void)l;
    pthread_mutex_lock(&g->mu);
    g->calls++;
    g->why = why;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits up to ms for fd to become readable. Returns 1 when it did. */
static int readable_within(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int64_t t0 = th_now_ms();
    int n;

    do {
        n = poll(&p, 1, (int)(ms - (th_now_ms() - t0)));
    } while (n < 0 && th_now_ms() - t0 < ms);
    return n == 1 && (p.revents & POLLIN);
}

/* Waits up to ms for the callback's first call; returns why. */
static redislock_err lost_why(lost_log *g, int64_t ms)
{
    struct timespec ts;
    redislock_err why;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g->mu);
    while (g->calls == 0 && pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0)
        ;
    ASSERT_EQ_INT(g->calls, 1);
    why = g->why;
    pthread_mutex_unlock(&g->mu);
    return why;
}

/* A watched set of 300 ms leases, one key of which is then taken
 * (SET, another owner) or deleted: the loss is signalled with want. */
static void watched_loss(th_env *e, const char *const *k, const char *cmd,
                         redislock_err want)
{
    redislock_acquire_options o = th_aopts(300, 0, 0);
    redislock_lock *s = th_lock_set(e->c, k, 3);
    int64_t t0;
    lost_log g;
    int i;

    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    o.watchdog = 1;
    o.on_lost = on_lost;
    o.on_lost_arg = &g;
    ASSERT_OK(redislock_acquire(s, &o));
    /* Four leases' worth: every key renewed all along. */
    for (t0 = th_now_ms(); th_now_ms() - t0 < 1200; th_sleep_ms(50)) {
        ASSERT_EQ_INT(th_keys_holding(e->r, k, 3, redislock_token(s)), 3);
        for (i = 0; i < 3; i++)
            ASSERT_GT(th_pttl(e->r, k[i]), 0);
    }
    ASSERT_OK(redislock_check(s));
    freeReplyObject(th_cmd(e->r, cmd, k[1]));
    t0 = th_now_ms();
    ASSERT(readable_within(redislock_lost_fd(s), 2000));
    test_log("one key %s: the loss signalled %lld ms later (TTL 300 ms)",
             want == REDISLOCK_ELOST ? "taken" : "deleted",
             (long long)(th_now_ms() - t0));
    ASSERT_LE(th_now_ms() - t0, 1000);
    ASSERT_ERR(lost_why(&g, 1000), want);
    ASSERT_ERR(redislock_check(s), want);
    ASSERT_EQ_INT(redislock_valid_ms(s), 0);
    /* No longer renewed: the other keys run out within their lease. */
    ASSERT(th_wait_key_gone(e->r, k[0], strlen(k[0]), 300 + 200));
    ASSERT(th_wait_key_gone(e->r, k[2], strlen(k[2]), 100));
    redislock_lock_free(s);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
}

void test_set_watchdog_renews_and_signals_loss(void)
{
    static const char *const k[3] = {"wd:a", "wd:b", "wd:c"};
    th_env e = th_env_start();

    watched_loss(&e, k, "SET %s intruder", REDISLOCK_ELOST);
    ASSERT_KEY(e.r, k[1], "intruder");
    freeReplyObject(th_cmd(e.r, "DEL %s", k[1]));
    watched_loss(&e, k, "DEL %s", REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 3), 0);
    th_env_stop(&e);
}

/*
 * A set's acquire held up in the network (as sem_ghost_permit_given_back):
 * it times out, the request arrives later and takes every key at once
 * for a token nobody knows of, and the watchdog thread's abandon frees
 * them all once the network lets it through.
 */
void test_set_ghost_undone(void)
{
    static const char *const k[3] = {"g:a", "g:b", "g:c"};
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    th_proxy *p = th_proxy_start(s->port);
    redislock_options co = {0};
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_client *c, *direct = th_client(s);
    redislock_lock *l, *one;
    int64_t t0, seen = -1, undelayed = -1, gone = -1, now;
    char url[64], *ghost = NULL;
    long long n;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(p));
    co.command_timeout_ms = 200;
    c = th_client_url(url, &co);
    l = th_lock_set(c, k, 3);
    /* Once through, so that the server has the scripts. */
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    th_proxy_set_delay(p, 1000);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_ETIMEDOUT);
    ASSERT_EQ_INT(redislock_holds(l), 0);
    while ((now = th_now_ms() - t0) < 3000 && gone < 0) {
        /* All or none, in each of the server's steps. */
        n = th_keys_existing(r, k, 3);
        if (n != 0 && n != 3)
            test_fail_(__FILE__, __LINE__, "%lld of 3 keys at %lld ms", n,
                       (long long)now);
        if (n == 3 && seen < 0) {
            seen = now;
            ghost = th_cmd_str(r, NULL, "GET %s", k[0]);
            ASSERT(ghost != NULL);
            ASSERT_EQ_INT(th_keys_holding(r, k, 3, ghost), 3);
            th_proxy_set_delay(p, 0);
            undelayed = now;
        }
        if (n == 0 && seen >= 0)
            gone = now;
        th_sleep_ms(2);
    }
    test_log("ghost set seen at %lld ms, gone at %lld ms (undelayed at "
             "%lld ms)",
             (long long)seen, (long long)gone, (long long)undelayed);
    ASSERT_GE(seen, 1000 - 50);
    ASSERT_GE(gone, 0);
    ASSERT_LE(gone - undelayed, 400);
    /* Every key is free for others, and the set for itself. */
    one = th_lock(direct, k[2]);
    ASSERT_OK(redislock_acquire(one, &o));
    ASSERT_OK(redislock_release(one));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_lock_keys(r), 0);
    free(ghost);
    redislock_lock_free(one);
    redislock_lock_free(l);
    redislock_client_free(direct);
    redislock_client_free(c);
    th_proxy_stop(p);
    redisFree(r);
    th_server_stop(s);
}

/* Sets that cannot be made: each refused with its reason, *out NULL. */
static void bad_sets(redislock_client *c)
{
    static const char *const nine[9] = {"b:1", "b:2", "b:3", "b:4", "b:5",
                                        "b:6", "b:7", "b:8", "b:9"};
    static const char *const twice[3][4] = {{"b:1", "b:2", "b:1", "b:3"},
                                            {"b:1", "b:2", "b:3", "b:2"},
                                            {"b:1", "b:2", "b:3", "b:1"}};
    const char *const *k = nine;
    size_t lens[2] = {3, 0};
    redislock_lock *l = (redislock_lock *)1;
    int i;

    ASSERT_ERR(set_try(c, nine, 0, &l), REDISLOCK_EINVAL);
    ASSERT(l == NULL);
    ASSERT_ERR(set_try(c, nine, REDISLOCK_SET_MAX + 1, &l), REDISLOCK_EINVAL);
    test_log("%d keys: %s", REDISLOCK_SET_MAX + 1, redislock_errdetail());
    ASSERT(l == NULL);
    for (i = 0; i < 3; i++) {
        static const char *const said[3] = {"keys 1 and 3 ", "keys 2 and 4 ",
                                            "keys 1 and 4 "};

        ASSERT_ERR(set_try(c, twice[i], 4, &l), REDISLOCK_EINVAL);
        test_log("a key twice: %s", redislock_errdetail());
        ASSERT(strstr(redislock_errdetail(), said[i]) != NULL);
        ASSERT(strstr(redislock_errdetail(), "same key") != NULL);
        ASSERT(l == NULL);
    }
    ASSERT_ERR(redislock_lock_new_multi(c, NULL, lens, 2, &l),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new_multi(c, (const void *const *)k, NULL, 2, &l),
               REDISLOCK_EINVAL);
    ASSERT_ERR(
        redislock_lock_new_multi(NULL, (const void *const *)k, lens, 1, &l),
        REDISLOCK_EINVAL);
    ASSERT_ERR(
        redislock_lock_new_multi(c, (const void *const *)k, lens, 1, NULL),
        REDISLOCK_EINVAL);
    /* An empty second key, as redislock_lock_new refuses it. */
    ASSERT_ERR(redislock_lock_new_multi(c, (const void *const *)k, lens, 2, &l),
               REDISLOCK_EINVAL);
    ASSERT(l == NULL);
}

/* Acquire options a set refuses, each with its reason, nothing sent. */
static void bad_options(th_env *e, redislock_lock *s)
{
    static const char *const what[] = {"reentrant", "owner",     "metadata",
                                       "fair",      "semaphore", "shared"};
    redislock_acquire_options o;
    int i;

    for (i = 0; i < 6; i++) {
        o = th_aopts(1000, 1000, 0);
        o.reentrant = i == 0;
        o.owner = i == 1 ? "me" : NULL;
        o.metadata = i == 2 ? "job" : NULL;
        o.fair = i == 3;
        o.limit = i == 4 ? 2 : 0;
        o.shared = i == 5;
        ASSERT_ERR(redislock_acquire(s, &o), REDISLOCK_EINVAL);
        test_log("a set %s: %s", what[i], redislock_errdetail());
        ASSERT(strstr(redislock_errdetail(), what[i]) != NULL);
        ASSERT_EQ_INT(th_cmd_int(e->r, "DBSIZE"), 0);
    }
}

/* A Redlock client refuses a set with the reason, and sends nothing. */
static void redlock_refuses_set(const char *const *k)
{
    th_servers rs = th_servers_start(3);
    redislock_client *rl = NULL;
    redislock_lock *l = (redislock_lock *)1;
    int i;

    ASSERT_OK(redislock_client_new_redlock(&rl, rs.urls, 3, NULL));
    ASSERT_ERR(set_try(rl, k, 2, &l), REDISLOCK_EINVAL);
    test_log("on Redlock: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "not built for Redlock") != NULL);
    ASSERT(l == NULL);
    for (i = 0; i < 3; i++)
        ASSERT_EQ_INT(th_cmd_int(rs.r[i], "DBSIZE"), 0);
    redislock_client_free(rl);
    th_servers_stop(&rs);
}

void test_set_bad_input_leaves_nothing(void)
{
    static const char *const k[3] = {"b:1", "b:2", "b:3"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *s = th_lock_set(e.c, k, 3);

    bad_sets(e.c);
    ASSERT_EQ_INT(th_cmd_int(e.r, "DBSIZE"), 0);
    bad_options(&e, s);
    /* The handle is unharmed: a plain acquire of the set works. */
    ASSERT_OK(redislock_acquire(s, &o));
    /* A set has no hold-after: refused, and still held. */
    ASSERT_ERR(redislock_release_hold(s, 1000), REDISLOCK_EINVAL);
    test_log("hold-after: %s", redislock_errdetail());
    ASSERT_GT(redislock_valid_ms(s), 0);
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 3, redislock_token(s)), 3);
    ASSERT_GT(th_pttl(e.r, k[2]), 4000);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redlock_refuses_set(k);
    redislock_lock_free(s);
    th_env_stop(&e);
}

/* kill -9 of a set's holder: an overlapping set waiting meanwhile gets
 * in when the lease ends, not before, and within a poll after. */
void test_set_killed_holder_freed_within_ttl(void)
{
    static const char *const k[3] = {"k:a", "k:b", "k:c"};
    static const char *const over[2] = {"k:d", "k:b"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(300, 0, 0);
    redislock_acquire_options wo = th_aopts(5000, 3000, 0);
    redislock_lock *s = th_lock_set(e.c, over, 2);
    int64_t t[2], got;
    th_waiter w;
    int st, pid = th_start_holder(&e, k, 3, &o, t);

    th_waiter_start_lock(&w, s, &wo);
    ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    th_waiter_join_ok(&w, 3000);
    got = w.done_us / 1000;
    test_log("the waiting set got in %lld ms after the holder's set was "
             "taken (lease 300 ms, acquire took %lld ms)",
             (long long)(got - t[1]), (long long)(t[1] - t[0]));
    ASSERT_GE(got, t[0] + 300 - SERVER_MS_SLACK);
    ASSERT_LE(got - t[1], 300 + 100);
    ASSERT_EQ_INT(th_keys_holding(e.r, over, 2, redislock_token(s)), 2);
    ASSERT_OK(redislock_release(s));
    redislock_lock_free(s);
    th_env_stop(&e);
}

/* A set of one key is an ordinary lock (redislock_lock_new's): what a set
 * of several refuses, it takes. */
void test_set_of_one_is_a_lock(void)
{
    th_env e = th_env_start();
    const void *keys[1] = {"one"};
    const size_t lens[1] = {3};
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *l = NULL;

    ASSERT_OK(redislock_lock_new_multi(e.c, keys, lens, 1, &l));
    o.reentrant = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_holds(l), 2);
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release_hold(l, 1000));
    ASSERT_GT(th_pttl(e.r, "one"), 0);
    redislock_lock_free(l);
    th_env_stop(&e);
}

/* How soon after its release a set's waiter must hold its key (a lean
 * script that finds a mark, the full one, a wake-up; on a loaded box
 * under ASan), and how long a waiter's mark may take to show. */
#define LEAN_LATE_MS 1500
#define LEAN_SETUP_MS 5000

/* Three uncontended cycles of a set of 8 keys on c: each acquire is
 * set_take.lua, its 18 keys (each lock and its marker, the one counter,
 * the void marker), and each release set_free.lua alone, over the 8
 * lock keys (one script: two a cycle), its token of the native prefix,
 * every key freed. */
static void lean_cycles(redislock_client *c, redisContext *r)
{
    static const char *const k[8] = {"ln:0", "ln:1", "ln:2", "ln:3",
                                     "ln:4", "ln:5", "ln:6", "ln:7"};
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *s = th_lock_set(c, k, 8);
    long long n0, nkeys = 0;
    int i;

    /* Warm: the scripts loaded, the node's offer read. */
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(redislock_release(s));
    n0 = th_script_calls(r);
    for (i = 0; i < 3; i++) {
        th_slowlog_all(r);
        ASSERT_OK(redislock_acquire(s, &o));
        ASSERT_EQ_INT(th_slowlog_runs(r, &rl__script_set_take, &nkeys), 1);
        ASSERT_EQ_INT(nkeys, 18);
        ASSERT_EQ_INT(th_slowlog_runs(r, &rl__script_set_acquire, &nkeys), 0);
        ASSERT_EQ_INT(strncmp(redislock_token(s), "rl2-", 4), 0);
        ASSERT_EQ_INT(th_keys_holding(r, k, 8, redislock_token(s)), 8);
        th_slowlog_all(r);
        ASSERT_OK(redislock_release(s));
        ASSERT_EQ_INT(th_slowlog_runs(r, &rl__script_set_free, &nkeys), 1);
        ASSERT_EQ_INT(nkeys, 8);
        ASSERT_EQ_INT(th_slowlog_runs(r, &rl__script_set_release, &nkeys), 0);
        ASSERT_EQ_INT(th_keys_existing(r, k, 8), 0);
    }
    ASSERT_EQ_INT(th_script_calls(r) - n0, 6);
    redislock_lock_free(s);
}

/*
 * A set on one node that nobody waits for is released by set_free.lua,
 * its lock keys alone (8 keys where set_release.lua takes 56): by FCALL,
 * and for a user whose ACL refuses Functions by EVALSHA; and once the
 * server has lost its scripts and library (a restart, a failover), the
 * release loads what it lacks and still frees every key.
 */
void test_set_release_lean_uncontended(void)
{
    static const char *const k[8] = {"ln:0", "ln:1", "ln:2", "ln:3",
                                     "ln:4", "ln:5", "ln:6", "ln:7"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_client *c;
    redislock_lock *s;
    char url[128];
    long long nkeys = 0;

    lean_cycles(e.c, e.r);
    freeReplyObject(
        th_cmd(e.r, "ACL SETUSER locker on >pw ~* &* +@all -fcall -function"));
    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d", e.s->port);
    c = th_client_url(url, NULL);
    lean_cycles(c, e.r);
    redislock_client_free(c);
    /* The scripts and the library gone between acquire and release. */
    s = th_lock_set(e.c, k, 8);
    ASSERT_OK(redislock_acquire(s, &o));
    freeReplyObject(th_cmd(e.r, "SCRIPT FLUSH"));
    freeReplyObject(th_cmd(e.r, "FUNCTION FLUSH"));
    th_slowlog_all(e.r);
    ASSERT_OK(redislock_release(s));
    /* Twice: refused for want of the library (logged), then loaded. */
    ASSERT_EQ_INT(th_slowlog_runs(e.r, &rl__script_set_free, &nkeys), 2);
    ASSERT_EQ_INT(th_slowlog_runs(e.r, &rl__script_set_release, &nkeys), 0);
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 8), 0);
    redislock_lock_free(s);
    th_env_stop(&e);
}

/* Waits until key's value is tok with a waiter's mark after it. */
static void wait_marked(redisContext *r, const char *key, const char *tok)
{
    int64_t deadline = th_now_ms() + LEAN_SETUP_MS;
    char want[128];
    redisReply *v;
    int ok;

    snprintf(want, sizeof want, "%s+w", tok);
    do {
        v = th_cmd(r, "GET %s", key);
        ok = v->type == REDIS_REPLY_STRING && strcmp(v->str, want) == 0;
        freeReplyObject(v);
        if (!ok)
            th_sleep_ms(5);
    } while (!ok && th_now_ms() < deadline);
    ASSERT_KEY(r, key, want);
}

/*
 * Waiters of every kind behind keys of a set of 8 whose release tries
 * set_free.lua first: a lock, a fair lock, a semaphore's permit and a
 * reader's share, each on a key of its own. Each marks the key it waits
 * on (the token, then "+w"), so the lean script, finding the marks,
 * writes nothing and leaves the release to set_release.lua, which wakes
 * or hands over to every one: each holds its key within LEAN_LATE_MS of
 * the release, where the set's lease had 30 s to run.
 */
void test_set_release_lean_wakes_waiters(void)
{
    static const char *const k[8] = {"lw:0", "lw:1", "lw:2", "lw:3",
                                     "lw:4", "lw:5", "lw:6", "lw:7"};
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_acquire_options wo[4];
    redislock_lock *s = th_lock_set(e.c, k, 8);
    th_waiter w[4];
    long long nkeys = 0;
    int64_t t0, late;
    int i;

    for (i = 0; i < 4; i++)
        wo[i] = th_aopts(30000, 10000, 0);
    wo[1].fair = 1;
    wo[2].limit = 2;
    wo[3].shared = 1;
    th_script_load(e.r, &rl__script_set_free);
    th_script_load(e.r, &rl__script_set_release);
    ASSERT_OK(redislock_acquire(s, &o));
    for (i = 0; i < 4; i++)
        th_waiter_start(&w[i], e.c, k[1 + 2 * i], &wo[i]);
    for (i = 0; i < 4; i++)
        wait_marked(e.r, k[1 + 2 * i], redislock_token(s));
    th_slowlog_all(e.r);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(s));
    for (i = 0; i < 4; i++) {
        th_waiter_join_ok(&w[i], 5000);
        late = (w[i].done_us - t0) / 1000;
        test_log("waiter %d (key %s) held it %lld ms after the release", i,
                 k[1 + 2 * i], (long long)late);
        ASSERT_LE(late, LEAN_LATE_MS);
    }
    /* The release ran both scripts: set_free.lua found the marks. */
    ASSERT_EQ_INT(th_slowlog_runs(e.r, &rl__script_set_free, &nkeys), 1);
    ASSERT_EQ_INT(th_slowlog_runs(e.r, &rl__script_set_release, &nkeys), 1);
    ASSERT_EQ_INT(nkeys, 56);
    for (i = 0; i < 4; i++) {
        ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", k[2 * i]), 0);
        ASSERT_OK(redislock_release(w[i].l));
        redislock_lock_free(w[i].l);
    }
    redislock_lock_free(s);
    th_env_stop(&e);
}

/*
 * A waiter behind one of a set's keys whose holder's key went without a
 * release script (deleted by hand here, as an operator or another tool
 * might, or released by a woken waiter's last attempt, which marks
 * nothing) still sleeps when a set takes the key: the set holds it
 * unmarked. Its acquire tells it that someone waits (a negated fence),
 * so its release is set_release.lua, which wakes the waiter within
 * LEAN_LATE_MS; set_free.lua alone would leave it asleep until its
 * block ends (the first holder's lease, 20 s here). Sets take tokens of
 * the native prefix on every server, so this holds on each. The keys k
 * (the waiter's is k[1]) are taken by first: set_take.lua for keys of
 * one namespace, set_acquire.lua for keys of two (two counters).
 */
static void set_taker_wakes(const char *const k[3], const rl__script *first)
{
    th_env e = th_env_start();
    redislock_acquire_options ho = th_aopts(20000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 30000, 0);
    redislock_lock *a = th_lock(e.c, k[1]);
    redislock_lock *s = th_lock_set(e.c, k, 3);
    long long nkeys = 0;
    int64_t t_rel;
    th_waiter w;

    th_script_load(e.r, first);
    th_script_load(e.r, &rl__script_set_free);
    th_script_load(e.r, &rl__script_set_release);
    ASSERT_OK(redislock_acquire(a, &ho));
    th_waiter_start(&w, e.c, k[1], &wo);
    th_wait_blocked(e.r, 1, LEAN_SETUP_MS);
    /* The holder's key goes, and nothing wakes the waiter. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL %s", k[1]), 1);
    th_slowlog_all(e.r);
    ASSERT_OK(redislock_acquire(s, &ho));
    ASSERT_EQ_INT(th_slowlog_runs(e.r, first, &nkeys), 1);
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 3, redislock_token(s)), 3);
    th_wait_blocked(e.r, 1, LEAN_SETUP_MS);
    th_slowlog_all(e.r);
    t_rel = th_now_ms();
    ASSERT_OK(redislock_release(s));
    th_waiter_join_ok(&w, LEAN_SETUP_MS + 25000);
    test_log("the waiter took it %lld ms after the set's release",
             (long long)(w.done_us / 1000 - t_rel));
    ASSERT_LE(w.done_us / 1000 - t_rel, LEAN_LATE_MS);
    /* The set knew someone waited: the full release alone. */
    ASSERT_EQ_INT(th_slowlog_runs(e.r, &rl__script_set_free, &nkeys), 0);
    ASSERT_EQ_INT(th_slowlog_runs(e.r, &rl__script_set_release, &nkeys), 1);
    ASSERT_KEY(e.r, k[1], w.token);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s %s", k[0], k[2]), 0);
    ASSERT_OK(redislock_release(w.l));
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    redislock_lock_free(w.l);
    redislock_lock_free(s);
    redislock_lock_free(a);
    th_env_stop(&e);
}

void test_set_taker_behind_waiters_wakes_them(void)
{
    static const char *const one[3] = {"lt:0", "lt:1", "lt:2"};
    static const char *const two[3] = {"lt:0", "lu:1", "lt:2"};

    set_taker_wakes(one, &rl__script_set_take);
    set_taker_wakes(two, &rl__script_set_acquire);
}

/*
 * A set's waiter and a lock's waiter blocked behind the same held key
 * (the set first, so that the server serves its BLPOP first): the
 * holder's release pushes one wake, which the set takes. Its attempt is
 * refused by its other key, held all along, and it goes to wait behind
 * that one. The lock's waiter must not sleep on behind a free key until
 * its block ends (15 s here): the set's refused attempt passes the wake
 * on (set_acquire.lua's ARGV[8], the key it was woken from), and the
 * lock's waiter holds the key within LEAN_LATE_MS of the release. With
 * keys in the other order the set is refused before it reaches the key
 * it waited behind: the wake is passed on all the same.
 */
static void set_waiter_passes_wake(const char *held, const char *other,
                                   int other_first)
{
    const char *k[2] = {other_first ? other : held, other_first ? held : other};
    th_env e = th_env_start();
    redislock_acquire_options ho = th_aopts(30000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 30000, 0);
    redislock_lock *h = th_lock(e.c, held), *x = th_lock(e.c, other);
    redislock_lock *s = th_lock_set(e.c, k, 2);
    th_waiter ws, w;
    int64_t t0, late;

    ASSERT_OK(redislock_acquire(h, &ho));
    th_waiter_start_lock(&ws, s, &wo);
    th_wait_blocked(e.r, 1, LEAN_SETUP_MS);
    th_waiter_start(&w, e.c, held, &wo);
    th_wait_blocked(e.r, 2, LEAN_SETUP_MS);
    /* The set's other key is taken while it waits behind the first. */
    ASSERT_OK(redislock_acquire(x, &ho));
    t0 = th_now_us();
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w, LEAN_SETUP_MS + 20000);
    late = (w.done_us - t0) / 1000;
    test_log("the lock's waiter held %s %lld ms after the release", held,
             (long long)late);
    ASSERT_LE(late, LEAN_LATE_MS);
    ASSERT_KEY(e.r, held, w.token);
    /* The set waits on, behind the other key, and takes both once both
     * are released. */
    th_wait_blocked(e.r, 1, LEAN_SETUP_MS);
    ASSERT_OK(redislock_release(x));
    ASSERT_OK(redislock_release(w.l));
    th_waiter_join_ok(&ws, LEAN_SETUP_MS);
    ASSERT_EQ_INT(th_keys_holding(e.r, k, 2, redislock_token(s)), 2);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_keys_existing(e.r, k, 2), 0);
    redislock_lock_free(w.l);
    redislock_lock_free(s);
    redislock_lock_free(x);
    redislock_lock_free(h);
    th_env_stop(&e);
}

void test_set_waiter_passes_wake_on(void)
{
    set_waiter_passes_wake("pw:held", "pw:other", 0);
}

void test_set_waiter_passes_wake_on_refused_first(void)
{
    set_waiter_passes_wake("pw:held", "pw:other", 1);
}
