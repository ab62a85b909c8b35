/* memcpy.h - a foreign (PyTorch profiler) trace's rank's memory copies by
 * kind, and HTA's memory bandwidth summary of them
 * (TraceCounters.get_memory_bw_summary).
 *
 * A copy is a device op of HTA's memory type (kernels.h: Memcpy...,
 * Memset..., dma...); its kind is HTA's (get_memory_kernel_type): the
 * first 11 characters of a "Memcpy" name ("Memcpy HtoD", "Memcpy DtoH",
 * "Memcpy DtoD", "Memcpy PtoP", ...; Kineto's "(Pageable -> Device)"
 * and such fall into their direction), "Memset", else "Memcpy Unknown".
 * The copies tallied are those the rank's figures count
 * (trace_each_device_op: --window's steps).
 *
 * Per kind: the copies, their bytes (args.bytes) and summed time, and the
 * bandwidth they moved at, bytes over that time (results: result_memcpy).
 * Beside it HTA's figures: HTA reads each copy's bandwidth from Kineto's
 * args ("memory bandwidth (GB/s)", worked from the ns duration that the
 * JSON may round to whole us) and summarises the running sum of those of
 * a kind over time, its zero points left out; where a kind's copies
 * neither overlap nor touch (as on one stream) that is the copies of
 * non-zero bandwidth (rated), their mean, least and most, which is what
 * is kept (where they touch, HTA's unstable sort and its float residue
 * add points: tests/fixtures/hta/memcpy_bandwidth.tsv).
 */
#ifndef DDPTOP_MEMCPY_H
#define DDPTOP_MEMCPY_H

#include <stdint.h>

#include "trace_analyze.h"
#include "trace_read.h"

#define MEMCPY_KINDS 8     /* more than HTA's names give (see above) */
#define MEMCPY_KIND_LEN 16 /* "Memcpy Unknown" and its NUL */

struct memcpy_kind {
    char name[MEMCPY_KIND_LEN];
    uint64_t count;
    uint64_t bytes;
    int64_t time_ns; /* the copies' lengths summed */
    double gbps;     /* bytes over time_ns (1e9 bytes a second; result_memcpy), 0: no time */
    /* HTA's: the copies whose trace gives a bandwidth above 0, and those
     * bandwidths' sum, least and most (GB/s) */
    uint64_t rated;
    double copy_gbps_sum, copy_gbps_min, copy_gbps_max;
    double copy_gbps_mean; /* copy_gbps_sum / rated (result_memcpy) */
};

/* A rank's (or a run's) copies, kinds in the order first seen. */
struct memcpy_table {
    int n;
    struct memcpy_kind kinds[MEMCPY_KINDS];
};

/* HTA's kind of a memory op's name, into out. */
void memcpy_kind_of(const char *name, char out[MEMCPY_KIND_LEN]);
/* The copies that figures f of rank r count under rule, into *out. */
void memcpy_table_rank(struct memcpy_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                       const struct trace_figures *f);
/* Adds t into *into, kinds matched by name (a kind past MEMCPY_KINDS is
 * left out; HTA's names give fewer). */
void memcpy_table_add(struct memcpy_table *into, const struct memcpy_table *t);
/* Works out each kind's gbps and copy_gbps_mean from its sums. */
void memcpy_table_rates(struct memcpy_table *t);

#endif
