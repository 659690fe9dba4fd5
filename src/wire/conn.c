#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#ifdef REDISLOCK_HAVE_TLS
#include <hiredis_ssl.h>
#include <openssl/ssl.h>

/* The TLS settings of one server: hiredis 1.0's own context checks the
 * certificate chain but not the host name, so the OpenSSL objects are
 * made here and each connection's SSL is told the name to verify. */
typedef struct rl__tls {
    SSL_CTX *ctx;
    char *name;
} rl__tls;
#endif

#include "clock.h"
#include "error.h"

struct rl__conn {
    redisContext *ctx;
    int broken;
    int64_t timeout_ms; /* the whole of one call's reply wait */
    int tls;            /* reads go through TLS: the socket alone does not
                           say whether decrypted bytes are waiting */
    int64_t used_us;    /* when the last call on it ended */
    int spoke;          /* a reply has been read: the peer speaks RESP */
};

/* Bounds on what a misbehaving server can make us hold: the library's
 * replies have a handful of elements (SCAN batches a few hundred) and are
 * small. */
#define RL_MAX_ELEMENTS 100000
#define RL_MAX_PENDING (2 * 1024 * 1024)

int rl__conn_reader_full(const redisReader *r)
{
    return r->len - r->pos > RL_MAX_PENDING;
}

#if HIREDIS_MAJOR >= 1
void rl__conn_limit_reader(redisReader *r)
{
    r->maxelements = RL_MAX_ELEMENTS;
}
#else
/* hiredis 0.14 has no element limit: wrap its array constructor, whose
 * refusal the reader reports as out of memory before allocating. */
static redisReplyObjectFunctions limited_fns;
static void *(*default_create_array)(const redisReadTask *, int);
static pthread_once_t limited_once = PTHREAD_ONCE_INIT;

static void *create_array_limited(const redisReadTask *t, int elements)
{
    if (elements < 0 || elements > RL_MAX_ELEMENTS)
        return NULL;
    return default_create_array(t, elements);
}

static void init_limited_fns(void)
{
    redisReader *r = redisReaderCreate();

    if (r == NULL)
        return;
    limited_fns = *r->fn;
    default_create_array = limited_fns.createArray;
    limited_fns.createArray = create_array_limited;
    redisReaderFree(r);
}

void rl__conn_limit_reader(redisReader *r)
{
    pthread_once(&limited_once, init_limited_fns);
    if (default_create_array != NULL)
        r->fn = &limited_fns;
}
#endif

static struct timeval to_timeval(int64_t ms)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    return tv;
}

static int is_timeout(const redisContext *ctx, int saved_errno)
{
#ifdef REDIS_ERR_TIMEOUT
    if (ctx->err == REDIS_ERR_TIMEOUT)
        return 1;
#endif
    return ctx->err == REDIS_ERR_IO &&
           (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
            saved_errno == ETIMEDOUT);
}

redislock_err rl__conn_ctx_error(const redisContext *ctx, int timed_out,
                                 const char *what)
{
    if (timed_out)
        return rl__err(REDISLOCK_ETIMEDOUT, "%s: Redis did not answer in time",
                       what);
    switch (ctx->err) {
    case REDIS_ERR_EOF:
        return rl__err(REDISLOCK_EIO, "%s: Redis closed the connection", what);
    case REDIS_ERR_PROTOCOL:
        return rl__err(REDISLOCK_EPROTOCOL, "%s: bad reply: %s", what,
                       ctx->errstr);
    case REDIS_ERR_OOM:
        return rl__err(REDISLOCK_ENOMEM, "%s: out of memory", what);
    default:
        return rl__err(REDISLOCK_EIO, "%s: %s", what,
                       ctx->errstr[0] ? ctx->errstr : "I/O error");
    }
}

/* Marks the connection broken and maps hiredis's error. */
static redislock_err io_failure(rl__conn *c, int saved_errno, const char *what)
{
    c->broken = 1;
    return rl__conn_ctx_error(c->ctx, is_timeout(c->ctx, saved_errno), what);
}

