#!/usr/bin/env bash
# whatif_vs_torch.sh - ddptop's --predict of a user's own job against the
# job itself at more ranks: a 2-process torch DDP job on gloo
# (tests/pytorch_ddp_job.py, the profiler's two cycles per rank) replayed
# with --predict --predict-ranks 4, over gloo's own alpha-beta fits at 2
# ranks (to size the job's collectives) and 4 (to price them), made here
# by `ddptop --batch --bench-comm --comm gloo` into a temporary
# DDPTOP_COMM_MODEL; then the same job on 4 processes, replayed. Prints
# the measured 2-rank step, the predicted and measured 4-rank steps
# (ms/step, the mean, as the replay gives them) and predicted / measured.
# The goal: within 15% on a quiet machine with a core per process (the
# model keeps the compute as measured: processes that share cores run
# slower than it says).
#
#   bench/whatif_vs_torch.sh [build/ddptop] [ITERS]
# ITERS: --bench-comm's timed iterations per size (default 50).
# Needs Debian's python3 with torch (python3-torch); DDPTOP_PYTHON names another.
set -euo pipefail
BIN=${1:-build/ddptop}
ITERS=${2:-50}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${DDPTOP_PYTHON:-/usr/bin/python3}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
T=$(mktemp -d /tmp/ddptop-whatif.XXXXXX)
trap 'rm -rf "$T"' EXIT
export DDPTOP_COMM_MODEL=$T/comm-model.json

# job N OUT: the job on N processes, its traces into OUT
job() {
    local n=$1 out=$2 pids=() rc=0
    for ((r = 0; r < n; r++)); do
        timeout 300 "$PY" "$HERE/../tests/pytorch_ddp_job.py" --rank $r --world "$n" --init "file://$T/store$n" \
            --out "$out" >"$T/job$n.$r.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    [ $rc -eq 0 ] || { cat "$T/job$n.0.log"; echo "the $n-process job failed"; exit 1; }
}
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['runs'][0]; print($2)" "$1"; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in 2 4; do
    "$BIN" --batch --bench-comm --comm gloo --ranks $n --min-bytes 4K --max-bytes 4M --iters "$ITERS" \
        >"$T/fit$n.txt" 2>&1 || { cat "$T/fit$n.txt"; exit 1; }
    echo "gloo fit at $n ranks: $(grep '^# fit' "$T/fit$n.txt")"
done
job 2 "$T/tb2"
"$BIN" --batch --replay "$T/tb2" --predict --predict-ranks 4 --format json >"$T/p2.json" 2>"$T/p2.err" ||
    { cat "$T/p2.err"; exit 1; }
job 4 "$T/tb4"
"$BIN" --batch --replay "$T/tb4" --format json >"$T/m4.json" 2>"$T/m4.err" || { cat "$T/m4.err"; exit 1; }
"$BIN" --batch --replay "$T/tb2" --predict --predict-ranks 4 2>/dev/null | sed -n '/predicts the traced job/,$p'
echo
python3 - "$T/p2.json" "$T/m4.json" <<'PY'
import json, sys
p2, m4 = (json.load(open(f))["runs"][0] for f in sys.argv[1:3])
job = p2["job_prediction"]
rows = [r for r in job["rows"] if r["ranks"] == 4 and r["step_ms"] is not None]
pred = rows[0]["step_ms"] if rows else None
print("measured 2 ranks:  %8.3f ms/step (compute %.3f)" % (p2["ms_per_step"], p2["compute_ms_per_step"]))
print("predicted 4 ranks: %8s ms/step (%s)" % ("%.3f" % pred if pred else "n/a", job["note"] or job["sizes"]))
print("measured 4 ranks:  %8.3f ms/step (compute %.3f)" % (m4["ms_per_step"], m4["compute_ms_per_step"]))
print("predicted / measured: %s" % ("%.3f" % (pred / m4["ms_per_step"]) if pred else "n/a"))
PY
