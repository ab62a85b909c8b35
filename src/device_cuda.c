/* device_cuda.c - the CUDA device: one GPU per rank thread (or several ranks
 * on one GPU), with a compute, a copy and a comm stream and a few events.
 * Every CUDA call is checked; a failure names the call, the rank and the
 * GPU (device_last_error).
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "device.h"

struct cuda_dev {
    cudaStream_t stream[STREAM_COUNT];
    cudaEvent_t event[DEV_MAX_EVENTS];
};

#define CUDA_OK(d, call)                                                                                               \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            device_set_error("rank %d (cuda:%d): %s: %s (%s:%d)", (d)->rank, (d)->index, #call,                        \
                             cudaGetErrorString(e_), __FILE__, __LINE__);                                              \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

static int cuda_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0; /* no driver or no GPU: the CPU takes over */
    return n;
}

static struct cuda_dev *D(struct device *d)
{
    return d->impl;
}

static int cuda_open(struct device *d, int index, char *err, size_t errlen)
{
    struct cuda_dev *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "rank %d: out of memory", d->rank);
        return -1;
    }
    d->impl = c;
    d->index = index;
    snprintf(d->name, sizeof(d->name), "cuda:%d", index);
    cudaError_t e = cudaSetDevice(index);
    for (int s = 0; e == cudaSuccess && s < STREAM_COUNT; s++)
        e = cudaStreamCreateWithFlags(&c->stream[s], cudaStreamNonBlocking);
    for (int k = 0; e == cudaSuccess && k < DEV_MAX_EVENTS; k++)
        e = cudaEventCreateWithFlags(&c->event[k], cudaEventDisableTiming);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "rank %d (cuda:%d): setting up streams and events: %s", d->rank, index,
                 cudaGetErrorString(e));
        return -1;
    }
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
    free(c);
    d->impl = NULL;
}

static void *cuda_alloc(struct device *d, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        device_set_error("rank %d (cuda:%d): cudaMalloc(%zu): %s", d->rank, d->index, bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void cuda_free(struct device *d, void *p)
{
    if (p)
        cudaFree(p);
}

static void *cuda_alloc_host(struct device *d, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        device_set_error("rank %d (cuda:%d): cudaMallocHost(%zu): %s", d->rank, d->index, bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void cuda_free_host(struct device *d, void *p)
{
    if (p)
        cudaFreeHost(p);
}

static int cuda_h2d(struct device *d, void *dst, const void *src, size_t bytes, int stream)
{
    CUDA_OK(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, D(d)->stream[stream]));
    return 0;
}

static int cuda_d2h(struct device *d, void *dst, const void *src, size_t bytes, int stream)
{
    CUDA_OK(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, D(d)->stream[stream]));
    return 0;
}

static int cuda_d2d(struct device *d, void *dst, const void *src, size_t bytes, int stream)
{
    CUDA_OK(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, D(d)->stream[stream]));
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
    CUDA_OK(d, cudaStreamSynchronize(D(d)->stream[stream]));
    return 0;
}

static const struct device_ops cuda_ops = {
    .name = "cuda",
    .count = cuda_count,
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .alloc_host = cuda_alloc_host,
    .free_host = cuda_free_host,
    .copy_h2d = cuda_h2d,
    .copy_d2h = cuda_d2h,
    .copy_d2d = cuda_d2d,
    .make_current = cuda_current,
    .record_event = cuda_record,
    .wait_event = cuda_wait,
    .sync = cuda_sync,
    .async = 1,
};

const struct device_ops *const device_cuda = &cuda_ops;

/* The CUDA stream behind a device stream, for libraries (cuDNN, NCCL) that
 * must enqueue on it. */
void *device_cuda_stream(struct device *d, int stream)
{
    return D(d) ? (void *)D(d)->stream[stream] : NULL;
}
