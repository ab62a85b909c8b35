/* buckets.h - where DDP's gradient buckets sit inside a step, from one
 * rank's span history: when each bucket's gradients were all ready (the
 * zero-length backward marker the bucket engine records, tagged with the
 * bucket, collectives/strategy.c) against when its allreduce ran (the
 * whole-collective comm span tagged with the same index), in ms from the
 * step's first span, averaged over the newest few whole steps, next to
 * the step's backward pass. A bucket that waits long after it was ready
 * queued behind the others on the comm lane; one that is ready only at
 * the end of backward cannot overlap it. No curses: unit-tested.
 */
#ifndef DDPTOP_BUCKETS_H
#define DDPTOP_BUCKETS_H

#include <stddef.h>

#include "probe.h"

#define BUCKETS_MAX 128  /* buckets shown (tags beyond are left out) */
#define BUCKETS_STEPS 16 /* steps averaged at most */

struct bucket_time {
    double ready_ms;         /* every gradient of the bucket was final */
    double start_ms, end_ms; /* its allreduce */
    double bytes;            /* the allreduce's buffer */
    int have_ready, have_allreduce;
};

struct bucket_times {
    int n;                           /* buckets: 1 + the highest index seen */
    int steps;                       /* steps averaged */
    double step_ms;                  /* first span to last, on the rank's host lanes */
    double bwd_start_ms, bwd_end_ms; /* the backward pass */
    struct bucket_time b[BUCKETS_MAX];
};

/* Averages over the steps newest-want+1 .. newest (want <= BUCKETS_STEPS)
 * found in hist[0..n), a copy of a span ring in any order. */
void buckets_from_spans(struct bucket_times *out, const struct span *hist, size_t n, long newest, int want);

#endif
