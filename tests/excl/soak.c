/*
 * rl-soak: the long run of the exclusion checker (make soak). Every mode
 * in turn, each run in a child process of its own (its own process group,
 * killed whole afterwards, and a timeout), with seeds drawn from one
 * master seed so that SOAK_SEED replays the choices.
 *
 *   rl-soak [--minutes N] [--seed S] [--mode NAME]...
 *
 * Prints the seed first, each run's figures and violations, a table per
 * mode (sections, faults per kind, overlaps, stale writes accepted,
 * liveness violations: false losses, missed grants, starvation and
 * failovers not waited through, summed in the "live" column) and
 * one summary line; exits 1 on any violation or failed run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "excl.h"
#include "harness/util.h"
#include "test.h"

/* A mode's turn lasts at most this long; more minutes mean more rounds. */
#define SOAK_SLICE_MAX_MS 60000
#define SOAK_SLICE_MIN_MS 5000
/* On top of the slice: servers, a cluster's start, the check. */
#define SOAK_RUN_SLACK_S 120

typedef struct totals {
    excl_result r; /* summed */
    long live;     /* the liveness rules' violations, all kinds */
    long runs, failed;
} totals;

static void usage(void)
{
    fprintf(stderr,
            "usage: rl-soak [--minutes N] [--seed S] [--mode NAME]...\n");
    exit(2);
}

/* Reads the child's result from fd until EOF (the child has exited) or
 * the deadline; returns the bytes of the result read. */
static size_t collect(int fd, excl_result *out, int64_t deadline)
{
    struct pollfd p = {fd, POLLIN, 0};
    char rest[64]; /* anything after the result: not expected */
    size_t got = 0, want;
    ssize_t n;
    int64_t left;
    void *buf;

    while ((left = deadline - th_now_ms()) > 0 && poll(&p, 1, (int)left) > 0) {
        buf = got < sizeof *out ? (void *)((char *)out + got) : rest;
        want = got < sizeof *out ? sizeof *out - got : sizeof rest;
        n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (buf != (void *)rest)
            got += (size_t)n;
    }
    return got;
}

/* Runs one mode in a child, which sends its result back through a pipe
 * and exits (stopping its servers). Returns 0, or -1 when the run failed
 * (a harness error, a timeout). */
static int run_child(const excl_mode *m, uint64_t seed, int64_t ms,
                     excl_result *out)
{
    int fds[2];
    pid_t pid;
    size_t got;

    /* Close-on-exec: the servers the child starts must not hold it. */
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    fflush(NULL);
    if ((pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        close(fds[0]);
        excl_run(m, seed, ms, out);
        if (write(fds[1], out, sizeof *out) != (ssize_t)sizeof *out)
            exit(1);
        exit(0); /* atexit stops the servers */
    }
    setpgid(pid, pid);
    close(fds[1]);
    got = collect(fds[0], out, th_now_ms() + ms + SOAK_RUN_SLACK_S * 1000);
    close(fds[0]);
    kill(-pid, SIGKILL); /* whatever the run left behind */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return got == sizeof *out ? 0 : -1;
}

static void add(totals *t, const excl_result *r)
{
    int f;

    t->r.v.sections += r->v.sections;
    t->r.v.overlaps += r->v.overlaps;
    t->r.v.stale += r->v.stale;
    t->r.v.fence_order += r->v.fence_order;
    t->r.v.lease += r->v.lease;
    t->r.v.writes_refused += r->v.writes_refused;
    t->r.violations += r->violations;
    t->live += r->lv.false_loss + r->lv.missed_grant + r->lv.late_grant +
               r->lv.starved + r->lv.failover;
    t->r.seconds += r->seconds;
    for (f = 0; f < EXCL_F_COUNT; f++)
        t->r.faults[f] += r->faults[f];
}

static void table(const excl_mode *const *sel, int n, const totals *t)
{
    int i, f;

    printf("\n%-27s %5s %7s %8s %6s %5s %5s %6s %5s  faults\n", "mode",
           "runs", "secs", "sections", "overl", "stale", "fence", "lease",
           "live");
    for (i = 0; i < n; i++) {
        printf("%-27s %5ld %7.0f %8ld %6ld %5ld %5ld %6ld %5ld ", sel[i]->name,
               t[i].runs, t[i].r.seconds, t[i].r.v.sections, t[i].r.v.overlaps,
               t[i].r.v.stale, t[i].r.v.fence_order, t[i].r.v.lease,
               t[i].live);
        for (f = 0; f < EXCL_F_COUNT; f++)
            if ((sel[i]->faults & (1u << f)) || t[i].r.faults[f] > 0)
                printf(" %s=%ld", excl_fault_names[f], t[i].r.faults[f]);
        if (sel[i]->faults == 0)
            printf(" none");
        if (t[i].failed)
            printf(" FAILED RUNS=%ld", t[i].failed);
        printf("\n");
    }
}

static int parse(int argc, char **argv, double *minutes, uint64_t *seed,
                 const excl_mode **sel)
{
    int i, n = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--minutes") == 0 && i + 1 < argc)
            *minutes = atof(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            *seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc &&
                 n < excl_nmodes && (sel[n] = excl_mode_find(argv[++i])))
            n++;
        else
            usage();
    }
    for (i = 0; n == 0 && i < excl_nmodes; i++)
        sel[i] = &excl_modes[i];
    return n ? n : excl_nmodes;
}

int main(int argc, char **argv)
{
    const excl_mode *sel[64];
    totals t[64];
    double minutes = 10;
    uint64_t seed = 0;
    int n, i, round = 0;
    int64_t budget, slice, end;
    excl_rng rng;
    excl_result r;
    long viol = 0, failed = 0, sections = 0;

    seed = excl_seed();
    n = parse(argc, argv, &minutes, &seed, sel);
    setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    printf("soak: seed %" PRIu64 " (replay: SOAK_SEED=%" PRIu64
           "), %.1f minutes, %d modes\n",
           seed, seed, minutes, n);
    budget = (int64_t)(minutes * 60000);
    slice = budget / n;
    slice = slice > SOAK_SLICE_MAX_MS   ? SOAK_SLICE_MAX_MS
            : slice < SOAK_SLICE_MIN_MS ? SOAK_SLICE_MIN_MS
                                        : slice;
    memset(t, 0, sizeof t);
    excl_rng_seed(&rng, seed, 0);
    end = th_now_ms() + budget;
    do {
        for (i = 0; i < n; i++) {
            t[i].runs++;
            if (run_child(sel[i], excl_rng_next(&rng), slice, &r) != 0) {
                printf("soak %s: round %d: the run failed\n", sel[i]->name,
                       round);
                t[i].failed++;
                continue;
            }
            add(&t[i], &r);
            t[i].failed += r.crashed != 0;
        }
        round++;
    } while (th_now_ms() + slice * n <= end);
    table(sel, n, t);
    for (i = 0; i < n; i++) {
        viol += t[i].r.violations;
        failed += t[i].failed;
        sections += t[i].r.v.sections;
    }
    printf("soak: %s: %d modes, %d rounds, %ld sections, %ld violations, "
           "%ld failed runs (seed %" PRIu64 ")\n",
           viol || failed ? "FAIL" : "ok", n, round, sections, viol, failed,
           seed);
    return viol || failed ? 1 : 0;
}
