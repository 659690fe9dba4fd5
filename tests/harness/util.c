#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "../test.h"

/* Room left in a unix socket path (107 bytes and a NUL) after the harness's
 * "/rl-redis.XXXXXX/redis.sock". */
#define TH_TMPDIR_MAX 78

#define TH_START_TIMEOUT_MS 5000
#define TH_PORT_ATTEMPTS 10

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

/* Opens file dir/name for reading; NULL when it cannot. */
static FILE *open_in(const char *dir, const char *name)
{
    char path[256];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    return fopen(path, "r");
}

int th_file_contains(const char *dir, const char *name, const char *needle)
{
    char buf[8192];
    FILE *f = open_in(dir, name);
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

void th_dump_file_end(const char *dir, const char *name, const char *label)
{
    char buf[2048];
    FILE *f = open_in(dir, name);
    size_t n;

    if (f == NULL)
        return;
    if (fseek(f, -(long)(sizeof buf - 1), SEEK_END) != 0)
        rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    if (label != NULL)
        fprintf(stderr, "--- %s (end) ---\n%s\n", label, buf);
    else
        fprintf(stderr, "--- %s/%s (end) ---\n%s\n", dir, name, buf);
}

void th_reap(pid_t pid, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    pid_t r;

    /* No event to wait on with a deadline: poll. */
    for (;;) {
        r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        if (th_now_ms() >= deadline)
            break;
        th_sleep_ms(5);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* $var when set and not empty, else dflt. */
static const char *env_or(const char *var, const char *dflt)
{
    const char *v = getenv(var);

    return v != NULL && v[0] != '\0' ? v : dflt;
}

/* In the child: exec the process, its output to dir/<name>.stdout; never
 * returns. */
static void proc_exec(const th_proc_kind *k, const char *dir)
{
    const char *bin =
        env_or(k->bin_env, env_or("REDIS_SERVER", "redis-server"));
    char conf[256], out[256];
    int fd;

#ifdef __linux__
    /* If the test dies without cleaning up, the process goes with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    snprintf(conf, sizeof conf, "%s/%s.conf", dir, k->name);
    snprintf(out, sizeof out, "%s/%s.stdout", dir, k->name);
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
    execlp(bin, bin, conf, k->mode, (char *)NULL);
    fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
    _exit(127);
}

/* Writes dir/<name>.conf afresh: 0, or -1 with errno. */
static int proc_configure(const th_proc_kind *k, const char *dir, void *obj)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.conf", dir, k->name);
    f = fopen(path, "w");
    if (f == NULL)
        return -1;
    k->configure(obj, f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Returns 0 when it answers, 1 when it died (status in *st), -1 on
 * timeout. A process is not expected to die, so polling is the event. */
static int proc_wait_ready(const th_proc_kind *k, void *obj, pid_t *pid,
                           int *st)
{
    int64_t deadline = th_now_ms() + TH_START_TIMEOUT_MS;

    for (;;) {
        if (waitpid(*pid, st, WNOHANG) == *pid) {
            *pid = 0;
            return 1;
        }
        if (k->ready(obj))
            return 0;
        if (th_now_ms() >= deadline)
            return -1;
        th_sleep_ms(10);
    }
}

/* One start attempt on a fresh port: 0 up, 1 port taken (retry), -1 no. */
static int proc_try_start(const th_proc_kind *k, const char *what,
                          const char *dir, void *obj, int *port, pid_t *pid)
{
    char log[64];
    int st, r;

    *port = th_free_port();
    if (*port < 0 || proc_configure(k, dir, obj) != 0) {
        fprintf(stderr, "cannot prepare %s: %s\n", dir, strerror(errno));
        return -1;
    }
    fflush(NULL);
    *pid = fork();
    if (*pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        *pid = 0;
        return -1;
    }
    if (*pid == 0)
        proc_exec(k, dir);
    r = proc_wait_ready(k, obj, pid, &st);
    if (r == 0)
        return 0;
    if (r < 0) {
        fprintf(stderr, "%s did not answer PING in %d ms\n", what,
                TH_START_TIMEOUT_MS);
        th_reap(*pid, 0);
        *pid = 0;
        return -1;
    }
    snprintf(log, sizeof log, "%s.log", k->name);
    if (th_file_contains(dir, log, "Address already in use"))
        return 1;
    fprintf(stderr, "%s exited at start (%s %d)\n", what,
            WIFEXITED(st) ? "exit code" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return -1;
}

int th_proc_start(const th_proc_kind *k, const char *what, const char *dir,
                  void *obj, int *port, pid_t *pid)
{
    int attempt, r = 1;

    /* th_free_port's port may be taken again before the process binds. */
    for (attempt = 0; r == 1 && attempt < TH_PORT_ATTEMPTS; attempt++)
        r = proc_try_start(k, what, dir, obj, port, pid);
    return r == 0 ? 0 : -1;
}

/* Registered things, newest first. */
static th_cleanup *cleanups;

static void cleanup_at_exit(void)
{
    th_cleanup *c;

    /* A forked worker inherits the list but does not own what is on it.
     * Each stop may remove others (a setup stops its parts): start over
     * from the head every time. */
    for (c = cleanups; c != NULL; c = cleanups) {
        while (c != NULL && c->owner != getpid())
            c = c->next;
        if (c == NULL)
            return;
        th_cleanup_remove(c);
        c->stop(c->obj);
    }
}

void th_cleanup_add(th_cleanup *c, void (*stop)(void *obj), void *obj)
{
    static int registered;

    if (!registered && atexit(cleanup_at_exit) == 0)
        registered = 1;
    c->stop = stop;
    c->obj = obj;
    c->owner = getpid();
    c->next = cleanups;
    cleanups = c;
}

void th_cleanup_remove(th_cleanup *c)
{
    th_cleanup **pp;

    for (pp = &cleanups; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            return;
        }
    }
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

int th_value_is_token(const char *value, const char *token)
{
    size_t n = strlen(token);

    return strcmp(value, token) == 0 ||
           (strncmp(token, "rl2-", 4) == 0 && strncmp(value, token, n) == 0 &&
            strcmp(value + n, "+w") == 0);
}

void th_assert_value_is_token_at_(const char *file, int line, const char *value,
                                  const char *token)
{
    if (value == NULL || token == NULL || !th_value_is_token(value, token))
        test_fail_(file, line, "the key holds \"%s\", not the token \"%s\"",
                   value ? value : "(nil)", token ? token : "(nil)");
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

int th_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

void th_keep_log(const char *dir, const char *name)
{
    const char *keep = getenv("RL_TEST_KEEP_LOGS"), *tmp = th_tmpdir();
    const char *t = strrchr(tmp, '/'), *d = strrchr(dir, '/');
    char from[512], to[1024], buf[8192];
    FILE *in, *out;
    size_t n;

    if (keep == NULL || keep[0] == '\0')
        return;
    snprintf(from, sizeof from, "%s/%s", dir, name);
    snprintf(to, sizeof to, "%s/%s.%s.log", keep, t ? t + 1 : tmp,
             d ? d + 1 : dir);
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
