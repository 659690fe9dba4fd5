#include "fakeserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "../test.h"
#include "util.h"

#define FAIL(...) test_fail_(__FILE__, __LINE__, __VA_ARGS__)

#define FS_MAX_RULES 32
/* A request larger than this is not one the library would send. */
#define FS_MAX_REQUEST (64 << 20)
#define FS_FILLER 65536

/* The commands counted one by one; the last slot counts the others. */
static const char *const counted[] = {
    "PING", "AUTH",   "SELECT", "SET", "PTTL",
    "EVALSHA", "EVAL", "SCRIPT", "SCAN", "*"};
#define FS_NCOUNTED (sizeof counted / sizeof counted[0])

/* In a MAP_SHARED page: written by connection processes, read by the
 * test. */
struct fs_stats {
    int connections;
    long calls[FS_NCOUNTED];
    int hits[FS_MAX_RULES];
};

/* The server process's view of its script. */
typedef struct script {
    const fs_rule *rules;
    size_t n;
    const char *greeting;
    fs_stats *st;
} script;

static size_t counted_slot(const char *cmd)
{
    size_t i;

    for (i = 0; i + 1 < FS_NCOUNTED; i++)
        if (strcasecmp(cmd, counted[i]) == 0)
            return i;
    return FS_NCOUNTED - 1;
}

/* Sends all of p; a client that went away ends the connection process. */
static void send_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    ssize_t w;

    while (n > 0) {
        w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(0);
        s += w;
        n -= (size_t)w;
    }
}

/* Reads and drops whatever the client sends until it closes. */
static _Noreturn void drain(int fd)
{
    char buf[4096];
    ssize_t r;

    while ((r = read(fd, buf, sizeof buf)) != 0)
        if (r < 0 && errno != EINTR)
            break;
    _exit(0);
}

/* Parses "<c><digits>\r\n" at p; the number, or -1. *used gets its
 * length, 0 when more bytes are needed. */
static long header(const char *p, size_t len, char c, size_t *used)
{
    const char *nl = memchr(p, '\n', len);
    char *end;
    long v;

    *used = 0;
    if (nl == NULL)
        return len > 32 ? -1 : 0;
    if (p[0] != c || nl == p || nl[-1] != '\r')
        return -1;
    v = strtol(p + 1, &end, 10);
    if (end != nl - 1 || v < 0)
        return -1;
    *used = (size_t)(nl - p) + 1;
    return v;
}

/*
 * One request from buf: its command name into name. Returns the bytes it
 * takes, 0 when incomplete, -1 when it is not a RESP array of bulk
 * strings.
 */
static long parse_request(const char *buf, size_t len, char *name, size_t size)
{
    size_t at = 0, used;
    long argc, i, n;

    argc = header(buf, len, '*', &used);
    if (argc <= 0 || used == 0)
        return argc < 0 || (argc == 0 && used > 0) ? -1 : 0;
    at = used;
    for (i = 0; i < argc; i++) {
        if (at >= len)
            return 0;
        n = header(buf + at, len - at, '$', &used);
        if (n < 0)
            return -1;
        if (used == 0 || len - at - used < (size_t)n + 2)
            return 0;
        if (i == 0)
            snprintf(name, size, "%.*s", (int)n, buf + at + used);
        at += used + (size_t)n + 2;
    }
    return (long)at;
}

/* The first rule for cmd that still applies, or NULL. */
static const fs_rule *find_rule(const script *sc, const char *cmd)
{
    size_t i;

    for (i = 0; i < sc->n; i++) {
        const fs_rule *r = &sc->rules[i];
        if (r->cmd != NULL && strcasecmp(r->cmd, cmd) != 0)
            continue;
        if (r->times > 0 && __atomic_fetch_add(&sc->st->hits[i], 1,
                                               __ATOMIC_SEQ_CST) >= r->times)
            continue;
        return r;
    }
    return NULL;
}

static void default_reply(int fd, const char *cmd)
{
    char buf[128];

    if (strcasecmp(cmd, "PING") == 0)
        send_all(fd, "+PONG\r\n", 7);
    else if (strcasecmp(cmd, "AUTH") == 0 || strcasecmp(cmd, "SELECT") == 0 ||
             strcasecmp(cmd, "CLIENT") == 0)
        send_all(fd, "+OK\r\n", 5);
    else if (strcasecmp(cmd, "FCALL") == 0)
        /* As a server before 7.0: the library goes by EVALSHA, which the
         * rules are written for. */
        send_all(fd, "-ERR unknown command 'FCALL'\r\n",
                 strlen("-ERR unknown command 'FCALL'\r\n"));
    else {
        snprintf(buf, sizeof buf, "-ERR fakeserver: no rule for '%.40s'\r\n",
                 cmd);
        send_all(fd, buf, strlen(buf));
    }
}

/* Sends about mib MiB of fill, repeated, in large writes. */
static void stream(int fd, int mib, const char *fill)
{
    static char buf[FS_FILLER];
    size_t n = strlen(fill), used = 0;
    long long left = (long long)mib << 20;

    if (n == 0 || n > sizeof buf)
        return;
    while (used + n <= sizeof buf) {
        memcpy(buf + used, fill, n);
        used += n;
    }
    for (; left > 0; left -= (long long)used)
        send_all(fd, buf, used);
}

