/* layers.c - the layer types: each a small struct of its own plus a const
 * ops table, with forward and backward calling the CPU kernels. A layer never
 * knows about ranks, devices or communication. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_cpu.h"
#include "model.h"

static struct tensor *T(struct model *m, int id)
{
    return &m->tensors[id];
}

/* Whether backward should produce the gradient of tensor id at all. */
static int wants_grad(struct model *m, int id)
{
    return T(m, id)->grad != NULL;
}

static void layer_free_impl(struct layer *l)
{
    free(l->impl);
}

/* ---- linear ------------------------------------------------------------ */
struct linear {
    int in_f, out_f;
};

static int linear_forward(struct model *m, struct layer *l, int train)
{
    struct linear *s = l->impl;
    cpu_linear_forward(T(m, l->out)->val, T(m, l->in)->val, model_param(m, l->param0), model_param(m, l->param0 + 1),
                       m->batch, s->in_f, s->out_f);
    return 0;
}

static int linear_backward(struct model *m, struct layer *l)
{
    struct linear *s = l->impl;
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    int trainable = m->params[l->param0].trainable;
    float *din = wants_grad(m, l->in) ? in->grad : NULL;
    cpu_linear_backward(din, in->grad_set, trainable ? model_grad(m, l->param0) : NULL,
                        trainable ? model_grad(m, l->param0 + 1) : NULL, out->grad, in->val, model_param(m, l->param0),
                        m->batch, s->in_f, s->out_f);
    if (din)
        in->grad_set = 1;
    return 0;
}

static const struct layer_ops linear_ops = {"linear", linear_forward, linear_backward, layer_free_impl};

int layer_linear(struct model *m, const char *name, int in, int out_features)
{
    struct linear *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->in_f = (int)T(m, in)->per_sample;
    s->out_f = out_features;
    int out = model_add_tensor(m, out_features, 1, 1);
    if (out < 0) {
        free(s);
        return -1;
    }
    int li = model_add_layer(m, &linear_ops, name, in, -1, s);
    if (li < 0)
        return -1;
    m->layers[li].out = out;
    int ws[2] = {out_features, s->in_f}, bs[1] = {out_features};
    char pn[MODEL_MAX_NAME];
    snprintf(pn, sizeof(pn), "%s.weight", name);
    if (model_add_param(m, li, pn, 2, ws) < 0)
        return -1;
    snprintf(pn, sizeof(pn), "%s.bias", name);
    if (model_add_param(m, li, pn, 1, bs) < 0)
        return -1;
    m->layers[li].flops = 2LL * s->in_f * out_features;
    return out;
}

/* ---- conv2d ------------------------------------------------------------ */
struct conv {
    struct conv_dims d;
    int bias;
    struct cpu_conv *k;
};

static int conv_forward(struct model *m, struct layer *l, int train)
{
    struct conv *s = l->impl;
    if (cpu_conv_forward(s->k, T(m, l->out)->val, T(m, l->in)->val, model_param(m, l->param0),
                         s->bias ? model_param(m, l->param0 + 1) : NULL) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: convolution forward failed", l->name);
        return -1;
    }
    return 0;
}

static int conv_backward(struct model *m, struct layer *l)
{
    struct conv *s = l->impl;
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    int trainable = m->params[l->param0].trainable;
    float *din = wants_grad(m, l->in) ? in->grad : NULL;
    if (!din && !trainable)
        return 0;
    if (cpu_conv_backward(s->k, din, in->grad_set, trainable ? model_grad(m, l->param0) : NULL,
                          trainable && s->bias ? model_grad(m, l->param0 + 1) : NULL, out->grad, in->val,
                          model_param(m, l->param0)) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: convolution backward failed", l->name);
        return -1;
    }
    if (din)
        in->grad_set = 1;
    return 0;
}

static void conv_destroy(struct layer *l)
{
    struct conv *s = l->impl;
    if (s)
        cpu_conv_destroy(s->k);
    free(s);
}

static const struct layer_ops conv_ops = {"conv2d", conv_forward, conv_backward, conv_destroy};

int layer_conv2d(struct model *m, const char *name, int in, int out_ch, int k, int stride, int pad, int groups,
                 int bias)
{
    struct tensor *t = T(m, in);
    struct conv *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = (struct conv_dims){.B = m->batch, .C = t->c, .H = t->h, .W = t->w, .OC = out_ch, .KH = k, .KW = k,
                              .stride = stride, .pad = pad, .groups = groups};
    conv_dims_finish(&s->d);
    s->bias = bias;
    if (t->c % s->d.groups || out_ch % s->d.groups || s->d.OH <= 0 || s->d.OW <= 0) {
        snprintf(m->err, sizeof(m->err), "%s: bad convolution shape %dx%dx%d -> %d (k %d, groups %d)", name, t->c,
                 t->h, t->w, out_ch, k, s->d.groups);
        free(s);
        return -1;
    }
    s->k = cpu_conv_create(&s->d, bias, m->err, sizeof(m->err));
    if (!s->k) {
        free(s);
        return -1;
    }
    int out = model_add_tensor(m, out_ch, s->d.OH, s->d.OW);
    int li = out < 0 ? -1 : model_add_layer(m, &conv_ops, name, in, -1, s);
    if (li < 0) {
        cpu_conv_destroy(s->k);
        free(s);
        return -1;
    }
    m->layers[li].out = out;
    int ws[4] = {out_ch, s->d.C / s->d.groups, k, k}, bs[1] = {out_ch};
    char pn[MODEL_MAX_NAME];
    snprintf(pn, sizeof(pn), "%s.weight", name);
    if (model_add_param(m, li, pn, 4, ws) < 0)
        return -1;
    if (bias) {
        snprintf(pn, sizeof(pn), "%s.bias", name);
        if (model_add_param(m, li, pn, 1, bs) < 0)
            return -1;
    }
    m->layers[li].flops = 2LL * out_ch * s->d.OH * s->d.OW * (s->d.C / s->d.groups) * k * k;
    return out;
}

