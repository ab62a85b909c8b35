#!/usr/bin/env bash
# zoo_vs_pytorch.sh - single-rank training throughput of ddptop against
# PyTorch (Debian's python3-torch 1.13) on the same models
# (bench/torch_models.py mirrors models/zoo.c), batch, thread count and
# input (Fashion-MNIST 1x28x28 when installed, else random/synthetic), in one
# run. Each repetition alternates ddptop and PyTorch, so machine load hits
# both alike; the table shows medians.
#
#   bench/zoo_vs_pytorch.sh [build/ddptop] [models] [threads]
#   e.g. REPS=5 bench/zoo_vs_pytorch.sh build/ddptop "mlp lenet resnet18 vgg11" "1 2"
#
# PyTorch runs two ways, as the machine comes ("stock": OPENBLAS_CORETYPE=
# Haswell holds OpenBLAS to AVX2) and "tuned" (that variable unset, the
# OpenMP OpenBLAS, malloc that keeps its memory), and the faster of the two
# is the reference (TORCH_ENV=stock or tuned picks one).
#
# ISA=avx2 caps both sides at AVX2, so that an AVX-512 machine stands for
# an AVX2 one: ddptop by DDPTOP_MAX_CPU_ISA, PyTorch by ATEN_CPU_CAPABILITY,
# ONEDNN_MAX_CPU_ISA and OPENBLAS_CORETYPE=Haswell. The header names the CPU
# and the instructions each side's kernels took (ddptop --version).
#
# PRECISIONS (default fp32) lists the precisions to run, each on both
# sides: fp32, or bf16 (ddptop --precision bf16, PyTorch 1.13's CPU
# autocast to bfloat16); with more than one, each side's bf16 speed over
# its own fp32 follows the table.
#
# Columns: images/s (median), ours/PyTorch, and achieved GFLOP/s = 3 x the
# forward FLOPs per image (ddptop --info; the same model on both sides) x
# images/s, also as a share of the FP32 peak, PEAK_PER_CORE GFLOP/s per
# thread (default 200: AVX-512, two FMA units; measure yours).
set -euo pipefail
BIN=${1:-build/ddptop}
MODELS=${2:-mlp lenet resnet18 vgg11}
THREADS=${3:-1 2}
REPS=${REPS:-3}
BATCH=64
PEAK_PER_CORE=${PEAK_PER_CORE:-200}
TORCH_ENV=${TORCH_ENV:-both}
PRECISIONS=${PRECISIONS:-fp32}
PY=/usr/bin/python3
ISA=${ISA:-}
cap_ours=() cap_torch=()
case $ISA in
"") ;;
avx2)
    cap_ours=(DDPTOP_MAX_CPU_ISA=avx2)
    cap_torch=(ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell)
    ;;
*) echo "ISA: avx2, or unset (the processor's own)"; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import torch' 2>/dev/null || { echo "python3-torch is not installed (apt-get install python3-torch)"; exit 1; }
[ -x "$BIN" ] || { echo "no ddptop binary at $BIN (build it, or pass its path)"; exit 1; }

# Steps per run: enough for a stable median, few for the big models.
steps() { case $1 in mlp | lenet) echo 300 ;; *) echo 12 ;; esac; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# ddptop's img/s: the samples_per_s column of the `all` row (found by name).
ours() { # model threads precision
    env "${cap_ours[@]}" "$BIN" --batch --quiet --model "$1" --strategy single --ranks 1 --batch-size $BATCH --threads-per-rank "$2" \
        --steps "$(steps "$1")" --no-eval --precision "$3" --format csv 2>/dev/null |
        awk -F, 'NR==1 {for (i = 1; i <= NF; i++) if ($i == "samples_per_s") c = i} $2 == "all" {print $c}'
}

torch_run() { # env model threads precision
    local s w
    s=$(steps "$2")
    w=$((s > 100 ? 30 : 2))
    if [ "$1" = tuned ]; then
        env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp "${cap_torch[@]}" \
            GLIBC_TUNABLES=glibc.malloc.trim_threshold=4294967296:glibc.malloc.mmap_threshold=33554432 \
            "$PY" "$here/torch_models.py" train --model "$2" --threads "$3" --batch $BATCH --steps "$s" --warmup "$w" \
            --precision "$4"
    else
        env "${cap_torch[@]}" "$PY" "$here/torch_models.py" train --model "$2" --threads "$3" --batch $BATCH --steps "$s" --warmup "$w" \
            --precision "$4"
    fi | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["img_s"])'
}

case $TORCH_ENV in both) envs="stock tuned" ;; stock | tuned) envs=$TORCH_ENV ;; *) echo "TORCH_ENV: stock, tuned or both"; exit 2 ;; esac

echo "cpu: $(env "${cap_ours[@]}" "$BIN" --version | sed -n 's/^cpu: //p')${ISA:+; PyTorch capped: ${cap_torch[*]}}"
echo "ddptop $("$BIN" --version | awk 'NR == 1 {print $2}') vs PyTorch $("$PY" -c 'import torch; print(torch.__version__)'), batch $BATCH, $REPS repetitions, medians; peak $PEAK_PER_CORE GFLOP/s per thread"
printf "%-9s %-4s %3s %11s %11s %6s %7s %10s %10s %7s %7s\n" model prec thr "ours img/s" "torch img/s" torch ratio "ours GF/s" "torch GF/s" "ours %pk" "torch %pk"
declare -A O P
for m in $MODELS; do
    flops=$("$BIN" --info --model "$m" | awk '/forward FLOPs per image/ {print $5}')
    for t in $THREADS; do
      for prec in $PRECISIONS; do
        o_all=()
        unset p_all
        declare -A p_all
        for e in $envs; do p_all[$e]=""; done
        for _ in $(seq "$REPS"); do
            o_all+=("$(ours "$m" "$t" "$prec")")
            for e in $envs; do p_all[$e]+="$(torch_run "$e" "$m" "$t" "$prec") "; done
        done
        o=$(printf '%s\n' "${o_all[@]}" | median)
        best=0 which=""
        for e in $envs; do
            v=$(printf '%s\n' ${p_all[$e]} | median)
            if awk -v a="$v" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$v which=$e; fi
        done
        O[$m.$t.$prec]=$o
        P[$m.$t.$prec]=$best
        awk -v m="$m" -v pr="$prec" -v t="$t" -v o="$o" -v p="$best" -v w="$which" -v f="$flops" -v pk="$PEAK_PER_CORE" 'BEGIN {
            go = 3 * f * o / 1e9; gp = 3 * f * p / 1e9
            printf "%-9s %-4s %3d %11.1f %11.1f %6s %6.2fx %10.1f %10.1f %6.1f%% %6.1f%%\n", m, pr, t, o, p, w, o / p, go, gp,
                   100 * go / (pk * t), 100 * gp / (pk * t) }'
      done
    done
done
# each side's bf16 over its own fp32
if [[ " $PRECISIONS " == *" fp32 "* && " $PRECISIONS " == *" bf16 "* ]]; then
    for m in $MODELS; do
        for t in $THREADS; do
            awk -v m="$m" -v t="$t" -v o16="${O[$m.$t.bf16]}" -v o32="${O[$m.$t.fp32]}" -v p16="${P[$m.$t.bf16]}" \
                -v p32="${P[$m.$t.fp32]}" 'BEGIN { printf "%-9s %3d threads: bf16 over fp32: ours %.2fx, torch %.2fx\n",
                    m, t, (o32 > 0 ? o16 / o32 : 0), (p32 > 0 ? p16 / p32 : 0) }'
        done
    done
fi
