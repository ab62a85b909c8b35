/* device_cuda.c - the CUDA device (device.h): one GPU per rank thread (or
 * several ranks on one GPU), with a compute, a copy and a comm stream and a
 * few events; a model's kernels are cuDNN's, cuBLAS's and ours
 * (kernels_cuda.c, .cu) on the compute stream, and its layers are the
 * builders of layers_cuda.c. Every CUDA call is checked; a failure names
 * the call, the rank, the GPU and file:line in d->err.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_cuda.h"

#include "check.h"
#include "kernels_cuda.h"
#include "layers_cuda.h"
#include "model.h"

/* --slow-rank's measure of a phase's device time: a timed event pair per
 * phase, read once the GPU has passed it */
#define STRETCH_PHASES 8
struct stretch {
    cudaEvent_t begin, end;
    int pending;   /* the pair is recorded and not yet read */
    int recording; /* begin was recorded for the phase now open */
    float last_ms; /* the latest measured device time of the phase */
};

struct cuda_dev {
    cudaStream_t stream[STREAM_COUNT];
    cudaEvent_t event[DEV_MAX_EVENTS];
    struct stretch st[STRETCH_PHASES];
    void *mark; /* GPU_MARK_STEPS bytes that phase marks write */
    /* the convolution algorithms chosen for this device handle's models
     * (a rank's): made with the first model, so that a shape met again,
     * in any of them, is not timed again */
    struct cuda_algo_cache *algos;
};

static int dev_fail(struct device *d, const char *call, const char *why, const char *file, int line)
{
    return device_fail(d, "%s: %s (%s:%d)", call, why, gpu_file(file), line);
}

#define CUDA_OK(d, call) GPU_CHECK(GPU_CUDA, dev_fail, d, call)

static struct cuda_dev *D(struct device *d)
{
    return d->impl;
}

void *device_cuda_stream(struct device *d, int stream)
{
    return D(d) ? (void *)D(d)->stream[stream] : NULL;
}

static int cuda_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0; /* no driver or no GPU: the CPU takes over */
    return n;
}

static int cuda_mem_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(index) != cudaSuccess)
        return -1;
    cudaError_t e = cudaMemGetInfo(free_bytes, total_bytes);
    cudaSetDevice(prev);
    return e == cudaSuccess ? 0 : -1;
}

static int cuda_open(struct device *d, int index)
{
    d->index = index;
    snprintf(d->name, sizeof(d->name), "cuda:%d", index);
    struct cuda_dev *c = calloc(1, sizeof(*c));
    if (!c)
        return device_fail(d, "out of memory");
    d->impl = c;
    CUDA_OK(d, cudaSetDevice(index));
    for (int s = 0; s < STREAM_COUNT; s++)
        CUDA_OK(d, cudaStreamCreateWithFlags(&c->stream[s], cudaStreamNonBlocking));
    for (int k = 0; k < DEV_MAX_EVENTS; k++)
        CUDA_OK(d, cudaEventCreateWithFlags(&c->event[k], cudaEventDisableTiming));
    CUDA_OK(d, cudaMalloc(&c->mark, GPU_MARK_STEPS));
    return 0;
}

static void cuda_close(struct device *d)
{
    struct cuda_dev *c = D(d);
    if (!c)
        return;
    cudaSetDevice(d->index); /* the collector closes devices that rank threads opened */
    for (int s = 0; s < STREAM_COUNT; s++)
        if (c->stream[s])
            cudaStreamDestroy(c->stream[s]);
    for (int k = 0; k < DEV_MAX_EVENTS; k++)
        if (c->event[k])
            cudaEventDestroy(c->event[k]);
    if (c->mark)
        cudaFree(c->mark);
    cuda_algo_cache_destroy(c->algos);
    for (int k = 0; k < STRETCH_PHASES; k++) {
        if (c->st[k].begin)
            cudaEventDestroy(c->st[k].begin);
        if (c->st[k].end)
            cudaEventDestroy(c->st[k].end);
    }
    free(c);
    d->impl = NULL;
}

/* Zeroed on the compute stream, and done before any stream can use it
 * (the streams are non-blocking: none waits for another by itself). Only
 * ever called while setting up, never inside a step. */
static int zeroed(struct device *d, void *p, size_t bytes)
{
    CUDA_OK(d, cudaMemsetAsync(p, 0, bytes, D(d)->stream[STREAM_COMPUTE]));
    CUDA_OK(d, cudaStreamSynchronize(D(d)->stream[STREAM_COMPUTE]));
    return 0;
}

static void *cuda_alloc(struct device *d, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        device_fail(d, "cudaMalloc(%zu): %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    if (zeroed(d, p, bytes ? bytes : 1) != 0) {
        cudaFree(p);
        return NULL;
    }
    device_mem_hold(d, p, bytes);
    return p;
}

