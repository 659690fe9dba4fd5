/*
 * One run of a mode: the servers (and proxies) it needs, a resource
 * server for fenced writes, the workers, the nemesis until the time is
 * up, then the check of the history.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "excl_int.h"
#include "harness/util.h"
#include "test.h"

/* How long workers get to finish once told to stop, before kill -9. */
#define EXCL_STOP_GRACE_MS 1500

/* Held by every worker: EOF on the read end once all have gone. */
static int alive_pipe[2] = {-1, -1};

uint64_t excl_seed(void)
{
    const char *s = getenv("EXCL_SEED");

    if (s != NULL && *s != '\0')
        return strtoull(s, NULL, 0);
    return (uint64_t)excl_now_us() ^ ((uint64_t)getpid() << 32);
}

pid_t excl_spawn(const excl_mode *m, const excl_topo *t, excl_shared *sh,
                 int idx, int gen)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        close(alive_pipe[0]);
        excl_worker_main(m, t, sh, idx, gen);
    }
    return pid;
}

static void tcp_url(char *buf, int port)
{
    snprintf(buf, EXCL_URL_MAX, "redis://127.0.0.1:%d", port);
}

/* Servers 0..nproxied-1 (and the resource, when res_too) are reached
 * through proxies. */
static void add_proxies(excl_topo *t, int nproxied, int res_too)
{
    int up[EXCL_MAX_SERVERS + 1] = {0}, ports[EXCL_MAX_SERVERS + 1], i, n = 0;

    for (i = 0; i < nproxied; i++)
        up[n++] = t->srv[i]->port;
    if (res_too)
        up[n++] = t->res->port;
    excl_proxies_start(t, up, n, ports);
    for (i = 0; i < nproxied; i++) {
        t->proxy_of[i] = i;
        tcp_url(t->url[i], ports[i]);
    }
    if (res_too) {
        t->res_proxy = nproxied;
        tcp_url(t->res_url, ports[nproxied]);
    }
}

static void topo_start(excl_topo *t, const excl_mode *m)
{
    th_sentinel_opts so;
    int i;

    memset(&so, 0, sizeof so);
    so.replicas = m->topo == EXCL_SENTINEL2 ? 2 : 1;
    t->kind = m->topo == EXCL_SENTINEL2   ? EXCL_SENTINEL
              : m->topo == EXCL_CLUSTER_R ? EXCL_CLUSTER
                                          : m->topo;
    t->n = t->kind == EXCL_SINGLE || t->kind == EXCL_PROXIED ||
                   t->kind == EXCL_SENTINEL
               ? 1
           : m->topo == EXCL_CLUSTER_R ? 6
                                       : 3;
    t->res_proxy = -1;
    if (t->kind == EXCL_SENTINEL) {
        /* srv[0] is the first master; the truth follows the sentinels
         * (truth.c). */
        t->sentinels = th_sentinels_start(&so);
        t->srv[0] = t->sentinels->node[0];
    } else if (t->kind == EXCL_CLUSTER) {
        /* With replicas, every node is a server: the truth asks each,
         * the one serving the key answering. */
        t->cluster = th_cluster_start(3, t->n / 3 - 1);
        for (i = 0; i < t->n; i++)
            t->srv[i] = t->cluster->s[i];
    } else {
        for (i = 0; i < t->n; i++)
            t->srv[i] = th_server_start(NULL);
    }
    t->res = th_server_start(NULL);
    for (i = 0; i < t->n; i++) {
        t->proxy_of[i] = -1;
        snprintf(t->url[i], EXCL_URL_MAX, "%s",
                 t->kind == EXCL_CLUSTER    ? t->cluster->seeds[i]
                 : t->kind == EXCL_SENTINEL ? t->sentinels->url
                                            : t->srv[i]->unix_url);
        snprintf(t->sock[i], EXCL_URL_MAX, "%s", t->srv[i]->sock);
    }
    snprintf(t->res_url, EXCL_URL_MAX, "%s", t->res->unix_url);
    if (m->topo == EXCL_PROXIED)
        add_proxies(t, 1, 1);
    else if (m->topo == EXCL_REDLOCK)
        add_proxies(t, 2, 0);
}

