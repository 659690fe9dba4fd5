/*
 * A non-blocking connection (see aconn.h) on hiredis's non-blocking
 * primitives: a context made with redisConnect*NonBlock, commands
 * formatted into its output buffer (redisAppendCommandArgv), written and
 * read as the socket allows (redisBufferWrite, redisBufferRead), replies
 * parsed by its reader (redisGetReplyFromReader). Not on its async API,
 * which asserts when a server sends a reply nobody asked for (the library
 * never aborts) and frees replies behind its callbacks.
 *
 * Requests wait in a FIFO; the server answers in order, so each reply
 * goes to the head. However the connection ends, it is closed first and
 * then every pending request hears why, so a callback that sends or
 * closes finds it already ended. Callbacks run inside rl__aconn_io,
 * rl__aconn_tick and rl__aconn_close; calls under way are counted
 * (depth), so that a connection closed from a callback is freed when the
 * outermost call returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "aconn.h"
#include "clock.h"
#include "error.h"

/* A channel the connection listens on, or is subscribing to. */
typedef struct rl__asub {
    char *chan;
    size_t len;
    rl__aconn_cb cb;
    void *arg;
    int confirmed; /* the server confirmed it */
    int leaving;   /* its unsubscribe is on the way: messages are dropped */
    struct rl__asub *next;
} rl__asub;

/* One request in flight. */
typedef struct rl__areq {
    rl__aconn_cb cb; /* NULL: a handshake command or a (un)subscribe */
    void *arg;
    int hello;  /* the handshake command's index, or -1 */
    int admit;  /* the admission command's index, or -1 */
    char *held; /* formatted, not yet sent: admission is under way */
    size_t heldlen;
    rl__asub *sub; /* a (un)subscribe's channel, confirmed by its reply */
    int unsub;     /* an unsubscribe */
    int64_t deadline_us;
    int64_t budget_us; /* the command's timeout (and its block) */
    struct rl__areq *next;
} rl__areq;

struct rl__aconn {
    redisContext *ctx; /* NULL once the connection has ended */
    rl__conn_cfg cfg;
    rl__aconn_ops ops;
    rl__hello hello;
    rl__admit_ask ask;                /* the client's admission (conn.h) */
    int admitting;                    /* its replies have not all come */
    rl__reply *admit_r[RL_ADMIT_MAX]; /* those that came */
    int fd;
    int watching; /* what ops.watch was last told */
    int connected;
    int spoke;     /* a reply has been read: the peer speaks RESP */
    int unwritten; /* output waits in the context's buffer */
    int closing;   /* rl__aconn_close was called */
    int depth;     /* calls under way that may run callbacks */
    int64_t connect_deadline_us;
    int64_t told_deadline_us; /* what ops.deadline was last told */
    rl__areq *head, *tail;
    int pending;
    int subscriber; /* subscribed once: takes only (un)subscribes */
    int fl;         /* the socket's file status flags, once read (have_fl) */
    int have_fl;
    int64_t rcv_ms; /* the SO_RCVTIMEO set for rl__aconn_wait (0: none) */
    int sharded;    /* its channels are shard channels (SSUBSCRIBE) */
    rl__asub *subs;
    redislock_err fail; /* why it ended (REDISLOCK_OK: it has not) */
    char why[300];
    /* rediss://: the TLS session, started once the socket connects (its
     * handshake then goes on in the reads and writes); shaken once a read
     * or write that succeeded found the handshake finished (from then
     * on, what was written may have run). */
    void *ssl;
    int shaken;
};

static const char *where(const rl__aconn *c, char *buf, size_t len)
{
    return rl__conn_endpoint(c->cfg.url, buf, len);
}

/* Tells the loop what to watch now: writability while connecting or
 * while output waits, readability once connected. Over TLS a write that
 * stopped for want of the peer's answer (the handshake) waits for
 * readability instead, and one that a read stopped waits for
 * writability. */
static void rewatch(rl__aconn *c)
{
    int w = 0, rd = 0;

    if (c->ctx != NULL)
        w = !c->connected ? RL_WATCH_WRITE
                          : RL_WATCH_READ | (c->unwritten ? RL_WATCH_WRITE : 0);
    if (c->ctx != NULL && c->ssl != NULL && rl__conn_tls_wants(c->ssl, &rd))
        w = rd ? RL_WATCH_READ : RL_WATCH_READ | RL_WATCH_WRITE;
    if (w != c->watching) {
        c->watching = w;
        c->ops.watch(c->ops.ctx, c->fd, w);
    }
}

/* Ends the connection with err (the first reason given stays): closes it,
 * then every pending request hears why, in order. */
