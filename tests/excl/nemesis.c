/*
 * The nemesis: from the parent, at seeded random moments, it stops a
 * holder past its validity or a waiter (around its 5 s alive window),
 * kills a holder with -9 (a new worker takes its place), stops a lock
 * server, makes a proxy hold client bytes, or asks a holder to release at
 * a moment that races a waiter: its next heartbeat, the end of its alive
 * window, or its BLPOP's timeout; or, once a run, it replaces the
 * Sentinel master or a cluster's. Each fault is undone when due.
 *
 * The proxies run in a child process of their own ("the proxy host"), so
 * that the parent has no threads when it forks workers.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "excl_int.h"
#include "harness/proxy.h"
#include "harness/util.h"
#include "test.h"

#define EXCL_UNDO_MAX 64
/* Fair waiters: attempt (heartbeat) every 2 s, dead after 5 s unheard. */
#define EXCL_ALIVE_MS 5000
#define EXCL_HEARTBEAT_MS 2000
#define EXCL_SCAN_TIMEOUT_MS 300
/* Holders whose belief lasts longer than this are not stopped or killed:
 * every waiter would wait it out, and a short run would see few
 * sections. */
#define EXCL_LONG_HOLD_MS 3000
/* A Sentinel failover: down after 1 s, a vote; twice the failover
 * timeout when the vote splits (see th_sentinels_wait_failover). */
#define EXCL_FAILOVER_WAIT_MS 20000

typedef struct undo {
    int64_t due; /* th_now_ms */
    int fault;
    int target; /* worker slot, server or proxy index */
    pid_t pid;
    int64_t since_us; /* injected then (excl_now_us) */
} undo;

struct excl_nemesis {
    const excl_mode *m;
    excl_topo *t;
    excl_shared *sh;
    excl_rng rng;
    int64_t next_fault;
    undo u[EXCL_UNDO_MAX];
    int nu;
    long count[EXCL_F_COUNT];
    int gen[EXCL_MAX_WORKERS];
    int paused[EXCL_MAX_SERVERS];
    int failed_over; /* one failover a run */
    /* Sentinel: the node the sentinels named at the last look (-1:
     * none), when they last named it, and when to look again (ms). */
    int named;
    int64_t named_us, next_look;
    redisContext *scan[EXCL_MAX_SERVERS];
};

/* ---- The proxy host */

static _Noreturn void proxy_host(const int *upstream, int n, int ctl, int rep)
{
    th_proxy *p[EXCL_MAX_SERVERS + 1];
    int ports[EXCL_MAX_SERVERS + 1], i;
    int64_t msg[2];

#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    for (i = 0; i < n; i++) {
        p[i] = th_proxy_start(upstream[i]);
        ports[i] = th_proxy_port(p[i]);
    }
    if (write(rep, ports, sizeof *ports * (size_t)n) < 0)
        _exit(1);
    while (read(ctl, msg, sizeof msg) == (ssize_t)sizeof msg)
        if (msg[0] >= 0 && msg[0] < n)
            th_proxy_set_delay(p[msg[0]], msg[1]);
    for (i = 0; i < n; i++)
        th_proxy_stop(p[i]);
    _exit(0);
}

void excl_proxies_start(excl_topo *t, const int *upstream, int n, int *ports)
{
    int ctl[2], rep[2];
    ssize_t got;

    ASSERT(n <= EXCL_MAX_SERVERS + 1);
    ASSERT(pipe(ctl) == 0 && pipe(rep) == 0);
    fflush(NULL);
    t->proxy_pid = fork();
    ASSERT(t->proxy_pid >= 0);
    if (t->proxy_pid == 0) {
        close(ctl[1]);
        close(rep[0]);
        proxy_host(upstream, n, ctl[0], rep[1]);
    }
    close(ctl[0]);
    close(rep[1]);
    got = read(rep[0], ports, sizeof *ports * (size_t)n);
    close(rep[0]);
    ASSERT_EQ_INT(got, (ssize_t)(sizeof *ports * (size_t)n));
    t->proxy_ctl = ctl[1];
    t->nproxies = n;
}

void excl_proxy_delay(const excl_topo *t, int proxy, int64_t ms)
{
    int64_t msg[2] = {proxy, ms};

    ASSERT_EQ_INT(write(t->proxy_ctl, msg, sizeof msg), sizeof msg);
}

