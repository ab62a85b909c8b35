#!/usr/bin/env bash
# test_numbers.sh - the figures a report can be quoted for, checked against
# what they claim to be, through the real binary (JSON and CSV reports):
#  - speedups name their baseline and whether the comparison is strong or
#    weak scaling, in a sweep that mixes both; speedup is the ratio of
#    median samples/s, efficiency the speedup over the rank ratio;
#    --baseline single, ranks1 and a run number pick what they say;
#  - medians, not means: a run with slow outlier steps (--inject-fault slow
#    at the end) keeps its median and draws the noise note;
#  - coll% (time in collectives, waits included) on a straggler run: the
#    fast rank's collectives are mostly waiting, the straggler's are not;
#  - --history: one row per rank and step, and per rank and epoch (under
#    --repeat, the report's run numbers with a repeat column), that
#    agree with the run's report;
#  - desched%: 4 ranks held to 2 cores wait for them, as /proc says from
#    outside;
#  - --repeat: one row per configuration, the spread noted;
#  - --steps without --epochs is not cut to one epoch; epochs in reports
#    count from 1.
set -u
BIN=${1:?usage: test_numbers.sh path/to/ddptop [counts|timing]}
# counts: the checks that hold on any load (a test per core); timing: the
# medians under slow steps, coll% on a straggler and desched%, whose
# figures a neighbour's load would move (CMake runs them alone)
part=${2:-all}
in_part() { [ "$part" = all ] || [ "$part" = "$1" ]; }
. "$(dirname "$0")/checks.sh"
py() { /usr/bin/env python3 -c "import json,sys,csv; $1" "${@:2}"; }
run=(--batch --quiet --dataset synthetic --no-eval --threads-per-rank 1)

if in_part counts; then
# ---- baselines in a mixed sweep: runs (1,16) (1,32) (2,16) (2,32) ----
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --batch-size 16,32 --steps 40 --format json >"$tmp/mix.json" 2>/dev/null
check "mixed sweep runs" test -s "$tmp/mix.json"
check "each row names its baseline and scaling" py '
d = json.load(open(sys.argv[1]))["runs"]
want = {0: (0, "baseline"), 1: (1, "baseline"), 2: (1, "strong"), 3: (1, "weak")}
for i, (base, sc) in want.items():
    r = d[i]
    assert (r["speedup_baseline_run"], r["scaling"]) == (base, sc), (i, r["speedup_baseline_run"], r["scaling"])
    b = d[base]
    sp = r["samples_per_s_p50"] / b["samples_per_s_p50"]
    assert abs(r["speedup"] - sp) < 1e-9 * sp, (i, r["speedup"], sp)
    assert abs(r["efficiency_pct"] - 100 * sp * b["ranks"] / r["ranks"]) < 1e-6, i
    assert abs(r["samples_per_s_p50"] - r["global_batch"] / (r["ms_p50"] / 1e3)) < 1e-6 * r["samples_per_s_p50"], i
' "$tmp/mix.json"
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --batch-size 16,32 --steps 40 --format md >"$tmp/mix.md" 2>/dev/null
check "the markdown report labels speedups (r1 weak)" grep -q '| r1 weak |' "$tmp/mix.md"
check "the report says what strong and weak mean" grep -q 'strong = the same global batch, weak = the same per-rank batch' "$tmp/mix.md"

# ---- samples/s is what speedup compares, in every format; one table per kind of scaling ----
# (the last 6 of 40 steps of rank 0 5x slower: the mean step is pulled, the
# median is not, and by more in some runs than in others)
mixrun=("${run[@]}" --model mlp --ranks 1,2 --batch-size 16,32 --steps 40 --inject-fault rank=0,step=34,kind=slow)
"$BIN" "${mixrun[@]}" --format json,csv,md,text --output "$tmp/shown" 2>/dev/null
mv "$tmp/shown.txt" "$tmp/shown.text"
check "speedup = the ratio of the samples/s shown beside it; a table per kind of scaling, named" \
    python3 - "$tmp/shown.json" "$tmp/shown.csv" "$tmp/shown.md" "$tmp/shown.text" <<'PY'
