/*
 * The short runs of the exclusion checker, one test per mode (see
 * excl.h): a few seconds each under the mode's nemesis, then no overlap,
 * no accepted stale write, no fencing token out of order and no belief
 * past the server's lease. EXCL_SEED replays a run's random choices.
 */
#include <stdlib.h>

#include "excl/excl.h"
#include "test.h"

/* The fewest sections a run must see for its verdict to mean anything. */
#define EXCL_MIN_SECTIONS 2

/* One short run of the mode called name; its figures in *out. */
static void run_mode(const char *name, excl_result *out)
{
    const excl_mode *m = excl_mode_find(name);
    long faults = 0;
    int f;

    ASSERT(m != NULL);
    excl_run(m, excl_seed(), m->run_ms, out);
    for (f = 0; f < EXCL_F_COUNT; f++)
        faults += out->faults[f];
    ASSERT_EQ_INT(out->violations, 0);
    ASSERT_EQ_INT(out->crashed, 0);
    ASSERT_GE(out->v.sections, EXCL_MIN_SECTIONS);
    if (m->faults != 0)
        ASSERT_GE(faults, 1);
}

static void short_run(const char *name)
{
    excl_result r;

    run_mode(name, &r);
}

void test_excl_default(void)
{
    short_run("default");
}

void test_excl_meta_holdafter(void)
{
    short_run("meta_holdafter");
}

void test_excl_fair(void)
{
    short_run("fair");
}

void test_excl_fair_retry_short(void)
{
    short_run("fair_retry_short");
}

void test_excl_fair_retry_300(void)
{
    short_run("fair_retry_300");
}

void test_excl_reentrant(void)
{
    short_run("reentrant");
}

void test_excl_reentrant_shared(void)
{
    short_run("reentrant_shared");
}

void test_excl_extend(void)
{
    short_run("extend");
}

void test_excl_adopt(void)
{
    short_run("adopt");
}

void test_excl_retry(void)
{
    short_run("retry");
}

void test_excl_watchdog(void)
{
    short_run("watchdog");
}

void test_excl_proxy(void)
{
    short_run("proxy");
}

void test_excl_sharded(void)
{
    short_run("sharded");
}

void test_excl_cluster(void)
{
    short_run("cluster");
}

void test_excl_redlock(void)
{
    short_run("redlock");
}

void test_excl_semaphore(void)
{
    short_run("semaphore");
}

void test_excl_semaphore_fair(void)
{
    short_run("semaphore_fair");
}

/* Readers and writers of one key: besides the usual verdict, the run must
 * have seen both kinds and shares held at once, or the library took
 * every share as an exclusive lock and the run proved little. */
static void shared_run(const char *mode)
{
    excl_result r;

    run_mode(mode, &r);
    ASSERT_GE(r.v.shares, 1);
    ASSERT_GE(r.v.sections - r.v.shares, 1);
    ASSERT_GE(r.v.share_pairs, 1);
}

void test_excl_shared(void)
{
    shared_run("shared");
}

/* The same with every reader and writer in the fair queue. */
void test_excl_shared_fair(void)
{
    shared_run("shared_fair");
}

/* A writer that does not queue, among fair readers that always hold a
 * share (issue 35's second case): it must get the key within its wait. */
void test_excl_shared_fair_writer(void)
{
    shared_run("shared_fair_writer");
}

/* Sets of two keys among three, sets of one and plain locks: besides the
 * usual verdict, the run must have taken sets of two keys (each belief
 * recorded on both keys) and single keys, or a library that took one key
 * of each set would pass unseen. */
void test_excl_set(void)
{
    excl_result r;

    run_mode("set", &r);
    ASSERT_GE(r.v.sets[2], 1);
    ASSERT_GE(r.v.sections - r.v.sets[2], 1);
}

void test_excl_set_sharded(void)
{
    excl_result r;

    run_mode("set_sharded", &r);
    ASSERT_GE(r.v.sets[2], 1);
    ASSERT_GE(r.v.sections - r.v.sets[2], 1);
}

void test_excl_set_cluster(void)
{
    excl_result r;

    run_mode("set_cluster", &r);
    ASSERT_GE(r.v.sets[2], 1);
    ASSERT_GE(r.v.sections - r.v.sets[2], 1);
}

/* The event-loop API under the same faults (modes.c's loop modes). */
void test_excl_loop(void)
{
    short_run("loop");
}

