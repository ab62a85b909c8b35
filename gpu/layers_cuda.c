/* layers_cuda.c - every layer type on the GPU: the CUDA device's layer
 * builders (device.h), to which the builders in layers*.c hand over once a
 * shape is checked. Tensors are plain NCHW in device memory; convolution, pooling
 * and batch norm run cuDNN, linear layers cuBLAS, the rest our kernels
 * (kernels_cuda.cu). Everything is enqueued on the model's stream; nothing
 * here waits for the GPU.
 *
 * The input-gradient protocol is the CPU's (the first writer writes, later
 * ones add), except that every GPU kernel can add in place, so none needs
 * the model's scratch: a layer passes grad_set as its accumulate flag.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers_cuda.h"

#include "chain16.h"
#include "kernels_cuda.h"
#include "layers_internal.h"

/* The model's kernel state on the GPU (device_cuda.c made it). */
static struct cuda_ctx *X(struct model *m)
{
    return m->kernels;
}

static void *S(struct model *m)
{
    return cuda_ctx_stream(X(m));
}

/* A cuDNN/cuBLAS wrapper failed: its message is in the context. */
static int fail(struct model *m, const struct layer *l)
{
    snprintf(m->err, sizeof(m->err), "%s: %s", l->name, cuda_kernels_error(X(m)));
    return -1;
}

/* A kernel launcher returned rc. */
#define LAUNCH(m, l, call)                                                                                             \
    do {                                                                                                               \
        if ((call) != 0) {                                                                                             \
            cuda_ctx_launch_failed(X(m), #call);                                                                       \
            return fail((m), (l));                                                                                     \
        }                                                                                                              \
    } while (0)

/* The tensor's gradient as a write/accumulate target, or NULL when unwanted. */
static float *din_of(struct model *m, int id, int *acc)
{
    if (!wants_grad(m, id))
        return NULL;
    *acc = T(m, id)->grad_set;
    return T(m, id)->grad;
}

static void din_written(struct model *m, int id)
{
    T(m, id)->grad_set = 1;
}

static void kernel_name(struct model *m, int li, const char *what)
{
    snprintf(m->layers[li].kernel, sizeof(m->layers[li].kernel), "%s", what);
}

/* ---- 16-bit activations between layers (chain16.h) ----------------------
 * A tensor with h16 is held in v16 and g16, channels-last. A layer whose
 * output is such a tensor computes in 16 bits, and an input of its that
 * is not one is cast into the layer's scratch (and its gradient widened
 * back from there); model_plan_chain16 sees to it that no other layer
 * reads one. */
static int BF(struct model *m)
{
    return cuda_ctx_precision(X(m)) == PREC_BF16;
}

static int64_t plane(const struct tensor *t)
{
    return (int64_t)t->h * t->w;
}

/* input id as 16-bit channels-last: its own, or cast into scr */
static const uint16_t *in16(struct model *m, struct layer *l, int id, uint16_t *scr)
{
    struct tensor *t = T(m, id);
    if (t->h16)
        return t->v16;
    if (cuk_to_16_nhwc(scr, t->val, m->batch, t->c, plane(t), BF(m), S(m)) != 0) {
        cuda_ctx_launch_failed(X(m), "cuk_to_16_nhwc");
        fail(m, l);
        return NULL;
    }
    return scr;
}

/* Where a 16-bit layer writes input id's gradient (NULL: unwanted): its
 * g16 (*acc: whether to add), or scr for an fp32 tensor, which din16_done
 * then widens into (or adds to) its gradient. */
static uint16_t *din16_of(struct model *m, int id, int *acc, uint16_t *scr)
{
    if (!wants_grad(m, id))
        return NULL;
    struct tensor *t = T(m, id);
    *acc = t->h16 ? t->grad_set : 0;
    return t->h16 ? t->g16 : scr;
}

static int din16_done(struct model *m, struct layer *l, int id, const uint16_t *scr)
{
    struct tensor *t = T(m, id);
    if (!t->h16)
        LAUNCH(m, l, cuk_from_16_nchw(t->grad, t->grad_set, scr, m->batch, t->c, plane(t), BF(m), S(m)));
    t->grad_set = 1;
    return 0;
}

/* ---- linear (cuBLAS) ------------------------------------------------------ */
struct glinear {
    int in_f, out_f;
};

static int glinear_forward(struct model *m, struct layer *l, int train)
{
    struct glinear *s = l->impl;
    if (cuda_linear_forward(X(m), T(m, l->out)->val, T(m, l->in)->val, model_param(m, l->param0),
                            model_param(m, l->param0 + 1), m->batch, s->in_f, s->out_f) != 0)
        return fail(m, l);
    return 0;
}

static int glinear_backward(struct model *m, struct layer *l)
{
    struct glinear *s = l->impl;
    int acc = 0, trainable = layer_trainable(m, l);
    float *din = din_of(m, l->in, &acc);
    if (!din && !trainable)
        return 0;
    if (cuda_linear_backward(X(m), din, acc, trainable ? model_grad(m, l->param0) : NULL,
                             trainable ? model_grad(m, l->param0 + 1) : NULL, T(m, l->out)->grad, T(m, l->in)->val,
                             model_param(m, l->param0), m->batch, s->in_f, s->out_f) != 0)
        return fail(m, l);
    if (din)
        din_written(m, l->in);
    return 0;
}

static const struct layer_ops glinear_ops = {
    .kind = "linear", .forward = glinear_forward, .backward = glinear_backward, .destroy = layer_free_impl};

int cudal_linear(struct model *m, const char *name, int in, int out_f)
{
    struct glinear *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    *s = (struct glinear){(int)T(m, in)->per_sample, out_f};
    int li = layer_add_out(m, &glinear_ops, name, in, -1, s, out_f, 1, 1, 1, 2LL * s->in_f * out_f);
    if (li < 0 || linear_params(m, li, s->in_f, out_f) != 0)
        return -1;
    if (cuda_linear_prepare(X(m), m->batch, s->in_f, out_f) != 0) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, cuda_kernels_error(X(m)));
        return -1;
    }
    int p = cuda_ctx_precision(X(m));
    kernel_name(m, li, p == PREC_BF16 ? "cublasGemmEx bf16" : p == PREC_FP16 ? "cublasGemmEx fp16" : "cublasSgemm");
    return m->layers[li].out;
}

