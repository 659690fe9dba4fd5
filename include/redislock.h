/*
 * libredislock: distributed locks on Redis.
 *
 * This is the only public header. Every type is opaque; every fallible call
 * returns a redislock_err; the library never prints, exits or aborts.
 *
 * Threads: a redislock_client may be shared by any number of threads (it
 * keeps a small pool of connections, one per concurrent call). A
 * redislock_lock handle is used by one thread at a time.
 *
 * ABI: three structs are allocated by the caller and may gain fields in
 * later versions, always at their end: redislock_options,
 * redislock_acquire_options and redislock_info. A program built against
 * an older header passes a smaller struct, so every function that takes
 * or fills one has a _sized twin that also takes the struct's size as the
 * caller's header saw it (REDISLOCK_OPTIONS_SIZE and the like). The names
 * without _sized are macros over the twins, so existing code compiles
 * unchanged and passes this header's size; the library reads only the
 * bytes the caller has (the fields it lacks count as zero, the default)
 * and writes only the bytes the caller has. The exported functions of
 * the plain names remain, for programs built against the 0.1 header: they
 * take the structs as 0.1 laid them out. See "ABI" in README.md.
 */
#ifndef REDISLOCK_H
#define REDISLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REDISLOCK_VERSION_MAJOR 0
#define REDISLOCK_VERSION_MINOR 1
#define REDISLOCK_VERSION_PATCH 0
#define REDISLOCK_VERSION_NUM                                                  \
    ((REDISLOCK_VERSION_MAJOR << 16) | (REDISLOCK_VERSION_MINOR << 8) |        \
     REDISLOCK_VERSION_PATCH)

#if defined(REDISLOCK_BUILDING) && defined(__GNUC__)
#define REDISLOCK_API __attribute__((visibility("default")))
#else
#define REDISLOCK_API
#endif

/*
 * Every error code, once: XX(name, value, message). Values are stable.
 */
#define REDISLOCK_ERR_MAP(XX)                                                  \
    XX(OK, 0, "success")                                                       \
    XX(EHELD, 1, "lock is held by another owner")                              \
    XX(EEXPIRED, 2, "lock had expired and is free")                            \
    XX(ELOST, 3, "lock was lost: another owner holds it")                      \
    XX(EINVAL, 4, "invalid argument")                                          \
    XX(ECONNECT, 5, "cannot connect to Redis")                                 \
    XX(ETIMEDOUT, 6, "Redis did not answer in time")                           \
    XX(EIO, 7, "connection to Redis failed")                                   \
    XX(EAUTH, 8, "Redis refused authentication")                               \
    XX(EPROTOCOL, 9, "unexpected reply from Redis")                            \
    XX(ESERVER, 10, "Redis returned an error")                                 \
    XX(ENOMEM, 11, "out of memory")                                            \
    XX(ENOTLS, 12, "TLS is not available in this build")                       \
    XX(ERANDOM, 13, "cannot read random bytes from the kernel")                \
    XX(ECANCELED, 14, "the wait for the lock was cancelled")                   \
    XX(ESTALE, 15, "stale: a newer fencing token or holder has come")          \
    XX(ENOQUORUM, 16, "too few Redis servers answered to reach a quorum")      \
    XX(ENOTDURABLE, 17, "no replica confirmed the lock in time")               \
    XX(ENOPERM, 18, "the Redis user's ACL refuses a command or key")           \
    XX(EREADONLY, 19, "the Redis server is a replica, not the master")         \
    XX(ETRYLATER, 20, "Redis cannot serve the request now; try again later")   \
    XX(ECONFIG, 21, "the Redis server's configuration refuses this client")    \
    XX(EREVOKED, 22, "the lock was revoked: its holder is asked to give it up")

typedef enum redislock_err {
#define REDISLOCK_ERR_ENUM_(name, value, msg) REDISLOCK_##name = value,
    REDISLOCK_ERR_MAP(REDISLOCK_ERR_ENUM_)
#undef REDISLOCK_ERR_ENUM_
    /* Codes are only appended, and this count grows with them: give
     * codes you do not know a default case, and size nothing by it. */
    REDISLOCK_ERR_COUNT_
} redislock_err;

/* Defaults and limits, in milliseconds unless the name says otherwise. */
#define REDISLOCK_DEFAULT_TTL_MS 30000
#define REDISLOCK_DEFAULT_RETRY_DELAY_MS 100
#define REDISLOCK_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS 2000
#define REDISLOCK_DEFAULT_MAX_CONNECTIONS 8
/* The longest lease accepted: 30 days. Longer is almost surely a unit bug. */
#define REDISLOCK_TTL_MAX_MS (30LL * 24 * 3600 * 1000)
/* The longest key accepted, in bytes. */
#define REDISLOCK_KEY_MAX 4096
/* Values of redislock_acquire_options.wait_ms. */
#define REDISLOCK_NO_WAIT 0
#define REDISLOCK_WAIT_FOREVER (-1)
/* Values redislock_ttl() reports besides a remaining time. */
#define REDISLOCK_TTL_FREE (-2)
#define REDISLOCK_TTL_NO_EXPIRY (-1)

typedef struct redislock_client redislock_client;
typedef struct redislock_lock redislock_lock;

/*
 * Client options. All-zero means defaults; the struct is copied, never kept.
 * Fields are only ever appended, and REDISLOCK_OPTIONS_SIZE then names the
 * new last field (see "ABI" above).
 */
/* What happens to a lock, as redislock_options.on_event reports it. */
typedef enum redislock_event_kind {
    /* An acquire took the lock: ms the call took, attempts, fence. */
    REDISLOCK_EVENT_ACQUIRED = 1,
    /* An attempt found the lock held: ms the holder's lease has left
     * (REDISLOCK_TTL_NO_EXPIRY, or -2 when unknown), attempts so far. */
    REDISLOCK_EVENT_CONTENDED,
    /* The acquire pauses before its next attempt: ms the longest it will
     * pause (a release may end it sooner), attempts so far. */
    REDISLOCK_EVENT_RETRY,
    /* An acquire ends without the lock: err (REDISLOCK_EHELD when the
     * wait ran out), ms the call took, attempts. */
    REDISLOCK_EVENT_NOT_ACQUIRED,
    /* A release: err its outcome (REDISLOCK_EEXPIRED: the lease had
     * ended), ms since the lock was taken. */
    REDISLOCK_EVENT_RELEASED,
    /* An extend or a watchdog renewal lengthened the lease: ms of
     * validity it now has. */
    REDISLOCK_EVENT_RENEWED,
    /* An extend or a renewal failed, the lock perhaps still held (a
     * timeout, a lost connection): err; the watchdog tries again while
     * the validity lasts. */
    REDISLOCK_EVENT_RENEW_FAILED,
    /* The handle learnt that the lock is lost (REDISLOCK_ELOST, or
     * REDISLOCK_EEXPIRED: the lease ran out): err; as the loss signal,
     * once per hold. */
    REDISLOCK_EVENT_LOST
} redislock_event_kind;

/* One event. Valid only during the callback. Fields not named for the
 * kind are 0. */
typedef struct redislock_event {
    redislock_event_kind kind;
    redislock_lock *lock; /* read only: see redislock_options.on_event */
    const void *key;      /* the lock's key as given (a set's first) */
    size_t keylen;
    redislock_err err;
    int attempts;
    int64_t ms;
    int64_t fence; /* ACQUIRED: the fencing token */
} redislock_event;

typedef void (*redislock_event_cb)(const redislock_event *ev, void *arg);

/* wait_replicas: wait for every replica the master was seen with (INFO
 * replication before each write; a count that only grows while the
 * master keeps its replication ID), at least one, so that a failover,
 * whichever replica it promotes, keeps the lock. */
