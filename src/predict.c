/* predict.c - the step-time model of predict.h. */
#include "predict.h"

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

double predict_step(const struct predict_input *in, int strategy, const struct predict_link *link,
                    const struct sync_params *p, double *comm_ms, double *exposed_ms)
{
    const struct sync_ops *s = sync_ops_of(strategy);
    double comm = 0, after = 0; /* after: the comm that follows backward */
    if (!s || !s->cost || s->cost(in, link, p, &comm, &after) != 0)
        return -1;
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
                t += 2 * sync_link_ms(p2p, sizeof(float) * (double)x->stride * m->batch);
            }
        first += c;
        slowest = c + t > slowest ? c + t : slowest;
        most = params > most ? params : most;
        if (s > 0) /* boundary s, forward and back, once on the first micro-batch's way */
            crossing += 2 * sync_link_ms(p2p, sizeof(float) * (double)m->tensors[p.cut[s]].stride * m->batch);
    }
    *comm_ms = crossing;
    return first + crossing + (micro - 1) * slowest + (total > 0 ? rest_ms * most / total : rest_ms);
}

double predict_job_step(const struct predict_job_in *in, double comm_k_ms, double *exposed_k_ms)
{
    double hidden = in->comm_ms - in->exposed_ms;
    if (hidden < 0)
        hidden = 0; /* (the split's comm may count a wait the durations do not) */
    double exposed = comm_k_ms - hidden;
    *exposed_k_ms = exposed > 0 ? exposed : 0;
    return in->step_ms - in->exposed_ms + *exposed_k_ms;
}

double predict_invert_bytes(const struct predict_link *l, double t_us)
{
    double lo = 0, hi = 1;
    if (sync_link_ms(l, 0) * 1e3 >= t_us)
        return 0;
    while (sync_link_ms(l, hi) * 1e3 < t_us && hi < 1e18)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-6 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (sync_link_ms(l, mid) * 1e3 < t_us)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

struct predict_link predict_link_coll(double bw_bytes_per_s, double lat_s, int ranks, int coll)
{
    struct predict_link l = predict_ring_link(bw_bytes_per_s, lat_s, ranks);
    if (coll != COLL_ALLREDUCE) {
        l.alpha_us /= 2;
        l.beta_us_per_byte /= 2;
    }
    return l;
}
