#!/usr/bin/env bash
# test_rendezvous_guard.sh - process 0's port, as anyone who reaches it
# may use it (--rendezvous file:DIR and tcp:HOST:PORT):
#  - a crowd at the port while a real job of 2 processes meets: 200
#    connections that say nothing and 100 that say a byte every half
#    second (each opened again when process 0 drops it), made here in
#    Python. The job must take no longer than the same job without the
#    crowd, give or take 15 s (once 10 idle connections held a worker up
#    27.6 s, and this crowd failed the job after --comm-timeout 60); in a
#    folder and at an address;
#  - in a folder, process 0 listens on loopback (127.0.0.1, read from
#    /proc/net/tcp while it waits), and the address it leaves there says
#    so;
#  - at an address, a job key always: process 0 without DDPTOP_JOB_KEY
#    makes one and shows it once; a worker without one is refused in one
#    line (exit 2) and never joins (it once did: anyone who reached the
#    port could); a worker given the key shown joins, and the job ends
#    well;
#  - a second process told RANK=1 is turned away in one line (exit 2),
#    and the job (of 3) goes on without it (it once ended the job).
# A build without gloo cannot train this way: exit 77.
# Usage: test_rendezvous_guard.sh DDPTOP
set -uo pipefail
bin=$(realpath "$1")
. "$(dirname "$0")/checks.sh"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"

base=(--batch --quiet --dataset synthetic --device cpu --model mlp --steps 3 --batch-size 16 --threads-per-rank 1
    --no-eval --comm-timeout 60)
if "$bin" "${base[@]}" --comm gloo --ranks 2 --steps 1 2>&1 >/dev/null | { grep -q "without gloo"; }; [ "${PIPESTATUS[1]}" = 0 ]; then
    echo "skip: this ddptop has no gloo"
    exit 77