void test_excl_loop_watchdog(void)
{
    short_run("loop_watchdog");
}

void test_excl_loop_shared(void)
{
    short_run("loop_shared");
}

void test_excl_loop_redlock(void)
{
    short_run("loop_redlock");
}

void test_excl_loop_cluster(void)
{
    short_run("loop_cluster");
}

void test_excl_loop_fair(void)
{
    short_run("loop_fair");
}

void test_excl_foreign(void)
{
    short_run("foreign");
}

void test_excl_foreign_fair(void)
{
    short_run("foreign_fair");
}

void test_excl_retaken(void)
{
    short_run("retaken");
}

void test_excl_loop_foreign(void)
{
    short_run("loop_foreign");
}

void test_excl_shared_prompt(void)
{
    short_run("shared_prompt");
}

void test_excl_loop_shared_prompt(void)
{
    short_run("loop_shared_prompt");
}

void test_excl_set_prompt(void)
{
    short_run("set_prompt");
}

void test_excl_loop_retaken(void)
{
    short_run("loop_retaken");
}

void test_excl_loop_set(void)
{
    short_run("loop_set");
}

void test_excl_loop_set_sharded(void)
{
    short_run("loop_set_sharded");
}

void test_excl_loop_set_cluster(void)
{
    short_run("loop_set_cluster");
}

void test_excl_loop_reentrant_shared(void)
{
    short_run("loop_reentrant_shared");
}

/* redislock run --fair (issue 35's first case): no command killed while
 * the server kept its lease. The run sees no claims (the CLI's beliefs
 * are not recorded), so it asserts acquires and holds instead. */
void test_excl_cli_fair(void)
{
    const excl_mode *m = excl_mode_find("cli_fair");
    excl_result r;

    ASSERT(m != NULL);
    excl_run(m, excl_seed(), m->run_ms, &r);
    ASSERT_EQ_INT(r.violations, 0);
    ASSERT_EQ_INT(r.crashed, 0);
    ASSERT_GE(r.lv.attempts - r.lv.failed, 2);
}

/* A Sentinel master killed with -9 (issue 35's fourth case): waiters
 * wait through the failover and locks are taken again soon after it. */
void test_excl_sentinel_kill_master(void)
{
    short_run("sentinel_kill_master");
}

/* SENTINEL FAILOVER with the old master alive, under renewed locks
 * (issue 35): without the guard a lock the replica missed may be lost
 * (counted, not a violation, while its holder learns it by its next
 * renewal); waiters wait through it and locks are taken again soon. */
void test_excl_sentinel_failover(void)
{
    short_run("sentinel_failover");
}

/* The same with the replica-sync guard: every rule holds as it is. */
void test_excl_sentinel_failover_guard(void)
{
    short_run("sentinel_failover_guard");
}

/* The Sentinel master stopped until its replica is promoted, then back
 * (a partition that heals): as sentinel_failover, without the guard and
 * with it. */
void test_excl_sentinel_partition(void)
{
    short_run("sentinel_partition");
}

void test_excl_sentinel_partition_guard(void)
{
    short_run("sentinel_partition_guard");
}

/* Issue 40: the failover modes with a master and two replicas. */
void test_excl_sentinel_kill_master_2r(void)
{
    short_run("sentinel_kill_master_2r");
}

void test_excl_sentinel_failover_2r(void)
{
    short_run("sentinel_failover_2r");
}

void test_excl_sentinel_failover_2r_guard(void)
{
    short_run("sentinel_failover_2r_guard");
}

void test_excl_sentinel_partition_2r(void)
{
    short_run("sentinel_partition_2r");
}

void test_excl_sentinel_partition_2r_guard(void)
{
    short_run("sentinel_partition_2r_guard");
}

/* A cluster master killed with -9, and a CLUSTER FAILOVER to its
 * replica, under renewed locks and long waits (issue 35). */
void test_excl_cluster_kill_master(void)
{
    short_run("cluster_kill_master");
}

void test_excl_cluster_failover(void)
{
    short_run("cluster_failover");
}

/* Leader election: campaigns, proclaims and resignations, blocking and on
 * the loop; one leader believing at a time, and every candidate that
 * waits while nobody leads gets its turn (the liveness verdict). */
void test_excl_elect(void)
{
    short_run("elect");
}

void test_excl_loop_elect(void)
{
    short_run("loop_elect");
}
