/*
 * The client: a parsed URL, the options, and a small pool of connections
 * so that threads sharing the client never share a hiredis context (which
 * is not thread-safe). A call borrows one connection for its duration;
 * the pool opens up to max_connections and makes further callers wait.
 */
#ifndef RL_CLIENT_H
#define RL_CLIENT_H

#include "conn.h"
#include "script.h"
#include "watchdog.h"

/* Runs n pipelined commands on a pooled connection. */
redislock_err rl__client_exec(redislock_client *c, int n, const rl__cmd *cmds,
                              rl__reply **out);

/* Runs a script on a pooled connection (see rl__script_run). */
redislock_err rl__client_script(redislock_client *c, const rl__script *s,
                                const char *key, size_t keylen, int nargs,
                                const char **args, const size_t *lens,
                                rl__reply **out);

/* The client's watchdog, started on first use. */
redislock_err rl__client_watchdog(redislock_client *c, rl__watchdog **out);

#endif
