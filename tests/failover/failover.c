/*
 * rl-failover: the failover table's measurements (make failover-table).
 * Each round is one fo_round (round.h) in a child process of its own, so
 * that a setup that fails ends that round only; prints one line per
 * round and the totals.
 *
 *   rl-failover [--rounds N] [--replicas 1|2]
 *               [--fault failover|kill|cluster-failover|cluster-kill]
 *               [--guard off|N|all] [--after-ms MS]
 *
 * Exits 1 when a round failed to run, 0 otherwise (locks lost are a
 * figure here, not a failure: the unguarded rows are expected to lose).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "failover/round.h"
#include "harness/util.h"

_Noreturn static void usage(void)
{
    fprintf(stderr, "usage: rl-failover [--rounds N] [--fault "
                    "failover|kill|cluster-failover|cluster-kill] "
                    "[--replicas 1|2] [--guard off|N|all] [--after-ms MS]\n");
    exit(2);
}

static fo_fault fault_named(const char *v)
{
    if (strcmp(v, "failover") == 0)
        return FO_SENTINEL_FAILOVER;
    if (strcmp(v, "kill") == 0)
        return FO_SENTINEL_KILL;
    if (strcmp(v, "cluster-failover") == 0)
        return FO_CLUSTER_FAILOVER;
    if (strcmp(v, "cluster-kill") == 0)
        return FO_CLUSTER_KILL;
    usage();
}

static void parse(int argc, char **argv, fo_opts *o, int *rounds)
{
    int i;

    for (i = 1; i + 1 < argc; i += 2) {
        const char *v = argv[i + 1];

        if (strcmp(argv[i], "--rounds") == 0)
            *rounds = atoi(v);
        else if (strcmp(argv[i], "--fault") == 0)
            o->fault = fault_named(v);
        else if (strcmp(argv[i], "--after-ms") == 0)
            o->after_ms = atoi(v);
        else if (strcmp(argv[i], "--replicas") == 0)
            o->replicas = atoi(v);
        else if (strcmp(argv[i], "--guard") == 0)
            o->guard = strcmp(v, "off") == 0   ? 0
                       : strcmp(v, "all") == 0 ? REDISLOCK_REPLICAS_ALL
                                               : atoi(v);
        else
            usage();
    }
    if (i != argc || *rounds < 1 || o->replicas < 1 || o->replicas > 2)
        usage();
}

/* One round in a child; its result comes back through a pipe. */
static int run_round(const fo_opts *o, fo_result *r)
{
    int fd[2], status;
    pid_t pid;

    if (pipe(fd) != 0 || (pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        fo_round(o, r);
        _exit(write(fd[1], r, sizeof *r) == (ssize_t)sizeof *r ? 0 : 1);
    }
    close(fd[1]);
    status = read(fd[0], r, sizeof *r) == (ssize_t)sizeof *r ? 0 : -1;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    return status;
}

int main(int argc, char **argv)
{
    fo_opts o = {FO_SENTINEL_FAILOVER, 2, 0, 12000};
    fo_result r, sum = {0};
    int rounds = 1, i, failed = 0, lossy = 0;
    int64_t back_max = -1, p50_sum = 0;
    char line[512];

    parse(argc, argv, &o, &rounds);
    for (i = 0; i < rounds; i++) {
        if (run_round(&o, &r) != 0) {
            printf("round %d: failed to run\n", i + 1);
            failed++;
            continue;
        }
        fo_format(&o, &r, line, sizeof line);
        printf("round %d: %s\n", i + 1, line);
        fflush(stdout);
        sum.grants += r.grants;
        sum.refused += r.refused;
        sum.lost += r.lost;
        lossy += r.lost > 0;
        back_max = r.back_ms > back_max ? r.back_ms : back_max;
        sum.waiter_ms += r.waiter_err == REDISLOCK_OK;
        p50_sum += r.p50_us;
    }
    printf("total: %d rounds (%d failed to run): grants %d refused %d lost %d "
           "in %d rounds; granting again at most %lld ms after the fault; "
           "waiter got the lock in %lld rounds; acquire p50 %lld us "
           "(mean of rounds)\n",
           rounds, failed, sum.grants, sum.refused, sum.lost, lossy,
           (long long)back_max, (long long)sum.waiter_ms,
           (long long)(rounds > failed ? p50_sum / (rounds - failed) : 0));
    return failed > 0;
}