/* ---- convolution (cuDNN) -------------------------------------------------- */
struct gconv {
    struct conv_dims d;
    int bias;
    struct cuda_conv *k;
};

static int gconv_forward(struct model *m, struct layer *l, int train)
{
    struct gconv *s = l->impl;
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    if (cuda_conv_forward16(s->k, out->val, out->h16 ? out->v16 : NULL, in->val, in->h16 ? in->v16 : NULL,
                            model_param(m, l->param0), s->bias ? model_param(m, l->param0 + 1) : NULL) != 0)
        return fail(m, l);
    return 0;
}

static int gconv_backward(struct model *m, struct layer *l)
{
    struct gconv *s = l->impl;
    struct tensor *in = T(m, l->in), *out = T(m, l->out);
    int acc = 0, trainable = layer_trainable(m, l);
    float *din = in->h16 ? NULL : din_of(m, l->in, &acc);
    uint16_t *dx16 = in->h16 ? din16_of(m, l->in, &acc, NULL) : NULL;
    if (!din && !dx16 && !trainable)
        return 0;
    if (cuda_conv_backward16(s->k, din, dx16, acc, trainable ? model_grad(m, l->param0) : NULL,
                             trainable && s->bias ? model_grad(m, l->param0 + 1) : NULL, out->h16 ? NULL : out->grad,
                             out->h16 ? out->g16 : NULL, in->val, in->h16 ? in->v16 : NULL,
                             model_param(m, l->param0)) != 0)
        return fail(m, l);
    if (din || dx16)
        din_written(m, l->in);
    return 0;
}

static void gconv_destroy(struct layer *l)
{
    struct gconv *s = l->impl;
    if (s)
        cuda_conv_destroy(s->k);
    free(s);
}

static const struct layer_ops gconv_ops = {
    .kind = "conv2d", .forward = gconv_forward, .backward = gconv_backward, .destroy = gconv_destroy};

int cudal_conv2d(struct model *m, const char *name, int in, const struct conv_dims *d, int bias)
{
    struct gconv *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = *d;
    s->bias = bias;
    char kerr[200];
    if (!(s->k = cuda_conv_create(X(m), d, bias, kerr, sizeof(kerr)))) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s);
        return -1;
    }
    int li = layer_add_out(m, &gconv_ops, name, in, -1, s, d->OC, d->OH, d->OW, 1, conv_flops(d));
    if (li < 0 || conv_params(m, li, d, bias) != 0)
        return -1;
    cuda_conv_describe(s->k, m->layers[li].kernel, sizeof(m->layers[li].kernel));
    return m->layers[li].out;
}

/* ---- element-wise: relu, relu6, dropout, add -------------------------------- */
enum { CUDAL_RELU = 0, CUDAL_RELU6, CUDAL_DROPOUT, CUDAL_ADD };

struct gelt {
    int kind; /* CUDAL_* */
    float p;
    int ordinal;          /* dropout: among the model's dropout layers */
    uint64_t calls;       /* dropout: training forwards so far */
    uint8_t *mask;        /* dropout: [batch, per_sample], device */
    struct cuda_act *act; /* relu, relu6: cuDNN's activation */
    uint16_t *scr[2];     /* 16-bit output: the fp32 inputs cast (relu, add) */
};

