#!/usr/bin/env bash
# gpu_e2e.sh - ddptop on a real GPU, as a user there sees it:
#  1. live vs replay: a 2-rank DDP ResNet-18 run traced with CUPTI, then
#     --replay of its trace, give the same device, backend and view, and
#     every rank's compute/comm/data/idle within 0.5 points; the same with
#     --no-cupti (the host view); the trace holds Kineto-style device
#     records (cat kernel, gpu_memcpy) with a device and a stream;
#  2. --slow-rank 1:3 slows rank 1's device compute: its compute share
#     grows and rank 0 idles more, against the same run without it;
#  3. a sweep of three runs in one process (each next run starts before
#     the last one's GPU resources are freed, as the UI's `s` does): all
#     three train their steps and the process exits 0;
#  4. every kind of --inject-fault on every strategy, on the GPU
#     (tests/test_faults.sh with FAULT_DEVICE=cuda);
#  5. the UI in tmux (when tmux is here): the Timeline pane's gpu lanes
#     show kernels (fwd/bwd/opt/comm glyphs, not only idle dots) for both
#     ranks, `s` three times adds three runs that each train, and `q`
#     exits 0;
#  6. a batch too large for the GPU's free memory (ResNet-101 on 3x224x224
#     at batch 440, ~188 GB) is refused before any rank starts, in one
#     line naming the GPU's free memory and a batch to try, exit 2; that
#     batch then trains, and its measured peak is set beside the estimate;
#  7. pipelines on one shared GPU: ResNet-18 in 2 stages, GPipe and 1F1B
#     with 4 micro-batches, train their steps headless with both stages
#     computing on the device and idling in their bubbles; in tmux the
#     pipeline's Timeline pane shows kernels on both ranks' gpu lanes (the
#     screen is kept in $OUT).
#
# Usage: gpu_e2e.sh /path/to/ddptop [part...]   (parts: replay slow sweep faults ui oom pipeline)
# Exit status: 0 pass, 1 fail, 77 skip (no GPU here).
set -u
BIN=${1:?usage: gpu_e2e.sh /path/to/ddptop [replay slow sweep faults ui oom pipeline]}
shift
PARTS=${*:-replay slow sweep faults ui oom pipeline}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "FAIL: $BIN is not executable"; exit 1; }
if "$BIN" --info --device cuda 2>&1 | grep -q "no GPU is present\|not built with CUDA\|GPU module"; then
    echo "SKIP: no usable GPU here"
    exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON reports"; exit 77; }

T=$(mktemp -d /tmp/ddptop-gpu-e2e.XXXXXX)
FAILS=0
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
RUN=(--device cuda --dataset synthetic --no-eval)

# compare LIVE.json REPLAY.json: device, backend, view and per-rank shares
compare() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ra, rb = a["runs"][0], b["runs"][0]
bad = []
for k in ("device", "backend", "view"):
    if ra[k] != rb[k]:
        bad.append(f"{k}: live {ra[k]!r}, replay {rb[k]!r}")
pa, pb = a["per_rank"], b["per_rank"]
if len(pa) != len(pb):
    bad.append(f"ranks: live {len(pa)}, replay {len(pb)}")
print(f"{'rank':>4} {'device':>8} {'view':>5} | {'live c/m/d/i %':>27} | {'replay c/m/d/i %':>27}")
for x, y in zip(pa, pb):
    fa = [x[k + "_pct"] for k in ("compute", "comm", "data", "idle")]
    fb = [y[k + "_pct"] for k in ("compute", "comm", "data", "idle")]
    print(f"{x['rank']:>4} {y['device']:>8} {y['view']:>5} | " + " ".join(f"{v:6.2f}" for v in fa) + " | " +
          " ".join(f"{v:6.2f}" for v in fb))
    if x["device"] != y["device"]:
        bad.append(f"rank {x['rank']} device: live {x['device']}, replay {y['device']}")
    for k, u, v in zip(("compute", "comm", "data", "idle"), fa, fb):
        if abs(u - v) > 0.5:
            bad.append(f"rank {x['rank']} {k}: live {u:.2f}%, replay {v:.2f}%")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
}

