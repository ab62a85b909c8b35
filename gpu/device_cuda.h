/* device_cuda.h - the CUDA device (device.h's table), inside the GPU
 * module. */
#ifndef DDPTOP_DEVICE_CUDA_H
#define DDPTOP_DEVICE_CUDA_H

#include "device.h"

extern const struct device_ops device_cuda;
/* The cudaStream_t behind a device stream, for libraries (cuDNN, NCCL,
 * CUPTI) that must enqueue on it or watch it; NULL before open. */
void *device_cuda_stream(struct device *d, int stream);

#endif
