"""An independent count of --predict for a replayed PyTorch job (docs/
predict.md, "A replayed job"), from the trace files and a link given as
--link gives it, to check ddptop's runs[].job_prediction against. It
follows the documented model, not ddptop's code, and reads each rank's
split (compute, exposed comm) with pytorch_trace_oracle.py's own reading:

- a rank's steps: its ProfilerStep#N windows, its lowest N (over all its
  files) left out; ms/step of the run: the largest over the ranks of the
  mean of a rank's steps;
- a collective: a backend's record (gloo:, nccl:, mpi:, ucc:) in a step
  window that holds its start; in a step, a rank's collectives numbered by
  start; across ranks, (step, number) is one collective, t_min its least
  duration over the ranks;
- per step, comm = the mean over ranks of their collectives' durations /
  their steps; exposed = the mean over ranks of the oracle's comm / their
  steps; hidden = max(0, comm - exposed);
- the link at K ranks, allreduce: alpha = 2(K-1) LAT, beta = 2(K-1)/(K BW)
  (half of each for other collectives); S = max(0, (t_min - alpha_W) /
  beta_W) at the measured W ranks;
- comm_K = sum of alpha_K + beta_K S / the mean steps; exposed_K =
  max(0, comm_K - hidden); step_K = step - exposed + exposed_K.

Usage: whatif_count.py DIR BW_BYTES_PER_S LAT_S K[,K..] [--check DDPTOP_JSON] [--rtol 1e-3]
Prints {K: step_K}; with --check, compares with ddptop's rows and the
measured figures (step, comm, exposed) and exits 1 when one differs by
more than rtol (relative) plus 1 ns.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_trace_oracle as oracle  # noqa: E402

BACKENDS = ("gloo:", "nccl:", "mpi:", "ucc:")


def link(bw, lat, k, allreduce):
    a, b = 2.0 * (k - 1) * lat, 2.0 * (k - 1) / (k * bw)
    return (a, b) if allreduce else (a / 2, b / 2)


def main():
    args = sys.argv[1:]
    check, rtol = None, 1e-3
    if "--check" in args:
        i = args.index("--check")
        check = args[i + 1]
        del args[i:i + 2]
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    folder, bw, lat = args[0], float(args[1]), float(args[2])
    ks = [int(k) for k in args[3].split(",")]
    files = []
    for path in oracle.files_of([folder]):
        events, dist = oracle.load(path)
        files.append((oracle.rank_of(path, dist), events))
    numbers = {}
    for rk, events in files:
        numbers.setdefault(rk, []).extend(oracle.step_numbers(events))
    ranks = {}
    colls = {}  # (step, seq) -> [(rank, dur_s, allreduce)]
    for rk, events in files:
        first = min(numbers[rk]) if len(numbers[rk]) >= 2 else None
        r = ranks.setdefault(rk, {"steps": 0, "step_s": [], "work_s": 0.0, "comm_ns": 0})
        c = oracle.cycle(events, first if first in oracle.step_numbers(events) else None)
        r["comm_ns"] += c[oracle.COMM]
        steps = []
        for e in events:
            if isinstance(e, dict) and e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                n = int(e["name"][len("ProfilerStep#"):])
                if n != first:
                    steps.append((n, e["ts"], e["ts"] + e["dur"]))
                    r["step_s"].append(e["dur"] / 1e6)
        r["steps"] += len(steps)
        per_step = {}
        for e in events:
            name = e.get("name", "") if isinstance(e, dict) else ""
            if e.get("ph") != "X" or not name.startswith(BACKENDS):
                continue
            for n, t0, t1 in steps:
                if t0 <= e["ts"] < t1:
                    low = name.lower().replace("_", "")
                    per_step.setdefault(n, []).append((e["ts"], e["dur"] / 1e6, "allreduce" in low))
                    r["work_s"] += e["dur"] / 1e6
        for n, lst in per_step.items():
            for seq, (_, dur, ar) in enumerate(sorted(lst)):
                colls.setdefault((n, seq), []).append((rk, dur, ar))
    W = len(ranks)
    step = max(sum(r["step_s"]) / len(r["step_s"]) for r in ranks.values())
    nsteps = sum(r["steps"] for r in ranks.values()) / W
    comm = sum(r["work_s"] / r["steps"] for r in ranks.values()) / W
    exposed = sum(r["comm_ns"] / 1e9 / r["steps"] for r in ranks.values()) / W
    hidden = max(0.0, comm - exposed)
    sizes = []
    for key, lst in colls.items():
        tmin = min(d for _, d, _ in lst)
        a, b = link(bw, lat, W, lst[0][2])
        sizes.append((max(0.0, (tmin - a) / b), lst[0][2]))
    out = {"step_ms": step * 1e3, "comm_ms": comm * 1e3, "exposed_comm_ms": exposed * 1e3, "rows": {}}
    for k in ks:
        comm_k = sum(link(bw, lat, k, ar)[0] + link(bw, lat, k, ar)[1] * s for s, ar in sizes) / nsteps
        exp_k = max(0.0, comm_k - hidden)
        out["rows"][k] = {"step_ms": (step - exposed + exp_k) * 1e3, "comm_ms": comm_k * 1e3,
                          "exposed_comm_ms": exp_k * 1e3}
    print(json.dumps(out, indent=1))
    if not check:
        return 0
    with open(check) as f:
        got = json.load(f)["runs"][0]["job_prediction"]
    bad = 0

    def cmp(what, g, w):
        nonlocal bad
        okay = g is not None and abs(g - w) <= rtol * abs(w) + 1e-6
        print("%-28s ddptop %12s  count %12.6f  %s" % (what, g, w, "ok" if okay else "DIFFERS"))
        bad |= not okay

    for key in ("step_ms", "comm_ms", "exposed_comm_ms"):
        cmp("measured " + key, got.get(key), out[key])
    rows = {r["ranks"]: r for r in got.get("rows", [])}
    for k in ks:
        for key in ("step_ms", "comm_ms", "exposed_comm_ms"):
            cmp("%d ranks %s" % (k, key), rows.get(k, {}).get(key), out["rows"][k][key])
    return bad


if __name__ == "__main__":
    sys.exit(main())
