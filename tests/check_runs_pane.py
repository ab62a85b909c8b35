#!/usr/bin/env python3
"""check_runs_pane.py - the Runs pane, as tmux captured it, against the
report JSON the same session wrote at q.

    check_runs_pane.py PANE.txt REPORT.json

Every finished run's row (state "done") must show the JSON's figures to
the precision it prints them with: ranks, batch, steps, the median step
(p50 ms), samples/s (three significant figures, with k or M), speedup,
eff% ("!" where the JSON marks the speedup), the run it is against and
the scaling kind ("rN base", "rN weak", "rN strong"), comp%, comm% and
idle%. And the arithmetic between them: samples/s x p50 ms = the global
batch, speedup = samples/s over the baseline row's. Nothing here calls
ddptop's code.
"""
import json
import re
import sys

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def si(s):
    """'22.0k' -> (22000.0, significant digits shown)"""
    m = re.fullmatch(r"([0-9.]+)([kMG]?)", s)
    if not m:
        return None, 0
    mult = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    return float(m.group(1)) * mult, len(m.group(1).replace(".", "").lstrip("0"))


def same(what, shown, exact, decimals):
    if shown is None or exact is None:
        fail("%s: shown %r, the JSON has %r" % (what, shown, exact))
        return
    if abs(shown - exact) > 0.5 * 10 ** -decimals + 1e-9 * abs(exact):
        fail("%s: shown %r, the JSON has %r (%d decimals)" % (what, shown, exact, decimals))


def decimals_of(s):
    s = s.rstrip("!x")
    return len(s.split(".")[1]) if "." in s else 0


pane, report = sys.argv[1], sys.argv[2]
runs = json.load(open(report))["runs"]
head, rows = None, {}
for line in open(pane, encoding="utf-8"):
    cells = line.strip().strip("│").split()
    if cells[:2] == ["#", "strategy"]:
        head = line.strip().strip("│").replace("p50 ms", "p50_ms").replace("test acc", "test_acc").split()
        continue
    if head and cells and cells[0] == ">":
        cells = cells[1:]
    if head and cells and cells[0].isdigit() and len(cells) >= len(head):
        # "vs" is one cell of two words ("r0 base")
        at = head.index("vs")
        cells = cells[:at] + [cells[at] + " " + cells[at + 1]] + cells[at + 2:]
        rows[int(cells[0])] = dict(zip(head, cells))
if not rows:
    fail("no run rows in the captured Runs pane")
done = {i: r for i, r in rows.items() if r.get("state") == "done"}
if len(done) < 2:
    fail("fewer than two finished runs in the pane: %s" % sorted(rows))
for i, r in sorted(done.items()):
    if i >= len(runs):
        fail("run %d: in the pane, not in the JSON (%d runs)" % (i, len(runs)))
        continue
    j = runs[i]
    w = "run %d" % i
    if r["strategy"] != j["strategy"]:
        fail("%s: strategy %s, the JSON's %s" % (w, r["strategy"], j["strategy"]))
    for col, key in (("ranks", "ranks"), ("batch", "batch_size"), ("steps", "steps")):
        if int(r[col]) != j[key]:
            fail("%s: %s %s, the JSON's %s" % (w, col, r[col], j[key]))
    same(w + " p50 ms", float(r["p50_ms"]), j["ms_p50"], decimals_of(r["p50_ms"]))
    sps, digits = si(r["samples/s"])
    if digits < 3:
        fail("%s: samples/s %s has fewer than three significant figures" % (w, r["samples/s"]))
    elif abs(sps - j["samples_per_s"]) > 0.5 * 10 ** (len(str(int(j["samples_per_s"]))) - digits):
        fail("%s: samples/s %s, the JSON's %r" % (w, r["samples/s"], j["samples_per_s"]))
    # samples/s x p50 = the global batch, from the pane's own figures
    gb = j["global_batch"]
    if sps and abs(sps * float(r["p50_ms"]) / 1e3 - gb) > 0.02 * gb:
        fail("%s: samples/s %s x p50 %s ms is not the global batch %d" % (w, r["samples/s"], r["p50_ms"], gb))
    same(w + " speedup", float(r["speedup"].rstrip("x!")), j["speedup"], decimals_of(r["speedup"]))
    marked = r["eff%"].endswith("!")
    if marked != bool(j.get("speedup_marked")):
        fail("%s: eff%% %s, the JSON's speedup_marked %r" % (w, r["eff%"], j.get("speedup_marked")))
    same(w + " eff%", float(r["eff%"].rstrip("!")), j["efficiency_pct"], decimals_of(r["eff%"]))
    base, kind = r["vs"].split()
    if int(base.lstrip("r")) != j["speedup_baseline_run"]:
        fail("%s: vs %s, the JSON's baseline run %r" % (w, r["vs"], j["speedup_baseline_run"]))
    want_kind = "base" if j["scaling"] == "baseline" else j["scaling"]
    if kind != want_kind:
        fail("%s: vs %s, the JSON's scaling %r" % (w, r["vs"], j["scaling"]))
    b = int(base.lstrip("r"))
    if b in done and b != i:
        bs, _ = si(done[b]["samples/s"])
        want = sps / bs
        # both rounded to 3 figures: 0.1% each
        if abs(float(r["speedup"].rstrip("x!")) - want) > 0.005 + 0.002 * want:
            fail("%s: speedup %s is not its samples/s over run %d's (%.3f)" % (w, r["speedup"], b, want))
    for col, key in (("comp%", "compute_pct"), ("comm%", "comm_pct"), ("idle%", "idle_pct")):
        same("%s %s" % (w, col), float(r[col]), j[key], decimals_of(r[col]))
if FAILS:
    sys.exit(1)
print("%d finished runs in the Runs pane agree with the report JSON" % len(done))