void excl_proxies_stop(excl_topo *t)
{
    if (t->nproxies == 0)
        return;
    close(t->proxy_ctl);
    kill(t->proxy_pid, SIGKILL);
    waitpid(t->proxy_pid, NULL, 0);
    t->nproxies = 0;
}

/* ---- Faults and their undoing */

static void later(excl_nemesis *n, int64_t in_ms, int fault, int target,
                  pid_t pid)
{
    if (n->nu == EXCL_UNDO_MAX)
        return;
    n->u[n->nu].due = th_now_ms() + in_ms;
    n->u[n->nu].fault = fault;
    n->u[n->nu].target = target;
    n->u[n->nu].pid = pid;
    n->u[n->nu].since_us = excl_now_us();
    n->nu++;
}

/* The fault in the history, for the liveness rules: a waiter stalled by
 * it is not to blame (pid 0: a server or a proxy). */
static void record_fault(const excl_nemesis *n, int fault, pid_t pid,
                         int64_t since_us)
{
    excl_rec r;

    memset(&r, 0, sizeof r);
    r.kind = EXCL_FAULT;
    r.flags = (uint8_t)fault;
    r.pid = (int32_t)pid;
    r.t0 = since_us;
    r.t1 = excl_now_us();
    if (excl_fault_failover(fault))
        r.x = n->m->guard ? EXCL_FAULT_GUARDED : EXCL_FAULT_LOSSY;
    snprintf(r.what, sizeof r.what, "%s", excl_fault_names[fault]);
    excl_history_add(n->t->hist_fd, &r);
}

static void undo_one(excl_nemesis *n, const undo *u)
{
    record_fault(n, u->fault, u->pid, u->since_us);
    if (u->fault == EXCL_F_STOP_HOLDER || u->fault == EXCL_F_STOP_WAITER) {
        kill(u->pid, SIGCONT);
        if (atomic_load(&n->sh->slot[u->target].pid) == u->pid)
            atomic_store(&n->sh->slot[u->target].stopped, 0);
    } else if (u->fault == EXCL_F_PAUSE_SERVER) {
        th_server_resume(n->t->srv[u->target]);
        n->paused[u->target] = 0;
    } else if (u->fault == EXCL_F_DELAY) {
        excl_proxy_delay(n->t, u->target, 0);
    }
}

static void undo_due(excl_nemesis *n, int all)
{
    int64_t now = th_now_ms();
    int i;

    for (i = 0; i < n->nu;) {
        if (all || n->u[i].due <= now) {
            undo_one(n, &n->u[i]);
            n->u[i] = n->u[--n->nu];
        } else {
            i++;
        }
    }
}

/* A random worker in state (not stopped; with short, not a holder with a
 * long belief), or -1. */
static int choose_(excl_nemesis *n, int state, int short_only)
{
    int i, k, nw = n->m->nworkers;
    int64_t far =
        short_only ? excl_now_us() + EXCL_LONG_HOLD_MS * 1000 : INT64_MAX;

    k = (int)excl_rng_range(&n->rng, 0, nw - 1);
    for (i = 0; i < nw; i++) {
        excl_slot *sl = &n->sh->slot[(k + i) % nw];
        if (atomic_load(&sl->pid) > 0 && atomic_load(&sl->state) == state &&
            !atomic_load(&sl->stopped) &&
            (state != EXCL_HOLDING || atomic_load(&sl->end_us) < far))
            return (k + i) % nw;
    }
    return -1;
}

static int choose(excl_nemesis *n, int state)
{
    return choose_(n, state, 1);
}

static int stop_worker(excl_nemesis *n, int fault, int w, int64_t ms)
{
    excl_slot *sl = &n->sh->slot[w];
    pid_t pid = atomic_load(&sl->pid);

    atomic_store(&sl->stopped, 1);
    if (kill(pid, SIGSTOP) != 0) {
        atomic_store(&sl->stopped, 0);
        return 0;
    }
    later(n, ms, fault, w, pid);
    return 1;
}

