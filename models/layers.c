/* layers.c - the layers with weights and the layout plumbing: linear,
 * convolution (grouped and depthwise included), flatten, and the layout
 * conversion that the builders insert where a plain layer meets blocked
 * data. Each layer type is a small struct of its own plus a const ops table
 * (llm.c-style forward/backward pairs); a layer never knows about ranks,
 * devices or communication. The other layer types live in layers_eltwise.c,
 * layers_pool.c and layers_bn.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers_internal.h"

/* ---- layout conversion -------------------------------------------------- */
struct layout {
    int from, to; /* blk of input and output */
};

static int layout_forward(struct model *m, struct layer *l, int train)
{
    struct layout *s = l->impl;
    struct tensor *in = T(m, l->in);
    cpu_reorder(T(m, l->out)->val, s->to, 0, in->val, s->from, m->batch, in->c, in->h * in->w);
    return 0;
}

static int layout_backward(struct model *m, struct layer *l)
{
    struct layout *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (!wants_grad(m, l->in))
        return 0;
    cpu_reorder(in->grad, s->from, in->grad_set, T(m, l->out)->grad, s->to, m->batch, in->c, in->h * in->w);
    in->grad_set = 1;
    return 0;
}

static const struct layer_ops layout_ops = {.kind = "layout",
                                            .forward = layout_forward,
                                            .backward = layout_backward,
                                            .destroy = layer_free_impl,
                                            .conversion = 1};

int layer_to_layout(struct model *m, const char *name, int in, int blk)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    if (t.blk == blk)
        return in;
    struct layout *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    *s = (struct layout){t.blk, blk};
    int li = layer_add_out(m, &layout_ops, name, in, -1, s, t.c, t.h, t.w, blk, 0);
    if (li < 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "nChw%dc->nChw%dc", t.blk, blk);
    return m->layers[li].out;
}

/* Converts `in` to plain for a layer that needs it, naming the conversion
 * after that layer. */
static int need_plain(struct model *m, const char *layer_name, int in)
{
    if (in < 0 || T(m, in)->blk == 1)
        return in;
    char nm[MODEL_MAX_NAME];
    snprintf(nm, sizeof(nm), "%.*s.plain", MODEL_MAX_NAME - 8, layer_name);
    return layer_to_layout(m, nm, in, 1);
}

/* ---- linear ------------------------------------------------------------ */
struct linear {
    int in_f, out_f;
    struct cpu_ip *k;
};

static int linear_forward(struct model *m, struct layer *l, int train)
{
    struct linear *s = l->impl;
    if (cpu_ip_forward(s->k, T(m, l->out)->val, T(m, l->in)->val, model_param(m, l->param0),
                       model_param(m, l->param0 + 1)) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: linear forward failed", l->name);
        return -1;
    }
    return 0;
}

static int linear_backward(struct model *m, struct layer *l)
{
    struct linear *s = l->impl;
    int trainable = layer_trainable(m, l), din = wants_grad(m, l->in);
    if (cpu_ip_backward(s->k, din ? din_target(m, l->in) : NULL, trainable ? model_grad(m, l->param0) : NULL,
                        trainable ? model_grad(m, l->param0 + 1) : NULL, T(m, l->out)->grad, T(m, l->in)->val,
                        model_param(m, l->param0)) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: linear backward failed", l->name);
        return -1;
    }
    if (din)
        din_done(m, l->in);
    return 0;
}

static void linear_destroy(struct layer *l)
{
    struct linear *s = l->impl;
    if (s)
        cpu_ip_destroy(s->k);
    free(s);
}

static const struct layer_ops linear_ops = {
    .kind = "linear", .forward = linear_forward, .backward = linear_backward, .destroy = linear_destroy};

int layer_linear(struct model *m, const char *name, int in, int out_features)
{
    in = need_plain(m, name, in);
    if (in < 0)
        return -1;
    return m->dev.ops->layers.linear(m, name, in, out_features);
}

