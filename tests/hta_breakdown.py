#!/usr/bin/python3
"""hta_breakdown.py - HTA's temporal breakdown of a folder of traces, one
line per rank, as tests/fixtures/hta/temporal_breakdown.tsv records it;
with --overlap, HTA's overlap of computation and communication instead
(comm_comp_overlap.tsv); with --kernels, HTA's kernel breakdown
(kernel_breakdown.tsv); with --memcpy, HTA's memory bandwidth summary
(memcpy_bandwidth.tsv); with --queue, HTA's queue length summary and time
blocked on a full queue (queue_length.tsv); with --launch, HTA's CUDA
kernel launch statistics (launch_stats.tsv); with --idle, HTA's idle time
breakdown per stream (idle_time.tsv); with --straggler, HTA's straggler
analysis of late-starting collectives (stragglers.tsv).

Runs HolisticTraceAnalysis itself (Meta's trace analysis library, not
ddptop's code): TraceAnalysis(trace_dir=DIR).get_temporal_breakdown(),
with HTA's defaults (its last ProfilerStep left out). HTA must be on
PYTHONPATH, with Debian's python3-pandas, python3-plotly, python3-networkx
and python3-ijson. test_pytorch_traces.sh (hta_live) runs it to check
that the recorded values are still HTA's.

Usage: PYTHONPATH=HTA_CHECKOUT tests/hta_breakdown.py [--overlap|--kernels|--memcpy|--queue|--launch|--idle|
           --straggler]
           DIR [NAME]
Prints: NAME RANK IDLE_PCT COMPUTE_PCT NON_COMPUTE_PCT (NAME: DIR unless
given); with --overlap, NAME RANK OVERLAP_PCT (get_comm_comp_overlap);
with --kernels, get_gpu_kernel_breakdown(visualize=False) with its
defaults (num_kernels 10, duration_ratio 0.8, memory kernels included),
run on each rank alone (RANK) and on all (RANK "all", types only):
  NAME RANK type TYPE SUM_US PCT     (its first table: a kernel type, or
                                      types overlapping, lower case)
  NAME RANK kernel TYPE KERNEL SUM_US COUNT MEAN_US   (its second: the top
      kernels and "others"; COUNT and MEAN_US counted here over the device
      records HTA read (stream not -1, HTA's type), for HTA's own mean is
      the sum once it folds kernels into others; "-" for others' mean)
With --memcpy, TraceCounters.get_memory_bw_summary(t, ranks=every rank):
  NAME RANK KIND COUNT MEAN MIN MAX   (the summary of the running sum of
      the copies' bandwidths of a kind, in GB/s, its zero points left out)
With --queue, TraceCounters.get_queue_length_summary(t, ranks=every rank)
and get_time_spent_blocked_on_full_queue (its default max_queue_length,
1024) on get_queue_length_time_series of every rank:
  NAME RANK STREAM COUNT MEAN STD MIN P25 P50 P75 MAX   (the summary of
      the stream's queue lengths, one per point of its time series; STD
      "-" where pandas gives none, one point)
  NAME RANK blocked STREAM US   (HTA's one row per rank with time at the
      full queue: the stream and its time there, us)
With --launch, get_cuda_kernel_launch_stats(ranks=[RANK], visualize=False)
with its defaults (runtime_cutoff 50 us, launch_delay_cutoff 100 us, memory
events included), its table of launches summarised here, per rank:
  NAME RANK COUNT CPU_MEAN CPU_P50 CPU_MAX GPU_MEAN GPU_P50 GPU_MAX
      DELAY_MEAN DELAY_P50 DELAY_MAX SHORT CPU_LONG DELAY_LONG
  (us; the columns cpu_duration, gpu_duration and launch_delay of its rows:
  mean, median (pandas': the two middle values' mean for an even count)
  and max; and the rows its plots show: SHORT gpu_duration < cpu_duration
  with cpu_duration <= 50, CPU_LONG cpu_duration > 50, DELAY_LONG
  launch_delay > 100)
With --idle, get_idle_time_breakdown(consecutive_kernel_delay=30 (its
default: HTA's time stamps are microseconds), rank=RANK, visualize=False,
show_idle_interval_stats=True) on each rank, one row per stream and
category HTA gives:
  NAME RANK STREAM CATEGORY IDLE_US RATIO GAPS   (CATEGORY host_wait,
      kernel_wait or other; IDLE_US and RATIO as HTA rounds them, to two
      places; GAPS the count of its interval statistics, 0 where it has
      none)
With --straggler, what get_potential_stragglers() (its defaults: every
profiler step, 2 candidates) computes on the way, from HTA's own
functions in hta/analyzers/straggler.py over the same frame: the kernel
its metric reads (the last long NCCL kernel of the (stream, name) whose
duration differs most across ranks), and its per-rank counts of steps
among the k latest starts, for k = 1 (LAST) and k = 2 (LATE, HTA's);
LEAD_US sums, over the steps a rank starts it last (ties: each), its start less the latest start of the others (from HTA's rows):
  NAME kernel STREAM KERNEL_NAME
  NAME RANK LAST LATE LEAD_US
  NAME stragglers RANK,RANK   (HTA's answer; its order among equal counts
                               is pandas' unstable sort's)
Exit status 77 when HTA or its packages cannot be imported.
"""
import logging
import sys
import warnings


