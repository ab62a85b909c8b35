#!/usr/bin/env bash
# test_pytorch_traces.sh - PyTorch profiler traces ddptop once misread or
# refused, each with a trace made by hand to show the case (its figures
# worked out on paper in the comments below, and for --window hta checked
# against HTA itself: tests/fixtures/hta/temporal_breakdown.tsv), then
# HTA's own test traces against HTA's own output.
#
#   window   the steps a rank's figures cover (--window). kineto_window.json:
#            three steps of 1000, 1000, 1200 us; on the device (us,
#            launched at): gemm_a [100,900) @10, gemm_b [1100,1500) @1010,
#              nccl [1400,1900) @1020, gemm_lost [1900,1950) (correlation
#              id 26, whose launch call is not in the trace), orphan
#              [1950,2000) (no correlation id: timed by its start), a
#              Stream Sync record [2000,2050) @1030, gemm_c [2100,2500)
#              @2010, nccl [2500,2900) @2020; the device's ProfilerStep#3
#              starts at 2015.
#            ddptop (steps 2, 3: launched, or started, from 1000 on; no
#              sync record): wall [1100,2900) 1800; compute 400+50+50+400 =
#              900 (50%); comm [1500,1900)+[2500,2900) = 800 (44.444%), of
#              900 in all, 100 under compute (overlap 11.111%); idle 100
#              (5.556%); ms/step (1000+1200)/2 = 1.1.
#            hta (steps 1, 2: launched before max(2000, 2015); gemm_lost
#              out; the sync record in, as data): wall [100,2500) 2400;
#              compute 800+400+50+400 = 1650 (68.75%); comm [1500,1900) 400
#              (16.667%), overlap 100/500 (20%); data 50 (2.083%); idle 300
#              (12.5%); ms/step 1.0. HTA gives 12.5 idle, 68.75 compute,
#              18.75 non-compute (the .tsv).
#            kineto_ns.json: one step, at the epoch's time stamps (B =
#              1.7e15 us, where a double holds quarters of a us); gemm_a
#              [B+100.25, +10.5), gemm_b [B+111.25, +9.7): ddptop, to the
#              ns: wall 20.7, idle 0.5 (2.415%); hta, to whole us, starts
#              up, ends down, each end the floor of ts + dur summed in
#              double (gemm_b's B+120.95 sums to B+121.0): [101,110) and
#              [112,121), wall 20, idle 2 (10%), compute 90%; the end of
#              the exact sum, B+120, would give 10.526 idle; HTA: 10.00
#              idle, 90.00 compute.
#            kineto_window_stub.json: two steps, [0,1000) and a stub
#              [1000,1010), every kernel launched in the first: gemm_a
#              [100,300), a memcpy [300,350), gemm_b [500,700), nccl
#              [600,900). ddptop's steps hold no device work: the whole
#              trace, said so in the report: wall 800, compute 400 (50%),
#              comm [700,900) 200 (25%), data 50 (6.25%), idle 150
#              (18.75%), overlap 100/300 (33.333%), ms/step (1000+10)/2 =
#              0.505. hta: the same split (HTA: 18.75, 50, 31.25), ms/step
#              1.0. Every format names the window; --window is refused
#              outside --replay and --follow; --follow takes it too.
#   folder   a folder with an execution trace (a JSON object without
#            traceEvents) beside kineto_gpu.json replays as that trace
#            alone, naming the other file as left out (report and stderr);
#            the execution trace named by itself, or alone in a folder, is
#            refused; --follow leaves it out and names it in its report.
#   devices  device work that is not a CUDA kernel record:
#            kineto_mtia.json (mtia_ccp_events on device 17, one step):
#              fc [100,400) stream 1, dma_request [400,500) stream 2 (data),
#              job_exe [420,480) stream 4, a dma_request with no stream
#              (left out, as HTA does), hccl_all_reduce [600,800) stream 3
#              (comm), add [700,900) stream 1. ddptop: job_exe is a kernel
#              (compute): wall 800, compute 560 (70%), data [400,420) +
#              [480,500) 40 (5%), comm [600,700) 100 (12.5%), overlap
#              100/200 (50%), idle 100 (12.5%). hta: by its name job_exe is
#              not compute (as HTA's kernel types): compute 500 (62.5%),
#              data 100 (12.5%); HTA: 12.5 idle, 62.5 compute, 25
#              non-compute.
#            kineto_profiler_range.json (CUPTI's range profiler:
#              cuda_profiler_range records, no stream, no launch): gemm
#              [100,300), relu [400,450): wall 350, compute 250 (71.429%),
#              idle 100 (28.571%), device cuda:0.
#   ranks    two ranks' files of a world of 128: "2 of 128" in the text's
#            run row, ranks 128 and ranks_read 2 in JSON and CSV; each
#            rank's source (distributedInfo: trace; rank70 in the name:
#            name, "1 of 71"; neither: order) in every format.
#   kernels  HTA's kernel breakdown (tests/fixtures/hta/kernel_breakdown.tsv,
#            recorded from HTA's get_gpu_kernel_breakdown by
#            hta_breakdown.py --kernels): ddptop's JSON `kernels` under
#            --window hta, per rank and across ranks, holds HTA's time of
#            each kernel type (and types overlapping) within 1 us and its
#            share within 0.05 points (HTA rounds to 0.1), and HTA's top
#            kernels of each type: the same names in the same number, each
#            with HTA's total, count and mean, and the others row's total.
#            Always on the hand-made traces (fixtures/NAME); on HTA's own
#            traces as well when DDPTOP_HTA_DIR names its checkout.
#            kineto_kernels_top.json: 13 computation kernels of 12 names
#              back to back from 1000 us in step 2 of 3 (k01_gemm twice,
#              150 each; then 200, 100, 60, 50, 40, 30, 20, 12, 10, 6, 4),
#              nccl [1100,1400), a memcpy [1850,1900). HTA's cut of the 12
#              names (by total: 300, 200, ..., 4): running totals 300 500
#              600 660 710 750 780 800 812 822 828 832, their 0.8 quantile
#              (pandas, linear) 812 + 0.8 x 10 = 820: the first 9 names
#              (to k09_copy, 812) are shown, k10_fill (822) is not, though
#              in the first 10; others: 3 kernels, 20 us. Types: computation
#              832 - 300 = 532 us, overlapping communication 300, memory 50,
#              of 882. Also against kernel_count.py's count over the JSON.
#   memcpy   memory copies by kind: HTA's memory bandwidth summary
#            (tests/fixtures/hta/memcpy_bandwidth.tsv, recorded from HTA's
#            get_memory_bw_summary by hta_breakdown.py --memcpy): ddptop's
#            JSON `memcpy` under --window hta holds, per rank, HTA's kinds,
#            and of each its count (rated), mean, least and most of the
#            copies' bandwidths within 1e-5 GB/s. Always on the hand-made
#            kineto_gpu; on HTA's own traces as well when DDPTOP_HTA_DIR
#            names its checkout. kineto_memcpy.json: one rank, steps
#            [0,1000) [1000,2000) [2000,3000); a gemm in step 2; copies
#            (bytes, us, GB/s): step 1 HtoD 1e6/10 (left out with the
#            first step); HtoD Pageable 2e6/20 (100), HtoD Pinned 4e6/5
#            (800), DtoH 1e6/40 (25), DtoD 8e6/2 (4000) and 3e6/3 (1000),
#            Memset 512/1 (0.512), PtoP 5e6/10 without a bandwidth. By
#            hand: HtoD 2 copies, 6e6 bytes, 25 us, 240 GB/s, copies' mean
#            450; DtoD 2, 11e6, 5 us, 2200 GB/s, mean 2500, most 4000;
#            PtoP 500 GB/s, none rated (null, n/a). Also against memcpy_count.py's
#            count over the JSON, its table in text and markdown, and its
#            CSV rows (`kernels` memcpy) against the JSON.
#   queue    launch queues per stream: HTA's queue length summary and time
#            blocked on a full queue (tests/fixtures/hta/queue_length.tsv,
#            recorded from HTA by hta_breakdown.py --queue): ddptop's JSON
#            `queue` under --window hta holds, per rank, HTA's streams, and
#            of each its points, mean, std, least, 25th/50th/75th
#            percentile and most within 1e-5, and HTA's time blocked (its
#            one stream a rank) to 1e-3 us. Always on the hand-made
#            kineto_gpu and kineto_queue; on HTA's own traces as well when
#            DDPTOP_HTA_DIR names its checkout. kineto_queue.json: one rank,
#            steps [0,10000) [10000,20000); stream 7: long_gemm launched
#            at 100, run [110,5000), and 1024 kernels launched at 200..1223
#            (one a us), run one a us from 5000: lengths 1, 0, 1..1024,
#            1023..0, 2050 points, mean 1048577/2050 = 511.500976, most
#            1024, p25/p50/p75 255.25, 511.5, 767.75, at 1024 from 1223 to
#            5000: blocked 3777 us; stream 13: cudaMemcpyAsync 300 (copy
#            at 320), cudaLaunchKernel 305 (330), cudaMemsetAsync 400 (410):
#            1 2 1 0 1 0, mean 5/6, std 0.752773, p25 0.25, most 2; stream
#            21: cuLaunchKernel (cuda_driver) 900 (905): 1 0. Left out: a
#            blocking cudaMemcpy's copy, a kernel without its launch, a
#            launch without its kernel, a stream sync, and a kernel
#            launched in the last step (HTA's cut). Also against
#            queue_count.py's count over the trace, its table in text and
#            markdown, and its CSV rows (`kernels` queue) against the JSON.
#   launch   kernel launch statistics: HTA's get_cuda_kernel_launch_stats
#            (tests/fixtures/hta/launch_stats.tsv, recorded by
#            hta_breakdown.py --launch): ddptop's JSON `launch` under
#            --window hta holds, per rank, HTA's launches, the mean, median
#            and most of their CPU and GPU durations and launch delays
#            within 1e-3 us, and the counts of HTA's short GPU kernels,
#            runtime outliers and delay outliers. Always on the hand-made
#            kineto_launch; on HTA's own traces as well when DDPTOP_HTA_DIR
#            names its checkout. kineto_launch.json: one rank, steps
#            [0,1000) [1000,2000) [2000,3000); calls (CPU us) and their
#            device ops (GPU us, delay: op start less call end, 0 below):
#            step 1 a launch 10/30/10 (left out with the first step); step
#            2 launches 5/3/5 and 60/100/140, cudaMemcpyAsync 20/40/0 (the
#            copy starts before the call ends), cudaLaunchKernelExC
#            8/50/12; step 3 cudaMemsetAsync 4/2/0, launches 50/10/250,
#            7/4/100, 9/6/6; not launches: a cuLaunchKernel (driver) and a
#            kernel whose correlation id names no call. By hand, default
#            window: 8 launches (6 of kernels), CPU mean 163/8 = 20.375,
#            median (8+9)/2 = 8.5, most 60; GPU 215/8 = 26.875, (6+10)/2 =
#            8, 100; delay 513/8 = 64.125, (6+12)/2 = 9, 250; short 5
#            (GPU < CPU <= 50, 50/10 among them), long CPU 1 (60), long
#            delay 2 (140, 250; 100 is not above). Also against
#            launch_count.py's count over the JSON, a second rank's copy
#            (the run's sums, no median), its table in text and markdown,
#            and CSV rows.
#            hta_live also runs HTA's launch statistics again on
#            kineto_launch and trace_filter against launch_stats.tsv.
#   idle     idle time per stream: HTA's get_idle_time_breakdown
#            (tests/fixtures/hta/idle_time.tsv, recorded by hta_breakdown.py
#            --idle): ddptop's JSON `idle` under --window hta holds, per
#            rank and stream, HTA's time (within 0.005 us: HTA rounds to two
#            places), share (0.005) and gaps of each category, a category
#            HTA leaves out none. Always on the hand-made traces; on HTA's
#            own as well when DDPTOP_HTA_DIR names its checkout.
#            kineto_idle.json: one rank, steps [0,1000) [1000,2000)
#            [2000,3000); stream 7 (us; launch: its call's start): p
#            [120,150) @100; a [1010,1100) @1000; b [1110,1200) @1010 (gap
#            10: kernel wait); c [1229,1300) @1020 (29: kernel wait); d
#            [1330,1400) @1030 (30: other, not under 30); e [1460,1500)
#            @1450 (60: host wait, launched after d ended); f [1600,1650)
#            @1500 (100: other, launched as e ended, not after); a copy g
#            [1630,1640) @1510 inside f (-20: kernel wait); a set h
#            [1700,1720) @1520 (60 after g's end, not f's: other); orphan
#            i [1800,1810), no launch (80: other); a stream sync
#            [1850,1860) (not an op); j [1950,2000) @1900 (140: host
#            wait); s [2110,2200) @2100. Stream 20: k [1150,1400) @1100, l
#            [1405,1500) @1200 (5: kernel wait). By hand, default window
#            (p out): stream 7 11 ops, idle 599 us: host wait 310 (3 gaps:
#            60 140 110), kernel wait 19 (3), other 270 (4); stream 20 2
#            ops, 5 us of kernel wait. --window hta (s out, and i: HTA
#            keeps no op without a launch; p in): 10 ops, idle 1359: host
#            wait 1150 (860 60 230), kernel wait 19, other 190 (3).
#            --idle-delay-ns 100000: kernel wait 189 (6), other 100 (1).
#            Also against idle_count.py's count over the trace (both
#            thresholds), its table in text and markdown, and its CSV rows
#            against the JSON.
#            hta_live also runs HTA's idle breakdown again on kineto_idle
#            and trace_filter against idle_time.tsv.
#   hta      HTA's test traces (DDPTOP_HTA_DIR: a checkout of
#            HolisticTraceAnalysis; 77 without its tests/data): --window hta
#            against HTA's temporal breakdown recorded in the .tsv, within
#            0.1 points, for each of its GPU traces present; amd_trace's
#            default window (its second step a stub) falls back to the whole
#            trace, figures against a count over its JSON in Python; the
#            MTIA and cuda_profiler_range traces broken down over their
#            device records; large_integer_trace's rank from its name;
#            execution_trace's folder; trace_filter's 2 ranks of 128.
#   straggler late collectives across ranks: HTA's straggler analysis
#            (tests/fixtures/hta/stragglers.tsv, recorded by hta_breakdown.py
#            --straggler): ddptop's JSON `stragglers` under --window hta
#            names HTA's kernel and stream, and per rank HTA's counts of
#            steps last (k = 1) and late (k = 2, its default) and the lead,
#            on the hand-made stragglers3 and on HTA's trace_filter when
#            DDPTOP_HTA_DIR names its checkout. stragglers3: 3 ranks, steps
#            1-5 of 1000 us (5 left out), on stream 20 per step an early
#            AllReduce (rank 2 latest: the last per step is the later one),
#            the last AllReduce (starts, from the step's: 300/350/320,
#            400/310/300, 300/380/360, 330/330/300, ends at 600, so its
#            durations differ), a Broadcast of equal durations (rank 0
#            latest: not the kernel chosen) and a gemm. Worked by hand:
#            last 2/3/0, late 2/4/2, lead 90/50/0 us (step 4 a tie of
#            ranks 0 and 1, lead 0), straggler rank 1. Also
#            straggler_count.py's count over the trace files, the text,
#            markdown and CSV against the JSON, and none on one rank.
#   memory   the memory timeline from [memory] events (HTA reads none).
#            kineto_memory.json: one rank, steps 1 [1000,2000) and 2
#            [2000,3000) us; events (us: device, Bytes, Total Allocated,
#            Total Reserved): 500 cuda:0 +1024 1024 2M (before the steps:
#            outside); 1100 cuda:0 +4096 5120; 1150 the CPU +64 (left
#            out); 1200 cuda:0 +8192 13312; 1300 cuda:1 -2048 6144 8M; 1500
#            cuda:0 -4096 9216; 2100 cuda:0 +16384 25600 4M; 2200 cuda:1
#            +1024 7168 (written before the event at 1300: taken in time
#            order); 2500 cuda:0 -16384 9216; 2900 cuda:0 -8192 1024;
#            3500 cuda:0 -1024 0 (after: outside). By hand: cuda:0 6
#            events, 1024 at the start and the end, peak 25600 at 1100 us
#            (step 2), reserved 4M, 28672 allocated and freed, steps
#            13312 and 25600; cuda:1 2 events, 8192 at the start (its
#            first event a free), 7168 at the end, peak 8192 at 300 us
#            (step 1, before the free), reserved 8M, 1024 allocated and
#            2048 freed, steps 8192 and 7168; 2 outside, 1 host. Also
#            memory_count.py's count over the trace and over two cycles
#            of a rank (a copy 2000 us and two steps on), the text,
#            markdown and CSV against the JSON, and null with none; with
#            DDPTOP_HTA_DIR, HTA's df_index_resolver trace (26770 events
#            on cuda:1) recounted, its bytes adding up.
#   critpath the critical path of each rank's median step (trace/critpath.h).
#            critpath.json: one rank, steps 1 [0,1000), 2 [1000,2200), 3
#            [2200,3100) us: the median by duration is step 1. In it
#            (us): thread 1 aten::linear [10,300) (aten::mm [20,290)
#            nested in it: left out), its launches of gemm_a @100 and of
#            a copy @120, aten::relu [320,400) launching relu_k @330,
#            aten::sum [600,700) launching the all-reduce @650; thread 2
#            aten::add_ [50,900); stream 7 gemm_a [150,500), relu_k
#            [500,520), ncclKernel_AllReduce [700,1100); stream 8 the copy
#            [200,260); orphan_k (no launch call) and gemm_b (launched in
#            step 2) left out. The step ends at 1100 (the all-reduce, 100
#            past the step's 1000). Back from it: the all-reduce 400 comm;
#            its launch @650 came after relu_k ended (520): launch wait
#            50, to thread 1: aten::sum 600-650 50 cpu, wait 400-600 200,
#            aten::relu 320-400 80, wait 300-320 20, aten::linear 10-300
#            290, wait 0-10 10. cpu 420, comm 400, wait 280, compute and
#            memory 0: 1100; 4 ops, 1 launch, 4 CPU and 4 device ops in
#            the graph; top: the all-reduce 400 @700, aten::linear 290
#            @10, aten::relu 80 @320, aten::sum 50 @600.
#            critpath_stream.json: the same with relu_k [500,680): the
#            all-reduce's launch @650 came before relu_k ended, so back
#            along the stream: wait 680-700 20, relu_k 180, (its launch
#            @330 before gemm_a ended) wait 0, gemm_a 350, its launch @100
#            after the stream's start: wait 50, aten::linear 10-100 90,
#            wait 10. cpu 90, compute 530, comm 400, wait 80; top: the
#            all-reduce 400, gemm_a 350, relu_k 180, aten::linear 90.
#            Also tests/critpath_count.py's count over both traces (and,
#            with DDPTOP_HTA_DIR, HTA's trace_filter, 2 ranks, and its
#            ns_resolution_trace and negative_queue_length_values_check,
#            whose device work runs 90 and 161 ms past the step), the text
#            and markdown against the JSON, and kineto_gloo_cpu (no
#            device work): a note, no figure; ddptop's own trace: null.
#   hta_live HTA run now (tests/hta_breakdown.py; 77 without HTA's code or
#            pandas) on the hand-made traces and two of HTA's: the .tsv
#            still holds HTA's values (and queue_length.tsv on kineto_queue
#            and trace_filter).
#
#   whatif   --predict of a replayed job (docs/predict.md) on
#            whatif_args/rank0.json and rank1.json: three steps of 1000 us
#            each; in every step b: aten::mm [b, b+600), record_param_comms
#            [b+600, b+610) (250000 Float: 1e6 bytes), aten::add [b+650,
#            b+750), gloo:all_reduce [b+610, +300) on rank 0, +200 on rank
#            1. Steps 2 and 3 covered: compute 700 us; comm (the records)
#            300 and 200, mean 250; exposed [b+600, b+910) less the add,
#            210, and 110, mean 160; hidden 90; step 1000. Over --link
#            1GB/s,50us: t_K = 100(K-1) us + 2(K-1)/K x 1000 us, so comm_K
#            1100, 1800, 2450 at 2, 4, 8; exposed_K = comm_K - 90; step_K
#            = 1000 - 160 + exposed_K = 1850, 2550, 3200 us. A fit by hand
#            for 4 ranks alone (100 us + 1 ns/B): 1850 at 4, 2 and 8 n/a.
#            The two files followed (--idle-exit) predict what the replay
#            does.
# Usage: test_pytorch_traces.sh /path/to/ddptop CASE
# Exit status: 0 pass, 1 fail, 77 skip.
set -u
BIN=${1:?usage: test_pytorch_traces.sh /path/to/ddptop CASE}
CASE=${2:?usage: test_pytorch_traces.sh /path/to/ddptop CASE}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures/trace
TSV=$HERE/fixtures/hta/temporal_breakdown.tsv
OVL=$HERE/fixtures/hta/comm_comp_overlap.tsv
KTSV=$HERE/fixtures/hta/kernel_breakdown.tsv
MTSV=$HERE/fixtures/hta/memcpy_bandwidth.tsv
QTSV=$HERE/fixtures/hta/queue_length.tsv
LTSV=$HERE/fixtures/hta/launch_stats.tsv
ITSV=$HERE/fixtures/hta/idle_time.tsv
STSV=$HERE/fixtures/hta/stragglers.tsv
PY=/usr/bin/python3
. "$HERE/checks.sh"

