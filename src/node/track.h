/*
 * What one server says of the keys a loop's waiters wait behind, without
 * asking it again: the server's own notice that a key changed
 * (client-side caching's invalidations, CLIENT TRACKING, Redis 6.0 and
 * later), for a waiter behind a holder whose release wakes nobody
 * (another library's lock, a hand-written SET NX), who would otherwise
 * ask again and again until the key is free (issue 38, item 4).
 *
 * Two connections of the loop's, made when a waiter first joins and
 * closed when the last leaves: one subscribed to __redis__:invalidate,
 * and one with tracking on, its notices sent to the first (REDIRECT: in
 * RESP2, which hiredis 0.14 speaks, a connection that sends commands
 * cannot also take pushes), in OPTIN mode, so that only the reads a
 * waiter asks for (rl__track_conn: CLIENT CACHING yes, then its request)
 * are tracked. The server sends one notice a read, when the key is next
 * written, deleted or expires, or when it must forget the read.
 *
 * A waiter hears "changed" for a notice naming its key, a notice for
 * every key (FLUSHALL), whenever the notices may have been lost (a
 * connection failed, the subscription ended), and when tracking has
 * just become ready: it then reads the key again. A server or ACL that refuses
 * any of the commands is not asked again: rl__track_ready stays 0, and waiters
 * poll as before.
 *
 * Single-threaded: the loop's thread, as the loop.
 */
#ifndef RL_TRACK_H
#define RL_TRACK_H

#include "loop.h"

typedef struct rl__track rl__track;

/* A waiter: the key it waits behind, and what hears its change. */
typedef struct rl__track_wait {
    const char *key; /* borrowed until rl__track_leave */
    size_t keylen;
    /* The key changed or may have (see above). May call anything of the
     * tracker's, rl__track_leave for any waiter included. */
    void (*changed)(struct rl__track_wait *w);
    /* The tracker's. */
    rl__track *t;
    struct rl__track_wait *next;
    unsigned pass;
} rl__track_wait;

/* A tracker for cfg's server (borrowed: a pool's) on lp; nothing is
 * connected until a waiter joins. */
redislock_err rl__track_new(rl__loop *lp, const rl__conn_cfg *cfg,
                            rl__track **out);

/* Closes its connections; the waiters still joined hear nothing more.
 * NULL is a no-op. */
void rl__track_free(rl__track *t);

/* w waits behind w->key (again: a no-op but for the next line): the
 * connections are made if they are missing or have failed. */
void rl__track_join(rl__track *t, rl__track_wait *w);

/* w waits no more (a no-op for one not joined); the last to leave
 * closes the connections. */
void rl__track_leave(rl__track_wait *w);

/* 1 when a read can be tracked now (the connections are up and the
 * server said yes to each command), else 0: being set up, or refused. */
int rl__track_ready(const rl__track *t);

/* When ready: asks for the next read on the tracking connection to be
 * tracked (CLIENT CACHING yes) and gives that connection, for the
 * caller's request to go right behind it. */
redislock_err rl__track_conn(rl__track *t, rl__aconn **out);

#endif
