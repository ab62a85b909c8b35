/* launch.h - HTA's CUDA kernel launch statistics of a foreign (PyTorch
 * profiler) trace's rank (TraceAnalysis.get_cuda_kernel_launch_stats).
 *
 * A launch is a device op whose correlation id names, in its file, a
 * runtime call HTA counts (trace_read.h, enum trace_launch_call: the
 * kernel launches, MTIA's job submission, and HTA's default of the
 * asynchronous copies and sets too). Of each: the call's CPU duration,
 * the op's GPU duration, and the launch delay, the op's start less the
 * call's end (0 when the op starts first). The launches tallied are those
 * the rank's figures count (trace_each_device_op: --window's steps; under
 * --window hta, HTA's trace, its last step's work left out), with the
 * times as the rule reads them (a trace with fractions of a microsecond:
 * starts rounded up, ends down, as HTA reads it).
 *
 * HTA plots three sets of them, with its default cut-offs: short GPU
 * kernels (a GPU duration below the CPU duration, the CPU duration at
 * most LAUNCH_RUNTIME_CUTOFF_US), runtime outliers (a CPU duration above
 * it) and launch delay outliers (a delay above LAUNCH_DELAY_CUTOFF_US);
 * the table counts each set. Each duration's mean, median (pandas': the
 * mean of the two middle values for an even count) and most.
 *
 * A rank's launches are first tallied (struct launch_tally: each one's
 * durations), which adds up over windows read apart (a follower's
 * cycles, launch_tally_add); the table is made from a tally, so a
 * followed job's table is the one a replay of its files gives. Tables'
 * counts, sums and most add up over ranks (launch_table_add); a median
 * does not, and a sum of tables has none (p50_valid 0).
 */
#ifndef DDPTOP_LAUNCH_H
#define DDPTOP_LAUNCH_H

#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

#define LAUNCH_RUNTIME_CUTOFF_US 50 /* HTA's runtime_cutoff */
#define LAUNCH_DELAY_CUTOFF_US 100  /* HTA's launch_delay_cutoff */

/* One duration over the launches (ns). */
struct launch_dur {
    int64_t sum_ns, max_ns;
    double p50_ns;  /* the median (launch_table_rank); p50_valid says */
    double mean_ns; /* sum over count (launch_table_rates) */
};

enum launch_col { LAUNCH_CPU = 0, LAUNCH_GPU, LAUNCH_DELAY, LAUNCH_COLS };

struct launch_table {
    uint64_t count;   /* launches matched to their device op */
    uint64_t kernels; /* ... of them, by a kernel launch call (the rest: async copies and sets) */
    struct launch_dur dur[LAUNCH_COLS];
    int p50_valid;                              /* one rank's table, its medians made */
    uint64_t short_gpu;                         /* GPU duration < CPU duration <= the runtime cut-off */
    uint64_t long_cpu;                          /* CPU duration > the runtime cut-off */
    uint64_t long_delay;                        /* launch delay > the delay cut-off */
    int64_t runtime_cutoff_ns, delay_cutoff_ns; /* the cut-offs counted with */
};

/* Launches one by one: their CPU, GPU and delay durations (ns), in
 * parallel arrays; kernels: those by a kernel launch call. */
struct launch_tally {
    size_t n, cap;
    int64_t *v[LAUNCH_COLS];
    uint64_t kernels;
};

/* The launches that figures f of rank r count under rule, into *out (its
 * own, launch_tally_free). Returns 0, or -1 when out of memory. */
int launch_tally_rank(struct launch_tally *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f);
/* Adds t's launches to *into. Returns 0, or -1 when out of memory. */
int launch_tally_add(struct launch_tally *into, const struct launch_tally *t);
void launch_tally_free(struct launch_tally *t);
/* The table of t's launches with the cut-offs given (ns), medians made.
 * Returns 0, or -1 when out of memory (*out then holds no medians). */
int launch_table_of(struct launch_table *out, const struct launch_tally *t, int64_t runtime_cutoff_ns,
                    int64_t delay_cutoff_ns);
/* The launches that figures f of rank r count under rule, into *out, with
 * the cut-offs given (ns; HTA's: LAUNCH_*_CUTOFF_US). Returns 0, or -1
 * when out of memory (*out then holds no medians). */
int launch_table_rank(struct launch_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f, int64_t runtime_cutoff_ns, int64_t delay_cutoff_ns);
/* Adds t into *into: counts, sums and most; *into keeps no medians. */
void launch_table_add(struct launch_table *into, const struct launch_table *t);
/* Works out each duration's mean from its sum. */
void launch_table_rates(struct launch_table *t);

#endif
