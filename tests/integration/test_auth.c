/*
 * auth: passwords from the URL, the options and REDISCLI_AUTH (in that
 * order of precedence: options, URL, environment), ACL users, and EAUTH
 * when the server says no.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "test.h"

#define PASS "s3cret"

static th_server *start_with_password(void)
{
    th_server_opts o = {.requirepass = PASS};

    /* A password from the caller's shell must not leak into the test. */
    unsetenv("REDISCLI_AUTH");
    return th_server_start(&o);
}

/* A full round trip through url (opts may be NULL). */
static void assert_works(const th_server *s, const char *url,
                         const redislock_options *opts)
{
    redislock_client *c = th_client_url(url, opts);
    redislock_lock *l = th_lock(c, "auth:k");
    redisContext *r = th_server_redis(s);

    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_KEY(r, "auth:k", redislock_token(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
}

static void assert_eauth(const char *url, const redislock_options *opts)
{
    redislock_client *c = NULL;

    ASSERT_ERR(redislock_client_new(&c, url, opts), REDISLOCK_EAUTH);
    ASSERT(c == NULL);
}

void test_auth_wrong_password_eauth(void)
{
    th_server *s = start_with_password();
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_err e;
    char url[256];

    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", s->port);
    assert_eauth(url, NULL);
    snprintf(url, sizeof url, "redis://default:wrong@127.0.0.1:%d", s->port);
    assert_eauth(url, NULL);

    /* No password at all: refused at connect or at the first command. */
    e = redislock_client_new(&c, s->tcp_url, NULL);
    if (e == REDISLOCK_OK) {
        l = th_lock(c, "auth:k");
        ASSERT_ERR(redislock_acquire(l, NULL), REDISLOCK_EAUTH);
        redislock_lock_free(l);
        redislock_client_free(c);
    } else {
        ASSERT_ERR(e, REDISLOCK_EAUTH);
    }
    th_server_stop(s);
}

void test_auth_password_in_url(void)
{
    th_server *s = start_with_password();
    char url[256];

    snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", PASS, s->port);
    assert_works(s, url, NULL);
    snprintf(url, sizeof url, "redis://default:%s@127.0.0.1:%d", PASS,
             s->port);
    assert_works(s, url, NULL);
    th_server_stop(s);
}

void test_auth_password_env_and_option(void)
{
    th_server *s = start_with_password();
    redislock_options o = {0};
    char good[256], bad[256];

    snprintf(good, sizeof good, "redis://:%s@127.0.0.1:%d", PASS, s->port);
    snprintf(bad, sizeof bad, "redis://:wrong@127.0.0.1:%d", s->port);

    /* The environment, when nothing else names a password. */
    setenv("REDISCLI_AUTH", PASS, 1);
    assert_works(s, s->unix_url, NULL);
    assert_works(s, s->tcp_url, NULL);
    /* The URL's password wins over the environment. */
    setenv("REDISCLI_AUTH", "wrong", 1);
    assert_works(s, good, NULL);
    assert_eauth(s->tcp_url, NULL);
    unsetenv("REDISCLI_AUTH");

    /* The option wins over the URL. */
    o.password = PASS;
    assert_works(s, bad, &o);
    assert_works(s, s->unix_url, &o);
    o.password = "wrong";
    assert_eauth(good, &o);
    th_server_stop(s);
}

void test_auth_acl_user(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c;
    redislock_lock *l;
    redislock_err e;
    char url[256];

    unsetenv("REDISCLI_AUTH");
    freeReplyObject(th_cmd(r, "ACL SETUSER alice on >wonderland ~* +@all"));
    freeReplyObject(th_cmd(r, "ACL SETUSER bob on >builder ~bob:* +@all"));
    snprintf(url, sizeof url, "redis://alice:wonderland@127.0.0.1:%d",
             s->port);
    assert_works(s, url, NULL);
    snprintf(url, sizeof url, "redis://alice:wrong@127.0.0.1:%d", s->port);
    assert_eauth(url, NULL);

    /* Commands really run as the user: bob may only touch bob:*. */
    snprintf(url, sizeof url, "redis://bob:builder@127.0.0.1:%d", s->port);
    c = th_client_url(url, NULL);
    l = th_lock(c, "bob:lock");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    l = th_lock(c, "auth:k");
    e = redislock_acquire(l, NULL);
    test_log("bob on auth:k: %s: %s", redislock_errname(e),
             redislock_errdetail());
    ASSERT(e != REDISLOCK_OK && e != REDISLOCK_EHELD);
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS auth:k"), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}