/* Answers one request as its rule says; returns only to go on serving. */
static void respond(int fd, const script *sc, const char *cmd)
{
    const fs_rule *r = find_rule(sc, cmd);
    size_t i, n;

    if (r == NULL) {
        default_reply(fd, cmd);
        return;
    }
    n = strlen(r->reply);
    if (r->action != FS_SLOW)
        send_all(fd, r->reply, n);
    switch (r->action) {
    case FS_SLOW:
        for (i = 0; i < n; i++) {
            th_sleep_ms(r->param);
            send_all(fd, r->reply + i, 1);
        }
        break;
    case FS_HANG:
        drain(fd);
    case FS_CLOSE:
        close(fd);
        _exit(0);
    case FS_STREAM:
        stream(fd, r->param, r->fill ? r->fill : "x");
        drain(fd);
    case FS_REPLY:
        break;
    }
}

/* A connection's process: the greeting, then request after request. */
static _Noreturn void serve(int fd, const script *sc)
{
    /* Static, so that it is still reachable when the process ends. */
    static char *buf;
    size_t cap = 4096, len = 0;
    char name[32];
    long used;
    ssize_t r;

    if ((buf = malloc(cap)) == NULL)
        _exit(1);
    if (sc->greeting != NULL)
        send_all(fd, sc->greeting, strlen(sc->greeting));
    for (;;) {
        if (len == cap && cap >= FS_MAX_REQUEST)
            _exit(1);
        if (len == cap && (buf = realloc(buf, cap *= 2)) == NULL)
            _exit(1);
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            _exit(0);
        len += (size_t)r;
        while ((used = parse_request(buf, len, name, sizeof name)) > 0) {
            __atomic_fetch_add(&sc->st->calls[counted_slot(name)], 1,
                               __ATOMIC_SEQ_CST);
            respond(fd, sc, name);
            memmove(buf, buf + used, len - (size_t)used);
            len -= (size_t)used;
        }
        if (used < 0)
            _exit(0); /* not the protocol: hang up, as Redis would */
    }
}

/* The server process: accepts on both sockets, a process per connection. */
static _Noreturn void server_main(int ufd, int tfd, const script *sc)
{
    struct pollfd p[2] = {{ufd, POLLIN, 0}, {tfd, POLLIN, 0}};
    int i, fd;

#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    signal(SIGCHLD, SIG_IGN); /* connection processes reap themselves */
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        if (poll(p, 2, -1) < 0)
            continue;
        for (i = 0; i < 2; i++) {
            if (!(p[i].revents & POLLIN) ||
                (fd = accept(p[i].fd, NULL, NULL)) < 0)
                continue;
            __atomic_fetch_add(&sc->st->connections, 1, __ATOMIC_SEQ_CST);
            if (fork() == 0) {
#ifdef __linux__
                prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
                close(ufd);
                close(tfd);
                serve(fd, sc);
            }
            close(fd);
        }
    }
}

static int listen_unix(const char *path)
{
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        FAIL("fakeserver: socket path too long: %s", path);
    memcpy(sa.sun_path, path, strlen(path));
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 64) != 0)
        FAIL("fakeserver: unix socket %s: %s", path, strerror(errno));
    return fd;
}

/* Binds 127.0.0.1 port 0 and stores the port the kernel chose. */
static int listen_tcp(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        FAIL("fakeserver: TCP socket: %s", strerror(errno));
    *port = ntohs(sa.sin_port);
    return fd;
}

const fs_flood fs_floods[FS_NFLOODS] = {
    {"$999999999999\r\n", "x", 64},
    {"*100000000\r\n", ":1\r\n", 8},
};

fs_server *fs_start(const fs_rule *rules, size_t n, const char *greeting)
{
    fs_server *s = calloc(1, sizeof *s);
    char *dir = th_mkdtemp("rl-fake");
    script sc;
    int ufd, tfd;

    if (s == NULL || dir == NULL)
        FAIL("fakeserver: cannot create a dir in %s", th_tmpdir());
    if (n > FS_MAX_RULES)
        FAIL("fakeserver: %zu rules, at most %d", n, FS_MAX_RULES);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    free(dir);
    snprintf(s->sock, sizeof s->sock, "%s/fake.sock", s->dir);
    snprintf(s->unix_url, sizeof s->unix_url, "unix://%s", s->sock);
    s->stats = mmap(NULL, sizeof *s->stats, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s->stats == MAP_FAILED)
        FAIL("fakeserver: mmap: %s", strerror(errno));
    /* Listening before the fork: the test may connect at once. */
    ufd = listen_unix(s->sock);
    tfd = listen_tcp(&s->port);
    snprintf(s->tcp_url, sizeof s->tcp_url, "redis://127.0.0.1:%d", s->port);
    sc = (script){rules, n, greeting, s->stats};
    fflush(NULL);
    s->pid = fork();
    if (s->pid < 0)
        FAIL("fakeserver: fork: %s", strerror(errno));
    if (s->pid == 0) {
        free(s); /* the server process has no use for it (valgrind) */
        server_main(ufd, tfd, &sc);
    }
    close(ufd);
    close(tfd);
    return s;
}

void fs_stop(fs_server *s)
{
    if (s == NULL)
        return;
    /* Its connection processes get SIGKILL too (PR_SET_PDEATHSIG). */
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    th_rmtree(s->dir);
    munmap(s->stats, sizeof *s->stats);
    free(s);
}

int fs_connections(const fs_server *s)
{
    return __atomic_load_n(&s->stats->connections, __ATOMIC_SEQ_CST);
}

long fs_calls(const fs_server *s, const char *cmd)
{
    return __atomic_load_n(&s->stats->calls[counted_slot(cmd)],
                           __ATOMIC_SEQ_CST);
}
