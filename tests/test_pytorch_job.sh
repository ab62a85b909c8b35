#!/usr/bin/env bash
# test_pytorch_job.sh - --replay on the traces a user's own PyTorch job
# writes, as the user passes them.
#
#   job   a real 2-process DDP job on gloo over loopback (pytorch_ddp_job.py:
#         torch.profiler with a schedule and tensorboard_trace_handler, two
#         cycles per rank into one folder). `ddptop --batch --replay DIR
#         --format json` must give ranks 0 and 1 (from the files' names, not
#         4 ranks from 4 files), each with the steps of its two cycles, and
#         every rank's compute%, comm% and idle% within 1 point of
#         pytorch_trace_oracle.py's independent reading of the same files.
#         The files as a shell glob in reverse order, as a comma list, as
#         .json.gz, and under tensorboard's default names (host_pid, no
#         rank: ranks from the workers' order, with a note) replay the same.
#         Each rank's critical path is a note (no device work), no figure.
#         Exit 77 when Debian's python3 has no torch (python3-torch).
#   args  the command line: --replay FILE FILE.. (a glob), --replay DIR,
#         options before and after them, a folder without traces and a
#         name outside --replay refused with one line and status 2, and
#         --help saying so. Hand-made files whose comm% is known on paper:
#         tests/fixtures/trace/kineto_gloo_cpu.json (30%, its second step: the first
#         is left out as ms/step leaves it; its gloo collectives
#         are user_annotation) and autograd_gloo.json (30 of 172 us).
#
#   whatif --predict of the same job, replayed (docs/predict.md, "A replayed
#         job"): over --link 1GB/s,50us, its measured step, comm and
#         exposed comm and its step at 2, 4, 8 and 64 ranks as
#         whatif_count.py counts them from the files (within 0.1%), replayed
#         and followed (--idle-exit); the
#         text report says where the sizes came from; with no gloo fit and
#         no --link, a note naming --bench-comm --comm gloo and no numbers.
#
# Usage: test_pytorch_job.sh /path/to/ddptop job|args|whatif
# Exit status: 0 pass, 1 fail, 77 skip.
set -u
BIN=${1:?usage: test_pytorch_job.sh /path/to/ddptop job|args|whatif}
CASE=${2:?usage: test_pytorch_job.sh /path/to/ddptop job|args|whatif}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures/trace
PY=${DDPTOP_PYTHON:-/usr/bin/python3} # Debian's, with python3-torch
T=$(mktemp -d /tmp/ddptop-pyjob.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1"
    [ -n "${2:-}" ] && [ -s "$2" ] && sed 's/^/    /' "$2" | head -30
    fails=$((fails + 1))
    [ -n "${DDPTOP_FAIL_FAST:-}" ] && exit 1 # (the mutation harness: one failure is enough)
}

# per_rank A B: the per-rank figures of two --format json reports are the same
same_ranks() {
    python3 - "$1" "$2" <<'PY'
import json, sys
keys = ("rank", "steps", "compute_pct", "comm_pct", "data_pct", "idle_pct", "overlap_pct", "ms_mean")
a, b = ([{k: r.get(k) for k in keys} for r in json.load(open(f))["per_rank"]] for f in sys.argv[1:3])
if a != b:
    sys.exit("differ:\n %s\n %s" % (a, b))
PY
}

# pct JSON RANK KEY WANT: rank RANK's KEY is WANT within 1e-6
pct() {
    python3 - "$@" <<'PY'
import json, sys
f, rank, key, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
rows = {r["rank"]: r for r in json.load(open(f))["per_rank"]}
got = rows[rank][key]
if abs(got - want) > 1e-6:
    sys.exit("rank %d %s: %s, wanted %s" % (rank, key, got, want))
PY
}

# run_job OUT: the 2-process job, its traces into OUT; 1 (with a failure
# said) when it did not run, exit 77 without torch
run_job() {
    if ! "$PY" -c 'import torch, torch.distributed as d, torch.profiler; assert d.is_available() and d.is_gloo_available()' \
        2>"$T/torch.err"; then
        echo "SKIP: $PY cannot import torch with gloo (apt install python3-torch)"
        exit 77
    fi
    local out=$1 pids=()
    for r in 0 1; do
        timeout 120 "$PY" "$HERE/pytorch_ddp_job.py" --rank $r --world 2 --init "file://$T/store" --out "$out" \
            >"$T/job$r.log" 2>&1 &
        pids+=($!)
    done
    local rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    if [ $rc -ne 0 ]; then
        fail "the PyTorch job ran" "$T/job0.log"
        cat "$T/job1.log"
        return 1
    fi
}

