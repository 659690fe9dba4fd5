/*
 * faults: real failures around a real redis-server, each test logging its
 * figures. A holder killed with SIGKILL; a server that stalls (SIGSTOP,
 * CLIENT PAUSE, DEBUG SLEEP) while leases run out; the client's wall
 * clock jumping (libfaketime); a server restarted without persistence and
 * with an append-only file.
 *
 * The rules: every call returns within its timeout; after a stall a
 * handle whose lease ran out never hears "still held" (extend and release
 * say EEXPIRED or ELOST, redislock_check says so without asking); the
 * wall clock changes nothing (only CLOCK_MONOTONIC is used).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "harness/faked.h"
#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define TIMEOUT_MS 300
#define SLACK_MS 400

static int64_t slack_ms(void)
{
    const char *f = getenv("RL_TEST_TIME_FACTOR");
    int k = f != NULL ? atoi(f) : 1;

    return SLACK_MS * (k > 1 ? k : 1);
}

static redislock_client *short_client(const char *url)
{
    redislock_options o = {0};

    o.connect_timeout_ms = TIMEOUT_MS;
    o.command_timeout_ms = TIMEOUT_MS;
    return th_client_url(url, &o);
}

/* expr returns want within the command timeout plus slack. */
#define ASSERT_TIMED(expr, want)                                              \
    do {                                                                      \
        int64_t t0_ = th_now_ms(), ms_;                                       \
        ASSERT_ERR(expr, want);                                               \
        ms_ = th_now_ms() - t0_;                                              \
        test_log("  %-40s %s in %lld ms", #expr,                              \
                 redislock_errname(want) + 10, (long long)ms_);               \
        ASSERT_LE(ms_, TIMEOUT_MS + slack_ms());                              \
    } while (0)

/* ---- A holder killed with SIGKILL ---------------------------------- */

#define KILL_TTL_MS 400
#define KILL_ROUNDS 5

/* In a forked child: takes key, reports when, then waits to be killed. */
static _Noreturn void holder_child(const th_server *s, int fd)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redislock_acquire_options o = th_aopts(KILL_TTL_MS, 0, 0);
    int64_t t[2];

    if (redislock_client_new(&c, s->unix_url, NULL) != REDISLOCK_OK ||
        redislock_lock_new(c, "flt:kill", 8, &l) != REDISLOCK_OK)
        _exit(1);
    t[0] = th_now_ms();
    if (redislock_acquire(l, &o) != REDISLOCK_OK)
        _exit(1);
    t[1] = th_now_ms();
    if (write(fd, t, sizeof t) != (ssize_t)sizeof t)
        _exit(1);
    for (;;)
        pause();
}

/* One round: how long after the holder's lease ended the waiter got it. */
static int64_t kill_round(const th_server *s, redislock_lock *w)
{
    redislock_acquire_options o = th_aopts(5000, 5000, 0);
    int fds[2];
    int64_t t[2], got, late;
    pid_t pid;

    ASSERT(pipe(fds) == 0);
    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        holder_child(s, fds[1]);
    close(fds[1]);
    ASSERT_EQ_INT(read(fds[0], t, sizeof t), sizeof t);
    close(fds[0]);
    ASSERT(kill(pid, SIGKILL) == 0);
    ASSERT_EQ_INT(waitpid(pid, NULL, 0), pid);
    ASSERT_OK(redislock_acquire(w, &o));
    got = th_now_ms();
    late = got - (t[1] + KILL_TTL_MS);
    test_log("holder took it in %lld ms; waiter got it %lld ms after the "
             "lease ended",
             (long long)(t[1] - t[0]), (long long)late);
    /* Never before the lease could have ended (Redis counts whole ms). */
    ASSERT_GE(got, t[0] + KILL_TTL_MS - 2);
    ASSERT_OK(redislock_release(w));
    return late;
}

