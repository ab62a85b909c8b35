#!/usr/bin/env bash
# gpu_mpi.sh - GPUs under mpirun, on a GPU machine (scripts/gpu_check.sh
# mpi): every process drives the GPUs of its node by its node-local rank,
# and NCCL joins the ranks across processes, with NCCL's unique id sent by
# process 0 over MPI.
#  - one process, --comm nccl (a communicator of one, the path across
#    processes): trains, names its backend, its trace holds kernel records,
#    and ends with the parameters of `single` on the same batch (1e-5);
#  - more ranks on a node than GPUs: one line and exit 2 (NCCL refuses a
#    GPU twice, and ddptop's device ring joins threads of one process);
#  - with 2 GPUs or more: 2 processes, DDP over NCCL, equal `single` on the
#    global batch (1e-5), and process 0's trace holds both ranks' kernels;
#    and --dp 2 of a 1-stage pipeline across the 2 processes, the same.
# Usage: gpu_mpi.sh DDPTOP
# Exit status: 0 pass, 1 fail, 77 skip (no mpirun, or no GPU).
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
mpirun=$(command -v mpirun || command -v mpiexec) || { echo "SKIP: no mpirun on this machine"; exit 77; }
"$mpirun" --version 2>&1 | head -1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -ge 1 ] || { echo "SKIP: no GPU"; exit 77; }
mpi=("$mpirun" --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
# (the library path of this shell, to every process)
mpi+=(-x LD_LIBRARY_PATH)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
reldiff() { python3 "$here/reldiff.py" "$1" "$2"; }
close() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-5 else 1)' "$1" 2>/dev/null; }
base=(--batch --quiet --device cuda --dataset synthetic --model lenet --steps 20 --no-eval --threads-per-rank 2
    --cupti-sample 1)

# ---- one process over NCCL ----
"$bin" "${base[@]}" --ranks 1 --strategy single --batch-size 32 --save-params single1.bin >/dev/null 2>s1.err ||
    { bad "single on the GPU"; cat s1.err; }
timeout 120 "${mpi[@]}" -np 1 "$bin" "${base[@]}" --comm nccl --strategy ddp --batch-size 32 --save-params np1.bin \
    --trace np1.json.gz --format json >np1.json 2>np1.err
rc=$?
backend=$(python3 -c 'import json; print(json.load(open("np1.json"))["runs"][0]["backend"])' 2>/dev/null)
kernels=$(python3 -c 'import gzip, json; print(sum(e.get("cat") == "kernel" for e in json.load(gzip.open("np1.json.gz"))["traceEvents"]))' 2>/dev/null)
d=$(reldiff np1.bin single1.bin)
if [ $rc -eq 0 ] && [[ "$backend" == "nccl, 1 process on 1 node" ]] && [ "${kernels:-0}" -gt 0 ] && close "$d"; then
    ok "mpirun -np 1 --comm nccl: backend '$backend', $kernels kernel records, $d from single"
else
    bad "mpirun -np 1 --comm nccl: rc $rc, backend '$backend', kernels '$kernels', difference '$d'"
    tail -5 np1.err
fi

# ---- more ranks on the node than GPUs: refused ----
"${mpi[@]}" -np 1 "$bin" "${base[@]}" --ranks-per-process $((ngpu + 1)) --strategy ddp >/dev/null 2>many.err
rc=$?
if [ $rc -ne 0 ] && [ "$(grep -c '^ddptop:' many.err)" -eq 1 ] && grep -q "NCCL needs a GPU for each rank" many.err; then
    ok "$((ngpu + 1)) ranks on $ngpu GPU(s): one line, exit $rc"
else
    bad "$((ngpu + 1)) ranks on $ngpu GPU(s): rc $rc"
    head -3 many.err
fi

# ---- 2 processes, one GPU each ----
if [ "$ngpu" -ge 2 ]; then
    "$bin" "${base[@]}" --ranks 1 --strategy single --batch-size 64 --save-params single2.bin >/dev/null 2>s2.err
    timeout 180 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --strategy ddp --batch-size 32 --save-params np2.bin \
        --trace np2.json.gz --format json >np2.json 2>np2.err
    rc=$?
    d=$(reldiff np2.bin single2.bin)
    pids=$(python3 -c 'import gzip, json; print(len({e["pid"] for e in json.load(gzip.open("np2.json.gz"))["traceEvents"] if e.get("cat") == "kernel"}))' 2>/dev/null)
    [ $rc -eq 0 ] && close "$d" && [ "${pids:-0}" -eq 2 ] &&
        ok "mpirun -np 2, DDP over NCCL: $d from single on the global batch, kernels of both ranks in the trace" ||
        { bad "mpirun -np 2 over NCCL: rc $rc, difference '$d', ranks with kernels '$pids'"; tail -5 np2.err; }
    # --dp across processes: 2 replicas of a 1-stage pipeline (2 micro-batches
    # accumulated), their gradients averaged over a NCCL communicator of the
    # stage's copies whose id process 0 broadcasts: single on 64 samples
    timeout 180 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --parallel pipeline --micro-batches 2 --dp 2 --batch-size 32 \
        --save-params dp2.bin >/dev/null 2>dp2.err
    rc=$?
    d=$(reldiff dp2.bin single2.bin)
    [ $rc -eq 0 ] && close "$d" && ok "mpirun -np 2 --dp 2 over NCCL: $d from single on the global batch" ||
        { bad "mpirun -np 2 --dp 2 over NCCL: rc $rc, difference '$d'"; tail -5 dp2.err; }
else
    echo "(one GPU: 2 processes over NCCL need 2 GPUs; not run)"
fi
echo "$fails failed"
[ $fails -eq 0 ]
