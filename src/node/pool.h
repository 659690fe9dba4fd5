/*
 * The node layer. One Redis server: its parsed URL, the effective
 * password and timeouts, and a small pool of connections, so that threads
 * sharing a client never share a hiredis context (which is not
 * thread-safe). A call borrows one connection for its duration; the pool
 * opens up to max connections and makes further callers wait. It knows
 * nothing of clusters: topology.h decides which node a request goes to.
 */
#ifndef RL_POOL_H
#define RL_POOL_H

#include <pthread.h>

#include "conn.h"
#include "request.h"

typedef struct rl__pool {
    rl__url url;
    char *password; /* the effective one, or NULL */
    char *name;     /* "host:port" or the socket path: the server's identity */
    rl__conn_cfg cfg;
    pthread_mutex_t mu;
    pthread_cond_t freed;
    rl__conn **idle; /* max slots */
    int nidle;
    int nopen; /* idle plus borrowed */
    int max;
    /* Checks each connection the pool opens before its first use, or
     * NULL: a failure closes it and fails the borrow. The client's
     * same-server checks (ident.h) use it; set before the pool is
     * shared. budget_ms bounds what it waits for (0: the pool's command
     * timeout). */
    redislock_err (*vet)(struct rl__pool *p, rl__conn *conn, int64_t budget_ms,
                         void *arg);
    void *vet_arg;
    /* The same check for the non-blocking connections (cfg.admit points
     * here when it is set). */
    rl__admit admit;
    /* The WAITAOF guard's wants (redislock_options.wait_aof_*): each
     * connection is checked for them when opened. */
    int aof_local, aof_replicas;
} rl__pool;

/* Parses url and sets the pool up; opens nothing. The pool is cleaned up
 * by rl__pool_fini even on failure. */
redislock_err rl__pool_init(rl__pool *p, const char *url,
                            const redislock_options *o);

/* The same for a server whose password is its URL's alone (a sentinel:
 * the options' password and REDISCLI_AUTH are the data nodes'). */
redislock_err rl__pool_init_own_auth(rl__pool *p, const char *url,
                                     const redislock_options *o);

void rl__pool_fini(rl__pool *p);

/* Borrows an idle connection, or opens one if fewer than max are open,
 * or waits for one to be returned. */
redislock_err rl__pool_borrow(rl__pool *p, rl__conn **out);

/* The same, a connection it must open waited for no longer than
 * budget_ms at each step (connect, handshake, vet) when budget_ms is
 * positive: a round with a per-server budget must not wait on a server
 * that accepts connections but does not answer for the command timeout.
 * The connection it gives has the pool's command timeout again. */
redislock_err rl__pool_borrow_within(rl__pool *p, int64_t budget_ms,
                                     rl__conn **out);

/* Takes an idle connection that is still good, without waiting or
 * connecting: 1 when *out got one, 0 when there was none. */
int rl__pool_take_idle(rl__pool *p, rl__conn **out);

/* Takes a good idle connection out of the pool for a blocking call
 * (BLPOP): 1 when *out got one, 0 when there was none. It no longer
 * counts against max while out, so a caller that blocks on it never makes
 * the pool's other callers wait; rl__pool_attach puts it back. Why not a
 * connection of the waiter's own: a handle that waits right after its
 * attempt then needs one server connection, not two. */
int rl__pool_detach(rl__pool *p, rl__conn **out);

/* Puts back a connection rl__pool_detach gave, its reply timeout the
 * pool's again: idle when it is good and the pool has room, else closed. */
void rl__pool_attach(rl__pool *p, rl__conn *conn);

/* The most pools rl__pools_borrow takes, and the size of each detail. */
#define RL_POOLS_PAR_MAX RL_REQ_MAX_PAR
#define RL_POOL_DETAIL RL_REQ_DETAIL

/* Borrows a connection from each pool i with want[i] into out[i], the
 * ones that must be opened all at once (a thread each), so that servers
 * that are down or stopped cost one connect timeout together rather than
 * one each, and each open no more than budget_ms at a step when that is
 * positive (see rl__pool_borrow_within); err[i] gets each outcome and
 * detail[i] a failure's detail. n is at most RL_POOLS_PAR_MAX. */
void rl__pools_borrow(rl__pool *const *pools, size_t n, const int *want,
                      int64_t budget_ms, rl__conn **out, redislock_err *err,
                      char (*detail)[RL_POOL_DETAIL]);

/* Returns a connection; a broken one is closed, and the next borrower
 * opens a fresh one: that is how a dropped connection is re-established. */
void rl__pool_give_back(rl__pool *p, rl__conn *conn);

/* Runs one command on a borrowed connection, its reply awaited for the
 * pool's command timeout: the constructors' checks (a PING, a cluster's
 * map, the sentinels' answers). Error replies are returned as replies. */
redislock_err rl__pool_command(rl__pool *p, int argc, const char **argv,
                               rl__reply **out);

/* Opens a connection now and checks it with PING, so that a wrong
 * address, password or database fails at once. */
redislock_err rl__pool_check(rl__pool *p);

#endif
