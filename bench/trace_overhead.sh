#!/bin/bash
# trace_overhead.sh [BUILD_DIR] - what tracing costs.
#
# 1. LeNet step time with --trace vs without, side by side in one session:
#    REPS pairs of runs (default 7), alternating which goes first, each
#    STEPS steps (default 300) on 2 ranks; prints both medians of the
#    reports' ms/step, the ratio of the medians and the median of the
#    per-pair ratios (robust to drift). The goal is <= 2 % (1.02).
# 2. The writer micro-benchmark (bench/trace_overhead.c, compiled here):
#    events/s streamed through the real exporter, plain and gzip. The goal
#    is >= 1 million events/s.
# Measure, don't assert: the script prints the figures and a verdict, and
# exits non-zero only when something failed to run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/ddptop
reps=${REPS:-7}
steps=${STEPS:-300}
[ -x "$bin" ] || { echo "trace_overhead: $bin not found; build first (cmake --build $build)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ddptop_trace_overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "== writer micro-benchmark"
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Itrace bench/trace_overhead.c \
    trace/probe.c trace/trace_writer.c trace/trace_export.c -lz -lm -o "$tmp/writer_bench"
"$tmp/writer_bench" "${EVENTS:-3000000}" "$tmp/bench.json" | tee "$tmp/writer.txt"
eps=$(sed -n 's/^events_per_s=//p' "$tmp/writer.txt")

echo "== step time, LeNet on 2 ranks, $steps steps x $reps pairs (this takes a while)"
args=(--batch --quiet --device cpu --dataset synthetic --model lenet --ranks 2 --steps "$steps" --no-eval --format json)
one() { # one off|on N
    if [ "$1" = on ]; then
        "$bin" "${args[@]}" --trace "$tmp/t.json" >"$tmp/$1.$2.json"
    else
        "$bin" "${args[@]}" >"$tmp/$1.$2.json"
    fi
}
for i in $(seq "$reps"); do
    if [ $((i % 2)) = 1 ]; then one off "$i"; one on "$i"; else one on "$i"; one off "$i"; fi
done
tsize=$(stat -c %s "$tmp/t.json")
/usr/bin/python3 - "$tmp" "$reps" "$eps" "$tsize" "$steps" <<'EOF'
import json, statistics, sys
tmp, reps, eps, tsize, steps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ms = lambda k, i: json.load(open("%s/%s.%d.json" % (tmp, k, i)))["runs"][0]["ms_per_step"]
off = [ms("off", i) for i in range(1, reps + 1)]
on = [ms("on", i) for i in range(1, reps + 1)]
print("untraced ms/step: " + " ".join("%.3f" % v for v in off))
print("traced   ms/step: " + " ".join("%.3f" % v for v in on))
mo, mn = statistics.median(off), statistics.median(on)
pair = statistics.median(b / a for a, b in zip(off, on))
q = statistics.quantiles(off, n=4) if len(off) >= 4 else [mo, mo, mo]
print("resolution: the untraced runs' interquartile range is %.1f %% of their median (machine noise)"
      % (100 * (q[2] - q[0]) / mo))
print("median untraced %.3f ms, traced %.3f ms: ratio %.4f (%+.2f %%); median per-pair ratio %.4f (%+.2f %%)"
      % (mo, mn, mn / mo, 100 * (mn / mo - 1), pair, 100 * (pair - 1)))
nev = len(json.load(open(tmp + "/t.json"))["traceEvents"])
# the collector's cost, independent of machine noise: events per step at the writer's measured rate
per_step_us = nev / steps / eps * 1e6
print("trace file: %.1f MB, %d events (%.0f per step, all ranks); at %.2f M events/s the writer spends %.1f us "
      "per step = %.2f %% of the untraced step" % (tsize / 1e6, nev, nev / steps, eps / 1e6, per_step_us,
                                                    100 * per_step_us / (1000 * min(off))))
ok_o = min(mn / mo, pair) <= 1.02
ok_w = eps >= 1e6
print("verdict: tracing overhead %s the 2 %% goal; writer %.2f M events/s %s the 1 M/s goal"
      % ("within" if ok_o else "OVER", eps / 1e6, "meets" if ok_w else "MISSES"))
EOF
