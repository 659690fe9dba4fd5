/* The lock handle's state, shared by the modules that act on it:
 * lock.c (handle, release, extend), acquire.c (the acquire's steps),
 * inspect.c (reading a lock's state) and alock.c (the engine). */
#ifndef RL_LOCK_H
#define RL_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "keys.h"
#include "pool.h"
#include "watchdog.h"

struct rl__aroute;

/* Longest token or owner id (other libraries' tokens are UUIDs or base64
 * strings well below this). */
#define RL_TOKEN_MAX 256

/* The value of a hold-after reservation (release.lua): a key nobody owns.
 * No token or owner id may be this. */
#define RL_RESERVED_VALUE "redislock:hold-after"
/* The start of the members a key held by many keeps beside its shares
 * (lib.lua's RL_SEM_LIMIT, RL_SHARED, RL_WRITER): never a share's token. */
#define RL_MEMBER_PREFIX "redislock:"

/* rl__try's and the handle's limit for a reader's share of a lock held
 * shared (share_acquire.lua): any number of them at once. */
#define RL_LIMIT_SHARED (-1)

struct rl__algo;
struct rl__spread;

/* What confirmed a write (an acquire or extend) under the guards: the
 * replicas that have it (WAIT), the master's and the replicas' AOF
 * fsyncs (WAITAOF); -1 each when not asked. */
typedef struct rl__acks {
    int replicas;
    int aof_local;
    int aof_replicas;
    int need; /* replicas WAIT had to reach (-1: unknown) */
} rl__acks;

/* Nothing asked. */
#define RL_ACKS_NONE ((rl__acks){-1, -1, -1, -1})

/* *into becomes the least of itself and a, field by field (a set over
 * several servers is confirmed as its least confirmed group); with first,
 * a itself. */
void rl__acks_least(rl__acks *into, const rl__acks *a, int first);

