#!/usr/bin/env bash
# gpu_check.sh - on a GPU machine, from the repository root: the GPU tests
# and figures from the bundle that scripts/gpu_bundle.sh made (carried as
# .gpubundle/), with CUDA's libraries from the machine (the toolkit's, or
# the nvidia-* Python wheels that come with PyTorch). Everything it prints
# also goes to ${OUT:-/tmp}/gpu_check.log, and test_gpu_models writes every
# layer's output and gradient error (GPU against CPU, whole model) to
# ${OUT:-/tmp}/gpu_layers.txt.
#
#   scripts/gpu_check.sh [part...]
# parts (default: all but models): tests (test_gpu, test_gpu_fixtures,
# test_gpu_models mixed and parallel), models (test_gpu_models: every zoo model against
# the CPU, minutes), e2e (tests/gpu_e2e.sh: live vs replay, slow rank, the
# UI in tmux, the memory check; E2E_PARTS picks parts), fixture (a small
# traced GPU run, for the replay fixtures), runs (ddptop's own runs), bench
# (against PyTorch), cupti (what device tracing costs, bench/cupti_cost.sh;
# CUPTI_MODELS picks models), sample (every rank's split with the default
# sampled tracing against tracing every step), precision (test_gpu, whose
# tf32, bf16 and cudnnFind tests are the point, the algorithms cudnnFind
# picks for ResNet-18, and ddptop against PyTorch in each of PRECISIONS,
# default fp32 tf32 bf16, on LeNet and ResNet-18 at batch 128: minutes),
# imagenet (ddptop against PyTorch on 3x224x224 images, the zoo's ImageNet
# forms, IMAGENET_MODELS default resnet50, at IMAGENET_BATCH default 64, in
# each of PRECISIONS: minutes), profile (bench/gpu_profile.sh: the kernels
# that take a step's device time, PROFILE_MODEL default resnet50 at
# PROFILE_BATCH 64 on PROFILE_INPUT 3x224x224, in each of PRECISIONS), mpi
# (tests/gpu_mpi.sh: GPUs under mpirun, NCCL across processes; needs the
# machine's own mpirun), benchcomm (tests/gpu_bench_comm.sh: --bench-comm
# over NCCL and the shared GPU's ring, exact answers and busbw), detach
# (whether CUPTI detached between windows a second apart keeps the device
# view: tests/gpu_e2e.sh's ui and replay parts under DDPTOP_CUPTI_DETACH=1
# DDPTOP_CUPTI_GAP_MS=1000, then what it costs against --no-cupti and the
# default, REPS (default 4) interleaved runs of MLP and LeNet), chain
# (16-bit activations between layers, DDPTOP_H16_CHAIN=1: the layer table,
# then bf16 with and without them against PyTorch's autocast on ResNet-18
# at batch 128 and ResNet-50 on 3x224x224 at batch 64; its tests are in
# test_gpu and test_gpu_models mixed, the tests part).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
log=${OUT:-/tmp}/gpu_check.log
exec > >(tee -a "$log") 2>&1 # (appended: one command may run several parts in turn)
b=.gpubundle
[ -x "$b/test_gpu" ] || { echo "no $b/ here: run scripts/gpu_bundle.sh where it builds and carry $b"; exit 2; }

# CUDA's libraries: the toolkit's if present, then PyTorch's wheels
libs=$root/$b:$root/$b/lib  # $b: the GPU module, which test_gpu links
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d "$d" ] && libs=$libs:$d; done
# (the wheels' layouts differ between CUDA versions: take every folder
# under nvidia/ that holds a shared library)
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
if [ -n "$site" ]; then
    while read -r d; do libs=$libs:$d; done < <(find "$site/nvidia" -name 'lib*.so*' -printf '%h\n' | sort -u)
fi
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for t in "$b"/ddptop "$b"/test_*; do
    ldd "$t" | grep 'not found' | sed "s|^|$t: |"