#define REDISLOCK_REPLICAS_ALL (-1)

typedef struct redislock_options {
    /* Time for TCP connect plus AUTH and SELECT. Default 2000 ms. */
    int64_t connect_timeout_ms;
    /* Time for one command's reply. Default 2000 ms. */
    int64_t command_timeout_ms;
    /* Idle connections the client keeps to each server between calls
     * (a call in progress has its own). Default 8. */
    int max_connections;
    /* Password; overrides the URL's. Default NULL: the URL's, else the
     * REDISCLI_AUTH environment variable, else none. Copied. */
    const char *password;
    /* Prepended to every lock key, as in "lock@": "--prefix lock@" with
     * key "job" locks the Redis key "lock@job". Copied. Default "". */
    const char *prefix;
    /* For rediss:// URLs (builds with TLS only, see redislock_has_tls):
     * the CA certificate file that verifies the server (default NULL: the
     * system's default CAs), a client certificate and its key for servers
     * that ask for one, and the name to verify the server's certificate
     * against (default: the URL's host). Copied. */
    const char *tls_ca_file;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_server_name;
    /* Redlock (redislock_client_new_redlock): how long one request waits
     * for each server's reply, all servers being asked at once, so that a
     * server that is down or stopped costs little of the lease; a new
     * connection a round opens waits no longer at each step. Default 0:
     * a tenth of the request's TTL, at least 10 ms and at most
     * command_timeout_ms. */
    int64_t server_timeout_ms;
    /* Replica-sync guard: after every acquire and extend, WAIT until this
     * many replicas of the lock's master have the write, for at most
     * wait_replicas_timeout_ms (default 0: 100 ms). Default 0: off.
     * REDISLOCK_REPLICAS_ALL: every replica the master has had (see
     * below). */
    int wait_replicas;
    int64_t wait_replicas_timeout_ms;
    /* With wait_replicas: 0 (default): an acquisition fewer replicas
     * confirm is given back and fails with REDISLOCK_ENOTDURABLE (an
     * extend fails with it and keeps the lock); nonzero: it succeeds, and
     * redislock_replicas() tells how many confirmed (a warning). */
    int wait_replicas_lenient;
    /* WAITAOF guard (servers that have WAITAOF: Redis and Valkey from
     * 7.2): after every acquire and extend, wait until the write is
     * fsynced to the master's append-only file (wait_aof_local: 0 or 1)
     * and to that many replicas' (wait_aof_replicas), for at most
     * wait_replicas_timeout_ms, strict or lenient as wait_replicas_lenient
     * says. Each connection is checked when opened: a server without
     * WAITAOF, or for wait_aof_local one with AOF off or appendfsync no
     * (whose fsyncs are the kernel's, which WAITAOF cannot see), is
     * REDISLOCK_ECONFIG. Default 0: off. */
    int wait_aof_local;
    int wait_aof_replicas;
    /* Called with each event of the client's locks (see
     * redislock_event_kind), with on_event_arg: on the thread that made
     * the call (acquire, release, extend, check), or for renewals and a
     * loss they find on the client's watchdog thread. It must return
     * quickly and call nothing of the library but the read-only calls on
     * ev->lock (redislock_key, redislock_valid_ms, redislock_fence...).
     * Default NULL: no events, at no cost. */
    redislock_event_cb on_event;
    void *on_event_arg;
    /* 1: the constructor opens no connection and asks nothing; it checks
     * the URLs and options only, so a service can start before its Redis
     * does. Each server is checked as the constructor would have checked
     * it (PING, not a Sentinel, the WAITAOF guard's conditions, a
     * sharded or Redlock list's identities) on the first connection to
     * it, in one round trip before the first request goes out on it; a
     * server that is down or fails a check fails the calls that needed
     * it with the code the constructor would have returned, and the next
     * call connects and checks again. For one server, a sharded list
     * and Redlock; not yet for Sentinel and Cluster clients, which must
     * find where keys go when they are made, nor for a sharded list
     * with a unix socket, whose name needs the server's TCP port (both
     * REDISLOCK_EINVAL). Default 0: the constructor connects to every
     * server and fails at once when one is down or wrong (a Redlock
     * client: when a majority is). */
    int lazy_connect;
    /* 1: the constructor also reads each server's configuration, as
     * redislock_doctor() does (without its clock check), and refuses
     * one that can lose a lock or grant it twice with
     * REDISLOCK_ECONFIG, naming the server, the setting and its fix:
     * an evicting maxmemory-policy, no append-only file, appendfsync
     * not always (unless the WAITAOF guard covers it), a replica, a
     * master with replicas and no replica guard, scripts refused, a
     * Sentinel master without quorum, cluster slots not covered.
     * Servers that do not answer are not judged (a Redlock minority
     * down); one that refuses INFO is refused. Nodes a cluster or
     * Sentinel finds later are not checked.
     * Not with lazy_connect (REDISLOCK_EINVAL). Default 0: off. */
    int strict;
} redislock_options;

/* How the pause between two attempts grows. Every pause is drawn
 * uniformly from [d/2, d] (jitter, so waiters spread out) and never
 * outlasts the holder's remaining TTL or the deadline. */
typedef enum redislock_retry {
    REDISLOCK_RETRY_CONSTANT = 0, /* d = retry_delay_ms (the default) */
    REDISLOCK_RETRY_LINEAR,       /* d = retry_delay_ms * attempt */
    REDISLOCK_RETRY_EXPONENTIAL,  /* d = retry_delay_ms * 2^(attempt-1) */
    REDISLOCK_RETRY_NONE          /* one attempt, whatever wait_ms says */
} redislock_retry;

/* A caller-supplied strategy: the pause in ms before attempt + 1 (no
 * jitter is added), or a negative value to give up. holder_ttl_ms is the
 * holder's remaining TTL, REDISLOCK_TTL_NO_EXPIRY (-1) for a key without
 * expiry, or -2 when unknown. */
typedef int64_t (*redislock_retry_fn)(void *arg, int attempt,
                                      int64_t holder_ttl_ms);

/* A loss notification: the lock, why it was lost, the caller's argument. */
typedef void (*redislock_lost_cb)(redislock_lock *l, redislock_err why,
                                  void *arg);

/* Options of one acquire call. All-zero means defaults. Fields are only
 * ever appended, and REDISLOCK_ACQUIRE_OPTIONS_SIZE then names the new
 * last field. */
