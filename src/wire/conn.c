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
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

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

redislock_err rl__conn_ctx_error(const redisContext *ctx, const char *what)
{
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

const char *rl__conn_endpoint(const rl__url *u, char *buf, size_t len)
{
    if (u->path != NULL)
        return u->path;
    snprintf(buf, len, "%s:%d", u->host, u->port);
    return buf;
}

#ifdef REDISLOCK_HAVE_TLS
/* Whether OpenSSL's error e is a server's refusal for want of a client
 * certificate (TLS 1.3's alert; TLS 1.2 says only "handshake failure"). */
static int wants_client_cert(unsigned long e)
{
    int r = ERR_GET_REASON(e);

#ifdef SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED
    if (r == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED)
        return 1;
#endif
    return r == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE;
}

/* Whether e (0: no OpenSSL reason) says only that the server hung up: a
 * reset or a close, without an alert. */
static int hung_up(unsigned long e)
{
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
    if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
        ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        return 1;
#endif
    return e == 0;
}

/* Whether e is a fatal alert the server sent: it refused the session,
 * and ran nothing sent in it. */
static int alert_received(unsigned long e)
{
    return e != 0 && ERR_GET_LIB(e) == ERR_LIB_SSL &&
           ERR_GET_REASON(e) >= SSL_AD_REASON_OFFSET;
}

/* ctx's failure over ssl before the server's first reply (handshake: in
 * the handshake; what: "connection to X"), in OpenSSL's words, with what
 * to check. A refusal (the handshake failed, or the server sent an
 * alert) is a failed connect; a connection that merely ended after the
 * handshake may have carried a request that ran: REDISLOCK_EIO, as any
 * lost reply. The error queue is emptied, so that no later failure reads
 * this one's. */
static redislock_err tls_failed(const rl__conn_cfg *cfg,
                                const redisContext *ctx, const SSL *ssl,
                                int handshake, const char *what)
{
    long v = SSL_get_verify_result(ssl);
    unsigned long e, last = 0;
    const char *why, *hint = "";
    char buf[300];

    while ((e = ERR_get_error()) != 0)
        last = e;
    why = last != 0 ? ERR_reason_error_string(last) : NULL;
    if (why == NULL)
        why = ctx->err == REDIS_ERR_EOF ? "the server closed the connection"
              : ctx->errstr[0]          ? ctx->errstr
                                        : "I/O error";
    if (v != X509_V_OK) {
        why = X509_verify_cert_error_string(v);
        hint = "; check the CA file (tls_ca_file) and the server's name "
               "(tls_server_name)";
    } else if (!handshake || hung_up(last) || wants_client_cert(last)) {
        /* A server that wants a client certificate refuses with an
         * alert, or resets before its alert is read; under TLS 1.3 the
         * client's side of the handshake may have ended by then. */
        hint = "; if the server wants a client certificate "
               "(tls-auth-clients), set tls_cert_file and tls_key_file";
    }
    if (!handshake && !alert_received(last))
        return rl__err(REDISLOCK_EIO,
                       "%s: %s, over TLS before the server's first reply%s",
                       what, why, hint);
    return rl__err(REDISLOCK_ECONNECT, "TLS %s %s %s: %s%s",
                   handshake ? "handshake with" : "connection to",
                   rl__conn_endpoint(cfg->url, buf, sizeof buf),
                   handshake ? "failed" : "refused", why, hint);
}
#endif

redislock_err rl__conn_tls_failed(const rl__conn_cfg *cfg,
                                  const redisContext *ctx, void *ssl,
                                  int answered, int shaken, const char *what)
{
#ifdef REDISLOCK_HAVE_TLS
    if (ssl == NULL || answered)
        return REDISLOCK_OK;
    return tls_failed(cfg, ctx, (SSL *)ssl, !shaken, what);
#else
    (void)cfg;
    (void)ctx;
    (void)ssl;
    (void)answered;
    (void)shaken;
    (void)what;
    return REDISLOCK_OK;
#endif
}

int rl__conn_tls_finished(void *ssl)
{
#ifdef REDISLOCK_HAVE_TLS
    return ssl != NULL && SSL_is_init_finished((SSL *)ssl);
#else
    (void)ssl;
    return 0;
#endif
}

redislock_err rl__conn_tls_start(const rl__conn_cfg *cfg, redisContext *ctx,
                                 void **ssl_out)
{
#ifdef REDISLOCK_HAVE_TLS
    const rl__tls *t = cfg->tls;
    SSL *ssl = SSL_new(t->ctx);
    redislock_err err;

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
    err = tls_failed(cfg, ctx, ssl, 1, NULL);
    SSL_free(ssl);
    return err;
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

/* Writes c, then v in decimal, then CRLF at p; returns what follows. */
static char *put_head(char *p, char c, size_t v)
{
    char d[RL_FMT_DIGITS];
    size_t n = 0;

    *p++ = c;
    /* Most lengths of a lock's words have one or two digits. */
    if (v < 10) {
        *p++ = (char)('0' + v);
    } else if (v < 100) {
        *p++ = (char)('0' + v / 10);
        *p++ = (char)('0' + v % 10);
    } else {
        do {
            d[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v > 0);
        while (n > 0)
            *p++ = d[--n];
    }
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

size_t rl__conn_format_room(int argc, const char *const *argv,
                            const size_t *lens)
{
    size_t room = 3 + RL_FMT_DIGITS;
    int i;

    for (i = 0; i < argc; i++)
        room += 5 + RL_FMT_DIGITS + (lens != NULL ? lens[i] : strlen(argv[i]));
    return room;
}

size_t rl__conn_format(char *out, int argc, const char *const *argv,
                       const size_t *lens)
{
    char *p = put_head(out, '*', (size_t)argc);
    size_t len;
    int i;

    for (i = 0; i < argc; i++) {
        len = lens != NULL ? lens[i] : strlen(argv[i]);
        p = put_head(p, '$', len);
        memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    return (size_t)(p - out);
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

#ifdef MSG_NOSIGNAL
/* Above this, a buffer written whole is given back rather than kept for
 * the next command (a FUNCTION LOAD's library, a set's many keys). */
#define RL_OBUF_KEEP 16384

/* The output buffer's string functions: hiredis 1.0 gave them a prefix. */
#if HIREDIS_MAJOR >= 1
#define rl_sdslen hi_sdslen
#define rl_sdsavail hi_sdsavail
#define rl_sdsrange hi_sdsrange
#define rl_sdsclear hi_sdsclear
#define rl_sdsfree hi_sdsfree
#define rl_sdsempty hi_sdsempty
#else
#define rl_sdslen sdslen
#define rl_sdsavail sdsavail
#define rl_sdsrange sdsrange
#define rl_sdsclear sdsclear
#define rl_sdsfree sdsfree
#define rl_sdsempty sdsempty
#endif

/* What redisBufferWrite does on a plain socket, by send() with
 * MSG_NOSIGNAL: a closed socket fails the write with EPIPE and raises no
 * SIGPIPE, so the signal mask is left alone (two system calls less per
 * write, ten per Redlock cycle of five servers). A buffer written whole
 * is emptied, not freed and made again. */
static int plain_write(redisContext *ctx, int *done)
{
    size_t len = rl_sdslen(ctx->obuf);
    ssize_t n;

    if (ctx->err)
        return REDIS_ERR;
    n = len > 0 ? send(ctx->fd, ctx->obuf, len, MSG_NOSIGNAL) : 0;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        ctx->err = REDIS_ERR_IO;
        snprintf(ctx->errstr, sizeof ctx->errstr, "%s", strerror(errno));
        return REDIS_ERR;
    }
    if (n > 0 && (size_t)n < len) {
        rl_sdsrange(ctx->obuf, (int)n, -1);
    } else if (n > 0 && len + rl_sdsavail(ctx->obuf) <= RL_OBUF_KEEP) {
        rl_sdsclear(ctx->obuf);
    } else if (n > 0) {
        rl_sdsfree(ctx->obuf);
        if ((ctx->obuf = rl_sdsempty()) == NULL) {
            ctx->err = REDIS_ERR_OOM;
            snprintf(ctx->errstr, sizeof ctx->errstr, "Out of memory");
            return REDIS_ERR;
        }
    }
    if (done != NULL)
        *done = rl_sdslen(ctx->obuf) == 0;
    return REDIS_OK;
}
#endif

int rl__conn_buffer_write(redisContext *ctx, int tls, int *done)
{
    sigset_t old;
    int st;

#ifdef MSG_NOSIGNAL
    if (!tls)
        return plain_write(ctx, done);
#else
    (void)tls;
#endif
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
/* The client's option, else the URL's parameter of the same name. */
static const char *either(const char *opt, const char *url)
{
    return opt != NULL ? opt : url;
}

/* An SSL_CTX that verifies the server against the CA file or directory
 * (or the system's CAs), unless the URL says tls_insecure, and presents
 * a certificate and key when given. */
static SSL_CTX *tls_ctx(const rl__url *u, const redislock_options *o,
                        const char **why)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    const char *ca = either(o->tls_ca_file, u->tls_ca_file);
    const char *cert = either(o->tls_cert_file, u->tls_cert_file);
    const char *key = either(o->tls_key_file, u->tls_key_file);

    *why = "cannot create a TLS context";
    if (ctx == NULL)
        return NULL;
    SSL_CTX_set_verify(ctx, u->tls_insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    *why = "cannot load the CA certificates (tls_ca_file, tls_ca_dir)";
    if ((ca != NULL || u->tls_ca_dir != NULL
             ? SSL_CTX_load_verify_locations(ctx, ca, u->tls_ca_dir)
             : SSL_CTX_set_default_verify_paths(ctx)) != 1)
        goto fail;
    *why = "cannot load the client certificate or key (tls_cert_file, "
           "tls_key_file: both are needed)";
    if ((cert != NULL || key != NULL) &&
        (cert == NULL || key == NULL ||
         SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1))
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
            (t->name = strdup(either(o->tls_server_name,
                                     either(u->tls_server_name, u->host)))) ==
                NULL) {
            free(t);
            return rl__err(REDISLOCK_ENOMEM, "out of memory");
        }
        if ((t->ctx = tls_ctx(u, o, &why)) == NULL) {
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
