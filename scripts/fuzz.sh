#!/bin/sh
# fuzz.sh [--smoke | --runs N] [TARGET...]
#
# Builds the libFuzzer targets in fuzz/ (clang, ASan, UBSan) and runs each
# (url, duration, reply, aconn; all by default) on its own corpus, seeded from
# fuzz/seeds/TARGET, with fuzz/TARGET.dict:
#   --runs N   N executions per target (make fuzz: 1000000), the default
#   --smoke    about 10 s per target, for CI
# Prints one line per target: executions, exec/s, coverage, crash. A
# crash's input is kept as BUILD/artifacts/TARGET/crash-*; reproduce it
# with BUILD/fuzz_TARGET FILE. Exits 1 if any target crashed.
#
# Environment: FUZZ_BUILD (default build-fuzz), RL_FUZZ_SKIP (see
# fuzz/fuzz_reply.c).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$top/build-fuzz}
case $build in /*) ;; *) build=$top/$build ;; esac
limit="-runs=1000000"
targets=""

while [ $# -gt 0 ]; do
    case $1 in
    --smoke) limit="-max_total_time=10" ;;
    --runs) shift; limit="-runs=${1:?--runs needs a number}" ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets="$targets $1" ;;
    esac
    shift
done
[ -n "$targets" ] || targets="url duration reply aconn"

if ! make -s -C "$top/fuzz" BUILD="$build" >"$build.make.log" 2>&1; then
    cat "$build.make.log" >&2
    echo "fuzz.sh: build failed (needs clang and libFuzzer: Debian's" \
        "clang and libclang-rt-dev)" >&2
    exit 1
fi
rm -f "$build.make.log"

# A field of libFuzzer's final stats.
stat() {
    sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}

# Runs one target; prints its line; returns 1 on a crash.
run() {
    t=$1
    corpus=$build/corpus/$t
    art=$build/artifacts/$t
    log=$build/fuzz_$t.log
    mkdir -p "$corpus" "$art"
    # Leaks are checked per input (-detect_leaks); a smaller quarantine
    # keeps a million runs within the RSS limit.
    ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64} \
        "$build/fuzz_$t" "$limit" -print_final_stats=1 \
        -dict="$top/fuzz/$t.dict" -artifact_prefix="$art/" \
        "$corpus" "$top/fuzz/seeds/$t" >"$log" 2>&1
    st=$?
    runs=$(stat number_of_executed_units "$log")
    # A crash ends the run before the final stats: the last status line.
    [ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    speed=$(stat average_exec_per_sec "$log")
    cov=$(sed -n 's/^#[0-9]*.*cov: \([0-9]*\) .*/\1/p' "$log" | tail -n 1)
    if [ "$st" -eq 0 ]; then
        printf '%-9s %10s execs %7s exec/s  cov %5s  crashes 0\n' \
            "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}"
        return 0
    fi
    crash=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -n 1)
    why=$(grep -m 1 -E '^SUMMARY:|runtime error|ERROR: libFuzzer' "$log")
    printf '%-9s %10s execs %7s exec/s  cov %5s  crashes 1: %s\n' \
        "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${why:-exit $st}"
    printf '          input: %s (log: %s)\n' "${crash:-?}" "$log"
    return 1
}

failed=0
for t in $targets; do
    [ -x "$build/fuzz_$t" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
    run "$t" || failed=$((failed + 1))
done
[ "$failed" -eq 0 ]
