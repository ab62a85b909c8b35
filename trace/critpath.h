/* critpath.h - the critical path of one step of a foreign (PyTorch
 * profiler) trace's rank: the chain of CPU ops, launches and device ops
 * that the step's end waited on, as HTA's critical path analysis
 * (hta/analyzers/critical_path_analysis.py) reads a trace, in a simpler
 * model said here in full.
 *
 * The step: the rank's ProfilerStep of median duration (its steps, every
 * window's, sorted by duration, then step number; the lower middle one),
 * [S0, S1) on the CPU's clock; --follow makes every step's path as a
 * cycle lands and takes the same median over all (critpath_each_step). A rank with no ProfilerStep is taken whole
 * (step -1: its first op's start to its last op's end).
 *
 * The graph, over the ops of the step:
 *  - CPU ops starting in [S0, S1) and taking some time, the top-level
 *    ones of each thread only (an op that starts before the previous kept
 *    op of its thread ends is nested in it, or overlaps it, and is left
 *    out): each thread is a chain of points in time, its ops' starts and
 *    ends and the launch calls it made; an edge between two points is the
 *    op's work (kind CPU) inside a kept op, waiting between ops;
 *  - device ops (kernels, copies, sets; no sync records) launched in
 *    [S0, S1) (their runtime call, by correlation id) and starting at S0
 *    or later, the non-overlapping ones of each stream: each stream is a
 *    chain of its ops (edge: the op's time, kind compute, communication
 *    or memory by its name and category as trace_read gives it) and the
 *    gaps between them (waiting);
 *  - a launch edge from the launch call's start, on the thread that made
 *    it, to the device op's start (waiting: the launch delay), where the
 *    call is on a thread with CPU ops and no later than the op's start;
 *  - a source at S0 and a sink at E, the latest of S1 and every kept op's
 *    end, joined to each chain's first and last point by waiting edges.
 * Every edge weighs the time between its ends, so every path from the
 * source to the sink is as long as the step (E - S0, which is S1 - S0
 * plus the time its device work ran past its CPU end): the longest path
 * ties with all of them, and the path reported is the one walked back
 * from the sink through the last dependency to arrive at each point (the
 * reading of a critical path: shorten an edge off it and the step does not
 * end sooner). At the sink, the chain whose last point is latest (ties:
 * a stream before a thread, then the op first in the rank's order); at a
 * device op's start, its launch when the call came after the stream's
 * previous op ended (ties: the stream); on a thread, the point before.
 *
 * Ops with a negative duration, or ending 2^62 ns or more after S0, are
 * left out (no sum along the path can overflow).
 *
 * Not modelled, where HTA's analysis does model them: CPU-GPU syncs (its
 * SYNC_DEPENDENCY edges, from cuda_sync records; here a
 * cudaStreamSynchronize, an op that blocks on the device, counts as that
 * op's CPU time), GPU-GPU syncs between streams, the backward thread
 * merged into the forward one and the CUDA runtime's lock ordering
 * launch calls across threads, nested ops' own edges (its DEPENDENCY).
 * Flow events (fwdbwd, ph s/f) are read by no part of ddptop. So the
 * path, once on a thread, stays on it to S0, and a trace without device
 * ops launched in the step (a CPU-only trace, a gloo job) has none:
 * `note` says why, and no figure is made.
 */
#ifndef DDPTOP_CRITPATH_H
#define DDPTOP_CRITPATH_H

#include <stddef.h>
#include <stdint.h>

#include "trace_read.h"

#define CRITPATH_TOP 5        /* the items listed */
#define CRITPATH_NAME_LEN 128 /* an item's name, cut to this less one */

enum critpath_kind {
    CRITPATH_CPU = 0,
    CRITPATH_COMPUTE,
    CRITPATH_COMM,
    CRITPATH_MEMORY,
    CRITPATH_WAIT,
    CRITPATH_KINDS
};
/* "cpu", "compute", "comm", "memory", "wait" */
const char *critpath_kind_name(int kind);

/* Why a rank has no path. */
enum critpath_note {
    CRITPATH_OK = 0,
    CRITPATH_NO_OPS,   /* no op in the step, and no device op in the rank; or a step of over 2^62 ns */
    CRITPATH_NO_DEVICE /* no device op launched in the step (a CPU-only trace; kernels with no launch call) */
};
/* The note's words, for the report ("" for CRITPATH_OK). */
const char *critpath_note_text(int note);

/* An op on the path, with its time there. */
struct critpath_item {
    char name[CRITPATH_NAME_LEN];
    uint8_t kind;     /* enum critpath_kind, never CRITPATH_WAIT */
    int64_t start_ns; /* its start less the step's */
    int64_t path_ns;  /* its time on the path (a CPU op: its parts between launches on the path) */
};

struct critpath {
    int valid;                       /* a path was made; else note says why */
    int note;                        /* enum critpath_note */
    int64_t step;                    /* its ProfilerStep number; -1: the rank taken whole */
    int nsteps;                      /* the ProfilerSteps it was chosen from */
    int64_t t0_ns;                   /* S0, on the trace's clock (kept where there is no path) */
    int64_t step_ns;                 /* S1 - S0 (likewise) */
    int64_t length_ns;               /* E - S0: the path's length */
    int64_t kind_ns[CRITPATH_KINDS]; /* the path's time by kind; they sum to length_ns */
    int ops;                         /* ops on the path */
    int launches;                    /* launch edges on the path */
    uint64_t cpu_ops, device_ops;    /* ops in the graph */
    int nitems;                      /* top[0, nitems): by time on the path, most first (ties: earlier start) */
    struct critpath_item top[CRITPATH_TOP];
};

/* The critical path of rank r's median step into *out. Returns 0 (out->valid
 * 0 with a note where there is none), or -1 when out of memory. */
int critpath_rank(struct critpath *out, const struct trace_rank *r);
/* One path per ProfilerStep of r, in r's order (nsteps: r's), or one of r
 * whole where it has none, into *out (malloc'd; *n of them). A follower
 * makes them for each cycle, then takes critpath_median over its cycles':
 * the path a replay of the same files gives (their steps sharing a clock,
 * as Kineto's do). Returns 0, or -1 when out of memory (*out, *n: those
 * made). */
int critpath_each_step(struct critpath **out, size_t *n, const struct trace_rank *r);
/* The path of the median step of paths[0, n), by critpath_rank's rule
 * (whole-rank paths, step -1, left out; the last of them where there is
 * nothing else); NULL when n is 0 or out of memory. */
const struct critpath *critpath_median(const struct critpath *const *paths, size_t n);

#endif