/* ---- relu -------------------------------------------------------------- */
static int relu_forward(struct model *m, struct layer *l, int train)
{
    struct tensor *in = T(m, l->in);
    cpu_relu_forward(T(m, l->out)->val, in->val, in->per_sample * m->batch);
    return 0;
}

static int relu_backward(struct model *m, struct layer *l)
{
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    if (!wants_grad(m, l->in))
        return 0;
    cpu_relu_backward(in->grad, in->grad_set, out->grad, out->val, in->per_sample * m->batch);
    in->grad_set = 1;
    return 0;
}

static const struct layer_ops relu_ops = {"relu", relu_forward, relu_backward, layer_free_impl};

int layer_relu(struct model *m, const char *name, int in)
{
    struct tensor t = *T(m, in);
    int out = model_add_tensor(m, t.c, t.h, t.w);
    int li = out < 0 ? -1 : model_add_layer(m, &relu_ops, name, in, -1, NULL);
    if (li < 0)
        return -1;
    m->layers[li].out = out;
    m->layers[li].flops = T(m, out)->per_sample;
    return out;
}

/* ---- max-pool ---------------------------------------------------------- */
struct maxpool {
    struct pool_dims d;
    int32_t *argmax; /* [batch, C, OH, OW] */
};

static int maxpool_forward(struct model *m, struct layer *l, int train)
{
    struct maxpool *s = l->impl;
    cpu_maxpool_forward(T(m, l->out)->val, s->argmax, T(m, l->in)->val, &s->d);
    return 0;
}

static int maxpool_backward(struct model *m, struct layer *l)
{
    struct maxpool *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (!wants_grad(m, l->in))
        return 0;
    cpu_maxpool_backward(in->grad, in->grad_set, T(m, l->out)->grad, s->argmax, &s->d);
    in->grad_set = 1;
    return 0;
}

static void maxpool_destroy(struct layer *l)
{
    struct maxpool *s = l->impl;
    if (s)
        free(s->argmax);
    free(s);
}

static const struct layer_ops maxpool_ops = {"maxpool", maxpool_forward, maxpool_backward, maxpool_destroy};

int layer_maxpool(struct model *m, const char *name, int in, int k, int stride, int pad)
{
    struct tensor *t = T(m, in);
    struct maxpool *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = (struct pool_dims){.B = m->batch, .C = t->c, .H = t->h, .W = t->w, .k = k, .stride = stride, .pad = pad};
    pool_dims_finish(&s->d);
    if (s->d.OH <= 0 || s->d.OW <= 0) {
        snprintf(m->err, sizeof(m->err), "%s: max-pool %d/%d does not fit %dx%d", name, k, stride, t->h, t->w);
        free(s);
        return -1;
    }
    s->argmax = malloc(sizeof(int32_t) * (size_t)m->batch * t->c * s->d.OH * s->d.OW);
    int out = s->argmax ? model_add_tensor(m, t->c, s->d.OH, s->d.OW) : -1;
    int li = out < 0 ? -1 : model_add_layer(m, &maxpool_ops, name, in, -1, s);
    if (li < 0) {
        free(s->argmax);
        free(s);
        return -1;
    }
    m->layers[li].out = out;
    m->layers[li].flops = (int64_t)s->d.C * s->d.OH * s->d.OW * k * k;
    return out;
}

/* ---- flatten: a view; the output shares the input's buffers ------------ */
static int flatten_forward(struct model *m, struct layer *l, int train)
{
    return 0;
}

static int flatten_backward(struct model *m, struct layer *l)
{
    T(m, l->in)->grad_set = T(m, l->out)->grad_set;
    return 0;
}

static const struct layer_ops flatten_ops = {"flatten", flatten_forward, flatten_backward, layer_free_impl};

int layer_flatten(struct model *m, const char *name, int in)
{
    struct tensor *t = T(m, in);
    int out = model_add_tensor(m, (int)t->per_sample, 1, 1);
    if (out < 0)
        return -1;
    /* share the buffers: reshape costs nothing */
    t = T(m, in);
    struct tensor *o = T(m, out);
    free(o->val);
    free(o->grad);
    o->val = t->val;
    o->grad = t->grad;
    o->alias_of = in;
    int li = model_add_layer(m, &flatten_ops, name, in, -1, NULL);
    if (li < 0)
        return -1;
    m->layers[li].out = out;
    return out;
}
