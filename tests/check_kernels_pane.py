#!/usr/bin/env python3
"""check_kernels_pane.py - the Kernels pane (K), as tmux captured it,
against the report JSON of the same trace (--format json).

    check_kernels_pane.py PANE.txt REPORT.json [RANK]

RANK (default: the JSON's first rank with a breakdown) is the rank the
pane shows. Its types table must give, for every kernel type that ran,
the run's and the rank's share to the 0.1 the pane prints; its top
kernels must be the JSON's rows of that rank, in order and no more: type,
name (or "others (N kernels)"; the pane may cut a long name with "..."),
count, and share to 0.1; its memory copies (where the JSON's `memcpy`
has the rank) the JSON's kinds of that rank, in order and no more: count,
MB, time ms and GB/s to the 0.001 printed, GB/s being MB over time as
arithmetic says, and HTA's per-copy mean and most ("n/a" where JSON has
null); with no copies, no copies table (a pane cut short below may hold them
out of sight); likewise its launch queues (the JSON's `queue` of the
rank): stream, points, mean, median, most and ms blocked. A pane scrolled down may have its first lines out of sight: the tables
whose titles are not shown are then checked on the rows that are. Nothing
here calls ddptop's code.
"""
import json
import re
import sys

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def inner(line):
    """A pane line's text between its box borders, stripped."""
    m = re.search(r"│(.*)│", line)
    return m.group(1).strip() if m else ""


