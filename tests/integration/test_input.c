/*
 * input: what callers get wrong. Bad lengths, NULLs and TTLs are refused
 * with EINVAL before anything reaches Redis; binary keys are sent as they
 * are (no command injection through CR LF); a wrong token never touches
 * the real owner's lock.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "test.h"

#define SLACK_MS 300


void test_input_key_length(void)
{
    th_env e = th_env_start();
    char *big = malloc(REDISLOCK_KEY_MAX + 1);
    redislock_lock *l = NULL;

    ASSERT(big != NULL);
    memset(big, 'k', REDISLOCK_KEY_MAX + 1);
    ASSERT_ERR(redislock_lock_new(e.c, "x", 0, &l), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new(e.c, big, REDISLOCK_KEY_MAX + 1, &l),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new(e.c, big, SIZE_MAX, &l), REDISLOCK_EINVAL);

    /* The longest key is fine, and locks exactly those bytes. */
    ASSERT_OK(redislock_lock_new(e.c, big, REDISLOCK_KEY_MAX, &l));
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %b", big, (size_t)REDISLOCK_KEY_MAX),
                  1);
    ASSERT_EQ_INT(th_lock_keys(e.r), 1);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_lock_free(l);
    free(big);
    th_env_stop(&e);
}

/* A lock key that is a helper key's name is refused (with the client's
 * prefix too): a namespace's fencing counter as a lock would be written by
 * every acquire of that namespace. Nothing is written. */
void test_input_key_helper_name(void)
{
    th_env e = th_env_start();
    redislock_options o = {0};
    redislock_client *pc;
    redislock_lock *l = NULL;
    const void *set[2] = {"in:ok", "in:redislock:rl-fence"};
    const size_t setlen[2] = {5, 21};

    ASSERT_ERR(redislock_lock_new(e.c, "in:redislock:rl-fence", 21, &l),
               REDISLOCK_EINVAL);
    ASSERT(l == NULL);
    ASSERT(strstr(redislock_errdetail(), "helper keys") != NULL);
    ASSERT_ERR(redislock_lock_new(e.c, "redislock:rl-fence", 18, &l),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new(e.c, "in{in}:rl-wake", 14, &l),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new_multi(e.c, set, setlen, 2, &l),
               REDISLOCK_EINVAL);
    ASSERT(l == NULL);
    /* The prefix is part of the name. */
    o.prefix = "in:";
    ASSERT_OK(redislock_client_new(&pc, e.s->unix_url, &o));
    ASSERT_ERR(redislock_lock_new(pc, "redislock:rl-fence", 18, &l),
               REDISLOCK_EINVAL);
    /* Names that only resemble one are lock keys like any other. */
    ASSERT_OK(redislock_lock_new(e.c, "in:redislock:rl-fencer", 22, &l));
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    redislock_client_free(pc);
    th_env_stop(&e);
}