import csv, json, re, sys
def close(what, speedup, sps, base, digits):
    """a printed speedup (2 decimals) against printed samples/s (digits decimals)"""
    want = sps / base
    slack = 0.005 + want * 0.5 * 10 ** -digits * (1 / sps + 1 / base) + 1e-9 * want
    assert abs(speedup - want) <= slack, (what, speedup, sps, base)
runs = json.load(open(sys.argv[1]))["runs"]
for r in runs:
    b = runs[r["speedup_baseline_run"]]
    assert abs(r["speedup"] - r["samples_per_s"] / b["samples_per_s"]) <= 1e-9 * r["speedup"], ("json", r)
rows = [x for x in csv.DictReader(open(sys.argv[2])) if x["rank"] == "all"]
for i, x in enumerate(rows):
    b = rows[int(x["speedup_baseline_run"])]
    close("csv run %d" % i, float(x["speedup"]), float(x["samples_per_s"]), float(b["samples_per_s"]), 1)
    assert x["scaling"] == runs[i]["scaling"], (i, x["scaling"])
# markdown and text: tables of (heading, rows); a row: (run's global batch,
# ranks, samples/s, speedup, vs run, vs kind); the run is known by its ranks
# and global batch (this sweep has one run of each)
def md_tables(path):
    tables, heading, head = [], None, None
    for l in open(path):
        l = l.rstrip("\n")
        m = re.match(r"\*\*(.*)\*\*$", l)
        if m:
            heading = m.group(1)
        elif l.startswith("| run | model |"):
            head = [c.strip() for c in l.strip("|").split("|")]
            tables.append((heading, []))
        elif l.startswith("| ") and head and not l.startswith("|---"):
            c = dict(zip(head, [v.strip() for v in l.strip("|").split("|")]))
            vs = c["vs"].split()
            tables[-1][1].append((int(c["global"]), int(c["ranks"]), float(c["samples/s"]),
                                  float(c["speedup"].rstrip("!").rstrip("x")), int(vs[0][1:]), vs[1]))
        elif not l.startswith("|"):
            head = None
            if l.strip():
                heading = None if not l.startswith("**") else heading
    return tables
def text_tables(path):
    # values hold no blanks up to vs ("r1 weak"): columns by position
    tables, heading, inside = [], None, False
    for l in open(path):
        l = l.rstrip("\n")
        if l.startswith("run model "):
            tables.append((heading, []))
            inside = True
        elif inside and re.match(r" *[0-9]+ mlp ", l):
            f = l.split()
            assert f[4] in ("none", "shm/ring"), (path, "comm", f[4])
            tables[-1][1].append((int(f[8]), int(f[6]), float(f[14]), float(f[15].rstrip("!").rstrip("x")), int(f[17][1:]), f[18]))
        else:
            inside = False
            heading = l[:-1] if l.endswith(":") else None
    return tables
for path, tables in ((sys.argv[3], md_tables(sys.argv[3])), (sys.argv[4], text_tables(sys.argv[4]))):
    # runs 0 (1 x 16), 1 (1 x 32), 2 (2 x 16: strong against run 1), 3 (2 x 32: weak against run 1)
    assert [t[0].split(":")[0].lower() for t in tables] == ["strong scaling", "weak scaling"], (path, [t[0] for t in tables])
    for heading, rows in tables:
        kind = heading.split()[0].lower()
        for g, k, sps, sp, base, vs in rows:
            # (a 1-rank run is its own baseline: "rN base" in every table it is in)
            assert vs == (kind if k > 1 else "base"), (path, heading, g, k, vs)
            b = [x for x in rows if x[4] == base and x[1] == 1]
            assert b, (path, "run %d's baseline is not in its table" % base)
            close(path, sp, sps, b[0][2], 0)
    got = sorted((h.split()[0].lower(), g, k) for h, rows in tables for g, k, *_ in rows)
    assert got == [("strong", 16, 1), ("strong", 32, 1), ("strong", 32, 2), ("weak", 32, 1), ("weak", 64, 2)], (path, got)