/* A holder, stopped until a little past its believed end. */
static int stop_holder(excl_nemesis *n)
{
    int w = choose(n, EXCL_HOLDING);
    int64_t end, left;

    if (w < 0)
        return 0;
    end = atomic_load(&n->sh->slot[w].end_us);
    left = end > 0 ? (end - excl_now_us()) / 1000 : 0;
    if (left < 0)
        left = 0;
    return stop_worker(n, EXCL_F_STOP_HOLDER, w,
                       left + excl_rng_range(&n->rng, 5, 400));
}

/* A waiter, stopped briefly or (fair) across its alive window's end. */
static int stop_waiter(excl_nemesis *n)
{
    int w = choose(n, EXCL_WAITING);
    int64_t ms = excl_rng_range(&n->rng, 50, 1500);

    if (w < 0)
        return 0;
    if (atomic_load(&n->sh->slot[w].fair) && excl_rng_chance(&n->rng, 30))
        ms = EXCL_ALIVE_MS + excl_rng_range(&n->rng, -400, 400);
    return stop_worker(n, EXCL_F_STOP_WAITER, w, ms);
}

static void respawn(excl_nemesis *n, int w)
{
    pid_t pid = excl_spawn(n->m, n->t, n->sh, w, ++n->gen[w]);

    atomic_store(&n->sh->slot[w].pid, pid);
}

static int kill_holder(excl_nemesis *n)
{
    int w = choose(n, EXCL_HOLDING);
    pid_t pid;

    if (w < 0)
        return 0;
    pid = atomic_load(&n->sh->slot[w].pid);
    atomic_store(&n->sh->slot[w].pid, 0);
    kill(pid, SIGKILL);
    record_fault(n, EXCL_F_KILL_HOLDER, pid, excl_now_us());
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    atomic_store(&n->sh->slot[w].state, EXCL_IDLE);
    atomic_store(&n->sh->slot[w].stopped, 0);
    respawn(n, w);
    return 1;
}

static int pause_server(excl_nemesis *n)
{
    int i = (int)excl_rng_range(&n->rng, 0, n->t->n - 1), k, busy = 0;
    int64_t ms = excl_rng_range(&n->rng, 100, 1500);

    for (k = 0; k < n->t->n; k++)
        busy += n->paused[k];
    /* Redlock: a minority at a time, so that locks are still taken. */
    if (n->paused[i] || (n->t->kind == EXCL_REDLOCK && busy > 0))
        return 0;
    /* Cluster: well inside the node timeout, so no failover starts. */
    if (n->t->kind == EXCL_CLUSTER)
        ms = excl_rng_range(&n->rng, 100, TH_CLUSTER_NODE_TIMEOUT_MS / 2);
    th_server_pause(n->t->srv[i]);
    n->paused[i] = 1;
    later(n, ms, EXCL_F_PAUSE_SERVER, i, 0);
    return 1;
}

/* A proxy holds client bytes for a while: Redlock sometimes both of its
 * proxies at once, past the TTL. */
static int delay(excl_nemesis *n)
{
    int p = (int)excl_rng_range(&n->rng, 0, n->t->nproxies - 1);
    int64_t ms = excl_rng_range(&n->rng, 50, 1500);
    int64_t window = excl_rng_range(&n->rng, 100, 1000);

    if (n->t->nproxies == 0)
        return 0;
    excl_proxy_delay(n->t, p, ms);
    later(n, window, EXCL_F_DELAY, p, 0);
    if (n->t->kind == EXCL_REDLOCK && excl_rng_chance(&n->rng, 30)) {
        excl_proxy_delay(n->t, 1 - p, ms);
        later(n, window, EXCL_F_DELAY, 1 - p, 0);
    }
    return 1;
}

/* A connection to server i for looking at waiters; NULL if paused. */
static redisContext *scan_conn(excl_nemesis *n, int i)
{
    struct timeval tv = {0, EXCL_SCAN_TIMEOUT_MS * 1000};

    if (n->paused[i])
        return NULL;
    if (n->scan[i] == NULL) {
        n->scan[i] = redisConnectUnixWithTimeout(n->t->sock[i], tv);
        if (n->scan[i] != NULL && !n->scan[i]->err)
            redisSetTimeout(n->scan[i], tv);
    }
    if (n->scan[i] != NULL && n->scan[i]->err) {
        redisFree(n->scan[i]);
        n->scan[i] = NULL;
    }
    return n->scan[i];
}