typedef struct redislock_acquire_options {
    /* Lease length, 1 .. REDISLOCK_TTL_MAX_MS. Default 30000 ms. */
    int64_t ttl_ms;
    /* How long to wait for a held lock: REDISLOCK_NO_WAIT (0, default) tries
     * once, REDISLOCK_WAIT_FOREVER waits without a deadline. */
    int64_t wait_ms;
    /* Upper bound of the pause between attempts; each pause is drawn
     * uniformly from [delay/2, delay] and never outlasts the holder's
     * remaining TTL or the deadline. Default 100 ms. */
    int64_t retry_delay_ms;
    /* Nonzero: the client's watchdog thread renews the lease every ttl/3
     * until release, and reports a loss (see on_lost, redislock_lost_fd,
     * redislock_check). Default 0: no renewal. */
    int watchdog;
    /* With watchdog: called once, from the watchdog thread, when renewal
     * finds the lock expired (REDISLOCK_EEXPIRED) or taken (REDISLOCK_ELOST),
     * or cannot confirm it before its validity ends (the error that stopped
     * it). It must not call into the lock handle. Default NULL. */
    redislock_lost_cb on_lost;
    void *on_lost_arg;
    /* With watchdog: stop renewing after this many renewals, or once the
     * lock has been held this long; the lease then runs out. 0: no cap. */
    int max_renewals;
    int64_t max_hold_ms;
    /* Subtracted from the validity to allow for clock drift between this
     * host and Redis. Default (0): 0.01 * ttl_ms + 2 ms, recomputed when
     * redislock_extend() changes the TTL. */
    int64_t drift_ms;
    /* How pauses grow between attempts. Default REDISLOCK_RETRY_CONSTANT. */
    redislock_retry retry;
    /* Cap on one pause for the growing strategies. Default 2000 ms (or
     * retry_delay_ms when that is larger). */
    int64_t retry_max_delay_ms;
    /* Give up after this many attempts. 0: no limit but the deadline. */
    int max_attempts;
    /* A caller-supplied strategy; overrides retry when set. */
    redislock_retry_fn retry_fn;
    void *retry_arg;
    /* Nonzero: when the holder's remaining TTL outlasts the wait (or the
     * key has no expiry), return REDISLOCK_EHELD at once instead of
     * waiting for nothing. */
    int fail_fast;
    /* Nonzero: the same owner may acquire the lock again while holding it;
     * each acquire needs its own release, and each refreshes the TTL. */
    int reentrant;
    /* The owner's identity (copied), shared by every handle that names
     * it. Default: for reentrant locks and locks with metadata, one made
     * per handle as "host:pid:random"; otherwise a random token. */
    const char *owner;
    /* A string stored with the lock that anyone can read (host, job id,
     * start time). Copied. Default NULL: none. */
    const char *metadata;
    /* Nonzero: waiters queue in arrival order and each release hands the
     * lock straight to the longest-waiting live waiter (FIFO). Default 0:
     * a release wakes one waiter, which then competes with newcomers. */
    int fair;
    /* Nonzero: a counting semaphore rather than a lock. The key admits at
     * most limit holders at once (1 .. REDISLOCK_LIMIT_MAX), each with a
     * lease, token, fencing token, renewal and loss signal of its own;
     * the handle holds one permit, and redislock_release,
     * redislock_extend, the watchdog and redislock_valid_ms act on it.
     * Every caller of the key must pass the same limit: while the key
     * exists, another one is REDISLOCK_EINVAL. With fair, permits go out
     * in arrival order. Not with shared, reentrant, owner or metadata,
     * nor on a Redlock client. Default 0: an exclusive lock. */
    int limit;
    /* Nonzero: a share of a shared (read-write) lock. Any number of
     * handles hold the key shared at once, each with a lease, token,
     * fencing token, renewal and loss signal of its own, while no
     * exclusive holder (any acquire without this flag) has it: the two
     * exclude each other. A waiting exclusive request stops new shares
     * until it gets the key or its wait ends (writer preference). With
     * fair, readers and writers keep one arrival order. Not with limit,
     * reentrant, owner or metadata, nor on a Redlock client. Default 0:
     * exclusive. */
    int shared;
    /* Lock-delay (Chubby's, Consul's), in ms: after a holder *fails* (its
     * lease ends without a release: killed, stopped, cut off), nobody can
     * take the lock for this long after the lease's end; a release frees
     * it at once. The key lives for the lease and the delay (its TTL on
     * the server, redislock_ttl and redislock_inspect say so) while the
     * holder counts only the lease (redislock_valid_ms, the watchdog's
     * renewals at a third of ttl_ms). For resources that cannot check a
     * fencing token: a stopped holder's late writes arrive while nobody
     * else holds the lock. 0 to REDISLOCK_LOCK_DELAY_MAX_MS; default 0.
     * An exclusive lock's only: not with fair, limit, shared or a set of
     * keys (not yet). A re-entry keeps the first acquisition's delay. */
    int64_t lock_delay_ms;
} redislock_acquire_options;

/* The longest lock-delay, a minute, as Chubby and Consul bound theirs. */
#define REDISLOCK_LOCK_DELAY_MAX_MS 60000

/* The most holders a semaphore may admit (redislock_acquire_options'
 * limit). */
#define REDISLOCK_LIMIT_MAX 100000

/*
 * Connects to the Redis server named by url and returns a client in *out.
 * URLs: redis://[user[:password]@]host[:port][/db] and
 * unix:///path/to.sock[?db=N]; rediss:// gives REDISLOCK_ENOTLS.
 * One connection is opened now, so a wrong address or password fails here.
 * On failure *out is NULL. Free with redislock_client_free().
 */
REDISLOCK_API redislock_err redislock_client_new(redislock_client **out,
                                                 const char *url,
                                                 const redislock_options *opts);

/*
 * A client over n independent servers in sharded mode: each key is routed
 * to one server by a consistent hash of the key, so adding a server moves
 * about 1/n of the keys, and the order of urls does not matter (a server
 * is known by host and port, or socket path, and database). Every server
 * is connected to now. The same server listed twice (spelt the same: the
 * library does not resolve names) is REDISLOCK_EINVAL.
 */
REDISLOCK_API redislock_err
redislock_client_new_sharded(redislock_client **out, const char *const *urls,
                             size_t n, const redislock_options *opts);

/*
 * A client for the Redlock algorithm over n independent masters (n odd,
 * at least 3; the same server twice is REDISLOCK_EINVAL). Every request
 * goes to all servers at once, each reply waited for at most
 * server_timeout_ms. A lock is acquired only when a majority (n/2 + 1)
 * grant it and validity remains: TTL minus the time the round took minus
 * the drift allowance. A failed round is undone on every server, answered
 * or not, before the next. Too few servers answering to decide is
 * REDISLOCK_ENOQUORUM; a majority's refusal is REDISLOCK_EHELD. An
 * acquire that waits tries again after either (the round was undone)
 * while its wait lasts and a majority still accepts connections. Extend
 * counts only with a majority within the validity; release goes to all.
 * Fair mode and redislock_fenced_set are single-server features
 * (REDISLOCK_EINVAL here).
 */
REDISLOCK_API redislock_err
redislock_client_new_redlock(redislock_client **out, const char *const *urls,
                             size_t n, const redislock_options *opts);

/*
 * A client for a Redis Cluster, from one or more seed nodes' URLs: the
 * slot map is read (CLUSTER SLOTS), each lock goes to the master of its
 * key's hash slot, and MOVED, ASK, TRYAGAIN and CLUSTERDOWN are followed
 * or retried within the call's time. Every helper key of a lock hashes to
 * the lock key's slot.
 */
REDISLOCK_API redislock_err
redislock_client_new_cluster(redislock_client **out, const char *const *seeds,
                             size_t n, const redislock_options *opts);

/* Closes the client's connections and frees it. NULL is a no-op. Every lock
 * handle made from the client must be freed first. */
REDISLOCK_API void redislock_client_free(redislock_client *c);

/*
 * Makes a lock handle for key (keylen bytes, binary-safe, 1 ..
 * REDISLOCK_KEY_MAX). The key is copied. Nothing is sent to Redis.
 */
REDISLOCK_API redislock_err redislock_lock_new(redislock_client *c,
                                               const void *key, size_t keylen,
                                               redislock_lock **out);

/*
 * Makes a lock handle for a set of n keys (1 .. REDISLOCK_SET_MAX, each
 * as redislock_lock_new takes one; copied), taken all or none: acquire
 * takes every key or none, in one step, with one token, one lease and one
 * fencing token above every earlier token of each key; release, extend,
 * the watchdog, redislock_valid_ms and redislock_check act on the set. A
 * waiter waits behind the key that refused it, woken by its release.
 * A set of one key is an ordinary lock, as redislock_lock_new makes.
 * The keys may be anywhere the client reaches: keys on one server (or,
 * in a Redis Cluster, in one hash slot: give them a common {hash tag})
 * are taken by one script in one round trip; keys on several shards of
 * a sharded client, or in several slots, are taken group by group in a
 * fixed order, never held in part while waiting (redislock(3), SAFETY.md).
 * An empty set, more than REDISLOCK_SET_MAX keys, a key given twice and a
 * Redlock client are REDISLOCK_EINVAL. A set is a plain lock: the acquire
 * options reentrant, owner, metadata, fair, limit and shared, and a
 * hold-after release, are REDISLOCK_EINVAL. redislock_key and
 * redislock_inspect read the first key.
 */
