"""An independent reading of PyTorch profiler traces (the older autograd
format's bare arrays and Kineto's objects, plain or gzip) into each rank's
time split, to check ddptop's --replay against. It follows DESIGN.md's
time accounting, not ddptop's code:

- a file is one cycle (window) of one rank: the rank is distributedInfo's,
  else the rank<N> in the file's name;
- an op is communication when c10d or a backend of it names it
  (c10d::allreduce_, gloo:all_reduce, nccl:..., record_param_comms; Kineto
  records a backend's collective as a user_annotation), data when it is the
  DataLoader's, and compute otherwise; ProfilerStep#N gives the step
  windows; other annotations (a user's record_function) count for nothing;
- on each thread the innermost op decides an instant: here, the op that
  covers it and started last (ties: the shorter);
- over the union of the cycle's step windows:
  compute = |U compute|, comm = |U comm - compute|,
  data = |U data - compute - comm|, idle = wall - the rest;
- a rank's figures are the sums over its cycles, with its first step (the
  lowest ProfilerStep number, over all its cycles) left out when it has two
  or more, as ms/step leaves it out (docs/numbers.md, "One step set");
- beside the split, coll = |U comm ops| over the step windows (the time in
  collectives, waits for peers included), and a cycle's own work per step
  = (wall - coll) / steps: what --follow compares to mark a straggler. A
  cycle on its own (--cycles) covers all its steps, as --follow shows it.

Only CPU (host) traces are covered: a trace with device ops is refused.

Usage: pytorch_trace_oracle.py FILE|DIR... [--check DDPTOP_JSON] [--tol POINTS] [--cycles]
Prints a JSON object {rank: {...}} (with --cycles, {file name: {...}}: each
file's own figures, its rank and its steps' numbers); with --check,
compares every rank's
compute%, comm% and idle% and its steps with the per_rank rows of ddptop's
--format json report (and the ranks with its ranks), and exits 1 when one
differs by more than --tol points (default 1).
"""
import bisect
import gzip
import json
import math
import os
import re
import sys

COMM_PREFIXES = ("c10d::", "gloo:", "nccl:", "mpi:", "ucc:")
GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
COMPUTE, COMM, DATA = "compute", "comm", "data"


def ns(us):
    return int(math.floor(us * 1000.0 + 0.5))


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    if isinstance(doc, list):
        return doc, None
    return doc.get("traceEvents", []), doc.get("distributedInfo")


def rank_of(path, dist_info):
    if isinstance(dist_info, dict) and isinstance(dist_info.get("rank"), int):
        return dist_info["rank"]
    m = re.search(r"(?<![A-Za-z])rank[_-]?(\d+)", os.path.basename(path), re.I)
    if not m:
        sys.exit("%s: no rank in the trace nor in its name" % path)
    return int(m.group(1))


def kind_of(name, cat):
    """compute, comm, data; 'step' for a step window; None: counts for nothing."""
    if name.startswith("ProfilerStep#"):
        return "step"
    if cat == "user_annotation":
        return COMM if name.startswith(COMM_PREFIXES) else None
    if cat not in (None, "cpu_op", "Operator"):
        if cat in GPU_CATS:
            sys.exit("a device op (%s): only host traces are covered" % name)
        return None
    low = name.lower()
    if name.startswith(COMM_PREFIXES) or "gloo" in low or "nccl" in low or "c10d" in name \
            or "record_param_comms" in name:
        return COMM
    if "DataLoader" in name:
        return DATA
    return COMPUTE


