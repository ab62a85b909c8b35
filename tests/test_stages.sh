#!/usr/bin/env bash
# test_stages.sh - what each stage of a model or pipeline run reports it
# holds, through the real binary (JSON reports), against counts made here
# from the layers' shapes:
#  - an MLP (784-512-512-10 on the synthetic set's 1x28x28) in 3 stages
#    cut by hand: each stage's parameters, gradients, SGD momentum and
#    activations in flight (model parallelism, GPipe and 1F1B pipelines,
#    --dp, a frozen prefix, --momentum 0), worked out below by hand;
#  - VGG-11 (CIFAR form, 3x32x32) in 2 stages and in 1: each stage's
#    parameters counted from the convolutions', batch norms' and linear
#    layer's shapes, its activations from the output shapes --info lists;
#  - a rank builds only its stage's layers: its measured peak is within
#    15% of that count (VGG-11 in 1 and 2 stages, GPipe and 1F1B);
#    under DDPTOP_MEM_CAP_MB between the whole model's memory and a
#    stage's, one rank fails naming the cap while 2 stages train under it,
#    with one rank's losses;
#  - a 1-stage run holds every layer: it evaluates the test split, as a
#    1-rank data-parallel run of the same seed does, and no note says
#    otherwise;
#  - layer numbers do not depend on the CPU: every model's numbered layers
#    (--info) are the same with the kernels capped at AVX2 and at AVX
#    (DDPTOP_MAX_CPU_ISA) as on this processor, though the layout
#    conversions differ (LeNet's, VGG-11's, MobileNetV2's), and a
#    partition cuts LeNet at the same layers (by name) either way.
set -u
BIN=${1:?usage: test_stages.sh path/to/ddptop}
. "$(dirname "$0")/checks.sh"
py() { /usr/bin/env python3 -c "import json,sys; $1" "${@:2}"; }
run=(--batch --quiet --dataset synthetic --threads-per-rank 1 --format json)

# ---- the MLP in 3 stages: flatten | fc1 relu1 fc2 | relu2 fc3 ----
# floats per sample a stage holds for one micro-batch in flight, with a
# gradient beside every value a gradient flows through:
#   stage 0: the input (784, no gradient); flatten's output is the input's
#            own buffer                                      = 784
#   stage 1: its input (784: flatten's, no gradient goes back to it);
#            fc1, relu1, fc2: 512 values + 512 gradients each = 784 + 3072
#   stage 2: its input fc2's output (512 + its gradient, sent back);
#            relu2: 512 + 512; fc3: 10 + 10                  = 1024 + 1024 + 20
# parameters: fc1 784x512 + 512, fc2 512x512 + 512 in stage 1; fc3 512x10 +
# 10 in stage 2; each trainable one has a gradient and a momentum, and
# with micro-batches (of 4, from the batch of 16) a second gradient, into
# which each micro-batch's is computed before it is added to the first.
mlp_check() { # FILE MICRO_BATCH IN_FLIGHT(per stage) TRAINS(0|1 per stage) MOMENTUM(0|1) [frozen]
    py '
f, micro, momentum = sys.argv[1], int(sys.argv[2]), int(sys.argv[5])
flight, trains = [int(x) for x in sys.argv[3].split(",")], [int(x) for x in sys.argv[4].split(",")]
params = [0, 784 * 512 + 512 + 512 * 512 + 512, 512 * 10 + 10]
if len(sys.argv) > 6:  # --trainable classifier: fc3 alone trains, and only its output needs a gradient
    acts = [784, 784 + 3 * 512, 512 + 512 + (10 + 10)]
else:
    acts = [784, 784 + 3 * (512 + 512), (512 + 512) + (512 + 512) + (10 + 10)]
st = json.load(open(f))["runs"][0]["stages"]
assert len(st) == 3, st
for s, e in enumerate(st):
    p = 4 * params[s]
    copies = 2 if micro < 16 else 1
    want = {"param_bytes": p, "grad_bytes": p * trains[s] * copies, "optimizer_bytes": p * trains[s] * momentum,
            "activation_bytes": 4 * acts[s] * micro * flight[s]}
    want["mem_bytes"] = sum(want.values())
    got = {k: e.get(k) for k in want}
    assert got == want, (s, got, want)
    assert abs(e["live_activation_mb"] - want["activation_bytes"] / 1e6) < 1e-9, e
' "$@"
}
mlp=(--model mlp --ranks 3 --partition 0:0,1:3,4:5 --batch-size 16 --steps 2 --no-eval)
"$BIN" "${run[@]}" "${mlp[@]}" --parallel model --trace "$tmp/m.trace.json" >"$tmp/m.json" 2>/dev/null
check "model parallelism: each stage's memory, counted by hand" mlp_check "$tmp/m.json" 16 1,1,1 1,1,1 1
"$BIN" --replay "$tmp/m.trace.json" --format json >"$tmp/mr.json" 2>/dev/null
check "--replay of its trace: the same figures" mlp_check "$tmp/mr.json" 16 1,1,1 1,1,1 1
"$BIN" "${run[@]}" "${mlp[@]}" --parallel pipeline --micro-batches 4 --schedule gpipe >"$tmp/g.json" 2>/dev/null
check "GPipe, 4 micro-batches: all 4 in flight on every stage" mlp_check "$tmp/g.json" 4 4,4,4 1,1,1 1
"$BIN" "${run[@]}" "${mlp[@]}" --parallel pipeline --micro-batches 4 --schedule 1f1b >"$tmp/f.json" 2>/dev/null
check "1F1B, 4 micro-batches over 3 stages: 3, 2 and 1 in flight" mlp_check "$tmp/f.json" 4 3,2,1 1,1,1 1
"$BIN" "${run[@]}" --model mlp --ranks 6 --dp 2 --partition 0:0,1:3,4:5 --batch-size 16 --steps 2 --no-eval \
    --parallel model >"$tmp/d.json" 2>/dev/null
