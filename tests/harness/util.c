#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"

/* Room left in a unix socket path (107 bytes and a NUL) after the harness's
 * "/rl-redis.XXXXXX/redis.sock". */
#define TH_TMPDIR_MAX 78

int64_t th_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void th_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

const char *th_tmpdir(void)
{
    const char *t = getenv("TMPDIR");

    if (t == NULL || t[0] != '/' || strlen(t) > TH_TMPDIR_MAX)
        return "/tmp";
    return t;
}

char *th_mkdtemp(const char *prefix)
{
    size_t n = strlen(th_tmpdir()) + strlen(prefix) + 16;
    char *p = malloc(n);

    if (p == NULL)
        return NULL;
    snprintf(p, n, "%s/%s.XXXXXX", th_tmpdir(), prefix);
    if (mkdtemp(p) == NULL) {
        free(p);
        return NULL;
    }
    return p;
}

static int rmtree_one(const char *path, const struct stat *sb, int flag,
                      struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    /* Keep going on errors: remove as much as we can. */
    if (flag == FTW_DP || flag == FTW_D)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

int th_rmtree(const char *path)
{
    if (nftw(path, rmtree_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return -1;
    return access(path, F_OK) == 0 ? -1 : 0;
}

int th_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd, port = -1;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

char *th_which(const char *name)
{
    const char *path = getenv("PATH");
    const char *p, *end;
    char buf[4096];

    if (strchr(name, '/') != NULL)
        return access(name, X_OK) == 0 ? strdup(name) : NULL;
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (p = path; *p != '\0'; p = *end ? end + 1 : end) {
        end = strchr(p, ':');
        if (end == NULL)
            end = p + strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)(end - p), p, name);
        if (end > p && access(buf, X_OK) == 0)
            return strdup(buf);
    }
    return NULL;
}

/* Failure reporting for test.h. */

void test_fail_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    exit(1);
}

void test_log(const char *fmt, ...)
{
    va_list ap;

    fputs("# ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

const char *test_escape_(const void *p, size_t n, char *buf, size_t size)
{
    const unsigned char *s = p;
    size_t i, o = 0;

    if (p == NULL) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    /* Reserve room for the quotes, "..." and the NUL. */
    buf[o++] = '"';
    for (i = 0; i < n && o + 9 < size; i++) {
        if (s[i] == '"' || s[i] == '\\')
            o += (size_t)snprintf(buf + o, size - o, "\\%c", s[i]);
        else if (s[i] >= 0x20 && s[i] < 0x7f)
            buf[o++] = (char)s[i];
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", s[i]);
    }
    if (i < n)
        o += (size_t)snprintf(buf + o, size - o, "...");
    snprintf(buf + o, size - o, "\"");
    return buf;
}

int64_t th_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void th_join_within_at_(const char *file, int line, pthread_t t, int64_t ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(t, NULL, &ts) != 0)
        test_fail_(file, line, "thread not done within %lld ms", (long long)ms);
}

int th_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

uint64_t th_seed(const char *var)
{
    const char *env = getenv(var);
    uint64_t seed = env != NULL && env[0] != '\0' ? strtoull(env, NULL, 10)
                                                  : (uint64_t)th_now_us();

    test_log("seed %llu (%s=%llu replays it)", (unsigned long long)seed, var,
             (unsigned long long)seed);
    return seed;
}
