/*
 * What the parts of one run share: the servers the parent started (copied
 * into each worker by fork), a shared memory page where workers say what
 * they are doing (for the nemesis to aim at), a worker's state and one
 * section's plan.
 */
#ifndef EXCL_INT_H
#define EXCL_INT_H

#include <hiredis.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <redislock.h>

#include "harness/apploop.h"
#include "harness/sentinel.h"

#include "excl.h"

#define EXCL_URL_MAX 520 /* a Sentinel URL names three sentinels */

typedef struct excl_topo {
    excl_topo_kind kind;
    int n; /* lock servers */
    th_server *srv[EXCL_MAX_SERVERS];
    th_cluster *cluster;
    th_sentinels *sentinels;
    th_server *res;                           /* the fenced resource's server */
    char url[EXCL_MAX_SERVERS][EXCL_URL_MAX]; /* how clients reach them */
    char sock[EXCL_MAX_SERVERS][EXCL_URL_MAX]; /* unix sockets: the truth */
    char res_url[EXCL_URL_MAX];
    int proxy_of[EXCL_MAX_SERVERS]; /* the proxy in front, or -1 */
    int res_proxy;
    int nproxies;
    pid_t proxy_pid;
    int proxy_ctl; /* the proxy host's command pipe */
    int hist_fd;
    char hist[256];
    uint64_t seed;
    int64_t t_base;
} excl_topo;

/* The workers' connect and command timeouts. */
#define EXCL_CMD_TIMEOUT_MS 1000

enum { EXCL_IDLE, EXCL_WAITING, EXCL_HOLDING };

typedef struct excl_slot {
    atomic_int pid;
    atomic_int state;
    atomic_int key;
    atomic_int stopped;         /* by the nemesis, until it sends SIGCONT */
    atomic_int fair;            /* the section waits in a fair queue */
    _Atomic int64_t end_us;     /* the believed end, while holding */
    _Atomic int64_t drift_us;   /* its drift allowance */
    _Atomic int64_t release_at; /* the nemesis's wish: release then */
} excl_slot;

typedef struct excl_shared {
    atomic_int stop;
    atomic_long sections;
    excl_slot slot[EXCL_MAX_WORKERS];
} excl_shared;

/* How long a holder keeps the lock. */
typedef enum excl_hold {
    EXCL_H_FOR,  /* hold_ms */
    EXCL_H_EDGE, /* until hold_ms before the believed end */
    EXCL_H_OVER, /* until hold_ms past it: the release comes too late */
    EXCL_H_BLPOP /* until waiters' BLPOP times out (the server's end,
                    less a server tick), plus hold_ms (may be negative) */
} excl_hold;

typedef struct excl_section {
    int key; /* a set's: its lowest key */
    /* The keys taken as one set (redislock_lock_new_multi), bit k for
     * key k; 0: the key alone, with redislock_lock_new. */
    unsigned set;
    redislock_acquire_options o;
    char owner[64];
    char meta[64];
    int shared; /* the owner id is shared with other processes */
    excl_hold hold;
    int64_t hold_ms;
    int nested; /* re-entries while held (reentrant) */
    int64_t nested_ttl[2];
    int extends; /* extends while held */
    int64_t extend_ttl[3];
    int adopt;          /* 1: a second handle adopts and releases;
                           2: it extends first */
    int64_t hold_after; /* release with this hold-after */
    int writes;         /* fenced writes */
    int64_t rest_ms;    /* idle after the section */
    int foreign;        /* held as another library holds (foreign.c) */
    int prompt;         /* promises a prompt grant (EXCL_A_PROMPT) */
    /* Ends not by a release but by a deletion of the key by hand, then
     * a second handle's first-try take (1: of the key; 2: of a set of
     * the key and the next one), a moment's hold and its release. */
    int retake;
    /* An election (redislock_campaign with meta as the value, resign at
     * the end); its extends are proclaims. */
    int elect;
    char what[64];
} excl_section;

