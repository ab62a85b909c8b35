#!/usr/bin/env bash
# test_cli.sh - every bad input gets exactly one line on stderr naming what
# was wrong, and exit status 2; --help and --version succeed. Every bound is
# tried at its edge and one step past it, and --help must list every option.
# Bad data files (missing, truncated, corrupt, wrong magic) and bad traces
# (malformed, too many ranks, not a regular file) are made here. Every run
# has a time limit, so a reader that loops or blocks fails instead of
# hanging the suite.
#
# test_cli.sh BIN bf16_accuracy: only this, apart (two epochs, minutes
# under load): bf16 learns as well as fp32, LeNet's test accuracy after one
# epoch of Fashion-MNIST within 1 point; exit 77 (SKIPPED) without the
# processor's bfloat16 instructions or the data set.
set -u
BIN=${1:?usage: test_cli.sh path/to/ddptop [bf16_accuracy]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/cpu.sh"
if [ "${2:-}" = bf16_accuracy ]; then
    cpu_bf16 || { echo "$cpu_why: bf16 is refused here (SKIPPED)"; exit 77; }
    [ -d /usr/share/datasets/fashion-mnist ] || { echo "no /usr/share/datasets/fashion-mnist: SKIPPED"; exit 77; }
    for p in fp32 bf16; do
        timeout 240 "$BIN" --batch --quiet --dataset fashion-mnist --device cpu --model lenet --epochs 1 \
            --precision $p --format json >"$tmp/acc_$p.json" 2>"$tmp/err_$p"
    done
    /usr/bin/python3 - "$tmp/acc_fp32.json" "$tmp/acc_bf16.json" <<'PY' || { cat "$tmp/err_fp32" "$tmp/err_bf16"; exit 1; }
import json, sys
a, b = (json.load(open(p))["runs"][0]["test_acc"] for p in sys.argv[1:3])
print("  lenet, 1 epoch of fashion-mnist: test accuracy %.2f%% in fp32, %.2f%% in bf16" % (a, b))
sys.exit(0 if a > 80 and abs(a - b) <= 1.0 else 1)
PY
    exit 0
fi
# a tiny MNIST-shaped set (256 blank images): the refusals and one-step
# runs that need no particular data load it at once (the synthetic set
# takes a second to generate, several under load)
/usr/bin/python3 - "$tmp/tiny" <<'PY'
import os, struct, sys
d = sys.argv[1]
os.makedirs(d)
for split in ("train", "t10k"):
    with open(os.path.join(d, split + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, 256, 28, 28) + bytes(256 * 784))
    with open(os.path.join(d, split + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, 256) + bytes(256))
PY
fast=(--dataset mnist --data-dir "$tmp/tiny")
fails=0 passes=0

# expect_error "what" "phrase that must appear" args...
expect_error() {
    local what=$1 phrase=$2
    shift 2
    timeout 60 "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local st=$? lines
    lines=$(wc -l <"$tmp/err")
    if [ "$st" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$phrase" "$tmp/err"; then
        echo "FAIL: $what: status $st, $lines stderr lines, want 2 / 1 line containing '$phrase':"
        sed 's/^/    /' "$tmp/err"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}

# tally STATUS "what" [file...]: counts a check by its exit status; a
# failure says what, and shows the files (its stderr, its report)
tally() {
    local st=$1 what=$2
    shift 2
    if [ "$st" -eq 0 ]; then
        passes=$((passes + 1))
    else
        echo "FAIL: $what"
        [ $# -gt 0 ] && sed 's/^/    /' "$@"
        fails=$((fails + 1))
    fi
}

expect_ok() {
    local what=$1 phrase=$2
    shift 2
    if ! timeout 60 "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || ! grep -qF -- "$phrase" "$tmp/out"; then
        echo "FAIL: $what"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}

expect_ok "--help" "Usage: ddptop" --help
expect_ok "--version" "ddptop " --version
# --version names the processor (its /proc/cpuinfo model name) and the cap
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
expect_ok "--version names the CPU" "cpu: ${model:-unknown CPU}, kernels on " --version
if grep -qw avx2 /proc/cpuinfo; then
    DDPTOP_MAX_CPU_ISA=avx2 expect_ok "--version under DDPTOP_MAX_CPU_ISA=avx2" "kernels on avx2" --version
    ONEDNN_MAX_CPU_ISA=AVX2 expect_ok "--version under ONEDNN_MAX_CPU_ISA=AVX2: ddptop's loops follow" \
        "kernels on avx2" --version
fi
expect_ok "--help lists models" "lenet" --help
expect_ok "--help lists --gpus" "--gpus" --help
expect_ok "a good --gpus list" "conv1" --model lenet --info --gpus 0,1,3
# which of the two lines depends on the machine, told from outside ddptop:
# with a GPU (the driver's device nodes), no GPU 1023; without one, none
if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    expect_error "--gpus 1023 with --device cuda on a GPU machine" "--gpus: there is no GPU 1023" --model lenet \
        --info --device cuda --gpus 1023
elif [ -e "$(dirname "$BIN")/libddptop-cuda.so" ]; then
    expect_error "--gpus 1023 with --device cuda without a GPU" "--device cuda: no GPU is present" --model lenet \
        --info --device cuda --gpus 1023
else # (a build without the CUDA module)
    expect_error "--gpus 1023 with --device cuda in a build without CUDA" "--device cuda" --model lenet --info \
        --device cuda --gpus 1023
fi

expect_error "--classes 1" "--classes" --batch --classes 1
expect_error "--classes fewer than the data's" "--classes 9: synthetic has 10 classes" --batch --dataset synthetic \
    --classes 9 --steps 1
expect_ok "--info at 224: the ImageNet form, 1000 classes" \
    "squeezenet1_0 on 3x224x224 (synthetic), 1000 classes, the ImageNet form" --info --model squeezenet1_0 \
    --dataset synthetic --input 3x224x224
expect_ok "--info --classes" "lenet on 1x28x28 (synthetic), 37 classes" --info --model lenet --dataset synthetic --classes 37
expect_ok "training with --classes" "lenet " --batch --quiet --model lenet --dataset synthetic --classes 100 --steps 3 --no-eval \
    --ranks 2 --batch-size 8
expect_error "--ranks 0" "--ranks" --batch --ranks 0
expect_error "--ranks abc" "--ranks" --batch --ranks abc
expect_error "negative batch size" "--batch-size" --batch --batch-size -5
expect_error "zero batch size" "--batch-size" --batch --batch-size 0
expect_error "unknown model" "unknown model" --batch --model resnet1000
expect_error "unknown strategy" "--strategy" --batch --strategy magic
expect_error "unknown dataset" "--dataset" --batch --dataset imagenet
expect_error "bad format" "--format" --batch --format xml
expect_error "bad lr" "--lr" --batch --lr -1
expect_error "bad epochs" "--epochs" --batch --epochs 0
expect_error "bad device" "--device" --batch --device tpu
expect_error "--gpus not a number" "--gpus" --batch --gpus a
expect_error "--gpus entry not a number" "--gpus" --batch --gpus 0,a
expect_error "--gpus negative" "--gpus" --batch --gpus -1
expect_error "--gpus duplicate" "--gpus" --batch --gpus 0,0
expect_error "--gpus empty" "--gpus" --batch --gpus ""
expect_error "--gpus empty entry" "--gpus" --batch --gpus 0,,1
expect_error "--gpus 1024" "--gpus" --batch --gpus 1024
expect_error "--gpus 17 entries" "--gpus" --batch --gpus 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
expect_error "--gpus with --device cpu" "--device cpu" --batch --device cpu --gpus 0
expect_error "--gpus before --device cpu" "--device cpu" --batch --gpus 0,1 --device cpu
expect_error "unknown option" "--frobnicate" --batch --frobnicate
expect_error "missing value" "--model" --batch --model
expect_error "stray argument" "stray" --batch stray
expect_error "slow rank out of range" "--slow-rank" --batch --ranks 2 --slow-rank 5:2
# --input: the synthetic set's shape; a data set of files has its own, and
# every model of the run must take the shape (one line, before any run)
expect_error "--input with a data set of files" "--input: only with --dataset synthetic" --batch \
    --dataset fashion-mnist --input 3x32x32
expect_error "--input a model cannot take" "--input 1x8x8: lenet: conv2:" --batch --dataset synthetic \
    --input 1x8x8 --model mlp,lenet --steps 1
expect_ok "--input 3x32x32 trains LeNet on CIFAR-10's shape" "synth-3x32x32" --batch --dataset synthetic \
    --input 3x32x32 --model lenet --ranks 1 --steps 2 --no-eval
expect_error "bad slow rank" "--slow-rank" --batch --slow-rank x
expect_error "fault on a rank that does not exist" "--inject-fault: rank 2" --batch --ranks 2 \
    --inject-fault rank=2,step=1,kind=hang
expect_error "bad bytes" "--max-bytes" --bench-comm --max-bytes 12Q
expect_error "--bench-comm with a list of ranks" "--bench-comm: one --ranks at a time" --bench-comm --ranks 2,4
expect_error "--output over the --trace file" "--output: t.json is the --trace file too" --batch --trace t.json \
    --output t.json
expect_error "nccl on the CPU" "--comm nccl" --batch "${fast[@]}" --device cpu --comm nccl
expect_error "--comm mpi without mpirun" "--comm mpi: start ddptop under mpirun" --batch "${fast[@]}" --comm mpi
expect_error "--fusion-mb 0" "--fusion-mb" --batch --fusion-mb 0
for l in 25GB/s 25GB/s,5 25GX/s,5us ,5us 0GB/s,5us 25GB/s,-1us x,y; do
    expect_error "--link $l" "--link" --batch --link "$l"
done
expect_error "--predict-ranks 1" "--predict-ranks" --batch --predict-ranks 1
expect_error "--cycle-ms negative" "--cycle-ms" --batch --cycle-ms -1
expect_error "--cupti-sample 0" "--cupti-sample" --batch --cupti-sample 0
expect_error "--schedule unknown" "--schedule" --batch --schedule zigzag
# --precision: TF32 and fp16 are a GPU's, and bf16 needs the processor's
# bfloat16 instructions (oneDNN's emulation is slower than fp32): one line
# each, in training, in --info, and before any data set loads
expect_error "--precision tf32 on the CPU" "--precision tf32: needs a GPU (--device cuda)" --batch \
    "${fast[@]}" --device cpu --precision tf32 --steps 1
expect_error "--precision tf32 with --info on the CPU" "--precision tf32: needs a GPU" --info --device cpu \
    --precision tf32
expect_error "--precision fp16 on the CPU" "--precision fp16: needs a GPU (--device cuda)" --batch \
    "${fast[@]}" --device cpu --precision fp16 --steps 1
expect_error "--precision fp16 with --info on the CPU" "--precision fp16: needs a GPU" --info --device cpu \
    --precision fp16
# (DNNL_MAX_CPU_ISA: oneDNN as on a processor without them; DDPTOP_MAX_CPU_ISA:
# ddptop's own cap, which caps oneDNN too)
DNNL_MAX_CPU_ISA=AVX2 expect_error "--precision bf16 without AVX512_BF16" \
    "--precision bf16: this processor has no bfloat16 instructions" --batch "${fast[@]}" --device cpu \
    --precision bf16 --steps 1
DNNL_MAX_CPU_ISA=AVX2 expect_error "--precision bf16 with --info without AVX512_BF16" \
    "--precision bf16: this processor has no bfloat16 instructions" --info --device cpu --precision bf16
DDPTOP_MAX_CPU_ISA=avx2 expect_error "--precision bf16 under DDPTOP_MAX_CPU_ISA=avx2" \
    "--precision bf16: this processor has no bfloat16 instructions" --batch "${fast[@]}" --device cpu \
    --precision bf16 --steps 1
DDPTOP_MAX_CPU_ISA=avx3 expect_error "a DDPTOP_MAX_CPU_ISA that names no instruction set" \
    "DDPTOP_MAX_CPU_ISA=avx3: expected one of avx2, avx512_core, avx512_core_bf16, all" --batch "${fast[@]}" \
    --steps 1
precisions=fp32
if cpu_bf16; then
    precisions="fp32 bf16"
else
    echo "($cpu_why: bf16 must be refused, and is not run)"
    expect_error "--precision bf16 here" "--precision bf16: this processor has no bfloat16 instructions" --batch \
        "${fast[@]}" --device cpu --precision bf16 --steps 1
fi
expect_error "--precision unknown" "--precision: unknown precision; expected one of fp32, tf32, bf16, fp16" \
    --batch --precision nonsense
expect_error "--cudnn-algo unknown" "--cudnn-algo: unknown algorithm choice" --batch --cudnn-algo guess
expect_error "--loss-scale unknown" "--loss-scale: unknown loss scaling; expected one of none, dynamic" --batch \
    --loss-scale maybe
# an overflow under the dynamic scaler: the step is skipped, the report and
# JSON say so, the run ends well, and its trace replays to the same
timeout 60 "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --strategy ddp --steps 12 --no-eval \
    --loss-scale dynamic --inject-fault rank=1,step=3,kind=overflow --format json --trace "$tmp/ls_trace.json" \
    >"$tmp/ls.json" 2>"$tmp/err" &&
    timeout 60 "$BIN" --batch --replay "$tmp/ls_trace.json" --format json >"$tmp/ls_replay.json" 2>>"$tmp/err" &&
    /usr/bin/python3 -c 'import json, sys; r, p = (json.load(open(f))["runs"][0] for f in sys.argv[1:3]); sys.exit(0 if (r["steps_skipped"], r["loss_scale"]) == (1, 32768) == (p["steps_skipped"], p["loss_scale"]) else 1)' "$tmp/ls.json" "$tmp/ls_replay.json"
tally $? "an overflow under --loss-scale dynamic is skipped, reported and replayed" "$tmp/err"
# the same under dp (rank 0 judges) and across pipeline stages (the stages
# agree): one step skipped, on every rank, the scale halved once
for spec in "--strategy dp" "--parallel pipeline --micro-batches 2"; do
    # shellcheck disable=SC2086 # (spec: options)
    timeout 60 "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 $spec --steps 8 --no-eval \
        --loss-scale dynamic --inject-fault rank=0,step=3,kind=overflow --format json >"$tmp/ls2.json" 2>"$tmp/err" &&
        /usr/bin/python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]; sys.exit(0 if (r["steps_skipped"], r["loss_scale"]) == (1, 32768) else 1)' "$tmp/ls2.json"
    tally $? "an overflow under --loss-scale dynamic with $spec is skipped and reported" "$tmp/err" "$tmp/ls2.json"
done
# fp32 (and bf16 where the processor has it) runs, and says so in the
# report, in the trace's run description and in the report of its replay;
# --info names the kernels bf16's convolutions take
for p in $precisions; do
    timeout 60 "$BIN" --batch --quiet --dataset synthetic --device cpu --model lenet --ranks 1 --steps 2 \
        --no-eval --precision $p --format json --trace "$tmp/prec.json" >"$tmp/prec_report.json" 2>"$tmp/err" &&
        timeout 60 "$BIN" --batch --replay "$tmp/prec.json" --format json >"$tmp/prec_replay.json" 2>>"$tmp/err" &&
        /usr/bin/python3 - "$tmp/prec_report.json" "$tmp/prec.json" "$tmp/prec_replay.json" $p 2>>"$tmp/err" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))["runs"][0]["precision"]
