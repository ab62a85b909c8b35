#!/usr/bin/python3
"""test_trace_check.py - validates a ddptop Chrome trace with a real JSON
parser, against the schema ddptop promises (trace/trace_export.h):

  - a JSON object with traceEvents, displayTimeUnit and distributedInfo
    (backend, rank, world_size);
  - every X event has ph, ts, dur, pid, tid, name and cat; dur >= 0;
  - process_name / thread_name metadata name every pid and (pid, tid) used,
    and every thread named has events (no empty lane declared: a CPU
    run's ranks have no gpu stream);
  - X events nest properly on every (pid, tid);
  - collectives carry collective, bytes, ranks, seq, algorithm and either
    transfer_us/sync_us or ranks_seen; counters are C events with args;
  - --counters: each step's loss, samples/s, bytes/s and busbw counters
    hold the values its record and its collectives give;
  - transfer/sync: sync >= 0 and transfer + sync = the collective's
    duration, to the nanosecond; the ranks of one collective (one seq) share
    its transfer, which is the shortest of their durations, so when every
    rank is in the file one of them (the straggler) has sync 0.

Usage: test_trace_check.py FILE [--prefix] [--rank N] [--pids 0,1]
       [--min-steps K] [--steps A:B] [--state S] [--counters]
--prefix: FILE was cut by SIGKILL: it must be the header plus whole event
lines (at most one partial last line, which is dropped); it is then closed
with "]}" and checked like a whole file.
Prints a one-line summary; exits 1 with the first violation.
"""
import argparse
import json
import os
import sys
import zlib


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ns(us):
    """A time the writer printed in us with 3 decimals, as integer ns."""
    return round(us * 1000)