typedef struct excl_worker {
    const excl_mode *m;
    const excl_topo *t;
    excl_shared *sh;
    int idx;
    excl_rng rng;
    redislock_client *c;                     /* the lock client */
    redislock_client *c2;                    /* a second one, for adopting */
    redislock_client *rc;                    /* the resource's */
    redislock_lock *l[EXCL_MAX_KEYS];        /* single locks, by key */
    redislock_lock *ls[1u << EXCL_MAX_KEYS]; /* sets, by their keys' bits */
    /* The truth's connections, by server (Sentinel: by node), and a
     * sentinel's, which names the node to read it from. */
    redisContext *truth[EXCL_MAX_SERVERS];
    redisContext *sent;
    uint32_t acq;
    int pid;
    char owner[64];     /* this process's own owner id */
    redislock_loop *lp; /* the mode's event loop, or NULL */
    /* The watchdog's on_lost, from its thread: when (0: not told) and
     * why; the worker records the loss on its own thread. */
    _Atomic int64_t lost_at;
    atomic_int lost_why;
    char lost_detail[160]; /* written before lost_at is */
    app app;            /* the application loop driving it */
} excl_worker;

/* The lease of key as the servers see it for id (its last token fence,
 * 0: any): the PTTL, -2 when not so held; 0 when unknown. For Redlock,
 * the majority-th longest, a server that did not answer counting as
 * holding it forever (excl_truth_lease) or not at all (excl_truth_kept). */
int excl_truth_lease(excl_worker *w, int key, const char *id, int64_t fence,
                     int64_t *pttl);
int excl_truth_kept(excl_worker *w, int key, const char *id, int64_t fence,
                    int64_t *pttl);
/* Deletes key by hand on the one server of a single-server run (as an
 * operator or another tool might: no script, nobody woken); 1 when the
 * server answered. */
int excl_truth_del(excl_worker *w, int key);
/* A record of kind for section s, filled from the worker and the section. */
void excl_fill(const excl_worker *w, const excl_section *s, excl_rec *r,
               int kind);
/* One section run by the CLI (cliworker.c): redislock run with the
 * section's options, a command that holds for s->hold_ms. */
void excl_cli_section(excl_worker *w, excl_section *s);
/* One section held as another library holds a lock (foreign.c): SET NX
 * PX polled within the section's wait, a compare-and-delete after
 * s->hold_ms. */
void excl_foreign_section(excl_worker *w, excl_section *s);

/* In a forked child: runs sections until told to stop; never returns. */
_Noreturn void excl_worker_main(const excl_mode *m, const excl_topo *t,
                                excl_shared *sh, int idx, int gen);

/* The lock key's name and the fenced resource's. */
void excl_key_name(int key, char *buf, size_t size);
void excl_res_name(int key, char *buf, size_t size);

/* The proxy host: a child process running the harness's proxies (threads
 * stay out of the parent, which forks workers). */
void excl_proxies_start(excl_topo *t, const int *upstream, int n, int *ports);
void excl_proxy_delay(const excl_topo *t, int proxy, int64_t ms);
void excl_proxies_stop(excl_topo *t);

/* The nemesis: injects faults until until_us, counting them. */
typedef struct excl_nemesis excl_nemesis;
excl_nemesis *excl_nemesis_new(const excl_mode *m, excl_topo *t,
                               excl_shared *sh, uint64_t seed);
/* One step: undoes what is due, injects a fault when due, respawns
 * killed workers; returns how long to sleep before the next step. */
int64_t excl_nemesis_step(excl_nemesis *n);
/* Undoes every fault still in force (resumes stopped processes and
 * servers, lifts delays). */
void excl_nemesis_calm(excl_nemesis *n);
void excl_nemesis_counts(const excl_nemesis *n, long *faults);
void excl_nemesis_free(excl_nemesis *n);

/* Starts worker idx (generation gen) in a child; its pid. */
pid_t excl_spawn(const excl_mode *m, const excl_topo *t, excl_shared *sh,
                 int idx, int gen);

#endif
