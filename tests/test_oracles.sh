#!/usr/bin/env bash
# test_oracles.sh - the report's figures against expected values that come
# from outside ddptop's code: counts by hand in this file, and
# tests/check_report.py (a second implementation, in Python, over the
# run's own trace and --history CSV). tests/README.md lists which figure is
# held to what.
#
# Hand counts used below (parameters from the layers, 4 bytes a float):
#   MLP 784-512-512-10: 784*512+512 + 512*512+512 + 512*10+10 = 669706
#     parameters, S = 2678824 bytes; its tensors in backward order are 10,
#     5120, 512, 262144, 512, 401408 floats (fc3's bias first).
#   LeNet: conv1 6*1*5*5+6 = 156, conv2 16*6*5*5+16 = 2416, fc1 400*120+120
#     = 48120, fc2 120*84+84 = 10164, fc3 84*10+10 = 850; its flatten
#     output (layer 7) is 16*5*5 = 400 floats a sample.
#   A ring allreduce of S bytes on n ranks: every rank sends and receives
#     2 S (n-1)/n, so the ranks together send 2 (n-1) S whatever the chunks.
#
# test_oracles.sh BIN CASE, one CASE per ctest test (test_oracles_CASE):
#   strategies  every figure from the trace over ddp, allreduce (3 ranks),
#               dp, gather-scatter (3 ranks) and horovod; their bytes by hand
#   stages      a pipeline and a pipeline x --dp 2: figures from the trace,
#               bytes and stage figures by hand; 1F1B's and GPipe's depth
#   horovod     --cycle-ms and --fusion-mb: negotiations and fused buffers
#   sweeps      --repeat's median repeat, efficiency against 2 ranks
#   predict     --predict --link's comm by hand, every strategy and stages
#   misc        wall time, a hand-written fit's pred/step, the test loss,
#               the loss threshold
#   epochs      a run over two whole epochs and part of a third (a small
#               data set written here): every figure from the trace, the
#               last epoch's training accuracy, each epoch's test split
#               and the loss threshold's epoch by hand
# Without CASE, all of them.
set -u
BIN=${1:?usage: test_oracles.sh path/to/ddptop [CASE]}
CASE=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/checks.sh"
checker() { /usr/bin/python3 "$here/check_report.py" "$@"; }
py() { /usr/bin/python3 -c "import json, sys, csv, statistics; $1" "${@:2}"; }
run=(--batch --quiet --dataset synthetic --device cpu --threads-per-rank 1)
S=2678824