# replay OUT ARGS..: ddptop --batch --replay ARGS.. > OUT (stderr: OUT.err), status 0
replay() {
    local out=$1
    shift
    "$BIN" --batch --replay "$@" >"$out" 2>"$out.err"
}

# rank JSON RANK KEY WANT [TOL]: per_rank RANK's KEY is WANT (a number
# within TOL, default 1e-3; else the string)
rank() {
    "$PY" - "$@" <<'PY'
import json, sys
f, rank, key, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
tol = float(sys.argv[5]) if len(sys.argv) > 5 else 1e-3
rows = {r["rank"]: r for r in json.load(open(f))["per_rank"]}
if rank not in rows:
    sys.exit("%s: no rank %d (%s)" % (f, rank, sorted(rows)))
got = rows[rank].get(key, "(no key)")
try:
    ok = abs(float(got) - float(want)) <= tol
except (TypeError, ValueError):
    ok = str(got) == want
if not ok:
    sys.exit("%s rank %d %s: %s, wanted %s" % (f, rank, key, got, want))
PY
}

# split JSON RANK COMPUTE COMM DATA IDLE OVERLAP MS: a rank's figures
split() {
    local f=$1 r=$2 ok=0
    rank "$f" "$r" compute_pct "$3" || ok=1
    rank "$f" "$r" comm_pct "$4" || ok=1
    rank "$f" "$r" data_pct "$5" || ok=1
    rank "$f" "$r" idle_pct "$6" || ok=1
    rank "$f" "$r" overlap_pct "$7" || ok=1
    [ "$8" = - ] || rank "$f" "$r" ms_per_step "$8" || ok=1
    return $ok
}

# run_key JSON KEY WANT: runs[0]'s KEY is WANT (compared as JSON text)
run_key() {
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))["runs"][0]; g=json.dumps(d.get(sys.argv[2], "(no key)"))
sys.exit(0 if g == sys.argv[3] else "%s: runs[0].%s is %s, wanted %s" % (sys.argv[1], sys.argv[2], g, sys.argv[3]))' "$@"
}

# csv_col CSV ROW COLUMN WANT: the CSV row whose `rank` is ROW has WANT in COLUMN
csv_col() {
    "$PY" -c 'import csv,sys; rows={r["rank"]: r for r in csv.DictReader(open(sys.argv[1])) if not r["kernels"]}
g=rows.get(sys.argv[2], {}).get(sys.argv[3], "(none)")
sys.exit(0 if g == sys.argv[4] else "%s: row %s %s is %r, wanted %r" % (sys.argv[1], sys.argv[2], sys.argv[3], g, sys.argv[4]))' "$@"
}

# same_split A B: two JSON reports give their ranks the same split and ms/step
same_split() {
    "$PY" -c 'import json,sys
a, b = (json.load(open(f))["per_rank"] for f in sys.argv[1:3])
k = ("rank", "compute_pct", "comm_pct", "data_pct", "idle_pct", "overlap_pct", "ms_per_step")
sys.exit(0 if [[r[x] for x in k] for r in a] == [[r[x] for x in k] for r in b] else "    differ: %s %s" % (a, b))' "$@"
}

has() { grep -q -- "$2" "$1" || { echo "    $1 lacks: $2"; return 1; }; }
lacks() { ! grep -q -- "$2" "$1" || { echo "    $1 has: $2"; return 1; }; }

