#!/usr/bin/env bash
# ui_overhead.sh - what the live UI costs training: the same LeNet run
# (same ranks, batch, steps, seed) headless (--batch) and under the curses
# UI in a tmux terminal, alternating the two REPS times; prints each mode's
# median samples/s and the ratio UI / batch. Goal: the UI within 3% (>= 0.97).
#
#   bench/ui_overhead.sh [build/ddptop] [extra ddptop options...]
#   STEPS=1000 REPS=3 REFRESH_MS=100 bench/ui_overhead.sh build/ddptop --ranks 2
#
# Both figures are ddptop's own samples/s for the run (mean steady step time
# of the slowest rank, over every step but the first), read from its CSV
# report: --batch prints it, and the UI, told by DDPTOP_UI_EXIT_ON_DONE=1 to
# leave when the run finishes, prints it on exit; the UI draws every
# --refresh-ms all along, exactly as it does for a user.
set -euo pipefail
BIN=${1:-build/ddptop}
shift || true
EXTRA=("$@")
STEPS=${STEPS:-1000}
REPS=${REPS:-3}
REFRESH_MS=${REFRESH_MS:-100}
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 1; }
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "$BIN: not executable"; exit 1; }

ARGS=(--dataset synthetic --model lenet --ranks 2 --strategy allreduce --steps "$STEPS" --epochs 1000 --no-eval
      --seed 1 --format csv "${EXTRA[@]}")
SOCK="ddptop-bench-$$"
T=$(mktemp -d /tmp/ddptop-bench.XXXXXX)
trap 'tmux -L "$SOCK" kill-server >/dev/null 2>&1 || true; rm -rf "$T"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# samples_per_s of the run's "all" row, found by column name in a CSV report.
sps_of() {
    awk -F, '/^run,rank,/ { for (i = 1; i <= NF; i++) if ($i == "samples_per_s") c = i; next }
             c && $2 == "all" { print $c; exit }'
}

batch_once() {
    "$BIN" --batch --quiet "${ARGS[@]}" | sps_of
}

ui_once() {
    local n=$1 out="$T/ui.$1"
    tmux -L "$SOCK" -f /dev/null new-session -d -x 160 -y 50 -s "ui$n" \
        "cd $T && env LANG=C.UTF-8 DDPTOP_UI_EXIT_ON_DONE=1 $BIN --refresh-ms $REFRESH_MS ${ARGS[*]}; echo EXIT=\$? > $T/exit.$n; sleep 600"
    local deadline=$((SECONDS + 600))
    while [ ! -s "$T/exit.$n" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    [ -s "$T/exit.$n" ] || { echo "UI run $n did not finish" >&2; return 1; }
    # the report is on the terminal: join wrapped lines, read the history
    tmux -L "$SOCK" capture-pane -p -J -S - -t "ui$n" > "$out"
    tmux -L "$SOCK" kill-session -t "ui$n"
    grep -q '^EXIT=0' "$T/exit.$n" || { echo "UI run $n: $(cat "$T/exit.$n")" >&2; return 1; }
    sps_of < "$out"
}

echo "LeNet, ${ARGS[*]}, refresh ${REFRESH_MS} ms, ${REPS} alternating pairs"
b=() u=()
for i in $(seq "$REPS"); do
    x=$(batch_once)
    y=$(ui_once "$i")
    [ -n "$x" ] && [ -n "$y" ] || { echo "could not read samples/s (batch '$x', ui '$y')"; exit 1; }
    printf "  pair %d: batch %10.1f   ui %10.1f   ratio %.3f\n" "$i" "$x" "$y" "$(awk -v a="$y" -v b="$x" 'BEGIN {print a / b}')"
    b+=("$x") u+=("$y")
done
mb=$(printf '%s\n' "${b[@]}" | median)
mu=$(printf '%s\n' "${u[@]}" | median)
printf "%-8s %12s\n" mode "samples/s"
printf "%-8s %12.1f\n" batch "$mb" ui "$mu"
printf "ratio ui/batch %.3f  (UI overhead %+.1f%%; goal within 3%%)\n" "$(awk -v a="$mu" -v b="$mb" 'BEGIN {print a / b}')" \
    "$(awk -v a="$mu" -v b="$mb" 'BEGIN {print (1 - a / b) * 100}')"
