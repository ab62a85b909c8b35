#!/usr/bin/env python3
"""critpath_count.py - the critical path of each rank's median step,
worked out again over the trace files alone, and ddptop's JSON
(runs[0].critical_path) held to it.

A second implementation of the model trace/critpath.h states, written
from that text and not from the C: it builds the graph as a list of nodes
and edges (source, sink, every point of every thread and stream), checks
that its longest path (a plain DP in topological order) is as long as the
step plus what the device ran past it, then walks back from the sink
through each node's last-arriving predecessor and adds the edges' time by
kind and by op.

Usage: critpath_count.py DDPTOP.json [RANK=]TRACE.json[.gz] ...
(a trace's rank: RANK=, else its distributedInfo.rank, else 0; the files
of one rank, a profiler's cycles, are read as one trace: their clocks are
one, as Kineto's are)
Exit status 0 when every rank agrees, 1 listing the differences.
"""
import gzip
import json
import math
import sys
from collections import defaultdict

TOL_US = 0.0015
COMM_PREFIXES = ("c10d::", "gloo:", "nccl:", "mpi:", "ucc:")
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime")
KERNEL = ("kernel", "Kernel")
COPY = ("gpu_memcpy", "gpu_memset", "Memcpy", "Memset")


def ns(us):
    w = math.floor(us)
    return int(w) * 1000 + int(math.floor((us - w) * 1000 + 0.5))


def load(path):
    op = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with op(path, "rt") as f:
        return json.load(f)


def cpu_event(e):
    cat, name = e.get("cat"), e.get("name", "")
    if cat in ("cpu_op", "Operator"):
        return True
    return cat == "user_annotation" and (name.startswith(COMM_PREFIXES) or name == "record_param_comms")


def read_rank(doc):
    """ops (dicts in file order), steps, launches by correlation id"""
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    ops, steps, calls = [], [], {}
    for e in ev:
        if e.get("ph") != "X" or "name" not in e:
            continue
        cat, name, args = e.get("cat"), e["name"], e.get("args") or {}
        t0 = ns(e.get("ts", 0))
        t1 = t0 + ns(e.get("dur", 0))
        if name.startswith("ProfilerStep#") and cat in ("cpu_op", "user_annotation", None):
            steps.append((int(name[13:].split()[0] or 0), t0, t1))
        elif cat in RUNTIME:
            if "correlation" in args:
                calls[args["correlation"]] = (t0, (e.get("pid"), e.get("tid")))
        elif cat in KERNEL or cat in COPY:
            low = name.lower()
            kind = ("memory" if cat in COPY or name.startswith("dma") else
                    "comm" if "nccl" in low or low.startswith("hccl") else "compute")
            ops.append(dict(name=name, t0=t0, t1=t1, dev=True, kind=kind, corr=args.get("correlation"),
                            track=("s", e.get("pid"), args.get("stream", e.get("tid")))))
        elif cpu_event(e):
            ops.append(dict(name=name, t0=t0, t1=t1, dev=False, kind="cpu", track=("t", e.get("pid"), e.get("tid"))))
    threads = {o["track"][1:] for o in ops if not o["dev"]}
    for i, o in enumerate(ops):
        o["i"] = i
        o["launch"], o["launch_thread"] = None, None
        if o["dev"] and o["corr"] in calls:
            o["launch"], th = calls[o["corr"]]
            if th in threads:
                o["launch_thread"] = ("t",) + th
    return ops, steps


def top_level(ops):
    by = defaultdict(list)
    for o in sorted(ops, key=lambda o: (o["t0"], -o["t1"], o["i"])):
        kept = by[o["track"]]
        if not kept or o["t0"] >= kept[-1]["t1"]:
            kept.append(o)
    return by


