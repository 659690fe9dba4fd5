/*
 * lazy: redislock_options.lazy_connect (issue 37, item 9). A client made
 * while its servers are down is made at once; its calls fail with the
 * code the constructor would have returned until a server is up, then
 * work; and the checks the constructor would have made are made by the
 * first connection to each server, before any request goes out on it.
 *
 * A server "not up yet" is a unix socket path that is a dangling
 * symbolic link; the server comes up when the link is pointed at a
 * running server's socket (a connect follows the link).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/apploop.h"
#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "redislock.h"
#include "test.h"

/* A socket path of the test's own, linked to nothing yet: unix://path
 * in url. */
static void dangling(char *path, size_t psize, char *url, size_t usize,
                     const char *name)
{
    snprintf(path, psize, "%s/lazy-%d-%s.sock", th_tmpdir(), (int)getpid(),
             name);
    (void)unlink(path);
    if (symlink("nowhere-yet", path) != 0)
        test_fail_(__FILE__, __LINE__, "symlink %s: %s", path, strerror(errno));
    snprintf(url, usize, "unix://%s", path);
}

/* Points path at server s's socket: the server behind it comes up. */
static void come_up(const char *path, const th_server *s)
{
    char tmp[300];

    snprintf(tmp, sizeof tmp, "%s.new", path);
    (void)unlink(tmp);
    if (symlink(s->sock, tmp) != 0 || rename(tmp, path) != 0)
        test_fail_(__FILE__, __LINE__, "relinking %s: %s", path,
                   strerror(errno));
}

static redislock_options lazy_opts(void)
{
    redislock_options o = {0};

    o.lazy_connect = 1;
    o.connect_timeout_ms = 1000;
    o.command_timeout_ms = 2000;
    return o;
}

/* One try at key on c: the code, the detail in said. */
static redislock_err try_once(redislock_client *c, const char *key, char *said,
                              size_t size)
{
    redislock_lock *l = NULL;
    redislock_err err = redislock_lock_new(c, key, strlen(key), &l);

    if (err == REDISLOCK_OK)
        err = redislock_acquire(l, NULL);
    snprintf(said, size, "%s", redislock_errdetail());
    if (err == REDISLOCK_OK)
        ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    return err;
}

/*
 * One server, down when the client is made: the eager constructor fails
 * with REDISLOCK_ECONNECT, the lazy one succeeds; a lock fails with
 * REDISLOCK_ECONNECT while the server is down and is taken once it is
 * up, with no new client.
 */
void test_lazy_single_made_before_server(void)
{
    redislock_options o = lazy_opts();
    redislock_client *c = NULL, *eager = (redislock_client *)1;
    th_server *s;
    char path[256], url[300], said[512];
    redisContext *r;

    dangling(path, sizeof path, url, sizeof url, "single");
    ASSERT_ERR(redislock_client_new(&eager, url, NULL), REDISLOCK_ECONNECT);
    ASSERT(eager == NULL);
    ASSERT_OK(redislock_client_new(&c, url, &o));
    ASSERT(c != NULL);
    ASSERT_EQ_INT(try_once(c, "lazy:k", said, sizeof said), REDISLOCK_ECONNECT);
    test_log("down: %s", said);
    s = th_server_start(NULL);
    come_up(path, s);
    ASSERT_OK(try_once(c, "lazy:k", said, sizeof said));
    /* The check passed once: a lock held now, seen by another client. */
    r = th_server_redis(s);
    {
        redislock_lock *l;

        ASSERT_OK(redislock_lock_new(c, "lazy:k", 6, &l));
        ASSERT_OK(redislock_acquire(l, NULL));
        ASSERT_EQ_INT(th_lock_keys(r), 1);
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
    }
    ASSERT_EQ_INT(th_lock_keys(r), 0);
    redisFree(r);
    redislock_client_free(c);
    th_server_stop(s);
    unlink(path);
}

/*
 * The constructor's checks, made by the first connection before any
 * request: a server the WAITAOF guard cannot trust (appendonly no) is
 * REDISLOCK_ECONFIG at the first acquire, as at construction without
 * lazy_connect (no WAITAOF before 7.2, or AOF off), and nothing was
 * written on it; so is it at the next acquire (a failed check is made
 * again). A wrong password is
 * REDISLOCK_EAUTH at the first call.
 */
