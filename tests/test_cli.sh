#!/usr/bin/env bash
# test_cli.sh - every bad input gets exactly one line on stderr naming what
# was wrong, and exit status 2; --help and --version succeed. Bad data files
# (missing, truncated, corrupt, wrong magic) are made here.
set -u
BIN=${1:?usage: test_cli.sh path/to/ddptop}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0

# expect_error "what" "phrase that must appear" args...
expect_error() {
    local what=$1 phrase=$2
    shift 2
    "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
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

expect_ok() {
    local what=$1 phrase=$2
    shift 2
    if ! "$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || ! grep -qF -- "$phrase" "$tmp/out"; then
        echo "FAIL: $what"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}

expect_ok "--help" "Usage: ddptop" --help
expect_ok "--version" "ddptop " --version
expect_ok "--help lists models" "lenet" --help
expect_ok "--help lists --gpus" "--gpus" --help
expect_ok "a good --gpus list" "conv1" --model lenet --info --gpus 0,1,3
# no GPU here ("no GPU is present"), or no GPU 1023 on a GPU machine: one line either way
expect_error "--gpus 1023 with --device cuda" "GPU" --model lenet --info --device cuda --gpus 1023

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
expect_error "bad slow rank" "--slow-rank" --batch --slow-rank x
expect_error "bad bytes" "--max-bytes" --bench-comm --max-bytes 12Q
expect_error "nccl on the CPU" "--comm nccl" --batch --dataset synthetic --device cpu --comm nccl
expect_error "mpi not implemented" "--comm mpi" --batch --dataset synthetic --comm mpi
expect_error "batch larger than data" "--batch-size" --batch --dataset synthetic --batch-size 65536 --ranks 2

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

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
