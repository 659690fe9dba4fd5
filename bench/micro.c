/*
 * lockbench, one client at a time: the PING round trip (the limit), the
 * uncontended acquire+release against a raw hiredis loop of the same two
 * commands, and the traffic of a waiter blocked behind a long lease.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <redislock.h>
#include <redislock/libevent.h>

#include "bench.h"
#include "keys.h"   /* the keys the scripts declare */
#include "script.h" /* the scripts and SHAs the library calls */

#define SOLO_KEY "bench:solo"

/* A growable array of latencies. */
typedef struct lat {
    int64_t *v;
    size_t n, cap;
} lat;

static void lat_push(lat *l, int64_t x)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 65536;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (l->v == NULL)
            lb_die("out of memory");
    }
    l->v[l->n++] = x;
}

const char *const lb_wire_name[LB_WIRES] = {"unix", "TCP"};

void lb_run_ping(const lb_env *e, lb_wire *m, int t, int ms)
{
    redisContext *c = lb_connect_over(e, t);
    const char *argv[1] = {"PING"};
    size_t lens[1] = {4};
    lat l = {0};
    int64_t start, end, t0, t1;

    if (c == NULL)
        lb_die("no connection for PING");
    start = lb_now_ns();
    end = start + (int64_t)ms * 1000000;
    for (t0 = start; t0 < end; t0 = t1) {
        redisReply *r = redisCommandArgv(c, 1, argv, lens);

        if (r == NULL || r->type != REDIS_REPLY_STATUS)
            lb_die("PING failed");
        freeReplyObject(r);
        t1 = lb_now_ns();
        lat_push(&l, t1 - t0);
    }
    lb_sort_i64(l.v, l.n);
    m->ping_p50 = (double)lb_pct(l.v, l.n, 50) / 1e3;
    m->ping_p99 = (double)lb_pct(l.v, l.n, 99) / 1e3;
    m->ping_ops = (double)l.n / ((double)(t0 - start) / 1e9);
    free(l.v);
    redisFree(c);
}

/* A fresh token per cycle, shaped as the library's: "rl1-" and 32 hex
 * digits. */
static void raw_token(char out[37])
{
    static uint64_t s = 0x9e3779b97f4a7c15u;
    static const char hex[] = "0123456789abcdef";
    int i;

    memcpy(out, "rl1-", 4);
    for (i = 4; i < 36; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out[i] = hex[s & 15];
    }
    out[36] = '\0';
}

/* Appends script s to c's output, with the keys it declares for SOLO_KEY
 * (req: the request whose void key it takes) and nargs arguments, as the
 * library would, but by hand with hiredis. */
static void raw_send(redisContext *c, const rl__script *s, const char *req,
                     int nargs, const char **args)
{
    /* The helper base and the fencing counter's name, made once as the
     * library makes them per handle. */
    static rl__lockname k = {SOLO_KEY, sizeof SOLO_KEY - 1, NULL, 0, NULL, 0};
    const char *argv[3 + RL_KEYS_MAX + 8];
    size_t argl[3 + RL_KEYS_MAX + 8];
    char nk[8];
    rl__keyset ks;
    int i, n = 0;

    if (k.base == NULL &&
        ((k.base = rl__helper_name(k.key, k.keylen, "", &k.baselen)) == NULL ||
         (k.fence = rl__fence_name(k.key, k.keylen, k.base, k.baselen, 0,
                                   &k.fencelen)) == NULL))
        lb_die("raw script: out of memory");
    if (nargs > 8 || rl__keyset_make(&ks, s->keys, s->nkeys, &k, req) != 0)
        lb_die("raw script: out of memory");
    snprintf(nk, sizeof nk, "%d", ks.n);
    argv[n] = "EVALSHA", argl[n++] = 7;
    argv[n] = s->sha1, argl[n++] = strlen(s->sha1);
    argv[n] = nk, argl[n++] = strlen(nk);
    for (i = 0; i < ks.n; i++)
        argv[n] = ks.k[i], argl[n++] = ks.len[i];
    for (i = 0; i < nargs; i++)
        argv[n] = args[i], argl[n++] = strlen(args[i]);
    if (redisAppendCommandArgv(c, n, argv, argl) != REDIS_OK)
        lb_die("raw script: out of memory");
    rl__keyset_free(&ks);
}

