/*
 * redislock_doctor and strict clients: each row of the doctor's list on a
 * real server started (or set) so, and nothing on a clean one.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cluster.h"
#include "harness/faked.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"


/* A server that keeps every lock: AOF with an fsync per write. */
static const char clean_config[] = "appendonly yes\nappendfsync always\n";

typedef struct findings {
    redislock_finding f[32];
    size_t n;
} findings;

/* The doctor's findings on c, with a clock check of clock_ms. */
static findings examine(redislock_client *c, int64_t clock_ms)
{
    findings x;
    size_t i;

    memset(&x, 0, sizeof x);
    ASSERT_OK(redislock_doctor(c, clock_ms, x.f, 32, &x.n));
    ASSERT(x.n <= 32);
    for (i = 0; i < x.n; i++)
        test_log("%s: %s: %s (fix: %s)", x.f[i].server,
                 redislock_risk_name(x.f[i].risk), x.f[i].what, x.f[i].fix);
    return x;
}

/* How many findings of risk x has; the first's index in *at. */
static int count(const findings *x, redislock_risk risk, size_t *at)
{
    int n = 0;
    size_t i;

    for (i = x->n; i-- > 0;)
        if (x->f[i].risk == risk) {
            n++;
            if (at != NULL)
                *at = i;
        }
    return n;
}

static th_server *start_with(const char *config)
{
    th_server_opts o = {0};

    o.extra_config = config;
    return th_server_start(&o);
}

/* A strict client of url with opts' guards: its error, the detail
 * checked to name word when it fails. */
