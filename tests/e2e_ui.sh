#!/usr/bin/env bash
# e2e_ui.sh - drives the real ddptop binary's curses UI inside tmux and
# checks what a user would see: every pane with live, changing numbers;
# `p` really stops the step counter and resumes it; `s` adds a run to the
# runs pane; `e` writes a trace that parses, `t` and `?` answer; resizes to
# 50x15 and to the minimum, 40x10, keep the panes (redrawn to fit), one
# column or row less (39x10, 40x9) and 30x8 say too small, and growing back
# brings every pane back; r/R and b/B plan the next run's ranks and batch,
# `s` starts exactly that run, the runs pane gives its speedup, refusals
# land in the status line; `L` shows per-layer times and ddp's buckets, `g`
# the scaling plot; `q` exits 0 with the terminal back in normal mode;
# with an alpha-beta model file the traffic pane shows a prediction; Ctrl-C
# and a crash (abort) restore the terminal too, and a second Ctrl-C within
# 2 s leaves at once while a straggler is deep in a step, trace still valid; NO_COLOR and a non-UTF-8
# locale give a colourless, ASCII screen; a rank that fails (a diverging
# learning rate) leaves FAILED and its error on screen until q, which then
# exits 1; a collective that fails on one rank (--inject-fault comm-error)
# leaves every pane drawn and the rank and its error in the header; a rank
# that hangs (--inject-fault hang) shows as no step for a while, with the
# rank table's recent figures n/a. While paused the rank table holds still,
# the status line says paused, and the arrows scroll the timeline from any
# pane; q with help open only closes it; a short terminal keeps the
# current run in the Runs table; in a sweep, s starts its combinations in
# turn. At 80x24
# without colour, a 4-rank run shows fwd, bwd and opt in three glyphs, says
# which ranks the timeline and rank table leave out, and the header keeps
# the parameter count on the first run. A run planned with r after 2-rank
# runs keeps their threads per rank. At 80x24 and 60x16 no label is cut in
# half (the Runs title, the status line, the timeline's keys), and at 60x15
# help says how many rows it cannot show and scrolls with the arrows.
#
# Usage: e2e_ui.sh /path/to/ddptop
# Exit status: 0 pass, 1 fail, 77 skip (only when tmux is missing).
# Everything waits by polling with a deadline, never by fixed sleeps alone.
set -u
export LC_ALL=C.UTF-8 # the checks grep for block and braille glyphs

BIN=${1:?usage: e2e_ui.sh /path/to/ddptop}
if ! command -v tmux >/dev/null 2>&1; then
    echo "SKIP: tmux is not installed"
    exit 77
fi
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "FAIL: $BIN is not executable"; exit 1; }

SOCK="ddptop-test-$$"
T=$(mktemp -d /tmp/ddptop-e2e.XXXXXX)
S=e2e
START=$(date +%s)
ARGS="--dataset synthetic --model lenet --ranks 2 --strategy allreduce --epochs 1000 --steps 100000"

. "$(dirname "$0")/tmux_harness.sh"

