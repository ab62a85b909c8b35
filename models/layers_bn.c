/* layers_bn.c - batch normalisation (oneDNN, in the input's layout), with
 * PyTorch's semantics: training normalises by the batch's mean and biased
 * variance and moves the running statistics by momentum 0.1 towards the
 * batch mean and the UNBIASED variance; evaluation normalises by the running
 * statistics. eps is 1e-5. The running statistics are state, not
 * parameters: they are neither trained nor communicated, and each rank keeps
 * its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers_internal.h"

struct bn {
    int C;
    int64_t count; /* values per channel in a batch: B*H*W */
    struct cpu_bn *k;
    float *mean, *var;         /* [C] this batch's statistics, for backward */
    float *run_mean, *run_var; /* [C] */
};

static int bn_forward(struct model *m, struct layer *l, int train)
{
    struct bn *s = l->impl;
    const float *gamma = model_param(m, l->param0), *beta = model_param(m, l->param0 + 1);
    float *mean = train ? s->mean : s->run_mean, *var = train ? s->var : s->run_var;
    if (cpu_bn_forward(s->k, T(m, l->out)->val, T(m, l->in)->val, gamma, beta, mean, var, train) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: batch norm forward failed", l->name);
        return -1;
    }
    if (train) {
        float unbias = s->count > 1 ? (float)s->count / (float)(s->count - 1) : 1.0f;
        for (int c = 0; c < s->C; c++) {
            s->run_mean[c] = (1.0f - BN_MOMENTUM) * s->run_mean[c] + BN_MOMENTUM * s->mean[c];
            s->run_var[c] = (1.0f - BN_MOMENTUM) * s->run_var[c] + BN_MOMENTUM * s->var[c] * unbias;
        }
    }
    return 0;
}

static int bn_backward(struct model *m, struct layer *l)
{
    struct bn *s = l->impl;
    int trainable = layer_trainable(m, l), din = wants_grad(m, l->in);
    /* oneDNN always produces the input gradient; an unwanted one goes to the scratch */
    float *dst = din ? din_target(m, l->in) : m->acc;
    if (cpu_bn_backward(s->k, dst, trainable ? model_grad(m, l->param0) : NULL,
                        trainable ? model_grad(m, l->param0 + 1) : NULL, T(m, l->out)->grad, T(m, l->in)->val,
                        model_param(m, l->param0), s->mean, s->var) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: batch norm backward failed", l->name);
        return -1;
    }
    if (din)
        din_done(m, l->in);
    return 0;
}

static void bn_destroy(struct layer *l)
{
    struct bn *s = l->impl;
    if (s) {
        cpu_bn_destroy(s->k);
        free(s->mean);
    }
    free(s);
}

static float *bn_running(struct layer *l, int which)
{
    struct bn *s = l->impl;
    return which ? s->run_var : s->run_mean;
}

static const struct layer_ops bn_ops = {
    .kind = "batchnorm", .forward = bn_forward, .backward = bn_backward, .destroy = bn_destroy, .running = bn_running};

int layer_batchnorm(struct model *m, const char *name, int in)
{
    return in < 0 ? -1 : m->dev.ops->layers.batchnorm(m, name, in);
}

int cpul_batchnorm(struct model *m, const char *name, int in)
{
    struct tensor t = *T(m, in);
    struct bn *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->C = t.c;
    s->count = (int64_t)m->batch * t.h * t.w;
    s->mean = calloc(4 * (size_t)t.c, sizeof(float)); /* mean, var, running mean, running var */
    if (!s->mean) {
        free(s);
        return -1;
    }
    s->var = s->mean + t.c;
    s->run_mean = s->var + t.c;
    s->run_var = s->run_mean + t.c;
    for (int c = 0; c < t.c; c++)
        s->run_var[c] = 1.0f;
    char kerr[200];
    s->k = cpu_bn_create(m->kernels, m->batch, t.c, t.h, t.w, t.blk, BN_EPS, kerr, sizeof(kerr));
    if (!s->k) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s->mean);
        free(s);
        return -1;
    }
    int li = layer_add_out(m, &bn_ops, name, in, -1, s, t.c, t.h, t.w, t.blk, 2 * t.per_sample);
    if (li < 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "%s", cpu_bn_impl(s->k));
    if (bn_params(m, li, t.c) != 0)
        return -1;
    return m->layers[li].out;
}
