/* trace_analyze.h - the time breakdown of a foreign (PyTorch profiler)
 * trace's rank, the way HTA computes it, through the one sweep of
 * breakdown.h.
 *
 * GPU view (the rank has device ops): the ops are flat intervals (streams
 * overlap), over the window from the first GPU op's start to the last
 * one's end, and idle is split per gap between busy intervals by the op
 * that ends the gap, by HTA's rule (trace_gap_cat) with the threshold
 * kernel_wait_ns (--idle-delay-ns), the same rule and threshold as the
 * split per stream (idle.h) beside it.
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
 * Which steps a rank's figures (trace_analyze_rank) cover is a rule,
 * --window's choice (trace_rules), and ms/step covers the same steps.
 * With two ProfilerSteps or more, one step of the rank is left out:
 *  - ddptop (the default): its first (by number), as ddptop's own runs
 *    leave out their first step. The host view leaves out its window; the
 *    GPU view, in the cycle that holds it, the ops launched before the
 *    next step began (or that started before it when their launch is
 *    unknown).
 *  - hta: its last, as HTA does (Trace._filter_irrelevant_gpu_kernels):
 *    in the cycle that holds it, the device ops launched before that step
 *    began (the latest ProfilerStep start, on the host's timeline or the
 *    device's) count, and those launched later, or whose correlation id
 *    names no call in the trace, do not (an op without a correlation id
 *    counts by its own start). With it comes the rest of HTA's reading: a
 *    stream's sync records are device time (in data: HTA's non-compute
 *    time is comm + data), and a trace whose time stamps have fractions of
 *    a microsecond is read to whole microseconds, starts rounded up and
 *    ends down.
 * When the rule's steps hold no device work at all (a trace of two steps
 * whose last is a stub, every kernel launched in the first), the figures
 * cover the whole trace, every step, and say so (trace_figures.whole).
 * One cycle's figures (trace_analyze_window) cover that cycle whole, as a
 * follower shows the latest one.
 */
#ifndef DDPTOP_TRACE_ANALYZE_H
#define DDPTOP_TRACE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "breakdown.h"
#include "trace_read.h"

/* HTA's consecutive_kernel_delay: 30 on its microsecond time stamps (its
 * docstring says ns; its figures are those of 30 us). --idle-delay-ns's
 * default. */
#define TRACE_IDLE_DELAY_NS 30000

/* The category of an idle gap of gap_ns that began at from_ns, ended by
 * an op launched at launch_ns (-1: unknown), as HTA's idle time breakdown
 * gives it: host wait when the launch came after the gap began (the
 * device waited for the host to queue the op), else kernel wait when the
 * gap is under delay_ns, else other. The union-of-streams split here and
 * the per-stream one (idle.h) both take it. */
enum trace_gap_cat { GAP_HOST_WAIT = 0, GAP_KERNEL_WAIT, GAP_OTHER, GAP_CATS };
static inline int trace_gap_cat(int64_t launch_ns, int64_t from_ns, int64_t gap_ns, int64_t delay_ns)
{
    if (launch_ns >= 0 && launch_ns > from_ns)
        return GAP_HOST_WAIT;
    return gap_ns < delay_ns ? GAP_KERNEL_WAIT : GAP_OTHER;
}

/* One choice of --window: the steps a rank's figures cover, and how its
 * device time is read. */
struct trace_rule {
    const char *name;  /* --window's value */
    const char *about; /* the report's words for it */
    int drop_last;     /* the step left out: 1 the rank's last (by number), 0 its first */
    int launch_needed; /* a device op whose correlation id names no call is outside the cut cycle */
    int syncs;         /* a stream's sync records count as device time */
    int whole_us;      /* a trace with finer times is read to whole microseconds */
    int by_name;       /* a device op's category from its name alone (trace_op.hta_cat) */
};
#define TRACE_RULES 2
extern const struct trace_rule trace_rules[TRACE_RULES]; /* [0]: ddptop's, the default */
/* trace_rules[i].name, NULL past the last (config's choice names). */
const char *trace_rule_name(int i);

/* Which of the rank's steps its figures (and ms/step) leave out. */
enum trace_left { TRACE_LEFT_NONE = 0, TRACE_LEFT_FIRST, TRACE_LEFT_LAST };

struct trace_figures {
    int gpu_view; /* 1: device ops; 0: host ops */
    struct breakdown b;
    int idle_split_valid; /* GPU view only */
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
    int left;    /* enum trace_left */
    int whole;   /* the rule's steps held no device work: every step is covered (left NONE) */
    size_t ndev; /* device ops with a length that were counted */
};

/* Computes r's figures under rule (NULL: trace_rules[0]): the sum over its
 * windows. Returns 0, or -1 when out of memory. */
int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, const struct trace_rule *rule,
                       int64_t kernel_wait_ns);
/* Calls each(ctx, op, window, t0_ns, t1_ns) for every device op that r's
 * figures f (trace_analyze_rank's under rule) count, in its window's
 * order, with its times as the rule reads them: the one selection the
 * kernel breakdown (kernels.h) tallies. */
typedef void (*trace_op_fn)(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns);
void trace_each_device_op(const struct trace_rank *r, const struct trace_rule *rule, const struct trace_figures *f,
                          trace_op_fn each, void *ctx);
/* The figures of r's window w alone (a follower's latest cycle), read as
 * rule reads device time. Returns 0, or -1 when out of memory or there is
 * no window w. */
int trace_analyze_window(struct trace_figures *out, const struct trace_rank *r, size_t w, const struct trace_rule *rule,
                         int64_t kernel_wait_ns);

#endif
