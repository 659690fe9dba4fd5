/*
 * The non-blocking connection (src/wire/aconn.c) on a poll() loop of the
 * test's own, against real servers: many requests in order, the
 * handshake, a server that is down, one that stops answering, a connect
 * that never completes, and closing with requests in flight (from outside
 * and from inside a callback).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aconn.h"
#include "clock.h"
#include "harness/blackhole.h"
#include "harness/fakeserver.h"
#include "harness/server.h"
#include "request.h"
#include "test.h"
#include "url.h"

/* The loop: one connection's fd and what it wants watched. */
typedef struct loop {
    int fd, what, calls;
} loop;

static void watch(void *ctx, int fd, int what)
{
    loop *lp = ctx;

    lp->fd = fd;
    lp->what = what;
    lp->calls++;
}

/* Runs c on the loop until *done or limit_ms pass, as an application's
 * loop would: poll the fd for what it asked, bounded by the next
 * deadline, then I/O and the timer. */
static void run(rl__aconn *c, loop *lp, const int *done, int64_t limit_ms)
{
    int64_t end = rl__now_us() + limit_ms * 1000;

    while (!*done && rl__now_us() < end) {
        struct pollfd p = {lp->fd, 0, 0};
        int64_t d = rl__aconn_deadline(c), wait = 10;
        int what = 0;

        if (d != 0 && (d - rl__now_us()) / 1000 < wait)
            wait = d > rl__now_us() ? (d - rl__now_us()) / 1000 : 0;
        if (lp->what & RL_WATCH_READ)
            p.events |= POLLIN;
        if (lp->what & RL_WATCH_WRITE)
            p.events |= POLLOUT;
        if (poll(&p, p.events ? 1 : 0, (int)wait) > 0) {
            if (p.revents & (POLLIN | POLLHUP | POLLERR))
                what |= RL_WATCH_READ;
            if (p.revents & (POLLOUT | POLLERR))
                what |= RL_WATCH_WRITE;
            rl__aconn_io(c, what & lp->what ? what & lp->what : what);
        }
        rl__aconn_tick(c);
    }
}

/* What came back for the requests of a test. */
typedef struct got {
    int n, done, want;
    int ok, in_order;
    int errs[16]; /* count per redislock_err */
    char detail[300];
    int64_t last_us;
    rl__aconn *close_at; /* close this connection in callback close_n */
    int close_n;
} got;

static void on_reply(void *arg, redislock_err err, const rl__reply *r)
{
    got *g = arg;

    g->n++;
    g->last_us = rl__now_us();
    if (err == REDISLOCK_OK) {
        g->ok++;
        if (r->type != REDIS_REPLY_INTEGER || r->integer != g->ok)
            g->in_order = 0;
    } else {
        if ((int)err < 16)
            g->errs[err]++;
        snprintf(g->detail, sizeof g->detail, "%s", redislock_errdetail());
    }
    if (g->close_at != NULL && g->n == g->close_n) {
        rl__aconn_close(g->close_at);
        g->close_at = NULL;
    }
    g->done = g->n == g->want;
}

static rl__aconn *open_url(const char *s, rl__url *u, const char *password,
                           int64_t cmd_ms, loop *lp)
{
    rl__conn_cfg cfg = {0};
    rl__aconn_ops ops = {watch, NULL, lp};
    rl__aconn *c = NULL;

    ASSERT_OK(rl__url_parse(s, u));
    cfg.url = u;
    cfg.password = password;
    cfg.connect_timeout_ms = 500;
    cfg.command_timeout_ms = cmd_ms;
    ASSERT_OK(rl__aconn_open(&cfg, &ops, &c));
    return c;
}

static void send_incr(rl__aconn *c, got *g, int n)
{
    static const char *const argv[] = {"INCR", "aconn:n"};
    int i;

    g->want += n;
    g->done = 0;
    for (i = 0; i < n; i++)
        ASSERT_OK(rl__aconn_send(c, 2, (const char **)argv, NULL, on_reply, g));
}

/* 1000 requests queued at once on one connection, over TCP and the unix
 * socket: every reply arrives, in order, with nothing left pending. */
void test_aconn_many_requests_in_order(void)
{
    th_server *s = th_server_start(NULL);
    const char *urls[2] = {s->tcp_url, s->unix_url};
    int i;

    for (i = 0; i < 2; i++) {
        loop lp = {-1, 0, 0};
        got g = {.in_order = 1};
        rl__url u;
        rl__aconn *c = open_url(urls[i], &u, NULL, 2000, &lp);
        redisContext *r = th_server_redis(s);

        freeReplyObject(th_cmd(r, "DEL aconn:n"));
        redisFree(r);
        send_incr(c, &g, 1000);
        ASSERT_EQ_INT(rl__aconn_pending(c), 1000);
        run(c, &lp, &g.done, 10000);
        ASSERT_EQ_INT(g.ok, 1000);
        ASSERT(g.in_order);
        ASSERT_EQ_INT(rl__aconn_pending(c), 0);
        ASSERT(!rl__aconn_broken(c));
        ASSERT_EQ_INT(rl__aconn_deadline(c), 0);
        /* The loop was asked for reads, and writes only while sending. */
        ASSERT(lp.what == RL_WATCH_READ);
        rl__aconn_close(c);
        ASSERT_EQ_INT(lp.what, 0);
        rl__url_free(&u);
    }
    th_server_stop(s);
}

