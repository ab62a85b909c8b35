/* trace_analyze.h - the time breakdown of a foreign (PyTorch profiler)
 * trace's rank, the way HTA computes it, through the one sweep of
 * breakdown.h.
 *
 * GPU view (the rank has device ops): the ops are flat intervals (streams
 * overlap), over the window from the first GPU op's start to the last
 * one's end, and idle is split per gap between busy intervals by the op
 * that ends the gap: kernel-wait if the gap is shorter than kernel_wait_ns
 * (HTA's default 30 ns), else host-wait if that op's launch call started
 * at or after the gap began (the GPU waited for the host), else other.
 *
 * Host view (CPU ops only, e.g. the autograd profiler with gloo): each
 * thread is a group of nested ops whose innermost op decides (annotations
 * are neutral), over the ProfilerStep windows when there are any, else
 * from the first op to the last. Idle is not split.
 *
 * Either view is taken in each of the rank's windows (a profiler cycle,
 * one file: trace_read.h) on its own, so the time between two cycles is
 * nobody's, and a rank's figures are the sum over its windows.
 *
 * A rank's figures (trace_analyze_rank) cover the steps its ms/step
 * covers: with two ProfilerSteps or more, the rank's first (by number) is
 * left out (its window in the host view; in the GPU view, the ops of its
 * cycle launched before its next step began, or that started before it
 * when their launch is unknown). One cycle's (trace_analyze_window) cover
 * that cycle whole, as a follower shows the latest one.
 */
#ifndef DDPTOP_TRACE_ANALYZE_H
#define DDPTOP_TRACE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "breakdown.h"
#include "trace_read.h"

#define TRACE_KERNEL_WAIT_NS 30 /* HTA's consecutive-kernel delay */

struct trace_figures {
    int gpu_view; /* 1: device ops; 0: host ops */
    struct breakdown b;
    int idle_split_valid; /* GPU view only */
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
};

/* Computes r's figures: the sum over its windows. Returns 0, or -1 when
 * out of memory. */
int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, int64_t kernel_wait_ns);
/* The figures of r's window w alone (a follower's latest cycle). Returns
 * 0, or -1 when out of memory or there is no window w. */
int trace_analyze_window(struct trace_figures *out, const struct trace_rank *r, size_t w, int64_t kernel_wait_ns);

#endif
