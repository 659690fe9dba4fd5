#!/bin/sh
# The programs of examples/ run against the private server and do what
# their comments say: reentrant, watchdog (its job outlives the TTL; a
# loss, simulated by the example or done here with redis-cli, stops it),
# cron.sh (two at once: one runs the job), points_demo (exact with the
# lock), redlock, guards (C++: each guard's scope), gifts_server (an
# HTTP service on one event loop: exact with the lock, oversold without)
# and loop_libevent, loop_libuv, loop_libev (a lock on each adapter's
# loop, which ends by itself once the lock is given back).
# The binaries are in <build>/examples, next to <build>/cli.
set -eu
. "$(dirname "$0")/lib.inc"

: "${SRCDIR:?}"
ex=$(cd "$(dirname "$RL")/.." && pwd)/examples
for b in reentrant watchdog points_demo redlock guards gifts_server \
    loop_libevent loop_libuv loop_libev; do
    [ -x "$ex/$b" ] || fail "$ex/$b is not built" \
        "(configure with -DREDISLOCK_BUILD_EXAMPLES=ON)"
done

# out_has REGEX: a line of stdout of the last run_rl matches.
out_has() {
    grep -Eq "$1" "$TEST_TMPDIR/out" ||
        fail "stdout does not match '$1': $(cat "$TEST_TMPDIR/out")"
}

# --- reentrant: nested holds, then a free lock.
expect 0 "$ex/reentrant" -k ex:account
out_is "transfer: acquired, holds 1 (in Redis: 1)
  debit: acquired, holds 2 (in Redis: 2)
  debit: released, holds 1 (in Redis: 1)
  credit: acquired, holds 2 (in Redis: 2)
    another owner tries: REDISLOCK_EHELD
  credit: released, holds 1 (in Redis: 1)
transfer: released, holds 0 (in Redis: 0)
the lock is free again"
key_gone ex:account || fail "reentrant left ex:account behind"
# Held by someone else: it waits its 2 s, then fails cleanly.
rcli set ex:taken someone px 20000 >/dev/null
expect 1 "$ex/reentrant" -k ex:taken
err_has '^reentrant: transfer: lock is held by another owner'
[ "$(rcli get ex:taken)" = someone ] || fail "reentrant touched ex:taken"

# --- watchdog: 6 steps of 300 ms under a 1000 ms lease.
bg wd "$ex/watchdog" -k ex:wd -t 1000 -n 6 -s 300
# Past one TTL the key must still be there: the watchdog renewed it.
sleep 1.3
key_exists ex:wd || fail "the lease ran out under the job"
pttl=$(rcli pttl ex:wd)
between 1 1000 "$pttl" "PTTL of ex:wd at 1.3 s"
bg_wait wd 15
[ "$rc" = 0 ] || fail "watchdog exited $rc: $(cat "$TEST_TMPDIR/wd.out" \
    "$TEST_TMPDIR/wd.err")"
grep -q '^job done: 1800 ms of work under a 1000 ms lease$' \
    "$TEST_TMPDIR/wd.out" || fail "no 'job done': $(cat "$TEST_TMPDIR/wd.out")"
grep -q '^release: REDISLOCK_OK$' "$TEST_TMPDIR/wd.out" ||
    fail "no clean release: $(cat "$TEST_TMPDIR/wd.out")"
[ "$(grep -c '^step [0-9]/6 done$' "$TEST_TMPDIR/wd.out")" = 6 ] ||
    fail "not 6 steps: $(cat "$TEST_TMPDIR/wd.out")"
if grep -q on_lost "$TEST_TMPDIR/wd.out"; then
    fail "on_lost ran without a loss: $(cat "$TEST_TMPDIR/wd.out")"
fi
key_gone ex:wd || fail "watchdog left ex:wd behind"

# -x 2: the example overwrites its own key after step 2; the lost fd, the
# check and the callback all report REDISLOCK_ELOST, and exit status 3.
expect 3 "$ex/watchdog" -k ex:wdx -t 600 -n 20 -s 200 -x 2
out_has '^intruder: overwrote ex:wdx from another connection$'
out_has '^lost fd readable during step [0-9]+/20: stopping$'
out_has '^check: REDISLOCK_ELOST$'
out_has '^release: REDISLOCK_ELOST$'
out_has '^on_lost was called: REDISLOCK_ELOST$'
if grep -q '^step 1[0-9]/20 done$' "$TEST_TMPDIR/out"; then
    fail "the job went on after the loss: $(cat "$TEST_TMPDIR/out")"