/* The handshake goes first: with the right password the requests behind
 * it run; with a wrong one each gets REDISLOCK_EAUTH, and none ran. */
void test_aconn_handshake_auth(void)
{
    th_server_opts o = {.requirepass = "s3cret"};
    th_server *s = th_server_start(&o);
    redisContext *r = th_server_redis(s);
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1}, bad = {.in_order = 1};
    rl__url u, u2;
    rl__aconn *c = open_url(s->unix_url, &u, "s3cret", 2000, &lp), *d;

    freeReplyObject(th_cmd(r, "DEL aconn:n"));
    send_incr(c, &g, 3);
    run(c, &lp, &g.done, 5000);
    ASSERT_EQ_INT(g.ok, 3);
    rl__aconn_close(c);

    lp = (loop){-1, 0, 0};
    d = open_url(s->unix_url, &u2, "wrong", 2000, &lp);
    send_incr(d, &bad, 3);
    run(d, &lp, &bad.done, 5000);
    ASSERT_EQ_INT(bad.n, 3);
    ASSERT_EQ_INT(bad.errs[REDISLOCK_EAUTH], 3);
    test_log("wrong password: %s", bad.detail);
    ASSERT(rl__aconn_broken(d));
    ASSERT_ERR(
        rl__aconn_send(d, 1, (const char *[]){"PING"}, NULL, on_reply, &bad),
        REDISLOCK_EAUTH);
    {
        redisReply *v = th_cmd(r, "GET aconn:n");

        ASSERT(v->type == REDIS_REPLY_STRING && strcmp(v->str, "3") == 0);
        freeReplyObject(v);
    }
    rl__aconn_close(d);
    redisFree(r);
    rl__url_free(&u);
    rl__url_free(&u2);
    th_server_stop(s);
}

/* A server that is gone: requests get REDISLOCK_ECONNECT naming it, by
 * the connect timeout, over TCP (refused on connect) and a unix socket
 * nobody listens on (refused at once). */
void test_aconn_server_down(void)
{
    th_server *s = th_server_start(NULL);
    char tcp[64], sock[200];
    const char *urls[2] = {tcp, sock};
    int i;

    snprintf(tcp, sizeof tcp, "%s", s->tcp_url);
    snprintf(sock, sizeof sock, "%s", s->unix_url);
    th_server_kill(s);
    for (i = 0; i < 2; i++) {
        loop lp = {-1, 0, 0};
        got g = {.in_order = 1};
        rl__url u;
        rl__aconn *c = open_url(urls[i], &u, NULL, 2000, &lp);
        int64_t t0 = rl__now_us();
        redislock_err err = REDISLOCK_OK;

        g.want = 2;
        for (int k = 0; k < 2 && err == REDISLOCK_OK; k++)
            err = rl__aconn_send(c, 1, (const char *[]){"PING"}, NULL, on_reply,
                                 &g);
        if (err == REDISLOCK_OK)
            run(c, &lp, &g.done, 3000);
        else
            snprintf(g.detail, sizeof g.detail, "%s", redislock_errdetail());
        test_log("%s: %s", urls[i], g.detail);
        ASSERT(err == REDISLOCK_ECONNECT || g.errs[REDISLOCK_ECONNECT] == 2);
        ASSERT(strstr(g.detail, "cannot connect") != NULL);
        ASSERT(rl__now_us() - t0 < 1500 * 1000);
        ASSERT(rl__aconn_broken(c));
        rl__aconn_close(c);
        rl__url_free(&u);
    }
    th_server_stop(s);
}

/* A server that stops answering (SIGSTOP): every pending request gets
 * REDISLOCK_ETIMEDOUT by its deadline (the 300 ms command timeout, plus
 * the loop's slack), not later. */
void test_aconn_paused_server_times_out(void)
{
    th_server *s = th_server_start(NULL);
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1};
    rl__url u;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 300, &lp);
    int64_t t0;

    send_incr(c, &g, 1);
    run(c, &lp, &g.done, 3000);
    ASSERT_EQ_INT(g.ok, 1);
    th_server_pause(s);
    t0 = rl__now_us();
    send_incr(c, &g, 10);
    run(c, &lp, &g.done, 3000);
    th_server_resume(s);
    ASSERT_EQ_INT(g.n, 11);
    ASSERT_EQ_INT(g.errs[REDISLOCK_ETIMEDOUT], 10);
    test_log("after %lld ms: %s", (long long)(g.last_us - t0) / 1000, g.detail);
    ASSERT(g.last_us - t0 >= 300 * 1000);
    ASSERT(g.last_us - t0 < 800 * 1000);
    ASSERT(strstr(g.detail, "did not answer in 300 ms") != NULL);
    ASSERT(rl__aconn_broken(c));
    ASSERT_EQ_INT(lp.what, 0);
    rl__aconn_close(c);
    rl__url_free(&u);
    th_server_stop(s);
}