PY

# a rough prediction names the fit that carries it: ddp's allreduce (r2 0.5),
# not the buffers' broadcast (r2 0.3, a sliver of the time)
cat >"$tmp/cm.json" <<'EOF'
{"fits": [{"backend": "shm", "algo": "ring", "ranks": 2, "collective": "allreduce", "alpha_us": 10,
           "beta_us_per_byte": 0.0001, "r2": 0.5},
          {"backend": "shm", "algo": "ring", "ranks": 2, "collective": "broadcast", "alpha_us": 5,
           "beta_us_per_byte": 0.0001, "r2": 0.3}]}
EOF
DDPTOP_COMM_MODEL="$tmp/cm.json" "$BIN" "${run[@]}" --device cpu --input 3x32x32 --model resnet18 --ranks 2 \
    --batch-size 2 --strategy ddp --steps 3 >"$tmp/rough.txt" 2>/dev/null
check "a rough prediction names the fit that carries it, and how to measure it again" grep -q \
    "pred/step comes mostly from the allreduce fit, whose r2 is 0.50: .*--bench-comm --collective allreduce --ranks 2" \
    "$tmp/rough.txt"

# a missing fit is named, with the command that makes it: ddp on ResNet-18
# broadcasts its batch norms' buffers, and only allreduce has a fit here
cat >"$tmp/cm_ar.json" <<'EOF2'
{"fits": [{"backend": "shm", "algo": "ring", "ranks": 2, "collective": "allreduce", "alpha_us": 10,
           "beta_us_per_byte": 0.0001, "r2": 0.99}]}
EOF2
DDPTOP_COMM_MODEL="$tmp/cm_ar.json" "$BIN" "${run[@]}" --device cpu --input 3x32x32 --model resnet18 --ranks 2 \
    --batch-size 2 --strategy ddp --steps 3 >"$tmp/nofit.txt" 2>/dev/null
check "pred/step n/a names the collective without a fit and the command that makes it" grep -q \
    "run 0: pred/step is n/a: its broadcast has no alpha-beta fit on 2 ranks (ddptop --bench-comm --collective broadcast --ranks 2 --algo ring makes it)" \
    "$tmp/nofit.txt"

# notes for what would puzzle a reader: a run cut inside its warm-up, a
# staged run's test accuracy n/a; in markdown the models' lines a list
"$BIN" "${run[@]}" --model lenet --ranks 2 --steps 4 --warmup-steps 50 --format md >"$tmp/warm.md" 2>/dev/null
check "a run cut inside its warm-up says so" grep -q \
    "run 0 ended inside its learning-rate warm-up (4 of --warmup-steps 50)" "$tmp/warm.md"
check "markdown: the models' lines are a list" grep -q "^- run 0: lenet, 61706 parameters" "$tmp/warm.md"
"$BIN" --batch --quiet --dataset synthetic --threads-per-rank 1 --model lenet --ranks 2 --steps 3 --parallel model \
    >"$tmp/model.txt" 2>/dev/null
check "a model-parallel run says why its test accuracy is n/a" grep -q \
    "run 0: test acc is n/a: each stage holds only its own layers" "$tmp/model.txt"

# model and pipeline parallelism in one sweep: each against its own 1-rank run
"$BIN" "${run[@]}" --model lenet --ranks 1,2 --parallel model,pipeline --micro-batches 2 --batch-size 8 --steps 6 \
    --format json >"$tmp/staged.json" 2>/dev/null
