/*
 * timeout: a server that accepts connections but never answers (SIGSTOP:
 * the kernel still completes connects into the listen backlog). Every call
 * must give up after its timeout, not hang, and once the server is back
 * the same client must work again without stale replies.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define TIMEOUT_MS 300
/* A call may take a connect plus a command timeout, plus scheduling. */
#define BOUND_MS 1500

/* expr returns want within BOUND_MS. */
#define ASSERT_TIMED_ERR(expr, want)                                          \
    do {                                                                      \
        int64_t t0_ = th_now_ms();                                            \
        ASSERT_ERR(expr, want);                                               \
        test_log("%s: %lld ms", #expr, (long long)(th_now_ms() - t0_));       \
        ASSERT_LT(th_now_ms() - t0_, BOUND_MS);                               \
    } while (0)

static void connect_while_stopped(const char *url,
                                  const redislock_options *o)
{
    redislock_client *c = NULL;
    int64_t t0 = th_now_ms();
    redislock_err e = redislock_client_new(&c, url, o);

    test_log("client_new while stopped: %s after %lld ms: %s",
             redislock_errname(e), (long long)(th_now_ms() - t0),
             redislock_errdetail());
    ASSERT(e == REDISLOCK_ETIMEDOUT || e == REDISLOCK_ECONNECT);
    ASSERT(c == NULL);
    ASSERT_LT(th_now_ms() - t0, BOUND_MS);
}

/* After SIGCONT: fresh work through the same client, checked on the key. */
static void assert_recovered(redislock_client *c, redisContext *r)
{
    redislock_lock *l = th_lock(c, "to:after");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    int64_t ttl = 0;

    ASSERT_OK(redislock_acquire(l, &o));
    /* A reused connection would read a reply meant for a timed-out call. */
    ASSERT_KEY(r, "to:after", redislock_token(l));
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_GT(ttl, 4000);
    ASSERT_LE(ttl, 5000);
    ASSERT_OK(redislock_extend(l, 8000));
    ASSERT_GT(th_pttl(r, "to:after"), 7000);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS to:after"), 0);
    redislock_lock_free(l);
}

static void check_stopped_server(int tcp)
{
    th_server *s = th_server_start(NULL);
    const char *url = tcp ? s->tcp_url : s->unix_url;
    redisContext *r = th_server_redis(s);
    redislock_options o = {0};
    redislock_client *c;
    redislock_lock *rel, *ext, *acq;
    int64_t ttl;

    o.connect_timeout_ms = TIMEOUT_MS;
    o.command_timeout_ms = TIMEOUT_MS;
    c = th_client_url(url, &o);
    rel = th_lock(c, "to:rel");
    ext = th_lock(c, "to:ext");
    acq = th_lock(c, "to:acq");
    ASSERT_OK(redislock_acquire(rel, NULL));
    ASSERT_OK(redislock_acquire(ext, NULL));

    th_server_pause(s);
    connect_while_stopped(url, &o);
    ASSERT_TIMED_ERR(redislock_acquire(acq, NULL), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED_ERR(redislock_release(rel), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED_ERR(redislock_extend(ext, 60000), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED_ERR(redislock_ttl(acq, &ttl), REDISLOCK_ETIMEDOUT);
    /* Twice: the pool must not hand out a connection still waiting. */
    ASSERT_TIMED_ERR(redislock_ttl(acq, &ttl), REDISLOCK_ETIMEDOUT);
    th_server_resume(s);

    assert_recovered(c, r);
    redislock_client_free(th_client_url(url, &o));
    redislock_lock_free(rel);
    redislock_lock_free(ext);
    redislock_lock_free(acq);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

void test_timeout_stopped_server_tcp(void)
{
    check_stopped_server(1);
}

void test_timeout_stopped_server_unix(void)
{
    check_stopped_server(0);
}
