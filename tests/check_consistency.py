#!/usr/bin/env python3
"""check_consistency.py - one run's report in every format and its plots
agree with each other and with arithmetic.

    check_consistency.py PREFIX PLOTDIR

PREFIX.txt, PREFIX.md, PREFIX.csv and PREFIX.json are the one report of
one sweep (ddptop --format text,md,csv,json --output PREFIX), PLOTDIR its
--plot folder. Nothing here calls ddptop's code: each output is parsed
as a reader would, and

  - every figure that appears in more than one output is the same number
    to the precision it is printed with (text, markdown, CSV, JSON, the
    speedup plot's points);
  - the figures that follow from others do: samples/s x p50 ms = the
    global batch; speedup = samples/s over the baseline's; efficiency =
    speedup x the baseline's ranks / ranks; busbw = algbw x 2(n-1)/n for
    an allreduce; algbw = a step's gradient bytes (4 x parameters) over a
    step's transfer time, both over the steps every per-step figure
    covers;
  - every row and plot series names its communicator, a 1-rank run is run
    once and is every backend's baseline, and its scaling kind reads the
    same everywhere ("baseline", "rN base");
  - samples/s is shown to three significant figures at least;
  - a speedup marked "!" (its run and baseline waited for cores by more
    than 5 points apart: desched%) is marked in every output, and only
    those.
"""
import csv
import json
import re
import sys

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def same(what, shown, exact, decimals):
    """a figure printed with `decimals` decimals against the full value"""
    if shown is None or exact is None:
        if (shown is None) != (exact is None):
            fail("%s: shown %r, the JSON has %r" % (what, shown, exact))
        return
    if abs(shown - exact) > 0.5 * 10 ** -decimals + 1e-9 * abs(exact):
        fail("%s: shown %r, the JSON has %r (%d decimals)" % (what, shown, exact, decimals))


def near(what, got, want, rel):
    if got is None or want is None or abs(got - want) > rel * abs(want):
        fail("%s: %r, expected %r" % (what, got, want))


def num(s):
    s = s.strip().rstrip("!").rstrip("x")
    return None if s in ("n/a", "") else float(s)


def decimals_of(s):
    s = s.strip().rstrip("!").rstrip("x")
    return len(s.split(".")[1]) if "." in s else 0


# ---- the outputs, parsed ----
prefix, plots = sys.argv[1], sys.argv[2]
runs = json.load(open(prefix + ".json"))["runs"]
csv_rows = {int(r["run"]): r for r in csv.DictReader(open(prefix + ".csv")) if r["rank"] == "all"}


def md_rows(path):
    """every row of the run tables: run -> list of {column: cell} (a
    baseline can sit in more than one table)"""
    rows, head = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("| run | model |"):
            head = [c.strip() for c in line.strip("|").split("|")]
        elif head and line.startswith("|---"):
            continue
        elif head and line.startswith("| "):
            c = dict(zip(head, [v.strip() for v in line.strip("|").split("|")]))
            rows.setdefault(int(c["run"]), []).append(c)
        else:
            head = None
    return rows


# text: the columns up to vs hold no blanks but vs itself ("r1 weak"), and
# sent/rank is "16.1 MB": cut by position up to there
TEXT_COLS = ["run", "model", "dataset", "strategy", "comm", "prec", "ranks", "b/rank", "global", "steps", "wall s",
             "ms/step", "p50", "p90", "samples/s", "speedup", "eff%"]
TEXT_AFTER_VS = ["compute%", "comm%", "coll%", "data%", "idle%", "overlap%", "desched%"]
TEXT_AFTER_SENT = ["busbw", "algbw", "xfer/step", "sync/step"]


def text_rows(path):
    rows, inside = {}, False
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("run model "):
            inside = True
            continue
        if not inside or not re.match(r" *[0-9]+ ", line):
            inside = False
            continue
        f = line.split()
        c = dict(zip(TEXT_COLS, f))
        k = len(TEXT_COLS)
        c["vs"] = f[k] if f[k] == "n/a" else f[k] + " " + f[k + 1]
        k += 1 if f[k] == "n/a" else 2
        for name in TEXT_AFTER_VS:
            c[name] = f[k]
            k += 1
        k += 1 if f[k] == "n/a" else 2  # sent/rank
        for name in TEXT_AFTER_SENT:
            c[name] = f[k]
            k += 1
        rows.setdefault(int(c["run"]), []).append(c)
    return rows


