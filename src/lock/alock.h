/*
 * One client's lock operations on an application's event loop (issue
 * 16): acquire with waiting, release and extend, each ending in a
 * callback on the loop, none of them blocking. They take the same steps as
 * the blocking calls (acquire.h; lock.h's halves of release and extend),
 * sequenced by replies and timers instead of a blocked thread.
 *
 * Per server the loop keeps one connection for requests (pipelined,
 * answered in order) and one subscribed to the wake channels: a waiter
 * listens on the channel named like the wake list a blocked waiter pops
 * (rl_wake in lib.lua publishes to both), so many waiters share one
 * connection. A waiter subscribes after its first refused attempt and
 * tries again once the server has confirmed the subscription, so a
 * release between the two is not missed; a message wakes the loop's
 * longest-paused waiter on that channel, and each waiter's pause (to the
 * holder's TTL, the deadline, or the retry strategy's delay) is a timer
 * of the loop.
 *
 * With watchdog, the loop renews the lock (watchdog.c's decisions on a
 * timer of the loop, the renewals on the request connection), and a loss
 * reaches on_lost on the loop's thread and the validity; no eventfd.
 *
 * Single, sharded, cluster and Sentinel clients (a cluster's redirections
 * and a Sentinel failover: aroute.c's journeys) and Redlock clients (a
 * request to every server at once, a round, decided by redlock.c);
 * fair waiters (their handle's channel); sets of keys that one script
 * reaches, whose waiter listens on the channel of the key that refused
 * it. An attempt whose reply is lost, or that is in flight when its
 * acquire is cancelled, is swept on the loop (abandon.lua, every key of
 * a set, tried again while the server cannot be reached); what is left
 * when the loop is freed goes to the client's keeper thread (keeper.h).
 *
 * The replica-sync and AOF guards: WAIT (WAITAOF) behind each acquire,
 * extend and renewal on the same connection (request.c; for every
 * replica, INFO replication before it and a second WAIT when the master
 * has more replicas than the first asked for), their answers in
 * l->acks; an acquire they leave not durable is given back by a sweep.
 *
 * Sets of keys that no one script reaches (a sharded client's over
 * several servers, a cluster's over several slots) go group by group
 * through agroup.c. The one thing the loop refuses
 * (REDISLOCK_EINVAL with the reason): the release or extend of a lock
 * that the blocking calls took with the watchdog, which the keeper
 * thread renews.
 *
 * Single-threaded: every call here, and every callback, on the loop's
 * thread. One operation at a time per lock handle.
 */
#ifndef RL_ALOCK_H
#define RL_ALOCK_H

#include <stdint.h>

#include "aconn.h"
#include "lock.h"
#include "loop.h"
#include "ploop.h"
#include "quorum.h"
#include "track.h"

typedef struct rl__alock rl__alock;

/* An operation's outcome, as the blocking call would return it, with
 * redislock_errdetail() set; on the loop's thread. The callback may start
 * another operation, on this lock or any other. */
typedef void (*rl__alock_cb)(redislock_lock *l, redislock_err err, void *arg);

/* c's operations on the loop whose callbacks ops gives (see loop.h). c
 * must outlive it. */
redislock_err rl__alock_new(redislock_client *c, const rl__loop_ops *ops,
                            rl__alock **out);

/* Ends every operation under way with REDISLOCK_ECANCELED (their
 * callbacks run first), closes the connections. Not from a callback. NULL
 * is a no-op. */
void rl__alock_free(rl__alock *al);

/* The application's events and timer, handed on (loop.h). */
void rl__alock_io(rl__alock *al, int fd, int what);
void rl__alock_timeout(rl__alock *al);

/* c's operations on a new private loop (ploop.h), which *pl drives on
 * the calling thread: a blocking call's engine, or the keeper's. Freed
 * with rl__alock_free_on_ploop. */
redislock_err rl__alock_on_ploop(redislock_client *c, rl__ploop **pl,
                                 rl__alock **al);
void rl__alock_free_on_ploop(rl__ploop *pl, rl__alock *al);

/* Acquires l as redislock_acquire would, waiting within o->wait_ms. o is
 * copied, its strings (owner, metadata) borrowed until the callback.
 * An error returned means no callback comes. */
redislock_err rl__alock_acquire(rl__alock *al, redislock_lock *l,
                                const redislock_acquire_options *o,
                                rl__alock_cb cb, void *arg);

/* Releases l (hold_after_ms as redislock_release_hold), or extends its
 * lease to ttl_ms (redislock_extend). */
redislock_err rl__alock_release(rl__alock *al, redislock_lock *l,
                                int64_t hold_after_ms, rl__alock_cb cb,
                                void *arg);
