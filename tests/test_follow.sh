#!/usr/bin/env bash
# test_follow.sh - `ddptop --batch --follow DIR --idle-exit S` on a folder
# while it is written.
#
#   job        a real 2-process DDP job on gloo (pytorch_ddp_job.py:
#              torch.profiler, tensorboard_trace_handler, 3 cycles per rank,
#              1.5 s apart) writes into a folder ddptop already follows.
#              Every file is one cycle line (rank, cycle number, steps) whose
#              compute%, comm% and idle% are within 1 point of
#              pytorch_trace_oracle.py's reading of the same file, and its
#              own work within 1%; the report's ranks 0 and 1 agree with the
#              oracle within 1 point and equal --replay of the folder; the
#              first cycle was told before the job wrote its last file (it
#              was followed, not read at the end); ddptop left S seconds or
#              more after the last file, and the stragglers it named are
#              those the documented rule gives over the oracle's own times.
#   straggler  the same job writing .json.gz, with rank 1 sleeping 200 ms
#              before each forward: rank 1 is named the straggler of every
#              cycle and rank 0 of none, and the figures agree with the
#              oracle.
#   partial    files written in pieces into the followed folder, by a
#              writer that closes the file after each piece (plain) or
#              keeps it open (gzip), with pauses longer than the follower's
#              quiet time: no error, no cycle before the file is whole, one
#              after, soon after (within --idle-exit's 2 s); ddptop does not
#              leave while a file grows slowly (2.3 s for the first, its
#              pieces 0.6 s apart); the figures
#              are the fixtures' worked out on paper (30 of 172 us, and
#              30 of 100 over the second step); a malformed file is refused with one line and
#              following goes on. With inotify, and listing the folder
#              (DDPTOP_FOLLOW_POLL=1).
#   ranks      hand-made files of 3 ranks, then of 4, written into the
#              followed folder one at a time, slow rank last (its file
#              waits for the others' cycle lines): own work per 100 ms
#              step 50, 58, 68 ms (3 ranks), 58, 68, 50, 55 ms (4 ranks,
#              landing as ranks 0, 2, 3, 1). The one straggler line names
#              the rank and the figures worked out by hand: rank 2, 68 ms
#              against the others' median 54 (the mean of 50 and 58);
#              rank 1, 68 ms against 55 (the middle of 50, 55, 58 sorted);
#              each rank's compute% is its own work over 100 ms.
#   kernels    two ranks' two cycles made from kineto_kernels_top.json (a
#              kernel k00_warm in each cycle's first step, which ddptop's
#              window leaves out of the rank's first cycle alone; a
#              k13_big in the second cycle, which moves the merged cut),
#              written one at a time into the followed folder: the
#              report's JSON `kernels` equals --replay's of the folder,
#              and kernel_count.py's count over the files' JSON (names,
#              counts, sums of dur by HTA's type rule and cut); with a
#              DtoD copy in each cycle's first step and an HtoD in step 2,
#              its `memcpy` too (and memcpy_count.py's count); with 4
#              kernels launched on stream 9 (3 queued in step 2, 1 in
#              step 1), its `queue` too: 14 points a rank, at most 3;
#              with those and the copies, k00_warm and k13_big launched
#              by runtime calls (correlation ids), its `launch` too (and
#              launch_count.py's count: each rank's medians over its
#              cycles together), and its `idle` per stream (stream 9: 7
#              ops a rank; and idle_count.py's count, each cycle a
#              timeline of its own; again with --idle-delay-ns 100000).
#   late       stragglers3 (fixtures/trace: 3 ranks) cut into two cycles
#              per rank, followed under --window hta: the run's late
#              collectives (trace/straggler.h), merged over every rank's
#              cycles, equal --replay's of the folder, the counts worked by
#              hand for the file whole, and straggler_count.py's.
#   memory     kineto_memory.json (fixtures/trace) as two ranks' two
#              cycles (the second 2000 us and two steps later), written one
#              at a time into the followed folder: the run's memory
#              timeline (trace/memtl.h), each cycle's added as it lands,
#              equals --replay's of the folder, and memory_count.py's count
#              over the files: rank 1's cuda:0 12 events over steps 1-4, its
#              peak 25600 in step 2.
#   critpath   critpath.json (rank 0) and critpath_stream.json (rank 1) as
#              two cycles each (the second 3100 us and three steps later),
#              written one at a time: each rank's critical path, made per
#              step as a cycle lands and taken at its median step over all
#              cycles, equals --replay's of the folder, the hand-worked
#              paths (step 1 of 6; test_pytorch_traces.sh, case critpath)
#              and critpath_count.py's count over the files.
#   args       the command line: a missing folder, a file, --idle-exit
#              without --follow, options --follow does not read, a second
#              argument: one line and status 2; without --batch on a
#              non-terminal, --follow runs headless; --help tells of both.
#
# job and straggler exit 77 when Debian's python3 has no torch.
# Usage: test_follow.sh /path/to/ddptop job|straggler|partial|ranks|kernels|late|memory|critpath|args
# Exit status: 0 pass, 1 fail, 77 skip.
set -u
BIN=${1:?usage: test_follow.sh /path/to/ddptop job|straggler|partial|ranks|args}
CASE=${2:?usage: test_follow.sh /path/to/ddptop job|straggler|partial|ranks|args}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures/trace
PY=${DDPTOP_PYTHON:-/usr/bin/python3} # Debian's, with python3-torch
T=$(mktemp -d /tmp/ddptop-follow.XXXXXX)
DPID=""
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null
    [ -n "${KEEP_T:-}" ] && { echo "kept $T"; return; }
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1"
    [ -n "${2:-}" ] && [ -s "$2" ] && sed 's/^/    /' "$2" | head -40
    fails=$((fails + 1))
    [ -n "${DDPTOP_FAIL_FAST:-}" ] && exit 1 # (the mutation harness: one failure is enough)
}
now_ns() { date +%s%N; }
# stamp FILE: each line of stdin, with the time it came (ns), into FILE
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s%N)" "$l"; done >"$1"; }
# mtime_ns FILE
mtime_ns() { stat -c %.9Y "$1" | tr -d .; }

