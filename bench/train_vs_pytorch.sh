#!/usr/bin/env bash
# train_vs_pytorch.sh - single-rank training throughput of ddptop against
# PyTorch (Debian's python3-torch) on the same model, batch and thread count,
# measured in one go, alternating the two. Prints img/s and the ratio.
#
#   bench/train_vs_pytorch.sh [build/ddptop] [models] [threads]
# e.g. bench/train_vs_pytorch.sh build/ddptop "mlp lenet" "1 2"
# PRECISION=bf16: ddptop's --precision bf16 against PyTorch's autocast to
# bfloat16 (a processor with AVX512_BF16 or AMX); the default fp32.
set -euo pipefail
BIN=${1:-build/ddptop}
MODELS=${2:-mlp lenet}
THREADS=${3:-1 2}
BATCH=64
STEPS=${STEPS:-300}
REPS=${REPS:-3}
PRECISION=${PRECISION:-fp32}
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import torch' 2>/dev/null || { echo "python3-torch is not installed (apt-get install python3-torch)"; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "precision $PRECISION, batch $BATCH, median of $REPS runs of $STEPS steps each"
printf "%-8s %7s %12s %12s %8s\n" model threads "ddptop img/s" "torch img/s" ratio
for m in $MODELS; do
  for t in $THREADS; do
    ours=() theirs=()
    for _ in $(seq "$REPS"); do
      o=$("$BIN" --batch --quiet --device cpu --model "$m" --strategy single --ranks 1 --batch-size $BATCH \
          --threads-per-rank "$t" --steps "$STEPS" --no-eval --precision "$PRECISION" --format csv |
          awk -F, 'NR==1 {for (i = 1; i <= NF; i++) if ($i == "samples_per_s") c = i} NR==2 {print $c}')
      p=$("$PY" "$here/torch_models.py" train --model "$m" --threads "$t" --batch $BATCH --steps "$STEPS" --precision "$PRECISION" |
          "$PY" -c 'import json,sys; print(json.load(sys.stdin)["img_s"])')
      ours+=("$o") theirs+=("$p")
    done
    o=$(printf '%s\n' "${ours[@]}" | median)
    p=$(printf '%s\n' "${theirs[@]}" | median)
    printf "%-8s %7s %12.0f %12.0f %7.2fx\n" "$m" "$t" "$o" "$p" "$(awk -v a="$o" -v b="$p" 'BEGIN {print a / b}')"
  done
done
