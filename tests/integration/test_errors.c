/*
 * errors: each class of server refusal, produced by a real redis-server
 * (or, for a peer that is not Redis at all, a tiny HTTP listener), gives
 * its own code, a CLI exit status of its class, and a message that names
 * the fix and never quotes script text.
 *
 *   replica (READONLY), replica without its master (MASTERDOWN)
 *       EREADONLY, exit 69: point the client at the master
 *   ACL user without EVALSHA (NOPERM)     ENOPERM, exit 77
 *   LOADING, BUSY, maxmemory full (OOM)   ETRYLATER, exit 69
 *   protected mode (DENIED), EVAL or EVALSHA renamed away
 *                                         ECONFIG, exit 78
 *   an HTTP server                        ECONNECT, exit 69
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* The CLI's exit statuses (redislock(1), EXIT STATUS). */
#define EX_UNAVAILABLE 69
#define EX_NOPERM 77
#define EX_CONFIG 78

/* Bound: a server reaching a state (a replica's link, a script running
 * past the threshold). A CLI run is bounded by th_cli. */
#define STATE_MS 10000

/* Fails unless text names fix and shows none of a script: Redis echoes
 * an unknown command's arguments, which for EVAL are the source. */
#define ASSERT_NAMES_FIX(text, fix)                                            \
    assert_names_fix_at_(__FILE__, __LINE__, text, fix)
static void assert_names_fix_at_(const char *file, int line, const char *text,
                                 const char *fix)
{
    static const char *const script[] = {"with args", "redis.call", "KEYS[",
                                         "ARGV[", "--"};
    size_t i;

    if (strstr(text, fix) == NULL)
        test_fail_(file, line, "\"%s\" does not name \"%s\"", text, fix);
    for (i = 0; i < sizeof script / sizeof script[0]; i++)
        if (strstr(text, script[i]) != NULL)
            test_fail_(file, line, "\"%s\" shows script text (%s)", text,
                       script[i]);
}

