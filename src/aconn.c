/*
 * A non-blocking connection over hiredis's async API (see aconn.h).
 *
 * hiredis owns the socket, the output buffer and the reply parser; it
 * answers requests in the order they were sent, and when the connection
 * ends for any reason it calls every pending request's callback with no
 * reply and then its cleanup hook, before it frees the context. So this
 * module keeps its requests in a FIFO that mirrors hiredis's (for their
 * deadlines), records why a connection ends before it lets hiredis end
 * it, and learns that the context is gone from the cleanup hook. Calls
 * into hiredis are counted (depth), so that a connection closed from
 * inside a callback is freed only once hiredis has let go of it.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <async.h>

#include "aconn.h"
#include "clock.h"
#include "error.h"

/* One request in flight. */
typedef struct rl__areq {
    rl__aconn *c;
    rl__aconn_cb cb; /* NULL: a handshake command */
    void *arg;
    int hello; /* the handshake command's index, or -1 */
    int64_t deadline_us;
    struct rl__areq *next;
} rl__areq;

struct rl__aconn {
    redisAsyncContext *ac; /* NULL once hiredis has freed it */
    rl__conn_cfg cfg;
    rl__aconn_ops ops;
    rl__hello hello;
    int fd;
    int watching; /* what ops.watch was last told */
    int connected;
    int freeing; /* redisAsyncFree was called */
    int closing; /* rl__aconn_close was called */
    int depth;   /* calls into hiredis under way */
    int64_t connect_deadline_us;
    rl__areq *head, *tail;
    int pending;
    redislock_err fail; /* why it ended (REDISLOCK_OK: it has not) */
    char why[300];
};

static void set_fail(rl__aconn *c, redislock_err err, const char *fmt, ...)
{
    va_list ap;

    if (c->fail != REDISLOCK_OK)
        return;
    c->fail = err;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}

static const char *where(const rl__aconn *c, char *buf, size_t len)
{
    return rl__conn_endpoint(c->cfg.url, buf, len);
}

/* hiredis's event hooks: what to watch goes to the loop. */
static void want(rl__aconn *c, int bit, int on)
{
    int w = on ? c->watching | bit : c->watching & ~bit;

    if (w != c->watching) {
        c->watching = w;
        c->ops.watch(c->ops.ctx, c->fd, w);
    }
}

static void add_read(void *p)
{
    want(p, RL_WATCH_READ, 1);
}

static void del_read(void *p)
{
    want(p, RL_WATCH_READ, 0);
}

static void add_write(void *p)
{
    want(p, RL_WATCH_WRITE, 1);
}

static void del_write(void *p)
{
    want(p, RL_WATCH_WRITE, 0);
}

/* The context is being freed (its pending callbacks have run). */
static void cleanup(void *p)
{
    rl__aconn *c = p;

    if (c->watching != 0) {
        c->watching = 0;
        c->ops.watch(c->ops.ctx, c->fd, 0);
    }
    c->ac = NULL;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    rl__aconn *c = ac->data;
    char buf[300];

    if (status == REDIS_OK) {
        c->connected = 1;
        return;
    }
    /* hiredis frees the context next. */
    set_fail(c, REDISLOCK_ECONNECT, "cannot connect to %s: %s",
             where(c, buf, sizeof buf), ac->errstr);
}

/* Ends the connection now with err: pending requests hear of it. */
static void end(rl__aconn *c)
{
    if (c->ac == NULL || c->freeing)
        return;
    c->freeing = 1;
    c->depth++;
    redisAsyncFree(c->ac);
    c->depth--;
}

/* Frees c once it is closed and hiredis is done with it. */
static void maybe_free(rl__aconn *c)
{
    if (c->closing && c->depth == 0 && c->ac == NULL)
        free(c);
}

