#!/bin/bash
# test_trace_e2e.sh CASE - end-to-end tests of --trace and --replay on the
# real binary ($DDPTOP_BIN), each file checked by test_trace_check.py with
# Python's json parser. One CASE per CTest test, so each stays short:
#   run        whole run: schema, nesting, counters, names
#   roundtrip  live report vs --replay of its trace (whole file, split
#              files, gzip): per run and per rank the breakdown, overlap
#              and coll within 0.1 percentage points, and ms/step (mean,
#              p50, p90), samples/s,
#              bytes, busbw, transfer and sync the same numbers (both come
#              from the same spans); sync >= 0 and one transfer for all
#              ranks; the replay's text, CSV and markdown reports print the
#              replayed JSON's figures, in their rows and columns
#              a file given twice is replayed with a warning that ranks repeat;
#              horovod's negotiation the same live and replayed; a
#              pipeline's stages (send/recv spans, the stage table) the same live
#              and replayed;
#              desched (runnable, not on a core) the same, or null in both;
#              and, since live and replay share the same code, the live
#              reports against tests/check_report.py's figures worked out
#              in Python from the trace
#   schema     one report: the live JSON report and the --replay JSON of
#              its trace (and of a PyTorch trace) have the same keys at the
#              top, in every runs[] and every per_rank[] entry; CSV the
#              same header
#   split      --trace-split (+ .json.gz): one file per rank, own rank; a
#              FILE without an extension gives FILE.rankN.json
#   filters    --trace-steps / --trace-ranks, and sweep file names (.runI)
#   sigint     Ctrl-C half way: a complete, valid file (state "stopped")
#   sigkill    SIGKILL half way (.json and .json.gz): a prefix of whole
#              events that closes into valid JSON, and that --replay loads
#   diskfull   --trace /dev/full: reported, training and report go on, exit 1
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${DDPTOP_BIN:?set DDPTOP_BIN}
check="/usr/bin/python3 $here/test_trace_check.py"
tmp=$(mktemp -d /tmp/ddptop_trace_e2e.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
run=(--batch --quiet --device cpu --dataset synthetic --model lenet --ranks 2 --batch-size 16 --no-eval)

die() {
    echo "FAIL: $*"
    exit 1
}

# compare two reports (live, replay) of the same run: percentages within
# 0.1 pp, everything else measured in time or bytes equal (1e-6 relative)
same_report() {
    /usr/bin/python3 - "$1" "$2" <<'EOF' || exit 1
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
if len(a["per_rank"]) != len(b["per_rank"]) or len(a["runs"]) != len(b["runs"]):
    sys.exit("FAIL: %d runs / %d ranks live, %d / %d replayed" %
             (len(a["runs"]), len(a["per_rank"]), len(b["runs"]), len(b["per_rank"])))
pct = ("compute_pct", "comm_pct", "data_pct", "idle_pct", "overlap_pct", "coll_pct")
same = ("steps", "ms_per_step", "ms_p50", "ms_p90", "samples_per_s", "bytes_sent", "busbw_gbps",
        "transfer_ms_per_step", "sync_ms_per_step", "algbw_gbps", "compute_s_per_epoch", "comm_s_per_epoch")
for part, extra in (("runs", ("ranks", "global_batch", "steps_per_epoch")), ("per_rank", ("rank", "bytes_received"))):
    for x, y in zip(a[part], b[part]):
        who = "%s[%s]" % (part, x.get("rank", x.get("run")))
        for k in pct:
            if abs(x[k] - y[k]) > 0.1:
                sys.exit("FAIL: %s %s live %.4f, replay %.4f" % (who, k, x[k], y[k]))
        for k in same + extra:
            u, v = x[k], y[k]
            if k in ("busbw_gbps", "algbw_gbps", "transfer_ms_per_step", "sync_ms_per_step", "comm_s_per_epoch") and \
                    u is None and v is None:
                continue  # (n/a in both: a pipeline's sends)
            if not isinstance(u, (int, float)) or not isinstance(v, (int, float)):
                sys.exit("FAIL: %s %s live %r, replay %r: not numbers" % (who, k, u, v))
            if abs(u - v) > 1e-6 * abs(u) + 1e-9:
                sys.exit("FAIL: %s %s live %r, replay %r" % (who, k, u, v))
        # horovod's negotiation, and the time runnable but off a core (the
        # step records carry it): null in both, or the same number
        for k, tol in (("negotiate_ms_per_step", 1e-6), ("desched_pct", 1e-4)):
            u, v = x.get(k), y.get(k)
            if (u is None) != (v is None) or (u is not None and abs(u - v) > tol * abs(u) + 1e-9):
                sys.exit("FAIL: %s %s live %r, replay %r" % (who, k, u, v))
# what holds in any report of a multi-rank run
xfer = set(q["transfer_ms_per_step"] for q in a["per_rank"])
if len(xfer) != 1:
    sys.exit("FAIL: the ranks disagree on transfer time: %s" % sorted(xfer))
for q in a["per_rank"]:
    if q["sync_ms_per_step"] is not None and q["sync_ms_per_step"] < 0:
        sys.exit("FAIL: rank %d: negative sync %r ms" % (q["rank"], q["sync_ms_per_step"]))
print("ok: %d ranks, breakdown within 0.1 pp, times and bytes equal" % len(a["per_rank"]))
EOF
}

# the replay's text, CSV and markdown reports ($2 $3 $4) against its JSON
# ($1): the same figures, at their printed precision, in the right row and
# column (one run, one row per rank)
same_figures() {
    /usr/bin/python3 - "$@" <<'EOF' || exit 1
import csv, json, sys
d = json.load(open(sys.argv[1]))
run, ranks = d["runs"][0], d["per_rank"]
def near(what, printed, want, digits):
    if want is None:
        if printed not in ("", "n/a"):
            sys.exit("FAIL: %s: printed %r for null" % (what, printed))
        return
    if abs(float(printed) - want) > 0.51 * 10 ** -digits + 1e-9 * abs(want):
        sys.exit("FAIL: %s: printed %r, the JSON says %r" % (what, printed, want))
def digits(v):
    return len(v.split(".")[1]) if "." in v else 0
# CSV: every numeric column JSON has too; the 'all' row against runs[0]
rows = list(csv.DictReader(open(sys.argv[3])))
if [r["rank"] for r in rows] != ["all"] + [str(q["rank"]) for q in ranks]:
    sys.exit("FAIL: CSV rows are %s" % [r["rank"] for r in rows])
for r, src in zip(rows, [run] + ranks):
    for k, v in r.items():
        if k in ("run", "rank") or k not in src or isinstance(src[k], str):
            continue
        near("CSV %s row %s" % (k, r["rank"]), v, src[k], digits(v))
# text and markdown: the per-rank rows up to overlap (sent and received
# are scaled to KB or MB), and transfer, sync and memory at the end
cols = ("ms_per_step", "ms_p50", "ms_p90", "samples_per_s", "compute_pct", "comm_pct", "coll_pct", "data_pct",
        "idle_pct", "overlap_pct")
def rank_rows(path, split):
    lines = open(path).read().split("\n")
    start = [i for i, l in enumerate(lines) if l.lower().startswith("per rank")]
    if not start:
        sys.exit("FAIL: %s has no per-rank table" % path)
    out = []
    for l in lines[start[0] + 1:]:
        f = split(l)
        if f is None:
            if out:
                break
            continue
        out.append(f)
    return out
def text_split(l):
    f = l.split()
    return f if len(f) > 12 and f[0].isdigit() else None
def md_split(l):
    f = [c.strip() for c in l.strip().strip("|").split("|")]
    return f if l.startswith("|") and len(f) > 12 and f[0].isdigit() else None
for path, split in ((sys.argv[2], text_split), (sys.argv[4], md_split)):
    got = rank_rows(path, split)
    if len(got) != len(ranks):
        sys.exit("FAIL: %s: %d per-rank rows for %d ranks" % (path, len(got), len(ranks)))
    for f, q in zip(got, ranks):
        if int(f[2]) != q["rank"] or f[3] != q["device"]:
            sys.exit("FAIL: %s: row %s for rank %d" % (path, f[:4], q["rank"]))
        for i, k in enumerate(cols):
            near("%s rank %d %s" % (path, q["rank"], k), f[4 + i], q[k], digits(f[4 + i]))
        for v, k in ((f[-7], "busbw_gbps"), (f[-6], "algbw_gbps"), (f[-5], "compute_s_per_epoch"),
                     (f[-4], "comm_s_per_epoch"), (f[-3], "transfer_ms_per_step"), (f[-2], "sync_ms_per_step")):
            near("%s rank %d %s" % (path, q["rank"], k), v, q[k], digits(v))
        # the last column, memory: a trace does not say
        if f[-1] != "n/a" or q.get("mem_peak_bytes") is not None:
            sys.exit("FAIL: %s rank %d mem peak %r, the JSON says %r" % (path, q["rank"], f[-1], q.get("mem_peak_bytes")))
print("ok: text, CSV and markdown print the replayed figures")
EOF
}

# steps recorded so far in trace $1 (plain or gzip, possibly cut) by the
# rank that has recorded fewest (ranks write their events in batches of
# their own, so one can be well ahead of the other); 0 before both have one
steps_in() {
    { if [ "${1%.gz}" != "$1" ]; then zcat "$1"; else cat "$1"; fi; } 2>/dev/null |
        grep -o '"name":"ProfilerStep#[0-9]*","cat":"step","pid":[01],' | sed 's/.*"pid":\([01]\),/\1/' |
        sort | uniq -c | awk '{n[$2] = $1} END {print (n[0] < n[1] ? n[0] : n[1]) + 0}'
}

# starts a long run tracing to $1 and sends it signal $2 once the file on
# disk holds a few steps (half way: the run would go on for much longer);
# echoes the exit status
run_and_kill() {
    "$bin" "${run[@]}" --epochs 1000 --steps 1000000 --trace "$1" >/dev/null 2>"$1.err" &
    local pid=$!
    for _ in $(seq 400); do
        sleep 0.1
        [ "$(steps_in "$1")" -ge 6 ] && break
    done
    kill -"$2" "$pid"
    wait "$pid"
    echo $?
}

case "${1:-}" in
run)
    "$bin" "${run[@]}" --steps 30 --trace t.json --format json >live.json || die "run failed"
    $check t.json --rank 0 --pids 0,1 --min-steps 30 --state done --counters || exit 1
    ;;
