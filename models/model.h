/* model.h - a model is a graph of layers over named tensors, with every
 * parameter in one flat buffer and every gradient in a second buffer of the
 * same layout, so that allreduce and DDP buckets are slices of it.
 *
 * Layers are kept in topological order. Forward runs them in order; backward
 * runs them in reverse and reports, through a callback, each parameter whose
 * gradient is final (DDP uses it to launch a bucket's allreduce). A tensor
 * read by two layers (a residual input) receives both gradient contributions:
 * the first writer writes, later ones accumulate.
 */
#ifndef DDPTOP_MODEL_H
#define DDPTOP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

#define MODEL_MAX_NAME 48

struct tensor {
    int c, h, w;         /* per-sample shape */
    int64_t per_sample;  /* c*h*w */
    float *val;          /* [batch, c, h, w] */
    float *grad;         /* same shape; NULL for the model input */
    int grad_set;        /* backward: 1 once some layer wrote grad this pass */
    int alias_of;        /* -1, or the tensor whose buffers this one shares */
};

struct param {
    char name[MODEL_MAX_NAME]; /* "conv1.weight" */
    size_t off;                /* offset in floats into param_buf / grad_buf */
    size_t len;                /* floats */
    int ndim, shape[4];
    int layer;
    int trainable;
};

struct model;
struct layer;

struct layer_ops {
    const char *kind;
    int (*forward)(struct model *m, struct layer *l, int train);
    int (*backward)(struct model *m, struct layer *l);
    void (*destroy)(struct layer *l);
};

struct layer {
    const struct layer_ops *ops;
    char name[MODEL_MAX_NAME];
    int in, in2, out;  /* tensor ids; in2 is -1 for one-input layers */
    int param0, nparam; /* the layer's parameters: params[param0 .. param0+nparam) */
    int64_t flops;      /* forward FLOPs per image (multiply-add = 2) */
    void *impl;         /* the layer type's own small struct */
};

struct model {
    char name[MODEL_MAX_NAME];
    int batch;          /* samples per forward (fixed: kernels are built for it) */
    int classes;
    int nlayers, cap_layers;
    struct layer *layers;
    int ntensors, cap_tensors;
    struct tensor *tensors;
    int nparams, cap_params;
    struct param *params;
    size_t nfloats;     /* total parameter floats */
    float *param_buf;   /* [nfloats] */
    float *grad_buf;    /* [nfloats] */
    int input, output;  /* tensor ids */
    float *probs;       /* [batch, classes] softmax, for the loss backward */
    int32_t *labels;    /* [batch] */
    char err[256];      /* the last build or kernel error */
};

/* Called by model_backward when a parameter's gradient is final. */
typedef void (*grad_ready_fn)(void *ctx, int param_index);

/* Builds `name` (see zoo.h) for inputs c x h x w, `classes` outputs and a
 * fixed batch size; parameters are initialised from seed as PyTorch's
 * defaults do. Returns NULL with err set. */
struct model *model_create(const char *name, int batch, int c, int h, int w, int classes, uint64_t seed, char *err,
                           size_t errlen);
void model_destroy(struct model *m);

/* The input buffer, [batch, c, h, w]. */
static inline float *model_input(struct model *m)
{
    return m->tensors[m->input].val;
}

/* Forward over the first n <= batch samples (the rest are computed but
 * ignored). train = 1 for training mode (dropout, batch-norm statistics). */
int model_forward(struct model *m, int train);
/* Softmax cross-entropy of the output against labels[0..n). Returns the mean
 * loss over n; *correct receives the number of argmax hits. */
float model_loss(struct model *m, const int32_t *labels, int n, int *correct);
/* Backward from the loss. grad_scale multiplies dL/dlogits (1/n for a local
 * mean; ranks use 1/n too and average gradients afterwards). Writes grad_buf
 * for every trainable parameter; calls ready(ctx, p) as each one is final. */
int model_backward(struct model *m, float grad_scale, grad_ready_fn ready, void *ctx);
/* Backward from a given dL/dlogits [batch, classes] (DataParallel: rank 0
 * computes the loss of the whole batch and scatters these). */
int model_backward_dout(struct model *m, const float *dout, grad_ready_fn ready, void *ctx);

/* Sum of FLOPs of one forward pass per image. */
int64_t model_flops(const struct model *m);
size_t model_trainable_floats(const struct model *m);

/* ---- builder, used by the zoo ----------------------------------------- */
int model_add_tensor(struct model *m, int c, int h, int w);
int model_add_param(struct model *m, int layer, const char *name, int ndim, const int *shape);
int model_add_layer(struct model *m, const struct layer_ops *ops, const char *name, int in, int in2, void *impl);
static inline float *model_param(struct model *m, int p)
{
    return m->param_buf + m->params[p].off;
}
static inline float *model_grad(struct model *m, int p)
{
    return m->grad_buf + m->params[p].off;
}

/* Layers (layers.c). Each returns its output tensor id, or -1 with m->err set. */
int layer_linear(struct model *m, const char *name, int in, int out_features);
int layer_conv2d(struct model *m, const char *name, int in, int out_ch, int k, int stride, int pad, int groups,
                 int bias);
int layer_relu(struct model *m, const char *name, int in);
int layer_maxpool(struct model *m, const char *name, int in, int k, int stride, int pad);
int layer_flatten(struct model *m, const char *name, int in);

/* Default initialisation (PyTorch's kaiming_uniform(a=sqrt(5)) for weights,
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for biases). */
void model_init_params(struct model *m, uint64_t seed);

#endif
