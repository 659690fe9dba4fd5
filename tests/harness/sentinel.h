/*
 * A private Redis Sentinel setup per test: two data nodes from the server
 * harness (node[0] a master, node[1] its replica) and three sentinels
 * monitoring them with quorum 2, each sentinel in its own temp dir with a
 * writable sentinel.conf (sentinels rewrite it). Everything listens on
 * 127.0.0.1 only, on probed TCP ports.
 *
 * The sentinels run the binary under test: $REDIS_SENTINEL when set, else
 * $REDIS_SERVER (else redis-server from PATH) with --sentinel, so that a
 * server matrix run gets sentinels of the same version as the nodes.
 *
 * Every function fails the calling test on error, so callers need not
 * check. A setup still running when the process that started it exits is
 * stopped by the harness's exit list (util.h), sentinels before nodes;
 * the runner also kills the test's process group, which they belong to.
 */
#ifndef TH_SENTINEL_H
#define TH_SENTINEL_H

#include <hiredis.h>
#include <stdint.h>
#include <sys/types.h>

#include "server.h"
#include "util.h"

#define TH_SENTINEL_N 3
#define TH_SENTINEL_NODES 3 /* a master and up to two replicas */

typedef struct th_sentinel_opts {
    const char *master_name; /* NULL: "rlmaster". */
    /* requirepass and masterauth on both nodes (the sentinels get it as
     * auth-pass). NULL: none. */
    const char *data_password;
    /* requirepass on the sentinels, which also use it with each other
     * (sentinel sentinel-pass). NULL: none. */
    const char *sentinel_password;
    int down_after_ms;       /* 0: 1000. */
    int failover_timeout_ms; /* 0: 5000. */
    /* Replicas of node[0]: 0 or 1: one (node[1]); 2: node[1] and node[2]. */
    int replicas;
    /* replica-priority of node[1 + i] (lower is promoted first; 0 here:
     * Redis's default, 100). */
    int priority[TH_SENTINEL_NODES - 1];
} th_sentinel_opts;

typedef struct th_sentinels {
    /* node[0] starts as the master, node[1] (and node[2] with two
     * replicas) as its replicas; nodes counts them. A node killed by the
     * test stays here with pid 0 until restarted or stopped. */
    th_server *node[TH_SENTINEL_NODES];
    int nodes;
    /* The sentinels; sent_pid[i] is 0 once sentinel i is killed. */
    pid_t sent_pid[TH_SENTINEL_N];
    int sent_port[TH_SENTINEL_N];
    char sent_dir[TH_SENTINEL_N][128];
    /* "redis+sentinel://[:<data password>@]127.0.0.1:P1,...,
     * 127.0.0.1:P3/<name>[?sentinel_password=<sentinel password>]";
     * the passwords %-escaped. */
    char url[512];
    char master_name[64];
    char data_password[128];     /* "" when none. */
    char sentinel_password[128]; /* "" when none. */
    int down_after_ms;
    int failover_timeout_ms;
    /* Its entry in the exit list (its nodes are not on it); cleanup.owner,
     * the process that started it, is the only one that stops it. */
    th_cleanup cleanup;
} th_sentinels;

/* Starts the nodes and the sentinels; o may be NULL. Returns once the
 * replica is in sync (master_link_status:up, and connected_slaves:1 on
 * the master), and every sentinel names node[0] as the master and sees
 * the replica and the two other sentinels (flags free of s_down and
 * disconnected). Each wait is bounded; a failure names what did not
 * happen and shows the end of the sentinels' logs. */
th_sentinels *th_sentinels_start(const th_sentinel_opts *o);

/* Stops the sentinels, then the nodes (by pid: SIGTERM, then SIGKILL),
 * removes their dirs and frees t. NULL is a no-op. */
void th_sentinels_stop(th_sentinels *t);

/* The index (0 to nodes - 1) of the node the first sentinel that answers names
 * as the master; -1 when it names neither, or no sentinel answers. */
int th_sentinels_master(th_sentinels *t);

/* kill -9 (and reap) the node the sentinels name as master; fails when
 * they name none. Returns its index. It stays down. */
int th_sentinels_kill_master(th_sentinels *t);

/* Waits up to ms until every running sentinel names one node other than
 * old_master and that node answers ROLE with "master". Returns the ms
 * waited; fails the test after ms. A split vote among the sentinels
 * retries only after twice the failover timeout: allow for it. */
int64_t th_sentinels_wait_failover(th_sentinels *t, int old_master, int64_t ms);

/* Restarts killed node i on its old port, as a replica of the current
 * master, and waits (bounded) until it is in sync and every running
 * sentinel sees it up as a replica. */
void th_sentinels_restart_node(th_sentinels *t, int i);

/* kill -9 (and reap) sentinel i: a sentinel that is down. */
void th_sentinels_kill_sentinel(th_sentinels *t, int i);

/* A rival of a lock's holder on node i: SET key NX PX 60000 every poll,
 * until it gets the key or ms pass, its connection made again when the
 * sentinels close it (they close a promoted node's clients; SIGPIPE is
 * ignored from here on). Between polls, between(arg) runs (a loop's
 * turns, or a sleep). Returns the ms after the call at which the rival
 * got the key, *held then set to holds(arg) (whether the holder still
 * believed it held), or -1; it logs what it saw. */
int64_t th_sentinels_rival(th_sentinels *t, int i, const char *key, int64_t ms,
                           void (*between)(void *arg), int (*holds)(void *arg),
                           void *arg, int *held);

/* A connection to node i (unix socket), authenticated with the data
 * password, 5 s timeout; fails if node i is down. Free with redisFree(). */
redisContext *th_sentinels_node_redis(th_sentinels *t, int i);

/* A TCP connection to sentinel i, authenticated with the sentinel
 * password, 5 s timeout; fails if sentinel i is down. */
redisContext *th_sentinels_sentinel_redis(th_sentinels *t, int i);

#endif
