/*
 * The exclusion checker: several processes take the same keys in one lock
 * mode while a nemesis injects faults; each holder records, on
 * CLOCK_MONOTONIC (one clock for every process), the interval in which it
 * believed it held the lock and every fenced write it made; afterwards the
 * history is checked for overlapping beliefs, accepted stale writes,
 * fencing tokens that did not grow, and beliefs that outlasted the lease
 * the server itself reported (Jepsen's lock workloads; etcd's robustness
 * tests keep a history and validate it after the run).
 *
 * The liveness check (live.c) reads the same history for the other half:
 * no holder told its lock was lost while the server kept its lease; no
 * waiter failing though its key was surely free for over B (1 s) with
 * nobody queued ahead; no writer starved behind shares for longer than
 * its wait less a second; no fair waiter overtaken by a later one; and
 * through a Sentinel failover, no waiter giving up with its wait to go,
 * and a lock taken again within R (5 s) of the new master. live.c's
 * header gives each rule's exact bounds and why.
 *
 * Files: history.c (records, random numbers), checker.c (the checks),
 * live.c (the liveness checks), worker.c (a holder process), truth.c
 * (the servers' own view of a lease; a key deleted by hand), cliworker.c (a section run by the
 * CLI), nemesis.c (faults), run.c (one run: servers, workers, nemesis,
 * check), modes.c (the modes), test_excl.c (the short runs of make
 * check), test_checker.c and test_live.c (the rules on made-up
 * histories), soak.c (make soak).
 *
 * Environment: EXCL_SEED replays a run's random choices (nemesis timing,
 * TTLs, holds, pauses; not the scheduler's); EXCL_HISTORY_DIR keeps each
 * run's records there as <mode>-<seed>.hist.
 */
#ifndef EXCL_H
#define EXCL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness/cluster.h"
#include "harness/server.h"

/* Lock servers: a cluster of three masters with a replica each has six. */
#define EXCL_MAX_SERVERS 6
#define EXCL_MAX_KEYS 4
#define EXCL_MAX_WORKERS 8

/* ---- Random numbers: splitmix64, so that a seed replays a run's choices */

typedef struct excl_rng {
    uint64_t s;
} excl_rng;

void excl_rng_seed(excl_rng *r, uint64_t seed, uint64_t stream);
uint64_t excl_rng_next(excl_rng *r);
/* Uniform in [lo, hi]. */
int64_t excl_rng_range(excl_rng *r, int64_t lo, int64_t hi);
/* 1 with probability percent / 100. */
int excl_rng_chance(excl_rng *r, int percent);

/* Microseconds on CLOCK_MONOTONIC: the same clock in every process. */
int64_t excl_now_us(void);

/* ---- The history: fixed-size records, each appended with one write() to
 * a file every process opened with O_APPEND, so that a holder killed with
 * -9 or stopped still leaves what it wrote; a later record of the same
 * claim replaces an earlier one. */

typedef enum excl_kind {
    /* An acquire that returned OK (also a re-entry): when it was called,
     * when it returned and the fencing token it got. */
    EXCL_ACQ = 1,
    /* A believed interval [start, end]; updated as the belief moves. */
    EXCL_CLAIM,
    /* A fenced write: sent, answered, accepted or refused. */
    EXCL_WRITE,
    /* The server's own view of the lease, read while the holder believed
     * it held: the belief must not outlast it. */
    EXCL_LEASE,
    /* The liveness checker's (see live.c), appended after the above: */
    /* A section's acquire (not a re-entry): written as it is called (t1
     * 0, x EXCL_PENDING), then again as it returns (t1, x its result, a
     * redislock_err; fence the token when OK). belief: the wait asked
     * (ms); flags EXCL_A_FAIR; share and set as for a claim. Recorded
     * once, not once per key of a set. */
    EXCL_ATTEMPT,
    /* The release of a section's last hold: t0 called, t1 returned, x
     * its result, belief the hold-after asked (ms). */
    EXCL_RELEASE,
    /* A loss the holder was told (flags: EXCL_L_*; belief: the error
     * that told it), with the server's view read at once on another
     * connection: x the PTTL of the holder's own lease (-2 gone,
     * EXCL_PENDING unknown), t0 told, t1 read. */
    EXCL_LOSS,
    /* A fault of the nemesis while in force, [t0, t1] (a kill: t0 ==
     * t1): flags the excl_fault, pid the process hit (0: a server or a
     * proxy). A failover's t1 is when the new master was confirmed, x
     * EXCL_FAULT_LOSSY or EXCL_FAULT_GUARDED. Written by the parent. */
    EXCL_FAULT
} excl_kind;