struct redislock_lock {
    redislock_client *client;
    /* How this handle's requests are decided (algo.h): the client's, or
     * for a set over several nodes agroup.c's. */
    const struct rl__algo *algo;
    struct rl__spread *spread; /* that set's groups; NULL otherwise */
    char *key; /* the Redis key: the client's prefix, then the key */
    size_t keylen;
    size_t prefixlen;
    /* Prefix of the lock's helper keys (wake list, fair queue), named
     * by rl__helper_name (calls.c). Binary like the key. */
    char *base;
    size_t baselen;
    /* The name of its fencing counter, which the locks of its namespace
     * share (rl__fence_name). */
    char *fname;
    size_t fnamelen;
    /* The token (plain lock) or owner id (hash lock). It and the key do
     * not change while the lock is watched, so the keeper's renewals read
     * them without locking. */
    char token[RL_TOKEN_MAX + 1];
    char *default_owner; /* "host:pid:random", made on first use */
    /* This handle's holds; 0 when not held. Written by the owner thread,
     * read by redislock_check() from any thread. */
    _Atomic int64_t own;
    int rich;        /* held in the hash format (owner id) */
    int fair_queued; /* taken by a fair call that queued first */
    int waited;      /* taken after a wait, or adopted: waiters may
                        not have marked it (rl__lock_native_release) */
    int met_waiters; /* the last grant said someone waited meanwhile:
                        they marked an earlier holder, not this one */
    int reader;      /* the acquire under way is a reader's: it
                        blocks on the "rwake" list, not "wake" */
    /* A set (redislock_lock_new_multi): its further keys with their
     * helper bases and counters (key is the first); NULL and 0 for one
     * key. */
    rl__lockname *more;
    int nmore;
    /* A set whose keys share one fencing counter (one namespace): its
     * first attempt takes set_take.lua, which names the counter once. */
    int one_fence;
    /* The key a waiter waits behind (its node, its wake list, the
     * waiter's own list): the set's key that refused the last attempt,
     * else the key. Its strings are the handle's. Written by the owner
     * thread between waits; the key is read under mu while blocked. */
    rl__lockname wait_name;
    int limit;          /* a share: a semaphore's permit of this limit,
                           or RL_LIMIT_SHARED; 0: a lock */
    int64_t ttl_ms;     /* the lease length renewals use */
    int64_t delay_ms;   /* the lock-delay: the key outlives each lease by it */
    int64_t drift_ms;   /* subtracted from every validity */
    int drift_fixed;    /* drift_ms was given, not derived from the TTL */
    int64_t holder_ttl; /* seen by the last contended attempt */
    int holder_silent;  /* that holder's release wakes nobody */
    /* The fencing token of the last acquisition; the keeper's
     * renewals send it (rl__lock_owner_args). */
    _Atomic int64_t fence;
    int64_t handoff_lease; /* the lease a fair hand-off granted, in ms */
    /* Set by either thread, read by any. */
    _Atomic int64_t valid_until_us; /* CLOCK_MONOTONIC; 0: none */
    _Atomic int lost;               /* a redislock_err; 0 while not lost */
    /* Cancellation of a wait, from any thread. */
    pthread_mutex_t mu;
    int cancelled;
    struct rl__ploop *running; /* the private loop an acquire runs on */
    char *chan; /* the channel hand-offs to this handle come on */
    size_t chanlen;
    int64_t wait_seq;    /* a fair waiter's place, from its last attempt */
    rl__watch *watch;    /* non-NULL while watched */
    struct rl__aop *aop; /* an event loop's operation under way (alock.c) */
    struct rl__lwatch *lwatch; /* a loop's renewals (alock.c): watch is
                                  then driven by that loop; on the keeper's,
                                  read on its thread only */
    /* Stops them, set when they start (by the loop, which is above, or
     * for the keeper's by the blocking call), on the lock's own thread;
     * NULL: not renewed. */
    void (*lwatch_stop)(struct redislock_lock *l);
    int kept; /* renewed on the client's keeper thread (keeper.h) */
    /* Its keeper's KEEP while its first renewal is not due (keeper.c's,
     * under the keeper's lock); NULL once served. */
    struct rl__keep_msg *keeping;
    char *info_buf; /* backs the strings of redislock_inspect */
    /* Per-server results of the last request (Redlock: one per server,
     * in URL order; otherwise one). Guarded by mu. */
    redislock_err outcomes[RL_MAX_QUORUM];
    size_t noutcomes;
    rl__acks acks;    /* what confirmed the last acquire or extend */
    int64_t taken_us; /* CLOCK_MONOTONIC when the lock was last taken */
    /* Leads an election (elect.c): campaigned and recorded, not yet
     * resigned. On the handle's thread. */
    int elected;
    char *elect_buf; /* backs the strings of redislock_leader_info */
    /* The election record's entry this handle last reported an observer
     * at (redislock_leader_info's n) and its term: a later read whose
     * entry n has another term finds the record's history replaced. */
    int64_t elect_seen_n, elect_seen_term;
};

/* An acquisition granted l fencing token fence, its hold in the life gen
 * of the key (the token that made the hash, see rl_create in lib.lua; 0
 * not known). A handle that holds already (this was a re-entry) whose
 * holds are in an earlier life (all its tokens are below gen) lost them
 * when that life ended: it starts over, this hold its first. */
void rl__lock_granted(redislock_lock *l, int64_t fence, int64_t gen);

/* The arguments of an owner script (release.lua, extend.lua) for l:
 * its token or owner id, arg2 (hold-after or TTL), the format this
 * handle holds it in ('h' hash, 'p' plain: the scripts then read a plain
 * lock with one GET; 'z' a share), and its last fencing token ('' when it
 * has none: adopted), which tells the life of the key its holds are in
 * from a later one of the same owner id (rl_ours in lib.lua). */
#define RL_OWNER_NARGS 4
typedef struct rl__owner_args {
    /* One more for a release's COPY flag (rl__lock_copy_wake). */
    const char *args[RL_OWNER_NARGS + 1];
    size_t lens[RL_OWNER_NARGS + 1];
    char fence[24];
    char ttl[24]; /* an extend's TTL (rl__lock_extend_args) */
} rl__owner_args;
void rl__lock_owner_args(const redislock_lock *l, const char *arg2,
                         rl__owner_args *a);

/* The same for an extend of l for a lease of ttl_ms: the key's TTL sent
 * is the lease and l's lock-delay (redislock_set_lock_delay), written
 * into a->ttl. The one place an extend's TTL is put on the wire. */