static void cuda_free(struct device *d, void *p)
{
    if (!p)
        return;
    device_mem_drop(d, p);
    cudaFree(p);
}

static void *cuda_alloc_host(struct device *d, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        device_fail(d, "cudaMallocHost(%zu): %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    memset(p, 0, bytes ? bytes : 1);
    return p;
}

static void cuda_free_host(struct device *d, void *p)
{
    if (p)
        cudaFreeHost(p);
}

static int cuda_copy(struct device *d, void *dst, const void *src, size_t bytes, int stream)
{
    CUDA_OK(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, D(d)->stream[stream]));
    return 0;
}

static int cuda_current(struct device *d)
{
    CUDA_OK(d, cudaSetDevice(d->index));
    return 0;
}

static int cuda_record(struct device *d, int ev, int stream)
{
    CUDA_OK(d, cudaEventRecord(D(d)->event[ev], D(d)->stream[stream]));
    return 0;
}

static int cuda_wait(struct device *d, int ev, int stream)
{
    CUDA_OK(d, cudaStreamWaitEvent(D(d)->stream[stream], D(d)->event[ev], 0));
    return 0;
}

static int cuda_sync(struct device *d, int stream)
{
    if (!D(d))
        return 0; /* never opened */
    CUDA_OK(d, cudaStreamSynchronize(D(d)->stream[stream]));
    return 0;
}

/* ---- a model's kernels ------------------------------------------------------ */
static void *cuda_kernels_create(struct device *d)
{
    char err[256];
    if (!D(d)->algos && !(D(d)->algos = cuda_algo_cache_create())) {
        device_fail(d, "out of memory");
        return NULL;
    }
    struct cuda_ctx_opts o = {.precision = d->precision, .conv_algo = d->conv_algo, .cache = D(d)->algos};
    struct cuda_ctx *x =
        cuda_ctx_create(device_cuda_stream(d, STREAM_COMPUTE), d->rank, d->index, &o, err, sizeof(err));
    if (!x)
        snprintf(d->err, sizeof(d->err), "%s", err);
    return x;
}

static int cuda_kernels_finish(struct device *d, void *k)
{
    return 0;
}

static void cuda_kernels_destroy(void *k)
{
    cuda_ctx_destroy(k);
}

static size_t cuda_workspace(const void *k)
{
    return cuda_ctx_workspace_bytes(k);
}

/* The kernels' message (it names the call, the rank and the GPU). */
static int kernels_failed(struct model *m)
{
    snprintf(m->dev.err, sizeof(m->dev.err), "%s", cuda_kernels_error(m->kernels));
    return -1;
}

static int cuda_loss_begin(struct model *m, const int32_t *labels, int n)
{
    if ((labels && cuda_ctx_copy(m->kernels, m->labels, labels, sizeof(int32_t) * (size_t)n) != 0) ||
        cuda_xent_enqueue(m->kernels, m->probs, m->tensors[m->output].val, m->labels, n, m->classes) != 0)
        return kernels_failed(m);
    return 0;
}

static int cuda_loss_end(struct model *m, float *loss, int *correct)
{
    if (cuda_xent_result(m->kernels, m->loss_n, &m->loss_value, &m->loss_correct) != 0)
        return kernels_failed(m);
    *loss = m->loss_value;
    if (correct)
        *correct = m->loss_correct;
    return 0;
}

static int cuda_loss_backward(struct model *m, float scale)
{
    if (cuda_xent_backward(m->kernels, m->tensors[m->output].grad, m->probs, m->labels, m->batch, m->classes, scale) !=
        0)
        return kernels_failed(m);
    return 0;
}

static int cuda_sgd(struct model *m, float *buf, size_t lo, size_t hi, float lr, float momentum, float wd, float gscale)
{
    if (cuda_sgd_update(m->kernels, m->param_buf + lo, m->grad_buf + lo, buf + lo, hi - lo, lr, momentum, wd, gscale) !=
        0)
        return kernels_failed(m);
    return 0;
}

static int cuda_grads_finite(struct model *m, size_t lo, size_t hi, int *finite)
{
    if (cuda_all_finite(m->kernels, m->grad_buf + lo, hi - lo, finite) != 0)
        return kernels_failed(m);
    return 0;
}

static int cuda_average(struct device *d, float *dst, const float *slices, int world, size_t n, int stream)
{
    if (cuk_average_slices(dst, slices, world, (int64_t)n, device_cuda_stream(d, stream)) != 0)
        return dev_fail(d, "the gather-scatter average kernel", cudaGetErrorString(cudaGetLastError()), __FILE__,
                        __LINE__);
    return 0;
}

