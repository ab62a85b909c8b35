#!/usr/bin/env bash
# test_gloo_runs.sh - training runs on --comm gloo, from the command line:
#  - rank threads (a gloo context each, loopback TCP): every strategy and
#    --grad-compress end 20 steps within 1e-5 (relative) of `single` on the
#    global batch, and the report names gloo and the algorithm --algo chose;
#  - processes under mpirun (ranks and rendezvous from MPI): the same, and
#    2 processes x 2 rank threads (the shm ring inside, gloo between);
#  - faults (3 rank threads): a rank that crashes (its gloo contexts close
#    with it: its peers fail at once, without --comm-timeout), hangs
#    (--comm-timeout bounds its peers' waits, gloo's timeout) or loses its
#    link is named, the report of every rank is printed, and the run exits
#    1 in bounded time; a worker
#    process killed outright (SIGKILL) under mpirun likewise;
#  - --bench-comm --comm shm,gloo (and shm,gloo,mpi under mpirun): one
#    table per backend, named, sizes as counted by hand, #wrong 0, and a fit
#    of each stored under its backend's name;
#  - what cannot run is one line and exit 2: gloo's algorithms on ddptop's
#    own ring, ddptop's naive on gloo.
# A ddptop built without libgloo must refuse --comm gloo in one line
# naming libgloo-dev; then the rest cannot run (exit 77).
# Usage: test_gloo_runs.sh DDPTOP
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/checks.sh"
cd "$tmp"
reldiff() { python3 "$here/reldiff.py" "$1" "$2"; }

# (--no-eval: nothing here reads the test split's figures, and its
# evaluation would be most of each short run)
base=(--batch --quiet --dataset synthetic --device cpu --steps 20 --batch-size 32 --threads-per-rank 1 --no-eval)
out=$("$bin" "${base[@]}" --comm gloo --ranks 2 --steps 1 2>&1 >/dev/null)
rc=$?
if [[ "$out" == *"without gloo"* ]]; then
    if [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"libgloo-dev"* ]]; then
        echo "ok - a build without gloo refuses --comm gloo in one line naming libgloo-dev"
        echo "skip: the rest needs gloo"
        exit 77
    fi
    echo "FAIL - without gloo: rc $rc: $out"
    exit 1
fi

# json_of FILE: the first run's "replicas_identical ranks backend"
json_of() {
    python3 -c "import json; r = json.load(open('$1'))['runs'][0]; print(r['replicas_identical'], r['ranks'], r['backend'])" \
        2>/dev/null
}
# against_single WHAT NAME SINGLE.bin "REPLICAS RANKS BACKEND" CMD...
against_single() {
    local what=$1 name=$2 single=$3 want=$4
    shift 4
    "$@" --check-replicas --save-params "$name.bin" --format json >"$name.json" 2>"$name.err"
    local rc=$? d same
    d=$(reldiff "$name.bin" "$single")
    same=$(json_of "$name.json")
    if [ $rc -eq 0 ] && python3 -c "import sys; sys.exit(not float('$d') < 1e-5)" 2>/dev/null && [ "$same" = "$want" ]; then
        ok "$what: $d from single, '$same'"
    else
        bad "$what: rc $rc, difference $d, replicas/ranks/backend '$same'"
        tail -3 "$name.err"
    fi
}
small() { case $1 in ddp) echo --bucket-mb 0.05 ;; horovod) echo --fusion-mb 0.02 --cycle-ms 1 ;; esac; }

"$bin" "${base[@]}" --model lenet --strategy single --ranks 2 --save-params single2.bin >/dev/null || bad "single x2"
"$bin" "${base[@]}" --model mlp --strategy single --ranks 4 --save-params single4.bin >/dev/null || bad "single x4"

# ---- rank threads ----
for st in dp gather-scatter allreduce ddp horovod; do
    against_single "lenet $st, 2 rank threads on gloo" "t$st" single2.bin "True 2 gloo/ring" \
        "$bin" "${base[@]}" --comm gloo --ranks 2 --model lenet --strategy "$st" $(small "$st")