/* The epoll instance of variant 5's connection (lb_nonblock): -1 for
 * none. */
static int raw_ep = -1;

/* expect's type for acquire.lua's answer to a plain lock taken: its
 * fencing token, a positive integer. */
#define ACQUIRED (-1)

/* Reads one reply; dies unless it is what the variant expects: a
 * positive integer for an acquire (ACQUIRED), 1 for a release (an
 * integer), a status for SET. */
static void expect(redisContext *c, int type, const char *what)
{
    redisReply *r = NULL;

    if (lb_get_reply(c, (c->flags & REDIS_BLOCK) ? -1 : raw_ep, &r) !=
            REDIS_OK ||
        r == NULL ||
        r->type != (type == ACQUIRED ? REDIS_REPLY_INTEGER : type) ||
        (type == ACQUIRED && r->integer <= 0) ||
        (type == REDIS_REPLY_INTEGER && r->integer != 1))
        lb_die("%s failed%s%s", what,
               r && r->type == REDIS_REPLY_ERROR ? ": " : "",
               r && r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
}

/* n cycles of EVALSHA acquire (the library's acquire script, whose SET NX
 * PX also issues the fencing token), then EVALSHA release: the same two
 * commands the library sends, written by hand. n = 1 waits for each
 * reply before the next command, as the library does; n > 1 sends the n
 * cycles in one pipeline and reads them after (each acquire still comes
 * after the previous release). A plain lock's token is its request's id
 * too (see acquire.lua). */
static void raw_cycle(redisContext *c, int n)
{
    char tok[37], ttl[16];
    const char *acq[6] = {tok, ttl, "plain", "", "86400000", tok};
    const char *rel[2] = {tok, "0"};
    int i;

    snprintf(ttl, sizeof ttl, "%d", LB_TTL_MS);
    for (i = 0; i < n; i++) {
        raw_token(tok);
        raw_send(c, &rl__script_acquire, tok, 6, acq);
        if (n == 1)
            expect(c, ACQUIRED, "raw EVALSHA acquire");
        raw_send(c, &rl__script_release, NULL, 2, rel);
    }
    for (i = 0; i < n; i++) {
        if (n > 1)
            expect(c, ACQUIRED, "raw EVALSHA acquire");
        expect(c, REDIS_REPLY_INTEGER, "raw EVALSHA release");
    }
}

/* The least a lock needs on the wire: SET key token NX PX ttl, then a
 * compare-and-delete script by SHA (loaded once, LB_CAD). No fencing
 * token, no waiters, no other format: the limit the library is measured
 * against. n as raw_cycle's. */
static char min_cad_sha[41];

static void min_cycle(redisContext *c, int n)
{
    char tok[37], ttl[16];
    const char *set[6] = {"SET", SOLO_KEY, tok, "NX", "PX", ttl};
    const char *del[5] = {"EVALSHA", min_cad_sha, "1", SOLO_KEY, tok};
    int i;

    snprintf(ttl, sizeof ttl, "%d", LB_TTL_MS);
    for (i = 0; i < n; i++) {
        raw_token(tok);
        if (redisAppendCommandArgv(c, 6, set, NULL) != REDIS_OK)
            lb_die("out of memory");
        if (n == 1)
            expect(c, REDIS_REPLY_STATUS, "minimal SET NX PX");
        if (redisAppendCommandArgv(c, 5, del, NULL) != REDIS_OK)
            lb_die("out of memory");
    }
    for (i = 0; i < n; i++) {
        if (n > 1)
            expect(c, REDIS_REPLY_STATUS, "minimal SET NX PX");
        expect(c, REDIS_REPLY_INTEGER, "minimal compare-and-delete");
    }
}

static void lib_cycle(redislock_lock *l, int fair)
{
    redislock_acquire_options o = {0};
    redislock_err err;

    o.ttl_ms = LB_TTL_MS;
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    o.fair = fair;
    if ((err = redislock_acquire(l, &o)) != REDISLOCK_OK)
        lb_die("uncontended acquire: %s (%s)", redislock_strerror(err),
               redislock_errdetail());
    if ((err = redislock_release(l)) != REDISLOCK_OK)
        lb_die("uncontended release: %s (%s)", redislock_strerror(err),
               redislock_errdetail());
}

/* The event loop of variant 4: libevent's, through the adapter. */
typedef struct loop_run {
    struct event_base *base;
    redislock_libevent *a;
    int step; /* callbacks of the cycle so far */
} loop_run;

static void loop_released(redislock_lock *l, redislock_err err, void *arg)
{
    loop_run *lr = arg;

    (void)l;
    if (err != REDISLOCK_OK)
        lb_die("loop release: %s (%s)", redislock_strerror(err),
               redislock_errdetail());
    lr->step = 2;
}

static void loop_acquired(redislock_lock *l, redislock_err err, void *arg)
{
    loop_run *lr = arg;

    if (err != REDISLOCK_OK ||
        (err = redislock_loop_release(redislock_libevent_loop(lr->a), l, 0,
                                      loop_released, lr)) != REDISLOCK_OK)
        lb_die("loop acquire: %s (%s)", redislock_strerror(err),
               redislock_errdetail());
    lr->step = 1;
}

/* One acquire+release cycle on the event loop: the release is sent from
 * the acquire's callback, as a service would. */
static void loop_cycle(redislock_lock *l, loop_run *lr)
{
    redislock_acquire_options o = {0};
    redislock_err err;

    o.ttl_ms = LB_TTL_MS;
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    lr->step = 0;
    if ((err = redislock_loop_acquire(redislock_libevent_loop(lr->a), l, &o,
                                      loop_acquired, lr)) != REDISLOCK_OK)
        lb_die("loop acquire: %s (%s)", redislock_strerror(err),
               redislock_errdetail());
    while (lr->step != 2)
        event_base_loop(lr->base, EVLOOP_ONCE);
}

/* Runs variant v for ms; returns cycles per second. */
static double run_variant(int v, int ms, redisContext *raw, redisContext *rawl,
                          redislock_lock *l, loop_run *lr, lat *out,
                          long long *cycles)
{
    int64_t start = lb_now_ns(), end = start + (int64_t)ms * 1000000;
    int64_t t0, t1;
    long long n = 0;

    for (t0 = start; t0 < end; t0 = t1, n++) {
        if (v == 0)
            raw_cycle(raw, 1);
        else if (v == 3)
            min_cycle(raw, 1);
        else if (v == 4)
            loop_cycle(l, lr);
        else if (v == 5)
            raw_cycle(rawl, 1);
        else
            lib_cycle(l, v == 2);
        t1 = lb_now_ns();
        lat_push(out, t1 - t0);
    }
    *cycles += n;
    return (double)n / ((double)(t0 - start) / 1e9);
}

/* The server CPU one cycle of variant v (0 or 3: sent by hand) costs
 * when it never waits for a request: cycles pipelined 64 deep for ms, in
 * us. What is left is the commands' own work and the reading and
 * writing, without the wake-up a lone request costs the server. */
static double piped_cpu(const lb_env *e, redisContext *raw, int v, int ms)
{
    int64_t end = lb_now_ns() + (int64_t)ms * 1000000;
    double u0 = lb_server_cpu_us(e->ctl);
    long long n = 0;

    while (lb_now_ns() < end) {
        if (v == 0)
            raw_cycle(raw, 64);
        else
            min_cycle(raw, 64);
        n += 64;
    }
    return (lb_server_cpu_us(e->ctl) - u0) / (double)n;
}

static void load_script(redisContext *c, const rl__script *s)
{
    redisReply *r = lb_cmd(c, "SCRIPT LOAD %s", s->source);

    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, s->sha1) != 0)
        lb_die("SCRIPT LOAD gave %s, the library says %s",
               r->type == REDIS_REPLY_STRING ? r->str : "no SHA", s->sha1);
    freeReplyObject(r);
}