/* relu and add with a 16-bit output */
static int gelt_forward16(struct model *m, struct layer *l)
{
    struct gelt *s = l->impl;
    struct tensor *out = T(m, l->out);
    int64_t n = tensor_len(m, l->out);
    const uint16_t *a = in16(m, l, l->in, s->scr[0]);
    if (!a)
        return -1;
    if (s->kind == CUDAL_RELU) {
        LAUNCH(m, l, c16_relu(out->v16, a, n, BF(m), S(m)));
        return 0;
    }
    const uint16_t *b = in16(m, l, l->in2, s->scr[1]);
    if (!b)
        return -1;
    LAUNCH(m, l, c16_add(out->v16, a, b, n, BF(m), S(m)));
    return 0;
}

static int gelt_backward16(struct model *m, struct layer *l)
{
    struct gelt *s = l->impl;
    struct tensor *out = T(m, l->out);
    int64_t n = tensor_len(m, l->out);
    if (s->kind == CUDAL_RELU) {
        int acc = 0;
        uint16_t *d = din16_of(m, l->in, &acc, s->scr[0]);
        if (!d)
            return 0;
        LAUNCH(m, l, c16_relu_backward(d, acc, out->g16, out->v16, n, BF(m), S(m)));
        return din16_done(m, l, l->in, d);
    }
    /* add: the output's gradient goes to each input as it is (an fp32
     * input's widened straight from it) */
    const int ids[2] = {l->in, l->in2};
    for (int k = 0; k < 2; k++) {
        struct tensor *t = T(m, ids[k]);
        if (!wants_grad(m, ids[k]))
            continue;
        if (t->h16)
            LAUNCH(m, l, c16_copy_acc(t->g16, t->grad_set, out->g16, n, BF(m), S(m)));
        if (din16_done(m, l, ids[k], out->g16) != 0)
            return -1;
    }
    return 0;
}

static int gelt_forward(struct model *m, struct layer *l, int train)
{
    struct gelt *s = l->impl;
    if (T(m, l->out)->h16)
        return gelt_forward16(m, l);
    float *out = T(m, l->out)->val;
    const float *in = T(m, l->in)->val;
    int64_t n = tensor_len(m, l->out);
    switch (s->kind) {
    case CUDAL_RELU:
    case CUDAL_RELU6:
        if (cuda_act_forward(s->act, out, in) != 0)
            return fail(m, l);
        break;
    case CUDAL_DROPOUT:
        if (!train || s->p == 0.0f) {
            LAUNCH(m, l, cuk_copy_acc(out, 0, in, n, S(m)));
        } else {
            uint64_t key = dropout_key(m->seed, s->ordinal, s->calls);
            if (!m->dropout_hold)
                s->calls++;
            LAUNCH(m, l, cuk_dropout_forward(out, s->mask, in, n, s->p, key, S(m)));
        }
        break;
    default:
        LAUNCH(m, l, cuk_add(out, in, T(m, l->in2)->val, n, S(m)));
        break;
    }
    return 0;
}

static int gelt_backward(struct model *m, struct layer *l)
{
    struct gelt *s = l->impl;
    if (T(m, l->out)->h16)
        return gelt_backward16(m, l);
    const float *g = T(m, l->out)->grad, *out = T(m, l->out)->val;
    int64_t n = tensor_len(m, l->out);
    int acc = 0;
    float *din = din_of(m, l->in, &acc);
    switch (s->kind) {
    case CUDAL_RELU:
    case CUDAL_RELU6:
        if (din && cuda_act_backward(s->act, din, acc, g, out, T(m, l->in)->val) != 0)
            return fail(m, l);
        break;
    case CUDAL_DROPOUT:
        if (din && s->p == 0.0f)
            LAUNCH(m, l, cuk_copy_acc(din, acc, g, n, S(m)));
        else if (din)
            LAUNCH(m, l, cuk_dropout_backward(din, acc, g, s->mask, s->p, n, S(m)));
        break;
    default: {
        if (din)
            LAUNCH(m, l, cuk_copy_acc(din, acc, g, n, S(m)));
        if (din)
            din_written(m, l->in);
        int acc2 = 0;
        float *din2 = din_of(m, l->in2, &acc2);
        if (din2)
            LAUNCH(m, l, cuk_copy_acc(din2, acc2, g, n, S(m)));
        if (din2)
            din_written(m, l->in2);
        return 0;
    }
    }
    if (din)
        din_written(m, l->in);
    return 0;
}

static void gelt_destroy(struct layer *l)
{
    struct gelt *s = l->impl;
    if (s) {
        cuda_ctx_free(s->mask);
        cuda_act_destroy(s->act);
        cuda_ctx_free(s->scr[0]);
        cuda_ctx_free(s->scr[1]);
    }
    free(s);
}

