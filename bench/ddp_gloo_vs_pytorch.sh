#!/usr/bin/env bash
# ddp_gloo_vs_pytorch.sh - LeNet DDP on 2 ranks over gloo: ddptop
# (--comm gloo, rank threads, a gloo context each over loopback) against
# PyTorch's DistributedDataParallel on gloo (2 processes,
# bench/ddp_gloo_ref.py), same model, per-rank batch, bucket size and one
# compute thread a rank, alternating the two. Prints the median step and
# the median time in collectives per step (waiting for the peer included)
# of each, and their ratios.
#   bench/ddp_gloo_vs_pytorch.sh [build/ddptop] [batch] [reps]
set -euo pipefail
BIN=${1:-build/ddptop}
BATCH=${2:-32}
REPS=${3:-3}
STEPS=${STEPS:-300}
BUCKET=${BUCKET:-25}
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import torch' 2>/dev/null || { echo "python3-torch is not installed (apt-get install python3-torch)"; exit 1; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
os=() oc=() ps=() pc=()
for _ in $(seq "$REPS"); do
    read -r s c < <("$BIN" --batch --quiet --device cpu --dataset synthetic --model lenet --strategy ddp --comm gloo \
        --ranks 2 --batch-size "$BATCH" --threads-per-rank 1 --bucket-mb "$BUCKET" --steps "$STEPS" --no-eval \
        --format json | "$PY" -c 'import json,sys; r = json.load(sys.stdin)["runs"][0]; print(r["ms_p50"], r["coll_ms_per_step"])')
    read -r ts tc < <("$PY" "$here/ddp_gloo_ref.py" --batch "$BATCH" --steps "$STEPS" --bucket-mb "$BUCKET" |
        "$PY" -c 'import json,sys; r = json.loads(sys.stdin.readline()); print(r["step_ms_p50"], r["coll_ms_p50"])')
    os+=("$s") oc+=("$c") ps+=("$ts") pc+=("$tc")
done
s=$(printf '%s\n' "${os[@]}" | median) c=$(printf '%s\n' "${oc[@]}" | median)
ts=$(printf '%s\n' "${ps[@]}" | median) tc=$(printf '%s\n' "${pc[@]}" | median)
echo "LeNet DDP, 2 ranks on gloo, batch $BATCH a rank, bucket $BUCKET MB, 1 thread a rank; medians of $REPS runs of $STEPS steps"
printf "%-22s %12s %12s\n" "" "step ms" "coll ms/step"
printf "%-22s %12.3f %12.3f\n" "ddptop --comm gloo" "$s" "$c" "PyTorch DDP gloo" "$ts" "$tc"
printf "%-22s %11.2fx %11.2fx\n" "ddptop / PyTorch" "$(awk -v a="$s" -v b="$ts" 'BEGIN {print a / b}')" \
    "$(awk -v a="$c" -v b="$tc" 'BEGIN {print a / b}')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
