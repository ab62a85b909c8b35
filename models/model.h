/* model.h - a model is a graph of layers over named tensors, with every
 * parameter in one flat buffer and every gradient in a second buffer of the
 * same layout, so that allreduce and DDP buckets are slices of it.
 *
 * Layers are kept in topological order. Forward runs them in order; backward
 * runs them in reverse and reports, through a callback, each parameter whose
 * gradient is final (DDP uses it to launch a bucket's allreduce). A tensor
 * read by two layers (a residual input) receives both gradient contributions:
 * the first writer writes, later ones accumulate.
 *
 * Activations are plain NCHW or channel-blocked (see kernels_cpu.h); a
 * tensor's layout is fixed when its producer is built, and layers that need
 * plain data insert a conversion. The model input and the logits are plain.
 *
 * A model lives on one device (device.h) and reaches it only through the
 * device's table: every buffer (parameters, gradients, activations, labels)
 * is that device's memory, each layer is built by the device's builder for
 * its kind, and the loss and the optimizer run the device's kernels. On a
 * GPU every layer runs cuDNN/cuBLAS or our kernels on the compute stream in
 * plain NCHW, and work is only enqueued: the host waits in model_loss_end
 * or model_memcpy, nowhere else.
 *
 * Freezing (model_set_trainable) marks a prefix of the parameterised layers
 * frozen: they get no gradient, and backward stops at the first layer that
 * has trainable parameters, since nothing before it needs a gradient.
 */
#ifndef DDPTOP_MODEL_H
#define DDPTOP_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "device.h"
#include "rng.h"

#define MODEL_MAX_NAME 64

struct tensor {
    int c, h, w;        /* per-sample shape */
    int64_t per_sample; /* c*h*w: logical values per sample */
    int blk;            /* layout: 1 = plain NCHW, 8/16 = nChw{blk}c (channels padded) */
    int64_t stride;     /* floats per sample in val and grad: c*h*w, or padded c*h*w */
    float *val;         /* [batch, stride] */
    float *grad;        /* same shape; NULL for the model input */
    int grad_set;       /* backward: 1 once some layer wrote grad this pass */
    int need_grad;      /* backward must produce grad: some layer before it is trainable */
    int no_grad;        /* never a gradient: the model input, or a view of it */
    int alias_of;       /* -1, or the tensor whose buffers this one shares */
    /* 16-bit activations between layers (model_plan_chain16): held in
     * v16 and g16 instead, channels-last bf16 or fp16, in the device's
     * memory (model_hold16); val and grad are then NULL */
    int h16;
    uint16_t *v16, *g16;
};

/* Whether the tensor carries a gradient: a buffer, fp32 or 16-bit, where
 * its model holds it (model_hold); every tensor but the model input and
 * views of it. */
static inline int tensor_has_grad(const struct tensor *t)
{
    return !t->no_grad;
}

/* How model_init_params fills a parameter. */
enum { PARAM_INIT_FANIN = 0, PARAM_INIT_ONE, PARAM_INIT_ZERO };

struct param {
    char name[MODEL_MAX_NAME]; /* "conv1.weight" */
    size_t off;                /* offset in floats into param_buf / grad_buf; 0 where the model does not hold
                                  its layer (model_holds_layer) */
    size_t len;                /* floats */
    int ndim, shape[4];
    int layer;
    int trainable;
    int init; /* PARAM_INIT_*: U(+-1/sqrt(fan_in)), or 1 and 0 for batch norm */
};

struct model;
struct layer;

struct layer_ops {
    const char *kind;
    int (*forward)(struct model *m, struct layer *l, int train);
    int (*backward)(struct model *m, struct layer *l);
    void (*destroy)(struct layer *l);
    /* Batch norm: its running mean (which 0) or variance (1), [C] in the
     * model's memory; NULL for the other kinds. */
    float *(*running)(struct layer *l, int which);
    /* 1: a layout conversion, inserted by the builders where the layouts
     * this CPU's kernels prefer meet; not a layer of the user's model
     * (see model_layer_num) */
    int conversion;
};

struct layer {
    const struct layer_ops *ops;
    char name[MODEL_MAX_NAME];
    int in, in2, out;   /* tensor ids; in2 is -1 for one-input layers */
    int param0, nparam; /* the layer's parameters: params[param0 .. param0+nparam) */
    int64_t flops;      /* forward FLOPs per image (multiply-add = 2) */
    void *impl;         /* the layer type's own small struct */
    char kernel[100];   /* the kernels it runs ("jit:avx512_core|..." from oneDNN), for --info */
    int num;            /* its number for the user (model_layer_num); -1 for a conversion */
};

