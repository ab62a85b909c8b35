#!/usr/bin/env bash
# e2e_follow.sh - drives `ddptop --follow DIR` (no --batch, on a terminal)
# inside tmux while a real 2-process DDP job (pytorch_ddp_job.py: gloo,
# torch.profiler, tensorboard_trace_handler; 4 cycles per rank, 2 s apart;
# rank 1 sleeps 150 ms before each forward) writes into DIR. Checks that
# the UI opens at once saying it waits for the first trace; that the panes
# follow the cycles as they land (the header's cycle counter, a row with
# figures per rank, the timeline's lanes of both ranks, the per-cycle
# table's rows); that rank 1 is marked the straggler (the rank table's *1,
# the header) and rank 0 is not; that m changes the figure the cycles
# plot; that each rank's row holds the figures of its latest cycle (the
# oracle's reading of its last file, to the 0.1 shown); that K says the
# job has no kernel breakdown; and that q exits 0 with the terminal in
# normal mode and the report printed. Then a GPU trace in a second folder:
# K shows its kernel breakdown as its JSON report gives it. DDPTOP_SCREENSHOT=FILE keeps the screen once every cycle landed
# (docs/follow-screenshot.txt is one).
#
# Usage: e2e_follow.sh /path/to/ddptop
# Exit status: 0 pass, 1 fail, 77 skip (no tmux, or no torch in Debian's
# python3). Everything waits by polling with a deadline.
set -u
export LC_ALL=C.UTF-8

BIN=${1:?usage: e2e_follow.sh /path/to/ddptop}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${DDPTOP_PYTHON:-/usr/bin/python3}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed"
    exit 77
fi
if ! "$PY" -c 'import torch, torch.distributed as d, torch.profiler; assert d.is_gloo_available()' 2>/dev/null; then
    echo "SKIP: $PY cannot import torch with gloo (apt install python3-torch)"
    exit 77
fi
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "FAIL: $BIN is not executable"; exit 1; }

SOCK="ddptop-follow-$$"
T=$(mktemp -d /tmp/ddptop-e2efollow.XXXXXX)
S=fw
. "$HERE/tmux_harness.sh"
JOBS=()
stop_job() { for p in "${JOBS[@]}"; do kill "$p" 2>/dev/null; done; }
trap 'stop_job; cleanup' EXIT

PASS_ENV=""
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
    [ -n "${!v:-}" ] && PASS_ENV="$PASS_ENV $v=$(printf %q "${!v}")"
done
tm -f /dev/null new-session -d -x 160 -y 50 -s "$S" "env -i HOME=$T PATH=$PATH TERM=screen LANG=C.UTF-8$PASS_ENV PS1='fw\$ ' bash --norc --noprofile" ||
    { echo "FAIL: cannot start tmux"; exit 1; }
tm set-option -t "$S" -g status off >/dev/null
wait_for 'fw\$' 5 || { fail "the shell prompt did not appear"; exit 1; }

mkdir -p "$T/tb"
tm send-keys -t "$S" -l "cd $T && $BIN --follow $T/tb 2>$T/stderr; echo EXIT=\$? > $T/exit"
tm send-keys -t "$S" Enter
if wait_for 'waiting for the first trace in' 15 && wait_for 'FOLLOW' 2; then
    pass "the UI opens at once, waiting for the first trace"
else
    fail "no 'waiting for the first trace' at start"
fi

for r in 0 1; do
    timeout 300 "$PY" "$HERE/pytorch_ddp_job.py" --rank $r --world 2 --init "file://$T/store" --out "$T/tb" \
        --steps 20 --repeat 4 --cycle-gap-ms 2000 --slow-rank 1 --slow-ms 150 >"$T/job$r.log" 2>&1 &
    JOBS+=($!)
done

