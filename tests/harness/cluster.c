#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redislock.h>

#include "../test.h"
#include "util.h"

#define FAIL(...) test_fail_(__FILE__, __LINE__, __VA_ARGS__)
#define TH_CREATE_TIMEOUT_MS 30000
#define TH_JOIN_TIMEOUT_MS 20000
#define NSLOTS 16384

/* Waits up to ms for pid; its exit status, or -1 after killing it. */
static int wait_child(pid_t pid, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    int st;

    /* A child's exit has no descriptor to wait on: polling is the way. */
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (th_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return -1;
        }
        th_sleep_ms(20);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* redis-cli --cluster create over every server; its output goes to
 * create.log in the first server's dir. */
static void create_with_cli(th_cluster *c, int replicas)
{
    char addr[TH_CLUSTER_MAX][32], reps[16], log[256];
    const char *argv[TH_CLUSTER_MAX + 8];
    int i, argc = 0, fd, rc;
    pid_t pid;

    argv[argc++] = "redis-cli";
    argv[argc++] = "--cluster";
    argv[argc++] = "create";
    for (i = 0; i < c->n; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", c->s[i]->port);
        argv[argc++] = addr[i];
    }
    snprintf(reps, sizeof reps, "%d", replicas);
    argv[argc++] = "--cluster-replicas";
    argv[argc++] = reps;
    argv[argc++] = "--cluster-yes";
    argv[argc] = NULL;
    snprintf(log, sizeof log, "%s/create.log", c->s[0]->dir);
    fflush(NULL);
    if ((pid = fork()) < 0)
        FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    if ((rc = wait_child(pid, TH_CREATE_TIMEOUT_MS)) != 0)
        FAIL("redis-cli --cluster create failed (%d); see %s", rc, log);
}

/* One master with every slot: redis-cli wants three at least. */
static void create_single(th_cluster *c)
{
    redisContext *r = th_cluster_redis(c, 0);

    freeReplyObject(th_cmd(r, "CLUSTER ADDSLOTSRANGE 0 %d", NSLOTS - 1));
    redisFree(r);
}

th_cluster *th_cluster_start(int masters, int replicas)
{
    th_server_opts o = {0};
    char conf[256];
    th_cluster *c = calloc(1, sizeof *c);
    int i;

    if (c == NULL)
        FAIL("out of memory");
    c->n = masters * (1 + replicas);
    c->masters = masters;
    if (c->n > TH_CLUSTER_MAX || (masters != 1 && masters < 3) ||
        (masters == 1 && replicas != 0))
        FAIL("unsupported cluster: %d masters, %d replicas", masters, replicas);
    o.extra_config = conf;
    /* The bus port is probed too, at each start attempt (port + 10000
     * may be taken, or past 65535). Full coverage is not required, so
     * that the masters that still run keep serving while a failed one
     * is replaced. The config file is relative to the server's dir. */
    o.cluster_bus = 1;
    snprintf(conf, sizeof conf,
             "cluster-enabled yes\ncluster-config-file nodes.conf\n"
             "cluster-node-timeout %d\ncluster-require-full-coverage no",
             TH_CLUSTER_NODE_TIMEOUT_MS);
    for (i = 0; i < c->n; i++) {
        c->s[i] = th_server_start(&o);
        c->seeds[i] = c->s[i]->tcp_url;
    }
    if (masters == 1)
        create_single(c);
    else
        create_with_cli(c, replicas);
    th_cluster_wait_ok(c, TH_JOIN_TIMEOUT_MS);
    return c;
}

void th_cluster_stop(th_cluster *c)
{
    int i;

    if (c == NULL)
        return;
    for (i = 0; i < c->n; i++)
        th_server_stop(c->s[i]);
    free(c);
}

redisContext *th_cluster_redis(th_cluster *c, int i)
{
    if (i < 0 || i >= c->n || c->s[i] == NULL)
        FAIL("cluster server %d is not running", i);
    return th_server_redis(c->s[i]);
}

/* Fills owner[] with the master's port of every slot (0: none), by
 * CLUSTER SLOTS of r. */
static void slot_ports(redisContext *r, int *owner)
{
    redisReply *rep = th_cmd(r, "CLUSTER SLOTS");
    size_t i;
    long long s;

    memset(owner, 0, NSLOTS * sizeof *owner);
    for (i = 0; i < rep->elements; i++) {
        redisReply *e = rep->element[i];
        if (e->elements < 3 || e->element[2]->elements < 2)
            FAIL("malformed CLUSTER SLOTS entry");
        for (s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            owner[s] = (int)e->element[2]->element[1]->integer;
    }
    freeReplyObject(rep);
}

/* The index of the running server on port, or -1. */
static int by_port(const th_cluster *c, int port)
{
    int i;

    for (i = 0; i < c->n; i++)
        if (c->s[i] != NULL && c->s[i]->port == port)
            return i;
    return -1;
}

/* Whether node i is settled: state ok, and in sync if a replica. Its
 * slot map goes into owner[]. */
static int node_ok(th_cluster *c, int i, int *owner)
{
    redisContext *r = th_cluster_redis(c, i);
    redisReply *info = th_cmd(r, "CLUSTER INFO");
    redisReply *repl = th_cmd(r, "INFO replication");
    int ok = strstr(info->str, "cluster_state:ok") != NULL &&
             (strstr(repl->str, "role:slave") == NULL ||
              strstr(repl->str, "master_link_status:up") != NULL);

    freeReplyObject(info);
    freeReplyObject(repl);
    if (ok)
        slot_ports(r, owner);
    redisFree(r);
    return ok;
}

/* Whether every running node is settled and all agree, with every slot
 * served by a running master. */
static int agreed(th_cluster *c, int *first, int *other)
{
    int i, s, seen = 0;

    for (i = 0; i < c->n; i++) {
        if (c->s[i] == NULL)
            continue;
        if (!node_ok(c, i, seen ? other : first))
            return 0;
        if (seen && memcmp(first, other, NSLOTS * sizeof *first) != 0)
            return 0;
        seen = 1;
    }
    for (s = 0; s < NSLOTS; s++)
        if (by_port(c, first[s]) < 0)
            return 0;
    return seen;
}

void th_cluster_wait_ok(th_cluster *c, int64_t timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;
    int *first = malloc(2 * NSLOTS * sizeof *first);

    if (first == NULL)
        FAIL("out of memory");
    /* Gossip has no event to wait on: poll, within the bound. */
    while (!agreed(c, first, first + NSLOTS)) {
        if (th_now_ms() >= deadline)
            FAIL("the cluster did not settle in %lld ms",
                 (long long)timeout_ms);
        th_sleep_ms(50);
    }
    free(first);
}

int th_cluster_owner(th_cluster *c, unsigned slot)
{
    int *owner = malloc(NSLOTS * sizeof *owner), i, at;
    redisContext *r;

    if (owner == NULL)
        FAIL("out of memory");
    for (i = 0; i < c->n && c->s[i] == NULL; i++)
        ;
    r = th_cluster_redis(c, i);
    slot_ports(r, owner);
    redisFree(r);
    at = by_port(c, owner[slot % NSLOTS]);
    free(owner);
    return at;
}

unsigned th_cluster_keyslot(th_cluster *c, const char *key)
{
    redisContext *r;
    int i;
    long long n;

    for (i = 0; i < c->n && c->s[i] == NULL; i++)
        ;
    r = th_cluster_redis(c, i);
    n = th_cmd_int(r, "CLUSTER KEYSLOT %s", key);
    redisFree(r);
    return (unsigned)n;
}

char *th_cluster_value(th_cluster *c, const char *key)
{
    unsigned slot = th_cluster_keyslot(c, key);
    int64_t deadline = th_now_ms() + 3000;
    redisContext *r;
    redisReply *rep;
    char *v;
    int owner;

    /* The nodes' maps may disagree for a moment after a failover: the
     * map read may name no running node for the slot yet, or the one it
     * names may answer MOVED (or CLUSTERDOWN, TRYAGAIN). Asked again, for
     * up to 3 s. */
    for (;;) {
        if ((owner = th_cluster_owner(c, slot)) < 0) {
            if (th_now_ms() >= deadline)
                FAIL("no master serves %s's slot", key);
            th_sleep_ms(20);
            continue;
        }
        r = th_cluster_redis(c, owner);
        rep = th_cmd_raw(r, "GET %s", key);
        redisFree(r);
        if (rep->type != REDIS_REPLY_ERROR || th_now_ms() >= deadline)
            break;
        freeReplyObject(rep);
        th_sleep_ms(20);
    }
    if (rep->type == REDIS_REPLY_ERROR)
        FAIL("GET %s on node %d: %s", key, owner, rep->str);
    v = rep->type == REDIS_REPLY_STRING ? strdup(rep->str) : NULL;
    freeReplyObject(rep);
    return v;
}

const char *th_cluster_key_away(th_cluster *c, const char *stem, int avoid,
                                int *at, char *buf, size_t size)
{
    int i;

    for (i = 0; i < 64; i++) {
        snprintf(buf, size, "{%s%d}k", stem, i);
        *at = th_cluster_owner(c, th_cluster_keyslot(c, buf));
        if (*at != avoid)
            return buf;
    }
    FAIL("no key {%s...} served by a master other than %d", stem, avoid);
    return NULL;
}

/* A replica's INFO names its master by port. */
int th_cluster_replica_of(th_cluster *c, int m)
{
    char want[32];
    int i, found = -1;

    snprintf(want, sizeof want, "master_port:%d\r", c->s[m]->port);
    for (i = 0; i < c->n && found < 0; i++) {
        redisContext *r;
        redisReply *rep;

        if (i == m || c->s[i] == NULL)
            continue;
        r = th_cluster_redis(c, i);
        rep = redisCommand(r, "INFO replication");
        if (rep != NULL && rep->type == REDIS_REPLY_STRING &&
            strstr(rep->str, want) != NULL)
            found = i;
        freeReplyObject(rep);
        redisFree(r);
    }
    return found;
}

void th_cluster_kill(th_cluster *c, int i)
{
    th_server *s = c->s[i];
    char dir[sizeof s->dir];

    snprintf(dir, sizeof dir, "%s", s->dir);
    if (kill(s->pid, SIGKILL) != 0)
        FAIL("SIGKILL %d: %s", (int)s->pid, strerror(errno));
    waitpid(s->pid, NULL, 0);
    /* Reaped: th_server_stop must not signal the pid again. */
    s->pid = -1;
    th_server_stop(s);
    th_rmtree(dir);
    c->s[i] = NULL;
}

void th_cluster_config_set(th_cluster *c, const char *name, const char *value)
{
    redisContext *r;
    int i;

    for (i = 0; i < c->n; i++) {
        if (c->s[i] == NULL)
            continue;
        r = th_cluster_redis(c, i);
        freeReplyObject(th_cmd(r, "CONFIG SET %s %s", name, value));
        redisFree(r);
    }
}

void th_cluster_synced(th_cluster *c, int i, const char *key)
{
    redisContext *r = th_cluster_redis(c, i);
    long long acks;

    freeReplyObject(th_cmd(r, "SET %s:sync 1", key));
    if ((acks = th_cmd_int(r, "WAIT 1 5000")) != 1)
        FAIL("server %d: %lld replicas acked within 5 s", i, acks);
    redisFree(r);
}

void th_cluster_freeze(th_cluster *c, int i, int frozen)
{
    if (i < 0 || i >= c->n || c->s[i] == NULL)
        FAIL("cluster server %d is not running", i);
    if (kill(c->s[i]->pid, frozen ? SIGSTOP : SIGCONT) != 0)
        FAIL("%s %d: %s", frozen ? "SIGSTOP" : "SIGCONT", (int)c->s[i]->pid,
             strerror(errno));
}

/* Whether r's ROLE says master. */
static int is_master(redisContext *r)
{
    redisReply *rep = redisCommand(r, "ROLE");
    int yes = rep != NULL && rep->type == REDIS_REPLY_ARRAY &&
              rep->elements > 0 &&
              rep->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(rep->element[0]->str, "master") == 0;

    freeReplyObject(rep);
    return yes;
}

int64_t th_cluster_wait_master(th_cluster *c, int i, int64_t ms)
{
    int64_t t0 = th_now_ms();
    redisContext *r = th_cluster_redis(c, i);

    /* A promotion has no event to wait on from outside: polled. */
    while (!is_master(r)) {
        if (th_now_ms() - t0 >= ms)
            FAIL("server %d is not a master after %lld ms", i, (long long)ms);
        th_sleep_ms(10);
    }
    redisFree(r);
    return th_now_ms() - t0;
}

long long th_cluster_errorstat(th_cluster *c, int i, const char *name)
{
    redisContext *r = th_cluster_redis(c, i);
    redisReply *rep = th_cmd(r, "INFO errorstats");
    char needle[64];
    const char *p;
    long long n = 0;

    snprintf(needle, sizeof needle, "errorstat_%s:count=", name);
    if ((p = strstr(rep->str, needle)) != NULL)
        n = strtoll(p + strlen(needle), NULL, 10);
    freeReplyObject(rep);
    redisFree(r);
    return n;
}

int th_cluster_incr(redisContext *r, const char *counter)
{
    redisReply *rep = redisCommand(r, "GET %s", counter);
    long long n;

    if (rep == NULL ||
        (rep->type != REDIS_REPLY_NIL && rep->type != REDIS_REPLY_STRING)) {
        freeReplyObject(rep);
        return -1;
    }
    n = rep->type == REDIS_REPLY_NIL ? 0 : strtoll(rep->str, NULL, 10);
    freeReplyObject(rep);
    rep = redisCommand(r, "SET %s %lld", counter, n + 1);
    n = rep != NULL && rep->type == REDIS_REPLY_STATUS ? 0 : -1;
    freeReplyObject(rep);
    return (int)n;
}

long long th_cluster_counter(redisContext *r, const char *counter)
{
    char *v = th_cmd_str(r, NULL, "GET %s", counter);
    long long n = v ? strtoll(v, NULL, 10) : 0;

    free(v);
    return n;
}

char *th_cluster_node_id(th_cluster *c, int i)
{
    redisContext *r = th_cluster_redis(c, i);
    char *id = th_cmd_str(r, NULL, "CLUSTER MYID");

    redisFree(r);
    return id;
}

void th_cluster_migrate_keys(redisContext *src, int dport, unsigned slot)
{
    redisReply *keys, *m;
    size_t i;

    for (;;) {
        keys = th_cmd(src, "CLUSTER GETKEYSINSLOT %u 100", slot);
        if (keys->elements == 0) {
            freeReplyObject(keys);
            return;
        }
        for (i = 0; i < keys->elements; i++) {
            m = th_cmd_raw(src, "MIGRATE 127.0.0.1 %d %s 0 5000", dport,
                           keys->element[i]->str);
            freeReplyObject(m);
        }
        freeReplyObject(keys);
    }
}

/* One poll of the rival: 1 when it got the key, 0 when refused (counted
 * in *moved when the reply is MOVED), -1 when the connection broke. */
static int rival_poll(redisContext *r, const char *key, long *moved)
{
    redisReply *rep = redisCommand(r, "SET %s rival NX PX 60000", key);
    int got;

    if (rep == NULL)
        return -1;
    got = rep->type == REDIS_REPLY_STATUS;
    if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "MOVED", 5) == 0)
        (*moved)++;
    freeReplyObject(rep);
    return got;
}