static void topo_stop(excl_topo *t)
{
    int i;

    excl_proxies_stop(t);
    if (t->cluster != NULL)
        th_cluster_stop(t->cluster);
    else if (t->sentinels != NULL)
        th_sentinels_stop(t->sentinels);
    else
        for (i = 0; i < t->n; i++)
            th_server_stop(t->srv[i]);
    th_server_stop(t->res);
}

/* Waits, within the grace time, for every worker to exit; kills the
 * rest. Returns how many exited with a failure (a sanitizer's report:
 * ThreadSanitizer's exit code, say). */
static long stop_workers(const excl_mode *m, excl_shared *sh)
{
    struct pollfd p = {alive_pipe[0], POLLIN, 0};
    int64_t deadline = th_now_ms() + EXCL_STOP_GRACE_MS, left;
    char buf[16];
    pid_t pid;
    int i, st;
    long bad = 0;

    atomic_store(&sh->stop, 1);
    close(alive_pipe[1]);
    while ((left = deadline - th_now_ms()) > 0 && poll(&p, 1, (int)left) >= 0)
        if ((p.revents & (POLLIN | POLLHUP)) &&
            read(alive_pipe[0], buf, sizeof buf) <= 0)
            break;
    close(alive_pipe[0]);
    for (i = 0; i < m->nworkers; i++) {
        if ((pid = atomic_load(&sh->slot[i].pid)) <= 0)
            continue;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("excl %s: worker %d (pid %d) exited with status "
                       "%d, signal %d\n",
                       m->name, i, (int)pid,
                       WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
                bad++;
            }
            continue;
        }
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    return bad;
}

/* Sections by the size of the set they took, when any took one. */
static void report_sets(const excl_mode *m, const excl_verdict *v)
{
    long sets = 0;
    int k;

    for (k = 1; k <= EXCL_MAX_KEYS; k++)
        sets += v->sets[k];
    if (sets == 0)
        return;
    printf("excl %s: of the sections,", m->name);
    for (k = 1; k <= EXCL_MAX_KEYS; k++)
        if (v->sets[k] > 0)
            printf(" %ld sets of %d key%s,", v->sets[k], k, k > 1 ? "s" : "");
    printf(" %ld single locks\n", v->sections - sets);
}

static void report_live(const excl_mode *m, const excl_live_verdict *v)
{
    printf("excl %s: liveness: %ld acquires returned, %ld waits failed, %ld "
           "losses told; false losses %ld, missed grants %ld, late grants "
           "%ld, starved %ld, failover %ld",
           m->name, v->attempts, v->failed, v->losses, v->false_loss,
           v->missed_grant, v->late_grant, v->starved, v->failover);
    if (v->guard_refused > 0)
        printf("; %ld acquires or renewals refused by the strict guard "
               "after the failover",
               v->guard_refused);
    if (v->reply_lost > 0)
        printf("; %ld waits ended by a stopped master's lost reply",
               v->reply_lost);
    if (v->first_s >= 0)
        printf("; first at %.3f s", v->first_s);
    printf("\n");
}

static void report(const excl_mode *m, uint64_t seed, const excl_result *r)
{
    const excl_verdict *v = &r->v;
    int f;

    printf("excl %s: seed %" PRIu64 ", %.1f s, %ld sections, %ld acquires, "
           "writes %ld accepted %ld refused %ld failed, %ld lease checks\n",
           m->name, seed, r->seconds, v->sections, v->acquires, v->writes_ok,
           v->writes_refused, v->writes_failed, v->leases_checked);
    if (v->shares > 0)
        printf("excl %s: %ld of the sections shares, %ld exclusive; %ld "
               "pairs of shares overlapped\n",
               m->name, v->shares, v->sections - v->shares, v->share_pairs);
    report_sets(m, v);
    printf("excl %s: faults:", m->name);
    for (f = 0; f < EXCL_F_COUNT; f++)
        if ((m->faults & (1u << f)) || r->faults[f] > 0)
            printf(" %s %ld", excl_fault_names[f], r->faults[f]);
    printf("%s\n", m->faults ? "" : " none");
    printf("excl %s: overlaps %ld, stale writes accepted %ld, fence order "
           "%ld, beliefs past the server's lease %ld",
           m->name, v->overlaps, v->stale, v->fence_order, v->lease);
    if (v->first_s >= 0)
        printf("; first at %.3f s, after %ld sections", v->first_s,
               v->first_sections);
    if (v->failover_lost > 0)
        printf("; %ld overlaps or lease reads excused as locks lost in an "
               "unguarded failover",
               v->failover_lost);
    printf("\n");
    report_live(m, &r->lv);
}

