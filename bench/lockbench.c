/*
 * lockbench: how fast libredislock hands a lock over, against the limit
 * (a PING round trip), a raw hiredis loop of the same commands, redis-py's
 * Lock and node-redlock, all in one run on one private redis-server.
 * bench/run.sh builds it, starts the server pinned to one CPU and runs
 * this pinned to another; see docs/BENCHMARKS.md.
 *
 * lockbench --sock PATH [--out DIR] [--peers DIR] [--python PATH]
 *           [--node PATH] [--redis-pid PID] [--ks 2,4,8] [--peer-ks 2,4,8]
 *           [--scale F] [--timeout S] [--no-peers] [--core]
 *
 * --core: only the uncontended figures over the unix socket and the K=8
 * hand-off series (default mode and fair), ending with one line of their
 * figures (bench/run.sh runs it against each cached server).
 *
 * The last line of output is machine-readable (our fair mode at K=8, and
 * at K=64 its cycles/s):
 * rtt_p50_us=... cycle_ratio=... cycle_ratio_scripts=...
 * cycle_ratio_default=... cycle_ratio_tcp=... cycle_ratio_tcp_default=...
 * srv_cpu_cycle_us=... srv_cpu_ratio=... srv_cpu_ratio_default=...
 * srv_cpu_ratio_tcp=... handoff_p50_us=... handoff_p99_us=...
 * k8_cycles_per_s=... k64_cycles_per_s=... k8_switch=... sem_handoff_p50_us=...
 * lock_bytes=...
 * setnx_bytes=... shared_handoff_p50_us=... set_handoff_p50_us=...
 * sem_fair_handoff_p50_us=... shared_fair_handoff_p50_us=...
 * raw_handoff_p50_us=... ... foreign_wake_p50_us=... foreign_wake_p99_us=...
 * pyforeign_wake_p50_us=... pyforeign_wake_p99_us=...
 * foreign_floor_p50_us=... foreign_floor_p99_us=... (then
 * bench/redlock.sh's, from BENCH_REDLOCK, and bench/runcost.c's)
 * Exit status 1 when a counter check, the exclusion check or a run failed.
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <redislock.h>

#include "bench.h"

#define MAX_SERIES 64

typedef struct opts {
    int ks[8], nks, peer_ks[8], npeer_ks;
    double scale;
    int peers;
    int core; /* --core */
    long redis_pid;
} opts;

static int parse_ks(const char *s, int *ks)
{
    int n = 0;
    char *end;

    while (*s != '\0' && n < 8) {
        long k = strtol(s, &end, 10);

        if (end == s || k < 1 || k > 64)
            lb_die("bad K list: %s", s);
        ks[n++] = (int)k;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: lockbench --sock PATH [--out DIR] [--peers DIR] "
            "[--python PATH] [--node PATH] [--redis-pid PID] [--ks 2,4,8,64] "
            "[--peer-ks 2,4,8] [--scale F] [--timeout S] [--no-peers] "
            "[--core]\n");
    exit(2);
}

static void parse(int argc, char **argv, lb_env *e, opts *o)
{
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--no-peers") == 0 || strcmp(a, "--core") == 0) {
            if (a[2] == 'n')
                o->peers = 0;
            else
                o->core = 1;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--sock") == 0)
            e->sock = v;
        else if (strcmp(a, "--out") == 0)
            e->out_dir = v;
        else if (strcmp(a, "--peers") == 0)
            e->peers_dir = v;
        else if (strcmp(a, "--python") == 0)
            e->python = v;
        else if (strcmp(a, "--node") == 0)
            e->node = v;
        else if (strcmp(a, "--redis-pid") == 0)
            o->redis_pid = strtol(v, NULL, 10);
        else if (strcmp(a, "--ks") == 0)
            o->nks = parse_ks(v, o->ks);
        else if (strcmp(a, "--peer-ks") == 0)
            o->npeer_ks = parse_ks(v, o->peer_ks);
        else if (strcmp(a, "--scale") == 0)
            o->scale = strtod(v, NULL);
        else if (strcmp(a, "--timeout") == 0)
            e->timeout_s = atoi(v);
        else
            usage();
    }
    /* Started by scripts/with-redis.sh, the server is in the environment. */
    if (e->sock == NULL)
        e->sock = getenv("REDIS_SOCK");
    if (o->redis_pid == 0 && getenv("REDIS_PID") != NULL)
        o->redis_pid = strtol(getenv("REDIS_PID"), NULL, 10);
    if (e->sock == NULL || o->scale <= 0)
        usage();
}