if [[ " $PARTS " == *" replay "* ]]; then
    for view in device host; do
        extra=()
        [ $view = host ] && extra=(--no-cupti)
        if "$BIN" --batch --quiet "${RUN[@]}" --model resnet18 --ranks 2 --strategy ddp --batch-size 64 --steps 40 \
            "${extra[@]}" --trace "$T/$view.json.gz" --format json >"$T/live-$view.json" 2>"$T/err" &&
            "$BIN" --batch --replay "$T/$view.json.gz" --format json >"$T/replay-$view.json" 2>>"$T/err"; then
            compare "$T/live-$view.json" "$T/replay-$view.json" && pass "replay of a GPU trace ($view view) equals the live run" ||
                fail "replay of a GPU trace ($view view) differs from the live run"
        else
            fail "the $view-view run or its replay failed: $(tail -3 "$T/err")"
        fi
    done
    # the device records as Perfetto and HTA look for them
    if python3 - "$T/device.json.gz" <<'EOF'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
ev = d["traceEvents"]
k = [e for e in ev if e.get("cat") == "kernel"]
m = [e for e in ev if e.get("cat") == "gpu_memcpy"]
print(f"{len(ev)} events: {len(k)} kernel, {len(m)} gpu_memcpy; e.g. {k[0]['name'][:60] if k else None}")
ok = k and m and all("device" in e["args"] and "stream" in e["args"] and "phase" in e["args"] for e in k + m)
ok = ok and {e["args"]["phase"] for e in k} >= {"forward", "backward", "optimizer", "comm"}
sys.exit(0 if ok else 1)
EOF
    then pass "the trace holds kernel and gpu_memcpy records with device, stream and phase"; else fail "the trace's device records"; fi
fi

if [[ " $PARTS " == *" slow "* ]]; then
    for f in none 3; do
        extra=()
        [ $f != none ] && extra=(--slow-rank 1:$f)
        "$BIN" --batch --quiet "${RUN[@]}" --model resnet18 --ranks 2 --strategy allreduce --batch-size 64 --steps 60 \
            "${extra[@]}" --format json >"$T/slow-$f.json" 2>"$T/err" || fail "--slow-rank $f run: $(tail -2 "$T/err")"
    done
    if python3 - "$T/slow-none.json" "$T/slow-3.json" <<'EOF'; then
import json, sys
base, slow = (json.load(open(p))["per_rank"] for p in sys.argv[1:3])
for name, rows in (("none", base), ("1:3", slow)):
    print(f"--slow-rank {name}: " + ", ".join(f"rank {r['rank']} compute {r['compute_pct']:.1f}% idle {r['idle_pct']:.1f}% ({r['ms_per_step']:.2f} ms/step)" for r in rows))
ok = slow[1]["compute_pct"] > slow[0]["compute_pct"] + 10 and slow[0]["idle_pct"] > slow[1]["idle_pct"] + 10
ok = ok and slow[0]["ms_per_step"] > 1.5 * base[0]["ms_per_step"]
sys.exit(0 if ok else 1)
EOF
        pass "--slow-rank 1:3 stretches rank 1's device compute and rank 0 idles"
    else
        fail "--slow-rank on the GPU"
    fi
fi

if [[ " $PARTS " == *" sweep "* ]]; then
    if "$BIN" --batch --quiet "${RUN[@]}" --model resnet18 --ranks 2 --strategy ddp,single,allreduce --batch-size 64 \
        --steps 30 --format json >"$T/sweep.json" 2>"$T/err" &&
        python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"]; print([(x["strategy"], x["steps"], x["state"]) for x in r]); sys.exit(0 if len(r) == 3 and all(x["steps"] == 30 for x in r) else 1)' "$T/sweep.json"; then
        pass "a sweep of three GPU runs in one process"
    else
        fail "a sweep of three GPU runs: $(tail -3 "$T/err")"
    fi
fi

if [[ " $PARTS " == *" faults "* ]]; then
    FAULT_DEVICE=cuda FAULT_STRATEGIES="dp gather-scatter allreduce ddp" bash "$(dirname "$0")/test_faults.sh" "$BIN" && pass "every fault kind on every strategy, on the GPU" ||
        fail "fault injection on the GPU"
fi

