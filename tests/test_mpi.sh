#!/usr/bin/env bash
# test_mpi.sh - ranks as processes, launched by OpenMPI's mpirun:
#  - every strategy over --comm mpi, 2 processes (LeNet) and 4 (the MLP),
#    ends 20 steps with the parameters of `single` on the global batch
#    (within 1e-5 relative) and with identical replicas every step, each
#    rank's bytes sent and received as counted by hand;
#  - 2 processes x 2 rank threads (--ranks-per-process: the shm ring inside
#    a process, MPI between) give the same parameters, a rank's failure in
#    a worker's second thread is named;
#  - model and pipeline parallelism over MPI's send/recv train bit for bit
#    as the same stages do as threads, and so do 2 replicas of them (--dp);
#  - process 0's trace holds every rank, and replays to the live report's
#    per-rank breakdown; --trace-split writes each rank's own file;
#  - --bench-comm over MPI gets every collective's exact answers, and its
#    fit predicts a training run's transfers;
#  - a rank that fails in a worker process is named by process 0, which
#    prints the partial report, and mpirun exits non-zero; so is a worker
#    process that stops answering (its heartbeats stop: SIGSTOP), and one
#    killed outright (SIGKILL), in the second mpirun leaves before its own
#    SIGKILL;
#  - what cannot run under mpirun is one line and exit 2.
# Usage: test_mpi.sh DDPTOP [quick|tiny|full [PART]]
#   (every MPI process starts slowly under a sanitizer)
#   PART: strategies (every strategy, and 2 x 2 threads), stages (stages,
#     traces and clocks) or failures (--bench-comm, failures, refusals):
#     only that third, so that each stays well inside its time limit on a
#     loaded machine (ctest runs them as test_mpi, test_mpi_stages and
#     test_mpi_failures); default all three
#   quick (ASan): ddp and horovod with 2 processes, ddp with 4, ddp and
#     gather-scatter with 2 x 2, the pipeline alone of the stages, one
#     refusal;
#   tiny (TSan): ddp and horovod with 2 processes, ddp with 2 x 2, and the
#     failure: the threads (relay, comm lane, horovod's) and the stop.
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
mode=${2:-full}
part=${3:-all}
in_part() { [ "$part" = all ] || [ "$part" = "$1" ]; }
quick=0
[ "$mode" != full ] && quick=1
. "$(dirname "$0")/checks.sh"
cd "$tmp"