check "a pipeline's speedup is against the 1-rank pipeline, a model run's against the 1-rank model run" py '
d = json.load(open(sys.argv[1]))["runs"]
assert [(r["parallel"], r["ranks"]) for r in d] == [("model", 1), ("model", 2), ("pipeline", 1), ("pipeline", 2)], d
assert [r["speedup_baseline_run"] for r in d] == [0, 0, 2, 2], [r["speedup_baseline_run"] for r in d]
' "$tmp/staged.json"
"$BIN" "${run[@]}" --model mlp --ranks 2 --batch-size 16 --strategy single,allreduce --steps 30 --baseline single \
    --format json >"$tmp/single.json" 2>/dev/null
check "--baseline single: against the single strategy on the global batch" py '
d = json.load(open(sys.argv[1]))["runs"]
assert d[0]["strategy"] == "single" and d[1]["speedup_baseline_run"] == 0 and d[1]["scaling"] == "strong", d
' "$tmp/single.json"
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --batch-size 16 --steps 30 --baseline ranks1 --format json \
    >"$tmp/r1.json" 2>/dev/null
check "--baseline ranks1: weak scaling against one rank" py '
d = json.load(open(sys.argv[1]))["runs"]
assert d[1]["speedup_baseline_run"] == 0 and d[1]["scaling"] == "weak", d[1]
' "$tmp/r1.json"
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --steps 30 --baseline 1 --format json >"$tmp/b1.json" 2>/dev/null
check "--baseline 1: every row against run 1; run 0 (1 rank) at twice its speedup's efficiency" py '
d = json.load(open(sys.argv[1]))["runs"]
assert all(r["speedup_baseline_run"] == 1 for r in d), d
sp = d[0]["samples_per_s_p50"] / d[1]["samples_per_s_p50"]
assert abs(d[0]["speedup"] - sp) <= 1e-9 * sp and abs(d[0]["efficiency_pct"] - 200 * sp) <= 1e-9 * sp, d[0]
' "$tmp/b1.json"
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --steps 30 --baseline 2 >/dev/null 2>"$tmp/err"
check "--baseline past the sweep's runs: exit 2, one line" test "$?" = 2 -a "$(wc -l <"$tmp/err")" = 1

fi
if in_part timing; then
# ---- medians under outlier steps: the last 6 of 40 steps 5x slower ----
"$BIN" "${run[@]}" --model mlp --ranks 1 --steps 40 --inject-fault rank=0,step=34,kind=slow --format json \
    >"$tmp/out.json" 2>/dev/null
check "outliers pull the mean, not the median" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["ms_per_step"] > 1.05 * r["ms_p50"] and r["ms_p90"] > 1.5 * r["ms_p50"], r
' "$tmp/out.json"
"$BIN" "${run[@]}" --model mlp --ranks 1 --steps 40 --inject-fault rank=0,step=34,kind=slow >"$tmp/out.txt" 2>/dev/null
check "the noise note names p90/p50" grep -q "run 0: noisy steps (p90/p50 = " "$tmp/out.txt"

# ---- coll%: comm plus the waits inside collectives ----
"$BIN" "${run[@]}" --model mlp --ranks 2 --steps 40 --slow-rank 1:4 --format json >"$tmp/slow.json" 2>/dev/null
check "coll% >= comm% on every rank; the fast rank waits in collectives, the straggler does not" py '
p = json.load(open(sys.argv[1]))["per_rank"]
for q in p:
    assert q["coll_pct"] + 1e-9 >= q["comm_pct"], q
fast, slow = p[0]["coll_pct"] - p[0]["comm_pct"], p[1]["coll_pct"] - p[1]["comm_pct"]
assert fast > 20 and fast > slow + 15, (fast, slow)
assert p[0]["coll_ms_per_step"] > p[1]["coll_ms_per_step"], p
' "$tmp/slow.json"