if [[ " $PARTS " == *" ui "* ]]; then
    if ! command -v tmux >/dev/null 2>&1; then
        echo "skip - the UI part: tmux is not installed"
    else
        SOCK="ddptop-gpu-$$"
        S=gpu
        # the caller's library path (a bundle's libtinfo) stays out of tmux itself
        LDP=${LD_LIBRARY_PATH:-}
        tm() { env -u LD_LIBRARY_PATH tmux -L "$SOCK" "$@"; }
        screen() { tm capture-pane -p -t "$S"; }
        wait_for() {
            local re=$1 end=$(($(date +%s) + $2))
            while [ "$(date +%s)" -lt "$end" ]; do
                screen | grep -Eq -- "$re" && return 0
                sleep 0.2
            done
            return 1
        }
        tm new-session -d -s "$S" -x 150 -y 48 \
            "env LD_LIBRARY_PATH='$LDP' LC_ALL=C TERM=xterm-256color '$BIN' --device cuda --dataset synthetic --model resnet18 --ranks 2 --strategy ddp --batch-size 64 --epochs 1000 --steps 100000 2>'$T/ui.err'; echo \"exit=\$?\" >'$T/ui.rc'; sleep 30"
        if wait_for 'steps [0-9]+-[0-9]+' 60; then
            sleep 3
            screen >"$T/screen1.txt"
            sed -n '/Timeline/,/ fwd /p' "$T/screen1.txt"
            g0=$(grep -E 'r0 gpu ' "$T/screen1.txt" | grep -c '[><+=]')
            g1=$(grep -E 'r1 gpu ' "$T/screen1.txt" | grep -c '[><+=]')
            [ "$g0" -ge 1 ] && [ "$g1" -ge 1 ] && pass "the Timeline pane's gpu lanes show kernels for both ranks" ||
                fail "the gpu lanes show no kernels: $(grep -E 'r[01] gpu' "$T/screen1.txt")"
        else
            fail "the Timeline pane never showed a step window"
            screen
        fi
        for k in 1 2 3; do
            tm send-keys -t "$S" s
            sleep 1
            # the new run trains: its step counter moves within 30 s
            a=$(screen | grep -oE 'step [0-9]+/' | head -1)
            moved=0
            for _ in $(seq 60); do
                sleep 0.5
                b=$(screen | grep -oE 'step [0-9]+/' | head -1)
                [ -n "$b" ] && [ "$b" != "$a" ] && { moved=1; break; }
            done
            [ -f "$T/ui.rc" ] && { fail "ddptop ended after s number $k: $(cat "$T/ui.rc") $(tail -3 "$T/ui.err")"; break; }
            [ $moved = 1 ] && pass "s number $k started a run that trains ($a -> $b)" || fail "s number $k: no step moved ($a)"
        done
        screen >"$T/screen2.txt"
        tm send-keys -t "$S" q
        for _ in $(seq 100); do [ -f "$T/ui.rc" ] && break; sleep 0.2; done
        grep -q 'exit=0' "$T/ui.rc" 2>/dev/null && pass "q exits 0" || fail "q: $(cat "$T/ui.rc" 2>/dev/null) $(tail -3 "$T/ui.err")"
        [ -n "${OUT:-}" ] && cp "$T"/screen*.txt "$OUT/" 2>/dev/null
        tm kill-server >/dev/null 2>&1
    fi
fi

if [[ " $PARTS " == *" pipeline "* ]]; then
    for sched in gpipe 1f1b; do
        if "$BIN" --batch --quiet "${RUN[@]}" --model resnet18 --ranks 2 --parallel pipeline --micro-batches 4 \
            --schedule $sched --batch-size 128 --steps 30 --format json >"$T/pipe-$sched.json" 2>"$T/err" &&
            python3 - "$T/pipe-$sched.json" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
for s, x in zip(r["stages"], d["per_rank"]):
    print(f"stage {s['stage']} (layers {s['first_layer']}-{s['last_layer']}, {x['device']}, {x['view']} view): compute {s['compute_pct']:.1f}% "
          f"idle {s['idle_pct']:.1f}%, {s['sent_mb_per_step']:.2f} MB sent a step, {x['ms_per_step']:.2f} ms/step")
