/* buckets.c - DDP's buckets against the step, from spans (see buckets.h). */
#include "buckets.h"

#include <string.h>

static int is_ready_marker(const struct span *sp)
{
    return sp->lane == LANE_MAIN && sp->cat == CAT_BACKWARD && sp->t0_ns == sp->t1_ns && sp->tag >= 0;
}

static int is_bucket_allreduce(const struct span *sp)
{
    return sp->cat == CAT_COMM && sp->outer && sp->coll == COLL_ALLREDUCE && sp->tag >= 0;
}

void buckets_from_spans(struct bucket_times *out, const struct span *hist, size_t n, long newest, int want)
{
    memset(out, 0, sizeof(*out));
    if (want > BUCKETS_STEPS)
        want = BUCKETS_STEPS;
    long lo = newest - want + 1;
    if (lo < 0)
        lo = 0;
    if (newest < lo)
        return;
    int64_t t0[BUCKETS_STEPS], t1[BUCKETS_STEPS], b0[BUCKETS_STEPS], b1[BUCKETS_STEPS];
    for (int k = 0; k < BUCKETS_STEPS; k++) {
        t0[k] = b0[k] = INT64_MAX;
        t1[k] = b1[k] = INT64_MIN;
    }
    /* each step's extent and its backward pass (the device lane has its
     * own clock domain on a GPU: host lanes only) */
    for (size_t k = 0; k < n; k++) {
        const struct span *sp = &hist[k];
        if ((long)sp->step < lo || (long)sp->step > newest || sp->lane == LANE_GPU)
            continue;
        int s = (int)(sp->step - lo);
        if (sp->t0_ns < t0[s])
            t0[s] = sp->t0_ns;
        if (sp->t1_ns > t1[s])
            t1[s] = sp->t1_ns;
        if (sp->lane == LANE_MAIN && sp->cat == CAT_BACKWARD && sp->t1_ns > sp->t0_ns) {
            if (sp->t0_ns < b0[s])
                b0[s] = sp->t0_ns;
            if (sp->t1_ns > b1[s])
                b1[s] = sp->t1_ns;
        }
    }
    double ready[BUCKETS_MAX] = {0}, start[BUCKETS_MAX] = {0}, end[BUCKETS_MAX] = {0}, bytes[BUCKETS_MAX] = {0};
    int nready[BUCKETS_MAX] = {0}, nar[BUCKETS_MAX] = {0};
    for (size_t k = 0; k < n; k++) {
        const struct span *sp = &hist[k];
        if ((long)sp->step < lo || (long)sp->step > newest || sp->tag >= BUCKETS_MAX)
            continue;
        int s = (int)(sp->step - lo), b = sp->tag;
        if (is_ready_marker(sp)) {
            ready[b] += (double)(sp->t0_ns - t0[s]) / 1e6;
            nready[b]++;
        } else if (is_bucket_allreduce(sp)) {
            start[b] += (double)(sp->t0_ns - t0[s]) / 1e6;
            end[b] += (double)(sp->t1_ns - t0[s]) / 1e6;
            bytes[b] += (double)sp->size;
            nar[b]++;
        } else {
            continue;
        }
        if (b + 1 > out->n)
            out->n = b + 1;
    }
    int nb = 0;
    for (int s = 0; s < want && s <= newest - lo; s++) {
        if (t1[s] < t0[s])
            continue;
        out->steps++;
        out->step_ms += (double)(t1[s] - t0[s]) / 1e6;
        if (b1[s] > b0[s]) {
            out->bwd_start_ms += (double)(b0[s] - t0[s]) / 1e6;
            out->bwd_end_ms += (double)(b1[s] - t0[s]) / 1e6;
            nb++;
        }
    }
    if (out->steps)
        out->step_ms /= out->steps;
    if (nb) {
        out->bwd_start_ms /= nb;
        out->bwd_end_ms /= nb;
    }
    for (int b = 0; b < out->n; b++) {
        struct bucket_time *q = &out->b[b];
        q->have_ready = nready[b] > 0;
        q->have_allreduce = nar[b] > 0;
        if (q->have_ready)
            q->ready_ms = ready[b] / nready[b];
        if (q->have_allreduce) {
            q->start_ms = start[b] / nar[b];
            q->end_ms = end[b] / nar[b];
            q->bytes = bytes[b] / nar[b];
        }
    }
}