static void fail(rl__aconn *c, redislock_err err, const char *fmt, ...)
{
    va_list ap;
    rl__areq *q;
    rl__asub *sub;
    int i;

    if (c->fail == REDISLOCK_OK) {
        c->fail = err;
        va_start(ap, fmt);
        vsnprintf(c->why, sizeof c->why, fmt, ap);
        va_end(ap);
    }
    if (c->ctx != NULL) {
        if (c->watching != 0) {
            c->watching = 0;
            c->ops.watch(c->ops.ctx, c->fd, 0);
        }
        redisFree(c->ctx);
        c->ctx = NULL;
    }
    for (i = 0; i < RL_ADMIT_MAX; i++) {
        if (c->admit_r[i] != NULL)
            freeReplyObject(c->admit_r[i]);
        c->admit_r[i] = NULL;
    }
    c->admitting = 0;
    c->depth++;
    while ((q = c->head) != NULL) {
        c->head = q->next;
        if (c->head == NULL)
            c->tail = NULL;
        c->pending--;
        if (q->cb != NULL) {
            rl__err(c->fail, "%s", c->why);
            q->cb(q->arg, c->fail, NULL);
        }
        free(q->held);
        free(q);
    }
    /* Then every subscription, once. */
    while ((sub = c->subs) != NULL) {
        c->subs = sub->next;
        rl__err(c->fail, "%s", c->why);
        sub->cb(sub->arg, c->fail, NULL);
        free(sub->chan);
        free(sub);
    }
    c->depth--;
}

/* The context's I/O error, named (a TLS session the server refused, as
 * a failed connect). */
static void fail_io(rl__aconn *c)
{
    char buf[300], what[340], said[512];
    redislock_err err;

    snprintf(what, sizeof what, "connection to %s", where(c, buf, sizeof buf));
    err =
        rl__conn_tls_failed(&c->cfg, c->ctx, c->ssl, c->spoke, c->shaken, what);
    if (err == REDISLOCK_OK)
        err = rl__conn_ctx_error(c->ctx, what);
    snprintf(said, sizeof said, "%s", redislock_errdetail());
    fail(c, err, "%s", said);
}

/* Tells ops.deadline of a change of the earliest deadline. */
static void redeadline(rl__aconn *c)
{
    int64_t d;

    if (c->ops.deadline == NULL || c->closing)
        return;
    d = rl__aconn_deadline(c);
    if (d != c->told_deadline_us) {
        c->told_deadline_us = d;
        c->ops.deadline(c->ops.ctx, d);
    }
}

/* Frees c once it is closed and no call is under way. */
static void maybe_free(rl__aconn *c)
{
    if (c->closing && c->depth == 0)
        free(c);
}

static rl__asub *find_sub(const rl__aconn *c, const char *chan, size_t len)
{
    rl__asub *s;

    for (s = c->subs; s != NULL; s = s->next)
        if (s->len == len && memcmp(s->chan, chan, len) == 0)
            return s;
    return NULL;
}

/* Ends the subscription sub: its callback hears err (detail set). */
static void end_sub(rl__aconn *c, rl__asub *sub, redislock_err err)
{
    rl__asub **p;

    for (p = &c->subs; *p != NULL; p = &(*p)->next)
        if (*p == sub) {
            *p = sub->next;
            break;
        }
    sub->cb(sub->arg, err, NULL);
    free(sub->chan);
    free(sub);
}

/* The server ended a subscription of its own accord. */
static void dropped(rl__aconn *c, rl__asub *sub)
{
    char buf[300];

    rl__err(REDISLOCK_ETRYLATER,
            "%s dropped the subscription to %.*s (its slot moved): "
            "subscribe again where the key lives now",
            where(c, buf, sizeof buf), (int)(sub->len > 64 ? 64 : sub->len),
            sub->chan);
    end_sub(c, sub, REDISLOCK_ETRYLATER);
}

/* What a subscriber connection is told: 1 a message (given to its
 * channel's callback), 2 a (un)subscribe's confirmation, 0 neither. */
