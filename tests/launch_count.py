#!/usr/bin/env python3
"""launch_count.py - kernel launch statistics counted over PyTorch profiler
trace files in Python, apart from ddptop's code, and held against the
`launch` section of ddptop's JSON report.

Usage: launch_count.py REPORT.json TRACE.json...

The count: each device event (cat kernel, gpu_memcpy or gpu_memset) of a
rank (distributedInfo's rank) whose args.correlation is that of a runtime
call (cat cuda_runtime) named cudaLaunchKernel, cudaLaunchKernelExC,
cudaMemcpyAsync or cudaMemsetAsync in the same file, less those whose call
starts before the rank's second step begins (its ProfilerStep of the second
lowest number: ddptop's default window leaves out the first step's work by
launch). Per launch: the call's dur (CPU), the event's dur (GPU), and the
event's ts less the call's end, 0 when below (the delay). Per rank: the
launches, those by a kernel launch call, each duration's mean, median (the
mean of the middle two for an even count) and most, and the launches with
GPU < CPU <= 50 us (short_gpu), CPU > 50 us (long_cpu) and delay > 100 us
(long_delay). The run's: the ranks' launches together, with no median.
Meant for traces with whole-microsecond times.

Checked: each rank's figures and the run's, within 1e-6 us. Exit status 0
when they agree, 1 with the differences.
"""
import json
import re
import sys

CALLS = {"cudaLaunchKernel": 1, "cudaLaunchKernelExC": 1, "cudaMemcpyAsync": 0, "cudaMemsetAsync": 0}
DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")


def figures(rows, medians):
    out = {"count": len(rows), "kernel_launches": sum(r[0] for r in rows)}
    for i, key in enumerate(("cpu_us", "gpu_us", "delay_us"), 1):
        v = sorted(r[i] for r in rows)
        n = len(v)
        mid = None
        if n and medians:
            mid = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
        out[key] = {"mean": sum(v) / n if n else None, "p50": mid, "max": v[-1] if n else None}
    out["short_gpu"] = sum(1 for r in rows if r[2] < r[1] <= 50)
    out["long_cpu"] = sum(1 for r in rows if r[1] > 50)
    out["long_delay"] = sum(1 for r in rows if r[3] > 100)
    return out


def count(paths):
    files = []
    for p in paths:
        d = json.load(open(p))
        files.append((d.get("distributedInfo", {}).get("rank", 0), d["traceEvents"]))
    steps = {}
    for rank, evs in files:
        for e in evs:
            m = re.match(r"ProfilerStep#(\d+)$", e.get("name", ""))
            if m and e.get("ph") == "X":
                steps.setdefault(rank, []).append((int(m.group(1)), e["ts"]))
    ranks = {}
    for rank, evs in files:
        s = sorted(steps.get(rank, []))
        cut = s[1][1] if len(s) > 1 else None
        calls = {}
        for e in evs:
            if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and e.get("name") in CALLS:
                calls[e["args"]["correlation"]] = e
        rows = ranks.setdefault(rank, [])
        for e in evs:
            if e.get("ph") != "X" or e.get("cat") not in DEVICE:
                continue
            c = calls.get(e.get("args", {}).get("correlation"))
            if c is None or (cut is not None and c["ts"] < cut):
                continue
            end = c["ts"] + c["dur"]
            rows.append((CALLS[c["name"]], c["dur"], e["dur"], max(0, e["ts"] - end)))
    run = [r for rows in ranks.values() for r in rows]
    return {r: figures(rows, True) for r, rows in ranks.items()}, figures(run, False)


def compare(who, got, want, bad):
    for key, w in want.items():
        g = got.get(key)
        pairs = [(key + "." + k, g.get(k) if isinstance(g, dict) else None, v) for k, v in w.items()] \
            if isinstance(w, dict) else [(key, g, w)]
        for name, a, b in pairs:
            if a is None or b is None:
                if a is not b:
                    bad.append("%s %s: %s, counted %s" % (who, name, a, b))
            elif abs(a - b) > 1e-6:
                bad.append("%s %s: %s, counted %s" % (who, name, a, b))


def main():
    report, paths = sys.argv[1], sys.argv[2:]
    m = json.load(open(report))["runs"][0]["launch"]
    if m is None:
        sys.exit("    no launch in %s" % report)
    ranks, run = count(paths)
    bad = []
    got = {r["rank"]: r for r in m["ranks"]}
    if set(got) != set(ranks):
        bad.append("ranks %s, counted %s" % (sorted(got), sorted(ranks)))
    for rank, want in ranks.items():
        compare("rank %d" % rank, got.get(rank, {}), want, bad)
    compare("run", m, run, bad)
    sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)


if __name__ == "__main__":
    main()
