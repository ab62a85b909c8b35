#!/usr/bin/python3
"""kernel_top.py - where a GPU run's device time goes: the kernels (and
copies) of a ddptop trace (--trace, with CUPTI on), summed by name, with
their share of all device time, calls, and time per traced step.

  bench/kernel_top.py TRACE.json[.gz] [N] [SKIP]
      the N largest (default 25), leaving out the first SKIP steps (default
      1: step 0 is where cuDNN times its algorithms, cudnnFind, and where
      every lazy allocation happens)

Names are cut at 70 characters; a rank's records all count (with several
ranks on one GPU, the shares are of their sum).
"""
import collections
import gzip
import json
import sys


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
    skip = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    dur = collections.Counter()
    calls = collections.Counter()
    phase = {}
    steps = set()
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        args = e.get("args", {})
        if int(args.get("step", 0)) < skip:
            continue
        name = e.get("name", "?")[:70]
        dur[name] += float(e.get("dur", 0))
        calls[name] += 1
        phase.setdefault(name, collections.Counter())[args.get("phase", "?")] += 1
        steps.add((e.get("pid"), args.get("step")))
    total = sum(dur.values())
    if not total:
        raise SystemExit(f"{path}: no device records (was CUPTI on? --device cuda, without --no-cupti)")
    nsteps = max(1, len(steps))
    print(f"{path}: {total / 1e3:.1f} ms of device time over {nsteps} traced rank-steps (from step {skip}), "
          f"{total / 1e3 / nsteps:.2f} ms a step")
    print(f"{'share':>6} {'ms/step':>8} {'calls/step':>10}  {'phase':<8} name")
    for name, d in dur.most_common(top):
        print(f"{100 * d / total:5.1f}% {d / 1e3 / nsteps:8.3f} {calls[name] / nsteps:10.1f}  "
              f"{phase[name].most_common(1)[0][0]:<8} {name}")
    rest = total - sum(d for _, d in dur.most_common(top))
    if rest > 0:
        print(f"{100 * rest / total:5.1f}% {rest / 1e3 / nsteps:8.3f} {'':>10}  {'':<8} ({len(dur) - top} more)")


if __name__ == "__main__":
    main()
