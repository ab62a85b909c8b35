#!/usr/bin/env bash
# ddp_gloo_vs_pytorch.sh - LeNet DDP on 2 ranks over gloo: ddptop
# (--comm gloo, rank threads, a gloo context each over loopback) against
# PyTorch's DistributedDataParallel on gloo (2 processes,
# bench/ddp_gloo_ref.py), same model, per-rank batch, bucket size and one
# compute thread a rank, alternating the two. Prints the median step and
# the time in collectives per step (waiting for the peer included) of
# each, with its split into transfer and sync as the report makes it
# (means per step and rank; PyTorch's split worked out the same way from
# its calls, bench/ddp_gloo_ref.py), and their ratios.
# PIN=1: each rank a process on a core of its own, all its threads with it,
# on both sides (ddptop's two processes meet with --rendezvous file:DIR and
# run under taskset; PyTorch's set their affinity before they start gloo).
# Unpinned, PyTorch's processes (main, autograd, gloo's worker and device
# threads each) are moved between the cores mid-transfer, which doubles its
# transfer time on this machine; pinned, both sides' transfers compare.
#   [PIN=1] bench/ddp_gloo_vs_pytorch.sh [build/ddptop] [batch] [reps]
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
keys='"ms_p50", "coll_ms_per_step", "transfer_ms_per_step", "sync_ms_per_step"'
pkeys='"step_ms_p50", "coll_ms_per_step", "transfer_ms_per_step", "sync_ms_per_step"'
PIN=${PIN:-0}
args=(--batch --quiet --device cpu --dataset synthetic --model lenet --strategy ddp --comm gloo
    --batch-size "$BATCH" --threads-per-rank 1 --bucket-mb "$BUCKET" --steps "$STEPS" --no-eval --format json)
# ours: one ddptop run's report, as "step coll xfer sync"
ours_run() {
    if [ "$PIN" = 1 ]; then
        local d
        d=$(mktemp -d)
        RANK=1 WORLD_SIZE=2 taskset -c 1 "$BIN" "${args[@]}" --rendezvous "file:$d" >/dev/null &
        RANK=0 WORLD_SIZE=2 taskset -c 0 "$BIN" "${args[@]}" --rendezvous "file:$d" >"$d/report.json"
        wait $!
        cat "$d/report.json"
        rm -rf "$d"
    else
        "$BIN" "${args[@]}" --ranks 2
    fi | "$PY" -c "import json,sys; r = json.load(sys.stdin)['runs'][0]; print(*(r[k] for k in ($keys)))"
}
pin=()
[ "$PIN" = 1 ] && pin=(--pin)
ours=() theirs=()
for _ in $(seq "$REPS"); do
    ours+=("$(ours_run)")
    theirs+=("$("$PY" "$here/ddp_gloo_ref.py" --batch "$BATCH" --steps "$STEPS" --bucket-mb "$BUCKET" "${pin[@]}" |
        "$PY" -c "import json,sys; r = json.loads(sys.stdin.readline()); print(*(r[k] for k in ($pkeys)))")")
done
# column K's median over the runs
col() { local k=$1; shift; printf '%s\n' "$@" | awk -v k="$k" '{print $k}' | median; }
where="unpinned; ddptop's ranks are threads"
[ "$PIN" = 1 ] && where="a process a rank, each pinned to a core"
echo "LeNet DDP, 2 ranks on gloo, batch $BATCH a rank, bucket $BUCKET MB, 1 thread a rank ($where); medians of $REPS runs of $STEPS steps"
printf "%-22s %10s %12s %12s %12s\n" "" "step ms" "coll ms/step" "xfer ms/step" "sync ms/step"
for who in ours theirs; do
    declare -n runs=$who
    name="ddptop --comm gloo"
    [ $who = theirs ] && name="PyTorch DDP gloo"
    printf "%-22s %10.3f %12.3f %12.3f %12.3f\n" "$name" "$(col 1 "${runs[@]}")" "$(col 2 "${runs[@]}")" \
        "$(col 3 "${runs[@]}")" "$(col 4 "${runs[@]}")"
done
ratio() { awk -v a="$(col "$1" "${ours[@]}")" -v b="$(col "$1" "${theirs[@]}")" 'BEGIN {printf "%.2fx", a / b}'; }
printf "%-22s %10s %12s %12s %12s\n" "ddptop / PyTorch" "$(ratio 1)" "$(ratio 2)" "$(ratio 3)" "$(ratio 4)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
