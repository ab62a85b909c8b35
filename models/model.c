/* model.c - the model graph: building, the flat parameter and gradient
 * buffers, forward, loss and backward. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_ref.h"
#include "zoo.h"

static void *alloc_floats(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p)
        memset(p, 0, bytes ? bytes : 64);
    return p;
}

static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return 0;
}

int model_add_tensor(struct model *m, int c, int h, int w)
{
    if (grow((void **)&m->tensors, &m->cap_tensors, m->ntensors + 1, sizeof(struct tensor)) != 0)
        goto oom;
    struct tensor *t = &m->tensors[m->ntensors];
    t->c = c;
    t->h = h;
    t->w = w;
    t->per_sample = (int64_t)c * h * w;
    t->alias_of = -1;
    t->val = alloc_floats((size_t)t->per_sample * m->batch);
    /* the model input (tensor 0) needs no gradient */
    t->grad = m->ntensors == 0 ? NULL : alloc_floats((size_t)t->per_sample * m->batch);
    if (!t->val || (m->ntensors > 0 && !t->grad))
        goto oom;
    return m->ntensors++;
oom:
    snprintf(m->err, sizeof(m->err), "out of memory for a %dx%dx%d activation at batch %d", c, h, w, m->batch);
    return -1;
}

int model_add_param(struct model *m, int layer, const char *name, int ndim, const int *shape)
{
    if (grow((void **)&m->params, &m->cap_params, m->nparams + 1, sizeof(struct param)) != 0) {
        snprintf(m->err, sizeof(m->err), "out of memory");
        return -1;
    }
    struct param *p = &m->params[m->nparams];
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->ndim = ndim;
    p->len = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->len *= (size_t)shape[i];
    }
    p->off = m->nfloats;
    p->layer = layer;
    p->trainable = 1;
    m->nfloats += p->len;
    struct layer *l = &m->layers[layer];
    if (l->nparam == 0)
        l->param0 = m->nparams;
    l->nparam++;
    return m->nparams++;
}

int model_add_layer(struct model *m, const struct layer_ops *ops, const char *name, int in, int in2, void *impl)
{
    if (grow((void **)&m->layers, &m->cap_layers, m->nlayers + 1, sizeof(struct layer)) != 0) {
        snprintf(m->err, sizeof(m->err), "out of memory");
        if (ops->destroy) {
            struct layer tmp = {.impl = impl};
            ops->destroy(&tmp);
        }
        return -1;
    }
    struct layer *l = &m->layers[m->nlayers];
    l->ops = ops;
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->in = in;
    l->in2 = in2;
    l->out = -1;
    l->param0 = m->nparams;
    l->impl = impl;
    return m->nlayers++;
}

void model_init_params(struct model *m, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed);
    for (int i = 0; i < m->nparams; i++) {
        struct param *p = &m->params[i];
        /* fan_in: the weight's elements per output unit; a bias takes its weight's */
        const struct param *w = p->ndim == 1 && i > 0 && m->params[i - 1].layer == p->layer ? &m->params[i - 1] : p;
        size_t fan_in = w->ndim >= 2 ? w->len / (size_t)w->shape[0] : 1;
        float bound = 1.0f / sqrtf((float)fan_in);
        float *v = model_param(m, i);
        for (size_t k = 0; k < p->len; k++)
            v[k] = (float)((2.0 * rng_uniform(&r) - 1.0) * bound);
    }
}

