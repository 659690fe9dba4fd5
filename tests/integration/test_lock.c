/*
 * lock: acquire, contend, release, extend, ttl and adopt against a real
 * server, checking the key itself through a separate hiredis connection,
 * and the timing of waits (bounded by the deadline or the holder's TTL).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Scheduling and round trips on a loaded 2-core box under ASan. */
#define SLACK_MS 300


void test_lock_acquire_sets_token_and_ttl(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "lk:basic");
    redislock_lock *d = th_lock(e.c, "lk:default");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    const void *key;
    size_t len = 0;
    int64_t ttl = 0;

    ASSERT(redislock_token(l) == NULL);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_TOKEN(redislock_token(l));
    ASSERT_KEY(e.r, "lk:basic", redislock_token(l));
    ASSERT_GT(th_pttl(e.r, "lk:basic"), 5000 - SLACK_MS);
    ASSERT_LE(th_pttl(e.r, "lk:basic"), 5000);
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_GT(ttl, 5000 - SLACK_MS);
    ASSERT_LE(ttl, 5000);
    key = redislock_key(l, &len);
    ASSERT_EQ_INT(len, 8);
    ASSERT_EQ_MEM(key, "lk:basic", 8);
    ASSERT(redislock_key(l, NULL) == key);

    /* NULL options: the default 30 s lease. */
    ASSERT_OK(redislock_acquire(d, NULL));
    ASSERT_KEY(e.r, "lk:default", redislock_token(d));
    ASSERT_GT(th_pttl(e.r, "lk:default"), REDISLOCK_DEFAULT_TTL_MS - SLACK_MS);
    ASSERT_LE(th_pttl(e.r, "lk:default"), REDISLOCK_DEFAULT_TTL_MS);
    ASSERT(strcmp(redislock_token(l), redislock_token(d)) != 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 2);

    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release(d));
    redislock_lock_free(l);
    redislock_lock_free(d);
    th_env_stop(&e);
}

void test_lock_second_handle_gets_eheld(void)
{
    th_env e = th_env_start();
    redislock_client *c2 = th_client(e.s);
    redislock_lock *a = th_lock(e.c, "lk:c");
    redislock_lock *b = th_lock(e.c, "lk:c");
    redislock_lock *x = th_lock(c2, "lk:c");
    char tok[64];
    int64_t t0;

    ASSERT_OK(redislock_acquire(a, NULL));
    strcpy(tok, redislock_token(a));
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(b, NULL), REDISLOCK_EHELD);
    ASSERT_ERR(redislock_acquire(x, NULL), REDISLOCK_EHELD);
    /* No wait by default: one try each. */
    ASSERT_LT(th_now_ms() - t0, SLACK_MS);
    ASSERT(redislock_token(b) == NULL);
    ASSERT(redislock_token(x) == NULL);
    ASSERT_KEY(e.r, "lk:c", tok);
    ASSERT_EQ_STR(redislock_token(a), tok);

    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_acquire(x, NULL));
    ASSERT_KEY(e.r, "lk:c", redislock_token(x));
    ASSERT_ERR(redislock_acquire(a, NULL), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(x));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(x);
    redislock_client_free(c2);
    th_env_stop(&e);
}