/*
 * Rounds of the four variants in rotating order, so that drift on a
 * shared machine hits each alike; the ratio is taken within each round
 * and the median ratio reported. Server CPU and calls are summed over
 * the rounds, per variant, from INFO before and after each run (nothing
 * else talks to the server meanwhile).
 */
void lb_run_uncontended(const lb_env *e, lb_wire *m, int t, int rounds, int ms)
{
    redisContext *raw = lb_connect_over(e, t);
    redislock_client *cl = NULL;
    redislock_lock *l = NULL;
    loop_run lr = {0};
    redisContext *rawl = lb_connect_over(e, t);
    lat lats[6] = {{0}};
    double rate[6][32], ratio[4][32], ratio_min[4][32], loop_ratio[32];
    double floor_ratio[32], cpu[6] = {0}, piped[2] = {0}, u0;
    long long calls[6] = {0}, cycles[6] = {0}, c0;
    redisReply *sha;
    int r, j, v;

    if (rounds > 32)
        rounds = 32;
    if (raw == NULL || rawl == NULL ||
        redislock_client_new(&cl, t == LB_TCP ? e->tcp_url : e->url, NULL) !=
            0 ||
        redislock_lock_new(cl, SOLO_KEY, strlen(SOLO_KEY), &l) != 0)
        lb_die("uncontended: cannot connect: %s", redislock_errdetail());
    if ((lr.base = event_base_new()) == NULL ||
        redislock_libevent_new(&lr.a, cl, lr.base) != REDISLOCK_OK)
        lb_die("uncontended: no event loop: %s", redislock_errdetail());
    if ((raw_ep = lb_nonblock(rawl)) < 0) /* variant 5 */
        lb_die("uncontended: no epoll for the raw event loop");
    load_script(raw, &rl__script_acquire);
    load_script(raw, &rl__script_release);
    sha = lb_cmd(raw, "SCRIPT LOAD %s", LB_CAD);
    if (sha->type != REDIS_REPLY_STRING || sha->len != 40)
        lb_die("SCRIPT LOAD of the minimal compare-and-delete failed");
    memcpy(min_cad_sha, sha->str, 41);
    freeReplyObject(sha);
    for (v = 0; v < 6; v++) /* warm up: connections, script cache */
        run_variant(v, 20, raw, rawl, l, &lr, &lats[v], &cycles[v]);
    for (v = 0; v < 6; v++)
        lats[v].n = 0, cycles[v] = 0;
    for (r = 0; r < rounds; r++) {
        for (j = 0; j < 6; j++) {
            v = (r + j) % 6;
            c0 = lb_server_calls(e->ctl);
            u0 = lb_server_cpu_us(e->ctl);
            rate[v][r] =
                run_variant(v, ms, raw, rawl, l, &lr, &lats[v], &cycles[v]);
            cpu[v] += lb_server_cpu_us(e->ctl) - u0;
            calls[v] += lb_server_calls(e->ctl) - c0;
        }
        for (v = 0; v < 4; v++) {
            ratio[v][r] = rate[v][r] / rate[0][r];
            ratio_min[v][r] = rate[v][r] / rate[3][r];
        }
        loop_ratio[r] = rate[4][r] / rate[1][r];
        floor_ratio[r] = rate[5][r] / rate[0][r];
    }
    m->loop_ratio = lb_median(loop_ratio, (size_t)rounds);
    m->loop_floor = lb_median(floor_ratio, (size_t)rounds);
    for (r = 0; r < 6; r++) /* alternating: drift hits both alike */
        piped[r % 2] += piped_cpu(e, raw, r % 2 ? 3 : 0, ms / 3) / 3;
    m->piped_cpu[0] = piped[0];
    m->piped_cpu[3] = piped[1];
    for (v = 0; v < 4; v++) {
        lb_sort_i64(lats[v].v, lats[v].n);
        m->p50[v] = (double)lb_pct(lats[v].v, lats[v].n, 50) / 1e3;
        m->p99[v] = (double)lb_pct(lats[v].v, lats[v].n, 99) / 1e3;
        m->rate[v] = lb_median(rate[v], (size_t)rounds);
        m->ratio[v] = lb_median(ratio[v], (size_t)rounds);
        m->ratio_min[v] = lb_median(ratio_min[v], (size_t)rounds);
        m->calls_cycle[v] = cycles[v] ? (double)calls[v] / cycles[v] : 0;
        m->cpu_cycle[v] = cycles[v] ? cpu[v] / (double)cycles[v] : 0;
        free(lats[v].v);
    }
    free(lats[4].v);
    free(lats[5].v);
    close(raw_ep);
    raw_ep = -1;
    redisFree(rawl);
    m->ran = 1;
    redislock_libevent_free(lr.a);
    event_base_free(lr.base);
    redislock_lock_free(l);
    redislock_client_free(cl);
    redisFree(raw);
}

