/*
 * lockbench, contention: K worker processes on one lock, each doing M
 * cycles of acquire (waiting as long as it takes), a non-atomic GET/SET
 * increment of a counter, release. Workers stamp every cycle on
 * CLOCK_MONOTONIC; the parent merges the stamps by time.
 *
 * Workers are forked children running the library or the raw protocol's
 * floor (their stamps go to a MAP_SHARED array made before fork) or redis-py / node-redlock scripts
 * (their stamps go to a file each). All follow one start protocol: print
 * "ready <CLOCK_MONOTONIC ns>" on stdout once connected, then start when
 * stdin reaches EOF, which the parent causes for all at once by closing
 * the pipe's write end.
 *
 * A shared series mixes readers and writers on the one key: a worker's
 * cycle is a shared acquire that only reads the counter when the worker's
 * index plus the cycle's is odd, else an exclusive one that increments
 * it. Which it was goes to a byte per cycle after the stamps in the same
 * MAP_SHARED region.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redislock.h>
#include <redislock/libevent.h>

#include "bench.h"

#define MAX_K 64

typedef struct worker {
    pid_t pid;
    int ready_fd;
    int64_t spawned, ready;
    char file[PATH_MAX];
} worker;

/* One merged cycle. */
typedef struct merged {
    lb_cycle c;
    int who;
    int shared; /* a reader's section */
} merged;

static void child_fail(const char *what, redislock_err err)
{
    fprintf(stderr, "lockbench worker %d: %s: %s (%s)\n", (int)getpid(),
            what, redislock_strerror(err), redislock_errdetail());
    _exit(2);
}

