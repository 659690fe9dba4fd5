/*
 * lockbench, a waiter behind another library's lock: cycle after cycle, a
 * holder takes the key with SET key <random token> NX PX 60000 and, 5 to
 * 30 ms later, releases it as redis-py's Lock, redsync and bsm/redislock
 * do, by a compare-and-delete script. That release wakes none of the
 * library's waiters; the one waiter here (a process of its own, the
 * blocking redislock_acquire in default mode) must hear of it from the
 * server's notice of the key's change (src/node/track.c). Timed: from
 * just before the release is sent to the moment the waiter's acquire
 * returns, both on CLOCK_MONOTONIC.
 *
 * The holder is the benchmark itself (LB_CAD by EVALSHA from a hiredis
 * connection of its own), or a real redis-py Lock driven over pipes
 * (bench/peers/pyholder.py, whose time.monotonic_ns() is
 * CLOCK_MONOTONIC on Linux). Every process inherits lockbench's CPU.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redislock.h>

#include "bench.h"

/* The waiter's deadline per cycle; the benchmark waits a little longer
 * for its report. */
#define WAIT_MS 10000
#define REPORT_MS (WAIT_MS + 2000)

/* What the waiter says of one cycle. */
typedef struct grant {
    int64_t at;  /* its acquire returned (CLOCK_MONOTONIC ns) */
    int32_t err; /* the acquire's or release's redislock_err */
    int32_t ms;  /* how long the acquire took */
} grant;

/* One holder: its take and its release (the release's start stamp, or
 * -1 on failure), the C one's or redis-py's. */
typedef struct holder holder;
struct holder {
    int (*take)(holder *h);
    int64_t (*release)(holder *h);
    redisContext *c; /* the C holder's connection */
    char sha[41];
    char tok[40];
    pid_t pid; /* redis-py's process, and its stdin and stdout */
    int to, from;
};

const char *lb_foreign_name(const lb_foreign *f)
{
    return f->py ? "a redis-py release" : "a compare-and-delete release";
}

/* A waiter: its acquire (bounded by WAIT_MS) and its release, each
 * giving a redislock_err. */
typedef struct waiter {
    int32_t (*acquire)(struct waiter *w);
    int32_t (*release)(struct waiter *w);
    redislock_lock *l; /* the library's */
    redislock_acquire_options o;
    redisContext *c, *sub; /* the floor's: requests, and the notices */
    char sha[41], tok[40];
} waiter;

/* A waiter in a forked child: one acquire and release per byte read from
 * go, a grant record for each on out; EOF ends it. Never returns. */
static void serve(waiter *w, int go, int out)
{
    char b;

    while (read(go, &b, 1) == 1) {
        int64_t t0 = lb_now_ns();
        grant g = {0, 0, 0};

        g.err = w->acquire(w);
        g.at = lb_now_ns();
        g.ms = (int32_t)((g.at - t0) / 1000000);
        if (g.err == REDISLOCK_OK)
            g.err = w->release(w);
        if (write(out, &g, sizeof g) != (ssize_t)sizeof g)
            _exit(4);
    }
    _exit(0);
}

static int32_t lib_acquire(waiter *w)
{
    return (int32_t)redislock_acquire(w->l, &w->o);
}

static int32_t lib_release(waiter *w)
{
    return (int32_t)redislock_release(w->l);
}

/* The library's waiter: the blocking calls, default mode. */
static void lib_waiter(const lb_env *e, int go, int out)
{
    redislock_client *cl;
    waiter w = {.acquire = lib_acquire, .release = lib_release};

    if (lb_open_lock(e, &cl, &w.l) != 0)
        _exit(3);
    w.o.ttl_ms = LB_TTL_MS;
    w.o.wait_ms = WAIT_MS;
    serve(&w, go, out);
}

/* Waits until end (CLOCK_MONOTONIC ns) for a notice on w->sub that a
 * tracked key changed; 0 when one came. */