fi
if in_part counts; then
# ---- --history against the run ----
"$BIN" "${run[@]}" --model mlp --ranks 2 --steps 25 --history "$tmp/h.csv" --format json >"$tmp/h.json" 2>/dev/null
check "--history: a row per rank and step, step times and the learning rate as the report has them" py '
rows = list(csv.DictReader(open(sys.argv[1])))
r = json.load(open(sys.argv[2]))["runs"][0]
steps = [x for x in rows if x["kind"] == "step"]
assert len(steps) == 2 * 25, len(steps)
assert sorted({int(x["step"]) for x in steps}) == list(range(25))
assert all(x["epoch"] == "1" for x in steps)
last = [x for x in steps if int(x["step"]) == 24]
assert all(abs(float(x["lr"]) - r["lr"]) <= 1e-6 * abs(r["lr"]) + 1e-12 for x in last), (last, r["lr"])
# the run: every step but the first, at its slowest rank; median and p90 as
# numpy.percentile gives them (linear: Python'"'"'s statistics, method inclusive)
import statistics
ms = [max(float(x["step_ms"]) for x in steps if int(x["step"]) == s) for s in range(1, 25)]
p50, p90 = statistics.median(ms), statistics.quantiles(ms, n=10, method="inclusive")[8]
assert abs(p50 - r["ms_p50"]) < 0.001, (p50, r["ms_p50"])
assert abs(p90 - r["ms_p90"]) < 0.001, (p90, r["ms_p90"])
assert abs(statistics.mean(ms) - r["ms_per_step"]) < 0.001, (statistics.mean(ms), r["ms_per_step"])
' "$tmp/h.csv" "$tmp/h.json"
"$BIN" --batch --quiet --dataset synthetic --threads-per-rank 1 --model mlp --ranks 2 --batch-size 512 --epochs 2 \
    --history "$tmp/e.csv" --history-every 10 --format json >"$tmp/e.json" 2>/dev/null
check "--history: every 10th step, and each rank's test accuracy per epoch" py '
rows = list(csv.DictReader(open(sys.argv[1])))
r = json.load(open(sys.argv[2]))["runs"][0]
assert all(int(x["step"]) % 10 == 0 for x in rows if x["kind"] == "step")
ep = [x for x in rows if x["kind"] == "epoch"]
assert sorted((x["epoch"], x["rank"]) for x in ep) == [("1", "0"), ("1", "1"), ("2", "0"), ("2", "1")], ep
last = [x for x in ep if x["epoch"] == "2"]
acc = 100.0 * sum(int(x["correct"]) for x in last) / sum(int(x["samples"]) for x in last)
assert abs(acc - r["test_acc"]) < 1e-6, (acc, r["test_acc"])
' "$tmp/e.csv" "$tmp/e.json"
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --steps 5 --repeat 3 --history "$tmp/r.csv" --format json \
    >"$tmp/r.json" 2>/dev/null
check "--history under --repeat: the report's run numbers, each with its repeats" py '
rows = list(csv.DictReader(open(sys.argv[1])))
runs = json.load(open(sys.argv[2]))["runs"]
got = sorted({(int(x["run"]), int(x["repeat"])) for x in rows})
assert got == [(r, k) for r in range(len(runs)) for k in range(3)], got
assert [q["ranks"] for q in runs] == [1, 2], runs
assert sum(1 for x in rows if x["kind"] == "step" and x["run"] == "1" and x["repeat"] == "2") == 2 * 5, rows
' "$tmp/r.csv" "$tmp/r.json"