md = md_rows(prefix + ".md")
text = text_rows(prefix + ".txt")
MD_NAMES = {"b/rank": "batch/rank", "eff%": "eff %", "compute%": "compute %", "comm%": "comm %", "coll%": "coll %",
            "data%": "data %", "idle%": "idle %", "busbw": "busbw GB/s", "algbw": "algbw GB/s",
            "xfer/step": "xfer ms/step", "sync/step": "sync ms/step", "prec": "precision"}
# (text column, JSON key, CSV column, decimals as printed)
FIGURES = [("ranks", "ranks", "ranks", 0), ("b/rank", "batch_size", "batch_size", 0),
           ("global", "global_batch", "global_batch", 0), ("steps", "steps", "steps", 0),
           ("ms/step", "ms_per_step", "ms_per_step", 3), ("p50", "ms_p50", "ms_p50", 3),
           ("p90", "ms_p90", "ms_p90", 3), ("speedup", "speedup", "speedup", 2),
           ("eff%", "efficiency_pct", "efficiency_pct", 0), ("compute%", "compute_pct", "compute_pct", 1),
           ("comm%", "comm_pct", "comm_pct", 1), ("coll%", "coll_pct", "coll_pct", 1),
           ("data%", "data_pct", "data_pct", 1), ("idle%", "idle_pct", "idle_pct", 1),
           ("busbw", "busbw_gbps", "busbw_gbps", 2), ("algbw", "algbw_gbps", "algbw_gbps", 2),
           ("xfer/step", "transfer_ms_per_step", "transfer_ms_per_step", 3),
           ("sync/step", "sync_ms_per_step", "sync_ms_per_step", 3)]

if len(csv_rows) != len(runs):
    fail("the CSV has %d runs, the JSON %d" % (len(csv_rows), len(runs)))
for name, rows in (("text", text), ("markdown", md)):
    if sorted(rows) != list(range(len(runs))):
        fail("%s: runs %s in its tables, the JSON has %d" % (name, sorted(rows), len(runs)))

# ---- the same figure in every output ----
for i, r in enumerate(runs):
    comm = "none" if r["ranks"] == 1 else r["backend"]
    for fmt, rows in (("text", text.get(i, [])), ("markdown", md.get(i, []))):
        for c in rows:
            get = (lambda k: c[k]) if fmt == "text" else (lambda k: c[MD_NAMES.get(k, k)])
            for col, key, _, dec in FIGURES:
                same("%s run %d %s" % (fmt, i, col), num(get(col)), r[key], dec)
            if get("comm") != comm:
                fail("%s run %d: comm %r, the JSON's backend %r" % (fmt, i, get("comm"), comm))
            sps = get("samples/s")
            same("%s run %d samples/s" % (fmt, i), num(sps), r["samples_per_s"], decimals_of(sps))
            digits = len(sps.replace(".", "").lstrip("0"))
            if digits < 3:
                fail("%s run %d: samples/s %s has fewer than three significant figures" % (fmt, i, sps))
            if get("speedup").endswith("!") != bool(r["speedup_marked"]):
                fail("%s run %d: speedup %s, the JSON's speedup_marked %r" % (fmt, i, get("speedup"),
                                                                               r["speedup_marked"]))
            vs = get("vs").split()
            want = ("r%d" % r["speedup_baseline_run"],
                    "base" if r["speedup_baseline_run"] == i else r["scaling"])
            if tuple(vs) != want:
                fail("%s run %d: vs %r, the JSON says run %d, %s" % (fmt, i, get("vs"), r["speedup_baseline_run"],
                                                                     r["scaling"]))
    c = csv_rows.get(i)
    if c is None:
        continue
    for _, key, col, _ in FIGURES + [(None, "samples_per_s", "samples_per_s", 1)]:
        same("csv run %d %s" % (i, col), num(c[col]), r[key], decimals_of(c[col]))
    if c["speedup_marked"] != ("1" if r["speedup_marked"] else "0"):
        fail("csv run %d: speedup_marked %r, the JSON %r" % (i, c["speedup_marked"], r["speedup_marked"]))
    if c["scaling"] != r["scaling"] or c["backend"] != comm:
        fail("csv run %d: scaling %r backend %r, the JSON %r %r" % (i, c["scaling"], c["backend"], r["scaling"], comm))

