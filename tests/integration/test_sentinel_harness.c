/*
 * sentinel_harness: the Sentinel setup that the sentinel tests stand on.
 * The sentinels must name the master, follow a real failover (kill -9 of
 * the master) to a writable replica, and, with passwords, refuse clients
 * that do not authenticate while still working among themselves.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/sentinel.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Generous: a split vote retries after twice the failover timeout. */
#define FAILOVER_MS 30000

/* GET key on node i until it reads want, within ms (replication is
 * asynchronous). */
static void await_value(th_sentinels *t, int i, const char *key,
                        const char *want, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    redisContext *c = th_sentinels_node_redis(t, i);
    char *v;

    for (;;) {
        v = th_cmd_str(c, NULL, "GET %s", key);
        if (v != NULL && strcmp(v, want) == 0)
            break;
        free(v);
        if (th_now_ms() >= deadline)
            test_fail_(__FILE__, __LINE__,
                       "%s did not reach node %d in %lld ms", key, i,
                       (long long)ms);
        th_sleep_ms(10);
    }
    free(v);
    redisFree(c);
}

/* SENTINEL get-master-addr-by-name through sentinel i names node m. */
static void assert_named(th_sentinels *t, int i, int m)
{
    redisContext *c = th_sentinels_sentinel_redis(t, i);
    redisReply *r =
        th_cmd(c, "SENTINEL get-master-addr-by-name %s", t->master_name);
    char port[16];

    ASSERT_EQ_INT(r->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ_INT(r->elements, 2);
    ASSERT_EQ_STR(r->element[0]->str, "127.0.0.1");
    snprintf(port, sizeof port, "%d", t->node[m]->port);
    ASSERT_EQ_STR(r->element[1]->str, port);
    freeReplyObject(r);
    redisFree(c);
}

/* A node's role by ROLE: "master" or "slave". */
static void assert_role(th_sentinels *t, int i, const char *want)
{
    redisContext *c = th_sentinels_node_redis(t, i);
    redisReply *r = th_cmd(c, "ROLE");

    ASSERT_EQ_INT(r->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ_STR(r->element[0]->str, want);
    freeReplyObject(r);
    redisFree(c);
}

/* The failover of a killed master; returns the new master. */
static int fail_over(th_sentinels *t)
{
    int old = th_sentinels_kill_master(t);
    int64_t ms = th_sentinels_wait_failover(t, old, FAILOVER_MS);

    test_log("failover from node %d took %lld ms (down-after %d ms)", old,
             (long long)ms, t->down_after_ms);
    return 1 - old;
}

void test_sentinel_harness_failover(void)
{
    int64_t t0 = th_now_ms();
    th_sentinels *t = th_sentinels_start(NULL);
    char want[512];
    redisContext *c;
    int i, m;

    test_log("start took %lld ms", (long long)(th_now_ms() - t0));

    snprintf(want, sizeof want,
             "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/"
             "rlmaster",
             t->sent_port[0], t->sent_port[1], t->sent_port[2]);
    ASSERT_EQ_STR(t->url, want);
    ASSERT_EQ_INT(th_sentinels_master(t), 0);
    for (i = 0; i < TH_SENTINEL_N; i++)
        assert_named(t, i, 0);
    assert_role(t, 0, "master");
    assert_role(t, 1, "slave");

    /* Replicated before the failover. */
    c = th_sentinels_node_redis(t, 0);
    freeReplyObject(th_cmd(c, "SET sh:before 1"));
    redisFree(c);
    await_value(t, 1, "sh:before", "1", 5000);

    m = fail_over(t);
    ASSERT_EQ_INT(m, 1);
    ASSERT_EQ_INT(th_sentinels_master(t), 1);
    for (i = 0; i < TH_SENTINEL_N; i++)
        assert_named(t, i, 1);
    /* The promoted replica takes writes and kept the data. */
    c = th_sentinels_node_redis(t, 1);
    freeReplyObject(th_cmd(c, "SET sh:after 2"));
    ASSERT_EQ_INT(th_get_num(c, "sh:after"), 2);
    ASSERT_EQ_INT(th_get_num(c, "sh:before"), 1);
    redisFree(c);

    /* The killed node comes back as a replica of the new master, and a
     * second failover, with one sentinel down, returns to it. */
    t0 = th_now_ms();
    th_sentinels_restart_node(t, 0);
    test_log("restart took %lld ms", (long long)(th_now_ms() - t0));
    assert_role(t, 0, "slave");
    await_value(t, 0, "sh:after", "2", 5000);
    th_sentinels_kill_sentinel(t, 2);
    m = fail_over(t);
    ASSERT_EQ_INT(m, 0);
    ASSERT_EQ_INT(th_sentinels_master(t), 0);
    c = th_sentinels_node_redis(t, 0);
    freeReplyObject(th_cmd(c, "SET sh:third 3"));
    redisFree(c);
    th_sentinels_stop(t);
}

/* Ends every normal client's connection to a node (as a sentinel does
 * when it reconfigures one), over and over for ms once the node on port
 * is a replica. */
typedef struct killer {
    int port;
    int64_t ms;
    long kills;
    pthread_t th;
} killer;

/* A connection to port, tried until it answers, within 10 s. */
static redisContext *killer_connect(int port)
{
    int64_t deadline = th_now_ms() + 10000;
    struct timeval tv = {1, 0};
    redisContext *c;

    for (;;) {
        c = redisConnectWithTimeout("127.0.0.1", port, tv);
        if (c != NULL && c->err == 0)
            return c;
        redisFree(c);
        if (th_now_ms() >= deadline)
            return NULL;
        th_sleep_ms(5);
    }
}

/* Whether the INFO text r is that of a server this process started (a
 * port freed by a kill may be another program's by now: it must not
 * have its clients ended). */
static int ours(const redisReply *r)
{
    const char *at = strstr(r->str, "process_id:");
    char path[64];
    FILE *f;
    int pid, ppid = 0;

    if (at == NULL)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/stat", atoi(at + 11));
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    if (fscanf(f, "%d %*s %*c %d", &pid, &ppid) != 2)
        ppid = 0;
    fclose(f);
    return ppid == (int)getpid();
}

static void *killer_main(void *arg)
{
    killer *k = arg;
    int64_t deadline = th_now_ms() + 10000, end = 0;
    redisContext *c = killer_connect(k->port);
    redisReply *r;
    sigset_t ps;

    /* A sentinel may end this connection too: a write to it then fails
     * here rather than ending the test (the signal stays with this
     * thread, blocked, and goes with it). */
    sigemptyset(&ps);
    sigaddset(&ps, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &ps, NULL);
    while (c != NULL && (end == 0 || th_now_ms() < end)) {
        r = end == 0 ? redisCommand(c, "INFO")
                     : redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes");
        if (r == NULL) {
            /* A sentinel ended this one: connect again. */
            redisFree(c);
            c = killer_connect(k->port);
            continue;
        }
        if (end == 0 && r->type == REDIS_REPLY_STRING && ours(r) &&
            strstr(r->str, "role:slave") != NULL)
            end = th_now_ms() + k->ms;
        else if (end != 0 && r->type == REDIS_REPLY_INTEGER)
            k->kills += r->integer;
        freeReplyObject(r);
        if (end == 0 && th_now_ms() >= deadline)
            break;
        if (end == 0)
            th_sleep_ms(1);
    }
    redisFree(c);
    return NULL;
}

/* The sentinels end a node's normal connections whenever they
 * reconfigure it, and the harness, reading INFO replication and ROLE
 * while it waits for a restarted node to rejoin, must not take that for
 * a failure: here the connections are ended over and over for 300 ms
 * during that wait. */
void test_sentinel_harness_info_survives_client_kill(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    int old = th_sentinels_kill_master(t);
    killer k = {0};

    th_sentinels_wait_failover(t, old, FAILOVER_MS);
    k.port = t->node[old]->port;
    k.ms = 300;
    ASSERT_EQ_INT(pthread_create(&k.th, NULL, killer_main, &k), 0);
    th_sentinels_restart_node(t, old);
    pthread_join(k.th, NULL);
    test_log("%ld connections ended while the node rejoined", k.kills);
    ASSERT_GT(k.kills, 0);
    th_sentinels_stop(t);
}

/* A command on a connection that never authenticated: refused NOAUTH. */
static void assert_noauth(redisContext *c, const char *cmd)
{
    redisReply *r = th_cmd_raw(c, cmd);

    ASSERT_EQ_INT(r->type, REDIS_REPLY_ERROR);
    if (strncmp(r->str, "NOAUTH", 6) != 0)
        test_fail_(__FILE__, __LINE__, "%s: %s, want NOAUTH", cmd, r->str);
    freeReplyObject(r);
}

static redisContext *tcp(int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

    ASSERT(c != NULL && !c->err);
    redisSetTimeout(c, tv);
    return c;
}

void test_sentinel_harness_auth(void)
{
    th_sentinel_opts o = {0};
    th_sentinels *t;
    redisContext *c;
    redisReply *r;
    char cmd[128], want[512];
    int i;

    o.master_name = "authed";
    o.data_password = "data-pw";
    o.sentinel_password = "sent pw@1";
    t = th_sentinels_start(&o);
    /* Both passwords, %-escaped: the data nodes' in the userinfo, the
     * sentinels' in the query. */
    snprintf(want, sizeof want,
             "redis+sentinel://:data-pw@127.0.0.1:%d,127.0.0.1:%d,"
             "127.0.0.1:%d/authed?sentinel_password=sent%%20pw%%401",
             t->sent_port[0], t->sent_port[1], t->sent_port[2]);
    ASSERT_EQ_STR(t->url, want);

    /* A sentinel without AUTH refuses, then answers. */
    snprintf(cmd, sizeof cmd, "SENTINEL get-master-addr-by-name %s",
             t->master_name);
    for (i = 0; i < TH_SENTINEL_N; i++) {
        c = tcp(t->sent_port[i]);
        assert_noauth(c, cmd);
        r = th_cmd_raw(c, "AUTH wrong");
        ASSERT_EQ_INT(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
        freeReplyObject(th_cmd(c, "AUTH %s", o.sentinel_password));
        r = th_cmd(c, cmd);
        ASSERT_EQ_INT(r->type, REDIS_REPLY_ARRAY);
        ASSERT_EQ_INT(r->elements, 2);
        freeReplyObject(r);
        redisFree(c);
    }

    /* The nodes refuse too, over TCP and the unix socket. */
    for (i = 0; i < 2; i++) {
        c = tcp(t->node[i]->port);
        assert_noauth(c, "GET x");
        redisFree(c);
        c = redisConnectUnix(t->node[i]->sock);
        ASSERT(c != NULL && !c->err);
        assert_noauth(c, "PING");
        redisFree(c);
    }
    c = th_sentinels_node_redis(t, 0);
    freeReplyObject(th_cmd(c, "SET sh:k v"));
    redisFree(c);

    /* A failover needs the sentinels to talk to each other (sentinel-pass)
     * and to the nodes (auth-pass), and the replica to its master
     * (masterauth). */
    ASSERT_EQ_INT(fail_over(t), 1);
    c = th_sentinels_node_redis(t, 1);
    ASSERT_EQ_INT(th_cmd_int(c, "EXISTS sh:k"), 1);
    freeReplyObject(th_cmd(c, "SET sh:k2 v"));
    redisFree(c);
    th_sentinels_stop(t);
}
