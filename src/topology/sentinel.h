/*
 * A master found through Redis Sentinel: the topology of a
 * redis+sentinel:// client. The sentinels are asked for the master of a
 * name (SENTINEL get-master-addr-by-name), the node they name is
 * confirmed with ROLE, and requests go to it. When a request meets a
 * master that is gone (it cannot be connected to) or has become a replica
 * (READONLY), the sentinels are asked again and the request goes to the
 * new master, once; a request whose reply was lost (the connection broke
 * or timed out after the send) is not sent again, since it may have run,
 * but the next one asks the sentinels first. A renewal or release, which
 * counts only on the master, is confirmed with the sentinels after it
 * ran (rl__sentinel_settled), since a replaced master that lives on
 * takes writes and says "master" until they demote it.
 *
 * Each node gets a pool of its own, kept until the client is freed (lock
 * handles, waiters and the janitor may still hold an old master's), and
 * reused if the sentinels name it again.
 *
 * Above: topology.c. Below: pool.c, url.c.
 */
#ifndef RL_SENTINEL_H
#define RL_SENTINEL_H

#include "pool.h"
#include "request.h"

typedef struct rl__sentinel rl__sentinel;

/* The pause between two askings of the sentinels while a request waits
 * out a failover. */
#define RL_SENTINEL_PAUSE_MS 50

/* Parses url (redis+sentinel://), finds the master through the sentinels
 * and confirms it. The options are copied. */
redislock_err rl__sentinel_new(const char *url, const redislock_options *o,
                               rl__sentinel **out);
void rl__sentinel_free(rl__sentinel *s);

/* The master's node: the one last found (the sentinels asked again
 * first when a request found it gone). */
rl__pool *rl__sentinel_node(rl__sentinel *s);

/*
 * One asking of the sentinels, in turn from the last that answered,
 * until one names a node that ROLE confirms as the master (then the one
 * requests go to, and that sentinel the first asked next time): the
 * questions one after another, whoever sends them (the constructor and
 * rl__sentinel_node on private loops, aroute.c on an event loop).
 * rl__sentinel_walk_next gives the next question: its server in *to and
 * its words in argv (*argc of them); or 0 when the walk is over, its
 * outcome in w->err (REDISLOCK_OK: the master was found; else why not,
 * the detail set). rl__sentinel_walk_heard takes the question's reply
 * r, or its failure err (the question could not be sent, or its reply
 * did not come). Nothing here blocks; the calls take s's lock briefly.
 */
typedef struct rl__sentinel_walk {
    size_t i;        /* sentinels asked so far */
    size_t k;        /* the one asked last */
    rl__pool *named; /* the node it named, to be asked ROLE; or NULL */
    size_t unknown;  /* sentinels that know no such master */
    int done;
    redislock_err err; /* the outcome; before it, the first failure */
    char said[256];    /* that failure's detail */
} rl__sentinel_walk;

void rl__sentinel_walk_start(rl__sentinel_walk *w);
int rl__sentinel_walk_next(rl__sentinel *s, rl__sentinel_walk *w, rl__pool **to,
                           const char *argv[3], int *argc);
void rl__sentinel_walk_heard(rl__sentinel *s, rl__sentinel_walk *w,
                             redislock_err err, const rl__reply *r);

/*
 * The same steps for an event loop, which sends the requests itself
 * (aroute.c): nothing here blocks.
 */

/* The master last found, without asking anyone; *suspect says whether a
 * request has found it gone since (the sentinels are to be asked). */
rl__pool *rl__sentinel_known(rl__sentinel *s, int *suspect);

/* A request found node p gone, or a replica now: the sentinels are to be
 * asked again (if p is still the one they named). */
void rl__sentinel_suspect(rl__sentinel *s, const rl__pool *p);

/* The i-th sentinel to ask (0 the last that answered), with the question
 * in argv; NULL past the last. */
rl__pool *rl__sentinel_asked(rl__sentinel *s, size_t i, const char *argv[3]);

/* Whether what sentinel (one rl__sentinel_asked gave) answered in r
 * still names p the master, p being the node a write that counts only
 * there ran on: REDISLOCK_OK; REDISLOCK_EREADONLY when it names another
 * (the write does not count: p is suspect, and the write goes again to
 * the master the sentinels confirm); else why the sentinel did not say
 * (ask the next). */
redislock_err rl__sentinel_settled(rl__sentinel *s, const rl__pool *sentinel,
                                   const rl__pool *p, const rl__reply *r);

#endif