void test_faults_killed_holder_next_waiter(void)
{
    th_server *s = th_server_start(NULL);
    redislock_client *c = th_client(s);
    redislock_lock *w = th_lock(c, "flt:kill");
    int64_t late[KILL_ROUNDS], t;
    int i, j;

    /* Sorted as they come. */
    for (i = 0; i < KILL_ROUNDS; i++) {
        t = kill_round(s, w);
        for (j = i; j > 0 && late[j - 1] > t; j--)
            late[j] = late[j - 1];
        late[j] = t;
    }
    test_log("TTL %d ms, %d rounds: the waiter was %lld ms late at the "
             "median, %lld ms at worst",
             KILL_TTL_MS, KILL_ROUNDS, (long long)late[KILL_ROUNDS / 2],
             (long long)late[KILL_ROUNDS - 1]);
    /* The waiter sleeps until the lease's end, not a retry period: late
     * by a scheduling delay at most. A loaded machine may deschedule one
     * round for a few hundred ms; a waiter that polls, or waits out its
     * 5 s wait, is late in every round. */
    ASSERT_LE(late[KILL_ROUNDS / 2], 100);
    ASSERT_LE(late[KILL_ROUNDS - 1], 1000 + slack_ms());
    redislock_lock_free(w);
    redislock_client_free(c);
    th_server_stop(s);
}

/* ---- A server that stalls ------------------------------------------ */

/* Long enough for every call below to time out inside it. */
#define STALL_MS 4000
#define SHORT_TTL_MS 600
#define LONG_TTL_MS 10000

typedef enum stall { BY_SIGSTOP, BY_CLIENT_PAUSE, BY_DEBUG_SLEEP } stall;

static void stall_begin(stall k, th_server *s, redisContext *r)
{
    int done = 0;

    if (k == BY_SIGSTOP) {
        th_server_pause(s);
    } else if (k == BY_CLIENT_PAUSE) {
        freeReplyObject(th_cmd(r, "CLIENT PAUSE %d ALL", STALL_MS));
    } else {
        /* Sent, not waited for: the reply comes when the sleep ends. */
        ASSERT(redisAppendCommand(r, "DEBUG SLEEP %d", STALL_MS / 1000) ==
               REDIS_OK);
        while (!done)
            ASSERT(redisBufferWrite(r, &done) == REDIS_OK);
        th_sleep_ms(50); /* it is asleep by now */
    }
}

/* Returns once the server answers again; t0 is when the stall began. */
static void stall_end(stall k, th_server *s, redisContext *r, int64_t t0)
{
    void *reply = NULL;

    if (k == BY_SIGSTOP) {
        th_sleep_ms(t0 + STALL_MS - th_now_ms());
        th_server_resume(s);
    } else if (k == BY_DEBUG_SLEEP) {
        ASSERT(redisGetReply(r, &reply) == REDIS_OK);
        freeReplyObject(reply);
    }
    /* Under CLIENT PAUSE ALL this PING waits for the pause to end. */
    freeReplyObject(th_cmd(r, "PING"));
    test_log("the server answered again %lld ms after the stall began",
             (long long)(th_now_ms() - t0));
}

