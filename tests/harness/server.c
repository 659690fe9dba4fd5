#include "server.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "script.h"
#include "util.h"

#define TH_STOP_TIMEOUT_MS 5000

#define FAIL(...) test_fail_(__FILE__, __LINE__, __VA_ARGS__)

/* For the exit list: stops a server its test left running. */
static void stop_at_exit(void *s)
{
    th_server_stop(s);
}

/* What configure and ping get through th_proc_start: the server being
 * started and its options. */
typedef struct start_ctx {
    th_server *s;
    const th_server_opts *o;
} start_ctx;

/* redis.conf, for the port th_proc_start probed. */
static void write_config(void *obj, FILE *f)
{
    const th_server *s = ((const start_ctx *)obj)->s;
    const th_server_opts *o = ((const start_ctx *)obj)->o;

    fprintf(f,
            "bind 127.0.0.1\nport %d\nunixsocket %s\nunixsocketperm 700\n"
            "save \"\"\nappendonly no\ndaemonize no\n"
            "pidfile %s/redis.pid\ndir %s\nlogfile %s/redis.log\n"
            "enable-debug-command local\n",
            s->port, s->sock, s->dir, s->dir, s->dir);
    if (o->requirepass != NULL)
        fprintf(f, "requirepass \"%s\"\n", o->requirepass);
    if (o->acl_user != NULL)
        fprintf(f, "user %s on >%s ~* &* +@all\n", o->acl_user,
                o->acl_pass ? o->acl_pass : "");
    if (o->cluster_bus)
        fprintf(f, "cluster-port %d\n", th_free_port());
    if (o->extra_config != NULL)
        fprintf(f, "%s\n", o->extra_config);
}

/* Answers PING (after AUTH when needed)? */
static int ping(void *obj)
{
    const th_server *s = ((const start_ctx *)obj)->s;
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectUnixWithTimeout(s->sock, tv);

    if (c != NULL && !c->err)
        redisSetTimeout(c, tv);
    if (c != NULL && !c->err && s->password[0] != '\0')
        freeReplyObject(redisCommand(c, "AUTH %s", s->password));
    return th_redis_pong(c);
}

/* The harness's servers: redis.conf, redis.log and redis.stdout in their
 * dirs, $REDIS_SERVER or redis-server. */
static const th_proc_kind server_kind = {.name = "redis",
                                         .bin_env = "REDIS_SERVER",
                                         .configure = write_config,
                                         .ready = ping};

static void check_empty(th_server *s)
{
    redisContext *c = th_server_redis(s);
    long long n = th_cmd_int(c, "DBSIZE");

    redisFree(c);
    if (n != 0) {
        th_server_stop(s);
        FAIL("refusing a non-empty database (DBSIZE %lld)", n);
    }
}

th_server *th_server_start(const th_server_opts *opts)
{
    th_server_opts none = {0};
    th_server *s = calloc(1, sizeof *s);
    char *dir = th_mkdtemp("rl-redis");
    start_ctx x;

    if (s == NULL || dir == NULL)
        FAIL("cannot create a server dir in %s: %s", th_tmpdir(),
             strerror(errno));
    if (opts == NULL)
        opts = &none;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    free(dir);
    snprintf(s->sock, sizeof s->sock, "%s/redis.sock", s->dir);
    snprintf(s->unix_url, sizeof s->unix_url, "unix://%s", s->sock);
    snprintf(s->password, sizeof s->password, "%s",
             opts->requirepass ? opts->requirepass : "");
    x.s = s;
    x.o = opts;
    if (th_proc_start(&server_kind, "redis-server", s->dir, &x, &s->port,
                      &s->pid) != 0) {
        th_dump_file_end(s->dir, "redis.log", "redis.log");
        th_dump_file_end(s->dir, "redis.stdout", "redis.stdout");
        th_rmtree(s->dir);
        FAIL("cannot start redis-server (set REDIS_SERVER to its path)");
    }
    snprintf(s->tcp_url, sizeof s->tcp_url, "redis://127.0.0.1:%d", s->port);
    th_cleanup_add(&s->cleanup, stop_at_exit, s);
    check_empty(s);
    return s;
}

