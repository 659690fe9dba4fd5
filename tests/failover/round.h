/*
 * One round of a failover measurement: a client takes a fresh key every
 * FO_STEP_MS (TTL 60 s, no wait) through a Sentinel failover started at
 * FO_FAULT_MS (or a Cluster one), a waiter tries a key held across the fault,
 * and once the failover has settled a second, plain client tries every key the
 * first was granted: each it gets is a lock lost (the first client never gave
 * it back and still believes it holds it). Shared by the failover table
 * program (rl-failover, make failover-table) and the regression test in
 * test_replicas.c.
 */
#ifndef FO_ROUND_H
#define FO_ROUND_H

#include <stdint.h>

#include <redislock.h>

#define FO_STEP_MS 20
#define FO_FAULT_MS 1000
#define FO_AFTER_MS 4000

typedef enum fo_fault {
    FO_SENTINEL_FAILOVER, /* SENTINEL FAILOVER: the old master lives on */
    FO_SENTINEL_KILL,     /* kill -9 of the master */
    /* A cluster of three masters, each with the replicas: CLUSTER
     * FAILOVER on a replica of the master of the first key, or kill -9
     * of that master. */
    FO_CLUSTER_FAILOVER,
    FO_CLUSTER_KILL
} fo_fault;

typedef struct fo_opts {
    fo_fault fault;
    int replicas; /* 1 or 2; with 2, replica-priority 10 and 100 */
    int guard;    /* wait_replicas: 0 (off), N, REDISLOCK_REPLICAS_ALL */
    /* How long granting goes on after the fault; 0: FO_AFTER_MS. A
     * sentinel may leave the old master up as a master for up to 10 s
     * (its next INFO round) after a planned failover. */
    int64_t after_ms;
} fo_opts;

typedef struct fo_result {
    int grants;  /* acquisitions that succeeded */
    int refused; /* acquisitions the strict guard refused */
    int lost;    /* granted, never given back, then got by another */
    /* ms from the fault to the first grant that was not lost; -1. */
    int64_t back_ms;
    /* ms into the run of the first and last grant lost; -1. */
    int64_t lost_first_ms, lost_last_ms;
    /* Acquire latency before the fault (one attempt every FO_STEP_MS):
     * median and most, in µs. */
    int64_t p50_us, max_us;
    /* The waiter: ms after the fault it returned, and with what. */
    int64_t waiter_ms;
    redislock_err waiter_err;
} fo_result;

/* Starts the servers, runs the round, stops them. Fails the calling test
 * (or the program's round) when the setup does. */
void fo_round(const fo_opts *o, fo_result *r);

/* One line of r, for logs and the table. */
void fo_format(const fo_opts *o, const fo_result *r, char *buf, size_t size);

#endif
