#!/usr/bin/env python3
"""memory_count.py - the memory timeline recounted over PyTorch profiler
trace files in Python, apart from ddptop's code, and held against the
`memory_timeline` section of ddptop's JSON report.

Usage: memory_count.py REPORT.json TRACE.json...

The count: a rank's files (distributedInfo's rank), in order of their
lowest ProfilerStep number, each its own window from its first
ProfilerStep's start to its last one's end (both ends in). Its "[memory]"
instant events of a Device Type other than 0 (the CPU) inside the window,
in time order (ties: file order), per (Device Type, Device Id): the allocated before each
event is the one after the device's event before it (the first: its Total
Allocated less its Bytes). Then: the events; the allocated before the first
and after the last; the peak, the most of before and after over all events,
with the first event that reached it (its time less the first file's first
step start, its step: the ProfilerStep whose span holds it); the most Total
Reserved; Bytes summed over allocations and (negated) over frees; and per
step the same peak over the events it holds. Events of the CPU are counted
as host, those outside a window as outside.

Checked: every device of every rank, exactly (times within 1e-6 us).
Exit status 0 when they agree, 1 with the differences.
"""
import json
import re
import sys


def rank_files(paths):
    ranks = {}
    for p in paths:
        d = json.load(open(p))
        evs = d["traceEvents"]
        steps = [(int(m.group(1)), e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("ph") == "X"
                 for m in [re.match(r"ProfilerStep#(\d+)$", e.get("name", ""))] if m]
        ranks.setdefault(d.get("distributedInfo", {}).get("rank", 0), []).append((steps, evs))
    for files in ranks.values():
        files.sort(key=lambda f: min(s[0] for s in f[0]) if f[0] else 0)
    return ranks


def count(files):
    devs, host, outside, origin = {}, 0, 0, None
    for steps, evs in files:
        lo = min((s[1] for s in steps), default=None)
        hi = max((s[2] for s in steps), default=None)
        if origin is None and lo is not None:
            origin = lo
        state = {}
        for e in sorted((e for e in evs if e.get("ph") == "i" and e.get("name") == "[memory]"), key=lambda e: e["ts"]):
            a = e["args"]
            if a["Device Type"] == 0:
                host += 1
                continue
            ts = e["ts"]
            if lo is not None and not lo <= ts <= hi:
                outside += 1
                continue
            if origin is None:
                origin = ts
            key = (a["Device Type"], a["Device Id"])
            before = state[key] if key in state else a["Total Allocated"] - a["Bytes"]
            state[key] = a["Total Allocated"]
            most = max(before, a["Total Allocated"])
            inside = [s for s in steps if s[1] <= ts <= s[2]]
            step = min(inside, key=lambda s: s[1])[0] if inside else None
            d = devs.get(key)
            if d is None:
                d = devs[key] = {"events": 0, "start_bytes": before, "peak_bytes": None, "reserved_peak_bytes": 0,
                                 "alloc_bytes": 0, "freed_bytes": 0, "steps": {}}
            d["events"] += 1
            d["end_bytes"] = a["Total Allocated"]
            if d["peak_bytes"] is None or most > d["peak_bytes"]:
                d["peak_bytes"], d["peak_at"], d["peak_step"] = most, ts, step
            d["reserved_peak_bytes"] = max(d["reserved_peak_bytes"], a["Total Reserved"])
            if a["Bytes"] > 0:
                d["alloc_bytes"] += a["Bytes"]
            else:
                d["freed_bytes"] -= a["Bytes"]
            if step is not None:
                d["steps"][step] = max(d["steps"].get(step, most), most)
    for d in devs.values():
        d["peak_at_us"] = d.pop("peak_at") - origin
        d["steps"] = [{"step": k, "peak_bytes": v} for k, v in sorted(d["steps"].items())]
    return devs, host, outside


def main():
    report, paths = sys.argv[1], sys.argv[2:]
    m = json.load(open(report))["runs"][0]["memory_timeline"]
    got = {r["rank"]: r for r in (m or {"ranks": []})["ranks"]}
    bad = []
    keys = ("events", "start_bytes", "end_bytes", "peak_bytes", "peak_step", "reserved_peak_bytes", "alloc_bytes",
            "freed_bytes", "steps")
    for rank, files in sorted(rank_files(paths).items()):
        devs, host, outside = count(files)
        if not devs:
            if rank in got:
                bad.append("rank %d: no device events, ddptop has %s" % (rank, got[rank]))
            continue
        g = got.get(rank)
        if g is None:
            bad.append("rank %d: not in the report" % rank)
            continue
        if (g["host_events"], g["outside_events"]) != (host, outside):
            bad.append("rank %d: host, outside %s, counted %s" % (rank, (g["host_events"], g["outside_events"]),
                                                                  (host, outside)))
        gd = {(d["device_type"], d["device_id"]): d for d in g["devices"]}
        if sorted(gd) != sorted(devs):
            bad.append("rank %d: devices %s, counted %s" % (rank, sorted(gd), sorted(devs)))
        for key, want in sorted(devs.items()):
            d = gd.get(key, {})
            for k in keys:
                if d.get(k) != want[k]:
                    bad.append("rank %d %s %s: %s, counted %s" % (rank, key, k, d.get(k), want[k]))
            if d.get("peak_at_us") is None or abs(d["peak_at_us"] - want["peak_at_us"]) > 1e-6:
                bad.append("rank %d %s peak_at_us: %s, counted %s" % (rank, key, d.get("peak_at_us"),
                                                                      want["peak_at_us"]))
    for rank in got:
        if rank not in rank_files(paths):
            bad.append("rank %d: in the report, not in the traces" % rank)
    if bad:
        print("    " + "\n    ".join(bad[:20]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
