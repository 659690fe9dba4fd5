/*
 * The node layer. One Redis server: its parsed URL, the effective
 * password and timeouts, the client's admission of its connections, and
 * the connections the constructors' questions left idle, which the
 * first private loops take over. It knows nothing of clusters:
 * topology.h decides which node a request goes to.
 */
#ifndef RL_POOL_H
#define RL_POOL_H

#include <pthread.h>

#include "aconn.h"

typedef struct rl__pool {
    rl__url url;
    char *password; /* the effective one, or NULL */
    char *name;     /* "host:port" or the socket path: the server's identity */
    rl__conn_cfg cfg;
    pthread_mutex_t mu;
    rl__aconn **idle; /* max slots */
    int nidle;
    int max;
    /* The client's admission of each new connection (conn.h; ident.h
     * sets it before the pool is shared, cfg.admit then points here),
     * and what it is for. */
    rl__admit admit;
    void *owner;
    /* The WAITAOF guard's wants (redislock_options.wait_aof_*): the
     * server is checked for them by the first ask. */
    int aof_local, aof_replicas;
    /* A lazy client's node (redislock_options.lazy_connect): no ask at
     * construction, so each new connection carries the checks the
     * constructor would have made (rl__pools_check: PING, HELLO, the
     * WAITAOF guard's), ahead of the client's admission, until one
     * passes; checked is then 1 (under mu). cfg.admit is gate. */
    int lazy, checked;
    rl__admit gate;
    /* Whether the node's scripts go by FCALL (cfg.fn points here; see
     * rl__conn_cfg.fn). */
    int fn;
    /* Its native compare-and-delete (cfg.caps points here; see
     * rl__conn_cfg.caps), from the checks' HELLO, or the probe's
     * (rl__pool_probe). */
    int caps;
    /* Whether COPY runs there (cfg.copy points here; see
     * rl__conn_cfg.copy). */
    int copy;
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

/* The most commands one ask sends, and the size of its detail. */
#define RL_ASK_MAX 5
#define RL_POOL_DETAIL 512

/*
 * Questions to one server, asked on a connection of its pool (an idle one,
 * or one opened for them: admitted as every connection is, and checked
 * for the WAITAOF guard first), their replies awaited for the pool's
 * command timeout: the constructors' checks (a PING, the servers'
 * identities, a cluster's map, the sentinels' answers). Error replies
 * are replies.
 */
typedef struct rl__pool_ask {
    rl__pool *pool;
    int n;
    rl__cmd cmds[RL_ASK_MAX];
    /* What came: each command's reply (the caller frees them with
     * rl__pool_ask_free), or why not. */
    rl__reply *r[RL_ASK_MAX];
    redislock_err err;
    int cut; /* not answered by when enough others had (ETIMEDOUT) */
    char detail[RL_POOL_DETAIL];
} rl__pool_ask;

/* Asks the n asks at once, on a private loop of their own (ploop.h), so
 * that servers down or stopped cost one timeout together rather than one
 * each. With enough > 0, the wait ends once that many asks are answered
 * without failure and quick_ms have passed since they were sent: those
 * not answered by then fail with REDISLOCK_ETIMEDOUT, marked cut (a
 * Redlock client's majority does not wait on the others for a command
 * timeout, yet a slow majority is waited for). The connections then lie
 * idle in their pools, for the first private loop (rl__pool_take). Each
 * ask's outcome is in it (a failure of the loop itself is every
 * unanswered ask's). */
void rl__pools_ask(rl__pool_ask *asks, size_t n, size_t enough,
                   int64_t quick_ms);

void rl__pool_ask_free(rl__pool_ask *a);

/* A PING of p to ask (and a HELLO, which names the kind of server), and
 * the verdict on it: REDISLOCK_OK for a PONG from a Redis server, or the
 * failure, with the detail set (a Redis Sentinel is REDISLOCK_ECONNECT,
 * naming the redis+sentinel:// URL to use instead). */
void rl__pool_ping(rl__pool_ask *a, rl__pool *p);
redislock_err rl__pool_pinged(const rl__pool_ask *a);

/* One command asked of p, its reply in *out (free with rl__reply_free). */
redislock_err rl__pool_command(rl__pool *p, int argc, const char **argv,
                               rl__reply **out);

/* Asks each of the n pools for a PING now, all at once, so that a wrong
 * address, password or database fails at once: the first pool's failure
 * in their order, with its detail. */
redislock_err rl__pools_check(rl__pool *pools, size_t n);

/* Makes p a lazy client's node (see rl__pool.lazy), before it is used.
 * Its connections fail with what the constructor's checks would have
 * returned, until one passes them. */
void rl__pool_lazy(rl__pool *p);

/* New connections to p are admitted by admit (ident.h): directly, or on
 * a lazy node behind its checks. */
void rl__pool_admit_by(rl__pool *p, const rl__admit *admit);

/* Makes p a node a topology found (a cluster's, a Sentinel master's),
 * before it is used: its first connection asks HELLO alone, for the
 * native commands the node offers (caps); any answer admits it, and the
 * connections after it ask nothing. */
void rl__pool_probe(rl__pool *p);

/* An idle connection that is still good, for a private loop to adopt
 * (rl__loop_adopt), or NULL. */
rl__aconn *rl__pool_take(rl__pool *p);

#endif
