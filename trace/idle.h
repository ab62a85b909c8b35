/* idle.h - HTA's idle time breakdown per device stream of a foreign
 * (PyTorch profiler) trace's rank (TraceAnalysis.get_idle_time_breakdown),
 * beside the union-of-streams split of trace_analyze.h.
 *
 * A stream's ops are the device ops the rank's figures count
 * (trace_each_device_op: --window's steps; under --window hta, HTA's
 * trace, its last step's work left out) that run on a stream
 * (trace_op.stream) and are not a stream's sync record (HTA reads kernels,
 * memory copies and sets), times as the rule reads them (whole us under
 * HTA's rule, the launch's start rounded up as the op's). They are taken
 * in start order (ops that start together: in the order the trace holds
 * them; HTA's pandas sort is not stable, though no trace recorded in
 * tests/fixtures/hta/idle_time.tsv tells the two apart), each window on
 * its own (a profiler cycle's own timeline), and each op but a window's first ends a gap: its start less
 * the previous op's end (the op before it in that order, not the latest
 * end: a gap is negative where the two overlap, and HTA adds it so). The
 * gap's category, as HTA's:
 *  - host wait: the op's launch call started after the previous op ended
 *    (the device waited for the host to queue it);
 *  - kernel wait: else, a gap under the delay threshold (HTA's
 *    consecutive_kernel_delay: the cost of launching back to back);
 *  - other: the rest (an op whose launch is unknown is never host wait).
 * Per stream: each category's time and gaps, the stream's idle time (all
 * its gaps) and each category's share of it (HTA's idle_time_ratio).
 *
 * Sums add up over windows read apart (a follower's cycles): idle_table_add
 * adds streams matched by number, so a followed job's table is the one a
 * replay of its files gives.
 */
#ifndef DDPTOP_IDLE_H
#define DDPTOP_IDLE_H

#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

/* HTA's consecutive_kernel_delay default, 30, on its microsecond timeline */
#define IDLE_STREAMS 32 /* streams kept per rank, the lowest numbers first */

enum idle_cat { IDLE_HOST_WAIT = GAP_HOST_WAIT, IDLE_KERNEL_WAIT = GAP_KERNEL_WAIT, IDLE_OTHER = GAP_OTHER, IDLE_CATS };

struct idle_stream {
    int64_t stream;           /* the device's stream number (args.stream) */
    uint64_t ops;             /* ops on it */
    int64_t ns[IDLE_CATS];    /* each category's gaps summed (ns) */
    uint64_t gaps[IDLE_CATS]; /* ... and how many */
    int64_t idle_ns;          /* all the stream's gaps summed */
    double ratio[IDLE_CATS];  /* ns over idle_ns (idle_table_rates); ratio_valid says */
    int ratio_valid;          /* idle_ns is not 0 */
};

/* A rank's streams, by stream number. */
struct idle_table {
    int64_t delay_ns; /* the kernel wait threshold counted with */
    int n;
    int dropped; /* streams past IDLE_STREAMS, left out */
    struct idle_stream streams[IDLE_STREAMS];
};

/* The idle time per stream of the ops that figures f of rank r count
 * under rule, into *out, with gaps under delay_ns (HTA's:
 * TRACE_IDLE_DELAY_NS) kernel wait. Returns 0, or -1 when out of memory
 * (*out empty). */
int idle_table_rank(struct idle_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                    const struct trace_figures *f, int64_t delay_ns);
/* Adds t into *into, streams matched by number (a stream past
 * IDLE_STREAMS left out), the threshold t's. */
void idle_table_add(struct idle_table *into, const struct idle_table *t);
/* Works out each stream's category shares from its sums. */
void idle_table_rates(struct idle_table *t);
/* A category's name as HTA's idle_category gives it: "host_wait",
 * "kernel_wait", "other". */
const char *idle_cat_name(int cat);

#endif