static int pushed(rl__aconn *c, const rl__reply *r)
{
    const rl__reply *kind, *chan;
    const char *k;
    rl__asub *s;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return 0;
    kind = r->element[0];
    chan = r->element[1];
    k = kind->str + (c->sharded && kind->len > 0 && kind->str[0] == 's');
    if (strcmp(k, "message") == 0) {
        s = find_sub(c, chan->str, chan->len);
        if (s != NULL && !s->leaving)
            s->cb(s->arg, REDISLOCK_OK, r->element[2]);
        return 1;
    }
    if (strcmp(k, "subscribe") != 0 && strcmp(k, "unsubscribe") != 0)
        return 0;
    if (c->head != NULL && c->head->sub != NULL &&
        c->head->unsub == (k[0] == 'u') && c->head->sub->len == chan->len &&
        memcmp(c->head->sub->chan, chan->str, chan->len) == 0)
        return 2;
    /* An unsubscribe nobody asked for: a cluster node drops the shard
     * channels of a slot that moved away. Only of a channel it confirmed
     * and that no request still names (else it is nonsense, for the
     * caller to fail). */
    if (k[0] == 'u' && (s = find_sub(c, chan->str, chan->len)) != NULL &&
        s->confirmed && !s->leaving) {
        dropped(c, s);
        return 1;
    }
    return 0;
}

/* An unsubscribe confirmed: the channel's callback hears it ended. */
static void unsubscribed(rl__aconn *c, rl__asub *sub)
{
    rl__err(REDISLOCK_ECANCELED, "unsubscribed");
    end_sub(c, sub, REDISLOCK_ECANCELED);
}

/* What waited for the admission goes out behind it, in order. */
static void release_held(rl__aconn *c)
{
    rl__areq *q;

    for (q = c->head; q != NULL; q = q->next) {
        if (q->held == NULL)
            continue;
        if (redisAppendFormattedCommand(c->ctx, q->held, q->heldlen) !=
            REDIS_OK) {
            fail(c, REDISLOCK_ENOMEM, "out of memory sending a command");
            return;
        }
        free(q->held);
        q->held = NULL;
        c->unwritten = 1;
    }
}

/* The reply r (now c's) to admission command i; after the last, the
 * client's verdict: the requests held go out, or the connection fails
 * with the client's reason. */
static void admitted(rl__aconn *c, int i, rl__reply *r)
{
    const rl__admit *ad = c->cfg.admit;
    redislock_err err;
    char said[512];

    c->admit_r[i] = r;
    if (i + 1 < c->ask.n)
        return;
    c->admitting = 0;
    err = ad->judge(ad->arg, &c->ask, c->admit_r);
    if (err != REDISLOCK_OK)
        snprintf(said, sizeof said, "%s", redislock_errdetail());
    for (i = 0; i < c->ask.n; i++) {
        freeReplyObject(c->admit_r[i]);
        c->admit_r[i] = NULL;
    }
    if (err != REDISLOCK_OK)
        fail(c, err, "%s", said);
    else
        release_held(c);
}

/* A reply: the head request's, or on a subscriber connection a message
 * for a channel. */
static void deliver(rl__aconn *c, rl__reply *r)
{
    rl__areq *q = c->head;
    char buf[300];
    redislock_err err;
    int push = c->subscriber ? pushed(c, r) : 0;

    if (push == 1) {
        freeReplyObject(r);
        return;
    }
    if (c->subscriber && push == 0 && q != NULL && q->sub != NULL) {
        /* Refused (an ACL without the channel, say), or not an answer to
         * it: the subscriber connection is of no more use. */
        char said[256];

        if (r->type == REDIS_REPLY_ERROR &&
            (err = rl__reply_check(r, c->sharded ? "SSUBSCRIBE"
                                                 : "SUBSCRIBE")) != 0) {
            snprintf(said, sizeof said, "%s", redislock_errdetail());
        } else {
            err = REDISLOCK_EPROTOCOL;
            snprintf(said, sizeof said,
                     "%s answered a subscription with something else",
                     where(c, buf, sizeof buf));
        }
        freeReplyObject(r);
        fail(c, err, "%s", said);
        return;
    }
    if (q == NULL) {
        freeReplyObject(r);
        fail(c, REDISLOCK_EPROTOCOL,
             "%s sent a reply nobody asked for: not a Redis server, or a "
             "proxy that mixes up connections",
             where(c, buf, sizeof buf));
        return;
    }
    c->head = q->next;
    if (c->head == NULL)
        c->tail = NULL;
    c->pending--;
    if (q->sub != NULL) {
        if (q->unsub) {
            unsubscribed(c, q->sub);
        } else {
            q->sub->confirmed = 1;
            if (!q->sub->leaving)
                q->sub->cb(q->sub->arg, REDISLOCK_OK, NULL);
        }
    } else if (q->cb != NULL) {
        q->cb(q->arg, REDISLOCK_OK, r);
    } else if (q->admit >= 0) {
        admitted(c, q->admit, r);
        r = NULL;
    } else if ((err = rl__conn_hello_check(&c->cfg, &c->hello, q->hello, r)) !=
               REDISLOCK_OK) {
        char said[256];

        snprintf(said, sizeof said, "%s", redislock_errdetail());
        fail(c, err, "%s", said);
    }
    if (r != NULL)
        freeReplyObject(r);
    free(q);
}

