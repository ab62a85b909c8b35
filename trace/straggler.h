/* straggler.h - the late collectives of a foreign (PyTorch profiler)
 * trace's run: which rank starts the run's collectives last, and by how
 * much, as HTA finds its potential stragglers (TraceAnalysis.
 * get_potential_stragglers, find_stragglers_with_late_start_comm_kernels).
 *
 * A cross-rank figure: one table per run, never a rank's alone. Not the
 * straggler --follow marks per cycle (follow.h: a rank's own work per
 * step against the others' median); this one reads only when the ranks'
 * collectives start, on the device.
 *
 * The candidates, as HTA picks them: each rank's device ops that its
 * figures count (trace_each_device_op: --window's cut; HTA's own is
 * --window hta, its last step's kernels left out) whose name begins
 * "ncclKernel", on a stream above 0 (args.stream), in a ProfilerStep
 * numbered above 0 (the step whose host window holds the op's launch
 * call: HTA gives a kernel its launch's iteration), and lasting at least
 * STRAGGLER_MIN_PERMILLE thousandths of the mean step (the span from the
 * earliest ProfilerStep start of any rank to the latest end of a step or
 * counted op, over the distinct step numbers; HTA measures every event of
 * its steps, ddptop the steps and device ops it keeps).
 *
 * Matching across ranks, as HTA does: by step number, stream and kernel
 * name, the last such op (by start) of each rank. Of the (stream, name)
 * pairs, the one whose durations differ most across ranks (the sample
 * standard deviation over the ranks that have it, averaged over the steps
 * where two ranks or more have it; ties: the lower stream, then the name
 * in byte order) is the run's collective; its start on each rank, step
 * by step, is HTA's metric (HTA normalises it by the mean step, which
 * does not change the order).
 *
 * Per step that two ranks or more have: the rank with the latest start is
 * last (ties: each rank at that start); HTA's count with its default two
 * candidates, "late", counts each rank at or after the second latest
 * start. The last rank's lead is its start less the latest start of the
 * others (0 for a tie). Per rank: steps last, steps late, lead's total
 * and mean over its steps last. The straggler is the rank last most
 * often (ties: the larger total lead, then the lower rank); HTA's list of
 * two is the two ranks late most often (its order among ties is pandas'
 * unstable sort's). Where ddptop and HTA may part: a step only one rank
 * has the collective in (HTA counts it for that rank with one candidate,
 * and fails with two; ddptop leaves it out), and two kinds of equal
 * spread (HTA's pick follows its symbol table's order).
 *
 * The figure is made in two parts so that --follow, which keeps figures
 * and not events, gives what a replay of the same files gives: a gather
 * per rank (or per profiler cycle) of its candidates, step numbers and
 * span, gathers added up, and the table made once from the sum.
 */
#ifndef DDPTOP_STRAGGLER_H
#define DDPTOP_STRAGGLER_H

#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

#define STRAGGLER_MIN_PERMILLE 10 /* HTA's min_normalized_duration, 0.01 */
#define STRAGGLER_CANDIDATES 2    /* HTA's num_candidates */

struct straggler_rank {
    int rank;
    uint64_t last;         /* steps it started the collective last */
    uint64_t late;         /* ... at or after the STRAGGLER_CANDIDATES-th latest start (HTA's count) */
    int64_t lead_total_ns; /* over its steps last: its start less the others' latest */
    double lead_mean_ns;   /* lead_total_ns / last; 0 when never last */
};

struct straggler_table {
    int valid;                                    /* a collective was matched on two ranks or more */
    char name[128];                               /* the run's collective: its kernel name (cut to fit) */
    int64_t stream;                               /* ... its stream */
    uint64_t steps;                               /* steps that two ranks or more have it in */
    int64_t min_duration_ns;                      /* the cut-off: STRAGGLER_MIN_PERMILLE of the mean step */
    int straggler;                                /* the rank last most often; -1: none (valid 0) */
    int nranks;                                   /* the ranks with the collective */
    struct straggler_rank ranks[TRACE_MAX_RANKS]; /* by rank */
};

/* One candidate: a rank's communication kernel in a step (name owned). */
struct straggler_cand {
    int rank;
    int64_t stream;
    uint32_t step;
    char *name;
    int64_t t0_ns, t1_ns;
};

/* What the table is made from, gathered rank by rank (or cycle by cycle,
 * --follow) and added up: the candidates, the distinct ProfilerStep
 * numbers and the span from the earliest step start to the latest end of
 * a step or counted device op (for HTA's duration cut-off). */
struct straggler_gather {
    struct straggler_cand *c;
    size_t n, cap;
    uint32_t *steps;
    size_t nsteps, cap_steps;
    int64_t t_min_ns, t_max_ns; /* valid with any */
    int any;
};

/* Adds to *g the candidates among the device ops that figures f of rank r
 * count under rule (trace_each_device_op), and r's steps (the caller
 * asks only of a rank with device ops: a GPU view). Returns 0, or
 * -1 when out of memory. */
int straggler_gather_rank(struct straggler_gather *g, const struct trace_rank *r, const struct trace_rule *rule,
                          const struct trace_figures *f);
/* Adds r's steps alone to *g (its numbers and span): what a cycle whose
 * one step is left out gives (--follow). Returns 0, or -1 when out of
 * memory. */
int straggler_gather_steps(struct straggler_gather *g, const struct trace_rank *r);
/* Adds a copy of what h holds into *into. Returns 0, or -1 when out of
 * memory. */
int straggler_gather_add(struct straggler_gather *into, const struct straggler_gather *h);
void straggler_gather_free(struct straggler_gather *g);
/* The table of what g holds, into *out (valid 0 when no collective
 * matches on two ranks). Returns 0, or -1 when out of memory. */
int straggler_table_of(struct straggler_table *out, const struct straggler_gather *g);
/* The late collectives of d's ranks, each read as its figures figs[i]
 * (trace_analyze_rank's under rule, for d->ranks[i]) count its device
 * ops: the ranks' gathers added, then their table. Returns 0, or -1 when
 * out of memory. */
int straggler_table_run(struct straggler_table *out, const struct trace_doc *d, const struct trace_rule *rule,
                        const struct trace_figures *figs);

#endif
