#!/usr/bin/env bash
# test_clocks.sh - the offsets between processes' clocks, where they are
# not 0. On one machine every process reads the same CLOCK_MONOTONIC, so
# the other tests' measured offsets are all 0 and a wrong sign passes.
# Here one process's clock is put ahead by a known amount
# (DDPTOP_TEST_CLOCK_SHIFT_NS, a test hook: trace/probe.h), as a process on
# another node whose clock differs, and every process measures its offset
# by ping-pong (DDPTOP_CLOCK_PINGPONG=1), again every 50 ms as the run goes
# (DDPTOP_CLOCK_REFRESH_MS=50). The expected values come from the command
# line: a process SHIFT ns ahead has its timestamps moved by -SHIFT, so in
# process 0's trace
#  - its offset at the start and its last one (3 estimates or more) are
#    -SHIFT within the error bound each gives (the truth lies between the
#    ping's send and its answer);
#  - each step ends on its ranks within 1 s of rank 0's end of the same
#    step (they meet in an allreduce every step: a few ms apart, 16 ms
#    the most seen on a loaded machine), where a wrong sign puts it 2 SHIFT
#    away;
#  - its spans from step 1 on lie between rank 0's first and last step
#    ends, widened by 1 s (step 0's may start long before, while rank 0
#    still loads its data).
# Runs: 2 processes under mpirun (--comm mpi), process 1 6 s ahead; 3
# processes met in a folder (--rendezvous file:DIR, gloo), process 1 6 s
# and process 2 3 s ahead. A part whose launcher or backend this build
# lacks is left out, said; with neither, exit 77.
# Usage: test_clocks.sh DDPTOP
set -uo pipefail
bin=$(realpath "${1:?usage: test_clocks.sh DDPTOP}")
. "$(dirname "$0")/checks.sh"
cd "$tmp"

run=(--batch --quiet --dataset synthetic --device cpu --batch-size 32 --threads-per-rank 1 --model mlp --steps 100
    --no-eval)
export DDPTOP_CLOCK_PINGPONG=1 DDPTOP_CLOCK_REFRESH_MS=50
S1=6000000000 S2=3000000000

# aligned TRACE "PROCESS:SHIFT_NS ...": the checks above on process 0's trace
aligned() {
    python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
shift = {int(p): int(s) for p, s in (x.split(":") for x in sys.argv[2].split())}
start = {p["rank"]: p for p in d["ddptop"]["run"]["processes"]}
end = {c["rank"]: c for c in d["ddptopTraceEnd"]["clocks"]}
steps, spans = {}, {}
for e in d["traceEvents"]:
    if e.get("ph") != "X":
        continue
    if e.get("cat") == "step":
        steps.setdefault(e["pid"], {})[e["args"]["step"]] = e["ts"] + e["dur"]
    elif e.get("args", {}).get("step", 0) >= 1:
        spans.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
bad = []
lo, hi = min(steps[0].values()) - 1e6, max(steps[0].values()) + 1e6  # (us)
for p, s in shift.items():
    # (one rank a process: rank p is process p)
    a, b = start[p], end[p]
    print("  process %d, %d ns ahead: offset %d ns (bound %d) at the start, %d (bound %d) after %d estimates"
          % (p, s, a["clock_offset_ns"], a["clock_error_ns"], b["offset_ns"], b["error_ns"], b["estimates"]))
    # (+2: the halves of the round trip are whole ns)
    if abs(a["clock_offset_ns"] + s) > a["clock_error_ns"] + 2:
        bad.append("process %d: offset %d at the start, the truth %d" % (p, a["clock_offset_ns"], -s))
    if b["estimates"] < 3 or abs(b["offset_ns"] + s) > b["error_ns"] + 2:
        bad.append("process %d: offset %d after %d estimates, the truth %d" % (p, b["offset_ns"], b["estimates"], -s))
    if sorted(steps[p]) != sorted(steps[0]):
        bad.append("process %d: steps %s, rank 0's %s" % (p, sorted(steps[p]), sorted(steps[0])))
        continue
    apart = [abs(steps[p][k] - steps[0][k]) / 1e3 for k in steps[0]]
    print("    its steps end %.1f ms from rank 0's at most" % max(apart))
    late = [k for k in steps[0] if abs(steps[p][k] - steps[0][k]) > 1e6]
    if late:
        bad.append("process %d: %d steps end over 1 s from rank 0's, first step %d: %.3f s"
                   % (p, len(late), late[0], (steps[p][late[0]] - steps[0][late[0]]) / 1e6))
    out = [t for t in spans.get(p, []) if t[0] < lo or t[1] > hi]
    if not spans.get(p) or out:
        bad.append("process %d: %d of %d spans (steps 1 on) outside rank 0's steps" % (p, len(out), len(spans.get(p, []))))
sys.exit("\n".join(bad) if bad else 0)
PY
}