roundtrip)
    "$bin" "${run[@]}" --steps 30 --trace t.json --format json >live.json || die "run failed"
    "$bin" --batch --replay t.json --format json >replay.json || die "replay failed"
    same_report live.json replay.json
    # the replay's own account of what it read: the file, ddptop's format,
    # whole, as many events as the trace holds (counted by Python), and no
# file left out (a file given by name is read, or refused)
    /usr/bin/python3 -c "
import json, sys
t = json.load(open('t.json'))['traceEvents']
r = json.load(open('replay.json'))['runs'][0]['replay']
want = {'files': 't.json', 'format': 'ddptop', 'complete': True, 'truncated': False, 'events': len(t),
        'left_out': [], 'left_out_count': 0}
sys.exit(None if r == want else 'replay %r, expected %r' % (r, want))
" || die "the replay's account of its file"
    # live and replay share ddptop's metrics and report code: the live
    # report against a second implementation in Python over the trace
    # (tests/check_report.py), every per-rank and run figure
    /usr/bin/python3 "$here/check_report.py" live.json --trace t.json --batch 16 || die "the live report is not its trace's"
    "$bin" "${run[@]}" --steps 30 --strategy ddp --trace s.json.gz --trace-split --format json >live2.json ||
        die "run failed"
    "$bin" --batch --replay s.rank0.json.gz,s.rank1.json.gz --format json >replay2.json 2>replay2.err ||
        die "replay failed"
    same_report live2.json replay2.json
    [ -s replay2.err ] && die "split files replayed with a warning: $(cat replay2.err)"
    # horovod: its negotiation travels in the trace as "negotiate" spans
    "$bin" "${run[@]}" --steps 20 --strategy horovod --trace h.json --format json >live3.json || die "run failed"
    "$bin" --batch --replay h.json --format json >replay3.json || die "replay failed"
    same_report live3.json replay3.json
    /usr/bin/python3 "$here/check_report.py" live3.json --trace h.json --batch 16 || die "the live report is not its trace's"
    grep -q '"name":"negotiate"' h.json || die "no negotiate spans in the horovod trace"
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; sys.exit(0 if r["strategy"] == "horovod" and r["negotiate_ms_per_step"] > 0 else "FAIL: replay lost the negotiation: %r" % r["negotiate_ms_per_step"])' replay3.json || exit 1
    # pipeline stages: activations and gradients as send/recv spans, the run's batch a rank's
    "$bin" "${run[@]}" --steps 20 --parallel pipeline --micro-batches 4 --trace p.json --format json >live4.json ||
        die "run failed"
    "$bin" --batch --replay p.json --format json >replay4.json || die "replay failed"
    # the stage table in markdown: a table, a row a stage, as the JSON's
    "$bin" --batch --replay p.json --format md >replay4.md || die "replay (md) failed"
    grep -q '^| stage | layers | compute % | idle % | sent/step | params | grads | optimizer | activations | memory |$' \
        replay4.md &&
        grep -Eq '^\| 0 \| 0-[0-9]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ MB( \| [0-9.]+ MB){5} \|$' replay4.md &&
        grep -Eq '^\| 1 \| [0-9]+-[0-9]+ \|' replay4.md || die "no markdown stage table: $(grep -A3 stage replay4.md)"
    same_report live4.json replay4.json
    /usr/bin/python3 "$here/check_report.py" live4.json --trace p.json --batch 16 || die "the live report is not its trace's"
    grep -q '"name":"send"' p.json || die "no send spans in the pipeline trace"
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; sys.exit(0 if (r["strategy"], r["parallel"], r["micro_batches"], r["global_batch"]) == ("pipeline", "pipeline", 4, 16) else "FAIL: the replay lost the stages: %r" % r)' replay4.json || exit 1
    # the stage table (layers, compute, idle, bytes, activations): the live one
    /usr/bin/python3 - live4.json replay4.json <<'EOF' || exit 1