void test_lazy_checks_before_first_request(void)
{
    redislock_options o = lazy_opts(), eo = {0};
    th_server_opts so = {0};
    th_server *s = th_server_start(NULL), *p;
    redislock_client *c = NULL, *eager = (redislock_client *)1;
    redisContext *r = th_server_redis(s);
    char said[512];

    o.wait_aof_local = 1;
    eo.wait_aof_local = 1;
    ASSERT_ERR(redislock_client_new(&eager, s->unix_url, &eo),
               REDISLOCK_ECONFIG);
    ASSERT_OK(redislock_client_new(&c, s->unix_url, &o));
    ASSERT_EQ_INT(try_once(c, "lazy:aof", said, sizeof said),
                  REDISLOCK_ECONFIG);
    test_log("%s", said);
    ASSERT(strstr(said, "wait_aof_local") != NULL);
    ASSERT_EQ_INT(th_cmd_int(r, "DBSIZE"), 0);
    ASSERT_EQ_INT(try_once(c, "lazy:aof", said, sizeof said),
                  REDISLOCK_ECONFIG);
    ASSERT_EQ_INT(th_cmd_int(r, "DBSIZE"), 0);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);

    so.requirepass = "right";
    p = th_server_start(&so);
    o = lazy_opts();
    o.password = "wrong";
    ASSERT_OK(redislock_client_new(&c, p->unix_url, &o));
    ASSERT_EQ_INT(try_once(c, "lazy:auth", said, sizeof said), REDISLOCK_EAUTH);
    test_log("%s", said);
    redislock_client_free(c);
    th_server_stop(p);
}

/*
 * Redlock over three servers, all down when the client is made: made at
 * once; REDISLOCK_ENOQUORUM while they are down; the lock once two are
 * up (each entry read as its first connection comes up), and every
 * server holds it once all three are.
 */
void test_lazy_redlock_made_before_servers(void)
{
    redislock_options o = lazy_opts();
    redislock_client *c = NULL;
    th_server *s[3];
    char path[3][256], url[3][300], said[512], name[8];
    const char *urls[3];
    redislock_err err;
    int i;

    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "rl%d", i);
        dangling(path[i], sizeof path[i], url[i], sizeof url[i], name);
        urls[i] = url[i];
    }
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, &o));
    err = try_once(c, "lazy:q", said, sizeof said);
    test_log("down: %s: %s", redislock_errname(err), said);
    ASSERT_EQ_INT(err, REDISLOCK_ENOQUORUM);
    for (i = 0; i < 3; i++)
        s[i] = th_server_start(NULL);
    come_up(path[0], s[0]);
    come_up(path[1], s[1]);
    ASSERT_OK(try_once(c, "lazy:q", said, sizeof said));
    come_up(path[2], s[2]);
    {
        redislock_lock *l;
        redisContext *r;

        ASSERT_OK(redislock_lock_new(c, "lazy:q", 6, &l));
        ASSERT_OK(redislock_acquire(l, NULL));
        for (i = 0; i < 3; i++) {
            r = th_server_redis(s[i]);
            ASSERT_EQ_INT(th_lock_keys(r), 1);
            redisFree(r);
        }
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
    }
    redislock_client_free(c);
    for (i = 0; i < 3; i++) {
        th_server_stop(s[i]);
        unlink(path[i]);
    }
}

/*
 * Sharded: a unix socket in the list is REDISLOCK_EINVAL at once (its
 * name needs the server's TCP port); TCP servers work; a lazy client
 * that names a server otherwise than the clients before it is refused
 * by the server's registry at its first call there, with
 * REDISLOCK_EINVAL naming both spellings, and nothing locked.
 */
