/* predict.c - the step-time model of predict.h. */
#include "predict.h"

#include <stdlib.h>

struct predict_link predict_ring_link(double bw_bytes_per_s, double lat_s, int ranks)
{
    struct predict_link l = {0, 0};
    if (ranks > 1 && bw_bytes_per_s > 0) {
        l.alpha_us = 2.0 * (ranks - 1) * lat_s * 1e6;
        l.beta_us_per_byte = 2.0 * (ranks - 1) / ((double)ranks * bw_bytes_per_s) * 1e6;
    }
    return l;
}

static double cost_ms(const struct predict_link *l, double bytes)
{
    return (l->alpha_us + l->beta_us_per_byte * bytes) / 1e3;
}

/* DDP's comm lane: buckets in the order they become ready. Returns when
 * the last ends, in ms from the start of backward; *busy the sum. */
static double ddp_lane(const struct predict_input *in, const struct predict_link *l, size_t bucket_bytes, int overlap,
                       double *busy)
{
    struct ddp_bucket *b = malloc(sizeof(*b) * ((size_t)in->n + 1));
    int *of = malloc(sizeof(int) * ((size_t)in->n + 1));
    if (!b || !of) {
        free(b);
        free(of);
        return -1;
    }
    struct grad_layout g = {in->n, in->t, NULL, NULL, 0};
    size_t first = bucket_bytes < 1024 * 1024 ? bucket_bytes : 1024 * 1024;
    int nb = ddp_plan(&g, bucket_bytes, first, b, of);
    double end = overlap ? 0 : in->bwd_ms;
    *busy = 0;
    /* buckets come out of ddp_plan in backward order, and become ready in
     * it: a bucket is ready when its first (lowest) tensor is */
    for (int i = 0; i < nb; i++) {
        double ready = overlap ? in->ready_ms[b[i].first] : in->bwd_ms;
        double d = cost_ms(l, (double)b[i].len * sizeof(float));
        end = (ready > end ? ready : end) + d;
        *busy += d;
    }
    free(b);
    free(of);
    return end;
}

double predict_step(const struct predict_input *in, int strategy, const struct predict_link *link, size_t bucket_bytes,
                    int overlap, double *comm_ms, double *exposed_ms)
{
    double comm = 0, after = 0; /* after: the comm that follows backward */
    switch (strategy) {
    case STRAT_ALLREDUCE:
        for (int p = 0; p < in->n; p++)
            if (in->t[p].trainable)
                comm += cost_ms(link, (double)in->t[p].len * sizeof(float));
        after = comm;
        break;
    case STRAT_DDP: {
        double end = ddp_lane(in, link, bucket_bytes, overlap, &comm);
        if (end < 0)
            return -1;
        after = end > in->bwd_ms ? end - in->bwd_ms : 0;
        break;
    }
    default:
        return -1;
    }
    *comm_ms = comm;
    *exposed_ms = after;
    return in->fwd_ms + in->bwd_ms + after + in->rest_ms;
}
