#!/usr/bin/env bash
# run_fuzz.sh BUILD_DIR SECONDS [TARGET...] - runs each libFuzzer target of
# BUILD_DIR (configured with CC=clang -DDDPTOP_FUZZ=ON, built with
# --target fuzz) for SECONDS over a copy of its seed corpus
# (tests/fuzz/corpus/TARGET/; the copy grows, the seeds do not), and prints
# executions and coverage per target. Exits non-zero when any target finds
# a crash, a sanitizer report, a leak, an input slower than 5 s or one that
# needs over 2 GB; the input that did it is kept and its path printed.
# FUZZ_JOBS targets run at once (default 1); FUZZ_KEEP=DIR keeps the work
# folders (grown corpora, logs) in DIR, as a failed run keeps them anyway.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run_fuzz.sh BUILD_DIR SECONDS [TARGET...]}
secs=${2:?usage: run_fuzz.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_idx fuzz_cifar fuzz_trace fuzz_trace_gz fuzz_theme fuzz_cost_model fuzz_config
    fuzz_outpaths fuzz_follow fuzz_relay)
jobs=${FUZZ_JOBS:-1}
work=${FUZZ_KEEP:-$(mktemp -d /tmp/ddptop_fuzz.XXXXXX)}
mkdir -p "$work"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$here/../lsan.supp

# run_one TARGET: fuzz it, then write its one summary line to WORK/TARGET.sum
run_one() {
    local t=$1 bin="$build/tests/fuzz/$1" dir="$work/$1"
    mkdir -p "$dir/corpus"
    if [ ! -x "$bin" ]; then
        echo "$t: not built ($bin)" >"$dir.sum"
        echo 1 >"$dir.rc"
        return
    fi
    cp "$here/corpus/$t/"* "$dir/corpus/"
    "$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/" "$dir/corpus" >"$dir/log" 2>&1
    local rc=$?
    local execs cov ft files
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
    files=$(find "$dir/corpus" -type f | wc -l)
    local found
    found=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' -o -name 'slow-unit-*' \) | head -1)
    printf '%-16s %12s execs  cov %6s  ft %6s  corpus %5s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
        "$files" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc) ${found:-}")" >"$dir.sum"
    echo "$rc" >"$dir.rc"
}

running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

status=0
echo "fuzzing, $secs s per target:"
for t in "${targets[@]}"; do
    cat "$work/$t.sum"
    if [ "$(cat "$work/$t.rc")" != 0 ]; then
        status=1
        [ -f "$work/$t/log" ] && sed -n '/ERROR\|SUMMARY\|==[0-9]*==\|runtime error\|Test unit written/p' \
            "$work/$t/log" | head -20 | sed 's/^/    /'
    fi
done
if [ "$status" -ne 0 ]; then
    echo "inputs and logs kept in $work"
elif [ -z "${FUZZ_KEEP:-}" ]; then
    rm -rf "$work"
fi
exit "$status"