need_torch() {
    if ! "$PY" -c 'import torch, torch.distributed as d, torch.profiler; assert d.is_available() and d.is_gloo_available()' \
        2>"$T/torch.err"; then
        echo "SKIP: $PY cannot import torch with gloo (apt install python3-torch)"
        exit 77
    fi
}

# follow_job OUT JOB_ARGS...: ddptop follows the empty folder OUT while the
# 2-process job writes into it; ddptop's report in $T/report.json, its
# stderr stamped in $T/err.ts, its status in $T/rc, the job's end in $T/job_end.
follow_job() {
    local out=$1 pids=() r
    shift
    mkdir -p "$out"
    for r in 0 1; do
        timeout 300 "$PY" "$HERE/pytorch_ddp_job.py" --rank $r --world 2 --init "file://$T/store" --out "$out" \
            "$@" >"$T/job$r.log" 2>&1 &
        pids+=($!)
    done
    # both processes have torch and their process group before ddptop starts
    # (--idle-exit counts from its start); the first cycle is 1.5 s away then
    local deadline=$(($(date +%s) + 120))
    until grep -q started "$T/job0.log" && grep -q started "$T/job1.log"; do
        if [ "$(date +%s)" -gt "$deadline" ] || ! kill -0 "${pids[0]}" 2>/dev/null; then
            fail "the PyTorch job did not start" "$T/job0.log"
            return 1
        fi
        sleep 0.1
    done
    ("$BIN" --batch --follow "$out" --idle-exit 8 --format json >"$T/report.json" 2> >(stamp "$T/err.ts")
        echo $? >"$T/rc") &
    DPID=$!
    local rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    now_ns >"$T/job_end"
    if [ $rc -ne 0 ]; then
        fail "the PyTorch job ran" "$T/job0.log"
        cat "$T/job1.log"
        return 1
    fi
    wait "$DPID"
    DPID=""
    now_ns >"$T/ddptop_end"
    sleep 0.2 # (the stamping loop's last lines)
    return 0
}