struct layer_times;

struct model {
    char name[MODEL_MAX_NAME];
    int batch; /* samples per forward (fixed: kernels are built for it) */
    int classes;
    int nlayers, cap_layers;
    struct layer *layers;
    int nnum; /* the layers the user numbers: nlayers less the conversions */
    int ntensors, cap_tensors;
    struct tensor *tensors;
    int nparams, cap_params;
    struct param *params;
    size_t nfloats;     /* parameter floats it holds: its held layers' (model_hold) */
    size_t nfloats_all; /* the whole model's parameter floats */
    float *param_buf;   /* [nfloats] */
    float *grad_buf;    /* [nfloats] */
    int input, output;  /* tensor ids */
    float *probs;       /* [batch, classes] softmax, for the loss backward */
    int32_t *labels;    /* [batch] */
    uint64_t seed;      /* model_create's seed: dropout masks derive from it */
    int ndropout;       /* dropout layers so far (each takes the next ordinal) */
    int dropout_hold;   /* tests: 1 keeps every dropout mask fixed across forwards */
    int bwd_first;      /* backward runs layers [bwd_first, nlayers) */
    int planned;        /* built by model_begin_plan: buffers come from model_hold */
    int hold_a, hold_b; /* the layers whose state it holds: [hold_a, hold_b) */
    struct device dev;  /* the model's handle on its device (open; shared streams, its own messages) */
    void *kernels;      /* the device's kernel state (oneDNN's stream and scratchpad, cuDNN's handles) */
    float loss_value;   /* model_loss_begin on the CPU: the result it computed */
    int loss_n, loss_correct;
    float *acc;                /* [largest tensor]: an input gradient to be added to one already set */
    struct layer_times *times; /* per-layer host timing (model_layer_times), or NULL */
    /* per-layer times wait for the device around each layer (an
     * asynchronous device's calls only enqueue: a stage partition measures
     * with this set) */
    int times_wait;
    char err[256]; /* the last build or kernel error */
};

/* Called by model_backward when a parameter's gradient is final. */
typedef void (*grad_ready_fn)(void *ctx, int param_index);

/* A model is built in three moves: model_begin makes it, with its input
 * tensor (m->input, c x h x w), on device d (open, and open while the
 * model lives: the model keeps a handle of its own on it); the
 * layer builders below add layers after it; model_finish ends the build at
 * the logits tensor `out` (plain layout, `classes` values), allocates the
 * parameters and gradients and initialises them from seed as PyTorch's
 * defaults do. Each returns NULL with err set (model_finish destroys the
 * model then). zoo_create (zoo.h) does all three by the model's name. */
struct model *model_begin(const struct device *d, const char *name, int batch, int c, int h, int w, int classes,
                          uint64_t seed, char *err, size_t errlen);
struct model *model_finish(struct model *m, int out, char *err, size_t errlen);
/* A model's plan: model_begin's model, built without buffers. The layer
 * builders record its tensors' shapes and its parameters' places, and
 * model_finish leaves it holding nothing; model_hold then gives it the
 * buffers of the layers it is to run (a pipeline stage's). */
struct model *model_begin_plan(const struct device *d, const char *name, int batch, int c, int h, int w, int classes,
                               uint64_t seed, char *err, size_t errlen);
/* What model_hold takes from elsewhere instead of making it (each NULL:
 * its own), from a model of the same plan held over the same layers: its
 * parameter and gradient buffers [nfloats]; its acc (a layer's backward
 * uses it only while it runs, so models that run one at a time can share
 * one); its activations (values and gradients of every tensor but the
 * model input). model_unshare gives them back before the model is
 * destroyed. */
struct model_shared {
    float *params, *grads, *acc;
    const struct model *acts;
};
/* Gives planned model m the state of layers [a, b) only, as a stage that
 * runs just those needs it: the values and gradients of the tensors they
 * read and write (and of the tensor a view of theirs shares), their
 * parameters and gradients (the parameters rebased to offset 0: nfloats is
 * theirs, params[].off of the other layers' is 0), the loss's buffers and
 * the device's model state; with `shared`, some of them another model's.
 * The parameters are initialised as the whole model's would be (the same
 * draws, only the held ones kept), unless shared. Once only. 0, or -1
 * with err (out of memory: what was made is freed with m; model_unshare
 * first). */
