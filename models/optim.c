/* optim.c - SGD (see optim.h). The update is one pass over four streams
 * (parameters, gradients, momentum; memory-bound: 20 bytes per parameter),
 * vectorised and split over the calling thread's OpenMP team, since for the
 * MLP it is a fifth of a step. */
#include "optim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#ifdef DDPTOP_HAVE_OPENMP
#include <omp.h>
#endif

#include "kernels_cpu.h"
#include "model.h"

#define PAR_MIN 65536 /* floats: below this one thread streams it faster than a team wakes */

VEC_KERNEL(sgd_chunk,
           (float *restrict p, const float *restrict g, float *restrict buf, size_t n, float lr, float momentum,
            float wd, float gs),
           (p, g, buf, n, lr, momentum, wd, gs))
{
    if (momentum != 0.0f)
        for (size_t i = 0; i < n; i++) {
            float b = momentum * buf[i] + (gs * g[i] + wd * p[i]);
            buf[i] = b;
            p[i] -= lr * b;
        }
    else
        for (size_t i = 0; i < n; i++) {
            float d = gs * g[i] + wd * p[i];
            buf[i] = d;
            p[i] -= lr * d;
        }
}

int sgd_init(struct sgd *o, size_t nfloats, float lr, float momentum, float weight_decay, int warmup_steps)
{
    memset(o, 0, sizeof(*o));
    o->grad_scale = 1.0f;
    o->lr = lr;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->warmup_steps = warmup_steps;
    o->n = nfloats;
    o->buf = cpu_alloc((nfloats ? nfloats : 1) * sizeof(float));
    return o->buf ? 0 : -1;
}

int sgd_init_model(struct sgd *o, struct model *m, float lr, float momentum, float weight_decay, int warmup_steps)
{
    if (sgd_init(o, 0, lr, momentum, weight_decay, warmup_steps) != 0)
        return -1;
    free(o->buf);
    o->n = m->nfloats;
    o->owner = m;
    o->buf = model_alloc_floats(m, m->nfloats ? m->nfloats : 1); /* zeroed */
    return o->buf ? 0 : -1;
}

void sgd_free(struct sgd *o)
{
    if (o->owner)
        model_free_floats(o->owner, o->buf);
    else
        free(o->buf);
    o->buf = NULL;
}

void sgd_set_decay(struct sgd *o, long decay_steps)
{
    o->decay_steps = decay_steps;
}

float sgd_lr_at(const struct sgd *o, long t)
{
    if (o->warmup_steps > 0 && t < o->warmup_steps)
        return o->lr * (float)(t + 1) / (float)o->warmup_steps;
    if (o->decay_steps > 0) {
        double span = (double)(o->decay_steps - o->warmup_steps);
        double x = span > 0 ? (double)(t - o->warmup_steps) / span : 1.0;
        if (x > 1.0)
            x = 1.0;
        return (float)(o->lr * 0.5 * (1.0 + cos(M_PI * x)));
    }
    return o->lr;
}

void sgd_update_scaled(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd, float gscale)
{
#ifdef DDPTOP_HAVE_OPENMP
#pragma omp parallel if (n > PAR_MIN)
    {
        size_t t = (size_t)omp_get_thread_num(), T = (size_t)omp_get_num_threads();
        size_t lo = n * t / T, hi = n * (t + 1) / T;
        sgd_chunk(p + lo, g + lo, buf + lo, hi - lo, lr, momentum, wd, gscale);
    }
#else
    sgd_chunk(p, g, buf, n, lr, momentum, wd, gscale);
#endif
}

void sgd_update(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd)
{
    sgd_update_scaled(p, g, buf, n, lr, momentum, wd, 1.0f);
}

int sgd_step(struct sgd *o, struct model *m, long t)
{
    return sgd_step_params(o, m, t, 0, m->nparams);
}

int sgd_step_params(struct sgd *o, struct model *m, long t, int p0, int p1)
{
    float lr = sgd_lr_at(o, t);
    /* one update per run of consecutive trainable tensors: one run, or
     * one kernel on a GPU, when a prefix is frozen */
    size_t lo, hi;
    for (int i = p0; model_next_trainable(m, &i, p1, &lo, &hi);) {
        if (m->dev.ops->sgd_update(m, o->buf, lo, hi, lr, o->momentum, o->weight_decay, o->grad_scale) != 0) {
            snprintf(m->err, sizeof(m->err), "optimizer: %.240s", m->dev.err);
            return -1;
        }
    }
    return 0;
}