fi
mkdir -m 700 rdv
free_port() { python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
now() { date +%s.%N; }
# waits (up to 30 s) until something listens on port PORT here
wait_listen() {
    local hex
    hex=$(printf '%04X' "$1")
    for _ in $(seq 600); do
        awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp && return
        sleep 0.05
    done
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# the crowd: IDLE connections that say nothing and SLOW that say a byte
# every half second, to HOST:PORT, each opened again once closed; prints
# "ready N" once N are open, then keeps at it until killed
cat >crowd.py <<'PYEOF'
import select, socket, sys, time
host, port, idle, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def conn():
    try:
        s = socket.create_connection((host, port), timeout=2)
        s.setblocking(False)
        return s
    except OSError:
        return None
socks = [[conn(), i >= idle] for i in range(idle + slow)]
print("ready", sum(1 for s, _ in socks if s), flush=True)
while True:
    for entry in socks:
        s, talks = entry
        if s is None:
            entry[0] = conn()
            continue
        try:
            if select.select([s], [], [], 0)[0] and s.recv(64) == b"":
                raise OSError("closed")
            if talks:
                s.send(b"d")  # (the first byte of "ddpw", process 0's magic)
        except OSError:
            s.close()
            entry[0] = None
    time.sleep(0.5)
PYEOF

# job NAME SPEC [crowd]: process 0 and 1 of a short job meeting at SPEC
# (with the crowd at process 0's port first); NAME.rc and NAME.rc1 their
# statuses, NAME.s the seconds from the worker's start to both ending
job() {
    local name=$1 spec=$2 crowd=${3:-} host port cpid=
    RANK=0 WORLD_SIZE=2 "$bin" "${base[@]}" --rendezvous "$spec" >/dev/null 2>"$name.err" &
    local z=$!
    if [ -n "$crowd" ]; then
        case $spec in
        file:*)
            for _ in $(seq 600); do [ -s rdv/ddptop-job.addr ] && break; sleep 0.05; done
            read -r host port _ <rdv/ddptop-job.addr
            ;;
        tcp:*) host=127.0.0.1 port=${spec##*:} ;;
        esac
        wait_listen "$port"
        python3 crowd.py "$host" "$port" 200 100 >"$name.crowd" 2>&1 &
        cpid=$!
        for _ in $(seq 600); do grep -q ready "$name.crowd" && break; sleep 0.05; done
    fi
    local t0
    t0=$(now)
    RANK=1 WORLD_SIZE=2 "$bin" "${base[@]}" --rendezvous "$spec" >/dev/null 2>"$name.err1"
    echo $? >"$name.rc1"
    wait $z
    echo $? >"$name.rc"
    secs "$t0" "$(now)" >"$name.s"
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
    rm -f rdv/*
}

export DDPTOP_JOB_KEY=guard-test
for where in file tcp; do
    spec=file:$tmp/rdv
    [ $where = tcp ] && spec=tcp:127.0.0.1:$(free_port)
    job "quiet_$where" "$spec"
    [ $where = tcp ] && spec=tcp:127.0.0.1:$(free_port)
    job "crowd_$where" "$spec" crowd
    q=$(cat "quiet_$where.s") c=$(cat "crowd_$where.s")
    if [ "$(cat "crowd_$where.rc" "crowd_$where.rc1" | tr -d '\n')" = 00 ] &&
        awk -v q="$q" -v c="$c" 'BEGIN { exit !(c < q + 15) }'; then
        ok "a crowd at $where's port ($(cat "crowd_$where.crowd")): the job took $c s, $q s without it"
    else
        bad "a crowd at $where's port: rc $(cat "crowd_$where.rc")/$(cat "crowd_$where.rc1"), $c s ($q s without)"
        grep ddptop "crowd_$where.err" "crowd_$where.err1" | head -3
    fi
done

# in a folder, process 0 listens on loopback, and says so in its address
RANK=0 WORLD_SIZE=2 "$bin" "${base[@]}" --rendezvous "file:$tmp/rdv" --comm-timeout 30 >/dev/null 2>lo.err &
z=$!
for _ in $(seq 600); do [ -s rdv/ddptop-job.addr ] && break; sleep 0.05; done
read -r host port _ <rdv/ddptop-job.addr
hexport=$(printf '%04X' "${port:-0}")
listening=$(awk -v p=":$hexport" '$2 ~ p"$" && $4 == "0A" { print $2 }' /proc/net/tcp)
RANK=1 WORLD_SIZE=2 "$bin" "${base[@]}" --rendezvous "file:$tmp/rdv" >/dev/null 2>lo.err1
rc1=$?
wait $z
rc=$?
[ "$host" = 127.0.0.1 ] && [ "$listening" = "0100007F:$hexport" ] && [ $rc -eq 0 ] && [ $rc1 -eq 0 ] &&
    ok "in a folder process 0 listens on loopback: the address says $host, /proc/net/tcp $listening" ||
    bad "in a folder: the address says '$host', /proc/net/tcp '$listening', rc $rc/$rc1"
rm -f rdv/*

# at an address without DDPTOP_JOB_KEY: process 0 makes one and shows it
# once; a worker without one is refused; one with the key shown joins
unset DDPTOP_JOB_KEY
at=tcp:127.0.0.1:$(free_port)
RANK=0 WORLD_SIZE=2 "$bin" "${base[@]}" --rendezvous "$at" >/dev/null 2>nokey.err &
z=$!
for _ in $(seq 600); do grep -q "job's key is" nokey.err && break; sleep 0.05; done
key=$(sed -n "s/.*this job's key is \([0-9a-f]*\):.*/\1/p" nokey.err)
RANK=1 WORLD_SIZE=2 timeout 60 "$bin" "${base[@]}" --rendezvous "$at" >/dev/null 2>nokey.err1
rc_nokey=$?
DDPTOP_JOB_KEY=$key RANK=1 WORLD_SIZE=2 timeout 60 "$bin" "${base[@]}" --rendezvous "$at" >/dev/null 2>withkey.err1
rc_key=$?
wait $z
rc=$?
[ ${#key} -eq 16 ] && [ "$(grep -c "job's key is" nokey.err)" -eq 1 ] && [ $rc_nokey -eq 2 ] &&
    [ "$(grep -c . nokey.err1)" -eq 1 ] && grep -q "DDPTOP_JOB_KEY is not set" nokey.err1 && [ $rc_key -eq 0 ] &&
    [ $rc -eq 0 ] &&
    ok "no DDPTOP_JOB_KEY at $at: process 0 made $key and said so once; a worker without it: $(cat nokey.err1)" ||
    { bad "no DDPTOP_JOB_KEY at $at: key '$key', worker without it rc $rc_nokey, with it rc $rc_key, process 0 rc $rc"
        cat nokey.err nokey.err1 withkey.err1 | grep ddptop | head -5; }

# a second process told RANK=1: turned away in one line; the job goes on.
# (3 processes, rank 2 started once a rank 1 has been turned away: with
# 2, the job could meet, and stop listening, before the second said its
# rank)
export DDPTOP_JOB_KEY=guard-test
RANK=0 WORLD_SIZE=3 "$bin" "${base[@]}" --rendezvous "file:$tmp/rdv" >/dev/null 2>twin.err &
z=$!
RANK=1 WORLD_SIZE=3 "$bin" "${base[@]}" --rendezvous "file:$tmp/rdv" >/dev/null 2>twin_a.err &
a=$!
RANK=1 WORLD_SIZE=3 "$bin" "${base[@]}" --rendezvous "file:$tmp/rdv" >/dev/null 2>twin_b.err &
b=$!
for _ in $(seq 1200); do grep -q "process 0 has a rank 1 already" twin_a.err twin_b.err && break; sleep 0.05; done
RANK=2 WORLD_SIZE=3 "$bin" "${base[@]}" --rendezvous "file:$tmp/rdv" >/dev/null 2>twin_c.err
rc2=$?
wait $z
rc=$?
wait $a
ra=$?
wait $b
rb=$?
refused=$( (grep -h "process 0 has a rank 1 already" twin_a.err twin_b.err || true) | head -1)
[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && { [ "$ra$rb" = 02 ] || [ "$ra$rb" = 20 ]; } && [ -n "$refused" ] &&
    [ "$(cat twin_a.err twin_b.err | grep -c .)" -eq 1 ] &&
    ok "two processes told RANK=1: the job ends well, one turned away: $refused" ||
    { bad "two RANK=1s: process 0 rc $rc, rank 2 rc $rc2, the two $ra and $rb"
        cat twin.err twin_a.err twin_b.err twin_c.err | grep ddptop | head -4; }
rm -f rdv/*

checks_done
