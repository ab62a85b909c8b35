/* device.h - the compute device a rank and its model run on, behind one
 * const table of function pointers per backend: the CPU (device_cpu.c) and
 * CUDA (gpu/device_cuda.c, in the GPU module that ddptop loads at run time,
 * src/device.c). The table is the only place the devices differ:
 *  - devices: how many there are, opening one, making it current;
 *  - memory and copies: device memory (zeroed), host memory suited to fast
 *    copies, copies in any direction ordered on a stream;
 *  - ordering: events between streams, waiting for a stream;
 *  - a model's kernels: their context, the loss, the optimizer update,
 *    gather-scatter's average, and one builder per layer kind.
 *
 * The training loop and the model are written as if every call only
 * enqueued work; on the CPU calls are done on return and ordering is a
 * no-op, so the same code drives both devices.
 *
 * A failed call returns -1 (or NULL) and leaves its message in d->err,
 * naming the call, the rank and the device ("rank 1 (cuda:0):
 * cudaMalloc(4096): out of memory (device_cuda.c:91)"); callers add their
 * context as the message travels up.
 */
#ifndef DDPTOP_DEVICE_H
#define DDPTOP_DEVICE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum dev_stream { STREAM_COMPUTE = 0, STREAM_COPY, STREAM_COMM, STREAM_COUNT };
/* The events a rank uses: its batch staged on the copy stream, the staging
 * buffer free again, gradients complete before a synchronisation, the comm
 * stream's copies done before compute reads them, and one
 * per DDP bucket (bucket b uses EV_BUCKET0 + b % DEV_BUCKET_EVENTS: a later
 * bucket re-recording an event only makes a wait wait longer, never less). */
enum dev_event { EV_STAGED = 0, EV_STAGE_FREE, EV_GRADS, EV_COMM_DONE, EV_BUCKET0, DEV_MAX_EVENTS = 64 };
#define DEV_BUCKET_EVENTS (DEV_MAX_EVENTS - EV_BUCKET0)

/* --precision: the arithmetic of a model's convolutions and GEMMs. FP32 is
 * IEEE single precision; TF32 keeps fp32 storage but multiplies on tensor
 * cores with a 10-bit mantissa (GPUs only); BF16 and FP16 are mixed
 * precision with fp32 master weights: both on the GPU (kernels_cuda.c),
 * BF16 on the CPU too (kernels_cpu.h's cpu_ctx_bf16); FP16 on the CPU is
 * refused before any device sees it (run_check_precision). */
enum precision { PREC_FP32 = 0, PREC_TF32, PREC_BF16, PREC_FP16, PREC_COUNT };
/* --cudnn-algo: a GPU's convolution algorithms found by timing each once
 * per shape (cudnn.benchmark), or taken from cuDNN's heuristics. */
enum conv_algo_choice { CONV_ALGO_FIND = 0, CONV_ALGO_HEURISTIC };

struct device;
struct model;
struct conv_dims;
struct pool_dims;

/* How a backend adds each kind of layer once the layer's own builder
 * (layers*.c) has checked the shape: the layer, its output tensor and its
 * parameters. Each returns the output tensor id, or -1 with m->err set. */
struct layer_builders {
    int (*linear)(struct model *m, const char *name, int in, int out_features);
    int (*conv2d)(struct model *m, const char *name, int in, const struct conv_dims *d, int bias);
    int (*relu)(struct model *m, const char *name, int in);
    int (*relu6)(struct model *m, const char *name, int in);
    int (*dropout)(struct model *m, const char *name, int in, float p);
    int (*add)(struct model *m, const char *name, int a, int b);
    int (*concat)(struct model *m, const char *name, int a, int b);
    int (*pad)(struct model *m, const char *name, int in, int p);
    /* max: max-pool, else average with count_include_pad */
    int (*pool)(struct model *m, const char *name, int in, const struct pool_dims *d, int max);
    /* to oh x ow; global: the 1 x 1 global pool */
    int (*adapool)(struct model *m, const char *name, int in, int oh, int ow, int global);
    int (*batchnorm)(struct model *m, const char *name, int in);
};

struct device_ops {
    const char *name;
    /* 1: calls only enqueue work (CUDA); 0: they are done on return (CPU) */
    int async;

    /* ---- devices ---- */
    /* How many devices of this kind are usable now (0 when none). */
    int (*count)(void);
    /* Device `index`'s free and total memory in bytes now (NULL: the host's
     * memory is the device's, run.c reads /proc/meminfo). 0 or -1. */
    int (*mem_info)(int index, size_t *free_bytes, size_t *total_bytes);
    int (*open)(struct device *d, int index);
    void (*close)(struct device *d);
    /* Makes the device current for the calling thread (a comm lane, or the
     * collector before it frees a rank's buffers). */
    int (*make_current)(struct device *d);

    /* ---- memory and copies ---- */
    void *(*alloc)(struct device *d, size_t bytes); /* zeroed */
    void (*free)(struct device *d, void *p);
    /* Host memory suited to fast copies (pinned on CUDA). */
    void *(*alloc_host)(struct device *d, size_t bytes);
    void (*free_host)(struct device *d, void *p);
    /* A copy in any direction between host and device memory, ordered on
     * `stream` (done on return on the CPU). */
    int (*copy)(struct device *d, void *dst, const void *src, size_t bytes, int stream);

    /* ---- ordering ---- */
    /* Event `ev` marks the current end of `stream`; wait_event makes `stream`
     * wait for it; sync blocks the host until `stream` is idle. */
    int (*record_event)(struct device *d, int ev, int stream);
    int (*wait_event)(struct device *d, int ev, int stream);
    int (*sync)(struct device *d, int stream);

