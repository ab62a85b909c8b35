#!/usr/bin/env bash
# test_failure.sh - nothing measured is lost when a run ends badly:
#  - a rank that fails (training diverges) stops every rank, the report is
#    still printed with state "failed" and the rank's error, the trace file is
#    valid JSON, and the exit status is 1;
#  - Ctrl-C (SIGINT) half way prints the report of the steps done, state
#    "stopped", exit status 130.
set -u
BIN=${1:?usage: test_failure.sh path/to/ddptop}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
check() { # check "what" condition...
    local what=$1
    shift
    if "$@"; then passes=$((passes + 1)); else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
json() { /usr/bin/env python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }

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
# into training: the rank threads exist (named "rank N"), and some steps ran;
# a signal before the handler is installed would be ignored (a background
# job's SIGINT starts ignored), and one while the data set loads stops it
# before any step
for _ in $(seq 1 600); do
    grep -qx 'rank 1' /proc/$pid/task/*/comm 2>/dev/null && break
    sleep 0.1
done
sleep 1
kill -INT $pid
wait $pid
st=$?
check "SIGINT exits 130 (got $st)" test "$st" -eq 130
check "SIGINT: the report covers the steps done, state stopped" \
    json "$tmp/int.json" "r=d['runs'][0]; assert r['state']=='stopped' and r['steps'] > 0 and r['ms_per_step'] > 0, r"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