redislock_err rl__alock_extend(rl__alock *al, redislock_lock *l, int64_t ttl_ms,
                               rl__alock_cb cb, void *arg);

/* Reads l's key's state into info (info_size bytes, the caller's, until
 * the callback), as redislock_inspect. */
redislock_err rl__alock_inspect(rl__alock *al, redislock_lock *l,
                                redislock_info *info, size_t info_size,
                                rl__alock_cb cb, void *arg);

/* Ends an acquire under way on l on this loop with REDISLOCK_ECANCELED,
 * its callback called now; an attempt in flight is abandoned. Releases
 * and extends run to their end. */
void rl__alock_cancel(rl__alock *al, redislock_lock *l);

/* Where a loop sends what outlives its part in it: a lock a blocking
 * call acquired with the watchdog (keep, called on the loop's thread at
 * the grant: the lock's watch made, the renewals to start elsewhere; an
 * error gives the lock back) and the sweeps still under way when a
 * private loop goes idle or any loop is freed (sweep: the data to start
 * them again elsewhere). The client's keeper (keeper.h). */
typedef struct rl__alock_hand {
    redislock_err (*keep)(void *ctx, redislock_lock *l,
                          const redislock_acquire_options *o, int64_t sent_us,
                          int64_t first_us);
    void (*sweep)(void *ctx, struct rl__pool *pool, const rl__lockname *names,
                  int n, const char *token, const char *req, int64_t ttl_ms);
    void *ctx;
} rl__alock_hand;

/* Sets where al's leftovers go (h is copied). Without it, they go
 * nowhere: the leases of its sweeps end them. */
void rl__alock_hand_to(rl__alock *al, const rl__alock_hand *h);

/* al runs on a private loop that runs only during a blocking call
 * (engine.h): the locks it acquires with the watchdog go to its hand's
 * keep, not to renewals on this loop. */
void rl__alock_private(rl__alock *al);

/* Arms t on al's loop at at_us (CLOCK_MONOTONIC), or disarms it: for
 * what drives the loop (the keeper's pending locks). */
redislock_err rl__alock_arm(rl__alock *al, rl__loop_timer *t, int64_t at_us);
void rl__alock_disarm(rl__alock *al, rl__loop_timer *t);

/* A pause of an operation that lives outside this file (observe.c's
 * wait between reads): fire(p) when it is due, or, when al is freed
 * first, gone(p), so that the operation still ends with its callback
 * (REDISLOCK_ECANCELED), as al's own do. The caller's until one of the
 * two is called. */
typedef struct rl__alock_pause {
    rl__loop_timer tm; /* first: the loop hands it back */
    void (*fire)(struct rl__alock_pause *p);
    void (*gone)(struct rl__alock_pause *p);
    rl__alock *al;
    struct rl__alock_pause *next;
} rl__alock_pause;

/* Arms p (its fire and gone set) at at_us on al's loop. */
redislock_err rl__alock_pause_arm(rl__alock *al, rl__alock_pause *p,
                                  int64_t at_us);

/* Ends the armed pause p before it is due: neither fire nor gone is
 * called, and p is the caller's again. */
void rl__alock_pause_end(rl__alock_pause *p);

/* Sends q for key (w->key) on al, as rl__alock_send, and joins w (its key
 * and changed set) to the notices of that key's node (track.h): where
 * they are ready, q goes on the tracking connection, so that the keys it
 * reads are tracked, and *tracked is 1; else on the request connection,
 * and *tracked is 0. A server or ACL that refuses tracking leaves it 0.
 * q->resent, when set, says whether a cluster sent the request on to
 * another node (then its reads were not tracked). The caller leaves w
 * (rl__track_leave) when it waits no more. */
redislock_err rl__alock_send_tracked(rl__alock *al, rl__track_wait *w,
                                     const rl__request *q, rl__aconn_cb cb,
                                     void *arg, int *tracked);

/* Renews l, handed over by a blocking call (its watch, l->watch, made
 * already), on this loop until rl__alock_unkeep. */
redislock_err rl__alock_keep(rl__alock *al, redislock_lock *l);

/* Stops the renewals of l on this loop, then calls gone(arg): at once,
 * or once the renewal out has been answered (its outcome recorded in l,
 * as a renewal that ended before the stop), so that no renewal is sent,
 * or reaches the server, after the release that follows. Also if l is
 * not renewed here. */
void rl__alock_unkeep(rl__alock *al, redislock_lock *l, void (*gone)(void *),
                      void *arg);

/* Stops every renewal on this loop at once (the client goes): a reply
 * to one out is ignored. */
void rl__alock_unkeep_all(rl__alock *al);