static const struct layer_ops grelu_ops = {
    .kind = "relu", .forward = gelt_forward, .backward = gelt_backward, .destroy = gelt_destroy};
static const struct layer_ops grelu6_ops = {
    .kind = "relu6", .forward = gelt_forward, .backward = gelt_backward, .destroy = gelt_destroy};
static const struct layer_ops gdropout_ops = {
    .kind = "dropout", .forward = gelt_forward, .backward = gelt_backward, .destroy = gelt_destroy};
static const struct layer_ops gadd_ops = {
    .kind = "add", .forward = gelt_forward, .backward = gelt_backward, .destroy = gelt_destroy};

static int eltwise(struct model *m, int kind, const char *name, int in, int in2, float p)
{
    struct gelt *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->kind = kind;
    s->p = p;
    struct tensor t = *T(m, in);
    char kerr[200];
    if ((kind == CUDAL_RELU || kind == CUDAL_RELU6) &&
        !(s->act =
              cuda_act_create(X(m), m->batch, t.c, t.h, t.w, kind == CUDAL_RELU6 ? 6.0 : 0.0, kerr, sizeof(kerr)))) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s);
        return -1;
    }
    if (kind == CUDAL_DROPOUT) {
        s->ordinal = m->ndropout++;
        if (!(s->mask = cuda_ctx_alloc(X(m), (size_t)tensor_len(m, in)))) {
            snprintf(m->err, sizeof(m->err), "%s: %s", name, cuda_kernels_error(X(m)));
            free(s);
            return -1;
        }
    }
    const struct layer_ops *ops = kind == CUDAL_RELU    ? &grelu_ops
                                  : kind == CUDAL_RELU6 ? &grelu6_ops
                                  : kind == CUDAL_ADD   ? &gadd_ops
                                                        : &gdropout_ops;
    int li = layer_add_out(m, ops, name, in, kind == CUDAL_ADD ? in2 : -1, s, t.c, t.h, t.w, 1, t.per_sample);
    if (li < 0)
        return -1;
    kernel_name(m, li, s->act ? "cuDNN activation" : "ddptop element-wise");
    return m->layers[li].out;
}

int cudal_relu(struct model *m, const char *name, int in)
{
    return eltwise(m, CUDAL_RELU, name, in, -1, 0.0f);
}

int cudal_relu6(struct model *m, const char *name, int in)
{
    return eltwise(m, CUDAL_RELU6, name, in, -1, 0.0f);
}

int cudal_dropout(struct model *m, const char *name, int in, float p)
{
    return eltwise(m, CUDAL_DROPOUT, name, in, -1, p);
}

int cudal_add(struct model *m, const char *name, int a, int b)
{
    return eltwise(m, CUDAL_ADD, name, a, b, 0.0f);
}

/* ---- pooling: cuDNN, or our kernel for ceil_mode ---------------------------- */
struct gpool {
    struct pool_dims d;
    struct cuda_pool *k; /* NULL: our ceil-mode max-pool */
    int32_t *arg;        /* [batch, C, OH, OW], device, for our max-pool */
    uint8_t *arg16;      /* 16-bit output: [batch, OH, OW, C], each winner's place in its window */
    uint16_t *scr;       /* ... and an fp32 input cast */
};

static int gpool_forward16(struct model *m, struct layer *l)
{
    struct gpool *s = l->impl;
    const struct pool_dims *d = &s->d;
    const uint16_t *x = in16(m, l, l->in, s->scr);
    if (!x)
        return -1;
    LAUNCH(m, l,
           c16_maxpool(T(m, l->out)->v16, s->arg16, x, d->B, d->H, d->W, d->C, d->OH, d->OW, d->k, d->stride, d->pad,
                       BF(m), S(m)));
    return 0;
}

static int gpool_backward16(struct model *m, struct layer *l)
{
    struct gpool *s = l->impl;
    const struct pool_dims *d = &s->d;
    int acc = 0;
    uint16_t *dx = din16_of(m, l->in, &acc, s->scr);
    if (!dx)
        return 0;
    LAUNCH(m, l,
           c16_maxpool_backward(dx, acc, T(m, l->out)->g16, s->arg16, d->B, d->H, d->W, d->C, d->OH, d->OW, d->k,
                                d->stride, d->pad, BF(m), S(m)));
    return din16_done(m, l, l->in, dx);
}

