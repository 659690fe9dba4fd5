/*
 * One Redis server: its parsed URL, the effective password and timeouts,
 * and a small pool of connections, so that threads sharing a client never
 * share a hiredis context (which is not thread-safe). A call borrows one
 * connection for its duration; the pool opens up to max connections and
 * makes further callers wait.
 */
#ifndef RL_POOL_H
#define RL_POOL_H

#include <pthread.h>

#include "conn.h"
#include "script.h"

struct rl__cluster;

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
    /* The cluster this node belongs to, or NULL outside cluster mode. In
     * cluster mode the calls below go where the cluster's map and
     * redirections say: the pool they are given is only the first guess. */
    struct rl__cluster *cluster;
    /* Checks each connection the pool opens before its first use, or
     * NULL: a failure closes it and fails the borrow. The client's
     * same-server checks (ident.h) use it; set before the pool is
     * shared. */
    redislock_err (*vet)(struct rl__pool *p, rl__conn *conn, void *arg);
    void *vet_arg;
} rl__pool;

/* Parses url and sets the pool up; opens nothing. The pool is cleaned up
 * by rl__pool_fini even on failure. */
redislock_err rl__pool_init(rl__pool *p, const char *url,
                            const redislock_options *o);

void rl__pool_fini(rl__pool *p);

/* Borrows an idle connection, or opens one if fewer than max are open,
 * or waits for one to be returned. */
redislock_err rl__pool_borrow(rl__pool *p, rl__conn **out);

/* Returns a connection; a broken one is closed, and the next borrower
 * opens a fresh one: that is how a dropped connection is re-established. */
void rl__pool_give_back(rl__pool *p, rl__conn *conn);

/* Runs n pipelined commands on a borrowed connection. In cluster mode
 * they go to p (a command without a key, like SCAN, is for that node) and
 * follow MOVED and ASK replies. */
redislock_err rl__pool_exec(rl__pool *p, int n, const rl__cmd *cmds,
                            rl__reply **out);

/* The same for commands on key (or its helper keys): in cluster mode they
 * go to the master of key's slot by the current map. */
redislock_err rl__pool_exec_key(rl__pool *p, const char *key, size_t keylen,
                                int n, const rl__cmd *cmds, rl__reply **out);

/* The same on p itself, following nothing, in any mode. */
redislock_err rl__pool_exec_here(rl__pool *p, int n, const rl__cmd *cmds,
                                 rl__reply **out);

/* Runs a script on a borrowed connection (see rl__script_run). */
redislock_err rl__pool_script(rl__pool *p, const rl__script *s, const char *key,
                              size_t keylen, int nargs, const char **args,
                              const size_t *lens, rl__reply **out);

/* The same, with the reply timeout lowered to timeout_ms for this call
 * when that is shorter than the pool's (the watchdog must know before a
 * lease runs out, not a full command timeout later). */
redislock_err rl__pool_script_within(rl__pool *p, int64_t timeout_ms,
                                     const rl__script *s, const char *key,
                                     size_t keylen, int nargs,
                                     const char **args, const size_t *lens,
                                     rl__reply **out);

/* rl__pool_script_within followed, on the same connection and in the same
 * write, by WAIT replicas wait_ms (WAIT counts the replicas that have this
 * connection's writes). *acked gets WAIT's answer. */
redislock_err rl__pool_script_wait(rl__pool *p, int64_t timeout_ms,
                                   const rl__script *s, const char *key,
                                   size_t keylen, int nargs, const char **args,
                                   const size_t *lens, int replicas,
                                   int64_t wait_ms, rl__reply **out,
                                   long long *acked);

/* Runs a script with several keys (see rl__script_run_n). */
redislock_err rl__pool_script_keys(rl__pool *p, const rl__script *s, int nkeys,
                                   const char **keys, const size_t *klens,
                                   int nargs, const char **args,
                                   const size_t *lens, rl__reply **out);

/* Opens a connection now and checks it with PING, so that a wrong
 * address, password or database fails at once. */
redislock_err rl__pool_check(rl__pool *p);

#endif
