/*
 * url: the connection string. Malformed ones fail fast with EINVAL and a
 * detail that names the problem; a database number is honoured or refused;
 * TLS is refused plainly; nobody listening is ECONNECT, at once.
 */
#include <stdio.h>
#include <string.h>

#include "harness/fakeserver.h"
#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"
#include "url.h"

/* Refusals that need no network must not wait for any timeout. */
#define FAST_MS 500

/* Whether the detail mentions one of the '|'-separated words. */
static int mentions(const char *detail, const char *words)
{
    char w[64];
    const char *p = words, *bar;
    size_t n;

    for (;;) {
        bar = strchr(p, '|');
        n = bar ? (size_t)(bar - p) : strlen(p);
        snprintf(w, sizeof w, "%.*s", (int)n, p);
        if (strcasestr(detail, w) != NULL)
            return 1;
        if (bar == NULL)
            return 0;
        p = bar + 1;
    }
}

/* client_new(url, o) fails with want and leaves no client; returns the
 * ms it took. */
static int64_t new_fails(const char *url, const redislock_options *o,
                         redislock_err want)
{
    redislock_client *c = NULL;
    int64_t t0 = th_now_ms(), took;

    ASSERT_ERR(redislock_client_new(&c, url, o), want);
    took = th_now_ms() - t0;
    test_log("%s -> %s in %lld ms: %s", url, redislock_errname(want),
             (long long)took, redislock_errdetail());
    ASSERT(c == NULL);
    return took;
}

/* client_new(url) fails with want, soon, with a detail naming words. */
static void assert_refused(const char *url, redislock_err want,
                           const char *words)
{
    const char *d;

    ASSERT_LT(new_fails(url, NULL, want), FAST_MS);
    d = redislock_errdetail();
    if (!mentions(d, words))
        test_fail_(__FILE__, __LINE__, "detail for \"%s\" is \"%s\"; want "
                   "it to mention %s", url, d, words);
}

void test_url_malformed_einval(void)
{
    static const struct {
        const char *url, *words;
    } bad[] = {
        {"redis://127.0.0.1:99999", "port"},
        {"redis://127.0.0.1:abc", "port"},
        {"redis://127.0.0.1:-1", "port"},
        {"redis://:@", "host"},
        {"redis://", "host"},
        {"http://x", "scheme"},
        {"redis://h:6379/abc", "db|database"},
        {"redis://h/-1", "db|database"},
        {"unix://", "path"},
        {"unix:///tmp/x.sock?db=abc", "db|database"},
        {"", "url|scheme|empty"},
        /* Query parameters: only the timeouts (and db for unix://), with
         * positive values in seconds, s or ms, at most a day. */
        {"redis://h?timeout=0", "timeout"},
        {"redis://h?timeout=", "timeout"},
        {"redis://h?timeout=-1", "timeout"},
        {"redis://h?timeout=5m", "timeout"},
        {"redis://h?timeout=1e3", "timeout"},
        {"redis://h?timeout=86401", "timeout"},
        {"redis://h?connect_timeout=abc", "connect_timeout"},
        {"redis://h?timeout", "timeout"},
        {"redis://h?retry=3", "unknown query parameter 'retry'"},
        {"redis://h?db=2", "unknown query parameter 'db'"},
        {"redis://h?timeout=1#x", "fragment"},
        {"redis://h#x", "fragment"},
        {"unix:///tmp/x.sock?db=1&foo=2", "unknown query parameter 'foo'"},
    };
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_refused(bad[i].url, REDISLOCK_EINVAL, bad[i].words);
}

void test_url_db_out_of_range(void)
{
    th_server *s = th_server_start(NULL);
    char url[3][256];
    redislock_client *c = NULL;
    redislock_err e;
    const char *d;
    int i;

    /* A syntactically fine number the server refuses (16 databases). */
    snprintf(url[0], sizeof url[0], "%s/99999", s->tcp_url);
    snprintf(url[1], sizeof url[1], "%s/16", s->tcp_url);
    snprintf(url[2], sizeof url[2], "%s?db=99999", s->unix_url);
    for (i = 0; i < 3; i++) {
        e = redislock_client_new(&c, url[i], NULL);
        d = redislock_errdetail();
        test_log("%s -> %s: %s", url[i], redislock_errname(e), d);
        ASSERT(e == REDISLOCK_EINVAL || e == REDISLOCK_ESERVER);
        ASSERT(c == NULL);
        ASSERT(mentions(d, "db|database"));
    }
    th_server_stop(s);
}