static int gpool_forward(struct model *m, struct layer *l, int train)
{
    struct gpool *s = l->impl;
    const struct pool_dims *d = &s->d;
    if (T(m, l->out)->h16)
        return gpool_forward16(m, l);
    if (s->k) {
        if (cuda_pool_forward(s->k, T(m, l->out)->val, T(m, l->in)->val) != 0)
            return fail(m, l);
        return 0;
    }
    LAUNCH(m, l,
           cuk_maxpool_forward(T(m, l->out)->val, s->arg, T(m, l->in)->val, d->B * d->C, d->H, d->W, d->OH, d->OW, d->k,
                               d->stride, d->pad, S(m)));
    return 0;
}

static int gpool_backward(struct model *m, struct layer *l)
{
    struct gpool *s = l->impl;
    const struct pool_dims *d = &s->d;
    if (T(m, l->out)->h16)
        return gpool_backward16(m, l);
    int acc = 0;
    float *din = din_of(m, l->in, &acc);
    if (!din)
        return 0;
    if (s->k) {
        if (cuda_pool_backward(s->k, din, acc, T(m, l->out)->grad, T(m, l->out)->val, T(m, l->in)->val) != 0)
            return fail(m, l);
    } else {
        LAUNCH(m, l,
               cuk_maxpool_backward(din, acc, T(m, l->out)->grad, s->arg, d->B * d->C, d->H, d->W, d->OH, d->OW, d->k,
                                    d->stride, d->pad, S(m)));
    }
    din_written(m, l->in);
    return 0;
}

static void gpool_destroy(struct layer *l)
{
    struct gpool *s = l->impl;
    if (s) {
        cuda_pool_destroy(s->k);
        cuda_ctx_free(s->arg);
        cuda_ctx_free(s->arg16);
        cuda_ctx_free(s->scr);
    }
    free(s);
}

static const struct layer_ops gmaxpool_ops = {
    .kind = "maxpool", .forward = gpool_forward, .backward = gpool_backward, .destroy = gpool_destroy};
static const struct layer_ops gavgpool_ops = {
    .kind = "avgpool", .forward = gpool_forward, .backward = gpool_backward, .destroy = gpool_destroy};

int cudal_pool(struct model *m, const char *name, int in, const struct pool_dims *d, int max)
{
    struct gpool *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->d = *d;
    char kerr[200] = "";
    if (max && d->ceil_mode && d->pad_r != d->pad) {
        /* cuDNN pads symmetrically: ceil_mode's extra window is ours */
        s->arg = cuda_ctx_alloc(X(m), sizeof(int32_t) * (size_t)d->B * d->C * d->OH * d->OW);
        if (!s->arg)
            snprintf(kerr, sizeof(kerr), "%s", cuda_kernels_error(X(m)));
    } else {
        s->k =
            max ? cuda_maxpool_create(X(m), d, kerr, sizeof(kerr)) : cuda_avgpool_create(X(m), d, kerr, sizeof(kerr));
    }
    if (!s->k && !s->arg) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        free(s);
        return -1;
    }
    int li = layer_add_out(m, max ? &gmaxpool_ops : &gavgpool_ops, name, in, -1, s, d->C, d->OH, d->OW, 1,
                           (int64_t)d->C * d->OH * d->OW * d->k * d->k);
    if (li < 0)
        return -1;
    kernel_name(m, li, s->k ? "cuDNN pooling" : "ddptop ceil-mode max-pool");
    return m->layers[li].out;
}

/* ---- adaptive and global average pooling (ours) ------------------------------ */
struct gadapool {
    int oh, ow;
};

static int gadapool_forward(struct model *m, struct layer *l, int train)
{
    struct gadapool *s = l->impl;
    struct tensor *in = T(m, l->in);
    if (in->h16) {
        LAUNCH(m, l, c16_adapool(T(m, l->out)->val, in->v16, m->batch, in->h, in->w, in->c, s->oh, s->ow, BF(m), S(m)));
        return 0;
    }
    LAUNCH(m, l, cuk_adapool_forward(T(m, l->out)->val, in->val, m->batch * in->c, in->h, in->w, s->oh, s->ow, S(m)));
    return 0;
}

static int gadapool_backward(struct model *m, struct layer *l)
{
    struct gadapool *s = l->impl;
    struct tensor *in = T(m, l->in);
    int acc = 0;
    if (in->h16) {
        uint16_t *dx = din16_of(m, l->in, &acc, NULL);
        if (!dx)
            return 0;
        LAUNCH(m, l,
               c16_adapool_backward(dx, acc, T(m, l->out)->grad, m->batch, in->h, in->w, in->c, s->oh, s->ow, BF(m),
                                    S(m)));
        return din16_done(m, l, l->in, dx);
    }
    float *din = din_of(m, l->in, &acc);
    if (!din)
        return 0;
    LAUNCH(m, l,
           cuk_adapool_backward(din, acc, T(m, l->out)->grad, m->batch * in->c, in->h, in->w, s->oh, s->ow, S(m)));
    din_written(m, l->in);
    return 0;
}

