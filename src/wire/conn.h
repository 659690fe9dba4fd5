/*
 * One connection to one Redis server: the only module that calls hiredis.
 * It connects with a timeout, authenticates, selects the database, sends
 * argv-style commands (binary-safe, never format strings) and maps every
 * failure to a redislock_err with a detail. A connection that failed is
 * marked broken and must be closed; the client opens a new one.
 */
#ifndef RL_CONN_H
#define RL_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>

#include "redislock.h"
#include "url.h"

typedef struct redisReply rl__reply;
typedef struct rl__conn rl__conn;

/* One command of a pipeline. */
typedef struct rl__cmd {
    int argc;
    const char **argv;
    const size_t *lens;
} rl__cmd;

/* What a client asks a new connection after AUTH and SELECT, before any
 * request goes out on it: which server it reached (ident.h). Its
 * pointers point into itself and into the asker's data. */
#define RL_ADMIT_MAX 2
typedef struct rl__admit_ask {
    int n; /* 0: nothing to ask */
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
    /* Borrowed; NULL: none. The non-blocking connections (aconn.h) hold
     * their requests until it passes; the blocking pool runs it through
     * its vet (pool.h). */
    const rl__admit *admit;
} rl__conn_cfg;

/* The TLS context for a rediss:// URL (NULL for others), from the
 * options' certificate files; free with rl__conn_tls_free. */
redislock_err rl__conn_tls_new(const rl__url *u, const redislock_options *o,
                               void **out);
void rl__conn_tls_free(void *ctx);

/* Starts TLS on ctx, connected to cfg's server (cfg->tls set): on a
 * blocking context the whole handshake, on a non-blocking one its first
 * step (the rest happens in its reads and writes). *ssl_out (when not
 * NULL) gets the session, hiredis's to free, for the two below.
 * REDISLOCK_ENOTLS in a build without TLS. */
redislock_err rl__conn_tls_start(const rl__conn_cfg *cfg, redisContext *ctx,
                                 void **ssl_out);

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

/* redisBufferWrite on a context of the caller's (aconn's non-blocking
 * ones), with SIGPIPE blocked around it as around every write of this
 * module's: a socket the server closed must fail the write, not kill the
 * process. REDIS_OK or REDIS_ERR, and *done, as hiredis's (a socket that
 * takes nothing now is REDIS_OK, not done, with every hiredis). */
int rl__conn_buffer_write(redisContext *ctx, int *done);

/* Maps the failure recorded in ctx (or a timeout) to an error, with a
 * detail that begins with what. */
redislock_err rl__conn_ctx_error(const redisContext *ctx, int timed_out,
                                 const char *what);

/* Bounds what a misbehaving server can make a reader of r allocate. */
void rl__conn_limit_reader(redisReader *r);

/* Whether r holds more unparsed bytes than any reply the library takes
 * (a misbehaving server streaming a reply nobody needs): the caller
 * fails the connection with "reply too large". */
int rl__conn_reader_full(const redisReader *r);

/* Connects, authenticates and selects the database within the connect
 * timeout. */
redislock_err rl__conn_open(const rl__conn_cfg *cfg, rl__conn **out);

void rl__conn_close(rl__conn *c);

/* c's context, switched to non-blocking for a non-blocking connection
 * to take over (rl__aconn_adopt), c's wrapper freed; NULL, c kept as it
 * was, for a TLS connection (its session stays with the blocking reads)
 * or when the socket cannot be switched. */
redisContext *rl__conn_unblock(rl__conn *c);

/* A connection idle for less than this is not checked before reuse: what
 * the check finds (a server's close, stray bytes) comes with idleness. A
 * private loop's connections are checked by the same rule (engine.c). */
#define RL_STALE_AFTER_US 100000

/* Whether an idle connection has something waiting that nobody asked
 * for: bytes, or the server's close (looked for once it has been idle a
 * while: a syscall saved on the hot path). */
int rl__conn_stale(const rl__conn *c);

/* Whether an I/O or protocol failure has made the connection unusable. */
int rl__conn_broken(const rl__conn *c);

/*
 * Sends n commands in one write and reads their n replies into out[]
 * (which the caller frees with rl__reply_free). Error replies are returned
 * as replies, not as failures; a failure frees whatever was read.
 */
redislock_err rl__conn_exec(rl__conn *c, int n, const rl__cmd *cmds,
                            rl__reply **out);

/* Sends one command and reads its reply. */
redislock_err rl__conn_command(rl__conn *c, int argc, const char **argv,
                               const size_t *lens, rl__reply **out);

/* Sets the reply timeout for the following commands. */
redislock_err rl__conn_timeout(rl__conn *c, int64_t ms);

void rl__reply_free(rl__reply *r);

/* A copy of r that outlives it (freed with rl__reply_free); NULL when out
 * of memory. */
rl__reply *rl__reply_dup(const rl__reply *r);

/* REDISLOCK_OK unless r is an error reply, which it maps (NOAUTH and
 * WRONGPASS to EAUTH, others to ESERVER) with the server's words as detail. */
redislock_err rl__reply_check(const rl__reply *r, const char *what);

#endif