void test_lock_release_frees_key(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "lk:r");
    char tok[64];
    int64_t ttl = 0;

    ASSERT_OK(redislock_acquire(l, NULL));
    strcpy(tok, redislock_token(l));
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS lk:r"), 0);
    ASSERT(redislock_token(l) == NULL);
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_EQ_INT(ttl, REDISLOCK_TTL_FREE);

    /* The same handle takes it again, with a fresh token. */
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_TOKEN(redislock_token(l));
    ASSERT(strcmp(redislock_token(l), tok) != 0);
    ASSERT_KEY(e.r, "lk:r", redislock_token(l));
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_lock_extend_resets_ttl(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "lk:x");
    redislock_acquire_options o = th_aopts(1000, 0, 0);
    char tok[64];
    int64_t ttl = 0;

    ASSERT_OK(redislock_acquire(l, &o));
    strcpy(tok, redislock_token(l));
    ASSERT_OK(redislock_extend(l, 20000));
    ASSERT_GT(th_pttl(e.r, "lk:x"), 20000 - SLACK_MS);
    ASSERT_LE(th_pttl(e.r, "lk:x"), 20000);
    ASSERT_EQ_STR(redislock_token(l), tok);
    ASSERT_KEY(e.r, "lk:x", tok);

    /* Extending never shortens: a shorter TTL leaves the longer lease,
     * and the handle's validity, as they were. */
    ASSERT_OK(redislock_extend(l, 3000));
    ASSERT_GT(th_pttl(e.r, "lk:x"), 20000 - 2 * SLACK_MS);
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_GT(ttl, 20000 - 2 * SLACK_MS);
    ASSERT_GT(redislock_valid_ms(l), 3000);
    ASSERT_LE(redislock_valid_ms(l), th_pttl(e.r, "lk:x"));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_lock_ttl_reports_state(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "lk:t");
    redislock_lock *other = th_lock(e.c, "lk:t");
    redislock_acquire_options o = th_aopts(8000, 0, 0);
    int64_t ttl = 0;

    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_EQ_INT(ttl, REDISLOCK_TTL_FREE);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_GT(ttl, 8000 - SLACK_MS);
    ASSERT_LE(ttl, 8000);
    /* Whoever holds it: a handle without a token sees the same lease. */
    ttl = 0;
    ASSERT_OK(redislock_ttl(other, &ttl));
    ASSERT_GT(ttl, 8000 - SLACK_MS);
    ASSERT_LE(ttl, 8000);
    ASSERT_OK(redislock_release(l));

    freeReplyObject(th_cmd(e.r, "SET lk:t forever"));
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_EQ_INT(ttl, REDISLOCK_TTL_NO_EXPIRY);
    ASSERT_KEY(e.r, "lk:t", "forever");
    redislock_lock_free(l);
    redislock_lock_free(other);
    th_env_stop(&e);
}

void test_lock_adopt_acts_for_token(void)
{
    th_env e = th_env_start();
    redislock_client *c2 = th_client(e.s);
    redislock_lock *a = th_lock(e.c, "lk:a");
    redislock_lock *b = th_lock(c2, "lk:a");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    char tok[64];

    ASSERT_OK(redislock_acquire(a, &o));
    strcpy(tok, redislock_token(a));
    ASSERT_OK(redislock_adopt(b, tok));
    ASSERT_EQ_STR(redislock_token(b), tok);
    /* Nothing is sent by adopt: the key is as it was. */
    ASSERT_KEY(e.r, "lk:a", tok);
    ASSERT_LE(th_pttl(e.r, "lk:a"), 5000);

    ASSERT_OK(redislock_extend(b, 20000));
    ASSERT_GT(th_pttl(e.r, "lk:a"), 20000 - SLACK_MS);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS lk:a"), 0);
    ASSERT(redislock_token(b) == NULL);
    /* The original handle finds the lock free. */
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_client_free(c2);
    th_env_stop(&e);
}

void test_lock_wait_deadline_returns_eheld(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "lk:w");
    redislock_lock *w = th_lock(e.c, "lk:w");
    redislock_acquire_options ho = th_aopts(20000, 0, 0);
    redislock_acquire_options wo = th_aopts(1000, 600, 50);
    int64_t t0, dt;

    ASSERT_OK(redislock_acquire(h, &ho));
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(w, &wo), REDISLOCK_EHELD);
    dt = th_now_ms() - t0;
    ASSERT_GE(dt, 600 - 10);
    ASSERT_LE(dt, 600 + SLACK_MS);

    /* A retry delay far beyond the deadline is cut short by it. */
    wo = th_aopts(1000, 400, 10000);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(w, &wo), REDISLOCK_EHELD);
    dt = th_now_ms() - t0;
    ASSERT_GE(dt, 400 - 10);
    ASSERT_LE(dt, 400 + SLACK_MS);

    ASSERT(redislock_token(w) == NULL);
    ASSERT_KEY(e.r, "lk:w", redislock_token(h));
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(h);
    redislock_lock_free(w);
    th_env_stop(&e);
}

/* Releases a lock after a delay, from another thread and client. */
typedef struct releaser {
    pthread_t thread;
    redislock_lock *l;
    int64_t delay_ms;
    int64_t released_at;
    redislock_err err;
} releaser;

static void *release_later(void *arg)
{
    releaser *r = arg;

    th_sleep_ms(r->delay_ms);
    r->released_at = th_now_ms();
    r->err = redislock_release(r->l);
    return NULL;
}

