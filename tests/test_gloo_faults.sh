#!/usr/bin/env bash
# test_gloo_faults.sh - a fault on rank 1 of 2 processes on gloo is named
# as rank 1's, in rank 1's own words, whatever its peer's calls said after
# it: a rank that fails destroys its gloo contexts, so process 0's rank 0
# fails at once ("gloo's connections are unusable") and its own end is
# known to process 0 before rank 1's comes through the relay. The first
# failure in time must win: for each of --inject-fault's failing kinds on
# rank 1 at step 10 (nan, crash, oom, comm-error), process 0's line and
# report say "rank 1 failed: " and what rank 1 said (the words each kind
# is documented to give, with the step injected here), never rank 0.
#   test_gloo_faults.sh DDPTOP        processes met in a folder
#                                     (--rendezvous file:DIR)
#   test_gloo_faults.sh DDPTOP mpi    processes under mpirun --comm gloo;
#                                     exit 77 without mpirun or MPI
# A build without gloo cannot run either: exit 77.
set -uo pipefail
bin=$(realpath "$1")
how=${2:-file}
. "$(dirname "$0")/checks.sh"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"

base=(--batch --quiet --dataset synthetic --device cpu --model mlp --strategy allreduce --steps 40 --batch-size 16
    --threads-per-rank 1 --no-eval --comm-timeout 60 --format json)
if "$bin" "${base[@]}" --comm gloo --ranks 2 --steps 1 2>&1 >/dev/null | { grep -q "without gloo"; }; [ "${PIPESTATUS[1]}" = 0 ]; then
    echo "skip: this ddptop has no gloo"
    exit 77
fi
if [ "$how" = mpi ]; then
    if ! command -v mpirun >/dev/null || "$bin" "${base[@]}" --comm mpi 2>&1 | grep -q "built without MPI"; then
        echo "skip: no mpirun, or a build without MPI"
        exit 77
    fi
    mpi=(mpirun --oversubscribe -np 2)
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
    export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader RES_OPTIONS="timeout:1 attempts:1"
    export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"
fi
mkdir -m 700 rdv

# run KIND: the job with the fault on rank 1 at step 10; process 0's report
# in KIND.json, its stderr in KIND.err, its status (mpirun's) in KIND.rc
run() {
    local kind=$1 fault=(--inject-fault "rank=1,step=10,kind=$1")
    if [ "$how" = mpi ]; then
        timeout 120 "${mpi[@]}" "$bin" "${base[@]}" --comm gloo "${fault[@]}" >"$kind.json" 2>"$kind.err"
        echo $? >"$kind.rc"
        return
    fi
    (RANK=1 WORLD_SIZE=2 timeout 120 "$bin" "${base[@]}" "${fault[@]}" --rendezvous "file:$tmp/rdv" \
        >/dev/null 2>"$kind.err1") &
    RANK=0 WORLD_SIZE=2 timeout 120 "$bin" "${base[@]}" "${fault[@]}" --rendezvous "file:$tmp/rdv" \
        >"$kind.json" 2>"$kind.err"
    echo $? >"$kind.rc"
    wait
    rm -f rdv/*
}

# each kind's words (a regular expression), as docs/gloo.md and --help give
# them, at the step injected
for kind in nan crash oom comm-error; do
    case $kind in
    nan) want="rank 1 failed: training diverged at step 10" ;;
    crash) want="rank 1 failed: the rank's thread died at step 10 \(injected fault\)" ;;
    oom) want="rank 1 failed: step 10: out of memory for the activations \(injected fault\)" ;;
    comm-error) want="rank 1 failed: .*the link to the peers failed \(injected fault\)" ;;
    esac
    run "$kind"
    rc=$(cat "$kind.rc")
    said=$(grep "^ddptop: rank [0-9]* failed" "$kind.err" | head -1)
    error=$(python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['runs'][0]; print(r['state'], '|', r['error'])" \
        "$kind.json" 2>&1)
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [[ "$said" =~ ^ddptop:\ $want ]] && [[ "$error" =~ ^failed\ \|\ $want ]]; then
        ok "$kind on rank 1 ($how): exit $rc, named: ${said#ddptop: }"
    else
        bad "$kind on rank 1 ($how): exit $rc, said '${said:-nothing}', the report '$error'; wanted '$want'"
        grep ddptop "$kind.err" | head -3
    fi
done

checks_done