int64_t th_cluster_rival(th_cluster *c, int i, const char *key, int64_t ms,
                         void (*between)(void *arg), int (*holds)(void *arg),
                         void *arg, int *held)
{
    int64_t t0 = th_now_ms(), got = -1;
    redisContext *r;
    long polls = 0, moved = 0;
    int res;

    signal(SIGPIPE, SIG_IGN);
    r = th_cluster_redis(c, i);
    while (got < 0 && th_now_ms() - t0 < ms) {
        polls++;
        if ((res = rival_poll(r, key, &moved)) < 0) {
            redisFree(r);
            r = th_cluster_redis(c, i);
        } else if (res == 1) {
            got = th_now_ms() - t0;
            *held = holds != NULL ? holds(arg)
                                  : redislock_check(arg) == REDISLOCK_OK;
        }
        if (between != NULL)
            between(arg);
        else
            th_sleep_ms(20);
    }
    redisFree(r);
    test_log("the rival on server %d (%ld polls, %ld MOVED) %s%lld ms; "
             "the holder %s",
             i, polls, moved, got < 0 ? "never got the key in " : "got it at ",
             (long long)(got < 0 ? ms : got),
             got < 0 ? "held on"
             : *held ? "believed it held"
                     : "had learned of the loss");
    return got;
}

void th_cluster_slot_to(th_cluster *c, unsigned slot, const char *id, int skip)
{
    redisContext *r;
    int i;

    for (i = 0; i < c->masters; i++) {
        if (i == skip || c->s[i] == NULL)
            continue;
        r = th_cluster_redis(c, i);
        freeReplyObject(th_cmd(r, "CLUSTER SETSLOT %u NODE %s", slot, id));
        redisFree(r);
    }
}
