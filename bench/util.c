/*
 * lockbench helpers: the clock, percentiles, the control connection and
 * INFO commandstats.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

void lb_die(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fputs("lockbench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

int64_t lb_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void lb_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

void lb_sort_i64(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
}

int64_t lb_pct(const int64_t *v, size_t n, double p)
{
    size_t rank;

    if (n == 0)
        return 0;
    /* Nearest rank: the smallest value with at least p% at or below it. */
    rank = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

double lb_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

redisContext *lb_connect(const char *sock)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectUnixWithTimeout(sock, tv);

    if (c == NULL || c->err) {
        fprintf(stderr, "lockbench: cannot connect to %s: %s\n", sock,
                c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    return c;
}

redisContext *lb_connect_over(const lb_env *e, int t)
{
    struct timeval tv = {5, 0};
    redisContext *c;

    if (t == LB_UNIX)
        return lb_connect(e->sock);
    c = redisConnectWithTimeout("127.0.0.1", e->tcp_port, tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "lockbench: cannot connect to 127.0.0.1:%d: %s\n",
                e->tcp_port, c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    return c;
}

int lb_nonblock(redisContext *c)
{
    struct epoll_event ev = {.events = EPOLLIN};
    int ep = epoll_create1(EPOLL_CLOEXEC);

    ev.data.fd = c->fd;
    if (ep < 0 ||
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        if (ep >= 0)
            close(ep);
        return -1;
    }
    c->flags &= ~REDIS_BLOCK;
    return ep;
}

int lb_get_reply(redisContext *c, int ep, redisReply **r)
{
    struct epoll_event ev;
    int done = 0;

    *r = NULL;
    if (ep < 0)
        return redisGetReply(c, (void **)r);
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            return REDIS_ERR;
    for (;;) {
        if (redisGetReplyFromReader(c, (void **)r) != REDIS_OK)
            return REDIS_ERR;
        if (*r != NULL)
            return REDIS_OK;
        if (epoll_wait(ep, &ev, 1, 5000) != 1 ||
            redisBufferRead(c) != REDIS_OK)
            return REDIS_ERR;
    }
}

redisReply *lb_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        lb_die("command \"%s\" failed: %s", fmt, c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        lb_die("command \"%s\" answered: %s", fmt, r->str);
    return r;
}

long long lb_server_calls(redisContext *c)
{
    redisReply *r = lb_cmd(c, "INFO commandstats");
    long long total = 0;
    const char *p = r->str, *calls;

    /* Lines look like "cmdstat_set:calls=12,usec=...". */
    while ((p = strstr(p, "cmdstat_")) != NULL) {
        const char *eol = strchr(p, '\n');

        calls = strstr(p, ":calls=");
        if (calls != NULL && (eol == NULL || calls < eol) &&
            strncmp(p, "cmdstat_info:", 13) != 0)
            total += strtoll(calls + 7, NULL, 10);
        p += 8;
    }
    freeReplyObject(r);
    return total;
}

long long lb_script_calls(redisContext *c, long long *usec)
{
    static const char *const names[] = {"cmdstat_fcall:", "cmdstat_evalsha:",
                                         "cmdstat_eval:", NULL};
    redisReply *r = lb_cmd(c, "INFO commandstats");
    long long n = 0, us = 0;
    const char *p;
    int i;

    for (i = 0; names[i] != NULL; i++)
        if ((p = strstr(r->str, names[i])) != NULL &&
            (p = strstr(p, "calls=")) != NULL) {
            n += atoll(p + 6);
            if ((p = strstr(p, "usec=")) != NULL)
                us += atoll(p + 5);
        }
    freeReplyObject(r);
    if (usec != NULL)
        *usec = us;
    return n;
}

double lb_server_cpu_us(redisContext *c)
{
    redisReply *r = lb_cmd(c, "INFO cpu");
    const char *u = strstr(r->str, "used_cpu_user:");
    const char *y = strstr(r->str, "used_cpu_sys:");
    double us;

    if (u == NULL || y == NULL)
        lb_die("INFO cpu has no used_cpu_user or used_cpu_sys");
    us = (strtod(u + 14, NULL) + strtod(y + 13, NULL)) * 1e6;
    freeReplyObject(r);
    return us;
}

long lb_read_cycles(const char *path, lb_cycle *out, long max)
{
    FILE *f = fopen(path, "rb");
    long n;

    if (f == NULL)
        return -1;
    n = (long)fread(out, sizeof *out, (size_t)max, f);
    fclose(f);
    return n;
}

void lb_affinity(pid_t pid, char *buf, size_t len)
{
    cpu_set_t set;
    size_t used = 0;
    int cpu, first = 1;

    if (sched_getaffinity(pid, sizeof set, &set) != 0) {
        snprintf(buf, len, "unknown CPUs");
        return;
    }
    used += (size_t)snprintf(buf, len, "CPU%s ",
                             CPU_COUNT(&set) > 1 ? "s" : "");
    for (cpu = 0; cpu < CPU_SETSIZE && used < len; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%d",
                                 first ? "" : ",", cpu);
        first = 0;
    }
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
    (void)sig;
    alarmed = 1;
}

int lb_wait_all(const pid_t *pids, int n, int timeout_s, int *status)
{
    struct sigaction sa, old;
    int i, late = 0;

    /* No SA_RESTART: the alarm interrupts a blocking waitpid, which costs
     * the busy CPU nothing while the workers run. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    alarmed = 0;
    alarm((unsigned)timeout_s);
    for (i = 0; i < n; i++) {
        status[i] = -1;
        while (waitpid(pids[i], &status[i], 0) < 0) {
            if (errno != EINTR || alarmed) {
                late = 1;
                break;
            }
        }
        if (late)
            break;
    }
    alarm(0);
    sigaction(SIGALRM, &old, NULL);
    if (!late)
        return 0;
    /* Out of time: stop the rest, by pid, and reap them. */
    for (; i < n; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &status[i], 0);
        status[i] = -1;
    }
    return -1;
}

int lb_read_line(int fd, char *line, size_t len, int timeout_ms)
{
    size_t n = 0;
    int64_t deadline = lb_now_ns() + (int64_t)timeout_ms * 1000000;

    /* Byte by byte: the lines are short, and nothing after one is ours. */
    while (n < len - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left = (deadline - lb_now_ns()) / 1000000;
        ssize_t got;

        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        got = read(fd, line + n, 1);
        if (got <= 0)
            return -1;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    return 0;
}

int64_t lb_read_ready(int fd, int timeout_ms)
{
    char line[64];
    long long ns;

    if (lb_read_line(fd, line, sizeof line, timeout_ms) != 0 ||
        sscanf(line, "ready %lld", &ns) != 1)
        return -1;
    return (int64_t)ns;
}

long long lb_info_field(redisContext *c, const char *section,
                        const char *field)
{
    redisReply *r = lb_cmd(c, "INFO %s", section);
    char name[64];
    const char *p;
    long long v;

    snprintf(name, sizeof name, "%s:", field);
    p = strstr(r->str, name);
    v = p ? atoll(p + strlen(name)) : -1;
    freeReplyObject(r);
    return v;
}

int lb_open_lock(const lb_env *e, redislock_client **cl, redislock_lock **l)
{
    *l = NULL;
    if (redislock_client_new(cl, e->url, NULL) != REDISLOCK_OK)
        return -1;
    if (redislock_lock_new(*cl, LB_LOCK_KEY, strlen(LB_LOCK_KEY), l) ==
        REDISLOCK_OK)
        return 0;
    redislock_client_free(*cl);
    *cl = NULL;
    return -1;
}