def print_kernels(ta, name):
    from hta.utils.utils import get_kernel_type
    sym = ta.t.symbol_table.get_sym_table()
    traces = dict(ta.t.traces)

    def types(rank):
        df, _ = ta.get_gpu_kernel_breakdown(visualize=False)
        for _, row in df.iterrows():
            print("%s\t%s\ttype\t%s\t%d\t%.1f" % (name, rank, row["kernel_type"].lower(), row["sum"], row["percentage"]))

    for rank in sorted(traces):
        ta.t.traces = {rank: traces[rank]}
        types(rank)
        _, top = ta.get_gpu_kernel_breakdown(visualize=False)
        dev = traces[rank][traces[rank]["stream"].ne(-1)]
        names = dev["name"].map(lambda x: sym[x])
        kinds = names.map(get_kernel_type)
        stats = dev["dur"].groupby([kinds, names]).agg(["count", "mean"])
        for _, row in top.iterrows():
            kind = row["kernel_type"]
            if row["name"] == "others":
                shown = set(top[top["kernel_type"].eq(kind)]["name"])
                rest = stats.loc[kind]
                count, mean = rest[~rest.index.isin(shown)]["count"].sum(), "-"
            else:
                count, mean = stats.loc[(kind, row["name"]), "count"], "%.3f" % stats.loc[(kind, row["name"]), "mean"]
            print("%s\t%d\tkernel\t%s\t%s\t%d\t%d\t%s" % (name, rank, kind.lower(), row["name"], row["sum (us)"], count, mean))
    ta.t.traces = traces
    types("all")


def print_memcpy(ta, name):
    from hta.analyzers.trace_counters import TraceCounters
    df = TraceCounters.get_memory_bw_summary(ta.t, ranks=sorted(ta.t.traces))
    if df is None:
        return
    for (rank, kind), row in df["memory_bw_gbps"].iterrows():
        print("%s\t%d\t%s\t%d\t%.6f\t%.6f\t%.6f" % (name, rank, kind, row["count"], row["mean"], row["min"],
                                                 row["max"]))


def print_queue(ta, name):
    from hta.analyzers.trace_counters import TraceCounters
    ranks = sorted(ta.t.traces)
    df = TraceCounters.get_queue_length_summary(ta.t, ranks=ranks)
    if df is None:
        return
    for (rank, stream), row in df["queue_length"].iterrows():
        std = "-" if row["std"] != row["std"] else "%.6f" % row["std"]
        print("%s\t%d\t%d\t%d\t%.6f\t%s\t%d\t%.6f\t%.6f\t%.6f\t%d" % (
            name, rank, stream, row["count"], row["mean"], std, row["min"], row["25%"], row["50%"], row["75%"],
            row["max"]))
    series = TraceCounters.get_queue_length_time_series(ta.t, ranks)
    full = ta.get_time_spent_blocked_on_full_queue(series)
    for _, row in (full.iterrows() if full is not None else []):
        print("%s\t%d\tblocked\t%d\t%d" % (name, row["rank"], row["stream"], row["duration_at_max_queue_length"]))