static long long counter_get(redisContext *c)
{
    redisReply *r = redisCommand(c, "GET " LB_COUNTER_KEY);
    long long v;

    if (r == NULL || (r->type != REDIS_REPLY_STRING &&
                      r->type != REDIS_REPLY_NIL))
        _exit(3);
    v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

static long long counter_bump(redisContext *c)
{
    long long v = counter_get(c);
    redisReply *r = redisCommand(c, "SET " LB_COUNTER_KEY " %lld", v + 1);

    if (r == NULL || r->type != REDIS_REPLY_STATUS)
        _exit(3);
    freeReplyObject(r);
    return v + 1;
}

/* The byte per cycle that says a reader's section: after the k * m
 * stamps in the same region. */
static unsigned char *kinds(const lb_series *s, lb_cycle *shm)
{
    return (unsigned char *)(shm + (size_t)s->k * s->m);
}

/* An operation on the event loop, and when its callback came. */
typedef struct loop_step {
    int done;
    redislock_err err;
    int64_t at;
} loop_step;

static void loop_done(redislock_lock *l, redislock_err err, void *arg)
{
    loop_step *st = arg;

    (void)l;
    st->err = err;
    st->at = lb_now_ns();
    st->done = 1;
}

redislock_err lb_lock_op(redislock_libevent *a, struct event_base *base,
                         redislock_lock *l, const redislock_acquire_options *o,
                         int acquire, int64_t *at)
{
    loop_step st = {0};
    redislock_err err;

    if (a == NULL) {
        err = acquire ? redislock_acquire(l, o) : redislock_release(l);
        *at = lb_now_ns();
        return err;
    }
    err = acquire ? redislock_loop_acquire(redislock_libevent_loop(a), l, o,
                                           loop_done, &st)
                  : redislock_loop_release(redislock_libevent_loop(a), l, 0,
                                           loop_done, &st);
    while (err == REDISLOCK_OK && !st.done)
        event_base_loop(base, EVLOOP_ONCE);
    *at = st.at;
    return err != REDISLOCK_OK ? err : st.err;
}

/* A library worker, in a forked child: never returns. idx is its place
 * among the workers, rec and kind its rows of the shared region. */
static void rl_worker(const lb_env *e, const lb_series *s, int idx,
                      lb_cycle *rec, unsigned char *kind, int go_fd,
                      int ready_fd)
{
    redislock_client *cl;
    redislock_lock *l;
    redislock_acquire_options o = {0};
    redisContext *data = lb_connect_over(e, s->tcp ? LB_TCP : LB_UNIX);
    struct event_base *base = NULL;
    redislock_libevent *a = NULL;
    redislock_err err;
    char b;
    int i;

    if (data == NULL)
        _exit(3);
    if ((err = redislock_client_new(&cl, s->tcp ? e->tcp_url : e->url,
                                    NULL)) != REDISLOCK_OK)
        child_fail("connect", err);
    if (s->set > 1) {
        /* A set: the lock's key and others of its own, all on the one
         * server. */
        static const char *const names[] = {LB_LOCK_KEY, LB_LOCK_KEY ":2",
                                            LB_LOCK_KEY ":3", LB_LOCK_KEY ":4"};
        const void *keys[4];
        size_t lens[4];

        for (i = 0; i < s->set && i < 4; i++) {
            keys[i] = names[i];
            lens[i] = strlen(names[i]);
        }
        err = redislock_lock_new_multi(cl, keys, lens, (size_t)i, &l);
    } else {
        err = redislock_lock_new(cl, LB_LOCK_KEY, strlen(LB_LOCK_KEY), &l);
    }
    if (err != REDISLOCK_OK)
        child_fail("lock_new", err);
    if (s->loop && (base = event_base_new()) == NULL)
        child_fail("event_base_new", REDISLOCK_ENOMEM);
    if (s->loop && (err = redislock_libevent_new(&a, cl, base)) != 0)
        child_fail("redislock_libevent_new", err);
    o.ttl_ms = LB_TTL_MS;
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    o.fair = s->fair;
    o.limit = s->limit;
    dprintf(ready_fd, "ready %lld\n", (long long)lb_now_ns());
    close(ready_fd);
    while (read(go_fd, &b, 1) > 0) /* EOF is the start signal */
        ;
    for (i = 0; i < s->m; i++) {
        /* Readers and writers alternate in each worker, and odd workers
         * start with a reader, so that both kinds always queue. */
        o.shared = s->shared && (idx + i) % 2 == 1;
        kind[i] = (unsigned char)o.shared;
        if ((err = lb_lock_op(a, base, l, &o, 1, &rec[i].acq_ret)) != 0)
            child_fail("acquire", err);
        if (o.shared)
            counter_get(data);
        else
            counter_bump(data);
        rec[i].rel_start = lb_now_ns();
        if ((err = lb_lock_op(a, base, l, &o, 0, &rec[i].rel_end)) != 0)
            child_fail("release", err);
    }
    redislock_libevent_free(a);
    if (base != NULL)
        event_base_free(base);
    redislock_lock_free(l);
    redislock_client_free(cl);
    redisFree(data);
    _exit(0);
}

/* One reply of the raw worker's connection (ep: lb_get_reply's); exits
 * the worker if there is none. */
static redisReply *raw_reply(redisContext *c, int ep)
{
    redisReply *r;

    if (lb_get_reply(c, ep, &r) != REDIS_OK || r == NULL)
        _exit(3);
    return r;
}

/* The floor of a hand-off by wake-on-release, in raw hiredis: the
 * fewest commands a waiter woken by a release can take the lock with.
 * A release deletes the key if it holds the token and pushes a wake-up
 * (a script, so that both are atomic); a waiter that finds the key held
 * blocks with BLPOP and sends its next SET NX behind it, so that Redis
 * runs the SET as soon as the release's push serves the BLPOP, as the
 * library's waiters do. No fencing token, waiting marker, abandoned
 * requests, queue or shares: what the library adds to this is its
 * hand-off's cost. With s->loop the worker waits in epoll_wait() on a
 * non-blocking socket, as an event loop does (lb_nonblock). Never
 * returns. */
#define RAW_RELEASE                                                          \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "                         \
    "redis.call('DEL', KEYS[1]) "                                            \
    "if redis.call('LLEN', KEYS[2]) == 0 then "                              \
    "redis.call('LPUSH', KEYS[2], 'wake') end "                              \
    "redis.call('PEXPIRE', KEYS[2], ARGV[2]) return 1 end return 0"

static void raw_worker(const lb_env *e, const lb_series *s, int idx,
                       lb_cycle *rec, int go_fd, int ready_fd)
{
    redisContext *c = lb_connect_over(e, s->tcp ? LB_TCP : LB_UNIX);
    redisContext *data = lb_connect_over(e, s->tcp ? LB_TCP : LB_UNIX);
    redisReply *r;
    char tok[32], ttl[16], sha[64] = "", b;
    int i, ok, ep = -1;

    if (c == NULL || data == NULL)
        _exit(3);
    snprintf(tok, sizeof tok, "raw-%d-%d", idx, (int)getpid());
    snprintf(ttl, sizeof ttl, "%d", LB_TTL_MS);
    r = redisCommand(c, "SCRIPT LOAD %s", RAW_RELEASE);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len >= 64)
        _exit(3);
    memcpy(sha, r->str, r->len);
    freeReplyObject(r);
    if (s->loop && (ep = lb_nonblock(c)) < 0) /* waits as a loop does */
        _exit(3);
    dprintf(ready_fd, "ready %lld\n", (long long)lb_now_ns());
    close(ready_fd);
    while (read(go_fd, &b, 1) > 0) /* EOF is the start signal */
        ;
    for (i = 0; i < s->m; i++) {
        redisAppendCommand(c, "SET %s %s NX PX %s", LB_LOCK_KEY, tok, ttl);
        r = raw_reply(c, ep);
        ok = r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        while (!ok) {
            redisAppendCommand(c, "BLPOP %s 1", LB_LOCK_KEY ":raw-wake");
            redisAppendCommand(c, "SET %s %s NX PX %s", LB_LOCK_KEY, tok,
                               ttl);
            freeReplyObject(raw_reply(c, ep));
            r = raw_reply(c, ep);
            ok = r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
        }
        rec[i].acq_ret = lb_now_ns();
        counter_bump(data);
        rec[i].rel_start = lb_now_ns();
        redisAppendCommand(c, "EVALSHA %s 2 %s %s %s %s", sha, LB_LOCK_KEY,
                           LB_LOCK_KEY ":raw-wake", tok, ttl);
        r = raw_reply(c, ep);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
            _exit(4);
        freeReplyObject(r);
        rec[i].rel_end = lb_now_ns();
    }
    if (ep >= 0)
        close(ep);
    redisFree(c);
    redisFree(data);
    _exit(0);
}

