/* module.c - the GPU module's entry (gpu.h): the table that ddptop finds
 * with dlsym after loading libddptop-cuda.so. */
#include "gpu.h"

#include "comm_gpu.h"
#include "device_cuda.h"
#ifdef DDPTOP_HAVE_CUPTI
#include "gpu_activity.h"
#endif

static struct comm *ring_create(struct shm_world *w, int rank, int algo, struct device *d)
{
    return comm_cuda_ring_create(w, rank, algo, d->index, device_cuda_stream(d, STREAM_COMM));
}

#ifdef DDPTOP_HAVE_NCCL
static struct comm *nccl_create(const unsigned char id[GPU_NCCL_ID_BYTES], int world, int rank, struct device *d,
                                const volatile _Atomic int *stop, char *err, size_t errlen)
{
    return comm_nccl_create(id, world, rank, d->index, device_cuda_stream(d, STREAM_COMM), stop, err, errlen);
}
#endif

#ifdef DDPTOP_HAVE_CUPTI
/* Every stream of d: the compute stream's kernels are attributed to host
 * phases, the copy stream's records are data, the comm stream's comm. */
static int activity_register(struct device *d, int rank, struct spsc_ring *ring)
{
    static const int roles[STREAM_COUNT] = {GPU_STREAM_COMPUTE, GPU_STREAM_COPY, GPU_STREAM_COMM};
    for (int s = 0; s < STREAM_COUNT; s++)
        if (gpu_activity_register(device_cuda_stream(d, s), d->index, rank, roles[s], ring) != 0)
            return -1;
    return 0;
}
#endif

static const struct gpu_module module = {
    .abi = GPU_MODULE_ABI,
    .device = &device_cuda,
    .ring_create = ring_create,
#ifdef DDPTOP_HAVE_NCCL
    .nccl_unique_id = nccl_unique_id,
    .nccl_create = nccl_create,
#endif
#ifdef DDPTOP_HAVE_CUPTI
    .activity_start = gpu_activity_start,
    .activity_window = gpu_activity_window,
    .activity_register = activity_register,
    .activity_release = gpu_activity_release,
    .activity_flush = gpu_activity_flush,
    .activity_stop = gpu_activity_stop,
    .activity_overhead_ns = gpu_activity_overhead_ns,
    .activity_dropped = gpu_activity_dropped,
#endif
};

const struct gpu_module *ddptop_gpu_module(void);

__attribute__((visibility("default"))) const struct gpu_module *ddptop_gpu_module(void)
{
    return &module;
}
