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
rank): stream, points, mean, median, most and ms blocked; and its kernel
launches (the JSON's `launch` of the rank): counts, and the CPU, GPU and
delay durations' mean, median and most; and its idle time per stream (the
JSON's `idle` of the rank): stream, ops, idle ms and the shares of host
wait, kernel wait and other; and the run's late collectives (the JSON's
`stragglers`, whichever rank is shown): the straggler named, and each
rank's steps last and late and its lead's total and mean; and the rank's
memory timeline (the JSON's `memory_timeline` of the rank): per device its
events, MB at the start, end and peak, the peak's time and step, the peak
reserved, and a sparkline of its steps' peaks, a glyph a step, the highest
where the step's peak is the most. A pane scrolled down may have its first lines out of sight: the tables
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

    # the tables after the top kernels: each its title, then its rows. A
    # pane cut short shows a table whole, in part (its title out of sight
    # above, or rows below) or not at all; the rows it shows must be the
    # report's, in order
    below = re.search(r"\+\d+ lines? (above, \+\d+ )?below", raw) is not None

    def rows_of(pattern):
        return [m.groups() for m in (re.fullmatch(pattern, l) for l in pane) if m]

    def table(what, title, got, want):
        titled = any(l.startswith(title) for l in pane)
        if not titled and not got:
            if want and not (above or below):
                fail("no %s in the pane, the report has %d rows" % (what, len(want)))
            return
        ok = got == want or (below and titled and got == want[:len(got)]) or \
            (above and not titled and got == want[len(want) - len(got):])
        if not ok:
            fail("%s: pane %s, report %s" % (what, got, want))

    # the memory copies: "KIND count MB time-ms GB/s copy-mean copy-max"
    copies = rows_of(r"(Memcpy [A-Za-z]+|Memset)\s+(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\S+)\s+(\S+)")
    mc = run.get("memcpy") or {"ranks": []}
    want_kinds = next((r["kinds"] for r in mc["ranks"] if r["rank"] == rank), [])
    fmt = lambda v: "n/a" if v is None else "%.3f" % v
    table("memory copies", "memory copies of rank %d" % rank, copies,
          [(w["kind"], str(w["count"]), "%.3f" % (w["bytes"] / 1e6), "%.3f" % (w["time_us"] / 1e3), "%.3f" % w["gbps"],
            fmt(w["copy_gbps_mean"]), fmt(w["copy_gbps_max"])) for w in want_kinds])
    for got in copies:  # and GB/s is bytes over time
        w = next(w for w in want_kinds if w["kind"] == got[0]) if any(w["kind"] == got[0] for w in want_kinds) else None
        bw = w["bytes"] / (w["time_us"] * 1e3) if w and w["time_us"] > 0 else 0
        if abs(float(got[4]) - bw) > 0.0015:
            fail("copies %r: %s GB/s, but bytes over time is %.4f" % (got[0], got[4], bw))

    # the launch queues: "stream N points mean p50 max blocked-ms|-"
    queues = rows_of(r"stream (\d+)\s+(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d{2})\s+(\d+)\s+(\S+)")
    qu = run.get("queue") or {"ranks": []}
    want_q = next((r["streams"] for r in qu["ranks"] if r["rank"] == rank), [])
    table("launch queues", "launch queues of rank %d" % rank, queues,
          [(str(w["stream"]), str(w["count"]), "%.3f" % w["mean"], "%.2f" % w["p50"], str(w["max"]),
            "%.3f" % (w["blocked_us"] / 1e3) if w["blocked_us"] else "-") for w in want_q])

    # the kernel launches: "N launches (K of kernels): S short, C long CPU,
    # D long delay", then "CPU us|GPU us|delay us mean p50 max"
    counts = rows_of(r"(\d+) launches \((\d+) of kernels\): (\d+) short, (\d+) long CPU, (\d+) long delay")
    durs = rows_of(r"(CPU us|GPU us|delay us)\s+(\d+\.\d{3})\s+(\S+)\s+(\d+\.\d{3})")
    la = run.get("launch") or {"ranks": []}
    w = next((r for r in la["ranks"] if r["rank"] == rank and r["count"] > 0), None)
    want_l = [] if w is None else [tuple(str(w[k]) for k in ("count", "kernel_launches", "short_gpu", "long_cpu",
                                                             "long_delay"))]
    want_d = [] if w is None else [(label, "%.3f" % w[k]["mean"], fmt(w[k]["p50"]), "%.3f" % w[k]["max"])
                                   for label, k in (("CPU us", "cpu_us"), ("GPU us", "gpu_us"), ("delay us", "delay_us"))]
    table("kernel launches", "kernel launches of rank %d" % rank, counts, want_l)
    table("launch durations", "kernel launches of rank %d" % rank, durs, want_d)

    # the idle time per stream: "stream N ops idle-ms host-% kernel-% other-%"
    # ("n/a" shares where the stream has no idle time)
    idles = rows_of(r"stream (\d+)\s+(\d+)\s+(-?\d+\.\d{3})\s+(n/a|-?\d+\.\d)\s+(n/a|-?\d+\.\d)\s+(n/a|-?\d+\.\d)")
    it = run.get("idle") or {"ranks": []}
    want_i = next((r["streams"] for r in it["ranks"] if r["rank"] == rank), [])
    pct = lambda v: "n/a" if v is None else "%.1f" % (100 * v)
    table("idle time per stream", "idle time per stream of rank %d" % rank, idles,
          [(str(w["stream"]), str(w["ops"]), "%.3f" % (w["idle_us"] / 1e3))
           + tuple(pct(w[k]["ratio"]) for k in ("host_wait", "kernel_wait", "other")) for w in want_i])
    # the run's late collectives: "straggler: rank R (last most often)",
    # then "rank R last late lead-us lead-mean-us|n/a"
    st = run.get("stragglers")
    named = rows_of(r"straggler: rank (\d+) \(last most often\)")
    late = rows_of(r"rank (\d+)\s+(\d+)\s+(\d+)\s+(\d+\.\d{3})\s+(\S+)")
    title = "late collectives of the run"
    table("straggler", title, named, [] if st is None else [(str(st["straggler"]),)])
    table("late collectives", title, late, [] if st is None else [
        (str(r["rank"]), str(r["last"]), str(r["late"]), "%.3f" % r["lead_us"], fmt(r["lead_mean_us"]))
        for r in st["ranks"]])
    # the rank's memory timeline: "DEVICE events start-MB end-MB peak-MB
    # peak-at-ms|n/a step|- resv-MB", then "steps A-B SPARK peak/step MB":
    # a glyph a step, the highest ('█' or '#') where the step's peak is the
    # most
    mt = run.get("memory_timeline") or {"ranks": []}
    want_m = next((r["devices"] for r in mt["ranks"] if r["rank"] == rank), [])
    devs = rows_of(r"([a-z]+\d*:-?\d+)\s+(\d+)\s+(-?\d+\.\d{3})\s+(-?\d+\.\d{3})\s+(-?\d+\.\d{3})\s+(n/a|-?\d+\.\d{3})"
                   r"\s+(-|\d+)\s+(\d+\.\d{3})")
    mb = lambda v: "%.3f" % (v / 1e6)
    table("memory timeline", "memory timeline of rank %d" % rank, devs,
          [(w["device"], str(w["events"]), mb(w["start_bytes"]), mb(w["end_bytes"]), mb(w["peak_bytes"]),
            "n/a" if w["peak_at_us"] is None else "%.3f" % (w["peak_at_us"] / 1e3),
            "-" if w["peak_step"] is None else str(w["peak_step"]), mb(w["reserved_peak_bytes"])) for w in want_m])
    sparks = rows_of(r"steps (\d+)-(\d+) (\S+) peak/step (\d+\.\d{3}) MB")
    want_s = [w["steps"] for w in want_m if w["steps"]]
    if above or below:
        want_s = want_s[len(want_s) - len(sparks):] if above else want_s[:len(sparks)]
    if len(sparks) != len(want_s):
        fail("the pane shows %d memory sparklines, the report %d devices with steps" % (len(sparks), len(want_s)))
    for got, steps in zip(sparks, want_s):
        most = max(x["peak_bytes"] for x in steps)
        top = [i for i, x in enumerate(steps) if x["peak_bytes"] == most]
        spark = got[2]
        if (int(got[0]), int(got[1])) != (steps[0]["step"], steps[-1]["step"]) or len(spark) != len(steps) or \
                got[3] != mb(most) or any((c in "\u2588#") != (i in top) for i, c in enumerate(spark)):
            fail("memory sparkline %s, report steps %s" % (got, [(x["step"], x["peak_bytes"]) for x in steps]))
    print("%d types, %d top kernels, %d copy kinds, %d streams' queues, %d launch lines and %d streams' idle time "
          "of rank %d, %d late collective rows and %d devices' memory checked" % (
              shown, len(rows), len(copies), len(queues), len(counts) + len(durs), len(idles), rank, len(late),
              len(devs)))


main()
sys.exit(1 if FAILS else 0)