/* A peer worker: exec of the Python or Node script. Never returns. */
static void peer_worker(const lb_env *e, const lb_series *s,
                        const char *file)
{
    char script[PATH_MAX], m[16], ttl[16];

    snprintf(m, sizeof m, "%d", s->m);
    snprintf(ttl, sizeof ttl, "%d", LB_TTL_MS);
    if (s->lib == LB_REDIS_PY) {
        snprintf(script, sizeof script, "%s/pyworker.py", e->peers_dir);
        execlp(e->python, e->python, script, e->sock, LB_LOCK_KEY,
              LB_COUNTER_KEY, m, ttl, file, s->arg1, (char *)NULL);
        fprintf(stderr, "lockbench: cannot run %s\n", e->python);
    } else {
        snprintf(script, sizeof script, "%s/nodeworker.js", e->peers_dir);
        execlp(e->node, e->node, script, e->sock, LB_LOCK_KEY,
              LB_COUNTER_KEY, m, ttl, file, s->arg1, s->arg2,
              (char *)NULL);
        fprintf(stderr, "lockbench: cannot run %s\n", e->node);
    }
    _exit(127);
}

static int spawn(const lb_env *e, const lb_series *s, int idx, worker *w,
                 lb_cycle *shm, int go[2])
{
    int rp[2];

    if (pipe2(rp, O_CLOEXEC) != 0)
        return -1;
    snprintf(w->file, sizeof w->file, "%s/cycles-%s-k%d-%d.bin", e->out_dir,
             s->slug, s->k, idx);
    unlink(w->file);
    w->spawned = lb_now_ns();
    fflush(stdout);
    fflush(stderr);
    if ((w->pid = fork()) < 0)
        return -1;
    if (w->pid == 0) {
        /* The start signal is EOF on go[0]: no copy of go[1] may stay
         * open in a worker. */
        close(go[1]);
        close(rp[0]);
        if (s->lib == LB_REDISLOCK)
            rl_worker(e, s, idx, shm + (size_t)idx * s->m,
                      kinds(s, shm) + (size_t)idx * s->m, go[0], rp[1]);
        if (s->lib == LB_RAW)
            raw_worker(e, s, idx, shm + (size_t)idx * s->m, go[0], rp[1]);
        if (dup2(go[0], 0) < 0 || dup2(rp[1], 1) < 0)
            _exit(127);
        peer_worker(e, s, w->file);
    }
    close(rp[1]);
    w->ready_fd = rp[0];
    return 0;
}

static int cmp_merged(const void *a, const void *b)
{
    const merged *x = a, *y = b;

    return (x->c.acq_ret > y->c.acq_ret) - (x->c.acq_ret < y->c.acq_ret);
}

/* The most readers' sections held at once, from cycles sorted by the
 * moment each acquire returned. */