/* Over TLS, notes a finished handshake once a read or write succeeded:
 * a failure then may follow a request that ran. */
static void shaken(rl__aconn *c)
{
    if (c->ssl != NULL && !c->shaken)
        c->shaken = rl__conn_tls_finished(c->ssl);
}

/* Writes what the socket takes of the output waiting. A failed write
 * fails the connection when failing is set (in rl__aconn_io); else it
 * is left for the loop's next event on the socket, which meets it. */
static void write_some(rl__aconn *c, int failing)
{
    int done = 0;

    if (c->ctx == NULL || !c->connected || !c->unwritten)
        return;
    if (rl__conn_buffer_write(c->ctx, c->cfg.tls != NULL, &done) != REDIS_OK) {
        if (failing)
            fail_io(c);
        return;
    }
    if (done)
        c->unwritten = 0;
    shaken(c);
}

/* Room on the stack for a command's bytes; a longer one (a set's many
 * keys, FUNCTION LOAD) is formatted on the heap. */
#define RL_CMD_STACK 1024

/* Formats q's command into c's output, or, while the admission's replies
 * are awaited, into q->held: nothing goes out on a connection before the
 * client knows which server it reached. */
static int append(rl__aconn *c, rl__areq *q, int argc, const char **argv,
                  const size_t *lens)
{
    char stack[RL_CMD_STACK], *buf = stack;
    size_t n = rl__conn_format_room(argc, argv, lens);
    int hold = c->admitting && q->hello < 0 && q->admit < 0, st;

    if ((hold || n > sizeof stack) && (buf = malloc(n)) == NULL)
        return REDIS_ERR;
    n = rl__conn_format(buf, argc, argv, lens);
    if (hold) {
        q->held = buf;
        q->heldlen = n;
        return REDIS_OK;
    }
    st = redisAppendFormattedCommand(c->ctx, buf, n);
    if (buf != stack)
        free(buf);
    return st;
}