static const struct layer_ops gadapool_ops = {
    .kind = "adaptpool", .forward = gadapool_forward, .backward = gadapool_backward, .destroy = layer_free_impl};
static const struct layer_ops ggap_ops = {
    .kind = "globalpool", .forward = gadapool_forward, .backward = gadapool_backward, .destroy = layer_free_impl};

int cudal_adapool(struct model *m, const char *name, int in, int oh, int ow, int global)
{
    struct gadapool *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    *s = (struct gadapool){oh, ow};
    struct tensor t = *T(m, in);
    int li = layer_add_out(m, global ? &ggap_ops : &gadapool_ops, name, in, -1, s, t.c, oh, ow, 1, t.per_sample);
    if (li < 0)
        return -1;
    kernel_name(m, li, "ddptop adaptive average pool");
    return m->layers[li].out;
}

/* ---- batch norm (cuDNN) ------------------------------------------------------- */
struct gbn {
    struct cuda_bn *k;
    float *run_mean, *run_var; /* [C] each, device */
    struct c16_bn_state st;    /* 16-bit output: its statistics and partial sums */
    uint16_t *scr;             /* ... and an fp32 input cast (kept for backward) */
};

static int gbn_forward16(struct model *m, struct layer *l, int train)
{
    struct gbn *s = l->impl;
    struct tensor *in = T(m, l->in);
    const uint16_t *x = in16(m, l, l->in, s->scr);
    if (!x)
        return -1;
    LAUNCH(m, l,
           c16_bn_forward(T(m, l->out)->v16, x, (int64_t)m->batch * plane(in), in->c, model_param(m, l->param0),
                          model_param(m, l->param0 + 1), s->run_mean, s->run_var, BN_MOMENTUM, BN_EPS, train, &s->st,
                          BF(m), S(m)));
    return 0;
}

static int gbn_backward16(struct model *m, struct layer *l)
{
    struct gbn *s = l->impl;
    struct tensor *in = T(m, l->in);
    int acc = 0, trainable = layer_trainable(m, l);
    /* an fp32 input's gradient overwrites its cast, value by value */
    uint16_t *dx = din16_of(m, l->in, &acc, s->scr);
    if (!dx && !trainable)
        return 0;
    LAUNCH(m, l,
           c16_bn_backward(dx, acc, T(m, l->out)->g16, in->h16 ? in->v16 : s->scr, (int64_t)m->batch * plane(in), in->c,
                           model_param(m, l->param0), trainable ? model_grad(m, l->param0) : NULL,
                           trainable ? model_grad(m, l->param0 + 1) : NULL, &s->st, BF(m), S(m)));
    return dx ? din16_done(m, l, l->in, dx) : 0;
}

static int gbn_forward(struct model *m, struct layer *l, int train)
{
    struct gbn *s = l->impl;
    if (T(m, l->out)->h16)
        return gbn_forward16(m, l, train);
    if (cuda_bn_forward(s->k, T(m, l->out)->val, T(m, l->in)->val, model_param(m, l->param0),
                        model_param(m, l->param0 + 1), s->run_mean, s->run_var, BN_MOMENTUM, train) != 0)
        return fail(m, l);
    return 0;
}

static int gbn_backward(struct model *m, struct layer *l)
{
    struct gbn *s = l->impl;
    if (T(m, l->out)->h16)
        return gbn_backward16(m, l);
    int acc = 0, trainable = layer_trainable(m, l);
    float *din = din_of(m, l->in, &acc);
    if (!din && !trainable)
        return 0;
    /* cuDNN always produces the input gradient: an unwanted one goes to the scratch */
    if (cuda_bn_backward(s->k, din ? din : m->acc, din ? acc : 0, trainable ? model_grad(m, l->param0) : NULL,
                         trainable ? model_grad(m, l->param0 + 1) : NULL, T(m, l->out)->grad, T(m, l->in)->val,
                         model_param(m, l->param0)) != 0)
        return fail(m, l);
    if (din)
        din_written(m, l->in);
    return 0;
}

static void gbn_destroy(struct layer *l)
{
    struct gbn *s = l->impl;
    if (s) {
        cuda_bn_destroy(s->k);
        cuda_ctx_free(s->run_mean);
        cuda_ctx_free(s->st.partial);
        cuda_ctx_free(s->st.mean);
        cuda_ctx_free(s->scr);
    }
    free(s);
}

static float *gbn_running(struct layer *l, int which)
{
    struct gbn *s = l->impl;
    return which ? s->run_var : s->run_mean;
}

static const struct layer_ops gbn_ops = {.kind = "batchnorm",
                                         .forward = gbn_forward,
                                         .backward = gbn_backward,
                                         .destroy = gbn_destroy,
                                         .running = gbn_running};