check "--dp 2: each copy of a stage holds the stage's" mlp_check "$tmp/d.json" 16 1,1,1 1,1,1 1
"$BIN" "${run[@]}" "${mlp[@]}" --parallel model --trainable classifier >"$tmp/c.json" 2>/dev/null
check "a frozen prefix: no gradients or momentum for it, no activation gradients before fc3" \
    mlp_check "$tmp/c.json" 16 1,1,1 0,0,1 1 frozen
"$BIN" "${run[@]}" "${mlp[@]}" --parallel model --momentum 0 >"$tmp/z.json" 2>/dev/null
check "--momentum 0: SGD keeps no state" mlp_check "$tmp/z.json" 16 1,1,1 1,1,1 0

# ranks as processes under mpirun: each process's stage reaches the report
if command -v mpirun >/dev/null; then
    mpi=(mpirun --oversubscribe -np 3)
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader RES_OPTIONS="timeout:1 attempts:1" \
        "${mpi[@]}" "$BIN" "${run[@]}" "${mlp[@]}" --parallel model --comm mpi >"$tmp/mpi.json" \
        2>"$tmp/mpi.err"
    check "under mpirun: each process's stage, counted by hand" mlp_check "$tmp/mpi.json" 16 1,1,1 1,1,1 1
else
    check "mpirun for the processes' case (scripts/install-deps.sh installs openmpi-bin)" false
fi

# ---- VGG-11 in 2 stages (conv1-relu5 | conv6-fc), and in 1 ----
vgg=(--model vgg11 --input 3x32x32 --batch-size 8 --steps 2 --no-eval --parallel model)
"$BIN" "${run[@]}" "${vgg[@]}" --ranks 1 >"$tmp/v1.json" 2>/dev/null
"$BIN" "${run[@]}" "${vgg[@]}" --ranks 2 --partition 0:17,18: >"$tmp/v2.json" 2>/dev/null
"$BIN" --info --model vgg11 --input 3x32x32 --dataset synthetic >"$tmp/v.info" 2>/dev/null
check "VGG-11: each stage's parameters and activations, counted from the layers' shapes" py '
import re
runs = [json.load(open(f))["runs"][0] for f in sys.argv[1:3]]
# the layer table: number, name, kind, output CxHxW (* = channel-blocked);
# a layout conversion ("-", where this CPU asks for one) has no number: its
# output is counted with the layer it feeds (conv = [(name, values), ..])
layers, conv = [], []
for line in open(sys.argv[3]):
    m = re.match(r"(\d+|-)\s+(\S+)\s+(\S+)\s+(\d+)x(\d+)x(\d+)(\*?)\s", line)
    if m:
        i, name, kind, c, h, w, blk = m.groups()
        assert not blk or int(c) % 8 == 0, line  # (no channel padding to count)
        if i == "-":
            assert kind == "layout", line
            conv.append((name, int(c) * int(h) * int(w)))
            continue
        assert int(i) == len(layers), line
        layers.append((name, kind, int(c) * int(h) * int(w), conv))
        conv = []
