#!/usr/bin/python3
"""check_report.py - a second implementation, in Python, of the figures a
ddptop report gives, worked out from what the run wrote beside it (its
Chrome trace, its --history CSV) and from the README's definitions, never
from ddptop's code; then held against the JSON report, figure by figure.

From the trace (every span and step record of every rank, to the ns):
  - per rank: steps; ms/step mean, p50 and p90 as numpy.percentile gives
    them (linear between the two sorted steps around (k-1) q), over every
    step but the first; samples/s = the rank's batch over the median step
    (p50), the statistic the speedup uses;
  - the split of each step's window [t0, t1) over that step's spans (each
    cut to the window): on one thread the innermost span decides an
    instant; across threads compute beats comm beats data beats idle (a
    wait is idle). compute%, comm%, data%, idle% are shares of the wall of
    every step but the first, overlap% = |compute ^ comm| / |comm|, coll% =
    |union of comm spans| / wall, and coll ms/step over those steps;
  - desched% = the steps' desched_ns (every step but the first) over their
    wall;
  - bytes sent and received: the sum of the collectives' bytes and bytes_rx;
  - transfer and sync, total and per step (steps but the first): the sums
    of transfer_us and sync_us; horovod's negotiation the same over its
    spans;
  - busbw: the sum over collectives of size x the README's busbw factor
    (allreduce 2(n-1)/n; reduce-scatter, allgather, gather, scatter
    (n-1)/n; broadcast, reduce 1; send/recv none) over the sum of their
    transfer times, both over the steps but the first (as every per-step
    figure);
  - the run's row: per step the slowest rank's time (mean, p50, p90), the
    global batch over its p50, the ranks' splits summed, the means of their coll
    ms, desched% (all ranks' descheduled time over all their walls), bytes, transfer and sync, busbw over all ranks' bytes and
    transfer times, steps the fewest any rank closed; the learning rate of
    rank 0's last step; the running loss (the mean over the last 50 steps
    of the ranks' mean loss) and training accuracy over the last epoch's
    steps; the first step whose running loss fell below the threshold;
  - counters: at each step's end, loss = the step's loss, samples/s = its
    samples over its time, bytes/s = its collectives' bytes over its time,
    busbw = their size x factor over their durations;
and from the report itself: compute + comm + data + idle = 100, samples/s =
global batch / ms, speedup a ratio of samples/s against the baseline row
(p50 or mean), efficiency = speedup / (ranks / baseline ranks).

From the history CSV (--history): every step row is the trace's step record
(loss, lr, step_ms, correct, samples, epoch from 1); an epoch row's test_acc
is 100 correct / samples; the run's test_acc is the ranks' last epoch's
correct over samples.

Usage: check_report.py REPORT.json [--trace T.json[.gz]] [--history H.csv]
       [--run I] [--batch B]
--batch: the per-rank batch the command line gave (the samples per step a
rank's trace must say). Prints one line per figure group checked; exits 1
at the first figure that disagrees, naming it, the report's value and the
expected one.
"""
import argparse
import csv
import gzip
import json
import math
import sys

COMPUTE = ("forward", "backward", "optimizer")
CATS = COMPUTE + ("comm", "data", "wait")
FACTOR = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}
LOSS_WINDOW = 50  # README: "the running training loss (the last 50 steps' global loss)"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ns(us):
    """A trace time (us, 3 decimals) as integer ns."""
    return round(us * 1000)


def near(what, got, want, rel=1e-9, abs_=1e-9):
    if got is None or want is None:
        if got is not None or want is not None:
            fail("%s: report %r, expected %r" % (what, got, want))
        return
    if isinstance(want, float) and math.isnan(want):
        if not (isinstance(got, float) and math.isnan(got)):
            fail("%s: report %r, expected NaN" % (what, got))
        return
    if abs(got - want) > abs_ + rel * abs(want):
        fail("%s: report %r, expected %r" % (what, got, want))