/* EXCL_FAULT's x: a failover the workers' locks were not guarded
 * through (wait_replicas off), in which a lock the promoted replica had
 * not received may be lost, as docs/SAFETY.md says. */
#define EXCL_FAULT_LOSSY 1
/* A failover the workers' locks were guarded through (wait_replicas,
 * strict): no lock is lost, and acquires fail with ENOTDURABLE while the
 * new master has too few replicas, as docs/SAFETY.md says. */
#define EXCL_FAULT_GUARDED 2
/* After a lossy failover's new master is confirmed, how long the old
 * master may still grant an acquire (an acquire is not checked against
 * the sentinels; its first renewal is): the old master of SENTINEL
 * FAILOVER says master until the sentinels demote it, which they do once
 * it has reported itself master for 8 s. */
#define EXCL_FAILOVER_SETTLE_MS 15000

/* EXCL_ATTEMPT flags. */
#define EXCL_A_FAIR 1
/* The waiter is told of a release (its wake-up, a fair hand-off, the
 * server's notice of the key's change: no strategy of its own), so it
 * promises a prompt grant (live.c's late-grant rule). */
#define EXCL_A_PROMPT 2
/* EXCL_ATTEMPT's x before the call returned; EXCL_LOSS's x unknown. */
#define EXCL_PENDING (-1000)

/* EXCL_LOSS: how the holder was told. */
#define EXCL_L_CALLBACK 1 /* the watchdog's on_lost */
#define EXCL_L_EXTEND 2   /* an extend said ELOST or EEXPIRED */
#define EXCL_L_RELEASE 3  /* the release did */
#define EXCL_L_KILLED 4   /* redislock run killed the command (exit 75) */

/* EXCL_WRITE results. */
#define EXCL_W_ACCEPTED 1
#define EXCL_W_REFUSED 2
#define EXCL_W_ERROR 3

/* EXCL_CLAIM flags. */
#define EXCL_C_CLOSED 1 /* ended by the holder's release call */

#define EXCL_MAGIC 0x6c637845u /* "Excl" */

typedef struct excl_rec {
    uint32_t magic;
    uint8_t kind;
    uint8_t key;
    uint8_t flags;
    /* 1: taken as a share of a shared lock (the acquire option shared),
     * 0: exclusive. Not a bit of flags: a claim's flags start afresh when
     * a lapsed belief comes back, while a share stays a share. */
    uint8_t share;
    int32_t pid;
    uint32_t acq;   /* the pid's acquisition number */
    uint32_t piece; /* EXCL_CLAIM: a belief that lapsed and came back */
    /* The keys of the set the section took (redislock_lock_new_multi),
     * bit k for key k; 0 for a single lock. A set's belief is recorded
     * once per key (see excl_history_add_each), each record naming its
     * own key, so that the per-key rules see every key the set held. */
    uint32_t set;
    uint64_t group; /* claims of one group may overlap (a shared owner) */
    int64_t t0, t1; /* ACQ: called, returned; CLAIM: start, end;
                       WRITE: sent, answered; LEASE: sent, answered */
    int64_t fence;  /* ACQ, CLAIM, WRITE */
    int64_t ttl_ms; /* ACQ, CLAIM: the TTL asked for */
    int64_t x;      /* WRITE: the result; LEASE: the PTTL (ms, -2 gone) */
    int64_t belief; /* LEASE: the believed end when it was sent */
    char what[64];  /* how the holder took it, for the report */
    char why[160];  /* EXCL_LOSS: the error's detail, as it was told */
} excl_rec;

/* Opens (creating) the history file for appending. */
int excl_history_open(const char *path);
/* Appends one record with one write(); the magic is filled in. */
void excl_history_add(int fd, excl_rec *r);
/* Appends r once for each key of its set (r->set; once, as it is, when
 * 0), each copy with its own key, all with one write(). */
void excl_history_add_each(int fd, excl_rec *r);
/* Reads every whole record; malloc'ed array, count in *n. */
excl_rec *excl_history_read(const char *path, size_t *n);
/* Prints, for a closer look at a violation at at_s (s from t_base), the
 * records that overlap the window from EXCL_EXCERPT_BEFORE_MS before it
 * to EXCL_EXCERPT_AFTER_MS after, at most EXCL_EXCERPT_MAX of them: a
 * failure under load seldom comes back with its seed, since the seed
 * replays the choices, not the scheduler. */
