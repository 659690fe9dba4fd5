#!/bin/sh
# cron.sh NAME COMMAND [ARG...]: runs COMMAND as the only instance of the job
# NAME across every host that shares the Redis server, for crontab lines
# installed on several machines (or a job that may outlast its interval):
#
#   */5 * * * * REDISLOCK_URL=redis://locks.internal cron.sh report /opt/report
#
# The first instance to take the lock "cron:NAME" runs COMMAND. One that
# finds it held skips this round: it exits 0 and prints nothing (unless
# CRON_LOCK_VERBOSE=1), so that cron sends no mail for it. Otherwise the
# exit status is COMMAND's, or redislock's own (see redislock(1)).
#
# `redislock run` renews the lease every TTL/3 while COMMAND runs, so the
# TTL need not cover the job: it bounds how long the lock outlives a host
# that dies mid-job. If the lock is lost anyway, COMMAND gets SIGTERM.
#
# Environment:
#   REDISLOCK          the CLI (default: redislock on PATH)
#   REDISLOCK_URL      the Redis server, read by the CLI
#   CRON_LOCK_TTL      lease length (default 60s)
#   CRON_LOCK_HOLD     keep the lock this long after COMMAND ends (default:
#                      not at all), so that a host whose cron fires a few
#                      seconds late skips the round too; keep it shorter
#                      than the job's interval
#   CRON_LOCK_VERBOSE  1: report skipped rounds on stderr
set -eu

if [ "$#" -lt 2 ]; then
    echo "usage: cron.sh NAME COMMAND [ARG...]" >&2
    exit 64
fi
name=$1
shift
rl=${REDISLOCK:-redislock}
# The status that means "held elsewhere". A job that itself exits with it
# is taken for a skipped round: pick one that the job never returns.
skipped=${CRON_LOCK_SKIP_STATUS:-111}

opts="-n -E $skipped -t ${CRON_LOCK_TTL:-60s}"
if [ -n "${CRON_LOCK_HOLD:-}" ]; then
    opts="$opts --hold-after $CRON_LOCK_HOLD"
fi

# redislock reports a held lock on stderr, which cron would mail on every
# skipped round. So its own messages go to a file, shown below unless the
# round was skipped, while COMMAND gets our stderr back from descriptor 3.
log=$(mktemp "${TMPDIR:-/tmp}/cron.sh.XXXXXX")
trap 'rm -f "$log"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
rc=0
# shellcheck disable=SC2086 # opts holds several options, none with spaces
"$rl" run $opts "cron:$name" -- sh -c 'exec "$@" 2>&3 3>&-' sh "$@" \
    3>&2 2>"$log" || rc=$?

if [ "$rc" -eq "$skipped" ]; then
    if [ "${CRON_LOCK_VERBOSE:-0}" = 1 ]; then
        echo "cron.sh: $name is running elsewhere; skipped" >&2
    fi
    exit 0
fi
cat "$log" >&2
exit "$rc"