/* Why a connection without a recorded failure ended: hiredis's error. */
static void note_hiredis_error(rl__aconn *c, const redisAsyncContext *ac)
{
    char buf[300];

    switch (ac->err) {
    case REDIS_ERR_EOF:
        set_fail(c, REDISLOCK_EIO, "%s closed the connection",
                 where(c, buf, sizeof buf));
        break;
    case REDIS_ERR_PROTOCOL:
        set_fail(c, REDISLOCK_EPROTOCOL, "bad reply from %s: %s",
                 where(c, buf, sizeof buf), ac->errstr);
        break;
    case REDIS_ERR_OOM:
        set_fail(c, REDISLOCK_ENOMEM, "out of memory reading from %s",
                 where(c, buf, sizeof buf));
        break;
    default:
        set_fail(c, REDISLOCK_EIO, "connection to %s failed: %s",
                 where(c, buf, sizeof buf),
                 ac->errstr[0] ? ac->errstr : "I/O error");
    }
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    rl__areq *q = privdata;
    rl__aconn *c = q->c;
    redislock_err err;

    /* hiredis answers in order: q is the head. */
    c->head = q->next;
    if (c->head == NULL)
        c->tail = NULL;
    c->pending--;
    if (reply == NULL) {
        note_hiredis_error(c, ac);
        rl__err(c->fail, "%s", c->why);
        if (q->cb != NULL)
            q->cb(q->arg, c->fail, NULL);
    } else if (q->cb == NULL) {
        err = rl__conn_hello_check(&c->cfg, &c->hello, q->hello, reply);
        if (err != REDISLOCK_OK) {
            set_fail(c, err, "%s", redislock_errdetail());
            end(c); /* deferred by hiredis until this returns */
        }
    } else {
        q->cb(q->arg, REDISLOCK_OK, reply);
    }
    free(q);
}