    /* ---- a model's kernels (model.c, optim.c) ---- */
    /* The kernels' shared state for one model on d (oneDNN's stream and
     * scratchpad; cuDNN and cuBLAS handles and a workspace): NULL with
     * d->err set. finish runs once every layer is built. */
    void *(*kernels_create)(struct device *d);
    int (*kernels_finish)(struct device *d, void *k);
    /* Once a model is built and its buffers are made (NULL: nothing to
     * do): a GPU's 16-bit activations between layers. 0, or -1 with the
     * model's err set. */
    int (*finish_model)(struct model *m);
    void (*kernels_destroy)(void *k);
    /* Bytes of the convolution workspace the kernels hold (0: none). */
    size_t (*workspace_bytes)(const void *k);
    /* Softmax cross-entropy of m's output against its labels (labels:
     * host labels copied in first, or NULL when m->labels holds them).
     * begin enqueues; end waits and returns the mean loss over n and the
     * argmax hits; backward writes dL/dlogits scaled by `scale`. */
    int (*loss_begin)(struct model *m, const int32_t *labels, int n);
    int (*loss_end)(struct model *m, float *loss, int *correct);
    int (*loss_backward)(struct model *m, float scale);
    /* SGD with momentum and weight decay over floats [lo, hi) of m's
     * parameter and gradient buffers, momentum buffer buf (same layout),
     * the gradients multiplied by gscale first (optim.h). */
    int (*sgd_update)(struct model *m, float *buf, size_t lo, size_t hi, float lr, float momentum, float wd,
                      float gscale);
    /* *finite = whether every gradient in floats [lo, hi) of m's is finite
     * (waits for the device: --loss-scale's check before the update). */
    int (*grads_finite)(struct model *m, size_t lo, size_t hi, int *finite);
    /* dst[n] = (slices[0] + ... + slices[world-1]) / world in rank order,
     * on `stream` (gather-scatter's average where the gradients are); NULL
     * where the host computes it. */
    int (*average_slices)(struct device *d, float *dst, const float *slices, int world, size_t n, int stream);
    /* dst[n] += src[n], on `stream` (the micro-batches' gradients of a
     * pipeline stage, summed where they are). */
    int (*add)(struct device *d, float *dst, const float *src, size_t n, int stream);
    /* Gradients to 16 bits and back for the wire (--grad-compress): dst[n]
     * = src rounded to nearest even, bf16 (1) or fp16 (0), on `stream`;
     * from_16 writes the floats back. NULL where device memory is host
     * memory (the host converts). */
    int (*to_16)(struct device *d, uint16_t *dst, const float *src, size_t n, int bf16, int stream);
    int (*from_16)(struct device *d, float *dst, const uint16_t *src, size_t n, int bf16, int stream);
    /* --slow-rank on a device that computes asynchronously: the work the
     * compute stream gets between begin and end of `phase` (enum cat) is
     * followed by a delay of (factor - 1) x that phase's latest measured
     * device time. NULL: the host spins instead (the CPU). */
    int (*stretch_begin)(struct device *d, int phase);
    int (*stretch_end)(struct device *d, int phase, double factor);
    /* Marks the start of host phase `phase` (enum cat) of `step` on the
     * compute stream, where the device's profiler sees it in order with
     * the work that follows (NULL: no device records to attribute). */
    int (*phase_mark)(struct device *d, int phase, uint32_t step);
    struct layer_builders layers;
};

/* Device memory held through a device's alloc, now and at its most: a
 * rank's (struct rank), shared by the copies of its device handle that
 * its models keep. Each block is counted at the bytes its device commits
 * (the CPU's whole pages, not the allocator's untouched slack), and a
 * free takes back what its alloc added: the blocks held are listed, a
 * few hundred a rank, made while setting up and freed at the end. */
struct device_mem {
    _Atomic int64_t now, peak;
    int64_t cap;      /* the most it may hold, in bytes (DDPTOP_MEM_CAP_MB): an allocation past it fails; 0: none */
    atomic_flag lock; /* over blocks (zero: clear) */
    struct mem_block {
        void *p;
        size_t bytes;
    } * blocks; /* freed with its last block */
    size_t nblocks, cap_blocks;
    /* when sizes is set (one thread, estimates: run_memory_need): each
     * allocation's bytes as asked, in order; the log stops when full */
    size_t *sizes;
    size_t nsizes, cap_sizes;
};

static inline void device_mem_log(struct device_mem *m, size_t bytes)
{
    if (m->nsizes < m->cap_sizes)
        m->sizes[m->nsizes++] = bytes;
}

struct device {
    const struct device_ops *ops;
    struct device_mem *mem; /* where its allocations are counted, or NULL */
    int rank;               /* the rank using it, for messages */
    int index;
    /* how its kernels compute, read by kernels_create (the CPU reads
     * only PREC_BF16): enum precision, enum conv_algo_choice */
    int precision;
    int conv_algo;
    char name[64]; /* "cpu" or "cuda:0" */
    void *impl;
    char err[256]; /* the last failed call */
};

/* Block p of `bytes` is held through d (none counted when d counts
 * nothing, or there is no memory left to list it), and no longer: the
 * bytes its hold counted, 0 for a block never counted (device_cpu.c). */
void device_mem_hold(struct device *d, void *p, size_t bytes);
size_t device_mem_drop(struct device *d, void *p);

/* The CPU (device_cpu.c). */
extern const struct device_ops device_cpu;
/* The CPU through the asynchronous path of the rank loop (tests). */
extern const struct device_ops device_cpu_staged;

/* Sets d->err ("rank R (NAME): " and the message). Returns -1. */
int device_fail(struct device *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