done
# the tests read their fixtures from the source path they were built in
src=$(strings "$b/test_gpu_fixtures" | grep -m1 -o '/[^ ]*/tests/fixtures' | sed 's|/fixtures$||')
if [ -n "$src" ] && [ ! -d "$src" ]; then
    mkdir -p "$(dirname "$(dirname "$src")")" && ln -sfn "$root" "$(dirname "$src")"
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
parts=" ${*:-tests e2e runs bench cupti} "
want() { [[ "$parts" == *" $1 "* ]]; }
status=0
tests=()
want tests && tests+=(test_gpu test_gpu_fixtures "test_gpu_models mixed" "test_gpu_models parallel")
want models && tests+=(test_gpu_models "test_gpu_models nccl")
# (the NCCL runs need 2 GPUs: with one they are skipped, 77, and that is no failure)
for t in "${tests[@]}"; do
    echo "===== $t"
    start=$(date +%s)
    read -r -a cmd <<<"$t"
    DDPTOP_GPU_LAYERS=${OUT:-/tmp}/gpu_layers.txt timeout "${TEST_TIMEOUT:-240}" "$b/${cmd[0]}" "${cmd[@]:1}"
    rc=$?
    echo "===== $t: exit $rc ($(($(date +%s) - start)) s; 77 = skipped)"
    [ "$rc" -ne 0 ] && ! { [ "$rc" -eq 77 ] && [ "$t" = "test_gpu_models nccl" ]; } && status=1
done

if want e2e; then
    echo "===== tests/gpu_e2e.sh"
    start=$(date +%s)
    # shellcheck disable=SC2086 # (E2E_PARTS: a list of gpu_e2e.sh's parts)
    timeout "${E2E_TIMEOUT:-600}" tests/gpu_e2e.sh "$b/ddptop" ${E2E_PARTS:-}
    rc=$?
    echo "===== gpu_e2e: exit $rc ($(($(date +%s) - start)) s)"
    [ "$rc" -ne 0 ] && status=1
fi

if want fixture; then
    # a small GPU trace and its live report, for tests/fixtures/trace/
    "$b/ddptop" --batch --quiet --device cuda --model lenet --dataset synthetic --ranks 2 --strategy ddp --batch-size 32 \
        --steps 12 --no-eval --trace "${OUT:-/tmp}/gpu_lenet_ddp.json.gz" --format json >"${OUT:-/tmp}/gpu_lenet_ddp.live.json"
    echo "===== fixture: exit $?"
fi

if want sample; then
    echo "===== sampled device tracing (--cupti-sample 50, the default) against every step (1)"
    for spec in "lenet 600" "resnet18 150"; do
        read -r m steps <<<"$spec"
        for p in 50 1; do
            timeout 180 "$b/ddptop" --batch --quiet --device cuda --dataset synthetic --model "$m" --ranks 2 --strategy ddp \
                --batch-size 64 --steps "$steps" --no-eval --cupti-sample "$p" --format json |
                python3 -c 'import json, sys
d = json.load(sys.stdin); r = d["runs"][0]
print("%-9s sample %-3s %8.0f img/s  traced %s estimated %s" % (sys.argv[1], sys.argv[2], r["samples_per_s"], r["device_steps_traced"], r["device_steps_estimated"]))
for x in d["per_rank"]:
    print("   rank %d  compute %5.1f%%  comm %5.1f%%  data %5.1f%%  idle %5.1f%%  (%s view)" % (x["rank"], x["compute_pct"], x["comm_pct"], x["data_pct"], x["idle_pct"], x["view"]))' "$m" "$p"
        done
    done
fi