#define CTL_NAME "lockbench-ctl"

/* The waiter: blocks on the held lock, stamps the moment it gets it. */
static void idle_child(const lb_env *e, int fair, int ready_fd,
                       volatile int64_t *got)
{
    redislock_client *cl;
    redislock_lock *l;
    redislock_acquire_options o = {0};
    int rc = 0;

    if (lb_open_lock(e, &cl, &l) != 0)
        _exit(3);
    o.ttl_ms = LB_TTL_MS;
    o.wait_ms = REDISLOCK_WAIT_FOREVER;
    o.fair = fair;
    dprintf(ready_fd, "ready %lld\n", (long long)lb_now_ns());
    if (redislock_acquire(l, &o) != REDISLOCK_OK)
        _exit(4);
    *got = lb_now_ns();
    if (redislock_release(l) != REDISLOCK_OK)
        rc = 5;
    redislock_lock_free(l);
    redislock_client_free(cl);
    _exit(rc);
}

/* Top-level commands in the slow log (everything is logged while the
 * threshold is 0) that came from a client other than ours; commands run
 * by a Lua script show the address "?:0" and are left out. */
static long long count_sent(redisContext *c)
{
    redisReply *r = lb_cmd(c, "SLOWLOG GET 1000000");
    long long n = 0;
    size_t i;

    for (i = 0; i < r->elements; i++) {
        redisReply *ent = r->element[i];

        if (ent->type != REDIS_REPLY_ARRAY || ent->elements < 6)
            continue;
        if (strcmp(ent->element[4]->str, "?:0") == 0 ||
            strcmp(ent->element[5]->str, CTL_NAME) == 0)
            continue;
        n++;
    }
    freeReplyObject(r);
    return n;
}