/* A library call that fails with want, its detail naming fix. */
#define ASSERT_FAILS(expr, want, fix)                                          \
    do {                                                                       \
        ASSERT_ERR(expr, want);                                                \
        test_log("%s: %s", #expr, redislock_errdetail());                      \
        ASSERT_NAMES_FIX(redislock_errdetail(), fix);                          \
    } while (0)

/* Runs `redislock -u url ARGS...`; its exit status, its stderr in err. */
static int run_cli(const char *url, const char *const *args, char *err,
                   size_t size)
{
    const char *argv[16] = {"-u", url};
    int n = 2;

    while (*args != NULL && n < 15)
        argv[n++] = *args++;
    argv[n] = NULL;
    return th_cli(argv, NULL, NULL, 0, err, size);
}

/* The CLI exits want with one line on stderr that names fix. */
static void assert_cli(const char *url, const char *const *args, int want,
                       const char *fix)
{
    char err[2048];
    int st = run_cli(url, args, err, sizeof err);
    const char *nl = strchr(err, '\n');

    test_log("redislock %s ...: exit %d: %s", args[0], st, err);
    ASSERT_EQ_INT(st, want);
    ASSERT(strncmp(err, "redislock: ", 11) == 0);
    ASSERT(nl != NULL && nl[1] == '\0');
    ASSERT_NAMES_FIX(err, fix);
}

static const char *const run_true[] = {"run", "errors:k", "--", "true", NULL};
static const char *const status[] = {"status", "errors:k", NULL};

/* Whether INFO section of c has the line want ("loading:1"). */
static int info_has(redisContext *c, const char *section, const char *want)
{
    redisReply *r = th_cmd_raw(c, "INFO %s", section);
    int has = r->type == REDIS_REPLY_STRING && strstr(r->str, want) != NULL;

    freeReplyObject(r);
    return has;
}

/* Polls INFO (there is no event to wait for) until want shows. */
static void wait_info(redisContext *c, const char *section, const char *want)
{
    int64_t until = th_now_ms() + STATE_MS;

    while (!info_has(c, section, want)) {
        if (th_now_ms() > until)
            test_fail_(__FILE__, __LINE__, "INFO %s: no %s in %d ms", section,
                       want, STATE_MS);
        th_sleep_ms(10);
    }
}

/* A master that starts a replica's full sync at once, not after the
 * default 5 s wait for more replicas. */
static th_server *start_master(void)
{
    th_server_opts o = {0};

    o.extra_config = "repl-diskless-sync-delay 0";
    return th_server_start(&o);
}

static th_server *start_replica(const th_server *master, const char *more)
{
    char conf[256];
    th_server_opts o = {0};

    snprintf(conf, sizeof conf, "replicaof 127.0.0.1 %d\n%s", master->port,
             more);
    o.extra_config = conf;
    return th_server_start(&o);
}

/* A healthy replica: writes are READONLY; reads still work. */
void test_errors_replica_readonly(void)
{
    th_server *m = start_master(), *s = start_replica(m, "");
    redisContext *r = th_server_redis(s), *mr = th_server_redis(m);
    redislock_client *c;
    redislock_lock *l;

    wait_info(r, "replication", "master_link_status:up");
    c = th_client_url(s->tcp_url, NULL);
    l = th_lock(c, "errors:k");
    ASSERT_FAILS(redislock_acquire(l, NULL), REDISLOCK_EREADONLY,
                 "point the client at the master");
    ASSERT_EQ_INT(th_cmd_int(mr, "EXISTS errors:k"), 0);
    assert_cli(s->tcp_url, run_true, EX_UNAVAILABLE,
               "point the client at the master");
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(mr);
    redisFree(r);
    th_server_stop(s);
    th_server_stop(m);
}

/* A replica that serves no stale data once its master is gone answers
 * MASTERDOWN even to PING; the fix is the same. */
void test_errors_replica_masterdown(void)
{
    th_server *m = start_master();
    th_server *s = start_replica(m, "replica-serve-stale-data no");
    redisContext *r = th_server_redis(s);
    redislock_client *c = NULL;

    wait_info(r, "replication", "master_link_status:up");
    th_server_kill(m);
    wait_info(r, "replication", "master_link_status:down");
    ASSERT_FAILS(redislock_client_new(&c, s->tcp_url, NULL),
                 REDISLOCK_EREADONLY, "point the client at the master");
    ASSERT(c == NULL);
    assert_cli(s->tcp_url, status, EX_UNAVAILABLE,
               "point the client at the master");
    redisFree(r);
    th_server_stop(s);
    th_server_stop(m);
}

/* A user with every right but EVALSHA and FCALL: its password is right,
 * so the code is ENOPERM, not EAUTH, and the fix is the ACL. (Without
 * FCALL alone the scripts go by EVALSHA.) */
void test_errors_acl_noperm(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c;
    redislock_lock *l;
    char url[128];

    unsetenv("REDISCLI_AUTH");
    freeReplyObject(th_cmd(r, "ACL SETUSER locker on >pw ~* +@all -evalsha -fcall"));
    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d", s->port);
    c = th_client_url(url, NULL);
    l = th_lock(c, "errors:k");
    ASSERT_FAILS(redislock_acquire(l, NULL), REDISLOCK_ENOPERM, "redislock(3)");
    ASSERT(strstr(redislock_errdetail(), "evalsha") != NULL);
    assert_cli(url, run_true, EX_NOPERM, "redislock(3)");
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/* A running script past busy-reply-threshold: everyone else gets BUSY
 * until SCRIPT KILL. */
void test_errors_busy_script(void)
{
    th_server_opts o = {0};
    th_server *s;
    redisContext *spin, *r;
    redisReply *rep = NULL;
    redislock_client *c = NULL;
    int64_t until = th_now_ms() + STATE_MS;
    int done = 0;

    o.extra_config = "busy-reply-threshold 100";
    s = th_server_start(&o);
    spin = th_server_redis(s);
    r = th_server_redis(s);
    ASSERT_EQ_INT(redisAppendCommand(spin, "EVAL %s 0", "while true do end"),
                  REDIS_OK);
    while (!done && redisBufferWrite(spin, &done) == REDIS_OK)
        ;
    ASSERT(done);
    /* PING until the server says BUSY. */
    for (;;) {
        rep = th_cmd_raw(r, "PING");
        if (rep->type == REDIS_REPLY_ERROR &&
            strncmp(rep->str, "BUSY ", 5) == 0)
            break;
        freeReplyObject(rep);
        ASSERT(th_now_ms() < until);
        th_sleep_ms(10);
    }
    freeReplyObject(rep);
    ASSERT_FAILS(redislock_client_new(&c, s->tcp_url, NULL),
                 REDISLOCK_ETRYLATER, "try again later");
    assert_cli(s->tcp_url, status, EX_UNAVAILABLE, "try again later");
    freeReplyObject(th_cmd(r, "SCRIPT KILL"));
    ASSERT_EQ_INT(redisGetReply(spin, (void **)&rep), REDIS_OK);
    freeReplyObject(rep);
    redisFree(spin);
    redisFree(r);
    th_server_stop(s);
}

/* DEBUG RELOAD of 10000 keys at 1 ms each: ten seconds of LOADING, with
 * the server answering other clients meanwhile. */
void test_errors_loading(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s), *reload = th_server_redis(s);
    redislock_client *c = NULL;
    int done = 0;

    freeReplyObject(th_cmd(r, "DEBUG POPULATE 10000"));
    freeReplyObject(th_cmd(r, "CONFIG SET key-load-delay 1000"));
    freeReplyObject(
        th_cmd(r, "CONFIG SET loading-process-events-interval-bytes 1024"));
    ASSERT_EQ_INT(redisAppendCommand(reload, "DEBUG RELOAD"), REDIS_OK);
    while (!done && redisBufferWrite(reload, &done) == REDIS_OK)
        ;
    ASSERT(done);
    wait_info(r, "persistence", "loading:1");
    ASSERT_FAILS(redislock_client_new(&c, s->tcp_url, NULL),
                 REDISLOCK_ETRYLATER, "try again once it has loaded");
    assert_cli(s->tcp_url, status, EX_UNAVAILABLE, "try again");
    /* Still loading: the errors came from that, not from what follows. */
    ASSERT(info_has(r, "persistence", "loading:1"));
    redisFree(reload);
    redisFree(r);
    /* SIGKILL: a loading server may take its time over SIGTERM. */
    th_server_kill(s);
    th_server_stop(s);
}

/* Fills memory up to maxmemory under noeviction: writes are refused
 * with OOM until keys go. */
void test_errors_oom(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redisReply *rep, *info = th_cmd(r, "INFO memory");
    const char *p = strstr(info->str, "used_memory:");
    redislock_client *c;
    redislock_lock *l;
    static char fill[16384];
    int i, oom = 0;

    ASSERT(p != NULL);
    memset(fill, 'x', sizeof fill - 1);
    freeReplyObject(th_cmd(r, "CONFIG SET maxmemory-policy noeviction"));
    freeReplyObject(th_cmd(r, "CONFIG SET maxmemory %lld",
                           strtoll(p + 12, NULL, 10) + 512 * 1024));
    freeReplyObject(info);
    for (i = 0; i < 1000 && !oom; i++) {
        rep = th_cmd_raw(r, "SET fill:%d %s", i, fill);
        oom =
            rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "OOM ", 4) == 0;
        freeReplyObject(rep);
    }
    ASSERT(oom);
    c = th_client_url(s->tcp_url, NULL);
    l = th_lock(c, "errors:k");
    ASSERT_FAILS(redislock_acquire(l, NULL), REDISLOCK_ETRYLATER, "maxmemory");
    assert_cli(s->tcp_url, run_true, EX_UNAVAILABLE, "maxmemory");
    redislock_lock_free(l);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

/* command, and also when not NULL, renamed away, as rename-command ""
 * does to switch scripting off, and FCALL (or the scripts go as
 * functions): ECONFIG naming command, and none of Redis's echo of the
 * script. */
static void renamed(const char *command, const char *also)
{
    char conf[160];
    th_server_opts o = {0};
    th_server *s;
    redislock_client *c;
    redislock_lock *l;

    snprintf(conf, sizeof conf,
             "rename-command FCALL \"\"\nrename-command %s \"\"", command);
    if (also != NULL)
        snprintf(conf + strlen(conf), sizeof conf - strlen(conf),
                 "\nrename-command %s \"\"", also);
    o.extra_config = conf;
    s = th_server_start(&o);
    c = th_client_url(s->tcp_url, NULL);
    l = th_lock(c, "errors:k");
    ASSERT_FAILS(redislock_acquire(l, NULL), REDISLOCK_ECONFIG,
                 "rename-command");
    ASSERT(strstr(redislock_errdetail(), command) != NULL);
    assert_cli(s->tcp_url, run_true, EX_CONFIG, "rename-command");
    redislock_lock_free(l);
    redislock_client_free(c);
    th_server_stop(s);
}

/* Without FCALL and EVALSHA, ECONFIG. Without FCALL and EVAL the scripts
 * are loaded by SCRIPT LOAD and a lock is taken; without SCRIPT too,
 * ECONFIG naming EVAL. */
void test_errors_eval_renamed(void)
{
    th_server_opts o = {0};
    th_server *s;
    redislock_client *c;
    redislock_lock *l;

    renamed("EVALSHA", NULL);
    renamed("EVAL", "SCRIPT");
    o.extra_config = "rename-command FCALL \"\"\nrename-command EVAL \"\"";
    s = th_server_start(&o);
    c = th_client_url(s->tcp_url, NULL);
    l = th_lock(c, "errors:k");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_server_stop(s);
}

/* An IPv4 address of this machine other than loopback, or 0. */
static int outside_address(char *buf, size_t size)
{
    struct ifaddrs *all, *i;
    int found = 0;

    if (getifaddrs(&all) != 0)
        return 0;
    for (i = all; i != NULL && !found; i = i->ifa_next)
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK))
            found = inet_ntop(AF_INET,
                              &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
                              buf, (socklen_t)size) != NULL;
    freeifaddrs(all);
    return found;
}