ok = r["steps"] == 30 and len(r["stages"]) == 2 and all(s["compute_pct"] > 1 and s["idle_pct"] > 1 for s in r["stages"])
sys.exit(0 if ok and all(x["view"] == "gpu" for x in d["per_rank"]) else 1)
EOF
            pass "a $sched pipeline of 2 stages trains on one GPU, both stages computing on the device"
        else
            fail "a $sched pipeline on the GPU: $(tail -3 "$T/err")"
        fi
    done
    if command -v tmux >/dev/null 2>&1; then
        SOCK="ddptop-gpu-pipe-$$"
        LDP=${LD_LIBRARY_PATH:-}
        tp() { env -u LD_LIBRARY_PATH tmux -L "$SOCK" "$@"; }
        tp new-session -d -s p -x 150 -y 48 \
            "env LD_LIBRARY_PATH='$LDP' LC_ALL=C TERM=xterm-256color '$BIN' --device cuda --dataset synthetic --model resnet18 --ranks 2 --parallel pipeline --micro-batches 4 --batch-size 128 --epochs 1000 --steps 100000 2>'$T/pui.err'; echo \"exit=\$?\" >'$T/pui.rc'; sleep 30"
        ok=0
        for _ in $(seq 150); do
            tp capture-pane -p -t p | grep -Eq 'steps [0-9]+-[0-9]+' && { ok=1; break; }
            sleep 0.2
        done
        sleep 3
        tp capture-pane -p -t p >"$T/screen_pipeline.txt"
        sed -n '/Timeline/,/ fwd /p' "$T/screen_pipeline.txt"
        g0=$(grep -E 'r0 gpu ' "$T/screen_pipeline.txt" | grep -c '[><+=]')
        g1=$(grep -E 'r1 gpu ' "$T/screen_pipeline.txt" | grep -c '[><+=]')
        [ $ok = 1 ] && [ "$g0" -ge 1 ] && [ "$g1" -ge 1 ] && pass "the pipeline's Timeline pane shows kernels on both stages' gpu lanes" ||
            fail "the pipeline's Timeline pane: $(grep -E 'r[01] gpu|Timeline' "$T/screen_pipeline.txt") $(tail -2 "$T/pui.err")"
        tp send-keys -t p q
        for _ in $(seq 100); do [ -f "$T/pui.rc" ] && break; sleep 0.2; done
        grep -q 'exit=0' "$T/pui.rc" 2>/dev/null && pass "q exits the pipeline's UI with 0" || fail "q: $(cat "$T/pui.rc" 2>/dev/null)"
        [ -n "${OUT:-}" ] && cp "$T/screen_pipeline.txt" "$OUT/" 2>/dev/null
        tp kill-server >/dev/null 2>&1
    fi
fi

if [[ " $PARTS " == *" oom "* ]]; then
    big=(--batch --quiet "${RUN[@]}" --model resnet101 --input 3x224x224 --ranks 1 --steps 2 --cudnn-algo heuristic)
    "$BIN" "${big[@]}" --batch-size 440 >"$T/oom.out" 2>"$T/oom.err"
    rc=$?
    echo "batch 440: exit $rc: $(cat "$T/oom.err")"
    n=$(grep -oE 'try --batch-size [0-9]+' "$T/oom.err" | grep -oE '[0-9]+$')
    if [ $rc = 2 ] && [ "$(wc -l <"$T/oom.err")" = 1 ] && grep -q 'and cuda:[0-9]* has .* free; try' "$T/oom.err" &&
        [ -n "$n" ]; then
        pass "a batch too large for the GPU is one line, exit 2, batch $n suggested"
        est=$("$BIN" --info --device cuda --model resnet101 --input 3x224x224 --batch-size "$n" 2>/dev/null |
            grep -oE "needs ~[0-9.]+ MB" | grep -oE '[0-9.]+')
        if "$BIN" "${big[@]}" --batch-size "$n" --format json >"$T/oom-fit.json" 2>"$T/err"; then
            python3 -c 'import json, sys; q = json.load(open(sys.argv[1]))["per_rank"][0]; print("batch %s: peak %.0f MB on the GPU, estimate %s MB" % (sys.argv[2], q["mem_peak_bytes"] / 2**20, sys.argv[3]))' \
                "$T/oom-fit.json" "$n" "${est:-?}"
            pass "the suggested batch ($n) trains on the GPU"
        else
            fail "the suggested batch ($n) failed: $(tail -2 "$T/err")"
        fi
    else
        fail "batch 440 of ResNet-101 at 224: exit $rc, $(head -3 "$T/oom.err")"
    fi
fi

[ -n "${OUT:-}" ] && cp "$T"/*.json "$OUT/" 2>/dev/null
[ -n "${OUT:-}" ] && cp "$T"/device.json.gz "$OUT/gpu_trace_device.json.gz" 2>/dev/null
rm -rf "$T"
[ $FAILS -eq 0 ] && echo "gpu_e2e: all passed" || echo "gpu_e2e: $FAILS failed"
[ $FAILS -eq 0 ]