# a small MNIST-shaped set of random images (4096 to train: 20 steps of
# 4 x 32 stay in one epoch; 512 to test): every process of every run loads
# it at once, where each would generate the synthetic set's 60000 images
# (4x the CPU time of a 4-process run)
/usr/bin/python3 - "$tmp/data" <<'PY'
import os, random, struct, sys
d = sys.argv[1]
os.makedirs(d)
r = random.Random(1)
for split, n in (("train", 4096), ("t10k", 512)):
    with open(os.path.join(d, split + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + r.randbytes(n * 784))
    with open(os.path.join(d, split + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(r.randrange(10) for _ in range(n)))
PY
base=(--batch --quiet --dataset mnist --data-dir "$tmp/data" --device cpu --steps 20 --batch-size 32 --threads-per-rank 1)
# without mpirun, --comm mpi says how to start it (or that the build lacks MPI)
out=$("$bin" "${base[@]}" --comm mpi 2>&1 >/dev/null)
rc=$?
if [[ "$out" == *"built without MPI"* ]]; then
    echo "skip: this ddptop was built without MPI"
    exit 77
fi
[ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"mpirun"* ]] &&
    ok "--comm mpi without mpirun: exit 2, one line" || bad "--comm mpi without mpirun: rc $rc: $out"

command -v mpirun >/dev/null || { bad "no mpirun (scripts/install-deps.sh installs openmpi-bin)"; exit 1; }
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
# shared memory between processes without ptrace (containers forbid it)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl=self,vader # one node: no TCP
# mpirun looks "localhost" up; on a root without /etc/hosts (a bare
# container) that goes to DNS, which may never answer: 5 s a launch, unless
# the resolver gives up sooner
export RES_OPTIONS="timeout:1 attempts:1"
# under ASan: whole stacks at each malloc, so that tests/lsan.supp can tell
# MPI's own allocations (from plugins unloaded by MPI_Finalize) from ours
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"

# the α-β fits --bench-comm stores, and training reports read
export DDPTOP_COMM_MODEL=$tmp/comm-model.json

# every process this script's mpirun starts carries this mark: other
# programs' mpirun jobs (another test beside this one) are not ours to stop
export DDPTOP_TEST_MPI_JOB=$tmp
mpi+=(-x DDPTOP_TEST_MPI_JOB)

# The pid of process 1 of this script's job once its rank thread is up (the
# run has started), a second later; empty after 60 s without it.
find_worker() { # [PROCESS]: process 1 (one rank a process), or PROCESS
    local p env who=${1:-1}
    for _ in $(seq 600); do
        for p in $(pgrep -x ddptop); do
            env=$({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null)
            if grep -qx "OMPI_COMM_WORLD_RANK=$who" <<<"$env" && grep -qxF "DDPTOP_TEST_MPI_JOB=$tmp" <<<"$env" &&
                grep -qx "rank $who" /proc/"$p"/task/*/comm 2>/dev/null; then
                sleep 1
                echo "$p"
                return
            fi
        done
        sleep 0.1
    done
}

# relative L2 distance between two raw float32 files (--save-params)
reldiff() { python3 "$here/reldiff.py" "$1" "$2"; }

# against_single WHAT NAME SINGLE.bin "REPLICAS RANKS BACKEND" MPIRUN-ARGS...:
# an mpirun run with --check-replicas ends within 1e-5 (relative) of the
# parameters of single on the global batch, with identical replicas, the
# ranks and the backend said
against_single() {
    local what=$1 name=$2 single=$3 want=$4
    shift 4
    "${mpi[@]}" "$@" --check-replicas --save-params "$name.bin" --format json >"$name.json" 2>"$name.err"
    local rc=$? d same
    d=$(reldiff "$name.bin" "$single")
    same=$(python3 -c "import json; r = json.load(open('$name.json'))['runs'][0]; \
print(r['replicas_identical'], r['ranks'], r['backend'])" 2>/dev/null)
    if [ $rc -eq 0 ] && python3 -c "import sys; sys.exit(not float('$d') < 1e-5)" 2>/dev/null && [ "$same" = "$want" ]; then
        ok "$what: $d from single, replicas identical"
    else
        bad "$what: rc $rc, difference $d, replicas/ranks/backend '$same'"
        tail -3 "$name.err"
    fi
}

# mpi_bytes WHAT NAME.json MODEL PROCESSES STRATEGY: each rank's bytes sent
# and received under --comm mpi (counted as ddptop's ring and rooted
# algorithms move them), by hand: S the model's gradient bytes (LeNet
# 61706 parameters, the MLP 669706, 4 bytes each), a ring allreduce 2 S
# (n-1)/n each way on every rank; gather-scatter's root gathers and
# broadcasts (n-1) S; dp's root sends the parameters, the replicas' shares
# of the batch (784 pixels and a label a sample) and their logits'
# gradients, and receives their logits and gradients
mpi_bytes() {
    local what=$1
    shift
    python3 - "$@" <<'PY' && ok "$what: bytes sent and received by hand" || bad "$what: bytes sent and received"
import json, sys
f, model, n, strategy = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = json.load(open(f))
k, b = d["runs"][0]["steps"], 32
S = 4 * {"lenet": 61706, "mlp": 669706}[model]
X, Y = b * (784 + 1) * 4, b * 10 * 4
want = {
    "allreduce": lambda r: (2 * S * (n - 1) // n,) * 2,
    "ddp": lambda r: (2 * S * (n - 1) // n,) * 2,
    "gather-scatter": lambda r: ((n - 1) * S,) * 2 if r == 0 else (S, S),
    "dp": lambda r: ((n - 1) * (S + X + Y), (n - 1) * (Y + S)) if r == 0 else (Y + S, S + X + Y),
}[strategy]
got = [(q["bytes_sent"], q["bytes_received"]) for q in d["per_rank"]]
exp = [tuple(v * k for v in want(r)) for r in range(n)]
if got != exp:
    sys.exit("per rank (sent, received) %s, by hand %s" % (got, exp))
PY
}

if in_part strategies; then
# ---- every strategy against single on the global batch ----
# several buckets (ddp) and fusion buffers (horovod); each option only
# with the strategy it is for
small() {
    case $1 in
    ddp) echo --bucket-mb 0.05 ;;
    horovod) echo --fusion-mb 0.02 --cycle-ms 1 ;;
    esac
}
for case in "2 lenet" "4 mlp"; do
    read -r np model <<<"$case"
    [ "$mode" = tiny ] && [ "$np" -eq 4 ] && continue
    "$bin" "${base[@]}" --model "$model" --strategy single --ranks "$np" --save-params "single$np.bin" >/dev/null ||
        bad "single x$np run"
    strategies=(dp gather-scatter allreduce ddp horovod)
    [ $quick -eq 1 ] && { [ "$np" -eq 2 ] && strategies=(ddp horovod) || strategies=(ddp); }
    for st in "${strategies[@]}"; do
        against_single "$model $st, $np processes" "$st$np" "single$np.bin" "True $np mpi, $np processes on 1 node" \
            -np "$np" "$bin" "${base[@]}" --model "$model" --strategy "$st" $(small "$st")
        [ "$st" != horovod ] && mpi_bytes "$model $st, $np processes" "$st$np.json" "$model" "$np" "$st"
    done
done

# ---- 2 processes x 2 rank threads: the shm ring inside, MPI between ----
[ -s single4.bin ] || "$bin" "${base[@]}" --model mlp --strategy single --ranks 4 --save-params single4.bin >/dev/null ||
    bad "single x4 run"
strategies=(dp gather-scatter allreduce ddp horovod)
[ $quick -eq 1 ] && strategies=(ddp gather-scatter)
[ "$mode" = tiny ] && strategies=(ddp)
for st in "${strategies[@]}"; do
    against_single "mlp $st, 2 processes x 2 rank threads" "h$st" single4.bin \
        "True 4 mpi+shm/ring, 2 processes x 2 on 1 node" \
        -np 2 "$bin" "${base[@]}" --ranks-per-process 2 --model mlp --strategy "$st" $(small "$st")
done
# mpirun binds each of a few processes to one core: 2 rank threads there
# take turns, which is said, with the way out (and nothing is said unbound)
"${mpi[@]}" --bind-to core -np 2 "$bin" "${base[@]}" --ranks-per-process 2 --model mlp --steps 1 \
    >/dev/null 2>bound.err
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c "^ddptop: process 0 holds 2 ranks x 1 thread = 2 compute threads on 1 core: .*--bind-to none" bound.err)" = 1 ] &&
    ok "bound to a core each: one line names the binding and --bind-to none" ||
    { bad "--bind-to core: rc $rc, no line on the binding"; grep ddptop bound.err | head -3; }
"${mpi[@]}" --bind-to none -np 2 "$bin" "${base[@]}" --model mlp --steps 1 >/dev/null 2>free.err
rc=$?
[ $rc -eq 0 ] && ! grep -q "compute threads" free.err && ok "unbound, 1 rank x 1 thread a process: no such line" ||
    { bad "--bind-to none: rc $rc"; grep ddptop free.err | head -3; }
if [ $quick -eq 0 ]; then
    # fp16 and bf16 gradients: summed in 16 bits at each level (the shm ring
    # inside a process, MPI's own reduction between), near single; bf16's
    # 8-bit mantissa is further off than fp16's 11
    # (on the synthetic set, whose gradients these bounds were measured on:
    # the random images' sums round further off)
    synth=(--batch --quiet --dataset synthetic --device cpu --steps 20 --batch-size 32 --threads-per-rank 1)
    "$bin" "${synth[@]}" --model mlp --strategy single --ranks 4 --save-params single4s.bin >/dev/null ||
        bad "single x4 run (synthetic)"
    for f in fp16:1e-4 bf16:1e-3; do
        "${mpi[@]}" -np 2 "$bin" "${synth[@]}" --ranks-per-process 2 --model mlp --strategy ddp \
            --grad-compress "${f%:*}" --save-params h16.bin >/dev/null 2>h16.err
        rc=$?
        d=$(reldiff h16.bin single4s.bin)
        [ $rc -eq 0 ] && python3 -c "import sys; sys.exit(not 0 < float('$d') < ${f#*:})" 2>/dev/null &&
            ok "--grad-compress ${f%:*}, 2 processes x 2: $d from single" ||
            { bad "--grad-compress ${f%:*}, 2 x 2: rc $rc, difference $d"; tail -3 h16.err; }
    done
    # a rank in a worker's second thread fails: named, its peers stop
    timeout 60 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --ranks-per-process 2 --model mlp --strategy ddp --steps 200 \
        --inject-fault rank=3,step=5,kind=crash --format csv >hfail.csv 2>hfail.err
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "^ddptop: rank 3 failed: the rank's thread died at step 5" hfail.err &&
        [ "$(grep -c "^0,[0-3],mlp" hfail.csv)" -eq 4 ] &&
        ok "rank 3 (process 1's second thread) fails: named, every rank in the report, exit $rc" ||
        { bad "rank 3 of 2 x 2 fails: rc $rc"; grep ddptop hfail.err | head -3; }
fi

fi

if in_part stages; then
if [ "$mode" != tiny ]; then
# ---- stages over send/recv: as threads, bit for bit ----
# (the same stages: --partition, since a balanced partition follows the
# layers' times measured at the start, and under load two runs may cut
# LeNet in different places, which changes the float sums)
stages=("model --partition 0:3,4:" "pipeline --micro-batches 4 --schedule 1f1b --partition 0:3,4:")
[ $quick -eq 1 ] && stages=("${stages[1]}")
for par in "${stages[@]}"; do
    read -r -a p <<<"$par"
    "$bin" "${base[@]}" --model lenet --steps 8 --parallel "${p[@]}" --ranks 2 --save-params threads.bin >/dev/null
    "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model lenet --steps 8 --parallel "${p[@]}" --save-params procs.bin \
        >/dev/null 2>procs.err
    rc=$?
    [ $rc -eq 0 ] && cmp -s threads.bin procs.bin && ok "--parallel $par: processes = threads, bit for bit" ||
        { bad "--parallel $par over MPI: rc $rc, parameters differ from threads"; tail -3 procs.err; }
done
# --dp 2: 2 replicas of 2 stages in 4 processes, each stage's copies
# averaging over a communicator of their own (MPI_Comm_split): rank 0's
# parameters as with 4 threads, bit for bit, and the same mean loss (the
# replicas' last stages' losses, averaged over every rank)
if [ $quick -eq 0 ]; then
    dpargs=(--model lenet --steps 8 --parallel pipeline --micro-batches 2 --schedule gpipe --dp 2 --partition 0:3,4:)
    "$bin" "${base[@]}" "${dpargs[@]}" --ranks 4 --save-params threads_dp.bin --format csv >threads_dp.csv 2>/dev/null
    "${mpi[@]}" -np 4 "$bin" "${base[@]}" "${dpargs[@]}" --save-params procs_dp.bin --format csv >procs_dp.csv \
        2>procs_dp.err
    rc=$?
    loss() { awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "train_loss") c = i} $2 == "all" {print $c}' "$1"; }
    [ $rc -eq 0 ] && cmp -s threads_dp.bin procs_dp.bin && [ -n "$(loss threads_dp.csv)" ] &&
        [ "$(loss threads_dp.csv)" = "$(loss procs_dp.csv)" ] &&
        ok "--dp 2 over 2 stages: 4 processes = 4 threads, bit for bit, loss $(loss procs_dp.csv)" ||
        { bad "--dp 2 over MPI: rc $rc, loss $(loss procs_dp.csv) against $(loss threads_dp.csv)"; tail -3 procs_dp.err; }
fi

# ---- the trace holds every rank and replays to the live breakdown ----
"${mpi[@]}" -np 2 "$bin" "${base[@]}" --model lenet --strategy ddp --trace t.json --format json >live.json 2>t.err
rc=$?
"$bin" --batch --replay t.json --format json >replay.json 2>>t.err
python3 - <<'EOF' && ok "trace of 2 processes replays to the live breakdown" || { bad "trace replay (rc $rc)"; tail -3 t.err; }
import json, sys
live, rep = (json.load(open(f)) for f in ('live.json', 'replay.json'))
keys = ('compute_pct', 'comm_pct', 'data_pct', 'idle_pct', 'transfer_ms_per_step', 'sync_ms_per_step')
a, b = live['per_rank'], rep['per_rank']
assert len(a) == 2 and len(b) == 2, (len(a), len(b))
for x, y in zip(a, b):
    assert x['rank'] == y['rank']
    for k in keys:
        assert abs(x[k] - y[k]) < 1e-6, (x['rank'], k, x[k], y[k])
assert a[1]['compute_pct'] > 10 and a[1]['bytes_sent'] > 0, a[1]  # rank 1's records came through
EOF

# ---- --trace-split: a file per rank of every process, with distributedInfo ----
if [ $quick -eq 0 ]; then
    "${mpi[@]}" -np 2 "$bin" "${base[@]}" --ranks-per-process 2 --model mlp --steps 5 --trace split.json --trace-split \
        >/dev/null 2>split.err
    rc=$?
    python3 - <<'EOF' && ok "--trace-split over 2 processes x 2: one file per rank, each its own" ||
import json
for r in range(4):
    d = json.load(open('split.rank%d.json' % r))
    assert d['distributedInfo']['rank'] == r and d['distributedInfo']['world_size'] == 4, d['distributedInfo']
    pids = {e['pid'] for e in d['traceEvents'] if e.get('ph') == 'X'}
    assert pids == {r}, (r, pids)
EOF
        { bad "--trace-split under mpirun: rc $rc"; tail -3 split.err; }
fi

# ---- clock offsets: 0 on one node; measured (ping-pong) within its bound,
# at the start and again as the run goes (every 50 ms here, 10 s by default)
DDPTOP_CLOCK_PINGPONG=1 DDPTOP_CLOCK_REFRESH_MS=50 "${mpi[@]}" -np 2 -x DDPTOP_CLOCK_PINGPONG \
    -x DDPTOP_CLOCK_REFRESH_MS "$bin" "${base[@]}" --model mlp --steps 300 --trace pp.json >/dev/null 2>pp.err
python3 - <<'EOF' && ok "clock offsets: 0 on one node; measured ones, at the start and later, within their bound of the truth (0)" ||
import json
t = json.load(open('t.json'))
same = t['ddptop']['run']['processes']
assert [(p['rank'], p['clock_offset_ns'], p['clock_error_ns']) for p in same] == [(0, 0, 0), (1, 0, 0)], same
assert [(c['rank'], c['offset_ns'], c['error_ns'], c['estimates']) for c in t['ddptopTraceEnd']['clocks']] == \
    [(0, 0, 0, 0), (1, 0, 0, 0)], t['ddptopTraceEnd']
d = json.load(open('pp.json'))
pp = d['ddptop']['run']['processes'][1]
assert 0 < pp['clock_error_ns'] < 5e6 and abs(pp['clock_offset_ns']) <= pp['clock_error_ns'], pp
end = d['ddptopTraceEnd']['clocks'][1]
assert end['estimates'] >= 3, end
assert 0 < end['error_ns'] < 5e6 and abs(end['offset_ns']) <= end['error_ns'], end
print('  measured offset %d ns, bound %d ns; after %d estimates %d ns, bound %d ns' %
      (pp['clock_offset_ns'], pp['clock_error_ns'], end['estimates'], end['offset_ns'], end['error_ns']))
EOF
    { bad "clock offsets"; tail -3 pp.err; }
fi

fi

if in_part failures; then
# ---- --bench-comm over MPI: exact answers, and a fit that training uses ----
if [ "$mode" != tiny ]; then
    colls=(allreduce broadcast reduce gather scatter allgather reduce-scatter)
    [ $quick -eq 1 ] && colls=(allreduce)
    for coll in "${colls[@]}"; do
        "${mpi[@]}" -np 2 "$bin" --bench-comm --collective "$coll" --min-bytes 1K --max-bytes 256K --factor 16 \
            --iters 5 --warmup 1 --format json >bc.json 2>bc.err
        rc=$?
        python3 - "$coll" <<'EOF' && ok "--bench-comm --collective $coll over 2 processes: every result exact" ||
import json, sys
d = json.load(open('bc.json'))
assert d['backend'] == 'mpi' and d['ranks'] == 2, d
assert len(d['rows']) == 3 and all(r['wrong'] == 0 and r['time_us'] > 0 for r in d['rows']), d['rows']
EOF
            { bad "--bench-comm $coll over MPI: rc $rc"; tail -3 bc.err; }
    done
    # ddptop's ring under mpirun: its table is process 0's rank threads
    # (2 of them, every result exact), the other process idle
    timeout 120 "${mpi[@]}" -np 2 "$bin" --bench-comm --comm shm --ranks 2 --min-bytes 1K --max-bytes 16K --factor 4 \
        --iters 3 --warmup 1 --format json >bcs.json 2>bcs.err
    rc=$?
    python3 - <<'EOF' && ok "--bench-comm --comm shm under mpirun: process 0's 2 threads, every result exact" ||
import json
d = json.load(open('bcs.json'))
assert d['backend'].startswith('shm') and d['ranks'] == 2, (d['backend'], d['ranks'])
assert len(d['rows']) == 3 and all(r['wrong'] == 0 and r['time_us'] > 0 for r in d['rows']), d['rows']
EOF
        { bad "--bench-comm --comm shm under mpirun: rc $rc (124: a hang)"; tail -3 bcs.err; }
    # an --output it cannot write: one line, and every process leaves (none waits in a collective)
    timeout 60 "${mpi[@]}" -np 2 "$bin" --bench-comm --max-bytes 64K --output /nonexistent/bc.txt >/dev/null 2>bcw.err
    rc=$?
    [ $rc -eq 2 ] && [ "$(grep -c '^ddptop:' bcw.err)" -eq 1 ] && grep -q "^ddptop: --output: cannot write" bcw.err &&
        ok "--bench-comm --output unwritable over MPI: one line, exit 2" ||
        { bad "--bench-comm --output unwritable over MPI: rc $rc (124: a hang)"; head -3 bcw.err; }
    "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model mlp --strategy allreduce --format json >pred.json 2>pred.err
    python3 -c "import json; r = json.load(open('pred.json'))['runs'][0]; \
assert r['predicted_transfer_ms_per_step'] and r['predicted_transfer_ms_per_step'] > 0, r" &&
        ok "a training run over MPI predicts its transfers from the MPI fit" ||
        { bad "no prediction from the MPI fit"; tail -3 pred.err; }
fi

# ---- a failure in a worker: named by process 0, partial report, non-zero ----
start=$SECONDS
timeout 60 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model lenet --strategy ddp --steps 200 \
    --inject-fault rank=1,step=5,kind=crash --format csv >fail.csv 2>fail.err
rc=$?
took=$((SECONDS - start))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "^ddptop: rank 1 failed: the rank's thread died at step 5" fail.err &&
    grep -q "^0,1,lenet,mnist,ddp,none,2,32,64,5," fail.csv && [ $took -lt 30 ]; then
    ok "a worker's rank fails: named, partial report, mpirun exit $rc after ${took} s"
else
    bad "worker failure: rc $rc after ${took} s"
    grep ddptop fail.err | head -3
fi

# ---- process 0's own rank fails: the workers stop, and the report is whole ----
if [ $quick -eq 0 ]; then
    timeout 60 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model lenet --strategy ddp --steps 200 \
        --inject-fault rank=0,step=5,kind=crash --format csv >fail0.csv 2>fail0.err
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "^ddptop: rank 0 failed: the rank's thread died at step 5" fail0.err &&
        grep -q "^0,1,lenet,mnist,ddp,none,2,32,64,5," fail0.csv &&
        ok "process 0's rank fails: named, the worker's rank in the report, exit $rc" ||
        { bad "process 0's rank fails: rc $rc"; grep ddptop fail0.err | head -3; }
fi

# ---- a worker that stops answering (SIGSTOP): given up by its silence ----
if [ "$mode" != tiny ]; then
    start=$SECONDS
    timeout 90 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model lenet --strategy ddp --steps 100000 --format csv \
        >stop.csv 2>stop.err &
    job=$!
    worker=$(find_worker)
    [ -n "$worker" ] && kill -STOP "$worker"
    stopped=$SECONDS
    wait $job
    rc=$?
    took=$((SECONDS - stopped))
    [ -n "$worker" ] && { kill -CONT "$worker"; kill -KILL "$worker"; } 2>/dev/null
    # (the silence named: at least the 5 s that give a worker up, more when
    # process 0's relay is kept from its core by a loaded machine)
    silent=$(sed -n 's/.*stopped answering: nothing from it for \([0-9.]*\) s.*/\1/p' stop.err | head -1)
    if [ -n "$worker" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -lt 30 ] &&
        grep -q "^ddptop: rank 1 failed: process 1 on .* stopped answering: nothing from it for [0-9.]* s" stop.err &&
        awk -v s="${silent:-0}" 'BEGIN { exit !(s >= 5 && s < 30) }' &&
        grep -q "^0,1,lenet,mnist,ddp" stop.csv; then
        ok "a stopped worker is named after ${silent} s of silence (5 s or more), partial report, exit $rc ${took} s after the stop"
    else
        bad "stopped worker (pid '$worker'): rc $rc, ${took} s after the stop"
        grep ddptop stop.err | head -3
    fi
fi

# ---- the whole job suspended for 7 s (SIGSTOP to every process, as
# Slurm's `scontrol suspend` does), then resumed, process 0 first: its own
# absence is not its workers' silence, so none of them is given up (they
# speak again within a second); then Ctrl-C to process 0 stops the run
# with every rank's row ----
if [ $quick -eq 0 ]; then
    timeout 120 "${mpi[@]}" -np 4 "$bin" "${base[@]}" --model lenet --strategy ddp --steps 100000 --format csv \
        >pause.csv 2>pause.err &
    job=$!
    pids=()
    for p in 0 1 2 3; do pids+=("$(find_worker $p)"); done
    if [ ${#pids[@]} -eq 4 ] && [ -n "${pids[0]}" ] && [ -n "${pids[3]}" ]; then
        kill -STOP "${pids[@]}"
        sleep 7
        kill -CONT "${pids[0]}"
        sleep 1
        kill -CONT "${pids[@]:1}"
        sleep 3
        kill -INT "${pids[0]}"
    fi
    wait $job
    rc=$?
    rows=$(grep -c "^0,[0-3],lenet,mnist,ddp," pause.csv)
    [ -n "${pids[3]}" ] && [ $rc -ne 124 ] && [ "$rows" -eq 4 ] && ! grep -q "failed\|stopped answering" pause.err &&
        ok "the job suspended 7 s: no worker given up, 4 rank rows after Ctrl-C (mpirun exit $rc)" ||
        { bad "the job suspended 7 s (pids '${pids[*]}'): rc $rc, $rows rank rows"; grep ddptop pause.err | head -3; }
fi

# ---- a worker killed outright: mpirun ends the job (SIGTERM, then SIGKILL
# 1 s later); process 0 names it and reports in that second ----
if [ $quick -eq 0 ]; then
    timeout 90 "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model lenet --strategy ddp --steps 100000 \
        --format csv >kill.csv 2>kill.err &
    job=$!
    worker=$(find_worker)
    [ -n "$worker" ] && kill -KILL "$worker"
    killed=$SECONDS
    wait $job
    rc=$?
    took=$((SECONDS - killed))
    [ -n "$worker" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -lt 10 ] &&
        grep -q "^ddptop: rank 1 failed: process 1 on .* stopped answering: .* when the job was ended (SIGTERM)" kill.err &&
        grep -q "^0,1,lenet,mnist,ddp" kill.csv &&
        ok "a worker killed (SIGKILL): named, partial report, mpirun exit $rc, ${took} s after" ||
        { bad "killed worker (pid '$worker'): rc $rc, ${took} s after"; grep ddptop kill.err | head -3; }
fi

# ---- what mpirun cannot run: one line, exit 2 ----
refuse() { # refuse WHAT ARGS...
    local what=$1
    shift
    "${mpi[@]}" -np 2 "$bin" "${base[@]}" --model mlp "$@" >/dev/null 2>r.err
    local rc=$?
    local lines
    lines=$(grep -c "^ddptop:" r.err)
    [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -q "^ddptop: $what" r.err && ok "under mpirun, $* is refused" ||
        { bad "under mpirun, $*: rc $rc, $lines lines"; cat r.err | head -5; }
}
[ "$mode" != tiny ] && refuse "--ranks" --ranks 3
if [ $quick -eq 0 ]; then
    # rank options are checked against the processes, not --ranks' default
    "${mpi[@]}" -np 4 "$bin" "${base[@]}" --model mlp --steps 4 --slow-rank 3:2 --format csv >slow.csv 2>slow.err &&
        grep -q "^0,3,mlp" slow.csv && ok "--slow-rank 3 under mpirun -np 4" ||
        { bad "--slow-rank 3 under mpirun -np 4"; grep ddptop slow.err | head -2; }
    refuse "--strategy single" --strategy single
    refuse "--comm shm" --comm shm
    refuse "--trace: cannot write /nonexistent/t.json" --trace /nonexistent/t.json
    saved=("${base[@]}")
    base=(--batch --quiet) # (--info reads no run's options)
    refuse "under mpirun only training" --info
    base=("${saved[@]}")
    refuse "--parallel pipeline: stages in different processes" --ranks-per-process 2 --parallel pipeline
    out=$("$bin" "${base[@]}" --ranks-per-process 2 2>&1 >/dev/null)
    rc=$?
    [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [[ "$out" == *"only under mpirun"* ]] &&
        ok "--ranks-per-process without mpirun: exit 2, one line" || bad "--ranks-per-process without mpirun: rc $rc: $out"
fi

fi

checks_done
