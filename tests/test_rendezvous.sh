#!/usr/bin/env bash
# test_rendezvous.sh - processes started without mpirun (--rendezvous
# file:DIR, RANK and WORLD_SIZE in each one's environment), as a user
# starts them by hand or torchrun --no-python does:
#  - 2 processes on gloo (its file store in DIR) train LeNet with dp,
#    allreduce, ddp and horovod to within 1e-5 (relative) of `single` on
#    the global batch; process 0's report names gloo and "2 processes on
#    1 node", and holds rank 1's row as the worker sent it: 20 steps, and
#    under allreduce and ddp the bytes its ring sent, counted by hand
#    (61706 float parameters: a 2-rank ring sends each rank's whole
#    gradient once a step);
#  - GLOO_SOCKET_IFNAME (PyTorch's) names the interface gloo listens on:
#    a real one trains, a missing one is refused before the run (one
#    line, exit 2);
#  - a process that never comes: process 0 fails after --comm-timeout in
#    one line naming it, exit 2;
#  - Ctrl-C on process 0 stops the job: exit 130, the run stopped (not
#    failed), though a worker's rank may fail in a collective rank 0 left;
#  - a worker killed outright mid-run: process 0's allreduce fails at
#    once (the kernel closes the dead one's sockets), naming rank 1, with
#    the report, exit 1; process 0 killed mid-run: the worker ends in
#    bounded time, not 0, saying so;
#  - what cannot run is one line and exit 2: no RANK, no file: in the
#    spec, a folder another user can write, --ranks-per-process, --comm mpi.
# A build without gloo cannot train this way: exit 77.
# Usage: test_rendezvous.sh DDPTOP
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"
fails=0
ok() { echo "ok - $* [${SECONDS} s]"; }
bad() {
    echo "FAIL - $* [${SECONDS} s]"
    fails=$((fails + 1))
    [ -n "${DDPTOP_FAIL_FAST:-}" ] && exit 1 # (the mutation harness: one failure is enough)
}

base=(--batch --quiet --dataset synthetic --device cpu --steps 20 --batch-size 32 --threads-per-rank 1 --model lenet)
if "$bin" "${base[@]}" --comm gloo --ranks 2 --steps 1 2>&1 >/dev/null | grep -q "without gloo"; then
    echo "skip: this ddptop has no gloo"
    exit 77
fi
"$bin" "${base[@]}" --strategy single --ranks 2 --save-params single.bin >/dev/null || bad "single x2"
mkdir -m 700 rdv

# pair NAME ARGS...: process 1 in the background, process 0 here; NAME.json
# is process 0's report, NAME.rc its status, NAME.rc1 process 1's
pair() {
    local name=$1
    shift
    (
        RANK=1 WORLD_SIZE=2 "$bin" "$@" --rendezvous file:"$tmp/rdv" >"$name.out1" 2>"$name.err1"
        echo $? >"$name.rc1"
    ) &
    local w=$!
    RANK=0 WORLD_SIZE=2 "$bin" "$@" --rendezvous file:"$tmp/rdv" >"$name.json" 2>"$name.err"
    echo $? >"$name.rc"
    wait $w
}

for st in dp allreduce ddp horovod; do
    extra=()
    [ "$st" = ddp ] && extra=(--bucket-mb 0.05)
    [ "$st" = horovod ] && extra=(--fusion-mb 0.02 --cycle-ms 1)
    pair "$st" "${base[@]}" --strategy "$st" "${extra[@]}" --check-replicas --save-params "$st.bin" --format json
    d=$(python3 "$here/reldiff.py" "$st.bin" single.bin)
    got=$(python3 - "$st.json" "$st" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
counted = sys.argv[2] in ("allreduce", "ddp")
rows = sorted((x["rank"], x["steps"], x["bytes_sent"] if counted else -1) for x in d["per_rank"])
print(r["replicas_identical"], r["backend"], "|", rows)
PYEOF
    )
    sent=-1
    case $st in allreduce | ddp) sent=$((61706 * 4 * 20)) ;; esac
    want="True gloo/ring, 2 processes on 1 node | [(0, 20, $sent), (1, 20, $sent)]"
    if [ "$(cat "$st.rc")" = 0 ] && [ "$(cat "$st.rc1")" = 0 ] && [ "$got" = "$want" ] &&
        python3 -c "import sys; sys.exit(not float('$d') < 1e-5)" 2>/dev/null; then
        ok "lenet $st, 2 processes met in a folder: $d from single; $got"
    else
        bad "lenet $st: rc $(cat "$st.rc")/$(cat "$st.rc1"), difference $d, got '$got'"
        tail -n 3 "$st.err" "$st.err1"
    fi