static redislock_err fail(rl__conn *c, redislock_err err, const char *what,
                          const char *why);

/* How much of a first reply is shown when it is not RESP. */
#define RL_PEEK 24

/* The start of what a peer sent, printable: up to the first line's end,
 * other control bytes and non-ASCII as '?'. */
static void peek_text(const redisReader *r, char out[RL_PEEK + 1])
{
    size_t i, n = r->len - r->pos;

    n = n < RL_PEEK ? n : RL_PEEK;
    for (i = 0;
         i < n && r->buf[r->pos + i] != '\r' && r->buf[r->pos + i] != '\n';
         i++) {
        unsigned char b = (unsigned char)r->buf[r->pos + i];
        out[i] = b < 0x20 || b > 0x7e ? '?' : (char)b;
    }
    out[i] = '\0';
}

/* A first reply that does not even start like RESP: whatever listens
 * there is something else (a web server, a TLS port). */
static redislock_err not_redis(rl__conn *c, const char *what, int first_byte,
                               const char *head)
{
    c->broken = 1;
    if (first_byte == 0x15 || first_byte == 0x16)
        return rl__err(REDISLOCK_ECONNECT,
                       "%s: not a Redis server: it answered with TLS; use "
                       "rediss:// or the plain-text port",
                       what);
    return rl__err(REDISLOCK_ECONNECT,
                   "%s: not a Redis server: it answered \"%s\"; check the "
                   "URL's host and port",
                   what, head);
}

/* Takes a reply the reader holds, if whole. hiredis drops its buffer on a
 * protocol error, so until the connection's first reply its start is
 * kept, to tell a peer that is not Redis from a confused one. */
static redislock_err take_reply(rl__conn *c, void **reply, const char *what)
{
    const redisReader *r = c->ctx->reader;
    char head[RL_PEEK + 1] = "";
    int first_byte = -1;

    if (!c->spoke && r->len > r->pos) {
        first_byte = (unsigned char)r->buf[r->pos];
        peek_text(r, head);
    }
    if (redisGetReplyFromReader(c->ctx, reply) == REDIS_OK) {
        c->spoke |= *reply != NULL;
        return REDISLOCK_OK;
    }
    if (c->ctx->err == REDIS_ERR_OOM)
        return fail(c, REDISLOCK_EPROTOCOL, what,
                    "reply with too many elements");
    if (c->ctx->err == REDIS_ERR_PROTOCOL && first_byte >= 0 &&
        memchr("+-:$*", first_byte, 5) == NULL)
        return not_redis(c, what, first_byte, head);
    return io_failure(c, errno, what);
}

/* "host:port" or the socket path, for messages. */
const char *rl__conn_endpoint(const rl__url *u, char *buf, size_t len)
{
    if (u->path != NULL)
        return u->path;
    snprintf(buf, len, "%s:%d", u->host, u->port);
    return buf;
}

redislock_err rl__conn_tls_start(const rl__conn_cfg *cfg, redisContext *ctx,
                                 void **ssl_out)
{
#ifdef REDISLOCK_HAVE_TLS
    const rl__tls *t = cfg->tls;
    SSL *ssl = SSL_new(t->ctx);
    char buf[300];

    if (ssl == NULL || SSL_set_tlsext_host_name(ssl, t->name) != 1 ||
        SSL_set1_host(ssl, t->name) != 1) {
        SSL_free(ssl);
        return rl__err(REDISLOCK_ENOMEM, "cannot set up a TLS session");
    }
    /* hiredis owns ssl once the handshake succeeds (or, on a non-blocking
     * context, is under way); a failed one leaves it to us (hiredis 1.0
     * frees only its own wrapper). */
    if (redisInitiateSSL(ctx, ssl) == REDIS_OK) {
        if (ssl_out != NULL)
            *ssl_out = ssl;
        return REDISLOCK_OK;
    }
    SSL_free(ssl);
    return rl__err(REDISLOCK_ECONNECT, "TLS handshake with %s failed: %s",
                   rl__conn_endpoint(cfg->url, buf, sizeof buf), ctx->errstr);
#else
    (void)cfg;
    (void)ctx;
    (void)ssl_out;
    return rl__err(REDISLOCK_ENOTLS, "TLS is not available in this build");
#endif
}

