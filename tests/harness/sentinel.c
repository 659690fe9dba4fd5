#include "sentinel.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "util.h"

#define TH_SENT_STOP_TIMEOUT_MS 5000
/* Sentinels find each other by hello messages sent every 2 s: settling
 * takes 2-4 s, more on a loaded machine. */
#define TH_SENT_SETTLE_MS 15000
#define TH_SENT_SYNC_MS 15000
#define TH_SENT_POLL_MS 25
/* How long a node's reply is tried for again after its connection ended
 * (node_cmd). */
#define TH_SENT_RESET_MS 2000

#define FAIL(...) test_fail_(__FILE__, __LINE__, __VA_ARGS__)

/* For the exit list: stops a setup its test left running. */
static void stop_at_exit(void *t)
{
    th_sentinels_stop(t);
}

/* Copies the end of each sentinel's log to stderr, to explain a failure. */
static void dump_sentinel_logs(const th_sentinels *t)
{
    int i;

    for (i = 0; i < TH_SENTINEL_N; i++)
        if (t->sent_dir[i][0] != '\0')
            th_dump_file_end(t->sent_dir[i], "sentinel.log", NULL);
}

/* What configure and ping get through th_proc_start: the setup and the
 * index of the sentinel being started. */
typedef struct start_ctx {
    th_sentinels *t;
    int i;
} start_ctx;

/* Sentinel i's config, written afresh before each start attempt. The
 * `sentinel monitor` line must come before the lines naming the master. */
static void write_config(void *obj, FILE *f)
{
    const th_sentinels *t = ((const start_ctx *)obj)->t;
    int i = ((const start_ctx *)obj)->i;

    fprintf(f,
            "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"
            "logfile %s/sentinel.log\npidfile %s/sentinel.pid\n"
            "sentinel announce-ip 127.0.0.1\n",
            t->sent_port[i], t->sent_dir[i], t->sent_dir[i], t->sent_dir[i]);
    if (t->sentinel_password[0] != '\0')
        fprintf(f, "requirepass \"%s\"\nsentinel sentinel-pass \"%s\"\n",
                t->sentinel_password, t->sentinel_password);
    fprintf(f,
            "sentinel monitor %s 127.0.0.1 %d 2\n"
            "sentinel down-after-milliseconds %s %d\n"
            "sentinel failover-timeout %s %d\n"
            "sentinel parallel-syncs %s 1\n",
            t->master_name, t->node[0]->port, t->master_name, t->down_after_ms,
            t->master_name, t->failover_timeout_ms, t->master_name);
    if (t->data_password[0] != '\0')
        fprintf(f, "sentinel auth-pass %s \"%s\"\n", t->master_name,
                t->data_password);
}

/* A TCP connection to sentinel i, authenticated; NULL when it does not
 * answer or refuses the password (errors go to err when not NULL). */