#define EXCL_EXCERPT_BEFORE_MS 2500
#define EXCL_EXCERPT_AFTER_MS 500
#define EXCL_EXCERPT_MAX 200
void excl_history_excerpt(const excl_rec *h, size_t n, int64_t t_base,
                          double at_s);

/* ---- The check */

typedef struct excl_verdict {
    long sections;    /* believed intervals (claims; a set's: one) */
    long acquires;    /* acquisitions, re-entries included */
    long overlaps;    /* two groups' beliefs overlapping on one key */
    long stale;       /* accepted writes with a stale fencing token */
    long fence_order; /* a later acquisition with a token not larger */
    long lease;       /* a belief past the lease the server reported */
    long shares;      /* of the sections, those taken as shares */
    long share_pairs; /* two shares' beliefs overlapping: allowed */
    /* Of the sections, those that took a set, by its number of keys (a
     * set's belief counts as one section, not one per key). */
    long sets[EXCL_MAX_KEYS + 1];
    long writes_ok, writes_refused, writes_failed, leases_checked;
    /* Overlaps and lease reads excused as a lock lost in a lossy
     * failover (EXCL_FAULT_LOSSY; see checker.c): no renewal after the
     * switch extended the earlier belief. */
    long failover_lost;
    /* The earliest violation: when (run time, s) and after how many
     * sections had begun by then; -1 when none. */
    double first_s;
    long first_sections;
} excl_verdict;

/* Checks the history; prints each violation (at most a few dozen) with
 * both intervals, pids, what each did and the seed. t_base: the run's
 * start (excl_now_us), printed times are relative to it. limit > 1: the
 * keys are semaphores of that limit, and an overlap is more than limit
 * beliefs at once. Otherwise beliefs recorded as shares may overlap one
 * another, never an exclusive one. A set's records are checked key by
 * key. Returns the number of violations. */
long excl_check(const excl_rec *h, size_t n, uint64_t seed, int64_t t_base,
                const char *mode, int limit, excl_verdict *v);

/* ---- The liveness check (live.c): see the rules and bounds there. */

/* B: a waiter that fails although its key was surely free (and, for a
 * fair one, nobody queued ahead) for longer than this missed a grant. */
#define EXCL_LIVE_FREE_MS 1000
/* A writer that timed out while only shares held the key for longer
 * than its wait less this, shares being granted after it came, starved. */
#define EXCL_LIVE_GRACE_MS 1000
/* A waiter counts as having come after another once it called this
 * much later (the queue is joined one round trip after the call). */
#define EXCL_LIVE_ARRIVAL_MS 300
/* A fault's effect lasts this long past its undoing (reconnects). */
#define EXCL_LIVE_FAULT_TAIL_MS 300
/* Whether fault f (an excl_fault) is a failover: a master replaced. */
int excl_fault_failover(int f);

/* R: after a failover is confirmed, some client holds the lock again
 * within this, and no acquire begun later fails for want of a server. */
#define EXCL_LIVE_FAILOVER_MS 5000
/* R with the strict guard and one replica: the new master has none until
 * the sentinels make the old one its replica, which they do only after it
 * has reported itself master for 8 s, and it has synced (10.1 s measured
 * after SENTINEL FAILOVER); until then acquires fail with ENOTDURABLE. */
#define EXCL_LIVE_FAILOVER_GUARD_MS 15000

typedef struct excl_live_verdict {
    long attempts;     /* section acquires that returned */
    long failed;       /* of them, not OK */
    long losses;       /* losses told */
    long false_loss;   /* told lost while the server held the lease */
    long missed_grant; /* failed, the key surely free for > B */
    long late_grant;   /* a prompt waiter's grant after the key was
                          surely free for > B */
    long starved;      /* a writer behind shares, a fair waiter overtaken */
    long overtaken;    /* of starved, fair waiters overtaken */
    long failover;     /* a waiter that gave up in a failover, no lock
                          within R after it, an error after R */
    long reply_lost;   /* waiters that ended with ETIMEDOUT on a stopped
                          master: documented, counted, not a violation */
    long guard_refused; /* acquires refused (ENOTDURABLE) and losses told
                           while a guarded failover's new master lacked
                           replicas: documented, not violations */
    double first_s;    /* the earliest violation (run time, s); -1: none */
} excl_live_verdict;

/* Checks the history for liveness, printing each violation as excl_check
 * does; limit as excl_check's. Returns the number of violations. */
long excl_live_check(const excl_rec *h, size_t n, uint64_t seed,
                     int64_t t_base, const char *mode, int limit,
                     excl_live_verdict *v);

