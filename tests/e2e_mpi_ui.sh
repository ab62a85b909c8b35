#!/usr/bin/env bash
# e2e_mpi_ui.sh - the UI on process 0 under mpirun, in tmux: 2 processes x
# 2 rank threads (--ranks-per-process) show as 4 ranks in the Ranks and
# Timeline panes, with the backend in the header; `p` pauses every process's
# ranks and resumes them; `s` starts a second run, which the workers start
# too; `q` on the final screen exits 0 with the report and the terminal
# back in normal mode; Ctrl-C mid-run (a key in the UI's raw mode, which
# mpirun forwards) stops, reports, exits 130 and restores the terminal.
#
#
# With `16`: 16 processes of one rank each, oversubscribed (the scale of a
# 2-node x 8-GPU job, with a small model): the header names them, the
# Ranks pane holds 13 rows and scrolls to rank 15, whose live memory came
# through the relay, the Timeline says how many ranks it leaves out, and
# the report's 16 rows stay aligned.
#
# Usage: e2e_mpi_ui.sh /path/to/ddptop [16]
# Exit status: 0 pass, 1 fail, 77 skip (tmux or mpirun missing, or a build
# without MPI).
set -u
export LC_ALL=C.UTF-8

BIN=${1:?usage: e2e_mpi_ui.sh /path/to/ddptop [16]}
MODE=${2:-}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
for tool in tmux mpirun; do
    command -v $tool >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 77; }
done
if "$BIN" --batch --comm mpi 2>&1 | grep -q "built without MPI"; then
    echo "SKIP: this ddptop was built without MPI"
    exit 77
fi

SOCK="ddptop-mpi-ui-$$"
T=$(mktemp -d /tmp/ddptop-mpi-ui.XXXXXX)
S=mpiui
. "$(dirname "$0")/tmux_harness.sh"

# unbound, as the process's two rank threads want (bound, each process
# would have one core: test_mpi.sh checks the line that says so)
MPI="mpirun --oversubscribe --bind-to none"
[ "$(id -u)" -eq 0 ] && MPI="$MPI --allow-run-as-root"
ENV="OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none RES_OPTIONS='timeout:1 attempts:1'"
# under ASan: whole stacks at each malloc, so that tests/lsan.supp can tell
# MPI's own allocations from ours (as test_mpi.sh)
[ -n "${ASAN_OPTIONS:-}" ] && export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
    [ -n "${!v:-}" ] && ENV="$ENV $v=$(printf %q "${!v}")"
done
ARGS="--ranks-per-process 2 --dataset synthetic --model lenet --strategy ddp --batch-size 16 --threads-per-rank 1"
run_mpi() { # TAG EXTRA-ARGS
    tm send-keys -t "$S" -l "cd $T && $MPI -np 2 $BIN $ARGS $2 2>$T/err.$1; echo EXIT=\$? > $T/exit.$1"
    tm send-keys -t "$S" Enter
}

# explain TAG FAILS-BEFORE: after a section with failures, what its run
# left in the terminal (the report, and any rank's error in full) and in
# its stderr
explain() {
    [ "$FAILS" -gt "$2" ] || return 0
    echo "----- the terminal's last lines ($1) -----"
    history_tail 40
    echo "----- the run's stderr ($1) -----"
    tail -n 20 "$T/err.$1" 2>/dev/null | sed 's/^/| /'
}

tm -f /dev/null new-session -d -x 150 -y 45 -s "$S" \
    "env -i HOME=$T PATH=$PATH TERM=screen LANG=C.UTF-8 $ENV PS1='mpi\$ ' bash --norc --noprofile" ||
    { echo "FAIL: cannot start tmux"; exit 1; }
tm set-option -t "$S" -g status off >/dev/null
wait_for 'mpi\$' 5 || { fail "the shell prompt did not appear"; exit 1; }

