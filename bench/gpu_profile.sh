#!/usr/bin/env bash
# gpu_profile.sh - where one GPU's step goes, kernel by kernel: ddptop
# trains a model for a few steps with CUPTI tracing every step, and
# bench/kernel_top.py sums the trace's kernels and copies by name, in each
# precision of PRECISIONS (default fp32 bf16). The traces stay in DIR.
#
#   bench/gpu_profile.sh [build/ddptop] [model] [batch] [CxHxW]
#   e.g. DIR=/tmp/prof bench/gpu_profile.sh .gpubundle/ddptop resnet50 64 3x224x224
set -euo pipefail
BIN=${1:-build/ddptop}
MODEL=${2:-resnet18}
BATCH=${3:-128}
INPUT=${4:-}
PRECISIONS=${PRECISIONS:-fp32 bf16}
DIR=${DIR:-${OUT:-/tmp}}
TOP=${TOP:-20}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$BIN" ] || { echo "no ddptop binary at $BIN (build it, or pass its path)"; exit 1; }
data=()
[ -n "$INPUT" ] && data=(--dataset synthetic --input "$INPUT")
for p in $PRECISIONS; do
    t=$DIR/profile_${MODEL}_$p.json.gz
    echo "===== $MODEL, batch $BATCH${INPUT:+, input $INPUT}, --precision $p"
    # every step traced: --cupti-sample 1, and no gap between windows
    DDPTOP_CUPTI_GAP_MS=0 "$BIN" --batch --quiet --device cuda --model "$MODEL" --strategy single --ranks 1 \
        --batch-size "$BATCH" --steps "${STEPS:-12}" --no-eval --precision "$p" --cudnn-algo find --cupti-sample 1 \
        "${data[@]}" --trace "$t" --format csv |
        awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i} $2 == "all" {print "img/s", $c["samples_per_s"], "compute %", $c["compute_pct"]}'
    "$here/kernel_top.py" "$t" "$TOP"
done