def union(ivs):
    out = []
    for a, b in sorted(ivs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def step_numbers(events):
    """The ProfilerStep numbers of one file."""
    return [int(e["name"][len("ProfilerStep#"):]) for e in events
            if isinstance(e, dict) and e.get("ph") == "X" and isinstance(e.get("name"), str)
            and re.fullmatch(r"ProfilerStep#\d+", e["name"])]


def cycle(events, skip=None):
    """The split of one file: (wall, compute, comm, data, idle, steps);
    the window of ProfilerStep#skip left out (its step still counted)."""
    threads, steps, nsteps = {}, [], 0
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X" or not isinstance(e.get("name"), str):
            continue
        if e.get("pid") == "CUDA functions":
            sys.exit("a device op (%s): only host traces are covered" % e["name"])
        k = kind_of(e["name"], e.get("cat"))
        if k is None:
            continue
        t0 = ns(e.get("ts", 0))
        t1 = t0 + ns(e.get("dur", 0))
        if k == "step":
            if e["name"] != "ProfilerStep#%s" % skip:
                steps.append((t0, t1))
            nsteps += 1
        elif t1 > t0:
            threads.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append((t0, -(t1 - t0), i, t1, k))
    ops = [o for t in threads.values() for o in t]
    if nsteps and not steps:  # its one step left out: nothing of it counts
        return {"wall": 0, COMPUTE: 0, COMM: 0, DATA: 0, "idle": 0, "steps": nsteps, "coll": 0, "own_ms": 0.0,
                "step_numbers": sorted(step_numbers(events))}
    windows = union(steps) if steps else union([(min(o[0] for o in ops), max(o[3] for o in ops))])
    for t in threads.values():
        t.sort()
    starts = {key: [o[0] for o in t] for key, t in threads.items()}
    cuts = sorted({o[0] for o in ops} | {o[3] for o in ops} | {w for ab in windows for w in ab})
    total = {"wall": 0, COMPUTE: 0, COMM: 0, DATA: 0}
    for a, b in zip(cuts, cuts[1:]):
        if not any(w0 <= a and b <= w1 for w0, w1 in windows):
            continue
        kinds = set()
        for key, t in threads.items():
            # the covering op that started last: scan back from the last start <= a
            j = bisect.bisect_right(starts[key], a) - 1
            while j >= 0 and t[j][3] < b:
                j -= 1
            if j >= 0:
                kinds.add(t[j][4])
        d = b - a
        total["wall"] += d
        for k in (COMPUTE, COMM, DATA):
            if k in kinds:
                total[k] += d
                break
    total["idle"] = total["wall"] - total[COMPUTE] - total[COMM] - total[DATA]
    total["steps"] = nsteps
    # the time in collectives, waits for peers inside them included: the
    # union of the communication ops over the windows; a rank's own work
    # per step is the rest
    coll = 0
    for a, b in union([(o[0], o[3]) for o in ops if o[4] == COMM]):
        for w0, w1 in windows:
            coll += max(0, min(b, w1) - max(a, w0))
    total["coll"] = coll
    total["own_ms"] = (total["wall"] - coll) / max(nsteps, 1) / 1e6
    total["step_numbers"] = sorted(step_numbers(events))
    return total


def files_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out += sorted(os.path.join(a, n) for n in os.listdir(a)
                          if not n.startswith(".") and (n.endswith(".json") or n.endswith(".json.gz")))
        else:
            out.append(a)
    return out


def main():
    args, check, tol, per_file = [], None, 1.0, False
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--check":
            check = next(it)
        elif a == "--tol":
            tol = float(next(it))
        elif a == "--cycles":
            per_file = True
        else:
            args.append(a)
    ranks, files, numbers, per_cycle = {}, [], {}, {}
    for path in files_of(args):
        events, dist_info = load(path)
        rk = rank_of(path, dist_info)
        files.append((rk, events))
        numbers.setdefault(rk, []).extend(step_numbers(events))
        if per_file:
            per_cycle[os.path.basename(path)] = dict(cycle(events), rank=rk)
    for rk, events in files:
        r = ranks.setdefault(rk, {"wall": 0, COMPUTE: 0, COMM: 0, DATA: 0, "idle": 0, "steps": 0, "cycles": 0,
                                  "coll": 0})
        first = min(numbers[rk]) if len(numbers[rk]) >= 2 else None
        c = cycle(events, first if first in step_numbers(events) else None)
        for k in c:
            if k not in ("step_numbers", "own_ms"):
                r[k] += c[k]
        r["cycles"] += 1
    if per_file:
        for c in per_cycle.values():
            for k in (COMPUTE, COMM, DATA, "idle"):
                c[k + "_pct"] = 100.0 * c[k] / c["wall"] if c["wall"] else 0.0
        print(json.dumps(per_cycle, indent=1, sort_keys=True))
        return 0
    for r in ranks.values():
        for k in (COMPUTE, COMM, DATA, "idle"):
            r[k + "_pct"] = 100.0 * r[k] / r["wall"] if r["wall"] else 0.0
    print(json.dumps({str(k): v for k, v in sorted(ranks.items())}, indent=1))
    if not check:
        return 0
    with open(check) as f:
        rows = {row["rank"]: row for row in json.load(f)["per_rank"]}
    bad = 0
    if sorted(rows) != sorted(ranks):
        print("ranks: ddptop %s, oracle %s" % (sorted(rows), sorted(ranks)))
        bad = 1
    for rk, want in sorted(ranks.items()):
        got = rows.get(rk)
        if got is None:
            continue
        for k in ("compute_pct", "comm_pct", "idle_pct"):
            diff = abs(got[k] - want[k])
            print("rank %d %-11s ddptop %6.2f  oracle %6.2f  diff %.2f" % (rk, k, got[k], want[k], diff))
            if diff > tol:
                bad = 1
        if got["steps"] != want["steps"]:
            print("rank %d steps: ddptop %s, oracle %d" % (rk, got["steps"], want["steps"]))
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