static void stall_test(stall k, const char *name)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redislock_client *c = short_client(s->unix_url);
    redislock_lock *s1 = th_lock(c, "flt:s1"), *s2 = th_lock(c, "flt:s2");
    redislock_lock *lg = th_lock(c, "flt:long"), *x = th_lock(c, "flt:x");
    redislock_lock *wd = th_lock(c, "flt:dog");
    redislock_acquire_options so = th_aopts(SHORT_TTL_MS, 0, 0);
    redislock_acquire_options dog = th_aopts(SHORT_TTL_MS, 0, 0);
    redislock_acquire_options lo = th_aopts(LONG_TTL_MS, 0, 0);
    redislock_acquire_options wo = th_aopts(LONG_TTL_MS, 1000, 0);
    redislock_info info;
    int64_t t0, ttl;
    redislock_err e;

    dog.watchdog = 1;
    ASSERT_OK(redislock_acquire(wd, &dog));
    ASSERT_OK(redislock_acquire(s1, &so));
    ASSERT_OK(redislock_acquire(s2, &so));
    ASSERT_OK(redislock_acquire(lg, &lo));
    test_log("%s for %d ms; leases of %d and %d ms", name, STALL_MS,
             SHORT_TTL_MS, LONG_TTL_MS);
    t0 = th_now_ms();
    stall_begin(k, s, r);
    ASSERT_TIMED(redislock_acquire(x, &lo), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED(redislock_acquire(x, &wo), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED(redislock_extend(s1, SHORT_TTL_MS), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED(redislock_release(s2), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED(redislock_extend(lg, LONG_TTL_MS), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED(redislock_ttl(lg, &ttl), REDISLOCK_ETIMEDOUT);
    ASSERT_TIMED(redislock_inspect(lg, &info), REDISLOCK_ETIMEDOUT);
    /* Or the calls above did not all see the stall. */
    ASSERT_LT(th_now_ms() - t0, STALL_MS - 200);
    /* The short leases run out during the stall: known without asking. */
    th_sleep_ms(t0 + SHORT_TTL_MS + 50 - th_now_ms());
    ASSERT_ERR(redislock_check(s1), REDISLOCK_EEXPIRED);
    ASSERT_ERR(redislock_check(s2), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_check(lg));
    /* A watched lease whose renewals cannot get through ends too. */
    e = redislock_check(wd);
    test_log("  watched %d ms lease during the stall: check() says %s",
             SHORT_TTL_MS, redislock_errname(e));
    ASSERT_NE_INT(e, REDISLOCK_OK);
    stall_end(k, s, r, t0);

    ASSERT_TIMED(redislock_extend(s1, SHORT_TTL_MS), REDISLOCK_EEXPIRED);
    ASSERT_TIMED(redislock_release(s2), REDISLOCK_EEXPIRED);
    ASSERT_ERR(redislock_check(s1), REDISLOCK_EEXPIRED);
    ASSERT_ERR(redislock_check(s2), REDISLOCK_EEXPIRED);
    ASSERT_NE_INT(redislock_check(wd), REDISLOCK_OK);
    e = redislock_release(wd);
    test_log("  release of the watched lease after the stall: %s",
             redislock_errname(e));
    ASSERT(e == REDISLOCK_EEXPIRED || e == REDISLOCK_ELOST);
    ASSERT_TIMED(redislock_extend(lg, LONG_TTL_MS), REDISLOCK_OK);
    ASSERT_OK(redislock_check(lg));
    /* A timed-out acquire's outcome is unknown: the server may run the
     * request when it wakes. Say which it was. */
    test_log("after the stall the timed-out acquire's key %s (PTTL %lld)",
             th_cmd_int(r, "EXISTS flt:x") ? "EXISTS: a lease nobody holds"
                                           : "does not exist",
             th_cmd_int(r, "PTTL flt:x"));
    ASSERT_TIMED(redislock_release(lg), REDISLOCK_OK);
    redislock_lock_free(s1);
    redislock_lock_free(s2);
    redislock_lock_free(lg);
    redislock_lock_free(x);
    redislock_lock_free(wd);
    redislock_client_free(c);
    redisFree(r);
    th_server_stop(s);
}

void test_faults_server_sigstop(void)
{
    stall_test(BY_SIGSTOP, "SIGSTOP");
}

void test_faults_client_pause(void)
{
    stall_test(BY_CLIENT_PAUSE, "CLIENT PAUSE ALL");
}

void test_faults_debug_sleep(void)
{
    stall_test(BY_DEBUG_SLEEP, "DEBUG SLEEP");
}

/* ---- The client's wall clock jumps ---------------------------------- */

/* elapsed is within [lo, hi] ms; logged either way. */
#define ASSERT_SPAN(what, elapsed, lo, hi)                                    \
    do {                                                                      \
        long long span_ = (elapsed), lo_ = (lo), hi_ = (hi);                  \
        test_log("  %-44s %lld ms (want %lld..%lld)", what, span_, lo_, hi_); \
        ASSERT_GE(span_, lo_);                                                \
        ASSERT_LE(span_, hi_);                                                \
    } while (0)

/* A lease read right after the call that set it, which took `took` ms:
 * counted from before the request, so at most ttl, and at least ttl less
 * the drift allowance (100 ms covers it) and the call's own time, which
 * on a loaded machine is 100 ms and more. A lease read off a wall clock
 * that jumped is off by the jump: seconds to days. */
#define LEASE_LO(ttl, took) ((ttl) - 100 - (took))

/* Holder, waiter, deadline, extend and watchdog on the monotonic clock. */
static void probe(redislock_client *c)
{
    redislock_lock *h = th_lock(c, "flt:probe"), *w = th_lock(c, "flt:probe");
    redislock_lock *x = th_lock(c, "flt:probe"), *d = th_lock(c, "flt:dog");
    redislock_acquire_options ho = th_aopts(800, 0, 0);
    redislock_acquire_options wo = th_aopts(1000, 3000, 0);
    redislock_acquire_options xo = th_aopts(10000, 400, 0);
    redislock_acquire_options ro = th_aopts(10000, 300, 50);
    redislock_acquire_options dog = th_aopts(300, 0, 0);
    int64_t slack = slack_ms() / 2, t0, t1, valid, ttl;

    test_log("wall clock at start: %lld", (long long)time(NULL));
    t0 = th_now_ms();
    ASSERT_OK(redislock_acquire(h, &ho));
    valid = redislock_valid_ms(h);
    ASSERT_SPAN("validity of an 800 ms lease", valid,
                LEASE_LO(800, th_now_ms() - t0), 800);
    ASSERT_OK(redislock_acquire(w, &wo));
    ASSERT_SPAN("waiter got it after", th_now_ms() - t0, 795, 800 + slack);
    t1 = th_now_ms();
    ASSERT_OK(redislock_extend(w, 1500));
    valid = redislock_valid_ms(w);
    ASSERT_SPAN("validity after extend to 1500 ms", valid,
                LEASE_LO(1500, th_now_ms() - t1), 1500);
    ASSERT_OK(redislock_ttl(w, &ttl));
    ASSERT_SPAN("server TTL after extend", ttl,
                LEASE_LO(1500, th_now_ms() - t1), 1500);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(x, &xo), REDISLOCK_EHELD);
    ASSERT_SPAN("a 400 ms wait gave up after", th_now_ms() - t0, 395,
                400 + slack);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(x, &ro), REDISLOCK_EHELD);
    ASSERT_SPAN("a 300 ms wait (50 ms retries) gave up after",
                th_now_ms() - t0, 295, 300 + slack);
    ASSERT_OK(redislock_release(w));
    dog.watchdog = 1;
    ASSERT_OK(redislock_acquire(d, &dog));
    th_sleep_ms(1000);
    ASSERT_OK(redislock_check(d));
    ASSERT_OK(redislock_ttl(d, &ttl));
    ASSERT_SPAN("a 300 ms watched lease after 1 s: TTL", ttl, 1, 300);
    ASSERT_OK(redislock_release(d));
    test_log("wall clock at end: %lld", (long long)time(NULL));
    redislock_lock_free(h);
    redislock_lock_free(w);
    redislock_lock_free(x);
    redislock_lock_free(d);
}

/* Run alone it checks itself; the wallclock tests run it under
 * libfaketime against their server ($RL_FAULTS_URL). */
void test_faults_clock_probe(void)
{
    const char *url = getenv("RL_FAULTS_URL");
    th_server *s = url == NULL ? th_server_start(NULL) : NULL;
    redislock_client *c = th_client_url(url ? url : s->unix_url, NULL);

    probe(c);
    redislock_client_free(c);
    th_server_stop(s);
}

/* Rewrites libfaketime's timestamp file (atomically: it is re-read on
 * every clock call). */
static void write_faketime(const char *path, const char *spec)
{
    char tmp[300];
    FILE *f;

    snprintf(tmp, sizeof tmp, "%s.new", path);
    f = fopen(tmp, "w");
    ASSERT(f != NULL);
    fprintf(f, "%s\n", spec);
    ASSERT(fclose(f) == 0);
    ASSERT(rename(tmp, path) == 0);
}

/*
 * Runs the probe in a child whose wall clock is offset by spec, or (jump)
 * correct at first and offset by spec 300 ms in, during the waiter's
 * wait. Checks that libfaketime took effect and that the probe passed.
 */
static void wallclock(const char *spec, int jump, long long offset_s)
{
    th_server *s = th_server_start(NULL);
    char file[300], buf[8192], *p;
    char url[300], fake[300], tsfile[400];
    const char *env[5] = {"FAKETIME_DONT_FAKE_MONOTONIC=1", url, NULL};
    long long wall = -1;
    int out;
    pid_t pid;

    snprintf(file, sizeof file, "%s/faketime.rc", s->dir);
    write_faketime(file, "+0");
    snprintf(url, sizeof url, "RL_FAULTS_URL=%s", s->unix_url);
    if (jump) {
        snprintf(tsfile, sizeof tsfile, "FAKETIME_TIMESTAMP_FILE=%s", file);
        env[2] = tsfile;
        env[3] = "FAKETIME_NO_CACHE=1";
    } else {
        snprintf(fake, sizeof fake, "FAKETIME=%s", spec);
        env[2] = fake;
    }
    pid = th_faked_start("faults_clock_probe", env, &out);
    if (jump) {
        th_sleep_ms(300);
        write_faketime(file, spec);
    }
    test_log("the probe, FAKETIME %s%s", spec, jump ? " from 300 ms in" : "");
    th_faked_finish(pid, out, buf, sizeof buf);
    /* The fake must have reached the probe, or this proved nothing. */
    p = strstr(buf, jump ? "wall clock at end: " : "wall clock at start: ");
    ASSERT(p != NULL);
    wall = strtoll(strchr(p, ':') + 2, NULL, 10);
    test_log("the probe's wall clock was off by %lld s (want %lld)",
             wall - (long long)time(NULL), offset_s);
    ASSERT_LE(llabs(wall - (long long)time(NULL) - offset_s), 30);
    th_server_stop(s);
}

void test_faults_wallclock_plus2d(void)
{
    wallclock("+2d", 0, 2 * 86400);
}

void test_faults_wallclock_minus1h(void)
{
    wallclock("-1h", 0, -3600);
}

void test_faults_wallclock_jump_forward(void)
{
    wallclock("+2d", 1, 2 * 86400);
}

void test_faults_wallclock_jump_back(void)
{
    wallclock("-1h", 1, -3600);
}

/* ---- A server restarted --------------------------------------------- */

typedef struct own_server {
    pid_t pid;
    char dir[128];
    char sock[160];
    char url[200];
    int aof;
} own_server;

/* The harness's config is fixed (no persistence); this one may have an
 * append-only file, fsynced on every write, and keeps its dir across
 * restarts. Unix socket only. */
static void own_write_config(const own_server *o)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/redis.conf", o->dir);
    f = fopen(path, "w");
    ASSERT(f != NULL);
    fprintf(f,
            "port 0\nunixsocket %s\nunixsocketperm 700\ndir %s\n"
            "logfile %s/redis.log\ndaemonize no\nsave \"\"\n"
            "appendonly %s\nappendfsync always\n",
            o->sock, o->dir, o->dir, o->aof ? "yes" : "no");
    ASSERT(fclose(f) == 0);
}

static void own_start(own_server *o)
{
    char conf[256];
    redisContext *c;
    redisReply *r;
    int64_t deadline = th_now_ms() + 10000;

    snprintf(conf, sizeof conf, "%s/redis.conf", o->dir);
    fflush(NULL);
    o->pid = fork();
    ASSERT(o->pid >= 0);
    if (o->pid == 0) {
        int fd = open("/dev/null", O_RDWR);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        execlp("redis-server", "redis-server", conf, (char *)NULL);
        _exit(127);
    }
    for (;;) {
        c = redisConnectUnix(o->sock);
        r = c && !c->err ? redisCommand(c, "PING") : NULL;
        if (r != NULL && r->type == REDIS_REPLY_STATUS) {
            freeReplyObject(r);
            redisFree(c);
            return;
        }
        freeReplyObject(r);
        redisFree(c);
        ASSERT(waitpid(o->pid, NULL, WNOHANG) == 0);
        ASSERT(th_now_ms() < deadline);
        th_sleep_ms(10);
    }
}

static void own_kill(own_server *o)
{
    ASSERT(kill(o->pid, SIGKILL) == 0);
    ASSERT_EQ_INT(waitpid(o->pid, NULL, 0), o->pid);
}

static own_server *own_new(int aof)
{
    own_server *o = calloc(1, sizeof *o);
    char *dir = th_mkdtemp("rl-own");

    ASSERT(o != NULL && dir != NULL);
    snprintf(o->dir, sizeof o->dir, "%s", dir);
    free(dir);
    snprintf(o->sock, sizeof o->sock, "%s/redis.sock", o->dir);
    snprintf(o->url, sizeof o->url, "unix://%s", o->sock);
    o->aof = aof;
    own_write_config(o);
    own_start(o);
    return o;
}

static void own_free(own_server *o)
{
    own_kill(o);
    th_rmtree(o->dir);
    free(o);
}

/* kill -9, then the same server again on the same socket; the time down. */
static int64_t own_restart(own_server *o)
{
    int64_t t0 = th_now_ms();

    own_kill(o);
    own_start(o);
    return th_now_ms() - t0;
}

/*
 * The first call after a restart may find its pooled connection dead
 * (EIO); the call after it reconnects. Returns the first answer that is
 * not EIO, after at most two calls; logs both.
 */
static redislock_err after_restart(redislock_lock *l, int extend)
{
    redislock_err e = REDISLOCK_EIO;
    int i;

    for (i = 0; i < 2 && e == REDISLOCK_EIO; i++) {
        e = extend ? redislock_extend(l, LONG_TTL_MS) : redislock_release(l);
        test_log("  %s #%d after the restart: %s (%s)",
                 extend ? "extend" : "release", i + 1, redislock_errname(e),
                 e ? redislock_errdetail() : "");
    }
    return e;
}

void test_faults_restart_no_persistence(void)
{
    own_server *o = own_new(0);
    redislock_client *c = short_client(o->url);
    redislock_lock *l = th_lock(c, "flt:restart"), *n;
    redislock_acquire_options lo = th_aopts(LONG_TTL_MS, 0, 0);

    ASSERT_OK(redislock_acquire(l, &lo));
    test_log("no persistence: down for %lld ms", (long long)own_restart(o));
    /* The lock is gone with the data: never "extended". */
    ASSERT_ERR(after_restart(l, 1), REDISLOCK_EEXPIRED);
    ASSERT_ERR(redislock_check(l), REDISLOCK_EEXPIRED);
    /* ...and anyone may take it at once: the lease did not survive. */
    n = th_lock(c, "flt:restart");
    ASSERT_OK(redislock_acquire(n, &lo));
    ASSERT_OK(redislock_release(n));
    redislock_lock_free(n);
    redislock_lock_free(l);
    redislock_client_free(c);
    own_free(o);
}

void test_faults_restart_aof(void)
{
    own_server *o = own_new(1);
    redislock_client *c = short_client(o->url);
    redislock_lock *l = th_lock(c, "flt:aof"), *m = th_lock(c, "flt:aofm");
    redislock_lock *sh = th_lock(c, "flt:aofs");
    redislock_acquire_options lo = th_aopts(LONG_TTL_MS, 0, 0);
    redislock_acquire_options mo = th_aopts(LONG_TTL_MS, 0, 0);
    redislock_acquire_options so = th_aopts(300, 0, 0);
    redisContext *r;
    int64_t t0 = th_now_ms(), down, pttl, want;

    mo.metadata = "job 42";
    ASSERT_OK(redislock_acquire(l, &lo));
    ASSERT_OK(redislock_acquire(m, &mo));
    ASSERT_OK(redislock_acquire(sh, &so));
    th_sleep_ms(200);
    down = th_now_ms();
    own_kill(o);
    th_sleep_ms(300); /* the 300 ms lease ends while the server is down */
    own_start(o);
    down = th_now_ms() - down;
    r = redisConnectUnix(o->sock);
    ASSERT(r != NULL && !r->err);
    pttl = th_pttl(r, "flt:aof");
    want = LONG_TTL_MS - (th_now_ms() - t0);
    test_log("AOF (appendfsync always): down %lld ms; the lock is back with "
             "PTTL %lld (%lld expected if the expiry is absolute); the "
             "300 ms lease has PTTL %lld",
             (long long)down, (long long)pttl, (long long)want,
             th_pttl(r, "flt:aofs"));
    ASSERT_LE(llabs(pttl - want), 250);
    ASSERT_EQ_INT(th_pttl(r, "flt:aofs"), -2);
    ASSERT_KEY(r, "flt:aof", redislock_token(l));
    /* The holder goes on as if nothing happened (after one EIO at most:
     * the script cache is empty, so EVALSHA falls back to EVAL). */
    ASSERT_ERR(after_restart(l, 1), REDISLOCK_OK);
    ASSERT_GT(th_pttl(r, "flt:aof"), LONG_TTL_MS - 1000);
    ASSERT_OK(redislock_check(l));
    ASSERT_OK(redislock_release(l));
    ASSERT_OK(redislock_release(m));
    ASSERT_ERR(redislock_release(sh), REDISLOCK_EEXPIRED);
    redisFree(r);
    redislock_lock_free(l);
    redislock_lock_free(m);
    redislock_lock_free(sh);
    redislock_client_free(c);
    own_free(o);
}