/* A request sent while its connection is being made has the command
 * timeout from the connect's end, as a blocking connect and command
 * would: a paused server (whose kernel still completes the connect)
 * times it out after 300 ms, not after the 3 s connect timeout plus 300
 * ms, as it did until 2026-11-29. */
void test_aconn_timeout_from_connect_end(void)
{
    th_server *s = th_server_start(NULL);
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1};
    rl__conn_cfg cfg = {0};
    rl__aconn_ops ops = {watch, NULL, &lp};
    rl__aconn *c = NULL;
    rl__url u;
    int64_t t0;

    ASSERT_OK(rl__url_parse(s->unix_url, &u));
    cfg.url = &u;
    cfg.connect_timeout_ms = 3000;
    cfg.command_timeout_ms = 300;
    th_server_pause(s);
    t0 = rl__now_us();
    ASSERT_OK(rl__aconn_open(&cfg, &ops, &c));
    send_incr(c, &g, 1);
    run(c, &lp, &g.done, 6000);
    th_server_resume(s);
    ASSERT_EQ_INT(g.errs[REDISLOCK_ETIMEDOUT], 1);
    test_log("after %lld ms: %s", (long long)(g.last_us - t0) / 1000, g.detail);
    ASSERT(strstr(g.detail, "did not answer in 300 ms") != NULL);
    ASSERT(g.last_us - t0 >= 300 * 1000);
    ASSERT(g.last_us - t0 < 2000 * 1000);
    rl__aconn_close(c);
    rl__url_free(&u);
    th_server_stop(s);
}

/* A connect that never completes (a blackholed port): requests get
 * REDISLOCK_ETIMEDOUT at the connect timeout, also after a spurious
 * event. */
void test_aconn_connect_times_out(void)
{
    int port = 0, filler = -1, l = th_blackhole(&port, &filler);
    char url[64];
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1};
    rl__url u;
    rl__aconn *c;
    int64_t t0 = rl__now_us();

    ASSERT(l >= 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    c = open_url(url, &u, NULL, 200, &lp);
    send_incr(c, &g, 2);
    /* An event the socket did not have (a loop that reports a reused fd's
     * old event, say) must not pass for the end of the connect. */
    rl__aconn_io(c, RL_WATCH_READ | RL_WATCH_WRITE);
    run(c, &lp, &g.done, 3000);
    ASSERT_EQ_INT(g.errs[REDISLOCK_ETIMEDOUT], 2);
    test_log("after %lld ms: %s", (long long)(g.last_us - t0) / 1000, g.detail);
    ASSERT(strstr(g.detail, "connecting to") != NULL);
    ASSERT(g.last_us - t0 >= 500 * 1000);
    ASSERT(g.last_us - t0 < 1200 * 1000);
    rl__aconn_close(c);
    rl__url_free(&u);
    close(l);
    close(filler);
}

/* Closing with requests in flight: from outside, every callback runs
 * with REDISLOCK_ECANCELED before close returns; from inside the third
 * callback, the rest do, and nothing is touched after (ASan, valgrind). */
void test_aconn_close_in_flight(void)
{
    th_server *s = th_server_start(NULL);
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1}, h = {.in_order = 1};
    rl__url u, u2;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 2000, &lp), *d;

    send_incr(c, &g, 50);
    rl__aconn_close(c);
    ASSERT_EQ_INT(g.n, 50);
    ASSERT_EQ_INT(g.errs[REDISLOCK_ECANCELED], 50);

    lp = (loop){-1, 0, 0};
    d = open_url(s->unix_url, &u2, NULL, 2000, &lp);
    h.close_at = d;
    h.close_n = 3;
    send_incr(d, &h, 50);
    /* Run by hand: d is gone once the callbacks close it. */
    while (!h.done) {
        struct pollfd p = {lp.fd, POLLIN | POLLOUT, 0};

        ASSERT(poll(&p, 1, 2000) > 0);
        rl__aconn_io(d, (lp.what & RL_WATCH_READ && p.revents & POLLIN
                             ? RL_WATCH_READ
                             : 0) |
                            (lp.what & RL_WATCH_WRITE && p.revents & POLLOUT
                                 ? RL_WATCH_WRITE
                                 : 0));
    }
    ASSERT_EQ_INT(h.n, 50);
    ASSERT_EQ_INT(h.ok, 3);
    ASSERT_EQ_INT(h.errs[REDISLOCK_ECANCELED], 47);
    ASSERT_EQ_INT(lp.what, 0);
    rl__url_free(&u);
    rl__url_free(&u2);
    th_server_stop(s);
}

/* A server killed with requests in flight: each gets REDISLOCK_EIO with
 * a detail that names the server (a reset or a close, as the kernel has
 * it), and the loop is told to stop watching. */
void test_aconn_server_killed_mid_flight(void)
{
    th_server *s = th_server_start(NULL);
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1};
    rl__url u;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 5000, &lp);

    send_incr(c, &g, 1);
    run(c, &lp, &g.done, 3000);
    ASSERT_EQ_INT(g.ok, 1);
    /* Stopped first, so that the requests are surely in flight. */
    th_server_pause(s);
    send_incr(c, &g, 10);
    run(c, &lp, &g.done, 50);
    ASSERT_EQ_INT(g.n, 1);
    th_server_kill(s);
    run(c, &lp, &g.done, 3000);
    ASSERT_EQ_INT(g.n, 11);
    ASSERT_EQ_INT(g.errs[REDISLOCK_EIO], 10);
    test_log("%s", g.detail);
    ASSERT(strstr(g.detail, s->sock) != NULL);
    ASSERT_EQ_INT(lp.what, 0);
    ASSERT(rl__aconn_broken(c));
    rl__aconn_close(c);
    rl__url_free(&u);
    th_server_stop(s);
}

