#!/bin/sh
# An option that takes a value, given twice, is a usage error naming it
# (--limit 3 --limit 4 took 4 silently, though every user of a semaphore
# must give one N): even with the same value, and whether the first was
# before the command (the global ones) or after it. -u and -k add one URL
# or key each time; options without a value may repeat (of -s and -x the
# last wins, as in flock(1)); -n and -w both set the wait and exclude
# each other.
set -eu
. "$(dirname "$0")/lib.inc"

U=$REDISLOCK_URL

# twice WHAT ARG...: redislock ARG... exits 64 with one line naming WHAT
# given twice, before anything touches the server.
twice() {
    what=$1
    shift
    expect 64 "$RL" "$@"
    one_error_line
    err_has ": $what given twice"
}

twice --limit acquire --limit 3 --limit 4 rp
twice --limit acquire --limit 3 --limit=3 rp
twice -t/--ttl acquire -t 5s --ttl 6s rp
twice -t/--ttl extend -t 5s -t 5s rp tok
twice -w/--wait run -w 1 --timeout 2 rp -- true
twice -E/--conflict-exit-code run -E 3 -E 4 rp -- true
twice --owner acquire --owner a --owner b rp
twice --metadata acquire --metadata a --metadata b rp
twice --retry acquire --retry linear --retry constant rp
twice --retry-delay acquire --retry-delay 1s --retry-delay 2s rp
twice --retry-max-delay acquire --retry-max-delay 1s --retry-max-delay 2s rp
twice --max-attempts acquire --max-attempts 1 --max-attempts 2 rp
twice --hold-after release --hold-after 1s --hold-after 2s rp tok
twice -c/--command run -c true -c false rp
twice --wait-replicas acquire --wait-replicas 1 --wait-replicas 2 rp
twice --wait-replicas-timeout acquire --wait-replicas 1 \
    --wait-replicas-timeout 1s --wait-replicas-timeout 2s rp
twice --wait-aof-replicas acquire --wait-aof-replicas 1 --wait-aof-replicas 1 rp
twice --prefix --prefix a --prefix b status rp
twice --sentinel --sentinel a --sentinel b -u "$U" status rp
twice --password-file --password-file /dev/null --password-file /dev/null \
    status rp
twice --connect-timeout --connect-timeout 1s --connect-timeout 2s status rp
twice --command-timeout --command-timeout 1s status --command-timeout 2s rp
twice --connect-timeout status --connect-timeout 1s --connect-timeout=1s rp

# -n and -w both set the wait.
for args in "-n -w 1" "-w 1 -n" "--no-wait --timeout 1"; do
    # shellcheck disable=SC2086 # split on purpose
    expect 64 "$RL" acquire $args rp
    one_error_line
    err_has ": -n/--nonblock and -w/--wait both set the wait"
done
key_gone rp || fail "a usage error took the lock"

# Lists and options without a value repeat.
expect 0 "$RL" acquire -n -n --fail-fast --fail-fast --verbose --verbose \
    -k rp2 -k rp3 rp
tok=$(cat "$TEST_TMPDIR/out")
expect 0 "$RL" release -k rp2 -k rp3 rp "$tok"
expect 0 "$RL" status --json --json rp
expect 0 "$RL" acquire -s -x -s rp
expect 0 "$RL" status rp
grep -q 'readers=1' "$TEST_TMPDIR/out" || fail "-s -x -s: $(cat "$TEST_TMPDIR/out")"
exit 0
