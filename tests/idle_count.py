#!/usr/bin/env python3
"""idle_count.py - the idle time per stream counted over PyTorch profiler
trace files in Python, apart from ddptop's code, and held against the
`idle` section of ddptop's JSON report.

Usage: idle_count.py [--delay-us D] REPORT.json TRACE.json...

The count, for ddptop's default window: each device event (cat kernel,
gpu_memcpy or gpu_memset, with args.stream) of a rank (distributedInfo's
rank; its files, its cycles, each a timeline of its own), less those whose launch (the cuda_runtime call of
its args.correlation; its own start when there is none) starts before the
rank's second step begins (its ProfilerStep of the second lowest number,
over its files).
Per stream and file, the events in order of start (ties: file order); each
but the first ends a gap, its start less the end of the event before it: host
wait when its call starts after that end, else kernel wait when the gap is
under D us (default 30, HTA's), else other. Per stream: the events, the
gaps summed, and each category's sum, count and share of the sum (None
when the sum is 0). Meant for traces with whole-microsecond times.

Checked: every stream of every rank, within 1e-6 us, and the threshold.
Exit status 0 when they agree, 1 with the differences.
"""
import json
import re
import sys

DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
CATS = ("host_wait", "kernel_wait", "other")


def count(paths, delay_us):
    files = []
    for p in paths:
        d = json.load(open(p))
        files.append((d.get("distributedInfo", {}).get("rank", 0), [e for e in d["traceEvents"] if e.get("ph") == "X"]))
    steps = {}
    for rank, evs in files:
        for e in evs:
            m = re.match(r"ProfilerStep#(\d+)$", e.get("name", ""))
            if m:
                steps.setdefault(rank, []).append((int(m.group(1)), e["ts"]))
    out = {}
    for rank, evs in files:
        s = sorted(steps.get(rank, []))
        cut = s[1][1] if len(s) > 1 else None
        calls = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "cuda_runtime"}
        streams = {}
        for i, e in enumerate(evs):
            if e.get("cat") not in DEVICE or "stream" not in e.get("args", {}):
                continue
            c = calls.get(e["args"].get("correlation"))
            launch = c["ts"] if c else None
            if cut is not None and (launch if launch is not None else e["ts"]) < cut:
                continue
            streams.setdefault(e["args"]["stream"], []).append((e["ts"], i, e["ts"] + e["dur"], launch))
        table = out.setdefault(rank, {})
        for st, ops in streams.items():  # a file (a cycle) is a timeline of its own
            ops.sort()
            t = table.setdefault(st, {"ops": 0, "idle_us": 0, **{k: {"time_us": 0, "gaps": 0} for k in CATS}})
            t["ops"] += len(ops)
            for prev, op in zip(ops, ops[1:]):
                gap = op[0] - prev[2]
                k = ("host_wait" if op[3] is not None and op[3] > prev[2] else
                     "kernel_wait" if gap < delay_us else "other")
                t[k]["time_us"] += gap
                t[k]["gaps"] += 1
                t["idle_us"] += gap
    for table in out.values():
        for t in table.values():
            for k in CATS:
                t[k]["ratio"] = t[k]["time_us"] / t["idle_us"] if t["idle_us"] else None
    return out


def main():
    args = sys.argv[1:]
    delay_us = 30.0
    if args[:1] == ["--delay-us"]:
        delay_us, args = float(args[1]), args[2:]
    report, paths = args[0], args[1:]
    m = json.load(open(report))["runs"][0]["idle"]
    if m is None:
        sys.exit("    no idle in %s" % report)
    want = count(paths, delay_us)
    bad = [] if abs(m["delay_us"] - delay_us) < 1e-9 else ["delay %s us, counted with %s" % (m["delay_us"], delay_us)]
    got = {r["rank"]: {s["stream"]: s for s in r["streams"]} for r in m["ranks"]}
    if set(got) != set(want):
        bad.append("ranks %s, counted %s" % (sorted(got), sorted(want)))
    for rank in set(got) & set(want):
        if set(got[rank]) != set(want[rank]):
            bad.append("rank %d: streams %s, counted %s" % (rank, sorted(got[rank]), sorted(want[rank])))
        for s in set(got[rank]) & set(want[rank]):
            g, w = got[rank][s], want[rank][s]
            pairs = [("ops", g["ops"], w["ops"]), ("idle_us", g["idle_us"], w["idle_us"])]
            pairs += [(k + "." + f, g[k][f], w[k][f]) for k in CATS for f in ("time_us", "gaps", "ratio")]
            for name, a, b in pairs:
                if (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-6):
                    bad.append("rank %d stream %d %s: %s, counted %s" % (rank, s, name, a, b))
    sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)


if __name__ == "__main__":
    main()