static int most_readers(const merged *v, size_t n)
{
    int64_t *rel = malloc((n ? n : 1) * sizeof *rel);
    size_t i, nr = 0, in = 0, gone = 0;
    int most = 0;

    if (rel == NULL)
        lb_die("out of memory");
    for (i = 0; i < n; i++)
        if (v[i].shared)
            rel[nr++] = v[i].c.rel_start;
    lb_sort_i64(rel, nr);
    /* At each reader's acquire: the readers in so far, less those whose
     * release had begun by then. */
    for (i = 0; i < n; i++) {
        if (!v[i].shared)
            continue;
        in++;
        while (gone < nr && rel[gone] <= v[i].c.acq_ret)
            gone++;
        if ((int)(in - gone) > most)
            most = (int)(in - gone);
    }
    free(rel);
    return most;
}

/*
 * Hand-offs, holder changes and exclusion, from cycles sorted by the
 * moment each acquire returned. A writer must come after every earlier
 * section, a reader after every earlier writer: each is checked against
 * the one of those whose release began last. The gap from that release
 * is a hand-off when the two exclude each other: always for a writer,
 * and for a reader only when a writer held just before it (a reader
 * joining readers waits for nobody). With no readers this is the
 * previous acquisition's release, as a plain lock's hand-off.
 */
static void handoffs(lb_series *s, const merged *v, size_t n)
{
    int64_t *x = malloc((n ? n : 1) * sizeof *x), *t[3];
    size_t i, nx = 0, switches = 0, ahead = 0;
    long any = -1, wr = -1; /* latest release begun: any section, writers */
    int j;

    s->hand = malloc((n ? n : 1) * sizeof *s->hand);
    for (j = 0; j < 3; j++) {
        t[j] = malloc((n ? n : 1) * sizeof *t[j]);
        s->nt[j] = 0;
        if (t[j] == NULL)
            lb_die("out of memory");
    }
    if (x == NULL || s->hand == NULL)
        lb_die("out of memory");
    s->nhand = 0;
    s->overlaps = 0;
    for (i = 0; i < n; i++) {
        long r = v[i].shared ? wr : any;
        int64_t h = r >= 0 ? v[i].c.acq_ret - v[r].c.rel_start : 0;

        if (h < 0)
            s->overlaps++;
        if (r >= 0 && (!v[i].shared || !v[i - 1].shared)) {
            /* By transition: writer to writer, to reader, reader to
             * writer. */
            j = v[i].shared ? 1 : v[r].shared ? 2 : 0;
            t[j][s->nt[j]++] = h;
            s->hand[s->nhand++] = h;
            if (v[i].who != v[r].who) {
                switches++;
                x[nx++] = h;
                ahead += v[i].c.acq_ret < v[r].c.rel_end;
            }
        }
        if (any < 0 || v[i].c.rel_start > v[any].c.rel_start)
            any = (long)i;
        if (!v[i].shared &&
            (wr < 0 || v[i].c.rel_start > v[wr].c.rel_start))
            wr = (long)i;
    }
    lb_sort_i64(s->hand, s->nhand);
    lb_sort_i64(x, nx);
    s->xhand = x;
    s->nxhand = nx;
    s->h50 = (double)lb_pct(s->hand, s->nhand, 50) / 1e3;
    s->h99 = (double)lb_pct(s->hand, s->nhand, 99) / 1e3;
    s->x50 = nx ? (double)lb_pct(x, nx, 50) / 1e3 : -1;
    s->x99 = nx ? (double)lb_pct(x, nx, 99) / 1e3 : -1;
    s->sw = s->nhand ? (double)switches / (double)s->nhand : 0;
    s->ahead = nx ? (double)ahead / (double)nx : 0;
    s->readers = most_readers(v, n);
    for (j = 0; j < 3; j++) {
        lb_sort_i64(t[j], s->nt[j]);
        s->t50[j] = s->nt[j] ? (double)lb_pct(t[j], s->nt[j], 50) / 1e3 : -1;
        free(t[j]);
    }
}

/* Gathers every worker's cycles, merges them and computes the results. */
static void analyse(lb_series *s, worker *w, lb_cycle *shm, int64_t go)
{
    size_t n = (size_t)s->k * s->m, i;
    merged *v = malloc(n * sizeof *v);
    int64_t last = go;
    int j;

    if (v == NULL)
        lb_die("out of memory");
    for (j = 0; j < s->k; j++) {
        lb_cycle *rec = shm + (size_t)j * s->m;

        if (s->lib != LB_REDISLOCK && s->lib != LB_RAW &&
            lb_read_cycles(w[j].file, rec, s->m) != s->m) {
            snprintf(s->err, sizeof s->err, "worker %d wrote no cycles",
                     j);
            s->ran = 0;
            free(v);
            return;
        }
        for (i = 0; i < (size_t)s->m; i++) {
            v[(size_t)j * s->m + i].c = rec[i];
            v[(size_t)j * s->m + i].who = j;
            v[(size_t)j * s->m + i].shared =
                kinds(s, shm)[(size_t)j * s->m + i];
            if (rec[i].rel_end > last)
                last = rec[i].rel_end;
        }
    }
    qsort(v, n, sizeof *v, cmp_merged);
    s->cycles_s = (double)n / ((double)(last - go) / 1e9);
    handoffs(s, v, n);
    free(v);
}

