/*
 * rl-soak: the long run of the exclusion checker (make soak). Every mode
 * in turn, each run in a child process of its own (its own process group,
 * killed whole afterwards, and a timeout), with seeds drawn from one
 * master seed so that SOAK_SEED replays the choices.
 *
 *   rl-soak [--minutes N] [--seed S] [--mode NAME]...
 *
 * Prints the seed first, each run's figures and violations, a table per
 * mode (sections, faults per kind, overlaps, stale writes accepted) and
 * one summary line; exits 1 on any violation or failed run.
 */
#include <errno.h>
#include <inttypes.h>
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
    long runs, failed;
} totals;

static void usage(void)
{
    fprintf(stderr,
            "usage: rl-soak [--minutes N] [--seed S] [--mode NAME]...\n");
    exit(2);
}

/* Runs one mode in a child, which sends its result back through a pipe.
 * Returns 0, or -1 when the run failed (a harness error, a timeout). */
static int run_child(const excl_mode *m, uint64_t seed, int64_t ms,
                     excl_result *out)
{
    int fds[2], st = 0;
    pid_t pid;
    ssize_t got;
    int64_t deadline = th_now_ms() + ms + SOAK_RUN_SLACK_S * 1000;

    if (pipe(fds) != 0)
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
    /* The child's exit has no descriptor: poll for it, bounded. */
    while (waitpid(pid, &st, WNOHANG) == 0 && th_now_ms() < deadline)
        th_sleep_ms(100);
    kill(-pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    got = read(fds[0], out, sizeof *out);
    close(fds[0]);
    return got == (ssize_t)sizeof *out ? 0 : -1;
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
    t->r.seconds += r->seconds;
    for (f = 0; f < EXCL_F_COUNT; f++)
        t->r.faults[f] += r->faults[f];
}

static void table(const excl_mode *const *sel, int n, const totals *t)
{
    int i, f;

    printf("\n%-18s %5s %7s %8s %6s %5s %5s %6s  faults\n", "mode", "runs",
           "secs", "sections", "overl", "stale", "fence", "lease");
    for (i = 0; i < n; i++) {
        printf("%-18s %5ld %7.0f %8ld %6ld %5ld %5ld %6ld ", sel[i]->name,
               t[i].runs, t[i].r.seconds, t[i].r.v.sections, t[i].r.v.overlaps,
               t[i].r.v.stale, t[i].r.v.fence_order, t[i].r.v.lease);
        for (f = 0; f < EXCL_F_COUNT; f++)
            if (sel[i]->faults & (1u << f))
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