static int raw_notice(waiter *w, int64_t end)
{
    int64_t left = (end - lb_now_ns()) / 1000;
    struct timeval tv = {0, 0};
    redisReply *r;

    if (left <= 0)
        return -1;
    tv.tv_sec = left / 1000000;
    tv.tv_usec = left % 1000000;
    if (redisSetTimeout(w->sub, tv) != REDIS_OK ||
        redisGetReply(w->sub, (void **)&r) != REDIS_OK)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* The floor's acquire: SET NX PX; when refused, a read of the key that
 * the server tracks (CLIENT CACHING yes, then GET, in one write), and a
 * wait for its notice on w->sub; again until taken or out of time. */
static int32_t raw_acquire(waiter *w)
{
    int64_t end = lb_now_ns() + (int64_t)WAIT_MS * 1000000;
    redisReply *r;
    int taken, held;

    snprintf(w->tok, sizeof w->tok, "floor-%ld", random());
    for (;;) {
        r = redisCommand(w->c, "SET %s %s NX PX %d", LB_LOCK_KEY, w->tok,
                         LB_TTL_MS);
        taken = r != NULL && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (taken)
            return REDISLOCK_OK;
        redisAppendCommand(w->c, "CLIENT CACHING yes");
        redisAppendCommand(w->c, "GET %s", LB_LOCK_KEY);
        if (redisGetReply(w->c, (void **)&r) != REDIS_OK)
            return REDISLOCK_EIO;
        freeReplyObject(r);
        if (redisGetReply(w->c, (void **)&r) != REDIS_OK)
            return REDISLOCK_EIO;
        held = r->type == REDIS_REPLY_STRING;
        freeReplyObject(r);
        if (held && raw_notice(w, end) != 0)
            return REDISLOCK_ETIMEDOUT;
    }
}

static int32_t raw_release(waiter *w)
{
    redisReply *r =
        redisCommand(w->c, "EVALSHA %s 1 %s %s", w->sha, LB_LOCK_KEY, w->tok);
    int ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;

    freeReplyObject(r);
    return ok ? REDISLOCK_OK : REDISLOCK_ELOST;
}

/* The protocol's floor, in raw hiredis: what the library's tracked wait
 * does (src/node/track.h), over two connections made once, not per
 * wait. */
static void raw_waiter(const lb_env *e, int go, int out)
{
    waiter w = {.acquire = raw_acquire, .release = raw_release};
    redisReply *r;
    long long id;

    if ((w.c = lb_connect(e->sock)) == NULL ||
        (w.sub = lb_connect(e->sock)) == NULL)
        _exit(3);
    r = lb_cmd(w.sub, "CLIENT ID");
    id = r->integer;
    freeReplyObject(r);
    freeReplyObject(lb_cmd(w.sub, "SUBSCRIBE __redis__:invalidate"));
    freeReplyObject(lb_cmd(w.c, "CLIENT TRACKING ON REDIRECT %lld OPTIN", id));
    r = lb_cmd(w.c, "SCRIPT LOAD %s", LB_CAD);
    memcpy(w.sha, r->str, r->len < 40 ? r->len : 40);
    freeReplyObject(r);
    serve(&w, go, out);
}

/* A token as random as another library's (redis-py: a uuid1's hex). */
static void new_token(char *tok, size_t len)
{
    snprintf(tok, len, "fh-%08lx%08lx%08lx", (unsigned long)random(),
             (unsigned long)random(), (unsigned long)random());
}

static int c_take(holder *h)
{
    redisReply *r;
    int ok;

    new_token(h->tok, sizeof h->tok);
    r = redisCommand(h->c, "SET %s %s NX PX 60000", LB_LOCK_KEY, h->tok);
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int64_t c_release(holder *h)
{
    int64_t t = lb_now_ns();
    redisReply *r =
        redisCommand(h->c, "EVALSHA %s 1 %s %s", h->sha, LB_LOCK_KEY, h->tok);
    int ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;

    freeReplyObject(r);
    return ok ? t : -1;
}

/* One request to redis-py's holder, and its answer's first stamp (the
 * second, for a release, is when it returned: not needed). */
static int64_t py_ask(holder *h, const char *cmd, const char *want)
{
    char line[128];
    long long ns;
    size_t n = strlen(want);

    if (dprintf(h->to, "%s\n", cmd) < 0 ||
        lb_read_line(h->from, line, sizeof line, 5000) != 0 ||
        strncmp(line, want, n) != 0 || sscanf(line + n, "%lld", &ns) != 1)
        return -1;
    return (int64_t)ns;
}

static int py_take(holder *h)
{
    return py_ask(h, "take", "took ") < 0 ? -1 : 0;
}

static int64_t py_release(holder *h)
{
    return py_ask(h, "release", "released ");
}

/* redis-py's holder: bench/peers/pyholder.py over two pipes. */
static int py_start(const lb_env *e, holder *h)
{
    char script[1024];
    int in[2], out[2];

    snprintf(script, sizeof script, "%s/pyholder.py", e->peers_dir);
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return -1;
    fflush(stdout);
    if ((h->pid = fork()) == 0) {
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            _exit(127);
        execlp(e->python, e->python, script, e->sock, LB_LOCK_KEY,
               (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    h->to = in[1];
    h->from = out[0];
    if (h->pid < 0 || lb_read_ready(h->from, 10000) < 0)
        return -1;
    h->take = py_take;
    h->release = py_release;
    return 0;
}

static int c_start(const lb_env *e, holder *h)
{
    redisReply *r;

    if ((h->c = lb_connect(e->sock)) == NULL)
        return -1;
    r = redisCommand(h->c, "SCRIPT LOAD %s", LB_CAD);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
        freeReplyObject(r);
        return -1;
    }
    memcpy(h->sha, r->str, 41);
    freeReplyObject(r);
    h->take = c_take;
    h->release = c_release;
    return 0;
}

static void holder_stop(holder *h)
{
    int st;

    redisFree(h->c);
    if (h->pid <= 0)
        return;
    close(h->to); /* EOF: pyholder.py exits */
    close(h->from);
    lb_wait_all(&h->pid, 1, 5, &st);
}

/* One cycle: take, let the waiter park behind the holder for 5-30 ms,
 * release; *wake gets release start -> grant. 0, or -1 with f->err. */
static int cycle(holder *h, int go, int from, lb_foreign *f, int i,
                 int64_t *wake)
{
    struct pollfd p = {from, POLLIN, 0};
    int64_t rel;
    grant g;

    if (h->take(h) != 0) {
        snprintf(f->err, sizeof f->err,
                 "cycle %d: the holder could not "
                 "take the free key",
                 i);
        return -1;
    }
    if (write(go, "g", 1) != 1) {
        snprintf(f->err, sizeof f->err, "cycle %d: the waiter is gone", i);
        return -1;
    }
    lb_sleep_ms(5 + (int)(random() % 26));
    if ((rel = h->release(h)) < 0) {
        snprintf(f->err, sizeof f->err,
                 "cycle %d: the holder's release "
                 "failed (the key no longer held its token)",
                 i);
        return -1;
    }
    if (poll(&p, 1, REPORT_MS) != 1 ||
        read(from, &g, sizeof g) != (ssize_t)sizeof g) {
        snprintf(f->err, sizeof f->err,
                 "cycle %d: no word from the waiter "
                 "within %d ms of the release",
                 i, REPORT_MS);
        return -1;
    }
    if (g.err != REDISLOCK_OK) {
        snprintf(f->err, sizeof f->err,
                 "cycle %d: the waiter's acquire or "
                 "release failed after %d ms: %s",
                 i, (int)g.ms, redislock_strerror((redislock_err)g.err));
        return -1;
    }
    if (g.at < rel) {
        snprintf(f->err, sizeof f->err,
                 "cycle %d: the waiter got the lock "
                 "%.1f us before the holder's release began: EXCLUSION "
                 "BROKEN",
                 i, (double)(rel - g.at) / 1e3);
        return -1;
    }
    *wake = g.at - rel;
    return 0;
}

/* The percentiles of the n sorted wake-ups v. */
static void summarise(lb_foreign *f, int64_t *v, int n)
{
    lb_sort_i64(v, (size_t)n);
    f->got = n;
    f->p50 = (double)lb_pct(v, (size_t)n, 50) / 1e3;
    f->p90 = (double)lb_pct(v, (size_t)n, 90) / 1e3;
    f->p99 = (double)lb_pct(v, (size_t)n, 99) / 1e3;
    f->max = n ? (double)v[n - 1] / 1e3 : -1;
}

/* The waiter process, with its two pipes: go (ours to write) and its
 * grants (ours to read). */
static pid_t waiter_start(const lb_env *e, int raw, int *go, int *from)
{
    int a[2], b[2];
    pid_t pid;

    if (pipe2(a, O_CLOEXEC) != 0 || pipe2(b, O_CLOEXEC) != 0)
        lb_die("foreign: pipe failed");
    fflush(stdout);
    if ((pid = fork()) == 0) {
        close(a[1]);
        close(b[0]);
        if (raw)
            raw_waiter(e, a[0], b[1]);
        lib_waiter(e, a[0], b[1]);
    }
    close(a[0]);
    close(b[1]);
    *go = a[1];
    *from = b[0];
    return pid;
}

/*
 * One warm-up cycle (the waiter's first connections, the scripts' first
 * load), then f->n timed ones. Stops at the first failure: a waiter that
 * got the lock while held, or none within its deadline.
 */
void lb_run_foreign(const lb_env *e, lb_foreign *f)
{
    holder h = {0};
    int64_t *wake = calloc((size_t)f->n + 1, sizeof *wake);
    int go, from, i, st, n = 0;
    void (*old_pipe)(int);
    pid_t pid;

    if (wake == NULL)
        lb_die("out of memory");
    freeReplyObject(lb_cmd(e->ctl, "FLUSHALL"));
    srandom((unsigned)lb_now_ns());
    /* A holder or waiter that died shows as EPIPE, not our death. */
    old_pipe = signal(SIGPIPE, SIG_IGN);
    f->ran = 1;
    if ((f->py ? py_start(e, &h) : c_start(e, &h)) != 0)
        snprintf(f->err, sizeof f->err, "the holder did not start%s",
                 f->py ? " (python3 with the redis package?)" : "");
    pid = waiter_start(e, f->raw, &go, &from);
    for (i = 0; i <= f->n && f->err[0] == '\0'; i++)
        if (cycle(&h, go, from, f, i, &wake[n]) == 0 && i > 0)
            n++;
    close(go); /* EOF: the waiter ends */
    close(from);
    if (lb_wait_all(&pid, 1, 15, &st) != 0 && f->err[0] == '\0')
        snprintf(f->err, sizeof f->err, "the waiter did not end");
    holder_stop(&h);
    summarise(f, wake, n);
    f->ok = f->err[0] == '\0' && n == f->n;
    free(wake);
    signal(SIGPIPE, old_pipe);
}
