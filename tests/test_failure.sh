#!/usr/bin/env bash
# test_failure.sh - nothing measured is lost when a run ends badly:
#  - a rank that fails (training diverges) stops every rank, the report is
#    still printed with state "failed" and the rank's error, the trace file is
#    valid JSON, and the exit status is 1;
#  - Ctrl-C (SIGINT) half way prints the report of the steps done, state
#    "stopped", exit status 130; SIGHUP likewise (129), with a valid trace;
#  - a second Ctrl-C within 2 s exits at once, the trace still valid JSON;
#  - Ctrl-C during --bench-comm, its stdout piped or with --output, prints
#    the sizes measured so far (to the pipe, to the file) and exits 130;
#  - an --output file that opens but cannot take the report (a full disk:
#    /dev/full) gets one line with the reason, and the whole report goes to
#    stdout instead, exit 1; for a training run and for a replay.
set -u
BIN=${1:?usage: test_failure.sh path/to/ddptop}
. "$(dirname "$0")/checks.sh"
# wait_ranks PID: into training: the rank threads exist (named "rank N"),
# and some steps ran. A signal before the handler is installed would be
# ignored (a background job's SIGINT starts ignored), and one while the
# data set loads stops the run before any step.
wait_ranks() {
    for _ in $(seq 1 600); do
        grep -qx 'rank 1' /proc/"$1"/task/*/comm 2>/dev/null && break
        sleep 0.1
    done
    sleep 1
}

"$BIN" --batch --quiet --dataset synthetic --model mlp --ranks 2 --lr 100 --lr-decay none --steps 300 \
    --trace "$tmp/t.json" --format json >"$tmp/out.json" 2>"$tmp/err"
st=$?
check "a diverging rank exits 1 (got $st)" test "$st" -eq 1
check "the error names the rank" grep -q "rank [01] failed: training diverged" "$tmp/err"
check "report: state failed, error, steps before the failure" \
    json "$tmp/out.json" "r=d['runs'][0]; assert r['state']=='failed' and 'diverged' in r['error'] and 0 < r['steps'] < 300, r"
check "the trace of the failed run is valid JSON with its events" \
    json "$tmp/t.json" "assert len(d['traceEvents']) > 10"

"$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --epochs 1000 --format json \
    >"$tmp/int.json" 2>"$tmp/int.err" &
pid=$!
wait_ranks $pid
kill -INT $pid
wait $pid
st=$?
check "SIGINT exits 130 (got $st)" test "$st" -eq 130
check "SIGINT: the report covers the steps done, state stopped" \
    json "$tmp/int.json" "r=d['runs'][0]; assert r['state']=='stopped' and r['steps'] > 0 and r['ms_per_step'] > 0, r"

# SIGHUP (an SSH session that drops) is handled as SIGTERM: report, valid trace
"$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --epochs 1000 --trace "$tmp/h.json" \
    --format json >"$tmp/hup.json" 2>"$tmp/hup.err" &
pid=$!
wait_ranks $pid
kill -HUP $pid
wait $pid
st=$?
check "SIGHUP exits 129 (got $st)" test "$st" -eq 129
check "SIGHUP: the report covers the steps done, state stopped" \
    json "$tmp/hup.json" "r=d['runs'][0]; assert r['state']=='stopped' and r['steps'] > 0, r"
check "SIGHUP: the trace is valid JSON" json "$tmp/h.json" "assert len(d['traceEvents']) > 10"

# A second Ctrl-C within 2 s forces the exit, even while a rank is deep in a
# step (rank 1 computes 1000x slower: its steps take seconds), with the
# trace closed as valid JSON. The ranks are left running on purpose, so a
# TSan build is told not to count them as leaked threads (only here).
TSAN_OPTIONS="${TSAN_OPTIONS:-} report_thread_leaks=0" \
"$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --epochs 1000 --slow-rank 1:1000 \
    --trace "$tmp/f.json" --format json >"$tmp/force.json" 2>"$tmp/force.err" &
pid=$!
wait_ranks $pid
kill -INT $pid
sleep 0.3
t0=$(date +%s%N)
kill -INT $pid
wait $pid
st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "a second SIGINT exits 130 (got $st)" test "$st" -eq 130
check "a second SIGINT exits at once (took $ms ms)" test "$ms" -lt 2000
check "a second SIGINT says so" grep -q "interrupted twice" "$tmp/force.err"
check "a forced exit leaves a valid trace" json "$tmp/f.json" "assert 'traceEvents' in d"

# --bench-comm interrupted (the sizes up to 64M at 3000 iterations take far
# longer than the wait): the rows so far reach a pipe and --output. When
# the first size is done depends on the machine (a sanitizer build sets up
# 64M buffers slowly), so the interrupt is tried at 3, 6, 12, 24 and 48 s
# until ddptop says at least one size was measured (the --output run starts
# from the wait the piped one needed); the rows it then printed are
# counted against what it says it reported, and must be >= 1.
bench_rows() { grep -cE '^ +[0-9]+[KMG]? +[0-9]+ ' "$1"; }
bench_said() { sed -n 's/.*interrupted; reported the \([0-9]*\) sizes measured.*/\1/p' "$1"; }
# bench_interrupted FROM [ARGS...]: --bench-comm ARGS, stdout piped, sent
# SIGINT after FROM s, then after each longer wait of the list until it
# says a size was measured: its exit status in bc.rc, stderr in bc.err,
# stdout in bc.out, the wait in bench_wait
bench_interrupted() {
    local from=$1
    shift
    for bench_wait in $(printf '%s\n' 3 6 12 24 48 | awk -v from="$from" '$1 >= from'); do
        (
            HOME="$tmp" "$BIN" --bench-comm --ranks 2 --max-bytes 64M --iters 3000 "$@" 2>"$tmp/bc.err" |
                cat >"$tmp/bc.out"
            echo "${PIPESTATUS[0]}" >"$tmp/bc.rc"
        ) &
        local sub=$!
        sleep "$bench_wait"
        pkill -INT -P $sub -x ddptop # (this run's, not another suite's)
        wait $sub
        [ "$(bench_said "$tmp/bc.err")" = 0 ] || break
    done
}
bench_interrupted 3
said=$(bench_said "$tmp/bc.err")
check "--bench-comm piped, SIGINT: exit 130 (got $(cat "$tmp/bc.rc"))" test "$(cat "$tmp/bc.rc")" -eq 130
check "--bench-comm piped, SIGINT: it says so" test -n "$said"
check "--bench-comm piped, SIGINT after ${bench_wait} s: sizes were measured (${said:-?})" test "${said:-0}" -ge 1
check "--bench-comm piped, SIGINT: the ${said:-?} sizes measured reach the pipe ($(bench_rows "$tmp/bc.out") rows)" \
    test "$(bench_rows "$tmp/bc.out")" = "$said"
bench_interrupted "$bench_wait" --output "$tmp/bc.txt"
said=$(bench_said "$tmp/bc.err")
st=$(cat "$tmp/bc.rc")
check "--bench-comm --output, SIGINT: exit 130 (got $st)" test "$st" -eq 130
check "--bench-comm --output, SIGINT after ${bench_wait} s: sizes were measured (${said:-?})" test "${said:-0}" -ge 1
check "--bench-comm --output, SIGINT: the file holds the ${said:-?} sizes measured ($(bench_rows "$tmp/bc.txt") rows)" \
    test "$(bench_rows "$tmp/bc.txt")" = "$said"

# a full disk at the end: the report is not lost
for mode in train replay; do
    if [ $mode = train ]; then
        args=(--device cpu --dataset synthetic --model mlp --ranks 2 --steps 20 --trace "$tmp/full.json")
    else
        args=(--replay "$tmp/full.json")
    fi
    "$BIN" --batch --quiet "${args[@]}" --format json --output /dev/full >"$tmp/full.out" 2>"$tmp/full.err"
    st=$?
    check "--output /dev/full ($mode): exit 1 (got $st)" test "$st" -eq 1
    check "--output /dev/full ($mode): one line with the reason" \
        sh -c "[ \$(wc -l <'$tmp/full.err') -eq 1 ] && grep -q 'cannot write /dev/full: No space left on device; the report follows on standard output' '$tmp/full.err'"
    check "--output /dev/full ($mode): the whole report on stdout" \
        json "$tmp/full.out" "r=d['runs'][0]; assert r['state']=='done' and r['steps']==20, r"
done

checks_done