REDISLOCK_API redislock_err redislock_lock_new_multi(redislock_client *c,
                                                     const void *const *keys,
                                                     const size_t *keylens,
                                                     size_t n,
                                                     redislock_lock **out);

/* The most keys of one set (redislock_lock_new_multi). */
#define REDISLOCK_SET_MAX 8

/* Frees the handle without releasing the lock (it then expires by its TTL).
 * NULL is a no-op. */
REDISLOCK_API void redislock_lock_free(redislock_lock *l);

/*
 * Acquires the lock with a fresh random token: one round trip when it is
 * free. REDISLOCK_EHELD when another owner holds it past the wait.
 * opts may be NULL for defaults.
 */
REDISLOCK_API redislock_err
redislock_acquire(redislock_lock *l, const redislock_acquire_options *opts);

/*
 * Releases the lock if this handle's token still owns it. REDISLOCK_OK:
 * released (for a reentrant lock: one hold dropped, see redislock_holds);
 * REDISLOCK_EEXPIRED: it had expired and is free; REDISLOCK_ELOST: another
 * owner holds it (left untouched). After EEXPIRED, ELOST or the last hold's
 * release the handle holds nothing; after any other error (the connection
 * failed) the outcome is unknown and the handle keeps its token.
 */
REDISLOCK_API redislock_err redislock_release(redislock_lock *l);

/*
 * Like redislock_release(), but the lock stays reserved for hold_after_ms
 * after release (a cooldown: nobody can take it), then frees itself.
 * hold_after_ms 0 is a plain release. For a reentrant lock the hold
 * applies when the last hold is released.
 */
REDISLOCK_API redislock_err redislock_release_hold(redislock_lock *l,
                                                   int64_t hold_after_ms);

/*
 * Makes a blocked redislock_acquire() on l return REDISLOCK_ECANCELED at
 * once. The one call that may be made from another thread while l is in
 * use. Sticky: with no acquire running, the next one returns
 * REDISLOCK_ECANCELED; that return clears it.
 */
REDISLOCK_API void redislock_cancel(redislock_lock *l);

/*
 * Makes the lock's TTL at least ttl_ms from now (never shorter than what
 * it has left) if this handle still owns it. Outcomes as for
 * redislock_release(); an expired lock is never re-created.
 */
REDISLOCK_API redislock_err redislock_extend(redislock_lock *l, int64_t ttl_ms);

/*
 * Makes the handle act for token, obtained elsewhere (another process, the
 * CLI's acquire), so that it can be released or extended. Nothing is sent.
 */
REDISLOCK_API redislock_err redislock_adopt(redislock_lock *l,
                                            const char *token);

/*
 * Cooperative revocation: asks whoever holds l's key (l need not hold
 * it) to give the lock up, with reason (NULL: none; printable ASCII, at
 * most REDISLOCK_REVOKE_REASON_MAX bytes). Nothing else changes: the
 * holder keeps its lease until it releases, and its release frees the
 * key as always. It hears of it at its next extend or renewal, which
 * still lengthens the lease but answers REDISLOCK_EREVOKED (the detail
 * names the reason): the watchdog tells it as a loss (its callback and
 * fd, with REDISLOCK_EREVOKED) and stops renewing, so the lock is free
 * once it releases, or at the end of that lease; redislock_check() then
 * says REDISLOCK_EREVOKED. A holder that never extends or renews does not
 * hear it, and keeps its lease to the end.
 * REDISLOCK_OK once the holder is asked (now, or by an earlier revoke,
 * whose reason stays); REDISLOCK_EEXPIRED when the lock is free;
 * REDISLOCK_EINVAL for a key whose holder cannot hear it: another
 * library's lock, a key that is not a lock, a hold-after reservation, a
 * semaphore or a lock held shared (not yet), or a set handle (revoke
 * its keys one by one; a set's holder does not hear it yet). On a
 * Redlock client every server is asked, and a majority decides.
 */
#define REDISLOCK_REVOKE_REASON_MAX 64
REDISLOCK_API redislock_err redislock_revoke(redislock_lock *l,
                                             const char *reason);

/*
 * Sequencers (Chubby's), for a resource that can ask whether a writer
 * still holds the lock rather than keep the largest fencing token it has
 * seen. redislock_sequencer() writes l's sequencer into buf (size at
 * least REDISLOCK_SEQUENCER_MAX): "FENCE:DIGEST", its fencing token
 * (redislock_fence) and 40 hex digits, a digest of its token or owner id
 * that the server computes (one round trip, which also confirms l still
 * holds: REDISLOCK_EEXPIRED when the lock has gone, REDISLOCK_ESTALE
 * when another holds it; the handle is left as it is). A sequencer is
 * no secret: it cannot release or extend the lock. The holder hands it
 * to the resource with each write; the resource calls
 * redislock_check_sequencer() with a handle of the same key (that need
 * not hold it) before it acts: REDISLOCK_OK while the sequencer's holder
 * still holds the lock (an owner id's: in the life of the key its
 * fencing token was issued in), REDISLOCK_ESTALE when another holds it
 * or it was taken again since, REDISLOCK_EEXPIRED when it is free,
 * REDISLOCK_EINVAL for a string that is not a sequencer. A check only
 * reads; between it and the write the lock can still change hands, so a
 * resource that can also keep the largest fencing token should. Locks
 * of one key, exclusive (not yet shares, semaphores or sets:
 * REDISLOCK_EINVAL); on Redlock a majority of the servers decides.
 */
#define REDISLOCK_SEQUENCER_MAX 64
REDISLOCK_API redislock_err redislock_sequencer(redislock_lock *l, char *buf,
                                                size_t size);
REDISLOCK_API redislock_err redislock_check_sequencer(redislock_lock *l,
                                                      const char *sequencer);

/*
 * Leader election (etcd's Campaign, Proclaim, Leader, Observe, Resign).
 * An election is a lock on l's key held under an owner id: the
 * candidate's id is opts->owner (default "host:pid:random", as for
 * metadata), the leader's value is the lock's metadata, and its term is
 * the acquisition's fencing token (redislock_fence), which a resource
 * checks as for any lock (redislock_fenced_set). Every change is
 * appended, with the change and only by the leader of that term, to a
 * record beside the key (a stream in its hash slot, the last ~1000
 * changes, kept 7 days past the last one), which observers read.
 *
 * redislock_campaign() waits for leadership with opts' wait options
 * (wait_ms, retry, fair for standbys that take turns in arrival order,
 * redislock_cancel) and returns REDISLOCK_OK once l leads and its
 * election is recorded. The lease is renewed (opts->watchdog is implied),
 * and a loss of leadership reaches the leader as a lost lock does
 * (on_lost, redislock_lost_fd, redislock_valid_ms 0): a leader acts only
 * while redislock_valid_ms(l) > 0. value: at most
 * REDISLOCK_ELECT_VALUE_MAX bytes of printable ASCII, NULL or "" for
 * none. Not reentrant, not with limit or shared, nor a set, nor on
 * a Redlock client (REDISLOCK_EINVAL). REDISLOCK_EHELD when the wait
 * ends first.
 */
#define REDISLOCK_ELECT_VALUE_MAX 1024
REDISLOCK_API redislock_err redislock_campaign_sized(
    redislock_lock *l, const char *value, const redislock_acquire_options *opts,
    size_t opts_size);
