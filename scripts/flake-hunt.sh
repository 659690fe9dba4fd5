#!/bin/sh
# flake-hunt.sh [-n RUNS] [-l suite|twin|cpu|none] [-c COPIES] [-o DIR] [-s]
#
# Runs the tests as `make check` does (every test under ASan+UBSan, the
# threaded ones again under TSan) RUNS times in a row (default 20), while
# a load runs beside them: "suite" (default), COPIES more copies of the
# same tests in a loop (default 1), as more `make check`s would; "twin",
# the same, but the copies' finished runs count as runs too (each copy is
# the others' load, so RUNS runs take 1 / (COPIES + 1) of the time);
# "cpu", one busy loop per CPU; "none". `-l twin -c 2` is three suites at
# once, each with two copies beside it. Prints each failure as "run N
# [asan|tsan]: TEST (why)" with the failing assertion's line, then which
# tests failed how often, then "N runs, K failing runs"; exits non-zero
# on any failure.
#
# Every run's output is kept in a directory (-o, else a new one under
# TMPDIR) printed at the start and the end: run-NN.asan, run-NN.tsan, and
# load/C/ for copy C's runs, whose failures are listed but, except with
# "twin", not counted (a copy's last run, cut short, never counts). -s
# skips the build and uses the binaries already there.
#
# Environment, as scripts/check.sh: CHECK_BUILD (default build-check),
# TSAN_BUILD (default build-tsan), JOBS (default 2).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
runs=20
load=suite
copies=1
dir=
skip_build=0
jobs=${JOBS:-2}
asan=${CHECK_BUILD:-build-check}
tsan=${TSAN_BUILD:-build-tsan}

usage() {
    echo "usage: scripts/flake-hunt.sh [-n RUNS] [-l suite|twin|cpu|none]" \
        "[-c COPIES] [-o DIR] [-s]" >&2
    exit 2
}

while getopts n:l:c:o:s opt; do
    case $opt in
    n) runs=$OPTARG ;;
    c) copies=$OPTARG ;;
    l) load=$OPTARG ;;
    o) dir=$OPTARG ;;
    s) skip_build=1 ;;
    *) usage ;;
    esac
done
[ $# -ge "$OPTIND" ] && usage
case $runs in '' | *[!0-9]* | 0) usage ;; esac
case $copies in '' | *[!0-9]* | 0) usage ;; esac
case $load in suite | twin | cpu | none) ;; *) usage ;; esac

# The threaded list is check.sh's own, so that both run the same tests.
threaded=$(sed -n '/^threaded="/,/"$/p' scripts/check.sh |
    sed 's/^threaded="//; s/"$//')
[ -n "$threaded" ] ||
    { echo "flake-hunt: no threaded list in check.sh"; exit 2; }

build() {
    cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Debug -DREDISLOCK_WERROR=ON \
        -DREDISLOCK_SANITIZE="$2" >/dev/null &&
        cmake --build "$1" -j"$jobs" >/dev/null
}

if [ "$skip_build" -eq 0 ]; then
    build "$asan" address,undefined ||
        { echo "flake-hunt: ASan build failed"; exit 2; }
    build "$tsan" thread || { echo "flake-hunt: TSan build failed"; exit 2; }
fi
for b in "$asan" "$tsan"; do
    [ -x "$b/tests/rl-tests" ] ||
        { echo "flake-hunt: no $b/tests/rl-tests"; exit 2; }
done

if [ -z "$dir" ]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/flake-hunt.XXXXXX") || exit 2
fi
mkdir -p "$dir/load" || exit 2
# A directory used before: its old logs must not be read as this hunt's.
rm -rf "$dir/failures" "$dir"/run-* "$dir"/load/*
c=1
while [ "$c" -le "$copies" ]; do
    mkdir -p "$dir/load/$c" || exit 2
    c=$((c + 1))
done
case $load in
suite | twin) what="$copies cop$([ "$copies" -eq 1 ] && echo y || echo ies)" ;;
*) what=$load ;;
esac
echo "flake-hunt: $runs runs beside load '$load' ($what); logs in $dir"

# Runs "$@" with its output in $out, in the background and waited for,
# so that a signal to this script is handled at once (stop_all ends it).
cur=
run() {
    "$@" >"$out" 2>&1 &
    cur=$!
    wait "$cur"
    cur=
}

# One run of both lists, as check.sh runs them; $1 names the logs.
suite() {
    out=$1.asan
    run "$asan/tests/rl-tests" -j"$jobs"
    out=$1.tsan
    # shellcheck disable=SC2086  # the globs are the runner's to match
    run "$tsan/tests/rl-tests" -j"$jobs" $threaded
}

# A load copy, in a subshell: whole suites until told to stop, logs in
# $ld. The pid of the rl-tests it runs is kept in a file for stop_all.
load_run() {
    "$@" >"$out" 2>&1 &
    echo $! >"$ld/pid"
    wait $!
}

suite_loop() {
    ld=$1
    i=0
    while [ ! -e "$dir/load/stop" ]; do
        i=$((i + 1))
        out=$ld/$i.asan
        load_run "$asan/tests/rl-tests" -j"$jobs"
        [ -e "$dir/load/stop" ] && break
        out=$ld/$i.tsan
        # shellcheck disable=SC2086
        load_run "$tsan/tests/rl-tests" -j"$jobs" $threaded
    done
}

loadpids=
start_load() {
    case $load in
    suite | twin)
        c=1
        while [ "$c" -le "$copies" ]; do
            suite_loop "$dir/load/$c" &
            loadpids="$loadpids $!"
            c=$((c + 1))
        done
        ;;
    cpu)
        n=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
        while [ "$n" -gt 0 ]; do
            sh -c 'while :; do :; done' &
            loadpids="$loadpids $!"
            n=$((n - 1))
        done
        ;;
    esac
}

# Stops what start_load started, by pid: the loop, then the rl-tests it
# is running (SIGTERM: the runner kills its tests and cleans up); and the
# hunt's own rl-tests, if one is running.
stop_all() {
    touch "$dir/load/stop"
    [ -n "$cur" ] && kill -TERM "$cur" 2>/dev/null
    for p in $loadpids; do
        kill "$p" 2>/dev/null
    done
    for f in "$dir"/load/*/pid; do
        [ -s "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null
    done
    for p in $loadpids; do
        wait "$p" 2>/dev/null
    done
    loadpids=
}
trap 'stop_all; echo "flake-hunt: interrupted; logs in $dir"; exit 130' \
    INT TERM HUP