# wait_step_above N SECONDS: the counter passes N.
wait_step_above() {
    local deadline=$(($(now_ms) + $2 * 1000)) s
    while [ "$(now_ms)" -lt "$deadline" ]; do
        s=$(step_now)
        [ -n "$s" ] && [ "$s" -gt "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
# run_ddptop TAG "ENV=..." ["EXTRA ARGS"]: starts ddptop in the session's
# shell; its exit status lands in $T/exit.TAG.
run_ddptop() {
    tm send-keys -t "$S" -l "cd $T && env $2 $BIN $ARGS ${3:-}; echo EXIT=\$? > $T/exit.$1"
    tm send-keys -t "$S" Enter
}
# A clean shell, but sanitizer settings (CI's ASan/TSan passes) go through.
PASS_ENV=""
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
    [ -n "${!v:-}" ] && PASS_ENV="$PASS_ENV $v=$(printf %q "${!v}")"
done
tm -f /dev/null new-session -d -x 160 -y 50 -s "$S" "env -i HOME=$T PATH=$PATH TERM=screen$PASS_ENV PS1='e2e\$ ' bash --norc --noprofile" ||
    { echo "FAIL: cannot start tmux"; exit 1; }
tm set-option -t "$S" -g status off >/dev/null
wait_for 'e2e\$' 5 || { fail "the shell prompt did not appear"; exit 1; }

# ---- 1. the main session: panes, live numbers, keys --------------------------
run_ddptop main "LANG=C.UTF-8"
if wait_for 'step [0-9]+/' 15; then pass "ddptop started"; else fail "ddptop did not start"; exit 1; fi
for title in ' Ranks ' ' Timeline ' ' Loss ' ' Traffic ' ' Runs ' 'ddptop +model lenet' 'RUNNING' \
    'samples/s' 'fwd .*comm .*data .*wait .*idle'; do
    if wait_for "$title" 5; then pass "shows '$title'"; else fail "no '$title' on screen"; fi
done
# live numbers: rank rows with ms/step figures, busbw, the timeline axis
if wait_for '│ +0 cpu +[0-9]+\.[0-9]+ ' 10 && wait_for '│ +1 cpu +[0-9]+\.[0-9]+ ' 5; then
    pass "rank table has a live row per rank"
else
    fail "rank table rows missing"
fi
wait_for 'GB/s' 10 && pass "busbw shown" || fail "no busbw figure"
wait_for '┴0─' 10 && pass "timeline has a time axis" || fail "no timeline axis"
wait_for 'prediction n/a' 5 && pass "traffic labels the missing prediction n/a" || fail "no prediction label"
wait_for_p '[\x{2801}-\x{28FF}]' 10 && pass "plots draw braille" || fail "no braille in the plots"
# traffic: both charts plot (the bus bandwidth too, without a cost model),
# each labelled in its own rows: its top value with the unit, what it is
if wait_gone 'no data yet' 10 && wait_for '│ *sent\+recv ' 5 && wait_for '│ +busbw ' 5; then
    pass "traffic: both charts plot, each with its caption"
else
    fail "traffic: a chart without data or without its caption"
fi
# (a top label's row holds its chart's highest point: a braille dot before any text)
n=$(screen | grep -cP '│ *[0-9.]+ [KMGT]?B/s [\x{2800}-\x{28FF} ]*[\x{2801}-\x{28FF}]')
[ "${n:-0}" -ge 2 ] && pass "traffic: each chart's top label has its unit" || fail "traffic: $n chart labels with units"
if tm capture-pane -e -p -t "$S" | grep -Eq $'\x1b\\[[0-9;]*(3[0-7]|4[0-7]|38;|48;)[0-9;]*m'; then
    pass "colour is on"
else
    fail "no colour escapes on screen"
fi
s1=$(step_now)
if wait_step_above "${s1:-0}" 10; then pass "step counter moves ($s1 -> $(step_now))"; else fail "step counter stuck at $s1"; fi

# p: the ranks stop at a step boundary; again: they go on (with a few steps
# of history first, so the timeline has something to scroll back to)
wait_step_above 8 20 || fail "fewer than 8 steps after 20 s"
tm send-keys -t "$S" p
if wait_for 'PAUSED' 5; then pass "p shows PAUSED"; else fail "p did not pause"; fi
# the step in flight may still land (on a loaded machine it can take a
# while): the counter must then hold still for a whole second
held=0
for try in 1 2 3; do
    a=$(step_now)
    sleep 1
    b=$(step_now)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then held=1; break; fi
done
if [ $held = 1 ]; then pass "paused: step counter holds at $a"; else fail "paused, yet step went $a -> $b"; fi
# the rank table holds the figures of the last steps before the pause, also
# once its 1.5 s window has no step left in it (taken first: the window is
# still draining)
r0=$(screen | grep -Eo '│ +0 cpu +[0-9]+\.[0-9]+ +[0-9.]+k? ')
sleep 2.5
r1=$(screen | grep -Eo '│ +0 cpu +[0-9]+\.[0-9]+ +[0-9.]+k? ')
[ -n "$r0" ] && [ "$r0" = "$r1" ] && pass "paused: rank 0's figures hold still ($r0)" ||
    fail "paused, yet rank 0's figures went '$r0' -> '$r1'"
wait_for 'last [0-9.]+ s before the pause' 5 && pass "the rank table's title says its figures are from before the pause" ||
    fail "the rank table's title does not mention the pause"
# once the ranks wait at the boundary, the status line says paused, not pausing
wait_for 'paused at step [0-9]+ ' 5 && ! screen | grep -q 'pausing:' && pass "the status line says paused" ||
    fail "the status line does not say the run is paused"
# history browsing while paused: the arrows scroll the timeline with the
# rank table focused (it has no use for left and right)
tm send-keys -t "$S" Left
tm send-keys -t "$S" Left
wait_for 'scrolled back' 5 && pass "timeline scrolls back through history while paused, from the rank table" ||
    fail "timeline did not scroll"
tm send-keys -t "$S" End
tm send-keys -t "$S" p
if wait_for 'RUNNING' 5 && wait_step_above "$b" 10; then pass "p again resumes ($b -> $(step_now))"; else fail "did not resume"; fi

# space: the view freezes while training goes on
tm send-keys -t "$S" Space
if wait_for 'FROZEN' 5; then
    a=$(step_now)
    sleep 1
    b=$(step_now)
    [ "$a" = "$b" ] && pass "space freezes the view" || fail "frozen view still changed ($a -> $b)"
else
    fail "space did not freeze"
fi
tm send-keys -t "$S" Space
wait_step_above "${b:-0}" 10 && pass "space again thaws" || fail "view did not thaw"

# zoom, log scale, help, theme, trace
tm send-keys -t "$S" + +
wait_for 'steps ([0-9]+)-\1 ' 5 && pass "+ zooms the timeline to one step" || fail "+ did not zoom"
tm send-keys -t "$S" - -
# (until the one-step range is gone: the keys may take a refresh to land)
wait_gone 'steps ([0-9]+)-\1 ' 5 && wait_for 'steps ([0-9]+)-([0-9]+) ' 5 && pass "- zooms out" || fail "- did not zoom out"
tm send-keys -t "$S" l
wait_for 'log10 ' 5 && pass "l switches the loss to log scale" || fail "l did not toggle"
tm send-keys -t "$S" '?'
wait_for ' Help ' 5 && pass "? opens help" || fail "? did not open help"
tm send-keys -t "$S" x
if wait_for ' Traffic ' 5 && ! screen | grep -q ' Help '; then pass "a key closes help"; else fail "help did not close"; fi
# q too only closes it: the session goes on
tm send-keys -t "$S" '?'
wait_for ' Help ' 5 || fail "? did not open help again"
tm send-keys -t "$S" q
s1=$(step_now)
if wait_gone ' Help ' 5 && wait_step_above "${s1:-0}" 10 && [ ! -e "$T/exit.main" ]; then
    pass "q closes help and does not quit"
else
    fail "q with help open did not just close it"
fi
tm send-keys -t "$S" t
wait_for 'theme light' 5 && pass "t cycles the theme" || fail "t did not change the theme"
# (ddptop runs in $T, which it can write: an error here is a failure)
tm send-keys -t "$S" e
if wait_for 'trace written to ddptop-[0-9]+-1\.json' 5; then
    f=$(ls "$T"/ddptop-*-1.json 2>/dev/null | head -1)
    if [ -s "$f" ] && python3 -c "import json, sys; assert len(json.load(open(sys.argv[1]))['traceEvents']) > 10" "$f"; then
        pass "e wrote $f, a trace that parses, with events"
    else
        fail "e claims a trace, but ${f:-no file} is missing, empty or not JSON"
    fi
else
    fail "e wrote no trace (status: $(screen | grep -Eo 'trace[^│]*' | head -1))"
fi

# s: the run stops cleanly, its result stays, the next strategy starts
tm send-keys -t "$S" s
if wait_for '│> 1 ' 15 && screen | grep -Eq '│  0 +allreduce .* (stopped|done)'; then
    pass "s adds a second row to the runs pane"
else
    fail "s did not add a run"
fi
wait_for 'started ' 5 && pass "status names the new strategy" || fail "no status after s"
s1=$(step_now)
wait_step_above "${s1:-0}" 15 && pass "the new run trains" || fail "the new run does not train"

# resize: small but usable, down to the minimum (ui/layout.h: 40x10), then
# one column or one row short of it, too small, and back. The Ranks box
# must close inside the new width: its windows were rebuilt, not clipped.
for size in 50x15 40x10; do
    tm resize-window -t "$S" -x "${size%x*}" -y "${size#*x}"
    if wait_for '^┌─ Ranks .*┐$' 5 && ! screen | grep -q 'terminal too small'; then
        pass "$size: screen redrawn to fit"
    else
        fail "$size: no Ranks pane drawn to fit (at or above the 40x10 minimum)"
    fi
done
for size in 39x10 40x9 30x8; do
    tm resize-window -t "$S" -x "${size%x*}" -y "${size#*x}"
    # (the message names the size it saw: the one before also said too small)
    wait_for "${size}\\)" 5 && screen | grep -q 'terminal too small' && screen | grep -q 'least 40x10' &&
        pass "$size: says too small" || fail "$size: no too-small message for $size"
done
tm resize-window -t "$S" -x 160 -y 50
ok=1
for title in ' Ranks ' ' Timeline ' ' Loss ' ' Traffic ' ' Runs '; do
    wait_for "$title" 5 || ok=0
done
[ $ok = 1 ] && pass "160x50 again: every pane back" || fail "panes missing after growing back"
s1=$(step_now)
wait_step_above "${s1:-0}" 10 && pass "still training after the resizes" || fail "stuck after resize"

# r/R, b/B, s: the next run with the ranks and batch planned (the current
# run is ddp, 2 ranks x 32, after the s above)
tm send-keys -t "$S" r
wait_for 'next: ddp, 1 rank x 32 ' 5 && pass "r plans one rank fewer (Runs title)" || fail "r did not change the plan"
tm send-keys -t "$S" b
wait_for 'next run: ddp, 1 rank x 16 ' 5 && pass "b halves the planned batch (status line)" || fail "b did not halve"
tm send-keys -t "$S" r
wait_for 'r: ranks: 1 is the fewest' 5 && pass "r at one rank is refused in the status line" || fail "no refusal for 0 ranks"
tm send-keys -t "$S" s
if wait_for 'ranks 1 +batch 16x1=16' 20 && wait_for '│> 2 +ddp +1 +16 ' 10; then
    pass "s starts the planned run: 1 rank, batch 16"
else
    fail "s did not start the planned 1-rank run"
fi
wait_for 'speedup +eff%' 5 && pass "the runs pane has speedup and efficiency columns" || fail "no speedup column"
wait_for '│> 2 +ddp +1 +16 .* 1\.00x +100\.0 ' 15 && pass "a 1-rank run is its own base: 1.00x" ||
    fail "no speedup for the 1-rank run"
wait_for 'n/a: one rank sends nothing' 5 && pass "a 1-rank run: the traffic plots say n/a, no flat zero" ||
    fail "a 1-rank run: the traffic plots draw a flat zero"
# R doubles the ranks and keeps the per-rank batch: weak scaling against
# the 1-rank run of the same per-rank batch, which is its speedup base
tm send-keys -t "$S" R
wait_for 'next: ddp, 2 ranks x 16 ' 5 || fail "R did not plan 2 ranks x 16"
tm send-keys -t "$S" s
if wait_for 'ranks 2 +batch 16x2=32' 20 && wait_for '│> 3 +ddp +2 +16 .* [0-9]+\.[0-9]{2}x +[0-9]+\.[0-9] ' 15; then
    pass "R, s: a 2-rank run whose speedup is against the 1-rank run"
else
    fail "no 2-rank run with a speedup"
fi
# a terminal too short for the four runs: the current one stays in sight,
# and the bottom border says how many are above
tm resize-window -t "$S" -x 160 -y 26
if wait_for '│> 3 +ddp ' 5 && wait_for '└─ \+[0-9]+ runs? above: tab, then ↑ scrolls ─' 5; then
    pass "160x26: the runs table keeps the current run in sight and says what is above"
else
    fail "160x26: the current run is hidden, or nothing says what is cut"
fi
tm resize-window -t "$S" -x 160 -y 50
wait_for ' Traffic ' 5 || fail "160x50 again: panes missing"
# g: the scaling plot in the runs table's place, with the ideal and both ddp runs
tm send-keys -t "$S" g
if wait_for '─ Scaling ' 5 && wait_for 'ideal .*d ddp' 5 && wait_for '^│ ranks 1─.*2 *│$' 5; then
    pass "g shows the scaling plot: ranks axis, the ideal and ddp's points"
else
    fail "no scaling plot"
fi
screen | grep -q '─ Runs ' && fail "the runs table is still shown beside the plot" || pass "the plot takes the runs table's place"
tm send-keys -t "$S" g
wait_for '─ Runs ' 5 && pass "g again: the runs table is back" || fail "g did not switch back"
# L: per-layer times and, for ddp, the buckets, in the timeline's place
tm send-keys -t "$S" L # (fc3 is layer 11, or 12 after a layout layer where the convolutions take blocks of 16)
if wait_for '─ Layers ' 5 && wait_for '│ +0 conv1 +conv2d +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3} ' 10 &&
    wait_for '│ +1[12] fc3 +linear +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3} ' 5; then
    pass "L lists LeNet's layers with forward and backward times"
else
    fail "no per-layer times"
fi
if wait_for '^│0 +[0-9.]+ [KM]B +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}-[0-9]+\.[0-9]{2} ' 10; then
    pass "the layers pane shows when ddp's bucket was ready and when its allreduce ran"
else
    fail "no bucket timing for ddp"
fi
tm send-keys -t "$S" L
wait_for '─ Timeline ' 5 && pass "L again: the timeline is back" || fail "L did not switch back"
# a batch no rank's share of the data can hold: refused before anything stops
s1=$(step_now)
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do tm send-keys -t "$S" B; done
if wait_for 'B: refused: --batch-size [0-9]+: larger than a rank' 5 && wait_step_above "${s1:-0}" 10; then
    pass "B past the data's share is refused in the status line; the run goes on"
else
    fail "no refusal for a batch larger than the data"
fi

# q: exit status 0, terminal restored
tm send-keys -t "$S" q
if wait_file "$T/exit.main" 15; then
    st=$(cat "$T/exit.main")
    [ "$st" = "EXIT=0" ] && pass "q exits with status 0" || fail "q exited with $st"
else
    fail "q did not exit"
fi
# the report of both runs is printed after the UI leaves
wait_for_all '^ *[0-9]+ lenet +synthetic +allreduce' 5 && pass "the runs' report is printed on exit" || fail "no report after exit"
check_shell main

# ---- 2. with an alpha-beta model, a prediction; Ctrl-C restores the terminal ---
# A fit as --bench-comm stores it: 100 us + 1 ns/byte per allreduce call.
cat > "$T/model.json" <<'JSON'
{"fits": [{"backend": "shm", "algo": "ring", "ranks": 2, "collective": "allreduce",
           "alpha_us": 100.0, "beta_us_per_byte": 0.001, "r2": 1.0}]}
JSON
run_ddptop sigint "LANG=C.UTF-8 DDPTOP_COMM_MODEL=$T/model.json"
wait_for 'step [0-9]+/' 15 || fail "second ddptop did not start"
wait_for 'prediction [0-9]+\.[0-9]+ GB/s' 10 && pass "traffic shows the model's predicted busbw" ||
    fail "no predicted busbw with a model file"
tm send-keys -t "$S" C-c
if wait_file "$T/exit.sigint" 15; then
    st=$(cat "$T/exit.sigint")
    [ "$st" = "EXIT=130" ] && pass "Ctrl-C exits with 130" || fail "Ctrl-C exited with $st"
else
    fail "Ctrl-C did not stop ddptop"
fi
check_shell sigint

# ---- 2b. a second Ctrl-C within 2 s forces the exit --------------------------
# Rank 1 computes 1000x slower, so each of its steps spins for seconds and
# an orderly stop would wait for it. The second Ctrl-C leaves at once,
# terminal restored and trace closed as valid JSON. The ranks are left
# running on purpose: a TSan build is told not to count them as leaked.
run_ddptop force "LANG=C.UTF-8 TSAN_OPTIONS='${TSAN_OPTIONS:-} report_thread_leaks=0'" \
    "--slow-rank 1:1000 --trace $T/force.json"
wait_for 'step [0-9]+/' 15 || fail "the forced-exit ddptop did not start"
sleep 1 # rank 1 is deep in its first slow step
tm send-keys -t "$S" C-c
sleep 0.3
t0=$(now_ms)
tm send-keys -t "$S" C-c
if wait_file "$T/exit.force" 10; then
    ms=$(($(now_ms) - t0))
    st=$(cat "$T/exit.force")
    [ "$st" = "EXIT=130" ] && pass "a second Ctrl-C exits with 130" || fail "a second Ctrl-C exited with $st"
    [ "$ms" -lt 2500 ] && pass "a second Ctrl-C leaves at once ($ms ms)" ||
        fail "a second Ctrl-C took $ms ms to leave"
else
    fail "a second Ctrl-C did not stop ddptop"
fi
wait_for 'interrupted twice' 5 && pass "a forced exit says so" || fail "no 'interrupted twice' after the forced exit"
/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["traceEvents"]' "$T/force.json" \
    2>/dev/null && pass "a forced exit leaves a valid trace" || fail "the forced exit's trace is not valid JSON"
check_shell force

# ---- 3. a crash (SIGABRT) still restores the terminal ---------------------------
run_ddptop crash "LANG=C.UTF-8 DDPTOP_UI_TEST_CRASH=abort ASAN_OPTIONS=handle_abort=0"
# (start-up included, unlike the other exits: beside a TSan pass and a
# build it once took more than 15 s to reach its second frame)
if wait_file "$T/exit.crash" 60; then
    st=$(cat "$T/exit.crash")
    [ "$st" = "EXIT=134" ] && pass "abort: killed by SIGABRT (134)" || fail "abort: exit status $st, expected 134"
else
    fail "crash test did not exit"
fi
check_shell crash

# ---- 4. NO_COLOR and a non-UTF-8 locale: no colour, ASCII glyphs -----------------
run_ddptop nocolor "LANG=C LC_ALL=C NO_COLOR=1"
if wait_for 'step [0-9]+/' 15 && wait_for '> fwd  < bwd  \+ opt  = comm' 5; then
    pass "C locale: ASCII legend, a glyph per category"
else
    fail "C locale: no ASCII legend"
fi
if tm capture-pane -e -p -t "$S" | grep -Eq $'\x1b\\[[0-9;]*(3[0-7]|4[0-7]|38;|48;)[0-9;]*m'; then
    fail "NO_COLOR: colour escapes on screen"
else
    pass "NO_COLOR: no colour on screen"
fi
screen | grep -Pq '[\x{2800}-\x{28FF}\x{2588}]' && fail "C locale: wide glyphs on screen" || pass "C locale: no wide glyphs"
tm send-keys -t "$S" q
wait_file "$T/exit.nocolor" 15 && [ "$(cat "$T/exit.nocolor")" = "EXIT=0" ] && pass "q exits 0" || fail "NO_COLOR run did not exit 0"
check_shell nocolor

# ---- 4b. a terminal that cannot place the cursor: refused, in one line ----------
run_ddptop dumb "TERM=dumb"
if wait_file "$T/exit.dumb" 30 && [ "$(cat "$T/exit.dumb")" = "EXIT=2" ]; then
    pass "TERM=dumb exits 2"
else
    fail "TERM=dumb: $(cat "$T/exit.dumb" 2>/dev/null)"
fi
wait_for "terminal 'dumb' cannot place the cursor.*use --batch" 5 && pass "TERM=dumb says why" ||
    fail "TERM=dumb: no message"
check_shell dumb

# ---- 5. a failed rank: FAILED and its error stay on screen until q -------------
# (a learning rate this high makes LeNet's loss NaN within a few steps at
# batch 8; at 32 it took 366 steps, longer than the wait under TSan)
run_ddptop failed "LANG=C.UTF-8" "--lr 100 --momentum 0.99 --batch-size 8"
if wait_for 'FAILED' 40 && wait_for 'run failed: rank [0-9]+ failed: .*diverged' 5; then
    pass "a failed rank shows FAILED and the error"
    sleep 1
    screen | grep -q 'FAILED' && [ ! -s "$T/exit.failed" ] && pass "the failure stays on screen" ||
        fail "the failed run did not stay on screen"
    tm send-keys -t "$S" Space
    wait_for 'view frozen; the run is failed' 5 && pass "space on the failed run says it has ended" ||
        fail "space on the failed run does not say it has ended"
else
    fail "no FAILED state for a diverging run"
fi
tm send-keys -t "$S" q
wait_file "$T/exit.failed" 15 && [ "$(cat "$T/exit.failed")" = "EXIT=1" ] && pass "q after a failure exits 1" ||
    fail "q after a failure: $(cat "$T/exit.failed" 2>/dev/null)"
check_shell failed

# ---- 6. a collective that fails on one rank, in a worker thread ------------------
# the screen stays whole (every pane's frame still drawn), and the header
# names the rank and the error, with its context (strategy, bucket)
run_ddptop commfail "LANG=C.UTF-8" "--strategy ddp --inject-fault rank=1,step=30,kind=comm-error"
if wait_for 'FAILED' 40 && wait_for 'rank 1 failed: gradient synchronisation \(ddp\): bucket [0-9]+: allreduce: the link' 5; then
    pass "a failed collective shows FAILED and the error in the header"
    hdr=$(screen | head -2 | tail -1)
    case "$hdr" in *FAILED*"rank 1 failed: gradient synchronisation (ddp)"*) pass "the error is on the header's line" ;;
    *) fail "the header line lacks the error: $hdr" ;; esac
    for pane in "Ranks" "Timeline" "Loss" "Traffic" "Runs"; do
        screen | grep -q "─ $pane " && pass "the $pane pane is still drawn" || fail "the $pane pane is gone after the failure"
    done
    screen | grep -Eq '^│ *!1 ' && pass "the rank table marks rank 1" || fail "the rank table does not mark the failed rank"