static redislock_err queue(rl__aconn *c, int argc, const char **argv,
                           const size_t *lens, rl__aconn_cb cb, void *arg,
                           int hello)
{
    rl__areq *q;
    size_t own[16];
    int64_t from = rl__now_us();
    int st;
    int i;

    if (c->fail != REDISLOCK_OK)
        return rl__err(c->fail, "%s", c->why);
    if (c->closing || c->ac == NULL)
        return rl__err(REDISLOCK_ECANCELED, "the connection is closed");
    if (lens == NULL) {
        if (argc > (int)(sizeof own / sizeof own[0]))
            return rl__err(REDISLOCK_EINVAL, "too many arguments");
        for (i = 0; i < argc; i++)
            own[i] = strlen(argv[i]);
        lens = own;
    }
    if ((q = calloc(1, sizeof *q)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory sending a command");
    q->c = c;
    q->cb = cb;
    q->arg = arg;
    q->hello = hello;
    /* Behind a connect under way, a request's time starts with the
     * connection. Requests share the command timeout, so their deadlines
     * come in the order they were sent. */
    if (!c->connected && c->connect_deadline_us > from)
        from = c->connect_deadline_us;
    q->deadline_us = from + c->cfg.command_timeout_ms * 1000;
    if (c->tail != NULL && q->deadline_us < c->tail->deadline_us)
        q->deadline_us = c->tail->deadline_us;
    c->depth++;
    st = redisAsyncCommandArgv(c->ac, on_reply, q, argc, argv, lens);
    c->depth--;
    if (st != REDIS_OK) {
        free(q);
        return rl__err(REDISLOCK_EIO, "cannot send a command: %s",
                       c->ac != NULL && c->ac->errstr[0] ? c->ac->errstr
                                                         : "closing");
    }
    if (c->tail != NULL)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    c->pending++;
    return REDISLOCK_OK;
}

redislock_err rl__aconn_open(const rl__conn_cfg *cfg, const rl__aconn_ops *ops,
                             rl__aconn **out)
{
    rl__aconn *c;
    redisAsyncContext *ac;
    char buf[300];
    int i;

    *out = NULL;
    if (cfg->tls != NULL)
        return rl__err(REDISLOCK_ENOTLS,
                       "TLS (rediss://) is not yet available on an event "
                       "loop; use the blocking API for %s",
                       rl__conn_endpoint(cfg->url, buf, sizeof buf));
    if ((c = calloc(1, sizeof *c)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    c->cfg = *cfg;
    c->ops = *ops;
    ac = cfg->url->path != NULL
             ? redisAsyncConnectUnix(cfg->url->path)
             : redisAsyncConnect(cfg->url->host, cfg->url->port);
    if (ac == NULL) {
        free(c);
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    }
    c->ac = ac;
    c->fd = ac->c.fd;
    ac->data = c;
    c->connect_deadline_us = rl__now_us() + cfg->connect_timeout_ms * 1000;
    if (ac->err != 0) {
        /* Refused at once (a unix socket nobody listens on): requests
         * hear of it. */
        set_fail(c, REDISLOCK_ECONNECT, "cannot connect to %s: %s",
                 where(c, buf, sizeof buf), ac->errstr);
        redisAsyncFree(ac);
        c->ac = NULL;
        *out = c;
        return REDISLOCK_OK;
    }
    /* A child the caller runs must not inherit the socket. */
    fcntl(c->fd, F_SETFD, fcntl(c->fd, F_GETFD) | FD_CLOEXEC);
    rl__conn_limit_reader(ac->c.reader);
    ac->ev.data = c;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    redisAsyncSetConnectCallback(ac, on_connect);
    /* The socket's first writability says the connect is done. */
    want(c, RL_WATCH_WRITE, 1);
    rl__conn_hello(&c->cfg, &c->hello);
    for (i = 0; i < c->hello.n; i++) {
        redislock_err err = queue(c, c->hello.cmds[i].argc,
                                  c->hello.cmds[i].argv, NULL, NULL, NULL, i);
        if (err != REDISLOCK_OK) {
            rl__aconn_close(c);
            return err;
        }
    }
    *out = c;
    return REDISLOCK_OK;
}

redislock_err rl__aconn_send(rl__aconn *c, int argc, const char **argv,
                             const size_t *lens, rl__aconn_cb cb, void *arg)
{
    if (cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "a request needs a callback");
    return queue(c, argc, argv, lens, cb, arg, -1);
}

void rl__aconn_io(rl__aconn *c, int what)
{
    c->depth++;
    if (c->ac != NULL && (what & RL_WATCH_READ))
        redisAsyncHandleRead(c->ac);
    if (c->ac != NULL && (what & RL_WATCH_WRITE))
        redisAsyncHandleWrite(c->ac);
    c->depth--;
    maybe_free(c);
}

int64_t rl__aconn_deadline(const rl__aconn *c)
{
    int64_t d = c->head != NULL ? c->head->deadline_us : 0;

    if (c->ac != NULL && !c->connected &&
        (d == 0 || c->connect_deadline_us < d))
        d = c->connect_deadline_us;
    return c->ac != NULL ? d : 0;
}

void rl__aconn_tick(rl__aconn *c)
{
    int64_t d = rl__aconn_deadline(c);
    char buf[300];

    if (d == 0 || rl__now_us() < d)
        return;
    if (!c->connected)
        set_fail(
            c, REDISLOCK_ETIMEDOUT, "connecting to %s: no answer in %lld ms",
            where(c, buf, sizeof buf), (long long)c->cfg.connect_timeout_ms);
    else
        set_fail(c, REDISLOCK_ETIMEDOUT, "%s did not answer in %lld ms",
                 where(c, buf, sizeof buf),
                 (long long)c->cfg.command_timeout_ms);
    end(c);
    maybe_free(c);
}

int rl__aconn_pending(const rl__aconn *c)
{
    return c->pending;
}

int rl__aconn_broken(const rl__aconn *c)
{
    return c->fail != REDISLOCK_OK || c->ac == NULL;
}

void rl__aconn_close(rl__aconn *c)
{
    if (c == NULL || c->closing)
        return;
    c->closing = 1;
    set_fail(c, REDISLOCK_ECANCELED, "the connection was closed");
    end(c);
    maybe_free(c);
}