done
for algo in ring-chunked halving-doubling bcube; do
    against_single "lenet allreduce, --algo $algo" "a$algo" single2.bin "True 2 gloo/$algo" \
        "$bin" "${base[@]}" --comm gloo --algo "$algo" --ranks 2 --model lenet --strategy allreduce
done
for gc in fp16 bf16; do
    # 16-bit gradients move less exactly than float: against the same run on shm
    "$bin" "${base[@]}" --ranks 2 --model lenet --strategy ddp --grad-compress "$gc" --save-params "shm$gc.bin" \
        >/dev/null || bad "shm --grad-compress $gc"
    against_single "lenet ddp --grad-compress $gc on gloo, against shm's" "g$gc" "shm$gc.bin" "True 2 gloo/ring" \
        "$bin" "${base[@]}" --comm gloo --ranks 2 --model lenet --strategy ddp --grad-compress "$gc"
done
# the text report names the backend and algorithm too
"$bin" --batch --dataset synthetic --device cpu --steps 3 --batch-size 32 --comm gloo --algo bcube --ranks 2 \
    --model mlp 2>/dev/null | grep -q "^run 0: mlp, 669706 parameters, .*; over gloo/bcube\$" &&
    ok "the text report says: over gloo/bcube" || bad "the text report does not name gloo/bcube"
against_single "mlp horovod, 4 rank threads" t4 single4.bin "True 4 gloo/ring" \
    "$bin" "${base[@]}" --comm gloo --ranks 4 --model mlp --strategy horovod $(small horovod)

# ---- refusals: one line, exit 2 ----
refuse() { # refuse WHAT ARGS...
    local what=$1
    shift
    "$bin" "${base[@]}" --model mlp "$@" >/dev/null 2>r.err
    local rc=$? lines
    lines=$(grep -c . r.err)
    [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -q "^ddptop: $what" r.err && ok "$* is refused: $(cat r.err)" ||
        { bad "$*: rc $rc, $lines lines"; head -5 r.err; }
}
refuse "--algo halving-doubling: gloo's" --ranks 2 --algo halving-doubling
refuse "--algo naive: ddptop's own" --ranks 2 --comm gloo --algo naive

# ---- --bench-comm: a table per backend, each with #wrong and its own fit ----
# bench_tables FILE "BACKEND/ALGO/WORLD ..." CM.json: the tables name those
# backends in that order; every row's size is one of 4K 16K 64K 256K 1M
# (counted by hand: 4K x 4^k up to 1M), algbw is bytes over time, #wrong
# is 0; each has a fit, and the cost model holds a fit under each name
bench_tables() {
    python3 - "$@" <<'PYEOF'
import json, sys
tables, want, cm = json.load(open(sys.argv[1])), sys.argv[2].split(), json.load(open(sys.argv[3]))
got = ["%s/%s/%s" % (t["backend"], t["algo"], t["world"].replace(" ", "-")) for t in tables]
assert got == want, (got, want)
for t in tables:
    assert [r["bytes"] for r in t["rows"]] == [4096, 16384, 65536, 262144, 1048576], t["rows"]
    for r in t["rows"]:
        assert r["wrong"] == 0, r
        assert abs(r["algbw_gbps"] - r["bytes"] / (r["time_us"] * 1e3)) <= 1e-9 * r["algbw_gbps"] + 1e-12, r
    assert t["fit"]["alpha_us"] is not None and t["fit"]["stored"], t["fit"]
fits = cm["fits"] if isinstance(cm, dict) and "fits" in cm else cm
names = {(f["backend"], f["algo"]) for f in fits}
for t in tables:
    assert (t["backend"], t["algo"]) in names, (t["backend"], t["algo"], names)
PYEOF
}
export DDPTOP_COMM_MODEL=$tmp/cm.json
bench=(--bench-comm --ranks 2 --min-bytes 4K --max-bytes 1M --factor 4 --iters 5 --warmup 2 --format json)
"$bin" "${bench[@]}" --comm shm,gloo >b2.json 2>b2.err && bench_tables b2.json "shm/ring/threads gloo/ring/threads" \
    "$tmp/cm.json" && ok "--bench-comm --comm shm,gloo: two tables, #wrong 0, a fit each, stored under each name" ||
    { bad "--bench-comm --comm shm,gloo"; tail -3 b2.err; }
# a run on gloo predicts its transfers from gloo's fit, not the shm ring's
pred() { # pred COST-MODEL: the run's predicted transfer per step, or None
    DDPTOP_COMM_MODEL=$1 "$bin" "${base[@]}" --steps 4 --comm gloo --ranks 2 --model lenet --strategy allreduce \
        --format json 2>/dev/null | python3 -c "import json, sys; print(json.load(sys.stdin)['runs'][0]['predicted_transfer_ms_per_step'])"
}
DDPTOP_COMM_MODEL=$tmp/cm_shm.json "$bin" "${bench[@]}" --comm shm >/dev/null 2>&1
with_gloo=$(pred "$tmp/cm.json")
shm_only=$(pred "$tmp/cm_shm.json")
[ "$shm_only" = None ] && [ -n "$with_gloo" ] && [ "$with_gloo" != None ] &&
    ok "a gloo run's pred/step: $with_gloo ms from gloo's fit, none from the shm ring's alone" ||
    bad "a gloo run's pred/step: '$with_gloo' with gloo's fit, '$shm_only' with shm's alone"
"$bin" "${bench[@]}" --comm gloo --algo halving-doubling >bh.json 2>bh.err &&
    python3 -c "import json; t = json.load(open('bh.json')); assert (t['backend'], t['algo']) == ('gloo', 'halving-doubling')" &&
    ok "--bench-comm --comm gloo --algo halving-doubling: named" || { bad "--bench-comm --algo halving-doubling"; tail -3 bh.err; }
"$bin" "${bench[@]}" --comm shm,gloo,mpi >/dev/null 2>bm.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c . bm.err)" -eq 1 ] && grep -q "^ddptop: --comm mpi: start ddptop under mpirun" bm.err &&
    ok "--bench-comm --comm shm,gloo,mpi without mpirun: refused before measuring, one line" ||
    { bad "--bench-comm --comm shm,gloo,mpi without mpirun: rc $rc"; head -3 bm.err; }