# "$2: TEST (why)" and the failing line, for each failure in the runner's
# log $1, and "$2: rl-tests (no summary line...)" if the runner did not end.
failures() {
    awk -v tag="$2" '
    function flush() {
        if (name == "")
            return
        if (line == "")
            line = last != "" ? last : "(no output)"
        printf "%s: %s %s\n    %s\n", tag, name, why, substr(line, 1, 400)
        name = ""
    }
    /^FAIL / {
        flush()
        name = $2
        why = substr($0, index($0, "("))
        line = last = ""
        next
    }
    name != "" && /^    / {
        s = substr($0, 5)
        if (line == "" && (s ~ /^[^ ]+:[0-9]+:/ || s ~ /^FAIL: / ||
                           s ~ /Sanitizer|runtime error/))
            line = s
        if (s != "")
            last = s
        next
    }
    { flush() }
    /^[0-9]+ passed, [0-9]+ failed$/ { summary = 1 }
    END {
        flush()
        if (!summary)
            printf "%s: rl-tests (no summary line: it did not finish)\n",
                   tag
    }' "$1"
}

# How many of copy $1's runs have finished: both halves ended with the
# runner's summary line.
copy_done() {
    n=0
    while grep -qs '^[0-9]* passed, [0-9]* failed$' \
        "$dir/load/$1/$((n + 1)).tsan"; do
        n=$((n + 1))
    done
    echo "$n"
}

# The finished runs of all the copies.
load_done() {
    t=0
    c=1
    while [ "$c" -le "$copies" ]; do
        t=$((t + $(copy_done "$c")))
        c=$((c + 1))
    done
    echo "$t"
}

# Runs counted so far: this loop's, and with "twin" the copies'.
counted() {
    if [ "$load" = twin ]; then
        echo $((i - 1 + $(load_done)))
    else
        echo $((i - 1))
    fi
}

start_load
failing=0
i=1
while [ "$(counted)" -lt "$runs" ]; do
    log=$(printf '%s/run-%02d' "$dir" "$i")
    suite "$log"
    f=$(failures "$log.asan" "run $i asan"
        failures "$log.tsan" "run $i tsan")
    if [ -n "$f" ]; then
        failing=$((failing + 1))
        echo "$f"
        echo "$f" >>"$dir/failures"
    else
        echo "run $i: ok"
    fi
    i=$((i + 1))
done
own=$((i - 1))
done_load=$(load_done)
stop_all
trap - INT TERM HUP

# The copies' failures, for the record (a copy's last run, cut short,
# is left out).
c=1
while [ "$c" -le "$copies" ]; do
    i=1
    while [ -e "$dir/load/$c/$i.asan" ]; do
        failures "$dir/load/$c/$i.asan" "load $c.$i asan"
        [ -e "$dir/load/$c/$i.tsan" ] &&
            failures "$dir/load/$c/$i.tsan" "load $c.$i tsan"
        i=$((i + 1))
    done
    c=$((c + 1))
done | grep -v 'no summary line' >"$dir/load/failures"
if [ "$load" = twin ]; then
    # The copies' finished runs count; what a cut-short run saw does not.
    c=1
    while [ "$c" -le "$copies" ]; do
        n=$(copy_done "$c")
        i=1
        while [ "$i" -le "$n" ]; do
            f=$(failures "$dir/load/$c/$i.asan" "load $c.$i asan"
                failures "$dir/load/$c/$i.tsan" "load $c.$i tsan")
            if [ -n "$f" ]; then
                failing=$((failing + 1))
                echo "$f" >>"$dir/failures"
            fi
            i=$((i + 1))
        done
        c=$((c + 1))
    done
    echo "== the copies beside: $done_load finished runs, counted =="
    [ ! -s "$dir/load/failures" ] || cat "$dir/load/failures"
    runs=$((own + done_load))
elif [ -s "$dir/load/failures" ]; then
    echo "== failures of the copies beside (not counted) =="
    cat "$dir/load/failures"
fi

if [ -s "$dir/failures" ]; then
    echo "== failures per test =="
    sed -n 's/^[a-z]* [0-9.]* \([a-z]*\): \([^ ]*\) .*/\2 (\1)/p' \
        "$dir/failures" | sort | uniq -c | sort -rn
fi
echo "logs in $dir"
echo "$runs runs, $failing failing runs"
[ "$failing" -eq 0 ]