case_window() {
    local w=$FIX/kineto_window.json s=$FIX/kineto_window_stub.json
    check "replay kineto_window.json" replay "$tmp/w.json" "$w" --format json
    check "ddptop's window: steps 2 and 3" split "$tmp/w.json" 0 50 44.444 0 5.556 11.111 1.1
    check "the window named per rank (json)" rank "$tmp/w.json" 0 window ddptop
    check "the window named for the run (json)" run_key "$tmp/w.json" window '"ddptop"'
    check "--window hta" replay "$tmp/wh.json" "$w" --window hta --format json
    check "HTA's window: steps 1 and 2" split "$tmp/wh.json" 0 68.75 16.667 2.083 12.5 20 1.0
    check "hta named" rank "$tmp/wh.json" 0 window hta
    check "replay kineto_window_stub.json" replay "$tmp/s.json" "$s" --format json
    check "no device work in steps 2..: the whole trace" split "$tmp/s.json" 0 50 25 6.25 18.75 33.333 0.505
    check "the fallback named (json)" rank "$tmp/s.json" 0 window whole
    check "stub, --window hta" replay "$tmp/sh.json" "$s" --window hta --format json
    check "stub, HTA's window: step 1" split "$tmp/sh.json" 0 50 25 6.25 18.75 33.333 1.0
    check "stub, hta: no fallback" rank "$tmp/sh.json" 0 window hta
    check "kineto_ns.json" replay "$tmp/ns.json" "$FIX/kineto_ns.json" --format json
    check "to the ns" split "$tmp/ns.json" 0 97.585 0 0 2.415 0 -
    check "kineto_ns.json, hta" replay "$tmp/nsh.json" "$FIX/kineto_ns.json" --window hta --format json
    check "to whole microseconds, as HTA" split "$tmp/nsh.json" 0 90 0 0 10 0 -
    check "text report" replay "$tmp/s.txt" "$s"
    check "text names the window" has "$tmp/s.txt" "--window ddptop: every step but each rank's first"
    check "text says it fell back" has "$tmp/s.txt" "no device work in the steps --window ddptop covers"
    check "text: the rank's window" has "$tmp/s.txt" " whole$"
    check "markdown report" replay "$tmp/sh.md" "$s" --window hta --format md
    check "markdown names the window" has "$tmp/sh.md" "--window hta: HTA's"
    check "markdown: no fallback under hta" lacks "$tmp/sh.md" "no device work"
    check "csv report" replay "$tmp/s.csv" "$s" --format csv
    check "csv: the run's window" csv_col "$tmp/s.csv" all window ddptop
    check "csv: the rank's window" csv_col "$tmp/s.csv" 0 window whole
    check "csv, hta" replay "$tmp/wh.csv" "$w" --window hta --format csv
    check "csv: hta" csv_col "$tmp/wh.csv" 0 window hta
    "$BIN" --help >"$tmp/help" 2>&1
    check "--help lists --window" has "$tmp/help" "--window"
    "$BIN" --batch --window hta --steps 1 >"$tmp/train.out" 2>"$tmp/train.err"
    check "--window refused without --replay/--follow (status 2)" test $? -eq 2
    check "... in one line naming both" has "$tmp/train.err" "--window: only with --replay or --follow"
    "$BIN" --batch --replay "$w" --window htaa >/dev/null 2>"$tmp/bad.err"
    check "--window htaa refused (status 2)" test $? -eq 2
    mkdir -p "$tmp/f"
    cp "$w" "$tmp/f/rank0.1.pt.trace.json"
    "$BIN" --batch --follow "$tmp/f" --idle-exit 1 --window hta --format json --quiet >"$tmp/fo.json" 2>"$tmp/fo.err"
    check "--follow --window hta" test $? -eq 0
    check "--follow: HTA's window" split "$tmp/fo.json" 0 68.75 16.667 2.083 12.5 20 1.0
    check "--follow: hta named" run_key "$tmp/fo.json" window '"hta"'
}

case_folder() {
    mkdir -p "$tmp/d"
    cp "$FIX/kineto_gpu.json" "$tmp/d/rank0.1.pt.trace.json"
    # (the shape of the execution trace PyTorch's ExecutionTraceObserver writes)
    printf '{"schema": "1.1.1-chakra.0.0.4", "pid": 4242, "time": "2024-05-01 10:00:00", "start_ts": 1000, "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 0, "inputs": {}, "outputs": {}, "attrs": []}], "finish_ts": 2000}\n' >"$tmp/d/rank0_et.json"
    check "the trace alone" replay "$tmp/one.json" "$FIX/kineto_gpu.json" --format json
    check "the folder with an execution trace beside it" replay "$tmp/d.json" "$tmp/d" --format json
    check "... the same figures as the trace alone" same_split "$tmp/one.json" "$tmp/d.json"
    check "json names the file left out" "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["replay"]
sys.exit(0 if r["left_out"] == [sys.argv[2]] and r["left_out_count"] == 1 else "left_out: %s" % r)' "$tmp/d.json" "$tmp/d/rank0_et.json"
    check "stderr names it" has "$tmp/d.json.err" "rank0_et.json is not a trace"
    check "text names it" replay "$tmp/d.txt" "$tmp/d"
    check "... in the report" has "$tmp/d.txt" "left out $tmp/d/rank0_et.json: not a trace"
    "$BIN" --batch --replay "$tmp/d/rank0_et.json" >/dev/null 2>"$tmp/et.err"
    check "the execution trace named alone: refused (status 2)" test $? -eq 2
    check "... saying it is not a trace" has "$tmp/et.err" "not a trace: a JSON object without traceEvents"
    mkdir -p "$tmp/e"
    cp "$tmp/d/rank0_et.json" "$tmp/e/"
    "$BIN" --batch --replay "$tmp/e" >/dev/null 2>"$tmp/e.err"
    check "a folder of no trace: refused (status 2)" test $? -eq 2
    check "... saying so" has "$tmp/e.err" "a folder without a trace in it"
    "$BIN" --batch --follow "$tmp/d" --idle-exit 1 --format json --quiet >"$tmp/fd.json" 2>"$tmp/fd.err"
    check "--follow of the folder" test $? -eq 0
    check "--follow names the file left out" "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["replay"]
sys.exit(0 if r["left_out"] == [sys.argv[2]] else "left_out: %s" % r)' "$tmp/fd.json" "$tmp/d/rank0_et.json"
    check "--follow: the trace's figures" same_split "$tmp/one.json" "$tmp/fd.json"
}

case_devices() {
    check "replay kineto_mtia.json" replay "$tmp/m.json" "$FIX/kineto_mtia.json" --format json
    check "MTIA: the device view" rank "$tmp/m.json" 0 view gpu
    check "MTIA: its device" rank "$tmp/m.json" 0 device mtia:17
    check "MTIA: the split of its records" split "$tmp/m.json" 0 70 12.5 5 12.5 50 -
    check "MTIA, --window hta" replay "$tmp/mh.json" "$FIX/kineto_mtia.json" --window hta --format json
    check "MTIA, hta: HTA's" split "$tmp/mh.json" 0 62.5 12.5 12.5 12.5 50 -
    check "replay kineto_profiler_range.json" replay "$tmp/p.json" "$FIX/kineto_profiler_range.json" --format json
    check "range profiler: the device view" rank "$tmp/p.json" 0 view gpu
    check "range profiler: its device" rank "$tmp/p.json" 0 device cuda:0
    check "range profiler: the split of its kernels" split "$tmp/p.json" 0 71.429 0 0 28.571 0 -
}

case_ranks() {
    mkdir -p "$tmp/r"
    for r in 0 1; do
        "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["distributedInfo"].update(rank=int(sys.argv[2]), world_size=128)
json.dump(d, open(sys.argv[3], "w"))' "$FIX/kineto_gpu.json" $r "$tmp/r/host_$r.1.pt.trace.json"
    done
    check "two ranks of 128 (text)" replay "$tmp/r.txt" "$tmp/r"
    check "text: 2 of 128" has "$tmp/r.txt" " 2 of 128 "
    check "... json" replay "$tmp/r.json" "$tmp/r" --format json
    check "json: ranks 128" run_key "$tmp/r.json" ranks 128
    check "json: ranks_read 2" run_key "$tmp/r.json" ranks_read 2
    check "json: rank 1 from the trace" rank "$tmp/r.json" 1 rank_from trace
    check "... csv" replay "$tmp/r.csv" "$tmp/r" --format csv
    check "csv: ranks 128" csv_col "$tmp/r.csv" all ranks 128
    check "csv: ranks_read 2" csv_col "$tmp/r.csv" all ranks_read 2
    check "csv: rank 1 from the trace" csv_col "$tmp/r.csv" 1 rank_from trace
    check "... markdown" replay "$tmp/r.md" "$tmp/r" --format md
    check "markdown: 2 of 128" has "$tmp/r.md" "| 2 of 128 |"
    # a file whose rank only its name gives
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["distributedInfo"]; json.dump(d, open(sys.argv[2], "w"))' \
        "$FIX/kineto_window_stub.json" "$tmp/rank70.json"
    check "rank70.json" replay "$tmp/n.json" "$tmp/rank70.json" --format json
    check "its rank: 70" rank "$tmp/n.json" 70 rank 70
    check "... from its name" rank "$tmp/n.json" 70 rank_from name
    check "... 1 of 71 (json)" run_key "$tmp/n.json" ranks_read 1
    check "rank70.json (text)" replay "$tmp/n.txt" "$tmp/rank70.json"
    check "text: 1 of 71" has "$tmp/n.txt" " 1 of 71 "
    check "text: rank 70's source" grep -Eq '^ +0 +70 gpu .* name +whole$' "$tmp/n.txt"
    cp "$tmp/rank70.json" "$tmp/plain.json"
    check "plain.json" replay "$tmp/o.json" "$tmp/plain.json" --format json
    check "... rank 0 by the order of the files" rank "$tmp/o.json" 0 rank_from order
}

# kernels_match JSON TSV NAME: ddptop's kernel breakdown in JSON is HTA's for NAME in TSV
kernels_match() {
    "$PY" - "$@" <<'PY'
import json, sys
f, tsv, name = sys.argv[1:4]
k = json.load(open(f))["runs"][0]["kernels"]
if k is None:
    sys.exit("    no kernels in %s" % f)
ranks = {str(r["rank"]): r for r in k["ranks"]}
ranks["all"] = k
want_types, want_top = {}, {}
for line in open(tsv):
    c = line.rstrip("\n").split("\t")
    if line.startswith("#") or c[0] != name:
        continue
    if c[2] == "type":
        want_types.setdefault(c[1], {})[c[3]] = (float(c[4]), float(c[5]))
    else:
        want_top.setdefault((c[1], c[3]), {})[c[4]] = (float(c[5]), int(c[6]), None if c[7] == "-" else float(c[7]))
bad = []
for rank, types in want_types.items():
    got = {t["type"]: t for t in ranks.get(rank, {"types": []})["types"]}
    for t, (us, pct) in types.items():
        g = got.get(t)
        if not g or abs(g["time_us"] - us) > 1 or abs(g["share_pct"] - pct) > 0.05 + 1e-9:
            bad.append("rank %s %s: %s, HTA %s us %s%%" % (rank, t, g and (g["time_us"], g["share_pct"]), us, pct))
    for t, g in got.items():
        if g["time_us"] > 0 and t not in types:
            bad.append("rank %s %s: %s us, HTA none" % (rank, t, g["time_us"]))
for (rank, kind), rows in want_top.items():
    got = {r["name"]: r for r in ranks.get(rank, {"top": []})["top"] if r["type"] == kind}
    if set(got) != set(rows):
        bad.append("rank %s %s: kernels %s, HTA %s" % (rank, kind, sorted(got), sorted(rows)))
        continue
    for n, (us, count, mean) in rows.items():
        g = got[n]
        if abs(g["sum_us"] - us) > 1 or g["count"] != count or (mean is not None and abs(g["mean_us"] - mean) > 1e-3):
            bad.append("rank %s %s %s: sum, count, mean %s, HTA %s" % (rank, kind, n[:60], (g["sum_us"], g["count"], g["mean_us"]), (us, count, mean)))
for rank, r in ranks.items():
    if rank != "all" and rank in want_types:
        for g in r["top"]:
            if (rank, g["type"]) not in want_top:
                bad.append("rank %s: %s kernels, HTA none" % (rank, g["type"]))
if not want_types:
    bad.append("%s: not in %s" % (name, tsv))
sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)
PY
}