/* Acquires key through url and checks it landed in database db only. */
static void assert_in_db(th_server *s, const char *url, const char *key,
                         int db)
{
    redislock_client *c = th_client_url(url, NULL);
    redislock_lock *l = th_lock(c, key);
    redisContext *r = th_server_redis(s);

    ASSERT_OK(redislock_acquire(l, NULL));
    freeReplyObject(th_cmd(r, "SELECT %d", db));
    ASSERT_KEY(r, key, redislock_token(l));
    freeReplyObject(th_cmd(r, "SELECT %d", db == 0 ? 1 : 0));
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", key), 0);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
}

void test_url_db_selects(void)
{
    th_server *s = th_server_start(NULL);
    char url[256];

    snprintf(url, sizeof url, "%s/3", s->tcp_url);
    assert_in_db(s, url, "db:three", 3);
    snprintf(url, sizeof url, "%s?db=5", s->unix_url);
    assert_in_db(s, url, "db:five", 5);
    snprintf(url, sizeof url, "%s/15", s->tcp_url);
    assert_in_db(s, url, "db:fifteen", 15);
    assert_in_db(s, s->tcp_url, "db:zero", 0);
    assert_in_db(s, s->unix_url, "db:zero", 0);
    th_server_stop(s);
}

void test_url_rediss_enotls(void)
{
    th_server *s = th_server_start(NULL);
    char url[256];

    /* Even with a server at that address: no plain-text fallback. A build
     * with TLS tries the handshake, which a plain port fails. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", s->port);
    if (redislock_has_tls()) {
        /* The plain server never answers the TLS hello. */
        redislock_options o = {0};
        redislock_client *c = NULL;
        redislock_err e;

        o.connect_timeout_ms = 300;
        e = redislock_client_new(&c, url, &o);
        test_log("%s -> %s: %s", url, redislock_errname(e),
                 redislock_errdetail());
        ASSERT(e == REDISLOCK_ECONNECT || e == REDISLOCK_ETIMEDOUT);
        ASSERT(c == NULL);
    } else {
        assert_refused(url, REDISLOCK_ENOTLS, "tls");
        assert_refused("rediss://127.0.0.1:6379/0", REDISLOCK_ENOTLS, "tls");
    }
    th_server_stop(s);
}

void test_url_refused_econnect(void)
{
    int port = th_free_port();
    char url[256];
    redislock_client *c = NULL;
    int64_t t0;

    ASSERT_GT(port, 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_client_new(&c, url, NULL), REDISLOCK_ECONNECT);
    ASSERT(c == NULL);
    ASSERT_LT(th_now_ms() - t0, FAST_MS);
    test_log("%s: %s", url, redislock_errdetail());

    t0 = th_now_ms();
    ASSERT_ERR(redislock_client_new(&c, "unix:///nonexistent/redis.sock", NULL),
               REDISLOCK_ECONNECT);
    ASSERT(c == NULL);
    ASSERT_LT(th_now_ms() - t0, FAST_MS);
}

/* rl__url_parse(url) succeeds with these timeouts (0: not set). */
static void assert_timeouts(const char *url, int64_t connect_ms,
                            int64_t command_ms)
{
    rl__url u;

    ASSERT_OK(rl__url_parse(url, &u));
    test_log("%s -> connect %lld, command %lld", url,
             (long long)u.connect_timeout_ms, (long long)u.command_timeout_ms);
    ASSERT_EQ_INT(u.connect_timeout_ms, connect_ms);
    ASSERT_EQ_INT(u.command_timeout_ms, command_ms);
    rl__url_free(&u);
}

