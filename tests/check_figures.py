#!/usr/bin/python3
"""check_figures.py - holds ddptop's --plot figures to its JSON report of
the same run, reading both in Python (xml.etree, json):

  - every file parses as XML, is an <svg>, and its frame (rect.frame) gives
    the plot area and the data at its edges (data-x0 .. data-y1);
  - the set of files: speedup.svg when some run has a speedup against
    another run, loss.svg when some run has a loss curve, breakdown.svg
    when some run has a time split, timeline-runN.svg for each run with a
    stage_timeline, and nothing else;
  - speedup.svg: a point per run compared against another run and per
    such baseline, data-x = its ranks and data-y = its speedup exactly, and
    drawn where the frame puts those values (cx, cy within 0.01 px); one
    line per model, way of training and kind of scaling; the ideal line
    from (1, 1) to (R, R), R the most ranks;
  - loss.svg: a line per run with a loss curve: its steps and losses the
    report's, the last loss the report's train_loss, x in epochs (step /
    steps_per_epoch) when every run's epoch length is known, else steps,
    each vertex where the frame puts it; a level line at --loss-threshold;
  - breakdown.svg: a bar per run of four parts, compute, comm, data and
    idle from the bottom, each data-pct the report's percentage exactly and
    its height that share of the frame, stacked without gaps;
  - timeline-runN.svg: the spans of the report's stage_timeline, each at
    its stage's band and between its start and end on the x axis.

With --trace FILE (the Chrome trace of the same run), the report's series
themselves are held to a second computation over the trace: the loss
curve to the running mean of the last 50 steps' mean loss over the ranks,
and the stage timeline to the trace's main-lane spans of that step.

Usage: check_figures.py DIR REPORT.json [--trace FILE] [--runs K] [--stages]
--stages: every model or pipeline run must have its stage timeline.
Prints a one-line summary; exits 1 with the first mismatch.
"""
import argparse
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
TOL_PX = 0.01  # coordinates are printed to 0.01 px (spans to 0.001)


