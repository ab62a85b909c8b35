#!/usr/bin/python3
"""hta_breakdown.py - HTA's temporal breakdown of a folder of traces, one
line per rank, as tests/fixtures/hta/temporal_breakdown.tsv records it;
with --overlap, HTA's overlap of computation and communication instead
(comm_comp_overlap.tsv).

Runs HolisticTraceAnalysis itself (Meta's trace analysis library, not
ddptop's code): TraceAnalysis(trace_dir=DIR).get_temporal_breakdown(),
with HTA's defaults (its last ProfilerStep left out). HTA must be on
PYTHONPATH, with Debian's python3-pandas, python3-plotly, python3-networkx
and python3-ijson. test_pytorch_traces.sh (hta_live) runs it to check
that the recorded values are still HTA's.

Usage: PYTHONPATH=HTA_CHECKOUT tests/hta_breakdown.py [--overlap] DIR [NAME]
Prints: NAME RANK IDLE_PCT COMPUTE_PCT NON_COMPUTE_PCT (NAME: DIR unless
given); with --overlap, NAME RANK OVERLAP_PCT (get_comm_comp_overlap).
Exit status 77 when HTA or its packages cannot be imported.
"""
import logging
import sys
import warnings


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
    args = args[1:] if overlap else args
    folder = args[0]
    name = args[1] if len(args) > 1 else folder
    ta = TraceAnalysis(trace_dir=folder)
    if overlap:
        for _, row in ta.get_comm_comp_overlap(visualize=False).iterrows():
            print("%s\t%d\t%.2f" % (name, int(row["rank"]), row["comp_comm_overlap_pctg"]))
        return
    df = ta.get_temporal_breakdown(visualize=False)
    for _, row in df.iterrows():
        print("%s\t%d\t%.2f\t%.2f\t%.2f" % (name, int(row["rank"]), row["idle_time_pctg"], row["compute_time_pctg"],
                                           row["non_compute_time_pctg"]))


if __name__ == "__main__":
    main()