def load_trace(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def percentiles(v):
    """mean, p50, p90 in ms of step times (ns) leaving out the first."""
    v = v[1:] if len(v) > 1 else v
    if not v:
        return 0.0, 0.0, 0.0
    try:
        import numpy
        p50, p90 = numpy.percentile(v, [50, 90])
    except ImportError:  # numpy's default (linear) by hand
        s = sorted(v)

        def q(f):
            pos = (len(s) - 1) * f
            lo = int(pos)
            hi = min(lo + 1, len(s) - 1)
            return s[lo] + (pos - lo) * (s[hi] - s[lo])

        p50, p90 = q(0.5), q(0.9)
    return sum(v) / len(v) / 1e6, float(p50) / 1e6, float(p90) / 1e6


def split_window(spans, t0, t1):
    """The README's split of [t0, t1) over spans (tid, a, b, cat), each
    already cut to the window: dict of ns."""
    cuts = sorted({t0, t1} | {a for _, a, _, _ in spans} | {b for _, _, b, _ in spans})
    out = dict(wall=t1 - t0, compute=0, comm=0, data=0, idle=0, comm_union=0, overlap=0, coll=0)
    for a, b in zip(cuts, cuts[1:]):
        if b <= t0 or a >= t1:
            continue
        inner = {}  # tid -> (start, -end, cat) of the innermost span open over [a, b)
        coll = False
        for tid, s0, s1, cat in spans:
            if s0 <= a and s1 >= b:
                key = (s0, -s1)
                if tid not in inner or key > inner[tid][0]:
                    inner[tid] = (key, cat)
                coll |= cat == "comm"
        cats = {c for _, c in inner.values()}
        d = b - a
        comp = any(c in COMPUTE for c in cats)
        comm = "comm" in cats
        if comp:
            out["compute"] += d
        elif comm:
            out["comm"] += d
        elif "data" in cats:
            out["data"] += d
        else:
            out["idle"] += d
        if comm:
            out["comm_union"] += d
            if comp:
                out["overlap"] += d
        if coll:
            out["coll"] += d
    return out


def pct(part, wall):
    return 100.0 * part / wall if wall > 0 else 0.0


class Rank:
    """One rank's steps and spans from the trace, and its figures."""

    def __init__(self, rank, events, world):
        self.rank = rank
        self.steps = {}  # step -> event
        self.spans = {}  # step -> [(tid, t0, t1, cat)]
        self.colls = []  # (step, args, t0, t1)
        self.counters = {}  # (name, ts_ns) -> args
        for e in events:
            ph, args = e.get("ph"), e.get("args") or {}
            if ph == "C":
                self.counters[(e["name"], ns(e["ts"]))] = args
                continue
            if ph != "X":
                continue
            t0 = ns(e["ts"])
            t1 = t0 + ns(e["dur"])
            if e["cat"] == "step":
                self.steps[args["step"]] = dict(args, t0=t0, t1=t1)
                continue
            if e["cat"] not in CATS or "step" not in args:
                continue
            self.spans.setdefault(args["step"], []).append((e["tid"], t0, t1, e["cat"]))
            if e["cat"] == "comm" and "collective" in args:
                self.colls.append((args["step"], args, t0, t1))
        self.order = sorted(self.steps)
        if self.order != list(range(len(self.order))):
            fail("rank %d: the trace's steps are not 0..N-1: %s" % (rank, self.order[:10]))
        self.walls = [self.steps[s]["t1"] - self.steps[s]["t0"] for s in self.order]
        # the split over every step but the first
        tot = dict(wall=0, compute=0, comm=0, data=0, idle=0, comm_union=0, overlap=0, coll=0)
        steady = self.order[1:] if len(self.order) > 1 else self.order
        self.nsteady = len(steady)
        for s in steady:
            st = self.steps[s]
            cut = [(tid, max(a, st["t0"]), min(b, st["t1"]), c) for tid, a, b, c in self.spans.get(s, [])]
            w = split_window([x for x in cut if x[2] > x[1]], st["t0"], st["t1"])
            for k in tot:
                tot[k] += w[k]
        self.split = tot
        first = len(self.order) > 1
        self.desched_ns = sum(self.steps[s].get("desched_ns", 0) for s in steady)
        self.desched_known = all("desched_ns" in self.steps[s] for s in steady) and steady
        self.tx = sum(a["bytes"] for _, a, _, _ in self.colls)
        self.rx = sum(a.get("bytes_rx", 0) for _, a, _, _ in self.colls)
        timed = [(s, a) for s, a, _, _ in self.colls if "transfer_us" in a]
        self.xfer_ns = sum(ns(a["transfer_us"]) for _, a in timed)
        self.sync_ns = sum(ns(a["sync_us"]) for _, a in timed)
        self.xfer_steady_ns = sum(ns(a["transfer_us"]) for s, a in timed if s > 0 or not first)
        self.sync_steady_ns = sum(ns(a["sync_us"]) for s, a in timed if s > 0 or not first)
        neg = [(s, t1 - t0) for s, a, t0, t1 in self.colls if a.get("negotiate")]
        self.nneg = len(neg)
        self.neg_steady_ns = sum(d for s, d in neg if s > 0 or not first)
        # busbw's and algbw's data over the steps the per-step figures cover
        # (with their transfer time, xfer_steady_ns)
        self.bus = sum(a["size"] * FACTOR[a["collective"]](world) for s, a, _, _ in self.colls
                       if a["collective"] in FACTOR and (s > 0 or not first))
        # algbw's data: each collective's size, as it is (no factor)
        self.alg = sum(a["size"] for s, a, _, _ in self.colls if a["collective"] in FACTOR and (s > 0 or not first))


def check_rank(q, rk, batch, staged, spe):
    who = "run %d rank %d" % (q["run"], q["rank"])
    if q["steps"] != len(rk.order):
        fail("%s steps: report %r, the trace has %d" % (who, q["steps"], len(rk.order)))
    mean, p50, p90 = percentiles(rk.walls)
    near(who + " ms_per_step", q["ms_per_step"], mean)
    near(who + " ms_p50", q["ms_p50"], p50)
    near(who + " ms_p90", q["ms_p90"], p90)
    if batch:
        for s in rk.order:
            if rk.steps[s]["samples"] != batch:
                fail("%s step %d: %r samples in the trace, --batch-size %d" % (who, s, rk.steps[s]["samples"], batch))
        near(who + " samples_per_s", q["samples_per_s"], batch / (p50 / 1e3))
    sp = rk.split
    for k in ("compute", "comm", "data", "idle"):
        near(who + " %s_pct" % k, q[k + "_pct"], pct(sp[k], sp["wall"]), abs_=1e-6)
    near(who + " overlap_pct", q["overlap_pct"], pct(sp["overlap"], sp["comm_union"]), abs_=1e-6)
    near(who + " coll_pct", q["coll_pct"], pct(sp["coll"], sp["wall"]), abs_=1e-6)
    near(who + " coll_ms_per_step", q["coll_ms_per_step"], sp["coll"] / 1e6 / rk.nsteady if rk.nsteady else 0)
    compute_ms = sp["compute"] / 1e6 / rk.nsteady if rk.nsteady else 0
    near(who + " compute_ms_per_step", q["compute_ms_per_step"], compute_ms)
    if spe:
        # an epoch's seconds: the steady steps' compute and collective time
        # per step, times the steps of an epoch
        near(who + " compute_s_per_epoch", q["compute_s_per_epoch"], compute_ms * spe / 1e3)
        near(who + " comm_s_per_epoch", q["comm_s_per_epoch"],
             (sp["coll"] / 1e6 / rk.nsteady if rk.nsteady else 0) * spe / 1e3)
    if rk.desched_known:
        near(who + " desched_pct", q["desched_pct"], pct(rk.desched_ns, sp["wall"]), abs_=1e-6)
    if q["bytes_sent"] != rk.tx or q["bytes_received"] != rk.rx:
        fail("%s bytes sent/received: report %r/%r, the trace's collectives %r/%r" %
             (who, q["bytes_sent"], q["bytes_received"], rk.tx, rk.rx))
    if staged:
        # stages: transfer, sync and busbw are n/a (sends have no peers to
        # wait for); under --dp the copies' averages are matched in their
        # groups, which the trace does not write: not derived here
        return
    if q["transfer_ms_total"] is not None:
        near(who + " transfer_ms_total", q["transfer_ms_total"], rk.xfer_ns / 1e6)
        near(who + " sync_ms_total", q["sync_ms_total"], rk.sync_ns / 1e6)
        near(who + " transfer_ms_per_step", q["transfer_ms_per_step"], rk.xfer_steady_ns / 1e6 / rk.nsteady)
        near(who + " sync_ms_per_step", q["sync_ms_per_step"], rk.sync_steady_ns / 1e6 / rk.nsteady)
    if q["busbw_gbps"] is not None or (rk.xfer_steady_ns > 0 and rk.bus > 0):
        xf = rk.xfer_steady_ns
        near(who + " busbw_gbps", q["busbw_gbps"], rk.bus / xf if xf > 0 else None, rel=1e-9)
        near(who + " algbw_gbps", q["algbw_gbps"], rk.alg / xf if xf > 0 else None, rel=1e-9)
    if rk.nneg or q.get("negotiate_ms_per_step") is not None:
        near(who + " negotiate_ms_per_step", q["negotiate_ms_per_step"],
             rk.neg_steady_ns / 1e6 / rk.nsteady if rk.nneg else None)


def check_run(r, ranks, rows, batch):
    who = "run %d" % r["run"]
    n = r["ranks"]
    if len(rows) != n or len(ranks) != n:
        fail("%s: %d ranks, %d per_rank rows, %d ranks in the trace" % (who, n, len(rows), len(ranks)))
    steps = min(len(rk.order) for rk in ranks)
    if r["steps"] != steps:
        fail("%s steps: report %r, the fewest any rank closed in the trace %d" % (who, r["steps"], steps))
    if batch and r["global_batch"] != batch * n and r.get("parallel", "data") == "data":
        fail("%s global_batch: report %r, %d x %d ranks" % (who, r["global_batch"], batch, n))
    slowest = [max(rk.walls[s] for rk in ranks) for s in range(steps)]
    mean, p50, p90 = percentiles(slowest)
    near(who + " ms_per_step", r["ms_per_step"], mean)
    near(who + " ms_p50", r["ms_p50"], p50)
    near(who + " ms_p90", r["ms_p90"], p90)
    g = r["global_batch"]
    near(who + " samples_per_s", r["samples_per_s"], g / (p50 / 1e3))
    near(who + " samples_per_s_p50", r["samples_per_s_p50"], g / (p50 / 1e3))
    tot = {k: sum(rk.split[k] for rk in ranks) for k in ranks[0].split}
    for k in ("compute", "comm", "data", "idle"):
        near(who + " %s_pct" % k, r[k + "_pct"], pct(tot[k], tot["wall"]), abs_=1e-6)
    near(who + " overlap_pct", r["overlap_pct"], pct(tot["overlap"], tot["comm_union"]), abs_=1e-6)
    near(who + " coll_pct", r["coll_pct"], pct(tot["coll"], tot["wall"]), abs_=1e-6)
    near(who + " coll_ms_per_step", r["coll_ms_per_step"],
         sum(rk.split["coll"] / 1e6 / rk.nsteady for rk in ranks) / n)
    if all(rk.desched_known for rk in ranks):
        # (every rank's descheduled time over every rank's wall: a rank that
        # ran longer weighs more)
        near(who + " desched_pct", r["desched_pct"],
             pct(sum(rk.desched_ns for rk in ranks), sum(rk.split["wall"] for rk in ranks)), abs_=1e-6)
    if r["bytes_sent"] != sum(rk.tx for rk in ranks) // n:
        fail("%s bytes_sent: report %r, the ranks' mean %r" % (who, r["bytes_sent"], sum(rk.tx for rk in ranks) / n))
    staged = r.get("parallel", "data") != "data"
    if not staged and r["transfer_ms_total"] is not None:
        near(who + " transfer_ms_total", r["transfer_ms_total"], sum(rk.xfer_ns for rk in ranks) / 1e6 / n)
        near(who + " sync_ms_total", r["sync_ms_total"], sum(rk.sync_ns for rk in ranks) / 1e6 / n)
        near(who + " transfer_ms_per_step", r["transfer_ms_per_step"],
             sum(rk.xfer_steady_ns / 1e6 / rk.nsteady for rk in ranks) / n)
        near(who + " sync_ms_per_step", r["sync_ms_per_step"],
             sum(rk.sync_steady_ns / 1e6 / rk.nsteady for rk in ranks) / n)
    bus, xfer = sum(rk.bus for rk in ranks), sum(rk.xfer_steady_ns for rk in ranks)
    if not staged and (r["busbw_gbps"] is not None or (bus > 0 and xfer > 0)):
        near(who + " busbw_gbps", r["busbw_gbps"], bus / xfer if xfer > 0 else None)
        near(who + " algbw_gbps", r["algbw_gbps"], sum(rk.alg for rk in ranks) / xfer if xfer > 0 else None)
    if not staged and any(rk.nneg for rk in ranks):
        near(who + " negotiate_ms_per_step", r["negotiate_ms_per_step"],
             sum(rk.neg_steady_ns / 1e6 / rk.nsteady for rk in ranks if rk.nneg) / n)
    # the learning rate of rank 0's last step; the running loss and the
    # last epoch's training accuracy over every rank
    last = ranks[0].steps[ranks[0].order[-1]]
    near(who + " lr", r["lr"], last["lr"], rel=1e-6)
    mean_loss = [sum(rk.steps[s]["loss"] for rk in ranks) / n for s in range(steps)]
    window = mean_loss[-LOSS_WINDOW:]
    near(who + " train_loss", r["train_loss"], sum(window) / len(window), rel=1e-5)
    epoch = ranks[0].steps[steps - 1]["epoch"]
    ep = [(rk.steps[s]["correct"], rk.steps[s]["samples"]) for rk in ranks for s in range(steps)
          if ranks[0].steps[s]["epoch"] == epoch]
    near(who + " train_acc", r["train_acc"], 100.0 * sum(c for c, _ in ep) / sum(k for _, k in ep))
    thr = r.get("loss_threshold")
    if thr:
        running, at = [], None
        for s in range(steps):
            w = mean_loss[max(0, s + 1 - LOSS_WINDOW):s + 1]
            if sum(w) / len(w) < thr:
                at = s
                break
        got = r["threshold_step"]
        if got != at:
            fail("%s threshold_step: report %r, the running loss first fell below %g at step %r" %
                 (who, got, thr, at))
        if at is not None and r["threshold_epoch"] != ranks[0].steps[at]["epoch"] + 1:
            fail("%s threshold_epoch: report %r, step %d is in epoch %d (from 1)" %
                 (who, r["threshold_epoch"], at, ranks[0].steps[at]["epoch"] + 1))
    skipped = sum(1 for s in range(steps) if ranks[0].steps[s].get("skipped"))
    scale = ranks[0].steps[steps - 1].get("loss_scale")
    if scale or r.get("loss_scale") is not None:
        near(who + " loss_scale", r["loss_scale"], scale)
        if r["steps_skipped"] != skipped:
            fail("%s steps_skipped: report %r, the trace marks %d" % (who, r["steps_skipped"], skipped))


def check_counters(ranks, n):
    """Each step's counters against its record and its collectives."""
    count = 0
    for rk in ranks:
        for s in rk.order:
            st = rk.steps[s]
            secs = (st["t1"] - st["t0"]) / 1e9
            at = st["t1"]
            c = lambda name: rk.counters.get((name, at))
            cs = [(a, t1 - t0) for step, a, t0, t1 in rk.colls if step == s]
            who = "rank %d step %d counter" % (rk.rank, s)
            if c("loss") is None:
                fail("%s loss: none at the step's end" % who)
            near(who + " loss", c("loss")["loss"], st["loss"], rel=1e-7)
            near(who + " samples/s", c("samples/s")["samples/s"], st["samples"] / secs, rel=1e-7)
            tx, rx = sum(a["bytes"] for a, _ in cs), sum(a.get("bytes_rx", 0) for a, _ in cs)
            if tx or rx:
                near(who + " bytes/s tx", c("bytes/s")["tx"], tx / secs, rel=1e-7)
                near(who + " bytes/s rx", c("bytes/s")["rx"], rx / secs, rel=1e-7)
            elif c("bytes/s") is not None:
                fail("%s bytes/s without bytes moved: %r" % (who, c("bytes/s")))
            coll = [(a, d) for a, d in cs if a["collective"] in FACTOR]
            bus, dur = sum(a["size"] * FACTOR[a["collective"]](n) for a, _ in coll), sum(d for _, d in coll)
            if bus > 0 and dur > 0:
                near(who + " busbw", c("busbw")["GB/s"], bus / dur, rel=1e-7)
            elif c("busbw") is not None:
                fail("%s busbw without collectives: %r" % (who, c("busbw")))
            count += 1
    return count


def check_history(path, run, ranks, report):
    rows = [x for x in csv.DictReader(open(path)) if int(x["run"]) == run]
    steps = [x for x in rows if x["kind"] == "step"]
    seen = 0
    for x in steps:
        rk = ranks[int(x["rank"])]
        st = rk.steps.get(int(x["step"]))
        who = "history run %d rank %s step %s" % (run, x["rank"], x["step"])
        if st is None:
            fail("%s: no such step in the trace" % who)
        near(who + " loss", float(x["loss"]), st["loss"], rel=1e-7)
        near(who + " lr", float(x["lr"]), st["lr"], rel=1e-7)
        near(who + " step_ms", float(x["step_ms"]), (st["t1"] - st["t0"]) / 1e6, abs_=0.00005 + 1e-12)
        if (int(x["correct"]), int(x["samples"]), int(x["epoch"])) != (st["correct"], st["samples"], st["epoch"] + 1):
            fail("%s correct/samples/epoch: %s/%s/%s, the trace's %r/%r/%r (+1)" %
                 (who, x["correct"], x["samples"], x["epoch"], st["correct"], st["samples"], st["epoch"]))
        seen += 1
    every = None
    if len(steps) > 1:
        idx = sorted({int(x["step"]) for x in steps})
        every = idx[1] - idx[0] if len(idx) > 1 else 1
    want = sum(1 for rk in ranks for s in rk.order if every is None or s % every == 0)
    if seen != want:
        fail("history run %d: %d step rows, the trace has %d such steps" % (run, seen, want))
    epochs = [x for x in rows if x["kind"] == "epoch"]
    for x in epochs:
        near("history run %d rank %s epoch %s test_acc" % (run, x["rank"], x["epoch"]), float(x["test_acc"]),
             100.0 * int(x["correct"]) / int(x["samples"]), abs_=0.00005 + 1e-12)
    if epochs:
        last = max(int(x["epoch"]) for x in epochs)
        le = [x for x in epochs if int(x["epoch"]) == last]
        near("run %d test_acc (the history's last epoch)" % run, report["test_acc"],
             100.0 * sum(int(x["correct"]) for x in le) / sum(int(x["samples"]) for x in le))
    return seen, len(epochs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--trace")
    ap.add_argument("--history")
    ap.add_argument("--run", type=int, default=0)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--train-size", type=int, help="the training split's samples: steps_per_epoch by hand")
    a = ap.parse_args()
    d = json.load(open(a.report))
    r = next(x for x in d["runs"] if x["run"] == a.run)
    rows = sorted((q for q in d["per_rank"] if q["run"] == a.run), key=lambda q: q["rank"])

    # the report's own arithmetic, by the figures' meaning
    for who, x in [("run %d" % a.run, r)] + [("run %d rank %d" % (a.run, q["rank"]), q) for q in rows]:
        parts = sum(x[k] for k in ("compute_pct", "comm_pct", "data_pct", "idle_pct"))
        near(who + ": compute + comm + data + idle", parts, 100.0, abs_=1e-6)
    if r["speedup"] is not None:
        b = next(x for x in d["runs"] if x["run"] == r["speedup_baseline_run"])
        ratios = [r[k] / b[k] for k in ("samples_per_s_p50", "samples_per_s") if r[k] and b[k]]
        if not any(abs(r["speedup"] - x) <= 1e-9 * x for x in ratios):
            fail("run %d speedup %r is no ratio of samples/s against run %d: %r" % (a.run, r["speedup"], b["run"], ratios))
        near("run %d efficiency_pct" % a.run, r["efficiency_pct"], 100.0 * r["speedup"] / (r["ranks"] / b["ranks"]))
    print("ok: run %d: the split sums to 100 on the run and its %d ranks%s" %
          (a.run, len(rows), "; speedup and efficiency against run %d" % r["speedup_baseline_run"]
           if r["speedup"] is not None else ""))
    if not a.trace:
        return
    t = load_trace(a.trace)
    n = r["ranks"]
    # (a span the report lost is still in the trace: the two would differ)
    if r["spans_lost"] != 0:
        fail("run %d lost %r spans: its figures cannot be held to the trace's" % (a.run, r["spans_lost"]))
    ranks = [Rank(p, [e for e in t["traceEvents"] if e.get("pid") == p], n) for p in range(n)]
    staged = r.get("parallel", "data") != "data"
    # an epoch: each replica's shard of the training split in whole batches
    # (data parallelism: a replica a rank; the last partial batch dropped)
    spe = 0
    if a.train_size and a.batch and not staged:
        spe = (a.train_size // n) // a.batch
        if r["steps_per_epoch"] != spe:
            fail("run %d steps_per_epoch: report %r, %d samples / %d ranks / batch %d = %d" %
                 (a.run, r["steps_per_epoch"], a.train_size, n, a.batch, spe))
    for q, rk in zip(rows, ranks):
        check_rank(q, rk, a.batch, staged, spe)
    check_run(r, ranks, rows, a.batch)
    if spe:
        near("run %d compute_ms_per_step" % a.run, r["compute_ms_per_step"],
             sum(rk.split["compute"] / 1e6 / rk.nsteady for rk in ranks) / n)
        near("run %d compute_s_per_epoch" % a.run, r["compute_s_per_epoch"],
             sum(rk.split["compute"] / 1e6 / rk.nsteady for rk in ranks) / n * spe / 1e3)
        near("run %d comm_s_per_epoch" % a.run, r["comm_s_per_epoch"],
             sum(rk.split["coll"] / 1e6 / rk.nsteady for rk in ranks) / n * spe / 1e3)
    steps = check_counters(ranks, n)
    print("ok: run %d: every rank's and the run's figures from the trace; %d steps' counters" % (a.run, steps))
    if a.history:
        s, e = check_history(a.history, a.run, ranks, r)
        print("ok: run %d: %d step rows and %d epoch rows of the history against the trace" % (a.run, s, e))


if __name__ == "__main__":
    main()