/* The server's clock on r in ms, or -1. */
static long long server_ms(redisContext *r)
{
    redisReply *t = redisCommand(r, "TIME");
    long long ms = -1;

    if (t != NULL && t->type == REDIS_REPLY_ARRAY && t->elements == 2)
        ms = strtoll(t->element[0]->str, NULL, 10) * 1000 +
             strtoll(t->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(t);
    return ms;
}

/* What is left of the alive window (ms) of a random fair waiter of key on
 * server i (its entry in the waiters' hash starts with the server time it
 * counts as dead at, see rl_waiter_entry in src/lua/lib.lua), or -1 when
 * none waits there. */
static long long alive_left(excl_nemesis *n, int i, int key)
{
    redisContext *r = scan_conn(n, i);
    redisReply *rep;
    char name[32];
    long long p = -1, now;

    if (r == NULL)
        return -1;
    excl_key_name(key, name, sizeof name);
    rep = redisCommand(r, "HGETALL %s{%s}:rl-ws", name, name);
    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2) {
        /* Field, value pairs; "~" is the last hand-off, not a waiter. */
        size_t pairs = rep->elements / 2,
               k = (size_t)excl_rng_range(&n->rng, 0, (int64_t)pairs - 1);
        if (strcmp(rep->element[2 * k]->str, "~") != 0 &&
            (now = server_ms(r)) >= 0) {
            p = strtoll(rep->element[2 * k + 1]->str, NULL, 10) - now;
            if (p < 0)
                p = -1;
        }
    }
    if (rep == NULL) {
        redisFree(n->scan[i]);
        n->scan[i] = NULL;
    }
    freeReplyObject(rep);
    return p;
}

/* A moment that races a fair waiter of key: its next attempt (its
 * heartbeat), or the end of its alive window when that comes first (it
 * is stopped). 0 when no fair waiter is queued. */
static int64_t fair_moment(excl_nemesis *n, int key)
{
    int i;
    long long p;

    for (i = 0; i < n->t->n; i++) {
        p = alive_left(n, i, key);
        if (p > EXCL_ALIVE_MS - EXCL_HEARTBEAT_MS)
            return excl_now_us() +
                   (p - (EXCL_ALIVE_MS - EXCL_HEARTBEAT_MS)) * 1000;
        if (p > 0)
            return excl_now_us() + p * 1000;
    }
    return 0;
}

/* Asks a holder to release at a racing moment: a fair waiter's heartbeat
 * or alive window's end, else the moment waiters blocked for its TTL time
 * out on the server (its lease's end less a server tick of 100 ms). */
static int race(excl_nemesis *n)
{
    int w = choose_(n, EXCL_HOLDING, 0);
    excl_slot *sl;
    int64_t end, at, now = excl_now_us();

    if (w < 0)
        return 0;
    sl = &n->sh->slot[w];
    end = atomic_load(&sl->end_us);
    if (end <= now)
        return 0;
    at = n->t->kind == EXCL_REDLOCK ? 0 : fair_moment(n, atomic_load(&sl->key));
    if (at == 0)
        at = end + atomic_load(&sl->drift_us) - 100000;
    at += excl_rng_range(&n->rng, -20000, 20000);
    if (at <= now || at >= end)
        return 0;
    atomic_store(&sl->release_at, at);
    return 1;
}

/* SENTINEL FAILOVER on one sentinel, the old master alive: retried
 * while the sentinels refuse it (a replica they do not yet see as good,
 * a failover they still count as running), for a bounded time. */
static void ask_failover(excl_nemesis *n)
{
    th_sentinels *t = n->t->sentinels;
    int64_t until = th_now_ms() + EXCL_FAILOVER_WAIT_MS;
    redisContext *c;
    redisReply *r;
    int ok = 0;

    while (!ok) {
        c = th_sentinels_sentinel_redis(t, 0);
        r = redisCommand(c, "SENTINEL FAILOVER %s", t->master_name);
        ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (!ok && th_now_ms() >= until)
            test_fail_(__FILE__, __LINE__, "SENTINEL FAILOVER: %s",
                       r ? r->str : c->errstr);
        freeReplyObject(r);
        redisFree(c);
        if (!ok)
            th_sleep_ms(100);
    }
}

