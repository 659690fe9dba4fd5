/*
 * What every connection to a Redis server shares, and the only module
 * that includes hiredis (aconn.c, the connection itself, through it): a
 * server's configuration (address, password, timeouts, TLS, the client's
 * admission), the handshake it sends first (AUTH, SELECT) and its
 * verdict, TLS set-up, a write with SIGPIPE kept away, the reader's
 * bounds, and the mapping of hiredis's failures and error replies to a
 * redislock_err with a detail.
 */
#ifndef RL_CONN_H
#define RL_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>

#include "redislock.h"
#include "url.h"

typedef struct redisReply rl__reply;

/* One command of a pipeline. */
typedef struct rl__cmd {
    int argc;
    const char **argv;
    const size_t *lens;
} rl__cmd;

/* What a client asks a new connection after AUTH and SELECT, before any
 * request goes out on it: which server it reached (ident.h), and on a
 * lazy client's node whether it is one to lock on (pool.h). Its
 * pointers point into itself and into the asker's data. */
#define RL_ADMIT_MAX 8
typedef struct rl__admit_ask {
    int n;    /* 0: nothing to ask */
    int mark; /* the asker's own: where its parts meet */
    rl__cmd cmds[RL_ADMIT_MAX];
    const char *argv[RL_ADMIT_MAX][4];
    size_t lens[RL_ADMIT_MAX][4];
} rl__admit_ask;

/* A client's admission of new connections. ask fills a for one
 * connection, or refuses it at once (an error, with its detail); judge
 * gives the verdict on the n replies (error replies among them). Both
 * may be called from any thread. */
typedef struct rl__admit {
    redislock_err (*ask)(void *arg, rl__admit_ask *a);
    redislock_err (*judge)(void *arg, const rl__admit_ask *a,
                           rl__reply *const *r);
    void *arg;
} rl__admit;

typedef struct rl__conn_cfg {
    const rl__url *url;   /* borrowed */
    const char *password; /* borrowed; NULL for no AUTH */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    void *tls; /* a redisSSLContext for rediss://, or NULL */
    /* Borrowed; NULL: none. A connection (aconn.h) holds its requests
     * until it passes. */
    const rl__admit *admit;
    /* Borrowed: the node's memo of whether its scripts go by FCALL
     * (request.c): 0 to try, -1 not there (read and written
     * with atomics, by any thread). NULL: never FCALL. */
    int *fn;
    /* Borrowed: the node's memo of its native compare-and-delete
     * (request.h's RL_CAP_*), from HELLO's name and version, -1 once
     * the node refused it (read and written with atomics). NULL: none. */
    int *caps;
    /* Borrowed: the node's memo of COPY behind a release (request.h's
     * copy_wake): 0 not yet seen to run, 1 it ran, -1 refused (an ACL
     * without it, a server before 6.2); atomics. NULL: never sent. */
    int *copy;
} rl__conn_cfg;

/* The TLS context for a rediss:// URL (NULL for others), from the
 * options' certificate files; free with rl__conn_tls_free. */
redislock_err rl__conn_tls_new(const rl__url *u, const redislock_options *o,
                               void **out);
void rl__conn_tls_free(void *ctx);

/* Starts TLS on ctx, connected to cfg's server (cfg->tls set): the
 * handshake's first step (the rest happens in its reads and writes). *ssl_out
 * (when not NULL) gets the session, hiredis's to free, for the two below.
 * REDISLOCK_ENOTLS in a build without TLS. */
redislock_err rl__conn_tls_start(const rl__conn_cfg *cfg, redisContext *ctx,
                                 void **ssl_out);

/* When ctx failed over TLS (ssl) before the server's first reply (not
 * answered), the failure in OpenSSL's words, with what to check (a
 * certificate the CA did not sign, a name it does not carry, a client
 * certificate the server wants): REDISLOCK_ECONNECT when the server
 * refused the session (in the handshake, shaken 0, or by an alert after
 * it: it ran nothing), else REDISLOCK_EIO, what ("connection to X")
 * leading (a request sent after the handshake may have run). REDISLOCK_OK
 * when ssl is NULL or a reply had come: the failure is the connection's.
 * shaken: whether the handshake was seen finished by a read or write
 * that succeeded (after a failure OpenSSL no longer says). */