void test_url_query_timeouts(void)
{
    /* Seconds as redis-py takes them, or s and ms as in Lettuce. */
    assert_timeouts("redis://h?timeout=2", 0, 2000);
    assert_timeouts("redis://h:6380/3?timeout=0.25", 0, 250);
    assert_timeouts("redis://h?socket_timeout=1.5s", 0, 1500);
    assert_timeouts("redis://h?command_timeout=300ms", 0, 300);
    assert_timeouts("redis://h?connect_timeout=0.0001", 1, 0);
    assert_timeouts("redis://h?socket_connect_timeout=4&socket_timeout=6", 4000,
                    6000);
    assert_timeouts("redis://u:p@h/1?connect_timeout=750ms&timeout=86400",
                    750, 86400000);
    /* A later value wins; empty pairs are skipped. */
    assert_timeouts("redis://h?timeout=1&&timeout=3&", 0, 3000);
    assert_timeouts("unix:///tmp/x.sock?db=2&timeout=800ms", 0, 800);
    assert_timeouts("unix:///tmp/x.sock?connect_timeout=2", 2000, 0);
    assert_timeouts("redis://h", 0, 0);
}

/* A '?' in a password is not a query: refused without quoting it. */
void test_url_query_password_hidden(void)
{
    redislock_client *c = NULL;

    ASSERT_ERR(redislock_client_new(&c, "redis://u:se?cret@h:6379", NULL),
               REDISLOCK_EINVAL);
    test_log("detail: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "cret") == NULL);
    ASSERT(strstr(redislock_errdetail(), "%3F") != NULL);
}

/* client_new(url, o) against a server that never answers fails with
 * ETIMEDOUT after about want_ms: far below the 2 s default, with room for
 * a loaded machine. */
static void assert_times_out(const char *url, const redislock_options *o,
                             int64_t want_ms)
{
    int64_t took = new_fails(url, o, REDISLOCK_ETIMEDOUT);

    ASSERT_GE(took, want_ms - 50);
    ASSERT_LT(took, want_ms + 1200);
}

void test_url_timeout_applied(void)
{
    static const fs_rule hang[] = {{NULL, "", FS_HANG, 0, 0, NULL}};
    fs_server *s = fs_start(hang, 1, NULL);
    redislock_options o = {0};
    char url[256];

    /* The command timeout bounds the PING that checks the server. */
    snprintf(url, sizeof url, "%s?timeout=300ms", s->tcp_url);
    assert_times_out(url, NULL, 300);
    snprintf(url, sizeof url, "%s?socket_timeout=0.3", s->unix_url);
    assert_times_out(url, NULL, 300);
    /* The connect timeout bounds SELECT, part of connecting. */
    snprintf(url, sizeof url, "%s/1?connect_timeout=300ms&timeout=20",
             s->tcp_url);
    assert_times_out(url, NULL, 300);
    /* An option wins over the URL. */
    o.command_timeout_ms = 300;
    snprintf(url, sizeof url, "%s?timeout=20", s->tcp_url);
    assert_times_out(url, &o, 300);
    fs_stop(s);
}

/* The TLS parameters of a URL's query: refused on a plain URL, naming
 * rediss://; on rediss:// (in a TLS build) decoded into the URL, by the
 * library's names and redis-py's, and a bad value refused by name. */
void test_url_tls_params(void)
{
    rl__url u;

    ASSERT_ERR(rl__url_parse("redis://h?tls_ca_file=/ca.crt", &u),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "rediss://") != NULL);
    rl__url_free(&u);
    ASSERT_ERR(rl__url_parse("redis://h?tls_nonsense=1", &u),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "tls_ca_file") != NULL);
    rl__url_free(&u);
    if (!redislock_has_tls()) {
        ASSERT_ERR(rl__url_parse("rediss://h?tls_ca_file=/ca.crt", &u),
                   REDISLOCK_ENOTLS);
        rl__url_free(&u);
        return;
    }
    ASSERT_OK(rl__url_parse("rediss://h:7000?tls_ca_file=/a%20b/ca.crt&"
                            "ssl_certfile=/c.crt&tls_key_file=/k%26.key&"
                            "tls_server_name=redis.example&tls_ca_dir=/d&"
                            "tls_insecure=1&timeout=2",
                            &u));
    ASSERT_EQ_STR(u.tls_ca_file, "/a b/ca.crt");
    ASSERT_EQ_STR(u.tls_cert_file, "/c.crt");
    ASSERT_EQ_STR(u.tls_key_file, "/k&.key");
    ASSERT_EQ_STR(u.tls_server_name, "redis.example");
    ASSERT_EQ_STR(u.tls_ca_dir, "/d");
    ASSERT_EQ_INT(u.tls_insecure, 1);
    ASSERT_EQ_INT(u.command_timeout_ms, 2000);
    rl__url_free(&u);
    /* A later value wins, as for the timeouts. */
    ASSERT_OK(rl__url_parse("rediss://h?ssl_ca_certs=/one&tls_ca_file=/two",
                            &u));
    ASSERT_EQ_STR(u.tls_ca_file, "/two");
    rl__url_free(&u);
    ASSERT_ERR(rl__url_parse("rediss://h?tls_insecure=yes", &u),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "tls_insecure") != NULL);
    rl__url_free(&u);
    ASSERT_ERR(rl__url_parse("rediss://h?tls_ca_file=", &u), REDISLOCK_EINVAL);
    rl__url_free(&u);
    ASSERT_ERR(rl__url_parse("rediss://h?tls_key_file=%zz", &u),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "tls_key_file") != NULL);
    rl__url_free(&u);
}
/* rl__url_parse(url) succeeds with this host (or socket path), port, db
 * and TLS flag. */