meta = json.load(open(sys.argv[2]))["ddptop"]["run"].get("precision")
replay = json.load(open(sys.argv[3]))["runs"][0]["precision"]
if (live, meta, replay) != (sys.argv[4],) * 3:
    sys.exit("precision: report %r, trace %r, replay %r" % (live, meta, replay))
PY
    tally $? "--precision $p runs and is named in the report, the trace and the replay" "$tmp/err"
done
if [ "$precisions" != fp32 ]; then
    expect_ok "--info --precision bf16 names bf16 kernels" "avx512_core_bf16" --info --device cpu --model resnet18 \
        --dataset synthetic --input 3x32x32 --precision bf16
fi
# a sweep of ways to train: data parallelism with each strategy, a pipeline
# with each micro-batch count (no strategy), model parallelism once
"$BIN" --batch --quiet --dataset synthetic --device cpu --model mlp --ranks 2 --steps 2 --no-eval \
    --parallel data,pipeline,model --micro-batches 2,4 --strategy allreduce,ddp --format csv >"$tmp/sweep.csv" 2>/dev/null
got=$(awk -F, '$2 == "all" {printf "%s/%s/%s ", $5, $8, $9}' "$tmp/sweep.csv")
if [ "$got" = "allreduce/32/64 ddp/32/64 pipeline/32/32 pipeline/32/32 model/32/32 " ]; then
    passes=$((passes + 1))
