/*
 * One connection to one Redis server that never blocks, driven by the
 * caller's event loop: the base of the event-loop API (issue 16). It sits
 * on hiredis's non-blocking primitives (its context's output buffer and
 * its reply parser) rather than on its async API, which aborts the
 * process on a reply nobody asked for. It adds what the library needs:
 * the loop is told which of the socket's events to watch through one
 * callback (libcurl's multi-socket model, not one adapter per
 * connection), the connect and every request have a deadline that the
 * caller's timer enforces through rl__aconn_deadline and rl__aconn_tick,
 * the handshake (AUTH, SELECT) goes first, and every way the connection
 * ends reaches each pending request as a redislock_err with a detail.
 *
 * Single-threaded: every call on a connection, and its callbacks, happen
 * on the loop's thread.
 */
#ifndef RL_ACONN_H
#define RL_ACONN_H

#include <stdint.h>

#include "conn.h"

#define RL_WATCH_READ 1
#define RL_WATCH_WRITE 2

typedef struct rl__aconn rl__aconn;

/* How a connection tells the loop what to watch. */
typedef struct rl__aconn_ops {
    /* Watch fd for what (RL_WATCH_READ | RL_WATCH_WRITE), replacing what
     * was asked before; 0: stop watching fd (it is about to close). */
    void (*watch)(void *ctx, int fd, int what);
    /* Optional: rl__aconn_deadline may have changed to at_us (0: none),
     * after a send, I/O or a tick; not after rl__aconn_close. */
    void (*deadline)(void *ctx, int64_t at_us);
    void *ctx;
} rl__aconn_ops;

/*
 * A request's outcome: err REDISLOCK_OK with the reply in r (valid during
 * the call only; error replies are replies), or why there is none, with
 * redislock_errdetail() set: REDISLOCK_ETIMEDOUT (no reply by the
 * deadline), REDISLOCK_EIO or REDISLOCK_EPROTOCOL (the connection failed,
 * or the server sent what no request asked for),
 * REDISLOCK_ECONNECT or REDISLOCK_EAUTH (it never came up) or
 * REDISLOCK_ECANCELED (closed by rl__aconn_close). Without a reply the
 * request may or may not have run. The callback may send more requests
 * and may close the connection.
 */
typedef void (*rl__aconn_cb)(void *arg, redislock_err err, const rl__reply *r);

/*
 * Starts connecting to cfg's server and queues the handshake; requests may
 * be sent at once (they go out behind it). A host name is resolved here,
 * by getaddrinfo, which blocks: a loop that must never block gives an
 * address or a socket path. cfg and ops are copied, but
 * cfg's URL and password are borrowed for the connection's life. Fails
 * only when the connection cannot even be started (out of memory); over
 * TLS (cfg->tls) the handshake starts once the socket connects and goes
 * on in the reads and writes (a failed one: REDISLOCK_ECONNECT); a server
 * that is down shows as every request's REDISLOCK_ECONNECT.
 */
redislock_err rl__aconn_open(const rl__conn_cfg *cfg, const rl__aconn_ops *ops,
                             rl__aconn **out);

/* Moves c to another loop: the old ops are told to stop watching it and
 * its deadline, the new ones (NULL: none, c lies idle on no loop) what
 * to watch now and when. For an idle connection: a pool's, lent to a
 * private loop and given back (pool.h). */
void rl__aconn_rebind(rl__aconn *c, const rl__aconn_ops *ops);

/* Whether an idle connection is of no more use: it failed, something is
 * pending, or bytes nobody asked for (or the server's close) came while
 * it lay idle. */
int rl__aconn_stale(const rl__aconn *c);

/* Queues a command (binary-safe argv, lens may be NULL for C strings)
 * with the command timeout as its deadline. On a broken connection, cb is
 * not called and the error is returned. */
redislock_err rl__aconn_send(rl__aconn *c, int argc, const char **argv,
                             const size_t *lens, rl__aconn_cb cb, void *arg);

/* rl__aconn_send for a blocking command (BLPOP) that the server may hold
 * for block_ms: its deadline is the command timeout past that; requests
 * sent behind it wait for it. */