/* Waits (wait_ms, retry_ms) while the holder releases after 300 ms. */
static void wait_for_release(th_env *e, int64_t wait_ms, int64_t retry_ms)
{
    redislock_client *c2 = th_client(e->s);
    releaser rel = {0};
    redislock_lock *w = th_lock(e->c, "lk:wr");
    redislock_acquire_options ho = th_aopts(20000, 0, 0);
    redislock_acquire_options wo = th_aopts(5000, wait_ms, retry_ms);
    int64_t t0, dt;

    rel.l = th_lock(c2, "lk:wr");
    rel.delay_ms = 300;
    ASSERT_OK(redislock_acquire(rel.l, &ho));
    t0 = th_now_ms();
    ASSERT_EQ_INT(pthread_create(&rel.thread, NULL, release_later, &rel), 0);
    ASSERT_OK(redislock_acquire(w, &wo));
    dt = th_now_ms() - t0;
    ASSERT_EQ_INT(pthread_join(rel.thread, NULL), 0);
    ASSERT_OK(rel.err);
    ASSERT_GE(dt, 300 - 10);
    /* Noticed within about one retry delay of the release. */
    ASSERT_LE(th_now_ms() - rel.released_at, retry_ms + SLACK_MS);
    ASSERT_KEY(e->r, "lk:wr", redislock_token(w));
    ASSERT_OK(redislock_release(w));
    redislock_lock_free(w);
    redislock_lock_free(rel.l);
    redislock_client_free(c2);
}

void test_lock_wait_succeeds_on_release(void)
{
    th_env e = th_env_start();

    wait_for_release(&e, 5000, 100);
    th_env_stop(&e);
}

/* The holder never releases; its 700 ms lease runs out. */
static void wait_for_expiry(th_env *e, int64_t wait_ms, int64_t retry_ms)
{
    redislock_lock *h = th_lock(e->c, "lk:we");
    redislock_lock *w = th_lock(e->c, "lk:we");
    redislock_acquire_options ho = th_aopts(700, 0, 0);
    redislock_acquire_options wo = th_aopts(5000, wait_ms, retry_ms);
    int64_t t0, dt;

    t0 = th_now_ms();
    ASSERT_OK(redislock_acquire(h, &ho));
    redislock_lock_free(h);
    ASSERT_OK(redislock_acquire(w, &wo));
    dt = th_now_ms() - t0;
    ASSERT_GE(dt, 700 - 10);
    /* Pauses never outlast the holder's TTL, however long the delay. */
    ASSERT_LE(dt, 700 + SLACK_MS);
    ASSERT_KEY(e->r, "lk:we", redislock_token(w));
    ASSERT_GT(th_pttl(e->r, "lk:we"), 5000 - SLACK_MS);
    ASSERT_OK(redislock_release(w));
    redislock_lock_free(w);
}

void test_lock_wait_succeeds_on_expiry(void)
{
    th_env e = th_env_start();

    wait_for_expiry(&e, 5000, 10000);
    th_env_stop(&e);
}

void test_lock_wait_forever_succeeds(void)
{
    th_env e = th_env_start();

    wait_for_expiry(&e, REDISLOCK_WAIT_FOREVER, 10000);
    wait_for_expiry(&e, REDISLOCK_WAIT_FOREVER, 50);
    wait_for_release(&e, REDISLOCK_WAIT_FOREVER, 100);
    th_env_stop(&e);
}

void test_lock_release_without_token_einval(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "lk:n");
    redislock_lock *l = th_lock(e.c, "lk:n");
    char tok[64];

    /* Never acquired: nothing to release, whoever holds the key. */
    ASSERT_ERR(redislock_release(l), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_extend(l, 1000), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_acquire(h, NULL));
    strcpy(tok, redislock_token(h));
    ASSERT_ERR(redislock_release(l), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_extend(l, 1000), REDISLOCK_EINVAL);
    ASSERT_KEY(e.r, "lk:n", tok);
    ASSERT_GT(th_pttl(e.r, "lk:n"), REDISLOCK_DEFAULT_TTL_MS - SLACK_MS);

    /* After a release the handle holds no token either. */
    ASSERT_OK(redislock_release(h));
    ASSERT_ERR(redislock_release(h), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_lock_free(h);
    redislock_lock_free(l);
    th_env_stop(&e);
}