static int scaled(int m, double scale)
{
    int v = (int)(m * scale);

    return v < 10 ? 10 : v;
}

static void add(lb_series *s, size_t *n, lb_series proto, int k, int m)
{
    if (*n == MAX_SERIES)
        lb_die("too many runs");
    proto.k = k;
    proto.m = m;
    s[(*n)++] = proto;
}

/* Rows by K, then library and mode. Cycles per process: enough for a
 * p99 of the hand-off at K=2 yet a run of a few seconds at most; above
 * K=8, the library's cycles in all are those of K=8. */
static size_t plan(const opts *o, lb_series *s)
{
    static const lb_series rl = {.name = "redislock", .slug = "rl",
                                 .lib = LB_REDISLOCK};
    static const lb_series rlf = {.name = "redislock fair",
                                  .slug = "rl-fair", .lib = LB_REDISLOCK,
                                  .fair = 1};
    static const lb_series rls = {.name = "redislock semaphore, limit 1",
                                  .slug = "rl-sem1", .lib = LB_REDISLOCK,
                                  .limit = 1};
    static const lb_series rlset = {.name = "redislock set of 2 keys",
                                    .slug = "rl-set2", .lib = LB_REDISLOCK,
                                    .set = 2};
    static const lb_series rlsf = {.name = "redislock semaphore fair, "
                                           "limit 1",
                                   .slug = "rl-sem1-fair", .lib = LB_REDISLOCK,
                                   .limit = 1, .fair = 1};
    static const lb_series rlsh = {.name = "redislock shared, half readers",
                                   .slug = "rl-shared", .lib = LB_REDISLOCK,
                                   .shared = 1};
    static const lb_series rlshf = {.name = "redislock shared fair, half "
                                            "readers",
                                    .slug = "rl-shared-fair",
                                    .lib = LB_REDISLOCK, .shared = 1,
                                    .fair = 1};
    static const lb_series rlloop = {.name = "redislock on an event loop "
                                             "(libevent)",
                                     .slug = "rl-loop", .lib = LB_REDISLOCK,
                                     .loop = 1};
    static const lb_series raw = {
        .name = "minimal raw hand-off: SET NX PX; compare-and-delete and "
                "LPUSH; BLPOP with the SET behind it",
        .slug = "raw", .lib = LB_RAW};
    static const lb_series py = {
        .name = "redis-py Lock, sleep 0.1 s (default)", .slug = "py-0.1",
        .lib = LB_REDIS_PY, .arg1 = "0.1"};
    static const lb_series py1 = {.name = "redis-py Lock, sleep 0.001 s",
                                  .slug = "py-0.001", .lib = LB_REDIS_PY,
                                  .arg1 = "0.001"};
    static const lb_series nd = {
        .name = "node-redlock, retryDelay 200 jitter 100 (default)",
        .slug = "redlock-200", .lib = LB_REDLOCK, .arg1 = "200",
        .arg2 = "100"};
    static const lb_series nd1 = {
        .name = "node-redlock, retryDelay 1 jitter 0", .slug = "redlock-1",
        .lib = LB_REDLOCK, .arg1 = "1", .arg2 = "0"};
    size_t n = 0;
    int i, j, k;

    for (i = 0; i <= 64; i++) {
        int mine = 0, peer = 0;

        for (j = 0; j < o->nks; j++)
            mine |= o->ks[j] == i;
        for (j = 0; j < o->npeer_ks; j++)
            peer |= o->peer_ks[j] == i && o->peers;
        k = i;
        if (mine) {
            int m = scaled(k > 8 ? 8000 / k : 1000, o->scale);

            add(s, &n, rl, k, m);
            add(s, &n, rlf, k, m);
            /* A semaphore's wake-up path, and a shared lock's hand-overs
             * between readers and writers, at the targets' K, each also
             * fair (a release's hand-off message). */
            if (k == 8) {
                add(s, &n, raw, k, m);
                add(s, &n, rlloop, k, m);
                add(s, &n, rls, k, m);
                add(s, &n, rlsf, k, m);
                add(s, &n, rlsh, k, m);
                add(s, &n, rlshf, k, m);
                add(s, &n, rlset, k, m);
            }
        }
        if (peer) {
            add(s, &n, py, k, scaled(300, o->scale));
            add(s, &n, py1, k, scaled(300, o->scale));
            add(s, &n, nd, k, scaled(300, o->scale));
            add(s, &n, nd1, k, scaled(300, o->scale));
        }
    }
    return n;
}

