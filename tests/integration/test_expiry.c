/*
 * expiry: a lease that runs out while "held". The old owner must learn
 * that it lost the lock (EEXPIRED when free, ELOST when someone else took
 * it), and must never delete, extend or re-create someone else's lock.
 */
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define SHORT_TTL_MS 150
#define SLACK_MS 300

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
    redislock_lock *old; /* Acquired with SHORT_TTL_MS; now expired. */
} env;

/* Acquires key for SHORT_TTL_MS and waits until the lease has run out. */
static env env_expired(const char *key)
{
    redislock_acquire_options o = th_aopts(SHORT_TTL_MS, 0, 0);
    env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    e.old = th_lock(e.c, key);
    ASSERT_OK(redislock_acquire(e.old, &o));
    ASSERT(th_wait_key_gone(e.r, key, strlen(key), SHORT_TTL_MS + 2000));
    return e;
}

static void env_stop(env *e)
{
    redislock_lock_free(e->old);
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

void test_expiry_release_returns_eexpired(void)
{
    env e = env_expired("ex:r");

    ASSERT_ERR(redislock_release(e.old), REDISLOCK_EEXPIRED);
    ASSERT(redislock_token(e.old) == NULL);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS ex:r"), 0);
    /* Free again: the same handle can take it. */
    ASSERT_OK(redislock_acquire(e.old, NULL));
    ASSERT_KEY(e.r, "ex:r", redislock_token(e.old));
    ASSERT_OK(redislock_release(e.old));
    env_stop(&e);
}

void test_expiry_extend_does_not_recreate(void)
{
    env e = env_expired("ex:x");

    ASSERT_ERR(redislock_extend(e.old, 60000), REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS ex:x"), 0);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    env_stop(&e);
}

/* A new owner takes the expired lock; returns its handle. */
static redislock_lock *new_owner(env *e, const char *key, char *tok)
{
    redislock_lock *n = th_lock(e->c, key);
    redislock_acquire_options o = th_aopts(5000, 0, 0);

    ASSERT_OK(redislock_acquire(n, &o));
    strcpy(tok, redislock_token(n));
    return n;
}

void test_expiry_release_spares_next_owner(void)
{
    env e = env_expired("ex:n");
    char tok[64];
    redislock_lock *n = new_owner(&e, "ex:n", tok);

    ASSERT_ERR(redislock_release(e.old), REDISLOCK_ELOST);
    ASSERT(redislock_token(e.old) == NULL);
    ASSERT_KEY(e.r, "ex:n", tok);
    ASSERT_GT(th_pttl(e.r, "ex:n"), 5000 - SLACK_MS);
    ASSERT_OK(redislock_release(n));
    redislock_lock_free(n);
    env_stop(&e);
}

void test_expiry_extend_spares_next_owner(void)
{
    env e = env_expired("ex:e");
    char tok[64];
    redislock_lock *n = new_owner(&e, "ex:e", tok);

    ASSERT_ERR(redislock_extend(e.old, 60000), REDISLOCK_ELOST);
    ASSERT_KEY(e.r, "ex:e", tok);
    /* The new owner's lease is untouched, not stretched to 60 s. */
    ASSERT_LE(th_pttl(e.r, "ex:e"), 5000);
    ASSERT_GT(th_pttl(e.r, "ex:e"), 5000 - SLACK_MS);
    ASSERT_OK(redislock_release(n));
    redislock_lock_free(n);
    env_stop(&e);
}