void th_server_kill(th_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

void th_server_stop(th_server *s)
{
    if (s == NULL)
        return;
    th_cleanup_remove(&s->cleanup);
    if (s->cleanup.owner == getpid() && s->pid > 0) {
        /* A stopped server handles SIGTERM only once continued. */
        kill(s->pid, SIGCONT);
        kill(s->pid, SIGTERM);
        th_reap(s->pid, TH_STOP_TIMEOUT_MS);
    }
    if (s->cleanup.owner == getpid()) {
        th_keep_log(s->dir, "redis.log");
        th_rmtree(s->dir);
    }
    free(s);
}

void th_server_pause(th_server *s)
{
    int st;

    if (kill(s->pid, SIGSTOP) != 0)
        FAIL("SIGSTOP %d: %s", (int)s->pid, strerror(errno));
    /* We are its parent, so we can wait for the stop itself. */
    if (waitpid(s->pid, &st, WUNTRACED) != s->pid || !WIFSTOPPED(st))
        FAIL("redis-server %d did not stop", (int)s->pid);
    s->paused = 1;
}

void th_server_resume(th_server *s)
{
    int st;

    if (kill(s->pid, SIGCONT) != 0)
        FAIL("SIGCONT %d: %s", (int)s->pid, strerror(errno));
    if (waitpid(s->pid, &st, WCONTINUED) != s->pid || !WIFCONTINUED(st))
        FAIL("redis-server %d did not continue", (int)s->pid);
    s->paused = 0;
}

int th_redis_pong(redisContext *c)
{
    redisReply *r;
    int ok;

    if (c == NULL || c->err) {
        redisFree(c);
        return 0;
    }
    r = redisCommand(c, "PING");
    ok = r != NULL && r->type == REDIS_REPLY_STATUS &&
         strcmp(r->str, "PONG") == 0;
    freeReplyObject(r);
    redisFree(c);
    return ok;
}

redisContext *th_server_redis(const th_server *s)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectUnixWithTimeout(s->sock, tv);
    redisReply *r;

    if (c == NULL || c->err)
        FAIL("connect %s: %s", s->sock, c ? c->errstr : "out of memory");
    redisSetTimeout(c, tv);
    if (s->password[0] != '\0') {
        r = th_cmd(c, "AUTH %s", s->password);
        freeReplyObject(r);
    }
    return c;
}

static redisReply *vcmd(const char *file, int line, int raw, redisContext *c,
                        const char *fmt, va_list ap)
{
    redisReply *r = redisvCommand(c, fmt, ap);

    if (r == NULL)
        test_fail_(file, line, "redis command \"%s\": %s", fmt, c->errstr);
    if (!raw && r->type == REDIS_REPLY_ERROR)
        test_fail_(file, line, "redis command \"%s\": %s", fmt, r->str);
    return r;
}

redisReply *th_cmd_at_(const char *file, int line, int raw, redisContext *c,
                       const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = vcmd(file, line, raw, c, fmt, ap);
    va_end(ap);
    return r;
}

