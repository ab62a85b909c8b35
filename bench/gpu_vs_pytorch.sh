#!/usr/bin/env bash
# gpu_vs_pytorch.sh - one GPU's training throughput, ddptop against PyTorch
# on the same GPU, models (bench/torch_models.py mirrors models/zoo.c),
# batch and input (Fashion-MNIST 1x28x28 when installed, else synthetic /
# random), in each precision, in one run; then what CUPTI costs ddptop (the
# same run with --no-cupti). Repetitions alternate the two sides; the table
# shows medians and ratios measured here, never figures from elsewhere.
#
#   bench/gpu_vs_pytorch.sh [build/ddptop] [models] [batch]
#   e.g. REPS=5 bench/gpu_vs_pytorch.sh build/ddptop "lenet resnet18" 128
#
# Precisions (PRECISIONS, default "fp32 tf32"), the same on both sides:
#   fp32  ddptop --precision fp32; PyTorch with TF32 off in cuDNN and cuBLAS
#   tf32  ddptop --precision tf32; PyTorch with allow_tf32 on in both
#         (torch.backends.cuda.matmul and torch.backends.cudnn)
#   bf16  ddptop --precision bf16; PyTorch's autocast to bfloat16, the model and
#         its inputs channels_last
#   fp16  ddptop --precision fp16 (dynamic loss scaling); PyTorch's autocast to
#         float16 with a GradScaler, channels_last
#   bf16c, fp16c  the same with DDPTOP_H16_CHAIN=1 on ddptop's side: its
#         activations between layers held in 16 bits channels-last
#         (gpu/chain16.h), as autocast holds them
# INPUT=CxHxW (e.g. 3x224x224, where the zoo takes its ImageNet forms) runs
# both sides on random images of that shape: ddptop's --dataset synthetic
# --input.
# cuDNN's algorithms are chosen the same way on both sides (ALGO, default
# find): ddptop's --cudnn-algo find against torch.backends.cudnn.benchmark
# = True, or --cudnn-algo heuristic against benchmark off. Both sides copy
# each batch from pinned host memory and wait for the GPU once a step
# (reading the loss). CUPTI=0 leaves out the --no-cupti runs. PY picks the
# Python that has PyTorch with CUDA (default python3).
set -euo pipefail
BIN=${1:-build/ddptop}
MODELS=${2:-lenet resnet18}
BATCH=${3:-128}
REPS=${REPS:-3}
PY=${PY:-python3}
PRECISIONS=${PRECISIONS:-fp32 tf32}
ALGO=${ALGO:-find}
CUPTI=${CUPTI:-1}
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "no PyTorch with a usable GPU here (PY=$PY)"; exit 1; }
[ -x "$BIN" ] || { echo "no ddptop binary at $BIN (build it, or pass its path)"; exit 1; }
case $ALGO in find) bench=(--cudnn-benchmark) ;; heuristic) bench=() ;; *) echo "ALGO: find or heuristic"; exit 2 ;; esac

INPUT=${INPUT:-}
steps() { # (224x224 steps take 100x longer than 28x28 ones)
    if [ -n "$INPUT" ]; then echo 30; else case $1 in mlp | lenet) echo 300 ;; *) echo 60 ;; esac; fi
}
data=()
tdata=()
[ -n "$INPUT" ] && data=(--dataset synthetic --input "$INPUT") && tdata=(--input "$INPUT")
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ddptop's img/s: the samples_per_s column of the `all` row (found by name).
ours() { # model precision [extra options]
    local m=$1 p=${2%c} chain=0
    [ "$p" != "$2" ] && chain=1
    shift 2
    DDPTOP_H16_CHAIN=$chain "$BIN" --batch --quiet --device cuda --model "$m" --strategy single --ranks 1 --batch-size "$BATCH" \
        --steps "$(steps "$m")" --no-eval --precision "$p" --cudnn-algo "$ALGO" --format csv "${data[@]}" "$@" |
        awk -F, 'NR==1 {for (i = 1; i <= NF; i++) if ($i == "samples_per_s") c = i} $2 == "all" {print $c}'
}

# one figure from a side's run (its stderr kept aside), or 0 from a run that
# failed, with what it said: a failure costs its cell, not the table
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
figure() {
    local out
    out=$("$@" 2>"$T/err") || true
    if [ -z "$out" ]; then
        echo "($* failed:" >&2
        tail -5 "$T/err" | sed 's/^/  /' >&2
        echo ")" >&2
        touch "$T/failed"
        out=0
    fi
    echo "$out"
}

torch_run() { # model precision
    local s
    s=$(steps "$1")
    "$PY" "$here/torch_models.py" train --device cuda --model "$1" --batch "$BATCH" --steps "$s" --warmup 10 \
        --precision "${2%c}" "${bench[@]}" "${tdata[@]}" |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["img_s"])'
}

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "a GPU")
echo "ddptop $("$BIN" --version | awk 'NR == 1 {print $2}') vs PyTorch $("$PY" -c 'import torch; print(torch.__version__)') on $gpu, batch $BATCH${INPUT:+, input $INPUT}, $REPS repetitions, medians"
echo "cuDNN algorithms: ddptop --cudnn-algo $ALGO, PyTorch cudnn.benchmark $([ "$ALGO" = find ] && echo on || echo off)"
printf "%-9s %-5s %12s %12s %7s %14s %9s\n" model prec "ours img/s" "torch img/s" ratio "no-CUPTI img/s" "CUPTI cost"
declare -A O P
for m in $MODELS; do
    for p in $PRECISIONS; do
        o_all=() p_all=() n_all=()
        for _ in $(seq "$REPS"); do
            o_all+=("$(figure ours "$m" "$p")")
            p_all+=("$(figure torch_run "$m" "$p")")
            [ "$CUPTI" = 0 ] || n_all+=("$(figure ours "$m" "$p" --no-cupti)")
        done
        o=$(printf '%s\n' "${o_all[@]}" | median)
        t=$(printf '%s\n' "${p_all[@]}" | median)
        n=$([ "$CUPTI" = 0 ] && echo 0 || printf '%s\n' "${n_all[@]}" | median)
        O[$m.$p]=$o
        P[$m.$p]=$t
        awk -v m="$m" -v p="$p" -v o="$o" -v t="$t" -v n="$n" 'BEGIN {
            printf "%-9s %-5s %12.0f %12.0f %6.2fx", m, p, o, t, (t > 0 ? o / t : 0)
            if (n > 0) printf " %14.0f %8.1f%%\n", n, 100 * (n - o) / n; else printf " %14s %9s\n", "-", "-" }'
    done
done
# what each precision gains over fp32, on each side
for m in $MODELS; do
    for p in $PRECISIONS; do
        [ "$p" = fp32 ] || [ -z "${O[$m.fp32]:-}" ] && continue
        awk -v m="$m" -v p="$p" -v o="${O[$m.$p]}" -v o0="${O[$m.fp32]}" -v t="${P[$m.$p]}" -v t0="${P[$m.fp32]}" 'BEGIN {
            printf "%-9s %s over fp32: ours %.2fx, torch %.2fx\n", m, p, (o0 > 0 ? o / o0 : 0), (t0 > 0 ? t / t0 : 0) }'
    done
done
[ ! -e "$T/failed" ]