#define redislock_campaign(l, value, opts)                                     \
    redislock_campaign_sized(l, value, opts, REDISLOCK_ACQUIRE_OPTIONS_SIZE)

/* The leader l is changes its value without an election:
 * REDISLOCK_EEXPIRED or REDISLOCK_ELOST (as redislock_extend) when l no
 * longer leads, REDISLOCK_EINVAL when it never campaigned. */
REDISLOCK_API redislock_err redislock_proclaim(redislock_lock *l,
                                               const char *value);

/* The leader l is steps down: it records its resignation, then releases
 * the lock (a waiting candidate takes it at once). REDISLOCK_OK, or the
 * error that says l no longer led (REDISLOCK_EEXPIRED, REDISLOCK_ELOST);
 * either way l is no longer a leader. */
REDISLOCK_API redislock_err redislock_resign(redislock_lock *l);

/* The kinds of change redislock_observe() reports. */
typedef enum redislock_change {
    REDISLOCK_CHANGE_NONE = 0,   /* nothing within the timeout */
    REDISLOCK_CHANGE_ELECTED,    /* a new leader, term */
    REDISLOCK_CHANGE_PROCLAIMED, /* the leader of term changed its value */
    REDISLOCK_CHANGE_RESIGNED,   /* the leader of term resigned */
    REDISLOCK_CHANGE_EXPIRED,    /* the lease of term's leader ran out */
    REDISLOCK_CHANGE_GAP         /* changes were missed: the state now */
} redislock_change;

/*
 * An election as an observer knows it. Strings are borrowed from the
 * handle, valid until its next call. Callers allocate it: fields are
 * only ever appended, and REDISLOCK_LEADER_INFO_SIZE names the last.
 */
typedef struct redislock_leader_info {
    int64_t n;         /* the last change seen: 0 for none yet */
    int kind;          /* redislock_change: what observe reported */
    int has_leader;    /* whether there is a leader (after the change) */
    int64_t term;      /* the change's term: its leader's fencing token */
    int64_t ttl_ms;    /* redislock_leader(): the leader's lease left */
    const char *id;    /* the leader's owner id; NULL when none */
    const char *value; /* its value; NULL when none */
    size_t id_len;
    size_t value_len;
} redislock_leader_info;

#define REDISLOCK_LEADER_INFO_SIZE                                             \
    REDISLOCK_SIZE_THROUGH_(redislock_leader_info, value_len)

/* The leader of l's key now, read in one round trip: has_leader, id,
 * value, term and ttl_ms; n the record's last change, from which
 * redislock_observe() goes on; kind REDISLOCK_CHANGE_NONE. l need not
 * campaign. */
REDISLOCK_API redislock_err redislock_leader_sized(redislock_lock *l,
                                                   redislock_leader_info *info,
                                                   size_t info_size);
#define redislock_leader(l, info)                                              \
    redislock_leader_sized(l, info, REDISLOCK_LEADER_INFO_SIZE)

/*
 * Waits up to timeout_ms (0: one look) for the change after info->n and
 * writes it into info: each change once, in order, n one more than the
 * last. When changes were missed (the record trimmed, or info->n 0 on a
 * record begun before), REDISLOCK_CHANGE_GAP with the leader as it is
 * now. A leader whose key has gone without resigning (its lease ran
 * out) is reported as REDISLOCK_CHANGE_EXPIRED with its term. With
 * nothing new in time, kind REDISLOCK_CHANGE_NONE and the rest as it
 * was. Start from a zeroed info (every change the record still holds)
 * or from redislock_leader()'s. A wait sends nothing while nothing
 * changes (the server tells it of the key's change; where it cannot,
 * the record is read every 20 ms), and rides through a server that
 * cannot be read for a while (restarting, its master being replaced):
 * its reads are tried again until the deadline, which then returns
 * their last error (REDISLOCK_ECONNECT, REDISLOCK_ETIMEDOUT, ...) with
 * a detail saying for how long; a read under way at the deadline is
 * waited for. A record whose history was replaced under the observer
 * (a failover that lost its last entries, a record begun again) is a
 * GAP, told by the term of the entry at n, which the handle remembers.
 */
REDISLOCK_API redislock_err redislock_observe_sized(redislock_lock *l,
                                                    redislock_leader_info *info,
                                                    int64_t timeout_ms,
                                                    size_t info_size);
#define redislock_observe(l, info, timeout_ms)                                 \
    redislock_observe_sized(l, info, timeout_ms, REDISLOCK_LEADER_INFO_SIZE)

/*
 * The lock-delay (redislock_acquire_options' lock_delay_ms) that the
 * handle's extends and renewals keep on the key past the lease: for a
 * token adopted from an acquire that asked for one. An acquire sets it
 * from its options. 0 to REDISLOCK_LOCK_DELAY_MAX_MS, else
 * REDISLOCK_EINVAL. Nothing is sent.
 */
REDISLOCK_API redislock_err redislock_set_lock_delay(redislock_lock *l,
                                                     int64_t delay_ms);

/*
 * Stores in *ttl_ms the key's remaining TTL, whoever holds it:
 * REDISLOCK_TTL_FREE when the lock is free, REDISLOCK_TTL_NO_EXPIRY when the
 * key has no expiry.
 */
REDISLOCK_API redislock_err redislock_ttl(redislock_lock *l, int64_t *ttl_ms);

/*
 * What a key is, in redislock_info's reserved field: a lock (or no key at
 * all), a hold-after reservation, or not a lock (a key of another type,
 * or a string no lock library writes). Nonzero still means "not a lock
 * you can take or release", as when the field was a flag.
 */
#define REDISLOCK_KIND_LOCK 0
#define REDISLOCK_KIND_RESERVED 1
#define REDISLOCK_KIND_NOT_LOCK 2
#define REDISLOCK_KIND_SEMAPHORE 3
#define REDISLOCK_KIND_SHARED 4

/*
 * One waiter of a fair queue (redislock_acquire_options.fair), in
 * redislock_info's waiters. owner is its owner id, borrowed like
 * redislock_info's strings; NULL (owner_len 0) for a waiter that has none,
 * whose request holds a token instead (a plain lock's, a share's), never
 * shown. waited_ms: how long it has held its place in the queue, on the
 * server's clock.
 */
typedef struct redislock_waiter {
    const char *owner;
    size_t owner_len;
    int64_t waited_ms;
} redislock_waiter;

/*
 * What anyone can read of a key. Strings are borrowed from the handle and
 * valid until its next call; absent ones are NULL. For a key that is not
 * a lock (reserved == REDISLOCK_KIND_NOT_LOCK), metadata is its Redis
 * type ("list", "string", ...). Callers allocate it: fields are only ever
 * appended, and REDISLOCK_INFO_SIZE then names the new last field.
 */
