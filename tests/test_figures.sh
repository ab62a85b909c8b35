#!/bin/bash
# test_figures.sh BIN - --plot DIR on the real binary: each figure parses as
# XML and its plotted points are the JSON report's figures of the same run
# (check_figures.py, which also holds the report's loss curve and stage
# timeline to the run's trace):
#   a sweep of ranks 1,2 x allreduce,ddp (speedup, loss in epochs, split);
#   a run of 400 steps (its loss curve spread over 200 of them);
#   pipelines on 1 and 2 stages (a timeline per run, and their speedup);
#   --replay of a pipeline's trace (loss in steps: a trace has no epochs);
#   the UI is covered by e2e_ui.sh.
# And the folder checked before anything runs, as --output is: one line,
# exit 2, nothing made, where it cannot be written; refused with a mode
# that makes no report (--info, --bench-comm).
set -u
bin=${1:?usage: test_figures.sh BIN}
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
here=$(cd "$(dirname "$0")" && pwd)
check="/usr/bin/python3 $here/check_figures.py"
tmp=$(mktemp -d /tmp/ddptop_figures.XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
run=(--batch --quiet --device cpu --dataset synthetic --model lenet --batch-size 16)
fails=0
ok() { echo "ok   - $*"; }
bad() {
    echo "FAIL - $*"
    fails=$((fails + 1))
    [ -n "${DDPTOP_FAIL_FAST:-}" ] && exit 1 # (the mutation harness: one failure is enough)
}
# expect NAME CMD...: the command exits 0 and check_figures passes
figures() {
    local name=$1 dir=$2 json=$3
    shift 3
    if out=$($check "$dir" "$json" "$@" 2>&1); then ok "$name: $out"; else bad "$name: $out"; fi
}

# ---- a sweep: speedup, loss against epochs, the split ----------------------
if "$bin" "${run[@]}" --ranks 1,2 --strategy allreduce,ddp --steps 30 --loss-threshold 2.2 --format json \
    --output sweep.json --plot sweep 2>err.txt; then
    figures "sweep of 4 runs" sweep sweep.json --runs 4
else
    bad "the sweep failed: $(cat err.txt)"
fi

# ---- one long run against its trace: the curve spread over the run --------
if "$bin" "${run[@]}" --ranks 1 --steps 400 --format json --output long.json --plot long --trace long.trace.json \
    2>err.txt; then
    figures "400 steps" long long.json --runs 1 --trace long.trace.json
    python3 - long.json <<'PY' && ok "400 steps: 200 points, from step 1 to 400, evenly spread" ||
import json, sys
s = json.load(open(sys.argv[1]))["runs"][0]["loss_curve"]["step"]
assert len(s) == 200 and s[0] == 1 and s[-1] == 400, s
gaps = [b - a for a, b in zip(s, s[1:])]
assert min(gaps) >= 2 and max(gaps) <= 3, gaps  # 399 steps over 199 gaps
PY
        bad "400 steps: the loss curve's steps are not spread over the run"
else
    bad "the 400-step run failed: $(cat err.txt)"
fi

# ---- pipelines: a timeline per run, held to the trace ------------------------
if "$bin" "${run[@]}" --ranks 1,2 --parallel pipeline --micro-batches 4 --steps 12 --format json --output pipe.json \
    --plot pipe 2>err.txt; then
    figures "pipelines on 1 and 2 stages" pipe pipe.json --runs 2 --stages
else
    bad "the pipelines failed: $(cat err.txt)"
fi
if "$bin" "${run[@]}" --ranks 2 --parallel pipeline --micro-batches 4 --steps 12 --format json --output pipe2.json \
    --plot pipe2 --trace pipe2.trace.json 2>err.txt; then
    figures "a 2-stage pipeline against its trace" pipe2 pipe2.json --runs 1 --trace pipe2.trace.json --stages
    # ---- its replay: the same figures from the trace ---------------------------
    if "$bin" --batch --quiet --replay pipe2.trace.json --format json --output replay.json --plot replay 2>err.txt; then
        figures "the replay of that pipeline" replay replay.json --runs 1 --trace pipe2.trace.json --stages
    else
        bad "the replay failed: $(cat err.txt)"
    fi
else
    bad "the 2-stage pipeline failed: $(cat err.txt)"
fi

# ---- the folder, checked up front --------------------------------------------
touch afile
mkdir -p locked && chmod a-w locked
cases=("afile:Not a directory" "no/such/dir:No such file or directory")
# (root writes anywhere: a folder without write permission only refuses others)
[ "$(id -u)" != 0 ] && cases+=("locked/figs:Permission denied" "locked:Permission denied")
for c in "${cases[@]}"; do
    d=${c%%:*} why=${c#*:}
    "$bin" "${run[@]}" --ranks 1 --steps 3 --plot "$d" >out.txt 2>err.txt
    st=$?
    if [ $st = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q -- "--plot: cannot write into $d: $why" err.txt &&
        [ ! -s out.txt ] && [ ! -e no/such ]; then
        ok "--plot $d: refused up front ($(cat err.txt))"
    else
        bad "--plot $d: exit $st, stderr: $(cat err.txt)"
    fi
done
for mode in "--info" "--bench-comm"; do
    "$bin" $mode --plot figs >out.txt 2>err.txt
    st=$?
    if [ $st = 2 ] && grep -q -- "--plot" err.txt && [ ! -e figs ]; then
        ok "$mode --plot: refused ($(head -1 err.txt))"
    else
        bad "$mode --plot: exit $st, stderr: $(cat err.txt)"
    fi
done

echo "test_figures: $fails failure(s)"
[ $fails = 0 ]