/* A Sentinel failover, once a run: kill -9 of the master, SENTINEL
 * FAILOVER with the old master alive (the sentinels then make it a
 * replica), or the master stopped until its replica is promoted and
 * then resumed (cut off from sentinels and clients alike, then back). Waits (blocking: there is nothing else to do meanwhile)
 * until every sentinel names the new master and it answers as one; the
 * fault is in force until then. */
static int failover(excl_nemesis *n, int fault)
{
    int64_t since = excl_now_us();
    int old;

    if (n->t->sentinels == NULL || n->failed_over)
        return 0;
    n->failed_over = 1;
    if (fault == EXCL_F_KILL_MASTER) {
        old = th_sentinels_kill_master(n->t->sentinels);
    } else {
        old = th_sentinels_master(n->t->sentinels);
        if (fault == EXCL_F_STOP_MASTER)
            th_server_pause(n->t->sentinels->node[old]);
        else
            ask_failover(n);
    }
    th_sentinels_wait_failover(n->t->sentinels, old, EXCL_FAILOVER_WAIT_MS);
    record_fault(n, fault, 0, since);
    if (fault == EXCL_F_STOP_MASTER)
        th_server_resume(n->t->sentinels->node[old]);
    n->named = th_sentinels_master(n->t->sentinels);
    n->named_us = excl_now_us();
    return 1;
}

/* Sentinel: looks (every 100 ms) whether the sentinels name another
 * master than at the last look, outside the nemesis's own failover. If
 * so, a failover it did not cause: waits until it is confirmed, and
 * records it (EXCL_F_UNPLANNED), from the last look that named the old
 * master, so that the rules judge the locks across it as across one
 * the nemesis caused. */
static void look_for_failover(excl_nemesis *n)
{
    th_sentinels *t = n->t->sentinels;
    int64_t since = n->named_us;
    int m, old = n->named;

    if (t == NULL || th_now_ms() < n->next_look)
        return;
    n->next_look = th_now_ms() + 100;
    if ((m = th_sentinels_master(t)) < 0)
        return;
    n->named = m;
    n->named_us = excl_now_us();
    if (m == old || old < 0)
        return;
    test_log("a failover the nemesis did not cause: the sentinels name "
             "node %d, not node %d",
             m, old);
    th_sentinels_wait_failover(t, old, EXCL_FAILOVER_WAIT_MS);
    record_fault(n, EXCL_F_UNPLANNED, 0, since);
    n->count[EXCL_F_UNPLANNED]++;
    n->named = th_sentinels_master(t);
    n->named_us = excl_now_us();
}

/* Waits (bounded) until a server other than old serves slot, then until
 * the cluster agrees. */
static void wait_new_owner(th_cluster *c, unsigned slot, int old)
{
    int64_t until = th_now_ms() + EXCL_FAILOVER_WAIT_MS;
    int m;

    while ((m = th_cluster_owner(c, slot)) == old || m < 0) {
        if (th_now_ms() >= until)
            test_fail_(__FILE__, __LINE__,
                       "no failover of slot %u from server %d", slot, old);
        th_sleep_ms(50);
    }
    th_cluster_wait_ok(c, EXCL_FAILOVER_WAIT_MS);
}

/* A cluster failover of the master of key 0, once a run: kill -9, or
 * CLUSTER FAILOVER on its replica (the old master alive, its replica
 * then); in force until the replica serves the slot and the cluster
 * agrees. */
static int cluster_failover(excl_nemesis *n, int fault)
{
    th_cluster *c = n->t->cluster;
    int64_t since = excl_now_us();
    char key[32];
    unsigned slot;
    int old, rep;
    redisContext *r;

    if (c == NULL || n->failed_over)
        return 0;
    n->failed_over = 1;
    excl_key_name(0, key, sizeof key);
    slot = th_cluster_keyslot(c, key);
    old = th_cluster_owner(c, slot);
    if (old < 0 || (rep = th_cluster_replica_of(c, old)) < 0)
        test_fail_(__FILE__, __LINE__, "no master or replica for slot %u",
                   slot);
    if (fault == EXCL_F_CLUSTER_KILL) {
        th_cluster_kill(c, old);
    } else {
        r = th_cluster_redis(c, rep);
        freeReplyObject(th_cmd(r, "CLUSTER FAILOVER"));
        redisFree(r);
    }
    wait_new_owner(c, slot, old);
    record_fault(n, fault, 0, since);
    return 1;
}