def same(a, b):
    """A figure as the SVG and the JSON print it: the SVG to 17 digits, the
    JSON to 15 where that reads back within a double's epsilon (cJSON)."""
    return a == b or abs(a - b) <= 4e-15 * max(abs(a), abs(b))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def load_svg(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("%s is not XML: %s" % (path, e))
    if root.tag != NS + "svg":
        fail("%s: the root is %s, not svg" % (path, root.tag))
    frames = root.findall(".//%srect[@class='frame']" % NS)
    if len(frames) != 1:
        fail("%s: %d frames" % (path, len(frames)))
    f = frames[0]
    fr = {k: float(f.get(k)) for k in ("x", "y", "width", "height")}
    for k in ("x0", "x1", "y0", "y1"):
        fr[k] = float(f.get("data-" + k))
    fr["xunit"] = f.get("data-xunit")
    return root, fr


def px(fr, x):
    return fr["x"] + (x - fr["x0"]) / (fr["x1"] - fr["x0"]) * fr["width"]


def py(fr, y):
    return fr["y"] + fr["height"] - (y - fr["y0"]) / (fr["y1"] - fr["y0"]) * fr["height"]


def near(a, b, tol, what):
    if abs(a - b) > tol:
        fail("%s: %r, expected %r" % (what, a, b))


def series_key(r):
    mode = r["strategy"]
    return (r["model"], r["parallel"], mode, r.get("micro_batches"), r.get("schedule"), r["scaling"])


def check_speedup(path, runs):
    root, fr = load_svg(path)
    compared = [r for r in runs if r["speedup"] is not None and r["speedup_baseline_run"] != r["run"]]
    want = set(r["run"] for r in compared) | set(r["speedup_baseline_run"] for r in compared)
    pts = root.findall(".//%scircle[@class='point']" % NS)
    got = set()
    for c in pts:
        i = int(c.get("data-run"))
        r = runs[i]
        got.add(i)
        if int(c.get("data-x")) != r["ranks"]:
            fail("speedup: run %d at %s ranks, the report has %d" % (i, c.get("data-x"), r["ranks"]))
        if not same(float(c.get("data-y")), r["speedup"]):
            fail("speedup: run %d at %s, the report has %r" % (i, c.get("data-y"), r["speedup"]))
        near(float(c.get("cx")), px(fr, r["ranks"]), TOL_PX, "speedup: run %d's cx" % i)
        near(float(c.get("cy")), py(fr, r["speedup"]), TOL_PX, "speedup: run %d's cy" % i)
    if got != want:
        fail("speedup: points of runs %s, expected %s" % (sorted(got), sorted(want)))
    # one line per kind: the compared runs of a series share model, way and scaling
    for g in root.findall(".//%sg[@class='series']" % NS):
        runs_in = [int(c.get("data-run")) for c in g.findall("%scircle" % NS)]
        keys = set(series_key(runs[i]) for i in runs_in if i in set(r["run"] for r in compared))
        if len(keys) != 1:
            fail("speedup: series %r mixes %s" % (g.get("data-series"), keys))
        line = g.find("%spolyline" % NS)
        xs = [float(p.split(",")[0]) for p in line.get("points").split()]
        if xs != sorted(xs) or len(xs) != len(runs_in):
            fail("speedup: series %r's line is not its points by ranks" % g.get("data-series"))
    maxw = max([2] + [runs[i]["ranks"] for i in want])
    ideal = root.find(".//%sline[@class='ideal']" % NS)
    near(float(ideal.get("x1")), px(fr, 1), TOL_PX, "ideal x1")
    near(float(ideal.get("y1")), py(fr, 1), TOL_PX, "ideal y1")
    near(float(ideal.get("x2")), px(fr, maxw), TOL_PX, "ideal x2")
    near(float(ideal.get("y2")), py(fr, maxw), TOL_PX, "ideal y2")
    return len(pts)


def check_loss(path, runs):
    root, fr = load_svg(path)
    with_curve = [r for r in runs if r["loss_curve"]["step"]]
    epochs = all(r["steps_per_epoch"] for r in with_curve)
    if fr["xunit"] != ("epoch" if epochs else "step"):
        fail("loss: x in %s, expected %s" % (fr["xunit"], "epoch" if epochs else "step"))
    lines = root.findall(".//%spolyline[@class='loss']" % NS)
    if sorted(int(l.get("data-run")) for l in lines) != [r["run"] for r in with_curve]:
        fail("loss: lines of runs %s, expected %s" % ([l.get("data-run") for l in lines],
                                                       [r["run"] for r in with_curve]))
    # --loss-threshold: a level line at each threshold within the axis
    want_th = sorted(set(r["loss_threshold"] for r in with_curve
                         if r["loss_threshold"] is not None and r["loss_threshold"] <= fr["y1"]))
    th = root.findall(".//%sline[@class='threshold']" % NS)
    if sorted(float(t.get("data-y")) for t in th) != want_th:
        fail("loss: threshold lines at %s, expected %s" % ([t.get("data-y") for t in th], want_th))
    for t in th:
        near(float(t.get("y1")), py(fr, float(t.get("data-y"))), TOL_PX, "loss: the threshold's level")
    n = 0
    for l in lines:
        r = runs[int(l.get("data-run"))]
        curve = [(s, v) for s, v in zip(r["loss_curve"]["step"], r["loss_curve"]["loss"])
                 if v is not None and math.isfinite(v)]
        steps = [int(s) for s in l.get("data-step").split()]
        ys = [float(v) for v in l.get("data-y").split()]
        if steps != [s for s, _ in curve] or len(ys) != len(curve) or not all(
                same(y, v) for y, (_, v) in zip(ys, curve)):
            fail("loss: run %d's points are not the report's loss_curve" % r["run"])
        if r["train_loss"] is not None and curve and not same(curve[-1][1], r["train_loss"]):
            fail("loss: run %d ends at %r, its train_loss is %r" % (r["run"], curve[-1][1], r["train_loss"]))
        spe = int(l.get("data-steps-per-epoch"))
        if spe != (r["steps_per_epoch"] if epochs else 0):
            fail("loss: run %d's steps per epoch %d, the report's %r" % (r["run"], spe, r["steps_per_epoch"]))
        pts = [tuple(map(float, p.split(","))) for p in l.get("points").split()]
        if len(pts) != len(curve):
            fail("loss: run %d has %d vertices for %d points" % (r["run"], len(pts), len(curve)))
        for (x, y), (s, v) in zip(pts, curve):
            near(x, px(fr, s / spe if epochs else s), TOL_PX, "loss: run %d step %d's x" % (r["run"], s))
            near(y, py(fr, v), TOL_PX, "loss: run %d step %d's y" % (r["run"], s))
            n += 1
    return n


PARTS = ["compute", "comm", "data", "idle"]


def check_breakdown(path, runs):
    root, fr = load_svg(path)
    bars = {}
    for rect in root.findall(".//%srect[@class='part']" % NS):
        bars.setdefault(int(rect.get("data-run")), []).append(rect)
    want = [r["run"] for r in runs if sum(r[p + "_pct"] or 0 for p in PARTS) > 0]
    if sorted(bars) != want:
        fail("breakdown: bars of runs %s, expected %s" % (sorted(bars), want))
    for i, rects in bars.items():
        if [x.get("data-part") for x in rects] != PARTS:
            fail("breakdown: run %d's parts %s" % (i, [x.get("data-part") for x in rects]))
        bottom = fr["y"] + fr["height"]
        for rect in rects:
            part = rect.get("data-part")
            v = runs[i][part + "_pct"]
            if not same(float(rect.get("data-pct")), v):
                fail("breakdown: run %d's %s is %s, the report has %r" % (i, part, rect.get("data-pct"), v))
            h, y = float(rect.get("height")), float(rect.get("y"))
            near(h, v / 100 * fr["height"], TOL_PX, "breakdown: run %d's %s height" % (i, part))
            # (y, height and the part below's y each rounded to 0.01 px)
            near(y + h, bottom, 1.5 * TOL_PX + 1e-9, "breakdown: run %d's %s sits on the part below" % (i, part))
            bottom = y
    return sum(len(v) for v in bars.values())


CATS = {"data", "forward", "backward", "optimizer", "comm", "wait"}


def check_timeline(path, r):
    root, fr = load_svg(path)
    tl = r["stage_timeline"]
    want = sorted(zip(tl["stage"], tl["cat"], tl["t0_ms"], tl["t1_ms"]))
    stages = max(tl["stage"]) + 1
    band = fr["height"] / stages
    got = []
    for rect in root.findall(".//%srect[@class='span']" % NS):
        s, cat = int(rect.get("data-stage")), rect.get("data-cat")
        t0, t1 = float(rect.get("data-t0")), float(rect.get("data-t1"))
        got.append((s, cat, t0, t1))
        x, w, y, h = (float(rect.get(k)) for k in ("x", "width", "y", "height"))
        near(x, px(fr, t0), 0.002, "timeline: stage %d %s start" % (s, cat))
        near(x + w, px(fr, t1), 0.004, "timeline: stage %d %s end" % (s, cat))
        if not (fr["y"] + band * s - TOL_PX <= y and y + h <= fr["y"] + band * (s + 1) + TOL_PX):
            fail("timeline: a span of stage %d is drawn outside its band" % s)
    got.sort()
    if len(got) != len(want) or not all(g[:2] == w[:2] and same(g[2], w[2]) and same(g[3], w[3])
                                        for g, w in zip(got, want)):
        fail("timeline: run %d's spans are not the report's stage_timeline" % r["run"])
    return len(got)


def trace_oracle(path, runs):
    """The loss curve and the stage timeline again, from the trace."""
    doc = json.load(open(path))
    steps = {}  # step -> {pid: loss}
    spans = {}  # step -> [(pid, cat, ts_us, te_us)]
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        if e.get("cat") == "step":
            steps.setdefault(a["step"], {})[e["pid"]] = a["loss"]
        elif e.get("tid") == 0 and e.get("cat") in CATS and "step" in a:
            spans.setdefault(a["step"], []).append((e["pid"], e["cat"], e["ts"], e["ts"] + e["dur"]))
    if len(runs) != 1:
        fail("--trace: the report must hold the one run the trace has")
    r = runs[0]
    world = r["ranks"]
    means, running = [], []
    for s in sorted(steps):
        if len(steps[s]) != world:
            break
        means.append(sum(steps[s].values()) / world)
        window = means[-50:]
        running.append(sum(window) / len(window))
    for s, v in zip(r["loss_curve"]["step"], r["loss_curve"]["loss"]):
        near(v, running[s - 1], 1e-5 * max(1.0, abs(running[s - 1])), "trace: the running loss at step %d" % s)
    tl = r.get("stage_timeline")
    if tl:
        if tl["step"] != r["steps"] - 1:
            fail("trace: the stage timeline is of step %d, not the last (%d)" % (tl["step"], r["steps"] - 1))
        stage_ranks = world // (r.get("dp") or 1)
        mine = [x for x in spans.get(tl["step"], []) if x[0] < stage_ranks]
        t0 = min(x[2] for x in mine)
        want = sorted((p, c, round((a - t0) * 1000), round((b - t0) * 1000)) for p, c, a, b in mine)
        got = sorted((s, c, round(a * 1e6), round(b * 1e6))
                     for s, c, a, b in zip(tl["stage"], tl["cat"], tl["t0_ms"], tl["t1_ms"]))
        if got != want:
            fail("trace: the stage timeline of step %d is not the trace's main-lane spans (%d against %d)" %
                 (tl["step"], len(got), len(want)))
    return len(r["loss_curve"]["step"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("report")
    ap.add_argument("--trace")
    ap.add_argument("--runs", type=int, help="the runs the report must hold")
    ap.add_argument("--stages", action="store_true", help="every model or pipeline run has a stage timeline")
    a = ap.parse_args()
    runs = json.load(open(a.report))["runs"]
    if a.runs is not None and len(runs) != a.runs:
        fail("%d runs in the report, expected %d" % (len(runs), a.runs))
    if a.stages:
        for r in runs:
            if r["parallel"] != "data" and not r.get("stage_timeline"):
                fail("run %d (%s parallelism) has no stage_timeline" % (r["run"], r["parallel"]))
    want = set()
    if any(r["speedup"] is not None and r["speedup_baseline_run"] != r["run"] for r in runs):
        want.add("speedup.svg")
    if any(r["loss_curve"]["step"] for r in runs):
        want.add("loss.svg")
    if any(sum(r[p + "_pct"] or 0 for p in PARTS) > 0 for r in runs):
        want.add("breakdown.svg")
    for r in runs:
        if r.get("stage_timeline"):
            want.add("timeline-run%d.svg" % r["run"])
    have = set(os.listdir(a.dir))
    if have != want:
        fail("files %s, expected %s" % (sorted(have), sorted(want)))
    counts = []
    if "speedup.svg" in want:
        counts.append("%d speedup points" % check_speedup(os.path.join(a.dir, "speedup.svg"), runs))
    if "loss.svg" in want:
        counts.append("%d loss points" % check_loss(os.path.join(a.dir, "loss.svg"), runs))
    if "breakdown.svg" in want:
        counts.append("%d bar parts" % check_breakdown(os.path.join(a.dir, "breakdown.svg"), runs))
    for r in runs:
        if r.get("stage_timeline"):
            counts.append("%d spans of run %d" % (check_timeline(
                os.path.join(a.dir, "timeline-run%d.svg" % r["run"]), r), r["run"]))
    if a.trace:
        counts.append("%d loss points held to the trace" % trace_oracle(a.trace, runs))
    print("ok: %s" % ", ".join(counts))


if __name__ == "__main__":
    main()