/* Starts the workers and waits for every "ready"; 0 when all are. */
static int start_all(const lb_env *e, lb_series *s, worker *w, lb_cycle *shm,
                     int go[2])
{
    int j;

    for (j = 0; j < s->k; j++)
        if (spawn(e, s, j, &w[j], shm, go) != 0)
            lb_die("cannot start a worker");
    s->clock_ok = 1;
    for (j = 0; j < s->k; j++) {
        w[j].ready = lb_read_ready(w[j].ready_fd, 30000);
        if (w[j].ready < 0) {
            snprintf(s->err, sizeof s->err,
                     "worker %d did not report ready", j);
            return -1;
        }
        /* A stamp taken between our spawn and our read of it is on our
         * clock: CLOCK_MONOTONIC. */
        if (w[j].ready < w[j].spawned || w[j].ready > lb_now_ns())
            s->clock_ok = 0;
    }
    return 0;
}

/* The counter must read the number of writers' sections: every cycle
 * but the readers' (peers write no kinds, and theirs stay 0). */
static void check_counter(const lb_env *e, lb_series *s, lb_cycle *shm)
{
    redisReply *r = lb_cmd(e->ctl, "GET " LB_COUNTER_KEY);
    size_t n = (size_t)s->k * s->m, i;

    s->counter = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                               : 0;
    freeReplyObject(r);
    s->want = (long long)n;
    for (i = 0; i < n; i++)
        s->want -= kinds(s, shm)[i];
    s->counter_ok = s->counter == s->want;
}

void lb_run_series(const lb_env *e, lb_series *s)
{
    size_t n = (size_t)s->k * s->m;
    lb_cycle *shm;
    worker w[MAX_K];
    pid_t pids[MAX_K];
    int status[MAX_K], go[2], j, started;
    long long c0, c1;
    double u0, u1;
    int64_t t_go, t_start = lb_now_ns();

    if (s->k > MAX_K)
        lb_die("K of %d is over %d", s->k, MAX_K);
    freeReplyObject(lb_cmd(e->ctl, "FLUSHALL"));
    /* The stamps, then a byte per cycle for its kind (zero-filled). */
    shm = mmap(NULL, n * (sizeof *shm + 1), PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED || pipe2(go, O_CLOEXEC) != 0)
        lb_die("mmap or pipe failed");
    memset(w, 0, sizeof w);
    started = start_all(e, s, w, shm, go) == 0;
    c0 = lb_server_calls(e->ctl);
    u0 = lb_server_cpu_us(e->ctl);
    t_go = lb_now_ns();
    close(go[1]); /* all workers start now */
    close(go[0]);
    for (j = 0; j < s->k; j++) {
        pids[j] = w[j].pid;
        close(w[j].ready_fd);
    }
    if (lb_wait_all(pids, s->k, e->timeout_s, status) != 0 && started)
        snprintf(s->err, sizeof s->err, "timed out after %d s",
                 e->timeout_s);
    u1 = lb_server_cpu_us(e->ctl);
    c1 = lb_server_calls(e->ctl);
    for (j = 0; j < s->k && s->err[0] == '\0'; j++)
        if (!WIFEXITED(status[j]) || WEXITSTATUS(status[j]) != 0)
            snprintf(s->err, sizeof s->err, "worker %d failed (status %d)",
                     j, status[j]);
    check_counter(e, s, shm);
    s->ran = s->err[0] == '\0';
    /* The counter's GET and SET (a reader's GET) are the work, not the
     * lock's cost. */
    s->cmds_acq = (double)(c1 - c0 - (long long)n - s->want) / (double)n;
    s->cpu_acq = (u1 - u0) / (double)n;
    if (s->ran)
        analyse(s, w, shm, t_go);
    for (j = 0; j < s->k; j++)
        unlink(w[j].file);
    munmap(shm, n * (sizeof *shm + 1));
    s->seconds = (double)(lb_now_ns() - t_start) / 1e9;
}