fi
if in_part timing; then
# ---- descheduled: 4 ranks x 1 thread held to 2 cores wait for them ----
# (taskset: on any machine, whatever its cores; another program's load
# only adds to the wait). The rank threads' run delay is read from outside
# too, from /proc/PID/task/TID/schedstat while the run goes: the trace's
# desched_ns of every step of a rank cannot exceed the whole delay its
# thread had (check_report.py holds desched% to those steps' records)
desched_run() { # desched_run OUT CPUS ARGS..: the report in OUT.json, the trace in OUT.trace.json, the delays in OUT.delay
    local out=$1 cpus=$2
    shift 2
    /usr/bin/python3 - "$out" "$cpus" "$BIN" "$@" <<'PY'
import json, os, subprocess, sys, time
out, cpus, cmd = sys.argv[1], sys.argv[2], ["taskset", "-c", sys.argv[2]] + sys.argv[3:]
p = subprocess.Popen(cmd + ["--trace", out + ".trace.json", "--format", "json"], stdout=open(out + ".json", "w"),
                     stderr=subprocess.DEVNULL)
delay = {}  # rank thread name -> the last run delay (ns) seen
while p.poll() is None:
    try:
        for tid in os.listdir("/proc/%d/task" % p.pid):
            try:
                name = open("/proc/%d/task/%s/comm" % (p.pid, tid)).read().strip()
                if name.startswith("rank ") and name[5:].isdigit():
                    delay[name] = int(open("/proc/%d/task/%s/schedstat" % (p.pid, tid)).read().split()[1])
            except OSError:
                pass
    except OSError:
        pass
    time.sleep(0.002)
json.dump({"rc": p.returncode, "delay": delay}, open(out + ".delay", "w"))
PY
}
desched_run "$tmp/d4" 0,1 "${run[@]}" --model mlp --ranks 4 --steps 40
check "desched% > 10 with 4 ranks on 2 cores" py '
a = json.load(open(sys.argv[1]))["runs"][0]["desched_pct"]
assert a is not None and a > 10, a
' "$tmp/d4.json"
check "desched: the trace's per-step figures, and the report's from them" /usr/bin/python3 "$(dirname "$0")/check_report.py" \
    "$tmp/d4.json" --trace "$tmp/d4.trace.json"
check "desched: no rank's steps waited for a core longer than its thread did (read from /proc while it ran)" py '
t = json.load(open(sys.argv[1]))["traceEvents"]
ext = json.load(open(sys.argv[2]))["delay"]
assert len(ext) == 4, ext
for r in range(4):
    steps = sum(e["args"]["desched_ns"] for e in t if e.get("cat") == "step" and e["pid"] == r)
    seen = ext["rank %d" % r]
    # (the last reading may come up to a few ms before the thread ends)
    assert 0 < steps <= seen + 20e6, (r, steps, seen)
    assert steps >= 0.3 * seen, (r, steps, seen)  # (and most of it fell inside steps)
' "$tmp/d4.trace.json" "$tmp/d4.delay"

fi
if in_part counts; then
# ---- --repeat: the median run of each configuration, with the spread ----
"$BIN" "${run[@]}" --model mlp --ranks 1,2 --steps 20 --repeat 3 --format json >"$tmp/rep.json" 2>/dev/null
check "--repeat 3: one row per configuration, its samples/s inside the spread" py '
d = json.load(open(sys.argv[1]))["runs"]
assert len(d) == 2, len(d)
for r in d:
    assert r["repeats"] == 3 and r["repeat_samples_per_s_min"] <= r["samples_per_s_p50"] <= r["repeat_samples_per_s_max"], r
' "$tmp/rep.json"

# ---- --scale-lr: the linear scaling rule, lr x global batch / --base-batch ----
# 2 ranks x 16 = a global batch of 32; against --base-batch 8 the rate is
# 4 x --lr (by hand: 0.01 x 32 / 8 = 0.04), so training must end with the
# very parameters of a run given --lr 0.04 (and not those of --lr 0.01, nor
# of --lr x ranks, 0.02); without --base-batch, 256: 0.01 x 32 / 256
lrrun=("${run[@]}" --model lenet --ranks 2 --batch-size 16 --steps 6 --lr-decay none)
"$BIN" "${lrrun[@]}" --lr 0.01 --scale-lr --base-batch 8 --save-params "$tmp/scaled.bin" --format json \
    >"$tmp/scaled.json" 2>/dev/null
