#!/usr/bin/python3
"""straggler_count.py - a second, small count of a run's late collectives
(trace/straggler.h) straight from the trace files, held against ddptop's
JSON `runs[0].stragglers`.

Usage: straggler_count.py REPORT.json TRACE.json...   (one file per rank,
--window hta: each rank's last ProfilerStep left out)

Reads the Kineto events itself: a kernel's step is the ProfilerStep whose
host window holds the start of the runtime call with its correlation id;
the candidates are kernels named ncclKernel* on a stream above 0 in a step
numbered above 0 that is not the rank's last, lasting at least 1% of the
mean step (from the earliest step start to the latest step or kernel end,
over the distinct step numbers). Each rank's last of a (stream, name) in a
step; the pair with the largest mean over steps of the ranks' durations'
sample standard deviation; per step of two ranks or more, who starts last
(ties: each), who is among the two latest starts, and the last's lead over
the others' latest. Exits 1 with the differences.
"""
import json
import statistics
import sys


def read(path):
    d = json.load(open(path))
    rank = d["distributedInfo"]["rank"]
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    steps = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in ev
             if e["name"].startswith("ProfilerStep#")}
    calls = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") == "cuda_runtime"}
    kernels = []
    for e in ev:
        if e.get("cat") != "kernel":
            continue
        t = calls.get(e["args"].get("correlation"))
        step = max((s for s, (a, b) in steps.items() if t is not None and a <= t < b), default=None)
        kernels.append((step, e["args"].get("stream", -1), e["name"], e["ts"], e["dur"]))
    return rank, steps, kernels


def main():
    report, paths = sys.argv[1], sys.argv[2:]
    got = json.load(open(report))["runs"][0]["stragglers"]
    ranks = [read(p) for p in paths]
    nums = {s for _, steps, _ in ranks for s in steps}
    t0 = min(a for _, steps, _ in ranks for a, _ in steps.values())
    t1 = max([b for _, steps, _ in ranks for _, b in steps.values()])
    last_step = {rank: max(steps) for rank, steps, _ in ranks}
    kept = [(rank, k) for rank, _, ks in ranks for k in ks if k[0] is not None and k[0] != last_step[rank]]
    t1 = max([t1] + [k[3] + k[4] for _, k in kept])
    cut = (t1 - t0) / len(nums) * 0.01
    last_of = {}
    for rank, (step, stream, name, ts, dur) in kept:
        if name.startswith("ncclKernel") and stream > 0 and step > 0 and dur >= cut:
            key = (stream, name, step, rank)
            if key not in last_of or ts >= last_of[key][0]:
                last_of[key] = (ts, dur)
    by_kind = {}
    for (stream, name, step, rank), v in last_of.items():
        by_kind.setdefault((stream, name), {}).setdefault(step, {})[rank] = v
    spread = {}
    for kind, steps in by_kind.items():
        sds = [statistics.stdev([d for _, d in r.values()]) for r in steps.values() if len(r) > 1]
        if sds:
            spread[kind] = sum(sds) / len(sds)
    if not spread:
        sys.exit(0 if got is None else "    ddptop has stragglers, the count none: %s" % got)
    kind = sorted(spread, key=lambda k: (-spread[k], k))[0]
    rows = {}
    nsteps = 0
    for step, r in sorted(by_kind[kind].items()):
        if len(r) < 2:
            continue
        nsteps += 1
        starts = sorted((ts for ts, _ in r.values()), reverse=True)
        for rank, (ts, _) in r.items():
            row = rows.setdefault(rank, [0, 0, 0])
            row[1] += ts >= starts[1]
            if ts == starts[0]:
                row[0] += 1
                row[2] += ts - max(t for q, (t, _) in r.items() if q != rank)
    want = {"kernel": kind[1], "stream": kind[0], "steps": nsteps,
            "ranks": [{"rank": q, "last": v[0], "late": v[1], "lead_us": v[2]} for q, v in sorted(rows.items())]}
    top = sorted(rows, key=lambda q: (-rows[q][0], -rows[q][2], q))[0]
    bad = []
    if got is None:
        sys.exit("    ddptop has no stragglers, the count: %s" % want)
    for k in ("kernel", "stream", "steps"):
        if got[k] != want[k]:
            bad.append("%s: ddptop %s, the count %s" % (k, got[k], want[k]))
    g = [{k: r[k] for k in ("rank", "last", "late", "lead_us")} for r in got["ranks"]]
    if g != want["ranks"]:
        bad.append("ranks: ddptop %s, the count %s" % (g, want["ranks"]))
    if got["straggler"] != top:
        bad.append("straggler: ddptop %s, the count %s" % (got["straggler"], top))
    sys.exit("    " + "\n    ".join(bad) if bad else 0)


if __name__ == "__main__":
    main()
