/* trace_analyze.h - the time breakdown of a foreign (PyTorch profiler)
 * trace's rank, on merged intervals, the way HTA computes it.
 *
 * GPU view (the rank has device ops): over the window from the first GPU
 * op's start to the last one's end,
 *   compute = |U compute kernels|, comm = |U nccl kernels - compute|,
 *   data = |U memcpy/memset - compute - comm|, idle = wall - |U all|,
 *   overlap = |compute ^ comm| (reported over |U comm|),
 * and idle is split per gap between busy intervals by the op that ends the
 * gap: kernel-wait if the gap is shorter than kernel_wait_ns (HTA's default
 * 30 ns), else host-wait if that op's launch call started at or after the
 * gap began (the GPU waited for the host), else other.
 *
 * Host view (CPU ops only, e.g. the autograd profiler with gloo): on each
 * thread the innermost op decides the category of an instant (annotations
 * are neutral), then the same merged-interval formulas run across threads,
 * over the ProfilerStep windows when there are any, else from the first op
 * to the last. Idle is not split.
 */
#ifndef DDPTOP_TRACE_ANALYZE_H
#define DDPTOP_TRACE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_read.h"

#define TRACE_KERNEL_WAIT_NS 30 /* HTA's consecutive-kernel delay */

struct trace_figures {
    int gpu_view; /* 1: device ops; 0: host ops */
    int64_t wall_ns;
    int64_t compute_ns;
    int64_t comm_ns; /* exposed: not under compute */
    int64_t data_ns;
    int64_t idle_ns; /* wall - |compute U comm U data| */
    int64_t comm_union_ns;
    int64_t overlap_ns;   /* |compute ^ comm| */
    int idle_split_valid; /* GPU view only */
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
};

/* Computes r's figures. Returns 0, or -1 when out of memory. */
int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns);

/* Lower-level, for tests: the merged-interval breakdown of n segments
 * (t0, t1, cat as in trace_op) over the given windows (NULL: [min, max]). */
struct trace_seg {
    int64_t t0_ns, t1_ns;
    int cat;
};
int trace_analyze_segs(struct trace_figures *out, const struct trace_seg *segs, size_t n, const int64_t (*win)[2],
                       size_t nwin);

#endif
