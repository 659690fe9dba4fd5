/*
 * The blocking calls' way onto the one engine: a client's stack of idle
 * private loops (ploop.h). A blocking call takes one, starts its
 * operation on the loop's engine (alock.h), runs the loop on the calling
 * thread until the operation's callback, and puts the loop back, its
 * connections open for the next call, as libcurl's easy interface runs
 * its multi interface. Threads calling at once each take their own loop.
 *
 * Steps 1-3 of docs/ARCHITECTURE.md's plan: acquire, release, extend.
 */
#ifndef RL_ENGINE_H
#define RL_ENGINE_H

#include "alock.h"

typedef struct rl__engine rl__engine;

/* Starts an operation on l on the engine al, to end with cb(l, err, cbarg)
 * (rl__alock_release and the like, with their own arguments in arg). An
 * error returned means no callback comes. */
typedef redislock_err (*rl__engine_start)(rl__alock *al, redislock_lock *l,
                                          void *arg, rl__alock_cb cb,
                                          void *cbarg);

/* Frees the idle loops. No call may be running. NULL is a no-op. */
void rl__engine_free(rl__engine *e);

/* rl__engine_run on l's client's engine, made on first use. */
redislock_err rl__engine_call(redislock_lock *l, rl__engine_start start,
                              void *arg, int acquire);

/* A blocking read or write no handle owns, run on c's engine as a call
 * (rl__alock_send): q on server p, or with p NULL on the node of key;
 * *out its reply (error replies mapped), the caller's to free. */
redislock_err rl__engine_request(redislock_client *c, struct rl__pool *p,
                                 const char *key, size_t keylen,
                                 const rl__request *q, rl__reply **out);

/* q on every server of c at once, each answered within timeout_ms
 * (rl__alock_round): *out each's reply or failure, the caller's to free
 * (rl__round_free). */
redislock_err rl__engine_round(redislock_client *c, const rl__request *q,
                               int64_t timeout_ms, rl__round *out);

/* After redislock_cancel set l's flag: wakes the loop l's acquire runs
 * on, if any. */
void rl__engine_cancel(redislock_lock *l);

/* l is being freed: the fair channel an idle loop of its client's engine
 * kept for l's next wait (rl__alock_chan_unkeep) is given up, so that no
 * subscription outlives its handle. A loop that is running a call
 * meanwhile keeps it until it subscribes another fair channel, or is
 * freed (the client's free, or max_idle loops idle already). */
void rl__engine_chan_unkeep(redislock_lock *l);

#endif
