/*
 * A private Redis Cluster per test: cluster-enabled servers from the
 * server harness, joined by `redis-cli --cluster create` (three masters or
 * more) or by hand (one master), then waited for, within a bound, until
 * every node reports cluster_state:ok, knows every other node and agrees
 * on which master serves each slot, and every replica is in sync.
 *
 * Every function fails the calling test on error.
 */
#ifndef TH_CLUSTER_H
#define TH_CLUSTER_H

#include <hiredis.h>
#include <stdint.h>

#include "server.h"

#define TH_CLUSTER_MAX 9
/* cluster-node-timeout: short, so that a failover takes about 2 s. */
#define TH_CLUSTER_NODE_TIMEOUT_MS 1000

typedef struct th_cluster {
    int n;       /* servers: the masters, then their replicas */
    int masters; /* as created; a failover may change which are */
    th_server *s[TH_CLUSTER_MAX];
    const char *seeds[TH_CLUSTER_MAX]; /* their redis://127.0.0.1:port */
} th_cluster;

/* Starts masters masters (1, or 3 and more) with replicas replicas each. */
th_cluster *th_cluster_start(int masters, int replicas);

/* Stops every server (by pid) and frees c. NULL is a no-op. */
void th_cluster_stop(th_cluster *c);

/* Waits up to timeout_ms until the servers that still run agree (see
 * above); servers killed by the test (s[i] NULL) are left out. */
void th_cluster_wait_ok(th_cluster *c, int64_t timeout_ms);

/* The index of the server that serves slot, by CLUSTER SLOTS of a
 * running one; -1 when none does. */
int th_cluster_owner(th_cluster *c, unsigned slot);

/* key's value on its slot's master (NULL: none); malloc'ed. */
char *th_cluster_value(th_cluster *c, const char *key);

/* A key "{<stem><i>}k" (written into buf) that a master other than
 * avoid serves, the first such i; avoid -1: i = 0. Its master in *at. */
const char *th_cluster_key_away(th_cluster *c, const char *stem, int avoid,
                                int *at, char *buf, size_t size);

/* The replica of master m: the server whose replication names m's port;
 * -1 when none does. */
int th_cluster_replica_of(th_cluster *c, int m);

/* CLUSTER KEYSLOT of key, asked of a running server. */
unsigned th_cluster_keyslot(th_cluster *c, const char *key);

/* A connection (unix socket) to server i. Free with redisFree(). */
redisContext *th_cluster_redis(th_cluster *c, int i);

/* SIGKILLs server i (the real fault: no goodbye to the cluster) and
 * forgets it: s[i] becomes NULL. */
void th_cluster_kill(th_cluster *c, int i);

/* CONFIG SET name value on every server that runs. */
void th_cluster_config_set(th_cluster *c, const char *name, const char *value);

/* Waits until a replica of master i has every write i has taken so far:
 * writes "<key>:sync" there (key has a hash tag of a slot i serves) and
 * WAITs for one replica's ack of it. A WAIT on a connection that wrote
 * nothing returns at once, whatever the replicas lack. */
void th_cluster_synced(th_cluster *c, int i, const char *key);

/* SIGSTOPs server i (frozen set: a node cut off, alive, that neither
 * answers nor hears of the cluster) or SIGCONTs it (frozen 0). */
void th_cluster_freeze(th_cluster *c, int i, int frozen);

/* Polls server i's ROLE until it says master; fails the test after ms.
 * Returns the ms it took. */
int64_t th_cluster_wait_master(th_cluster *c, int i, int64_t ms);

/* errorstat_<name> count (MOVED, ASK, ...) of server i, from INFO
 * errorstats: how many times it answered that error. */
long long th_cluster_errorstat(th_cluster *c, int i, const char *name);

/* One deliberately non-atomic increment (GET, then SET n + 1) of counter
 * on r, meant to run under a lock: any overlap of two holders loses one.
 * Returns 0, or -1 when Redis failed. */
int th_cluster_incr(redisContext *r, const char *counter);

/* The counter's value (0 when unset). */
long long th_cluster_counter(redisContext *r, const char *counter);

/* Node i's id (CLUSTER MYID); malloc'ed. */
char *th_cluster_node_id(th_cluster *c, int i);

/* Tells the servers created as masters, all but skip (-1: none), that
 * slot is node id's (CLUSTER SETSLOT slot NODE id), one after another. */
void th_cluster_slot_to(th_cluster *c, unsigned slot, const char *id, int skip);

/* Moves every key of slot from src, a connection to the node where the
 * slot is MIGRATING, to the node on port dport, where it is IMPORTING. */
void th_cluster_migrate_keys(redisContext *src, int dport, unsigned slot);

/* A rival of a lock's holder on server i (a master, or the replica about
 * to be promoted): SET key NX PX 60000 every poll, its refusals (MOVED
 * while i is a replica, nil while the key is there) counted, until it
 * gets the key or ms pass; its connection is made again when it breaks
 * (SIGPIPE is ignored from here on). Between polls, between(arg) runs
 * (a loop's turns; NULL: a 20 ms sleep). Returns the ms after the call
 * at which the rival got the key, *held then set to holds(arg) (whether
 * the holder still believed it held; NULL: redislock_check of arg, a
 * lock handle, says it holds), or -1; it logs what it saw. */
int64_t th_cluster_rival(th_cluster *c, int i, const char *key, int64_t ms,
                         void (*between)(void *arg), int (*holds)(void *arg),
                         void *arg, int *held);

#endif