def main():
    pane = [inner(l) for l in open(sys.argv[1], encoding="utf-8")]
    run = json.load(open(sys.argv[2]))["runs"][0]
    k = run["kernels"]
    if not k:
        fail("the report has no kernel breakdown")
        return
    ranks = k["ranks"]
    rank = int(sys.argv[3]) if len(sys.argv) > 3 else ranks[0]["rank"]
    mine = [r for r in ranks if r["rank"] == rank][0]

    raw = open(sys.argv[1], encoding="utf-8").read()
    # a pane scrolled down ("+N lines above") may have its first tables out of sight
    above = re.search(r"\+\d+ lines? above", raw) is not None
    types_seen = any(re.match(r"type\s+all ms", l) for l in pane)
    kernels_seen = any(re.match(r"type\s+kernel\s", l) for l in pane)

    # the types table: "NAME  all-ms all-% rank-ms rank-%"
    types = {}
    for line in pane:
        m = re.fullmatch(r"([a-z ]+?)\s+(\d+\.\d{3})\s+(\d+\.\d)\s+(\d+\.\d{3})\s+(\d+\.\d)", line)
        if m:
            types[m.group(1)] = (m.group(3), m.group(5))
    shown = 0
    partial = above and not types_seen  # (its first lines out of sight: those shown are checked)
    for t_all, t_rank in zip(k["types"], mine["types"]):
        if t_all["time_us"] <= 0 and t_rank["time_us"] <= 0:
            continue
        shown += 1
        want = ("%.1f" % t_all["share_pct"], "%.1f" % t_rank["share_pct"])
        got = types.get(t_all["type"])
        if partial and got is None:
            continue
        if got != want:
            fail("type %r: pane %s, report %s" % (t_all["type"], got, want))
    if len(types) != shown and not (partial and len(types) < shown):
        fail("the pane shows %d types, the report %d: %s" % (len(types), shown, sorted(types)))

    # the top kernels: "TYPE NAME count mean-us total-ms share"
    rows = []
    for line in pane:
        m = re.fullmatch(r"(computation|communication|memory)\s+(.+?)\s+(\d+)\s+(\d+\.\d)\s+(\d+\.\d{3})\s+(\d+\.\d)", line)
        if m:
            rows.append(m.groups())
    top = mine["top"]
    if above and not kernels_seen:
        top = top[len(top) - len(rows):] if rows else []
    if len(rows) != len(top):
        fail("the pane shows %d top kernels, the report %d" % (len(rows), len(top)))
    for got, want in zip(rows, top):
        name = "others (%d kernels)" % want["others"] if want["others"] else want["name"]
        gname = got[1]
        same = gname == name or (gname.endswith("...") and name.startswith(gname[:-3]))
        if got[0] != want["type"] or not same:
            fail("row %r %r: the report has %r %r" % (got[0], gname, want["type"], name))
        if int(got[2]) != want["count"]:
            fail("%s: count %s, report %d" % (name, got[2], want["count"]))
        if got[5] != "%.1f" % want["share_pct"]:
            fail("%s: share %s, report %.1f" % (name, got[5], want["share_pct"]))

    # the memory copies: "KIND count MB time-ms GB/s copy-mean copy-max"
    copies = []
    for line in pane:
        m = re.fullmatch(r"(Memcpy [A-Za-z]+|Memset)\s+(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\S+)\s+(\S+)", line)
        if m:
            copies.append(m.groups())
    mc = run.get("memcpy") or {"ranks": []}
    want_kinds = next((r["kinds"] for r in mc["ranks"] if r["rank"] == rank), [])
    titled = any(l.startswith("memory copies of rank %d" % rank) for l in pane)
    # (a pane cut short, "+N lines below", may hold its copies below)
    cut = any(re.search(r"\+\d+ lines? (above, \+\d+ )?below", l) for l in open(sys.argv[1], encoding="utf-8"))
    if cut and not titled:
        want_kinds = []
    elif titled != bool(want_kinds):
        fail("copies table shown: %s, the report has %d kinds for rank %d" % (titled, len(want_kinds), rank))
    if len(copies) != len(want_kinds):
        fail("the pane shows %d copy kinds, the report %d" % (len(copies), len(want_kinds)))
    fmt = lambda v: "n/a" if v is None else "%.3f" % v
    for got, want in zip(copies, want_kinds):
        exp = (want["kind"], str(want["count"]), "%.3f" % (want["bytes"] / 1e6), "%.3f" % (want["time_us"] / 1e3),
               "%.3f" % want["gbps"], fmt(want["copy_gbps_mean"]), fmt(want["copy_gbps_max"]))
        if got != exp:
            fail("copies %r: pane %s, report %s" % (want["kind"], got, exp))
        bw = want["bytes"] / (want["time_us"] * 1e3) if want["time_us"] > 0 else 0
        if abs(float(got[4]) - bw) > 0.0015:
            fail("copies %r: %s GB/s, but %d bytes over %g us is %.4f" % (want["kind"], got[4], want["bytes"],
                                                                      want["time_us"], bw))

    # the launch queues: "stream N points mean p50 max blocked-ms|-"
    queues = []
    for line in pane:
        m = re.fullmatch(r"stream (\d+)\s+(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d{2})\s+(\d+)\s+(\S+)", line)
        if m:
            queues.append(m.groups())
    qu = run.get("queue") or {"ranks": []}
    want_q = next((r["streams"] for r in qu["ranks"] if r["rank"] == rank), [])
    titled = any(l.startswith("launch queues of rank %d" % rank) for l in pane)
    if cut and not titled:
        want_q = []
    elif titled != bool(want_q):
        fail("queue table shown: %s, the report has %d streams for rank %d" % (titled, len(want_q), rank))
    if len(queues) != len(want_q):
        fail("the pane shows %d streams' queues, the report %d" % (len(queues), len(want_q)))
    for got, want in zip(queues, want_q):
        exp = (str(want["stream"]), str(want["count"]), "%.3f" % want["mean"], "%.2f" % want["p50"], str(want["max"]),
               "%.3f" % (want["blocked_us"] / 1e3) if want["blocked_us"] else "-")
        if got != exp:
            fail("queue of stream %s: pane %s, report %s" % (want["stream"], got, exp))
    print("%d types, %d top kernels, %d copy kinds and %d streams' queues of rank %d checked"
          % (shown, len(rows), len(copies), len(queues), rank))


main()
sys.exit(1 if FAILS else 0)