void test_lazy_sharded(void)
{
    redislock_options o = lazy_opts();
    th_servers e = th_servers_start(2);
    th_proxy *px = th_proxy_start(e.s[0]->port);
    redislock_client *c = (redislock_client *)1, *first;
    const char *urls[2];
    char proxied[64], said[512], key[32];
    int i, shard0 = 0;

    urls[0] = e.s[0]->unix_url;
    urls[1] = e.s[1]->tcp_url;
    ASSERT_ERR(redislock_client_new_sharded(&c, urls, 2, &o), REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    ASSERT(strstr(redislock_errdetail(), "host:port") != NULL);

    urls[0] = e.s[0]->tcp_url;
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 2, &o));
    /* 32 keys: server 0 is surely among their shards. */
    for (i = 0; i < 32; i++) {
        snprintf(key, sizeof key, "lazy:s%d", i);
        ASSERT_OK(try_once(c, key, said, sizeof said));
    }
    first = c;

    snprintf(proxied, sizeof proxied, "redis://127.0.0.1:%d",
             th_proxy_port(px));
    urls[0] = proxied;
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 2, &o));
    /* Some key lands on the proxied spelling of server 0. */
    for (i = 0; i < 64 && !shard0; i++) {
        snprintf(key, sizeof key, "lazy:t%d", i);
        if (try_once(c, key, said, sizeof said) == REDISLOCK_EINVAL) {
            shard0 = 1;
            test_log("%s", said);
            ASSERT(strstr(said, "other clients") != NULL);
        }
    }
    ASSERT(shard0);
    ASSERT_EQ_INT(th_lock_keys(e.r[0]), 0);
    redislock_client_free(c);
    redislock_client_free(first);
    th_proxy_stop(px);
    th_servers_stop(&e);
}

/*
 * The event-loop API on a lazy client (the checks run on the loop's
 * connection, as a blocking call's do on a private loop's): ECONNECT
 * while the server is down, the lock once it is up, released; and the
 * loop then has nothing to watch.
 */
void test_lazy_on_event_loop(void)
{
    redislock_options o = lazy_opts();
    redislock_acquire_options ao = th_aopts(5000, 0, 0);
    redislock_client *c = NULL;
    redislock_loop *lp = NULL;
    redislock_lock *l;
    app a = {0};
    app_heard h = {0};
    th_server *s;
    redisContext *r;
    char path[256], url[300];

    dangling(path, sizeof path, url, sizeof url, "loop");
    ASSERT_OK(redislock_client_new(&c, url, &o));
    ASSERT_OK(redislock_loop_new(&lp, c, app_watch, app_timer, &a));
    app_drive(&a, lp);
    l = th_lock(c, "lazy:loop");
    ASSERT_OK(redislock_loop_acquire(lp, l, &ao, app_heard_cb, &h));
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_ECONNECT);
    test_log("down: %s", h.said);
    s = th_server_start(NULL);
    r = th_server_redis(s);
    come_up(path, s);
    memset(&h, 0, sizeof h);
    ASSERT_OK(redislock_loop_acquire(lp, l, &ao, app_heard_cb, &h));
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_lock_keys(r), 1);
    memset(&h, 0, sizeof h);
    ASSERT_OK(redislock_loop_release(lp, l, 0, app_heard_cb, &h));
    app_until_heard(&a, &h);
    ASSERT_ERR(h.err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_lock_keys(r), 0);
    redislock_lock_free(l);
    redislock_loop_free(lp);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
    unlink(path);
}

/* lazy_connect is 0 or 1, and not yet for Sentinel or Cluster clients:
 * REDISLOCK_EINVAL naming it, at once (nothing is asked of the ports
 * named, where nothing listens). */
void test_lazy_option_range(void)
{
    redislock_options o = {0};
    redislock_client *c = (redislock_client *)1;
    const char *seeds[1] = {"redis://127.0.0.1:1"};

    o.lazy_connect = 2;
    ASSERT_ERR(redislock_client_new(&c, "redis://127.0.0.1:1", &o),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "lazy_connect") != NULL);
    ASSERT(c == NULL);
    o.lazy_connect = 1;
    c = (redislock_client *)1;
    ASSERT_ERR(redislock_client_new(&c, "redis+sentinel://127.0.0.1:1/m", &o),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "Sentinel") != NULL);
    ASSERT(strstr(redislock_errdetail(), "lazy_connect") != NULL);
    ASSERT(c == NULL);
    c = (redislock_client *)1;
    ASSERT_ERR(redislock_client_new_cluster(&c, seeds, 1, &o),
               REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "Cluster") != NULL);
    ASSERT(c == NULL);
}