def load(path, prefix):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        # zlib, not GzipFile: on a cut stream GzipFile's read raises and
        # drops what it had inflated in that call (up to a whole chunk of
        # whole events); a decompressobj hands back every byte it can
        out, rest, cut = b"", raw, False
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                out += d.decompress(rest)
            except zlib.error as e:
                fail("gzip stream is corrupt: %s" % e)
            if not d.eof:
                cut = True
                break
            rest = d.unused_data
        if cut and not prefix:
            fail("gzip stream is cut short")
        raw = out
    text = raw.decode("utf-8")
    if not prefix:
        try:
            return json.loads(text), False
        except ValueError as e:
            fail("not valid JSON: %s" % e)
    # a killed writer: header line, then one event per line
    try:
        return json.loads(text), False  # it may have finished after all
    except ValueError:
        pass
    lines = text.split("\n")
    if not lines[0].rstrip().endswith('"traceEvents":['):
        fail("prefix does not start with the header line")
    keep = [lines[0]]
    for i, ln in enumerate(lines[1:], 1):
        body = ln[1:] if ln.startswith(",") else ln
        try:
            json.loads(body)
        except ValueError:
            if i != len(lines) - 1:
                fail("line %d of the prefix is not a whole event: %r" % (i + 1, ln[:80]))
            break  # a partial last line
        keep.append(ln)
    try:
        return json.loads("\n".join(keep) + "\n]}"), True
    except ValueError as e:
        fail("prefix closed with ]} is not valid JSON: %s" % e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--prefix", action="store_true")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--pids")
    ap.add_argument("--min-steps", type=int, default=0)
    ap.add_argument("--steps")
    ap.add_argument("--state")
    ap.add_argument("--counters", action="store_true")
    a = ap.parse_args()

    doc, cut = load(a.file, a.prefix)
    if not isinstance(doc, dict):
        fail("top level is not an object")
    for k in ("traceEvents", "displayTimeUnit", "distributedInfo"):
        if k not in doc:
            fail("missing " + k)
    di = doc["distributedInfo"]
    for k in ("backend", "rank", "world_size"):
        if k not in di:
            fail("distributedInfo lacks " + k)
    if a.rank is not None and di["rank"] != a.rank:
        fail("distributedInfo.rank is %s, expected %d" % (di["rank"], a.rank))
    end = doc.get("ddptopTraceEnd")
    if not cut and not a.prefix and (not end or end.get("complete") is not True):
        fail("no ddptopTraceEnd.complete: the writer did not finish")
    if a.state and (not end or end.get("state") != a.state):
        fail("end state is %r, expected %r" % (end and end.get("state"), a.state))

    evs = doc["traceEvents"]
    pnames, tnames = set(), set()
    used_p, used_t = set(), set()
    xs = {}
    steps = {}
    counters = set()
    ncoll = 0
    by_seq = {}
    for e in evs:
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "process_name":
                pnames.add(e["pid"])
            elif e.get("name") == "thread_name":
                tnames.add((e["pid"], e["tid"]))
            continue
        if "pid" in e:
            used_p.add(e["pid"])
            if "tid" in e:
                used_t.add((e["pid"], e["tid"]))
        if ph == "X":
            for k in ("ph", "ts", "dur", "pid", "tid", "name", "cat"):
                if k not in e:
                    fail("X event without %s: %s" % (k, e))
            if not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)) or e["dur"] < 0:
                fail("bad ts/dur: %s" % e)
            xs.setdefault((e["pid"], e["tid"]), []).append(e)
            args = e.get("args", {})
            if e["cat"] == "step":
                steps.setdefault(e["pid"], []).append(args.get("step"))
            if a.steps and "step" in args:
                lo, hi = a.steps.split(":")
                if args["step"] < int(lo) or (hi and args["step"] > int(hi)):
                    fail("event of step %s outside --steps %s" % (args["step"], a.steps))
            if e["cat"] == "comm":
                ncoll += 1
                for k in ("collective", "bytes", "ranks", "seq", "algorithm"):
                    if k not in args:
                        fail("collective without args.%s: %s" % (k, e))
                if not (("transfer_us" in args and "sync_us" in args) or "ranks_seen" in args):
                    fail("collective without transfer/sync: %s" % e)
                if "transfer_us" in args:
                    xf, sy, dur = ns(args["transfer_us"]), ns(args["sync_us"]), ns(e["dur"])
                    if sy < 0:
                        fail("negative sync: %s" % e)
                    if xf + sy != dur:
                        fail("transfer + sync is not the collective's duration: %s" % e)
                    by_seq.setdefault(args["seq"], []).append((e["pid"], xf, sy, dur, args["ranks"]))
        elif ph == "C":
            if not isinstance(e.get("args"), dict) or not e["args"]:
                fail("counter without args: %s" % e)
            counters.add(e["name"])
        elif ph in ("s", "f"):
            if "id" not in e:
                fail("flow event without id: %s" % e)
    for seq, group in by_seq.items():
        xfs = set(g[1] for g in group)
        if len(xfs) != 1:
            fail("collective seq %s: the ranks disagree on its transfer: %s" % (seq, sorted(xfs)))
        if len(set(g[0] for g in group)) == group[0][4]:
            if min(g[3] for g in group) != group[0][1]:
                fail("collective seq %s: transfer is not the shortest duration over the ranks" % seq)
            if min(g[2] for g in group) != 0:
                fail("collective seq %s: no rank has sync 0 (the straggler's)" % seq)
    for p in used_p:
        if p not in pnames:
            fail("pid %s has no process_name" % p)
    for t in used_t:
        if t not in tnames:
            fail("pid/tid %s has no thread_name" % (t,))
    for t in sorted(tnames):
        if t not in used_t:
            fail("pid/tid %s is declared (thread_name) but has no events" % (t,))
    if a.pids is not None:
        want = set(int(x) for x in a.pids.split(",")) if a.pids else set()
        if used_p != want:
            fail("pids %s, expected %s" % (sorted(used_p), sorted(want)))
    # proper nesting per thread, at ns resolution
    for key, lst in xs.items():
        lst.sort(key=lambda e: (round(e["ts"] * 1000), -round(e["dur"] * 1000)))
        stack = []
        for e in lst:
            t0 = round(e["ts"] * 1000)
            t1 = t0 + round(e["dur"] * 1000)
            while stack and t0 >= stack[-1][1]:
                stack.pop()
            if stack and t1 > stack[-1][1]:
                fail("X events overlap without nesting on %s: %s and %s" % (key, stack[-1][2], e["name"]))
            stack.append((t0, t1, e["name"]))
    nsteps = min((len(v) for v in steps.values()), default=0)
    if nsteps < a.min_steps:
        fail("%d steps per rank, expected at least %d" % (nsteps, a.min_steps))
    if a.counters:
        for c in ("loss", "samples/s", "bytes/s", "busbw"):
            if c not in counters:
                fail("no %s counter" % c)
        # and their values, from each step's record and its collectives
        # (check_report.py: loss, samples over the step's time, bytes
        # over it, size x busbw factor over the collectives' time)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import check_report
        world = di["world_size"]
        ranks = [check_report.Rank(p, [e for e in evs if e.get("pid") == p], world) for p in sorted(used_p)]
        check_report.check_counters(ranks, world)
    print("ok: %d events, %d ranks, %d steps/rank, %d collectives%s" %
          (len(evs), len(used_p), nsteps, ncoll, " (prefix)" if cut else ""))


if __name__ == "__main__":
    main()