static void assert_parsed(const char *url, const char *where, int port, int db,
                          int tls)
{
    rl__url u;

    ASSERT_OK(rl__url_parse(url, &u));
    ASSERT_EQ_STR(u.host != NULL ? u.host : u.path, where);
    if (u.host != NULL)
        ASSERT_EQ_INT(u.port, port);
    ASSERT_EQ_INT(u.db, db);
    ASSERT_EQ_INT(u.tls, tls);
    rl__url_free(&u);
}

/* A URL's scheme is case-insensitive (RFC 3986, 3.1), as redis-cli takes
 * REDIS:// too; the rest keeps its case. */
void test_url_scheme_any_case(void)
{
    th_server *s = th_server_start(NULL);
    rl__sentinel_url su;
    redislock_client *c;
    char url[256];

    assert_parsed("REDIS://Host:6380/2", "Host", 6380, 2, 0);
    assert_parsed("Redis://h", "h", 6379, 0, 0);
    assert_parsed("UNIX:///tmp/X.sock?db=3", "/tmp/X.sock", 0, 3, 0);
    if (redislock_has_tls())
        assert_parsed("ReDiSs://h:6390", "h", 6390, 0, 1);
    else
        assert_refused("REDISS://h:6390", REDISLOCK_ENOTLS, "tls");
    ASSERT(rl__url_is_sentinel("REDIS+SENTINEL://h/m"));
    ASSERT(rl__url_is_sentinel("Rediss+Sentinel://h/m"));
    ASSERT(!rl__url_is_sentinel("REDIS://h/m"));
    ASSERT_OK(rl__sentinel_url_parse("REDISS+Sentinel://a:1,b/Mymaster", &su));
    ASSERT_EQ_STR(su.name, "Mymaster");
    ASSERT_EQ_INT(su.n, 2);
    ASSERT_EQ_STR(su.sentinels[0], "rediss://a:1");
    ASSERT_EQ_STR(su.sentinels[1], "rediss://b:26379");
    ASSERT_EQ_STR(su.node_pre, "rediss://");
    rl__sentinel_url_free(&su);
    ASSERT_OK(rl__sentinel_url_parse("Redis+SENTINEL://a/m", &su));
    ASSERT_EQ_STR(su.sentinels[0], "redis://a:26379");
    rl__sentinel_url_free(&su);
    /* A server reached through one. */
    snprintf(url, sizeof url, "REDIS://127.0.0.1:%d", s->port);
    c = th_client_url(url, NULL);
    redislock_client_free(c);
    /* An unknown scheme is still named as written. */
    assert_refused("HTTP://x", REDISLOCK_EINVAL, "'HTTP'");
    th_server_stop(s);
}