# ---- every figure of the report from the trace ----
# (each: report, trace and history of one run; the checker re-derives the
# split, times, bytes, transfer/sync, busbw, counters, loss and accuracy)
traced() { # traced NAME BATCH ARGS..: one run into $tmp/NAME.{json,trace.json,csv}
    local name=$1 batch=$2
    shift 2
    "$BIN" "${run[@]}" --batch-size "$batch" "$@" --trace "$tmp/$name.trace.json" --history "$tmp/$name.csv" \
        --format json >"$tmp/$name.json" 2>"$tmp/$name.err"
}
if [ "$CASE" = all ] || [ "$CASE" = strategies ]; then
for spec in "ddp2:--model mlp --ranks 2 --strategy ddp --steps 14" \
    "ar3:--model mlp --ranks 3 --strategy allreduce --steps 10" \
    "dp2:--model mlp --ranks 2 --strategy dp --steps 10" \
    "gs3:--model mlp --ranks 3 --strategy gather-scatter --steps 10" \
    "hvd2:--model mlp --ranks 2 --strategy horovod --steps 10 --cycle-ms 2"; do
    name=${spec%%:*}
    # shellcheck disable=SC2086 # (spec: options)
    traced "$name" 32 ${spec#*:}
    check "$name: runs" test -s "$tmp/$name.json"
    # (the synthetic set at 1x28x28 holds MNIST's 60000 training images:
    # the epoch's steps by hand)
    check "$name: every figure from the trace and the history" checker "$tmp/$name.json" --trace \
        "$tmp/$name.trace.json" --history "$tmp/$name.csv" --batch 32 --train-size 60000
done


# ---- bytes by hand ----
check "ddp and allreduce: each rank sends and receives 2 S (n-1)/n a step" py '
S = int(sys.argv[3])
for f, n in ((sys.argv[1], 2), (sys.argv[2], 3)):
    d = json.load(open(f))
    steps = d["runs"][0]["steps"]
    ranks = d["per_rank"]
    assert sum(q["bytes_sent"] for q in ranks) == 2 * (n - 1) * S * steps, (f, [q["bytes_sent"] for q in ranks])
    assert sum(q["bytes_received"] for q in ranks) == 2 * (n - 1) * S * steps, f
    for q in ranks:  # (a ring chunk is whole floats: each rank within a float a chunk of its share)
        assert abs(q["bytes_sent"] - 2 * S * (n - 1) // n * steps) <= 8 * n * steps, (f, q["bytes_sent"])
    assert d["runs"][0]["bytes_sent"] == sum(q["bytes_sent"] for q in ranks) // n, f
' "$tmp/ddp2.json" "$tmp/ar3.json" $S
check "gather-scatter on 3 ranks: the root gathers 2 S and broadcasts 2 S, each other rank sends and receives S" py '
S = int(sys.argv[2])
d = json.load(open(sys.argv[1]))
k = d["runs"][0]["steps"]
got = [(q["bytes_sent"], q["bytes_received"]) for q in d["per_rank"]]
assert got == [(2 * S * k, 2 * S * k), (S * k, S * k), (S * k, S * k)], got
' "$tmp/gs3.json" $S
check "dp on 2 ranks: rank 0 sends the parameters, half the batch (784 pixels and a label a sample) and the logits' gradients; it receives the logits and the gradients" py '
S, b = int(sys.argv[2]), 32
d = json.load(open(sys.argv[1]))
k = d["runs"][0]["steps"]
X, Y = b * (784 + 1) * 4, b * 10 * 4
got = [(q["bytes_sent"], q["bytes_received"]) for q in d["per_rank"]]
want = [((S + X + Y) * k, (Y + S) * k), ((Y + S) * k, (S + X + Y) * k)]
assert got == want, (got, want)
' "$tmp/dp2.json" $S
check "horovod on 2 ranks: S a step, and a float a tensor for each negotiation the trace shows" py '
S = int(sys.argv[3])
d, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["traceEvents"]
k = d["runs"][0]["steps"]
for q in d["per_rank"]:
    neg = sum(1 for e in t if e.get("pid") == q["rank"] and e.get("name") == "negotiate" and e.get("ph") == "X")
    assert k <= neg and q["bytes_sent"] == S * k + 6 * 4 * neg, (q["bytes_sent"], neg)
' "$tmp/hvd2.json" "$tmp/hvd2.trace.json" $S

check "params: the MLP's by hand" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["params"] == 669706 and r["params_trainable"] == 669706, (r["params"], r["params_trainable"])
' "$tmp/ddp2.json"
fi

if [ "$CASE" = all ] || [ "$CASE" = stages ]; then
for spec in "pipe2:--model lenet --ranks 2 --parallel pipeline --micro-batches 2 --partition 0:6,7: --steps 10 --no-eval" \
    "pdp4:--model lenet --ranks 4 --parallel pipeline --micro-batches 2 --dp 2 --partition 0:6,7: --steps 10 --no-eval"; do
    name=${spec%%:*}
    # shellcheck disable=SC2086 # (spec: options)
    traced "$name" 32 ${spec#*:}
    check "$name: runs" test -s "$tmp/$name.json"
    check "$name: every figure from the trace and the history" checker "$tmp/$name.json" --trace \
        "$tmp/$name.trace.json" --history "$tmp/$name.csv" --batch 32
done

# ---- stages: what crosses a boundary, and the copies' averages ----
check "pipeline, LeNet cut after flatten: each stage sends 400 floats a sample each way a step (and a few bytes of loss)" py '
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
k, act = r["steps"], 400 * 32 * 4
for q in d["per_rank"]:
    assert 0 <= q["bytes_sent"] - act * k <= 32 * k, (q["rank"], q["bytes_sent"], act * k)
for st in r["stages"]:
    assert 0 <= st["sent_mb_per_step"] * 1e6 - act <= 32, st
assert [(s["first_layer"], s["last_layer"]) for s in r["stages"]] == [(0, 6), (7, 11)], r["stages"]
' "$tmp/pipe2.json"
check "pipeline x --dp 2: each copy also averages its stage's gradients with the other copy (a ring of 2: S_stage each way)" py '
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
k, act = r["steps"], 400 * 32 * 4
params = [4 * (156 + 2416), 4 * (48120 + 10164 + 850)]
for q in d["per_rank"]:
    s = q["rank"] % 2  # (rank d x 2 + s is copy d of stage s)
    want = (act + params[s]) * k
    assert 0 <= q["bytes_sent"] - want <= 32 * k, (q["rank"], q["bytes_sent"], want)
# each stage figure: the mean over its copies of the ranks figures
p = d["per_rank"]
for s, st in enumerate(r["stages"]):
    copies = [q for q in p if q["rank"] % 2 == s]
    for key, rank_key in (("compute_pct", "compute_pct"), ("idle_pct", "idle_pct")):
        want = statistics.mean(q[rank_key] for q in copies)
        assert abs(st[key] - want) < 1e-9, (s, key, st[key], want)
    want = statistics.mean(q["bytes_sent"] / q["steps"] / 1e6 for q in copies)
    assert abs(st["sent_mb_per_step"] - want) < 1e-12, (s, st["sent_mb_per_step"], want)
' "$tmp/pdp4.json"

# ---- 1F1B and GPipe: how many micro-batches a stage holds ----
# (PipeDream-Flush: stage s of S holds min(S - s, M) forwards before its
# first backward; GPipe holds all M), counted from the order of the
# forward and backward spans on each stage's main thread in the trace
for sched in 1f1b gpipe; do
    "$BIN" "${run[@]}" --model lenet --ranks 3 --parallel pipeline --schedule $sched --micro-batches 4 \
        --batch-size 32 --steps 4 --no-eval --trace "$tmp/$sched.json" --format json >/dev/null 2>&1
    check "$sched, 3 stages, 4 micro-batches: the in-flight depth of each stage in the trace" py '
t = json.load(open(sys.argv[1]))["traceEvents"]
sched, S, M = sys.argv[2], 3, 4
for s in range(S):
    ev = sorted((e["ts"], e["cat"]) for e in t if e.get("ph") == "X" and e["pid"] == s and e["tid"] == 0
                and e["cat"] in ("forward", "backward") and e["args"].get("step") == 2)
    assert len(ev) == 2 * M, (s, ev)
    live = peak = 0
    for _, c in ev:
        live += 1 if c == "forward" else -1
        peak = max(peak, live)
    want = min(S - s, M) if sched == "1f1b" else M
    assert peak == want, (sched, "stage", s, "holds", peak, "want", want)
' "$tmp/$sched.json" $sched
done

check "params: LeNet's by hand" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["params"] == 61706 and r["params_trainable"] == 61706, (r["params"], r["params_trainable"])
' "$tmp/pipe2.json"
fi

if [ "$CASE" = all ] || [ "$CASE" = horovod ]; then
# ---- Horovod: one negotiation per --cycle-ms, and the fusion buffers ----
# a cycle of 40 ms is far longer than the MLP's backward, so a step is
# usually one negotiation that finds every gradient final; the negotiations
# start 40 ms apart (no sooner: at most one a cycle; and not much later:
# the thread sleeps out the rest of the cycle and no more). A rank that is
# descheduled mid-backward for most of a cycle splits its step into two
# rounds; each round then reduces the gradients final everywhere, which in
# backward order is the next run of tensors, fused greedily on their own.
traced hvdc 32 --model mlp --ranks 2 --strategy horovod --steps 8 --no-eval --cycle-ms 40 --fusion-mb 0.02
traced hvdf 32 --model mlp --ranks 2 --strategy horovod --steps 6 --no-eval --cycle-ms 40
check "horovod --cycle-ms 40: negotiations 40 ms apart; --fusion-mb 0.02 and 64: the fused buffers by hand" py '
# the MLP 784-512-512-10 in backward order: fc3 bias, weight, fc2 ..., in floats
LENS = [10, 5120, 512, 262144, 512, 401408]
def pack(lens, cap):
    """Horovod fusion by hand: in order, a buffer takes tensors while they fit"""
    out, used = [], 0
    for n in lens:
        if used and used + n > cap:
            out.append(used)
            used = 0
        used += n
    return out + [used] if used else out
assert pack(LENS, 5242) == [5130, 512, 262144, 512, 401408]
EVENTS = {f: json.load(open(f))["traceEvents"] for f in sys.argv[1:3]}
def rounds(f, pid, step):
    ev = sorted((e["ts"], e["name"], e["args"]["bytes"]) for e in EVENTS[f] if e.get("ph") == "X" and e.get("cat") == "comm"
                and e["pid"] == pid and e["args"]["step"] == step)
    assert ev and ev[0][1] == "negotiate", (step, ev)
    out = []
    for _, name, b in ev:
        if name == "negotiate":
            out.append([])
        else:
            out[-1].append(b // 4)  # 2 ranks: a ring allreduce sends its size
    return out
def check_step(f, pid, step, cap):
    """every round is the greedy packing of the next run of tensors; the rounds cover each once"""
    i, rs = 0, rounds(f, pid, step)
    for got in rs:
        j = next((j for j in range(i, len(LENS) + 1) if pack(LENS[i:j], cap) == got), None)
        assert j is not None, (f, pid, step, "round", got, "packs none of", LENS[i:])
        i = j
    assert i == len(LENS), (f, pid, step, "reduced", LENS[:i])
    return len(rs)
def negotiations(f, pid):
    return sorted(e["ts"] for e in EVENTS[f] if e.get("ph") == "X" and e["pid"] == pid and e["name"] == "negotiate")
for pid in (0, 1):
    neg = negotiations(sys.argv[1], pid)
    # (the cycles keep their cadence: a wake that comes late does not
    # move the next one, so a single gap may be short by that lateness;
    # their mean may not)
    gaps = [(b - a) / 1e3 for a, b in zip(neg, neg[1:])]
    assert statistics.mean(gaps) >= 40 - 2 and statistics.median(gaps) < 1.5 * 40, gaps
    # --fusion-mb 0.02 (5242 floats); the default (64 MB) holds the whole model
    one = [check_step(sys.argv[1], pid, s, 5242) for s in range(1, 8)]
    one += [check_step(sys.argv[2], pid, s, 64 * 2**20 // 4) for s in range(1, 6)]
    # a step in one round is the rule (a split one needs a rank descheduled
    # for most of 40 ms): with none, the thread is not waiting out its cycle
    assert one.count(1) >= 1, one
assert sum(LENS) * 4 == int(sys.argv[3]), sys.argv[3]
' "$tmp/hvdc.trace.json" "$tmp/hvdf.trace.json" $S
check "horovod --cycle-ms 40: the trace's figures, negotiation included" checker "$tmp/hvdc.json" --trace \
    "$tmp/hvdc.trace.json" --batch 32

fi

if [ "$CASE" = all ] || [ "$CASE" = sweeps ]; then
# ---- --repeat: the reported row is the median repeat, by samples/s ----
# each repeat's samples/s at the median step, worked out from the history
# (per step the slowest rank; every step but the first)
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --batch-size 32 --steps 12 --no-eval --repeat 3 --history "$tmp/rep.csv" \
    --format json >"$tmp/rep.json" 2>/dev/null
check "--repeat 3: ms_p50 and samples/s are the median repeat's, the spread the others'" py '
rows = list(csv.DictReader(open(sys.argv[1])))
runs = json.load(open(sys.argv[2]))["runs"]
for r in runs:
    sps = []
    for k in range(3):
        st = [x for x in rows if x["kind"] == "step" and int(x["run"]) == r["run"] and int(x["repeat"]) == k]
        n = max(int(x["step"]) for x in st) + 1
        slow = sorted(max(float(x["step_ms"]) for x in st if int(x["step"]) == s) for s in range(1, n))
        p50 = slow[(len(slow) - 1) // 2]
        sps.append((r["global_batch"] / (p50 / 1e3), p50))
    sps.sort()
    (lo, _), (mid, p50), (hi, _) = sps
    assert abs(r["ms_p50"] - p50) <= 0.0001, (r["run"], r["ms_p50"], sps)
    for got, want in ((r["samples_per_s_p50"], mid), (r["repeat_samples_per_s_min"], lo),
                      (r["repeat_samples_per_s_max"], hi)):
        # (the history gives step times to 0.1 us: p50 to 1e-4 of itself)
        assert abs(got - want) <= 1e-4 * want, (r["run"], got, want, sps)
    assert r["repeats"] == 3
' "$tmp/rep.csv" "$tmp/rep.json"

# ---- efficiency against a baseline of 2 ranks ----
"$BIN" "${run[@]}" --model mlp --ranks 1,2,4 --batch-size 16 --steps 12 --no-eval --baseline 1 --format json \
    >"$tmp/b1.json" 2>/dev/null
check "--baseline 1 (2 ranks): speedup is samples/s over run 1's, efficiency speedup / (ranks / 2)" py '
d = json.load(open(sys.argv[1]))["runs"]
base = d[1]
assert [r["ranks"] for r in d] == [1, 2, 4] and all(r["speedup_baseline_run"] == 1 for r in d), d
for r in d:
    sp = r["samples_per_s_p50"] / base["samples_per_s_p50"]
    assert abs(r["speedup"] - sp) <= 1e-9 * sp, (r["run"], r["speedup"], sp)
    want = {1: 200.0 * sp, 2: 100.0 * sp, 4: 50.0 * sp}[r["ranks"]]
    assert abs(r["efficiency_pct"] - want) <= 1e-9 * want, (r["run"], r["efficiency_pct"], want)
' "$tmp/b1.json"
for i in 0 2; do
    check "--baseline 1: run $i's speedup and efficiency by their meaning" checker "$tmp/b1.json" --run $i
done

fi

if [ "$CASE" = all ] || [ "$CASE" = predict ]; then
# ---- --predict with --link, the comm by hand ----
# --link BW,LAT: a ring allreduce of B bytes on K ranks costs 2(K-1)(LAT +
# B/(K BW)); a rooted collective (gather, broadcast, scatter, reduce) the
# root's K-1 messages in turn, (K-1)(LAT + B/BW); a message between stages
# LAT + B/BW, each boundary crossed twice (activations, gradients) on the
# first micro-batch's way
predict() { # predict NAME ARGS..
    local name=$1
    shift
    "$BIN" "${run[@]}" --model mlp --ranks 1 --batch-size 32 --steps 8 --no-eval --predict --predict-ranks 2,4 \
        "$@" --format json >"$tmp/pred_$name.json" 2>/dev/null
}
predict gs --strategy gather-scatter --link 1GB/s,10us
predict dp --strategy dp --link 1GB/s,10us
predict ar --strategy allreduce --link 1GB/s,10us
predict ddp --strategy ddp --link 1GB/s,10us
predict hvd --strategy horovod --link 1GB/s,10us --cycle-ms 40 --fusion-mb 0.02
check "--predict --link: gather-scatter, dp, allreduce, ddp and horovod comm by hand" py '
S, lat, bw, b = float(sys.argv[2]), 10e-6, 1e9, 32
X, Y = b * 784 * 4, b * 10 * 4
def rooted(K, B): return (K - 1) * (lat + B / bw)
def ring(K, B): return 2 * (K - 1) * (lat + B / (K * bw))
want = {
    "gs": lambda K: rooted(K, S) * 2,
    "dp": lambda K: rooted(K, X) + 2 * rooted(K, Y) + 2 * rooted(K, S),
    "ar": lambda K: sum(ring(K, 4 * n) for n in (401408, 512, 262144, 512, 5120, 10)),
    # two buckets: the first (1 MB) holds fc3 and fc2s bias, the second the rest
    "ddp": lambda K: ring(K, 4 * 5642) + ring(K, S - 4 * 5642),
    # one negotiation (a float for each of 6 tensors), then the 5 buffers of --fusion-mb 0.02
    "hvd": lambda K: ring(K, 24) + sum(ring(K, 4 * n) for n in (5130, 512, 262144, 512, 401408)),
}
for name, f in want.items():
    r = json.load(open(sys.argv[1] + "/pred_%s.json" % name))["runs"][0]
    # the link line says how the bytes go: through the root, or round a ring
    how = "the root" if name in ("gs", "dp") else "ring allreduce"
    assert how in r["prediction"]["link"], (name, r["prediction"]["link"])
    for row in r["prediction"]["rows"]:
        K = row["ranks"]
        assert abs(row["comm_ms"] - 1e3 * f(K)) <= 1e-9 * row["comm_ms"], (name, K, row["comm_ms"], 1e3 * f(K))
        if name in ("gs", "dp", "ar"):  # nothing hides them: all exposed, on top of the measured step
            assert abs(row["exposed_comm_ms"] - row["comm_ms"]) <= 1e-12, (name, row)
            assert row["step_ms"] - row["comm_ms"] >= r["ms_p50"] * (1 - 1e-12), (name, row, r["ms_p50"])
        # weak scaling: K ranks each with the batch of the measured one
        sp = K * r["ms_p50"] / row["step_ms"]
        assert abs(row["speedup"] - sp) <= 1e-9 * sp, (name, row, sp)
        assert abs(row["efficiency_pct"] - 100 * sp / K) <= 1e-9 * sp, (name, row)
' "$tmp" $S
# horovod: the first negotiation waits for the first cycle's end (40 ms),
# after the MLP's backward: what shows beyond backward is that wait plus
# the comm, 40 - B + comm, B the backward's ms (bounded by the trace's)
"$BIN" "${run[@]}" --model mlp --ranks 1 --batch-size 32 --steps 8 --no-eval --predict --predict-ranks 2 \
    --strategy horovod --link 1GB/s,10us --cycle-ms 40 --trace "$tmp/hvdp.trace.json" --format json \
    >"$tmp/hvdp.json" 2>/dev/null
check "--predict horovod --cycle-ms 40: the exposed time is the cycle less backward, plus the comm" py '
row = json.load(open(sys.argv[1]))["runs"][0]["prediction"]["rows"][0]
t = json.load(open(sys.argv[2]))["traceEvents"]
# (the prediction takes backward as the mean times of the layers, at most the
# longest backward span of the run)
B = max(e["dur"] / 1e3 for e in t if e.get("ph") == "X" and e["cat"] == "backward")
extra = row["exposed_comm_ms"] - row["comm_ms"]
assert 40 - B - 0.01 <= extra <= 40, (extra, B, row)
' "$tmp/hvdp.json" "$tmp/hvdp.trace.json"
# stages: a boundary of the MLP carries 784, 512 or 10 floats a sample (its
# layers' outputs); with --link 1MB/s,0us the comm is twice the boundaries'
# bytes over 1 MB/s; with 1000GB/s,100us twice 100 us a boundary
for p in "model" "pipeline --micro-batches 4"; do
    for link in 1MB/s,0us 1000GB/s,100us; do
        # shellcheck disable=SC2086 # (p: options)
        "$BIN" "${run[@]}" --model mlp --ranks 1 --batch-size 32 --steps 8 --no-eval --parallel $p --predict \
            --predict-ranks 2,3 --link $link --format json >"$tmp/sp.json" 2>/dev/null
        check "--predict --parallel $p --link $link: the boundaries' messages by hand" py '
import itertools
r = json.load(open(sys.argv[1]))["runs"][0]
mb = 32 // (r.get("micro_batches") or 1)
link = sys.argv[2]
for row in r["prediction"]["rows"]:
    K = row["ranks"]
    if link.startswith("1MB"):
        floats = row["comm_ms"] / 1e3 * 1e6 / 2 / 4 / mb
        sums = {sum(c) for c in itertools.combinations_with_replacement((784, 512, 10), K - 1)}
        assert any(abs(floats - s) < 1e-6 for s in sums), (K, floats, sums)
    else:
        assert 2 * (K - 1) * 0.1 <= row["comm_ms"] <= 2 * (K - 1) * (0.1 + 784 * 32 * 4 / 1e9), (K, row)
    assert abs(row["exposed_comm_ms"] - row["comm_ms"]) <= 1e-12, row
    # strong scaling: the same batch over K stages
    sp = r["ms_p50"] / row["step_ms"]
    assert abs(row["speedup"] - sp) <= 1e-9 * sp and abs(row["efficiency_pct"] - 100 * sp / K) <= 1e-9 * sp, row
' "$tmp/sp.json" $link
    done
done

fi

if [ "$CASE" = all ] || [ "$CASE" = misc ]; then
# ---- wall time against a clock outside ----
t0=$(date +%s.%N)
traced wall 32 --model mlp --ranks 2 --strategy ddp --steps 10 --no-eval
t1=$(date +%s.%N)
check "wall_s: at least the trace's first step start to last step end, at most the process's life" py '
r = json.load(open(sys.argv[1]))["runs"][0]
t = [e for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "step"]
span = (max(e["ts"] + e["dur"] for e in t) - min(e["ts"] for e in t)) / 1e6
outside = float(sys.argv[4]) - float(sys.argv[3])
assert span <= r["wall_s"] <= outside, (span, r["wall_s"], outside)
' "$tmp/wall.json" "$tmp/wall.trace.json" "$t0" "$t1"

# ---- pred/step from an alpha-beta fit written by hand ----
# a fit of 10 us + 0.001 us a byte for the shm ring's 2-rank allreduce:
# DDP's MLP on 2 ranks sends 2 buckets a step, of S bytes in all, so each
# rank's collectives take 2 x 10 + 0.001 S us a step
cat >"$tmp/fit.json" <<'EOF2'
{"fits": [{"backend": "shm", "algo": "ring", "ranks": 2, "collective": "allreduce", "alpha_us": 10,
           "beta_us_per_byte": 0.001, "r2": 1.0}]}
EOF2
DDPTOP_COMM_MODEL="$tmp/fit.json" "$BIN" "${run[@]}" --model mlp --ranks 2 --batch-size 32 --strategy ddp --steps 6 \
    --no-eval --format json >"$tmp/fit_run.json" 2>/dev/null
check "predicted_transfer_ms_per_step: 2 buckets x 10 us + 0.001 us x S bytes" py '
r = json.load(open(sys.argv[1]))["runs"][0]
want = (2 * 10 + 0.001 * float(sys.argv[2])) / 1e3
assert abs(r["predicted_transfer_ms_per_step"] - want) <= 1e-9 * want, (r["predicted_transfer_ms_per_step"], want)
' "$tmp/fit_run.json" $S

# ---- the test loss: an untrained model's, as its training loss ----
# (--lr 1e-12: the parameters never move, so the test split's mean loss
# and the training batches' mean loss estimate the same expectation; over
# 5120 training and 10000 test samples they agree within 1%, the test
# split's samples counted by hand)
"$BIN" "${run[@]}" --model mlp --ranks 2 --batch-size 64 --lr 1e-12 --steps 40 --history "$tmp/lr0.csv" \
    --format json >"$tmp/lr0.json" 2>/dev/null
check "history test_loss: the unmoved model's mean training loss; test_acc the report's" py '
rows = list(csv.DictReader(open(sys.argv[1])))
train = [float(x["loss"]) for x in rows if x["kind"] == "step"]
ep = [x for x in rows if x["kind"] == "epoch"]
n = sum(int(x["samples"]) for x in ep)
assert n == 10000, n
test = sum(float(x["test_loss"]) * int(x["samples"]) for x in ep) / n
assert abs(test - statistics.mean(train)) < 0.01 * test, (test, statistics.mean(train))
' "$tmp/lr0.csv"

# ---- the loss threshold: the first step whose running loss is below it ----
traced thr 32 --model mlp --ranks 2 --steps 30 --no-eval --loss-threshold 2.1
check "--loss-threshold 2.1: the step and epoch from the trace's losses" checker "$tmp/thr.json" --trace \
    "$tmp/thr.trace.json" --batch 32

fi

if [ "$CASE" = all ] || [ "$CASE" = epochs ]; then
# ---- figures over more than one epoch ----
# No run above leaves its first epoch (60000 images), so a figure that is
# not started again at a new epoch would pass them. A small MNIST-shaped
# set, learnable so that each epoch trains better than the last: the
# class k image is noise with rows 4 + 2k and 5 + 2k brighter by 80. 1024
# training images on 2 ranks of 32: 1024 / 2 / 32 = 16 steps an epoch, so
# --steps 40 runs epochs 1 and 2 whole and 8 steps of epoch 3; the test
# split's 256 images are 128 a rank at each epoch's end.
/usr/bin/python3 - "$tmp/ep_data" <<'PY'
import os, random, struct, sys
d = sys.argv[1]
os.makedirs(d)
r = random.Random(2)
for split, n in (("train", 1024), ("t10k", 256)):
    labels = [r.randrange(10) for _ in range(n)]
    pixels = bytearray()
    for k in labels:
        img = bytearray(r.randrange(176) for _ in range(784))
        for row in (4 + 2 * k, 5 + 2 * k):
            for x in range(28):
                img[row * 28 + x] += 80
        pixels += img
    with open(os.path.join(d, split + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes(pixels))
    with open(os.path.join(d, split + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(labels))
PY
# (--loss-threshold 2.2: the running loss falls below it in epoch 2)
"$BIN" --batch --quiet --dataset mnist --data-dir "$tmp/ep_data" --device cpu --threads-per-rank 1 --model mlp \
    --ranks 2 --strategy ddp --batch-size 32 --lr 0.01 --steps 40 --loss-threshold 2.2 --trace "$tmp/ep.trace.json" \
    --history "$tmp/ep.csv" --format json >"$tmp/ep.json" 2>"$tmp/ep.err"
check "3 epochs: runs" test -s "$tmp/ep.json"
check "3 epochs: every figure from the trace and the history" checker "$tmp/ep.json" --trace "$tmp/ep.trace.json" \
    --history "$tmp/ep.csv" --batch 32 --train-size 1024
check "3 epochs: train_acc is epoch 3's correct / samples (steps 32-39 by hand), not the run's" py '
r = json.load(open(sys.argv[1]))["runs"][0]
steps = [e["args"] for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "step"]
assert r["steps"] == 40 and r["steps_per_epoch"] == 16, (r["steps"], r["steps_per_epoch"])
assert len(steps) == 80 and all(a["epoch"] == a["step"] // 16 for a in steps), "epochs are not step // 16"
def acc(first, last):
    got = [a for a in steps if first <= a["step"] <= last]
    return 100.0 * sum(a["correct"] for a in got) / sum(a["samples"] for a in got)
last, whole = acc(32, 39), acc(0, 39)
print("  train accuracy: epoch 1 %.2f, epoch 2 %.2f, epoch 3 %.2f, the run %.2f; the report %.4f"
      % (acc(0, 15), acc(16, 31), last, whole, r["train_acc"]))
# (the set must keep the epochs apart, or this check could not fail)
assert abs(last - whole) > 5, (last, whole)
assert abs(r["train_acc"] - last) < 1e-9, (r["train_acc"], last)
' "$tmp/ep.json" "$tmp/ep.trace.json"
check "3 epochs: each epoch tests 128 images a rank; test_acc is epoch 3's" py '
rows = [x for x in csv.DictReader(open(sys.argv[1])) if x["kind"] == "epoch"]
got = sorted((int(x["epoch"]), int(x["rank"]), int(x["samples"])) for x in rows)
assert got == [(e, k, 128) for e in (1, 2, 3) for k in (0, 1)], got
r = json.load(open(sys.argv[2]))["runs"][0]
last = [x for x in rows if x["epoch"] == "3"]
want = 100.0 * sum(int(x["correct"]) for x in last) / 256
assert abs(r["test_acc"] - want) < 1e-9, (r["test_acc"], want)
' "$tmp/ep.csv" "$tmp/ep.json"
check "3 epochs: --loss-threshold 2.2 is met in epoch 2, threshold_epoch = step // 16 + 1" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert 16 <= r["threshold_step"] < 32 and r["threshold_epoch"] == r["threshold_step"] // 16 + 1, \
    (r["threshold_step"], r["threshold_epoch"])
' "$tmp/ep.json"

fi

checks_done