/* A request written to a socket the server has closed: EPIPE, which
 * raises SIGPIPE, whose default action would kill the process. Here the
 * default action stands: the request must end with REDISLOCK_EIO and the
 * process live on. The loop is told of both the write and the end of
 * file at once, and a unix socket refuses the write at once. */
void test_aconn_write_after_server_closed_no_sigpipe(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    loop lp = {-1, 0, 0};
    got g = {.in_order = 1};
    rl__url u;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 5000, &lp);
    void (*was)(int) = signal(SIGPIPE, SIG_DFL);

    send_incr(c, &g, 1);
    run(c, &lp, &g.done, 3000);
    ASSERT_EQ_INT(g.ok, 1);
    ASSERT_EQ_INT(th_cmd_int(r, "CLIENT KILL TYPE normal SKIPME yes"), 1);
    usleep(50000);
    send_incr(c, &g, 2);
    rl__aconn_io(c, RL_WATCH_READ | RL_WATCH_WRITE);
    run(c, &lp, &g.done, 3000);
    ASSERT_EQ_INT(g.n, 3);
    ASSERT_EQ_INT(g.errs[REDISLOCK_EIO], 2);
    test_log("%s", g.detail);
    rl__aconn_close(c);
    signal(SIGPIPE, was);
    rl__url_free(&u);
    redisFree(r);
    th_server_stop(s);
}

/* Requests sent from callbacks, as a lock's next step is sent from its
 * last reply: a chain of 200 runs to its end in order. */
typedef struct chain {
    rl__aconn *c;
    int left, ok, done;
} chain;

static void chain_step(void *arg, redislock_err err, const rl__reply *r)
{
    static const char *const argv[] = {"INCR", "aconn:chain"};
    chain *ch = arg;

    if (err != REDISLOCK_OK || r->type != REDIS_REPLY_INTEGER ||
        r->integer != ch->ok + 1) {
        ch->done = 1;
        return;
    }
    ch->ok++;
    if (--ch->left == 0 || rl__aconn_send(ch->c, 2, (const char **)argv, NULL,
                                          chain_step, ch) != REDISLOCK_OK)
        ch->done = 1;
}

void test_aconn_send_from_callback(void)
{
    static const char *const argv[] = {"INCR", "aconn:chain"};
    th_server *s = th_server_start(NULL);
    loop lp = {-1, 0, 0};
    rl__url u;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 2000, &lp);
    chain ch = {c, 200, 0, 0};

    ASSERT_OK(rl__aconn_send(c, 2, (const char **)argv, NULL, chain_step, &ch));
    run(c, &lp, &ch.done, 10000);
    ASSERT_EQ_INT(ch.ok, 200);
    ASSERT_EQ_INT(rl__aconn_pending(c), 0);
    rl__aconn_close(c);
    rl__url_free(&u);
    th_server_stop(s);
}

/* A script request on the loop (rl__request_send_async): its own copy of
 * the keys and arguments, and the one NOSCRIPT fallback. */
typedef struct echo {
    int n, done, want, bad;
    char expect[10][8];
} echo;

static void on_echo(void *arg, redislock_err err, const rl__reply *r)
{
    echo *e = arg;
    int i;

    e->n++;
    e->done = e->n == e->want;
    if (err != REDISLOCK_OK || r->type != REDIS_REPLY_ARRAY ||
        r->elements != 2 || r->element[0]->len != 3 ||
        memcmp(r->element[0]->str, "a\0b", 3) != 0) {
        e->bad++;
        return;
    }
    /* Each reply names its request: one expected value, used once. */
    for (i = 0; i < e->want; i++)
        if (strcmp(e->expect[i], r->element[1]->str) == 0) {
            e->expect[i][0] = '\0';
            return;
        }
    e->bad++;
}