/*
 * The private server listens on its unix socket only; for the TCP figures
 * it also listens on a free loopback port, chosen by binding port 0 and
 * handed to the server with CONFIG SET (Redis 7 binds at once). On
 * failure the TCP figures are left out, and their targets say MISS.
 */
static void open_tcp(lb_env *e)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    redisReply *r;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    freeReplyObject(lb_cmd(e->ctl, "CONFIG SET bind 127.0.0.1"));
    r = port ? redisCommand(e->ctl, "CONFIG SET port %d", port) : NULL;
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        printf("lockbench: WARNING: no TCP port for the server (%s): TCP "
               "figures left out\n",
               r ? r->str : "no free port");
        port = 0;
    }
    freeReplyObject(r);
    e->tcp_port = port;
    snprintf(e->tcp_url, sizeof e->tcp_url, "redis://127.0.0.1:%d", port);
}

static void cpu_model(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];

    snprintf(buf, len, "unknown CPU");
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        char *c = strchr(line, ':');

        if (strncmp(line, "model name", 10) == 0 && c != NULL) {
            snprintf(buf, len, "%s", c + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    if (f != NULL)
        fclose(f);
}

static void redis_version(redisContext *c, char *buf, size_t len)
{
    redisReply *r = lb_cmd(c, "INFO server");
    const char *v = strstr(r->str, "redis_version:");

    snprintf(buf, len, "%.*s", v ? (int)strcspn(v + 14, "\r\n") : 1,
             v ? v + 14 : "?");
    freeReplyObject(r);
}

/* Says what runs where, and builds the one-line machine description. */
static void header(const lb_env *e, const opts *o, char *machine,
                   size_t len)
{
    char cpu[200], rv[32], mine[64], srv[64], date[64], load[64] = "?";
    struct utsname u;
    time_t t = time(NULL);
    const char *git = getenv("BENCH_GIT");
    FILE *f = fopen("/proc/loadavg", "r");

    if (f != NULL) {
        double a, b, c;

        /* The three averages; the run-queue and last-pid fields go. */
        if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
            snprintf(load, sizeof load, "%.2f %.2f %.2f", a, b, c);
        fclose(f);
    }
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    uname(&u);
    cpu_model(cpu, sizeof cpu);
    redis_version(e->ctl, rv, sizeof rv);
    lb_affinity(0, mine, sizeof mine);
    if (o->redis_pid > 0)
        lb_affinity((pid_t)o->redis_pid, srv, sizeof srv);
    else
        snprintf(srv, sizeof srv, "unknown CPUs");
    snprintf(machine, len,
             "%s; %ld CPUs (%s), Linux %s; redis-server %s over a unix "
             "socket (and loopback TCP for the uncontended figures); "
             "libredislock %s (git %s); load average at start %s",
             date, sysconf(_SC_NPROCESSORS_ONLN), cpu, u.release, rv,
             redislock_version(), git ? git : "unknown", load);
    printf("lockbench: %s\n", machine);
    if (strtod(load, NULL) > 1.0)
        printf("lockbench: WARNING: load average %.2f: other work on this "
               "machine will show in the figures\n",
               strtod(load, NULL));
    printf("lockbench: redis-server (pid %ld) runs on %s; the benchmark "
           "clients (this process and every worker) run on %s%s\n",
           o->redis_pid, srv, mine,
           strchr(mine, ',') || strchr(srv, ',') ? " (NOT pinned)"
                                                 : " (pinned with taskset)");
}

/* The event loop's hand-off against the blocking calls' at K=8: two
 * series minutes apart differ by more than the 10 % the target allows
 * (the box's noise moves one by 15-20 us), so the two are also run back
 * to back in LB_PAIRS pairs, each at half the rounds, and the target
 * judges the median of the pairs' ratios. */
#define LB_PAIRS 5

/* One pair of series like def, blocking then waiting on a loop (m
 * rounds each); their hand-off p50 ratio, or 0 if either failed. */
static double one_pair(const lb_env *e, const lb_series *def, int m, int tcp)
{
    lb_series d = {0}, l = {0};
    double q = 0;

    d.tcp = l.tcp = tcp;
    d.name = l.name = def->name;
    d.slug = l.slug = def->slug;
    d.lib = l.lib = def->lib;
    d.k = l.k = def->k;
    d.m = l.m = m;
    l.loop = 1;
    lb_run_series(e, &d);
    lb_run_series(e, &l);
    if (d.ran && l.ran && d.h50 > 0)
        q = l.h50 / d.h50;
    free(d.hand);
    free(d.xhand);
    free(l.hand);
    free(l.xhand);
    return q;
}

static void loop_pairs(const lb_env *e, lb_series *s, size_t ns)
{
    lb_series *def = NULL, *lp = NULL, raw = {0};
    double ratio[2][LB_PAIRS], rawq[2][LB_PAIRS], q;
    size_t i;
    int r, n[2] = {0, 0}, nf[2] = {0, 0}, m, t;

    for (i = 0; i < ns; i++) {
        if (s[i].lib != LB_REDISLOCK || s[i].k != 8 || !s[i].ran ||
            s[i].fair || s[i].limit || s[i].shared || s[i].set > 1)
            continue;
        if (s[i].loop)
            lp = &s[i];
        else
            def = &s[i];
    }
    if (def == NULL || lp == NULL)
        return;
    printf("lockbench: hand-off on an event loop and blocking, K=8, %d "
           "pairs back to back, and as many of the raw hand-off, over the "
           "unix socket and TCP ...",
           LB_PAIRS);
    fflush(stdout);
    /* the raw hand-off, blocking then on epoll: what a loop costs here
     * without the library */
    raw.name = "raw hand-off";
    raw.slug = "raw-pair";
    raw.lib = LB_RAW;
    raw.k = def->k;
    m = def->m / 2 > 50 ? def->m / 2 : 50;
    /* over the unix socket, then loopback TCP (t) */
    for (t = 0; t < 2 && (t == 0 || e->tcp_port != 0); t++)
        for (r = 0; r < LB_PAIRS; r++) {
            if ((q = one_pair(e, def, m, t)) > 0)
                ratio[t][n[t]++] = q;
            if ((q = one_pair(e, &raw, m, t)) > 0)
                rawq[t][nf[t]++] = q;
        }
    lp->npairs = n[0];
    lp->pair_ratio = n[0] > 0 ? lb_median(ratio[0], (size_t)n[0]) : 0;
    lp->floor_ratio = nf[0] > 0 ? lb_median(rawq[0], (size_t)nf[0]) : 0;
    lp->tcp_pair_ratio = n[1] > 0 ? lb_median(ratio[1], (size_t)n[1]) : 0;
    lp->tcp_floor_ratio = nf[1] > 0 ? lb_median(rawq[1], (size_t)nf[1]) : 0;
    printf(" median %.2f x over %d (raw: %.2f x); over TCP %.2f x (raw: "
           "%.2f x)\n",
           lp->pair_ratio, n[0], lp->floor_ratio, lp->tcp_pair_ratio,
           lp->tcp_floor_ratio);
}

/* The PING round trip and the uncontended cycles, over each transport
 * (TCP: when open_tcp gave a port), or the unix socket alone. */
static void run_micro(const lb_env *e, lb_micro *m, int wires)
{
    int t;

    m->rounds = 7;
    for (t = 0; t < wires; t++) {
        if (t == LB_TCP && e->tcp_port == 0)
            break;
        printf("lockbench: PING loop over %s ...\n", lb_wire_name[t]);
        lb_run_ping(e, &m->w[t], t, 1000);
        printf("lockbench: uncontended over %s, raw loops vs library, %d "
               "rounds ...\n",
               lb_wire_name[t], m->rounds);
        lb_run_uncontended(e, &m->w[t], t, m->rounds, 300);
    }
    m->ping_p50 = m->w[LB_UNIX].ping_p50;
}

/* Cycles behind another library's lock: 200 at --scale 1, never fewer
 * than 100, so that the p99 is not simply the slowest cycle. The
 * library's waiter behind our holder and redis-py's, then the floor's
 * waiter behind ours. */
static void run_foreign(const lb_env *e, const opts *o, lb_foreign *fw)
{
    static const char *const who[3] = {
        "the library's waiter behind a holder of the benchmark's",
        "the library's waiter behind redis-py's Lock",
        "the floor's waiter (raw hiredis) behind a holder of the "
        "benchmark's"};
    int i, n = (int)(200 * o->scale);

    for (i = 0; i < 3; i++) {
        fw[i].py = i == 1;
        fw[i].raw = i == 2;
        fw[i].n = n < 100 ? 100 : n;
        if (fw[i].py && !o->peers)
            continue;
        printf("lockbench: %s (SET NX PX, released 5-30 ms later), %d "
               "cycles ...\n",
               who[i], fw[i].n);
        lb_run_foreign(e, &fw[i]);
    }
}

static void run_all(const lb_env *e, lb_series *s, size_t ns)
{
    size_t i;

    for (i = 0; i < ns; i++) {
        printf("lockbench: %s, K=%d, M=%d ...", s[i].name, s[i].k, s[i].m);
        fflush(stdout);
        lb_run_series(e, &s[i]);
        printf(" %.1f s%s%s\n", s[i].seconds, s[i].ran ? "" : ", FAILED: ",
               s[i].err);
    }
}

/* --core: the figures bench/run.sh compares across servers. */
static int core(const lb_env *e, const opts *o)
{
    static const lb_series rl = {.name = "redislock", .slug = "rl",
                                 .lib = LB_REDISLOCK, .k = 8};
    lb_series s[2];
    lb_micro m = {0};
    lb_results r = {0};
    int i;

    for (i = 0; i < 2; i++) {
        s[i] = rl;
        s[i].fair = i;
        s[i].name = i ? "redislock fair" : "redislock";
        s[i].m = scaled(1000, o->scale);
    }
    run_micro(e, &m, LB_UNIX + 1);
    run_all(e, s, 2);
    r.m = &m;
    r.s = s;
    r.ns = 2;
    lb_report_core(e, &r);
    for (i = 0; i < 2; i++) {
        free(s[i].hand);
        free(s[i].xhand);
    }
    return lb_failed(&r);
}

int main(int argc, char **argv)
{
    static lb_series s[MAX_SERIES];
    lb_env e = {0};
    opts o = {{2, 4, 8, 64}, 4, {2, 4, 8}, 3, 1.0, 1, 0, 0};
    lb_micro m = {0};
    lb_idle idle[3] = {{.fair = 0}, {.fair = 1}, {.foreign = 1}};
    lb_foreign fw[3] = {{0}};
    lb_memory mem;
    lb_scale scale;
    lb_kinds kinds;
    lb_results r = {&m, idle, 3, fw, 3, &mem, &scale, &kinds, s, 0};
    char machine[1024];
    size_t i;

    e.out_dir = "bench/out";
    e.peers_dir = "bench/peers";
    e.python = "/usr/bin/python3";
    e.node = "node";
    e.timeout_s = 60;
    parse(argc, argv, &e, &o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(e.url, sizeof e.url, "unix://%s", e.sock);
    mkdir(e.out_dir, 0777);
    if ((e.ctl = lb_connect(e.sock)) == NULL)
        return 2;
    header(&e, &o, machine, sizeof machine);
    if (o.core) {
        int rc = core(&e, &o);

        redisFree(e.ctl);
        return rc;
    }
    r.ns = plan(&o, s);
    open_tcp(&e);
    run_micro(&e, &m, LB_WIRES);
    for (i = 0; i < 3; i++) {
        printf("lockbench: blocked waiter (%s) ...\n",
               lb_idle_name(&idle[i]));
        lb_run_idle(&e, &idle[i]);
    }
    printf("lockbench: server CPU per uncontended cycle of each kind, %d "
           "rounds ...\n",
           m.rounds);
    lb_run_kinds(&e, &kinds, m.rounds, 300);
    run_foreign(&e, &o, fw);
    printf("lockbench: memory per held lock, %d locks ...\n",
           scaled(100000, o.scale));
    lb_run_memory(&e, &mem, scaled(100000, o.scale));
    printf("lockbench: an event loop holding %d locks (watchdog), %d "
           "waiting ...\n",
           scaled(10000, o.scale), scaled(1000, o.scale));
    lb_run_loop_scale(&e, &scale, scaled(10000, o.scale),
                      scaled(1000, o.scale));
    run_all(&e, s, r.ns);
    loop_pairs(&e, s, r.ns);
    lb_report(&e, &r, machine);
    redisFree(e.ctl);
    return lb_failed(&r);
}