case_job() {
    local out=$T/tb
    run_job "$out" || return
    local n
    n=$(find "$out" -name '*.pt.trace.json' | wc -l)
    if [ "$n" -eq 4 ]; then pass "the job wrote 2 cycles per rank (4 files)"; else fail "the job wrote $n files, not 4"; fi

    # the folder
    if "$BIN" --batch --replay "$out" --format json >"$T/dir.json" 2>"$T/dir.err"; then
        pass "--replay DIR reads the folder"
    else
        fail "--replay DIR" "$T/dir.err"
    fi
    echo "    the job's traces are in the $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["replay"]["format"])' "$T/dir.json") format"
    if python3 "$HERE/pytorch_trace_oracle.py" "$out" --check "$T/dir.json" --tol 1 >"$T/oracle.out" 2>&1; then
        pass "ranks 0 and 1, their steps and each one's compute/comm/idle% agree with the oracle within 1 point"
        grep '^rank' "$T/oracle.out" | sed 's/^/    /'
    else
        fail "ddptop against the oracle" "$T/oracle.out"
    fi
    # a CPU job on gloo: no device work to link its threads by, so each
    # rank's critical path is a note and no figure (trace/critpath.h)
    if python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))["runs"][0]["critical_path"]
g = [(r["rank"], r["valid"], "CPU-only" in (r["note"] or ""), r["length_us"], r["top"]) for r in c["ranks"]]
sys.exit(0 if g == [(0, False, True, None, []), (1, False, True, None, [])] else "    %s" % g)' "$T/dir.json"; then
        pass "each rank's critical path: a note that the job has no device work, no figure"
    else
        fail "the critical path of a CPU job on gloo"
    fi
    if grep -q -- '--replay: 2 rank(s), 2 profiler cycles each' "$T/dir.err"; then
        pass "the cycles are named as cycles of 2 ranks"
    else
        fail "no note of 2 ranks with 2 cycles each" "$T/dir.err"
    fi

    # a shell glob, in reverse order; a comma list
    # shellcheck disable=SC2046
    if "$BIN" --batch --format json --replay $(ls -r "$out"/*.json) >"$T/glob.json" 2>"$T/glob.err" &&
        same_ranks "$T/dir.json" "$T/glob.json" 2>"$T/glob.err"; then
        pass "the files as a glob in reverse order replay the same"
    else
        fail "the files as a glob in reverse order" "$T/glob.err"
    fi
    if "$BIN" --batch --replay "$(ls "$out"/*.json | sort -r | paste -sd, -)" --format json >"$T/list.json" 2>"$T/list.err" &&
        same_ranks "$T/dir.json" "$T/list.json" 2>"$T/list.err"; then
        pass "the files as a comma list replay the same"
    else
        fail "the files as a comma list" "$T/list.err"
    fi
    if python3 "$HERE/pytorch_trace_oracle.py" "$out" --check "$T/list.json" --tol 1 >"$T/oracle.list" 2>&1; then
        pass "the comma list agrees with the oracle too"
    else
        fail "the comma list against the oracle" "$T/oracle.list"
    fi

    # gzip, as tensorboard_trace_handler(use_gzip=True) writes
    mkdir -p "$T/gz"
    for f in "$out"/*.json; do gzip -c "$f" >"$T/gz/$(basename "$f").gz"; done
    if "$BIN" --batch --replay "$T/gz" --format json >"$T/gz.json" 2>"$T/gz.err" &&
        same_ranks "$T/dir.json" "$T/gz.json" 2>"$T/gz.err"; then
        pass "a folder of .pt.trace.json.gz replays the same"
    else
        fail "a folder of .json.gz" "$T/gz.err"
    fi

    # tensorboard's default worker name, host_pid: no rank in it
    mkdir -p "$T/anon"
    for f in "$out"/*.json; do
        b=$(basename "$f")
        case $b in rank0.*) w=node_1111 ;; *) w=node_2222 ;; esac
        cp "$f" "$T/anon/$w.${b#rank?.}"
    done
    if "$BIN" --batch --replay "$T/anon" --format json >"$T/anon.json" 2>"$T/anon.err" &&
        same_ranks "$T/dir.json" "$T/anon.json" 2>>"$T/anon.err" &&
        grep -q 'name no rank' "$T/anon.err"; then
        pass "files named host_pid: each worker's cycles are one rank, in the workers' order, with a note"
    else
        fail "files named host_pid" "$T/anon.err"
    fi
}

case_args() {
    # two ranks' files, named as tensorboard_trace_handler(worker_name=f"rank{r}") names them
    mkdir -p "$T/tb" "$T/empty"
    cp "$FIX/autograd_gloo.json" "$T/tb/rank0.1712345678100.pt.trace.json"
    cp "$FIX/kineto_gloo_cpu.json" "$T/tb/b.json" # rank 1 by its distributedInfo
    local a=$T/tb/rank0.1712345678100.pt.trace.json b=$T/tb/b.json

    if "$BIN" --batch --replay "$b" "$a" --format json >"$T/two.json" 2>"$T/two.err" &&
        pct "$T/two.json" 0 comm_pct "$(python3 -c 'print(100 * 30 / 172)')" 2>>"$T/two.err" &&
        pct "$T/two.json" 1 comm_pct 30 2>>"$T/two.err"; then
        pass "--replay FILE FILE: two files as arguments, each its rank's (30/172 us and 30/100 us comm, by hand)"
    else
        fail "--replay FILE FILE" "$T/two.err"
    fi
    if "$BIN" --format json --replay "$a" "$b" --batch >"$T/ab.json" 2>"$T/ab.err" &&
        same_ranks "$T/two.json" "$T/ab.json" 2>>"$T/ab.err"; then
        pass "the other order, options before and after: the same ranks"
    else
        fail "--replay A B against B A" "$T/ab.err"
    fi
    if "$BIN" --batch --replay "$T/tb" --format json >"$T/dir.json" 2>"$T/dir.err" &&
        same_ranks "$T/two.json" "$T/dir.json" 2>>"$T/dir.err"; then
        pass "--replay DIR: every trace in it"
    else
        fail "--replay DIR" "$T/dir.err"
    fi
    "$BIN" --batch --replay "$T/empty" >"$T/empty.out" 2>"$T/empty.err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$T/empty.err")" -eq 1 ] && grep -q 'a folder without a trace in it' "$T/empty.err"; then
        pass "a folder without traces: one line, status 2"
    else
        fail "a folder without traces: status $rc" "$T/empty.err"
    fi
    "$BIN" --batch "$a" >"$T/bare.out" 2>"$T/bare.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "unexpected argument" "$T/bare.err"; then
        pass "a file name without --replay is still refused"
    else
        fail "a file name without --replay: status $rc" "$T/bare.err"
    fi
    "$BIN" --batch --replay "$a" "$T/missing.json" >"$T/miss.out" 2>"$T/miss.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "missing.json" "$T/miss.err"; then
        pass "a missing file among the arguments is named, status 2"
    else
        fail "a missing file among the arguments: status $rc" "$T/miss.err"
    fi
    "$BIN" --help >"$T/help.out" 2>&1
    if grep -A3 -- '--replay FILE|DIR' "$T/help.out" | tr -s ' \n' ' ' | grep -q 'a folder, every .json and .json.gz in it'; then
        pass "--help tells of files and folders"
    else
        fail "--help does not tell of --replay DIR" "$T/help.out"
    fi
}

case_whatif() {
    local out=$T/tb
    run_job "$out" || return
    # over a given link, so that the expected figures need no fit: the
    # independent count of the documented model from the files
    if "$BIN" --batch --replay "$out" --predict --link 1GB/s,50us --predict-ranks 2,4,8,64 --format json \
        >"$T/w.json" 2>"$T/w.err" &&
        python3 "$HERE/whatif_count.py" "$out" 1e9 50e-6 2,4,8,64 --check "$T/w.json" >"$T/w.out" 2>&1; then
        pass "--predict of the replayed job over --link agrees with whatif_count.py (step, comm, exposed at 2-64 ranks)"
    else
        cat "$T/w.err" >>"$T/w.out"
        fail "--predict of the replayed job against whatif_count.py" "$T/w.out"
    fi
    # the same files followed (the cycles gathered one by one): the same count
    if "$BIN" --batch --follow "$out" --idle-exit 0.5 --predict --link 1GB/s,50us --predict-ranks 2,4,8,64 \
        --format json >"$T/wf.json" 2>"$T/wf.err" &&
        python3 "$HERE/whatif_count.py" "$out" 1e9 50e-6 2,4,8,64 --check "$T/wf.json" >"$T/wf.out" 2>&1; then
        pass "--follow of the finished job predicts what the count says too"
    else
        cat "$T/wf.err" >>"$T/wf.out"
        fail "--predict of the followed job against whatif_count.py" "$T/wf.out"
    fi
    if "$BIN" --batch --replay "$out" --predict --link 1GB/s,50us >"$T/w.txt" 2>&1 &&
        grep -q 'predicts the traced job on more ranks' "$T/w.txt" &&
        grep -q "sizes from --link's ring at 2 ranks inverted" "$T/w.txt"; then
        pass "the text report names the prediction and where the sizes came from"
    else
        fail "the text report's prediction" "$T/w.txt"
    fi
    # no fit for gloo and no --link: one line saying how to get one, no numbers
    if DDPTOP_COMM_MODEL=$T/no-model.json "$BIN" --batch --replay "$out" --predict --format json >"$T/nofit.json" \
        2>"$T/nofit.err" &&
        python3 - "$T/nofit.json" <<'PY' 2>>"$T/nofit.err"; then
import json, sys
p = json.load(open(sys.argv[1]))["runs"][0]["job_prediction"]
assert "ddptop --bench-comm --comm gloo" in (p["note"] or ""), p
assert p["step_ms"] is None and p["rows"] == [], p
PY
        pass "without a gloo fit or --link: a note naming --bench-comm --comm gloo, no numbers"
    else
        fail "without a fit" "$T/nofit.err"
    fi
}

case $CASE in
job) case_job ;;
whatif) case_whatif ;;
args) case_args ;;
*)
    echo "unknown case $CASE"
    exit 1
    ;;
esac
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all passed"