case_job() {
    need_torch
    local out=$T/tb
    follow_job "$out" --steps 15 --repeat 3 --cycle-gap-ms 1500 || return
    local n
    n=$(find "$out" -name '*.pt.trace.json' | wc -l)
    if [ "$n" -eq 6 ]; then pass "the job wrote 3 cycles per rank (6 files)"; else fail "the job wrote $n files, not 6"; fi
    if [ "$(cat "$T/rc")" = 0 ]; then pass "--batch --follow --idle-exit exits 0"; else fail "status $(cat "$T/rc")" "$T/err.ts"; fi
    python3 "$HERE/pytorch_trace_oracle.py" "$out" --cycles >"$T/oracle.json" || { fail "the oracle"; return; }
    if python3 "$HERE/follow_check.py" cycles "$T/err.ts" "$T/oracle.json" >"$T/cycles.out" 2>&1; then
        pass "each file is one cycle line, its rank, number and steps right, comm/compute/idle% within 1 point of the oracle"
    else
        fail "the cycle lines against the oracle" "$T/cycles.out"
    fi
    if python3 "$HERE/pytorch_trace_oracle.py" "$out" --check "$T/report.json" --tol 1 >"$T/oracle.out" 2>&1; then
        pass "the report: ranks 0 and 1 and their steps, every rank's compute/comm/idle% within 1 point of the oracle"
        grep '^rank' "$T/oracle.out" | sed 's/^/    /'
    else
        fail "the report against the oracle" "$T/oracle.out"
    fi
    if "$BIN" --batch --replay "$out" --format json >"$T/replay.json" 2>/dev/null &&
        python3 - "$T/report.json" "$T/replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = ("rank", "steps", "ms_mean", "ms_p50", "ms_p90", "compute_pct", "comm_pct", "data_pct", "idle_pct")
ra = [{k: r.get(k) for k in keys} for r in a["per_rank"]]
rb = [{k: r.get(k) for k in keys} for r in b["per_rank"]]
sys.exit(0 if ra == rb else "differ:\n%s\n%s" % (ra, rb))
PY
        pass "the report equals --replay of the folder, rank by rank"
    else
        fail "the report differs from --replay of the folder"
    fi
    if grep -q -- '--follow: 2 rank(s), 3 profiler cycles each' "$T/err.ts"; then
        pass "2 ranks with 3 cycles each, said"
    else
        fail "no note of 2 ranks with 3 cycles each" "$T/err.ts"
    fi
    # followed while the job ran: the first cycle was told before the last file was written
    local first last_file newest=0 f m
    first=$(grep -m1 -- '--follow: rank . cycle 1 ' "$T/err.ts" | cut -d' ' -f1)
    for f in "$out"/*.json; do
        m=$(mtime_ns "$f")
        [ "$m" -gt "$newest" ] && newest=$m
    done
    if [ -n "$first" ] && [ "$first" -lt "$newest" ]; then
        pass "the first cycle was told $(((newest - first) / 1000000)) ms before the job wrote its last file"
    else
        fail "the first cycle was not told while the job ran (first ${first:-none}, last file $newest)" "$T/err.ts"
    fi
    local quiet=$((($(cat "$T/ddptop_end") - newest) / 1000000))
    if [ "$quiet" -ge 8000 ] && [ "$quiet" -lt 60000 ]; then
        pass "ddptop reported $quiet ms after the last file (--idle-exit 8)"
    else
        fail "ddptop reported $quiet ms after the last file, not 8 s or more (under 60)"
    fi
    if grep -qiE 'left out|error|not whole' "$T/err.ts"; then fail "something was left out" "$T/err.ts"; else pass "nothing left out"; fi
    if python3 "$HERE/follow_check.py" straggler "$T/err.ts" "$T/oracle.json" >"$T/strag.out" 2>&1; then
        pass "the stragglers named are those the rule gives over the oracle's own work per step"
        sed 's/^/    /' "$T/strag.out"
    else
        fail "the stragglers named" "$T/strag.out"
    fi
}

case_straggler() {
    need_torch
    local out=$T/tb
    follow_job "$out" --steps 15 --repeat 3 --cycle-gap-ms 1500 --gzip --slow-rank 1 --slow-ms 200 || return
    local n
    n=$(find "$out" -name '*.pt.trace.json.gz' | wc -l)
    if [ "$n" -eq 6 ]; then pass "the job wrote 6 .json.gz files"; else fail "the job wrote $n .json.gz files, not 6"; fi
    if [ "$(cat "$T/rc")" = 0 ]; then pass "exit 0"; else fail "status $(cat "$T/rc")" "$T/err.ts"; fi
    python3 "$HERE/pytorch_trace_oracle.py" "$out" --cycles >"$T/oracle.json" || { fail "the oracle"; return; }
    if python3 "$HERE/follow_check.py" cycles "$T/err.ts" "$T/oracle.json" >"$T/cycles.out" 2>&1; then
        pass "each .json.gz is one cycle line, its figures within 1 point of the oracle"
    else
        fail "the cycle lines against the oracle" "$T/cycles.out"
    fi
    if python3 "$HERE/pytorch_trace_oracle.py" "$out" --check "$T/report.json" --tol 1 >"$T/oracle.out" 2>&1; then
        pass "the report agrees with the oracle within 1 point"
    else
        fail "the report against the oracle" "$T/oracle.out"
    fi
    if python3 "$HERE/follow_check.py" straggler "$T/err.ts" "$T/oracle.json" --expect 1 >"$T/strag.out" 2>&1; then
        pass "rank 1 (200 ms asleep each step) is the straggler of every cycle, rank 0 of none"
        sed 's/^/    /' "$T/strag.out"
    else
        fail "the straggler" "$T/strag.out"
    fi
}

# pieces MODE: the partial case once, MODE inotify or poll
pieces() {
    local mode=$1 d=$T/$1
    mkdir -p "$d"
    local env=()
    [ "$mode" = poll ] && env=(env DDPTOP_FOLLOW_POLL=1)
    # the writer: a's pieces each closed, then b's in one open file, then a
    # malformed file; each file's completion time (ns) in $T/$mode.done. It
    # is started first and writes once ddptop runs (the go file), so that
    # its start-up on a loaded machine does not count in --idle-exit's 2 s
    rm -f "$T/$mode.ready" "$T/$mode.go"
    python3 - "$d" "$FIX" "$T/$mode.done" "$T/$mode.ready" "$T/$mode.go" <<'PY' &
import gzip, os, sys, time
d, fix, done, ready, go = sys.argv[1:6]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
marks = []
def pieces(name, data, reopen):
    path = os.path.join(d, name)
    step = len(data) // 4 + 1
    f = None
    for at in range(0, len(data), step):
        if at + step >= len(data):
            # the file is whole once this piece is written: no read may
            # come before (taken before the write, so never after a read)
            last = time.time_ns()
        if reopen:
            with open(path, "ab" if at else "wb") as g:   # closed after each piece
                g.write(data[at:at + step])
        else:
            f = f or open(path, "wb")
            f.write(data[at:at + step])
            f.flush()
        if at + step < len(data):
            time.sleep(0.6)                              # past the follower's quiet time
    if f:
        f.close()
    marks.append("%s %d" % (name, last))
time.sleep(0.2)
pieces("rank0.1712345678100.pt.trace.json", open(os.path.join(fix, "autograd_gloo.json"), "rb").read(), True)
pieces("b.1712345678200.pt.trace.json.gz", gzip.compress(open(os.path.join(fix, "kineto_gloo_cpu.json"), "rb").read()),
       False)
with open(os.path.join(d, "bad.json"), "w") as g:
    g.write("[{}}]")
open(done, "w").write("\n".join(marks) + "\n")
PY
    local wpid=$! deadline=$(($(date +%s) + 60))
    until [ -e "$T/$mode.ready" ] || [ "$(date +%s)" -gt "$deadline" ]; do sleep 0.05; done
    # --idle-exit 2: the first file takes 2.3 s to write, its pieces 0.6 s
    # apart; each piece keeps the follower from leaving (a file growing is
    # the job at work)
    ("${env[@]}" "$BIN" --batch --follow "$d" --idle-exit 2 --format json >"$T/$mode.json" 2> >(stamp "$T/$mode.err")
        echo $? >"$T/$mode.rc") &
    DPID=$!
    touch "$T/$mode.go"
    wait "$wpid"
    wait "$DPID"
    DPID=""
    sleep 0.2
    local rc
    rc=$(cat "$T/$mode.rc")
    if [ "$rc" = 0 ]; then pass "$mode: exit 0"; else fail "$mode: status $rc" "$T/$mode.err"; fi
    local name done_ns line n
    while read -r name done_ns; do
        n=$(grep -c -- "--follow: rank . cycle 1 ([^,]*, $name)" "$T/$mode.err")
        line=$(grep -m1 -- "--follow: rank . cycle 1 ([^,]*, $name)" "$T/$mode.err" | cut -d' ' -f1)
        if [ "$n" = 1 ] && [ "$line" -ge "$done_ns" ] && [ $((line - done_ns)) -lt 2000000000 ]; then
            pass "$mode: $name read once, $(((line - done_ns) / 1000000)) ms after its last piece (not before)"
        else
            fail "$mode: $name: $n cycle line(s), at ${line:-never} against its last piece at $done_ns" "$T/$mode.err"
        fi
    done <"$T/$mode.done"
    if [ "$(grep -c 'left out' "$T/$mode.err")" = 1 ] && grep -q 'bad.json.*left out' "$T/$mode.err"; then
        pass "$mode: the malformed file alone is refused, in one line"
    else
        fail "$mode: what was left out" "$T/$mode.err"
    fi
    if python3 - "$T/$mode.json" <<'PY'; then
import json, sys
rows = {r["rank"]: r for r in json.load(open(sys.argv[1]))["per_rank"]}
# the fixtures, by hand; rank 1's file has steps 5 and 6, and the first
# is left out as ms/step leaves it out: in step 6 [100, 200) us, the
# all_reduce [150, 190) less the backward to 160 is comm: 30 of 100 us
want = {0: 100 * 30 / 172, 1: 30.0}
bad = [(k, rows.get(k, {}).get("comm_pct"), v) for k, v in want.items()
       if k not in rows or abs(rows[k]["comm_pct"] - v) > 1e-6]
sys.exit("comm%% (rank, got, want): %s" % bad if bad or len(rows) != 2 else 0)
PY
        pass "$mode: rank 0's comm is 30 of 172 us and rank 1's 30 of 100, as on paper"
    else
        fail "$mode: the report's figures"
    fi
}

case_partial() {
    pieces inotify
    pieces poll
}

# steps_file PATH OWN_MS: two ProfilerSteps of 100 ms, each with OWN_MS of
# aten::conv2d on the main thread and the rest of the step in
# gloo:all_reduce on another (autograd's format, times in us)
steps_file() {
    local own=$(($2 * 1000)) rest=$(((100 - $2) * 1000)) ev=() k t
    for k in 1 2; do
        t=$(((k - 1) * 100000))
        ev+=("{\"name\":\"ProfilerStep#$k\",\"ph\":\"X\",\"ts\":$t,\"dur\":100000,\"tid\":1,\"pid\":\"CPU functions\"}")
        ev+=("{\"name\":\"aten::conv2d\",\"ph\":\"X\",\"ts\":$t,\"dur\":$own,\"tid\":1,\"pid\":\"CPU functions\"}")
        ev+=("{\"name\":\"gloo:all_reduce\",\"ph\":\"X\",\"ts\":$((t + own)),\"dur\":$rest,\"tid\":2,\"pid\":\"CPU functions\"}")
    done
    local IFS=,
    echo "[${ev[*]}]" >"$1.tmp" && mv "$1.tmp" "$1"
}

# ranks_of TAG "RANK:OWN_MS ..." SLOW OWN OTHERS: the files land in the
# order given, each once the one before has its cycle line; then the one
# straggler line must be rank SLOW's, with OWN and OTHERS (ms, as printed)
ranks_of() {
    local tag=$1 spec=$2 slow=$3 own=$4 others=$5 d=$T/$1 r ms item
    mkdir -p "$d"
    "$BIN" --batch --follow "$d" --idle-exit 4 --format json >"$T/$tag.json" 2>"$T/$tag.err" &
    DPID=$!
    for item in $spec; do
        r=${item%%:*} ms=${item#*:}
        steps_file "$d/rank$r.$((1000 + r)).pt.trace.json" "$ms"
        local deadline=$(($(date +%s) + 30))
        until grep -q -- "--follow: rank $r cycle 1 " "$T/$tag.err"; do
            if [ "$(date +%s)" -gt "$deadline" ]; then
                fail "$tag: rank $r's file was not read within 30 s" "$T/$tag.err"
                break
            fi
            sleep 0.05
        done
    done
    wait "$DPID"
    local rc=$?
    DPID=""
    if [ $rc = 0 ]; then pass "$tag: exit 0"; else fail "$tag: status $rc" "$T/$tag.err"; fi
    local want="--follow: cycle 1: rank $slow is the straggler: $own ms of its own work per step, the others $others (median)"
    if [ "$(grep -c 'is the straggler' "$T/$tag.err")" = 1 ] && grep -qF -- "$want" "$T/$tag.err"; then
        pass "$tag: one straggler line: rank $slow, $own ms against the others' median $others"
    else
        fail "$tag: the straggler lines, not the one of rank $slow, $own ms against $others" "$T/$tag.err"
    fi
    if python3 - "$T/$tag.json" "$spec" <<'PY'; then
import json, sys
rows = {r["rank"]: r for r in json.load(open(sys.argv[1]))["per_rank"]}
# each rank's second step (the first is left out): its own work of 100 ms
# computes, the rest is the all_reduce
want = {int(i.split(":")[0]): float(i.split(":")[1]) for i in sys.argv[2].split()}
bad = [(k, rows.get(k, {}).get("compute_pct"), v) for k, v in want.items()
       if k not in rows or abs(rows[k]["compute_pct"] - v) > 1e-6 or abs(rows[k]["comm_pct"] - (100 - v)) > 1e-6]
sys.exit("compute%% (rank, got, want): %s" % bad if bad or len(rows) != len(want) else 0)
PY
        pass "$tag: each rank's compute% is its own work over 100 ms, comm% the rest"
    else
        fail "$tag: the report's figures"
    fi
}

case_ranks() {
    ranks_of three "0:50 1:58 2:68" 2 68.00 54.00
    ranks_of four "0:58 2:50 3:55 1:68" 1 68.00 55.00
}

# kernel_cycles OUT: rank 0's and 1's cycles 1 and 2 from kineto_kernels_top.json
kernel_cycles() {
    python3 - "$FIX/kineto_kernels_top.json" "$1" <<'PY'
import copy, json, re, sys
src, out = json.load(open(sys.argv[1])), sys.argv[2]
for rank in (0, 1):
    for cycle in (1, 2):
        d = copy.deepcopy(src)
        d["distributedInfo"].update(rank=rank, world_size=2)
        ev = d["traceEvents"]
        ev.append({"ph": "X", "cat": "kernel", "name": "k00_warm", "pid": 0, "tid": 7, "ts": 100, "dur": 100 + rank,
                   "args": {"stream": 7, "correlation": 9001}})
        ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7,
                   "ts": 300, "dur": 5, "args": {"stream": 7, "bytes": 5000000, "memory bandwidth (GB/s)": 1000,
                                                 "correlation": 9002}})
        ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
                   "ts": 1950, "dur": 10 * cycle, "args": {"stream": 7, "bytes": 1000000 * (rank + 1),
                                                           "memory bandwidth (GB/s)": 100.0 * (rank + 1) / cycle,
                                                           "correlation": 9003}})
        calls = [("cudaLaunchKernel", 80, 10 + rank, 9001), ("cudaMemcpyAsync", 290, 5, 9002),
                 ("cudaMemcpyAsync", 1800, 60 - 20 * rank, 9003)]
        if cycle == 2:
            ev.append({"ph": "X", "cat": "kernel", "name": "k13_big", "pid": 0, "tid": 7, "ts": 1900, "dur": 400,
                       "args": {"stream": 7, "correlation": 9004}})
            calls.append(("cudaLaunchKernel", 1700, 20, 9004))
        for name, ts, dur, corr in calls:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": 101, "ts": ts, "dur": dur,
                       "args": {"correlation": corr}})
        # launched kernels on stream 9, each in the step it is launched in: 3 queued in step 2, 1 in step 1
        for i, (at, start) in enumerate([(1200, 1300), (1201, 1310), (1202 + rank, 1320), (500, 600)]):
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
                       "ts": at, "dur": 1, "args": {"correlation": 900 + i}})
            ev.append({"ph": "X", "cat": "kernel", "name": "q_fill", "pid": 0, "tid": 9, "ts": start, "dur": 5,
                       "args": {"device": 0, "stream": 9, "correlation": 900 + i}})
        for e in ev:
            e["ts"] += (cycle - 1) * 100000
            m = re.fullmatch(r"ProfilerStep#(\d+)", e["name"])
            if m:
                e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + 3 * (cycle - 1))
        json.dump(d, open("%s/rank%d.%d.pt.trace.json" % (out, rank, 1000 * cycle), "w"))
PY
}

# land_all DIR FILE..: each FILE lands whole in DIR, 0.3 s apart (as a
# profiler finishes its cycles: written aside, then renamed in)
land_all() {
    local dir=$1 f
    shift
    for f in "$@"; do
        sleep 0.3
        cp "$f" "$dir/.tmp" && mv "$dir/.tmp" "$dir/$(basename "$f")"
    done
}

case_kernels() {
    local d=$T/kern src=$T/kern.src f
    mkdir -p "$d" "$src"
    kernel_cycles "$src" || { fail "kernels: the cycles could not be made"; return; }
    "$BIN" --batch --follow "$d" --idle-exit 3 --format json >"$T/kern.json" 2>"$T/kern.err" &
    DPID=$!
    land_all "$d" "$src"/*.json
    wait "$DPID"
    local rc=$?
    DPID=""
    if [ $rc = 0 ]; then pass "kernels: exit 0"; else fail "kernels: status $rc" "$T/kern.err"; fi
    if [ "$(grep -c -- '--follow: rank . cycle . ' "$T/kern.err")" = 4 ]; then
        pass "kernels: 4 cycles followed"
    else
        fail "kernels: not 4 cycle lines" "$T/kern.err"
    fi
    "$BIN" --batch --replay "$d" --format json >"$T/kern.replay.json" 2>/dev/null
    if python3 - "$T/kern.json" "$T/kern.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["kernels"] for f in sys.argv[1:3])
sys.exit(0 if a is not None and a == b else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "kernels: the followed job's kernels equal --replay's of the folder"
    else
        fail "kernels: --follow's kernels are not --replay's"
    fi
    if python3 - "$T/kern.json" "$T/kern.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["memcpy"] for f in sys.argv[1:3])
sys.exit(0 if a is not None and a == b else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "kernels: the followed job's memory copies equal --replay's of the folder"
    else
        fail "kernels: --follow's memory copies are not --replay's"
    fi
    if python3 - "$T/kern.json" "$T/kern.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["queue"] for f in sys.argv[1:3])
# per rank, stream 9: cycle 1 (step 1 left out) 1 2 3 2 1 0, cycle 2 also 1 0: 14 points
ok = a is not None and a == b and [[(s["stream"], s["count"], s["max"]) for s in r["streams"] if s["stream"] == 9]
                                   for r in a["ranks"]] == [[(9, 14, 3)]] * 2
sys.exit(0 if ok else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "kernels: the followed job's launch queues equal --replay's of the folder"
    else
        fail "kernels: --follow's launch queues are not --replay's"
    fi
    if python3 - "$T/kern.json" "$T/kern.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["launch"] for f in sys.argv[1:3])
sys.exit(0 if a is not None and a == b else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "kernels: the followed job's launch statistics equal --replay's of the folder"
    else
        fail "kernels: --follow's launch statistics are not --replay's"
    fi
    if python3 - "$T/kern.json" "$T/kern.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["idle"] for f in sys.argv[1:3])
# per rank, stream 9: cycle 1's 3 ops (its step 1 left out) and cycle 2's 4
ok = a is not None and a == b and [[(s["stream"], s["ops"]) for s in r["streams"] if s["stream"] == 9]
                                   for r in a["ranks"]] == [[(9, 7)]] * 2
sys.exit(0 if ok else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "kernels: the followed job's idle time per stream equals --replay's of the folder"
    else
        fail "kernels: --follow's idle time per stream is not --replay's"
    fi
    if python3 "$HERE/idle_count.py" "$T/kern.json" "$src"/*.json; then
        pass "kernels: idle time per stream as counted over the traces' JSON"
    else
        fail "kernels: idle time per stream not as counted over the traces' JSON"
    fi
    "$BIN" --batch --follow "$d" --idle-exit 1 --idle-delay-ns 100000 --format json >"$T/kern100.json" 2>/dev/null
    if python3 "$HERE/idle_count.py" --delay-us 100 "$T/kern100.json" "$src"/*.json; then
        pass "kernels: --idle-delay-ns 100000: idle time per stream as counted with a 100 us threshold"
    else
        fail "kernels: --idle-delay-ns 100000 not as counted with a 100 us threshold"
    fi
    if python3 "$HERE/launch_count.py" "$T/kern.json" "$src"/*.json; then
        pass "kernels: launch statistics as counted over the traces' JSON"
    else
        fail "kernels: launch statistics not as counted over the traces' JSON"
    fi
    if python3 "$HERE/memcpy_count.py" "$T/kern.json" "$src"/*.json; then
        pass "kernels: memory copies as counted over the traces' JSON"
    else
        fail "kernels: memory copies not as counted over the traces' JSON"
    fi
    if python3 "$HERE/kernel_count.py" "$T/kern.json" "$src"/*.json; then
        pass "kernels: as counted over the traces' JSON"
    else
        fail "kernels: not as counted over the traces' JSON"
    fi
}

# late_cycles DIR: stragglers3's three ranks, each in two cycles (steps 1-2,
# then 3-5), as c1_rankN.json and c2_rankN.json; an op goes with the step
# of its launch (a kernel, its correlation id's call)
late_cycles() {
    python3 - "$FIX/stragglers3" "$1" <<'PY'
import json, sys
src, out = sys.argv[1:3]
for rank in range(3):
    d = json.load(open("%s/rank%d.json" % (src, rank)))
    ev = d["traceEvents"]
    steps = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("ProfilerStep#")}
    step_of = lambda t: next(int(n.split("#")[1]) for n, (a, b) in steps.items() if a <= t < b)
    calls = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") == "cuda_runtime"}
    for cycle, keep in ((1, (1, 2)), (2, (3, 4, 5))):
        mine = [e for e in ev if step_of(e["ts"] if e.get("cat") != "kernel" else calls[e["args"]["correlation"]])
                in keep]
        json.dump(dict(d, traceEvents=mine), open("%s/c%d_rank%d.json" % (out, cycle, rank), "w"))
PY
}

case_late() {
    local d=$T/late src=$T/late.src f
    mkdir -p "$d" "$src"
    late_cycles "$src" || { fail "late: the cycles could not be made"; return; }
    "$BIN" --batch --follow "$d" --window hta --idle-exit 3 --format json >"$T/late.json" 2>"$T/late.err" &
    DPID=$!
    land_all "$d" "$src"/c1_*.json "$src"/c2_*.json
    wait "$DPID"
    local rc=$?
    DPID=""
    if [ $rc = 0 ]; then pass "late: exit 0"; else fail "late: status $rc" "$T/late.err"; fi
    "$BIN" --batch --replay "$d" --window hta --format json >"$T/late.replay.json" 2>/dev/null
    if python3 - "$T/late.json" "$T/late.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["stragglers"] for f in sys.argv[1:3])
# stragglers3 whole, worked by hand (test_pytorch_traces.sh straggler)
want = [[0, 2, 2, 90], [1, 3, 4, 50], [2, 0, 2, 0]]
ok = a is not None and a == b and a["straggler"] == 1 and a["steps"] == 4 and [
    [r["rank"], r["last"], r["late"], r["lead_us"]] for r in a["ranks"]] == want
sys.exit(0 if ok else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "late: the followed job's late collectives equal --replay's of the folder, and the hand-worked ones"
    else
        fail "late: --follow's late collectives are not --replay's"
    fi
    if python3 "$HERE/straggler_count.py" "$T/late.json" "$FIX"/stragglers3/rank*.json; then
        pass "late: as counted over the traces' JSON"
    else
        fail "late: not as counted over the traces' JSON"
    fi
}

case_memory() {
    local d=$T/mem src=$T/mem.src f
    mkdir -p "$d" "$src"
    python3 - "$FIX/kineto_memory.json" "$src" <<'PY' || { fail "memory: the cycles could not be made"; return; }
import json, re, sys
for rank in (0, 1):
    for cycle in (1, 2):
        d = json.load(open(sys.argv[1]))
        d["distributedInfo"]["rank"] = rank
        for e in d["traceEvents"]:
            e["ts"] += 2000 * (cycle - 1)
            e["name"] = re.sub(r"ProfilerStep#(\d+)", lambda m: "ProfilerStep#%d" % (int(m.group(1)) + 2 * (cycle - 1)),
                               e["name"])
            if "correlation" in e.get("args", {}):
                e["args"]["correlation"] += 10 * (cycle - 1)
        json.dump(d, open("%s/c%d_rank%d.json" % (sys.argv[2], cycle, rank), "w"))
PY
    "$BIN" --batch --follow "$d" --idle-exit 3 --format json >"$T/mem.json" 2>"$T/mem.err" &
    DPID=$!
    land_all "$d" "$src"/c1_*.json "$src"/c2_*.json
    wait "$DPID"
    local rc=$?
    DPID=""
    if [ $rc = 0 ]; then pass "memory: exit 0"; else fail "memory: status $rc" "$T/mem.err"; fi
    "$BIN" --batch --replay "$d" --format json >"$T/mem.replay.json" 2>/dev/null
    if python3 - "$T/mem.json" "$T/mem.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["memory_timeline"] for f in sys.argv[1:3])
r = a["ranks"][1] if a and len(a["ranks"]) == 2 else None
d = r["devices"][0] if r else {}
got = (d.get("device"), d.get("events"), [s["step"] for s in d.get("steps", [])], d.get("peak_bytes"),
       d.get("peak_step"))
ok = a == b and got == ("cuda:0", 12, [1, 2, 3, 4], 25600, 2)
sys.exit(0 if ok else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "memory: the followed job's memory timeline equals --replay's of the folder, and the hand-worked one"
    else
        fail "memory: --follow's memory timeline is not --replay's"
    fi
    if python3 "$HERE/memory_count.py" "$T/mem.json" "$src"/c*_rank*.json; then
        pass "memory: as counted over the traces' JSON"
    else
        fail "memory: not as counted over the traces' JSON"
    fi
}

case_critpath() {
    local d=$T/cp src=$T/cp.src
    mkdir -p "$d" "$src"
    python3 - "$FIX/critpath.json" "$FIX/critpath_stream.json" "$src" <<'PY' || { fail "critpath: no cycles made"; return; }
import json, re, sys
for rank in (0, 1):
    for cycle in (1, 2):
        d = json.load(open(sys.argv[1 + rank]))
        d["distributedInfo"]["rank"] = rank
        for e in d["traceEvents"]:
            e["ts"] += 3100 * (cycle - 1)
            e["name"] = re.sub(r"ProfilerStep#(\d+)", lambda m: "ProfilerStep#%d" % (int(m.group(1)) + 3 * (cycle - 1)),
                               e["name"])
            if "correlation" in e.get("args", {}):
                e["args"]["correlation"] += 10 * (cycle - 1)
        json.dump(d, open("%s/c%d_rank%d.json" % (sys.argv[3], cycle, rank), "w"))
PY
    "$BIN" --batch --follow "$d" --idle-exit 3 --format json >"$T/cp.json" 2>"$T/cp.err" &
    DPID=$!
    land_all "$d" "$src"/c1_*.json "$src"/c2_*.json
    wait "$DPID"
    local rc=$?
    DPID=""
    if [ $rc = 0 ]; then pass "critpath: exit 0"; else fail "critpath: status $rc" "$T/cp.err"; fi
    "$BIN" --batch --replay "$d" --format json >"$T/cp.replay.json" 2>/dev/null
    # by hand (test_pytorch_traces.sh, case critpath): of 6 steps the median
    # is step 1 (1000 us; step 4 ties it, a higher number); rank 0 the path
    # through its thread, rank 1 back along its stream
    if python3 - "$T/cp.json" "$T/cp.replay.json" <<'PY'; then
import json, sys
a, b = (json.load(open(f))["runs"][0]["critical_path"] for f in sys.argv[1:3])
got = [(r["rank"], r["step"], r["steps"], r["length_us"], r["kind_us"]["cpu"], r["kind_us"]["compute"])
       for r in (a or {}).get("ranks", [])]
ok = a == b and got == [(0, 1, 6, 1100, 420, 0), (1, 1, 6, 1100, 90, 530)]
sys.exit(0 if ok else "    follow %s\n    replay %s" % (json.dumps(a)[:600], json.dumps(b)[:600]))
PY
        pass "critpath: the followed job's critical paths equal --replay's of the folder, and the hand-worked ones"
    else
        fail "critpath: --follow's critical path is not --replay's"
    fi
    if python3 "$HERE/critpath_count.py" "$T/cp.json" "$src"/c*_rank*.json; then
        pass "critpath: as counted over the traces' JSON"
    else
        fail "critpath: not as counted over the traces' JSON"
    fi
}

# refused TAG WANT ARGS...: status 2, one line on stderr matching WANT
refused() {
    local tag=$1 want=$2
    shift 2
    "$BIN" "$@" >"$T/out" 2>"$T/err" </dev/null
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$want" "$T/err"; then
        pass "$tag: one line, status 2"
    else
        fail "$tag: status $rc" "$T/err"
    fi
}

case_args() {
    mkdir -p "$T/tb"
    cp "$FIX/autograd_gloo.json" "$T/tb/rank0.1712345678100.pt.trace.json"
    refused "a missing folder" "$T/none: No such file" --batch --follow "$T/none"
    refused "a file" "not a folder" --batch --follow "$T/tb/rank0.1712345678100.pt.trace.json"
    refused "--idle-exit without --follow" "idle-exit: only with --follow" --batch --idle-exit 3
    refused "--idle-exit 0" "idle-exit" --batch --follow "$T/tb" --idle-exit 0
    refused "--model with --follow" "does not apply to --follow" --batch --follow "$T/tb" --model lenet
    refused "--follow with --replay" "one mode at a time" --batch --follow "$T/tb" --replay "$T/tb"
    refused "a second argument" "unexpected argument" --batch --follow "$T/tb" "$T/tb"
    # not a terminal, no --batch: headless all the same
    "$BIN" --follow "$T/tb" --idle-exit 0.5 --format json >"$T/headless.json" 2>"$T/headless.err" </dev/null
    local rc=$?
    if [ $rc -eq 0 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["per_rank"]; sys.exit(r[0]["rank"] != 0)' \
        "$T/headless.json" 2>>"$T/headless.err"; then
        pass "without --batch on a non-terminal: the report after --idle-exit"
    else
        fail "without --batch on a non-terminal: status $rc" "$T/headless.err"
    fi
    mkdir -p "$T/empty"
    "$BIN" --batch --follow "$T/empty" --idle-exit 0.5 >"$T/empty.out" 2>"$T/empty.err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'no cycle landed' "$T/empty.err" && [ ! -s "$T/empty.out" ]; then
        pass "nothing landed: said, status 1, no report"
    else
        fail "nothing landed: status $rc" "$T/empty.err"
    fi
    "$BIN" --help >"$T/help.out" 2>&1
    if grep -q -- '--follow DIR' "$T/help.out" && grep -q -- '--idle-exit S' "$T/help.out"; then
        pass "--help tells of --follow and --idle-exit"
    else
        fail "--help" "$T/help.out"
    fi
}

case $CASE in
job) case_job ;;
straggler) case_straggler ;;
partial) case_partial ;;
ranks) case_ranks ;;
kernels) case_kernels ;;
late) case_late ;;
memory) case_memory ;;
critpath) case_critpath ;;
args) case_args ;;
*)
    echo "unknown case $CASE"
    exit 1
    ;;
esac
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all passed"