int model_hold(struct model *m, int a, int b, const struct model_shared *shared, char *err, size_t errlen);
/* Forgets the buffers m took through `shared` (they stay their owner's). */
void model_unshare(struct model *m, const struct model_shared *shared);
/* Whether m holds layer i's state (model_hold; a model_begin model holds every layer). */
static inline int model_holds_layer(const struct model *m, int i)
{
    return i >= m->hold_a && i < m->hold_b;
}
void model_destroy(struct model *m);
/* A synchronous copy of bytes between the model's memory and the host, in
 * either direction (memcpy on the CPU). Returns 0, or -1 with m->err set. */
int model_memcpy(struct model *m, void *dst, const void *src, size_t bytes);

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
/* The same in two halves, so that the host can work while a GPU computes:
 * begin enqueues the loss (labels: host labels, or NULL when m->labels
 * already holds them in the model's memory), end waits and returns 0 with
 * the mean loss and hits, or -1 with m->err set. */
int model_loss_begin(struct model *m, const int32_t *labels, int n);
int model_loss_end(struct model *m, float *loss, int *correct);
/* Backward from the loss. grad_scale multiplies dL/dlogits (1/n for a local
 * mean; ranks use 1/n too and average gradients afterwards). Writes grad_buf
 * for every trainable parameter; calls ready(ctx, p) as each one is final. */
int model_backward(struct model *m, float grad_scale, grad_ready_fn ready, void *ctx);
/* Backward from a given dL/dlogits [batch, classes] (DataParallel: rank 0
 * computes the loss of the whole batch and scatters these). */
int model_backward_dout(struct model *m, const float *dout, grad_ready_fn ready, void *ctx);

/* ---- the user's layer numbers ----------------------------------------------
 * The layers a user names (--partition, --info, the Layers pane, a stage's
 * first and last layer in reports and traces) are the model's own, numbered
 * 0 to nnum - 1 in order. The layout conversions that the builders add
 * depend on the CPU (oneDNN's channel blocking: AVX-512 wants 16, AVX2 8,
 * and some AVX2 kernels none), so they take no number: each belongs to
 * the layer that asked for it (the one after it; the logits' conversion
 * at the end, to the one before). Internally every index is a position
 * in m->layers. */
/* The number of the layer at index i (a conversion: its owner's); i ==
 * nlayers gives nnum (the end). */
int model_layer_num(const struct model *m, int i);
/* The index of numbered layer u's first layer (a conversion feeding it,
 * or itself); u == nnum gives nlayers; -1 out of range. A stage starts
 * there. */
int model_layer_index(const struct model *m, int u);

/* ---- stages: layers [a, b) of a model split into contiguous pieces ---- */
/* The tensor that carries everything layers >= k need from the layers
 * before them (0 < k < nlayers): the one tensor made before the cut (by a
 * layer, or the input) and read after it; -1 when none or several cross
 * (inside a residual block). A stage boundary must be such a cut. */
int model_cut_tensor(const struct model *m, int k);

/* ---- 16-bit activations between layers (a GPU's bf16 or fp16) ----------
 * What a layer can do with a tensor held in 16 bits channels-last: read it
 * as an input whatever it writes (CHAIN16_IN); write its output so
 * (CHAIN16_OUT, from inputs in either form: it casts an fp32 one itself);
 * read it only when it writes its output so too (CHAIN16_PASS). */
enum { CHAIN16_IN = 1, CHAIN16_OUT = 2, CHAIN16_PASS = 4 };
typedef int (*chain16_cap_fn)(const struct model *m, const struct layer *l);
/* Sets h16 on every tensor that a CHAIN16_OUT layer writes and that only
 * layers read which can (CHAIN16_IN, or CHAIN16_PASS with their own output
 * 16-bit): not the model's input or output, nor a tensor another aliases.
 * Returns how many. */
int model_plan_chain16(struct model *m, chain16_cap_fn cap);
/* Gives every h16 tensor its 16-bit buffers through the model's device
 * (v16, and g16 where it has a gradient) and frees its fp32 ones, val and
 * grad then NULL: a chain holds half the activation memory of fp32. 0, or
 * -1 with m->err set (out of memory: what was made is freed with m). */
int model_hold16(struct model *m);
/* Forward over layers [a, b) only (their inputs in place). */
int model_forward_range(struct model *m, int a, int b, int train);
/* Backward over layers [a, b): from the loss (seed -1; grad_scale as in
 * model_backward, m's labels set by model_loss_begin), or from tensor seed,
 * whose grad the caller has filled (a later stage's). Writes the gradients
 * of the range's trainable parameters and of the tensor they read from
 * before a (when it needs one). */
int model_backward_range(struct model *m, int a, int b, int seed, float grad_scale);

