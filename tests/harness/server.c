#include "server.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "../test.h"
#include "util.h"

#define TH_START_TIMEOUT_MS 5000
#define TH_STOP_TIMEOUT_MS 5000
#define TH_PORT_ATTEMPTS 10

#define FAIL(...) test_fail_(__FILE__, __LINE__, __VA_ARGS__)

/* Running servers, for the atexit handler. */
static th_server *servers;

static void stop_all_at_exit(void)
{
    th_server *s;

    /* A forked worker inherits the list but does not own the servers. */
    for (s = servers; s != NULL; s = servers) {
        while (s != NULL && s->owner != getpid())
            s = s->next;
        if (s == NULL)
            return;
        th_server_stop(s);
    }
}

static void registry_add(th_server *s)
{
    static int registered;

    if (!registered && atexit(stop_all_at_exit) == 0)
        registered = 1;
    s->next = servers;
    servers = s;
}

static void registry_remove(th_server *s)
{
    th_server **pp;

    for (pp = &servers; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            return;
        }
    }
}

static int write_config(const th_server *s, const th_server_opts *o)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/redis.conf", s->dir);
    f = fopen(path, "w");
    if (f == NULL)
        return -1;
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
    if (o->extra_config != NULL)
        fprintf(f, "%s\n", o->extra_config);
    return fclose(f) == 0 ? 0 : -1;
}

/* In the child: exec redis-server with the config; never returns. */
static void exec_server(const th_server *s)
{
    const char *bin = getenv("REDIS_SERVER");
    char conf[256], out[256];
    int fd;

#ifdef __linux__
    /* If the test dies without cleaning up, the server goes with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    snprintf(conf, sizeof conf, "%s/redis.conf", s->dir);
    snprintf(out, sizeof out, "%s/redis.stdout", s->dir);
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);
        close(fd);
    }
    if (bin == NULL || bin[0] == '\0')
        bin = "redis-server";
    execlp(bin, bin, conf, (char *)NULL);
    fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
    _exit(127);
}

/* Answers PING (after AUTH when needed)? */
static int ping(const th_server *s)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectUnixWithTimeout(s->sock, tv);
    redisReply *r;
    int ok = 0;

    if (c == NULL)
        return 0;
    if (!c->err)
        redisSetTimeout(c, tv);
    if (!c->err && s->password[0] != '\0') {
        r = redisCommand(c, "AUTH %s", s->password);
        freeReplyObject(r);
    }
    if (!c->err) {
        r = redisCommand(c, "PING");
        ok = r != NULL && r->type == REDIS_REPLY_STATUS &&
             strcmp(r->str, "PONG") == 0;
        freeReplyObject(r);
    }
    redisFree(c);
    return ok;
}

/* Returns 0 when it answers, 1 when it died (status in *st), -1 on
 * timeout. A server is not expected to die, so polling is the event. */
static int wait_ready(th_server *s, int *st)
{
    int64_t deadline = th_now_ms() + TH_START_TIMEOUT_MS;

    for (;;) {
        if (waitpid(s->pid, st, WNOHANG) == s->pid) {
            s->pid = -1;
            return 1;
        }
        if (ping(s))
            return 0;
        if (th_now_ms() >= deadline)
            return -1;
        th_sleep_ms(10);
    }
}

/* Whether file dir/name contains needle. */
static int file_contains(const char *dir, const char *name, const char *needle)
{
    char path[256], buf[8192];
    size_t n;
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* Copies the end of the server's log and stdout to stderr. */
static void dump_logs(const th_server *s)
{
    static const char *const names[] = {"redis.log", "redis.stdout"};
    char path[256], buf[2048];
    size_t i, n;
    FILE *f;

    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, names[i]);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fseek(f, -(long)(sizeof buf - 1), SEEK_END) != 0)
            rewind(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        fprintf(stderr, "--- %s (end) ---\n%s\n", names[i], buf);
    }
}

/* One start attempt on a fresh port: 0 up, 1 port taken (retry), -1 no. */
static int try_start(th_server *s, const th_server_opts *o)
{
    int st, r;

    s->port = th_free_port();
    if (s->port < 0 || write_config(s, o) != 0) {
        fprintf(stderr, "cannot prepare %s: %s\n", s->dir, strerror(errno));
        return -1;
    }
    fflush(NULL);
    s->pid = fork();
    if (s->pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        return -1;
    }
    if (s->pid == 0)
        exec_server(s);
    r = wait_ready(s, &st);
    if (r == 0)
        return 0;
    if (r < 0) {
        fprintf(stderr, "redis-server did not answer PING in %d ms\n",
                TH_START_TIMEOUT_MS);
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = -1;
        return -1;
    }
    if (file_contains(s->dir, "redis.log", "Address already in use"))
        return 1;
    fprintf(stderr, "redis-server exited at start (%s %d)\n",
            WIFEXITED(st) ? "exit code" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return -1;
}

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
    int attempt, r = 1;

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
    s->owner = getpid();
    for (attempt = 0; r == 1 && attempt < TH_PORT_ATTEMPTS; attempt++)
        r = try_start(s, opts);
    if (r != 0) {
        dump_logs(s);
        th_rmtree(s->dir);
        FAIL("cannot start redis-server (set REDIS_SERVER to its path)");
    }
    snprintf(s->tcp_url, sizeof s->tcp_url, "redis://127.0.0.1:%d", s->port);
    registry_add(s);
    check_empty(s);
    return s;
}

/* Waits up to ms for pid to exit; 1 if it did. */
static int wait_exit(pid_t pid, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;

    do {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return 1;
        th_sleep_ms(5);
    } while (th_now_ms() < deadline);
    return 0;
}

void th_server_kill(th_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

/* With RL_TEST_KEEP_LOGS set to a directory, the server's log is copied
 * there before its dir goes, as <test's TMPDIR name>.<server dir>.log
 * (scripts/check-declared-keys.sh reads them). Off by default. */
static void keep_log(const th_server *s)
{
    const char *keep = getenv("RL_TEST_KEEP_LOGS"), *tmp = th_tmpdir();
    const char *t = strrchr(tmp, '/'), *d = strrchr(s->dir, '/');
    char from[256], to[1024], buf[8192];
    FILE *in, *out;
    size_t n;

    if (keep == NULL || keep[0] == '\0')
        return;
    snprintf(from, sizeof from, "%s/redis.log", s->dir);
    snprintf(to, sizeof to, "%s/%s.%s.log", keep, t ? t + 1 : tmp,
             d ? d + 1 : s->dir);
    in = fopen(from, "r");
    if (in == NULL)
        return;
    out = fopen(to, "w");
    if (out != NULL) {
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            fwrite(buf, 1, n, out);
        fclose(out);
    }
    fclose(in);
}

void th_server_stop(th_server *s)
{
    if (s == NULL)
        return;
    registry_remove(s);
    if (s->owner == getpid() && s->pid > 0) {
        /* A stopped server handles SIGTERM only once continued. */
        kill(s->pid, SIGCONT);
        kill(s->pid, SIGTERM);
        if (!wait_exit(s->pid, TH_STOP_TIMEOUT_MS)) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
    }
    if (s->owner == getpid()) {
        keep_log(s);
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
    const char *p, *colon, *calls;
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

long long th_get_num(redisContext *c, const char *key)
{
    char *v = th_cmd_str(c, NULL, "GET %s", key);
    long long n = v != NULL ? atoll(v) : 0;

    free(v);
    return n;
}
