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
#  - at an address (tcp:127.0.0.1:PORT, a free port), where gloo meets
#    through process 0: allreduce and ddp the same as in a folder, bytes
#    counted by hand; 2 replicas of 2 stages in 4 processes (each stage's
#    replicas in a gloo group without process 0 in one of them) end bit
#    for bit as 4 rank threads; a sweep of 2 runs meets twice, each run's
#    rows counted by hand (every process given one DDPTOP_JOB_KEY, as an
#    address needs); DDPTOP_JOB_KEY differing: both processes fail in one
#    line, the worker never answered and naming the key; a worker killed
#    mid-run, as in a folder (below);
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
#    spec, tcp: without a port or with an IPv6 address, a folder another
#    user can write,
#    --ranks-per-process, --comm mpi.
# A build without gloo cannot train this way: exit 77.
# Usage: test_rendezvous.sh DDPTOP
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/checks.sh"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"

# (an address needs a job key; a folder keeps its own)
export DDPTOP_JOB_KEY=rendezvous-test
# (--no-eval: nothing here reads the test split's figures, and its
# evaluation would be most of each short run)
base=(--batch --quiet --dataset synthetic --device cpu --steps 20 --batch-size 32 --threads-per-rank 1 --model lenet
    --no-eval)
# (the refusal read first: under pipefail, `ddptop | grep` is false when ddptop refuses)
if "$bin" "${base[@]}" --comm gloo --ranks 2 --steps 1 2>&1 >/dev/null | { grep -q "without gloo"; }; [ "${PIPESTATUS[1]}" = 0 ]; then
    echo "skip: this ddptop has no gloo"
    exit 77
fi
"$bin" "${base[@]}" --strategy single --ranks 2 --save-params single.bin >/dev/null || bad "single x2"
mkdir -m 700 rdv

# pair NAME ARGS...: process 1 in the background, process 0 here, meeting
# at $rdv; NAME.json is process 0's report, NAME.rc its status, NAME.rc1
# process 1's
rdv=file:$tmp/rdv
pair() {
    local name=$1
    shift
    (
        RANK=1 WORLD_SIZE=2 "$bin" "$@" --rendezvous "$rdv" >"$name.out1" 2>"$name.err1"
        echo $? >"$name.rc1"
    ) &
    local w=$!
    RANK=0 WORLD_SIZE=2 "$bin" "$@" --rendezvous "$rdv" >"$name.json" 2>"$name.err"
    echo $? >"$name.rc"
    wait $w
}

