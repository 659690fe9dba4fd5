/*
 * A lock's script requests with their keys, and the abandon request
 * (keyed.c).
 */
#ifndef RL_KEYED_H
#define RL_KEYED_H

#include "lock.h"

/* Sends the script request q for l's lock (the keys its layout names,
 * req: the request whose void key it takes, or NULL) on the
 * non-blocking connection c, a connection to node at (q's keys and
 * arguments are copied); on a cluster (rt not NULL) then wherever its
 * redirections say (aroute.h). cb gets its reply or failure (error
 * replies unmapped: rl__reply_check maps them). */
redislock_err rl__lock_send_async(redislock_lock *l, struct rl__aroute *rt,
                                  rl__aconn *c, rl__pool *at, const char *req,
                                  rl__request *q, rl__aconn_cb cb, void *arg);

/* The script request q for l's lock as rl__lock_send_async sends it
 * (its keys, kept in ks: rl__keyset_free after out's last use), into
 * *out: for one request sent alike to several servers (a Redlock
 * round), its keys made once. */
redislock_err rl__lock_keyed(redislock_lock *l, const char *req,
                             const rl__request *q, rl__request *out,
                             rl__keyset *ks);

/* rl__lock_send_async for the keys names (n of them, the first routing
 * it): a group of a set's keys that one script reaches (agroup.c). */
redislock_err rl__lock_names_send_async(struct rl__aroute *rt, rl__aconn *c,
                                        rl__pool *at, const rl__lockname *names,
                                        int n, const char *req,
                                        const rl__request *q, rl__aconn_cb cb,
                                        void *arg);

/* One try at making sure an acquire request req (for token or owner id
 * token, with ttl_ms), whose reply was lost, does not hold the lock (or
 * the set) named by names (n of them; the first routes), now or when it
 * arrives late (abandon.lua, set_abandon.lua): sent on c, a connection
 * to node at (through a cluster's redirections when rt is not NULL); cb
 * gets the reply or failure (error replies unmapped). */
redislock_err rl__abandon_send_async(struct rl__aroute *rt, rl__aconn *c,
                                     rl__pool *at, const rl__lockname *names,
                                     int n, const char *token, const char *req,
                                     int64_t ttl_ms, rl__aconn_cb cb,
                                     void *arg);

/* Whether an abandon that failed with err is worth another try: only a
 * failure to reach the server, or a server that cannot serve for now
 * (loading, a busy script). */
int rl__abandon_again(redislock_err err);

#endif
