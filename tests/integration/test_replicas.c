/*
 * replicas: the replica-sync guard. A master with one replica (both
 * private servers); WAIT after acquire and extend tells whether the
 * replica has the lock, so that a failover cannot forget it silently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "rep:job"

typedef struct pair {
    th_server *master, *replica;
    redisContext *m, *r;
} pair;

static pair pair_start(void)
{
    pair p;
    char conf[96];
    char *info;
    int64_t t0 = th_now_ms();

    p.master = th_server_start(
        &(th_server_opts){.extra_config = "repl-diskless-sync-delay 0\n"});
    snprintf(conf, sizeof conf, "replicaof 127.0.0.1 %d\n", p.master->port);
    /* The master would otherwise wait 5 s for more replicas to sync. */
    p.replica = th_server_start(&(th_server_opts){.extra_config = conf});
    p.m = th_server_redis(p.master);
    p.r = th_server_redis(p.replica);
    /* Bounded wait for the first sync. */
    for (;;) {
        info = th_cmd_str(p.r, NULL, "INFO replication");
        if (info != NULL && strstr(info, "master_link_status:up") != NULL)
            break;
        free(info);
        ASSERT_LT(th_now_ms() - t0, 10000);
        th_sleep_ms(10);
    }
    free(info);
    return p;
}

static void pair_stop(pair *p)
{
    redisFree(p->m);
    redisFree(p->r);
    th_server_stop(p->replica);
    th_server_stop(p->master);
}

static redislock_client *guarded(const pair *p, int lenient, int64_t ms)
{
    redislock_options o = {0};

    o.wait_replicas = 1;
    o.wait_replicas_timeout_ms = ms;
    o.wait_replicas_lenient = lenient;
    return th_client_url(p->master->unix_url, &o);
}

void test_replicas_confirmed(void)
{
    pair p = pair_start();
    /* Generous: a loaded machine may take a while to ack. */
    redislock_client *c = guarded(&p, 0, 3000), *plain = th_client(p.master);
    redislock_lock *l = th_lock(c, KEY), *u = th_lock(plain, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    char *v;

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    /* Confirmed means the replica has it already: read it there. */
    v = th_cmd_str(p.r, NULL, "GET " KEY);
    ASSERT_EQ_STR(v, redislock_token(l));
    free(v);
    ASSERT_OK(redislock_extend(l, 20000));
    ASSERT_EQ_INT(redislock_replicas(l), 1);
    ASSERT_GT(th_pttl(p.r, KEY), 19000);
    ASSERT_OK(redislock_release(l));
    /* Without the guard nothing is asked. */
    ASSERT_OK(redislock_acquire(u, &o));
    ASSERT_EQ_INT(redislock_replicas(u), -1);
    ASSERT_OK(redislock_release(u));
    redislock_lock_free(u);
    redislock_lock_free(l);
    redislock_client_free(plain);
    redislock_client_free(c);
    pair_stop(&p);
}

/* The replica stalls: strict mode gives the lock back and says why;
 * lenient mode keeps it and reports 0 replicas. */
void test_replicas_unconfirmed(void)
{
    pair p = pair_start();
    redislock_client *strict = guarded(&p, 0, 200);
    redislock_client *lenient = guarded(&p, 1, 200);
    redislock_lock *l = th_lock(strict, KEY), *w = th_lock(lenient, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    int64_t t0, took;

    th_server_pause(p.replica);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_ENOTDURABLE);
    took = th_now_ms() - t0;
    test_log("replica stopped: ENOTDURABLE after %lld ms (WAIT 200 ms): %s",
             (long long)took, redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "0 of 1 replicas") != NULL);
    ASSERT_GE(took, 190);
    ASSERT_LT(took, 1000);
    ASSERT_EQ_INT(redislock_replicas(l), 0);
    ASSERT(redislock_token(l) == NULL);
    ASSERT_KEY(p.m, KEY, NULL);
    ASSERT_OK(redislock_acquire(w, &o));
    ASSERT_EQ_INT(redislock_replicas(w), 0);
    ASSERT_OK(redislock_check(w));
    ASSERT_EQ_INT(th_cmd_int(p.m, "EXISTS " KEY), 1);
    ASSERT_OK(redislock_release(w));
    /* Strict extend: refused, and the lock kept (the master has it). */
    th_server_resume(p.replica);
    /* Caught up again before the next confirmation is asked for. */
    ASSERT_EQ_INT(th_cmd_int(p.m, "WAIT 1 10000"), 1);
    ASSERT_OK(redislock_acquire(l, &o));
    th_server_pause(p.replica);
    ASSERT_ERR(redislock_extend(l, 20000), REDISLOCK_ENOTDURABLE);
    ASSERT(redislock_token(l) != NULL);
    th_server_resume(p.replica);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(w);
    redislock_lock_free(l);
    redislock_client_free(lenient);
    redislock_client_free(strict);
    pair_stop(&p);
}