free_port() { python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
for st in dp allreduce ddp horovod tcp:allreduce tcp:ddp; do
    rdv=file:$tmp/rdv
    case $st in tcp:*) st=${st#tcp:} rdv=tcp:127.0.0.1:$(free_port) ;; esac
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
        ok "lenet $st, 2 processes met at $rdv: $d from single; $got"
    else
        bad "lenet $st at $rdv: rc $(cat "$st.rc")/$(cat "$st.rc1"), difference $d, got '$got'"
        tail -n 3 "$st.err" "$st.err1"
    fi
done
[ -z "$(ls rdv)" ] && ok "the folder is left empty" || bad "left in the folder: $(ls rdv)"
rdv=file:$tmp/rdv

# 2 replicas of 2 stages in 4 processes at an address: rank 1 and 3 (the
# second stage) average in a gloo group that process 0 is not in; every
# parameter as with 4 rank threads
dpargs=(--model lenet --steps 8 --parallel pipeline --micro-batches 2 --schedule gpipe --dp 2 --partition 0:3,4:
    --comm gloo)
"$bin" "${base[@]}" "${dpargs[@]}" --ranks 4 --save-params threads_dp.bin >/dev/null 2>threads_dp.err ||
    { bad "--dp 2 over 2 stages on 4 rank threads"; tail -n 3 threads_dp.err; }
at=tcp:127.0.0.1:$(free_port)
for r in 1 2 3; do
    (RANK=$r WORLD_SIZE=4 "$bin" "${base[@]}" "${dpargs[@]}" --rendezvous "$at" >/dev/null 2>dp$r.err; echo $? >dp$r.rc) &
done
RANK=0 WORLD_SIZE=4 "$bin" "${base[@]}" "${dpargs[@]}" --rendezvous "$at" --save-params procs_dp.bin >/dev/null 2>dp0.err
rc=$?
wait
[ $rc -eq 0 ] && [ "$(cat dp1.rc dp2.rc dp3.rc | tr -d '\n')" = 000 ] && cmp -s threads_dp.bin procs_dp.bin &&
    ok "--dp 2 over 2 stages, 4 processes at $at: as 4 threads, bit for bit" ||
    { bad "--dp 2 over 2 stages at $at: rc $rc/$(cat dp1.rc dp2.rc dp3.rc | tr '\n' /)"; tail -n 3 dp*.err; }

# two runs in one job at an address (a sweep): each run's gloo world meets
# anew through process 0; both runs' rows have every step and the bytes a
# 2-rank ring sends, counted by hand (61706 floats x 4 B x 10 steps)
rdv=tcp:127.0.0.1:$(free_port)
pair sweep "${base[@]}" --steps 10 --comm gloo --strategy allreduce,ddp --format json
got=$(python3 -c "
import json; d = json.load(open('sweep.json'))
print([r['state'] for r in d['runs']], sorted(set((x['steps'], x['bytes_sent']) for x in d['per_rank'])), len(d['per_rank']))" 2>&1)
want="['done', 'done'] [(10, $((61706 * 4 * 10)))] 4"
[ "$(cat sweep.rc)" = 0 ] && [ "$(cat sweep.rc1)" = 0 ] && [ "$got" = "$want" ] &&
    ok "a sweep of 2 runs at $rdv: $got" || { bad "sweep at $rdv: rc $(cat sweep.rc)/$(cat sweep.rc1), got '$got'"; tail -n 3 sweep.err; }
rdv=file:$tmp/rdv

# another job key at the address: both fail in one line, exit 2
at=tcp:127.0.0.1:$(free_port)
(DDPTOP_JOB_KEY=one RANK=1 WORLD_SIZE=2 "$bin" "${base[@]}" --comm-timeout 3 --rendezvous "$at" >/dev/null 2>key.err1
    echo $? >key.rc1) &
DDPTOP_JOB_KEY=two RANK=0 WORLD_SIZE=2 "$bin" "${base[@]}" --comm-timeout 3 --rendezvous "$at" >/dev/null 2>key.err
rc=$?
wait
[ $rc -eq 2 ] && [ "$(cat key.rc1)" = 2 ] && [ "$(cat key.err key.err1 | grep -c .)" -eq 2 ] &&
    grep -q "closed this process's connection without an answer.*another job key (DDPTOP_JOB_KEY" key.err1 &&
    grep -q "another job key" key.err &&
    ok "another job key: $(cat key.err1)" ||
    { bad "another job key: rc $rc/$(cat key.rc1)"; cat key.err key.err1; }

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
    --comm-timeout 20)
# long_pair NAME: both processes of a long run met at $rdv in the
# background, w the worker's pid and z process 0's (its report NAME.json),
# back once rank 1 trains
long_pair() {
    RANK=1 WORLD_SIZE=2 "$bin" "${long[@]}" --rendezvous "$rdv" >/dev/null 2>"$1.err1" &
    w=$!
    RANK=0 WORLD_SIZE=2 "$bin" "${long[@]}" --rendezvous "$rdv" --format json >"$1.json" 2>"$1.err" &
    z=$!
    for _ in $(seq 600); do
        grep -qx "rank 1" /proc/$w/task/*/comm 2>/dev/null && break
        sleep 0.1
    done
}
for rdv in file:"$tmp/rdv" tcp:127.0.0.1:$(free_port); do
    long_pair k
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
        ok "worker killed (met at $rdv): exit 1 after $((SECONDS - t0)) s, the report says: $(head -1 k.check)" ||
        { bad "worker killed (met at $rdv): rc $rc after $((SECONDS - t0)) s"; cat k.check; tail -3 k.err; }
    rm -f rdv/*
done
rdv=file:$tmp/rdv
long_pair z
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
# run is still stopped, not failed (exit 130). The worker acts on the stop
# 1.5 s late (DDPTOP_TEST_STOP_LATE_MS), so that its rank meets the
# collective rank 0 left on every try: it fails (the worker exits 1), and
# process 0 must count that failure as the stop's doing.
for try in 1 2; do
    DDPTOP_TEST_STOP_LATE_MS=1500 long_pair i
    sleep 2
    kill -INT $z
    wait $z
    rc=$?
    wait $w 2>/dev/null
    wrc=$?
    state=$(python3 -c "import json; r = json.load(open('i.json'))['runs'][0]; print(r['state'], r['steps'] > 0)" 2>&1)
    if [ $rc -eq 130 ] && [ "$state" = "stopped True" ] && ! grep -q "failed" i.err && [ $wrc -eq 1 ]; then
        ok "Ctrl-C on process 0 (try $try): exit 130, the run $state, though rank 1 failed after the stop"
    else
        bad "Ctrl-C on process 0 (try $try): rc $rc, state '$state', the worker's rc $wrc (1: its rank failed)"
        grep ddptop i.err | head -3
    fi
    rm -f rdv/*
done
# and without the hook, as a user's stop runs: stopped, whichever way the race goes
long_pair i
sleep 2
kill -INT $z
wait $z
rc=$?
wait $w 2>/dev/null
state=$(python3 -c "import json; r = json.load(open('i.json'))['runs'][0]; print(r['state'], r['steps'] > 0)" 2>&1)
[ $rc -eq 130 ] && [ "$state" = "stopped True" ] && ! grep -q "failed" i.err &&
    ok "Ctrl-C on process 0: exit 130, the run $state" ||
    { bad "Ctrl-C on process 0: rc $rc, state '$state'"; grep ddptop i.err | head -3; }
rm -f rdv/*

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
refuse "--rendezvous: expected tcp:HOST:PORT" RANK=0 WORLD_SIZE=1 -- --rendezvous tcp:localhost
refuse "--rendezvous: tcp: takes a host name or an IPv4 address, not IPv6" RANK=0 WORLD_SIZE=1 -- --rendezvous \
    "tcp:[::1]:29500"
mkdir -m 775 open
refuse "rendezvous $tmp/open: another user can write" RANK=0 WORLD_SIZE=1 -- --rendezvous file:"$tmp/open"
refuse "--ranks-per-process: only under mpirun" RANK=0 WORLD_SIZE=1 -- --rendezvous file:"$tmp/rdv" \
    --ranks-per-process 2
refuse "--comm mpi: needs mpirun" RANK=0 WORLD_SIZE=1 -- --rendezvous file:"$tmp/rdv" --comm mpi
refuse "unknown option '--no-such'" RANK=0 WORLD_SIZE=2 -- --no-such --rendezvous file:"$tmp/rdv"

# a worker keeps quiet about the command line, which process 0 refuses for
# the job: whichever option comes first, and whatever it asks (--help too)
quiet() { # quiet RC ARGS...
    local want=$1
    shift
    RANK=1 WORLD_SIZE=2 "$bin" "$@" >q.out 2>q.err
    local rc=$?
    [ $rc -eq "$want" ] && [ ! -s q.out ] && [ ! -s q.err ] && ok "worker quiet: $*" ||
        { bad "worker $*: rc $rc, wanted $want and no output"; head -3 q.out q.err; }
}
quiet 2 "${base[@]}" --no-such --rendezvous file:"$tmp/rdv"
quiet 2 "${base[@]}" --rendezvous file:"$tmp/rdv" --batch-size 0
quiet 2 "${base[@]}" --ranks-per-process x --rendezvous tcp:127.0.0.1:29500
quiet 2 "${base[@]}" --rendezvous tcp:127.0.0.1:65536
quiet 0 --help --rendezvous file:"$tmp/rdv"

checks_done