fi
[ "$(rcli get ex:wdx)" = intruder ] ||
    fail "the release removed the intruder's key"

# The loss done from outside, with redis-cli: DEL, so REDISLOCK_EEXPIRED.
bg wdd "$ex/watchdog" -k ex:wdd -t 600 -n 50 -s 200
wait_until 10 key_exists ex:wdd || fail "watchdog did not take ex:wdd"
sleep 0.3
rcli del ex:wdd >/dev/null
bg_wait wdd 10
[ "$rc" = 3 ] || fail "watchdog after DEL exited $rc, want 3: $(cat \
    "$TEST_TMPDIR/wdd.out" "$TEST_TMPDIR/wdd.err")"
for line in '^lost fd readable during step [0-9]+/50: stopping$' \
    '^check: REDISLOCK_EEXPIRED$' '^release: REDISLOCK_EEXPIRED$' \
    '^on_lost was called: REDISLOCK_EEXPIRED$'; do
    grep -Eq "$line" "$TEST_TMPDIR/wdd.out" ||
        fail "no '$line': $(cat "$TEST_TMPDIR/wdd.out")"
done

# Bad usage: status 2.
expect 2 "$ex/watchdog" -t 0

# --- cron.sh: two instances at once, the job runs once.
cron=$SRCDIR/examples/cron.sh
REDISLOCK=$RL
export REDISLOCK
# shellcheck disable=SC2016 # $1 is for the job's shell
job='echo ran >>"$1"; sleep 1'
ran=$TEST_TMPDIR/ran
bg cron1 env CRON_LOCK_VERBOSE=1 sh "$cron" report sh -c "$job" sh "$ran"
bg cron2 env CRON_LOCK_VERBOSE=1 sh "$cron" report sh -c "$job" sh "$ran"
bg_wait cron1 15
rc1=$rc
bg_wait cron2 15
if [ "$rc1" != 0 ] || [ "$rc" != 0 ]; then
    fail "cron.sh exited $rc1 and $rc"
fi
[ "$(wc -l <"$ran")" -eq 1 ] || fail "the job ran $(wc -l <"$ran") times"
skips=$(cat "$TEST_TMPDIR/cron1.err" "$TEST_TMPDIR/cron2.err" |
    grep -c '^cron.sh: report is running elsewhere; skipped$' || true)
[ "$skips" = 1 ] || fail "want one 'skipped' message, got $skips:" \
    "$(cat "$TEST_TMPDIR/cron1.err" "$TEST_TMPDIR/cron2.err")"
key_gone cron:report || fail "cron.sh left cron:report behind"

# The job's status is passed through; a skip is silent by default.
expect 7 sh "$cron" fails sh -c 'exit 7'
expect 0 "$RL" acquire -t 20s cron:busy
expect 0 sh "$cron" busy touch "$TEST_TMPDIR/busy-ran"
[ ! -e "$TEST_TMPDIR/busy-ran" ] || fail "cron.sh ran a held job"
[ ! -s "$TEST_TMPDIR/err" ] || fail "a quiet skip printed: $(cat \
    "$TEST_TMPDIR/err")"
# COMMAND's stderr comes through at once; redislock's own errors too.
expect 0 sh "$cron" talks sh -c 'echo oops >&2'
[ "$(cat "$TEST_TMPDIR/err")" = oops ] ||
    fail "the job's stderr is '$(cat "$TEST_TMPDIR/err")', want 'oops'"
expect 69 env REDISLOCK_URL="unix://$TEST_TMPDIR/none.sock" sh "$cron" \
    nowhere true
err_has '^redislock: '
expect 64 sh "$cron" onlyname

# --- points_demo: the locked round is exact.
expect 0 "$ex/points_demo"
out_has '^redislock +\|.*\| exact$'

# --- guards (C++, redislock.hpp): each guard's scope, then nothing held.
expect 0 "$ex/guards" -k ex:guards
out_is "unique: held with a fencing token; another: held
unique: released, another: got it
shared: two readers at once
permits: two of 2; a third: none left
set: both keys held
exception: the job failed; lock given back
another limit: REDISLOCK_EINVAL"
for k in ex:guards ex:guards:a ex:guards:b; do
    key_gone "$k" || fail "guards left $k behind"
done