/* The one-second window while the waiter blocks. */
static void idle_window(const lb_env *e, lb_idle *r)
{
    long long c0, c1;
    int64_t t0, t1;

    freeReplyObject(lb_cmd(e->ctl, "CONFIG SET slowlog-max-len 100000"));
    freeReplyObject(lb_cmd(e->ctl, "CONFIG SET slowlog-log-slower-than 0"));
    freeReplyObject(lb_cmd(e->ctl, "SLOWLOG RESET"));
    c0 = lb_server_calls(e->ctl);
    t0 = lb_now_ns();
    lb_sleep_ms(1000);
    c1 = lb_server_calls(e->ctl);
    t1 = lb_now_ns();
    r->sent = (double)count_sent(e->ctl) / ((double)(t1 - t0) / 1e9);
    r->calls = (double)(c1 - c0) / ((double)(t1 - t0) / 1e9);
    freeReplyObject(lb_cmd(e->ctl, "CONFIG SET slowlog-log-slower-than 10000"));
    freeReplyObject(lb_cmd(e->ctl, "SLOWLOG RESET"));
}

const char *lb_idle_name(const lb_idle *r)
{
    return r->foreign ? "behind SET NX PX" : r->fair ? "fair" : "default";
}

/* The holder: the library's lock, or (foreign) a SET NX PX of the
 * control connection's, whose release is a DEL that wakes nobody. */