import json, sys
ra, rb = (json.load(open(f))["runs"][0] for f in sys.argv[1:3])
# sends between stages have no bus bandwidth, nor a collective's transfer
# time: n/a, live and replayed
for k in ("busbw_gbps", "transfer_ms_per_step", "sync_ms_per_step", "predicted_transfer_ms_per_step"):
    if ra[k] is not None or rb[k] is not None:
        sys.exit("FAIL: a pipeline's %s live %r, replayed %r, not null" % (k, ra[k], rb[k]))
a, b = ra.get("stages"), rb.get("stages")
if not a or len(a) != 2 or b is None or len(a) != len(b):
    sys.exit("FAIL: stages live %r, replayed %r" % (a, b))
for x, y in zip(a, b):
    for k in x:
        if abs(x[k] - y[k]) > 1e-6 * abs(x[k]) + 1e-9:
            sys.exit("FAIL: stage %d %s live %r, replayed %r" % (x["stage"], k, x[k], y[k]))
EOF
    "$bin" --batch --replay t.json,t.json --format json >twice.json 2>twice.err || die "replay of t.json twice failed"
    grep -q "2 ranks (rank 0 first) are in more than one of the files; their events are merged" twice.err ||
        die "no warning that the ranks of t.json,t.json repeat: $(cat twice.err)"
    for f in text csv md; do
        "$bin" --batch --replay t.json --format $f >out.$f || die "replay --format $f failed"
    done
    same_figures replay.json out.text out.csv out.md
    ;;