void rl__lock_extend_args(const redislock_lock *l, int64_t ttl_ms,
                          rl__owner_args *a);

/* The script that does s (release.lua or extend.lua) for l: a set's own
 * (set_release.lua, set_extend.lua, which take the same arguments) when
 * l is a set of keys. */
const rl__script *rl__lock_owner_script(const redislock_lock *l,
                                        const rl__script *s);

/* Records the per-server results of a request (any thread: the keeper's
 * renewals are requests too). */
void rl__lock_set_outcomes(redislock_lock *l, const redislock_err *o, size_t n);

/* l's key with its helper base and counter (a set's first). */
rl__lockname rl__lock_name(const redislock_lock *l);

/* l's names: its key, then a set's others; returns how many. */
int rl__lock_names(const redislock_lock *l,
                   rl__lockname names[1 + REDISLOCK_SET_MAX]);

/* The command that goes before l's script s, in the same write: a PING
 * before the release of a hold that a fair call queued for (fair waiters
 * are likely behind it; see rl__request's first), else NULL. Static. */
const rl__cmd *rl__lock_first(const redislock_lock *l, const rl__script *s);

/* Whether l's release (script s, hold_after_ms) may go as its node's own
 * compare-and-delete (rl__request's native): one plain key, its token of
 * RL_NATIVE_TOKEN_PREFIX, nothing held after, and l not taken after a
 * wait. A lock that others wanted most likely has waiters now, whose
 * mark would fail the compare and cost a second round trip: its release
 * goes by the script at once. */
int rl__lock_native_release(const redislock_lock *l, const rl__script *s,
                            int64_t hold_after_ms);

/* Gives q, l's release with hold_after_ms (its script set, q->s), the
 * lean script set_free.lua to try first (rl__request's lean), and the
 * stride of q's keys at which its locks sit, when it may: a set (on one
 * node, or each of its groups on several: agroup.c), not Redlock's, its
 * token of RL_NATIVE_TOKEN_PREFIX (a waiter behind any of its keys marks
 * it, so the lean script leaves that release to q's), nothing held
 * after, and not taken after a wait (rl__lock_native_release's reason).
 * Else q is left as it was. */
void rl__lock_lean_release(const redislock_lock *l, int64_t hold_after_ms,
                           rl__request *q);

/* Gives l's release (arguments in a) the format 'q' for a plain lock
 * that a fair call queued for: release.lua then reads the queue first
 * and lets the hand-off overwrite the key (rl_handoff's st.stale in
 * lib.lua). Else a is left as it was. */
void rl__lock_queued_release(const redislock_lock *l, rl__owner_args *a);

/* Lets q, l's release by release.lua with hold_after_ms (arguments in
 * a, q's args), leave the wake of the readers' list to the COPY behind
 * it (rl__request's copy_wake; rl_handoff in lib.lua), when it may: one
 * key on a node that does not change (no Sentinel, no cluster: there a
 * waiter's attempt does not ride behind its BLPOP, so a writer woken in
 * the readers' place would attempt a round trip later), no guard (the
 * same), no share, nothing held after, not taken by a fair call that
 * queued (its release most likely hands the lock to the queue and wakes
 * no list: the COPY would cost every fair hand-off a command; such a
 * release that wakes the lists wakes both, as before). Taken after a
 * wait, it rides behind every send of the script; else only behind one
 * that follows a native try that waiters' marks refused. a gets the
 * fifth argument, q's nargs with it. Else q is left as it was. */
void rl__lock_copy_wake(const redislock_lock *l, int64_t hold_after_ms,
                        rl__owner_args *a, rl__request *q);

/* Whether l's client asks for the replica-sync or AOF guard. */
int rl__lock_guarded(const redislock_lock *l);

/* What the guards of one write answer (see rl__request): WAIT's count,
 * the replicas the master needs (REDISLOCK_REPLICAS_ALL), WAITAOF's
 * two counts; -1 each until they come. Must outlive the request. */
typedef struct rl__guard_acks {
    long long acked, need, aof[2];
} rl__guard_acks;

/* The guards of a write of l's lease (acquire, extend) on q: WAIT and
 * WAITAOF after it (INFO replication before it for every replica), as
 * the client asks, their answers to *a. Nothing without the guards. */