/* Sum of FLOPs of one forward pass per image. */
int64_t model_flops(const struct model *m);
size_t model_trainable_floats(const struct model *m);
/* The next run of consecutive trainable parameters from *i (below `end`):
 * floats [*lo, *hi) of the flat buffers, *i moved past it. 0: none left. */
int model_next_trainable(const struct model *m, int *i, int end, size_t *lo, size_t *hi);

/* Freezes all but part of the model: "all", "classifier" (the last
 * parameterised layer: the final linear layer, or SqueezeNet's final
 * convolution) or "last:K" (the last K parameterised layers; batch norms
 * count). Frozen parameters get trainable = 0 and no gradient. Returns 0, or
 * -1 with err set for a bad spec. */
int model_set_trainable(struct model *m, const char *spec, char *err, size_t errlen);
/* Bytes of activations and their gradients held per sample. */
size_t model_activation_bytes(const struct model *m);
/* Prints the per-layer time table (DDPTOP_LAYER_TIMES=1) to f. */
void model_print_times(const struct model *m, FILE *f);
/* Per-layer host wall time, summed over the calls so far, as the model's
 * thread last published it (at the end of a forward or backward): from
 * any thread, without a lock, one consistent set. Copies the first n
 * layers' forward and backward totals (ns) and the number of forward and
 * backward calls. Returns how many layers it copied; 0 when the model is
 * not timed; -1 when the model's thread was publishing each time it
 * looked (try again later). On an asynchronous device these times are
 * what launching took, not what the kernels took. */
int model_layer_times(const struct model *m, int64_t *fwd_ns, int64_t *bwd_ns, int n, int64_t *fwd_calls,
                      int64_t *bwd_calls);
/* Starts the totals again (the model's thread; after the first step,
 * whose first-touch faults and lazy set-up would weigh in every mean). */
void model_layer_times_reset(struct model *m);

/* ---- builder, used by the zoo ----------------------------------------- */
int model_add_tensor(struct model *m, int c, int h, int w);
/* A tensor in layout blk (1 plain, 8/16 blocked). */
int model_add_tensor_blk(struct model *m, int c, int h, int w, int blk);
int model_add_param(struct model *m, int layer, const char *name, int ndim, const int *shape);
int model_add_layer(struct model *m, const struct layer_ops *ops, const char *name, int in, int in2, void *impl);
/* Buffers of the model's device (host memory on the CPU). */
float *model_alloc_floats(struct model *m, size_t n);
void model_free_floats(struct model *m, float *p);
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
/* Max-pool with PyTorch's ceil_mode=True (SqueezeNet). */
int layer_maxpool_ceil(struct model *m, const char *name, int in, int k, int stride, int pad);
/* Average pool, count_include_pad=True. */
int layer_avgpool(struct model *m, const char *name, int in, int k, int stride, int pad);
/* Adaptive average pool to oh x ow (PyTorch's windows; they may overlap). */
int layer_adaptive_avgpool(struct model *m, const char *name, int in, int oh, int ow);
/* Global average pool: C x H x W -> C x 1 x 1. */
int layer_global_avgpool(struct model *m, const char *name, int in);
/* Batch norm, eps 1e-5, momentum 0.1; running statistics as PyTorch keeps
 * them (the variance unbiased). Parameters "NAME.weight" and "NAME.bias". */
int layer_batchnorm(struct model *m, const char *name, int in);
int layer_relu6(struct model *m, const char *name, int in);
/* Dropout with probability p, masks from the model seed (dropout_key). */
int layer_dropout(struct model *m, const char *name, int in, float p);
/* Element-wise a + b (residual connection). */
int layer_add(struct model *m, const char *name, int a, int b);
/* Channel concatenation [a, b]. */
int layer_concat(struct model *m, const char *name, int a, int b);
/* Zero padding of p on every side (plain layout). */
int layer_pad(struct model *m, const char *name, int in, int p);
/* The tensor converted to layout blk (returns `in` when it already is). */
int layer_to_layout(struct model *m, const char *name, int in, int blk);

/* A batch norm layer's running mean or variance (which 0 or 1), [C] in
 * the model's memory; NULL for other layers. */
static inline float *layer_bn_running(struct layer *l, int which)
{
    return l->ops->running ? l->ops->running(l, which) : NULL;
}

/* Default initialisation (into the model's memory, wherever it lives), as PyTorch's: kaiming_uniform(a=sqrt(5)) for
 * weights, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for biases, batch norm's
 * weight 1 and bias 0. */
void model_init_params(struct model *m, uint64_t seed);

#endif