typedef struct redislock_info {
    int held;             /* the key exists */
    int64_t ttl_ms;       /* remaining TTL, or REDISLOCK_TTL_NO_EXPIRY */
    int64_t holds;        /* the count of holds; 0 when unknown */
    const char *owner;    /* the owner id; NULL for a plain (token) lock */
    const char *metadata; /* NULL when none; a non-lock's Redis type */
    const char *key;      /* the key without the client's prefix */
    size_t keylen;
    /* A hash lock's (owner id) fencing token of the life it is in (the
     * first acquisition's); 0 for other kinds, whose keys keep none. */
    int64_t fence;
    /* The key's kind, REDISLOCK_KIND_*. Named when it was only a flag for
     * hold-after reservations; kept so that old code still compiles. */
    int reserved;
    size_t owner_len;    /* lengths of owner and metadata, which may */
    size_t metadata_len; /* hold NUL bytes written by other clients */
    /* A semaphore (kind REDISLOCK_KIND_SEMAPHORE): its limit, with holds
     * the permits whose leases still run and ttl_ms the longest lease.
     * 0 for any other kind. A lock held shared (REDISLOCK_KIND_SHARED)
     * has holds the shares whose leases still run (0 while a waiting
     * exclusive request keeps it), ttl_ms the longest lease. */
    int limit;
    /* Both kinds held by many: the time left of each live share's lease
     * in ms, shortest first, for at most REDISLOCK_INFO_TTLS_MAX of them
     * (holds says how many there are). share_ttls is borrowed like the
     * strings; NULL with nshare_ttls 0 for the other kinds. */
    const int64_t *share_ttls;
    size_t nshare_ttls;
    /* The key's fair waiters that are alive, in queue order (the next to
     * get it first), for at most REDISLOCK_INFO_WAITERS_MAX of them; any
     * kind of key may have them. Borrowed like the strings; NULL with
     * nwaiters 0 when none wait. queued: how many wait, which may count
     * dead waiters beyond the places read when the queue is long. */
    const redislock_waiter *waiters;
    size_t nwaiters;
    int64_t queued;
    /* A lock whose holder was asked to give it up (redislock_revoke):
     * the reason, "" when none was given; NULL when it was not. Borrowed
     * like the strings. */
    const char *revoked;
    size_t revoked_len;
} redislock_info;

/* The most share leases redislock_info lists. */
#define REDISLOCK_INFO_TTLS_MAX 100

/* The most fair waiters redislock_info lists. */
#define REDISLOCK_INFO_WAITERS_MAX 100

/*
 * The size of each caller-allocated struct as this header lays it out:
 * the bytes up to the end of its last field (padding after it excluded,
 * since an older program's padding holds no zeros). Passed for the caller
 * by the macros below; a later header's values are larger. C++11 and
 * later name the field's size as type::field, with no null pointer cast
 * for -Wold-style-cast or -Wzero-as-null-pointer-constant to refuse;
 * C++98 cannot, and casts. C and C++ get the same values.
 */
#if defined(__cplusplus) && (__cplusplus >= 201103L || defined(_MSVC_LANG))
#define REDISLOCK_SIZE_THROUGH_(type, field)                                   \
    (offsetof(type, field) + sizeof(type::field))
#elif defined(__cplusplus)
#define REDISLOCK_SIZE_THROUGH_(type, field)                                   \
    (offsetof(type, field) + sizeof(static_cast<type *>(0)->field))
#else
#define REDISLOCK_SIZE_THROUGH_(type, field)                                   \
    (offsetof(type, field) + sizeof(((type *)0)->field))
#endif
#define REDISLOCK_OPTIONS_SIZE                                                 \
    REDISLOCK_SIZE_THROUGH_(redislock_options, strict)
#define REDISLOCK_ACQUIRE_OPTIONS_SIZE                                         \
    REDISLOCK_SIZE_THROUGH_(redislock_acquire_options, lock_delay_ms)
#define REDISLOCK_INFO_SIZE REDISLOCK_SIZE_THROUGH_(redislock_info, revoked_len)

/* Reads the key's state, whoever holds it, in one round trip. */
REDISLOCK_API redislock_err redislock_inspect(redislock_lock *l,
                                              redislock_info *info);

/* Called by redislock_list() for each lock; nonzero stops the listing. */
typedef int (*redislock_list_cb)(const redislock_info *info, void *arg);

/*
 * Lists the locks whose key (after the client's prefix) matches the glob
 * pattern (NULL: all), on every server, with SCAN (never KEYS). Keys that
 * are not locks, and locks without a TTL, are skipped. info's strings are
 * valid during the callback only.
 */
REDISLOCK_API redislock_err redislock_list(redislock_client *c,
                                           const char *pattern,
                                           redislock_list_cb cb, void *arg);

/* redislock_list_flags(): also report keys that are not locks (reserved
 * REDISLOCK_KIND_NOT_LOCK) and keys without a TTL. */
#define REDISLOCK_LIST_ALL 0x1u

/* redislock_list() with flags: 0 or REDISLOCK_LIST_ALL. */
REDISLOCK_API redislock_err redislock_list_flags(redislock_client *c,
                                                 const char *pattern,
                                                 unsigned flags,
                                                 redislock_list_cb cb,
                                                 void *arg);

/*
 * The _sized twins (see "ABI" above): as the functions of the same name
 * without _sized, with the size of the caller's struct, opts_size or
 * info_size: REDISLOCK_OPTIONS_SIZE, REDISLOCK_ACQUIRE_OPTIONS_SIZE or
 * REDISLOCK_INFO_SIZE of the header the caller was built with. Fields
 * past opts_size count as zero; at most info_size bytes of info are
 * written (any of them past the library's own struct are zeroed), and
 * list's callback gets a struct of at least info_size bytes. A size
 * smaller than any version of the struct is REDISLOCK_EINVAL. Call them
 * through the macros below, which pass the size.
 */
REDISLOCK_API redislock_err
redislock_client_new_sized(redislock_client **out, const char *url,
                           const redislock_options *opts, size_t opts_size);
REDISLOCK_API redislock_err redislock_client_new_sharded_sized(
    redislock_client **out, const char *const *urls, size_t n,
    const redislock_options *opts, size_t opts_size);
REDISLOCK_API redislock_err redislock_client_new_redlock_sized(
    redislock_client **out, const char *const *urls, size_t n,
    const redislock_options *opts, size_t opts_size);
REDISLOCK_API redislock_err redislock_client_new_cluster_sized(
    redislock_client **out, const char *const *seeds, size_t n,
    const redislock_options *opts, size_t opts_size);
REDISLOCK_API redislock_err redislock_acquire_sized(
    redislock_lock *l, const redislock_acquire_options *opts, size_t opts_size);
REDISLOCK_API redislock_err redislock_inspect_sized(redislock_lock *l,
                                                    redislock_info *info,
                                                    size_t info_size);
REDISLOCK_API redislock_err redislock_list_sized(redislock_client *c,
                                                 const char *pattern,
                                                 unsigned flags,
                                                 redislock_list_cb cb,
                                                 void *arg, size_t info_size);

/*
 * Calls by the plain names go to the _sized twins with this header's
 * sizes. (A plain name not followed by '(', as in taking the function's
 * address, is the 0.1 entry point: it reads and writes 0.1's fields only.)
 */
#define redislock_client_new(out, url, opts)                                   \
    redislock_client_new_sized(out, url, opts, REDISLOCK_OPTIONS_SIZE)
#define redislock_client_new_sharded(out, urls, n, opts)                       \
    redislock_client_new_sharded_sized(out, urls, n, opts,                     \
                                       REDISLOCK_OPTIONS_SIZE)
#define redislock_client_new_redlock(out, urls, n, opts)                       \
    redislock_client_new_redlock_sized(out, urls, n, opts,                     \
                                       REDISLOCK_OPTIONS_SIZE)
#define redislock_client_new_cluster(out, seeds, n, opts)                      \
    redislock_client_new_cluster_sized(out, seeds, n, opts,                    \
                                       REDISLOCK_OPTIONS_SIZE)
#define redislock_acquire(l, opts)                                             \
    redislock_acquire_sized(l, opts, REDISLOCK_ACQUIRE_OPTIONS_SIZE)
#define redislock_inspect(l, info)                                             \
    redislock_inspect_sized(l, info, REDISLOCK_INFO_SIZE)
#define redislock_list(c, pattern, cb, arg)                                    \
    redislock_list_sized(c, pattern, 0, cb, arg, REDISLOCK_INFO_SIZE)
#define redislock_list_flags(c, pattern, flags, cb, arg)                       \
    redislock_list_sized(c, pattern, flags, cb, arg, REDISLOCK_INFO_SIZE)