# ---- faults on rank threads: named, reported, bounded ----
fault() { # fault KIND PATTERN [ARGS..]
    local kind=$1 pat=$2
    shift 2
    SECONDS=0
    timeout 60 "$bin" "${base[@]}" --comm gloo --ranks 3 --model lenet --strategy ddp --steps 200 \
        --inject-fault rank=1,step=5,kind="$kind" "$@" --format csv >"f$kind.csv" 2>"f$kind.err"
    local rc=$? took=$SECONDS
    [ $rc -eq 1 ] && [ $took -lt 20 ] && grep -q "^ddptop: $pat" "f$kind.err" &&
        [ "$(grep -c "^0,[012],lenet,synthetic,ddp" "f$kind.csv")" -eq 3 ] &&
        ok "--inject-fault $kind on gloo $*: named, report, exit 1 after $took s" ||
        { bad "--inject-fault $kind on gloo $*: rc $rc after $took s"; grep ddptop "f$kind.err" | head -3; }
}
# a rank thread that dies: its gloo contexts close with it, and its peers'
# calls fail at once (as when a process dies), not at --comm-timeout (300 s)
fault crash "rank 1 failed: the rank's thread died at step 5"
# (the peers' waits are gloo's own, ended by its timeout, --comm-timeout; gloo's
# ring does not always say on whom it waited). The wait the error gives is
# measured from the call's start, so on a loaded machine it may run past
# the 3 s (4.85 s once beside another build), never short of it.
fault hang "rank [02] failed: .*timed out after [0-9.]* s waiting for \(rank 1\|a peer\) (gloo: " --comm-timeout 3
waited=$(sed -n 's/.*timed out after \([0-9.]*\) s waiting.*/\1/p' fhang.err | head -1)
awk -v w="${waited:-0}" 'BEGIN { exit !(w >= 3 && w < 20) }' &&
    ok "--inject-fault hang on gloo: the wait named is --comm-timeout's 3 s or more ($waited s)" ||
    bad "--inject-fault hang on gloo: the wait named, ${waited:-none} s, is not from 3 to 20 s"
