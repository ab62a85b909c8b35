/* layers_pool.c - pooling layers: max and average pooling (oneDNN, in the
 * input's layout), adaptive average pooling (PyTorch's possibly overlapping
 * windows) and the global average pool, which both read any layout and
 * write plain data for the classifier that follows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers_internal.h"

/* ---- max and average pooling --------------------------------------------- */
struct pool {
    struct pool_dims d;
    struct cpu_pool *k;
};

static int pool_forward(struct model *m, struct layer *l, int train)
{
    struct pool *s = l->impl;
    if (cpu_pool_forward(s->k, T(m, l->out)->val, T(m, l->in)->val, train) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: pooling forward failed", l->name);
        return -1;
    }
    return 0;
}

static int pool_backward(struct model *m, struct layer *l)
{
    struct pool *s = l->impl;
    if (!wants_grad(m, l->in))
        return 0;
    if (cpu_pool_backward(s->k, din_target(m, l->in), T(m, l->out)->grad) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: pooling backward failed", l->name);
        return -1;
    }
    din_done(m, l->in);
    return 0;
}

static void pool_destroy(struct layer *l)
{
    struct pool *s = l->impl;
    if (s)
        cpu_pool_destroy(s->k);
    free(s);
}

static const struct layer_ops maxpool_ops = {
    .kind = "maxpool", .forward = pool_forward, .backward = pool_backward, .destroy = pool_destroy};
static const struct layer_ops avgpool_ops = {
    .kind = "avgpool", .forward = pool_forward, .backward = pool_backward, .destroy = pool_destroy};

static int pool_layer(struct model *m, const char *name, int in, int k, int stride, int pad, int ceil_mode, int max)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    struct pool_dims d = {
        .B = m->batch, .C = t.c, .H = t.h, .W = t.w, .k = k, .stride = stride, .pad = pad, .ceil_mode = ceil_mode};
    pool_dims_finish(&d);
    if (d.OH <= 0 || d.OW <= 0 || 2 * pad > k) {
        snprintf(m->err, sizeof(m->err), "%s: pooling %d/%d (pad %d) does not fit %dx%d", name, k, stride, pad, t.h,
                 t.w);
        return -1;
    }
    return m->dev.ops->layers.pool(m, name, in, &d, max);
}

int cpul_pool(struct model *m, const char *name, int in, const struct pool_dims *d, int max)
{
    struct tensor t = *T(m, in);
    int alg = max ? CPU_POOL_MAX : CPU_POOL_AVG, k = d->k;
    struct pool *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = *d;
    char kerr[200];
    s->k = cpu_pool_create(m->kernels, &s->d, alg, t.blk, kerr, sizeof(kerr));
    if (!s->k) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s);
        return -1;
    }
    const struct layer_ops *ops = alg == CPU_POOL_MAX ? &maxpool_ops : &avgpool_ops;
    int li =
        layer_add_out(m, ops, name, in, -1, s, t.c, s->d.OH, s->d.OW, t.blk, (int64_t)t.c * s->d.OH * s->d.OW * k * k);
    if (li < 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "%s", cpu_pool_impl(s->k));
    return m->layers[li].out;
}

int layer_maxpool(struct model *m, const char *name, int in, int k, int stride, int pad)
{
    return pool_layer(m, name, in, k, stride, pad, 0, 1);
}

int layer_maxpool_ceil(struct model *m, const char *name, int in, int k, int stride, int pad)
{
    return pool_layer(m, name, in, k, stride, pad, 1, 1);
}

int layer_avgpool(struct model *m, const char *name, int in, int k, int stride, int pad)
{
    return pool_layer(m, name, in, k, stride, pad, 0, 0);
}

/* ---- adaptive and global average pooling ----------------------------------- */
struct adapool {
    int oh, ow; /* 1 x 1 for the global pool */
};

static int adapool_forward(struct model *m, struct layer *l, int train)
{
    struct adapool *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (s->oh == 1 && s->ow == 1)
        cpu_global_avgpool_forward(T(m, l->out)->val, in->val, m->batch, in->c, in->h * in->w, in->blk);
    else
        cpu_adaptive_avgpool_forward(T(m, l->out)->val, in->val, m->batch, in->c, in->h, in->w, s->oh, s->ow, in->blk);
    return 0;
}

static int adapool_backward(struct model *m, struct layer *l)
{
    struct adapool *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (!wants_grad(m, l->in))
        return 0;
    if (s->oh == 1 && s->ow == 1)
        cpu_global_avgpool_backward(in->grad, in->grad_set, T(m, l->out)->grad, m->batch, in->c, in->h * in->w,
                                    in->blk);
    else
        cpu_adaptive_avgpool_backward(in->grad, in->grad_set, T(m, l->out)->grad, m->batch, in->c, in->h, in->w, s->oh,
                                      s->ow, in->blk);
    in->grad_set = 1;
    return 0;
}

static const struct layer_ops adapool_ops = {
    .kind = "adaptpool", .forward = adapool_forward, .backward = adapool_backward, .destroy = layer_free_impl};
static const struct layer_ops gap_ops = {
    .kind = "globalpool", .forward = adapool_forward, .backward = adapool_backward, .destroy = layer_free_impl};

static int adapool_layer(struct model *m, const char *name, int in, int oh, int ow, int global)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    if (oh < 1 || ow < 1 || oh > t.h || ow > t.w) {
        snprintf(m->err, sizeof(m->err), "%s: cannot pool %dx%d to %dx%d", name, t.h, t.w, oh, ow);
        return -1;
    }
    return m->dev.ops->layers.adapool(m, name, in, oh, ow, global);
}

int cpul_adapool(struct model *m, const char *name, int in, int oh, int ow, int global)
{
    struct tensor t = *T(m, in);
    struct adapool *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    *s = (struct adapool){oh, ow};
    int li = layer_add_out(m, global ? &gap_ops : &adapool_ops, name, in, -1, s, t.c, oh, ow, 1, t.per_sample);
    if (li < 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "omp loops, nChw%dc->nchw", t.blk);
    return m->layers[li].out;
}

int layer_adaptive_avgpool(struct model *m, const char *name, int in, int oh, int ow)
{
    return adapool_layer(m, name, in, oh, ow, 0);
}

int layer_global_avgpool(struct model *m, const char *name, int in)
{
    return adapool_layer(m, name, in, 1, 1, 1);
}