/* Starts a sweep (see rl__alock_hand) on this loop. */
void rl__alock_sweep(rl__alock *al, struct rl__pool *pool,
                     const rl__lockname *names, int n, const char *token,
                     const char *req, int64_t ttl_ms);

/* How many sweeps are under way on al, and how long the slowest of
 * their servers may take to connect and answer (ms). */
size_t rl__alock_sweeping(const rl__alock *al, int64_t *slowest_ms);

/* Whether al still waits for the answer to a request that no operation
 * waits for: a fair waiter's leave, the first try of a sweep that gives
 * a lock back (not of one after a lost reply, which the keeper takes
 * over). A private loop runs on until it has
 * none (engine.c settles it), so that a blocking call's requests are
 * answered before it returns, as the blocking driver's were; each has
 * its deadline. */
int rl__alock_busy(const rl__alock *al);

/* A private loop's call has ended: what al is still sweeping goes to
 * its hand (a reply to come is ignored when the loop next runs). */
void rl__alock_idle(rl__alock *al);

/* The fair channel name (len bytes) that al, an idle private loop, kept
 * subscribed for its handle's next wait (a handle's own channel), given
 * up: the handle is being freed. Its UNSUBSCRIBE is written at once and
 * its confirmation read when the loop next runs. Nothing when al keeps
 * no such channel. */
void rl__alock_chan_unkeep(rl__alock *al, const char *name, size_t len);

/* Requests no handle owns (engine.h's blocking reads: a listing, a TTL,
 * a fenced write). rl__alock_send sends q (a script with its keys, or a
 * command: rl__request_send_async) on server p, or with p NULL on the
 * node of key, through a cluster's or Sentinel's routing; cb gets its
 * reply (error replies unmapped) or failure. rl__alock_round sends q to
 * every server of the client at once, each answered within timeout_ms;
 * done gets each's reply or failure (error replies are failures), on
 * the loop, and may take the replies (setting them NULL). Neither can be
 * taken back: the loop runs until they end, or is freed. */
typedef void (*rl__alock_round_cb)(void *arg, rl__round *r);

redislock_err rl__alock_send(rl__alock *al, struct rl__pool *p, const char *key,
                             size_t keylen, const rl__request *q,
                             rl__aconn_cb cb, void *arg);

redislock_err rl__alock_round(rl__alock *al, const rl__request *q,
                              int64_t timeout_ms, rl__alock_round_cb done,
                              void *arg);

/* Asks whoever holds l's key to give it up (revoke.c, revoke.lua):
 * cb gets REDISLOCK_OK once it is asked (now or before), or why not. */
redislock_err rl__alock_revoke(rl__alock *al, redislock_lock *l,
                               const char *reason, rl__alock_cb cb, void *arg);

/* l's sequencer, "FENCE:DIGEST", into buf of size bytes (sequencer.c,
 * sequencer.lua), asked of the server while l holds; and whether the
 * holder sequencer names still holds l's key (seqcheck.lua). cb gets
 * the outcome. */
redislock_err rl__alock_sequencer(rl__alock *al, redislock_lock *l, char *buf,
                                  size_t size, rl__alock_cb cb, void *arg);
redislock_err rl__alock_check_sequencer(rl__alock *al, redislock_lock *l,
                                        const char *sequencer, rl__alock_cb cb,
                                        void *arg);

/* Leader election (elect.c, observe.c; redislock_campaign(3)): a
 * campaign (the acquire with o's wait, then its record), a proclaim and
 * a resignation of the leader l is, the leader read into info
 * (info_size bytes, the caller's) and the next change after info->n,
 * waited for up to timeout_ms on the loop's timer. cb gets the outcome;
 * value and info are the caller's until then. */
redislock_err rl__alock_campaign(rl__alock *al, redislock_lock *l,
                                 const char *value,
                                 const redislock_acquire_options *o,
                                 rl__alock_cb cb, void *arg);
redislock_err rl__alock_proclaim(rl__alock *al, redislock_lock *l,
                                 const char *value, rl__alock_cb cb, void *arg);
redislock_err rl__alock_resign(rl__alock *al, redislock_lock *l,
                               rl__alock_cb cb, void *arg);
redislock_err rl__alock_leader(rl__alock *al, redislock_lock *l,
                               redislock_leader_info *info, size_t info_size,
                               rl__alock_cb cb, void *arg);
redislock_err rl__alock_observe(rl__alock *al, redislock_lock *l,
                                redislock_leader_info *info, int64_t timeout_ms,
                                size_t info_size, rl__alock_cb cb, void *arg);

/* l is being freed: the operation under way on it ends with
 * REDISLOCK_ECANCELED, its callback called now (lock.c). */
void rl__alock_forget(redislock_lock *l);

#endif