if want precision; then
    if ! want tests; then
        echo "===== test_gpu"
        start=$(date +%s)
        timeout "${TEST_TIMEOUT:-240}" "$b/test_gpu"
        rc=$?
        echo "===== test_gpu: exit $rc ($(($(date +%s) - start)) s; 77 = skipped)"
        [ "$rc" -ne 0 ] && status=1
    fi
    echo "===== the convolution algorithms cudnnFind picks, tf32"
    timeout 120 "$b/ddptop" --info --device cuda --model resnet18 --dataset cifar10 --batch-size 128 --precision tf32 |
        awk 'NR == 1 || /conv2d/' | head -8
    echo "===== ddptop against PyTorch in fp32 and tf32"
    start=$(date +%s)
    REPS=${REPS:-2} CUPTI=0 PRECISIONS="${PRECISIONS:-fp32 tf32 bf16}" timeout 420 bench/gpu_vs_pytorch.sh "$b/ddptop" "lenet resnet18" 128
    rc=$?
    echo "===== precision bench: exit $rc ($(($(date +%s) - start)) s)"
    [ "$rc" -ne 0 ] && status=1
fi

if want profile; then
    PRECISIONS="${PRECISIONS:-fp32 bf16}" DIR=${OUT:-/tmp} timeout 300 bench/gpu_profile.sh "$b/ddptop" \
        "${PROFILE_MODEL:-resnet50}" "${PROFILE_BATCH:-64}" "${PROFILE_INPUT-3x224x224}"
    rc=$?
    echo "===== profile: exit $rc"
    [ "$rc" -ne 0 ] && status=1
fi

if want imagenet; then
    echo "===== ddptop against PyTorch on 3x224x224"
    start=$(date +%s)
    INPUT=3x224x224 REPS=${REPS:-1} CUPTI=0 PRECISIONS="${PRECISIONS:-fp32 tf32 bf16}" timeout 480 \
        bench/gpu_vs_pytorch.sh "$b/ddptop" "${IMAGENET_MODELS:-resnet50}" "${IMAGENET_BATCH:-64}"
    rc=$?
    echo "===== imagenet bench: exit $rc ($(($(date +%s) - start)) s)"
    [ "$rc" -ne 0 ] && status=1
fi

# script TIMEOUT SCRIPT WHAT: a test script of tests/ on ddptop (77: skipped)
script() {
    echo "===== $3 (tests/$2)"
    timeout "$1" "tests/$2" "$b/ddptop"
    local rc=$?
    echo "===== $2: exit $rc (77 = skipped)"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && status=1
}
if { want mpi || want benchcomm; } && ! command -v mpirun >/dev/null && [ -f "$b/mpi.tar.xz" ]; then
    # no MPI on this machine: the launcher the bundle carries, relocated
    mkdir -p "$b/mpi" && tar -C "$b/mpi" -xJf "$b/mpi.tar.xz"
    export OPAL_PREFIX=$root/$b/mpi/usr PMIX_INSTALL_PREFIX=$root/$b/mpi/usr/lib/x86_64-linux-gnu/pmix2
    export PATH=$OPAL_PREFIX/bin:$PATH LD_LIBRARY_PATH=$OPAL_PREFIX/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
    ln -sf orterun "$OPAL_PREFIX/bin/mpirun"
fi
want mpi && script 300 gpu_mpi.sh "GPUs under mpirun"
want benchcomm && script 400 gpu_bench_comm.sh "--bench-comm on the GPU"

if want detach; then
    echo "===== CUPTI detached between windows 1 s apart: the device view (tests/gpu_e2e.sh ui replay)"
    DDPTOP_CUPTI_DETACH=1 DDPTOP_CUPTI_GAP_MS=1000 timeout "${E2E_TIMEOUT:-300}" tests/gpu_e2e.sh "$b/ddptop" ui replay
    rc=$?
    echo "===== gpu_e2e detached: exit $rc"
    [ "$rc" -ne 0 ] && status=1
    # (the e2e runs may end inside their first window: here CUPTI must come
    # back for later ones, on both ranks, with the right steps)
    echo "===== CUPTI detached: later windows traced again (ResNet-18, 2 ranks, 400 steps)"
    tr=${OUT:-/tmp}/detach.json.gz
    DDPTOP_CUPTI_DETACH=1 DDPTOP_CUPTI_GAP_MS=1000 timeout 180 "$b/ddptop" --batch --quiet --device cuda \
        --dataset synthetic --model resnet18 --ranks 2 --strategy ddp --batch-size 64 --steps 400 --no-eval \
        --trace "$tr" --format json >"${OUT:-/tmp}/detach_live.json" &&
        python3 - "$tr" "${OUT:-/tmp}/detach_live.json" <<'EOF'