/*
 * The fencing token of the handle's current hold: a 64-bit number greater
 * than every token issued before for the key, across owners, expiries,
 * releases and restarts of a server without persistence (it is the larger
 * of a counter and the server's clock in microseconds). Pass it to the
 * protected resource, which refuses older ones (redislock_fenced_set).
 * 0 when the handle holds nothing or adopted its token.
 */
REDISLOCK_API int64_t redislock_fence(const redislock_lock *l);

/*
 * A Redis-backed resource that refuses stale writers: sets key (no client
 * prefix) to value unless a write with a larger fencing token has already
 * been made, in which case REDISLOCK_ESTALE and nothing is written. The
 * highest token seen is kept in a helper key next to key. fence must be
 * 1 to 2^53 - 1 (REDISLOCK_EINVAL otherwise, nothing sent): the server's
 * script compares tokens as doubles, exact only below 2^53; the tokens
 * redislock_fence gives stay below it (they follow the clock in us).
 */
REDISLOCK_API redislock_err redislock_fenced_set(redislock_client *c,
                                                 const void *key, size_t keylen,
                                                 const void *value, size_t vlen,
                                                 int64_t fence);

/*
 * Per-server outcomes of the handle's last request on a Redlock client, in
 * the order the URLs were given: REDISLOCK_OK (granted or done),
 * REDISLOCK_EHELD (busy: another owner holds it there), REDISLOCK_ECONNECT
 * (down), REDISLOCK_ETIMEDOUT (no answer in time), or another error. Fills
 * at most n entries of out and returns the number of servers (1 for other
 * clients, with the last request's result).
 */
REDISLOCK_API size_t redislock_outcomes(const redislock_lock *l,
                                        redislock_err *out, size_t n);

/* With the replica-sync guard (wait_replicas): how many replicas
 * confirmed the last acquire or extend; -1 when the guard is off. */
REDISLOCK_API int redislock_replicas(const redislock_lock *l);

/* With the WAITAOF guard (wait_aof_local, wait_aof_replicas): how many
 * replicas confirmed the last acquire's or extend's fsync to their
 * append-only files, and in *local (when not NULL) whether the master
 * did (1 or 0); -1 each when the guard is off. */
REDISLOCK_API int redislock_aof(const redislock_lock *l, int *local);

/* How many holds this handle has (0 when it holds nothing). */
REDISLOCK_API int64_t redislock_holds(const redislock_lock *l);

/* After REDISLOCK_EHELD: the holder's remaining TTL seen by the last
 * attempt, REDISLOCK_TTL_NO_EXPIRY, or -2 when unknown. */
REDISLOCK_API int64_t redislock_holder_ttl(const redislock_lock *l);

/* The handle's key; its length in *len when len is not NULL. Borrowed. */
REDISLOCK_API const void *redislock_key(const redislock_lock *l, size_t *len);

/* The token this handle holds, or NULL. Borrowed: valid until the next call
 * on the handle. */
REDISLOCK_API const char *redislock_token(const redislock_lock *l);

/*
 * Milliseconds the lock is still known to be valid: counted on
 * CLOCK_MONOTONIC from the moment the acquiring or last renewing request was
 * sent, minus the drift allowance. 0 when the handle holds nothing, the
 * lease has run out or the lock was lost. Safe to call from any thread.
 */
REDISLOCK_API int64_t redislock_valid_ms(const redislock_lock *l);

/*
 * REDISLOCK_OK while the handle holds the lock and its validity has not
 * run out; otherwise why not (REDISLOCK_EEXPIRED, REDISLOCK_ELOST, the
 * error that stopped renewal, or REDISLOCK_EINVAL when nothing is held).
 * Local: sends nothing. Safe to call from any thread.
 */
REDISLOCK_API redislock_err redislock_check(const redislock_lock *l);

/*
 * A file descriptor that becomes readable when the watchdog finds the lock
 * lost, for poll/epoll loops; -1 when the lock is not watched. Owned by the
 * handle: do not close it; valid until release or free.
 */
REDISLOCK_API int redislock_lost_fd(const redislock_lock *l);

/* A static message for any value, unknown ones too. Never allocates. */
REDISLOCK_API const char *redislock_strerror(redislock_err err);

/* The name of the code ("REDISLOCK_EHELD"), or "REDISLOCK_UNKNOWN". */
REDISLOCK_API const char *redislock_errname(redislock_err err);

/*
 * Text that names the problem behind the calling thread's most recent
 * failed call (the detail is per thread because a client is shared by
 * threads). Borrowed: valid until the thread's next call. Never NULL.
 */
REDISLOCK_API const char *redislock_errdetail(void);

/* 1 when this build can speak TLS (rediss://): built against a hiredis
 * with TLS support (hiredis 1.x with hiredis_ssl). Debian 12's hiredis 0.14
 * has none: there, 0, and rediss:// gives REDISLOCK_ENOTLS. */
REDISLOCK_API int redislock_has_tls(void);

/* The library's version as "MAJOR.MINOR.PATCH". */
REDISLOCK_API const char *redislock_version(void);

/*
 * The event-loop API (redislock_loop(3)): a client's locks acquired,
 * released and extended on the application's event loop, without
 * blocking and without a thread of the library's, each operation ending
 * in a callback on the loop. libcurl's multi-socket model: the library
 * says which sockets to watch and when to call it back, through two
 * callbacks; the application hands the events and the timer back.
 * <redislock/libevent.h>, <redislock/libuv.h> and <redislock/libev.h>
 * wire a loop to those libraries. Every call, and every callback, on the
 * loop's thread.
 */
typedef struct redislock_loop redislock_loop;

/* What to watch a socket for: a mask of these (0: stop watching it). */
#define REDISLOCK_WATCH_READ 1
#define REDISLOCK_WATCH_WRITE 2

/* Watch fd for what, replacing what was asked for it before. */
typedef void (*redislock_watch_cb)(void *ctx, int fd, int what);
/* Call redislock_loop_timeout() once in ms (0: at once), replacing the
 * timer asked for before; -1: no timer. */
typedef void (*redislock_timer_cb)(void *ctx, int64_t ms);
/* An operation's outcome, as the blocking call would return it, with
 * redislock_errdetail() set. It may start another operation. */
typedef void (*redislock_done_cb)(redislock_lock *l, redislock_err err,
                                  void *arg);

/* A loop for c's locks (c must outlive it): watch and timer get ctx. */
REDISLOCK_API redislock_err redislock_loop_new(redislock_loop **out,
                                               redislock_client *c,
                                               redislock_watch_cb watch,
                                               redislock_timer_cb timer,
                                               void *ctx);

/* Ends every operation under way with REDISLOCK_ECANCELED (their
 * callbacks run first), then closes the loop's connections, unwatching
 * their sockets. Not from a callback. NULL is a no-op. */
REDISLOCK_API void redislock_loop_free(redislock_loop *lp);

/* The application saw what (REDISLOCK_WATCH_*) on fd; its timer ran
 * out. */
REDISLOCK_API void redislock_loop_io(redislock_loop *lp, int fd, int what);
REDISLOCK_API void redislock_loop_timeout(redislock_loop *lp);

/* As redislock_acquire, redislock_release_hold and redislock_extend, the
 * outcome to cb. opts is copied, its strings borrowed until the callback.
 * An error returned means that no callback comes. One operation at a
 * time per lock handle. */
REDISLOCK_API redislock_err
redislock_loop_acquire_sized(redislock_loop *lp, redislock_lock *l,
                             const redislock_acquire_options *opts,
                             size_t opts_size, redislock_done_cb cb, void *arg);
#define redislock_loop_acquire(lp, l, opts, cb, arg)                           \
    redislock_loop_acquire_sized(lp, l, opts, REDISLOCK_ACQUIRE_OPTIONS_SIZE,  \
                                 cb, arg)
