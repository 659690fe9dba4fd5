/*
 * What the election's two files share (elect.c: campaign, proclaim,
 * resign; observe.c: the leader and its changes): elect.lua's request
 * and the checks every election call makes.
 */
#ifndef RL_ELECT_H
#define RL_ELECT_H

#include "alock.h"

/* elect.lua with args (nargs of them) on l's key and its record; cb gets
 * the reply (error replies unmapped) or the failure. With w (its changed
 * set), a read whose keys the server tracks where it can, w joined to the
 * notices of the key's node (rl__alock_send_tracked: *tracked, and
 * *resent for a cluster's redirection, say what came of it). */
redislock_err rl__elect_send(rl__alock *al, redislock_lock *l,
                             const char *const *args, const size_t *lens,
                             int nargs, rl__aconn_cb cb, void *arg);
redislock_err rl__elect_send_tracked(rl__alock *al, redislock_lock *l,
                                     const char *const *args,
                                     const size_t *lens, int nargs,
                                     rl__track_wait *w, int *tracked,
                                     int *resent, rl__aconn_cb cb, void *arg);

/* REDISLOCK_EINVAL, with the detail, for a value no leader may have
 * (too long, not printable) and for a handle no election runs on (a set,
 * a Redlock client). */
redislock_err rl__elect_check_value(const char *value);
redislock_err rl__elect_check_lock(const redislock_lock *l);

#endif
