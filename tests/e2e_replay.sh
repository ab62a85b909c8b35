#!/usr/bin/env bash
# e2e_replay.sh - drives `ddptop --replay FILE` (no --batch, on a terminal)
# inside tmux and checks the replayed run is shown with the live run's panes:
# a trace ddptop wrote gives the header (model, REPLAY), a rank table with a
# row and percentages per rank, the timeline, loss and traffic panes; the
# keys ?, t, tab, +/-, arrows answer and p says it is not available; q exits
# 0 (Ctrl-C 130) with the terminal back in normal mode and the report printed. A
# PyTorch (Kineto) trace gives the rank table and a timeline marked n/a;
# with kernels, K shows their breakdown as the JSON report gives it. One
# rank's file of a split trace of a run stopped half way keeps the run's rank
# count, its planned steps and its state. A rank with [memory] events and
# no kernels keeps its memory timeline in K; with --predict, g shows the
# job's prediction, replayed and followed (figures worked out by hand).
#
# Usage: e2e_replay.sh /path/to/ddptop
# Exit status: 0 pass, 1 fail, 77 skip (only when tmux is missing).
# Everything waits by polling with a deadline, never by fixed sleeps alone.
set -u
export LC_ALL=C.UTF-8

BIN=${1:?usage: e2e_replay.sh /path/to/ddptop}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed"
    exit 77
fi
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "FAIL: $BIN is not executable"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURES=$HERE/fixtures/trace

SOCK="ddptop-replay-$$"
T=$(mktemp -d /tmp/ddptop-replay.XXXXXX)
S=rp

. "$(dirname "$0")/tmux_harness.sh"

# replay TAG FILE: starts ddptop --replay in the session's shell; its exit
# status lands in $T/exit.TAG.
replay() {
    tm send-keys -t "$S" -l "cd $T && $BIN --replay $2; echo EXIT=\$? > $T/exit.$1"
    tm send-keys -t "$S" Enter
}
# quit_and_check TAG [KEY STATUS]: KEY (q) exits with STATUS (0), the
# alternate screen off and the report printed.
quit_and_check() {
    local tag=$1 key=${2:-q} want=${3:-0}
    tm send-keys -t "$S" "$key"
    if wait_file "$T/exit.$tag" 10; then
        if grep -q "^EXIT=$want\$" "$T/exit.$tag"; then
            pass "$tag: $key exits $want"
        else
            fail "$tag: $key exited with $(cat "$T/exit.$tag")"
        fi
    else
        fail "$tag: $key did not end ddptop"
        return
    fi
    if [ "$(tm display -p -t "$S" '#{alternate_on}')" = 0 ]; then
        pass "$tag: alternate screen is off after exit"
    else
        fail "$tag: alternate screen still on after exit"
    fi
    if wait_for_all '^replay of .*trace' 5; then pass "$tag: the replay report follows on the terminal"; else fail "$tag: no report after q"; fi
    tm send-keys -t "$S" -l "clear"
    tm send-keys -t "$S" Enter
    sleep 0.2
}