schema)
    "$bin" "${run[@]}" --steps 10 --trace t.json --format json >live.json || die "run failed"
    "$bin" --batch --replay t.json --format json >replay.json || die "replay failed"
    "$bin" --batch --replay "$here/fixtures/trace/kineto_gpu.json" --format json >kineto.json || die "kineto replay failed"
    /usr/bin/python3 - live.json replay.json kineto.json <<'EOF' || exit 1
import json, sys
docs = [(f, json.load(open(f))) for f in sys.argv[1:]]
def keys(d):
    return {"top": [set(d)],
            "runs[]": [set(e) for e in d["runs"]],
            "per_rank[]": [set(e) for e in d["per_rank"]]}
ref_name, ref = docs[0]
want = keys(ref)
for part, sets in want.items():
    if not sets:
        sys.exit("FAIL: %s has no %s entries" % (ref_name, part))
    for s in sets[1:]:
        if s != sets[0]:
            sys.exit("FAIL: %s: %s entries differ: %s" % (ref_name, part, sorted(s ^ sets[0])))
for name, d in docs[1:]:
    for part, sets in keys(d).items():
        if not sets:
            sys.exit("FAIL: %s has no %s entries" % (name, part))
        for s in sets:
            if s != want[part][0]:
                sys.exit("FAIL: %s %s keys differ from %s: only live %s, only replay %s" %
                         (name, part, ref_name, sorted(want[part][0] - s), sorted(s - want[part][0])))
print("ok: %d runs[] keys, %d per_rank[] keys, the same live and replayed" %
      (len(want["runs[]"][0]), len(want["per_rank[]"][0])))
EOF
    "$bin" "${run[@]}" --steps 5 --format csv >live.csv || die "csv run failed"
    "$bin" --batch --replay t.json --format csv >replay.csv || die "csv replay failed"
    [ "$(head -1 live.csv)" = "$(head -1 replay.csv)" ] || die "CSV headers differ live and replayed"
    ;;
