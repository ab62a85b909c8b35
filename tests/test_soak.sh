#!/usr/bin/env bash
# test_soak.sh - a long run's memory stays flat: the per-step records are a
# fixed ring (METRICS_STEPS), so a run many times longer than the ring peaks
# at the same resident size as one just past it. Two ranks of the smallest
# step (MLP, batch 1) so that steps are cheap and per-step growth, were there
# any, shows: the old unbounded arrays grew ~35 bytes per rank-step, 9.8 MB
# over the extra 140000 steps here. Two runs' peaks differ by up to ~3 MB
# for other reasons (thread arenas), hence the 4 MiB allowance.
set -u
BIN=${1:?usage: test_soak.sh path/to/ddptop}
run=(--batch --quiet --dataset synthetic --no-eval --threads-per-rank 1
     --model mlp --batch-size 1 --lr 0.001 --ranks 2 --strategy allreduce)

peak_kb() { # peak resident size (VmHWM) of one run, in KiB
    "$BIN" "${run[@]}" --steps "$1" >/dev/null 2>&1 &
    local pid=$! hwm=0 v
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$v" ] && hwm=$v
        sleep 0.1
    done
    wait "$pid" || { echo "FAIL: run of $1 steps exited $?" >&2; exit 1; }
    echo "$hwm"
}

short=$(peak_kb 20000)   # past the 16384-step ring
long=$(peak_kb 160000)
grow=$((long - short))
echo "peak RSS: 20000 steps ${short} KiB, 160000 steps ${long} KiB (+${grow} KiB)"
if [ "$short" -eq 0 ] || [ "$long" -eq 0 ]; then
    echo "FAIL: could not read VmHWM"; exit 1
fi
if [ "$grow" -gt 4096 ]; then
    echo "FAIL: 140000 more steps grew the peak by ${grow} KiB (limit 4096)"; exit 1
fi
echo "ok"
