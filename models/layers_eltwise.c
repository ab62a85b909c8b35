/* layers_eltwise.c - layers without weights that work value by value:
 * ReLU, ReLU6, dropout, residual add and channel concatenation. They run in
 * whatever layout their input has (padded channels stay zero), so they never
 * force a conversion between two blocked oneDNN layers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers_internal.h"

/* ---- relu and relu6 ------------------------------------------------------- */
static int relu_forward(struct model *m, struct layer *l, int train)
{
    cpu_relu_forward(T(m, l->out)->val, T(m, l->in)->val, tensor_len(m, l->in));
    return 0;
}

static int relu_backward(struct model *m, struct layer *l)
{
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    if (!wants_grad(m, l->in))
        return 0;
    cpu_relu_backward(in->grad, in->grad_set, out->grad, out->val, tensor_len(m, l->in));
    in->grad_set = 1;
    return 0;
}

static const struct layer_ops relu_ops = {.kind = "relu", .forward = relu_forward, .backward = relu_backward};

static int relu6_forward(struct model *m, struct layer *l, int train)
{
    cpu_relu6_forward(T(m, l->out)->val, T(m, l->in)->val, tensor_len(m, l->in));
    return 0;
}

static int relu6_backward(struct model *m, struct layer *l)
{
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    if (!wants_grad(m, l->in))
        return 0;
    cpu_relu6_backward(in->grad, in->grad_set, out->grad, out->val, tensor_len(m, l->in));
    in->grad_set = 1;
    return 0;
}

static const struct layer_ops relu6_ops = {.kind = "relu6", .forward = relu6_forward, .backward = relu6_backward};

/* Output the same shape and layout as the input. */
static int same_shape(struct model *m, const struct layer_ops *ops, const char *name, int in, int in2, void *impl,
                      int64_t flops_per_value)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    int li = layer_add_out(m, ops, name, in, in2, impl, t.c, t.h, t.w, t.blk, flops_per_value * t.per_sample);
    return li < 0 ? -1 : m->layers[li].out;
}

int layer_relu(struct model *m, const char *name, int in)
{
    return in < 0 ? -1 : m->dev.ops->layers.relu(m, name, in);
}

int cpul_relu(struct model *m, const char *name, int in)
{
    return same_shape(m, &relu_ops, name, in, -1, NULL, 1);
}

int layer_relu6(struct model *m, const char *name, int in)
{
    return in < 0 ? -1 : m->dev.ops->layers.relu6(m, name, in);
}

int cpul_relu6(struct model *m, const char *name, int in)
{
    return same_shape(m, &relu6_ops, name, in, -1, NULL, 1);
}

/* ---- dropout ----------------------------------------------------------------- */
struct dropout {
    float p;
    int ordinal;    /* among the model's dropout layers */
    uint64_t calls; /* training forwards so far: each draws a new mask */
    uint8_t *mask;  /* [batch, stride] */
};

static int dropout_forward(struct model *m, struct layer *l, int train)
{
    struct dropout *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (!train || s->p == 0.0f) {
        memcpy(T(m, l->out)->val, in->val, sizeof(float) * (size_t)tensor_len(m, l->in));
        return 0;
    }
    uint64_t key = dropout_key(m->seed, s->ordinal, s->calls);
    if (!m->dropout_hold)
        s->calls++;
    cpu_dropout_forward(T(m, l->out)->val, s->mask, in->val, m->batch, in->c, in->h * in->w, in->blk, s->p, key);
    return 0;
}

static int dropout_backward(struct model *m, struct layer *l)
{
    struct dropout *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (!wants_grad(m, l->in))
        return 0;
    if (s->p == 0.0f)
        cpu_copy_acc(in->grad, in->grad_set, T(m, l->out)->grad, tensor_len(m, l->in));
    else
        cpu_dropout_backward(in->grad, in->grad_set, T(m, l->out)->grad, s->mask, s->p, tensor_len(m, l->in));
    in->grad_set = 1;
    return 0;
}

static void dropout_destroy(struct layer *l)
{
    struct dropout *s = l->impl;
    if (s)
        free(s->mask);
    free(s);
}

static const struct layer_ops dropout_ops = {
    .kind = "dropout", .forward = dropout_forward, .backward = dropout_backward, .destroy = dropout_destroy};

int layer_dropout(struct model *m, const char *name, int in, float p)
{
    if (in < 0)
        return -1;
    if (!(p >= 0.0f && p < 1.0f)) {
        snprintf(m->err, sizeof(m->err), "%s: dropout probability %g is not in [0, 1)", name, (double)p);
        return -1;
    }
    return m->dev.ops->layers.dropout(m, name, in, p);
}

