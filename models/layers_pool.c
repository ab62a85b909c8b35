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

static const struct layer_ops maxpool_ops = {"maxpool", pool_forward, pool_backward, pool_destroy};
static const struct layer_ops avgpool_ops = {"avgpool", pool_forward, pool_backward, pool_destroy};

static int pool_layer(struct model *m, const char *name, int in, int k, int stride, int pad, int ceil_mode, int alg)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    struct pool *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = (struct pool_dims){
        .B = m->batch, .C = t.c, .H = t.h, .W = t.w, .k = k, .stride = stride, .pad = pad, .ceil_mode = ceil_mode};
    pool_dims_finish(&s->d);
    if (s->d.OH <= 0 || s->d.OW <= 0 || 2 * pad > k) {
        snprintf(m->err, sizeof(m->err), "%s: pooling %d/%d (pad %d) does not fit %dx%d", name, k, stride, pad, t.h,
                 t.w);
        free(s);
        return -1;
    }
#ifdef DDPTOP_HAVE_CUDA
    if (m->cuda) {
        struct pool_dims d = s->d;
        free(s);
        return cudal_pool(m, name, in, &d, alg == CPU_POOL_MAX);
    }
#endif
    char kerr[200];
    s->k = cpu_pool_create(m->ctx, &s->d, alg, t.blk, kerr, sizeof(kerr));
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
    return pool_layer(m, name, in, k, stride, pad, 0, CPU_POOL_MAX);
}

int layer_maxpool_ceil(struct model *m, const char *name, int in, int k, int stride, int pad)
{
    return pool_layer(m, name, in, k, stride, pad, 1, CPU_POOL_MAX);
}

int layer_avgpool(struct model *m, const char *name, int in, int k, int stride, int pad)
{
    return pool_layer(m, name, in, k, stride, pad, 0, CPU_POOL_AVG);
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

static const struct layer_ops adapool_ops = {"adaptpool", adapool_forward, adapool_backward, layer_free_impl};
static const struct layer_ops gap_ops = {"globalpool", adapool_forward, adapool_backward, layer_free_impl};

static int adapool_layer(struct model *m, const struct layer_ops *ops, const char *name, int in, int oh, int ow)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    if (oh < 1 || ow < 1 || oh > t.h || ow > t.w) {
        snprintf(m->err, sizeof(m->err), "%s: cannot pool %dx%d to %dx%d", name, t.h, t.w, oh, ow);
        return -1;
    }
#ifdef DDPTOP_HAVE_CUDA
    if (m->cuda)
        return cudal_adapool(m, name, in, oh, ow);
#endif
    struct adapool *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    *s = (struct adapool){oh, ow};
    int li = layer_add_out(m, ops, name, in, -1, s, t.c, oh, ow, 1, t.per_sample);
    if (li < 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "omp loops, nChw%dc->nchw", t.blk);
    return m->layers[li].out;
}

int layer_adaptive_avgpool(struct model *m, const char *name, int in, int oh, int ow)
{
    return adapool_layer(m, &adapool_ops, name, in, oh, ow);
}

int layer_global_avgpool(struct model *m, const char *name, int in)
{
    return adapool_layer(m, &gap_ops, name, in, 1, 1);
}