int rl__conn_tls_wants(void *ssl, int *read)
{
#ifdef REDISLOCK_HAVE_TLS
    *read = SSL_want_read((SSL *)ssl);
    return *read || SSL_want_write((SSL *)ssl);
#else
    (void)ssl;
    *read = 0;
    return 0;
#endif
}

int rl__conn_tls_pending(void *ssl)
{
#ifdef REDISLOCK_HAVE_TLS
    return SSL_pending((SSL *)ssl) > 0;
#else
    (void)ssl;
    return 0;
#endif
}

/* The TLS handshake on a fresh connection, for rediss://. */
static redislock_err start_tls(const rl__conn_cfg *cfg, rl__conn *c)
{
    if (cfg->tls == NULL)
        return REDISLOCK_OK;
    c->tls = 1;
    return rl__conn_tls_start(cfg, c->ctx, NULL);
}

static redislock_err connect_socket(const rl__conn_cfg *cfg, rl__conn *c)
{
    struct timeval tv = to_timeval(cfg->connect_timeout_ms);
    const rl__url *u = cfg->url;
    char buf[300];
    int saved;

    if (u->path != NULL)
        c->ctx = redisConnectUnixWithTimeout(u->path, tv);
    else
        c->ctx = redisConnectWithTimeout(u->host, u->port, tv);
    saved = errno;
    if (c->ctx == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    if (c->ctx->err == 0) {
        /* A child the caller runs (redislock run's command) must not
         * inherit the connection and keep it open. */
        fcntl(c->ctx->fd, F_SETFD, fcntl(c->ctx->fd, F_GETFD) | FD_CLOEXEC);
        rl__conn_limit_reader(c->ctx->reader);
        c->timeout_ms = cfg->connect_timeout_ms;
        if (redisSetTimeout(c->ctx, tv) != REDIS_OK)
            return rl__err(REDISLOCK_EIO, "cannot set socket timeout");
        return start_tls(cfg, c);
    }
    if (is_timeout(c->ctx, saved))
        return rl__err(REDISLOCK_ETIMEDOUT, "connecting to %s: timed out",
                       rl__conn_endpoint(u, buf, sizeof buf));
    return rl__err(REDISLOCK_ECONNECT, "cannot connect to %s: %s",
                   rl__conn_endpoint(u, buf, sizeof buf), c->ctx->errstr);
}

/* Whether an AUTH error only says the server has no password: a password
 * from the environment meant for other servers is then no reason to fail
 * (redis-cli goes on too). */
static int auth_not_needed(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR &&
           strstr(r->str, "without any password configured") != NULL;
}

void rl__conn_hello(const rl__conn_cfg *cfg, rl__hello *h)
{
    h->n = 0;
    if (cfg->password != NULL) {
        int has_user = cfg->url->user != NULL;
        h->auth[0] = "AUTH";
        h->auth[1] = has_user ? cfg->url->user : cfg->password;
        h->auth[2] = cfg->password;
        h->names[h->n] = "AUTH";
        h->cmds[h->n++] = (rl__cmd){has_user ? 3 : 2, h->auth, NULL};
    }
    if (cfg->url->db != 0) {
        snprintf(h->db, sizeof h->db, "%d", cfg->url->db);
        h->sel[0] = "SELECT";
        h->sel[1] = h->db;
        h->names[h->n] = "SELECT";
        h->cmds[h->n++] = (rl__cmd){2, h->sel, NULL};
    }
}

redislock_err rl__conn_hello_check(const rl__conn_cfg *cfg, const rl__hello *h,
                                   int i, const rl__reply *r)
{
    redislock_err err;

    if (auth_not_needed(r))
        return REDISLOCK_OK;
    err = rl__reply_check(r, h->names[i]);
    if (err == REDISLOCK_ESERVER && h->cmds[i].argv == h->sel) {
        char said[256];
        snprintf(said, sizeof said, "%s", redislock_errdetail());
        err = rl__err(REDISLOCK_EINVAL, "cannot select database %d: %s",
                      cfg->url->db, said);
    }
    return err;
}

/* AUTH and SELECT, pipelined in one round trip. */
static redislock_err handshake(const rl__conn_cfg *cfg, rl__conn *c)
{
    rl__hello h;
    rl__reply *replies[2];
    redislock_err err;
    int i;

    rl__conn_hello(cfg, &h);
    if (h.n == 0)
        return REDISLOCK_OK;
    err = rl__conn_exec(c, h.n, h.cmds, replies);
    if (err != REDISLOCK_OK)
        return err;
    for (i = 0; i < h.n && err == REDISLOCK_OK; i++)
        err = rl__conn_hello_check(cfg, &h, i, replies[i]);
    for (i = 0; i < h.n; i++)
        rl__reply_free(replies[i]);
    return err;
}

redislock_err rl__conn_open(const rl__conn_cfg *cfg, rl__conn **out)
{
    rl__conn *c = calloc(1, sizeof *c);
    redislock_err err;

    *out = NULL;
    if (c == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory connecting");
    err = connect_socket(cfg, c);
    if (err == REDISLOCK_OK)
        err = handshake(cfg, c);
    if (err == REDISLOCK_OK)
        err = rl__conn_timeout(c, cfg->command_timeout_ms);
    if (err != REDISLOCK_OK) {
        rl__conn_close(c);
        return err;
    }
    *out = c;
    return REDISLOCK_OK;
}

void rl__conn_close(rl__conn *c)
{
    if (c == NULL)
        return;
    if (c->ctx != NULL)
        redisFree(c->ctx);
    free(c);
}

redisContext *rl__conn_unblock(rl__conn *c)
{
    redisContext *ctx = c->ctx;
    int fl;

    if (c->tls || c->broken || ctx == NULL ||
        (fl = fcntl(ctx->fd, F_GETFL)) < 0 ||
        fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return NULL;
    ctx->flags &= ~REDIS_BLOCK;
    free(c);
    return ctx;
}

redislock_err rl__conn_timeout(rl__conn *c, int64_t ms)
{
    if (redisSetTimeout(c->ctx, to_timeval(ms)) == REDIS_OK) {
        c->timeout_ms = ms;
        return REDISLOCK_OK;
    }
    c->broken = 1;
    return rl__err(REDISLOCK_EIO, "cannot set socket timeout");
}

int rl__conn_stale(const rl__conn *c)
{
    char b;

    if (c->ctx->reader->len > c->ctx->reader->pos)
        return 1;
    /* Over TLS the peer sends records of its own (session tickets): only
     * the reader's buffer can be judged there. */
    return !c->tls && rl__now_us() - c->used_us > RL_STALE_AFTER_US &&
           recv(c->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
}

int rl__conn_broken(const rl__conn *c)
{
    return c->broken;
}

/*
 * A write to a socket the server closed raises SIGPIPE, whose default
 * action kills the process; a library must not. SIGPIPE is blocked in this
 * thread while the command runs, and a SIGPIPE it caused is consumed.
 */
static void sigpipe_block(sigset_t *old)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void sigpipe_restore(const sigset_t *old, int failed)
{
    sigset_t set, pending;

    /* Only a failed write can have raised one; if the caller had SIGPIPE
     * blocked already, a pending one may be theirs, so leave it. */
    if (failed && !sigismember(old, SIGPIPE) && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        sigtimedwait(&set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

int rl__conn_buffer_write(redisContext *ctx, int *done)
{
    sigset_t old;
    int st;

    sigpipe_block(&old);
    st = redisBufferWrite(ctx, done);
    sigpipe_restore(&old, st != REDIS_OK);
    /* hiredis 1.0 answers a non-blocking socket that takes nothing now
     * (EAGAIN) with REDIS_ERR and no error set: nothing was written, and
     * the loop's next writability event tries again (1.1 answers OK). */
    if (st != REDIS_OK && ctx->err == 0) {
        if (done != NULL)
            *done = 0;
        st = REDIS_OK;
    }
    return st;
}

/* Fails the connection for a reason of our own (not hiredis's). */
static redislock_err fail(rl__conn *c, redislock_err err, const char *what,
                          const char *why)
{
    c->broken = 1;
    return rl__err(err, "%s: %s", what, why);
}

static redislock_err flush(rl__conn *c)
{
    int done = 0;

    while (!done)
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK)
            return io_failure(c, errno, "sending a command");
    return REDISLOCK_OK;
}

/*
 * Reads one reply, all of it by deadline_us: the socket timeout bounds a
 * single read, and a server that drips a byte at a time would otherwise
 * keep the call going for ever. The first read is a plain blocking one
 * (the common case: the whole reply at once); later ones wait in poll()
 * for the time left.
 */
static redislock_err read_reply(rl__conn *c, void **reply, int64_t deadline_us,
                                const char *what)
{
    int first = 1;

    for (;;) {
        redislock_err err = take_reply(c, reply, what);
        if (err != REDISLOCK_OK)
            return err;
        if (*reply != NULL)
            return REDISLOCK_OK;
        if (!first) {
            int64_t left = (deadline_us - rl__now_us() + 999) / 1000;
            struct pollfd p = {c->ctx->fd, POLLIN, 0};
            /* Over TLS, decrypted bytes may wait in the library while the
             * socket is quiet: there only the deadline is checked, and
             * each read is bounded by the socket timeout. Past the
             * deadline a reply that is already there is still taken: a
             * process stopped (SIGSTOP) in a read comes back with EINTR
             * and the deadline gone, its reply waiting in the socket. */
            if ((c->tls && left <= 0) ||
                (!c->tls && poll(&p, 1, left > 0 ? (int)left : 0) == 0))
                return fail(c, REDISLOCK_ETIMEDOUT, what,
                            "Redis did not answer in time");
        }
        first = 0;
        if (redisBufferRead(c->ctx) != REDIS_OK)
            return io_failure(c, errno, what);
        if (rl__conn_reader_full(c->ctx->reader))
            return fail(c, REDISLOCK_EPROTOCOL, what, "reply too large");
    }
}

static redislock_err exec_blocked(rl__conn *c, int n, const rl__cmd *cmds,
                                  rl__reply **out)
{
    int64_t deadline = rl__now_us() + c->timeout_ms * 1000;
    redislock_err err = REDISLOCK_OK;
    int i, got;

    for (i = 0; i < n; i++)
        if (redisAppendCommandArgv(c->ctx, cmds[i].argc, cmds[i].argv,
                                   cmds[i].lens) != REDIS_OK)
            return io_failure(c, errno, "sending a command");
    if ((err = flush(c)) != REDISLOCK_OK)
        return err;
    for (got = 0; got < n && err == REDISLOCK_OK; got++) {
        void *reply = NULL;
        err = read_reply(c, &reply, deadline, cmds[got].argv[0]);
        out[got] = reply;
    }
    /* A server that turns a client away (protected mode, maxclients)
     * says why, then closes: the reason beats the closed connection. */
    if (err == REDISLOCK_EIO && got >= 2 &&
        out[got - 2]->type == REDIS_REPLY_ERROR)
        err = rl__reply_check(out[got - 2], cmds[got - 2].argv[0]);
    /* Bytes beyond the replies we asked for: a confused or lying server.
     * Nothing more may be read from this connection. */
    if (err == REDISLOCK_OK && c->ctx->reader->len > c->ctx->reader->pos)
        err = fail(c, REDISLOCK_EPROTOCOL, cmds[0].argv[0],
                   "unsolicited bytes after the reply");
    if (err != REDISLOCK_OK)
        while (got-- > 0)
            rl__reply_free(out[got]);
    return err;
}

redislock_err rl__conn_exec(rl__conn *c, int n, const rl__cmd *cmds,
                            rl__reply **out)
{
    sigset_t old;
    redislock_err err;

    if (c->broken)
        return rl__err(REDISLOCK_EIO, "connection is broken");
    sigpipe_block(&old);
    err = exec_blocked(c, n, cmds, out);
    sigpipe_restore(&old, err != REDISLOCK_OK);
    c->used_us = rl__now_us();
    return err;
}

redislock_err rl__conn_command(rl__conn *c, int argc, const char **argv,
                               const size_t *lens, rl__reply **out)
{
    rl__cmd cmd = {argc, argv, lens};

    return rl__conn_exec(c, 1, &cmd, out);
}

void rl__reply_free(rl__reply *r)
{
    if (r != NULL)
        freeReplyObject(r);
}

rl__reply *rl__reply_dup(const rl__reply *r)
{
    rl__reply *d = malloc(sizeof *d);
    size_t i;

    if (d == NULL)
        return NULL;
    /* Every field, whichever hiredis's struct has; then what it owns,
     * which freeReplyObject frees where it is not NULL. */
    *d = *r;
    d->str = NULL;
    d->element = NULL;
    if (r->str != NULL) {
        if ((d->str = malloc(r->len + 1)) == NULL)
            goto fail;
        memcpy(d->str, r->str, r->len);
        d->str[r->len] = '\0';
    }
    if (r->element != NULL) {
        if ((d->element = calloc(r->elements ? r->elements : 1,
                                 sizeof *d->element)) == NULL)
            goto fail;
        for (i = 0; i < r->elements; i++)
            if (r->element[i] != NULL &&
                (d->element[i] = rl__reply_dup(r->element[i])) == NULL)
                goto fail;
    }
    return d;
fail:
    freeReplyObject(d);
    return NULL;
}

redislock_err rl__reply_check(const rl__reply *r, const char *what)
{
    if (r->type != REDIS_REPLY_ERROR)
        return REDISLOCK_OK;
    return rl__err_reply(what, r->str);
}

#ifdef REDISLOCK_HAVE_TLS
/* An SSL_CTX that verifies the server against ca (or the system's CAs)
 * and presents cert and key when given. */
static SSL_CTX *tls_ctx(const redislock_options *o, const char **why)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    *why = "cannot create a TLS context";
    if (ctx == NULL)
        return NULL;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    *why = "cannot load the CA certificates";
    if ((o->tls_ca_file != NULL
             ? SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, NULL)
             : SSL_CTX_set_default_verify_paths(ctx)) != 1)
        goto fail;
    *why = "cannot load the client certificate or key";
    if (o->tls_cert_file != NULL &&
        (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1 ||
         o->tls_key_file == NULL ||
         SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM) !=
             1))
        goto fail;
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}
#endif

redislock_err rl__conn_tls_new(const rl__url *u, const redislock_options *o,
                               void **out)
{
    *out = NULL;
    if (!u->tls)
        return REDISLOCK_OK;
#ifdef REDISLOCK_HAVE_TLS
    {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        const char *why;
        rl__tls *t = calloc(1, sizeof *t);

        pthread_once(&once, (void (*)(void))redisInitOpenSSL);
        if (t == NULL ||
            (t->name = strdup(o->tls_server_name ? o->tls_server_name
                                                 : u->host)) == NULL) {
            free(t);
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        }
        if ((t->ctx = tls_ctx(o, &why)) == NULL) {
            free(t->name);
            free(t);
            return rl__err(REDISLOCK_EINVAL, "TLS: %s", why);
        }
        *out = t;
        return REDISLOCK_OK;
    }
#else
    (void)o;
    return rl__err(REDISLOCK_ENOTLS, "TLS is not available in this build");
#endif
}

void rl__conn_tls_free(void *ctx)
{
#ifdef REDISLOCK_HAVE_TLS
    rl__tls *t = ctx;

    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->name);
    free(t);
#else
    (void)ctx;
#endif
}