def path_of(ops, steps):
    if steps:
        num, s0, s1 = sorted(steps, key=lambda s: (s[2] - s[1], s[0], s[1]))[(len(steps) - 1) // 2]
        lim = s1
    else:
        if not ops:
            return dict(valid=False, step=-1)
        num, s0, s1 = -1, min(o["t0"] for o in ops), max(o["t1"] for o in ops)
        lim = s1 + 1
    cpu = top_level([o for o in ops if not o["dev"] and s0 <= o["t0"] < lim and o["t1"] > o["t0"]])
    dev = top_level([o for o in ops if o["dev"] and o["launch"] is not None and s0 <= o["launch"] < lim
                     and o["t0"] >= s0])
    if not dev:
        return dict(valid=False, step=num)
    # nodes: (time, name); edges into each node: (from, kind, op)
    time = {"src": s0}
    into = defaultdict(list)
    lasts = []  # (node, is_device, op index)
    launch_node = {}
    for track, kept in cpu.items():
        pts = []
        for o in kept:
            pts += [(o["t0"], 1, o["i"], o), (o["t1"], 0, o["i"], o)]
        for d in (x for v in dev.values() for x in v):
            if d["launch_thread"] == track and d["launch"] <= d["t0"]:
                pts.append((d["launch"], 2, d["i"], d))
        pts.sort(key=lambda p: p[:3])
        prev, inside = "src", None
        for k, (t, typ, i, o) in enumerate(pts):
            node = (track, k)
            time[node] = t
            into[node].append((prev, "cpu" if inside is not None else "wait", inside))
            if typ == 1:
                inside = o
            elif typ == 0:
                inside = None
            else:
                launch_node[i] = node
            prev = node
        lasts.append((prev, False, pts[-1][2]))
    for track, kept in dev.items():
        prev = "src"
        for o in kept:
            a, b = ("op", o["i"], 0), ("op", o["i"], 1)
            time[a], time[b] = o["t0"], o["t1"]
            into[a].append((prev, "wait", None))
            if o["i"] in launch_node:
                into[a].append((launch_node[o["i"]], "launch", None))
            into[b].append((a, o["kind"], o))
            prev = b
        lasts.append((prev, True, kept[-1]["i"]))
    e = max([s1] + [time[n] for n, _, _ in lasts])
    time["sink"] = e
    for n, isdev, i in lasts:
        into["sink"].append((n, "wait", (isdev, i)))
    # the longest path, by a DP in topological order: all paths span the step
    out = defaultdict(list)
    for v, es in into.items():
        for u, _, _ in es:
            out[u].append(v)
    indeg = {v: len(into[v]) for v in time}
    order, todo = [], [v for v in time if indeg[v] == 0]
    while todo:
        u = todo.pop()
        order.append(u)
        for v in out[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                todo.append(v)
    dist = {v: -math.inf for v in time}
    dist["src"] = 0
    for u in order:
        for v in out[u]:
            dist[v] = max(dist[v], dist[u] + time[v] - time[u])
    # back from the sink through the last-arriving predecessor
    kind = defaultdict(int)
    on = defaultdict(int)
    launches = 0
    v = "sink"
    while v != "src":
        es = into[v]
        if v == "sink":
            u, k, _ = max(es, key=lambda x: (time[x[0]], x[2][0], -x[2][1]))
            op = None
        else:
            u, k, op = max(es, key=lambda x: (time[x[0]], x[1] != "launch"))
        w = time[v] - time[u]
        launches += k == "launch"
        kind["wait" if k == "launch" else k] += w
        if op is not None and k != "wait":
            on[op["i"]] += w
        v = u
    byi = {o["i"]: o for o in ops}
    top = sorted(on, key=lambda i: (-on[i], byi[i]["t0"], i))[:5]
    return dict(valid=True, step=num, step_start_us=s0 / 1e3, step_us=(s1 - s0) / 1e3, length_us=(e - s0) / 1e3,
                longest_us=dist["sink"] / 1e3, past_step_us=(e - s1) / 1e3,
                kind_us={k: kind[k] / 1e3 for k in ("cpu", "compute", "comm", "memory", "wait")},
                ops=len(on), launches=launches, cpu_ops=sum(map(len, cpu.values())),
                device_ops=sum(map(len, dev.values())),
                top=[(byi[i]["name"][:127], byi[i]["kind"], on[i] / 1e3, (byi[i]["t0"] - s0) / 1e3) for i in top])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cp = json.load(open(sys.argv[1]))["runs"][0]["critical_path"]
    got = {r["rank"]: r for r in (cp or {}).get("ranks", [])}
    bad = []
    events = defaultdict(list)
    for arg in sys.argv[2:]:
        rank, _, path = arg.rpartition("=")
        doc = load(path)
        if not rank:
            rank = ((doc.get("distributedInfo") or {}).get("rank", 0) if isinstance(doc, dict) else 0)
        events[int(rank)] += doc["traceEvents"] if isinstance(doc, dict) else doc
    for rank in sorted(events):
        want = path_of(*read_rank(events[rank]))
        g = got.get(rank)
        if g is None:
            bad.append("rank %d: not in ddptop's critical_path" % rank)
            continue
        if g["valid"] != want["valid"] or g["step"] != want["step"]:
            bad.append("rank %d: valid, step %s %s, count %s %s" % (rank, g["valid"], g["step"], want["valid"],
                                                                  want["step"]))
            continue
        if not want["valid"]:
            if not g["note"] or g["length_us"] is not None:
                bad.append("rank %d: no path, but note %r, length %r" % (rank, g["note"], g["length_us"]))
            continue
        if abs(want["longest_us"] - want["length_us"]) > TOL_US:
            bad.append("rank %d: the longest path %.3f us is not the span %.3f" % (rank, want["longest_us"],
                                                                                  want["length_us"]))
        for k in ("step_start_us", "step_us", "length_us", "past_step_us"):
            # (a start at the epoch's time stamps, 1.7e15 us, is a double to a quarter us)
            if abs(g[k] - want[k]) > max(TOL_US, abs(want[k]) * 1e-15):
                bad.append("rank %d: %s %s, count %s" % (rank, k, g[k], want[k]))
        for k, w in want["kind_us"].items():
            if abs(g["kind_us"][k] - w) > TOL_US:
                bad.append("rank %d: kind_us.%s %s, count %s" % (rank, k, g["kind_us"][k], w))
        if abs(sum(g["kind_us"].values()) - g["length_us"]) > 0.01:
            bad.append("rank %d: the kinds sum to %s, not %s" % (rank, sum(g["kind_us"].values()), g["length_us"]))
        for k in ("ops", "launches", "cpu_ops", "device_ops"):
            if g[k] != want[k]:
                bad.append("rank %d: %s %s, count %s" % (rank, k, g[k], want[k]))
        gt = [(t["name"], t["kind"], t["path_us"], t["start_us"]) for t in g["top"]]
        if len(gt) != len(want["top"]) or any(a[:2] != b[:2] or abs(a[2] - b[2]) > TOL_US or abs(a[3] - b[3]) > TOL_US
                                              for a, b in zip(gt, want["top"])):
            bad.append("rank %d: top %s, count %s" % (rank, gt, want["top"]))
        print("rank %d step %d: path %.3f us (step %.3f), %s" % (
            rank, want["step"], want["length_us"], want["step_us"],
            ", ".join("%s %.3f" % kv for kv in want["kind_us"].items())))
    if bad:
        sys.exit("    " + "\n    ".join(bad[:12]))


if __name__ == "__main__":
    main()