static redislock_err strict_client(const char *url, redislock_options o,
                                   const char *word)
{
    redislock_client *c = NULL;
    redislock_err err;

    o.strict = 1;
    err = redislock_client_new(&c, url, &o);
    if (err == REDISLOCK_OK) {
        redislock_client_free(c);
        return err;
    }
    ASSERT(c == NULL);
    test_log("strict: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), word) != NULL);
    ASSERT(err != REDISLOCK_ECONFIG ||
           strstr(redislock_errdetail(), "fix:") != NULL);
    return err;
}

void test_doctor_clean_server_silent(void)
{
    th_server *s = start_with(clean_config);
    redislock_client *c = th_client_url(s->unix_url, NULL);
    redislock_options o = {0};
    findings x = examine(c, 300);

    ASSERT_EQ_INT((long long)x.n, 0);
    ASSERT_EQ_INT(strict_client(s->unix_url, o, ""), REDISLOCK_OK);
    /* Counting alone, and the call's own mistakes. */
    ASSERT_OK(redislock_doctor(c, 0, NULL, 0, &x.n));
    ASSERT_EQ_INT((long long)x.n, 0);
    ASSERT_EQ_INT(redislock_doctor(NULL, 0, x.f, 1, &x.n), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(redislock_doctor(c, 0, NULL, 1, &x.n), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(redislock_doctor(c, -1, x.f, 1, &x.n), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(redislock_doctor(c, 60001, x.f, 1, &x.n), REDISLOCK_EINVAL);
    ASSERT_EQ_STR(redislock_risk_name((redislock_risk)99), "unknown");
    /* Strict reads the servers when the client is made. */
    o.lazy_connect = 1;
    ASSERT_EQ_INT(strict_client(s->unix_url, o, "lazy_connect"),
                  REDISLOCK_EINVAL);
    redislock_client_free(c);
    th_server_stop(s);
}

/* Every evicting policy is flagged, volatile-* (which pick keys with a
 * TTL, every lock's) as much as allkeys-*. */
void test_doctor_eviction(void)
{
    th_server *s = start_with(clean_config);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client_url(s->unix_url, NULL);
    redislock_options o = {0};
    findings x;
    size_t at = 0;

    freeReplyObject(th_cmd(r, "CONFIG SET maxmemory 64mb"));
    freeReplyObject(th_cmd(r, "CONFIG SET maxmemory-policy volatile-lru"));
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_EVICTION, &at), 1);
    ASSERT(strstr(x.f[at].what, "volatile-lru") != NULL);
    ASSERT(strstr(x.f[at].fix, "noeviction") != NULL);
    ASSERT_EQ_STR(x.f[at].server, s->sock);
    ASSERT_EQ_INT(strict_client(s->unix_url, o, "eviction"), REDISLOCK_ECONFIG);
    freeReplyObject(th_cmd(r, "CONFIG SET maxmemory-policy allkeys-random"));
    x = examine(c, 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_EVICTION, NULL), 1);
    freeReplyObject(th_cmd(r, "CONFIG SET maxmemory-policy noeviction"));
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 0);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/* No append-only file; then one fsynced every second, which the WAITAOF
 * guard covers; then appendfsync always. */
void test_doctor_persistence(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = th_client_url(s->unix_url, NULL), *g;
    redislock_options o = {0};
    findings x = examine(c, 0);

    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_NO_PERSISTENCE, NULL), 1);
    ASSERT_EQ_INT(strict_client(s->unix_url, o, "no-persistence"),
                  REDISLOCK_ECONFIG);
    freeReplyObject(th_cmd(r, "CONFIG SET appendonly yes"));
    freeReplyObject(th_cmd(r, "CONFIG SET appendfsync everysec"));
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_FSYNC, NULL), 1);
    ASSERT(strstr(x.f[0].what, "everysec") != NULL);
    ASSERT_EQ_INT(strict_client(s->unix_url, o, "fsync"), REDISLOCK_ECONFIG);
    /* The master's fsync confirmed by WAITAOF (Redis 7.2+ and Valkey;
     * make check's Redis 7.0 has none, and the guard is refused): nothing
     * to flag. */
    o.wait_aof_local = 1;
    g = NULL;
    if (redislock_client_new(&g, s->unix_url, &o) == REDISLOCK_OK) {
        x = examine(g, 0);
        ASSERT_EQ_INT((long long)x.n, 0);
        redislock_client_free(g);
    } else {
        ASSERT(strstr(redislock_errdetail(), "no WAITAOF") != NULL);
    }
    o.wait_aof_local = 0;
    freeReplyObject(th_cmd(r, "CONFIG SET appendfsync no"));
    x = examine(c, 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_FSYNC, NULL), 1);
    freeReplyObject(th_cmd(r, "CONFIG SET appendfsync always"));
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 0);
    /* A user that may not read CONFIG: the fsync policy is not judged,
     * the rest is. */
    freeReplyObject(th_cmd(r, "ACL SETUSER nocfg on >pw ~* &* +@all -config"));
    {
        char url[256];
        redislock_client *n;

        snprintf(url, sizeof url, "redis://nocfg:pw@127.0.0.1:%d", s->port);
        n = th_client_url(url, NULL);
        freeReplyObject(th_cmd(r, "CONFIG SET appendfsync everysec"));
        x = examine(n, 0);
        ASSERT_EQ_INT((long long)x.n, 0);
        redislock_client_free(n);
    }
    /* AOF turned on at run time makes a SIGTERM wait (5 s here). */
    freeReplyObject(th_cmd(r, "CONFIG SET appendonly no"));
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/* Waits (bounded) until master m has n connected replicas. */
static void wait_replicas(redisContext *m, long long n)
{
    int64_t end = th_now_ms() + 10000;

    while (th_info_field(m, "replication", "connected_slaves") != n) {
        ASSERT(th_now_ms() < end);
        th_sleep_ms(20);
    }
}

/* A master with two replicas: flagged without the replica guard, and
 * with a guard that waits for fewer than it has; a replica's own URL is
 * flagged as a replica. */
