/*
 * The request layer: one request type for everything a lock operation
 * sends, a script with its keys and arguments (or one bare command),
 * optionally with a PING before it and followed in the same write by
 * WAIT and WAITAOF (the guards), on an event loop's connection. The one
 * NOSCRIPT fallback lives here: a server that lacks a script (after a
 * restart, SCRIPT FLUSH, or a node just promoted or added) gets SCRIPT
 * LOAD before the EVALSHA is sent again, in one round trip, and the
 * script whole with EVAL only when that still finds none (an ACL
 * without SCRIPT).
 *
 * Above: aroute.c (a cluster's and Sentinel's routing) and the lock
 * layer's engine. Below: aconn.c and script.c.
 */
#ifndef RL_REQUEST_H
#define RL_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "aconn.h"
#include "conn.h"
#include "script.h"
#include "seen.h"

typedef struct rl__request {
    /* A script with its keys and arguments... */
    const rl__script *s;
    int nkeys, nargs;
    const char *const *keys;
    const size_t *klens;
    const char *const *args;
    const size_t *lens;
    /* (When s is NULL: one command, its words in args; no keys.) */
    /* Non-NULL: a command that goes first, in the same write, its reply
     * dropped; a script the server lacked is sent again without it. A
     * PING before a fair release: Redis writes its output to the clients
     * that got some during one pass of its event loop most recent first,
     * so the caller, who got PONG before its script ran, is written to
     * after the subscribers the script published to: the next holder of
     * a fair hand-off hears before the releaser does, rather than after
     * the releaser has gone on to its next request. */
    const rl__cmd *first;
    /* > 0: WAIT wait_replicas wait_ms follows the script on the same
     * connection, in the same write; its answer goes to *acked. */
    int wait_replicas;
    int64_t wait_ms;
    long long *acked;
    /* Non-NULL: wait for every replica the master has (seen.h). INFO
     * replication goes before the script; when the master needs more
     * replicas than wait_replicas (rl__seen_guess), a second WAIT for
     * them follows. How many it needs goes to *need (-1: unknown, not a
     * master). On an event loop too: INFO goes in the first round only,
     * and the second WAIT once the first has answered. */
    rl__seen *all;
    long long *need;
    /* Either > 0: WAITAOF wait_aof_local wait_aof_replicas wait_ms
     * follows (after the WAIT when there is one); its answer goes to
     * aof_acked[0] (local) and aof_acked[1] (replicas), -1 each for an
     * error reply. */
    int wait_aof_local, wait_aof_replicas;
    long long *aof_acked;
    /* A write that counts only on the master (a renewal, a release, an
     * abandon): a topology whose master can change under it (Sentinel)
     * confirms, after it ran, that its node is still the master, or sends
     * it again to the one that is. */
    int settle;
    /* Non-NULL: set to 1 when the request is sent again: by a cluster's
     * or Sentinel client's router (a redirection, a pause: aroute.h), so
     * that its reply is not from the connection it was first sent on, or
     * after a script the server lacked was loaded, so that what went just
     * before the first send (a tracked read's CLIENT CACHING) did not
     * serve it. */
    int *resent;
    /* A release that the node may run as its own compare-and-delete of
     * keys[0] against args[0] (a plain lock, nothing held after it, no
     * first command): sent so where the node has one (rl__conn_cfg.caps),
     * its reply 1 the script's "released"; anything else (0: the token
     * is not the value, which a waiter's mark or another holder makes,
     * or the key is gone; a key of another type; any error) sends the
     * script, whose answer the caller gets, and a refusal (an unknown
     * command, an ACL) also tells the node's memo. */
    int native;
    /* Non-NULL: a cheaper script tried first in s's place, on any node
     * (a set's release that nobody waits for, set_free.lua), over the
     * keys at every lean_stride-th place (keys[0], keys[lean_stride],
     * ...: each lock of the set) and args[0] alone; no first command.
     * Its reply 1 is the outcome; anything else sends s, as native's
     * does, whose answer the caller gets. */
    const rl__script *lean;
    int lean_stride;
    /* A release whose script may leave the readers' wake-up to a
     * command behind it (release.lua, its last argument given as ""):
     * COPY of its key of role RL_KEY_WAKE to its RL_KEY_RWAKE follows
     * the script in the same write, 1 each time the script itself is
     * sent (not a native or lean try), 2 only when it follows a native
     * try that did not release (a waiter's mark: someone waits). Where
     * the node's memo (rl__conn_cfg.copy) has seen COPY run, the last
     * argument becomes "c"; until then the COPY goes with it left "",
     * so that the script wakes the readers itself and the COPY (which
     * then finds their list woken or none to copy) only tells the memo.
     * A refusal (an ACL without COPY) stops it for the node. */
    int copy_wake;
} rl__request;

/* What a node offers in place of the release script (rl__conn_cfg.caps):
 * DELIFEQ key value (Valkey 9.0+) or DELEX key IFEQ value (Redis 8.4+). */
enum { RL_CAP_NONE = 0, RL_CAP_DELIFEQ = 1, RL_CAP_DELEX = 2 };

/* The string value of field name in r, a HELLO reply (pairs in an array
 * under RESP2, a map under RESP3), or NULL. */
const char *rl__hello_field(const rl__reply *r, const char *name);

/* The native compare-and-delete the server that answered HELLO (without
 * arguments) with r offers, by its name and version: RL_CAP_NONE for
 * an error, another server, or an older version. */
int rl__request_caps(const rl__reply *r);

/* The bytes rl__request_copy needs for q: its keys' and arguments'
 * pointers, lengths and bytes; -1 (the error detail set) when q has more
 * than RL_SCRIPT_MAX_ARGS of them. */
long rl__request_bytes(const rl__request *q);

/* Copies q into *o for a request that outlives its caller's buffers (on
 * an event loop): o's keys and arguments, their pointers and lengths
 * included, go into data (rl__request_bytes of it, with no alignment
 * asked); returns data past them. */
char *rl__request_copy(rl__request *o, const rl__request *q, char *data);

/* Whether q ends with a WAITAOF. */
int rl__request_waitaof(const rl__request *q);

/* How long q's trailing WAIT and WAITAOF may take, on top of a
 * command's time: 0 without them. */
int64_t rl__request_wait_ms(const rl__request *q);

/*
 * On an event loop: sends the script request q on c, and cb gets its one
 * reply (valid during the call; error replies are replies, for
 * rl__reply_check) or the failure. A script the server lacks is sent
 * again whole, once, at the back of the connection's queue, so replies
 * to several requests may come out of their order. q's keys and
 * arguments are copied. q's guards (WAIT, WAITAOF) are sent behind the
 * script, and again behind a script sent again; cb comes once they have
 * answered, their answers in *q->acked and q->aof_acked (which must
 * outlive the callback); INFO for every replica (q->all) and q->first
 * (static: it is not copied) go before it in its first round, q->first's
 * reply dropped. Or one command: no script and no keys, the command's
 * words in args (so that it is copied as a script's arguments are), its
 * reply as it comes.
 */
redislock_err rl__request_send_async(rl__aconn *c, const rl__request *q,
                                     rl__aconn_cb cb, void *arg);

/* What q runs, for messages: its script's name, or "the command". */
const char *rl__request_name(const rl__request *q);

#endif
