/*
 * rediss:// against a redis-server with a TLS port and a self-signed
 * certificate made here with openssl(1). A build without TLS (Debian 12's
 * hiredis 0.14) must refuse rediss:// with REDISLOCK_ENOTLS instead: that
 * is asserted too, so the test means something in either build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* A self-signed certificate for CN=name, as dir/name.{crt,key}. */
static void make_cert(const char *dir, const char *name)
{
    char cmd[1024];

    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
             "-subj /CN=%s -addext subjectAltName=DNS:%s "
             "-keyout %s/%s.key -out %s/%s.crt >/dev/null 2>&1",
             name, name, dir, name, dir, name);
    ASSERT_EQ_INT(system(cmd), 0);
}

typedef struct tls_env {
    th_server *s;
    char dir[256], url[256];
    int port;
} tls_env;

static void tls_start(tls_env *e)
{
    th_server_opts so;
    char conf[1024];
    char *d = th_mkdtemp("rl-tls");

    ASSERT(d != NULL);
    snprintf(e->dir, sizeof e->dir, "%s", d);
    free(d);
    make_cert(e->dir, "localhost");
    make_cert(e->dir, "stranger");
    e->port = th_free_port();
    snprintf(conf, sizeof conf,
             "tls-port %d\ntls-cert-file %s/localhost.crt\n"
             "tls-key-file %s/localhost.key\n"
             "tls-ca-cert-file %s/localhost.crt\ntls-auth-clients no",
             e->port, e->dir, e->dir, e->dir);
    memset(&so, 0, sizeof so);
    so.extra_config = conf;
    e->s = th_server_start(&so);
    snprintf(e->url, sizeof e->url, "rediss://localhost:%d", e->port);
}

static void tls_stop(tls_env *e)
{
    th_server_stop(e->s);
    th_rmtree(e->dir);
}

static redislock_err tls_client(tls_env *e, const char *ca, const char *name,
                                redislock_client **c)
{
    redislock_options o;
    char cafile[512];

    memset(&o, 0, sizeof o);
    snprintf(cafile, sizeof cafile, "%s/%s.crt", e->dir, ca);
    o.tls_ca_file = cafile;
    o.tls_server_name = name;
    o.connect_timeout_ms = 2000;
    return redislock_client_new(c, e->url, &o);
}

void test_tls_lock_over_rediss(void)
{
    redislock_client *c = NULL;
    redislock_lock *l, *other;
    tls_env e;

    /* scripts/check-hiredis1.sh builds with TLS and says so. */
    if (getenv("RL_EXPECT_TLS") != NULL)
        ASSERT(redislock_has_tls());
    if (!redislock_has_tls()) {
        ASSERT_ERR(redislock_client_new(&c, "rediss://localhost:1", NULL),
                   REDISLOCK_ENOTLS);
        test_log("no TLS in this build: rediss:// refused with ENOTLS");
        return;
    }
    tls_start(&e);
    ASSERT_OK(tls_client(&e, "localhost", NULL, &c));
    l = th_lock(c, "tls:k");
    other = th_lock(c, "tls:k");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_ERR(redislock_acquire(other, NULL), REDISLOCK_EHELD);
    ASSERT_OK(redislock_extend(l, 10000));
    ASSERT_GT(redislock_fence(l), 0);
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_acquire(other, NULL));
    ASSERT_OK(redislock_release(other));
    redislock_lock_free(l);
    redislock_lock_free(other);
    redislock_client_free(c);
    tls_stop(&e);
}

void test_tls_refuses_unverified_server(void)
{
    redislock_client *c = NULL;
    tls_env e;

    if (!redislock_has_tls()) {
        ASSERT_ERR(redislock_client_new(&c, "rediss://localhost:1", NULL),
                   REDISLOCK_ENOTLS);
        return;
    }
    tls_start(&e);
    /* A CA that did not sign the server's certificate. */
    ASSERT_ERR(tls_client(&e, "stranger", NULL, &c), REDISLOCK_ECONNECT);
    test_log("wrong CA: %s", redislock_errdetail());
    ASSERT(c == NULL);
    /* The right CA, but a name the certificate does not carry. */
    ASSERT_ERR(tls_client(&e, "localhost", "stranger", &c),
               REDISLOCK_ECONNECT);
    test_log("wrong name: %s", redislock_errdetail());
    tls_stop(&e);
}