/* ---- Modes and runs */

typedef enum excl_topo_kind {
    EXCL_SINGLE,  /* one server */
    EXCL_PROXIED, /* one server, reached through a delaying proxy */
    EXCL_SHARDED, /* three servers, keys spread by the client */
    EXCL_CLUSTER, /* a private Redis Cluster of three masters */
    EXCL_REDLOCK, /* three servers, two of them behind proxies */
    EXCL_SENTINEL, /* a master, its replica and three sentinels */
    EXCL_SENTINEL2, /* the same with two replicas (a run's topology kind
                       is then EXCL_SENTINEL) */
    EXCL_CLUSTER_R  /* a cluster of three masters with a replica each (a
                       run's kind: EXCL_CLUSTER, its six nodes servers) */
} excl_topo_kind;

/* Faults. */
typedef enum excl_fault {
    EXCL_F_STOP_HOLDER,  /* SIGSTOP a holder past its validity */
    EXCL_F_STOP_WAITER,  /* SIGSTOP a waiter (around the alive window) */
    EXCL_F_KILL_HOLDER,  /* kill -9 a holder; a new worker takes its place */
    EXCL_F_PAUSE_SERVER, /* SIGSTOP a lock server (th_server_pause) */
    EXCL_F_DELAY,        /* the proxy holds client bytes for a while */
    EXCL_F_RACE,         /* a release timed to a waiter's heartbeat, its
                            alive window's end or a BLPOP timeout */
    EXCL_F_KILL_MASTER,  /* kill -9 the Sentinel master, once; in force
                            until the sentinels name the replica master */
    EXCL_F_SENTINEL_FAILOVER, /* SENTINEL FAILOVER, once, the old master
                                 alive (it becomes a replica); in force
                                 until the new master is confirmed */
    EXCL_F_STOP_MASTER, /* SIGSTOP the Sentinel master, once, until the
                           sentinels promote its replica; then SIGCONT:
                           the old master back, a master until they
                           demote it; in force until the promotion */
    EXCL_F_CLUSTER_KILL,     /* kill -9 the cluster master of key 0, once;
                                in force until its replica serves the slot
                                and the cluster agrees */
    EXCL_F_CLUSTER_FAILOVER, /* CLUSTER FAILOVER on that master's replica,
                                once; in force as the kill */
    EXCL_F_UNPLANNED, /* never injected: a Sentinel failover the nemesis
                         did not cause (a loaded box can make the
                         sentinels, down after 1 s, see a master down),
                         seen as a change of the named master; in force
                         from the last sighting of the old one until the
                         new one is confirmed */
    EXCL_F_COUNT
} excl_fault;

extern const char *const excl_fault_names[EXCL_F_COUNT];

struct excl_worker;
struct excl_section;

typedef struct excl_mode {
    const char *name;
    excl_topo_kind topo;
    int nkeys;
    int nworkers;
    unsigned faults;              /* 1u << excl_fault */
    int64_t gap_lo_ms, gap_hi_ms; /* between two faults */
    int64_t run_ms;               /* the short run's length */
    /* Chooses what one section does. */
    void (*pick)(struct excl_worker *w, struct excl_section *s);
    int limit; /* > 1: the keys are semaphores of that limit */
    /* How the workers lock: 0, blocking calls; EXCL_ON_LOOP, acquire,
     * release and extend on an event loop (redislock_loop(3)), the
     * tests' own poll() loop; EXCL_VIA_CLI, redislock run (cliworker.c) */
    int loop;
    /* The replica-sync guard: the workers' wait_replicas (0: off;
     * REDISLOCK_REPLICAS_ALL: every replica the master has had). */
    int guard;
} excl_mode;

#define EXCL_ON_LOOP 1
#define EXCL_VIA_CLI 2

extern const excl_mode excl_modes[];
extern const int excl_nmodes;
const excl_mode *excl_mode_find(const char *name);

typedef struct excl_result {
    excl_verdict v;
    excl_live_verdict lv;
    long faults[EXCL_F_COUNT];
    long violations;
    long crashed; /* workers that exited with a failure after the run */
    double seconds;
} excl_result;

/*
 * One run of mode for run_ms: servers, workers, the nemesis, then the
 * check. Prints the seed first, each violation, then one line of figures.
 * Returns the number of violations.
 */
long excl_run(const excl_mode *m, uint64_t seed, int64_t run_ms,
              excl_result *res);

/* The seed for a run: $EXCL_SEED when set, else from the clock. */
uint64_t excl_seed(void);

#endif