void test_aconn_script_noscript_fallback(void)
{
    static const char src[] = "return {KEYS[1], ARGV[1]}";
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    redisReply *sha = th_cmd(r, "SCRIPT LOAD %s", src), *st;
    rl__script sc = {"echo", sha->str, src, 0, NULL, 0, NULL, 0, NULL};
    loop lp = {-1, 0, 0};
    echo e = {0};
    rl__url u;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 2000, &lp);
    char key[3] = {'a', '\0', 'b'}, arg[8];
    const char *keys[1] = {key}, *args[1] = {arg};
    size_t klens[1] = {3}, lens[1];
    rl__request q = {0};
    static const char *pingv[1] = {"PING"};
    const rl__cmd ping = {1, pingv, NULL};
    long long acked = 99;
    int i;

    q.s = &sc;
    q.nkeys = 1;
    q.keys = keys;
    q.klens = klens;
    q.nargs = 1;
    q.args = args;
    q.lens = lens;
    freeReplyObject(th_cmd(r, "SCRIPT FLUSH"));
    freeReplyObject(th_cmd(r, "CONFIG RESETSTAT"));
    /* Ten at once, none cached: each falls back on its own; the caller's
     * buffers change after each send. */
    e.want = 10;
    for (i = 0; i < 10; i++) {
        snprintf(arg, sizeof arg, "v%d", i);
        snprintf(e.expect[i], sizeof e.expect[i], "v%d", i);
        lens[0] = strlen(arg);
        ASSERT_OK(rl__request_send_async(c, &q, on_echo, &e));
        memset(arg, 'x', sizeof arg);
    }
    run(c, &lp, &e.done, 5000);
    ASSERT_EQ_INT(e.n, 10);
    ASSERT_EQ_INT(e.bad, 0);
    st = th_cmd(r, "INFO commandstats");
    test_log("%s", strstr(st->str, "cmdstat_eval")
                       ? strstr(st->str, "cmdstat_eval")
                       : "");
    /* Each loads the script (SCRIPT LOAD before its second EVALSHA, in
     * one round trip), none sends it whole with EVAL. */
    ASSERT(strstr(st->str, "cmdstat_script|load:calls=10,") != NULL);
    ASSERT(strstr(st->str, "cmdstat_evalsha:calls=20,") != NULL);
    ASSERT(strstr(st->str, "cmdstat_eval:") == NULL);
    freeReplyObject(st);

    /* Cached now: EVALSHA alone. */
    freeReplyObject(th_cmd(r, "CONFIG RESETSTAT"));
    memset(&e, 0, sizeof e);
    e.want = 1;
    snprintf(arg, sizeof arg, "w");
    snprintf(e.expect[0], sizeof e.expect[0], "w");
    lens[0] = 1;
    ASSERT_OK(rl__request_send_async(c, &q, on_echo, &e));
    run(c, &lp, &e.done, 5000);
    ASSERT_EQ_INT(e.bad, 0);
    st = th_cmd(r, "INFO commandstats");
    ASSERT(strstr(st->str, "cmdstat_eval:") == NULL);
    ASSERT(strstr(st->str, "cmdstat_evalsha:calls=1,") != NULL);
    freeReplyObject(st);

    /* With the guard: WAIT behind the script, and again behind the
     * script sent again; one callback, once both WAITs have answered
     * (this server has no replica: 0), with the script's reply. */
    freeReplyObject(th_cmd(r, "SCRIPT FLUSH"));
    freeReplyObject(th_cmd(r, "CONFIG RESETSTAT"));
    memset(&e, 0, sizeof e);
    e.want = 1;
    snprintf(e.expect[0], sizeof e.expect[0], "w");
    q.wait_replicas = 1;
    q.wait_ms = 10;
    q.acked = &acked;
    ASSERT_OK(rl__request_send_async(c, &q, on_echo, &e));
    ASSERT_EQ_INT(rl__aconn_pending(c), 2);
    run(c, &lp, &e.done, 5000);
    ASSERT_EQ_INT(e.n, 1);
    ASSERT_EQ_INT(e.bad, 0);
    ASSERT_EQ_INT(acked, 0);
    ASSERT_EQ_INT(rl__aconn_pending(c), 0);
    st = th_cmd(r, "INFO commandstats");
    ASSERT(strstr(st->str, "cmdstat_script|load:calls=1,") != NULL);
    ASSERT(strstr(st->str, "cmdstat_evalsha:calls=2,") != NULL);
    ASSERT(strstr(st->str, "cmdstat_wait:calls=2,") != NULL);
    freeReplyObject(st);

    /* A command before the script (a fair release's PING): sent first,
     * its reply dropped, the script's reply to the callback. A request
     * that is neither a script nor one command is refused, not half
     * sent. */
    freeReplyObject(th_cmd(r, "CONFIG RESETSTAT"));
    memset(&e, 0, sizeof e);
    e.want = 1;
    snprintf(e.expect[0], sizeof e.expect[0], "w");
    q.wait_replicas = 0;
    q.first = &ping;
    ASSERT_OK(rl__request_send_async(c, &q, on_echo, &e));
    ASSERT_EQ_INT(rl__aconn_pending(c), 2);
    run(c, &lp, &e.done, 5000);
    ASSERT_EQ_INT(e.n, 1);
    ASSERT_EQ_INT(e.bad, 0);
    st = th_cmd(r, "INFO commandstats");
    ASSERT(strstr(st->str, "cmdstat_ping:calls=1,") != NULL);
    freeReplyObject(st);
    memset(&q, 0, sizeof q);
    ASSERT_ERR(rl__request_send_async(c, &q, on_echo, &e), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(rl__aconn_pending(c), 0);
    rl__aconn_close(c);
    rl__url_free(&u);
    freeReplyObject(sha);
    redisFree(r);
    th_server_stop(s);
}

/* A server that misbehaves: a reply nobody asked for (two for one
 * request), a greeting before any request, and a first reply that is not
 * RESP. Each ends the connection, for the requests pending and for any
 * sent later, never with an abort of the process (hiredis's async API
 * asserts on the first two): REDISLOCK_EPROTOCOL, or for the last
 * REDISLOCK_ECONNECT, "not a Redis server", as the constructors say. */
