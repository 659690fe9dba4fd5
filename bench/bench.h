/*
 * lockbench: the pieces of the lock benchmark share these declarations.
 *
 * Every time is CLOCK_MONOTONIC in nanoseconds, so that stamps taken in
 * different processes (C workers, Python, Node) can be merged by time.
 */
#ifndef LOCKBENCH_H
#define LOCKBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>
#include <redislock.h>

#define LB_LOCK_KEY "bench:lock"
#define LB_COUNTER_KEY "bench:counter"
/* Lease of every benchmark lock: far longer than any critical section, so
 * that no lock ever expires during a run. */
#define LB_TTL_MS 10000

/* The release of most other libraries' locks (redis-py's Lock, redsync,
 * bsm/redislock): delete the key if it still holds the caller's token.
 * It wakes none of the library's waiters. */
#define LB_CAD                                                                 \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "                           \
    "return redis.call('DEL', KEYS[1]) end return 0"

/* One critical section as its holder saw it. */
typedef struct lb_cycle {
    int64_t acq_ret;   /* the acquire call returned */
    int64_t rel_start; /* the release call began */
    int64_t rel_end;   /* the release call returned */
} lb_cycle;

/* What every phase needs. */
typedef struct lb_env {
    const char *sock;      /* redis-server's unix socket */
    char url[300];         /* "unix://" sock, for the library */
    int tcp_port;          /* the same server on 127.0.0.1 (0: none) */
    char tcp_url[64];      /* "redis://127.0.0.1:" tcp_port */
    const char *peers_dir; /* bench/peers: the Python and Node workers */
    const char *python;    /* interpreter with the redis package */
    const char *node;
    const char *out_dir;   /* data files, the plot and results.md */
    int timeout_s;         /* a contention run longer than this fails */
    redisContext *ctl;     /* the benchmark's own control connection */
} lb_env;

/* LB_RAW: the wake-on-release protocol's floor in raw hiredis (see
 * raw_worker in contend.c). */
typedef enum lb_lib { LB_REDISLOCK, LB_REDIS_PY, LB_REDLOCK, LB_RAW } lb_lib;

/* One contention run: K processes, M cycles each, one library setting. */
typedef struct lb_series {
    const char *name;  /* as printed in the table */
    const char *slug;  /* file-name safe */
    lb_lib lib;
    int fair;          /* LB_REDISLOCK: .fair = 1 */
    int limit;         /* LB_REDISLOCK: a semaphore's permit (.limit); 0: the
                        * lock */
    int shared;        /* LB_REDISLOCK: half the cycles take a share
                        * (.shared = 1) and only read the counter */
    int set;           /* LB_REDISLOCK: > 1, a set of that many keys
                        * (redislock_lock_new_multi), LB_LOCK_KEY first */
    int tcp;           /* LB_REDISLOCK and LB_RAW: over loopback TCP
                        * (e->tcp_url) rather than the unix socket */
    int loop;          /* LB_REDISLOCK: acquire and release on an event
                        * loop (<redislock/libevent.h>) */
    const char *arg1;  /* redis-py: sleep (s); redlock: retryDelay (ms) */
    const char *arg2;  /* redlock: retryJitter (ms) */
    int k, m;
    /* Results. */
    int ran;           /* the workers started and all finished */
    int counter_ok;    /* the counter read want */
    int clock_ok;      /* the workers' stamps are CLOCK_MONOTONIC */
    long long counter;
    long long want;    /* what the counter must read: the exclusive cycles
                        * (k * m unless the series is shared) */
    long overlaps;     /* acquisitions that returned before a holder they
                        * exclude began its release: exclusion broken */
    int readers;       /* the most shared sections held at once */
    double cycles_s;
    double h50, h99;   /* hand-off (next acquire return - release start), us;
                        * in a shared series only where the two sections
                        * exclude each other (a hand-over) */
    double x50, x99;   /* the same over holder changes only, us */
    double t50[3];     /* a shared series' hand-over p50 by transition:
                        * writer to writer, writer to reader, reader to
                        * writer, us (-1: none) */
    size_t nt[3];      /* and how many of each */
    double sw;         /* share of hand-offs that change holder */
    double ahead;      /* share of holder changes whose next acquire
                        * returned before the previous release did */
    double cmds_acq;   /* server calls per acquisition */
    double cpu_acq;    /* server CPU per acquisition, us (the counter's
                        * GET and SET included) */
    int64_t *hand;     /* sorted hand-offs, ns (for the plot) */
    size_t nhand;
    int64_t *xhand;    /* sorted hand-offs that changed holder, ns */
    size_t nxhand;
    double seconds;    /* wall time of the run, start-up included */
    /* Its hand-off p50 over the series it is judged against, median over
     * pairs of the two run back to back (lockbench's loop_pairs and
     * kind_pairs): the event loop's over the blocking calls' (default
     * mode), fair mode's plain lock over the default mode's, any other
     * kind over the plain lock's of its mode; npairs 0: not measured. */
    double pair_ratio;
    int npairs;
    /* The same over loopback TCP (0: not run), and its floor's. */
    double tcp_pair_ratio, tcp_floor_ratio;
    /* The same for the raw hand-off (LB_RAW) waiting in epoll_wait()
     * against blocked in read(): the floor of any event loop here. */
    double floor_ratio;
    char err[200];
} lb_series;

