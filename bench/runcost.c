/*
 * runcost: the cost of `redislock run KEY -- true` against
 * `flock FILE true`, side by side (issue 37).
 *
 *   runcost N REDISLOCK URL FILE
 *
 * Runs each command N times, in turns (flock, run, run, flock, ...: the
 * order flips every pair, so that neither always follows the other and a
 * drift of the machine hits both alike), after a few untimed runs of
 * each. Each run's wall time is taken from just before its fork to the
 * return of its waitpid(), which is what a shell loop pays but for the
 * shell's own work. Prints the medians and 90th percentiles, the target
 * line with PASS or MISS, and, last, a machine-readable line. Exits 1 if
 * a run failed, never for a missed target.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 5
/* The target of issue 37: run's wall time at most this times flock's. */
#define TARGET 1.3

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs argv with standard output and error on /dev/null; returns its wall
 * time in ns, or -1 when it could not run or did not exit 0. */
static int64_t timed(char *const *argv)
{
    int64_t t0 = now_ns();
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        if (freopen("/dev/null", "w", stdout) == NULL ||
            freopen("/dev/null", "w", stderr) == NULL)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stdout, "runcost: %s exited with status %d\n", argv[0],
                WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return -1;
    }
    return now_ns() - t0;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The p-th fraction of v's n values, in us; sorts v. */
static double pct_us(int64_t *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return (double)v[(int)(p * (n - 1) + 0.5)] / 1000.0;
}

/* Runs both commands n times in turns into ta and tb; 0, or -1 when a run
 * failed. */
static int alternate(char *const *a, char *const *b, int64_t *ta, int64_t *tb,
                     int n)
{
    int i;

    for (i = 0; i < WARMUP; i++)
        if (timed(a) < 0 || timed(b) < 0)
            return -1;
    for (i = 0; i < n; i++) {
        if (i % 2 == 0) {
            ta[i] = timed(a);
            tb[i] = timed(b);
        } else {
            tb[i] = timed(b);
            ta[i] = timed(a);
        }
        if (ta[i] < 0 || tb[i] < 0)
            return -1;
    }
    return 0;
}

static void report(int64_t *tf, int64_t *tr, int n)
{
    double f50 = pct_us(tf, n, 0.5), f90 = pct_us(tf, n, 0.9);
    double r50 = pct_us(tr, n, 0.5), r90 = pct_us(tr, n, 0.9);
    double ratio = f50 > 0 ? r50 / f50 : 0;

    printf("redislock run against flock(1), %d runs each in turns, wall "
           "time per run (us): flock FILE true p50 %.0f p90 %.0f; "
           "redislock run KEY -- true p50 %.0f p90 %.0f\n",
           n, f50, f90, r50, r90);
    printf("\nredislock run targets:\n");
    printf("  run KEY -- true p50 <= %.1f x flock FILE true's (%.0f us): "
           "%.0f us = %.2f x %s\n",
           TARGET, f50, r50, ratio, ratio <= TARGET ? "PASS" : "MISS");
    printf("run_true_p50_us=%.0f flock_true_p50_us=%.0f "
           "run_flock_ratio=%.2f\n",
           r50, f50, ratio);
}

int main(int argc, char **argv)
{
    char *flock_argv[] = {(char *)"flock", NULL, (char *)"true", NULL};
    char *run_argv[] = {NULL,
                        (char *)"run",
                        (char *)"-u",
                        NULL,
                        (char *)"bench:runcost",
                        (char *)"--",
                        (char *)"true",
                        NULL};
    int64_t *tf, *tr;
    int n;

    if (argc != 5 || (n = atoi(argv[1])) < 1) {
        fprintf(stderr, "usage: runcost N REDISLOCK URL FILE\n");
        return 64;
    }
    run_argv[0] = argv[2];
    run_argv[3] = argv[3];
    flock_argv[1] = argv[4];
    tf = malloc((size_t)n * sizeof *tf);
    tr = malloc((size_t)n * sizeof *tr);
    if (tf == NULL || tr == NULL)
        return 1;
    if (alternate(flock_argv, run_argv, tf, tr, n) != 0) {
        printf("runcost: a run failed\n");
        return 1;
    }
    report(tf, tr, n);
    free(tf);
    free(tr);
    return 0;
}
