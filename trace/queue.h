/* queue.h - a foreign (PyTorch profiler) trace's rank's queue length per
 * device stream, and HTA's summary of it (TraceCounters.
 * get_queue_length_summary, get_time_spent_blocked_on_full_queue).
 *
 * A stream's queue is the work launched on it that has not started yet.
 * Each device op that a call queued on its stream (trace_op.queued: a
 * cudaLaunchKernel, cudaMemcpyAsync, ... with the op's correlation id, as
 * HTA's get_runtime_launch_events_mask names them) is two points on the
 * op's stream (trace_op.stream): +1 at the launch's start and -1 at the
 * op's start; an op without such a launch, and a launch whose op is not in
 * the trace, count for nothing (HTA pairs them, so no length goes below 0
 * for want of a launch). The ops are those the rank's figures count
 * (trace_each_device_op: --window's cut; HTA's own is --window hta),
 * times read as the cut reads them (whole microseconds, rounded up, where
 * the rule reads a finer trace so). A stream's points are taken in time
 * order, launches first where a launch and a start fall at one time (HTA
 * sorts them unstably: its order there may differ), each window on its own
 * (a profiler cycle's own timeline), and the queue length after each point
 * is the running sum.
 *
 * Per stream, as HTA's summary (pandas' describe over the points): the
 * points, the lengths' mean, sample standard deviation, least, 25th, 50th
 * and 75th percentile (linear between points) and most; and the time the
 * length stood at QUEUE_FULL or more, to the stream's next point: the host
 * blocked on a full launch queue (HTA's max_queue_length, CUDA's 1024
 * launches a stream).
 */
#ifndef DDPTOP_QUEUE_H
#define DDPTOP_QUEUE_H

#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

#define QUEUE_FULL 1024  /* launches a stream holds: the host blocks at this many */
#define QUEUE_STREAMS 32 /* streams kept per rank, the lowest numbers first */

struct queue_stream {
    int64_t stream;       /* the device's stream number (args.stream) */
    uint64_t count;       /* points: two per launched op */
    double sum, sumsq;    /* of the lengths after each point */
    int64_t min, max;     /* least and most length */
    double p25, p50, p75; /* percentiles of the lengths (pandas' linear) */
    int64_t blocked_ns;   /* time at QUEUE_FULL or more */
    double mean, std;     /* from the sums (queue_table_stats); std NAN under 2 points */
};

/* A rank's streams, by stream number. */
struct queue_table {
    int n;
    int dropped; /* streams past QUEUE_STREAMS, left out */
    struct queue_stream streams[QUEUE_STREAMS];
};

/* One stream's queue lengths as a tally that adds up over a rank's cycles
 * (--follow): each length seen and how often, and the time blocked. */
struct queue_hist {
    int64_t stream;
    size_t n, cap;
    int64_t *len;  /* the distinct lengths, ascending */
    uint64_t *cnt; /* the points after which each stood */
    int64_t blocked_ns;
};

/* A rank's tallies, by stream number. */
struct queue_tally {
    int n, cap;
    struct queue_hist *s;
};

/* The tallies of the ops that figures f of rank r count under rule, into
 * *out. Returns 0, or -1 when out of memory (*out empty). */
int queue_tally_rank(struct queue_tally *out, const struct trace_rank *r, const struct trace_rule *rule,
                     const struct trace_figures *f);
/* Adds t into *into, streams matched by number. Returns 0, or -1 when out
 * of memory (*into partly added: free it). */
int queue_tally_add(struct queue_tally *into, const struct queue_tally *t);
/* t's figures: its first QUEUE_STREAMS streams, their mean and std too. */
void queue_table_of(struct queue_table *out, const struct queue_tally *t);
void queue_tally_free(struct queue_tally *t);

/* The queue lengths of the ops that figures f of rank r count under rule,
 * into *out (queue_tally_rank's table). Returns 0, or -1 when out of
 * memory (*out empty). */
int queue_table_rank(struct queue_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                     const struct trace_figures *f);
/* Works out each stream's mean and std from its sums. */
void queue_table_stats(struct queue_table *t);

#endif