int cpul_linear(struct model *m, const char *name, int in, int out_features)
{
    struct linear *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->in_f = (int)T(m, in)->per_sample;
    s->out_f = out_features;
    char kerr[200];
    if (!(s->k = cpu_ip_create(m->kernels, m->batch, s->in_f, out_features, kerr, sizeof(kerr)))) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s);
        return -1;
    }
    int li = layer_add_out(m, &linear_ops, name, in, -1, s, out_features, 1, 1, 1, 2LL * s->in_f * out_features);
    if (li < 0)
        return -1;
    if (linear_params(m, li, s->in_f, out_features) != 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "%s", cpu_ip_impl(s->k));
    return m->layers[li].out;
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
    int trainable = layer_trainable(m, l), din = wants_grad(m, l->in);
    if (!din && !trainable)
        return 0;
    if (cpu_conv_backward(s->k, din ? din_target(m, l->in) : NULL, 0, trainable ? model_grad(m, l->param0) : NULL,
                          trainable && s->bias ? model_grad(m, l->param0 + 1) : NULL, T(m, l->out)->grad,
                          T(m, l->in)->val, model_param(m, l->param0)) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: convolution backward failed", l->name);
        return -1;
    }
    if (din)
        din_done(m, l->in);
    return 0;
}

static void conv_destroy(struct layer *l)
{
    struct conv *s = l->impl;
    if (s)
        cpu_conv_destroy(s->k);
    free(s);
}

static const struct layer_ops conv_ops = {
    .kind = "conv2d", .forward = conv_forward, .backward = conv_backward, .destroy = conv_destroy};

/* Layouts for a convolution, in order of preference. oneDNN's fast kernels
 * want blocked data on both sides, except a first layer (few input
 * channels) that reads plain input; for other plain inputs its blocked
 * kernels have no backward pass, so a wide plain input is converted. A
 * candidate is used when oneDNN has a non-reference kernel for every pass
 * the layer runs. */
static int conv_candidates(const struct tensor *in, int out_ch, int cand[3][2])
{
    int blk = cpu_preferred_blk(), n = 0;
    if (blk == 1) {
        cand[n][0] = 1, cand[n][1] = 1, n++;
        return n;
    }
    if (in->blk > 1) {
        /* oneDNN's AVX2 kernels lack a blocked backward-weights pass for
         * some small planes (3x3 over 2x2): plain GEMM-based then */
        cand[n][0] = in->blk, cand[n][1] = in->blk, n++;
        cand[n][0] = 1, cand[n][1] = 1, n++;
        return n;
    }
    if (in->c >= 16) {
        cand[n][0] = blk, cand[n][1] = blk, n++; /* convert the input */
        cand[n][0] = 1, cand[n][1] = 1, n++;
        return n;
    }
    /* a first layer: blocked output even for 6 channels, as oneDNN's
     * blocked kernels beat its GEMM-based one by 3-6x even on the padding */
    cand[n][0] = 1, cand[n][1] = blk, n++;
    cand[n][0] = 1, cand[n][1] = 1, n++;
    cand[n][0] = blk, cand[n][1] = blk, n++;
    return n;
}

int layer_conv2d(struct model *m, const char *name, int in, int out_ch, int k, int stride, int pad, int groups,
                 int bias)
{
    if (in < 0)
        return -1;
    struct tensor t = *T(m, in);
    struct conv_dims d = {.B = m->batch,
                          .C = t.c,
                          .H = t.h,
                          .W = t.w,
                          .OC = out_ch,
                          .KH = k,
                          .KW = k,
                          .stride = stride,
                          .pad = pad,
                          .groups = groups};
    conv_dims_finish(&d);
    if (t.c % d.groups || out_ch % d.groups || d.OH <= 0 || d.OW <= 0) {
        snprintf(m->err, sizeof(m->err), "%s: bad convolution shape %dx%dx%d -> %d (k %d, groups %d)", name, t.c, t.h,
                 t.w, out_ch, k, d.groups);
        return -1;
    }
    return m->dev.ops->layers.conv2d(m, name, in, &d, bias);
}