"$BIN" "${lrrun[@]}" --lr 0.01 --scale-lr --base-batch 8 >"$tmp/scaled.txt" 2>/dev/null
"$BIN" "${lrrun[@]}" --lr 0.04 --save-params "$tmp/by_hand.bin" >/dev/null 2>&1
"$BIN" "${lrrun[@]}" --lr 0.02 --save-params "$tmp/by_ranks.bin" >/dev/null 2>&1
check "--scale-lr trains at lr x global batch / --base-batch: the parameters of --lr 0.04 set by hand" \
    cmp -s "$tmp/scaled.bin" "$tmp/by_hand.bin"
check "--scale-lr is not lr x ranks" test -s "$tmp/by_ranks.bin" -a -s "$tmp/scaled.bin"
check "... (its parameters differ from lr x ranks')" eval '! cmp -s "$tmp/scaled.bin" "$tmp/by_ranks.bin"'
check "--scale-lr: the report gives the base, peak and last rate" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert abs(r["lr_base"] - 0.01) < 1e-8 and abs(r["lr_peak"] - 0.04) < 1e-8 and r["base_batch"] == 8, r
assert abs(r["lr"] - 0.04) < 1e-8, r["lr"]  # (no warm-up, no decay: the last step ran at the peak)
' "$tmp/scaled.json"
check "--scale-lr: the text report says how the rate was made" grep -q \
    "run 0: --scale-lr: the rate is --lr 0.01 x the global batch 32 / --base-batch 8 = 0.04 at its peak; the last step's was 0.04" \
    "$tmp/scaled.txt"
"$BIN" "${lrrun[@]}" --lr 0.01 --scale-lr --warmup-steps 100 --format json >"$tmp/scaled256.json" 2>/dev/null
check "--scale-lr against the default --base-batch 256, inside a warm-up" py '
r = json.load(open(sys.argv[1]))["runs"][0]
peak = 0.01 * 32 / 256
assert abs(r["lr_peak"] - peak) < 1e-9 and r["base_batch"] == 256, r
assert abs(r["lr"] - peak * 6 / 100) < 1e-9, (r["lr"], peak * 6 / 100)  # step 6 of a 100-step linear warm-up
' "$tmp/scaled256.json"

# ---- the studies' units: compute and communication per epoch, algbw, wall ----
# 3 ranks (allreduce's busbw factor 4/3, not 1): each figure against others
# of the report. A ring allreduce of S bytes on n ranks sends 2(n-1)/n S from
# each rank, so the data S of the calls is bytes sent x n / (2(n-1)); an
# epoch of the synthetic set's 60000 images is 60000 // (3 x 16) steps.
"$BIN" "${run[@]}" --model mlp --ranks 3 --batch-size 16 --steps 30 --format json,md --output "$tmp/units" 2>/dev/null
check "compute and comm s/epoch, algbw: from the report's other figures" py '
d = json.load(open(sys.argv[1]))
r, per = d["runs"][0], d["per_rank"]
spe = 60000 // (3 * 16)
assert r["steps_per_epoch"] == spe, r["steps_per_epoch"]
def near(a, b, rel):
    assert abs(a - b) <= rel * abs(b) + 1e-12, (a, b)
for q in per:
    # compute and coll as shares of the rank'"'"'s mean step, the same steps
    near(q["compute_s_per_epoch"], q["compute_pct"] / 100 * q["ms_per_step"] * spe / 1e3, 1e-9)
    near(q["comm_s_per_epoch"], q["coll_pct"] / 100 * q["ms_per_step"] * spe / 1e3, 1e-9)
    # (a step'"'"'s data over a step'"'"'s transfer: algbw covers the steps
    # every per-step figure does, all but the first)
    # (a ring splits S in n chunks of whole elements: each rank'"'"'s bytes
    # are 2(n-1)/n S to a few elements, 1e-5 here; the first step left
    # in would be 1/30 off)
    data = q["bytes_sent"] / q["steps"] * 3 / (2 * 2)
    near(q["algbw_gbps"], data / (q["transfer_ms_per_step"] * 1e6), 1e-4)
    near(q["busbw_gbps"], q["algbw_gbps"] * 4 / 3, 1e-9)