# 31 layers on any CPU; the cut after relu5 lies before conv6 (and a
# conversion feeding conv6, if any)
assert len(layers) == 31 and layers[17][0] == "relu5" and layers[18][0] == "conv6", layers
# the CIFAR VGG-11 with batch norm, one fc 512->10: a 3x3 convolution from
# i to o channels holds 9 i o weights and o biases; a batch norm of c, a
# weight and a bias per channel; the fc 512 x 10 + 10
chans = [3, 64, 128, 256, 256, 512, 512, 512, 512]
sizes = {"fc": 512 * 10 + 10}
for k in range(1, 9):
    sizes["conv%d" % k] = 9 * chans[k - 1] * chans[k] + chans[k]
    sizes["bn%d" % k] = 2 * chans[k]
def stage(first, last, batch):
    p = sum(sizes.get(n, 0) for n, _, _, _ in layers[first:last + 1])
    # its input (the image, or the previous stage output and its gradient),
    # then every output but flatten (a view) with its gradient, and the
    # conversions feeding its layers
    a = 3 * 32 * 32 if first == 0 else 2 * layers[first - 1][2]
    a += sum(2 * per for _, kind, per, _ in layers[first:last + 1] if kind != "flatten")
    a += sum(2 * per for _, _, _, cv in layers[first:last + 1] for _, per in cv)
    return {"param_bytes": 4 * p, "grad_bytes": 4 * p, "optimizer_bytes": 4 * p, "activation_bytes": 4 * a * batch}
total = sum(sizes.values())
assert total == 9231114, total
for r, cuts in ((runs[0], [(0, 30)]), (runs[1], [(0, 17), (18, 30)])):
    for e, (a, b) in zip(r["stages"], cuts):
        want = stage(a, b, 8)
        got = {k: e[k] for k in want}
        assert got == want, (r["ranks"], a, b, got, want)
        assert e["mem_bytes"] == sum(want.values()), e