static int cuda_add(struct device *d, float *dst, const float *src, size_t n, int stream)
{
    if (cuk_copy_acc(dst, 1, src, (int64_t)n, device_cuda_stream(d, stream)) != 0)
        return dev_fail(d, "the add kernel", cudaGetErrorString(cudaGetLastError()), __FILE__, __LINE__);
    return 0;
}

static int cuda_to_16(struct device *d, uint16_t *dst, const float *src, size_t n, int bf16, int stream)
{
    if (cuk_to_16(dst, src, (int64_t)n, bf16, device_cuda_stream(d, stream)) != 0)
        return dev_fail(d, "the gradients' 16-bit cast kernel", cudaGetErrorString(cudaGetLastError()), __FILE__,
                        __LINE__);
    return 0;
}

static int cuda_from_16(struct device *d, float *dst, const uint16_t *src, size_t n, int bf16, int stream)
{
    if (cuk_from_16(dst, 0, src, (int64_t)n, bf16, device_cuda_stream(d, stream)) != 0)
        return dev_fail(d, "the gradients' 32-bit cast kernel", cudaGetErrorString(cudaGetLastError()), __FILE__,
                        __LINE__);
    return 0;
}

/* The phase's last measured device time, if the GPU has passed its pair. */
static void stretch_read(struct stretch *s)
{
    if (s->pending && cudaEventQuery(s->end) == cudaSuccess) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, s->begin, s->end) == cudaSuccess)
            s->last_ms = ms;
        s->pending = 0;
    }
}

static int cuda_stretch_begin(struct device *d, int phase)
{
    struct stretch *s = &D(d)->st[(unsigned)phase % STRETCH_PHASES];
    if (!s->begin) {
        CUDA_OK(d, cudaEventCreate(&s->begin));
        CUDA_OK(d, cudaEventCreate(&s->end));
    }
    stretch_read(s);
    s->recording = !s->pending; /* the GPU is behind: the last pair stays to be read */
    if (s->recording)
        CUDA_OK(d, cudaEventRecord(s->begin, D(d)->stream[STREAM_COMPUTE]));
    return 0;
}

static int cuda_stretch_end(struct device *d, int phase, double factor)
{
    struct stretch *s = &D(d)->st[(unsigned)phase % STRETCH_PHASES];
    if (!s->begin)
        return 0;
    if (s->recording) {
        CUDA_OK(d, cudaEventRecord(s->end, D(d)->stream[STREAM_COMPUTE]));
        s->pending = 1;
        s->recording = 0;
    }
    /* the delay follows the phase's own work, on its stream: measured as
     * the phase's, never inside the next pair */
    double ns = (factor - 1.0) * (double)s->last_ms * 1e6;
    if (ns >= 1000.0 && cuk_delay((uint64_t)ns, D(d)->stream[STREAM_COMPUTE]) != 0)
        return dev_fail(d, "the straggler's delay kernel", cudaGetErrorString(cudaGetLastError()), __FILE__, __LINE__);
    return 0;
}

static int cuda_phase_mark(struct device *d, int phase, uint32_t step)
{
    CUDA_OK(
        d, cudaMemsetAsync(D(d)->mark, GPU_MARK_VALUE(phase), 1 + step % GPU_MARK_STEPS, D(d)->stream[STREAM_COMPUTE]));
    return 0;
}

const struct device_ops device_cuda = {
    .name = "cuda",
    .async = 1,
    .count = cuda_count,
    .mem_info = cuda_mem_info,
    .open = cuda_open,
    .close = cuda_close,
    .make_current = cuda_current,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .alloc_host = cuda_alloc_host,
    .free_host = cuda_free_host,
    .copy = cuda_copy,
    .record_event = cuda_record,
    .wait_event = cuda_wait,
    .sync = cuda_sync,
    .kernels_create = cuda_kernels_create,
    .kernels_finish = cuda_kernels_finish,
    .finish_model = cudal_chain16,
    .kernels_destroy = cuda_kernels_destroy,
    .workspace_bytes = cuda_workspace,
    .loss_begin = cuda_loss_begin,
    .loss_end = cuda_loss_end,
    .loss_backward = cuda_loss_backward,
    .sgd_update = cuda_sgd,
    .grads_finite = cuda_grads_finite,
    .average_slices = cuda_average,
    .add = cuda_add,
    .to_16 = cuda_to_16,
    .from_16 = cuda_from_16,
    .stretch_begin = cuda_stretch_begin,
    .stretch_end = cuda_stretch_end,
    .phase_mark = cuda_phase_mark,
    .layers =
        {
            .linear = cudal_linear,
            .conv2d = cudal_conv2d,
            .relu = cudal_relu,
            .relu6 = cudal_relu6,
            .dropout = cudal_dropout,
            .add = cudal_add,
            .concat = cudal_concat,
            .pad = cudal_pad,
            .pool = cudal_pool,
            .adapool = cudal_adapool,
            .batchnorm = cudal_batchnorm,
        },
};