redislock_err rl__aconn_send_block(rl__aconn *c, int argc, const char **argv,
                                   const size_t *lens, int64_t block_ms,
                                   rl__aconn_cb cb, void *arg);

/*
 * Subscribes c to the channel chan (len bytes; sharded: a shard channel,
 * SSUBSCRIBE, Redis 7 and later), after which c takes no other commands
 * (rl__aconn_send is REDISLOCK_EINVAL). cb gets REDISLOCK_OK with r NULL
 * once the server has confirmed it (messages published from then on
 * arrive), each message on it as r (the payload: a string reply), and,
 * once, the subscription's end with r NULL and an error:
 * REDISLOCK_ECANCELED after rl__aconn_unsubscribe, REDISLOCK_ETRYLATER
 * when the server drops it (a cluster node whose slot moved), else why the
 * connection ended (a refused subscription ends it: REDISLOCK_ENOPERM
 * for an ACL without the channel). The subscribe itself has the command
 * timeout. A channel once per connection, and all shard channels or none.
 */
redislock_err rl__aconn_subscribe(rl__aconn *c, const char *chan, size_t len,
                                  int sharded, rl__aconn_cb cb, void *arg);

/* Unsubscribes c from chan: messages stop at once, and its callback
 * hears REDISLOCK_ECANCELED when the server confirms. */
redislock_err rl__aconn_unsubscribe(rl__aconn *c, const char *chan, size_t len);

/* The loop saw what (RL_WATCH_*) on the connection's socket. */
void rl__aconn_io(rl__aconn *c, int what);

/* Whether the next thing c's socket can bring is the reply to its head
 * request, a fresh one (sent within the last ms, with no block time),
 * over a plain socket with nothing left to write and no subscription;
 * its deadline then in *deadline_us. */
int rl__aconn_waitable(const rl__aconn *c, int64_t *deadline_us);

/* When rl__aconn_waitable: reads c's socket once in blocking mode, until
 * bytes come or about until_us (CLOCK_MONOTONIC; no later than the
 * request's deadline) has passed, and hands them on as rl__aconn_io
 * does. A private loop's (ploop.h) wait for a reply: a blocking read
 * wakes sooner than a poll() and the read after it. 0: c was not
 * waitable, less than 1 ms is left, or its socket could not be made
 * blocking (nothing done: poll instead). */
int rl__aconn_wait(rl__aconn *c, int64_t until_us);

/* The earliest deadline (CLOCK_MONOTONIC us) of the connect or a pending
 * request; 0 when nothing waits. */
int64_t rl__aconn_deadline(const rl__aconn *c);

/* Fails the connection if a deadline has passed: every pending request
 * gets REDISLOCK_ETIMEDOUT. */
void rl__aconn_tick(rl__aconn *c);

/* Requests sent and not yet answered. */
int rl__aconn_pending(const rl__aconn *c);

/* Whether the connection is up and subscribed: messages may come. */
int rl__aconn_subscribed(const rl__aconn *c);

/* Whether the connection has failed (it takes no more requests). */
int rl__aconn_broken(const rl__aconn *c);

/* The node's Functions memo of c's configuration (rl__conn_cfg.fn), or
 * NULL. */
int *rl__aconn_fn(const rl__aconn *c);

/* The node's native compare-and-delete memo (rl__conn_cfg.caps), or
 * NULL. */
int *rl__aconn_caps(const rl__aconn *c);

/* The node's memo of COPY behind a release (rl__conn_cfg.copy), or
 * NULL. */
int *rl__aconn_copy(const rl__aconn *c);

/* The requests sent on c from rl__aconn_cork to rl__aconn_uncork go out
 * in one write (a request is written as it is sent otherwise, but from
 * a callback of c's), so that the server reads them together. No
 * callback runs in between. Pairs may nest. */
void rl__aconn_cork(rl__aconn *c);
void rl__aconn_uncork(rl__aconn *c);

/* Closes the connection; pending requests get REDISLOCK_ECANCELED first.
 * May be called from a callback. NULL is a no-op. */
void rl__aconn_close(rl__aconn *c);

#endif
