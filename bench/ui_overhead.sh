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
#
# On a shared machine throughput swings from run to run far more than 3%, so
# the ratio is taken per pair (the two runs of a pair are back to back) and
# the median of those is reported. Two figures that depend far less on what
# else the machine runs come with it: the CPU time of the UI thread itself
# (polling the ranks' rings and drawing), which the UI prints on exit in this
# mode, as a share of one core; and the whole process's CPU seconds for the
# same run in each mode (/usr/bin/time), whose ratio is the work the UI adds.
set -euo pipefail
BIN=${1:-build/ddptop}
shift || true
EXTRA=("$@")
STEPS=${STEPS:-1000}
REPS=${REPS:-3}
REFRESH_MS=${REFRESH_MS:-100}
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) is not installed"; exit 1; }
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

# "samples/s cpu_seconds" of one headless run.
batch_once() {
    local sps
    sps=$(/usr/bin/time -f "CPU %U %S" -o "$T/batch.time" "$BIN" --batch --quiet "${ARGS[@]}" 2>"$T/batch.err" | sps_of)
    echo "$sps $(awk '/^CPU/ {print $2 + $3}' "$T/batch.time")"
}

ui_once() {
    local n=$1 out="$T/ui.$1"
    tmux -L "$SOCK" -f /dev/null new-session -d -x 160 -y 50 -s "ui$n" \
        "cd $T && env LANG=C.UTF-8 DDPTOP_UI_EXIT_ON_DONE=1 /usr/bin/time -f 'CPU %U %S' -o $T/ui.time.$n $BIN --refresh-ms $REFRESH_MS ${ARGS[*]}; echo EXIT=\$? > $T/exit.$n; sleep 600"
    local deadline=$((SECONDS + 600))
    while [ ! -s "$T/exit.$n" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    [ -s "$T/exit.$n" ] || { echo "UI run $n did not finish" >&2; return 1; }
    # the report is on the terminal: join wrapped lines, read the history
    tmux -L "$SOCK" capture-pane -p -J -S - -t "ui$n" > "$out"
    tmux -L "$SOCK" kill-session -t "ui$n"
    grep -q '^EXIT=0' "$T/exit.$n" || { echo "UI run $n: $(cat "$T/exit.$n")" >&2; return 1; }
    # "samples/s cpu_seconds ui_thread_%": the report's figure, the process's
    # CPU time, and the UI thread's share of a core
    echo "$(sps_of < "$out") $(awk '/^CPU/ {print $2 + $3}' "$T/ui.time.$n")" \
         "$(sed -nE 's/.*ddptop: ui: .*\(([0-9.]+)% of one core.*/\1/p' "$out" | head -1)"
}

echo "LeNet, ${ARGS[*]}, refresh ${REFRESH_MS} ms, ${REPS} alternating pairs"
b=() u=() r=() c=() q=()
for i in $(seq "$REPS"); do
    # alternate which mode goes first, so a drift in load favours neither
    if [ $((i % 2)) = 1 ]; then
        read -r x xcpu < <(batch_once)
        read -r y ycpu cpu < <(ui_once "$i")
    else
        read -r y ycpu cpu < <(ui_once "$i")
        read -r x xcpu < <(batch_once)
    fi
    [ -n "$x" ] && [ -n "$y" ] || { echo "could not read samples/s (batch '$x', ui '$y')"; cat "$T/batch.err"; exit 1; }
    ratio=$(awk -v a="$y" -v b="$x" 'BEGIN {print a / b}')
    cratio=$(awk -v a="$ycpu" -v b="$xcpu" 'BEGIN {print a / b}')
    printf "  pair %d: samples/s batch %8.1f ui %8.1f ratio %.3f | CPU s batch %6.2f ui %6.2f ratio %.3f | UI thread %s%%\n" \
        "$i" "$x" "$y" "$ratio" "$xcpu" "$ycpu" "$cratio" "${cpu:-?}"
    b+=("$x") u+=("$y") r+=("$ratio") c+=("${cpu:-0}") q+=("$cratio")
done
mb=$(printf '%s\n' "${b[@]}" | median)
mu=$(printf '%s\n' "${u[@]}" | median)
mr=$(printf '%s\n' "${r[@]}" | median)
mc=$(printf '%s\n' "${c[@]}" | median)
mq=$(printf '%s\n' "${q[@]}" | median)
printf "%-8s %12s\n" mode "samples/s"
printf "%-8s %12.1f\n" batch "$mb" ui "$mu"
printf "throughput ratio ui/batch %.3f (median of pairs; overhead %+.1f%%, goal within 3%%)\n" "$mr" \
    "$(awk -v r="$mr" 'BEGIN {print (1 - r) * 100}')"
printf "CPU time ratio ui/batch   %.3f (median of pairs; the work the UI adds: %+.1f%%)\n" "$mq" \
    "$(awk -v r="$mq" 'BEGIN {print (r - 1) * 100}')"
printf "UI thread CPU (poll + draw every %d ms): %.2f%% of one core (median)\n" "$REFRESH_MS" "$mc"