long long th_cmd_int_at_(const char *file, int line, redisContext *c,
                         const char *fmt, ...)
{
    redisReply *r;
    long long v;
    va_list ap;

    va_start(ap, fmt);
    r = vcmd(file, line, 0, c, fmt, ap);
    va_end(ap);
    if (r->type != REDIS_REPLY_INTEGER)
        test_fail_(file, line,
                   "redis command \"%s\": reply type %d, want "
                   "an integer",
                   fmt, r->type);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

char *th_cmd_str_at_(const char *file, int line, redisContext *c, size_t *len,
                     const char *fmt, ...)
{
    redisReply *r;
    char *s = NULL;
    va_list ap;

    va_start(ap, fmt);
    r = vcmd(file, line, 0, c, fmt, ap);
    va_end(ap);
    if (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING &&
        r->type != REDIS_REPLY_STATUS)
        test_fail_(file, line,
                   "redis command \"%s\": reply type %d, want "
                   "a string",
                   fmt, r->type);
    if (r->type != REDIS_REPLY_NIL) {
        s = malloc(r->len + 1);
        if (s == NULL)
            test_fail_(file, line, "out of memory");
        memcpy(s, r->str, r->len);
        s[r->len] = '\0';
        if (len != NULL)
            *len = r->len;
    }
    freeReplyObject(r);
    return s;
}

void th_cmdstats_read(redisContext *c, th_cmdstats *out)
{
    redisReply *r = th_cmd(c, "INFO commandstats");
    const char *p, *colon, *calls, *failed, *eol;
    size_t n;

    out->n = 0;
    for (p = r->str; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
        while (*p == '\n' || *p == '\r')
            p++;
        if (strncmp(p, "cmdstat_", 8) != 0 || out->n == TH_CMDSTATS_MAX)
            continue;
        p += 8;
        colon = strchr(p, ':');
        calls = strstr(p, "calls=");
        if (colon == NULL || calls == NULL)
            break;
        n = (size_t)(colon - p);
        if (n >= sizeof out->e[0].name)
            n = sizeof out->e[0].name - 1;
        memcpy(out->e[out->n].name, p, n);
        out->e[out->n].name[n] = '\0';
        out->e[out->n].calls = strtoll(calls + 6, NULL, 10);
        failed = strstr(p, "failed_calls=");
        eol = strchr(p, '\n');
        out->e[out->n].failed = failed != NULL && (eol == NULL || failed < eol)
                                    ? strtoll(failed + 13, NULL, 10)
                                    : 0;
        out->n++;
    }
    freeReplyObject(r);
}

long long th_cmdstats_calls(const th_cmdstats *st, const char *cmd)
{
    int i;

    for (i = 0; i < st->n; i++)
        if (strcmp(st->e[i].name, cmd) == 0)
            return st->e[i].calls;
    return 0;
}

long long th_server_calls(redisContext *c, const char *cmd)
{
    th_cmdstats *st = malloc(sizeof *st);
    long long n;

    if (st == NULL)
        FAIL("out of memory");
    th_cmdstats_read(c, st);
    n = th_cmdstats_calls(st, cmd);
    free(st);
    return n;
}

long long th_cmdstats_scripts(const th_cmdstats *st)
{
    return th_cmdstats_calls(st, "evalsha") + th_cmdstats_calls(st, "eval") +
           th_cmdstats_calls(st, "fcall");
}

long long th_script_calls(redisContext *c)
{
    th_cmdstats *st = malloc(sizeof *st);
    long long n;

    if (st == NULL)
        FAIL("out of memory");
    th_cmdstats_read(c, st);
    n = th_cmdstats_scripts(st);
    free(st);
    return n;
}

const char *th_native_release(redisContext *c)
{
    redisReply *rep = th_cmd(c, "COMMAND INFO DELIFEQ DELEX");
    const char *cmd = NULL;

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2)
        test_fail_(__FILE__, __LINE__, "COMMAND INFO answered type %d",
                   rep->type);
    if (rep->element[0]->type == REDIS_REPLY_ARRAY)
        cmd = "delifeq";
    else if (rep->element[1]->type == REDIS_REPLY_ARRAY)
        cmd = "delex";
    freeReplyObject(rep);
    return cmd;
}

long long th_script_runs(redisContext *c)
{
    static const char *const via[] = {"evalsha", "eval", "fcall"};
    th_cmdstats *st = malloc(sizeof *st);
    long long n = 0;
    size_t i;
    int k;

    if (st == NULL)
        FAIL("out of memory");
    th_cmdstats_read(c, st);
    for (i = 0; i < sizeof via / sizeof via[0]; i++)
        for (k = 0; k < st->n; k++)
            if (strcmp(st->e[k].name, via[i]) == 0)
                n += st->e[k].calls - st->e[k].failed;
    free(st);
    return n;
}

void th_monitor_start(th_monitor *m, const th_server *s)
{
    redisReply *r;

    m->c = th_server_redis(s);
    r = th_cmd(m->c, "MONITOR");
    freeReplyObject(r);
}

/* Adds one MONITOR line ('ts [db client] "cmd" "arg"...') to log. */
static void monitor_line(th_monitor_log *log, const char *line)
{
    const char *p = strstr(line, "] \"");
    size_t n, i;

    if (p == NULL)
        FAIL("odd MONITOR line: %s", line);
    if (strstr(line, " lua] ") != NULL) {
        log->nlua++;
        return;
    }
    if (log->n == TH_MONITOR_MAX)
        FAIL("more than %d commands recorded", TH_MONITOR_MAX);
    p += 3;
    n = strcspn(p, "\"");
    if (n >= sizeof log->cmd[0])
        n = sizeof log->cmd[0] - 1;
    for (i = 0; i < n; i++)
        log->cmd[log->n][i] = (char)tolower((unsigned char)p[i]);
    log->cmd[log->n][n] = '\0';
    log->n++;
}

void th_monitor_stop(th_monitor *m, redisContext *r, th_monitor_log *log)
{
    static unsigned serial;
    char mark[64];
    redisReply *rep;
    void *reply;

    snprintf(mark, sizeof mark, "th-monitor-mark-%d-%u", (int)getpid(),
             ++serial);
    freeReplyObject(th_cmd(r, "ECHO %s", mark));
    memset(log, 0, sizeof *log);
    for (;;) {
        /* The connection has a 5 s timeout: a missing mark fails. */
        if (redisGetReply(m->c, &reply) != REDIS_OK)
            FAIL("MONITOR: %s", m->c->errstr);
        rep = reply;
        if (rep->type != REDIS_REPLY_STATUS)
            FAIL("MONITOR: reply type %d", rep->type);
        if (strstr(rep->str, mark) != NULL) {
            freeReplyObject(rep);
            break;
        }
        monitor_line(log, rep->str);
        freeReplyObject(rep);
    }
    redisFree(m->c);
    m->c = NULL;
}