# --- redlock: a job under a quorum of three servers.
more_servers 2
# shellcheck disable=SC2154  # set by more_servers
set -- -u "$REDISLOCK_URL" -u "unix://$xdir/x1.sock" -u "unix://$xdir/x2.sock"
expect 0 "$ex/redlock" "$@" -k ex:rl
out_has '^acquire ex:rl: REDISLOCK_OK$'
out_has 'x2.sock: REDISLOCK_OK$'
out_has '^step 3, [0-9]+ ms of validity left$'
out_has '^released$'
key_gone ex:rl || fail "redlock left ex:rl behind"
# Held elsewhere on two of three: another owner holds it (exit 1).
"$REDIS_CLI" -s "$xdir/x1.sock" set ex:rl other px 60000 >/dev/null
"$REDIS_CLI" -s "$xdir/x2.sock" set ex:rl other px 60000 >/dev/null
expect 1 "$ex/redlock" "$@" -k ex:rl
out_has 'x1.sock: REDISLOCK_EHELD$'
key_gone ex:rl || fail "a refused round left ex:rl on the first server"
# Two servers down: no quorum (exit 69).
# shellcheck disable=SC2154
kill -9 "$xpid1" "$xpid2"
expect 69 "$ex/redlock" "$@" -k ex:rl
err_has 'servers answered'

# --- gifts_server: one thread on one libevent loop, the lock taken on the
# loop, serves 64 concurrent HTTP clients: with the lock exactly the
# stock of 10 is redeemed; without it (-n) the same clients oversell.
# gifts_round FLAGS...: one round; the answers' counts in $gifts.
gifts_round() {
    rcli del gifts:stock gifts:redeemed >/dev/null
    # shellcheck disable=SC2046  # one argument per word
    rcli mset gifts:stock 10 $(seq -f 'gifts:points:%g 100' 0 63) >/dev/null
    bg gs "$ex/gifts_server" -u "$REDISLOCK_URL" -p 0 "$@"
    wait_until 10 grep -q '^listening on' "$TEST_TMPDIR/gs.out" ||
        fail "gifts_server did not listen: $(cat "$TEST_TMPDIR/gs.err")"
    port=$(sed -n 's/^listening on \([0-9]*\).*/\1/p' "$TEST_TMPDIR/gs.out")
    gifts=$("$PYTHON" - "$port" 64 <<'PY'
import collections, http.client, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
codes, mu, go = collections.Counter(), threading.Lock(), threading.Barrier(n)
def one(i):
    go.wait()
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    c.request('GET', '/redeem?user=%d' % i)
    r = c.getresponse()
    r.read()
    with mu:
        codes[r.status] += 1
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(' '.join('%d=%d' % kv for kv in sorted(codes.items())))
PY
    ) || fail "the HTTP clients failed"
    kill "$bg_pid"
    bg_wait gs 10
}
gifts_round
[ "$gifts" = "200=10 409=54" ] ||
    fail "with the lock, 64 clients got '$gifts', not 10 gifts and 54 refusals"
[ "$(rcli get gifts:stock)" = 0 ] && [ "$(rcli get gifts:redeemed)" = 10 ] ||
    fail "with the lock: stock $(rcli get gifts:stock), redeemed" \
        "$(rcli get gifts:redeemed)"
key_gone gifts:lock || fail "gifts_server left its lock behind"
gifts_round -n
redeemed=$(rcli get gifts:redeemed)
[ "$redeemed" -gt 10 ] ||
    fail "without the lock 64 clients did not oversell: '$gifts'," \
        "$redeemed redeemed"
# --- loop_*: the job on each adapter's loop; the loop ends by itself
# (timeout: one that does not end fails here). Held for 700 ms by
# another owner first: the waiter keeps the loop going till it has it.
for x in libevent libuv libev; do
    expect 0 timeout 20 "$ex/loop_$x" "$REDISLOCK_URL" "ex:loop:$x"
    out_has '^acquired, fencing token [0-9]+$'
    out_has '^released: REDISLOCK_OK$'
    out_has '^the loop ended$'
    err_empty
    key_gone "ex:loop:$x" || fail "loop_$x left ex:loop:$x behind"
    rcli set "ex:loop:$x" someone px 700 >/dev/null
    expect 0 timeout 20 "$ex/loop_$x" "$REDISLOCK_URL" "ex:loop:$x"
    out_has '^released: REDISLOCK_OK$'
    out_has '^the loop ended$'
done
exit 0