# the cycles land: the counter moves, each rank gets its row and lanes
PCT='( +[0-9]+\.[0-9]){5}'
if wait_for 'cycle 1 \(2 landed\)' 120; then pass "the first cycle of both ranks lands"; else fail "the first cycles did not land"; fi
if wait_for "│ +\*?0 cpu +[0-9]+\.[0-9]+ .*$PCT" 5 && wait_for "│ +\*?1 cpu +[0-9]+\.[0-9]+ .*$PCT" 5; then
    pass "a row with figures for ranks 0 and 1"
else
    fail "the rank rows"
fi
if wait_gone 'waiting for the first trace' 5; then pass "the waiting note is gone"; else fail "still waiting"; fi
if wait_for 'Timeline .*steps [0-9]+-[0-9]+' 5 && wait_for '│r0 main' 2 && wait_for '│r0 comm' 2 && wait_for '│r1 main' 2 &&
    wait_for '│r1 comm' 2; then
    pass "the timeline shows the cycle's main and comm lanes of both ranks"
else
    fail "the timeline's lanes"
fi
if wait_for 'cycle 2 \(4 landed\)' 60; then pass "the second cycles land: the counter moves"; else fail "the counter did not move to 2"; fi
if wait_for 'Per cycle' 2 && wait_for '│ +2 [0-9]+-[0-9]+ ' 5; then pass "the per-cycle table has a row for cycle 2"; else fail "no row for cycle 2"; fi
if wait_for 'straggler: rank 1' 10 && wait_for '│ +\*1 cpu' 5 && ! screen | grep -Eq '│ +\*0 cpu'; then
    pass "rank 1 (asleep 150 ms each step) is marked the straggler, rank 0 is not"
else
    fail "the straggler mark"
fi
if wait_for 'cycle 4 \(8 landed\)' 90; then pass "all 4 cycles of both ranks land"; else fail "not every cycle landed"; fi
wait_for '│ +4 [0-9]+-[0-9]+ ' 5 || fail "no row for cycle 4"
[ -n "${DDPTOP_SCREENSHOT:-}" ] && screen >"$DDPTOP_SCREENSHOT"
# the rank table's figures are each rank's latest cycle's: the oracle's
# reading of its last file (tensorboard's names order a worker's files)
screen >"$T/screen.txt"
python3 "$HERE/pytorch_trace_oracle.py" "$T/tb" --cycles >"$T/oracle.json" 2>"$T/oracle.err"
python3 "$HERE/pytorch_trace_oracle.py" "$T/tb" >"$T/oracle_ranks.json" 2>>"$T/oracle.err"
if python3 - "$T/screen.txt" "$T/oracle.json" "$T/oracle_ranks.json" <<'PY' >"$T/latest.out" 2>&1; then
import json, re, sys
screen, oracle = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
last = {}
for name in sorted(oracle):
    last[oracle[name]["rank"]] = oracle[name]
bad = 0
for rank, want in sorted(last.items()):
    m = re.search(r"│ +\*?%d cpu +([0-9.]+) +n/a .*? ([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +n/a" % rank,
                  screen)
    if not m:
        print("no row for rank %d" % rank)
        bad = 1
        continue
    got = {"ms": float(m.group(1)), "compute_pct": float(m.group(2)), "comm_pct": float(m.group(3)),
           "idle_pct": float(m.group(5))}
    ms = want["wall"] / want["steps"] / 1e6  # (the steps tile the cycle)
    for k in ("compute_pct", "comm_pct", "idle_pct"):
        print("rank %d %-11s screen %5.1f  oracle (its last file) %6.2f" % (rank, k, got[k], want[k]))
        bad |= abs(got[k] - want[k]) > 0.051
    print("rank %d ms/step     screen %7.2f  oracle %8.3f" % (rank, got["ms"], ms))
    bad |= abs(got["ms"] - ms) > 0.0051