/* util.c */
int64_t lb_now_ns(void);
void lb_sleep_ms(int ms);
void lb_sort_i64(int64_t *v, size_t n);
/* The p-th percentile (0..100) of sorted v, nearest rank. */
int64_t lb_pct(const int64_t *v, size_t n, double p);
double lb_median(double *v, size_t n);
redisContext *lb_connect(const char *sock);
/* A connection over transport t (LB_UNIX: e->sock, LB_TCP: e->tcp_port). */
redisContext *lb_connect_over(const lb_env *e, int t);
/* Makes c wait as an event loop does: its fd non-blocking, watched by a
 * new epoll instance, returned (-1: failed). lb_get_reply then writes what
 * c has buffered at once and reads the next reply, in epoll_wait()
 * between reads; with ep -1 it is redisGetReply (blocked in read()).
 * What the first costs over the second is the floor of any event loop on
 * the transport, with or without the library. */
int lb_nonblock(redisContext *c);
int lb_get_reply(redisContext *c, int ep, redisReply **r);
/* Runs a command and dies on a connection failure or an error reply. */
redisReply *lb_cmd(redisContext *c, const char *fmt, ...);
/* Sum of every command's calls in INFO commandstats, INFO itself left
 * out. Redis counts the commands a Lua script runs too. */
long long lb_server_calls(redisContext *c);
/* Script calls so far (FCALL, EVALSHA, EVAL in INFO commandstats), and,
 * usec not NULL, the server's time in them (us) into *usec. */
long long lb_script_calls(redisContext *c, long long *usec);
/* The server's CPU time so far (INFO cpu: used_cpu_user + used_cpu_sys),
 * in microseconds. */
double lb_server_cpu_us(redisContext *c);
/* Reads a whole file of lb_cycle records; returns how many, -1 on error. */
long lb_read_cycles(const char *path, lb_cycle *out, long max);
/* "CPU 1" style text for the affinity of pid (0: this process). */
void lb_affinity(pid_t pid, char *buf, size_t len);
void lb_die(const char *fmt, ...);
/* Waits for every pid; after timeout_s seconds kills (SIGKILL) and reaps
 * those left. status[i] is waitpid's, -1 for a killed one. Returns 0 when
 * all ended in time, -1 otherwise. */
int lb_wait_all(const pid_t *pids, int n, int timeout_s, int *status);
/* Reads one line from fd within timeout_ms, its newline dropped (len - 1
 * bytes at most); 0, or -1 on EOF or timeout. */
int lb_read_line(int fd, char *line, size_t len, int timeout_ms);
/* Reads "ready <ns>\n" from fd within timeout_ms; returns the stamp, or
 * -1 on EOF, garbage or timeout. */
int64_t lb_read_ready(int fd, int timeout_ms);

/* A client of the server over its unix socket (e->url) and a handle on
 * LB_LOCK_KEY; 0, or -1 with neither. */
int lb_open_lock(const lb_env *e, redislock_client **cl, redislock_lock **l);

/* The number field of INFO section (-1 when absent). */
long long lb_info_field(redisContext *c, const char *section,
                        const char *field);

/* micro.c: the single-client measurements, over each transport. */
enum { LB_UNIX, LB_TCP, LB_WIRES };

/* One transport's figures. Uncontended acquire+release, by variant: 0 the
 * library's two scripts sent by hand with hiredis, 1 redislock default,
 * 2 redislock fair, 3 the minimal raw loop (SET NX PX, then a
 * compare-and-delete EVALSHA). Rates are medians over the rounds. */
typedef struct lb_wire {
    int ran;
    double ping_p50, ping_p99, ping_ops; /* us, us, ops/s */
    double rate[4], p50[4], p99[4];
    double ratio[4];       /* median over rounds of rate[i] / rate[0] */
    double ratio_min[4];   /* median over rounds of rate[i] / rate[3] */
    double calls_cycle[4]; /* server calls per cycle */
    double cpu_cycle[4];   /* server CPU per cycle, us (INFO cpu) */
    double piped_cpu[4];   /* the same, 0 and 3 only, cycles pipelined
                            * 64 deep: no wake-up per request */
    double loop_ratio;     /* median over rounds of the event loop's rate
                            * (libevent) / the blocking calls' (rate[1]) */
    double loop_floor;     /* the same for the library's scripts sent by
                            * hand: waiting in epoll_wait() on a
                            * non-blocking fd / blocked in read() */
} lb_wire;

typedef struct lb_micro {
    lb_wire w[LB_WIRES];
    int rounds;
    double ping_p50; /* the unix socket's: the RTT the targets use */
} lb_micro;

extern const char *const lb_wire_name[LB_WIRES];