near(r["compute_s_per_epoch"], sum(q["compute_s_per_epoch"] for q in per) / 3, 1e-9)
near(r["comm_s_per_epoch"], sum(q["comm_s_per_epoch"] for q in per) / 3, 1e-9)
near(r["algbw_gbps"], sum(q["bytes_sent"] for q in per) / r["steps"] * 3 / 4 / (3 * r["transfer_ms_per_step"] * 1e6), 1e-4)
# the wall of the run covers the 29 timed steps of each rank, one after another (a
# sum of per-step maxima over the ranks need not fit: a rank descheduled
# at the end of a step lengthens that step and shortens the next)
for q in per:
    assert r["wall_s"] * 1e3 >= 29 * q["ms_per_step"], (r["wall_s"], q["rank"], q["ms_per_step"])
' "$tmp/units.json"
# a synthetic set in CIFAR-10's shape has CIFAR-10's 50000 training
# images: an epoch at 2 ranks x 16 is 50000 // 32 steps, and s/epoch that
# many steps' time (not 60000's, MNIST's)
"$BIN" "${run[@]}" --model mlp --input 3x32x32 --ranks 2 --batch-size 16 --steps 3 --format json \
    >"$tmp/cifar.json" 2>/dev/null
check "synthetic 3x32x32: CIFAR-10's 50000 images an epoch" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["steps_per_epoch"] == 50000 // (2 * 16) == 1562, r["steps_per_epoch"]
' "$tmp/cifar.json"
check "markdown: wall s, compute and comm s/epoch and algbw in the table; wall covers each rank's steps" py '
lines = open(sys.argv[1]).read().split("\n")
cells = lambda l: [c.strip() for c in l.strip().strip("|").split("|")]
head = cells([l for l in lines if l.startswith("| run | model |")][0])
row = dict(zip(head, cells([l for l in lines if l.startswith("| 0 | mlp |")][0])))
for k in ("wall s", "algbw GB/s", "compute s/epoch", "comm s/epoch"):
    assert row[k] != "n/a" and float(row[k]) >= 0, (k, row[k])
# each rank'"'"'s 29 timed steps, one after another, inside the run'"'"'s wall
# (wall to 2 decimals, ms/step to 3)
rhead = cells([l for l in lines if l.startswith("| run | strategy | rank |")][0])
ranks = [dict(zip(rhead, cells(l))) for l in lines if l.startswith("| 0 | allreduce |")]
assert len(ranks) == 3, len(ranks)
for q in ranks:
    assert (float(row["wall s"]) + 0.005) * 1e3 >= 29 * (float(q["ms/step"]) - 0.0005), (row["wall s"], q["ms/step"])
' "$tmp/units.md"

# ---- --steps is not cut to one epoch; epochs count from 1 ----
"$BIN" "${run[@]}" --model mlp --ranks 2 --batch-size 512 --steps 70 --format json >"$tmp/st.json" 2>/dev/null
check "--steps 70 runs 70 steps though an epoch has fewer" py '
assert json.load(open(sys.argv[1]))["runs"][0]["steps"] == 70
' "$tmp/st.json"
"$BIN" "${run[@]}" --model mlp --ranks 2 --batch-size 512 --steps 70 --epochs 1 >"$tmp/cap.txt" 2>/dev/null
check "--steps capped by an explicit --epochs says so" grep -q "capped at .* by --epochs 1" "$tmp/cap.txt"
"$BIN" "${run[@]}" --model mlp --ranks 2 --steps 200 --loss-threshold 5 --format json >"$tmp/thr.json" 2>/dev/null
check "the loss threshold's epoch counts from 1" py '
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["threshold_step"] == 0 and r["threshold_epoch"] == 1, r
' "$tmp/thr.json"

fi
checks_done
