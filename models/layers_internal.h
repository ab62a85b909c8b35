/* layers_internal.h - helpers shared by the layer files (layers*.c), not
 * part of the model API: tensor access, adding a layer with its output
 * tensor, and the input-gradient protocol (first writer writes, later ones
 * add through the model's scratch). */
#ifndef DDPTOP_LAYERS_INTERNAL_H
#define DDPTOP_LAYERS_INTERNAL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_cpu.h"
#include "model.h"

static inline struct tensor *T(struct model *m, int id)
{
    return &m->tensors[id];
}

/* Whether backward should produce the gradient of tensor id at all. */
static inline int wants_grad(struct model *m, int id)
{
    return id >= 0 && T(m, id)->need_grad && tensor_has_grad(T(m, id));
}

/* Whether the layer's parameters train (a layer freezes as a whole). */
static inline int layer_trainable(struct model *m, const struct layer *l)
{
    return l->nparam > 0 && m->params[l->param0].trainable;
}

/* Floats of tensor id over the whole batch, padding included. */
static inline int64_t tensor_len(struct model *m, int id)
{
    return T(m, id)->stride * m->batch;
}

/* Where a kernel that can only write should put tensor id's gradient: the
 * tensor itself for the first contribution, else the model's scratch, which
 * din_done adds in. */
static inline float *din_target(struct model *m, int id)
{
    return T(m, id)->grad_set ? m->acc : T(m, id)->grad;
}

static inline void din_done(struct model *m, int id)
{
    struct tensor *t = T(m, id);
    if (t->grad_set)
        cpu_copy_acc(t->grad, 1, m->acc, tensor_len(m, id));
    t->grad_set = 1;
}

/* Adds a layer with a new output tensor c x h x w in layout blk. On failure
 * the impl is released through ops->destroy and -1 returned (m->err set). */
static inline int layer_add_out(struct model *m, const struct layer_ops *ops, const char *name, int in, int in2,
                                void *impl, int c, int h, int w, int blk, int64_t flops)
{
    int out = model_add_tensor_blk(m, c, h, w, blk);
    if (out < 0) {
        struct layer tmp = {.impl = impl};
        if (ops->destroy)
            ops->destroy(&tmp);
        return -1;
    }
    int li = model_add_layer(m, ops, name, in, in2, impl);
    if (li < 0)
        return -1;
    m->layers[li].out = out;
    m->layers[li].flops = flops;
    /* provisional until model_set_trainable: the layer's parameters set it too */
    T(m, out)->need_grad = (in >= 0 && T(m, in)->need_grad) || (in2 >= 0 && T(m, in2)->need_grad);
    return li;
}

static inline void layer_free_impl(struct layer *l)
{
    free(l->impl);
}

/* Adds parameter "<layer name>.<suffix>" to layer li. */
static inline int layer_param(struct model *m, int li, const char *suffix, int ndim, const int *shape, int init)
{
    char pn[MODEL_MAX_NAME];
    const char *ln = m->layers[li].name;
    size_t a = strlen(ln), b = strlen(suffix);
    if (a + 1 + b >= sizeof(pn)) {
        snprintf(m->err, sizeof(m->err), "%s: parameter name too long", ln);
        return -1;
    }
    memcpy(pn, ln, a);
    pn[a] = '.';
    memcpy(pn + a + 1, suffix, b + 1);
    int p = model_add_param(m, li, pn, ndim, shape);
    if (p >= 0)
        m->params[p].init = init;
    return p;
}

/* The parameters of each kind of layer, registered identically whatever
 * the device, so that flat buffers line up across devices and ranks. */
static inline int linear_params(struct model *m, int li, int in_f, int out_f)
{
    int ws[2] = {out_f, in_f}, bs[1] = {out_f};
    return layer_param(m, li, "weight", 2, ws, PARAM_INIT_FANIN) < 0 ||
                   layer_param(m, li, "bias", 1, bs, PARAM_INIT_FANIN) < 0
               ? -1
               : 0;
}

static inline int conv_params(struct model *m, int li, const struct conv_dims *d, int bias)
{
    int ws[4] = {d->OC, d->C / d->groups, d->KH, d->KW}, bs[1] = {d->OC};
    if (layer_param(m, li, "weight", 4, ws, PARAM_INIT_FANIN) < 0)
        return -1;
    return bias && layer_param(m, li, "bias", 1, bs, PARAM_INIT_FANIN) < 0 ? -1 : 0;
}

static inline int64_t conv_flops(const struct conv_dims *d)
{
    return 2LL * d->OC * d->OH * d->OW * (d->C / d->groups) * d->KH * d->KW;
}

static inline int bn_params(struct model *m, int li, int C)
{
    int cs[1] = {C};
    return layer_param(m, li, "weight", 1, cs, PARAM_INIT_ONE) < 0 ||
                   layer_param(m, li, "bias", 1, cs, PARAM_INIT_ZERO) < 0
               ? -1
               : 0;
}

#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.1f

/* The CPU's builders (device_cpu.c lists them): each layer*() builder in
 * layers*.c checks the shape, then hands over to its device's builder for
 * the kind (device.h); these are the CPU's, in the same files. Tensors may
 * be channel-blocked; the builders insert layout conversions as their
 * kernels need. */
int cpul_linear(struct model *m, const char *name, int in, int out_features);
int cpul_conv2d(struct model *m, const char *name, int in, const struct conv_dims *d, int bias);
int cpul_relu(struct model *m, const char *name, int in);
int cpul_relu6(struct model *m, const char *name, int in);
int cpul_dropout(struct model *m, const char *name, int in, float p);
int cpul_add(struct model *m, const char *name, int a, int b);
int cpul_concat(struct model *m, const char *name, int a, int b);
int cpul_pad(struct model *m, const char *name, int in, int p);
int cpul_pool(struct model *m, const char *name, int in, const struct pool_dims *d, int max);
int cpul_adapool(struct model *m, const char *name, int in, int oh, int ow, int global);
int cpul_batchnorm(struct model *m, const char *name, int in);

#endif
