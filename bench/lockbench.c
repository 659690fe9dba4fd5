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
 * raw_handoff_p50_us=... ... fair_handoff_pair_ratio=... (and each
 * kind's: sem_, shared_, set_, sem_fair_, shared_fair_handoff_pair_ratio)
 * foreign_wake_p50_us=... foreign_wake_p99_us=...
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

/* Hand-offs judged against another series of the same run (the event
 * loop's against the blocking calls', fair mode's against the default
 * mode's, a kind's against the plain lock's) are not judged by the two
 * single series: two series minutes apart differ by more than those
 * targets' margins (the box's noise moves one by 15-20 us, and a 2 %
 * gap flipped the fair target between two CI runs of the same code on
 * 2026-12-06). The two are also run back to back in LB_PAIRS pairs, each
 * at half the rounds, the order swapped in every other pair, and the
 * target judges the median of the pairs' ratios. */
#define LB_PAIRS 5

/* Pair runs whose counter or exclusion check failed: the run fails. */
static int pair_faults;

/* A series set up as p (library, kind, mode, K), at m rounds over
 * transport tcp, with no results yet. */
static lb_series like(const lb_series *p, int m, int tcp)
{
    lb_series s = {0};

    s.name = p->name;
    s.slug = p->slug;
    s.lib = p->lib;
    s.fair = p->fair;
    s.limit = p->limit;
    s.shared = p->shared;
    s.set = p->set;
    s.loop = p->loop;
    s.arg1 = p->arg1;
    s.arg2 = p->arg2;
    s.k = p->k;
    s.m = m;
    s.tcp = tcp;
    return s;
}

/* The hand-off p50 of a series like b over one like a, run back to back
 * (b first when swap is set), m rounds each; 0 if either failed. */
static double one_pair(const lb_env *e, const lb_series *a,
                       const lb_series *b, int m, int tcp, int swap)
{
    lb_series x[2];
    double q = 0;
    int i;

    x[0] = like(a, m, tcp);
    x[1] = like(b, m, tcp);
    for (i = 0; i < 2; i++)
        lb_run_series(e, &x[swap ? 1 - i : i]);
    if (x[0].ran && x[1].ran && x[0].h50 > 0)
        q = x[1].h50 / x[0].h50;
    for (i = 0; i < 2; i++) {
        if (x[i].ran && (!x[i].counter_ok || x[i].overlaps != 0)) {
            printf("\nlockbench: FAIL: a pair's %s run: counter %lld of "
                   "%lld, %ld sections overlapping an exclusive one\n",
                   x[i].name, x[i].counter, x[i].want, x[i].overlaps);
            pair_faults++;
        }
        free(x[i].hand);
        free(x[i].xhand);
    }
    return q;
}

/* Rounds per series of a pair, from the single series' m. */
static int pair_m(const lb_series *s)
{
    return s->m / 2 > 50 ? s->m / 2 : 50;
}

/* The median over LB_PAIRS pairs of b's hand-off p50 over a's (one_pair)
 * into *ratio; returns how many pairs ran (0: *ratio is 0). */
static int pairs(const lb_env *e, const lb_series *a, const lb_series *b,
                 int tcp, double *ratio)
{
    double q[LB_PAIRS];
    int r, n = 0;

    for (r = 0; r < LB_PAIRS; r++)
        if ((q[n] = one_pair(e, a, b, pair_m(a), tcp, r & 1)) > 0)
            n++;
    *ratio = n > 0 ? lb_median(q, (size_t)n) : 0;
    return n;
}

static void loop_pairs(const lb_env *e, lb_series *s, size_t ns)
{
    lb_series *def = NULL, *lp = NULL, raw = {0}, rawloop;
    size_t i;
    int t, n;

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
    raw.m = def->m;
    rawloop = raw;
    rawloop.loop = 1;
    /* over the unix socket, then loopback TCP (t) */
    n = pairs(e, def, lp, 0, &lp->pair_ratio);
    lp->npairs = n;
    pairs(e, &raw, &rawloop, 0, &lp->floor_ratio);
    for (t = 1; t < 2 && e->tcp_port != 0; t++) {
        pairs(e, def, lp, t, &lp->tcp_pair_ratio);
        pairs(e, &raw, &rawloop, t, &lp->tcp_floor_ratio);
    }
    printf(" median %.2f x over %d (raw: %.2f x); over TCP %.2f x (raw: "
           "%.2f x)\n",
           lp->pair_ratio, n, lp->floor_ratio, lp->tcp_pair_ratio,
           lp->tcp_floor_ratio);
}

/* The K=8 library series other than the event loop's: each kind and
 * fair mode against the plain lock of its mode, the fair plain lock
 * against the default mode's (pair_ratio of the series judged). */
static void kind_pairs(const lb_env *e, lb_series *s, size_t ns)
{
    lb_series *plain[2] = {NULL, NULL};
    size_t i;

    for (i = 0; i < ns; i++)
        if (s[i].lib == LB_REDISLOCK && s[i].k == 8 && s[i].ran &&
            !s[i].loop && !s[i].limit && !s[i].shared && s[i].set < 2)
            plain[s[i].fair ? 1 : 0] = &s[i];
    if (plain[0] == NULL)
        return;
    printf("lockbench: hand-off of each kind and mode against the plain "
           "lock's, K=8, %d pairs back to back ...",
           LB_PAIRS);
    fflush(stdout);
    for (i = 0; i < ns; i++) {
        lb_series *x = &s[i];
        const lb_series *ref = plain[x->fair ? 1 : 0];

        if (x->lib != LB_REDISLOCK || x->k != 8 || !x->ran || x->loop ||
            x == plain[0])
            continue;
        if (x == plain[1])
            ref = plain[0];
        if (ref == NULL)
            continue;
        x->npairs = pairs(e, ref, x, 0, &x->pair_ratio);
        printf(" %s %.2f x;", x->slug, x->pair_ratio);
        fflush(stdout);
    }
    printf("\n");
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
    kind_pairs(&e, s, r.ns);
    lb_report(&e, &r, machine);
    redisFree(e.ctl);
    return lb_failed(&r) || pair_faults > 0;
}