void test_aconn_bad_server_replies(void)
{
    static const fs_rule extra[] = {FS_ALWAYS("PING", "+PONG\r\n+PONG\r\n")};
    static const fs_rule junk[] = {FS_ALWAYS("PING", "HTTP/1.1 400 Bad\r\n")};
    static const char *const ping[] = {"PING"};
    struct {
        const fs_rule *rules;
        const char *greeting;
        int send, want_ok;
        redislock_err want;
    } cases[3] = {{extra, NULL, 1, 1, REDISLOCK_EPROTOCOL},
                  {NULL, ":7\r\n", 0, 0, REDISLOCK_EPROTOCOL},
                  {junk, NULL, 3, 0, REDISLOCK_ECONNECT}};
    int i, k, never = 0;

    for (i = 0; i < 3; i++) {
        fs_server *fs =
            fs_start(cases[i].rules, cases[i].rules ? 1 : 0, cases[i].greeting);
        loop lp = {-1, 0, 0};
        got g = {.in_order = 1};
        rl__url u;
        rl__aconn *c = open_url(fs->unix_url, &u, NULL, 1000, &lp);
        int64_t end = rl__now_us() + 3000 * 1000;

        g.want = cases[i].send;
        for (k = 0; k < cases[i].send; k++)
            ASSERT_OK(
                rl__aconn_send(c, 1, (const char **)ping, NULL, on_reply, &g));
        /* Until the connection ends (the first case's answer comes first). */
        while (!rl__aconn_broken(c) && rl__now_us() < end)
            run(c, &lp, &never, 20);
        ASSERT(rl__aconn_broken(c));
        ASSERT_EQ_INT(g.n, cases[i].send);
        ASSERT_EQ_INT(g.ok, cases[i].want_ok);
        ASSERT_EQ_INT(g.errs[cases[i].want], cases[i].send - g.ok);
        ASSERT_ERR(
            rl__aconn_send(c, 1, (const char **)ping, NULL, on_reply, &g),
            cases[i].want);
        if (cases[i].want == REDISLOCK_ECONNECT)
            ASSERT(strstr(redislock_errdetail(), "not a Redis server: it "
                                                 "answered \"HTTP/1.1 400 "
                                                 "Bad\"") != NULL);
        test_log("case %d: %s", i, redislock_errdetail());
        ASSERT_EQ_INT(lp.what, 0);
        rl__aconn_close(c);
        rl__url_free(&u);
        fs_stop(fs);
    }
}

/* The never-ending replies (fs_floods): the connection fails with
 * REDISLOCK_EPROTOCOL (or ENOMEM from the elements' bound) once it holds more
 * than any reply of the library's can be, long before its command timeout,
 * which without the bound ends it (ETIMEDOUT) after reading all it could: 176
 * MB more peak RSS on 2026-11-29. */
void test_aconn_stream_bounded(void)
{
    static const char *const ping[] = {"PING"};
    const fs_flood *floods = fs_floods;
    size_t i;

    for (i = 0; i < FS_NFLOODS; i++) {
        fs_rule rules[] = {{NULL, floods[i].head, FS_STREAM, floods[i].mib, 0,
                            floods[i].fill}};
        fs_server *fs = fs_start(rules, 1, NULL);
        loop lp = {-1, 0, 0};
        got g = {.in_order = 1, .want = 1};
        rl__url u;
        rl__aconn *c = open_url(fs->unix_url, &u, NULL, 20000, &lp);

        ASSERT_OK(
            rl__aconn_send(c, 1, (const char **)ping, NULL, on_reply, &g));
        run(c, &lp, &g.done, 25000);
        test_log("%.*s + %d MiB: %s", (int)strlen(floods[i].head) - 2,
                 floods[i].head, floods[i].mib, g.detail);
        ASSERT_EQ_INT(g.n, 1);
        /* The elements' bound (rl__conn_limit_reader) may come first:
         * ENOMEM, as for the blocking calls. Never the timeout. */
        ASSERT_EQ_INT(g.errs[REDISLOCK_EPROTOCOL] + g.errs[REDISLOCK_ENOMEM],
                      1);
        rl__aconn_close(c);
        rl__url_free(&u);
        fs_stop(fs);
    }
}

/* A subscriber connection: confirmation, messages in order per channel
 * (a binary channel name too), unsubscribe, and the end when the server
 * goes. */
typedef struct listener {
    int confirmed, messages, ended, bad;
    redislock_err end_err;
    int next; /* the payload expected next: "m<next>" */
} listener;

static void on_message(void *arg, redislock_err err, const rl__reply *r)
{
    listener *ls = arg;
    char want[16];

    if (err != REDISLOCK_OK) {
        ls->ended++;
        ls->end_err = err;
        return;
    }
    if (r == NULL) {
        ls->confirmed++;
        return;
    }
    snprintf(want, sizeof want, "m%d", ls->next++);
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0)
        ls->bad++;
    ls->messages++;
}