static redisContext *sent_connect(const th_sentinels *t, int i, int ms,
                                  char *err, size_t errsize)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    redisContext *c;
    redisReply *r;

    if (t->sent_pid[i] <= 0) {
        if (err != NULL)
            snprintf(err, errsize, "sentinel %d is down", i);
        return NULL;
    }
    c = redisConnectWithTimeout("127.0.0.1", t->sent_port[i], tv);
    if (c == NULL || c->err) {
        if (err != NULL)
            snprintf(err, errsize, "connect to sentinel %d (port %d): %s", i,
                     t->sent_port[i], c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    /* hiredis 0.14 applies the connect timeout to the connect only. */
    redisSetTimeout(c, tv);
    if (t->sentinel_password[0] != '\0') {
        r = redisCommand(c, "AUTH %s", t->sentinel_password);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            if (err != NULL)
                snprintf(err, errsize, "AUTH to sentinel %d: %s", i,
                         r ? r->str : c->errstr);
            freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

/* Whether the sentinel answers PING. */
static int ping(void *obj)
{
    const start_ctx *x = obj;

    return th_redis_pong(sent_connect(x->t, x->i, 200, NULL, 0));
}

/* The sentinels run the server under test in sentinel mode, unless told
 * otherwise; --sentinel is harmless to a redis-sentinel binary. Their
 * files: sentinel.conf, sentinel.log and sentinel.stdout. */
static const th_proc_kind sentinel_kind = {.name = "sentinel",
                                           .bin_env = "REDIS_SENTINEL",
                                           .mode = "--sentinel",
                                           .configure = write_config,
                                           .ready = ping};

static void start_sentinel(th_sentinels *t, int i)
{
    char *dir = th_mkdtemp("rl-sentinel");
    start_ctx x = {t, i};
    char what[32];

    if (dir == NULL)
        FAIL("cannot create a sentinel dir in %s: %s", th_tmpdir(),
             strerror(errno));
    snprintf(t->sent_dir[i], sizeof t->sent_dir[i], "%s", dir);
    free(dir);
    snprintf(what, sizeof what, "sentinel %d", i);
    if (th_proc_start(&sentinel_kind, what, t->sent_dir[i], &x,
                      &t->sent_port[i], &t->sent_pid[i]) != 0) {
        th_dump_file_end(t->sent_dir[i], "sentinel.log", NULL);
        th_dump_file_end(t->sent_dir[i], "sentinel.stdout", NULL);
        FAIL("cannot start sentinel %d (set REDIS_SENTINEL, or "
             "REDIS_SERVER, to its path)",
             i);
    }
}

/* Appends s to out, %-escaping all but URL-unreserved characters. */
static void url_escape(char *out, size_t size, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = strlen(out);

    for (; *s != '\0' && o + 4 < size; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
}

/* The client's URL: the data password in the userinfo, the sentinels'
 * in the query (sentinel_password). */
static void make_url(th_sentinels *t)
{
    size_t n;
    int i;

    snprintf(t->url, sizeof t->url, "redis+sentinel://");
    if (t->data_password[0] != '\0') {
        snprintf(t->url + strlen(t->url), sizeof t->url - strlen(t->url), ":");
        url_escape(t->url, sizeof t->url, t->data_password);
        snprintf(t->url + strlen(t->url), sizeof t->url - strlen(t->url), "@");
    }
    for (i = 0; i < TH_SENTINEL_N; i++) {
        n = strlen(t->url);
        snprintf(t->url + n, sizeof t->url - n, "%s127.0.0.1:%d", i ? "," : "",
                 t->sent_port[i]);
    }
    n = strlen(t->url);
    snprintf(t->url + n, sizeof t->url - n, "/%s", t->master_name);
    if (t->sentinel_password[0] != '\0') {
        snprintf(t->url + strlen(t->url), sizeof t->url - strlen(t->url),
                 "?sentinel_password=");
        url_escape(t->url, sizeof t->url, t->sentinel_password);
    }
}

/* Node i started with the setup's config: a password when asked, and
 * masterauth on both nodes, since either may become a replica. The node
 * leaves the exit list: the setup stops it, after its sentinels. */
static th_server *start_node(const th_sentinels *t, const char *more)
{
    th_server_opts so = {0};
    th_server *s;
    char conf[512];

    /* The master would otherwise wait 5 s for more replicas to sync. */
    snprintf(conf, sizeof conf, "repl-diskless-sync-delay 0\n%s",
             more ? more : "");
    if (t->data_password[0] != '\0') {
        so.requirepass = t->data_password;
        snprintf(conf + strlen(conf), sizeof conf - strlen(conf),
                 "masterauth \"%s\"\n", t->data_password);
    }
    so.extra_config = conf;
    s = th_server_start(&so);
    th_cleanup_remove(&s->cleanup);
    return s;
}

/* cmd on c, with SIGPIPE blocked in this thread and any it raised taken
 * back: a write to a connection a sentinel has just ended must fail, not
 * end the test. */
static redisReply *node_try(redisContext *c, const char *cmd)
{
    struct timespec zero = {0, 0};
    sigset_t ps, old;
    redisReply *r;

    sigemptyset(&ps);
    sigaddset(&ps, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &ps, &old);
    r = redisCommand(c, cmd);
    while (sigtimedwait(&ps, NULL, &zero) == SIGPIPE)
        ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

/* cmd's reply on node i. A sentinel that reconfigures a node ends its
 * normal clients' connections (CLIENT KILL TYPE normal after its
 * REPLICAOF, so that clients learn the new role), the harness's too when
 * it reads the node then: a connection ended before the reply is opened
 * again, for up to TH_SENT_RESET_MS. */
static redisReply *node_cmd(th_sentinels *t, int i, const char *cmd)
{
    int64_t deadline = th_now_ms() + TH_SENT_RESET_MS;
    redisContext *c = th_sentinels_node_redis(t, i);
    redisReply *r;

    while ((r = node_try(c, cmd)) == NULL && th_now_ms() < deadline) {
        redisFree(c);
        th_sleep_ms(10);
        c = th_sentinels_node_redis(t, i);
    }
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        FAIL("node %d: %s: %s", i, cmd, r ? r->str : c->errstr);
    redisFree(c);
    return r;
}

/* The INFO replication text of node i, malloc'ed. */
static char *node_info(th_sentinels *t, int i)
{
    redisReply *r = node_cmd(t, i, "INFO replication");
    char *s = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");

    freeReplyObject(r);
    if (s == NULL)
        FAIL("out of memory");
    return s;
}

/* Whether replica r is in sync with master m, by both their INFO. */
static int in_sync(th_sentinels *t, int m, int r, char *why, size_t size)
{
    char *mi = node_info(t, m), *ri = node_info(t, r), want[64], n[40];
    int ok = 1;

    snprintf(n, sizeof n, "connected_slaves:%d\r", t->nodes - 1);
    snprintf(want, sizeof want, "master_port:%d\r", t->node[m]->port);
    if (strstr(ri, want) == NULL ||
        strstr(ri, "master_link_status:up") == NULL) {
        snprintf(why, size, "node %d is not an in-sync replica of node %d", r,
                 m);
        ok = 0;
    } else if (strstr(mi, n) == NULL) {
        snprintf(why, size, "node %d does not report %s", m, n);
        ok = 0;
    }
    free(mi);
    free(ri);
    return ok;
}

/* The value of field name in one entry of SENTINEL replicas/sentinels (a
 * flat array of names and values); "" when absent. */
static const char *field(const redisReply *e, const char *name)
{
    size_t i;

    if (e->type != REDIS_REPLY_ARRAY)
        return "";
    for (i = 0; i + 1 < e->elements; i += 2)
        if (e->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(e->element[i]->str, name) == 0 &&
            e->element[i + 1]->type == REDIS_REPLY_STRING)
            return e->element[i + 1]->str;
    return "";
}

/* The port sentinel c names as the master's: 0 when it names none, -1
 * when it does not answer (why says what). */
static int named_port(th_sentinels *t, redisContext *c, int i, char *why,
                      size_t size)
{
    redisReply *r =
        redisCommand(c, "SENTINEL get-master-addr-by-name %s", t->master_name);
    int port = -1;

    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        snprintf(why, size, "sentinel %d: get-master-addr-by-name: %s", i,
                 r ? r->str : c->errstr);
    else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    else
        port = 0;
    freeReplyObject(r);
    return port;
}

/* Whether port is that of a sentinel the test killed. */
static int dead_sentinel(const th_sentinels *t, int port)
{
    int i;

    for (i = 0; i < TH_SENTINEL_N; i++)
        if (t->sent_port[i] == port && t->sent_pid[i] <= 0)
            return 1;
    return 0;
}

/* Whether SENTINEL <what> <name> on c lists want entries, each up with
 * role in its flags (not s_down, not disconnected), unless it is a
 * sentinel the test killed; if port is not 0, one must be on that port.
 * Other flags are no trouble: master_down, say, is a vote left from the
 * last failover, which the sentinel forgets 5 s later. */
static int lists(th_sentinels *t, redisContext *c, int i, const char *what,
                 size_t want, const char *role, int port, char *why,
                 size_t size)
{
    redisReply *r = redisCommand(c, "SENTINEL %s %s", what, t->master_name);
    int ok = 1, found = port == 0;
    size_t k;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(why, size, "sentinel %d: SENTINEL %s: %s", i, what,
                 r == NULL                      ? c->errstr
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "not an array");
        freeReplyObject(r);
        return 0;
    }
    if (r->elements != want) {
        snprintf(why, size, "sentinel %d lists %zu %s, want %zu", i,
                 r->elements, what, want);
        ok = 0;
    }
    for (k = 0; ok && k < r->elements; k++) {
        const char *f = field(r->element[k], "flags");
        int at = atoi(field(r->element[k], "port"));
        if ((strstr(f, role) == NULL || strstr(f, "s_down") != NULL ||
             strstr(f, "disconnected") != NULL) &&
            !dead_sentinel(t, at)) {
            snprintf(why, size, "sentinel %d: %s entry port %d: flags \"%s\"",
                     i, what, at, f);
            ok = 0;
        }
        if (at == port)
            found = 1;
    }
    if (ok && !found) {
        snprintf(why, size, "sentinel %d does not list port %d among its %s", i,
                 port, what);
        ok = 0;
    }
    freeReplyObject(r);
    return ok;
}

/* Whether every running sentinel names node m as the master and sees the
 * replica r and the other sentinels, all up but those the test killed. */
static int sentinels_agree(th_sentinels *t, int m, int r, char *why,
                           size_t size)
{
    int i, ok = 1, port;
    redisContext *c;

    for (i = 0; ok && i < TH_SENTINEL_N; i++) {
        if (t->sent_pid[i] <= 0)
            continue;
        if ((c = sent_connect(t, i, 1000, why, size)) == NULL)
            return 0;
        port = named_port(t, c, i, why, size);
        if (port >= 0 && port != t->node[m]->port) {
            snprintf(why, size, "sentinel %d names port %d, want node %d's %d",
                     i, port, m, t->node[m]->port);
            ok = 0;
        }
        ok = ok && port >= 0 &&
             lists(t, c, i, "replicas", (size_t)t->nodes - 1, "slave",
                   t->node[r]->port, why, size) &&
             lists(t, c, i, "sentinels", TH_SENTINEL_N - 1, "sentinel", 0, why,
                   size);
        redisFree(c);
    }
    return ok;
}

/* Polls cond(t, m, r) within ms; fails naming what did not happen. */
static void wait_for(th_sentinels *t, int m, int r, int64_t ms,
                     int (*cond)(th_sentinels *, int, int, char *, size_t),
                     const char *what)
{
    int64_t deadline = th_now_ms() + ms;
    char why[512] = "";

    /* Replication and sentinel gossip have no event to wait on. */
    while (!cond(t, m, r, why, sizeof why)) {
        if (th_now_ms() >= deadline) {
            dump_sentinel_logs(t);
            FAIL("%s not within %lld ms: %s", what, (long long)ms, why);
        }
        th_sleep_ms(TH_SENT_POLL_MS);
    }
}

th_sentinels *th_sentinels_start(const th_sentinel_opts *o)
{
    th_sentinel_opts none = {0};
    th_sentinels *t = calloc(1, sizeof *t);
    redisContext *c;
    int i;

    if (t == NULL)
        FAIL("out of memory");
    if (o == NULL)
        o = &none;
    snprintf(t->master_name, sizeof t->master_name, "%s",
             o->master_name ? o->master_name : "rlmaster");
    snprintf(t->data_password, sizeof t->data_password, "%s",
             o->data_password ? o->data_password : "");
    snprintf(t->sentinel_password, sizeof t->sentinel_password, "%s",
             o->sentinel_password ? o->sentinel_password : "");
    t->down_after_ms = o->down_after_ms > 0 ? o->down_after_ms : 1000;
    t->failover_timeout_ms =
        o->failover_timeout_ms > 0 ? o->failover_timeout_ms : 5000;
    /* On the exit list before anything starts: whatever fails from here on,
     * the exit stops what did start. */
    th_cleanup_add(&t->cleanup, stop_at_exit, t);

    t->nodes = o->replicas == 2 ? 3 : 2;
    /* All start as masters (th_server_start checks the database empty,
     * which a replica's first sync could race), then the replicas follow. */
    t->node[0] = start_node(t, NULL);
    for (i = 1; i < t->nodes; i++) {
        char prio[40];

        snprintf(prio, sizeof prio, "replica-priority %d\n",
                 o->priority[i - 1] > 0 ? o->priority[i - 1] : 100);
        t->node[i] = start_node(t, prio);
        c = th_sentinels_node_redis(t, i);
        freeReplyObject(th_cmd(c, "REPLICAOF 127.0.0.1 %d", t->node[0]->port));
        redisFree(c);
    }
    /* In sync first, so that the sentinels' first INFO sees the links up. */
    for (i = 1; i < t->nodes; i++)
        wait_for(t, 0, i, TH_SENT_SYNC_MS, in_sync, "a replica's first sync");

    for (i = 0; i < TH_SENTINEL_N; i++)
        start_sentinel(t, i);
    make_url(t);
    wait_for(t, 0, 1, TH_SENT_SETTLE_MS, sentinels_agree,
             "the sentinels' agreement");
    return t;
}

void th_sentinels_stop(th_sentinels *t)
{
    int i, mine;

    if (t == NULL)
        return;
    th_cleanup_remove(&t->cleanup);
    mine = t->cleanup.owner == getpid();
    /* Sentinels first, so that none reacts to the nodes going away. */
    for (i = 0; mine && i < TH_SENTINEL_N; i++)
        if (t->sent_pid[i] > 0)
            kill(t->sent_pid[i], SIGTERM);
    for (i = 0; mine && i < TH_SENTINEL_N; i++) {
        if (t->sent_pid[i] > 0)
            th_reap(t->sent_pid[i], TH_SENT_STOP_TIMEOUT_MS);
        t->sent_pid[i] = 0;
        if (t->sent_dir[i][0] != '\0') {
            th_keep_log(t->sent_dir[i], "sentinel.log");
            th_rmtree(t->sent_dir[i]);
        }
    }
    /* th_server_stop leaves a forked worker's copies alone. */
    for (i = t->nodes - 1; i >= 0; i--)
        th_server_stop(t->node[i]);
    free(t);
}

int th_sentinels_master(th_sentinels *t)
{
    char why[256];
    redisContext *c;
    int i, port = -1;

    for (i = 0; port < 0 && i < TH_SENTINEL_N; i++) {
        if ((c = sent_connect(t, i, 2000, NULL, 0)) == NULL)
            continue;
        port = named_port(t, c, i, why, sizeof why);
        redisFree(c);
    }
    for (i = 0; port > 0 && i < t->nodes; i++)
        if (t->node[i] != NULL && t->node[i]->port == port)
            return i;
    return -1;
}

int th_sentinels_kill_master(th_sentinels *t)
{
    int m = th_sentinels_master(t);

    if (m < 0)
        FAIL("the sentinels name no master to kill");
    if (t->node[m]->pid <= 0)
        FAIL("node %d, the master, is down already", m);
    th_server_kill(t->node[m]);
    return m;
}

/* ROLE's first element on node i: "master", "slave"; "" when down. */
static void node_role(th_sentinels *t, int i, char *out, size_t size)
{
    redisReply *r;

    out[0] = '\0';
    if (t->node[i] == NULL || t->node[i]->pid <= 0)
        return;
    r = node_cmd(t, i, "ROLE");
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        snprintf(out, size, "%s", r->element[0]->str);
    freeReplyObject(r);
}

/* Whether every running sentinel names node m, and m says it is master. */
static int failed_over(th_sentinels *t, int m, int unused, char *why,
                       size_t size)
{
    char role[32];
    redisContext *c;
    int i, port;

    (void)unused;
    for (i = 0; i < TH_SENTINEL_N; i++) {
        if (t->sent_pid[i] <= 0)
            continue;
        if ((c = sent_connect(t, i, 1000, why, size)) == NULL)
            return 0;
        port = named_port(t, c, i, why, size);
        redisFree(c);
        if (port < 0)
            return 0;
        if (port != t->node[m]->port) {
            snprintf(why, size, "sentinel %d names port %d, want node %d's %d",
                     i, port, m, t->node[m]->port);
            return 0;
        }
    }
    node_role(t, m, role, sizeof role);
    if (strcmp(role, "master") != 0) {
        snprintf(why, size, "node %d answers ROLE with \"%s\"", m, role);
        return 0;
    }
    return 1;
}

int64_t th_sentinels_wait_failover(th_sentinels *t, int old_master, int64_t ms)
{
    int64_t t0 = th_now_ms();
    int m;

    if (old_master < 0 || old_master >= t->nodes)
        FAIL("no node %d", old_master);
    /* With two candidates, the one the sentinels settle on. */
    while ((m = th_sentinels_master(t)) == old_master || m < 0) {
        if (th_now_ms() - t0 >= ms)
            FAIL("no failover from node %d within %lld ms", old_master,
                 (long long)ms);
        th_sleep_ms(TH_SENT_POLL_MS);
    }
    if (t->node[m]->pid <= 0)
        FAIL("node %d, the one named, is down", m);
    wait_for(t, m, 0, ms - (th_now_ms() - t0), failed_over, "the failover");
    return th_now_ms() - t0;
}

/* Node r in sync with master m, and seen up as a replica by every
 * running sentinel. */
static int rejoined(th_sentinels *t, int m, int r, char *why, size_t size)
{
    return in_sync(t, m, r, why, size) && sentinels_agree(t, m, r, why, size);
}

void th_sentinels_restart_node(th_sentinels *t, int i)
{
    th_server *old, *s;
    redisContext *c;
    char more[64];
    int m = th_sentinels_master(t);

    if (i < 0 || i >= t->nodes)
        FAIL("no node %d", i);
    old = t->node[i];
    if (old->pid > 0)
        FAIL("node %d is running: kill it before restarting it", i);
    if (m < 0 || m == i || t->node[m]->pid <= 0)
        FAIL("node %d cannot rejoin: the sentinels name node %d", i, m);
    /* The old port, so that the sentinels know it again rather than list
     * a new replica beside a dead one: it overrides the harness's probed
     * port, the later line winning. It starts as an empty master (the
     * harness checks the database empty), then follows, before the
     * sentinels would convert it themselves (8 s). */
    snprintf(more, sizeof more, "port %d\n", old->port);
    s = start_node(t, more);
    s->port = old->port;
    snprintf(s->tcp_url, sizeof s->tcp_url, "redis://127.0.0.1:%d", s->port);
    t->node[i] = s;
    th_server_stop(old);
    c = th_sentinels_node_redis(t, i);
    freeReplyObject(th_cmd(c, "REPLICAOF 127.0.0.1 %d", t->node[m]->port));
    redisFree(c);
    wait_for(t, m, i, TH_SENT_SETTLE_MS, rejoined, "the node's rejoining");
}

void th_sentinels_kill_sentinel(th_sentinels *t, int i)
{
    if (i < 0 || i >= TH_SENTINEL_N)
        FAIL("no sentinel %d", i);
    if (t->sent_pid[i] <= 0)
        FAIL("sentinel %d is down already", i);
    if (kill(t->sent_pid[i], SIGKILL) != 0)
        FAIL("SIGKILL %d: %s", (int)t->sent_pid[i], strerror(errno));
    waitpid(t->sent_pid[i], NULL, 0);
    t->sent_pid[i] = 0;
}

redisContext *th_sentinels_node_redis(th_sentinels *t, int i)
{
    if (i < 0 || i >= t->nodes || t->node[i] == NULL)
        FAIL("no node %d", i);
    if (t->node[i]->pid <= 0)
        FAIL("node %d is down", i);
    return th_server_redis(t->node[i]);
}

redisContext *th_sentinels_sentinel_redis(th_sentinels *t, int i)
{
    char err[256];
    redisContext *c;

    if (i < 0 || i >= TH_SENTINEL_N)
        FAIL("no sentinel %d", i);
    if ((c = sent_connect(t, i, 5000, err, sizeof err)) == NULL)
        FAIL("%s", err);
    return c;
}

int64_t th_sentinels_rival(th_sentinels *t, int i, const char *key, int64_t ms,
                           void (*between)(void *arg), int (*holds)(void *arg),
                           void *arg, int *held)
{
    int64_t t0 = th_now_ms(), got = -1;
    redisContext *c;
    redisReply *r;

    signal(SIGPIPE, SIG_IGN);
    c = th_sentinels_node_redis(t, i);
    while (got < 0 && th_now_ms() - t0 < ms) {
        if ((r = redisCommand(c, "SET %s rival NX PX 60000", key)) == NULL) {
            redisFree(c);
            c = th_sentinels_node_redis(t, i);
            continue;
        }
        if (r->type == REDIS_REPLY_STATUS) {
            got = th_now_ms() - t0;
            *held = holds(arg);
        }
        freeReplyObject(r);
        between(arg);
    }
    redisFree(c);
    test_log("the rival on node %d %s%lld ms; the holder %s", i,
             got < 0 ? "never got the key in " : "got the key at ",
             (long long)(got < 0 ? ms : got),
             got < 0 ? "held on"
             : *held ? "believed it held"
                     : "had learned of the loss");
    return got;
}