int cudal_batchnorm(struct model *m, const char *name, int in)
{
    struct tensor t = *T(m, in);
    struct gbn *s = calloc(1, sizeof(*s));
    float *ones = malloc(sizeof(float) * (size_t)t.c);
    char kerr[200] = "out of memory";
    if (s && ones)
        s->run_mean = cuda_ctx_alloc(X(m), sizeof(float) * 2 * (size_t)t.c); /* zeroed */
    if (s && s->run_mean) {
        s->run_var = s->run_mean + t.c;
        for (int c = 0; c < t.c; c++)
            ones[c] = 1.0f;
        if (model_memcpy(m, s->run_var, ones, sizeof(float) * (size_t)t.c) == 0)
            s->k = cuda_bn_create(X(m), m->batch, t.c, t.h, t.w, BN_EPS, kerr, sizeof(kerr));
        else
            snprintf(kerr, sizeof(kerr), "%.190s", m->err);
    } else if (s && ones) {
        snprintf(kerr, sizeof(kerr), "%s", cuda_kernels_error(X(m)));
    }
    free(ones);
    if (!s || !s->k) {
        snprintf(m->err, sizeof(m->err), "%s: %s", name, kerr);
        gbn_destroy(&(struct layer){.impl = s});
        return -1;
    }
    int li = layer_add_out(m, &gbn_ops, name, in, -1, s, t.c, t.h, t.w, 1, 2 * t.per_sample);
    if (li < 0 || bn_params(m, li, t.c) != 0)
        return -1;
    kernel_name(m, li, "cuDNN batch norm");
    return m->layers[li].out;
}

/* ---- channel concatenation and zero padding (ours) ------------------------------- */
static int gconcat_forward(struct model *m, struct layer *l, int train)
{
    struct tensor *a = T(m, l->in), *b = T(m, l->in2), *o = T(m, l->out);
    LAUNCH(m, l, cuk_rows(o->val, o->stride, 0, a->val, a->stride, m->batch, a->stride, S(m)));
    LAUNCH(m, l, cuk_rows(o->val + a->stride, o->stride, 0, b->val, b->stride, m->batch, b->stride, S(m)));
    return 0;
}

static int gconcat_backward(struct model *m, struct layer *l)
{
    struct tensor *a = T(m, l->in), *b = T(m, l->in2), *o = T(m, l->out);
    int acc = 0;
    float *da = din_of(m, l->in, &acc);
    if (da) {
        LAUNCH(m, l, cuk_rows(da, a->stride, acc, o->grad, o->stride, m->batch, a->stride, S(m)));
        din_written(m, l->in);
    }
    float *db = din_of(m, l->in2, &acc);
    if (db) {
        LAUNCH(m, l, cuk_rows(db, b->stride, acc, o->grad + a->stride, o->stride, m->batch, b->stride, S(m)));
        din_written(m, l->in2);
    }
    return 0;
}

static const struct layer_ops gconcat_ops = {
    .kind = "concat", .forward = gconcat_forward, .backward = gconcat_backward};

int cudal_concat(struct model *m, const char *name, int a, int b)
{
    struct tensor ta = *T(m, a), tb = *T(m, b);
    int li = layer_add_out(m, &gconcat_ops, name, a, b, NULL, ta.c + tb.c, ta.h, ta.w, 1, 0);
    if (li < 0)
        return -1;
    kernel_name(m, li, "ddptop strided copy");
    return m->layers[li].out;
}

struct gpad {
    int p;
};

static int gpad_forward(struct model *m, struct layer *l, int train)
{
    struct gpad *s = l->impl;
    struct tensor *in = T(m, l->in);
    LAUNCH(m, l, cuk_pad_forward(T(m, l->out)->val, in->val, m->batch * in->c, in->h, in->w, s->p, S(m)));
    return 0;
}

static int gpad_backward(struct model *m, struct layer *l)
{
    struct gpad *s = l->impl;
    struct tensor *in = T(m, l->in);
    int acc = 0;
    float *din = din_of(m, l->in, &acc);
    if (!din)
        return 0;
    LAUNCH(m, l, cuk_pad_backward(din, acc, T(m, l->out)->grad, m->batch * in->c, in->h, in->w, s->p, S(m)));
    din_written(m, l->in);
    return 0;
}

static const struct layer_ops gpad_ops = {
    .kind = "pad", .forward = gpad_forward, .backward = gpad_backward, .destroy = layer_free_impl};

int cudal_pad(struct model *m, const char *name, int in, int p)
{
    struct gpad *s = malloc(sizeof(*s));
    if (!s)
        return -1;
    s->p = p;
    struct tensor t = *T(m, in);
    int li = layer_add_out(m, &gpad_ops, name, in, -1, s, t.c, t.h + 2 * p, t.w + 2 * p, 1, 0);
    if (li < 0)
        return -1;
    kernel_name(m, li, "ddptop pad");
    return m->layers[li].out;
}

