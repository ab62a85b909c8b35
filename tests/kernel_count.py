#!/usr/bin/env python3
"""kernel_count.py - HTA's kernel breakdown counted over PyTorch profiler
trace files in Python, apart from ddptop's code, and held against the
`kernels` section of ddptop's JSON report.

Usage: kernel_count.py REPORT.json TRACE.json...

The count: every device event (cat kernel, gpu_memcpy, gpu_memset) of a
rank (distributedInfo's rank), less those that start inside the rank's
first step (its lowest ProfilerStep number, over all its files: ddptop's
default window; meant for traces whose device events carry no launch).
Each is typed by HTA's rule on its name (nccl/hip/hccl or ncclKernel:
communication; Memcpy/Memset/dma: memory; else computation), grouped by
name (count, sum of dur), and each type's names are cut as HTA cuts them:
the first 10 by total, and of those the ones whose running total is within
pandas' linear 0.8 quantile of the running totals, when there are more
than 10; the rest make one "others" row.

Checked: each rank's top rows (type, name, count, sum_us within 1e-3 us;
the others row's count of names), and each type's total. Exit status 0
when they agree, 1 with the differences.
"""
import json
import re
import sys

TOP, RATIO = 10, 0.8


def kernel_type(name):
    if name.startswith(("nccl", "hip", "hccl")) or "ncclKernel" in name:
        return "communication"
    if name.startswith(("Memcpy", "Memset", "dma")):
        return "memory"
    return "computation"


def quantile(v, q):
    pos = (len(v) - 1) * q
    lo = int(pos)
    return v[-1] if lo + 1 >= len(v) else v[lo] + (v[lo + 1] - v[lo]) * (pos - lo)


def count(paths):
    """{rank: {type: [(name, count, sum_us, others)]}}: HTA's rows."""
    files = []
    for p in paths:
        d = json.load(open(p))
        rank = d.get("distributedInfo", {}).get("rank", 0)
        steps = [(int(m.group(1)), e["ts"], e["ts"] + e["dur"]) for e in d["traceEvents"]
                 if e.get("cat") == "user_annotation" and (m := re.fullmatch(r"ProfilerStep#(\d+)", e["name"]))]
        files.append((rank, steps, d["traceEvents"]))
    first = {}
    for rank, steps, _ in files:
        for s in steps:
            if rank not in first or s[0] < first[rank][0]:
                first[rank] = s
    names = {}
    for rank, steps, events in files:
        left = first[rank] if first[rank] in steps else None
        for e in events:
            if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
                continue
            if left and left[1] <= e["ts"] < left[2]:
                continue
            k = names.setdefault(rank, {}).setdefault(e["name"], [0, 0.0])
            k[0] += 1
            k[1] += e["dur"]
    out = {}
    for rank, byname in names.items():
        for t in ("computation", "communication", "memory"):
            ks = sorted(((s, n, c) for n, (c, s) in byname.items() if kernel_type(n) == t), key=lambda x: (-x[0], x[1]))
            if not ks:
                continue
            cum, run = [], 0.0
            for s, _, _ in ks:
                run += s
                cum.append(run)
            q = quantile(cum, RATIO) if len(ks) > TOP else None
            rows, rest = [], []
            for i, (s, n, c) in enumerate(ks):
                (rows if q is None or (i < TOP and cum[i] <= q) else rest).append((n, c, s, 0))
            if rest:
                rows.append(("others", sum(r[1] for r in rest), sum(r[2] for r in rest), len(rest)))
            out.setdefault(rank, {})[t] = rows
    return out


def main():
    report, traces = sys.argv[1], sys.argv[2:]
    k = json.load(open(report))["runs"][0]["kernels"]
    if k is None:
        sys.exit("    no kernels in %s" % report)
    got = {r["rank"]: r for r in k["ranks"]}
    want = count(traces)
    bad = []
    if set(got) != set(want):
        bad.append("ranks %s, counted %s" % (sorted(got), sorted(want)))
    for rank, types in want.items():
        top = got.get(rank, {"top": []})["top"]
        for t, rows in types.items():
            mine = [(r["name"], r["count"], r["sum_us"], r["others"]) for r in top if r["type"] == t]
            if len(mine) != len(rows) or any(
                    a[0] != b[0] or a[1] != b[1] or abs(a[2] - b[2]) > 1e-3 or a[3] != b[3] for a, b in zip(mine, rows)):
                bad.append("rank %s %s: ddptop %s\n      counted %s" % (rank, t, mine, rows))
        for t in {r["type"] for r in top} - set(types):
            bad.append("rank %s: %s kernels, none counted" % (rank, t))
    if bad:
        sys.exit("    " + "\n    ".join(bad[:8]))
    print("    %d ranks, %d rows as counted" % (len(want), sum(len(r) for t in want.values() for r in t.values())))


if __name__ == "__main__":
    main()