def print_launch(ta, name):
    for rank in sorted(ta.t.traces):
        df = ta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
        if df.empty:
            continue
        cols = []
        for c in ("cpu_duration", "gpu_duration", "launch_delay"):
            cols += [df[c].mean(), df[c].median(), df[c].max()]
        short = ((df["cpu_duration"] <= 50) & (df["gpu_duration"] < df["cpu_duration"])).sum()
        print("%s\t%d\t%d\t%s\t%d\t%d\t%d" % (name, rank, len(df), "\t".join("%.3f" % v for v in cols), short,
                                              (df["cpu_duration"] > 50).sum(), (df["launch_delay"] > 100).sum()))


def print_idle(ta, name):
    for rank in sorted(ta.t.traces):
        df, stats = ta.get_idle_time_breakdown(ranks=[rank], visualize=False, show_idle_interval_stats=True,
                                               consecutive_kernel_delay=30)
        gaps = {}
        for cat, row in (stats.iterrows() if stats is not None else []):
            gaps[(int(row["stream"]), cat)] = int(row["count"])
        for _, row in df.iterrows():
            stream, cat = int(row["stream"]), row["idle_category"]
            print("%s\t%d\t%d\t%s\t%.2f\t%.2f\t%d" % (name, rank, stream, cat, row["idle_time"],
                                                     row["idle_time_ratio"], gaps.get((stream, cat), 0)))


def print_straggler(ta, name):
    import pandas as pd
    from hta.analyzers import straggler as hs
    t = ta.t
    steps = ta.get_profiler_steps()
    ranks = list(t.get_all_traces().keys())
    df = pd.concat([t.get_trace(r) for r in ranks], axis=0, keys=ranks, names=["rank", "idx"]).reset_index()
    df = df.loc[df["iteration"].isin(steps)]
    metric, col = hs._compute_normalized_start_time_of_significant_comm_kernels(df, t.symbol_table)
    sym = t.symbol_table.get_sym_table()
    print("%s\tkernel\t%d\t%s" % (name, metric["stream"].iloc[0], sym[metric["name"].iloc[0]]))
    last = hs._get_top_k_stragglers_with_metric(metric, col, n_stragglers=1)
    late = hs._get_top_k_stragglers_with_metric(metric, col, n_stragglers=2)
    lead = {r: 0 for r in last.index}
    for _, g in metric.groupby("iteration"):
        ts = dict(zip(g["rank"], g["ts"]))
        if len(ts) < 2:
            continue
        top = max(ts.values())
        for r, v in ts.items():
            if v == top:
                lead[r] += v - max(w for q, w in ts.items() if q != r)
    for r in sorted(last.index):
        print("%s\t%d\t%d\t%d\t%d" % (name, r, last[r], late[r], lead[r]))
    print("%s\tstragglers\t%s" % (name, ",".join(str(r) for r in ta.get_potential_stragglers())))


def main():
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as e:  # (HTA, pandas, plotly, networkx)
        print("cannot import HTA: %s" % e, file=sys.stderr)
        sys.exit(77)
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    args = sys.argv[1:]
    overlap = args[:1] == ["--overlap"]
    kernels = args[:1] == ["--kernels"]
    memcpy = args[:1] == ["--memcpy"]
    queue = args[:1] == ["--queue"]
    launch = args[:1] == ["--launch"]
    idle = args[:1] == ["--idle"]
    straggler = args[:1] == ["--straggler"]
    args = args[1:] if overlap or kernels or memcpy or queue or launch or idle or straggler else args
    folder = args[0]
    name = args[1] if len(args) > 1 else folder
    ta = TraceAnalysis(trace_dir=folder)
    if overlap:
        for _, row in ta.get_comm_comp_overlap(visualize=False).iterrows():
            print("%s\t%d\t%.2f" % (name, int(row["rank"]), row["comp_comm_overlap_pctg"]))
        return
    if kernels:
        print_kernels(ta, name)
        return
    if memcpy:
        print_memcpy(ta, name)
        return
    if queue:
        print_queue(ta, name)
        return
    if launch:
        print_launch(ta, name)
        return
    if idle:
        print_idle(ta, name)
        return
    if straggler:
        print_straggler(ta, name)
        return
    df = ta.get_temporal_breakdown(visualize=False)
    for _, row in df.iterrows():
        print("%s\t%d\t%.2f\t%.2f\t%.2f" % (name, int(row["rank"]), row["idle_time_pctg"], row["compute_time_pctg"],
                                           row["non_compute_time_pctg"]))


if __name__ == "__main__":
    main()