# ---- arithmetic over the figures ----
for i, r in enumerate(runs):
    b = runs[r["speedup_baseline_run"]]
    gap = r["ranks"] > 1 and r["desched_pct"] is not None and b["desched_pct"] is not None and \
        abs(r["desched_pct"] - b["desched_pct"]) > 5
    if bool(r["speedup_marked"]) != gap:
        fail("run %d: desched %r against run %d's %r, speedup_marked %r" % (i, r["desched_pct"],
                                                                             r["speedup_baseline_run"],
                                                                             b["desched_pct"], r["speedup_marked"]))
    near("run %d: samples/s x p50 = global batch" % i, r["samples_per_s"] * r["ms_p50"] / 1e3, r["global_batch"], 1e-9)
    b = runs[r["speedup_baseline_run"]]
    near("run %d: speedup = samples/s over run %d's" % (i, r["speedup_baseline_run"]), r["speedup"],
         r["samples_per_s"] / b["samples_per_s"], 1e-9)
    near("run %d: efficiency" % i, r["efficiency_pct"], 100 * r["speedup"] * b["ranks"] / r["ranks"], 1e-9)
    if r["ranks"] > 1:
        n = r["ranks"]
        near("run %d: busbw = algbw x 2(n-1)/n" % i, r["busbw_gbps"], r["algbw_gbps"] * 2 * (n - 1) / n, 1e-9)
        # ddp's allreduce carries every fp32 gradient once a step
        near("run %d: algbw = 4 x params bytes over a step's transfer" % i, r["algbw_gbps"],
             4 * r["params"] / (r["transfer_ms_per_step"] * 1e6), 1e-9)
    # the shown figures reproduce the shown speedup (text: samples/s to its digits)
    for c in text.get(i, []):
        bc = text[r["speedup_baseline_run"]][0]
        s1, s0 = num(c["samples/s"]), num(bc["samples/s"])
        slack = 0.005 + (s1 / s0) * (0.5 * 10 ** -decimals_of(c["samples/s"]) / s1 +
                                     0.5 * 10 ** -decimals_of(bc["samples/s"]) / s0)
        if abs(num(c["speedup"]) - s1 / s0) > slack:
            fail("text run %d: speedup %s, but samples/s %s over %s is %.4f" % (i, c["speedup"], c["samples/s"],
                                                                               bc["samples/s"], s1 / s0))

# ---- a 1-rank run once, every backend's baseline ----
ones = [(r["strategy"], r["global_batch"]) for r in runs if r["ranks"] == 1]
if len(ones) != len(set(ones)):
    fail("a 1-rank run is repeated: %r" % ones)
backends = {r["backend"] for r in runs if r["ranks"] > 1}
if len(backends) < 2:
    fail("the sweep should have two backends' rows: %r" % backends)
for i, r in enumerate(runs):
    if r["ranks"] > 1 and runs[r["speedup_baseline_run"]]["ranks"] != 1:
        fail("run %d (%s) compares with run %d, not a 1-rank run" % (i, r["backend"], r["speedup_baseline_run"]))
    if r["ranks"] == 1 and r["scaling"] != "baseline":
        fail("run %d: a 1-rank run's scaling is %r, not baseline" % (i, r["scaling"]))

# ---- the speedup plot: the JSON's speedups, a series per communicator ----
svg = open(plots + "/speedup.svg").read()
points = 0
for g in re.finditer(r'<g class="series" data-series="([^"]*)">(.*?)</g>', svg, re.S):
    series = g.group(1)
    for m in re.finditer(r'data-run="(\d+)" data-x="(\d+)" data-y="([^"]+)"', g.group(2)):
        i, x, y = int(m.group(1)), int(m.group(2)), float(m.group(3))
        r = runs[i]
        points += 1
        near("plot: run %d's speedup" % i, y, r["speedup"], 1e-12)
        if x != r["ranks"]:
            fail("plot: run %d at %d ranks, the JSON says %d" % (i, x, r["ranks"]))
        if r["ranks"] > 1 and " over %s " % r["backend"] not in series:
            fail("plot: run %d (%s) drawn in series %r" % (i, r["backend"], series))
if points < len([r for r in runs if r["ranks"] > 1]):
    fail("plot: %d points for %d multi-rank runs" % (points, len([r for r in runs if r["ranks"] > 1])))

print("%d runs, %d plot points: %s" % (len(runs), points, "FAILED" if FAILS else "consistent"))
sys.exit(1 if FAILS else 0)