done
[ -z "$(ls rdv)" ] && ok "the folder is left empty" || bad "left in the folder: $(ls rdv)"

# across nodes gloo listens on the interface GLOO_SOCKET_IFNAME names, as
# PyTorch's does: a real one (the first with an IPv4 address other than
# loopback, where there is one) trains as on loopback; a missing one fails,
# named
nic=$(ip -o -4 addr 2>/dev/null | awk '$2 != "lo" { print $2; exit }')
if [ -n "$nic" ]; then
    GLOO_SOCKET_IFNAME=$nic pair nic "${base[@]}" --strategy allreduce --save-params nic.bin --format json
    d=$(python3 "$here/reldiff.py" nic.bin single.bin)
    [ "$(cat nic.rc)" = 0 ] && [ "$(cat nic.rc1)" = 0 ] && python3 -c "import sys; sys.exit(not float('$d') < 1e-5)" &&
        ok "GLOO_SOCKET_IFNAME=$nic: 2 processes train over it, $d from single" ||
        { bad "GLOO_SOCKET_IFNAME=$nic: rc $(cat nic.rc)/$(cat nic.rc1), difference $d"; tail -n 3 nic.err; }
else
    echo "(no interface but loopback: GLOO_SOCKET_IFNAME's real case is not run)"
fi
GLOO_SOCKET_IFNAME=nosuch0 "$bin" "${base[@]}" --comm gloo --ranks 2 --steps 2 >/dev/null 2>nic.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c . nic.err)" -eq 1 ] && grep -q "^ddptop: --comm gloo: GLOO_SOCKET_IFNAME=nosuch0: " nic.err &&
    ok "refused: $(cat nic.err)" || { bad "GLOO_SOCKET_IFNAME=nosuch0: rc $rc"; head -3 nic.err; }
rm -f rdv/*

# a process that never comes
t0=$SECONDS
RANK=0 WORLD_SIZE=2 "$bin" "${base[@]}" --rendezvous file:"$tmp/rdv" --comm-timeout 2 >/dev/null 2>alone.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c . alone.err)" -eq 1 ] && grep -q "process 1 of 2 did not come within 2 s" alone.err &&
    [ $((SECONDS - t0)) -lt 30 ] && ok "process 1 never came: $(cat alone.err)" ||
    { bad "process 1 never came: rc $rc after $((SECONDS - t0)) s"; head -3 alone.err; }
rm -f rdv/*

# a worker killed outright mid-run; then process 0 killed
long=(--batch --dataset synthetic --device cpu --steps 100000 --batch-size 32 --threads-per-rank 1 --model lenet
    --comm-timeout 20 --rendezvous file:"$tmp/rdv")
RANK=1 WORLD_SIZE=2 "$bin" "${long[@]}" >/dev/null 2>k.err1 &
w=$!
RANK=0 WORLD_SIZE=2 "$bin" "${long[@]}" --format json >k.json 2>k.err &
z=$!
for _ in $(seq 600); do
    grep -qx "rank 1" /proc/$w/task/*/comm 2>/dev/null && break
    sleep 0.1
