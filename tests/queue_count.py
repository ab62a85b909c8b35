#!/usr/bin/env python3
"""queue_count.py - the queue length of each CUDA stream counted over
PyTorch profiler trace files in Python, apart from ddptop's code, and held
against the `queue` section of ddptop's JSON report.

Usage: queue_count.py REPORT.json TRACE.json...
       queue_count.py --print TRACE.json...   (the count alone, as a .tsv)

The count, per rank (distributedInfo's rank) and file: a launch is a
runtime call (cat cuda_runtime, cuda_driver or mtia_runtime) named as one
that queues work on a stream (cudaLaunchKernel, cudaLaunchKernelExC,
cuLaunchKernel, cuLaunchKernelEx, cudaMemcpyAsync, cudaMemsetAsync, their
hip names, MTIA's job submission) with args.correlation; the work it
queued is the device event (one with args.stream) of that correlation.
Only such pairs count: a launch whose work is not in the trace and work
without its launch are left out, and so is the last ProfilerStep (HTA's
default cut): a pair whose launch starts at or after the latest start of a
ProfilerStep#N event, where the file names two steps or more. Each pair is two points on the work's
stream: +1 at the launch's start, -1 at the work's start, times in whole
us rounded up as HTA's reading does; a stream's points in time order (at
one time, the file's order: its launches, then its work), and the queue
length after each is the running sum. Over a rank's files, per stream:
the points' count, the lengths' mean, sample std, least, the 25th, 50th
and 75th percentile (linear, as pandas), most; and the time (us) the
length stood at 1024 or more (to the stream's next point).

Checked: the streams of each rank, each figure within 1e-6 relative.
Exit status 0 when they agree, 1 with the differences.
"""
import json
import math
import sys

LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
            "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
            "hipMemcpyWithStream", "runFunction - job_prep_and_submit_for_execution"}
RUNTIME = {"cuda_runtime", "cuda_driver", "mtia_runtime"}
FULL = 1024


def load(path):
    if path.endswith(".gz"):
        import gzip
        return json.load(gzip.open(path, "rt"))
    return json.load(open(path))


def points(events):
    """{stream: [(time, +1/-1, order)]} of one file"""
    launch = {}
    work = []
    steps = {math.ceil(e["ts"]) for e in events
             if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}
    names = {e["name"] for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}
    cut = max(steps) if len(names) > 1 else math.inf
    for i, e in enumerate(events):
        if e.get("ph") != "X":
            continue
        a = e.get("args") or {}
        corr = a.get("correlation")
        if corr is None:
            continue
        if e.get("cat") in RUNTIME and e.get("name") in LAUNCHES:
            launch[corr] = (math.ceil(e["ts"]), i)
        elif "stream" in a and isinstance(a["stream"], int) and a["stream"] >= 0:
            work.append((corr, a["stream"], math.ceil(e["ts"]), i))
    out = {}
    for corr, stream, ts, i in work:
        if corr in launch and launch[corr][0] < cut:
            lt, li = launch[corr]
            out.setdefault(stream, []).append((lt, 0, li, 1))
            out.setdefault(stream, []).append((ts, 1, i, -1))
    return out


def quantile(v, p):
    h = (len(v) - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def count(paths):
    lengths = {}  # (rank, stream) -> [lengths]
    blocked = {}
    for p in paths:
        d = load(p)
        rank = d.get("distributedInfo", {}).get("rank", 0)
        for stream, pts in points(d["traceEvents"]).items():
            pts.sort()
            q = 0
            ls = lengths.setdefault((rank, stream), [])
            blocked.setdefault((rank, stream), 0)
            for j, (t, _, _, step) in enumerate(pts):
                q += step
                ls.append(q)
                if q >= FULL and j + 1 < len(pts):
                    blocked[(rank, stream)] += pts[j + 1][0] - t
    out = {}
    for key, ls in lengths.items():
        n = len(ls)
        mean = sum(ls) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in ls) / (n - 1)) if n > 1 else None
        s = sorted(ls)
        out[key] = {"count": n, "mean": mean, "std": std, "min": s[0], "p25": quantile(s, 0.25),
                    "p50": quantile(s, 0.5), "p75": quantile(s, 0.75), "max": s[-1], "blocked_us": blocked[key]}
    return out


def main():
    args = sys.argv[1:]
    if args[:1] == ["--print"]:
        for (rank, stream), f in sorted(count(args[1:]).items()):
            print("%d\t%d\t%d\t%.6f\t%s\t%d\t%.6f\t%.6f\t%.6f\t%d\t%d" % (
                rank, stream, f["count"], f["mean"], "-" if f["std"] is None else "%.6f" % f["std"], f["min"],
                f["p25"], f["p50"], f["p75"], f["max"], f["blocked_us"]))
        return 0
    want = count(args[1:])
    q = json.load(open(args[0]))["runs"][0]["queue"]
    if q is None:
        print("    no queue in %s" % args[0])
        return 1
    got = {(r["rank"], s["stream"]): s for r in q["ranks"] for s in r["streams"]}
    bad = []
    if set(got) != set(want):
        bad.append("streams %s, count %s" % (sorted(got), sorted(want)))
    for key in sorted(set(got) & set(want)):
        for k, w in want[key].items():
            g = got[key].get(k)
            if (g is None) != (w is None) or (w is not None and abs(g - w) > 1e-6 * max(1, abs(w))):
                bad.append("rank %d stream %d %s: %s, count %s" % (key + (k, g, w)))
    if bad:
        print("    " + "\n    ".join(bad[:8]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