split)
    "$bin" "${run[@]}" --steps 20 --trace s.json --trace-split >/dev/null || die "run failed"
    [ -e s.json ] && die "--trace-split also wrote s.json"
    $check s.rank0.json --rank 0 --pids 0 --min-steps 20 --counters || exit 1
    $check s.rank1.json --rank 1 --pids 1 --min-steps 20 --counters || exit 1
    "$bin" "${run[@]}" --steps 20 --trace z.json.gz >/dev/null || die "gzip run failed"
    [ "$(head -c 2 z.json.gz | od -An -tx1 | tr -d ' ')" = "1f8b" ] || die "z.json.gz is not gzip"
    $check z.json.gz --pids 0,1 --min-steps 20 --state done || exit 1
    "$bin" "${run[@]}" --steps 20 --trace sz.json.gz --trace-split >/dev/null || die "split gzip run failed"
    $check sz.rank1.json.gz --rank 1 --pids 1 --min-steps 20 || exit 1
    "$bin" "${run[@]}" --steps 5 --trace tr3 --trace-split >/dev/null || die "split run without extension failed"
    [ -e tr3.rank0 ] && die "--trace tr3 --trace-split wrote tr3.rank0, not tr3.rank0.json"
    $check tr3.rank0.json --rank 0 --pids 0 --min-steps 5 || exit 1
    $check tr3.rank1.json --rank 1 --pids 1 --min-steps 5 || exit 1
    ;;
filters)
    "$bin" "${run[@]}" --steps 20 --trace f.json --trace-steps 5:9 --trace-ranks 1 >/dev/null || die "run failed"
    $check f.json --pids 1 --steps 5:9 --min-steps 5 --rank 1 || exit 1
    n=$(/usr/bin/python3 -c "import json;print(sum(1 for e in json.load(open('f.json'))['traceEvents'] if e.get('cat')=='step'))")
    [ "$n" = 5 ] || die "--trace-steps 5:9 wrote $n steps"
    "$bin" --batch --quiet --device cpu --dataset synthetic --model lenet --ranks 1,2 --batch-size 16 --steps 5 --no-eval --trace w.json >/dev/null ||
        die "sweep failed"
    $check w.json --pids 0 --min-steps 5 || exit 1
    $check w.run1.json --pids 0,1 --min-steps 5 || exit 1
    ;;
sigint)
    rc=$(run_and_kill i.json INT)
    [ "$rc" = 130 ] || die "SIGINT exit status $rc, expected 130"
    $check i.json --pids 0,1 --min-steps 5 --state stopped || exit 1
    rc=$(run_and_kill term.json.gz TERM)
    [ "$rc" = 143 ] || die "SIGTERM exit status $rc, expected 143"
    $check term.json.gz --pids 0,1 --min-steps 5 --state stopped || exit 1
    ;;
sigkill)
    for f in k.json kz.json.gz; do
        rc=$(run_and_kill $f KILL)
        [ "$rc" = 137 ] || die "SIGKILL exit status $rc, expected 137"
        $check $f --prefix --pids 0,1 --min-steps 5 || exit 1
        "$bin" --batch --replay $f --format json >r.json 2>r.err || die "--replay of a killed trace failed"
        grep -q "incomplete" r.err || die "--replay did not say $f is incomplete"
        /usr/bin/python3 -c "
import json,sys; d=json.load(open('r.json'))
assert d['runs'][0]['replay']['complete'] is False, 'complete?'
assert all(q['steps'] >= 5 for q in d['per_rank']), 'too few steps'
" || die "replay of $f"
    done
    echo "ok: killed traces are loadable prefixes"
    ;;
diskfull)
    [ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
    "$bin" "${run[@]}" --steps 30 --trace /dev/full --format json >live.json 2>err.txt
    rc=$?
    [ "$rc" = 1 ] || die "exit status $rc with a full disk: a lost trace must show in it (1)"
    grep -q "No space left on device" err.txt || die "the disk-full error was not reported"
    [ "$(grep -c 'No space left' err.txt)" = 1 ] || die "the disk-full error was reported more than once"
    grep -q "/dev/full is incomplete" err.txt || die "the incomplete file was not named"
    /usr/bin/python3 -c "import json; d=json.load(open('live.json')); assert d['runs'][0]['steps']==30" ||
        die "training did not go on"
    echo "ok: disk full reported once, training finished"
    ;;
*)
    echo "usage: $0 run|roundtrip|schema|split|filters|sigint|sigkill|diskfull" >&2
    exit 2
    ;;
esac