/* Protected mode with no password turns away clients that do not come
 * from loopback: connect to the server by another of this machine's
 * addresses. */
void test_errors_protected_mode(void)
{
    char addr[64], conf[160], url[128];
    th_server_opts o = {0};
    th_server *s;
    redisContext *r;
    redislock_client *c = NULL;

    if (!outside_address(addr, sizeof addr))
        test_fail_(__FILE__, __LINE__,
                   "no IPv4 address but loopback to reach the server by");
    snprintf(conf, sizeof conf, "bind 127.0.0.1 %s\nprotected-mode yes", addr);
    o.extra_config = conf;
    s = th_server_start(&o);
    snprintf(url, sizeof url, "redis://%s:%d", addr, s->port);
    ASSERT_FAILS(redislock_client_new(&c, url, NULL), REDISLOCK_ECONFIG,
                 "protected-mode no");
    ASSERT(c == NULL);
    assert_cli(url, status, EX_CONFIG, "protected-mode no");
    /* With a password it lets the same client in. */
    r = th_server_redis(s);
    freeReplyObject(th_cmd(r, "CONFIG SET requirepass p"));
    snprintf(url, sizeof url, "redis://:p@%s:%d", addr, s->port);
    redislock_client_free(th_client_url(url, NULL));
    redisFree(r);
    th_server_stop(s);
}