/* ---- 16-bit activations between layers: the plan and its buffers ---------- */
static int chain_cap(const struct model *m, const struct layer *l)
{
    if (l->ops == &gconv_ops) {
        const struct gconv *s = l->impl;
        if (!cuda_conv_nhwc(s->k))
            return 0;
        return s->bias ? CHAIN16_IN : CHAIN16_IN | CHAIN16_OUT; /* (a chain's convolutions add no bias) */
    }
    if (l->ops == &gbn_ops || l->ops == &grelu_ops || l->ops == &gadd_ops)
        return CHAIN16_OUT | CHAIN16_PASS;
    if (l->ops == &gmaxpool_ops) {
        const struct gpool *s = l->impl;
        return s->d.k * s->d.k < 255 ? CHAIN16_OUT | CHAIN16_PASS : 0; /* (a window's places are bytes) */
    }
    if (l->ops == &gadapool_ops || l->ops == &ggap_ops)
        return CHAIN16_IN;
    return 0;
}

/* 16-bit room for tensor id's values, on the model's GPU */
static uint16_t *room16(struct model *m, int id)
{
    return cuda_ctx_alloc(X(m), sizeof(uint16_t) * (size_t)m->batch * (size_t)T(m, id)->per_sample);
}

/* The scratch a layer with a 16-bit output casts input id into, when that
 * input is fp32 (NULL otherwise, and when out of memory: *oom). */
static uint16_t *cast_room(struct model *m, int id, int *oom)
{
    if (id < 0 || T(m, id)->h16)
        return NULL;
    uint16_t *p = room16(m, id);
    *oom |= !p;
    return p;
}

int cudal_chain16(struct model *m)
{
    int p = cuda_ctx_precision(X(m));
    const char *env = getenv("DDPTOP_H16_CHAIN");
    if ((p != PREC_BF16 && p != PREC_FP16) || !env || strcmp(env, "1") != 0)
        return 0;
    if (model_plan_chain16(m, chain_cap) == 0)
        return 0;
    if (model_hold16(m) != 0) {
        char e[sizeof(m->err)];
        snprintf(e, sizeof(e), "%s", m->err);
        snprintf(m->err, sizeof(m->err), "16-bit activations: %.200s", e);
        return -1;
    }
    int oom = 0;
    for (int li = 0; li < m->nlayers && !oom; li++) {
        struct layer *l = &m->layers[li];
        int out_h = T(m, l->out)->h16, in_h = T(m, l->in)->h16;
        if (!out_h && !in_h)
            continue;
        if (out_h && l->ops == &gbn_ops) {
            struct gbn *s = l->impl;
            int C = T(m, l->in)->c;
            int64_t rows = (int64_t)m->batch * plane(T(m, l->in));
            s->st.partial = cuda_ctx_alloc(X(m), 2 * sizeof(float) * (size_t)c16_bn_groups(rows, C) * (size_t)C);
            s->st.mean = cuda_ctx_alloc(X(m), 5 * sizeof(float) * (size_t)C);
            oom |= !s->st.partial || !s->st.mean;
            if (s->st.mean) {
                s->st.invstd = s->st.mean + C;
                s->st.scale = s->st.mean + 2 * C;
                s->st.shift = s->st.mean + 3 * C;
                s->st.coef = s->st.mean + 4 * C;
            }
            s->scr = cast_room(m, l->in, &oom);
        } else if (out_h && (l->ops == &grelu_ops || l->ops == &gadd_ops)) {
            struct gelt *s = l->impl;
            s->scr[0] = cast_room(m, l->in, &oom);
            s->scr[1] = l->ops == &gadd_ops ? cast_room(m, l->in2, &oom) : NULL;
        } else if (out_h && l->ops == &gmaxpool_ops) {
            struct gpool *s = l->impl;
            s->arg16 = cuda_ctx_alloc(X(m), (size_t)m->batch * (size_t)T(m, l->out)->per_sample);
            oom |= !s->arg16;
            s->scr = cast_room(m, l->in, &oom);
        }
        /* --info: which layers pass 16-bit tensors on */
        char *k = l->kernel;
        size_t used = strlen(k), room = sizeof(l->kernel) - used;
        if (room > 1)
            snprintf(k + used, room, "%s",
                     out_h && in_h ? " [16-bit NHWC]"
                     : out_h       ? " [to 16-bit NHWC]"
                                   : " [from 16-bit NHWC]");
    }
    if (oom) {
        snprintf(m->err, sizeof(m->err), "16-bit activations: %s", cuda_kernels_error(X(m)));
        return -1;
    }
    return 0;
}
