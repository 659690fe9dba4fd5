#!/bin/sh
# The rows of docs/SAFETY.md's failover table: each Sentinel fault with
# one and two replicas, the guard off, wait_replicas 1 and every replica.
# ROUNDS rounds each (default 20); BUILD names the build directory.
set -eu
bin=${BUILD:-build-failover}/tests/rl-failover
rounds=${ROUNDS:-20}
for fault in failover kill; do
    for replicas in 1 2; do
        for guard in ${GUARDS:-off 1 all}; do
            echo "== --fault $fault --replicas $replicas --guard $guard"
            "$bin" --rounds "$rounds" --fault "$fault" \
                --replicas "$replicas" --guard "$guard" | tail -1
        done
    done
done