static redislock_err queue(rl__aconn *c, int argc, const char **argv,
                           const size_t *lens, rl__aconn_cb cb, void *arg,
                           int hello, int admit, rl__asub *sub, int unsub,
                           int64_t block_ms)
{
    rl__areq *q;
    int64_t from = rl__now_us();

    if (c->fail != REDISLOCK_OK)
        return rl__err(c->fail, "%s", c->why);
    /* Not calloc: glibc's calloc bypasses the per-thread cache. */
    if ((q = malloc(sizeof *q)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory sending a command");
    *q = (rl__areq){0};
    q->hello = hello;
    q->admit = admit;
    if (append(c, q, argc, argv, lens) != REDIS_OK) {
        free(q);
        return rl__err(REDISLOCK_ENOMEM, "out of memory sending a command");
    }
    q->cb = cb;
    q->arg = arg;
    q->sub = sub;
    q->unsub = unsub;
    /* Behind a connect under way, a request's time starts with the
     * connection (connected() moves it to when that came). Requests
     * share the command timeout, so their deadlines come in the order
     * they were sent. */
    if (!c->connected && c->connect_deadline_us > from)
        from = c->connect_deadline_us;
    /* The handshake is the connect's: AUTH and SELECT answered within
     * the connect timeout, as the URL's connect_timeout promises. */
    q->budget_us = hello >= 0 ? c->cfg.connect_timeout_ms * 1000
                              : (c->cfg.command_timeout_ms + block_ms) * 1000;
    q->deadline_us = from + q->budget_us;
    if (c->tail != NULL && q->deadline_us < c->tail->deadline_us)
        q->deadline_us = c->tail->deadline_us;
    if (c->tail != NULL)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    c->pending++;
    c->unwritten |= q->held == NULL;
    /* Written at once, as the blocking calls write: the loop is asked to
     * watch for writability only when the socket cannot take it all.
     * From a callback of this connection the write waits for the end of
     * its I/O (rl__aconn_io), so that replies read together go out
     * together; a failed write shows there too, not in the caller's
     * send. */
    if (c->depth > 0) {
        /* rl__aconn_io writes, then tells the loop what to watch. */
        redeadline(c);
        return REDISLOCK_OK;
    }
    write_some(c, 0);
    rewatch(c);
    redeadline(c);
    return REDISLOCK_OK;
}

/* Asks what the client's admission wants; one that refuses the
 * connection at once fails it (its requests hear why). Out of memory is
 * the caller's. */
static redislock_err admit(rl__aconn *c)
{
    const rl__admit *ad = c->cfg.admit;
    redislock_err err;
    char said[512];
    int i;

    if ((err = ad->ask(ad->arg, &c->ask)) != REDISLOCK_OK) {
        snprintf(said, sizeof said, "%s", redislock_errdetail());
        c->ask.n = 0;
        fail(c, err, "%s", said);
        return REDISLOCK_OK;
    }
    for (i = 0; i < c->ask.n; i++)
        if ((err = queue(c, c->ask.cmds[i].argc, c->ask.cmds[i].argv,
                         c->ask.cmds[i].lens, NULL, NULL, -1, i, NULL, 0, 0)) !=
            REDISLOCK_OK)
            return err;
    c->admitting = c->ask.n > 0;
    return REDISLOCK_OK;
}

redislock_err rl__aconn_open(const rl__conn_cfg *cfg, const rl__aconn_ops *ops,
                             rl__aconn **out)
{
    rl__aconn *c;
    char buf[300];
    redislock_err err;
    int i;

    *out = NULL;
    if ((c = calloc(1, sizeof *c)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    c->cfg = *cfg;
    c->ops = *ops;
    c->fd = -1;
    c->ctx = cfg->url->path != NULL
                 ? redisConnectUnixNonBlock(cfg->url->path)
                 : redisConnectNonBlock(cfg->url->host, cfg->url->port);
    if (c->ctx == NULL) {
        free(c);
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    }
    c->connect_deadline_us = rl__now_us() + cfg->connect_timeout_ms * 1000;
    if (c->ctx->err != 0) {
        /* Refused at once (a unix socket nobody listens on): requests
         * hear of it. */
        fail(c, REDISLOCK_ECONNECT, "cannot connect to %s: %s",
             where(c, buf, sizeof buf), c->ctx->errstr);
        *out = c;
        return REDISLOCK_OK;
    }
    c->fd = c->ctx->fd;
    /* A child the caller runs must not inherit the socket. */
    fcntl(c->fd, F_SETFD, fcntl(c->fd, F_GETFD) | FD_CLOEXEC);
    rl__conn_limit_reader(c->ctx->reader);
    rewatch(c);
    rl__conn_hello(&c->cfg, &c->hello);
    for (i = 0; i < c->hello.n; i++) {
        err = queue(c, c->hello.cmds[i].argc, c->hello.cmds[i].argv, NULL, NULL,
                    NULL, i, -1, NULL, 0, 0);
        if (err != REDISLOCK_OK) {
            rl__aconn_close(c);
            return err;
        }
    }
    if (cfg->admit != NULL && (err = admit(c)) != REDISLOCK_OK) {
        rl__aconn_close(c);
        return err;
    }
    *out = c;
    return REDISLOCK_OK;
}

redislock_err rl__aconn_send(rl__aconn *c, int argc, const char **argv,
                             const size_t *lens, rl__aconn_cb cb, void *arg)
{
    if (cb == NULL)
        return rl__err(REDISLOCK_EINVAL, "a request needs a callback");
    if (c->subscriber)
        return rl__err(REDISLOCK_EINVAL,
                       "a subscribed connection takes no other commands");
    return queue(c, argc, argv, lens, cb, arg, -1, -1, NULL, 0, 0);
}

redislock_err rl__aconn_send_block(rl__aconn *c, int argc, const char **argv,
                                   const size_t *lens, int64_t block_ms,
                                   rl__aconn_cb cb, void *arg)
{
    if (cb == NULL || block_ms < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a request needs a callback, a block a time");
    if (c->subscriber)
        return rl__err(REDISLOCK_EINVAL,
                       "a subscribed connection takes no other commands");
    return queue(c, argc, argv, lens, cb, arg, -1, -1, NULL, 0, block_ms);
}

redislock_err rl__aconn_subscribe(rl__aconn *c, const char *chan, size_t len,
                                  int sharded, rl__aconn_cb cb, void *arg)
{
    const char *argv[2] = {sharded ? "SSUBSCRIBE" : "SUBSCRIBE", chan};
    size_t lens[2] = {strlen(argv[0]), len};
    rl__asub *sub;
    redislock_err err;

    if (cb == NULL || (c->subscriber && sharded != c->sharded))
        return rl__err(REDISLOCK_EINVAL,
                       cb == NULL ? "a subscription needs a callback"
                                  : "a connection's channels are all shard "
                                    "channels or none");
    if (find_sub(c, chan, len) != NULL)
        return rl__err(REDISLOCK_EINVAL, "already subscribed to %.*s",
                       (int)(len > 64 ? 64 : len), chan);
    if ((sub = calloc(1, sizeof *sub)) == NULL ||
        (sub->chan = malloc(len ? len : 1)) == NULL) {
        free(sub);
        return rl__err(REDISLOCK_ENOMEM, "out of memory subscribing");
    }
    memcpy(sub->chan, chan, len);
    sub->len = len;
    sub->cb = cb;
    sub->arg = arg;
    if ((err = queue(c, 2, argv, lens, NULL, NULL, -1, -1, sub, 0, 0)) != 0) {
        free(sub->chan);
        free(sub);
        return err;
    }
    c->subscriber = 1;
    c->sharded = sharded;
    sub->next = c->subs;
    c->subs = sub;
    return REDISLOCK_OK;
}

redislock_err rl__aconn_unsubscribe(rl__aconn *c, const char *chan, size_t len)
{
    rl__asub *sub = find_sub(c, chan, len);
    const char *argv[2] = {c->sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", chan};
    size_t lens[2] = {strlen(argv[0]), len};
    redislock_err err;

    if (sub == NULL || sub->leaving)
        return rl__err(REDISLOCK_EINVAL, "not subscribed to %.*s",
                       (int)(len > 64 ? 64 : len), chan);
    if ((err = queue(c, 2, argv, lens, NULL, NULL, -1, -1, sub, 1, 0)) == 0)
        sub->leaving = 1;
    return err;
}

/* The connection is up: the requests sent while it was being made have
 * their command timeout from now, as a blocking connect and command
 * would, not from the connect's deadline. */
static void connected(rl__aconn *c)
{
    int64_t now = rl__now_us(), last = 0;
    rl__areq *q;

    c->connected = 1;
    for (q = c->head; q != NULL; q = q->next) {
        q->deadline_us = now + q->budget_us;
        if (q->deadline_us < last)
            q->deadline_us = last;
        last = q->deadline_us;
    }
}

/* An event while connecting: whether the connect failed, succeeded, or
 * (a spurious event: no error and no peer yet) is still under way. */
static void check_connect(rl__aconn *c)
{
    struct sockaddr_storage peer;
    socklen_t len = sizeof(int), plen = sizeof peer;
    int e = 0;
    char buf[300];

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
        e = errno;
    if (e == 0 && getpeername(c->fd, (struct sockaddr *)&peer, &plen) != 0)
        e = errno == ENOTCONN ? 0 : errno;
    else if (e == 0)
        connected(c);
    if (e != 0) {
        fail(c, REDISLOCK_ECONNECT, "cannot connect to %s: %s",
             where(c, buf, sizeof buf), strerror(e));
    } else if (c->connected && c->cfg.tls != NULL &&
               rl__conn_tls_start(&c->cfg, c->ctx, &c->ssl) != REDISLOCK_OK) {
        char said[256];

        snprintf(said, sizeof said, "%s", redislock_errdetail());
        fail(c, REDISLOCK_ECONNECT, "%s", said);
    }
}

/* How much of a first reply is shown when it is not RESP. */
#define RL_PEEK 24

/* The start of what the peer sent, printable, while it has not yet sent
 * a whole reply: up to the first line's end, other control bytes and
 * non-ASCII as '?'. Its first byte, or -1 once it has sent one, or when
 * nothing waits. */
static int peek(const rl__aconn *c, char out[RL_PEEK + 1])
{
    const redisReader *r = c->ctx->reader;
    size_t i, n = c->spoke ? 0 : r->len - r->pos;

    n = n < RL_PEEK ? n : RL_PEEK;
    for (i = 0;
         i < n && r->buf[r->pos + i] != '\r' && r->buf[r->pos + i] != '\n';
         i++) {
        unsigned char b = (unsigned char)r->buf[r->pos + i];
        out[i] = b < 0x20 || b > 0x7e ? '?' : (char)b;
    }
    out[i] = '\0';
    return n > 0 ? (unsigned char)r->buf[r->pos] : -1;
}

/* A read failed: a first reply that does not even start like RESP says
 * that whatever listens there is something else (a web server, a TLS
 * port); any other failure is hiredis's to name. first and head: what
 * peek saw before the read. */
static void read_failed(rl__aconn *c, int first, const char *head)
{
    char buf[300];

    if (c->ctx->err != REDIS_ERR_PROTOCOL || first < 0 ||
        memchr("+-:$*", first, 5) != NULL) {
        fail_io(c);
    } else if (first == 0x15 || first == 0x16) {
        fail(c, REDISLOCK_ECONNECT,
             "%s: not a Redis server: it answered with TLS; use rediss:// "
             "or the plain-text port",
             where(c, buf, sizeof buf));
    } else {
        fail(c, REDISLOCK_ECONNECT,
             "%s: not a Redis server: it answered \"%s\"; check the URL's "
             "host and port",
             where(c, buf, sizeof buf), head);
    }
}

/* Hands on what a read (its status st) put in the reader: every whole
 * reply to its request, in order; then a read's failure, or a reply
 * past the reader's bounds, ends the connection. */
static void take_replies(rl__aconn *c, int st)
{
    char buf[300];
    void *r;

    /* Replies read before a failure still count. */
    while (c->ctx != NULL) {
        char head[RL_PEEK + 1];
        int first = peek(c, head);

        if (redisGetReplyFromReader(c->ctx, &r) != REDIS_OK) {
            read_failed(c, first, head);
            break;
        }
        if (r == NULL)
            break;
        c->spoke = 1;
        deliver(c, r);
    }
    if (c->ctx != NULL && st != REDIS_OK)
        fail_io(c);
    else if (c->ctx != NULL && rl__conn_reader_full(c->ctx->reader))
        fail(c, REDISLOCK_EPROTOCOL,
             "%s sent a reply too large for any request of the "
             "library's: not a Redis server, or one that misbehaves",
             where(c, buf, sizeof buf));
}

/* The end of every call that may run callbacks: what they sent goes out,
 * the loop hears what to watch and when, and a connection closed on the
 * way is freed. */
static void io_done(rl__aconn *c)
{
    write_some(c, 1);
    c->depth--;
    rewatch(c);
    redeadline(c);
    maybe_free(c);
}

/* Reads what the socket holds and hands on the replies in it. */
static void read_some(rl__aconn *c)
{
    while (c->ctx != NULL && c->connected) {
        int st = redisBufferRead(c->ctx);

        if (st == REDIS_OK)
            shaken(c);
        take_replies(c, st);
        /* Over TLS, decrypted bytes may wait in the session: the socket
         * will not say so. */
        if (c->ctx == NULL || c->ssl == NULL || !rl__conn_tls_pending(c->ssl))
            break;
    }
}

void rl__aconn_io(rl__aconn *c, int what)
{
    c->depth++;
    if (c->ctx != NULL && !c->connected && what != 0)
        check_connect(c);
    if (what & RL_WATCH_WRITE)
        write_some(c, 1);
    if (what & RL_WATCH_READ)
        read_some(c);
    io_done(c);
}

int rl__aconn_waitable(const rl__aconn *c, int64_t *deadline_us)
{
    const rl__areq *q = c->head;

    if (c->ctx == NULL || !c->connected || c->ssl != NULL ||
        c->cfg.tls != NULL || c->subscriber || c->unwritten || c->admitting ||
        q == NULL || q->held != NULL || c->cfg.command_timeout_ms <= 0 ||
        q->budget_us != c->cfg.command_timeout_ms * 1000 ||
        q->deadline_us - rl__now_us() < q->budget_us - 1000)
        return 0;
    *deadline_us = q->deadline_us;
    return 1;
}

/* Makes c's socket blocking (on), its reads bounded by about ms, or
 * non-blocking again; whether it could. The bound of the last wait is
 * kept when it is at most 1 ms longer (as the command timeout was for a
 * request sent up to 1 ms before) or an eighth shorter (the wait then
 * ends early, and the loop polls the rest): a setsockopt is spared. */
static int blocking(rl__aconn *c, int on, int64_t ms)
{
    struct timeval tv;

    if (!c->have_fl) {
        if ((c->fl = fcntl(c->fd, F_GETFL)) < 0)
            return 0;
        c->have_fl = 1;
    }
    if (on && (c->rcv_ms > ms + 1 || c->rcv_ms < ms - ms / 8)) {
        tv.tv_sec = (time_t)(ms / 1000);
        tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
        if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
            return 0;
        c->rcv_ms = ms;
    }
    return fcntl(c->fd, F_SETFL,
                 on ? c->fl & ~O_NONBLOCK : c->fl | O_NONBLOCK) == 0;
}

int rl__aconn_wait(rl__aconn *c, int64_t until_us)
{
    int64_t d, ms;
    int st;

    if (!rl__aconn_waitable(c, &d))
        return 0;
    ms = ((until_us < d ? until_us : d) - rl__now_us()) / 1000;
    if (ms < 1 || !blocking(c, 1, ms))
        return 0;
    c->depth++;
    /* Bytes, the server's close or an error, or nothing once the bound
     * has passed (EAGAIN: the loop's timers go on from there). */
    st = redisBufferRead(c->ctx);
    if (!blocking(c, 0, 0)) {
        char e[128];

        snprintf(e, sizeof e, "%s", strerror(errno));
        fail(c, REDISLOCK_EIO, "cannot make a socket non-blocking: %s", e);
    } else {
        take_replies(c, st);
    }
    io_done(c);
    return 1;
}

int64_t rl__aconn_deadline(const rl__aconn *c)
{
    int64_t d = c->head != NULL ? c->head->deadline_us : 0;

    if (c->ctx == NULL)
        return 0;
    if (!c->connected && (d == 0 || c->connect_deadline_us < d))
        d = c->connect_deadline_us;
    return d;
}

/* Fails c for the deadline that passed: the connect's, the handshake's
 * or the first request's. */
static void expired(rl__aconn *c)
{
    char buf[300];

    if (!c->connected)
        fail(c, REDISLOCK_ETIMEDOUT, "connecting to %s: no answer in %lld ms",
             where(c, buf, sizeof buf), (long long)c->cfg.connect_timeout_ms);
    else if (c->head->hello >= 0)
        fail(c, REDISLOCK_ETIMEDOUT,
             "connecting to %s: %s not answered in %lld ms (the connect "
             "timeout)",
             where(c, buf, sizeof buf), c->hello.names[c->head->hello],
             (long long)c->cfg.connect_timeout_ms);
    else
        fail(c, REDISLOCK_ETIMEDOUT, "%s did not answer in %lld ms",
             where(c, buf, sizeof buf), (long long)c->cfg.command_timeout_ms);
}

void rl__aconn_tick(rl__aconn *c)
{
    int64_t d = rl__aconn_deadline(c);

    if (d == 0 || rl__now_us() < d)
        return;
    c->depth++;
    /* A timer that runs late is no late reply: the reply may have come
     * while this process was held up (stopped, or not scheduled), and a
     * blocking read that a stop signal interrupted leaves it unread. */
    read_some(c);
    d = rl__aconn_deadline(c);
    if (d != 0 && rl__now_us() >= d)
        expired(c);
    io_done(c);
}

static void watch_none(void *ctx, int fd, int what)
{
    (void)ctx;
    (void)fd;
    (void)what;
}

void rl__aconn_rebind(rl__aconn *c, const rl__aconn_ops *ops)
{
    static const rl__aconn_ops none = {watch_none, NULL, NULL};
    int w = c->watching;

    if (w != 0)
        c->ops.watch(c->ops.ctx, c->fd, 0);
    if (c->ops.deadline != NULL && c->told_deadline_us != 0)
        c->ops.deadline(c->ops.ctx, 0);
    c->ops = ops != NULL ? *ops : none;
    c->watching = 0;
    c->told_deadline_us = 0;
    if (w != 0)
        rewatch(c);
    redeadline(c);
}

int rl__aconn_stale(const rl__aconn *c)
{
    char b;

    if (c->ctx == NULL || c->fail != REDISLOCK_OK || c->pending > 0 ||
        c->subscriber || c->ctx->reader->len > c->ctx->reader->pos)
        return 1;
    /* Over TLS the peer sends records of its own (session tickets): only
     * the reader's buffer can be judged there. */
    return c->ssl == NULL && recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
}

int rl__aconn_pending(const rl__aconn *c)
{
    return c->pending;
}

int rl__aconn_subscribed(const rl__aconn *c)
{
    return c->ctx != NULL && c->subscriber;
}

int *rl__aconn_fn(const rl__aconn *c)
{
    return c->cfg.fn;
}

int *rl__aconn_caps(const rl__aconn *c)
{
    return c->cfg.caps;
}

int *rl__aconn_copy(const rl__aconn *c)
{
    return c->cfg.copy;
}

/* Held as the I/O of a callback holds them (queue). */
void rl__aconn_cork(rl__aconn *c)
{
    c->depth++;
}

/* A write that fails shows in the loop's I/O, as in queue. */
void rl__aconn_uncork(rl__aconn *c)
{
    if (--c->depth > 0)
        return;
    write_some(c, 0);
    rewatch(c);
    redeadline(c);
}

int rl__aconn_broken(const rl__aconn *c)
{
    return c->fail != REDISLOCK_OK;
}

void rl__aconn_close(rl__aconn *c)
{
    if (c == NULL || c->closing)
        return;
    c->closing = 1;
    c->depth++;
    fail(c, REDISLOCK_ECANCELED, "the connection was closed");
    c->depth--;
    maybe_free(c);
}
