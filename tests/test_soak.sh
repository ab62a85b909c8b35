#!/usr/bin/env bash
# test_soak.sh - a long run's memory stays flat: the per-step records are a
# fixed ring (METRICS_STEPS, 16384 steps), so once a run is past the ring its
# resident size stops growing. One run of 60000 two-rank steps of the
# smallest step (MLP, batch 1), so that steps are cheap and per-step growth,
# were there any, shows; its resident size (VmRSS) is sampled all along.
# The largest sample from 40% to 90% of the run (steps ~24000 to ~54000,
# the report at the end left out) may exceed the largest from 30% to 40%
# (past the ring) by at most SOAK_ALLOW_KB (1024). The old unbounded
# per-step arrays grew ~35 bytes per rank-step: ~2 MB over that stretch.
# With `ui`, the same run in the interactive UI, in tmux (its panes keep
# series, histories and snapshots of their own, over the same metrics):
# sampled until the header says "done", then `q`; where tmux is missing,
# the batch form runs instead.
# Usage: test_soak.sh path/to/ddptop [STEPS] [ui]
set -u
BIN=${1:?usage: test_soak.sh path/to/ddptop [STEPS] [ui]}
STEPS=${2:-60000}
UI=${3:-}
ALLOW=${SOAK_ALLOW_KB:-1024}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
ARGS="--dataset synthetic --no-eval --threads-per-rank 1 --model mlp --batch-size 1 --lr 0.001 --ranks 2"
ARGS="$ARGS --strategy allreduce --steps $STEPS"
samples=$(mktemp)
sample() { # pid
    local v
    v=$(awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null)
    [ -n "$v" ] && echo "$(date +%s%N) $v" >>"$samples"
}

if [ "$UI" = ui ] && ! command -v tmux >/dev/null 2>&1; then
    echo "tmux is not installed: the batch form"
    UI=
fi
if [ "$UI" = ui ]; then
    SOCK="ddptop-soak-$$"
    T=$(mktemp -d /tmp/ddptop-soak.XXXXXX)
    S=soak
    . "$(dirname "$0")/tmux_harness.sh"
    trap 'rm -f "$samples"; cleanup' EXIT
    # shellcheck disable=SC2086 # ARGS are words
    tm new-session -d -s "$S" -x 160 -y 48 "env LC_ALL=C.UTF-8 TERM=xterm-256color $BIN $ARGS; echo EXIT=\$? >$T/exit; sleep 600"
    sh_pid=$(tm display -p -t "$S" '#{pane_pid}')
    pid=
    for _ in $(seq 100); do
        pid=$(pgrep -P "$sh_pid" -f ddptop | head -1)
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || { echo "FAIL: ddptop did not start in tmux"; exit 1; }
    while kill -0 "$pid" 2>/dev/null && ! screen | grep -Eqi '^ *done '; do
        sample "$pid"
        sleep 0.2
    done
    screen | grep -Eqi '^ *done ' || { echo "FAIL: the UI run ended before it was done"; screen; exit 1; }
    tm send-keys -t "$S" q
    wait_for_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
    wait_for_file "$T/exit" && grep -q 'EXIT=0' "$T/exit" || { echo "FAIL: q did not exit 0: $(cat "$T/exit" 2>/dev/null)"; exit 1; }
else
    trap 'rm -f "$samples"' EXIT
    # shellcheck disable=SC2086 # ARGS are words
    "$BIN" --batch --quiet $ARGS >/dev/null 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sample "$pid"
        sleep 0.2
    done
    wait "$pid" || { echo "FAIL: the run of $STEPS steps exited $?"; exit 1; }
fi

awk -v allow="$ALLOW" '
    { t[NR] = $1; kb[NR] = $2 }
    END {
        if (NR < 50) { print "FAIL: only " NR " RSS samples (the run was too short to judge)"; exit 1 }
        t0 = t[1]; span = t[NR] - t0
        for (i = 1; i <= NR; i++) {
            f = (t[i] - t0) / span
            if (f >= 0.3 && f < 0.4 && kb[i] > warm) warm = kb[i]
            if (f >= 0.4 && f <= 0.9 && kb[i] > late) late = kb[i]
        }
        printf "RSS: %d KiB past the ring (30-40%% of the run), at most %d KiB later (40-90%%): %+d KiB, %d samples\n",
            warm, late, late - warm, NR
        if (warm == 0 || late == 0) { print "FAIL: no samples in a window"; exit 1 }
        if (late - warm > allow) { printf "FAIL: grew %d KiB (allowed %d)\n", late - warm, allow; exit 1 }
        print "ok"
    }' "$samples"