int cpul_dropout(struct model *m, const char *name, int in, float p)
{
    struct dropout *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->p = p;
    s->ordinal = m->ndropout++;
    s->mask = malloc((size_t)tensor_len(m, in));
    if (!s->mask) {
        free(s);
        return -1;
    }
    return same_shape(m, &dropout_ops, name, in, -1, s, 1);
}

/* ---- residual add ------------------------------------------------------------ */
static int add_forward(struct model *m, struct layer *l, int train)
{
    cpu_add_forward(T(m, l->out)->val, T(m, l->in)->val, T(m, l->in2)->val, tensor_len(m, l->out));
    return 0;
}

static int add_backward(struct model *m, struct layer *l)
{
    const float *g = T(m, l->out)->grad;
    int ids[2] = {l->in, l->in2};
    for (int k = 0; k < 2; k++)
        if (wants_grad(m, ids[k])) {
            struct tensor *t = T(m, ids[k]);
            cpu_copy_acc(t->grad, t->grad_set, g, tensor_len(m, ids[k]));
            t->grad_set = 1;
        }
    return 0;
}

static const struct layer_ops add_ops = {.kind = "add", .forward = add_forward, .backward = add_backward};

int layer_add(struct model *m, const char *name, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    struct tensor *ta = T(m, a), *tb = T(m, b);
    if (ta->c != tb->c || ta->h != tb->h || ta->w != tb->w) {
        snprintf(m->err, sizeof(m->err), "%s: cannot add %dx%dx%d and %dx%dx%d", name, ta->c, ta->h, ta->w, tb->c,
                 tb->h, tb->w);
        return -1;
    }
    return m->dev.ops->layers.add(m, name, a, b);
}

int cpul_add(struct model *m, const char *name, int a, int b)
{
    if (T(m, a)->blk != T(m, b)->blk) {
        char nm[MODEL_MAX_NAME];
        snprintf(nm, sizeof(nm), "%.*s.layout", MODEL_MAX_NAME - 9, name);
        if ((b = layer_to_layout(m, nm, b, T(m, a)->blk)) < 0)
            return -1;
    }
    return same_shape(m, &add_ops, name, a, b, NULL, 1);
}

/* ---- channel concatenation --------------------------------------------------- */
static int concat_forward(struct model *m, struct layer *l, int train)
{
    cpu_concat_forward(T(m, l->out)->val, T(m, l->in)->val, T(m, l->in)->stride, T(m, l->in2)->val,
                       T(m, l->in2)->stride, m->batch);
    return 0;
}

static int concat_backward(struct model *m, struct layer *l)
{
    struct tensor *a = T(m, l->in), *b = T(m, l->in2);
    int wa = wants_grad(m, l->in), wb = wants_grad(m, l->in2);
    cpu_concat_backward(wa ? a->grad : NULL, a->grad_set, wb ? b->grad : NULL, b->grad_set, T(m, l->out)->grad,
                        a->stride, b->stride, m->batch);
    a->grad_set |= wa;
    b->grad_set |= wb;
    return 0;
}

static const struct layer_ops concat_ops = {.kind = "concat", .forward = concat_forward, .backward = concat_backward};

int layer_concat(struct model *m, const char *name, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    struct tensor *ta = T(m, a), *tb = T(m, b);
    if (ta->h != tb->h || ta->w != tb->w) {
        snprintf(m->err, sizeof(m->err), "%s: cannot concatenate %dx%d and %dx%d maps", name, ta->h, ta->w, tb->h,
                 tb->w);
        return -1;
    }
    return m->dev.ops->layers.concat(m, name, a, b);
}

int cpul_concat(struct model *m, const char *name, int a, int b)
{
    struct tensor *ta = T(m, a), *tb = T(m, b);
    /* each input must be a contiguous run of channels per sample: plain, or
     * the same blocking with the first input ending on a block boundary */
    int blk = ta->blk;
    if (ta->blk != tb->blk || (blk > 1 && ta->c % blk != 0)) {
        char nm[MODEL_MAX_NAME];
        blk = 1;
        snprintf(nm, sizeof(nm), "%.*s.plain0", MODEL_MAX_NAME - 9, name);
        if ((a = layer_to_layout(m, nm, a, 1)) < 0)
            return -1;
        snprintf(nm, sizeof(nm), "%.*s.plain1", MODEL_MAX_NAME - 9, name);
        if ((b = layer_to_layout(m, nm, b, 1)) < 0)
            return -1;
    }
    ta = T(m, a);
    tb = T(m, b);
    int li = layer_add_out(m, &concat_ops, name, a, b, NULL, ta->c + tb->c, ta->h, ta->w, blk, 0);
    return li < 0 ? -1 : m->layers[li].out;
}