void rl__lock_guard(const redislock_lock *l, rl__request *q, rl__guard_acks *a);

/* The same for a write of several locks of client c (a renewal request
 * of many): the guards are the client's. */
void rl__client_guard(const redislock_client *c, rl__request *q,
                      rl__guard_acks *a);

/* Records in l->acks what q's guards confirmed (-1: nothing, when err
 * says the request failed). */
void rl__lock_acks(redislock_lock *l, const rl__request *q, redislock_err err);

/* REDISLOCK_ENOTDURABLE (what names the call) when the guards are strict
 * and fewer replicas or AOF fsyncs than wanted confirmed the last write;
 * else OK. */
redislock_err rl__lock_durable(const redislock_lock *l, const char *what);

/* Whether l may be released (hold_after_ms: its hold-after, 0 none):
 * REDISLOCK_EINVAL with the reason when not. */
redislock_err rl__lock_release_check(const redislock_lock *l,
                                     int64_t hold_after_ms);

/* A release of l ended with err, the release script having answered n
 * (rl__reply_owner): the handle's holds, the loss of an expired or lost
 * lock, the event. */
void rl__lock_released(redislock_lock *l, redislock_err err, long long n);

/* Whether l may be extended to ttl_ms (REDISLOCK_EINVAL when not); an
 * unwatched lock takes ttl_ms as its lease length. */
redislock_err rl__lock_extend_check(redislock_lock *l, int64_t ttl_ms);

/* An extend of l ended with err (the validity already moved on success):
 * the loss of an expired or lost lock, the event. */
void rl__lock_extended(redislock_lock *l, redislock_err err);

/* Records that l holds token (a token or owner id) with a TTL of ttl_ms
 * (what renewals use) from a request sent at sent_us that left the
 * server's lease at least lease_ms (the TTL, or a shorter hand-off lease);
 * drift_ms < 0 means the default. */
void rl__lock_take(redislock_lock *l, const char *token, int64_t ttl_ms,
                   int64_t drift_ms, int64_t sent_us, int64_t lease_ms);

/* Raises the validity to what a request sent at sent_us that left the
 * lease at least ttl_ms grants. Never lowers it: leases are never
 * shortened on the server (rl_lengthen in lib.lua), so what was known
 * before still holds. */
void rl__lock_set_validity(redislock_lock *l, int64_t sent_us, int64_t ttl_ms);

/* Records a loss (first one wins); returns whether this call recorded it. */
int rl__lock_mark_lost(redislock_lock *l, redislock_err why);

/* Tells the client's event callback, if any, of ev (its kind and the
 * fields the kind names), filling in the lock and its key. */
void rl__lock_event(redislock_lock *l, redislock_event ev);

/* A renewal of l sent at sent_us (by an event loop) ended with err: the
 * validity moves on with success; the event either way. */
void rl__lock_renewed(redislock_lock *l, redislock_err err, int64_t sent_us);

/* Stops renewing l, waiting for a renewal in flight: the watchdog
 * thread's, or the loop's that renews it (l->lwatch_stop). No-op if
 * unwatched. Called from the lock's owner thread. */
void rl__lock_unwatch(redislock_lock *l);

/* The drift allowed for a lease of ttl_ms when the caller gave none:
 * 1 % of it plus 2 ms (clock rates, and rounding to milliseconds). */
int64_t rl__default_drift(int64_t ttl_ms);

/* Checks a TTL: 1 .. REDISLOCK_TTL_MAX_MS. */
redislock_err rl__check_ttl(int64_t ttl_ms, const char *what);

/* REDISLOCK_OK when a lock-delay of delay_ms may follow leases of ttl_ms
 * (redislock_acquire_options' lock_delay_ms), else REDISLOCK_EINVAL with
 * the detail set. */
redislock_err rl__check_lock_delay(int64_t delay_ms, int64_t ttl_ms);

/* REDISLOCK_EINVAL, naming what s is, unless s is at most max bytes of
 * printable ASCII (a revocation's reason, a leader's value: text that
 * others read and print as it is). */
redislock_err rl__check_text(const char *s, size_t max, const char *what);

#endif
