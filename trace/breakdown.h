/* breakdown.h - the README's time accounting, written once: the sweep that
 * splits a window's time into compute, exposed communication, data and
 * idle, used by the live collector (per step, src/metrics.c) and by the
 * replay of foreign traces (trace_analyze.c).
 *
 * Intervals come in groups. Inside one group (a thread, or one lane of a
 * rank) intervals nest properly and the innermost open one decides the
 * category of an instant, so a wait inside a collective counts as idle.
 * Device records on several streams overlap rather than nest: they come
 * flat, and every open one counts. Across groups compute beats comm beats
 * data beats idle:
 *   compute = |U compute|, comm = |U comm - compute|,
 *   data = |U data - compute - comm|, idle = wall - |compute U comm U data|,
 *   overlap = |compute ^ comm| (reported over |U comm|),
 * so compute + comm + data + idle == wall exactly. Beside the split, coll =
 * |U comm spans with what nests inside them|: the whole time in
 * collectives, waits for peers included (the studies' "communication
 * time"). A wait outside any collective is idle and not coll.
 */
#ifndef DDPTOP_BREAKDOWN_H
#define DDPTOP_BREAKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "probe.h"

/* Time split of one window; compute + comm + data + idle == wall exactly. */
struct breakdown {
    int64_t wall_ns;
    int64_t compute_ns;
    int64_t comm_ns; /* exposed: comm not hidden under compute */
    int64_t data_ns;
    int64_t idle_ns;
    int64_t comm_union_ns; /* |union of comm|, hidden or not */
    int64_t overlap_ns;    /* |compute ∩ comm| */
    /* |union of comm spans, the waits inside them included|: the time in
     * collectives, beside the split (not a part of it) */
    int64_t coll_ns;
};

void breakdown_add(struct breakdown *acc, const struct breakdown *b);
/* b's split stretched to a window of wall_ns (each part in b's proportion,
 * rounded; the parts still sum to wall_ns exactly): a step that was not
 * traced, estimated from one that was. */
void breakdown_scale(struct breakdown *out, const struct breakdown *b, int64_t wall_ns);
/* part as a percentage of wall (0 when wall is 0). */
double breakdown_pct(int64_t part_ns, int64_t wall_ns);
/* overlap as a percentage of |union of comm| (0 without comm). */
double breakdown_overlap_pct(const struct breakdown *b);

/* A breakdown as the percentages every output shows: compute, comm, data
 * and idle of wall, and overlap of the union of comm. One type and one
 * rule for the report's rows (rank_result, run_result), the UI's (snap)
 * and a follower's cycles, so a figure added here reaches all of them. */
struct split_pct {
    double compute, comm, data, idle, overlap;
};
void breakdown_split(const struct breakdown *b, struct split_pct *out);

#define BREAKDOWN_FLAT (-1) /* breakdown_iv.group of intervals that overlap rather than nest */

/* One interval of the sweep. Categories outside enum cat (annotations)
 * cover nothing and shadow nothing. */
struct breakdown_iv {
    int64_t t0_ns, t1_ns;
    int32_t group; /* >= 0: nests with the others of its group; BREAKDOWN_FLAT */
    int32_t cat;   /* enum cat */
};

/* Room the sweep works in; it only grows, so a caller that keeps one (per
 * rank) allocates nothing once its largest window has been seen. */
struct breakdown_scratch {
    void *buf;
    size_t cap;
};
void breakdown_scratch_free(struct breakdown_scratch *sc);

/* Breaks down iv[n] over the windows win[nwin] (overlapping windows count
 * once), or, when win is NULL, over [first, last) of the time the
 * intervals cover. When gaps is not NULL, *gaps receives the idle
 * intervals inside the windows, in time order and maximal (*ngaps of
 * them), in sc's memory: valid until sc is used again. sc NULL: memory of
 * the call's own (then gaps must be NULL). Returns 0, or -1 when out of
 * memory (out is zero). */
int breakdown_sweep(struct breakdown *out, const struct breakdown_iv *iv, size_t n, const int64_t (*win)[2],
                    size_t nwin, const int64_t (**gaps)[2], size_t *ngaps, struct breakdown_scratch *sc);

/* The breakdown of window [t0, t1) over n probe spans, each cut to the
 * window: every lane is a group of its own except LANE_GPU, whose device
 * records are flat. only_lane >= 0 keeps that lane's spans alone; -1 keeps
 * every lane. Returns 0, or -1 when out of memory. */
int breakdown_window(struct breakdown *out, const struct span *spans, size_t n, int64_t t0_ns, int64_t t1_ns,
                     int only_lane, struct breakdown_scratch *sc);
/* The same over every lane with memory of its own; out of memory, the
 * whole window counts as idle. */
void breakdown_compute(struct breakdown *out, const struct span *spans, size_t n, int64_t t0_ns, int64_t t1_ns);

#endif