int cpul_conv2d(struct model *m, const char *name, int in, const struct conv_dims *d, int bias)
{
    struct tensor t = *T(m, in);
    int out_ch = d->OC;
    struct conv *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = *d;
    s->bias = bias;
    int cand[3][2], ncand = conv_candidates(&t, out_ch, cand), src_blk = 1, blk = 1, fallback = -1;
    char kerr[200] = "";
    for (int i = 0; i < ncand && !s->k; i++) {
        s->k = cpu_conv_create_blk(m->kernels, &s->d, bias, cand[i][0], cand[i][1], kerr, sizeof(kerr));
        if (!s->k)
            continue; /* no primitive at all for these layouts: try the next */
        /* an input with no parameters upstream (the model input, or a
         * transform of it) never needs its gradient: backward-data never runs */
        if (cpu_conv_uses_ref(s->k, t.need_grad)) {
            fallback = fallback < 0 ? i : fallback;
            cpu_conv_destroy(s->k);
            s->k = NULL;
            continue;
        }
        src_blk = cand[i][0];
        blk = cand[i][1];
    }
    if (!s->k && fallback >= 0) {
        /* only oneDNN's reference loops: slow, but right */
        src_blk = cand[fallback][0];
        blk = cand[fallback][1];
        s->k = cpu_conv_create_blk(m->kernels, &s->d, bias, src_blk, blk, kerr, sizeof(kerr));
    }
    if (!s->k) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s);
        return -1;
    }
    if (src_blk != t.blk) {
        char nm[MODEL_MAX_NAME];
        snprintf(nm, sizeof(nm), "%.*s.blocked", MODEL_MAX_NAME - 10, name);
        if ((in = layer_to_layout(m, nm, in, src_blk)) < 0) {
            conv_destroy(&(struct layer){.impl = s});
            return -1;
        }
    }
    int li = layer_add_out(m, &conv_ops, name, in, -1, s, out_ch, s->d.OH, s->d.OW, blk, conv_flops(&s->d));
    if (li < 0)
        return -1;
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "%s", cpu_conv_impl(s->k));
    if (conv_params(m, li, &s->d, bias) != 0)
        return -1;
    return m->layers[li].out;
}

/* ---- zero padding (plain layout) ------------------------------------------- */
struct pad {
    int p;
};

static int pad_forward(struct model *m, struct layer *l, int train)
{
    struct pad *s = l->impl;
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    memset(out->val, 0, sizeof(float) * (size_t)tensor_len(m, l->out));
    for (int n = 0; n < m->batch * in->c; n++)
        for (int y = 0; y < in->h; y++)
            memcpy(out->val + ((size_t)n * out->h + y + s->p) * out->w + s->p,
                   in->val + ((size_t)n * in->h + y) * in->w, sizeof(float) * (size_t)in->w);
    return 0;
}

static int pad_backward(struct model *m, struct layer *l)
{
    struct pad *s = l->impl;
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    if (!wants_grad(m, l->in))
        return 0;
    for (int n = 0; n < m->batch * in->c; n++)
        for (int y = 0; y < in->h; y++)
            cpu_copy_acc(in->grad + ((size_t)n * in->h + y) * in->w, in->grad_set,
                         out->grad + ((size_t)n * out->h + y + s->p) * out->w + s->p, in->w);
    in->grad_set = 1;
    return 0;
}

static const struct layer_ops pad_ops = {
    .kind = "pad", .forward = pad_forward, .backward = pad_backward, .destroy = layer_free_impl};

int layer_pad(struct model *m, const char *name, int in, int p)
{
    if ((in = need_plain(m, name, in)) < 0)
        return -1;
    return m->dev.ops->layers.pad(m, name, in, p);
}

int cpul_pad(struct model *m, const char *name, int in, int p)
{
    struct pad *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    s->p = p;
    struct tensor t = *T(m, in);
    int li = layer_add_out(m, &pad_ops, name, in, -1, s, t.c, t.h + 2 * p, t.w + 2 * p, 1, 0);
    return li < 0 ? -1 : m->layers[li].out;
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

static const struct layer_ops flatten_ops = {
    .kind = "flatten", .forward = flatten_forward, .backward = flatten_backward};

int layer_flatten(struct model *m, const char *name, int in)
{
    if (in < 0)
        return -1;
    /* C x 1 x 1 with whole channel blocks is already plain in memory */
    struct tensor *t = T(m, in);
    int view = t->blk == 1 || (t->h * t->w == 1 && t->c % t->blk == 0);
    if (!view && (in = need_plain(m, name, in)) < 0)
        return -1;
    int out = model_add_tensor(m, (int)T(m, in)->per_sample, 1, 1);
    if (out < 0)
        return -1;
    /* share the buffers: reshape costs nothing */
    t = T(m, in);
    struct tensor *o = T(m, out);
    model_free_floats(m, o->val);
    model_free_floats(m, o->grad);
    o->val = t->val;
    o->grad = t->grad;
    o->alias_of = in;
    o->no_grad = t->no_grad;
    o->need_grad = t->need_grad;
    int li = model_add_layer(m, &flatten_ops, name, in, -1, NULL);
    if (li < 0)
        return -1;
    m->layers[li].out = out;
    return out;
}