else
    fail "no FAILED state and header error for a failing collective"
fi
tm send-keys -t "$S" q
wait_file "$T/exit.commfail" 15 && [ "$(cat "$T/exit.commfail")" = "EXIT=1" ] && pass "q after the failure exits 1" ||
    fail "q after the failed collective: $(cat "$T/exit.commfail" 2>/dev/null)"
check_shell commfail

# ---- 6b. a rank that hangs: the header and the rank table say there is no step --
# (rank 1 hangs in step 150; the others wait in the allreduce; none reaches
# the 20 s timeout before q. Under TSan a step of the MLP takes 170 ms:
# step 150 comes after some 30 s, hence the minute's wait)
run_ddptop hang "LANG=C.UTF-8" "--model mlp --steps 300 --strategy ddp --comm-timeout 20 --inject-fault rank=1,step=150,kind=hang"
if wait_for 'RUNNING .*step 150/300 .*ETA n/a +no step for [0-9.]+s' 60; then
    pass "a hung rank: the header says no step for a while, ETA n/a"
else
    fail "a hung rank: the header does not show the stall"
fi
screen | grep -q 'samples/s [0-9]' && fail "a hung rank: the header still shows a rate" || pass "a hung rank: no rate in the header"
if screen | grep -Eq '─ no step for [0-9.]+ s ─┐' && screen | grep -Eq '^│ +0 cpu +n/a +n/a ' &&
    screen | grep -Eq '^│ +1 cpu +n/a +n/a '; then
    pass "a hung rank: the rank table says no step, its recent figures n/a"