fault comm-error "rank 1 failed: .*the link to the peers failed (injected fault)"

# ---- processes under mpirun ----
if ! command -v mpirun >/dev/null || "$bin" "${base[@]}" --comm mpi 2>&1 | grep -q "built without MPI"; then
    echo "(no mpirun, or a build without MPI: the processes' part is not run)"
    [ $fails -eq 0 ] && { echo "skip: processes"; exit 77; }
    exit 1
fi
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader RES_OPTIONS="timeout:1 attempts:1"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"
for st in dp gather-scatter allreduce ddp horovod; do
    against_single "lenet $st, 2 processes on gloo" "p$st" single2.bin "True 2 gloo/ring, 2 processes on 1 node" \
        "${mpi[@]}" -np 2 "$bin" "${base[@]}" --comm gloo --model lenet --strategy "$st" $(small "$st")
done
against_single "lenet ddp, 2 processes, --algo halving-doubling" phd single2.bin \
    "True 2 gloo/halving-doubling, 2 processes on 1 node" \
    "${mpi[@]}" -np 2 "$bin" "${base[@]}" --comm gloo --algo halving-doubling --model lenet --strategy ddp
against_single "mlp ddp, 2 processes x 2 rank threads" h4 single4.bin \
    "True 4 gloo/ring+shm/ring, 2 processes x 2 on 1 node" \
    "${mpi[@]}" -np 2 "$bin" "${base[@]}" --comm gloo --ranks-per-process 2 --model mlp --strategy ddp $(small ddp)

rm -f "$tmp/cm.json"
timeout 120 "${mpi[@]}" -np 2 "$bin" "${bench[@]}" --comm shm,gloo,mpi >bp.json 2>bp.err &&
    bench_tables bp.json "shm/ring/threads gloo/ring/2-processes mpi/mpi/2-processes" "$tmp/cm.json" &&
    ok "--bench-comm --comm shm,gloo,mpi under mpirun: three tables, #wrong 0, a fit each" ||
    { bad "--bench-comm --comm shm,gloo,mpi under mpirun"; tail -3 bp.err; }

# a worker killed outright: process 0's allreduce fails at once (the
# kernel closes the dead one's sockets), naming rank 1, with the report
# (our own job's worker, told by a mark in its environment: other jobs may
# run ddptop under mpirun on this machine at the same time)
mark="DDPTOP_TEST_JOB=$tmp"
timeout 90 env "$mark" "${mpi[@]}" -x DDPTOP_TEST_JOB -np 2 "$bin" "${base[@]}" --comm gloo --comm-timeout 60 --model lenet --strategy ddp \
    --steps 100000 --format csv >kill.csv 2>kill.err &
job=$!
worker=
for _ in $(seq 600); do
    for p in $(pgrep -x ddptop); do
        if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 &&
            { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "$mark" &&
            grep -qx "rank 1" /proc/"$p"/task/*/comm 2>/dev/null; then
            worker=$p
            break 2
        fi
    done
    sleep 0.1
done
sleep 1
[ -n "$worker" ] && kill -KILL "$worker"
killed=$SECONDS
wait $job
rc=$?
took=$((SECONDS - killed))
[ -n "$worker" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -lt 20 ] &&
    grep -q "^ddptop: rank .* failed: .*rank 1" kill.err && grep -q "^0,0,lenet,synthetic,ddp" kill.csv &&
    ok "a gloo worker killed (SIGKILL): named, partial report, exit $rc, ${took} s after (--comm-timeout 60)" ||
    { bad "killed gloo worker (pid '$worker'): rc $rc, ${took} s after"; grep ddptop kill.err | head -3; }

checks_done
