#!/usr/bin/env bash
# gpu_bench_comm.sh - --bench-comm on GPUs, on a GPU machine
# (scripts/gpu_check.sh benchcomm): every collective's exact answers over
# device buffers, and the busbw table printed for the note.
#  - NCCL with one rank a GPU (1 rank; 2 where there are 2 GPUs);
#  - the shared GPU's ring with 2 ranks on GPU 0 (--comm shm, and the
#    default where the GPUs are fewer than the ranks);
#  - under mpirun (where the machine has one), NCCL across processes.
# Usage: gpu_bench_comm.sh DDPTOP
# Exit status: 0 pass, 1 fail, 77 skip (no GPU).
set -uo pipefail
bin=$(realpath "$1")
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -ge 1 ] || { echo "SKIP: no GPU"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DDPTOP_COMM_MODEL=$tmp/model.json
fails=0
colls="allreduce reduce-scatter allgather broadcast reduce gather scatter"

# run WHAT CMD...: every collective through CMD, exact, and the allreduce
# table shown
run() {
    local what=$1 before=$fails
    shift
    for coll in $colls; do
        timeout 120 "$@" --bench-comm --device cuda --collective "$coll" --min-bytes 4K --max-bytes 64M --factor 4 \
            --iters 10 >"$tmp/out" 2>"$tmp/err"
        local st=$? wrong
        wrong=$(awk '/^ +[0-9]/ {w += $NF} END {print w + 0}' "$tmp/out")
        if [ $st -ne 0 ] || [ "$wrong" -ne 0 ] || ! grep -q '^ ' "$tmp/out"; then
            echo "FAIL - $what, $coll: rc $st, $wrong wrong"
            tail -3 "$tmp/err"
            fails=$((fails + 1))
        fi
        [ "$coll" = allreduce ] && { echo "----- $what"; cat "$tmp/out"; }
    done
    [ $fails -eq "$before" ] && echo "ok - $what: every collective exact"
}

run "NCCL, 1 rank" "$bin" --ranks 1 --comm nccl
[ "$ngpu" -ge 2 ] && run "NCCL, 2 ranks on 2 GPUs" "$bin" --ranks 2 --comm nccl
run "the shared GPU's ring, 2 ranks on GPU 0" "$bin" --ranks 2 --gpus 0 --comm shm
mpirun=$(command -v mpirun || command -v mpiexec)
if [ -n "$mpirun" ]; then
    mpi=("$mpirun" --oversubscribe --bind-to none -x LD_LIBRARY_PATH)
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
    run "NCCL across processes, mpirun -np 1" "${mpi[@]}" -np 1 "$bin"
    [ "$ngpu" -ge 2 ] && run "NCCL across processes, mpirun -np 2" "${mpi[@]}" -np 2 "$bin"
else
    echo "(no mpirun here: NCCL across processes not run)"
fi
echo "$fails failed"
[ $fails -eq 0 ]