# hta_cases TSV P MATCH WHAT LEAST: every trace TSV records HTA's values
# for (fixtures/X: the fixture X.json, or the folder X of them; else HTA's
# test data under $DDPTOP_HTA_DIR, when set) replayed under --window hta
# into $tmp/P.NAME.json and held to them by MATCH JSON TSV NAME; more
# than LEAST of them read
hta_cases() {
    local tsv=$1 pre=$2 match=$3 what=$4 least=$5 name dir out n=0
    for name in $(grep -v '^#' "$tsv" | cut -f1 | awk '!seen[$0]++'); do
        case $name in
        fixtures/*)
            dir=$tmp/$name
            mkdir -p "$dir"
            if [ -d "$FIX/${name#fixtures/}" ]; then cp "$FIX/${name#fixtures/}"/*.json "$dir/"; else cp "$FIX/${name#fixtures/}.json" "$dir/"; fi
            ;;
        *) [ -n "${DDPTOP_HTA_DIR:-}" ] || continue; dir=$DDPTOP_HTA_DIR/tests/data/$name ;;
        esac
        [ -d "$dir" ] || { echo "absent here: $name"; continue; }
        out=$tmp/$pre.$(echo "$name" | tr / _).json
        check "$name: replay --window hta" replay "$out" "$dir" --window hta --format json
        check "$name: $what" "$match" "$out" "$tsv" "$name"
        n=$((n + 1))
    done
    check "the hand-made traces are in the .tsv" test "$n" -gt "$least"
}

case_kernels() {
    hta_cases "$KTSV" k kernels_match "HTA's kernel breakdown" 0
    # the report's tables name the types and the top kernels
    check "text report" replay "$tmp/k.txt" "$tmp/fixtures/kineto_window" --window hta
    check "text: the kernel types" has "$tmp/k.txt" "kernel types of run 0 (HTA's kernel breakdown)"
    check "text: types overlapping" has "$tmp/k.txt" "computation overlapping communication"
    check "text: the top kernels" grep -Eq '^ +0 communication +nccl' "$tmp/k.txt"
    check "markdown report" replay "$tmp/k.md" "$tmp/fixtures/kineto_window" --window hta --format md
    check "markdown: the top kernels" has "$tmp/k.md" "| 0 | communication | \`nccl"
    # more than 10 kernels of a type: HTA's 80% cut and the others row
    local top=$FIX/kineto_kernels_top.json
    check "kineto_kernels_top: replay" replay "$tmp/top.json" "$top" --format json
    check "... against a count over the trace" "$PY" "$HERE/kernel_count.py" "$tmp/top.json" "$top"
    check "... worked by hand" "$PY" - "$tmp/top.json" <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))["runs"][0]["kernels"]
top = [(r["name"], r["count"], round(r["sum_us"], 3), r["others"]) for r in k["ranks"][0]["top"] if r["type"] == "computation"]
want = [("k01_gemm", 2, 300, 0), ("k02_conv", 1, 200, 0), ("k03_relu", 1, 100, 0), ("k04_bn", 1, 60, 0),
        ("k05_add", 1, 50, 0), ("k06_mul", 1, 40, 0), ("k07_sum", 1, 30, 0), ("k08_cat", 1, 20, 0),
        ("k09_copy", 1, 12, 0), ("others", 3, 20, 3)]
types = {t["type"]: round(t["time_us"], 3) for t in k["types"] if t["time_us"]}
wt = {"computation": 532, "computation overlapping communication": 300, "memory": 50}
share = k["ranks"][0]["top"][0]["share_pct"]
if top != want or types != wt or abs(share - 100 * 300 / 832) > 1e-6:
    sys.exit("    top %s\n    types %s, k01 share %s" % (top, types, share))
PY
    check "kineto_kernels_top: csv" replay "$tmp/top.csv" "$top" --format csv
    check "... the kernel rows are the JSON's" "$PY" - "$tmp/top.csv" "$tmp/top.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
k = json.load(open(sys.argv[2]))["runs"][0]["kernels"]
want = [("all", "types", t["type"], "", t["time_us"], t["share_pct"]) for t in k["types"]]
for r in k["ranks"]:
    want += [(str(r["rank"]), "types", t["type"], "", t["time_us"], t["share_pct"]) for t in r["types"]]
    want += [(str(r["rank"]), "top", t["type"], t["name"], t["sum_us"], t["share_pct"], t["others"], t["count"], t["mean_us"]) for t in r["top"]]
got = [x for x in rows if x["kernels"] in ("types", "top")]
bad = [] if len(got) == len(want) else ["%d kernel rows, JSON %d" % (len(got), len(want))]
for x, w in zip(got, want):
    g = (x["rank"], x["kernels"], x["kernel_type"], x["kernel_name"], float(x["kernel_us"]), float(x["kernel_share_pct"]))
    if w[1] == "top":
        g += (int(x["kernel_others"]), int(x["kernel_count"]), float(x["kernel_mean_us"]))
    if g[:4] != w[:4] or g[6:8] != w[6:8] or any(abs(a - b) > 5e-4 for a, b in zip(g[4:6] + g[8:], w[4:6] + w[8:])):
        bad.append("csv %s, json %s" % (g, w))
if any(x["kernels"] == "" and x["kernel_type"] for x in rows):
    bad.append("a figures row with kernel columns")
sys.exit("    " + "\n    ".join(bad[:6]) if bad else 0)
PY
    check "a host-only trace: no kernels" replay "$tmp/host.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... null" run_key "$tmp/host.json" kernels null
}

# memcpy_match JSON TSV NAME: ddptop's memory copies in JSON are HTA's summary for NAME in TSV
memcpy_match() {
    "$PY" - "$@" <<'PY'
import json, sys
f, tsv, name = sys.argv[1:4]
m = json.load(open(f))["runs"][0]["memcpy"]
if m is None:
    sys.exit("    no memcpy in %s" % f)
got = {}
for r in m["ranks"]:
    for k in r["kinds"]:
        if k["rated"]:
            got[(r["rank"], k["kind"])] = (k["rated"], k["copy_gbps_mean"], k["copy_gbps_min"], k["copy_gbps_max"])
want = {}
for line in open(tsv):
    c = line.rstrip("\n").split("\t")
    if not line.startswith("#") and c[0] == name:
        want[(int(c[1]), c[2])] = (int(c[3]), float(c[4]), float(c[5]), float(c[6]))
bad = [] if want else ["%s: not in %s" % (name, tsv)]
if set(got) != set(want):
    bad.append("kinds %s, HTA %s" % (sorted(got), sorted(want)))
for key in set(got) & set(want):
    g, w = got[key], want[key]
    if g[0] != w[0] or any(abs(a - b) > 1e-5 + 1e-6 * abs(b) for a, b in zip(g[1:], w[1:])):
        bad.append("rank %d %s: rated, mean, min, max %s, HTA %s" % (key + (g, w)))
sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)
PY
}

case_memcpy() {
    hta_cases "$MTSV" m memcpy_match "HTA's memory bandwidth summary" 0
    local mc=$FIX/kineto_memcpy.json
    check "kineto_memcpy: replay" replay "$tmp/mc.json" "$mc" --format json
    check "... against a count over the trace" "$PY" "$HERE/memcpy_count.py" "$tmp/mc.json" "$mc"
    check "... worked by hand" "$PY" - "$tmp/mc.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["runs"][0]["memcpy"]
r6 = lambda v: None if v is None else round(v, 6)
got = [(k["kind"], k["count"], k["bytes"], round(k["time_us"], 3), round(k["gbps"], 6), k["rated"],
        r6(k["copy_gbps_mean"]), r6(k["copy_gbps_max"])) for k in m["ranks"][0]["kinds"]]
want = [("Memcpy HtoD", 2, 6e6, 25, 240, 2, 450, 800), ("Memcpy DtoH", 1, 1e6, 40, 25, 1, 25, 25),
        ("Memcpy DtoD", 2, 11e6, 5, 2200, 2, 2500, 4000), ("Memset", 1, 512, 1, 0.512, 1, 0.512, 0.512),
        ("Memcpy PtoP", 1, 5e6, 10, 500, 0, None, None)]
if got != want or m["kinds"] != m["ranks"][0]["kinds"]:
    sys.exit("    %s" % got)
PY
    check "text report" replay "$tmp/mc.txt" "$mc"
    check "text: the memory copies" grep -Eq '^ +0 Memcpy DtoD +2 +11\.000 +0\.005 +2200\.000 +2500\.000 +4000\.000' \
        "$tmp/mc.txt"
    check "markdown report" replay "$tmp/mc.md" "$mc" --format md
    check "markdown: the memory copies" has "$tmp/mc.md" "| 0 | Memcpy PtoP | 1 | 5.000 | 0.010 | 500.000 | n/a | n/a |"
    check "kineto_memcpy: csv" replay "$tmp/mc.csv" "$mc" --format csv
    check "... the memory copy rows are the JSON's" "$PY" - "$tmp/mc.csv" "$tmp/mc.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = json.load(open(sys.argv[2]))["runs"][0]["memcpy"]
keys = ("count", "bytes", "time_us", "gbps", "rated", "copy_gbps_mean", "copy_gbps_min", "copy_gbps_max")
cols = ("memcpy_count", "memcpy_bytes", "memcpy_us", "memcpy_gbps", "memcpy_rated", "memcpy_copy_gbps_mean",
        "memcpy_copy_gbps_min", "memcpy_copy_gbps_max")
want = [("all", k) for k in m["kinds"]] + [(str(r["rank"]), k) for r in m["ranks"] for k in r["kinds"]]
got = [x for x in rows if x["kernels"] == "memcpy"]
bad = [] if len(got) == len(want) else ["%d memory copy rows, JSON %d" % (len(got), len(want))]
for x, (rank, k) in zip(got, want):
    g = [None if x[c] == "" else float(x[c]) for c in cols]
    w = [k[key] for key in keys]
    if x["rank"] != rank or x["memcpy_kind"] != k["kind"] or any(
            (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-3) for a, b in zip(g, w)):
        bad.append("csv %s %s %s, json %s" % (x["rank"], x["memcpy_kind"], g, w))
if any(x["kernels"] != "memcpy" and x["memcpy_kind"] for x in rows):
    bad.append("a row not of memcpy with memory copy columns")
sys.exit("    " + "\n    ".join(bad[:6]) if bad else 0)
PY
    check "a host-only trace: no memory copies" replay "$tmp/host.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... null" run_key "$tmp/host.json" memcpy null
}

# queue_match JSON TSV NAME: ddptop's launch queues in JSON are HTA's summary for NAME in TSV
queue_match() {
    "$PY" - "$@" <<'PY'
import json, sys
f, tsv, name = sys.argv[1:4]
q = json.load(open(f))["runs"][0]["queue"]
if q is None:
    sys.exit("    no queue in %s" % f)
keys = ("count", "mean", "std", "min", "p25", "p50", "p75", "max")
got, blocked = {}, {}
for r in q["ranks"]:
    for s in r["streams"]:
        got[(r["rank"], s["stream"])] = [s[k] for k in keys]
        if s["blocked_us"] > 0:
            blocked[(r["rank"], s["stream"])] = s["blocked_us"]
want, wblocked = {}, {}
for line in open(tsv):
    c = line.rstrip("\n").split("\t")
    if line.startswith("#") or c[0] != name:
        continue
    if c[2] == "blocked":
        wblocked[(int(c[1]), int(c[3]))] = float(c[4])
    else:
        want[(int(c[1]), int(c[2]))] = [None if x == "-" else float(x) for x in c[3:11]]
bad = [] if want else ["%s: not in %s" % (name, tsv)]
if set(got) != set(want):
    bad.append("streams %s, HTA %s" % (sorted(got), sorted(want)))
for key in sorted(set(got) & set(want)):
    g, w = got[key], want[key]
    if any((a is None) != (b is None) or (b is not None and abs(a - b) > 1e-5 + 1e-6 * abs(b)) for a, b in zip(g, w)):
        bad.append("rank %d stream %d: %s, HTA %s" % (key + (g, w)))
if set(blocked) != set(wblocked) or any(abs(blocked[k] - wblocked[k]) > 1e-3 for k in blocked):
    bad.append("blocked %s, HTA %s" % (blocked, wblocked))
sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)
PY
}

case_queue() {
    hta_cases "$QTSV" q queue_match "HTA's queue length summary" 1
    local qt=$FIX/kineto_queue.json
    check "kineto_queue: replay" replay "$tmp/qt.json" "$qt" --window hta --format json
    check "... against a count over the trace" "$PY" "$HERE/queue_count.py" "$tmp/qt.json" "$qt"
    check "... worked by hand" "$PY" - "$tmp/qt.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))["runs"][0]["queue"]
r6 = lambda v: None if v is None else round(v, 6)
got = [(s["stream"], s["count"], r6(s["mean"]), s["min"], r6(s["p25"]), r6(s["p50"]), r6(s["p75"]), s["max"],
        r6(s["blocked_us"])) for s in q["ranks"][0]["streams"]]
want = [(7, 2050, round(1048577 / 2050, 6), 0, 255.25, 511.5, 767.75, 1024, 3777),
        (13, 6, round(5 / 6, 6), 0, 0.25, 1, 1, 2, 0), (21, 2, 0.5, 0, 0.25, 0.5, 0.75, 1, 0)]
if got != want or q["full"] != 1024 or round(q["ranks"][0]["streams"][1]["std"], 6) != 0.752773:
    sys.exit("    %s" % got)
PY
    check "text report" replay "$tmp/qt.txt" "$qt" --window hta
    check "text: the launch queues" grep -Eq \
        '^ +0 +7 +2050 +511\.501 +295\.963 +0 +255\.25 +511\.50 +767\.75 +1024 +3\.777$' "$tmp/qt.txt"
    check "markdown report" replay "$tmp/qt.md" "$qt" --window hta --format md
    check "markdown: the launch queues" has "$tmp/qt.md" "| 0 | 13 | 6 | 0.833 | 0.753 | 0 | 0.25 | 1.00 | 1.00 | 2 | - |"
    check "kineto_queue: csv" replay "$tmp/qt.csv" "$qt" --window hta --format csv
    check "... the queue rows are the JSON's" "$PY" - "$tmp/qt.csv" "$tmp/qt.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
q = json.load(open(sys.argv[2]))["runs"][0]["queue"]
keys = ("stream", "count", "mean", "std", "min", "p25", "p50", "p75", "max", "blocked_us")
want = [(str(r["rank"]), s) for r in q["ranks"] for s in r["streams"]]
got = [x for x in rows if x["kernels"] == "queue"]
bad = [] if len(got) == len(want) else ["%d queue rows, JSON %d" % (len(got), len(want))]
for x, (rank, s) in zip(got, want):
    g = [None if x["queue_" + k] == "" else float(x["queue_" + k]) for k in keys]
    w = [s[k] for k in keys]
    if x["rank"] != rank or any((a is None) != (b is None) or (a is not None and abs(a - b) > 1e-3)
                                for a, b in zip(g, w)):
        bad.append("csv %s %s, json %s" % (x["rank"], g, w))
if any(x["kernels"] != "queue" and any(x["queue_" + k] for k in keys) for x in rows):
    bad.append("a row not of queue with queue columns")
sys.exit("    " + "\n    ".join(bad[:6]) if bad else 0)
PY
    check "a host-only trace: no launch queues" replay "$tmp/host.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... null" run_key "$tmp/host.json" queue null
}

# launch_match JSON TSV NAME: ddptop's launch statistics in JSON are HTA's for NAME in TSV
launch_match() {
    "$PY" - "$@" <<'PY'
import json, sys
f, tsv, name = sys.argv[1:4]
m = json.load(open(f))["runs"][0]["launch"]
if m is None:
    sys.exit("    no launch in %s" % f)
if (m["runtime_cutoff_us"], m["delay_cutoff_us"]) != (50, 100):
    sys.exit("    cut-offs %s %s, HTA's 50 100" % (m["runtime_cutoff_us"], m["delay_cutoff_us"]))
got = {}
for r in m["ranks"]:
    if r["count"]:
        got[r["rank"]] = [r["count"]] + [r[c][k] for c in ("cpu_us", "gpu_us", "delay_us")
                                         for k in ("mean", "p50", "max")] + [r["short_gpu"], r["long_cpu"],
                                                                             r["long_delay"]]
want = {}
for line in open(tsv):
    c = line.rstrip("\n").split("\t")
    if not line.startswith("#") and c[0] == name:
        want[int(c[1])] = [float(v) for v in c[2:]]
bad = [] if want else ["%s: not in %s" % (name, tsv)]
if set(got) != set(want):
    bad.append("ranks %s, HTA %s" % (sorted(got), sorted(want)))
for rank in set(got) & set(want):
    g, w = got[rank], want[rank]
    if len(g) != len(w) or any(a is None or abs(a - b) > 1e-3 + 1e-9 * abs(b) for a, b in zip(g, w)):
        bad.append("rank %d: %s, HTA %s" % (rank, g, w))
sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)
PY
}

case_launch() {
    hta_cases "$LTSV" l launch_match "HTA's launch statistics" 0
    local kl=$FIX/kineto_launch.json
    check "kineto_launch: replay" replay "$tmp/kl.json" "$kl" --format json
    check "... against a count over the trace" "$PY" "$HERE/launch_count.py" "$tmp/kl.json" "$kl"
    check "... worked by hand" "$PY" - "$tmp/kl.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["runs"][0]["launch"]
r = m["ranks"][0]
got = [r["rank"], r["count"], r["kernel_launches"]] + [r[c][k] for c in ("cpu_us", "gpu_us", "delay_us")
                                                       for k in ("mean", "p50", "max")]
got += [r["short_gpu"], r["long_cpu"], r["long_delay"]]
want = [0, 8, 6, 20.375, 8.5, 60, 26.875, 8, 100, 64.125, 9, 250, 5, 1, 2]
if len(m["ranks"]) != 1 or any(abs(a - b) > 1e-9 for a, b in zip(got, want)):
    sys.exit("    %s" % got)
PY
    # a second rank: the same trace as rank 1
    mkdir -p "$tmp/kl2"
    cp "$kl" "$tmp/kl2/rank0.json"
    sed 's/"rank": 0/"rank": 1/' "$kl" >"$tmp/kl2/rank1.json"
    check "two ranks: replay" replay "$tmp/kl2.json" "$tmp/kl2" --format json
    check "... against a count over the trace" "$PY" "$HERE/launch_count.py" "$tmp/kl2.json" "$tmp/kl2/rank0.json" \
        "$tmp/kl2/rank1.json"
    check "text report" replay "$tmp/kl.txt" "$kl"
    check "text: the launches" grep -Eq \
        '^ +0 +8 +20\.375 +8\.500 +60\.000 +26\.875 +8\.000 +100\.000 +64\.125 +9\.000 +250\.000 +5 +1 +2$' "$tmp/kl.txt"
    check "text: two ranks, the run's without a median" replay "$tmp/kl2.txt" "$tmp/kl2"
    check "... its row" grep -Eq '^ +all +16 +20\.375 +n/a +60\.000 +26\.875 +n/a +100\.000 +64\.125 +n/a +250\.000 +10 +2 +4$' \
        "$tmp/kl2.txt"
    check "markdown report" replay "$tmp/kl.md" "$kl" --format md
    check "markdown: the launches" has "$tmp/kl.md" \
        "| 0 | 8 | 20.375 | 8.500 | 60.000 | 26.875 | 8.000 | 100.000 | 64.125 | 9.000 | 250.000 | 5 | 1 | 2 |"
    check "two ranks: csv" replay "$tmp/kl2.csv" "$tmp/kl2" --format csv
    check "... the launch rows are the JSON's" "$PY" - "$tmp/kl2.csv" "$tmp/kl2.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = json.load(open(sys.argv[2]))["runs"][0]["launch"]
figs = lambda t: [t["count"], t["kernel_launches"]] + [t[c][k] for c in ("cpu_us", "gpu_us", "delay_us")
                                                      for k in ("mean", "p50", "max")] + [
    t["short_gpu"], t["long_cpu"], t["long_delay"]]
cols = ["launch_count", "launch_kernel_launches"] + ["launch_%s_%s_us" % (c, k) for c in ("cpu", "gpu", "delay")
                                                     for k in ("mean", "p50", "max")] + [
    "launch_short_gpu", "launch_long_cpu", "launch_long_delay"]
want = [("all", figs(m))] + [(str(r["rank"]), figs(r)) for r in m["ranks"]]
got = [x for x in rows if x["kernels"] == "launch"]
bad = [] if len(got) == len(want) else ["%d launch rows, JSON %d" % (len(got), len(want))]
for x, (rank, w) in zip(got, want):
    g = [None if x[c] == "" else float(x[c]) for c in cols]
    if x["rank"] != rank or any((a is None) != (b is None) or (a is not None and abs(a - b) > 1e-3)
                                for a, b in zip(g, w)):
        bad.append("csv %s %s, json %s" % (x["rank"], g, w))
if any(x["kernels"] != "launch" and x["launch_count"] for x in rows):
    bad.append("a row not of launch with launch columns")
sys.exit("    " + "\n    ".join(bad[:6]) if bad else 0)
PY
    check "a host-only trace: no launches" replay "$tmp/host.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... null" run_key "$tmp/host.json" launch null
}

# idle_match JSON TSV NAME: ddptop's idle time per stream in JSON is HTA's for NAME in TSV
idle_match() {
    "$PY" - "$@" <<'PY'
import json, sys
f, tsv, name = sys.argv[1:4]
m = json.load(open(f))["runs"][0]["idle"]
if m is None:
    sys.exit("    no idle in %s" % f)
if m["delay_us"] != 30:
    sys.exit("    delay %s us, HTA's 30" % m["delay_us"])
cats = ("host_wait", "kernel_wait", "other")
got = {}
for r in m["ranks"]:
    for s in r["streams"]:
        for c in cats:
            got[(r["rank"], s["stream"], c)] = (s[c]["time_us"], s[c]["ratio"], s[c]["gaps"])
want = {}
for line in open(tsv):
    c = line.rstrip("\n").split("\t")
    if not line.startswith("#") and c[0] == name:
        want[(int(c[1]), int(c[2]), c[3])] = (float(c[4]), None if c[5] == "nan" else float(c[5]), int(c[6]))
bad = [] if want else ["%s: not in %s" % (name, tsv)]
if {k[:2] for k in got} != {k[:2] for k in want}:
    bad.append("streams %s, HTA %s" % (sorted({k[:2] for k in got}), sorted({k[:2] for k in want})))
for k in sorted(set(got) & {(r, s, c) for r, s, _ in want for c in cats}):
    g = got[k]
    w = want.get(k, (0.0, None if g[1] is None else 0.0, 0))  # a category HTA leaves out: no gap of it
    if (abs(g[0] - w[0]) > 0.005 + 1e-9 * abs(w[0]) or g[2] != w[2] or (g[1] is None) != (w[1] is None)
            or (g[1] is not None and abs(g[1] - w[1]) > 0.005 + 1e-9)):
        bad.append("rank %d stream %d %s: %s, HTA %s" % (k + (g, w)))
sys.exit("    " + "\n    ".join(bad[:8]) if bad else 0)
PY
}

# refused CMD..: CMD fails
refused() { ! "$@"; }

case_idle() {
    hta_cases "$ITSV" i idle_match "HTA's idle time per stream" 0
    local ki=$FIX/kineto_idle.json
    check "kineto_idle: replay" replay "$tmp/ki.json" "$ki" --format json
    check "... against a count over the trace" "$PY" "$HERE/idle_count.py" "$tmp/ki.json" "$ki"
    check "--window hta: replay" replay "$tmp/kih.json" "$ki" --window hta --format json
    check "--idle-delay-ns 100000: replay" replay "$tmp/ki100.json" "$ki" --idle-delay-ns 100000 --format json
    check "... against a count over the trace" "$PY" "$HERE/idle_count.py" --delay-us 100 "$tmp/ki100.json" "$ki"
    check "... worked by hand" "$PY" - "$tmp/ki.json" "$tmp/kih.json" "$tmp/ki100.json" <<'PY'
import json, sys
want = [  # delay, then per stream: stream, ops, idle, (us, gaps) of host wait, kernel wait, other
    (30, [(7, 11, 599, (310, 3), (19, 3), (270, 4)), (20, 2, 5, (0, 0), (5, 1), (0, 0))]),
    (30, [(7, 10, 1359, (1150, 3), (19, 3), (190, 3)), (20, 2, 5, (0, 0), (5, 1), (0, 0))]),
    (100, [(7, 11, 599, (310, 3), (189, 6), (100, 1)), (20, 2, 5, (0, 0), (5, 1), (0, 0))])]
bad = []
for f, (delay, streams) in zip(sys.argv[1:], want):
    m = json.load(open(f))["runs"][0]["idle"]
    got = [(s["stream"], s["ops"], s["idle_us"]) + tuple((s[k]["time_us"], s[k]["gaps"])
                                                        for k in ("host_wait", "kernel_wait", "other"))
           for r in m["ranks"] for s in r["streams"]]
    if m["delay_us"] != delay or got != streams:
        bad.append("%s: %s %s" % (f, m["delay_us"], got))
    for r in m["ranks"]:
        for s in r["streams"]:
            if sum(s[k]["time_us"] for k in ("host_wait", "kernel_wait", "other")) != s["idle_us"]:
                bad.append("%s: stream %d's categories do not add up to its idle time" % (f, s["stream"]))
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "text report" replay "$tmp/ki.txt" "$ki"
    check "text: the idle time per stream" grep -Eq \
        '^ +0 +7 +11 +599\.000 +310\.000 +51\.75 +19\.000 +3\.17 +270\.000 +45\.08$' "$tmp/ki.txt"
    check "... its threshold" grep -q 'kernel wait: a gap under 30.000 us' "$tmp/ki.txt"
    check "markdown report" replay "$tmp/ki.md" "$ki" --format md
    check "markdown: the idle time per stream" has "$tmp/ki.md" \
        "| 0 | 20 | 2 | 5.000 | 0.000 | 0.00 | 5.000 | 100.00 | 0.000 | 0.00 |"
    # a second rank, that csv holds both
    mkdir -p "$tmp/ki2"
    cp "$ki" "$tmp/ki2/rank0.json"
    sed 's/"rank": 0/"rank": 1/' "$ki" >"$tmp/ki2/rank1.json"
    check "two ranks: replay" replay "$tmp/ki2.json" "$tmp/ki2" --format json
    check "... against a count over the trace" "$PY" "$HERE/idle_count.py" "$tmp/ki2.json" "$tmp/ki2/rank0.json" \
        "$tmp/ki2/rank1.json"
    check "two ranks: csv" replay "$tmp/ki2.csv" "$tmp/ki2" --format csv
    check "... the idle rows are the JSON's" "$PY" - "$tmp/ki2.csv" "$tmp/ki2.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = json.load(open(sys.argv[2]))["runs"][0]["idle"]
cats = ("host_wait", "kernel_wait", "other")
want = [(str(r["rank"]), [s["stream"], s["ops"], s["idle_us"]] + [s[k][f] for k in cats
                                                                    for f in ("time_us", "gaps", "ratio")]
         + [m["delay_us"]]) for r in m["ranks"] for s in r["streams"]]
cols = ["idle_stream", "idle_ops", "idle_us"] + ["idle_%s_%s" % (k, f) for k in cats
                                                  for f in ("us", "gaps", "ratio")] + ["idle_delay_us"]
got = [x for x in rows if x["kernels"] == "idle"]
bad = [] if len(got) == len(want) == 4 else ["%d idle rows, JSON %d" % (len(got), len(want))]
for x, (rank, w) in zip(got, want):
    g = [None if x[c] == "" else float(x[c]) for c in cols]
    if x["rank"] != rank or any((a is None) != (b is None) or (a is not None and abs(a - b) > 1e-3)
                                for a, b in zip(g, w)):
        bad.append("csv %s %s, json %s" % (x["rank"], g, w))
if any(x["kernels"] != "idle" and x["idle_stream"] for x in rows):
    bad.append("a row not of idle with idle columns")
sys.exit("    " + "\n    ".join(bad[:6]) if bad else 0)
PY
    # the union-of-streams split takes the same rule and threshold: on
    # kineto_gpu.json (worked by hand in test_trace_replay.c: wall 190 us,
    # host wait 15 us; gaps launched early of 20 ns, 10 ns and 20 us)
    local kg=$FIX/kineto_gpu.json
    check "kineto_gpu: replay, default threshold" replay "$tmp/kg.json" "$kg" --format json
    check "kineto_gpu: replay, --idle-delay-ns 15000" replay "$tmp/kg15.json" "$kg" --idle-delay-ns 15000 --format json
    check "... the union split by the threshold, by hand" "$PY" - "$tmp/kg.json" "$tmp/kg15.json" <<'PY'
import json, sys
want = [(15000, 20030, 0), (15000, 30, 20000)]  # host wait, kernel wait, other (ns) of 190000
bad = []
for f, w in zip(sys.argv[1:], want):
    for row in [json.load(open(f))["runs"][0], json.load(open(f))["per_rank"][0]]:
        got = [row[k] for k in ("host_wait_pct", "kernel_wait_pct", "other_idle_pct")]
        if any(abs(g - 100 * v / 190000) > 1e-9 for g, v in zip(got, w)):
            bad.append("%s: %s, by hand %s" % (f, got, [100 * v / 190000 for v in w]))
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "--idle-delay-ns -1 is refused" refused replay "$tmp/neg.json" "$ki" --idle-delay-ns -1 --format json
    check "a host-only trace: no idle time per stream" replay "$tmp/host.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... null" run_key "$tmp/host.json" idle null
}

# straggler_match JSON TSV NAME: ddptop's late collectives in JSON are HTA's for NAME in TSV
straggler_match() {
    "$PY" - "$@" <<'PY'
import json, sys
f, tsv, name = sys.argv[1:4]
m = json.load(open(f))["runs"][0]["stragglers"]
if m is None:
    sys.exit("    no stragglers in %s" % f)
want, kind = {}, None
for line in open(tsv):
    c = line.rstrip("\n").split("\t")
    if line.startswith("#") or c[0] != name:
        continue
    if c[1] == "kernel":
        kind = (int(c[2]), c[3])
    elif c[1] != "stragglers":
        want[int(c[1])] = [int(v) for v in c[2:5]]
got = {r["rank"]: [r["last"], r["late"], r["lead_us"]] for r in m["ranks"]}
bad = [] if want else ["%s: not in %s" % (name, tsv)]
if (m["stream"], m["kernel"]) != kind:
    bad.append("kernel %s %s, HTA's %s" % (m["stream"], m["kernel"], kind))
if got != want:
    bad.append("ranks %s, HTA %s" % (got, want))
if m["candidates"] != 2:
    bad.append("candidates %s, HTA's 2" % m["candidates"])
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
}

case_straggler() {
    hta_cases "$STSV" s straggler_match "HTA's stragglers" 0
    local s3=$FIX/stragglers3
    check "stragglers3: replay" replay "$tmp/s3.json" "$s3" --window hta --format json
    check "... against a count over the trace" "$PY" "$HERE/straggler_count.py" "$tmp/s3.json" "$s3"/rank0.json \
        "$s3"/rank1.json "$s3"/rank2.json
    check "... worked by hand" "$PY" - "$tmp/s3.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["runs"][0]["stragglers"]
got = [m["stream"], m["steps"], m["straggler"], m["min_duration_us"]] + [
    [r["rank"], r["last"], r["late"], r["lead_us"], r["lead_mean_us"]] for r in m["ranks"]]
want = [20, 4, 1, 10, [0, 2, 2, 90, 45], [1, 3, 4, 50, 50 / 3], [2, 0, 2, 0, None]]
ok = len(got) == len(want) and all(
    (a == b) if not isinstance(a, list) else all(x == y if x is None or y is None else abs(x - y) < 1e-9
                                                 for x, y in zip(a, b)) for a, b in zip(got, want))
if not ok or not m["kernel"].startswith("ncclKernel_AllReduce"):
    sys.exit("    %s %s" % (m["kernel"], got))
PY
    check "text report" replay "$tmp/s3.txt" "$s3" --window hta
    check "text: the ranks as the JSON has them" "$PY" - "$tmp/s3.txt" "$tmp/s3.json" text <<'PY'
import json, re, sys
m = json.load(open(sys.argv[2]))["runs"][0]["stragglers"]
text = open(sys.argv[1]).read()
md = sys.argv[3] == "md"
bad = []
head = "ate collectives of run 0 (HTA's stragglers; %s on stream %d, %d steps;" % (m["kernel"], m["stream"], m["steps"])
if head not in text:
    bad.append("no heading: %s" % head)
for r in m["ranks"]:
    mean = "n/a" if r["lead_mean_us"] is None else "%.3f" % r["lead_mean_us"]
    cells = [str(r["rank"]), str(r["last"]), str(r["late"]), "%.3f" % r["lead_us"], mean]
    pat = ("^\\| " + " \\| ".join(map(re.escape, cells)) + " \\|$") if md else ("^ *" + " +".join(map(re.escape, cells)) + "$")
    if not re.search(pat, text, re.M):
        bad.append("no row %s" % cells)
if ("traggler: rank %d (last most often)" % m["straggler"]) not in text:
    bad.append("no straggler line for rank %d" % m["straggler"])
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "markdown report" replay "$tmp/s3.md" "$s3" --window hta --format md
    check "markdown: the ranks as the JSON has them" "$PY" - "$tmp/s3.md" "$tmp/s3.json" md <<'PY'
import json, re, sys
m = json.load(open(sys.argv[2]))["runs"][0]["stragglers"]
text = open(sys.argv[1]).read()
bad = []
for r in m["ranks"]:
    mean = "n/a" if r["lead_mean_us"] is None else "%.3f" % r["lead_mean_us"]
    row = "| %d | %d | %d | %.3f | %s |" % (r["rank"], r["last"], r["late"], r["lead_us"], mean)
    if row not in text:
        bad.append("no row %s" % row)
if ("Straggler: rank %d (last most often)." % m["straggler"]) not in text:
    bad.append("no straggler line")
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "csv" replay "$tmp/s3.csv" "$s3" --window hta --format csv
    check "... the straggler rows are the JSON's" "$PY" - "$tmp/s3.csv" "$tmp/s3.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = json.load(open(sys.argv[2]))["runs"][0]["stragglers"]
got = [x for x in rows if x["kernels"] == "stragglers"]
bad = [] if len(got) == len(m["ranks"]) else ["%d straggler rows, JSON %d" % (len(got), len(m["ranks"]))]
for x, r in zip(got, m["ranks"]):
    g = [x["rank"], x["straggler_kernel"], x["straggler_stream"], x["straggler_steps"], x["straggler_last"],
         x["straggler_late"], float(x["straggler_lead_us"]), x["straggler_lead_mean_us"], x["straggler_rank"]]
    w = [str(r["rank"]), m["kernel"], str(m["stream"]), str(m["steps"]), str(r["last"]), str(r["late"]),
         float(r["lead_us"]), "" if r["lead_mean_us"] is None else "%.3f" % r["lead_mean_us"], str(m["straggler"])]
    if g != w:
        bad.append("csv %s, json %s" % (g, w))
if any(x["kernels"] != "stragglers" and x["straggler_kernel"] for x in rows):
    bad.append("a row not of stragglers with straggler columns")
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "one rank: replay" replay "$tmp/s1.json" "$s3/rank0.json" --window hta --format json
    check "... no stragglers (null)" run_key "$tmp/s1.json" stragglers null
    check "a host-only trace: no stragglers" replay "$tmp/host.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... null" run_key "$tmp/host.json" stragglers null
}

# hta_data: the folder of HTA's test traces, or exit 77
case_memory() {
    local km=$FIX/kineto_memory.json
    check "kineto_memory: replay" replay "$tmp/km.json" "$km" --format json
    check "... against a count over the trace" "$PY" "$HERE/memory_count.py" "$tmp/km.json" "$km"
    check "... worked by hand" "$PY" - "$tmp/km.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["runs"][0]["memory_timeline"]
want = [  # device, events, start, end, peak, at (us), step, reserved, allocated, freed, steps' peaks
    ("cuda:0", 6, 1024, 1024, 25600, 1100, 2, 4194304, 28672, 28672, [13312, 25600]),
    ("cuda:1", 2, 8192, 7168, 8192, 300, 1, 8388608, 1024, 2048, [8192, 7168])]
r = m["ranks"]
got = [(d["device"], d["events"], d["start_bytes"], d["end_bytes"], d["peak_bytes"], d["peak_at_us"], d["peak_step"],
        d["reserved_peak_bytes"], d["alloc_bytes"], d["freed_bytes"], [s["peak_bytes"] for s in d["steps"]])
       for d in r[0]["devices"]] if len(r) == 1 else None
bad = [] if got == want else ["%s, by hand %s" % (got, want)]
if len(r) == 1 and (r[0]["outside_events"], r[0]["host_events"]) != (2, 1):
    bad.append("outside, host: %s %s" % (r[0]["outside_events"], r[0]["host_events"]))
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "--window hta: the same timeline" replay "$tmp/kmh.json" "$km" --window hta --format json
    check "... every step, whatever the window" "$PY" -c 'import json,sys
a, b = (json.load(open(f))["runs"][0]["memory_timeline"] for f in sys.argv[1:])
sys.exit(0 if a == b else "    %s\n    %s" % (a, b))' "$tmp/km.json" "$tmp/kmh.json"
    check "text report" replay "$tmp/km.txt" "$km"
    check "text: cuda:0's row" grep -Eq \
        '^ +0 cuda:0 +6 +1024 +1024 +25600 +1100\.000 +2 +4194304 +28672 +28672$' "$tmp/km.txt"
    check "text: cuda:1's steps" has "$tmp/km.txt" "rank 0 cuda:1 peak per step: 1:8192 2:7168"
    check "markdown report" replay "$tmp/km.md" "$km" --format md
    check "markdown: cuda:1's row" has "$tmp/km.md" \
        "| 0 | cuda:1 | 2 | 8192 | 7168 | 8192 | 300.000 | 1 | 8388608 | 1024 | 2048 |"
    # a second rank, whose two cycles are two windows: the second a copy
    # 2000 us and two steps later
    mkdir -p "$tmp/km2"
    cp "$km" "$tmp/km2/rank0.json"
    sed 's/"rank": 0/"rank": 1/' "$km" >"$tmp/km2/rank1.a.json"
    "$PY" - "$tmp/km2/rank1.a.json" "$tmp/km2/rank1.b.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
for e in d["traceEvents"]:
    e["ts"] += 2000
    e["name"] = re.sub(r"ProfilerStep#(\d+)", lambda m: "ProfilerStep#%d" % (int(m.group(1)) + 2), e["name"])
    if "correlation" in e.get("args", {}):
        e["args"]["correlation"] += 10
json.dump(d, open(sys.argv[2], "w"))
PY
    check "two ranks, two cycles: replay" replay "$tmp/km2.json" "$tmp/km2" --format json
    check "... against a count over the trace" "$PY" "$HERE/memory_count.py" "$tmp/km2.json" "$tmp/km2/rank0.json" \
        "$tmp/km2/rank1.a.json" "$tmp/km2/rank1.b.json"
    check "... rank 1 by hand: 12 events on cuda:0, 4 steps, its peak in step 2" "$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))["runs"][0]["memory_timeline"]["ranks"][1]
d = r["devices"][0]
g = (r["rank"], d["events"], [s["step"] for s in d["steps"]], d["peak_step"], d["peak_at_us"], r["outside_events"])
sys.exit(0 if g == (1, 12, [1, 2, 3, 4], 2, 1100, 4) else "    %s" % (g,))' "$tmp/km2.json"
    check "two ranks: csv" replay "$tmp/km2.csv" "$tmp/km2" --format csv
    check "... the memory rows are the JSON's" "$PY" - "$tmp/km2.csv" "$tmp/km2.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = json.load(open(sys.argv[2]))["runs"][0]["memory_timeline"]
keys = ("events", "start_bytes", "end_bytes", "peak_bytes", "peak_at_us", "peak_step", "reserved_peak_bytes",
        "alloc_bytes", "freed_bytes")
want = [(str(r["rank"]), d["device"], [d[k] for k in keys],
         ";".join("%d:%d" % (s["step"], s["peak_bytes"]) for s in d["steps"]))
        for r in m["ranks"] for d in r["devices"]]
got = [x for x in rows if x["kernels"] == "memory"]
bad = [] if len(got) == len(want) == 4 else ["%d memory rows, JSON %d" % (len(got), len(want))]
for x, (rank, dev, w, steps) in zip(got, want):
    g = [None if x["memtl_" + k] == "" else float(x["memtl_" + k]) for k in keys]
    if (x["rank"], x["memtl_device"], x["memtl_step_peaks"]) != (rank, dev, steps) or any(
            (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-3) for a, b in zip(g, w)):
        bad.append("csv %s %s %s %s, json %s %s %s %s" % (x["rank"], x["memtl_device"], g, x["memtl_step_peaks"],
                                                          rank, dev, w, steps))
if any(x["kernels"] != "memory" and x["memtl_device"] for x in rows):
    bad.append("a row not of memory with memory columns")
sys.exit("    " + "\n    ".join(bad[:6]) if bad else 0)
PY
    # HTA's one test trace with [memory] events (26770 on cuda:1, one
    # written out of order), recounted
    local dfi=${DDPTOP_HTA_DIR:-/nonexistent}/tests/data/df_index_resolver/df_index_resolver.json.gz
    if [ -f "$dfi" ]; then
        gzip -dc "$dfi" >"$tmp/dfi.trace.json"
        check "HTA's df_index_resolver: replay" replay "$tmp/dfi.json" "$dfi" --format json
        check "... against a count over the trace" "$PY" "$HERE/memory_count.py" "$tmp/dfi.json" "$tmp/dfi.trace.json"
        check "... its allocations and frees add up from its start to its end" "$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))["runs"][0]["memory_timeline"]["ranks"][0]["devices"][0]
sys.exit(0 if d["start_bytes"] + d["alloc_bytes"] - d["freed_bytes"] == d["end_bytes"] and d["events"] == 26770
         else "    %s" % d)' "$tmp/dfi.json"
    fi
    check "a trace without [memory] events: replay" replay "$tmp/none.json" "$FIX/kineto_idle.json" --format json
    check "... null" run_key "$tmp/none.json" memory_timeline null
}

# critpath_is JSON RANK STEP CPU COMPUTE COMM MEMORY WAIT OPS LAUNCHES TOP:
# rank RANK's critical path, by hand (us; TOP: "name:us,name:us...")
critpath_is() {
    "$PY" - "$@" <<'PY'
import json, sys
f, rank, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kinds = dict(zip(("cpu", "compute", "comm", "memory", "wait"), map(float, sys.argv[4:9])))
ops, launches, top = int(sys.argv[9]), int(sys.argv[10]), sys.argv[11]
r = {x["rank"]: x for x in json.load(open(f))["runs"][0]["critical_path"]["ranks"]}[rank]
got = (r["step"], r["kind_us"], r["ops"], r["launches"], ",".join("%s:%g" % (t["name"], t["path_us"]) for t in r["top"]))
want = (step, kinds, ops, launches, top)
sys.exit(0 if got == want and r["length_us"] == sum(kinds.values()) else "    got  %s\n    want %s" % (got, want))
PY
}

case_critpath() {
    check "critpath.json: replay" replay "$tmp/cp.json" "$FIX/critpath.json" --format json
    check "... by hand: the all-reduce launched late, the path through thread 1" critpath_is "$tmp/cp.json" 0 1 \
        420 0 400 0 280 4 1 "ncclKernel_AllReduce_Sum_f32:400,aten::linear:290,aten::relu:80,aten::sum:50"
    check "... step 1000 us, the path 1100, 100 past it; 4 CPU and 4 device ops" json "$tmp/cp.json" '
r = d["runs"][0]["critical_path"]["ranks"][0]
g = (r["valid"], r["note"], r["steps"], r["step_us"], r["length_us"], r["past_step_us"], r["cpu_ops"], r["device_ops"],
     [t["start_us"] for t in r["top"]], [t["kind"] for t in r["top"]])
sys.exit(0 if g == (True, None, 3, 1000, 1100, 100, 4, 4, [700, 10, 320, 600], ["comm", "cpu", "cpu", "cpu"])
         else "    %s" % (g,))'
    check "... against a count over the trace" "$PY" "$HERE/critpath_count.py" "$tmp/cp.json" "$FIX/critpath.json"
    check "critpath_stream.json: replay" replay "$tmp/cs.json" "$FIX/critpath_stream.json" --format json
    check "... by hand: relu_k ends after the launch, the path back along the stream" critpath_is "$tmp/cs.json" 0 1 \
        90 530 400 0 80 4 1 "ncclKernel_AllReduce_Sum_f32:400,gemm_a:350,relu_k:180,aten::linear:90"
    check "... against a count over the trace" "$PY" "$HERE/critpath_count.py" "$tmp/cs.json" "$FIX/critpath_stream.json"
    check "critpath.json: text" replay "$tmp/cp.txt" "$FIX/critpath.json"
    check "... the row" has "$tmp/cp.txt" \
        "   0      1     1000.000     1100.000    100.000  38.18     0.00  36.36    0.00  25.45      4        1"
    check "... the top" has "$tmp/cp.txt" \
        "rank 0 path top: ncclKernel_AllReduce_Sum_f32 (comm) 400.000 @700.000; aten::linear (cpu) 290.000 @10.000"
    check "critpath.json: markdown" replay "$tmp/cp.md" "$FIX/critpath.json" --format md
    check "... the row" has "$tmp/cp.md" "| 0 | 1 | 1000.000 | 1100.000 | 100.000 | 38.18 | 0.00 | 36.36 | 0.00 | 25.45 | 4 | 1 |"
    check "critpath.json and a gloo CPU trace: csv" replay "$tmp/cp.csv" "$FIX/critpath.json" \
        "$FIX/kineto_gloo_cpu.json" --format csv
    check "... json" replay "$tmp/cpg.json" "$FIX/critpath.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... the critical path rows are the JSON's" "$PY" - "$tmp/cp.csv" "$tmp/cpg.json" <<'PY'
import csv, json, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernels"] == "critical_path"]
want = []
for run, r in enumerate(json.load(open(sys.argv[2]))["runs"]):
    for q in (r["critical_path"] or {"ranks": []})["ranks"]:
        f = lambda v: "" if v is None else "%.3f" % v
        want.append([str(run), str(q["rank"]), str(q["step"]), f(q["step_us"]), f(q["length_us"])] +
                    [f(q["kind_us"][k]) for k in ("cpu", "compute", "comm", "memory", "wait")] +
                    ["" if q["ops"] is None else str(q["ops"]), "" if q["launches"] is None else str(q["launches"]),
                     ";".join("%s:%.3f" % (t["name"], t["path_us"]) for t in q["top"]), q["note"] or ""])
cols = ("step", "step_us", "length_us", "cpu_us", "compute_us", "comm_us", "memory_us", "wait_us", "ops", "launches",
        "top", "note")
got = [[x["run"], x["rank"]] + [x["critpath_" + c] for c in cols] for x in rows]
bad = [] if len(want) == 2 and got == want else ["csv %s" % got, "json %s" % want]
if any(x["kernels"] != "critical_path" and x["critpath_step"] for x in csv.DictReader(open(sys.argv[1]))):
    bad.append("a row not of the critical path with its columns")
sys.exit("    " + "\n    ".join(bad) if bad else 0)
PY
    check "a gloo CPU trace: replay" replay "$tmp/gl.json" "$FIX/kineto_gloo_cpu.json" --format json
    check "... no path: a note, no figure" json "$tmp/gl.json" '
r = d["runs"][0]["critical_path"]["ranks"][0]
g = (r["valid"], "CPU-only" in (r["note"] or ""), r["length_us"], r["kind_us"]["cpu"], r["top"])
sys.exit(0 if g == (False, True, None, None, []) else "    %s" % (g,))'
    check "... against a count over the trace" "$PY" "$HERE/critpath_count.py" "$tmp/gl.json" "$FIX/kineto_gloo_cpu.json"
    check "... the text says so" replay "$tmp/gl.txt" "$FIX/kineto_gloo_cpu.json"
    check "... once" has "$tmp/gl.txt" "no critical path: no device op launched in the step"
    check "... and prints no table" lacks "$tmp/gl.txt" "path us"
    check "ddptop's own trace: replay" replay "$tmp/own.json" "$FIX/gpu_lenet_ddp.json.gz" --format json
    check "... null" run_key "$tmp/own.json" critical_path null
    local tf=${DDPTOP_HTA_DIR:-/nonexistent}/tests/data/trace_filter f
    if [ -d "$tf" ]; then
        check "HTA's trace_filter: replay" replay "$tmp/tf.json" "$tf" --format json
        check "... both ranks against a count over the traces" "$PY" "$HERE/critpath_count.py" "$tmp/tf.json" \
            "$tf/sampled_rank-0.json.gz" "$tf/sampled_rank-1.json.gz"
    fi
    # and HTA's one-rank GPU traces with steps: ns time stamps at the
    # epoch's, and a step whose device work runs past its end
    for f in ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz negative_queue_length_values_check/rank0.json.gz; do
        f=${DDPTOP_HTA_DIR:-/nonexistent}/tests/data/$f
        [ -f "$f" ] || continue
        check "HTA's $(basename "$(dirname "$f")"): replay" replay "$tmp/h1.json" "$f" --format json
        check "... against a count over the trace" "$PY" "$HERE/critpath_count.py" "$tmp/h1.json" "$f"
    done
}

hta_data() {
    local d=${DDPTOP_HTA_DIR:-}
    if [ -z "$d" ] || [ ! -d "$d/tests/data" ]; then
        echo "SKIP: DDPTOP_HTA_DIR names no HolisticTraceAnalysis checkout with tests/data (git clone" \
            "https://github.com/facebookresearch/HolisticTraceAnalysis)" >&2
        exit 77
    fi
    echo "$d/tests/data"
}

case_hta() {
    local data
    data=$(hta_data) || exit 77
    # --window hta against HTA's recorded temporal breakdown, every trace present
    local seen=0
    while IFS=$'\t' read -r name rk idle comp noncomp; do
        case $name in '#'* | '') continue ;; esac
        local dir=$data/$name
        case $name in fixtures/*) dir=$tmp/$name ;; esac
        [ -d "$dir" ] || { echo "absent here: $name"; continue; }
        local out=$tmp/hta.$(echo "$name" | tr / _).json
        [ -s "$out" ] || replay "$out" "$dir" --window hta --format json || { bad "$name: replay failed"; continue; }
        if "$PY" - "$out" "$rk" "$idle" "$comp" "$noncomp" <<'PY'; then ok "$name rank $rk: --window hta is HTA's"; else bad "$name rank $rk: --window hta is not HTA's"; fi
import json, sys
f, rank, idle, comp, noncomp = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:6])
rows = {r["rank"]: r for r in json.load(open(f))["per_rank"]}
r = rows.get(rank)
if r is None:
    sys.exit("    no rank %d in %s" % (rank, sorted(rows)))
got = (r["idle_pct"], r["compute_pct"], r["comm_pct"] + r["data_pct"])
if r["view"] != "gpu" or max(abs(a - b) for a, b in zip(got, (idle, comp, noncomp))) > 0.1:
    sys.exit("    %s: idle, compute, non-compute %s, HTA %s" % (r["view"], ["%.3f" % x for x in got], [idle, comp, noncomp]))
PY
        seen=$((seen + 1))
    done < <(grep -v '^fixtures/' "$TSV")
    [ "$seen" -gt 0 ] || bad "none of HTA's traces of the .tsv is in $data"
    # and HTA's overlap of computation and communication (comm_comp_overlap.tsv)
    while IFS=$'\t' read -r name rk ovl; do
        case $name in '#'* | '') continue ;; esac
        local out=$tmp/hta.$(echo "$name" | tr / _).json
        [ -s "$out" ] || continue
        check "$name rank $rk: --window hta's overlap is HTA's ($ovl)" rank "$out" "$rk" overlap_pct "$ovl" 0.1
    done <"$OVL"
    if [ -s "$tmp/hta.trace_filter.json" ]; then
        # the two windows cover different steps: ddptop's overlap is its own
        check "trace_filter, default window" replay "$tmp/tf.json" "$data/trace_filter" --format json
        check "trace_filter rank 0: ddptop's window, another overlap than HTA's" "$PY" -c 'import json,sys
a, b = ({r["rank"]: r["overlap_pct"] for r in json.load(open(f))["per_rank"]} for f in sys.argv[1:3])
sys.exit(0 if abs(a[0] - b[0]) > 1 else "rank 0: %s and %s" % (a[0], b[0]))' "$tmp/tf.json" "$tmp/hta.trace_filter.json"
    fi
    # amd_trace: every kernel launched in its first step, the second a
    # stub: the default window falls back to the whole trace
    local amd=$data/amd_trace
    if [ -d "$amd" ]; then
        check "amd_trace" replay "$tmp/amd.json" "$amd" --format json
        check "amd_trace: the whole trace" rank "$tmp/amd.json" 0 window whole
        check "amd_trace: its figures, counted over its JSON" "$PY" - "$amd" "$tmp/amd.json" <<'PY'
import glob, gzip, json, sys
ev = json.load(gzip.open(glob.glob(sys.argv[1] + "/*.json.gz")[0]))["traceEvents"]
dev = [(e["ts"], e["ts"] + e["dur"], e["cat"]) for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
def union(iv):
    tot, cur = 0, None
    for a, b in sorted(iv):
        if cur and a <= cur[1]:
            cur[1] = max(cur[1], b)
        else:
            tot += cur[1] - cur[0] if cur else 0
            cur = [a, b]
    return tot + (cur[1] - cur[0] if cur else 0)
wall = max(b for a, b, c in dev) - min(a for a, b, c in dev)
comp = union([(a, b) for a, b, c in dev if c == "kernel"])
busy = union([(a, b) for a, b, c in dev])
steps = [e["dur"] for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
r = json.load(open(sys.argv[2]))["per_rank"][0]
want = {"compute_pct": 100 * comp / wall, "data_pct": 100 * (busy - comp) / wall, "idle_pct": 100 * (wall - busy) / wall,
        "ms_per_step": sum(steps) / len(steps) / 1000}
bad = {k: (r[k], v) for k, v in want.items() if abs(r[k] - v) > 1e-3}
sys.exit("    got, counted: %s" % bad if bad else 0)
PY
        check "amd_trace: the report says so" replay "$tmp/amd.txt" "$amd"
        check "... in words" has "$tmp/amd.txt" "no device work in the steps --window ddptop covers"
    fi
    local ms=$data/mtia_trace_single_rank
    if [ -d "$ms" ]; then
        check "mtia_trace_single_rank" replay "$tmp/ms.json" "$ms" --format json
        check "mtia: the device view" rank "$tmp/ms.json" 0 view gpu
        check "mtia: its one step covered: HTA's compute (54.81)" rank "$tmp/ms.json" 0 compute_pct 54.81 0.1
    fi
    local cp=$data/cupti_profiler
    if [ -d "$cp" ]; then
        check "cupti_profiler" replay "$tmp/cp.json" "$cp" --format json
        check "cupti_profiler: the device view" rank "$tmp/cp.json" 0 view gpu
        check "cupti_profiler: its range-profiled kernels, counted over its JSON" "$PY" - "$cp" "$tmp/cp.json" <<'PY'
import glob, gzip, json, sys
ev = json.load(gzip.open(glob.glob(sys.argv[1] + "/*.json.gz")[0]))["traceEvents"]
iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_profiler_range")
busy, cur = 0, None
for a, b in iv:
    if cur and a <= cur[1]:
        cur[1] = max(cur[1], b)
    else:
        busy += cur[1] - cur[0] if cur else 0
        cur = [a, b]
busy += cur[1] - cur[0]
wall = max(b for a, b in iv) - min(a for a, b in iv)
r = json.load(open(sys.argv[2]))["per_rank"][0]
if abs(r["compute_pct"] - 100 * busy / wall) > 1e-3 or abs(r["idle_pct"] - 100 * (wall - busy) / wall) > 1e-3:
    sys.exit("    compute %s idle %s, counted %s %s" % (r["compute_pct"], r["idle_pct"], 100 * busy / wall, 100 * (wall - busy) / wall))
PY
    fi
    local li=$data/large_integer_trace
    if [ -d "$li" ]; then
        check "large_integer_trace" replay "$tmp/li.json" "$li" --format json
        check "large_integer_trace: rank 70 from its name" rank "$tmp/li.json" 70 rank_from name
    fi
    local et=$data/execution_trace
    if [ -d "$et" ]; then
        check "execution_trace's folder" replay "$tmp/et.json" "$et" --format json
        check "... its execution trace left out" "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["replay"]
sys.exit(0 if r["left_out_count"] == 1 and r["left_out"][0].endswith("_et.json.gz") else "left_out: %s" % r)' "$tmp/et.json"
    fi
    local tf=$data/trace_filter
    if [ -d "$tf" ]; then
        check "trace_filter" replay "$tmp/tf.txt" "$tf"
        check "trace_filter: 2 of 128" has "$tmp/tf.txt" " 2 of 128 "
    fi
    for big in vision_transformer h100 torchtitan_h100; do
        [ -n "$(ls "$data/$big" 2>/dev/null)" ] || echo "absent here: $big (kept out of the checkout: its files are large)"
    done
}

# hta_still FLAG TSV WHAT NAME..: HTA's own output now (hta_breakdown.py
# FLAG) on each trace NAME (fixtures/X: the fixture X.json, or the folder
# X of them; else HTA's test data in $data) is what TSV records
hta_still() {
    local flag=$1 tsv=$2 what=$3 name dir
    shift 3
    for name in "$@"; do
        case $name in
        fixtures/*)
            dir=$tmp/$name
            mkdir -p "$dir"
            if [ -d "$FIX/${name#fixtures/}" ]; then cp "$FIX/${name#fixtures/}"/*.json "$dir/"; else cp "$FIX/${name#fixtures/}.json" "$dir/"; fi
            ;;
        *) dir=$data/$name ;;
        esac
        [ -d "$dir" ] || { echo "absent here: $name"; continue; }
        PYTHONPATH=$(dirname "$(dirname "$data")") "$PY" "$HERE/hta_breakdown.py" "$flag" "$dir" "$name" \
            >"$tmp/live" 2>"$tmp/live.err"
        if diff <(grep -P "^\Q$name\E\t" "$tsv") "$tmp/live" >"$tmp/diff"; then
            ok "$name: HTA's $what are what $(basename "$tsv") records"
        else
            bad "$name: HTA's $what now differ from $(basename "$tsv"): $(cat "$tmp/diff" "$tmp/live.err" | head -5)"
        fi
    done
}

case_hta_live() {
    local data
    data=$(hta_data) || exit 77
    PYTHONPATH=$(dirname "$(dirname "$data")") "$PY" "$HERE/hta_breakdown.py" "$FIX" x >/dev/null 2>"$tmp/imp.err"
    if [ $? -eq 77 ]; then
        echo "SKIP: $(cat "$tmp/imp.err") (apt install python3-pandas python3-plotly python3-networkx python3-ijson)"
        exit 77
    fi
    local name dir
    for name in fixtures/kineto_window fixtures/kineto_window_stub fixtures/kineto_mtia fixtures/kineto_ns amd_trace \
        trace_filter; do
        case $name in
        fixtures/*) dir=$tmp/$name; mkdir -p "$dir"; cp "$FIX/${name#fixtures/}.json" "$dir/" ;;
        *) dir=$data/$name ;;
        esac
        [ -d "$dir" ] || { echo "absent here: $name"; continue; }
        PYTHONPATH=$(dirname "$(dirname "$data")") "$PY" "$HERE/hta_breakdown.py" "$dir" "$name" >"$tmp/live" 2>"$tmp/live.err"
        if diff <(grep -P "^\Q$name\E\t" "$TSV") "$tmp/live" >"$tmp/diff"; then
            ok "$name: HTA gives what the .tsv records"
        else
            bad "$name: HTA now gives other values than the .tsv: $(cat "$tmp/diff" "$tmp/live.err" | head -5)"
        fi
        replay "$tmp/l.json" "$dir" --window hta --format json || { bad "$name: replay failed"; continue; }
        if "$PY" - "$tmp/l.json" "$tmp/live" <<'PY'; then ok "$name: --window hta is HTA's now"; else bad "$name: --window hta is not HTA's now"; fi
import json, sys
rows = {r["rank"]: r for r in json.load(open(sys.argv[1]))["per_rank"]}
for line in open(sys.argv[2]):
    name, rank, idle, comp, noncomp = line.split("\t")
    r = rows[int(rank)]
    got = (r["idle_pct"], r["compute_pct"], r["comm_pct"] + r["data_pct"])
    if max(abs(a - float(b)) for a, b in zip(got, (idle, comp, noncomp))) > 0.1:
        sys.exit("    rank %s: %s, HTA %s" % (rank, got, (idle, comp, noncomp)))
PY
    done
    # the other analyses recorded are still HTA's
    hta_still --queue "$QTSV" "queue lengths" fixtures/kineto_queue trace_filter
    hta_still --launch "$LTSV" "launch statistics" fixtures/kineto_launch trace_filter
    hta_still --idle "$ITSV" "idle time per stream" fixtures/kineto_idle trace_filter
    hta_still --straggler "$STSV" "stragglers" fixtures/stragglers3 trace_filter
}

case_whatif() {
    local w=$FIX/whatif_args
    check "whatif_args: replay over --link" replay "$tmp/w.json" "$w" --predict --link 1GB/s,50us \
        --predict-ranks 2,4,8 --format json
    check "... worked by hand" "$PY" - "$tmp/w.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["runs"][0]["job_prediction"]
got = [p["step_ms"], p["compute_ms"], p["comm_ms"], p["exposed_comm_ms"], p["hidden_comm_ms"], p["bytes_per_step"]] + [
    [r["ranks"], r["step_ms"], r["comm_ms"], r["exposed_comm_ms"]] for r in p["rows"]]
want = [1.0, 0.7, 0.25, 0.16, 0.09, 1e6, [2, 1.85, 1.1, 1.01], [4, 2.55, 1.8, 1.71], [8, 3.2, 2.45, 2.36]]
flat = lambda v: [y for x in v for y in (x if isinstance(x, list) else [x])]
if len(got) != len(want) or any(abs(a - b) > 1e-9 * max(1, abs(b)) for a, b in zip(flat(got), flat(want))) \
        or not p["sizes"].startswith("the trace's args"):
    sys.exit("    %s %s" % (p["sizes"], got))
PY
    # a fit written by hand, for 4 ranks only: 100 us + 1 ns a byte
    cat >"$tmp/model.json" <<'JSON'
{"fits": [{"backend": "gloo", "algo": "ring", "ranks": 4, "collective": "allreduce", "alpha_us": 100,
           "beta_us_per_byte": 0.001, "r2": 1}]}
JSON
    check "whatif_args: replay over a fit" env DDPTOP_COMM_MODEL="$tmp/model.json" "$BIN" --batch --replay "$w" \
        --predict --predict-ranks 2,4,8 --format json --output "$tmp/wf.json"
    check "... 4 ranks from the fit, 2 and 8 n/a" "$PY" - "$tmp/wf.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["runs"][0]["job_prediction"]
rows = {r["ranks"]: r for r in p["rows"]}
ok = abs(rows[4]["step_ms"] - 1.85) < 1e-9 and abs(rows[4]["comm_ms"] - 1.1) < 1e-9 and \
    rows[2]["step_ms"] is None and rows[8]["step_ms"] is None and "gloo, ring" in p["link"]
if not ok:
    sys.exit("    %s" % p)
PY
    mkdir -p "$tmp/wdir" && cp "$w"/rank0.json "$w"/rank1.json "$tmp/wdir/"
    check "whatif_args: followed" "$BIN" --batch --follow "$tmp/wdir" --idle-exit 0.5 --predict --link 1GB/s,50us \
        --predict-ranks 2,4,8 --format json --output "$tmp/wfo.json"
    check "... the replay's prediction" "$PY" - "$tmp/w.json" "$tmp/wfo.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["runs"][0]["job_prediction"] for f in sys.argv[1:3])
if a != b:
    sys.exit("    %s\n    %s" % (a, b))
PY
    check "text report" replay "$tmp/w.txt" "$w" --predict --link 1GB/s,50us --predict-ranks 2,4,8
    check "text: the 4-rank row" grep -Eq '^ +4 +2\.550 +1\.800 +1\.710 ' "$tmp/w.txt"
    check "text: the sizes' source" grep -q "sizes from the trace's args" "$tmp/w.txt"
}

case $CASE in
window | folder | devices | ranks | kernels | memcpy | queue | launch | idle | straggler | memory | critpath | hta | hta_live | whatif)
    "case_$CASE"
    ;;
*)
    echo "usage: $0 /path/to/ddptop window|folder|devices|ranks|kernels|memcpy|queue|launch|idle|straggler|memory|critpath|hta|hta_live|whatif" >&2
    exit 2
    ;;
esac
checks_done
