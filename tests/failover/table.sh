#!/bin/sh
# The rows of docs/SAFETY.md's failover table: each Sentinel and Cluster
# fault with one and two replicas, the guard off, wait_replicas 1 and
# every replica.
# ROUNDS rounds each (default 20), a line per round and a total;
# BUILD names the build directory, GUARDS and FAULTS narrow the rows.
set -eu
bin=${BUILD:-build-failover}/tests/rl-failover
rounds=${ROUNDS:-20}
for fault in ${FAULTS:-failover kill cluster-failover cluster-kill}; do
    for replicas in 1 2; do
        for guard in ${GUARDS:-off 1 all}; do
            echo "== --fault $fault --replicas $replicas --guard $guard"
            "$bin" --rounds "$rounds" --fault "$fault" \
                --replicas "$replicas" --guard "$guard"
        done
    done
done