# the Runs pane's steps: those the report covers, every step of a rank's
# cycles (the most of any rank), not the job's latest step number
# and its split over every cycle as the report's: every rank's time over
# every rank's wall, each rank's first step left out (the oracle's sums)
steps = max(sum(c["steps"] for c in oracle.values() if c["rank"] == r) for r in last)
whole = json.load(open(sys.argv[3])).values()
wall = sum(r["wall"] for r in whole)
want = [100.0 * sum(r[k] for r in whole) / wall for k in ("compute", "comm", "idle")]
m = re.search(r"> 0 +n/a +2 +n/a +([0-9]+) +\S+ +n/a +n/a +n/a +n/a +([0-9.]+) +([0-9.]+) +([0-9.]+) ", screen)
print("runs row %s, the oracle's: steps %d, compute/comm/idle %.2f %.2f %.2f" %
      (m.groups() if m else "none", steps, *want))
bad |= not m or int(m.group(1)) != steps or any(abs(float(m.group(2 + i)) - want[i]) > 0.051 for i in range(3))
sys.exit(bad)
PY
    pass "each rank's row is its latest cycle's, as the oracle reads its last file"
else
    fail "the rank rows against the oracle's last cycles: $(cat "$T/latest.out" "$T/oracle.err")"
fi
tm send-keys -t "$S" -l 'm'
if wait_for 'Cycles .*comm % per cycle' 5; then pass "m: the cycles plot comm%"; else fail "m did not change the figure"; fi
# K: a CPU job's traces have no kernel breakdown, said in a line; K again
# brings the timeline back
tm send-keys -t "$S" -l 'K'
if wait_for '│ *no kernel breakdown: this trace has no device kernels' 5; then
    pass "K: no kernel breakdown for a CPU job, in a line"
else
    fail "K's pane on a CPU job"
fi
tm send-keys -t "$S" -l 'K'
wait_for '─ Timeline ─' 5 || fail "K again did not bring the timeline back"
tm send-keys -t "$S" -l 'p'
if wait_for 'p: not available while following' 5; then pass "p says it is not available"; else fail "p gave no message"; fi
for p in "${JOBS[@]}"; do wait "$p" || fail "the PyTorch job failed: $(tail -3 "$T/job0.log" "$T/job1.log")"; done
JOBS=()

tm send-keys -t "$S" q
if wait_file "$T/exit" 15 && grep -q '^EXIT=0$' "$T/exit"; then pass "q exits 0"; else fail "q: $(cat "$T/exit" 2>/dev/null)"; fi
if wait_for '^replay of .*tb \(autograd trace[;)]' 10; then pass "the report follows on the terminal"; else fail "no report after q"; fi
if grep -q -- '--follow: 2 rank(s), 4 profiler cycles each' "$T/stderr"; then
    pass "stderr: 2 ranks, 4 cycles each"
else
    fail "stderr: $(cat "$T/stderr")"
fi
check_shell quit

# ---- the Kernels pane of a followed trace with device kernels --------------------
# a GPU trace landed in the folder: K shows the breakdown the JSON report
# of its replay gives (tests/check_kernels_pane.py parses both)
mkdir -p "$T/kf"
cp "$HERE/fixtures/trace/kineto_kernels_top.json" "$T/kf/"
"$BIN" --batch --quiet --replay "$T/kf/kineto_kernels_top.json" --format json --output "$T/kernels.json" \
    2>"$T/kernels.err" || fail "kernels: the JSON report failed: $(cat "$T/kernels.err")"
rm -f "$T/exit"
tm send-keys -t "$S" -l "$BIN --follow $T/kf 2>$T/stderr.kf; echo EXIT=\$? > $T/exit"
tm send-keys -t "$S" Enter
wait_for 'FOLLOW .*cycle 1' 15 || fail "kernels: the follower did not read the trace"
tm send-keys -t "$S" -l 'K'
wait_for '│ *communication +ncclDevKernel' 5 || fail "kernels: no Kernels pane after K"
kernels_pane_matches kernels "$T/kernels.json"
tm send-keys -t "$S" q
if wait_file "$T/exit" 15 && grep -q '^EXIT=0$' "$T/exit"; then pass "kernels: q exits 0"; else fail "kernels: q: $(cat "$T/exit" 2>/dev/null)"; fi

[ "$FAILS" -eq 0 ] && { echo "all passed"; exit 0; }
echo "$FAILS failed"
exit 1
