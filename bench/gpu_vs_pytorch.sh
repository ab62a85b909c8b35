#!/usr/bin/env bash
# gpu_vs_pytorch.sh - one GPU's training throughput, ddptop against PyTorch
# on the same GPU, models (bench/torch_models.py mirrors models/zoo.c),
# batch and input (Fashion-MNIST 1x28x28 when installed, else synthetic /
# random), in one run; then what CUPTI costs ddptop (the same run with
# --no-cupti). Repetitions alternate the two sides; the table shows medians
# and ratios measured here, never figures from elsewhere.
#
#   bench/gpu_vs_pytorch.sh [build/ddptop] [models] [batch]
#   e.g. REPS=5 bench/gpu_vs_pytorch.sh build/ddptop "lenet resnet18" 128
#
# Both sides run FP32 without TF32, copy each batch from pinned host memory
# and wait for the GPU once a step (reading the loss). PY picks the Python
# that has PyTorch with CUDA (default python3).
set -euo pipefail
BIN=${1:-build/ddptop}
MODELS=${2:-lenet resnet18}
BATCH=${3:-128}
REPS=${REPS:-3}
PY=${PY:-python3}
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "no PyTorch with a usable GPU here (PY=$PY)"; exit 1; }
[ -x "$BIN" ] || { echo "no ddptop binary at $BIN (build it, or pass its path)"; exit 1; }

steps() { case $1 in mlp | lenet) echo 300 ;; *) echo 60 ;; esac; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ddptop's img/s: the samples_per_s column of the `all` row (found by name).
ours() { # model [extra options]
    local m=$1
    shift
    "$BIN" --batch --quiet --device cuda --model "$m" --strategy single --ranks 1 --batch-size "$BATCH" \
        --steps "$(steps "$m")" --no-eval --format csv "$@" 2>/dev/null |
        awk -F, 'NR==1 {for (i = 1; i <= NF; i++) if ($i == "samples_per_s") c = i} $2 == "all" {print $c}'
}

torch_run() { # model
    local s
    s=$(steps "$1")
    "$PY" "$here/torch_models.py" train --device cuda --model "$1" --batch "$BATCH" --steps "$s" --warmup 10 |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["img_s"])'
}

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "a GPU")
echo "ddptop $("$BIN" --version | awk '{print $2}') vs PyTorch $("$PY" -c 'import torch; print(torch.__version__)') on $gpu, batch $BATCH, $REPS repetitions, medians"
printf "%-9s %12s %12s %7s %14s %9s\n" model "ours img/s" "torch img/s" ratio "no-CUPTI img/s" "CUPTI cost"
for m in $MODELS; do
    o_all=() p_all=() n_all=()
    for _ in $(seq "$REPS"); do
        o_all+=("$(ours "$m")")
        p_all+=("$(torch_run "$m")")
        n_all+=("$(ours "$m" --no-cupti)")
    done
    o=$(printf '%s\n' "${o_all[@]}" | median)
    p=$(printf '%s\n' "${p_all[@]}" | median)
    n=$(printf '%s\n' "${n_all[@]}" | median)
    awk -v m="$m" -v o="$o" -v p="$p" -v n="$n" 'BEGIN {
        printf "%-9s %12.0f %12.0f %6.2fx %14.0f %8.1f%%\n", m, o, p, (p > 0 ? o / p : 0), n, (n > 0 ? 100 * (n - o) / n : 0) }'
done
