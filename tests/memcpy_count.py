#!/usr/bin/env python3
"""memcpy_count.py - memory copies by kind counted over PyTorch profiler
trace files in Python, apart from ddptop's code, and held against the
`memcpy` section of ddptop's JSON report.

Usage: memcpy_count.py REPORT.json TRACE.json...

The count: every event of cat gpu_memcpy or gpu_memset of a rank
(distributedInfo's rank), less those that start inside the rank's first
step (its lowest ProfilerStep number, over all its files: ddptop's default
window; meant for traces whose device events carry no launch). Its kind is
HTA's (get_memory_kernel_type): "Memset" for a Memset name, the first 11
characters of a Memcpy name, else "Memcpy Unknown". Per kind: count, the
sum of args.bytes, the sum of dur (us), bytes over that time in GB/s
(1e9 bytes a second), and of the copies whose args."memory bandwidth
(GB/s)" is above 0, their number (rated) and those bandwidths' mean, least
and most (null when none is). The run's kinds are the ranks' summed.

Checked: each rank's and the run's kinds (the same names), each figure
within 1e-6 relative (1e-3 us for times). Exit status 0 when they agree,
1 with the differences.
"""
import json
import re
import sys


def kind_of(name):
    if name.startswith("Memset"):
        return "Memset"
    return name[:11] if name.startswith("Memcpy") else "Memcpy Unknown"


def add(kinds, kind, count, nbytes, us, rates):
    k = kinds.setdefault(kind, {"count": 0, "bytes": 0, "time_us": 0.0, "rates": []})
    k["count"] += count
    k["bytes"] += nbytes
    k["time_us"] += us
    k["rates"] += rates


def figures(kinds):
    out = {}
    for name, k in kinds.items():
        r = k["rates"]
        out[name] = {"count": k["count"], "bytes": k["bytes"], "time_us": k["time_us"],
                     "gbps": k["bytes"] / (k["time_us"] * 1e3) if k["time_us"] > 0 else 0, "rated": len(r),
                     "copy_gbps_mean": sum(r) / len(r) if r else None, "copy_gbps_min": min(r) if r else None,
                     "copy_gbps_max": max(r) if r else None}
    return out


def count(paths):
    files = []
    for p in paths:
        d = json.load(open(p))
        rank = d.get("distributedInfo", {}).get("rank", 0)
        files.append((rank, d["traceEvents"]))
    first = {}
    for rank, evs in files:
        for e in evs:
            m = re.match(r"ProfilerStep#(\d+)$", e.get("name", ""))
            if m and e.get("ph") == "X":
                s = (int(m.group(1)), e["ts"], e["ts"] + e["dur"])
                first[rank] = min(first.get(rank, s), s)
    ranks = {}
    for rank, evs in files:
        kinds = ranks.setdefault(rank, {})
        step = first.get(rank)
        for e in evs:
            if e.get("ph") != "X" or e.get("cat") not in ("gpu_memcpy", "gpu_memset"):
                continue
            if step and step[1] <= e["ts"] < step[2]:
                continue
            bw = e["args"].get("memory bandwidth (GB/s)", 0)
            add(kinds, kind_of(e["name"]), 1, e["args"].get("bytes", 0), e["dur"], [bw] if bw > 0 else [])
    run = {}
    for kinds in ranks.values():
        for name, k in kinds.items():
            add(run, name, k["count"], k["bytes"], k["time_us"], k["rates"])
    return {r: figures(k) for r, k in ranks.items()}, figures(run)


def compare(who, got, want, bad):
    got = {k["kind"]: k for k in got}
    if set(got) != set(want):
        bad.append("%s: kinds %s, counted %s" % (who, sorted(got), sorted(want)))
        return
    for name, w in want.items():
        for key, v in w.items():
            g = got[name][key]
            if g is None or v is None:
                if g is not v:
                    bad.append("%s %s %s: %s, counted %s" % (who, name, key, g, v))
                continue
            tol = 1e-3 if key == "time_us" else 1e-6 * max(1.0, abs(v))
            if abs(g - v) > tol:
                bad.append("%s %s %s: %s, counted %s" % (who, name, key, g, v))


def main():
    report, paths = sys.argv[1], sys.argv[2:]
    m = json.load(open(report))["runs"][0]["memcpy"]
    if m is None:
        sys.exit("    no memcpy in %s" % report)
    ranks, run = count(paths)
    bad = []
    got = {r["rank"]: r["kinds"] for r in m["ranks"]}
    if set(got) != set(ranks):
        bad.append("ranks %s, counted %s" % (sorted(got), sorted(ranks)))
    for rank, want in ranks.items():
        compare("rank %d" % rank, got.get(rank, []), want, bad)
    compare("run", m["kinds"], run, bad)
    sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)


if __name__ == "__main__":
    main()