void test_aconn_subscribe_messages(void)
{
    static const char chb[4] = {'c', 'h', '\0', 'b'};
    static const char *const ping[] = {"PING"};
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    loop lp = {-1, 0, 0};
    listener a = {0}, b = {0}, q = {0};
    rl__url u;
    rl__aconn *c = open_url(s->unix_url, &u, NULL, 2000, &lp);
    int i, both = 0;

    ASSERT_OK(rl__aconn_subscribe(c, "ch:a", 4, 0, on_message, &a));
    ASSERT_OK(rl__aconn_subscribe(c, chb, 4, 0, on_message, &b));
    ASSERT_ERR(rl__aconn_subscribe(c, "ch:a", 4, 0, on_message, &a),
               REDISLOCK_EINVAL);
    ASSERT_ERR(rl__aconn_send(c, 1, (const char **)ping, NULL, on_reply, &a),
               REDISLOCK_EINVAL);
    /* Subscribed, then unsubscribed before the server confirmed. */
    ASSERT_OK(rl__aconn_subscribe(c, "ch:q", 4, 0, on_message, &q));
    ASSERT_OK(rl__aconn_unsubscribe(c, "ch:q", 4));
    while (!(a.confirmed && b.confirmed && q.ended)) {
        both = 0;
        run(c, &lp, &both, 20);
        ASSERT(!rl__aconn_broken(c));
    }
    ASSERT_EQ_INT(q.confirmed, 0);
    ASSERT_EQ_INT(q.end_err, REDISLOCK_ECANCELED);
    for (i = 0; i < 100; i++)
        freeReplyObject(th_cmd(r, "PUBLISH ch:a m%d", i));
    for (i = 0; i < 50; i++)
        freeReplyObject(th_cmd(r, "PUBLISH %b m%d", chb, (size_t)4, i));
    while (a.messages < 100 || b.messages < 50) {
        both = 0;
        run(c, &lp, &both, 20);
        ASSERT(!rl__aconn_broken(c));
    }
    ASSERT_EQ_INT(a.bad + b.bad, 0);

    /* Unsubscribed from ch:a: its end, and nothing more for it. */
    ASSERT_OK(rl__aconn_unsubscribe(c, "ch:a", 4));
    ASSERT_ERR(rl__aconn_unsubscribe(c, "ch:a", 4), REDISLOCK_EINVAL);
    while (!a.ended) {
        both = 0;
        run(c, &lp, &both, 20);
    }
    ASSERT_EQ_INT(a.end_err, REDISLOCK_ECANCELED);
    freeReplyObject(th_cmd(r, "PUBLISH ch:a m100"));
    freeReplyObject(th_cmd(r, "PUBLISH %b m50", chb, (size_t)4));
    while (b.messages < 51) {
        both = 0;
        run(c, &lp, &both, 20);
    }
    ASSERT_EQ_INT(a.messages, 100);

    /* The server goes: ch:b hears it once. */
    redisFree(r);
    th_server_kill(s);
    while (!b.ended) {
        both = 0;
        run(c, &lp, &both, 20);
    }
    ASSERT_EQ_INT(b.ended, 1);
    ASSERT_EQ_INT(b.end_err, REDISLOCK_EIO);
    ASSERT_EQ_INT(a.ended + q.ended, 2);
    rl__aconn_close(c);
    rl__url_free(&u);
    th_server_stop(s);
}

/* A channel the user's ACL does not allow: the subscription ends with
 * REDISLOCK_ENOPERM, and so does the connection. */
void test_aconn_subscribe_refused(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    loop lp = {-1, 0, 0};
    listener a = {0};
    char url[128];
    rl__url u;
    rl__aconn *c;
    int never = 0;

    freeReplyObject(
        th_cmd(r, "ACL SETUSER nochan on >pw ~* +@all resetchannels"));
    snprintf(url, sizeof url, "redis://nochan:pw@127.0.0.1:%d", s->port);
    c = open_url(url, &u, "pw", 2000, &lp);
    ASSERT_OK(rl__aconn_subscribe(c, "ch:x", 4, 0, on_message, &a));
    while (!a.ended)
        run(c, &lp, &never, 20);
    test_log("%s", redislock_errdetail());
    ASSERT_EQ_INT(a.confirmed, 0);
    ASSERT_EQ_INT(a.end_err, REDISLOCK_ENOPERM);
    ASSERT(rl__aconn_broken(c));
    rl__aconn_close(c);
    rl__url_free(&u);
    redisFree(r);
    th_server_stop(s);
}

/* A cluster node drops the shard channels of a slot that moved: an
 * unsubscribe nobody asked for ends that subscription with
 * REDISLOCK_ETRYLATER, and the connection goes on. */
