#!/usr/bin/env bash
# follow_latency.sh - how long a large cycle takes to reach the screen under
# `ddptop --follow`: a synthetic Kineto GPU trace of MB megabytes
# (follow_trace.py, about 4200 events per MB) is written into a followed
# folder the way tensorboard_trace_handler writes it (one file, written
# then closed), REPS times; for each, the time from its close to the UI's
# header counting it (tmux, polled every 20 ms), and the same headless: to
# the cycle's line on stderr. Prints each time, their median, and the CPU
# seconds ddptop spent over the headless run (reading is the work). The
# goal: a 100 MB cycle on screen within 2 s.
#
#   bench/follow_latency.sh [build/ddptop] [MB] [REPS]
# FOLLOW_TRACE=FILE uses that trace instead of making one.
set -euo pipefail
BIN=${1:-build/ddptop}
MB=${2:-100}
REPS=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 1; }
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
SOCK="ddptop-fbench-$$"
T=$(mktemp -d /tmp/ddptop-fbench.XXXXXX)
trap 'tmux -L "$SOCK" kill-server >/dev/null 2>&1 || true; rm -rf "$T"' EXIT
now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# one trace, written REPS times under new names (FOLLOW_TRACE=FILE: that one)
if [ -n "${FOLLOW_TRACE:-}" ]; then
    cp "$FOLLOW_TRACE" "$T/src.json"
else
    echo "making a trace of $MB MB..."
    python3 "$HERE/follow_trace.py" "$MB" 0 "$T/src.json"
fi
ls -l "$T"/src.json | awk '{printf "%.1f MB, ", $5 / 1e6}'
python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["traceEvents"]), "events")' "$T/src.json"

# the UI: the header's "(N landed)" once the N-th file is closed
mkdir -p "$T/ui"
tmux -L "$SOCK" -f /dev/null new-session -d -x 160 -y 50 -s b "env TERM=screen LANG=C.UTF-8 $BIN --follow $T/ui --refresh-ms 100"
sleep 1
ui=()
for i in $(seq 1 "$REPS"); do
    cat "$T/src.json" >"$T/ui/rank0.$((1000 + i)).pt.trace.json" # (cat writes, then closes)
    t0=$(now_ns)
    until tmux -L "$SOCK" capture-pane -p -t b | grep -q "($i landed)"; do
        sleep 0.02
        [ $(($(now_ns) - t0)) -gt 60000000000 ] && { echo "UI: cycle $i not on screen after 60 s"; exit 1; }
    done
    ms=$((($(now_ns) - t0) / 1000000))
    ui+=("$ms")
    echo "UI: cycle $i on screen $ms ms after its file closed"
done
tmux -L "$SOCK" send-keys -t b q
sleep 1

# headless: the cycle's line on stderr (ddptop stays until Ctrl-C)
mkdir -p "$T/batch"
"$BIN" --batch --follow "$T/batch" --idle-exit 600 --format json >/dev/null \
    2> >(while IFS= read -r l; do echo "$(date +%s%N) $l"; done >"$T/batch.err") &
pid=$!
sleep 1
hl=()
for i in $(seq 1 "$REPS"); do
    cat "$T/src.json" >"$T/batch/rank0.$((1000 + i)).pt.trace.json"
    t0=$(now_ns)
    until [ "$(grep -c 'cycle [0-9]* (steps' "$T/batch.err" 2>/dev/null)" -ge "$i" ]; do
        sleep 0.02
        [ $(($(now_ns) - t0)) -gt 60000000000 ] && { echo "headless: cycle $i not told after 60 s"; exit 1; }
    done
    t1=$(grep 'cycle [0-9]* (steps' "$T/batch.err" | sed -n "${i}p" | cut -d' ' -f1)
    ms=$(((t1 - t0) / 1000000))
    hl+=("$ms")
    echo "headless: cycle $i told $ms ms after its file closed"
done
# its CPU time so far (utime + stime, in clock ticks), then Ctrl-C
read -r u s < <(cut -d' ' -f14,15 "/proc/$pid/stat")
kill -INT "$pid"
wait "$pid" || true
tck=$(getconf CLK_TCK)
u=$(echo "$u $tck" | awk '{printf "%.2f", $1 / $2}')
s=$(echo "$s $tck" | awk '{printf "%.2f", $1 / $2}')
echo "UI median: $(printf '%s\n' "${ui[@]}" | median) ms; headless median: $(printf '%s\n' "${hl[@]}" | median) ms"
echo "headless CPU: ${u}s user + ${s}s system for $REPS cycles of $MB MB ($(echo "$u $s $REPS" | awk '{printf "%.2f", ($1 + $2) / $3}') s a cycle)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