else
    fail "a hung rank: the rank table shows figures of a window without steps"
fi
tm send-keys -t "$S" q
wait_file "$T/exit.hang" 30 || fail "a hung rank: q did not exit"
check_shell hang

# ---- 6c. --output that cannot take the report: it comes to the terminal, exit 1 ----
run_ddptop full "LANG=C.UTF-8" "--model mlp --steps 30 --format csv --output /dev/full"
wait_for 'step [0-9]+/30' 20 || fail "--output /dev/full: ddptop did not start"
tm send-keys -t "$S" q
if wait_file "$T/exit.full" 15 && [ "$(cat "$T/exit.full")" = "EXIT=1" ] &&
    wait_for 'cannot write /dev/full: No space left on device; the report follows on standard output' 5 &&
    wait_for '^run,rank,model,' 5; then
    pass "--output /dev/full: one line, the report on the terminal, exit 1"
else
    fail "--output /dev/full: $(cat "$T/exit.full" 2>/dev/null)"
fi
check_shell full

# ---- 6d. a sweep: s walks its combinations in --batch's order ----------------------
run_ddptop sweep "LANG=C.UTF-8" "--model mlp --strategy allreduce,ddp --ranks 1,2"
if wait_for "1 run +next: the sweep's 2/4: mlp, allreduce, 2 ranks x 32" 20; then
    pass "a sweep: the runs pane names its second combination next"