parts=0
# ---- 2 processes under mpirun, process 1 6 s ahead ----
if ! command -v mpirun >/dev/null || "$bin" "${run[@]}" --comm mpi 2>&1 | grep -q "built without MPI"; then
    echo "(no mpirun, or a build without MPI: the mpirun part is left out)"
elif ldd "$bin" 2>/dev/null | grep -q libtsan; then
    # the clock's ping-pong thread and the rank's collectives both drive
    # Open MPI, whose copies between them ThreadSanitizer cannot see (it
    # is not built with it): a race it reports in the gradient buffer is
    # Open MPI's own synchronisation, unseen. The Release and ASan passes
    # run this part; the --rendezvous part below runs here too.
    echo "(a ThreadSanitizer build: the mpirun part is left out, Open MPI's threads being invisible to it)"
else
    parts=$((parts + 1))
    mpi=(mpirun --oversubscribe)
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
    export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader RES_OPTIONS="timeout:1 attempts:1"
    # under ASan: whole stacks at each malloc, so that tests/lsan.supp can
    # tell Open MPI's own leaks (in plugins unloaded by the time they are
    # reported) from ddptop's
    [ -n "${ASAN_OPTIONS:-}" ] && export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"
    # (process 1 alone is shifted: its own environment, set by a shell
    # that knows its rank)
    # shellcheck disable=SC2016 # (the rank and "$@" are that shell's)
    timeout 120 "${mpi[@]}" -np 2 -x DDPTOP_CLOCK_PINGPONG -x DDPTOP_CLOCK_REFRESH_MS sh -c \
        '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export DDPTOP_TEST_CLOCK_SHIFT_NS='$S1'; exec "$@"' sh \
        "$bin" "${run[@]}" --trace mpi.json >/dev/null 2>mpi.err
    rc=$?
    [ $rc -eq 0 ] && aligned mpi.json "1:$S1" >mpi.check 2>&1
    good=$?
    cat mpi.check 2>/dev/null
    [ $good -eq 0 ] && ok "mpirun, process 1 6 s ahead: its offset measured as -6 s, its steps and spans on rank 0's time" ||
        { tail -3 mpi.err; bad "mpirun, process 1 6 s ahead: rc $rc"; }
fi

# ---- 3 processes met in a folder, processes 1 and 2 6 s and 3 s ahead ----
if "$bin" "${run[@]}" --comm gloo --ranks 2 --steps 1 2>&1 | grep -q "without gloo"; then
    echo "(a build without gloo: the --rendezvous part is left out)"
else
    parts=$((parts + 1))
    mkdir -m 700 rdv
    pids=()
    for p in 1 2; do
        shift_ns=$S1
        [ $p = 2 ] && shift_ns=$S2
        RANK=$p WORLD_SIZE=3 DDPTOP_TEST_CLOCK_SHIFT_NS=$shift_ns timeout 120 "$bin" "${run[@]}" --comm gloo \
            --strategy ddp --rendezvous "file:$tmp/rdv" >/dev/null 2>"rdv$p.err" &
        pids+=($!)
    done
    RANK=0 WORLD_SIZE=3 timeout 120 "$bin" "${run[@]}" --comm gloo --strategy ddp --rendezvous "file:$tmp/rdv" \
        --trace rdv.json >/dev/null 2>rdv.err
    rc=$?
    for p in "${pids[@]}"; do wait "$p" || rc=$((rc + 100)); done
    [ $rc -eq 0 ] && aligned rdv.json "1:$S1 2:$S2" >rdv.check 2>&1
    good=$?
    cat rdv.check 2>/dev/null
    [ $good -eq 0 ] &&
        ok "--rendezvous, processes 1 and 2 6 s and 3 s ahead: offsets -6 s and -3 s, steps and spans on rank 0's time" ||
        { tail -n 3 rdv.err rdv1.err rdv2.err; bad "--rendezvous, processes 1 and 2 ahead: rc $rc"; }
fi

[ $parts -eq 0 ] && { echo "skip: neither mpirun nor gloo"; exit 77; }
checks_done