# ---- 16 processes: readable at the scale of two 8-GPU nodes ----
if [ "$MODE" = 16 ]; then
    tm send-keys -t "$S" -l "cd $T && $MPI -np 16 $BIN --device cpu --dataset synthetic --model mlp --strategy ddp \
--batch-size 16 --threads-per-rank 1 --steps 60 2>$T/err.16; echo EXIT=\$? > $T/exit.16"
    tm send-keys -t "$S" Enter
    wait_for 'backend cpu mpi, 16 processes on 1 node +precision fp32 +ranks 16 ' 120 &&
        pass "the header names 16 processes on 1 node, 16 ranks" || { fail "no UI for 16 processes"; exit 1; }
    wait_for '─ 0-12 of 16 ─' 10 && wait_for '─ \+3 ranks below: ↓ scrolls ─' 5 &&
        pass "the Ranks pane shows 13 of 16 rows and says 3 more are below" || fail "Ranks pane at 16 ranks"
    wait_for '─ \+12 ranks below: tab, then ↓ scrolls ─' 10 &&
        pass "the Timeline says 12 ranks are below its 4 lanes" || fail "Timeline at 16 ranks"
    wait_for 'DONE .*step 60/60' 120 && pass "16 processes run to their end" || fail "the 16-process run did not end"
    tm send-keys -t "$S" Down Down Down
    # rank 15, in another process: live figures and its memory, relayed
    if wait_for '─ final, 3-15 of 16 ─' 10 &&
        wait_for '│  15 cpu +[0-9]+\.[0-9]+ +[0-9]+ .* [0-9.]+ MB +[0-9.]+ MB │' 5; then
        pass "↓ scrolls to rank 15, with its memory relayed from its process"
    else
        fail "rank 15's row"
        screen | sed -n 3,18p
    fi
    tm send-keys -t "$S" q
    wait_file "$T/exit.16" 60 && grep -q "EXIT=0" "$T/exit.16" && pass "q exits 0" ||
        fail "q: $(cat "$T/exit.16" 2>/dev/null)"
    # the report: 16 per-rank rows, as wide as their heading (aligned)
    tm capture-pane -p -S - -J -t "$S" >"$T/report.16"
    rows=$(grep -cE '^  0 ddp +[0-9]+ cpu ' "$T/report.16")
    head_w=$(grep -m1 '^run strategy ' "$T/report.16" | awk '{print length($0)}')
    widths=$(grep -E '^  0 ddp +[0-9]+ cpu ' "$T/report.16" | awk '{print length($0)}' | sort -u | tr '\n' ' ')
    [ "$rows" = 16 ] && [ "$widths" = "$head_w " ] &&
        pass "the report has 16 rank rows, each as wide as the heading ($head_w columns)" ||
        fail "the report: $rows rank rows, widths '$widths', heading $head_w"
    # (process 0's lines once: a worker that spoke would repeat them)
    [ -z "$(sort "$T/err.16" | uniq -d)" ] && grep -q '^ddptop: the 16 processes on this node' "$T/err.16" &&
        pass "process 0 alone wrote to stderr" || { fail "stderr:"; head -5 "$T/err.16"; }
    check_shell 16
    echo "$FAILS failed"
    [ "$FAILS" -eq 0 ]
    exit
fi

# ---- the UI of 4 ranks in 2 processes; pause; Ctrl-C ----
f0=$FAILS
run_mpi int "--steps 100000"
wait_for 'backend cpu mpi\+shm/ring, 2 processes x 2 on 1 node +ranks 4' 60 &&
    pass "the header names 2 processes x 2 rank threads" || { fail "no UI with the hierarchical backend"; exit 1; }
if wait_for '│ +3 cpu +[0-9]+\.[0-9]+ ' 30 && wait_for '│ +2 cpu +[0-9]+\.[0-9]+ ' 5 &&
    wait_for '│ +1 cpu +[0-9]+\.[0-9]+ ' 5 && wait_for '│ +0 cpu +[0-9]+\.[0-9]+ ' 5; then
    pass "the Ranks pane has a live row for each of the 4 ranks"
else
    fail "rank rows missing"
fi
wait_for '│r3 main ' 10 && wait_for '│r0 main ' 5 && pass "the Timeline has lanes from both processes" ||
    fail "timeline lanes missing"
tm send-keys -t "$S" p
if wait_for 'PAUSED' 10; then
    sleep 0.5 # (the step in flight lands)
    a=$(step_now)
    sleep 1.5
    b=$(step_now)
    [ -n "$a" ] && [ "$a" = "$b" ] && pass "p pauses the ranks of both processes (step $a held)" ||
        fail "p: step moved $a -> $b"
else
    fail "p did not pause"
fi
tm send-keys -t "$S" p
a=$(step_now)
if wait_for 'RUNNING' 10 && sleep 1 && [ "$(step_now)" -gt "${a:-0}" ]; then
    pass "p again resumes"
else
    fail "p did not resume"
fi
tm send-keys -t "$S" C-c
if wait_file "$T/exit.int" 30 && grep -q "EXIT=130" "$T/exit.int"; then
    pass "Ctrl-C stops the run: exit 130"
else
    fail "Ctrl-C: $(cat "$T/exit.int" 2>/dev/null)"
fi
tm capture-pane -p -S - -t "$S" | grep -q "was interrupted after" && pass "Ctrl-C: the report covers the steps run" ||
    fail "Ctrl-C: no report"
explain int "$f0"
check_shell int

# ---- two runs to their end (s starts the second on every process); q ----
f0=$FAILS
run_mpi main "--steps 60"
wait_for 'DONE .*step 60/60' 120 && pass "a run ends done" || fail "the first run did not end"
tm send-keys -t "$S" s
if wait_for 'strategy horovod .*mpi\+shm' 30 && wait_for 'DONE .*step 60/60' 120; then
    pass "s: a second run (horovod) over both processes, to its end"
else
    fail "the second run did not run through"
fi
tm send-keys -t "$S" q
wait_file "$T/exit.main" 30 && grep -q "EXIT=0" "$T/exit.main" && pass "q exits 0" ||
    fail "q: $(cat "$T/exit.main" 2>/dev/null)"
n=$(tm capture-pane -p -S - -t "$S" | grep -cE '^  1 horovod +[0-3] cpu ')
[ "$n" = 4 ] && pass "the report has the second run's 4 ranks" || fail "the report has $n rows of run 1's ranks"
explain main "$f0"
check_shell main

echo "$FAILS failed"
[ "$FAILS" -eq 0 ]