else
    fail "a sweep: its next combination is not named"
fi
tm send-keys -t "$S" s
if wait_for "2 runs +next: the sweep's 3/4: mlp, ddp, 1 rank x 32" 20; then
    pass "a sweep: s starts the second combination, the third is next"
else
    fail "a sweep: s did not start its next combination"
fi
tm send-keys -t "$S" q
wait_file "$T/exit.sweep" 30 || fail "a sweep: q did not exit"
check_shell sweep

# ---- 7. 80x24 without colour, 4 ranks: glyphs, what is cut, the header ----------
# MLP's optimizer step is long enough to show at one step per screen
tm resize-window -t "$S" -x 80 -y 24
run_ddptop small "LANG=C.UTF-8 NO_COLOR=1" "--model mlp --ranks 4 --strategy allreduce --slow-rank 3:1.2"
wait_for 'step [0-9]+/' 20 || fail "80x24: ddptop did not start"
wait_for '^ ddptop +model mlp .*params 670k' 10 && pass "80x24: the header shows params on the first run" ||
    fail "80x24: no params in the header"
wait_for '█ fwd  ▆ bwd  ▚ opt  ▓ comm' 5 && pass "80x24: the legend gives fwd, bwd and opt a glyph each" ||
    fail "80x24: the legend does not tell fwd, bwd and opt apart"