else
    echo "FAIL: the --parallel sweep ran: $got"
    fails=$((fails + 1))
fi
expect_error "micro-batches not dividing the batch" "--micro-batches 3: must divide --batch-size 32" --batch \
    "${fast[@]}" --device cpu --parallel pipeline --micro-batches 3 --ranks 2 --steps 1
expect_error "--partition with data parallelism" "--partition: only with --parallel model or pipeline" --batch \
    "${fast[@]}" --device cpu --partition 0:3,4:11 --steps 1
expect_error "--partition leaving a gap" "--partition: range 5:11 must start at layer 4" --batch "${fast[@]}" \
    --device cpu --model lenet --parallel model --ranks 2 --partition 0:3,5:11 --steps 1
expect_error "--partition for more stages" "--partition: more ranges than the 2 stages" --batch \
    "${fast[@]}" --device cpu --model lenet --parallel model --ranks 2 --partition 0:3,4:7,8:11 --steps 1
expect_error "--partition short of the last layer" "--partition: 2 ranges ending at layer 9; 2 stages" --batch \
    "${fast[@]}" --device cpu --model lenet --parallel model --ranks 2 --partition 0:3,4:9 --steps 1
expect_error "--grad-compress with stages" "--grad-compress: with --parallel model" --batch "${fast[@]}" \
    --device cpu --parallel model --ranks 2 --grad-compress fp16 --steps 1
expect_error "--check-replicas with stages" "--check-replicas: with --parallel pipeline" --batch "${fast[@]}" \
    --device cpu --parallel pipeline --ranks 2 --check-replicas --steps 1
expect_error "fp16 with gather-scatter" "--grad-compress fp16: only the allreduce, ddp and horovod" --batch \
    "${fast[@]}" --device cpu --strategy gather-scatter --grad-compress fp16 --steps 1
# a sweep's --grad-compress is not single's: it sends no gradients
expect_ok "single compresses nothing" ",single,none," --batch --quiet "${fast[@]}" --device cpu \
    --strategy single,allreduce --grad-compress fp16 --steps 2 --no-eval --format csv
expect_error "--dp with data parallelism" "--dp 2: replicas of stages (--parallel model|pipeline)" --batch \
    "${fast[@]}" --device cpu --ranks 4 --dp 2 --steps 1
expect_error "--dp not dividing the ranks" "--dp 2: --ranks 3 is not 2 replicas of up to 64 stages" --batch \
    "${fast[@]}" --device cpu --model lenet --parallel pipeline --ranks 3 --dp 2 --steps 1
expect_error "--dp with a partition for more stages" "--partition: more ranges than the 2 stages" --batch \
    "${fast[@]}" --device cpu --model lenet --parallel model --ranks 4 --dp 2 --partition 0:2,3:5,6: --steps 1
expect_error "batch larger than data" "--batch-size" --batch --dataset synthetic --batch-size 65536 --ranks 2
expect_error "--trace in a folder that is not there" "--trace: cannot write $tmp/none/t.json: No such file or directory" \
    --batch --dataset synthetic --steps 1 --trace "$tmp/none/t.json"
for o in "--trace-steps 1:5" "--trace-ranks 0" "--trace-split"; do
    set -- $o
    expect_error "$1 without --trace" "$1: only with --trace FILE" --batch --steps 1 "$@"
done
# --rendezvous tcp:HOST:PORT: a port from 1 to 65535, each edge and one past
# it (--help last: a value taken is parsed, then nothing runs)
for port in 0 65536; do
    expect_error "--rendezvous port $port" \
        "--rendezvous: expected tcp:HOST:PORT, process 0's host and a port from 1 to 65535 (got 'tcp:127.0.0.1:$port')" \
        --rendezvous tcp:127.0.0.1:$port