redislock_err rl__conn_tls_failed(const rl__conn_cfg *cfg,
                                  const redisContext *ctx, void *ssl,
                                  int answered, int shaken, const char *what);

/* Whether ssl's handshake has finished (0 after a failure too). */
int rl__conn_tls_finished(void *ssl);

/* Whether ssl's last read or write stopped for want of the socket's
 * readability (*read) or writability: the caller watches for that. */
int rl__conn_tls_wants(void *ssl, int *read);

/* Whether ssl holds decrypted bytes not yet read: the socket will not
 * say so. */
int rl__conn_tls_pending(void *ssl);

/* What a new connection sends first: AUTH and SELECT as cfg needs them
 * (n is 0 when neither). Its pointers point into itself and cfg. */
typedef struct rl__hello {
    int n;
    rl__cmd cmds[2];
    const char *names[2];
    const char *auth[3], *sel[2];
    char db[16];
} rl__hello;

void rl__conn_hello(const rl__conn_cfg *cfg, rl__hello *h);

/* The handshake's outcome from the reply r to h's command i (an AUTH
 * refused only because the server has no password passes). */
redislock_err rl__conn_hello_check(const rl__conn_cfg *cfg, const rl__hello *h,
                                   int i, const rl__reply *r);

/* "host:port" or the socket path of u, in buf. */
const char *rl__conn_endpoint(const rl__url *u, char *buf, size_t len);

/* The bytes of a command (argv; lens may be NULL for C strings) in the
 * protocol's form, written into out, which has rl__conn_format_room of
 * them; returns how many it wrote. hiredis's own formatting builds the
 * text a piece at a time (an sds grown and reformatted per word), a few
 * thousand instructions for a lock's script call. */
size_t rl__conn_format(char *out, int argc, const char *const *argv,
                       const size_t *lens);

/* Room enough for rl__conn_format's bytes of the command: its words and
 * RL_FMT_DIGITS for each length, without counting digits. */
#define RL_FMT_DIGITS 20
size_t rl__conn_format_room(int argc, const char *const *argv,
                            const size_t *lens);

/* redisBufferWrite on a context of the caller's (aconn's non-blocking
 * ones), with SIGPIPE kept away: a socket the server closed must fail
 * the write, not kill the process. Over TLS (tls), SIGPIPE is blocked
 * around it as around every write of this module's; on a plain socket
 * it is sent with MSG_NOSIGNAL where the system has it. REDIS_OK or
 * REDIS_ERR, and *done, as hiredis's (a socket that takes nothing now is
 * REDIS_OK, not done, with every hiredis). */
int rl__conn_buffer_write(redisContext *ctx, int tls, int *done);

/* Maps the failure recorded in ctx to an error, with a detail that
 * begins with what. */
redislock_err rl__conn_ctx_error(const redisContext *ctx, const char *what);

/* Bounds what a misbehaving server can make a reader of r allocate. */
void rl__conn_limit_reader(redisReader *r);

/* Whether r holds more unparsed bytes than any reply the library takes
 * (a misbehaving server streaming a reply nobody needs): the caller
 * fails the connection with "reply too large". */
int rl__conn_reader_full(const redisReader *r);

/* A connection idle for less than this is not checked before reuse: what
 * the check finds (a server's close, stray bytes) comes with idleness. A
 * private loop's connections are checked by the same rule (engine.c). */
#define RL_STALE_AFTER_US 100000

void rl__reply_free(rl__reply *r);

/* A copy of r that outlives it (freed with rl__reply_free); NULL when out
 * of memory. */
rl__reply *rl__reply_dup(const rl__reply *r);

/* REDISLOCK_OK unless r is an error reply, which it maps (NOAUTH and
 * WRONGPASS to EAUTH, others to ESERVER) with the server's words as detail. */
redislock_err rl__reply_check(const rl__reply *r, const char *what);

#endif