wait_for '^└─ \+2 ranks below: tab, then ↓ scrolls ─' 10 && pass "80x24: the timeline says two ranks are hidden" ||
    fail "80x24: no hidden-ranks marker on the timeline"
tm send-keys -t "$S" + +
# the lanes themselves: each of the three glyphs drawn somewhere in a main lane
deadline=$(($(now_ms) + 30000))
glyphs=0
while [ "$(now_ms)" -lt "$deadline" ]; do
    lanes=$(screen | grep -E '^│r[0-9] main ')
    if printf '%s' "$lanes" | grep -q '█' && printf '%s' "$lanes" | grep -q '▆' && printf '%s' "$lanes" | grep -q '▚'; then
        glyphs=1
        break
    fi
    sleep 0.2
done
[ $glyphs = 1 ] && pass "80x24: the timeline draws fwd █, bwd ▆ and opt ▚ in the lanes" ||
    fail "80x24: the lanes do not show three distinct compute glyphs"
# down arrows on the focused timeline bring the hidden ranks in
tm send-keys -t "$S" Tab Down Down
wait_for '^│r3 main ' 5 && wait_for '^└─ \+2 ranks above: ↑ scrolls ─' 5 && pass "80x24: tab, then down scrolls to the last ranks" ||
    fail "80x24: the hidden ranks did not scroll in"
