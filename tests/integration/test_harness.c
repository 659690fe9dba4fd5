/*
 * harness: the private redis-server is what every integration test stands
 * on, so check that it is configured as promised, that pause/resume and the
 * command statistics work, and that several can run side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

static void assert_config(redisContext *c, const char *name, const char *want)
{
    redisReply *r = th_cmd(c, "CONFIG GET %s", name);

    ASSERT_EQ_INT(r->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ_INT(r->elements, 2);
    ASSERT_EQ_STR(r->element[1]->str, want);
    freeReplyObject(r);
}

/* PING over a fresh connection with a short timeout; 1 if it answered. */
static int ping_within(const th_server *s, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    redisContext *c = redisConnectUnixWithTimeout(s->sock, tv);
    redisReply *r = NULL;
    int ok;

    ASSERT(c != NULL);
    /* hiredis 0.14 applies the connect timeout to the connect only. */
    if (!c->err && redisSetTimeout(c, tv) == REDIS_OK)
        r = redisCommand(c, "PING");
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(c);
    return ok;
}

static void check_tcp(const th_server *s)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    char want[64];

    ASSERT(c != NULL && !c->err);
    freeReplyObject(th_cmd(c, "PING"));
    redisFree(c);
    snprintf(want, sizeof want, "redis://127.0.0.1:%d", s->port);
    ASSERT_EQ_STR(s->tcp_url, want);
}

void test_harness_server_basics(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *c = th_server_redis(s);
    char dir[sizeof s->dir];
    long long pings;

    ASSERT_EQ_INT(strncmp(s->unix_url, "unix:///", 8), 0);
    ASSERT_EQ_STR(s->unix_url + 7, s->sock);
    ASSERT_EQ_INT(access(s->sock, F_OK), 0);
    check_tcp(s);
    assert_config(c, "save", "");
    assert_config(c, "appendonly", "no");
    assert_config(c, "bind", "127.0.0.1");
    assert_config(c, "unixsocketperm", "700");
    ASSERT_EQ_INT(th_cmd_int(c, "DBSIZE"), 0);
    freeReplyObject(th_cmd(c, "DEBUG SLEEP 0"));

    pings = th_server_calls(c, "ping");
    freeReplyObject(th_cmd(c, "PING"));
    ASSERT_EQ_INT(th_server_calls(c, "ping"), pings + 1);

    th_server_pause(s);
    ASSERT(!ping_within(s, 200));
    th_server_resume(s);
    ASSERT(ping_within(s, 2000));

    redisFree(c);
    snprintf(dir, sizeof dir, "%s", s->dir);
    th_server_stop(s);
    ASSERT(access(dir, F_OK) != 0);
}

static void check_auth(void)
{
    th_server_opts o = {
        .requirepass = "pw0", .acl_user = "alice", .acl_pass = "pa55"};
    th_server *s = th_server_start(&o);
    redisContext *c = th_server_redis(s);
    redisReply *r;

    /* A connection that does not authenticate is refused. */
    ASSERT(!ping_within(s, 2000));
    redisFree(c);
    c = redisConnectUnix(s->sock);
    ASSERT(c != NULL && !c->err);
    r = th_cmd_raw(c, "AUTH alice wrong");
    ASSERT_EQ_INT(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    freeReplyObject(th_cmd(c, "AUTH alice pa55"));
    freeReplyObject(th_cmd(c, "SET k v"));
    redisFree(c);
    th_server_stop(s);
}

void test_harness_multiple_servers(void)
{
    th_server *s[3];
    redisContext *c[3];
    int i;

    for (i = 0; i < 3; i++) {
        s[i] = th_server_start(NULL);
        c[i] = th_server_redis(s[i]);
    }
    ASSERT(s[0]->port != s[1]->port && s[1]->port != s[2]->port &&
           s[0]->port != s[2]->port);
    ASSERT(strcmp(s[0]->sock, s[1]->sock) != 0);
    freeReplyObject(th_cmd(c[1], "SET only-here 1"));
    ASSERT_EQ_INT(th_cmd_int(c[0], "EXISTS only-here"), 0);
    ASSERT_EQ_INT(th_cmd_int(c[1], "EXISTS only-here"), 1);
    ASSERT_EQ_INT(th_cmd_int(c[2], "EXISTS only-here"), 0);
    for (i = 0; i < 3; i++)
        redisFree(c[i]);
    /* One left running on purpose: the atexit handler must stop it. */
    th_server_stop(s[0]);
    th_server_stop(s[1]);
    check_auth();
}
