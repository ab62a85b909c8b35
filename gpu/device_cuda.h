/* device_cuda.h - the CUDA device (device.h's table), inside the GPU
 * module. */
#ifndef DDPTOP_DEVICE_CUDA_H
#define DDPTOP_DEVICE_CUDA_H

#include "device.h"

extern const struct device_ops device_cuda;
/* The cudaStream_t behind a device stream, for libraries (cuDNN, NCCL,
 * CUPTI) that must enqueue on it or watch it; NULL before open. */
void *device_cuda_stream(struct device *d, int stream);

/* Phase marks (device_ops.phase_mark): a memset on the compute stream of
 * 1 + step % GPU_MARK_STEPS bytes to GPU_MARK_VALUE(cat), which CUPTI
 * records like any memset, in the stream's order; gpu_activity.c reads the
 * phase and step of the work after it from there. The model's own memsets
 * write zeros. */
#define GPU_MARK_STEPS 4096
#define GPU_MARK_VALUE(cat) (0x40 | (cat))
#define GPU_MARK_IS(value) (((value)&0xf8) == 0x40)

#endif