# a plan with fewer ranks than --slow-rank names is refused at the key
tm send-keys -t "$S" r
wait_for 'r: refused: --slow-rank: rank 3 does not exist with --ranks 3' 5 &&
    pass "80x24: r below the slow rank is refused in the status line" || fail "80x24: no refusal for r below --slow-rank"
tm send-keys -t "$S" q
wait_file "$T/exit.small" 15 && [ "$(cat "$T/exit.small")" = "EXIT=0" ] && pass "80x24: q exits 0" ||
    fail "80x24: q did not exit 0"
check_shell small
# the rank table cuts too: 12 ranks do not fit its rows
run_ddptop many "LANG=C.UTF-8 NO_COLOR=1" "--model mlp --ranks 12 --strategy allreduce --batch-size 8"
if wait_for '^└─ \+[0-9]+ ranks below: ↓ scrolls ─' 20; then
    pass "80x24: the rank table says how many ranks are below"
else
    fail "80x24: no hidden-ranks marker on the rank table"
fi
tm send-keys -t "$S" q
wait_file "$T/exit.many" 15 || fail "80x24, 12 ranks: q did not exit"
check_shell many
tm resize-window -t "$S" -x 160 -y 50

# ---- 8. the runs the UI plans keep the threads per rank ------------------------
# s, then r and s: a 1-rank run after the 2-rank ones; its ranks must have
# the threads per rank the 2-rank runs had, or its speedup compares thread
# counts (every run's threads_per_rank in the report JSON written at q)
run_ddptop threads "LANG=C.UTF-8" "--format json --output $T/threads.json --plot $T/figs"
wait_for 'step [0-9]+/' 20 || fail "threads: ddptop did not start"
tm send-keys -t "$S" s
wait_for '│> 1 +ddp +2 ' 20 || fail "threads: s did not start the second run"
tm send-keys -t "$S" r
wait_for 'next: ddp, 1 rank x 32 ' 5 || fail "threads: r did not plan one rank"
tm send-keys -t "$S" s
wait_for '│> 2 +ddp +1 ' 20 || fail "threads: s did not start the planned 1-rank run"
tm send-keys -t "$S" q
wait_file "$T/exit.threads" 20 || fail "threads: q did not exit"
if out=$(python3 - "$T/threads.json" 2>&1 <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
got = [(r["ranks"], r["threads_per_rank"]) for r in runs]
assert [w for w, _ in got] == [2, 2, 1], got
assert len(set(t for _, t in got)) == 1, "threads per rank differ: %s" % got
print(got)
PY
); then
    pass "threads: the planned 1-rank run has the 2-rank runs' threads per rank $out"
else
    fail "threads: $out"
fi
# --plot: the UI's runs drawn at q, from the report it printed
if out=$(python3 "$(dirname "$0")/check_figures.py" "$T/figs" "$T/threads.json" --runs 3 2>&1); then
    pass "threads: --plot draws the UI's runs: $out"