# the trace to replay
if ! (cd "$T" && "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --steps 30 \
    --trace "$T/t.json" >/dev/null 2>"$T/trace.err"); then
    echo "FAIL: cannot write the trace:"
    cat "$T/trace.err"
    exit 1
fi

PASS_ENV=""
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
    [ -n "${!v:-}" ] && PASS_ENV="$PASS_ENV $v=$(printf %q "${!v}")"
done
tm -f /dev/null new-session -d -x 160 -y 50 -s "$S" "env -i HOME=$T PATH=$PATH TERM=screen LANG=C.UTF-8$PASS_ENV PS1='rp\$ ' bash --norc --noprofile" ||
    { echo "FAIL: cannot start tmux"; exit 1; }
tm set-option -t "$S" -g status off >/dev/null
wait_for 'rp\$' 5 || { fail "the shell prompt did not appear"; exit 1; }

# ---- 1. ddptop's own trace ----------------------------------------------------
replay own "$T/t.json"
if wait_for 'ddptop +model lenet' 15; then pass "the header shows the model"; else fail "no header with the model"; exit 1; fi
for re in 'REPLAY' 'step 30/30' ' Ranks ' ' Timeline ' ' Loss ' ' Traffic ' 'fwd .*comm .*data .*wait .*idle'; do
    if wait_for "$re" 5; then pass "shows '$re'"; else fail "no '$re' on screen"; fi
done
# a row per rank with figures and percentages (comp% comm% data% idle% ovl%)
PCT='( +[0-9]+\.[0-9]){5}'
if wait_for "│ +0 cpu +[0-9]+\.[0-9]+ .*$PCT" 5 && wait_for "│ +1 cpu +[0-9]+\.[0-9]+ .*$PCT" 5; then
    pass "rank table has a row with percentages for each of 2 ranks"
else
    fail "rank table rows missing"
fi
if screen | grep -Eq '│ +2 cpu'; then fail "rank table shows a third rank"; else pass "rank table has exactly 2 ranks"; fi
if wait_for 'Timeline .*steps [0-9]+-29' 5 && wait_for '│r0 main' 5 && wait_for '│r1 main' 5; then
    pass "the timeline shows the last recorded steps of both ranks"
else
    fail "the timeline shows no recorded spans"
fi
if wait_for 'busbw [0-9]+\.[0-9]+ GB/s' 5; then pass "traffic shows the run's busbw"; else fail "no busbw in traffic"; fi
if wait_for 'n/a in a replay: the whole run' 5; then pass "traffic's plots say why they are empty"; else fail "traffic's plots: no note"; fi
if wait_for '^\? help .*q quit' 5 && ! screen | grep -Eq '^\? help .*(p pause|s next run|r/R ranks)'; then
    pass "the keys line leaves out the keys a replay has no use for"
else
    fail "the keys line offers pause or a next run in a replay"
fi
# keys
tm send-keys -t "$S" -l '+'
if wait_for 'Timeline .*steps (2[89]-29|29-29)' 5; then pass "+ zooms the timeline in"; else fail "+ did not zoom"; fi
tm send-keys -t "$S" -
if wait_for 'Timeline .*steps 2[4-7]-29' 5; then pass "- zooms the timeline out"; else fail "- did not zoom out"; fi
tm send-keys -t "$S" Tab
tm send-keys -t "$S" Left
if wait_for 'Timeline .*steps [0-9]+-28 .*scrolled back' 5; then pass "tab focuses the timeline, left scrolls back"; else fail "left did not scroll the timeline"; fi
tm send-keys -t "$S" Right
if wait_for 'Timeline .*steps [0-9]+-29 ' 5; then pass "right scrolls forward"; else fail "right did not scroll forward"; fi
tm send-keys -t "$S" -l 'p'
if wait_for 'p: not available in a replay' 5; then pass "p says not available"; else fail "p gave no message"; fi
tm send-keys -t "$S" -l 't'
if wait_for '^ theme ' 5; then pass "t changes the theme"; else fail "t gave no theme message"; fi
tm send-keys -t "$S" -l '?'
if wait_for ' Help ' 5; then pass "? opens the help"; else fail "? did not open the help"; fi
tm send-keys -t "$S" x
if wait_gone ' Help ' 5 && wait_for ' Ranks ' 5; then pass "a key closes the help"; else fail "the help did not close"; fi
quit_and_check own

# ---- 1b. files as separate arguments: the status line names every one ----------
if (cd "$T" && "$BIN" --batch --quiet --dataset synthetic --model lenet --ranks 2 --steps 5 \
    --trace "$T/u.json" --trace-split >/dev/null 2>"$T/u.err"); then
    replay args "$T/u.rank0.json $T/u.rank1.json"
    if wait_for 'replay of .*u\.rank0\.json.*u\.rank1\.json' 15; then
        pass "args: the status line names both files"
    else
        fail "args: the status line does not name both files"
    fi
    quit_and_check args
else
    fail "args: cannot write the split trace: $(cat "$T/u.err")"
fi

# ---- 2. a PyTorch profiler (Kineto) trace ---------------------------------------
replay kineto "$FIXTURES/kineto_gpu.json"
if wait_for 'REPLAY' 15; then pass "kineto: the UI opens"; else fail "kineto: the UI did not open"; fi
if wait_for "│ +0 cuda:0 +[0-9]+\.[0-9]+ .*$PCT" 5; then pass "kineto: the rank table shows rank 0"; else fail "kineto: no rank row"; fi
if wait_for 'Timeline .*n/a for this trace kind' 5; then pass "kineto: the timeline says n/a"; else fail "kineto: no timeline note"; fi
quit_and_check kineto

# ---- 2b. a CPU job's Kineto trace on gloo: the panes give the report's figures ----
# the fixture's rank 1 (its distributedInfo) of 2, its 2 profiler steps of
# 0.100 ms, 57% compute, 30% comm, 13% idle (worked out by hand beside the
# fixture, tests/test_pytorch_job.sh); no batch in the trace: n/a, not 0
replay gloo "$FIXTURES/kineto_gloo_cpu.json"
if wait_for 'REPLAY' 15; then pass "gloo: the UI opens"; else fail "gloo: the UI did not open"; fi
if wait_for 'ranks +2 \(1 traced\)' 5; then pass "gloo: 2 ranks, 1 traced"; else fail "gloo: the header's ranks"; fi
if wait_for 'samples/s n/a +ms/step 0\.10' 5; then pass "gloo: the header's ms/step, samples/s n/a"; else fail "gloo: the header's rate"; fi
if wait_for '│ +1 cpu +0\.10 +n/a ' 5; then pass "gloo: the rank table names rank 1, 0.10 ms"; else fail "gloo: the rank row"; fi
if wait_for '> 0 +n/a +2 +n/a +2 +0\.10 +n/a +n/a +n/a +n/a +57\.0 +30\.0 +13\.0 ' 5; then
    pass "gloo: the runs pane: batch n/a, 2 steps, 0.10 ms, 57.0/30.0/13.0 as the report"
else
    fail "gloo: the runs pane's row"
    tm capture-pane -p -t "$S" | grep -A2 'Runs' | head -4
fi
# K: a CPU trace has no kernel breakdown, and the pane says so in a line
tm send-keys -t "$S" K
if wait_for '│ *no kernel breakdown: this trace has no device kernels' 5; then
    pass "gloo: K says there is no kernel breakdown"
else
    fail "gloo: K's pane on a CPU trace"
fi
quit_and_check gloo

# ---- 2c. the Kernels pane (K): the report's kernel breakdown -------------------
# the JSON report of the same trace is the reference: every type's share,
# and rank 0's top kernels (name, count, share), in order and no more
# (tests/check_kernels_pane.py parses both)
"$BIN" --batch --quiet --replay "$FIXTURES/kineto_kernels_top.json" --format json --output "$T/kernels.json" \
    2>"$T/kernels.err" || fail "kernels: the JSON report failed: $(cat "$T/kernels.err")"
replay kernels "$FIXTURES/kineto_kernels_top.json"
if wait_for 'REPLAY' 15; then pass "kernels: the UI opens"; else fail "kernels: the UI did not open"; fi
tm send-keys -t "$S" K
if wait_for '─ Kernels ─.* rank 0 ─' 5 && wait_for '│ *communication +ncclDevKernel' 5; then
    pass "kernels: K shows the Kernels pane in the timeline's place"
else
    fail "kernels: no Kernels pane after K"
fi
kernels_pane_matches kernels "$T/kernels.json"
tm send-keys -t "$S" K
if wait_for '─ Timeline ─' 5; then pass "kernels: K again brings the timeline back"; else fail "kernels: K did not switch back"; fi
quit_and_check kernels

# ---- 2d. the Kernels pane's copies, queues, launches, idle time: the report's -----
# a trace with copies of three kinds, some without a bandwidth in the trace
# (kineto_memcpy.json), one with launches on two streams (kineto_gpu.json:
# its queues and launch statistics), one with idle time of each kind on two
# streams (kineto_idle.json), a 3-rank folder (stragglers3: the run's
# late collectives), and one with [memory] events on two devices
# (kineto_memory.json: the rank's memory timeline, last); the pane scrolls
# to its end
for c in "copies kineto_memcpy.json Memcpy HtoD" "queues kineto_gpu.json stream 7" "idle kineto_idle.json stream 20" \
    "late stragglers3 rank 2" "memory kineto_memory.json cuda:1"; do
    set -- $c
    name=$1 fixture=$2
    shift 2
    row=$*
    "$BIN" --batch --quiet --replay "$FIXTURES/$fixture" --format json --output "$T/$name.json" \
        2>"$T/$name.err" || fail "$name: the JSON report failed: $(cat "$T/$name.err")"
    replay "$name" "$FIXTURES/$fixture"
    if wait_for 'REPLAY' 15; then pass "$name: the UI opens"; else fail "$name: the UI did not open"; fi
    tm send-keys -t "$S" K
    wait_for '─ Kernels ─' 5 || fail "$name: no Kernels pane after K"
    tm send-keys -t "$S" Tab
    tm send-keys -t "$S" End
    if wait_for "│ *$row +[0-9]+ " 5; then
        pass "$name: the pane ends with the rank's $name"
    else
        fail "$name: no $name in the Kernels pane"
    fi
    kernels_pane_matches "$name" "$T/$name.json"
    quit_and_check "$name"
done

# ---- 2e. the Kernels pane's critical path: last, as worked by hand -----------------
# critpath.json's step 1 (tests/test_pytorch_traces.sh, case critpath): the
# path 1.1 ms, 0.1 past the step, the all-reduce 400 us on it from 700 us
"$BIN" --batch --quiet --replay "$FIXTURES/critpath.json" --format json --output "$T/critpath.json" \
    2>"$T/critpath.err" || fail "critpath: the JSON report failed: $(cat "$T/critpath.err")"
replay critpath "$FIXTURES/critpath.json"
if wait_for 'REPLAY' 15; then pass "critpath: the UI opens"; else fail "critpath: the UI did not open"; fi
tm send-keys -t "$S" K
wait_for '─ Kernels ─' 5 || fail "critpath: no Kernels pane after K"
tm send-keys -t "$S" Tab
tm send-keys -t "$S" End
if wait_for 'critical path of rank 0, step 1: 1\.100 ms \(the step 1\.000 ms, 0\.100 ms past it\)' 5 &&
    wait_for '│ *on path comm +400\.000 us @700\.000 +ncclKernel_AllReduce_Sum_f32' 5 &&
    wait_for '│ *cpu 38\.2% +compute 0\.0% +comm 36\.4% +memory 0\.0% +wait 25\.5% +\(4 ops, 1 launches\)' 5; then
    pass "critpath: the pane ends with the rank's critical path"
else
    fail "critpath: no critical path in the Kernels pane"
fi
kernels_pane_matches critpath "$T/critpath.json"
quit_and_check critpath

# ---- 2f. a rank with [memory] events and no kernels keeps its memory line ---------
# memory_nokernels/: rank 0 runs a kernel and has no [memory] events; rank
# 1 runs no kernel, its steps 1 [0,1000) and 2 [1000,2000) us, and cuda:1
# events (Bytes -> Total Allocated, Total Reserved): 100: +2000000 ->
# 3000000, 4 MB; 600: -500000 -> 2500000; 1200: +3500000 -> 6000000, 8 MB;
# 1800: -4000000 -> 2000000. By hand: 4 events, start 3000000-2000000 =
# 1.000 MB, end 2.000, peak 6.000 at 1.200 ms (after step 1's start, 0)
# in step 2, reserved 8.000; step 1's peak 3 MB, step 2's 6 MB: the
# sparkline's levels 3/6 x 7 + 0.5 -> 4 and 7, "▅█"
replay memnok "$FIXTURES/memory_nokernels"
if wait_for 'REPLAY' 15; then pass "memnok: the UI opens"; else fail "memnok: the UI did not open"; fi
tm send-keys -t "$S" K
if wait_for '─ Kernels ─.* rank 0 \(1 of 2\)' 5; then pass "memnok: the pane picks among 2 ranks"; else fail "memnok: the pane does not offer rank 1"; fi
tm send-keys -t "$S" Tab
tm send-keys -t "$S" Right
tm send-keys -t "$S" End
if wait_for '─ Kernels ─.* rank 1 \(2 of 2\)' 5 && wait_for '│ *rank 1: no kernel breakdown' 5 &&
    wait_for '│ *memory timeline of rank 1 ' 5 &&
    wait_for '│ *cuda:1 +4 +1\.000 +2\.000 +6\.000 +1\.200 +2 +8\.000 ' 5 &&
    wait_for '│ *steps 1-2 ▅█ peak/step 6\.000 MB' 5; then
    pass "memnok: rank 1, without kernels, shows its memory timeline as worked by hand"
else
    fail "memnok: rank 1's memory timeline is not in the Kernels pane"
fi
quit_and_check memnok

# ---- 2g. the Scaling pane (g) shows --predict of the replayed job -------------------
# whatif_args/ (tests/test_pytorch_traces.sh, case whatif): measured on 2
# ranks, 1.000 ms/step, compute 0.700, comm 0.250 (0.160 exposed, 0.090
# hidden); over --link 1GB/s,50us the step at 2, 4, 8 ranks is 1.850,
# 2.550, 3.200 ms. Speedup, samples/s against the 2 measured ranks:
# K/2 x 1.0/step_K = 0.54, 0.78, 1.25x; efficiency 1.0/step_K: 54.1,
# 39.2 and 31.25% (printed 31.2 or 31.3: a tie at one decimal)
replay predict "$FIXTURES/whatif_args --predict --link 1GB/s,50us --predict-ranks 2,4,8"
if wait_for 'REPLAY' 15; then pass "predict: the UI opens"; else fail "predict: the UI did not open"; fi
tm send-keys -t "$S" g
if wait_for '─ Scaling ─.*the traced job predicted at more ranks' 5 &&
    wait_for 'measured on 2 ranks: 1\.000 ms/step, compute 0\.700, comm 0\.250 \(0\.160 exposed, 0\.090 hidden\)' 5 &&
    wait_for '│ +2 +1\.850 +1\.100 +1\.010 +0\.54x +54\.1' 5 &&
    wait_for '│ +4 +2\.550 +1\.800 +1\.710 +0\.78x +39\.2' 5 &&
    wait_for '│ +8 +3\.200 +2\.450 +2\.360 +1\.25x +31\.[23]' 5; then
    pass "predict: g shows the job's prediction at 2, 4, 8 ranks as worked by hand"
else
    fail "predict: the Scaling pane does not show the prediction"
    screen | grep -A8 'Scaling'
fi
quit_and_check predict

# over a --bench-comm fit written by hand for 4 ranks only (100 us + 1 ns
# a byte: the --link's t_4 at 4 ranks, test_pytorch_traces.sh): 4 ranks
# 1.850 ms, 1.08x (4/2 x 1.0/1.85), 54.1%; 2 and 8 n/a
cat >"$T/model.json" <<'JSON'
{"fits": [{"backend": "gloo", "algo": "ring", "ranks": 4, "collective": "allreduce", "alpha_us": 100,
           "beta_us_per_byte": 0.001, "r2": 1}]}
JSON
tm send-keys -t "$S" -l "export DDPTOP_COMM_MODEL=$T/model.json"
tm send-keys -t "$S" Enter
replay predfit "$FIXTURES/whatif_args --predict --predict-ranks 2,4,8"
if wait_for 'REPLAY' 15; then pass "predfit: the UI opens"; else fail "predfit: the UI did not open"; fi
tm send-keys -t "$S" g
if wait_for "comm from --bench-comm's fits \\(gloo, ring\\)" 5 &&
    wait_for '│ +2 +n/a +n/a +n/a +n/a +n/a' 5 &&
    wait_for '│ +4 +1\.850 +1\.100 +1\.010 +1\.08x +54\.1' 5 &&
    wait_for '│ +8 +n/a +n/a +n/a +n/a +n/a' 5; then
    pass "predfit: g shows the fit's 4 ranks, 2 and 8 n/a"
else
    fail "predfit: the Scaling pane over a fit"
    screen | grep -A8 'Scaling'
fi
quit_and_check predfit
tm send-keys -t "$S" -l "unset DDPTOP_COMM_MODEL"
tm send-keys -t "$S" Enter

# the same two files followed (--follow, the job's folder): the follower's
# result carries the prediction too, and g shows the replay's rows
mkdir -p "$T/wf" && cp "$FIXTURES/whatif_args/rank0.json" "$FIXTURES/whatif_args/rank1.json" "$T/wf/"
tm send-keys -t "$S" -l "cd $T && $BIN --follow $T/wf --predict --link 1GB/s,50us --predict-ranks 2,4,8 2>$T/wf.err; echo EXIT=\$? > $T/exit.wf"
tm send-keys -t "$S" Enter
if wait_for 'FOLLOW' 15; then pass "predict: the followed job's UI opens"; else fail "predict: --follow's UI did not open"; fi
tm send-keys -t "$S" g
if wait_for '─ Scaling ─.*the traced job predicted at more ranks' 10 &&
    wait_for '│ +2 +1\.850 +1\.100 +1\.010 +0\.54x +54\.1' 5 &&
    wait_for '│ +8 +3\.200 +2\.450 +2\.360 +1\.25x +31\.[23]' 5; then
    pass "predict: followed, g shows the same prediction"
else
    fail "predict: the followed job's Scaling pane does not show the prediction"
    screen | grep -A8 'Scaling'
fi
tm send-keys -t "$S" q
if wait_file "$T/exit.wf" 10 && grep -q '^EXIT=0$' "$T/exit.wf"; then pass "predict: q ends the follow"; else fail "predict: q did not end the follow"; fi
tm send-keys -t "$S" -l "clear"
tm send-keys -t "$S" Enter
sleep 0.2

# ---- 3. one rank's file of a run stopped half way ----------------------------------
# the header keeps the run's ranks and planned steps, the runs pane its state
(cd "$T" && exec "$BIN" --batch --quiet --dataset synthetic --model mlp --ranks 2 --steps 100000 \
    --trace "$T/s.json" --trace-split >/dev/null 2>"$T/split.err") &
pid=$!
for _ in $(seq 1 300); do
    grep -qx 'rank 1' /proc/$pid/task/*/comm 2>/dev/null && break
    sleep 0.1
done
sleep 1
kill -INT $pid
wait $pid
replay split "$T/s.rank0.json"
if wait_for 'REPLAY' 15; then pass "split: the UI opens"; else fail "split: the UI did not open"; fi
if wait_for 'ranks +2 \(1 traced\)' 5; then pass "split: the header gives the run's 2 ranks, 1 traced"; else fail "split: the header's ranks"; fi
if wait_for 'step [0-9]+/100000' 5; then pass "split: the step out of the planned 100000"; else fail "split: no planned step count"; fi
if wait_for '> +0 .* stopped' 5; then pass "split: the runs pane says stopped"; else fail "split: the runs pane's state"; fi
quit_and_check split

# ---- 4. Ctrl-C restores the terminal too ----------------------------------------
replay intr "$T/t.json"
if wait_for 'REPLAY' 15; then pass "intr: the UI opens"; else fail "intr: the UI did not open"; fi
quit_and_check intr C-c 130

[ "$FAILS" -eq 0 ] && { echo "all passed"; exit 0; }
echo "$FAILS failed"
exit 1