import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
run = json.load(open(sys.argv[2]))["runs"][0]
k = [e for e in ev if e.get("cat") == "kernel"]
windows = {}
for e in k:
    windows.setdefault(e["pid"], set()).add(e["args"]["step"])
for pid, steps in sorted(windows.items()):
    print(f"rank {pid}: kernels in steps {sorted(steps)[:12]}{' ...' if len(steps) > 12 else ''}")
print(f"traced {run.get('device_steps_traced')} steps, estimated {run.get('device_steps_estimated')}")
ok = len(windows) == 2 and all(max(s) >= 50 and min(s) < 50 for s in windows.values())
sys.exit(0 if ok else 1)
EOF
    rc=$?
    echo "===== detached, later windows: exit $rc"
    [ "$rc" -ne 0 ] && status=1
    echo "===== what it costs"
    VERBOSE=1 SMALL_STEPS=12000 REPS=${REPS:-4} CUPTI_VARIANTS="off|-| sampled||50 detach1s||50|1000|1" \
        timeout 420 bench/cupti_cost.sh "$b/ddptop" "mlp lenet" 128
    rc=$?
    echo "===== CUPTI cost: exit $rc"
    [ "$rc" -ne 0 ] && status=1
fi

if want chain; then
    echo "===== 16-bit activations between layers: ResNet-18's layer table in bf16"
    DDPTOP_H16_CHAIN=1 timeout 120 "$b/ddptop" --info --device cuda --model resnet18 --dataset synthetic \
        --batch-size 128 --precision bf16 | head -14
    echo "===== bf16 with (bf16c) and without them, against PyTorch's autocast"
    start=$(date +%s)
    REPS=${REPS:-2} CUPTI=0 PRECISIONS="bf16 bf16c" timeout 240 bench/gpu_vs_pytorch.sh "$b/ddptop" resnet18 128
    rc=$?
    INPUT=3x224x224 REPS=1 CUPTI=0 PRECISIONS="bf16 bf16c" timeout 300 bench/gpu_vs_pytorch.sh "$b/ddptop" resnet50 64
    rc=$((rc | $?))
    echo "===== chain bench: exit $rc ($(($(date +%s) - start)) s)"
    [ "$rc" -ne 0 ] && status=1
fi

want runs || { want bench || want cupti || exit $status; }
want runs && echo "===== ddptop on the GPU"
want runs && "$b/ddptop" --info --device cuda --model resnet18 --dataset cifar10 --batch-size 128 | tail -4
want runs && timeout 120 "$b/ddptop" --batch --device cuda --model lenet --dataset synthetic --ranks 2 --strategy ddp --steps 200 --no-eval
want runs && timeout 120 "$b/ddptop" --batch --device cuda --model resnet18 --dataset synthetic --ranks 1 --batch-size 128 --steps 60 \
    --no-eval --format json | python3 -c 'import json, sys; r = json.load(sys.stdin)["runs"][0]; print({k: r[k] for k in ("device", "backend", "samples_per_s", "compute_pct", "comm_pct", "data_pct", "idle_pct", "cupti_overhead_ms", "note")})'

if want bench; then
    echo "===== against PyTorch on this GPU"
    REPS=${REPS:-3} bench/gpu_vs_pytorch.sh "$b/ddptop" "lenet resnet18" 128
fi
if want cupti; then
    echo "===== what CUPTI costs"
    REPS=${REPS:-3} bench/cupti_cost.sh "$b/ddptop" "${CUPTI_MODELS:-mlp lenet resnet18}" 128
fi
exit $status
