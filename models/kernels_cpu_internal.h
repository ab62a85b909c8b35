/* kernels_cpu_internal.h - what the CPU kernel files (kernels_cpu*.c) share
 * whether or not ddptop has oneDNN; not part of the kernel API. It holds
 * the parallel loops over the calling thread's OpenMP team (no-ops without
 * OpenMP), and our max-pool of blocked maps, which the pooling layers of
 * both builds run. The oneDNN plumbing is in kernels_cpu_dnnl.h.
 */
#ifndef DDPTOP_KERNELS_CPU_INTERNAL_H
#define DDPTOP_KERNELS_CPU_INTERNAL_H

#include <stdint.h>

#include "kernels_cpu.h"

/* A parallel loop over the calling thread's OpenMP team, only when the work
 * is large enough to repay waking it (a fork/join costs a few microseconds). */
#define PRAGMA_(x) _Pragma(#x)
#ifdef DDPTOP_HAVE_OPENMP
#include <omp.h>
#define OMP_FOR(cond) PRAGMA_(omp parallel for schedule(static) if (cond))
#define OMP_PARALLEL(cond) PRAGMA_(omp parallel if (cond))
static inline int par_tid(void)
{
    return omp_get_thread_num();
}
static inline int par_nthreads(void)
{
    return omp_get_num_threads();
}
#else
#define OMP_FOR(cond)
#define OMP_PARALLEL(cond)
static inline int par_tid(void)
{
    return 0;
}
static inline int par_nthreads(void)
{
    return 1;
}
/* A convolution on context x (oneDNN's, or the reference loops without
 * it); own_ctx: it owns x and destroys it (with itself, or on failure).
 * cpu_conv_create and cpu_conv_create_blk (kernels_cpu.c) wrap it. */
struct cpu_conv *cpu_conv_new(struct cpu_ctx *x, int own_ctx, const struct conv_dims *d, int has_bias, int src_blk,
                              int dst_blk, char *err, size_t errlen);

#endif
#define PAR_MIN 32768 /* floats */

/* Runs `body` with [lo, hi) set to this thread's share of [0, n), on the
 * team when `big`, else on the calling thread alone. */
#define PAR_RANGE_IF(n, big, body)                                                                                     \
    do {                                                                                                               \
        int64_t n_ = (n);                                                                                              \
        OMP_PARALLEL(big)                                                                                              \
        {                                                                                                              \
            int64_t t_ = par_tid(), T_ = par_nthreads();                                                               \
            int64_t lo = n_ * t_ / T_, hi = n_ * (t_ + 1) / T_;                                                        \
            body;                                                                                                      \
        }                                                                                                              \
    } while (0)
#define PAR_RANGE(n, body) PAR_RANGE_IF(n, n_ > PAR_MIN, body)

/* Our max-pool (kernels_cpu_pool_loops.c), of blocked maps and of plain
 * ones (blk 1: a plane per channel): layout blk, the window position of
 * each output's maximum kept in am (one byte each, B x the output's padded
 * stride). Pooling layers take it wherever it fits: oneDNN's plain max-pool
 * on AVX2 is its reference loop (simple_nchw), 10-20x slower. */
static inline int cpu_maxpool_blk_fits(const struct pool_dims *d, int alg, int blk)
{
    return alg == CPU_POOL_MAX && blk >= 1 && blk <= 16 && d->k * d->k <= 256;
}
void cpu_maxpool_blk_forward(float *out, uint8_t *am, const float *in, const struct pool_dims *d, int blk);
/* Writes din. */
void cpu_maxpool_blk_backward(float *din, const float *dout, const uint8_t *am, const struct pool_dims *d, int blk);

/* A convolution on context x (oneDNN's, or the reference loops without
 * it); own_ctx: it owns x and destroys it (with itself, or on failure).
 * cpu_conv_create and cpu_conv_create_blk (kernels_cpu.c) wrap it. */
struct cpu_conv *cpu_conv_new(struct cpu_ctx *x, int own_ctx, const struct conv_dims *d, int has_bias, int src_blk,
                              int dst_blk, char *err, size_t errlen);

#endif