done
for port in 1 65535; do
    expect_ok "--rendezvous port $port" "Usage: ddptop" --rendezvous tcp:127.0.0.1:$port --help
done

# Every option, with a value it takes. --help must list exactly these (one
# table drives the parser and --help), and the parser must take each value
# (--help last: the values are parsed, then nothing runs).
all_options=(
    --batch "" --info "" --replay t.json --follow /tmp --idle-exit 5 --window hta --idle-delay-ns 30000
    --bench-comm ""
    --model lenet --dataset synthetic --input 3x32x32 --data-dir /tmp --classes 10 --ranks 2 --ranks-per-process 1
    --rendezvous file:/tmp --batch-size 8 --strategy ddp --epochs 2
    --steps 5 --no-eval "" --trainable classifier --parallel pipeline --micro-batches 2 --schedule gpipe
    --partition 0:5,6:11 --dp 1
    --lr 0.1 --momentum 0.5 --weight-decay 0.01 --warmup-steps 3 --lr-decay none --scale-lr "" --base-batch 64
    --seed 7
    --device cpu --gpus 0 --comm shm --algo naive --threads-per-rank 2 --bucket-mb 4 --no-overlap ""
    --fusion-mb 8 --cycle-ms 2.5 --predict "" --predict-ranks 2,8 --link 100Gb/s,5us
    --no-broadcast-buffers "" --no-cupti "" --cupti-sample 10 --grad-compress fp16 --slow-rank 1:2 --check-replicas ""
    --precision tf32 --cudnn-algo heuristic --loss-scale dynamic --loss-scale-interval 100
    --comm-timeout 5 --inject-fault kind=nan,rank=1,step=3
    --format json --output out.json --plot figs --loss-threshold 0.5 --quiet "" --baseline ranks1 --repeat 2
    --history h.csv --history-every 5 --save-params p.bin
    --theme light --refresh-ms 50
    --trace t.json --trace-steps 1:5 --trace-ranks 0,1 --trace-split ""
    --collective gather --min-bytes 1K --max-bytes 1M --factor 4 --iters 3 --warmup 1
    --help "" --version ""
)
want_names=() args=()
for ((i = 0; i < ${#all_options[@]}; i += 2)); do
    want_names+=("${all_options[i]#--}")
    case ${all_options[i]} in --help | --version) continue ;; esac
    args+=("${all_options[i]}")
    [ -n "${all_options[i + 1]}" ] && args+=("${all_options[i + 1]}")
done
expect_ok "every option takes a good value" "Usage: ddptop" "${args[@]}" --help
"$BIN" --help >"$tmp/help"
listed=$(sed -n 's/^  \(-., \)\{0,1\}--\([a-z0-9-]*\).*/\2/p' "$tmp/help" | sort)
if [ "$listed" != "$(printf '%s\n' "${want_names[@]}" | sort)" ]; then
    echo "FAIL: --help lists other options than the parser's:"
    diff <(printf '%s\n' "${want_names[@]}" | sort) <(echo "$listed") | sed 's/^/    /'
    fails=$((fails + 1))
else
    passes=$((passes + 1))
fi
for want in "--ranks N[,N..]" "default 2" "default 64M" "default 0.05" "default allreduce" "--device auto|cpu|cuda" \
    "an integer from 1 to 64" "a number from 0 to 0.9999"; do
    if grep -qF -- "$want" "$tmp/help"; then passes=$((passes + 1)); else
        echo "FAIL: --help does not show '$want'"; fails=$((fails + 1))
    fi
done

# Bounds: the value at each edge is taken; one step past it is refused with
# one line naming the option and the bound.
lows=(--ranks 1 --batch-size 1 --epochs 1 --steps 1 --lr 1e-12 --momentum 0 --weight-decay 0 --warmup-steps 0
    --seed 0 --gpus 0 --threads-per-rank 1 --bucket-mb 0.001 --slow-rank 0:1 --loss-threshold 1e-12 --refresh-ms 10
    --trace-steps 0:0 --trace-ranks 0 --min-bytes 4 --max-bytes 4 --factor 2 --iters 1 --warmup 0 --trainable last:1
    --comm-timeout 0.001 --inject-fault rank=0,step=0,kind=crash --repeat 1 --history-every 1 --baseline 0
    --input 1x8x8 --base-batch 1)
highs=(--ranks 64 --batch-size 65536 --epochs 100000 --steps 9223372036854775807 --lr 100 --momentum 0.9999
    --weight-decay 1 --warmup-steps 2147483647 --seed 18446744073709551615 --gpus 1023 --threads-per-rank 1024
    --bucket-mb 4096 --slow-rank 63:1000 --loss-threshold 1000000 --refresh-ms 10000 --trace-ranks 63 --min-bytes 8G
    --trace-steps 9223372036854775807:9223372036854775807
    --max-bytes 8G --factor 1024 --iters 1000000 --warmup 1000000 --trainable last:100000 --comm-timeout 86400
    --ranks 64 --inject-fault rank=63,step=9223372036854775807,kind=comm-error --repeat 1000
    --history-every 9223372036854775807 --input 3x1024x1024 --base-batch 2147483647)
expect_ok "every lower bound is taken" "Usage: ddptop" "${lows[@]}" --help
expect_ok "every upper bound is taken" "Usage: ddptop" "${highs[@]}" --help
past=(
    --ranks 0 "from 1 to 64" --ranks 65 "from 1 to 64"
    --batch-size 0 "from 1 to 65536" --batch-size 65537 "from 1 to 65536"
    --epochs 0 "from 1 to 100000" --epochs 100001 "from 1 to 100000"
    --steps 0 "positive integer" --steps 9223372036854775808 "positive integer"
    --lr 9e-13 "from 1e-12 to 100" --lr 100.001 "from 1e-12 to 100"
    --momentum -0.001 "from 0 to 0.9999" --momentum 0.99991 "from 0 to 0.9999"
    --weight-decay -0.001 "from 0 to 1" --weight-decay 1.001 "from 0 to 1"
    --warmup-steps -1 "non-negative integer" --warmup-steps 2147483648 "non-negative integer"
    --base-batch 0 "positive integer" --base-batch 2147483648 "positive integer"
    --seed -1 "non-negative integer" --seed 18446744073709551616 "non-negative integer"
    --gpus -1 "from 0 to 1023" --gpus 1024 "from 0 to 1023"
    --threads-per-rank 0 "from 1 to 1024" --threads-per-rank 1025 "from 1 to 1024"
    --bucket-mb 0.0009 "from 0.001 to 4096" --bucket-mb 4096.001 "from 0.001 to 4096"
    --slow-rank -1:1 "from 0 to 63" --slow-rank 64:1 "from 0 to 63"
    --slow-rank 0:0.999 "from 1 to 1000" --slow-rank 0:1000.001 "from 1 to 1000"
    --loss-threshold 9e-13 "from 1e-12 to 1000000" --loss-threshold 1000001 "from 1e-12 to 1000000"
    --refresh-ms 9 "from 10 to 10000" --refresh-ms 10001 "from 10 to 10000"
    --trace-steps -1:0 "0 <= A <= B" --trace-steps 1:0 "0 <= A <= B"
    --trace-steps 0:9223372036854775808 "0 <= A <= B" --trace-steps 9223372036854775808: "0 <= A <= B"
    --trace-ranks -1 "from 0 to 63" --trace-ranks 64 "from 0 to 63"
    --min-bytes 3 "from 4 to 8G" --min-bytes 8589934593 "from 4 to 8G"
    --max-bytes 3 "from 4 to 8G" --max-bytes 8589934593 "from 4 to 8G"
    --factor 1 "from 2 to 1024" --factor 1025 "from 2 to 1024"
    --iters 0 "from 1 to 1000000" --iters 1000001 "from 1 to 1000000"
    --warmup -1 "from 0 to 1000000" --warmup 1000001 "from 0 to 1000000"
    --trainable last:0 "K from 1 to 100000" --trainable last:100001 "K from 1 to 100000"
    --comm-timeout 0.0009 "from 0.001 to 86400" --comm-timeout 86400.1 "from 0.001 to 86400"
    --repeat 0 "from 1 to 1000" --repeat 1001 "from 1 to 1000"
    --history-every 0 "positive integer" --history-every 9223372036854775808 "positive integer"
    --baseline -1 "auto, single, ranks1" --baseline fastest "auto, single, ranks1"
    --input 0x8x8 "C from 1 to 3" --input 4x8x8 "C from 1 to 3" --input 1x7x8 "H and W from 8 to 1024"
    --input 1x8x1025 "H and W from 8 to 1024" --input 3x32 "CxHxW" --input 3x32x32x1 "CxHxW" --input 3X32X32 "CxHxW"
    --inject-fault rank=-1,step=0,kind=nan "rank R from 0 to 63" --inject-fault rank=64,step=0,kind=nan "from 0 to 63"
    --inject-fault rank=0,step=-1,kind=nan "step S from 0" --inject-fault rank=0,step=1,kind=boom "nan, crash, hang"
    --inject-fault rank=0,step=9223372036854775808,kind=nan "step S from 0"
    --inject-fault rank=0,step=1 "kind=K" --inject-fault rank=0,rank=1,kind=nan "rank=R,step=S,kind=K"
)
for ((i = 0; i < ${#past[@]}; i += 3)); do
    expect_error "${past[i]} ${past[i + 1]}" "${past[i]}: " "${past[i]}" "${past[i + 1]}"
    grep -qF -- "${past[i + 2]}" "$tmp/err" || {
        echo "FAIL: ${past[i]} ${past[i + 1]}: the error does not say '${past[i + 2]}'"
        fails=$((fails + 1))
    }
done

# Bounds set by another option, checked once every option is read (so not
# with --help, which stops the parse: a one-step run parses, then trains):
# the last rank is taken, the next refused, in every run of a sweep
one=(--batch --quiet "${fast[@]}" --model mlp --steps 1 --batch-size 2 --no-eval)
expect_ok "--slow-rank on the last rank" "mlp " "${one[@]}" --ranks 2 --slow-rank 1:2
expect_error "--slow-rank one past the last rank" "--slow-rank: rank 2 does not exist with --ranks 2" \
    "${one[@]}" --ranks 2 --slow-rank 2:2
expect_error "--slow-rank past the last rank of a sweep's smallest run" "rank 1 does not exist with --ranks 1" \
    "${one[@]}" --ranks 2,1 --slow-rank 1:2
expect_ok "--inject-fault on the last rank" "mlp " "${one[@]}" --ranks 2 --inject-fault rank=1,step=0,kind=slow
expect_error "--inject-fault one past the last rank of a sweep" "rank 2 does not exist with --ranks 2" \
    "${one[@]}" --ranks 3,2 --inject-fault rank=2,step=0,kind=nan
HOME=$tmp expect_ok "--min-bytes equal to --max-bytes" "4K " --bench-comm --ranks 2 --min-bytes 4K --max-bytes 4K \
    --iters 1 --warmup 0
expect_error "--min-bytes one past --max-bytes" "--min-bytes: larger than --max-bytes" --bench-comm \
    --min-bytes 4097 --max-bytes 4K

# One mode at a time, and no option that the mode would ignore without a
# word: a replay reads the trace, not a workload; --info a model, not a run;
# --bench-comm collectives, not a model; training no benchmark's sizes
expect_error "--info with --bench-comm" "--info and --bench-comm: one mode at a time" --info --bench-comm
expect_error "--replay with --info" "--info and --replay: one mode at a time" --replay t.json --info
expect_error "--replay with a workload" "--model: does not apply to --replay" --batch --replay t.json --model mlp
expect_error "--replay with --trace" "--trace: does not apply to --replay" --batch --replay t.json --trace o.json
expect_error "--replay with --history" "--history: does not apply to --replay" --replay t.json --history h.csv
expect_error "--info with --ranks" "--ranks: does not apply to --info" --info --ranks 2
expect_error "--info with --format" "--format: does not apply to --info" --info --format json
expect_error "--bench-comm with a model" "--model: does not apply to --bench-comm" --bench-comm --model lenet
expect_error "training with --iters" "--iters: only with --bench-comm" --batch --iters 3
expect_error "--predict without a 1-rank run" "--predict: a 1-rank run predicts more ranks, and --ranks has none" \
    --batch --predict --ranks 2,4
expect_error "--predict with --info" "--predict: does not apply to --info" --info --predict
expect_error "--comm-timeout with --bench-comm" "--comm-timeout: does not apply to --bench-comm" --bench-comm \
    --comm-timeout 1
expect_error "--link without --predict" "--link: only with --predict" --batch --link 10GB/s,5us
expect_error "--predict-ranks without --predict" "--predict-ranks: only with --predict" --batch --predict-ranks 4
expect_error "--history-every without --history" "--history-every: only with --history" --batch --history-every 5
expect_error "--base-batch without --scale-lr" "--base-batch: only with --scale-lr" --batch --base-batch 64
# options that no run of the sweep reads: a strategy's own, a pipeline's, the UI's
one=(--steps 1 --dataset synthetic --no-eval) # (a short run where a refusal is missing)
expect_error "--strategy with only stages" "--strategy: only with --parallel data" --batch --strategy ddp \
    --parallel pipeline "${one[@]}"
expect_error "--micro-batches without a pipeline" "--micro-batches: only with --parallel pipeline" --batch \
    --micro-batches 4 "${one[@]}"
expect_error "--micro-batches with model parallelism" "--micro-batches: only with --parallel pipeline" --batch \
    --parallel model --micro-batches 4 "${one[@]}"
expect_error "--schedule without a pipeline" "--schedule: only with --parallel pipeline" --batch \
    --schedule gpipe "${one[@]}"
expect_error "--bucket-mb without ddp" "--bucket-mb: only with --strategy ddp, which no run of this sweep uses" \
    --batch --bucket-mb 5 --strategy allreduce "${one[@]}"
expect_error "--bucket-mb with stages only" "--bucket-mb: only with --parallel data" --batch --bucket-mb 5 \
    --parallel model "${one[@]}"
expect_error "--no-overlap without ddp" "--no-overlap: only with --strategy ddp" --batch --no-overlap \
    --strategy horovod "${one[@]}"
expect_error "--fusion-mb without horovod" "--fusion-mb: only with --strategy horovod" --batch --fusion-mb 8 \
    --strategy ddp "${one[@]}"
expect_error "--cycle-ms without horovod" "--cycle-ms: only with --strategy horovod" --batch --cycle-ms 2 "${one[@]}"
expect_error "--theme with --batch" "--theme: only in the interactive UI, not with --batch" --batch \
    --theme light "${one[@]}"
expect_error "--refresh-ms with --batch" "--refresh-ms: only in the interactive UI, not with --batch" --batch \
    --refresh-ms 50 "${one[@]}"
# options that no run would read, each taken once without a word (exit 0):
# one line each now, naming the option and why, exit 2
expect_error "--loss-scale-interval without dynamic scaling" \
    "--loss-scale-interval: only with dynamic loss scaling (--loss-scale dynamic" --batch --loss-scale-interval 100 \
    "${one[@]}"
expect_error "--loss-scale-interval with --loss-scale none" "--loss-scale-interval: only with dynamic loss scaling" \
    --batch --loss-scale none --loss-scale-interval 100 "${one[@]}"
for o in "--cupti-sample 10" "--no-cupti" "--cudnn-algo heuristic"; do
    set -- $o
    expect_error "$1 with --device cpu" "$1: only on a GPU, and --device cpu has none" --batch --device cpu "$@" \
        "${one[@]}"
done
expect_error "--cudnn-algo with --info --device cpu" "--cudnn-algo: only on a GPU" --info --device cpu \
    --cudnn-algo find
expect_error "--data-dir with --dataset synthetic" "--data-dir: not with --dataset synthetic, which makes its data" \
    --batch --data-dir "$tmp/tiny" "${one[@]}"
for o in "--grad-compress fp16" "--check-replicas"; do
    set -- $o
    expect_error "$1 with --strategy single" "$1: not with --strategy single alone" --batch --strategy single "$@" \
        "${one[@]}"
done
expect_error "--inject-fault at --steps (one past the last, from 0)" \
    "--inject-fault: step 5 is past the run's last (--steps 5 runs steps 0 to 4)" --batch --steps 5 \
    --dataset synthetic --no-eval --inject-fault rank=1,step=5,kind=nan
expect_error "--trace-steps beyond the run" "--trace-steps: step 5 is past the run's last (--steps 5" --batch \
    --steps 5 --dataset synthetic --no-eval --trace "$tmp/ts.json" --trace-steps 5:9
expect_error "--output twice" "--output: given twice ('$tmp/a.txt', then '$tmp/b.txt')" --batch \
    --output "$tmp/a.txt" --output "$tmp/b.txt" "${one[@]}"
expect_error "--save-params in a sweep" "--save-params: one file for the 2 runs of this sweep" --batch --ranks 1,2 \
    --save-params "$tmp/p.bin" "${one[@]}"
expect_error "--save-params with --repeat 3" "--save-params: one file for the 3 runs of this sweep" --batch \
    --repeat 3 --save-params "$tmp/p.bin" "${one[@]}"
# ... each accepted where some run reads it (the UI plans any strategy later)
expect_ok "--loss-scale-interval with dynamic scaling" "lenet" --batch --quiet --loss-scale dynamic \
    --loss-scale-interval 100 --steps 2 --dataset synthetic --no-eval --batch-size 8
expect_ok "--inject-fault at the last step" "mlp " --batch --quiet "${fast[@]}" --model mlp --steps 2 --batch-size 2 \
    --no-eval --inject-fault rank=1,step=1,kind=slow
expect_ok "--bucket-mb in a sweep with ddp" "ddp" --batch --quiet --dataset synthetic --model mlp --ranks 2 \
    --strategy allreduce,ddp --bucket-mb 5 --steps 2 --no-eval
expect_ok "--micro-batches in a sweep with a pipeline" "pipe-1f1b/2" --batch --quiet --dataset synthetic \
    --model lenet --ranks 2 --parallel data,pipeline --micro-batches 2 --batch-size 8 --steps 2 --no-eval
expect_ok "--bucket-mb without --batch (the UI's n picks ddp later)" "Usage: ddptop" --bucket-mb 5 \
    --strategy allreduce --help
# a sweep list names each value once: a value twice would run twice
expect_error "--ranks 2,2" "--ranks: 2 is in the list twice" --batch --ranks 2,2 "${one[@]}"
expect_error "--model lenet,lenet" "--model: lenet is in the list twice" --batch --model lenet,lenet "${one[@]}"
expect_error "--model mlp,mlp (shorter than the default's name)" "--model: mlp is in the list twice" --batch \
    --model mlp,mlp "${one[@]}"
expect_error "--batch-size 8,16,8" "--batch-size: 8 is in the list twice" --batch --batch-size 8,16,8 "${one[@]}"
expect_error "--strategy ddp,ddp" "--strategy: ddp is in the list twice" --batch --strategy ddp,ddp "${one[@]}"
expect_error "--parallel model,model" "--parallel: model is in the list twice" --batch --parallel model,model \
    "${one[@]}"
expect_error "--micro-batches 2,2" "--micro-batches: 2 is in the list twice" --batch --parallel pipeline \
    --micro-batches 2,2 "${one[@]}"

# lists hold 16 entries; text fields their length
sixteen() { local v=$1; printf %s "$v"; for _ in $(seq 15); do printf ",%s" "$v"; done; }
# (distinct values: a sweep runs each once; there are fewer models and strategies)
expect_ok "lists of 16 entries" "Usage: ddptop" --ranks "$(seq -s, 1 16)" --batch-size "$(seq -s, 8 23)" \
    --gpus 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 --help
for o in "--ranks 2" "--batch-size 8" "--model lenet" "--strategy ddp"; do
    set -- $o
    expect_error "$1 with 17 entries" "$1: " "$1" "$(sixteen "$2"),$2"
done
chars() { head -c "$1" /dev/zero | tr '\0' x; }
expect_ok "text at its longest" "Usage: ddptop" --theme "$(chars 31)" --output "$(chars 1023)" \
    --data-dir "$(chars 1023)" --replay "$(chars 1023)" --trace "$(chars 991)" --help
for o in "--theme 32" "--output 1024" "--data-dir 1024" "--replay 1024" "--trace 992"; do
    set -- $o
    expect_error "$1 of $2 characters" "$1: " "$1" "$(chars "$2")"
done
expect_error "--theme with a /" "--theme: " --theme a/b

# choices: the names are the allowed values, and the error lists them
expect_error "unknown device lists the devices" "auto, cpu, cuda" --device tpu
expect_error "unknown data set lists the data sets" "fashion-mnist, mnist, cifar10, synthetic" --dataset imagenet
expect_error "unknown collective lists the collectives" "reduce_scatter" --collective all2all
expect_ok "--collective reduce-scatter" "Usage: ddptop" --collective reduce-scatter --help
expect_error "only --collective takes a - for a _" "unknown model" --model squeezenet1-0

# data files
mk_idx() { # mk_idx file magic_hex count rows cols nbytes_of_data
    local f=$1 magic=$2 count=$3 rows=$4 cols=$5 n=$6
    {
        printf "\\x00\\x00\\x08\\x$magic"
        printf "\\x$(printf %02x $((count >> 24 & 255)))\\x$(printf %02x $((count >> 16 & 255)))\\x$(printf %02x $((count >> 8 & 255)))\\x$(printf %02x $((count & 255)))"
        if [ "$magic" = "03" ]; then
            printf "\\x00\\x00\\x00\\x$(printf %02x "$rows")\\x00\\x00\\x00\\x$(printf %02x "$cols")"
        fi
        head -c "$n" /dev/zero
    } >"$f"
}
good_set() { # good_set dir count
    local d=$1 c=$2
    mkdir -p "$d"
    mk_idx "$d/train-images-idx3-ubyte" 03 "$c" 28 28 $((c * 784))
    mk_idx "$d/train-labels-idx1-ubyte" 01 "$c" 0 0 "$c"
    mk_idx "$d/t10k-images-idx3-ubyte" 03 "$c" 28 28 $((c * 784))
    mk_idx "$d/t10k-labels-idx1-ubyte" 01 "$c" 0 0 "$c"
}

expect_error "missing data dir" "$tmp/nowhere" --batch --dataset mnist --data-dir "$tmp/nowhere"
good_set "$tmp/trunc" 100
mk_idx "$tmp/trunc/train-images-idx3-ubyte" 03 100 28 28 5000
expect_error "truncated IDX" "truncated" --batch --dataset mnist --data-dir "$tmp/trunc"
good_set "$tmp/magic" 100
mk_idx "$tmp/magic/train-images-idx3-ubyte" 01 100 28 28 78400
expect_error "wrong magic" "magic" --batch --dataset mnist --data-dir "$tmp/magic"
good_set "$tmp/corrupt" 100
printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage-garbage' >"$tmp/corrupt/t10k-images-idx3-ubyte.gz"
rm "$tmp/corrupt/t10k-images-idx3-ubyte"
expect_error "corrupt gzip IDX" "t10k-images-idx3-ubyte.gz" --batch --dataset mnist --data-dir "$tmp/corrupt"
expect_error "cifar10 without dir" "--data-dir" --batch --dataset cifar10

# a good tiny set really trains (and the error paths above were not all "cannot train")
good_set "$tmp/good" 256
"$BIN" --batch --quiet --dataset mnist --data-dir "$tmp/good" --model mlp --ranks 2 --batch-size 16 --epochs 1 \
    --format csv >"$tmp/out" 2>"$tmp/err"
if [ $? -ne 0 ] || ! grep -q "^0,all,mlp,mnist,allreduce,none,2,16,32,8," "$tmp/out"; then
    echo "FAIL: a tiny good MNIST set should train 8 steps"; cat "$tmp/err"; fails=$((fails + 1))
else
    passes=$((passes + 1))
fi

# More compute threads than cores: said once, the run goes on
cores=$(nproc)
if "$BIN" --batch --quiet "${fast[@]}" --model mlp --ranks 2 --steps 1 --no-eval \
    --threads-per-rank "$cores" --format csv >"$tmp/out" 2>"$tmp/err" &&
    [ "$(grep -c "compute threads on $cores cores" "$tmp/err")" = 1 ]; then
    passes=$((passes + 1))
else
    echo "FAIL: 2 ranks x $cores threads on $cores cores: no single warning"
    sed 's/^/    /' "$tmp/err"
    fails=$((fails + 1))
fi
# More than the machine's memory (DDPTOP_MEM_AVAILABLE_MB stands for a
# small one): one line with a batch that fits, exit 2, before any rank
# makes its buffers; that batch then runs, within the memory, and twice
# it is refused
DDPTOP_MEM_AVAILABLE_MB=40 "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --batch-size 8192 \
    --steps 1 --no-eval --format csv >"$tmp/out" 2>"$tmp/err"
rc=$?
fits=$(sed -n 's/^ddptop: lenet at batch 8192 needs ~[0-9.]* [GM]B a rank (2 ranks: ~[0-9.]* [GM]B), and this machine has 40 MB available; try --batch-size \([0-9]*\)$/\1/p' "$tmp/err")
if [ $rc -eq 2 ] && [ "$(grep -vc 'running on CPU' "$tmp/err")" -eq 1 ] && [ -n "$fits" ] && [ "$fits" -lt 8192 ] &&
    DDPTOP_MEM_AVAILABLE_MB=40 "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 \
        --batch-size "$fits" --steps 2 --no-eval --format json >"$tmp/out" 2>"$tmp/err" &&
    python3 -c "import json,sys; p=[r['mem_peak_bytes'] for r in json.load(open(sys.argv[1]))['per_rank']]; \
sys.exit(not (len(p) == 2 and 0 < sum(p) <= 40 * 2**20))" "$tmp/out" &&
    ! DDPTOP_MEM_AVAILABLE_MB=40 "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 \
        --batch-size $((fits * 2)) --steps 1 --no-eval --format csv >/dev/null 2>&1; then
    passes=$((passes + 1))
else
    echo "FAIL: too big for the memory: rc $rc, suggested batch '$fits'"
    sed 's/^/    /' "$tmp/err"
    fails=$((fails + 1))
fi

# bound to one core (taskset, a container's cpuset): the cores counted are
# those it may use, and the default threads fit them
if command -v taskset >/dev/null; then
    if taskset -c 0 "$BIN" --batch --quiet "${fast[@]}" --model mlp --ranks 2 --steps 1 --no-eval \
        --threads-per-rank 1 --format csv >"$tmp/out" 2>"$tmp/err" &&
        [ "$(grep -c "2 compute threads on 1 core:" "$tmp/err")" = 1 ] &&
        taskset -c 0 "$BIN" --batch --quiet "${fast[@]}" --model mlp --ranks 1 --steps 1 --no-eval \
            --format csv >"$tmp/out" 2>"$tmp/err" && ! grep -q "compute threads" "$tmp/err"; then
        passes=$((passes + 1))
    else
        echo "FAIL: bound to core 0: the warning does not count 1 core, or the default threads overflow it"
        sed 's/^/    /' "$tmp/err"
        fails=$((fails + 1))
    fi
fi
if "$BIN" --batch --quiet "${fast[@]}" --model mlp --ranks 1 --steps 1 --no-eval --threads-per-rank 1 \
    --format csv >"$tmp/out" 2>"$tmp/err" && ! grep -q "compute threads" "$tmp/err"; then
    passes=$((passes + 1))
else
    echo "FAIL: 1 rank x 1 thread: a warning, or the run failed"
    fails=$((fails + 1))
fi

# traces for --replay
printf '[{"ph":"X"}}]' >"$tmp/stray.json"
expect_error "a stray } between events" "stray.json: malformed JSON near byte 11" --batch --replay "$tmp/stray.json"
/usr/bin/python3 -c "print('{\"traceEvents\":[' + '[' * 3000 + ']' * 3000 + ']}')" >"$tmp/deep.json"
expect_error "brackets 3000 deep" "deep.json: JSON nested deeper than 1024 levels at byte" --batch --replay "$tmp/deep.json"
printf '{"traceEvents":[{"a":[}]},"z":1}' >"$tmp/mismatch.json"
expect_error "a } closing a [" "mismatch.json: malformed JSON near byte 22" --batch --replay "$tmp/mismatch.json"
# text after the document's closing bracket: refused (a second document, a
# stray character), whitespace is not
good='{"ph":"X","name":"aten::mm","ts":1,"dur":5,"tid":1,"pid":"CPU functions"}'
printf '{"traceEvents":[%s]}x' "$good" >"$tmp/after_obj.json"
expect_error "text after a trace object" "after_obj.json: text after the trace's closing '}' at byte 91" \
    --batch --replay "$tmp/after_obj.json"
printf '[%s]\n[%s]' "$good" "$good" >"$tmp/after_arr.json"
expect_error "a second array after a trace array" "after_arr.json: text after the trace's closing ']' at byte 76" \
    --batch --replay "$tmp/after_arr.json"
printf '[%s]\n \n' "$good" >"$tmp/after_ws.json"
expect_ok "white space after a trace" "run,rank," --batch --replay "$tmp/after_ws.json" --format csv
ranks_trace() { # ranks_trace N: a ddptop trace with one span on each of pids 0..N-1
    printf '{"ddptop":{},"traceEvents":['
    for ((p = 0; p < $1; p++)); do
        [ "$p" -gt 0 ] && printf ','
        printf '{"ph":"X","name":"forward","cat":"forward","ts":1,"dur":1,"pid":%d,"tid":0,"args":{"step":0}}' "$p"
    done
    printf ']}'
}
ranks_trace 65 >"$tmp/r65.json"
expect_error "a trace of 65 ranks" "r65.json: more than 64 ranks" --batch --replay "$tmp/r65.json"
ranks_trace 64 >"$tmp/r64.json"
expect_ok "a trace of 64 ranks" $'"ranks":\t64,' --batch --replay "$tmp/r64.json" --format json
expect_error "--replay /dev/zero" "/dev/zero: not a regular file" --batch --replay /dev/zero
# well-formed, but nothing timed: no report of zeros
printf '{"traceEvents":[]}' >"$tmp/empty.json"
expect_error "a trace without events" "empty.json: nothing to replay" --batch --replay "$tmp/empty.json"
printf '[]' >"$tmp/empty2.json"
expect_error "an empty event array" "empty2.json: nothing to replay" --batch --replay "$tmp/empty2.json"
printf '{"ddptop":{},"traceEvents":[{"ph":"i","name":"x","cat":"forward","ts":1,"pid":0,"tid":0}]}' >"$tmp/instant.json"
expect_error "a ddptop trace of one instant" "instant.json: nothing to replay" --batch --replay "$tmp/instant.json"
mkfifo "$tmp/fifo.json"
expect_error "--replay a FIFO" "fifo.json: not a regular file (a FIFO)" --batch --replay "$tmp/fifo.json"
# a folder is every trace in it (a FIFO named .json among them is left out); none: one line
mkdir "$tmp/no_traces" && mkfifo "$tmp/no_traces/fifo.json" && printf x >"$tmp/no_traces/notes.txt"
expect_error "--replay a folder without traces" "no_traces: a folder without a trace in it" --batch --replay \
    "$tmp/no_traces"

# the comm-model cache: with neither XDG_CACHE_HOME nor HOME, nowhere (one
# line says so), never a shared folder such as /tmp
shared=/tmp/.cache/ddptop/comm-model.json
before=$(stat -c %Y.%s "$shared" 2>/dev/null || echo none)
env -u HOME -u XDG_CACHE_HOME -u DDPTOP_COMM_MODEL timeout 60 "$BIN" --bench-comm --ranks 2 --min-bytes 4K \
    --max-bytes 16K --iters 2 --warmup 0 >"$tmp/out" 2>"$tmp/err"
st=$?
# (besides the line that a fit of 3 sizes timed twice may be poor)
if [ "$st" -ne 0 ] || [ "$(grep -vc 'a poor fit' "$tmp/err")" -ne 1 ] || ! grep -q "cost model is not stored" "$tmp/err" ||
    [ "$(stat -c %Y.%s "$shared" 2>/dev/null || echo none)" != "$before" ]; then
    echo "FAIL: --bench-comm without HOME: status $st, the note, and nothing written to $shared:"
    sed 's/^/    /' "$tmp/err"
    fails=$((fails + 1))
else
    passes=$((passes + 1))
fi

# --bench-comm's exact answers over the shm ring's 3 threads, every
# collective, through host buffers and through the path of a GPU's device
# buffers (DDPTOP_BENCH_STAGED=1: the CPU's staged device, whose copies in
# and out stand in for the GPU's); and the GPU's backends refused here
for staged in 0 1; do
    for coll in allreduce reduce-scatter allgather broadcast reduce gather scatter; do
        DDPTOP_BENCH_STAGED=$staged DDPTOP_COMM_MODEL="$tmp/model.json" timeout 60 "$BIN" --bench-comm --ranks 3 \
            --collective $coll --min-bytes 1K --max-bytes 64K --factor 8 --iters 3 --format csv >"$tmp/bc.csv" \
            2>"$tmp/err"
        st=$?
        # (collective,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong)
        rows=$(awk -F, -v c="${coll//-/_}" 'NR > 1 && $1 == c && $7 == 0' "$tmp/bc.csv" | wc -l)
        [ "$st" -eq 0 ] && [ "$rows" -eq 3 ] && [ "$(wc -l <"$tmp/bc.csv")" -eq 4 ]
        tally $? "--bench-comm --collective $coll (staged $staged): status $st, $rows exact rows of 3" \
            "$tmp/bc.csv" "$tmp/err"
    done
done
expect_error "--bench-comm --comm nccl on the CPU" "--comm nccl: NCCL joins GPUs, and --bench-comm runs on the CPU" \
    --bench-comm --comm nccl
expect_error "--bench-comm --device cuda without a GPU" "--device cuda: " --bench-comm --device cuda

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
