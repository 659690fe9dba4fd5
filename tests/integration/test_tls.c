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

#include "harness/adapters.h"
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

/* auth_clients: whether the server wants a client certificate (signed
 * by localhost.crt, which the client may present as its own). */
static void tls_start_auth(tls_env *e, int auth_clients)
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
             "tls-ca-cert-file %s/localhost.crt\ntls-auth-clients %s",
             e->port, e->dir, e->dir, e->dir, auth_clients ? "yes" : "no");
    memset(&so, 0, sizeof so);
    so.extra_config = conf;
    e->s = th_server_start(&so);
    snprintf(e->url, sizeof e->url, "rediss://localhost:%d", e->port);
}

static void tls_start(tls_env *e)
{
    tls_start_auth(e, 0);
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

/* Whether this build has TLS (scripts/check-hiredis1.sh's must, and says
 * so with RL_EXPECT_TLS); one without must refuse rediss:// with
 * REDISLOCK_ENOTLS, which is asserted then, so that each test means
 * something in either build. */
static int have_tls(void)
{
    redislock_client *c = NULL;

    if (getenv("RL_EXPECT_TLS") != NULL)
        ASSERT(redislock_has_tls());
    if (redislock_has_tls())
        return 1;
    ASSERT_ERR(redislock_client_new(&c, "rediss://localhost:1", NULL),
               REDISLOCK_ENOTLS);
    ASSERT(c == NULL);
    return 0;
}

void test_tls_lock_over_rediss(void)
{
    redislock_client *c = NULL;
    redislock_lock *l, *other;
    tls_env e;

    if (!have_tls())
        return;
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

    if (!have_tls())
        return;
    tls_start(&e);
    /* A CA that did not sign the server's certificate: a failed connect
     * that says why, however far the handshake got before it failed. */
    ASSERT_ERR(tls_client(&e, "stranger", NULL, &c), REDISLOCK_ECONNECT);
    test_log("wrong CA: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "TLS handshake") != NULL);
    ASSERT(strstr(redislock_errdetail(), "self") != NULL);
    ASSERT(strstr(redislock_errdetail(), "tls_ca_file") != NULL);
    ASSERT(c == NULL);
    /* The right CA, but a name the certificate does not carry. */
    ASSERT_ERR(tls_client(&e, "localhost", "stranger", &c), REDISLOCK_ECONNECT);
    test_log("wrong name: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "hostname mismatch") != NULL);
    ASSERT(c == NULL);
    tls_stop(&e);
}

/*
 * A server that wants a client certificate (Redis's default,
 * tls-auth-clients yes): without one, a client that is refused with a
 * message naming the options to set; with one, a lock.
 */
void test_tls_client_certificate(void)
{
    redislock_client *c = NULL;
    redislock_options o;
    redislock_lock *l;
    redislock_err err;
    char ca[512], crt[512], key[512];
    tls_env e;

    if (!have_tls())
        return;
    tls_start_auth(&e, 1);
    memset(&o, 0, sizeof o);
    snprintf(ca, sizeof ca, "%s/localhost.crt", e.dir);
    o.tls_ca_file = ca;
    o.connect_timeout_ms = 2000;
    /* Refused by the server's alert (ECONNECT), or, when its reset
     * overtakes the alert, a connection lost after the handshake (EIO:
     * a request may have gone out): either way the message names the
     * options to set. */
    err = redislock_client_new(&c, e.url, &o);
    test_log("no client certificate: %s: %s", redislock_errname(err),
             redislock_errdetail());
    ASSERT(err == REDISLOCK_ECONNECT || err == REDISLOCK_EIO);
    ASSERT(strstr(redislock_errdetail(), "tls_cert_file") != NULL);
    ASSERT(c == NULL);
    snprintf(crt, sizeof crt, "%s/localhost.crt", e.dir);
    snprintf(key, sizeof key, "%s/localhost.key", e.dir);
    o.tls_cert_file = crt;
    o.tls_key_file = key;
    ASSERT_OK(redislock_client_new(&c, e.url, &o));
    l = th_lock(c, "tls:cert");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    tls_stop(&e);
}

/* c takes a lock and gives it back; then c is freed. */
static void takes_and_frees(redislock_client *c)
{
    redislock_lock *l = th_lock(c, "tls:url");

    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
}

/*
 * The TLS settings in the URL's query, as the CLI and a URL-only
 * configuration give them: the CA (the server verified), a client
 * certificate for a server that wants one, tls_insecure for a server no
 * given CA vouches for; the options, when set, win over the URL.
 */
void test_tls_url_params(void)
{
    redislock_client *c = NULL;
    redislock_options o;
    char url[1536];
    tls_env e;

    if (!have_tls())
        return;
    tls_start_auth(&e, 1);
    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = 2000;
    snprintf(url, sizeof url,
             "%s?tls_ca_file=%s/localhost.crt&tls_cert_file=%s/localhost.crt"
             "&tls_key_file=%s/localhost.key",
             e.url, e.dir, e.dir, e.dir);
    ASSERT_OK(redislock_client_new(&c, url, &o));
    takes_and_frees(c);
    /* The option's CA wins over the URL's: the stranger signed nothing. */
    {
        char ca[512];

        snprintf(ca, sizeof ca, "%s/stranger.crt", e.dir);
        o.tls_ca_file = ca;
        ASSERT_ERR(redislock_client_new(&c, url, &o), REDISLOCK_ECONNECT);
        ASSERT(strstr(redislock_errdetail(), "tls_ca_file") != NULL);
        ASSERT(c == NULL);
        o.tls_ca_file = NULL;
    }
    /* A CA that did not sign the server's certificate: refused, unless
     * tls_insecure. */
    snprintf(url, sizeof url,
             "%s?tls_ca_file=%s/stranger.crt&tls_cert_file=%s/localhost.crt"
             "&tls_key_file=%s/localhost.key",
             e.url, e.dir, e.dir, e.dir);
    ASSERT_ERR(redislock_client_new(&c, url, &o), REDISLOCK_ECONNECT);
    ASSERT(c == NULL);
    snprintf(url + strlen(url), sizeof url - strlen(url), "&tls_insecure=1");
    ASSERT_OK(redislock_client_new(&c, url, &o));
    takes_and_frees(c);
    /* A key without its certificate: refused before any connect. */
    snprintf(url, sizeof url, "%s?tls_key_file=%s/localhost.key", e.url,
             e.dir);
    ASSERT_ERR(redislock_client_new(&c, url, &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "tls_cert_file") != NULL);
    tls_stop(&e);
}

/*
 * A request whose reply is lost on a TLS connection after its handshake
 * may have run: REDISLOCK_EIO, as over a plain connection (the engine
 * then makes sure it holds nothing), never the failed connect that says
 * nothing ran. The server takes the connection and does the handshake
 * while CLIENT PAUSE holds every command, so the loop's acquire goes out
 * on a fresh connection and waits; the server is then killed.
 */
void test_tls_lost_after_handshake_is_eio(void)
{
    const driver *d = &adapter_poll;
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    ad_done dl = {0};
    redislock_loop *lp;
    redisContext *ctl;
    void *h;
    tls_env e;

    if (!have_tls())
        return;
    tls_start(&e);
    ASSERT_OK(tls_client(&e, "localhost", NULL, &c));
    h = d->open(c, &lp);
    l = th_lock(c, "tls:lost");
    ctl = th_server_redis(e.s);
    freeReplyObject(th_cmd(ctl, "CLIENT PAUSE 10000 ALL"));
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dl));
    /* Connected, shaken hands, sent: the server holds the request. */
    ad_run_for(d, h, 300);
    ASSERT_EQ_INT(dl.calls, 0);
    th_server_kill(e.s);
    ad_run_until(d, h, &dl.calls, 1, 5000);
    test_log("lost after the handshake: %s: %s", redislock_errname(dl.err),
             dl.detail);
    ASSERT_ERR(dl.err, REDISLOCK_EIO);
    redisFree(ctl);
    d->close(h);
    redislock_lock_free(l);
    redislock_client_free(c);
    tls_stop(&e);
}

/* Waiters on the loop over TLS. */
#define TLS_WAITERS 10

/*
 * rediss:// on the event loop (the tests' poll loop): the loop's own
 * connections do the TLS handshake without blocking (its request, BLPOP
 * and subscribed connections alike). A lock taken on the loop; ten
 * waiters behind it (eight blocked on BLPOP, two on the wake channel)
 * each woken in turn by the release before; a lock renewed on the loop.
 * Without TLS in the build, rediss:// is refused as for the blocking
 * calls.
 */
void test_tls_on_loop(void)
{
    const driver *d = &adapter_poll;
    redislock_client *c = NULL;
    redislock_lock *l, *dog;
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    static ad_turns t;
    ad_done dl = {0}, dd = {0};
    redislock_loop *lp;
    void *h;
    tls_env e;
    int i;

    if (!have_tls())
        return;
    tls_start(&e);
    ASSERT_OK(tls_client(&e, "localhost", NULL, &c));
    h = d->open(c, &lp);
    memset(&t, 0, sizeof t);
    t.lp = lp;
    l = th_lock(c, "tlsl:k");
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dl));
    ad_run_until(d, h, &dl.calls, 1, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    o = th_aopts(5000, 10000, 0);
    for (i = 0; i < TLS_WAITERS; i++) {
        t.w[i] = th_lock(c, "tlsl:k");
        ASSERT_OK(redislock_loop_acquire(lp, t.w[i], &o, ad_turn, &t));
    }
    ad_run_for(d, h, 500);
    for (i = 0; i < TLS_WAITERS; i++)
        ASSERT_EQ_INT(t.d[i].calls, 0);
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dl));
    ad_run_until(d, h, &t.released, TLS_WAITERS, 5000);
    ASSERT_ERR(dl.err, REDISLOCK_OK);
    for (i = 0; i < TLS_WAITERS; i++)
        ASSERT_EQ_INT(t.d[i].calls, 1);
    o = th_aopts(600, 0, 0);
    o.watchdog = 1;
    dog = th_lock(c, "tlsl:dog");
    ASSERT_OK(redislock_loop_acquire(lp, dog, &o, ad_record, &dd));
    ad_run_until(d, h, &dd.calls, 1, 5000);
    ASSERT_ERR(dd.err, REDISLOCK_OK);
    ad_run_for(d, h, 1500);
    ASSERT_OK(redislock_check(dog));
    ASSERT_OK(redislock_loop_release(lp, dog, 0, ad_record, &dd));
    ad_run_until(d, h, &dd.calls, 2, 5000);
    ASSERT_ERR(dd.err, REDISLOCK_OK);
    d->close(h);
    for (i = 0; i < TLS_WAITERS; i++)
        redislock_lock_free(t.w[i]);
    redislock_lock_free(dog);
    redislock_lock_free(l);
    redislock_client_free(c);
    tls_stop(&e);
}