void test_aconn_subscription_dropped_by_server(void)
{
    static const fs_rule rules[] = {FS_ALWAYS(
        "SSUBSCRIBE", "*3\r\n$10\r\nssubscribe\r\n$4\r\nch:s\r\n:1\r\n"
                      "*3\r\n$8\r\nsmessage\r\n$4\r\nch:s\r\n$2\r\nm0\r\n"
                      "*3\r\n$12\r\nsunsubscribe\r\n$4\r\nch:s\r\n:0\r\n")};
    fs_server *fs = fs_start(rules, 1, NULL);
    loop lp = {-1, 0, 0};
    listener a = {0};
    rl__url u;
    rl__aconn *c = open_url(fs->unix_url, &u, NULL, 2000, &lp);
    int never = 0;
    int64_t end = rl__now_us() + 3000 * 1000;

    ASSERT_OK(rl__aconn_subscribe(c, "ch:s", 4, 1, on_message, &a));
    while (!a.ended && rl__now_us() < end)
        run(c, &lp, &never, 20);
    test_log("%s", redislock_errdetail());
    ASSERT_EQ_INT(a.confirmed, 1);
    ASSERT_EQ_INT(a.messages, 1);
    ASSERT_EQ_INT(a.ended, 1);
    ASSERT_EQ_INT(a.end_err, REDISLOCK_ETRYLATER);
    ASSERT(!rl__aconn_broken(c));
    ASSERT_ERR(rl__aconn_unsubscribe(c, "ch:s", 4), REDISLOCK_EINVAL);
    rl__aconn_close(c);
    rl__url_free(&u);
    fs_stop(fs);
}

/* An unsubscribe before the subscription was even confirmed is nonsense
 * (found by fuzz_aconn: it freed the channel its pending subscribe still
 * named): the connection ends with REDISLOCK_EPROTOCOL, and the channel
 * hears its end once. */
void test_aconn_unsubscribe_before_confirmation(void)
{
    static const fs_rule rules[] = {
        FS_ALWAYS("SUBSCRIBE", "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n"
                               "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")};
    fs_server *fs = fs_start(rules, 1, NULL);
    loop lp = {-1, 0, 0};
    listener a = {0};
    rl__url u;
    rl__aconn *c = open_url(fs->unix_url, &u, NULL, 2000, &lp);
    int never = 0;
    int64_t end = rl__now_us() + 3000 * 1000;

    ASSERT_OK(rl__aconn_subscribe(c, "a", 1, 0, on_message, &a));
    while (!a.ended && rl__now_us() < end)
        run(c, &lp, &never, 20);
    test_log("%s", redislock_errdetail());
    ASSERT_EQ_INT(a.confirmed, 0);
    ASSERT_EQ_INT(a.ended, 1);
    ASSERT_EQ_INT(a.end_err, REDISLOCK_EPROTOCOL);
    ASSERT(rl__aconn_broken(c));
    rl__aconn_close(c);
    ASSERT_EQ_INT(a.ended, 1);
    rl__url_free(&u);
    fs_stop(fs);
}

/* The replies to a test's large request and those behind it: integers
 * as they are, a status as -1. */
typedef struct bigs {
    int n, done, want;
    long long v[3];
    redislock_err err;
} bigs;

static void on_big(void *arg, redislock_err err, const rl__reply *r)
{
    bigs *b = arg;

    if (err != REDISLOCK_OK)
        b->err = err;
    else if (b->n < 3)
        b->v[b->n] = r->type == REDIS_REPLY_INTEGER  ? r->integer
                     : r->type == REDIS_REPLY_STATUS ? -1
                                                     : -2;
    b->n++;
    b->done = b->n == b->want;
}

/* A request larger than the socket takes at once (16 MB), over TCP and
 * the unix socket: the rest of it waits for writability and goes in
 * parts, then the buffer is emptied for what follows; twice per
 * connection, the second after the large buffer was given back. The
 * server gets it whole and runs the requests behind it. */
void test_aconn_large_request_written_in_parts(void)
{
    th_server *s = th_server_start(NULL);
    const char *urls[2] = {s->tcp_url, s->unix_url};
    const size_t big = 16 << 20;
    char *v = malloc(big);
    const char *set[3] = {"SET", "aconn:big", v};
    const size_t setl[3] = {3, 9, big};
    const char *len[2] = {"STRLEN", "aconn:big"};
    const char *incr[2] = {"INCR", "aconn:after"};
    int i, k;

    ASSERT(v != NULL);
    memset(v, 'v', big);
    for (i = 0; i < 2; i++) {
        loop lp = {-1, 0, 0};
        rl__url u;
        rl__aconn *c = open_url(urls[i], &u, NULL, 5000, &lp);

        for (k = 0; k < 2; k++) {
            bigs b = {.want = 3};

            /* Connected by the second, and the server stopped, so that
             * nothing drains the socket while it is written: what it
             * did not take at once waits for writability. */
            if (k == 1)
                th_server_pause(s);
            ASSERT_OK(rl__aconn_send(c, 3, set, setl, on_big, &b));
            ASSERT_OK(rl__aconn_send(c, 2, len, NULL, on_big, &b));
            ASSERT_OK(rl__aconn_send(c, 2, incr, NULL, on_big, &b));
            if (k == 1) {
                th_server_resume(s);
                ASSERT(lp.what & RL_WATCH_WRITE);
            }
            run(c, &lp, &b.done, 5000);
            ASSERT_EQ_INT(b.err, REDISLOCK_OK);
            ASSERT_EQ_INT(b.n, 3);
            ASSERT_EQ_INT(b.v[0], -1);
            ASSERT_EQ_INT(b.v[1], big);
            ASSERT_EQ_INT(b.v[2], 2 * i + k + 1);
            ASSERT_EQ_INT(rl__aconn_pending(c), 0);
        }
        rl__aconn_close(c);
        rl__url_free(&u);
    }
    free(v);
    th_server_stop(s);
}