/* The earliest violation's time (s), of either checker. */
static double first_violation(const excl_result *r)
{
    if (r->v.first_s < 0)
        return r->lv.first_s;
    if (r->lv.first_s < 0 || r->v.first_s < r->lv.first_s)
        return r->v.first_s;
    return r->lv.first_s;
}

static void run_workload(const excl_mode *m, excl_topo *t, excl_shared *sh,
                         int64_t run_ms, excl_result *res)
{
    excl_nemesis *n;
    int64_t end;
    int i;

    ASSERT(pipe(alive_pipe) == 0);
    for (i = 0; i < m->nworkers; i++)
        atomic_store(&sh->slot[i].pid, excl_spawn(m, t, sh, i, 0));
    n = excl_nemesis_new(m, t, sh, t->seed);
    end = th_now_ms() + run_ms;
    while (th_now_ms() < end)
        th_sleep_ms(excl_nemesis_step(n));
    excl_nemesis_calm(n);
    res->crashed = stop_workers(m, sh);
    excl_nemesis_counts(n, res->faults);
    excl_nemesis_free(n);
}

/* With $EXCL_HISTORY_DIR, the history is kept there as
 * <mode>-<seed>.hist (the records as written), for a closer look. */
static void keep_history(const excl_mode *m, uint64_t seed, const excl_rec *h,
                         size_t n)
{
    const char *dir = getenv("EXCL_HISTORY_DIR");
    char path[512];
    FILE *f;

    if (dir == NULL || *dir == '\0')
        return;
    snprintf(path, sizeof path, "%s/%s-%" PRIu64 ".hist", dir, m->name, seed);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(h, sizeof *h, n, f) != n || fclose(f) != 0)
        printf("excl %s: cannot keep the history as %s: %s\n", m->name, path,
               strerror(errno));
    else
        printf("excl %s: history kept as %s\n", m->name, path);
}

long excl_run(const excl_mode *m, uint64_t seed, int64_t run_ms,
              excl_result *res)
{
    excl_topo t;
    excl_shared *sh;
    excl_rec *h;
    size_t nh;
    char *dir = th_mkdtemp("excl");

    printf("excl %s: seed %" PRIu64 " (replay: EXCL_SEED=%" PRIu64 ")\n",
           m->name, seed, seed);
    fflush(stdout);
    ASSERT(dir != NULL);
    memset(&t, 0, sizeof t);
    memset(res, 0, sizeof *res);
    t.seed = seed;
    topo_start(&t, m);
    snprintf(t.hist, sizeof t.hist, "%s/history", dir);
    t.hist_fd = excl_history_open(t.hist);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    t.t_base = excl_now_us();
    run_workload(m, &t, sh, run_ms, res);
    res->seconds = (double)(excl_now_us() - t.t_base) / 1e6;
    close(t.hist_fd);
    h = excl_history_read(t.hist, &nh);
    keep_history(m, seed, h, nh);
    res->violations =
        excl_check(h, nh, seed, t.t_base, m->name, m->limit, &res->v);
    res->violations +=
        excl_live_check(h, nh, seed, t.t_base, m->name, m->limit, &res->lv);
    report(m, seed, res);
    if (res->violations > 0)
        excl_history_excerpt(h, nh, t.t_base, first_violation(res));
    free(h);
    munmap(sh, sizeof *sh);
    topo_stop(&t);
    th_rmtree(dir);
    free(dir);
    fflush(stdout);
    return res->violations;
}
