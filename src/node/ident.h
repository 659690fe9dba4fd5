/*
 * Which servers of a sharded or Redlock client are the same server.
 *
 * A sharded client routes by canonical names (canon.h), and refuses a
 * list that names one server's database twice: by name before it
 * connects, by INFO's run_id once it has. It also keeps, on each server,
 * a registry key holding the name it routes that server by; a client
 * that names the server otherwise is refused, since it would route keys
 * elsewhere. The registry only detects: routing never reads it, so a
 * server that restarts empty loses nothing but the check until the next
 * connection writes the name again.
 *
 * A Redlock client refuses two entries that are one server, whatever
 * their databases, since they would be one vote counted twice. It reads
 * each entry's run_id from its first connection that answers: at
 * construction for the servers that answer in time, later for those
 * that were down or slow, and an entry then found to be another's server
 * never votes (its connections fail with REDISLOCK_EINVAL). Until it is
 * read the entry does not vote, and a Redlock round waits for it no
 * longer than its per-server timeout (the round's timer, alock.c), so a
 * server that accepts connections but never answers costs each round
 * that timeout and not the command timeout. Run ids change when a server
 * restarts, so one case escapes: one server listed twice, one spelling
 * unreachable at construction, and the server restarting before that
 * spelling first answers.
 */
#ifndef RL_IDENT_H
#define RL_IDENT_H

#include <pthread.h>

#include "canon.h"
#include "pool.h"

/* INFO's run_id: 40 hex digits. */
#define RL_RUNID_MAX 41

typedef struct rl__ident {
    char canon[RL_CANON_MAX]; /* the name the ring hashes ("" in Redlock) */
    char runid[RL_RUNID_MAX]; /* at the latest connection; "" unknown */
    size_t dup_of;            /* Redlock: 1 + the entry it repeats, or 0 */
    int known;                /* Redlock: runid has been read */
} rl__ident;

typedef struct rl__idset {
    rl__pool *pools; /* borrowed from the client */
    size_t n;
    int redlock;
    rl__ident *ids;
    char *regkey; /* the registry key (sharded) */
    size_t regkeylen;
    pthread_mutex_t mu; /* guards ids once connections are vetted */
} rl__idset;

/* Names the servers of pools (already initialised) and refuses, with
 * REDISLOCK_EINVAL, a list whose names repeat a server. Nothing is sent.
 * For Redlock it also makes the pools' connections read which server
 * they reached (INFO, within the connection's command timeout). Clean
 * up with rl__idset_fini even on failure. */
redislock_err rl__idset_init(rl__idset *s, rl__pool *pools, size_t n,
                             int redlock, const char *prefix, size_t plen);

/* After the pools answered: the run_id checks (and, sharded, the unix
 * sockets' names and the registry). REDISLOCK_EINVAL names both
 * spellings of a repeated server and the fix. */
redislock_err rl__idset_check(rl__idset *s);

/* For a lazy client (redislock_options.lazy_connect), instead of
 * rl__idset_check: nothing is asked now. A Redlock entry is read as its
 * first connection comes up, as a late server's is. A sharded client
 * keeps its names by the URLs (a unix socket, whose name needs the
 * server's TCP port, is REDISLOCK_EINVAL), and each new connection
 * checks the registry before any request goes out on it; a server
 * listed twice under two spellings is then refused by the registry (the
 * second spelling finds the first's name) rather than by its run_id.
 * The pools must already be lazy (rl__pool_lazy). */
redislock_err rl__idset_lazy(rl__idset *s);

/* Server i's canonical name. */
const char *rl__idset_name(const rl__idset *s, size_t i);

void rl__idset_fini(rl__idset *s);

#endif