REDISLOCK_API redislock_err redislock_loop_release(redislock_loop *lp,
                                                   redislock_lock *l,
                                                   int64_t hold_after_ms,
                                                   redislock_done_cb cb,
                                                   void *arg);
REDISLOCK_API redislock_err redislock_loop_extend(redislock_loop *lp,
                                                  redislock_lock *l,
                                                  int64_t ttl_ms,
                                                  redislock_done_cb cb,
                                                  void *arg);

/* As redislock_inspect: the key's state into info (the caller's until
 * the callback), whoever holds it. */
REDISLOCK_API redislock_err redislock_loop_inspect_sized(
    redislock_loop *lp, redislock_lock *l, redislock_info *info,
    size_t info_size, redislock_done_cb cb, void *arg);
#define redislock_loop_inspect(lp, l, info, cb, arg)                           \
    redislock_loop_inspect_sized(lp, l, info, REDISLOCK_INFO_SIZE, cb, arg)

/* Ends the acquire under way on l with REDISLOCK_ECANCELED, its callback
 * called before this returns. Freeing the handle does the same for any
 * operation under way on it. */
REDISLOCK_API void redislock_loop_cancel(redislock_loop *lp, redislock_lock *l);

/* As redislock_revoke(), on the loop: cb gets its outcome. The handle
 * names the key only; it must outlive the callback. */
REDISLOCK_API redislock_err redislock_loop_revoke(redislock_loop *lp,
                                                  redislock_lock *l,
                                                  const char *reason,
                                                  redislock_done_cb cb,
                                                  void *arg);

/* As redislock_sequencer() and redislock_check_sequencer(), on the loop:
 * cb gets the outcome (buf is written before it). The handle and buf
 * must outlive the callback. */
REDISLOCK_API redislock_err redislock_loop_sequencer(redislock_loop *lp,
                                                     redislock_lock *l,
                                                     char *buf, size_t size,
                                                     redislock_done_cb cb,
                                                     void *arg);
REDISLOCK_API redislock_err redislock_loop_check_sequencer(
    redislock_loop *lp, redislock_lock *l, const char *sequencer,
    redislock_done_cb cb, void *arg);

/* As redislock_campaign(), redislock_proclaim(), redislock_resign(),
 * redislock_leader() and redislock_observe(), on the loop: cb gets the
 * outcome (info is written before it). opts is copied; the handle, value
 * and info must outlive the callback. A loop's observe waits on the
 * loop's timer. */
REDISLOCK_API redislock_err redislock_loop_campaign_sized(
    redislock_loop *lp, redislock_lock *l, const char *value,
    const redislock_acquire_options *opts, size_t opts_size,
    redislock_done_cb cb, void *arg);
#define redislock_loop_campaign(lp, l, value, opts, cb, arg)                   \
    redislock_loop_campaign_sized(lp, l, value, opts,                          \
                                  REDISLOCK_ACQUIRE_OPTIONS_SIZE, cb, arg)
REDISLOCK_API redislock_err redislock_loop_proclaim(redislock_loop *lp,
                                                    redislock_lock *l,
                                                    const char *value,
                                                    redislock_done_cb cb,
                                                    void *arg);
REDISLOCK_API redislock_err redislock_loop_resign(redislock_loop *lp,
                                                  redislock_lock *l,
                                                  redislock_done_cb cb,
                                                  void *arg);
REDISLOCK_API redislock_err redislock_loop_leader_sized(
    redislock_loop *lp, redislock_lock *l, redislock_leader_info *info,
    size_t info_size, redislock_done_cb cb, void *arg);
#define redislock_loop_leader(lp, l, info, cb, arg)                            \
    redislock_loop_leader_sized(lp, l, info, REDISLOCK_LEADER_INFO_SIZE, cb,   \
                                arg)
REDISLOCK_API redislock_err redislock_loop_observe_sized(
    redislock_loop *lp, redislock_lock *l, redislock_leader_info *info,
    int64_t timeout_ms, size_t info_size, redislock_done_cb cb, void *arg);
#define redislock_loop_observe(lp, l, info, timeout_ms, cb, arg)               \
    redislock_loop_observe_sized(lp, l, info, timeout_ms,                      \
                                 REDISLOCK_LEADER_INFO_SIZE, cb, arg)

/*
 * Server configurations that lose locks silently, as redislock_doctor()
 * finds them. Each finding names the server, what it saw and the fix.
 */
typedef enum redislock_risk {
    /* maxmemory-policy is not noeviction: with memory full, the server
     * deletes keys with a TTL (every lock's) or any key. */
    REDISLOCK_RISK_EVICTION = 1,
    /* The append-only file is off: a restart comes back without the
     * locks held, and grants them again. */
    REDISLOCK_RISK_NO_PERSISTENCE,
    /* appendfsync is everysec or no, and the client does not ask for
     * WAITAOF: a crash of the machine loses the last lock writes. */
    REDISLOCK_RISK_FSYNC,
    /* The server is a replica: locks must be written on the master. */
    REDISLOCK_RISK_REPLICA,
    /* A master with replicas, and no replica guard (wait_replicas): a
     * failover can promote a replica that never got a lock. */
    REDISLOCK_RISK_REPLICAS,
    /* EVAL is refused (an ACL, a server without Lua): every acquire
     * runs a script. */
    REDISLOCK_RISK_NO_SCRIPTS,
    /* A sentinel answers SENTINEL CKQUORUM with an error: a failover
     * could not be agreed on. */
    REDISLOCK_RISK_SENTINEL_QUORUM,
    /* A cluster with slots not assigned or not served (cluster_state
     * not ok). */
    REDISLOCK_RISK_CLUSTER_SLOTS,
    /* The server's clock ran faster or slower than this machine's
     * monotonic clock over the check: leases end early or late. */
    REDISLOCK_RISK_CLOCK,
    /* The server did not answer: nothing else of it was checked. */
    REDISLOCK_RISK_UNANSWERED
} redislock_risk;

/* One finding of redislock_doctor(). Strings end in NUL. */
typedef struct redislock_finding {
    redislock_risk risk;
    char server[128]; /* host:port or socket path (a sentinel's) */
    char what[320];   /* what was seen, and what it does to locks */
    char fix[256];    /* what to change */
} redislock_finding;

/* The finding's name ("eviction", "no-persistence", "fsync", "replica",
 * "replicas", "no-scripts", "sentinel-quorum", "cluster-slots", "clock",
 * "unanswered"), or "unknown". */
REDISLOCK_API const char *redislock_risk_name(redislock_risk risk);

/*
 * Reads the configuration of each of c's servers (a cluster's masters, a
 * Sentinel client's master and its sentinels) with INFO, CONFIG GET
 * appendfsync (a server that refuses CONFIG is not judged on it), EVAL
 * of a script that returns 1, TIME and, in a cluster, CLUSTER INFO; all
 * servers at once. With clock_ms > 0 (at most 60000) it asks TIME again
 * clock_ms later and flags a clock whose rate differs from this
 * machine's monotonic clock by more than 1 % beyond what the round
 * trips leave unknown. Judged against c's guards (wait_replicas,
 * wait_aof_*). Writes up to cap findings to out and their number, which
 * may be larger, to *n; 0: nothing found. REDISLOCK_OK unless the call
 * itself is wrong (REDISLOCK_EINVAL) or out of memory; a server that
 * does not answer is a finding. Blocks for clock_ms plus the servers'
 * answers, each bounded by the command timeout.
 */
REDISLOCK_API redislock_err redislock_doctor(redislock_client *c,
                                             int64_t clock_ms,
                                             redislock_finding *out, size_t cap,
                                             size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* REDISLOCK_H */