static void idle_hold(const lb_env *e, const lb_idle *r, redislock_lock *l)
{
    redislock_acquire_options o = {0};
    redisReply *rep;

    o.ttl_ms = 60000;
    if (!r->foreign) {
        if (redislock_acquire(l, &o) != REDISLOCK_OK)
            lb_die("idle: holder cannot take the lock: %s",
                   redislock_errdetail());
        return;
    }
    rep = lb_cmd(e->ctl, "SET %s foreign-holder NX PX 60000", LB_LOCK_KEY);
    if (rep->type != REDIS_REPLY_STATUS)
        lb_die("idle: SET NX PX did not take the lock");
    freeReplyObject(rep);
}

static void idle_release(const lb_env *e, const lb_idle *r, redislock_lock *l)
{
    if (r->foreign)
        freeReplyObject(lb_cmd(e->ctl, "DEL %s", LB_LOCK_KEY));
    else
        redislock_release(l);
}

/*
 * A holder takes the lock with a long lease (the library's, or a SET NX
 * PX); one waiter (fair or not) blocks behind it. After the waiter has
 * settled, count what reaches the server in one second; then release and
 * time the waiter's wake-up.
 */
void lb_run_idle(const lb_env *e, lb_idle *r)
{
    redislock_client *cl;
    redislock_lock *l;
    volatile int64_t *got;
    int fds[2], st;
    pid_t pid;
    int64_t rel;
    long long conns0;

    freeReplyObject(lb_cmd(e->ctl, "FLUSHALL"));
    freeReplyObject(lb_cmd(e->ctl, "CLIENT SETNAME " CTL_NAME));
    got = mmap(NULL, sizeof *got, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (got == MAP_FAILED || pipe2(fds, O_CLOEXEC) != 0)
        lb_die("idle: mmap or pipe failed");
    *got = 0;
    if (lb_open_lock(e, &cl, &l) != 0)
        lb_die("idle: no client: %s", redislock_errdetail());
    idle_hold(e, r, l);
    fflush(stdout);
    conns0 = lb_info_field(e->ctl, "clients", "connected_clients");
    if ((pid = fork()) == 0) {
        close(fds[0]);
        idle_child(e, r->fair, fds[1], got);
    }
    close(fds[1]);
    if (pid < 0 || lb_read_ready(fds[0], 10000) < 0)
        snprintf(r->err, sizeof r->err, "the waiter did not start");
    close(fds[0]);
    lb_sleep_ms(300); /* its first attempts and set-up are done by now */
    r->conns =
        (int)(lb_info_field(e->ctl, "clients", "connected_clients") - conns0);
    idle_window(e, r);
    if (*got != 0 && r->err[0] == '\0')
        snprintf(r->err, sizeof r->err,
                 "the waiter got the lock while it was held");
    rel = lb_now_ns();
    idle_release(e, r, l);
    if (pid > 0 && lb_wait_all(&pid, 1, 10, &st) != 0 && r->err[0] == '\0')
        snprintf(r->err, sizeof r->err,
                 "the waiter did not get the lock within 10 s of release");
    else if (pid > 0 && r->err[0] == '\0' &&
             (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
        snprintf(r->err, sizeof r->err, "the waiter failed (status %d)", st);
    r->ok = r->err[0] == '\0';
    r->wake_us = *got ? (double)(*got - rel) / 1e3 : -1;
    redislock_lock_free(l);
    redislock_client_free(cl);
    munmap((void *)got, sizeof *got);
}