void lb_run_ping(const lb_env *e, lb_wire *w, int t, int ms);
void lb_run_uncontended(const lb_env *e, lb_wire *w, int t, int rounds,
                        int ms);

/* A blocked waiter's traffic over a one-second window. */
typedef struct lb_idle {
    int fair;
    int foreign;       /* behind a SET NX PX holder, whose release (a DEL)
                        * wakes nobody: the waiter's read is tracked */
    int ok;            /* the waiter blocked, then got the lock */
    double sent;       /* commands the waiter sent (SLOWLOG), per second */
    double calls;      /* server calls (commandstats), per second */
    double wake_us;    /* release start to the waiter's acquire return */
    int conns;         /* server connections the waiting process holds */
    char err[200];
} lb_idle;

/* What report.c calls an idle case. */
const char *lb_idle_name(const lb_idle *r);

void lb_run_idle(const lb_env *e, lb_idle *r);

/* foreign.c: a waiter of the library's behind another library's lock,
 * cycle after cycle (issue 38: its grant within 5 ms of the release). */
typedef struct lb_foreign {
    int py;          /* the holder is redis-py's Lock (bench/peers/
                      * pyholder.py); else SET NX PX and LB_CAD by EVALSHA
                      * from a hiredis connection of the benchmark's */
    int raw;         /* the waiter is the protocol's floor in raw hiredis
                      * (CLIENT TRACKING, a tracked GET, SET NX on the
                      * notice), not the library's */
    int n;           /* cycles to time */
    int ran;         /* 1: run (0: left out, no peers) */
    int ok;          /* every cycle timed, none granted while held */
    int got;         /* cycles timed */
    double p50, p90, p99, max; /* release start to the grant, us */
    char err[200];
} lb_foreign;

/* What report.c calls the holder's release. */
const char *lb_foreign_name(const lb_foreign *f);

void lb_run_foreign(const lb_env *e, lb_foreign *f);

/* memory.c: bytes and keys per held plain lock, the library's against
 * SET NX PX's. */
typedef struct lb_memory {
    int n, ok;
    double raw_bytes, raw_keys, lib_bytes, lib_keys;
    char err[200];
} lb_memory;

void lb_run_memory(const lb_env *e, lb_memory *m, int n);

/* kinds.c: the server's CPU per uncontended cycle of each kind of lock
 * against the plain lock's (issue 38: each at most 1.5 x). */
enum {
    LB_KIND_PLAIN,
    LB_KIND_FAIR,
    LB_KIND_SEM,
    LB_KIND_SHARED,
    LB_KIND_SET,
    LB_KINDS
};

typedef struct lb_kinds {
    int ran, rounds;
    double cpu[LB_KINDS];   /* server CPU per cycle over all rounds, us */
    double ratio[LB_KINDS]; /* median over rounds of cpu / the plain's */
} lb_kinds;

extern const char *const lb_kind_name[LB_KINDS];

void lb_run_kinds(const lb_env *e, lb_kinds *m, int rounds, int ms);

/* loopscale.c: one event loop holding n locks with the watchdog on and
 * m waiting (issue 16's scale targets). */
typedef struct lb_scale {
    int n, m, ok;
    double rss_per_lock;      /* client memory per held lock, bytes */
    double cpu_us_per_lock_s; /* client CPU per held lock per second */
    int lost;                 /* held locks without validity after it */
    int waiting;              /* of m, still waiting before the release */
    long long conns;          /* server connections the loop held */
    int woke;                 /* all m acquired after their release */
    double wake_all_ms;       /* from the first release to the last one */
    char err[200];
} lb_scale;

void lb_run_loop_scale(const lb_env *e, lb_scale *s, int n, int m);

/* contend.c */
void lb_run_series(const lb_env *e, lb_series *s);
/* An acquire (acquire 1, with o) or a release (0) of l, on the event
 * loop a over base (<redislock/libevent.h>) run until its callback, or
 * with a NULL the blocking call; *at gets when it returned or its
 * callback came (CLOCK_MONOTONIC ns). */
struct redislock_libevent;
struct event_base;
redislock_err lb_lock_op(struct redislock_libevent *a, struct event_base *base,
                         redislock_lock *l, const redislock_acquire_options *o,
                         int acquire, int64_t *at);

/* report.c */
/* What lb_report prints: the one-client figures, and the runs. */
typedef struct lb_results {
    const lb_micro *m;
    const lb_idle *idle;
    int nidle;
    const lb_foreign *fw; /* behind another library's lock */
    int nfw;
    const lb_memory *mem;
    const lb_scale *scale;
    const lb_kinds *kinds; /* NULL: not run (--core) */
    lb_series *s;
    size_t ns;
} lb_results;

void lb_report(const lb_env *e, const lb_results *r, const char *machine);
/* lockbench --core's: the uncontended targets over the unix socket and
 * the K=8 hand-offs, then one line of their figures. */
void lb_report_core(const lb_env *e, const lb_results *r);
/* The exit status: 1 when any counter check or exclusion check failed,
 * or a run did. */
int lb_failed(const lb_results *r);

#endif
