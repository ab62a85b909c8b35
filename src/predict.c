/* predict.c - the step-time model of predict.h. */
#include "predict.h"

#include <math.h>
#include <stdlib.h>

#include "model.h"
#include "pipeline.h"

struct predict_link predict_ring_link(double bw_bytes_per_s, double lat_s, int ranks)
{
    struct predict_link l = {0};
    if (ranks > 1 && bw_bytes_per_s > 0) {
        l.alpha_us = 2.0 * (ranks - 1) * lat_s * 1e6;
        l.beta_us_per_byte = 2.0 * (ranks - 1) / ((double)ranks * bw_bytes_per_s) * 1e6;
    }
    return l;
}

struct predict_link predict_link_of(const struct cost_fit *f)
{
    struct predict_link l = {.alpha_us = f->alpha_us, .beta_us_per_byte = f->beta_us_per_byte, .nmore = f->nmore};
    for (int k = 0; k < f->nmore && k < COST_MAX_REGIMES - 1; k++)
        l.more[k] = f->more[k];
    return l;
}

static double cost_ms(const struct predict_link *l, double bytes)
{
    return cost_regimes_us(l->alpha_us, l->beta_us_per_byte, l->nmore, l->more, bytes) / 1e3;
}

/* The cost of an allreduce of gradients that take fp32_bytes in memory:
 * on the wire in in->grad_bytes a value. */
static double grad_cost_ms(const struct predict_input *in, const struct predict_link *l, double fp32_bytes)
{
    double per = in->grad_bytes > 0 ? in->grad_bytes : sizeof(float);
    return cost_ms(l, fp32_bytes * per / sizeof(float));
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
        double d = grad_cost_ms(in, l, (double)b[i].len * sizeof(float));
        end = (ready > end ? ready : end) + d;
        *busy += d;
    }
    free(b);
    free(of);
    return end;
}

/* Horovod's background lane (predict.h): returns when its last buffer
 * ends, in ms from the start of backward; *busy its comm. */
static double hvd_lane(const struct predict_input *in, const struct predict_link *l, size_t fusion_bytes, double *busy)
{
    char *sent = calloc((size_t)in->n + 1, 1);
    if (!sent)
        return -1;
    double wake = in->cycle_ms > 0 ? in->cycle_ms : 0, end = 0;
    double negotiate = cost_ms(l, (double)in->n * sizeof(float));
    int left = 0;
    for (int p = 0; p < in->n; p++)
        left += in->t[p].trainable;
    *busy = 0;
    while (left > 0) {
        /* nothing final yet: sleep until the next gradient is */
        double next = -1;
        for (int p = 0; p < in->n; p++)
            if (in->t[p].trainable && !sent[p] && (next < 0 || in->ready_ms[p] < next))
                next = in->ready_ms[p];
        if (next > wake)
            wake = in->cycle_ms > 0 ? in->cycle_ms * ceil(next / in->cycle_ms) : next;
        double t = (wake > end ? wake : end) + negotiate, fill = 0;
        *busy += negotiate;
        /* the final ones, last parameters first (backward's order), fused */
        for (int p = in->n - 1; p >= 0; p--) {
            if (!in->t[p].trainable || sent[p] || in->ready_ms[p] > wake)
                continue;
            double bytes = (double)in->t[p].len * sizeof(float);
            if (fill > 0 && fill + bytes > (double)fusion_bytes) {
                t += grad_cost_ms(in, l, fill);
                *busy += grad_cost_ms(in, l, fill);
                fill = 0;
            }
            fill += bytes;
            sent[p] = 1;
            left--;
        }
        if (fill > 0) {
            t += grad_cost_ms(in, l, fill);
            *busy += grad_cost_ms(in, l, fill);
        }
        end = t;
        wake = in->cycle_ms > 0 && wake + in->cycle_ms > end ? wake + in->cycle_ms : end;
    }
    free(sent);
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
                comm += grad_cost_ms(in, link, (double)in->t[p].len * sizeof(float));
        after = comm;
        break;
    case STRAT_DDP: {
        double end = ddp_lane(in, link, bucket_bytes, overlap, &comm);
        if (end < 0)
            return -1;
        after = end > in->bwd_ms ? end - in->bwd_ms : 0;
        break;
    }
    case STRAT_HOROVOD: {
        double end = hvd_lane(in, link, bucket_bytes, &comm);
        if (end < 0)
            return -1;
        after = end > in->bwd_ms ? end - in->bwd_ms : 0;
        break;
    }
    case STRAT_GATHER_SCATTER: {
        if (!in->gather || !in->broadcast)
            return -1;
        double bytes = 0;
        for (int p = 0; p < in->n; p++)
            if (in->t[p].trainable)
                bytes += (double)in->t[p].len * sizeof(float);
        comm = after = cost_ms(in->gather, bytes) + cost_ms(in->broadcast, bytes);
        break;
    }
    case STRAT_DP: {
        if (!in->gather || !in->broadcast || !in->scatter || !in->reduce)
            return -1;
        double bytes = 0;
        for (int p = 0; p < in->n; p++)
            if (in->t[p].trainable)
                bytes += (double)in->t[p].len * sizeof(float);
        comm = after = cost_ms(in->scatter, in->input_bytes) + cost_ms(in->gather, in->output_bytes) +
                       cost_ms(in->scatter, in->output_bytes) + cost_ms(in->reduce, bytes) +
                       cost_ms(in->broadcast, bytes);
        break;
    }
    default:
        return -1;
    }
    *comm_ms = comm;
    *exposed_ms = after;
    return in->fwd_ms + in->bwd_ms + after + in->rest_ms;
}

double predict_pipeline(const struct model *m, const double *layer_ms, int micro, double rest_ms, int stages,
                        const struct predict_link *p2p, double *comm_ms)
{
    struct pipe_plan p;
    char err[256];
    *comm_ms = 0;
    if (stages < 1 || stages > PIPE_MAX_STAGES || pipe_plan_balance(&p, m, layer_ms, stages, err, sizeof(err)) != 0)
        return -1;
    double first = 0, slowest = 0, crossing = 0, most = 0, total = 0;
    for (int i = 0; i < m->nparams; i++)
        total += (double)m->params[i].len;
    for (int s = 0; s < stages; s++) {
        double c = 0, t = 0, params = 0;
        for (int l = p.first[s]; l < p.first[s + 1]; l++)
            c += layer_ms[l];
        for (int i = 0; i < m->nparams; i++)
            if (m->params[i].layer >= p.first[s] && m->params[i].layer < p.first[s + 1])
                params += (double)m->params[i].len;
        /* its boundaries, each crossed twice a micro-batch (activations, gradients) */
        for (int b = s; b <= s + 1; b++)
            if (b > 0 && b < stages) {
                const struct tensor *x = &m->tensors[p.cut[b]];
                t += 2 * cost_ms(p2p, sizeof(float) * (double)x->stride * m->batch);
            }
        first += c;
        slowest = c + t > slowest ? c + t : slowest;
        most = params > most ? params : most;
        if (s > 0) /* boundary s, forward and back, once on the first micro-batch's way */
            crossing += 2 * cost_ms(p2p, sizeof(float) * (double)m->tensors[p.cut[s]].stride * m->batch);
    }
    *comm_ms = crossing;
    return first + crossing + (micro - 1) * slowest + (total > 0 ? rest_ms * most / total : rest_ms);
}