void test_input_null_args(void)
{
    th_env e = th_env_start();
    redislock_client *c = e.c;
    redislock_lock *l = th_lock(e.c, "in:null"), *out = NULL;
    int64_t ttl;

    ASSERT_ERR(redislock_client_new(NULL, e.s->unix_url, NULL),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_client_new(&c, NULL, NULL), REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    ASSERT_ERR(redislock_lock_new(NULL, "k", 1, &out), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new(e.c, NULL, 1, &out), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_lock_new(e.c, "k", 1, NULL), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_acquire(NULL, NULL), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_release(NULL), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_extend(NULL, 1000), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_adopt(NULL, TH_WRONG_TOKEN), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_adopt(l, NULL), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_ttl(NULL, &ttl), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_ttl(l, NULL), REDISLOCK_EINVAL);
    redislock_lock_free(NULL);
    redislock_client_free(NULL);

    /* None of it reached the server or broke the handle. */
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_input_key_binary_safe(void)
{
    static const char key[] = "a\r\nDEL victim\r\n\0x";
    const size_t len = sizeof key - 1;
    th_env e = th_env_start();
    redislock_lock *l = NULL, *prefix;
    const void *k;
    size_t klen = 0;
    char *v;

    freeReplyObject(th_cmd(e.r, "SET victim alive"));
    ASSERT_OK(redislock_lock_new(e.c, key, len, &l));
    k = redislock_key(l, &klen);
    ASSERT_EQ_INT(klen, len);
    ASSERT_EQ_MEM(k, key, len);
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %b", key, len), 1);
    v = th_cmd_str(e.r, NULL, "GET %b", key, len);
    ASSERT_EQ_STR(v, redislock_token(l));
    free(v);
    ASSERT_KEY(e.r, "victim", "alive");
    ASSERT_EQ_INT(th_lock_keys(e.r), 2);

    /* The key up to the NUL is a different key, and free. */
    prefix = th_lock(e.c, key);
    ASSERT_OK(redislock_acquire(prefix, NULL));
    ASSERT_EQ_INT(th_lock_keys(e.r), 3);
    ASSERT_OK(redislock_release(prefix));

    ASSERT_OK(redislock_extend(l, 20000));
    ASSERT_GT(th_cmd_int(e.r, "PTTL %b", key, len), 20000 - SLACK_MS);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %b", key, len), 0);
    ASSERT_KEY(e.r, "victim", "alive");
    ASSERT_EQ_INT(th_lock_keys(e.r), 1);
    redislock_lock_free(l);
    redislock_lock_free(prefix);
    th_env_stop(&e);
}

void test_input_acquire_ttl_range(void)
{
    static const int64_t bad[] = {-1, -1000, INT64_MIN,
                                  REDISLOCK_TTL_MAX_MS + 1, INT64_MAX};
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "in:ttl");
    redislock_acquire_options o = th_aopts(0, 0, 0);
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.ttl_ms = bad[i];
        ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EINVAL);
        ASSERT(redislock_token(l) == NULL);
    }
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);

    /* 0 is not "no lease": all-zero options mean the default 30 s. */
    o.ttl_ms = 0;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_GT(th_pttl(e.r, "in:ttl"), REDISLOCK_DEFAULT_TTL_MS - SLACK_MS);
    ASSERT_LE(th_pttl(e.r, "in:ttl"), REDISLOCK_DEFAULT_TTL_MS);
    ASSERT_OK(redislock_release(l));

    /* The limits themselves are accepted. */
    o.ttl_ms = REDISLOCK_TTL_MAX_MS;
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_GT(th_pttl(e.r, "in:ttl"), REDISLOCK_TTL_MAX_MS - 5000);
    ASSERT_OK(redislock_release(l));
    o.ttl_ms = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_input_extend_ttl_range(void)
{
    static const int64_t bad[] = {0, -1, INT64_MIN, REDISLOCK_TTL_MAX_MS + 1,
                                  INT64_MAX};
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "in:ext");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    char tok[64];
    size_t i;

    ASSERT_OK(redislock_acquire(l, &o));
    strcpy(tok, redislock_token(l));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ASSERT_ERR(redislock_extend(l, bad[i]), REDISLOCK_EINVAL);
    /* Still held, by the same token, with the lease it had. */
    ASSERT_EQ_STR(redislock_token(l), tok);
    ASSERT_KEY(e.r, "in:ext", tok);
    ASSERT_GT(th_pttl(e.r, "in:ext"), 10000 - SLACK_MS);
    ASSERT_LE(th_pttl(e.r, "in:ext"), 10000);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}

void test_input_wrong_token_elost(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "in:w");
    redislock_lock *b = th_lock(e.c, "in:w");
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    char tok[64];

    ASSERT_OK(redislock_acquire(a, &o));
    strcpy(tok, redislock_token(a));
    ASSERT_OK(redislock_adopt(b, TH_WRONG_TOKEN));
    ASSERT_EQ_STR(redislock_token(b), TH_WRONG_TOKEN);
    ASSERT_ERR(redislock_release(b), REDISLOCK_ELOST);
    ASSERT(redislock_token(b) == NULL);
    ASSERT_KEY(e.r, "in:w", tok);

    ASSERT_OK(redislock_adopt(b, TH_WRONG_TOKEN));
    ASSERT_ERR(redislock_extend(b, 600000), REDISLOCK_ELOST);
    ASSERT_KEY(e.r, "in:w", tok);
    ASSERT_LE(th_pttl(e.r, "in:w"), 10000);
    ASSERT_GT(th_pttl(e.r, "in:w"), 10000 - SLACK_MS);

    ASSERT_OK(redislock_release(a));
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}
