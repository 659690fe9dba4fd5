/*
 * clusterbench: lock operations per second (an acquire and a release of a
 * free lock) over many keys, from K threads sharing one cluster client,
 * against a one-master cluster and then a three-master one, started here
 * on loopback. Each master's CPU time (INFO cpu) is read before and after,
 * so the output also gives the server CPU one operation costs: what
 * decides how far the masters scale once each has a core of its own.
 *
 *   clusterbench [threads (8)] [seconds per run (5)] [keys (10000)]
 *
 * Needs redis-server and redis-cli on PATH. The last line is
 * machine-readable.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "redislock.h"

#define MAXM 3
#define BASE_PORT 23100

/* The servers' directory, for their nodes.conf files. */
static char dir[] = "/tmp/clusterbench.XXXXXX";

typedef struct run {
    redislock_client *c;
    int keys;
    atomic_int stop;
    atomic_long ops, held; /* held: the key drawn was taken */
} run;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pid_t start_server(int port)
{
    char p[16], bus[16], conf[32];
    pid_t pid;

    snprintf(p, sizeof p, "%d", port);
    snprintf(bus, sizeof bus, "%d", port + 1000);
    snprintf(conf, sizeof conf, "nodes-%d.conf", port);
    if ((pid = fork()) == 0) {
        execlp("redis-server", "redis-server", "--port", p, "--bind",
               "127.0.0.1", "--save", "", "--appendonly", "no",
               "--cluster-enabled", "yes", "--cluster-port", bus,
               "--cluster-config-file", conf, "--dir", dir, "--daemonize", "no",
               "--logfile", "/dev/null", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static redisContext *connect_to(int port)
{
    redisContext *r;
    int i;

    for (i = 0; i < 200; i++) {
        r = redisConnect("127.0.0.1", port);
        if (r != NULL && !r->err)
            return r;
        redisFree(r);
        usleep(10000);
    }
    fprintf(stderr, "cannot connect to port %d\n", port);
    exit(1);
}

/* Waits until the node on port reports cluster_state:ok. */
static void wait_ok(int port)
{
    redisContext *r = connect_to(port);
    redisReply *rep;
    int ok = 0, i;

    for (i = 0; i < 600 && !ok; i++) {
        rep = redisCommand(r, "CLUSTER INFO");
        ok = rep && rep->type == REDIS_REPLY_STRING &&
             strstr(rep->str, "cluster_state:ok") != NULL;
        freeReplyObject(rep);
        if (!ok)
            usleep(50000);
    }
    redisFree(r);
    if (!ok) {
        fprintf(stderr, "cluster on %d did not come up\n", port);
        exit(1);
    }
}

static void make_cluster(int m, const int *ports)
{
    char cmd[512];
    int i, n = 0;

    /* Every server must listen before redis-cli meets them. */
    for (i = 0; i < m; i++)
        redisFree(connect_to(ports[i]));
    fflush(NULL);
    if (m == 1) {
        redisContext *r = connect_to(ports[0]);
        freeReplyObject(redisCommand(r, "CLUSTER ADDSLOTSRANGE 0 16383"));
        redisFree(r);
    } else {
        n = snprintf(cmd, sizeof cmd, "redis-cli --cluster create");
        for (i = 0; i < m; i++)
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, " 127.0.0.1:%d",
                          ports[i]);
        snprintf(cmd + n, sizeof cmd - (size_t)n,
                 " --cluster-yes >/dev/null 2>&1");
        if (system(cmd) != 0) {
            fprintf(stderr, "%s failed\n", cmd);
            exit(1);
        }
    }
    for (i = 0; i < m; i++)
        wait_ok(ports[i]);
}

/* used_cpu_user + used_cpu_sys of the server on port, in seconds. */
static double server_cpu(int port)
{
    redisContext *r = connect_to(port);
    redisReply *rep = redisCommand(r, "INFO cpu");
    const char *u = rep ? strstr(rep->str, "used_cpu_user:") : NULL;
    const char *s = rep ? strstr(rep->str, "used_cpu_sys:") : NULL;
    double t = (u ? atof(u + 14) : 0) + (s ? atof(s + 13) : 0);

    freeReplyObject(rep);
    redisFree(r);
    return t;
}

static void *worker(void *arg)
{
    run *u = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    redislock_acquire_options o = {0};
    redislock_lock *l;
    char key[32];

    o.ttl_ms = 10000;
    while (!atomic_load(&u->stop)) {
        snprintf(key, sizeof key, "cb:%d", (int)(rand_r(&seed) % u->keys));
        if (redislock_lock_new(u->c, key, strlen(key), &l) != REDISLOCK_OK)
            break;
        if (redislock_acquire(l, &o) == REDISLOCK_OK &&
            redislock_release(l) == REDISLOCK_OK)
            atomic_fetch_add(&u->ops, 1);
        else
            atomic_fetch_add(&u->held, 1);
        redislock_lock_free(l);
    }
    return NULL;
}

/* One run against m masters; returns ops/s, and CPU µs per op. */
static double bench(int m, int threads, int secs, int keys, double *cpu_op)
{
    int ports[MAXM], i;
    pid_t pids[MAXM];
    const char *seeds[1];
    char seed[64];
    pthread_t t[64];
    double cpu0 = 0, cpu1 = 0, t0, el;
    run u = {0};

    for (i = 0; i < m; i++) {
        ports[i] = BASE_PORT + 10 * m + i;
        pids[i] = start_server(ports[i]);
    }
    make_cluster(m, ports);
    snprintf(seed, sizeof seed, "redis://127.0.0.1:%d", ports[0]);
    seeds[0] = seed;
    u.keys = keys;
    if (redislock_client_new_cluster(&u.c, seeds, 1, NULL) != REDISLOCK_OK) {
        fprintf(stderr, "client: %s\n", redislock_errdetail());
        exit(1);
    }
    for (i = 0; i < m; i++)
        cpu0 += server_cpu(ports[i]);
    t0 = now_s();
    for (i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, &u);
    sleep((unsigned)secs);
    atomic_store(&u.stop, 1);
    for (i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    el = now_s() - t0;
    for (i = 0; i < m; i++)
        cpu1 += server_cpu(ports[i]);
    redislock_client_free(u.c);
    for (i = 0; i < m; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
    *cpu_op = (cpu1 - cpu0) * 1e6 / (double)(atomic_load(&u.ops) + 1);
    printf("%d master(s), %d threads, %d keys: %ld ops in %.2f s = %.0f "
           "ops/s, %ld found held, server CPU %.1f us/op (%.2f cores busy)\n",
           m, threads, keys, atomic_load(&u.ops), el,
           (double)atomic_load(&u.ops) / el, atomic_load(&u.held), *cpu_op,
           (cpu1 - cpu0) / el);
    return (double)atomic_load(&u.ops) / el;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    int secs = argc > 2 ? atoi(argv[2]) : 5;
    int keys = argc > 3 ? atoi(argv[3]) : 10000;
    double cpu1, cpu3, one, three;
    char cmd[64];

    if (threads < 1 || threads > 64 || secs < 1 || keys < 1) {
        fprintf(stderr, "usage: clusterbench [threads] [seconds] [keys]\n");
        return 2;
    }
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    one = bench(1, threads, secs, keys, &cpu1);
    three = bench(3, threads, secs, keys, &cpu3);
    printf("cluster_1m_ops_s=%.0f cluster_3m_ops_s=%.0f ratio=%.2f "
           "cpu_us_per_op_1m=%.1f cpu_us_per_op_3m=%.1f\n",
           one, three, three / one, cpu1, cpu3);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
