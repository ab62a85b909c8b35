/* kernels.h - HTA's kernel breakdown of a foreign (PyTorch profiler)
 * trace's rank (TraceAnalysis.get_gpu_kernel_breakdown): its device time by
 * kernel type, and its kernels by total time.
 *
 * A device op's type is HTA's, from its name alone (get_kernel_type):
 * communication (nccl..., hip..., hccl..., ...ncclKernel...), else memory
 * (Memcpy..., Memset..., dma...), else computation unless its name is one
 * of HTA's other device records (syncs, waits, launches, MTIA's job and
 * packet records), which no type counts. The ops tallied are those the
 * rank's figures count (trace_each_device_op: --window's steps).
 *
 * Time by type is HTA's: in each window the union of each type's ops, cut
 * where the set of types running changes, so that a stretch where
 * computation and communication both run is "computation overlapping
 * communication", counted once (a mix). The kernels of a type are grouped
 * by name (count, total); HTA shows the first KERNEL_TOP by total, and of
 * those only the ones whose running total (largest first) is within the
 * KERNEL_TOP_RATIO quantile of the running totals (pandas' linear
 * quantile); the rest are folded into one "others" row. Its shares are
 * the results' (src/results.c).
 *
 * A rank's ops are first tallied by name (struct kernel_tally: the mixes'
 * times and each name's count and total), which adds up over windows read
 * apart (a follower's cycles, kernel_tally_add); the table is made from a
 * tally, so a followed job's table is the one a replay of its files gives.
 */
#ifndef DDPTOP_KERNELS_H
#define DDPTOP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

/* HTA's order: a mix's bit i is type i */
enum kernel_type { KERNEL_COMPUTE = 0, KERNEL_COMM, KERNEL_MEMORY, KERNEL_TYPES, KERNEL_OTHER = KERNEL_TYPES };
#define KERNEL_MIXES (1 << KERNEL_TYPES) /* [0]: nothing runs, not counted */
#define KERNEL_TOP 10                    /* HTA's num_kernels */
#define KERNEL_TOP_RATIO 0.8             /* HTA's duration_ratio */

/* HTA's type of a device op by its name (enum kernel_type). */
int kernel_type_of(const char *name);
/* "computation", "communication", "memory" */
const char *kernel_type_name(int type);
/* A mix's name as HTA gives it, in lower case: "computation",
 * "computation overlapping communication", ... ("" for 0). */
const char *kernel_mix_name(int mix);

/* One kernel name's ops, or the "others" row of a type (others: the names
 * folded into it; its name "others"). */
struct kernel_row {
    char *name;
    int type;
    int others;
    uint64_t count;
    int64_t sum_ns;
    double share_pct; /* of its type's total (the results': result_kernels) */
    double mean_us;   /* sum_ns over count, in us (result_kernels; 0 without a kernel) */
};

/* A rank's breakdown. */
struct kernel_table {
    int64_t mix_ns[KERNEL_MIXES];  /* device time where exactly these types run */
    double mix_pct[KERNEL_MIXES];  /* of the mixes' sum (result_kernels) */
    int64_t type_ns[KERNEL_TYPES]; /* the ops' lengths summed, by type */
    uint64_t type_count[KERNEL_TYPES];
    int nrows;
    struct kernel_row *rows; /* by type, each type's largest total first, its others row last */
};

/* One kernel name's ops in a tally. */
struct kernel_count {
    char *name;
    int type; /* a kernel type: names of no type are not kept */
    uint64_t count;
    int64_t sum_ns;
};

/* What a rank's (or a cycle's) counted ops add up to. */
struct kernel_tally {
    int64_t mix_ns[KERNEL_MIXES];
    size_t n;
    struct kernel_count *names; /* in the order first seen */
};

/* The tally of what figures f of rank r count under rule (trace_each_
 * device_op; f->whole: every op of every window), into *out (free with
 * kernel_tally_free). Returns 0, or -1 when out of memory. */
int kernel_tally_rank(struct kernel_tally *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f);
/* Adds t into *into (names matched by their text). 0, or -1 when out of
 * memory. */
int kernel_tally_add(struct kernel_tally *into, const struct kernel_tally *t);
void kernel_tally_free(struct kernel_tally *t);
/* HTA's table of a tally, into *out (free with kernel_table_free).
 * Returns 0, or -1 when out of memory. */
int kernel_table_of(struct kernel_table *out, const struct kernel_tally *t);

/* The breakdown of what figures f of rank r count under rule, into *out
 * (free with kernel_table_free). Returns 0, or -1 when out of memory. */
int kernel_table_rank(struct kernel_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f);
void kernel_table_free(struct kernel_table *t);

#endif