/* A web server where Redis was expected: it answers every request with
 * 400 and closes, as HTTP servers do to a line they cannot parse. */
static void serve_http(int fd)
{
    static const char answer[] = "HTTP/1.1 400 Bad Request\r\n"
                                 "Content-Length: 0\r\n"
                                 "Connection: close\r\n\r\n";
    char buf[1024];
    int c;

#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    for (;;) {
        if ((c = accept(fd, NULL, NULL)) < 0)
            continue;
        if (read(c, buf, sizeof buf) > 0 &&
            write(c, answer, sizeof answer - 1) < 0)
            _exit(1);
        close(c);
    }
}

void test_errors_http_server(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    redislock_client *c = NULL;
    char url[64];
    pid_t pid;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT(fd >= 0);
    ASSERT_EQ_INT(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ_INT(listen(fd, 8), 0);
    ASSERT_EQ_INT(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        serve_http(fd);
    close(fd);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", ntohs(a.sin_port));
    ASSERT_FAILS(redislock_client_new(&c, url, NULL), REDISLOCK_ECONNECT,
                 "not a Redis server");
    ASSERT(strstr(redislock_errdetail(), "HTTP/1.1 400 Bad Request") != NULL);
    ASSERT(c == NULL);
    assert_cli(url, status, EX_UNAVAILABLE, "not a Redis server");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Redlock over three servers whose user may not PING: no majority, but
 * the cause is the ACL on every one, and saying "no quorum" would hide
 * it. */
void test_errors_redlock_names_cause(void)
{
    th_servers e = th_servers_start(3);
    const char *urls[3];
    char buf[3][128];
    redislock_client *c = NULL;
    const char *rl_status[] = {"--redlock", "-u",     buf[1],     "-u",
                               buf[2],      "status", "errors:k", NULL};
    int i;

    unsetenv("REDISCLI_AUTH");
    for (i = 0; i < 3; i++) {
        freeReplyObject(
            th_cmd(e.r[i], "ACL SETUSER locker on >pw ~* +@all -ping"));
        snprintf(buf[i], sizeof buf[i], "redis://locker:pw@127.0.0.1:%d",
                 e.s[i]->port);
        urls[i] = buf[i];
    }
    ASSERT_FAILS(redislock_client_new_redlock(&c, urls, 3, NULL),
                 REDISLOCK_ENOPERM, "redislock(3)");
    ASSERT(c == NULL);
    assert_cli(buf[0], rl_status, EX_NOPERM, "redislock(3)");
    th_servers_stop(&e);
}