else
    fail "threads: --plot: $out"
fi
check_shell threads

# ---- 9. small terminals: no label cut in half; help scrolls ------------------
# no_cut TAG: no item on screen (between borders, two spaces, "; " or " (")
# is the start of one of these labels without being all of it, as
# "s: start  g: ─┐" and "final report on screen (s:" were at 80x24.
no_cut() {
    local out
    if out=$(screen | python3 -c '
import re, sys
labels = ["s: start", "g: plot", "g: runs table", "+/- zoom", "<-/-> history", "l: log", "(scrolled back)",
          "(s: next run, q: quit)", "(q: quit, s: next run)", "(s starts it; r/R ranks, b/B batch, n strategy)",
          "prediction n/a", "busbw", "\u00b7 idle", "\u254c wait", "\u2591 data",
          "\u2593 comm", "last 1.5 s"]
bad = []
for line in sys.stdin.read().split("\n"):
    for part in re.split(r"[\u2500-\u257f]+", line):
        for item in re.split(r"  +|; | (?=\()", part):
            item = item.strip()
            if len(item) >= 2 and any(l != item and l.startswith(item) for l in labels):
                bad.append(item)
print(" | ".join(bad))
sys.exit(1 if bad else 0)'); then
        pass "$1: no label cut in half"
    else
        fail "$1: labels cut in half: $out"
    fi
}
tm resize-window -t "$S" -x 80 -y 24
run_ddptop cut "LANG=C.UTF-8" "--steps 300"
wait_for 'step [0-9]+/' 20 || fail "80x24: ddptop did not start"
wait_for 'run done: ' 60 && no_cut "80x24, a run done" || fail "80x24: the first run did not finish"
# 2 ranks' lanes leave the Runs table no room: one g brings it in (it took
# two, the first showing the Scaling plot), a second g the plot, a third
# the table again
if screen | grep -q -e '─ Runs ' -e '─ Scaling '; then
    fail "80x24: the Runs slot was on screen before g (the check of g would prove nothing)"
else
    tm send-keys -t "$S" g
    wait_for '─ Runs ' 5 && pass "80x24: one g shows the Runs table" || fail "80x24: g did not show the Runs table"
    tm send-keys -t "$S" g
    wait_for '─ Scaling ' 5 && pass "80x24: a second g shows the Scaling plot" ||
        fail "80x24: a second g did not show the Scaling plot"
    tm send-keys -t "$S" g
    wait_for '─ Runs ' 5 || fail "80x24: a third g did not bring the Runs table back"
fi
tm send-keys -t "$S" s
wait_for 'started ddp' 20 || fail "80x24: s did not start the next run"
tm send-keys -t "$S" r
wait_for 'next run: ddp, 1 rank x 32' 5 || fail "80x24: r did not plan one rank"
tm send-keys -t "$S" s
# (one rank: one lane less, and the Runs pane fits)
if wait_for '─ Runs ' 30 && wait_for 'run done: ' 60; then
    no_cut "80x24, the Runs pane's title and the status line"
else
    fail "80x24: no Runs pane, or the 1-rank run did not finish"
fi
q_and_wait() {
    tm send-keys -t "$S" q
    wait_file "$T/exit.$1" 20 || fail "$1: q did not exit"
}
q_and_wait cut
tm resize-window -t "$S" -x 60 -y 16
run_ddptop cut60 "LANG=C.UTF-8"
wait_step_above 5 30 || fail "60x16: ddptop did not train"
tm send-keys -t "$S" p
wait_for 'paused at step' 15 && no_cut "60x16, paused (the timeline's history key)" || fail "60x16: p did not pause"
# 60x15: help does not fit; it says so and scrolls
tm resize-window -t "$S" -x 60 -y 15
tm send-keys -t "$S" '?'
if wait_for ' Help ' 5 && wait_for '└─ \+[0-9]+ rows below: ↓ scrolls ─' 5 && ! screen | grep -q 'compute (fwd'; then
    pass "60x15: help says how many rows are below"
else
    fail "60x15: help does not say what it cannot show"
fi
sleep 0.3
tm send-keys -t "$S" End
if wait_for 'compute \(fwd \+ bwd \+ opt\)' 5 && wait_for '└─ \+[0-9]+ rows above: ↑ scrolls ─' 5; then
    pass "60x15: End scrolls help to its last row"
else
    fail "60x15: help does not scroll"
fi
sleep 0.3
tm send-keys -t "$S" Up
wait_for '└─ \+[0-9]+ rows above, \+1 below: ↑/↓ scroll ─' 5 && pass "60x15: Up scrolls help back a row" ||
    fail "60x15: Up did not scroll help"
tm send-keys -t "$S" x
wait_gone ' Help ' 5 && pass "60x15: another key closes help" || fail "60x15: x did not close help"
q_and_wait cut60
tm resize-window -t "$S" -x 160 -y 50

echo "e2e_ui: $FAILS failure(s) in $(($(date +%s) - START)) s"
[ "$FAILS" = 0 ]