void test_doctor_replicas(void)
{
    th_server *m = start_with(clean_config), *rs[2];
    redisContext *rm = th_server_redis(m);
    redislock_client *c = th_client_url(m->unix_url, NULL), *g;
    redislock_options o = {0};
    findings x;
    size_t at = 0;
    int i;

    for (i = 0; i < 2; i++) {
        redisContext *rr;

        rs[i] = start_with(clean_config);
        rr = th_server_redis(rs[i]);
        freeReplyObject(th_cmd(rr, "REPLICAOF 127.0.0.1 %d", m->port));
        redisFree(rr);
    }
    wait_replicas(rm, 2);
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_REPLICAS, &at), 1);
    ASSERT(strstr(x.f[at].what, "2 replica") != NULL);
    ASSERT_EQ_INT(strict_client(m->unix_url, o, "replicas"), REDISLOCK_ECONFIG);
    o.wait_replicas = 1;
    g = th_client_url(m->unix_url, &o);
    x = examine(g, 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_REPLICAS, &at), 1);
    ASSERT(strstr(x.f[at].what, "waits for 1") != NULL);
    redislock_client_free(g);
    o.wait_replicas = REDISLOCK_REPLICAS_ALL;
    g = th_client_url(m->unix_url, &o);
    x = examine(g, 0);
    ASSERT_EQ_INT((long long)x.n, 0);
    redislock_client_free(g);
    g = th_client_url(rs[0]->unix_url, NULL);
    x = examine(g, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_REPLICA, NULL), 1);
    redislock_client_free(g);
    redislock_client_free(c);
    redisFree(rm);
    for (i = 0; i < 2; i++)
        th_server_stop(rs[i]);
    th_server_stop(m);
}

/* A user that may not run scripts: no acquire can succeed. One that may
 * not read INFO: nothing can be judged. */
void test_doctor_no_scripts(void)
{
    th_server *s = start_with(clean_config);
    redisContext *r = th_server_redis(s);
    redislock_client *c;
    redislock_options o = {0};
    char url[256];
    findings x;
    size_t at = 0;

    freeReplyObject(
        th_cmd(r, "ACL SETUSER noscript on >pw ~* &* +@all -@scripting"));
    snprintf(url, sizeof url, "redis://noscript:pw@127.0.0.1:%d", s->port);
    c = th_client_url(url, NULL);
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_NO_SCRIPTS, &at), 1);
    ASSERT(strstr(x.f[at].what, "NOPERM") != NULL ||
           strstr(x.f[at].what, "permission") != NULL);
    ASSERT_EQ_INT(strict_client(url, o, "no-scripts"), REDISLOCK_ECONFIG);
    redislock_client_free(c);
    /* A user that may not read INFO: the server is not judged, and a
     * strict client cannot vouch for it. */
    freeReplyObject(th_cmd(r, "ACL SETUSER noinfo on >pw ~* &* +@all -info"));
    snprintf(url, sizeof url, "redis://noinfo:pw@127.0.0.1:%d", s->port);
    c = th_client_url(url, NULL);
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_UNANSWERED, &at), 1);
    ASSERT(strstr(x.f[at].what, "INFO refused") != NULL);
    ASSERT_EQ_INT(strict_client(url, o, "refused INFO"), REDISLOCK_ECONFIG);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/* Three sentinels, then one: the survivor cannot agree a failover, and
 * the two killed do not answer. */
void test_doctor_sentinel_quorum(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redislock_options o = {0};
    redislock_client *c;
    int64_t end;
    findings x;

    o.wait_replicas = REDISLOCK_REPLICAS_ALL;
    c = th_client_url(t->url, &o);
    x = examine(c, 0);
    /* The harness's nodes keep no append-only file. */
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_SENTINEL_QUORUM, NULL), 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_UNANSWERED, NULL), 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_REPLICAS, NULL), 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_NO_PERSISTENCE, NULL), 1);
    th_sentinels_kill_sentinel(t, 1);
    th_sentinels_kill_sentinel(t, 2);
    /* The survivor counts the others out once they are down for its
     * down-after time. */
    end = th_now_ms() + 15000;
    do {
        ASSERT(th_now_ms() < end);
        th_sleep_ms(200);
        x = examine(c, 0);
    } while (count(&x, REDISLOCK_RISK_SENTINEL_QUORUM, NULL) == 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_SENTINEL_QUORUM, NULL), 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_UNANSWERED, NULL), 2);
    redislock_client_free(c);
    /* Strict, with the master's append-only file on: the quorum is what
     * refuses it. */
    {
        redisContext *r = th_sentinels_node_redis(t, th_sentinels_master(t));

        freeReplyObject(th_cmd(r, "CONFIG SET appendonly yes"));
        freeReplyObject(th_cmd(r, "CONFIG SET appendfsync always"));
        ASSERT_EQ_INT(strict_client(t->url, o, "sentinel-quorum"),
                      REDISLOCK_ECONFIG);
        freeReplyObject(th_cmd(r, "CONFIG SET appendonly no"));
        redisFree(r);
    }
    th_sentinels_stop(t);
}

