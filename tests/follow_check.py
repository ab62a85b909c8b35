"""Checks what `ddptop --batch --follow DIR` said on stderr against an
independent reading of the same files (pytorch_trace_oracle.py --cycles).

    follow_check.py cycles STDERR ORACLE_JSON [--tol POINTS]
        every file the oracle read has exactly one cycle line in STDERR
        ("rank R cycle C (steps A-B, FILE): ... compute X%, comm Y%, data
        Z%, idle W%; own work O ms/step"): its rank, its number among its
        rank's files (in name order: tensorboard's names carry the time),
        its steps, and its compute%, comm% and idle% within --tol points
        (default 1) and its own work within 1% of the oracle's; no other
        cycle line.
    follow_check.py straggler STDERR ORACLE_JSON [--expect R]
        the stragglers ddptop named ("cycle K: rank R is the straggler")
        are those the documented rule gives over the oracle's own work per
        step: a rank whose own time is at least 1.2 times the median of the
        other ranks' in that cycle (cycles within 2% of the threshold are
        not judged); with --expect R, rank R is the straggler of every
        cycle and no other rank of any.

STDERR lines may start with a time stamp (ns) and a space, as the shell
tests write them. Exit 1 with what differs.
"""
import json
import re
import statistics
import sys

CYCLE = re.compile(r"--follow: rank (\d+) cycle (\d+) \((?:steps (\d+)-(\d+)|no ProfilerStep), ([^)]+)\): "
                   r"([0-9.]+|n/a) ms/step, compute ([0-9.]+)%, comm ([0-9.]+)%, data ([0-9.]+)%, idle ([0-9.]+)%; "
                   r"own work ([0-9.]+) ms/step")
STRAGGLER = re.compile(r"--follow: cycle (\d+): rank (\d+) is the straggler")
RATIO = 1.2


def cycle_numbers(oracle):
    """{file: its number among its rank's files, from 1}."""
    by_rank = {}
    for name in sorted(oracle):
        by_rank.setdefault(oracle[name]["rank"], []).append(name)
    return {name: i + 1 for names in by_rank.values() for i, name in enumerate(names)}


def check_cycles(err_lines, oracle, tol):
    bad = []
    seen = {}
    for line in err_lines:
        m = CYCLE.search(line)
        if not m:
            continue
        f = m.group(5)
        if f in seen:
            bad.append("%s: read twice" % f)
        seen[f] = m
    numbers = cycle_numbers(oracle)
    for f, want in sorted(oracle.items()):
        m = seen.get(f)
        if not m:
            bad.append("%s: no cycle line" % f)
            continue
        rank, num = int(m.group(1)), int(m.group(2))
        if rank != want["rank"] or num != numbers[f]:
            bad.append("%s: rank %d cycle %d, the oracle says rank %d cycle %d" % (f, rank, num, want["rank"],
                                                                                 numbers[f]))
        steps = want["step_numbers"]
        if steps and (m.group(3) is None or (int(m.group(3)), int(m.group(4))) != (steps[0], steps[-1])):
            bad.append("%s: steps %s-%s, the oracle %d-%d" % (f, m.group(3), m.group(4), steps[0], steps[-1]))
        for k, g in (("compute_pct", 7), ("comm_pct", 8), ("idle_pct", 10)):
            got = float(m.group(g))
            print("%-40s %-11s ddptop %6.1f  oracle %6.2f" % (f, k, got, want[k]))
            if abs(got - want[k]) > tol:
                bad.append("%s: %s %.1f, the oracle %.2f" % (f, k, got, want[k]))
        own = float(m.group(11))
        if abs(own - want["own_ms"]) > 0.01 * want["own_ms"] + 0.006:
            bad.append("%s: own work %.2f ms/step, the oracle %.3f" % (f, own, want["own_ms"]))
    for f in seen:
        if f not in oracle:
            bad.append("%s: a cycle line for a file the oracle did not read" % f)
    return bad


def check_straggler(err_lines, oracle, expect):
    named = set()
    for line in err_lines:
        m = STRAGGLER.search(line)
        if m:
            named.add((int(m.group(1)), int(m.group(2))))
    numbers = cycle_numbers(oracle)
    cycles = {}
    for f, c in oracle.items():
        cycles.setdefault(numbers[f], {})[c["rank"]] = c["own_ms"]
    bad = []
    for k, own in sorted(cycles.items()):
        if len(own) < 2:
            continue
        for r, o in own.items():
            med = statistics.median([v for q, v in own.items() if q != r])
            ratio = o / med if med > 0 else 0
            print("cycle %d rank %d own %.3f ms, others %.3f: %.2fx%s" % (k, r, o, med, ratio,
                                                                           "  (named)" if (k, r) in named else ""))
            if abs(ratio - RATIO) < 0.02 * RATIO:
                continue  # too close to the threshold to judge
            if (ratio >= RATIO) != ((k, r) in named):
                bad.append("cycle %d rank %d: %.2fx the others' own work, %s" % (
                    k, r, ratio, "named" if (k, r) in named else "not named"))
            if expect is not None and (r == expect) != ((k, r) in named):
                bad.append("cycle %d: rank %d %s the straggler; rank %d is the slow one" % (
                    k, r, "named" if (k, r) in named else "not named", expect))
    return bad


def main():
    args = sys.argv[1:]
    tol, expect = 1.0, None
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i:i + 2]
    if "--expect" in args:
        i = args.index("--expect")
        expect = int(args[i + 1])
        del args[i:i + 2]
    what, err, oracle = args
    with open(err) as f:
        lines = f.read().splitlines()
    with open(oracle) as f:
        o = json.load(f)
    bad = check_cycles(lines, o, tol) if what == "cycles" else check_straggler(lines, o, expect)
    for b in bad:
        print("DIFF: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