int th_wait_key_gone(redisContext *c, const void *key, size_t len,
                     int64_t timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;

    /* EXISTS expires the key lazily, so this sees the TTL run out. */
    while (th_cmd_int(c, "EXISTS %b", key, len) != 0) {
        if (th_now_ms() >= deadline)
            return 0;
        th_sleep_ms(5);
    }
    return 1;
}

void th_wait_exists_at_(const char *file, int line, redisContext *c,
                        const char *key, int64_t timeout_ms)
{
    int64_t deadline = th_now_ms() + timeout_ms;

    while (th_cmd_int(c, "EXISTS %s", key) == 0) {
        if (th_now_ms() >= deadline)
            test_fail_(file, line, "%s did not show up within %lld ms", key,
                       (long long)timeout_ms);
        th_sleep_ms(2);
    }
}

long long th_get_num(redisContext *c, const char *key)
{
    char *v = th_cmd_str(c, NULL, "GET %s", key);
    long long n = v != NULL ? atoll(v) : 0;

    free(v);
    return n;
}

th_server *th_replica_start(const th_server *master, const char *extra)
{
    redisContext *m = th_server_redis(master), *r;
    th_server *s;
    char conf[512], *info;
    int64_t t0 = th_now_ms();

    /* The master would otherwise wait 5 s for more replicas to sync. */
    freeReplyObject(th_cmd(m, "CONFIG SET repl-diskless-sync-delay 0"));
    redisFree(m);
    snprintf(conf, sizeof conf, "replicaof 127.0.0.1 %d\n%s", master->port,
             extra != NULL ? extra : "");
    s = th_server_start(&(th_server_opts){.extra_config = conf});
    r = th_server_redis(s);
    /* Bounded wait for the first sync. */
    for (;;) {
        info = th_cmd_str(r, NULL, "INFO replication");
        if (info != NULL && strstr(info, "master_link_status:up") != NULL)
            break;
        free(info);
        if (th_now_ms() - t0 > 10000)
            test_fail_(__FILE__, __LINE__,
                       "replica of port %d not in sync after 10 s",
                       master->port);
        th_sleep_ms(10);
    }
    free(info);
    redisFree(r);
    return s;
}

void th_slowlog_all(redisContext *c)
{
    freeReplyObject(th_cmd(c, "CONFIG SET slowlog-log-slower-than 0"));
    freeReplyObject(th_cmd(c, "CONFIG SET slowlog-max-len 1024"));
    freeReplyObject(th_cmd(c, "SLOWLOG RESET"));
}

int th_slowlog_runs(redisContext *c, const rl__script *sc, long long *nkeys)
{
    redisReply *log = th_cmd(c, "SLOWLOG GET 1024");
    size_t i, len = strlen(sc->name);
    int n = 0;

    ASSERT(log->type == REDIS_REPLY_ARRAY);
    for (i = 0; i < log->elements; i++) {
        redisReply *args = log->element[i]->element[3];
        const char *cmd = args->element[0]->str, *name;
        int fcall = strcasecmp(cmd, "FCALL") == 0;

        if (!fcall && strcasecmp(cmd, "EVALSHA") != 0)
            continue;
        ASSERT(args->elements >= 3);
        name = args->element[1]->str;
        /* A function is named rl_<script>_<the library's hash>. */
        if (fcall ? strncmp(name, "rl_", 3) != 0 ||
                        strncmp(name + 3, sc->name, len) != 0 ||
                        name[3 + len] != '_' ||
                        strchr(name + 4 + len, '_') != NULL
                  : strcmp(name, sc->sha1) != 0)
            continue;
        if (n++ == 0)
            *nkeys = atoll(args->element[2]->str);
    }
    freeReplyObject(log);
    return n;
}

void th_script_load(redisContext *c, const rl__script *sc)
{
    redisReply *r = th_cmd(c, "SCRIPT LOAD %s", sc->source);

    ASSERT(r->type == REDIS_REPLY_STRING);
    ASSERT_EQ_STR(r->str, sc->sha1);
    freeReplyObject(r);
}
