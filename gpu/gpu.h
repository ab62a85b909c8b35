/* gpu.h - the GPU module's interface. Everything that links CUDA's
 * libraries (cudart, cuDNN, cuBLAS, NCCL, CUPTI) is built into one shared
 * module, libddptop-cuda.so, which ddptop loads at run time (src/device.c),
 * as nvtop loads NVML: one binary runs on machines with and without CUDA,
 * and a missing or broken CUDA install only removes the GPU.
 *
 * The module exports one function, GPU_MODULE_ENTRY, returning this table:
 * the CUDA device (device.h), the communicators over device memory, and
 * CUPTI's device timelines. The module's code calls back into ddptop's own
 * libraries (layers, the shm algorithms, the probe), which every program
 * that loads it exports (CMake: ENABLE_EXPORTS).
 */
#ifndef DDPTOP_GPU_H
#define DDPTOP_GPU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_MODULE_ENTRY "ddptop_gpu_module"
#define GPU_MODULE_ABI 3 /* bumped whenever this table changes */
#define GPU_NCCL_ID_BYTES 128

struct device;
struct device_ops;
struct comm;
struct shm_world;
struct spsc_ring;

struct gpu_module {
    int abi; /* GPU_MODULE_ABI */
    const struct device_ops *device;
    /* NCCL's unique id, made once per run before the rank threads start
     * (NULL: the module was built without NCCL). */
    int (*nccl_unique_id)(unsigned char id[GPU_NCCL_ID_BYTES], char *err, size_t errlen);
    /* One NCCL communicator rank per GPU thread, on d's comm stream; its
     * initialisation and waits give up once *stop is raised. NULL with err
     * set. */
    struct comm *(*nccl_create)(const unsigned char id[GPU_NCCL_ID_BYTES], int world, int rank, struct device *d,
                                const volatile _Atomic int *stop, char *err, size_t errlen);
    /* ddptop's shm algorithms over device buffers, on d's comm stream, for
     * ranks that share a GPU (NCCL refuses a GPU twice). */
    struct comm *(*ring_create)(struct shm_world *w, int rank, int algo, struct device *d);

    /* ---- CUPTI device timelines (NULL: built without CUPTI) ---- */
    /* Starts collection, once per process: -1 with err set when CUPTI is
     * unavailable (training goes on without device timelines). sampled:
     * records only while a rank is inside activity_window(1). */
    int (*activity_start)(int sampled, char *err, size_t errlen);
    /* The rank of `ring` (a sampled run's) enters (1) its traced steps at
     * `step`, or leaves them (0). */
    void (*activity_window)(struct spsc_ring *ring, int on, uint32_t step);
    /* d's streams' records become spans of `rank` on `ring`. */
    int (*activity_register)(struct device *d, int rank, struct spsc_ring *ring);
    /* No record reaches `ring` once this returns (before it is freed). */
    void (*activity_release)(struct spsc_ring *ring);
    /* Delivers what has completed; final: after the last step, the device
     * idle (the last phase's records have no later mark to wait for). The
     * phases come from the device's marks (device_ops.phase_mark). */
    void (*activity_flush)(int final);
    /* Every activity_start is matched by one stop (with its `sampled`);
     * the last turns it off. */
    void (*activity_stop)(int sampled);
    int64_t (*activity_overhead_ns)(void);
    uint64_t (*activity_dropped)(void);
};

typedef const struct gpu_module *(*gpu_module_entry_fn)(void);

#endif