done
sleep 1
kill -9 $w
wait $w 2>/dev/null
t0=$SECONDS
wait $z
rc=$?
python3 - k.json <<'PYEOF' >k.check 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
assert r["state"] == "failed", r["state"]
assert "rank 1" in r["error"], r["error"]
print(r["error"])
PYEOF
[ $rc -eq 1 ] && [ $((SECONDS - t0)) -lt 20 ] && grep -q "rank 1" k.check &&
    ok "worker killed: exit 1 after $((SECONDS - t0)) s, the report says: $(head -1 k.check)" ||
    { bad "worker killed: rc $rc after $((SECONDS - t0)) s"; cat k.check; tail -3 k.err; }
rm -f rdv/*
RANK=1 WORLD_SIZE=2 "$bin" "${long[@]}" >/dev/null 2>z.err1 &
w=$!
RANK=0 WORLD_SIZE=2 "$bin" "${long[@]}" >/dev/null 2>z.err &
z=$!
for _ in $(seq 600); do
    grep -qx "rank 1" /proc/$w/task/*/comm 2>/dev/null && break
    sleep 0.1
done
sleep 1
kill -9 $z
wait $z 2>/dev/null
t0=$SECONDS
wait $w
rc=$?
[ $rc -ne 0 ] && [ $((SECONDS - t0)) -lt 40 ] && grep -q "process 0 is gone\|failed" z.err1 &&
    ok "process 0 killed: the worker ended, rc $rc after $((SECONDS - t0)) s: $(grep ddptop z.err1 | head -1)" ||
    { bad "process 0 killed: worker rc $rc after $((SECONDS - t0)) s"; tail -3 z.err1; }
rm -f rdv/*

# Ctrl-C on process 0: the workers hear of the stop a tick later, and a
# rank of theirs may meanwhile fail in a collective rank 0 has left; the
# run is still stopped, not failed (exit 130), on every try
for try in 1 2 3; do
    RANK=1 WORLD_SIZE=2 "$bin" "${long[@]}" >/dev/null 2>i.err1 &
    w=$!
    RANK=0 WORLD_SIZE=2 "$bin" "${long[@]}" --format json >i.json 2>i.err &
    z=$!
    for _ in $(seq 600); do
        grep -qx "rank 1" /proc/$w/task/*/comm 2>/dev/null && break
        sleep 0.1
    done
    sleep 2
    kill -INT $z
    wait $z
    rc=$?
    wait $w 2>/dev/null
    state=$(python3 -c "import json; r = json.load(open('i.json'))['runs'][0]; print(r['state'], r['steps'] > 0)" 2>&1)
    if [ $rc -eq 130 ] && [ "$state" = "stopped True" ] && ! grep -q "failed" i.err; then
        ok "Ctrl-C on process 0 (try $try): exit 130, the run $state"
    else
        bad "Ctrl-C on process 0 (try $try): rc $rc, state '$state'"
        grep ddptop i.err | head -3
    fi
    rm -f rdv/*
done

# refusals: one line, exit 2
refuse() { # refuse WHAT ENV... -- ARGS...
    local what=$1 envs=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$bin" "${base[@]}" "$@" >/dev/null 2>r.err
    local rc=$? lines
    lines=$(grep -c . r.err)
    [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -q "^ddptop: $what" r.err && ok "refused: $(cat r.err)" ||
        { bad "$*: rc $rc, $lines lines, wanted '$what'"; head -5 r.err; }
}
refuse "--rendezvous: RANK must be" -u RANK WORLD_SIZE=2 -- --rendezvous file:"$tmp/rdv"
refuse "--rendezvous: expected file:DIR" RANK=0 WORLD_SIZE=1 -- --rendezvous "$tmp/rdv"
mkdir -m 775 open
refuse "rendezvous $tmp/open: another user can write" RANK=0 WORLD_SIZE=1 -- --rendezvous file:"$tmp/open"
refuse "--ranks-per-process: only under mpirun" RANK=0 WORLD_SIZE=1 -- --rendezvous file:"$tmp/rdv" \
    --ranks-per-process 2
refuse "--comm mpi: needs mpirun" RANK=0 WORLD_SIZE=1 -- --rendezvous file:"$tmp/rdv" --comm mpi

echo "$fails failed"
[ $fails -eq 0 ]