/* A slot taken from the cluster's only master: flagged once. */
void test_doctor_cluster_slots(void)
{
    th_cluster *tc = th_cluster_start(1, 0);
    redisContext *r = th_cluster_redis(tc, 0);
    redislock_client *c = NULL;
    redislock_options o = {0};
    findings x;

    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    x = examine(c, 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_CLUSTER_SLOTS, NULL), 0);
    freeReplyObject(th_cmd(r, "CLUSTER DELSLOTS 7"));
    x = examine(c, 0);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_CLUSTER_SLOTS, NULL), 1);
    redislock_client_free(c);
    /* Strict: the first finding refuses the client (the nodes keep no
     * append-only file, which comes first). */
    o.strict = 1;
    c = NULL;
    ASSERT_EQ_INT(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, &o),
                  REDISLOCK_ECONFIG);
    ASSERT(c == NULL);
    ASSERT(strstr(redislock_errdetail(), "strict: ") != NULL);
    redisFree(r);
    th_cluster_stop(tc);
}

/*
 * The clock check, as a probe: with $RL_DOCTOR_URL (set by
 * test_doctor_clock, which runs this runner again under libfaketime with
 * every clock of this process at 1.5 times the rate) the server there is
 * flagged, its TIME advancing at two thirds of this process's monotonic
 * clock; without it, a server and this process that agree are not.
 * (redis-server itself cannot run under libfaketime here: jemalloc's
 * start-up recurses into its clock_gettime.)
 */
void test_doctor_clock_probe(void)
{
    const char *url = getenv("RL_DOCTOR_URL");
    th_server *s = url == NULL ? start_with(clean_config) : NULL;
    redislock_client *c = th_client_url(url ? url : s->unix_url, NULL);
    findings x = examine(c, 0);
    size_t at = 0;

    ASSERT_EQ_INT((long long)x.n, 0);
    x = examine(c, 500);
    if (url == NULL) {
        ASSERT_EQ_INT((long long)x.n, 0);
    } else {
        ASSERT_EQ_INT((long long)x.n, 1);
        ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_CLOCK, &at), 1);
        ASSERT(strstr(x.f[at].what, "advanced") != NULL);
        printf("clock finding: %s\n", x.f[at].what);
    }
    redislock_client_free(c);
    th_server_stop(s);
}

void test_doctor_clock(void)
{
    th_server *s = start_with(clean_config);
    char url[300], buf[8192];
    const char *env[] = {"FAKETIME=+0 x1.5", url, NULL};
    int out;
    pid_t pid;

    snprintf(url, sizeof url, "RL_DOCTOR_URL=%s", s->unix_url);
    pid = th_faked_start("doctor_clock_probe", env, &out);
    th_faked_finish(pid, out, buf, sizeof buf);
    ASSERT(strstr(buf, "clock finding: ") != NULL);
    th_server_stop(s);
}

/* A Redlock client with one server stopped: that one is unanswered, the
 * others judged; strict does not refuse a minority it cannot read. */
void test_doctor_unanswered(void)
{
    th_server *s[3];
    const char *urls[3];
    redislock_options o = {0};
    redislock_client *c = NULL;
    findings x;
    size_t at = 0;
    int i;

    for (i = 0; i < 3; i++) {
        s[i] = start_with(clean_config);
        urls[i] = s[i]->tcp_url;
    }
    /* The stopped server costs each examination a command timeout; a
     * second is room for the others on a loaded machine. */
    o.command_timeout_ms = 1000;
    o.connect_timeout_ms = 1000;
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, &o));
    th_server_pause(s[1]);
    x = examine(c, 0);
    ASSERT_EQ_INT((long long)x.n, 1);
    ASSERT_EQ_INT(count(&x, REDISLOCK_RISK_UNANSWERED, &at), 1);
    ASSERT(strstr(x.f[at].server, "127.0.0.1") != NULL);
    redislock_client_free(c);
    o.strict = 1;
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, &o));
    redislock_client_free(c);
    th_server_resume(s[1]);
    for (i = 0; i < 3; i++)
        th_server_stop(s[i]);
}