struct model *model_create(const char *name, int batch, int c, int h, int w, int classes, uint64_t seed, char *err,
                           size_t errlen)
{
    const struct zoo_entry *z = zoo_find(name);
    if (!z) {
        snprintf(err, errlen, "unknown model '%s'", name);
        return NULL;
    }
    if (batch <= 0) {
        snprintf(err, errlen, "batch size must be positive");
        return NULL;
    }
    struct model *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->batch = batch;
    m->classes = classes;
    m->input = model_add_tensor(m, c, h, w);
    int out = m->input < 0 ? -1 : z->build(m, m->input, classes);
    if (out < 0)
        goto fail;
    m->output = out;
    if (m->tensors[out].per_sample != classes) {
        snprintf(m->err, sizeof(m->err), "model output has %lld values, expected %d classes",
                 (long long)m->tensors[out].per_sample, classes);
        goto fail;
    }
    m->param_buf = alloc_floats(m->nfloats);
    m->grad_buf = alloc_floats(m->nfloats);
    m->probs = alloc_floats((size_t)batch * classes);
    m->labels = calloc((size_t)batch, sizeof(int32_t));
    if (!m->param_buf || !m->grad_buf || !m->probs || !m->labels) {
        snprintf(m->err, sizeof(m->err), "out of memory for %zu parameters", m->nfloats);
        goto fail;
    }
    model_init_params(m, seed);
    return m;
fail:
    snprintf(err, errlen, "%s: %s", name, m->err[0] ? m->err : "cannot build");
    model_destroy(m);
    return NULL;
}

void model_destroy(struct model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nlayers; i++)
        if (m->layers[i].ops->destroy)
            m->layers[i].ops->destroy(&m->layers[i]);
    for (int i = 0; i < m->ntensors; i++)
        if (m->tensors[i].alias_of < 0) {
            free(m->tensors[i].val);
            free(m->tensors[i].grad);
        }
    free(m->layers);
    free(m->tensors);
    free(m->params);
    free(m->param_buf);
    free(m->grad_buf);
    free(m->probs);
    free(m->labels);
    free(m);
}

int model_forward(struct model *m, int train)
{
    for (int i = 0; i < m->nlayers; i++) {
        struct layer *l = &m->layers[i];
        if (l->ops->forward(m, l, train) != 0)
            return -1;
    }
    return 0;
}

float model_loss(struct model *m, const int32_t *labels, int n, int *correct)
{
    if (n > m->batch)
        n = m->batch;
    memcpy(m->labels, labels, sizeof(int32_t) * (size_t)n);
    return softmax_xent_forward(m->probs, m->tensors[m->output].val, m->labels, n, m->classes, correct);
}

static int backward_layers(struct model *m, grad_ready_fn ready, void *ctx)
{
    for (int i = m->nlayers - 1; i >= 0; i--) {
        struct layer *l = &m->layers[i];
        if (!m->tensors[l->out].grad_set)
            continue; /* nothing flows back through this layer */
        if (l->ops->backward(m, l) != 0)
            return -1;
        if (ready)
            for (int p = l->nparam - 1; p >= 0; p--)
                if (m->params[l->param0 + p].trainable)
                    ready(ctx, l->param0 + p);
    }
    return 0;
}

int model_backward(struct model *m, float grad_scale, grad_ready_fn ready, void *ctx)
{
    for (int i = 0; i < m->ntensors; i++)
        m->tensors[i].grad_set = 0;
    struct tensor *out = &m->tensors[m->output];
    softmax_xent_backward(out->grad, m->probs, m->labels, m->batch, m->classes, grad_scale);
    out->grad_set = 1;
    return backward_layers(m, ready, ctx);
}

int model_backward_dout(struct model *m, const float *dout, grad_ready_fn ready, void *ctx)
{
    for (int i = 0; i < m->ntensors; i++)
        m->tensors[i].grad_set = 0;
    struct tensor *out = &m->tensors[m->output];
    memcpy(out->grad, dout, sizeof(float) * (size_t)m->batch * (size_t)m->classes);
    out->grad_set = 1;
    return backward_layers(m, ready, ctx);
}

int64_t model_flops(const struct model *m)
{
    int64_t f = 0;
    for (int i = 0; i < m->nlayers; i++)
        f += m->layers[i].flops;
    return f;
}

size_t model_trainable_floats(const struct model *m)
{
    size_t n = 0;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].trainable)
            n += m->params[i].len;
    return n;
}