one, two = runs[0]["stages"][0]["mem_bytes"], [e["mem_bytes"] for e in runs[1]["stages"]]
assert max(two) < one and one < sum(two), (one, two)  # (the cut tensor is held on both sides)
# the cap for the memory test below: above either stage by more than a
# stage peak may exceed its table (15%), below the whole model
cap = (1.15 * max(two) + one) / 2
assert 1.15 * max(two) < cap < one, (cap, one, two)
open(sys.argv[4], "w").write("%d\n" % (cap / 2**20))
# the same counts for the measured peaks below: at batch 16 in 1 and 2
# stages; in 2 stages as a pipeline of M micro-batches, with a second
# gradient buffer and the activations of those in flight at the
# micro-batch: GPipe x4 at batch 16 (all 4 in flight), 1F1B x4 at batch
# 32 (stage 0: 2 - 0 = 2 in flight, stage 1: 1)
def mem(a, b, batch, M=1, flight=1):
    d = stage(a, b, batch // M)
    return d["param_bytes"] + d["grad_bytes"] * (2 if M > 1 else 1) + d["optimizer_bytes"] + \
        d["activation_bytes"] * flight
two_cuts = [(0, 17), (18, 30)]
json.dump([[mem(0, 30, 16)], [mem(a, b, 16) for a, b in two_cuts], [mem(a, b, 16, 4, 4) for a, b in two_cuts],
           [mem(a, b, 32, 4, f) for (a, b), f in zip(two_cuts, (2, 1))]], open(sys.argv[5], "w"))
' "$tmp/v1.json" "$tmp/v2.json" "$tmp/v.info" "$tmp/cap" "$tmp/want16.json"
"$BIN" --batch --quiet --dataset synthetic --threads-per-rank 1 "${vgg[@]}" --ranks 2 --partition 0:17,18: \
    >"$tmp/v.txt" 2>/dev/null
check "the text report: a memory column per stage, and what mem peak measures" grep -q \
    "mem peak: what each rank allocated; a rank builds only its stage's layers" "$tmp/v.txt"

# ---- a rank holds only its stage: its measured peak follows its stage ----
# each rank's measured peak (every allocation of its device) against its
# stage's memory counted by hand above: within 15% (the rest: whole 2 MiB
# pages for each large buffer, the scratch an input gradient is summed
# in, the loss's buffers, the batch), for VGG-11 whole on one rank and in
# 2 stages at batch 16, as GPipe x4 at 16 and 1F1B x4 at 32 (the micro-
# batches share their activations as they are in flight, and a second
# gradient buffer); and the stage table says the same memory
vgg16=(--model vgg11 --input 3x32x32 --steps 2 --no-eval)
"$BIN" "${run[@]}" "${vgg16[@]}" --parallel model --batch-size 16 --ranks 1 >"$tmp/w1.json" 2>/dev/null
vgg16+=(--partition 0:17,18:)
"$BIN" "${run[@]}" "${vgg16[@]}" --parallel model --batch-size 16 --ranks 2 >"$tmp/w2.json" 2>/dev/null
"$BIN" "${run[@]}" "${vgg16[@]}" --parallel pipeline --micro-batches 4 --schedule gpipe --batch-size 16 --ranks 2 \
    >"$tmp/wg.json" 2>/dev/null
"$BIN" "${run[@]}" "${vgg16[@]}" --parallel pipeline --micro-batches 4 --schedule 1f1b --batch-size 32 --ranks 2 \
    >"$tmp/wf.json" 2>/dev/null
check "VGG-11: each rank's measured peak within 15% of its stage's memory (1 and 2 stages, GPipe, 1F1B)" py '
want = json.load(open(sys.argv[1]))
for f, w in zip(sys.argv[2:], want):
    d = json.load(open(f))
    st, per = d["runs"][0]["stages"], d["per_rank"]
    assert [e["mem_bytes"] for e in st] == w and len(per) == len(w), (f, st, w)
    for s, q in enumerate(per):
        peak = q["mem_peak_bytes"]
        print("  %s, stage %d: peak %.2f MB, its memory %.2f MB (%+.1f%%)" % (f.split("/")[-1], s, peak / 1e6,
              w[s] / 1e6, 100 * (peak / w[s] - 1)))
        assert abs(peak - w[s]) <= 0.15 * w[s], (f, s, peak, w[s])
' "$tmp/want16.json" "$tmp/w1.json" "$tmp/w2.json" "$tmp/wg.json" "$tmp/wf.json"

# ---- a model larger than a rank's memory trains across stages ----
# DDPTOP_MEM_CAP_MB gives each rank a budget between the whole model's
# memory and its largest stage's (from the hand counts above): one rank
# cannot hold VGG-11 and fails, naming the cap; 2 stages train under it,
# each rank's peak inside it, with the losses of the uncapped single rank
# (model parallelism is one rank's arithmetic: bit for bit)
cap=$(cat "$tmp/cap")
DDPTOP_MEM_CAP_MB=$cap "$BIN" "${run[@]}" "${vgg[@]}" --ranks 1 >"$tmp/c1.json" 2>"$tmp/c1.err"
st=$?
check "DDPTOP_MEM_CAP_MB=$cap: one rank cannot hold VGG-11 (exit $st), and says why" \
    bash -c "[ $st -ne 0 ] && grep -q 'out of memory under DDPTOP_MEM_CAP_MB=$cap' '$tmp/c1.err'"
DDPTOP_MEM_CAP_MB=$cap "$BIN" "${run[@]}" "${vgg[@]}" --ranks 2 --partition 0:17,18: --history "$tmp/c2.csv" \
    >"$tmp/c2.json" 2>"$tmp/c2.err"
st=$?
"$BIN" "${run[@]}" "${vgg[@]}" --ranks 1 --history "$tmp/u1.csv" >/dev/null 2>&1
check "DDPTOP_MEM_CAP_MB=$cap: 2 stages train VGG-11 (exit $st), each rank under the cap, the note names it" py '
cap = int(sys.argv[2]) * 2**20
d = json.load(open(sys.argv[1]))
assert d["runs"][0]["steps"] == 2, d["runs"][0]["steps"]
for q in d["per_rank"]:
    assert 0 < q["mem_peak_bytes"] <= cap, (q["rank"], q["mem_peak_bytes"], cap)
assert "DDPTOP_MEM_CAP_MB=%s" % sys.argv[2] in d["runs"][0]["note"], d["runs"][0]["note"]
' "$tmp/c2.json" "$cap"
check "the capped 2 stages lose what one uncapped rank does, step by step" py '
import csv
def losses(f):
    return [(r["step"], r["loss"]) for r in csv.DictReader(open(f)) if r["kind"] == "step" and r["rank"] == "0"]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == 2 and a == b, (a, b)
' "$tmp/c2.csv" "$tmp/u1.csv"

# ---- layer numbers: the same on any CPU ----
models="mlp lenet alexnet vgg11 resnet18 squeezenet1_0 densenet121 mobilenetv2"
for isa in native avx2 avx; do
    for m in $models; do
        DDPTOP_MAX_CPU_ISA=${isa#native} "$BIN" --info --model "$m" --dataset synthetic --input 3x32x32 \
            >"$tmp/info.$isa.$m" 2>&1
    done
done
check "layer numbers: each model's numbered layers (--info) are the same with the kernels capped at AVX2 and AVX" py '
import re
def table(path):
    num, conv = [], 0
    for line in open(path):
        m = re.match(r"(\d+|-)\s+(\S+)\s+(\S+)\s+\d+x\d+x\d+", line)
        if m and m.group(1) == "-":
            conv += 1
        elif m:
            assert int(m.group(1)) == len(num), line  # 0, 1, 2, ... in order
            num.append(m.group(2, 3))
    return num, conv
convs = 0
for m in sys.argv[1].split():
    base, c = table("%s/info.native.%s" % (sys.argv[2], m))
    convs += c
    assert base, m
    for isa in ("avx2", "avx"):
        other, c = table("%s/info.%s.%s" % (sys.argv[2], isa, m))
        convs += c
        assert other == base, (m, isa, len(base), len(other), [x for x in zip(base, other) if x[0] != x[1]][:3])
# by hand: LeNet 12 layers (conv1 pool1 relu1 conv2 pool2 relu2 flatten fc1
# relu3 fc2 relu4 fc3), VGG-11 31; and some conversions to leave out
assert len(table("%s/info.avx2.lenet" % sys.argv[2])[0]) == 12
assert len(table("%s/info.avx.vgg11" % sys.argv[2])[0]) == 31
assert convs > 0, "no layout conversion anywhere: nothing was tried"
' "$models" "$tmp"
for isa in native avx2; do
    DDPTOP_MAX_CPU_ISA=${isa#native} "$BIN" "${run[@]}" --model lenet --ranks 2 --parallel model --partition 0:6,7: \
        --batch-size 8 --steps 2 --no-eval >"$tmp/cut.$isa.json" 2>/dev/null
done
check "--partition 0:6,7: cuts LeNet after flatten whatever the kernels: 400 floats a sample cross" py '
for f in sys.argv[1:]:
    d = json.load(open(f))
    r = d["runs"][0]
    assert [(s["first_layer"], s["last_layer"]) for s in r["stages"]] == [(0, 6), (7, 11)], (f, r["stages"])
    # stage 0 sends 400 floats x 8 samples a step (and a few bytes of loss back)
    q = d["per_rank"][0]
    assert 0 <= q["bytes_sent"] - 400 * 8 * 4 * r["steps"] <= 32 * r["steps"], (f, q["bytes_sent"])
' "$tmp/cut.native.json" "$tmp/cut.avx2.json"

# ---- a 1-stage run holds the whole model: it evaluates ----
one=(--model mlp --ranks 1 --batch-size 32 --steps 60)
"$BIN" "${run[@]}" "${one[@]}" --strategy single >"$tmp/s.json" 2>/dev/null
"$BIN" "${run[@]}" "${one[@]}" --parallel model >"$tmp/o.json" 2>/dev/null
"$BIN" "${run[@]}" "${one[@]}" --parallel pipeline --micro-batches 2 >"$tmp/p.json" 2>/dev/null
check "a 1-stage model run's test accuracy is the 1-rank run's; a 1-stage pipeline's close to it" py '
want = json.load(open(sys.argv[1]))["runs"][0]["test_acc"]
model = json.load(open(sys.argv[2]))["runs"][0]["test_acc"]
pipe = json.load(open(sys.argv[3]))["runs"][0]["test_acc"]
assert want is not None and 20 < want <= 100, want
assert model == want, (model, want)
assert pipe is not None and abs(pipe - want) < 1.0, (pipe, want)  # (two micro-batches: sums in another order)
' "$tmp/s.json" "$tmp/o.json" "$tmp/p.json"
"$BIN" --batch --quiet --dataset synthetic --threads-per-rank 1 "${one[@]}" --parallel model >"$tmp/o.txt" 2>/dev/null
check "a 1-stage run has no note that no stage holds the whole model" \
    test "$(grep -c 'test acc is n/a' "$tmp/o.txt")" = 0
"$BIN" --batch --quiet --dataset synthetic --threads-per-rank 1 --model lenet --ranks 2 --steps 3 --parallel model \
    >"$tmp/two.txt" 2>/dev/null
check "a 2-stage run still says why its test accuracy is n/a" grep -q \
    "run 0: test acc is n/a: each stage holds only its own layers" "$tmp/two.txt"

checks_done