static int inject(excl_nemesis *n, int f)
{
    switch (f) {
    case EXCL_F_STOP_HOLDER:
        return stop_holder(n);
    case EXCL_F_STOP_WAITER:
        return stop_waiter(n);
    case EXCL_F_KILL_HOLDER:
        return kill_holder(n);
    case EXCL_F_PAUSE_SERVER:
        return pause_server(n);
    case EXCL_F_DELAY:
        return delay(n);
    case EXCL_F_KILL_MASTER:
    case EXCL_F_SENTINEL_FAILOVER:
    case EXCL_F_STOP_MASTER:
        return failover(n, f);
    case EXCL_F_CLUSTER_KILL:
    case EXCL_F_CLUSTER_FAILOVER:
        return cluster_failover(n, f);
    default:
        return race(n);
    }
}

/* Tries the enabled faults from a random one on, until one applies. */
static void inject_some(excl_nemesis *n)
{
    int k = (int)excl_rng_range(&n->rng, 0, EXCL_F_COUNT - 1), i, f;

    for (i = 0; i < EXCL_F_COUNT; i++) {
        f = (k + i) % EXCL_F_COUNT;
        if ((n->m->faults & (1u << f)) && inject(n, f)) {
            n->count[f]++;
            return;
        }
    }
}

/* Workers that died on their own (not by the nemesis) are a failure of
 * the run: a crash, or a mode's mistake. */
static void reap(excl_nemesis *n)
{
    int i, st;
    pid_t pid;

    for (i = 0; i < n->m->nworkers; i++) {
        pid = atomic_load(&n->sh->slot[i].pid);
        if (pid <= 0 || waitpid(pid, &st, WNOHANG) != pid)
            continue;
        if (!atomic_load(&n->sh->stop))
            test_fail_(__FILE__, __LINE__,
                       "worker %d (pid %d) ended by itself: status %d "
                       "signal %d",
                       i, (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        atomic_store(&n->sh->slot[i].pid, 0);
    }
}

excl_nemesis *excl_nemesis_new(const excl_mode *m, excl_topo *t,
                               excl_shared *sh, uint64_t seed)
{
    excl_nemesis *n = calloc(1, sizeof *n);

    ASSERT(n != NULL);
    n->m = m;
    n->t = t;
    n->sh = sh;
    excl_rng_seed(&n->rng, seed, 77);
    n->named = t->sentinels != NULL ? th_sentinels_master(t->sentinels) : -1;
    n->named_us = excl_now_us();
    n->next_fault =
        th_now_ms() + excl_rng_range(&n->rng, m->gap_lo_ms, m->gap_hi_ms);
    return n;
}

int64_t excl_nemesis_step(excl_nemesis *n)
{
    int64_t now, next;
    int i;

    undo_due(n, 0);
    reap(n);
    look_for_failover(n);
    now = th_now_ms();
    if (n->m->faults != 0 && now >= n->next_fault) {
        inject_some(n);
        n->next_fault =
            now + excl_rng_range(&n->rng, n->m->gap_lo_ms, n->m->gap_hi_ms);
    }
    next = n->m->faults ? n->next_fault : now + 50;
    for (i = 0; i < n->nu; i++)
        if (n->u[i].due < next)
            next = n->u[i].due;
    next -= th_now_ms();
    /* Also look at the workers now and then: one may have died. */
    return next < 1 ? 1 : next > 50 ? 50 : next;
}

void excl_nemesis_calm(excl_nemesis *n)
{
    undo_due(n, 1);
}

void excl_nemesis_counts(const excl_nemesis *n, long *faults)
{
    memcpy(faults, n->count, sizeof n->count);
}

void excl_nemesis_free(excl_nemesis *n)
{
    int i;

    if (n == NULL)
        return;
    for (i = 0; i < EXCL_MAX_SERVERS; i++)
        if (n->scan[i] != NULL)
            redisFree(n->scan[i]);
    free(n);
}
