/* comm_gpu.h - the communicators over device memory, inside the GPU
 * module (gpu.h has the module's table that reaches them). */
#ifndef DDPTOP_COMM_GPU_H
#define DDPTOP_COMM_GPU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "gpu.h"

/* The shared-GPU ring (comm_cuda_ring.c): ranks that share one GPU (more
 * ranks than GPUs, where NCCL refuses duplicate devices) run the shm
 * algorithms over device buffers (algo: ALGO_RING or ALGO_NAIVE), with DtoD
 * copies and a reduce kernel on `stream` (a cudaStream_t of GPU `gpu`). */
struct comm *comm_cuda_ring_create(struct shm_world *w, int rank, int algo, int gpu, void *stream);

/* The reduce kernels (reduce_kernels.cu), enqueued on `stream`: dst += src,
 * x *= f, and the same over 16-bit values (bf16: 1 for bfloat16, 0 for
 * fp16), each computed in fp32 and rounded once. 0, or -1 when the launch
 * failed (its error left for cudaGetLastError). */
int cuda_ring_add(float *dst, const float *src, size_t n, void *stream);
int cuda_ring_scale(float *x, size_t n, float f, void *stream);
int cuda_ring_add16(uint16_t *dst, const uint16_t *src, size_t n, int bf16, void *stream);
int cuda_ring_scale16(uint16_t *x, size_t n, float f, int bf16, void *stream);

#ifdef DDPTOP_HAVE_NCCL
/* NCCL (comm_nccl.c): one communicator rank per GPU thread. The ranks of
 * one process share `id` (nccl_unique_id fills it once, before the threads
 * start); each rank thread calls comm_nccl_create concurrently.
 * Collectives are enqueued on `stream` (the rank's comm stream). The
 * communicator is non-blocking: its initialisation and every wait poll
 * `stop` (may be NULL: the run's abort flag) and give up (ncclCommAbort)
 * once it is raised. */
int nccl_unique_id(unsigned char id[GPU_NCCL_ID_BYTES], char *err, size_t errlen);
struct comm *comm_nccl_create(const unsigned char id[GPU_NCCL_ID_BYTES], int world, int rank, int gpu, void *stream,
                              const volatile _Atomic int *stop, char *err, size_t errlen);
#endif

#endif
