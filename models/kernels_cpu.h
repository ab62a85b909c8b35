/* kernels_cpu.h - the fast CPU kernels: oneDNN primitives and oneDNN's
 * SGEMM when the library is present, the reference loops otherwise, and
 * OpenMP loops for the cheap element-wise work oneDNN would not speed up.
 *
 * Activation layouts. A tensor is either plain NCHW (blk 1) or oneDNN's
 * channel-blocked nChw{blk}c (blk 8 or 16): per sample, channel blocks of
 * blk channels, each an H x W plane of blk-wide vectors, with the channel
 * count padded up to a multiple of blk. Padded channels hold zeros, and every
 * kernel here keeps them zero, so element-wise loops may run over the padded
 * buffer. Convolutions, batch norm and pooling keep activations blocked from
 * one layer to the next; only layers that need plain data (linear, flatten)
 * convert.
 *
 * Primitives are created once per layer shape and executed every step with
 * new data handles. Every primitive of one model shares one user-managed
 * scratchpad (struct cpu_ctx), allocated once after the model is built, so
 * nothing is allocated in the hot path. Kernels use the calling thread's
 * OpenMP thread count (cpu_set_threads); oneDNN fixes its thread count when
 * a primitive is created, so create a model on the thread that trains it.
 *
 * The original plain-layout API (cpu_conv_create and friends, din_acc) is
 * kept for the kernel tests. The layout-aware kernels below it WRITE their
 * input gradient; the layer adds it into an accumulating tensor itself.
 */
#ifndef DDPTOP_KERNELS_CPU_H
#define DDPTOP_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_isa.h"
#include "kernels_ref.h"

/* Element-wise CPU kernels (kernels_cpu_eltwise.c, optim.c) are compiled for
 * AVX-512, AVX2 and baseline x86-64, and each call takes the one cpu_isa()
 * allows (DDPTOP_MAX_CPU_ISA caps it): the default build targets baseline
 * x86-64, whose SSE loops run several times slower, and a scalar ReLU
 * backward mispredicts a branch on every other value. The loops are
 * element-wise and built without contraction (-std=c11), so every variant
 * gives the same bits.
 *   VEC_KERNEL(name, (params), (args)) { body }
 * defines static void name(params) running body in the chosen variant. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) &&               \
    !defined(__SANITIZE_THREAD__)
#define VEC_KERNEL(name, params, args)                                                                                 \
    static inline __attribute__((always_inline)) void name##_body params;                                              \
    __attribute__((target("avx512f"))) static void name##_avx512 params                                                \
    {                                                                                                                  \
        name##_body args;                                                                                              \
    }                                                                                                                  \
    __attribute__((target("avx2"))) static void name##_avx2 params                                                     \
    {                                                                                                                  \
        name##_body args;                                                                                              \
    }                                                                                                                  \
    static void name##_base params                                                                                     \
    {                                                                                                                  \
        name##_body args;                                                                                              \
    }                                                                                                                  \
    static void name params                                                                                            \
    {                                                                                                                  \
        int isa_ = cpu_isa();                                                                                          \
        if (isa_ >= CPU_ISA_AVX512)                                                                                    \
            name##_avx512 args;                                                                                        \
        else if (isa_ >= CPU_ISA_AVX2)                                                                                 \
            name##_avx2 args;                                                                                          \
        else                                                                                                           \
            name##_base args;                                                                                          \
    }                                                                                                                  \
    static inline __attribute__((always_inline)) void name##_body params
#else
#define VEC_KERNEL(name, params, args) static void name params
#endif

/* Zeroed memory aligned for the kernels; buffers of 2 MB and more are
 * whole huge pages (madvise), released with free(). */
void *cpu_alloc(size_t bytes);
/* The bytes cpu_alloc takes for a request of `bytes` (whole 2 MB pages
 * from 2 MB on). */
size_t cpu_alloc_size(size_t bytes);

/* Sets how many threads this calling thread's kernels use (OpenMP). */
void cpu_set_threads(int n);
/* 1 when oneDNN kernels are compiled in. */
int cpu_have_dnnl(void);
/* The channel block oneDNN's kernels prefer on this CPU: 16 with AVX-512,
 * 8 otherwise, 1 (plain) without oneDNN. */
int cpu_preferred_blk(void);

/* Channels padded to the block, and floats per sample of a C x H x W
 * activation in layout blk. */
static inline int act_cpad(int C, int blk)
{
    return blk > 1 ? (C + blk - 1) / blk * blk : C;
}
static inline int64_t act_stride(int C, int H, int W, int blk)
{
    return (int64_t)act_cpad(C, blk) * H * W;
}

/* C[M,N] = alpha * op(A) * op(B) + beta * C, row-major. */
void cpu_gemm(char ta, char tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

void cpu_linear_forward(float *out, const float *in, const float *w, const float *b, int B, int IN, int OUT);
/* din (may be NULL): written or accumulated; dw, db (may be NULL): written. */
void cpu_linear_backward(float *din, int din_acc, float *dw, float *db, const float *dout, const float *in,
                         const float *w, int B, int IN, int OUT);

/* ---- plain-layout API (kernel tests) ------------------------------------ */
/* A convolution's primitives, created once for its shape; NCHW in and out,
 * OIHW weights. */
struct cpu_conv;
struct cpu_conv *cpu_conv_create(const struct conv_dims *d, int has_bias, char *err, size_t errlen);
void cpu_conv_destroy(struct cpu_conv *c);
int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b);
/* din written or accumulated (din_acc); dw, db written; any may be NULL. */
int cpu_conv_backward(struct cpu_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                      const float *in, const float *w);

void cpu_relu_forward(float *out, const float *in, int64_t n);
void cpu_relu_backward(float *din, int din_acc, const float *dout, const float *out, int64_t n);
void cpu_maxpool_forward(float *out, int32_t *argmax, const float *in, const struct pool_dims *d);
/* din is zeroed first unless din_acc. */
void cpu_maxpool_backward(float *din, int din_acc, const float *dout, const int32_t *argmax, const struct pool_dims *d);

/* ---- one model's oneDNN context ---------------------------------------- */
struct cpu_ctx;
struct cpu_ctx *cpu_ctx_create(char *err, size_t errlen);
/* --precision bf16: the convolutions and linear layers made after this
 * call multiply in bfloat16 (their inputs and weights rounded to it, as
 * autocast does) and accumulate and write in fp32; activations, batch
 * norm, pooling and the weights kept stay fp32. 0, or -1 with err set
 * without oneDNN. */
int cpu_ctx_bf16(struct cpu_ctx *x, char *err, size_t errlen);
/* 1 when the processor multiplies bfloat16 itself (AVX512_BF16 or AMX, as
 * oneDNN sees it; DNNL_MAX_CPU_ISA may lower that): elsewhere oneDNN
 * emulates it, slower than fp32, or has no bf16 kernels at all. */
int cpu_bf16_native(void);
/* Allocates the shared scratchpad once every primitive exists. */
int cpu_ctx_finish(struct cpu_ctx *x, char *err, size_t errlen);
void cpu_ctx_destroy(struct cpu_ctx *x);

/* ---- layout-aware kernels ------------------------------------------------ */
/* A convolution from layout src_blk to dst_blk. Weights stay OIHW (or
 * G x O/G x I/G x KH x KW) in the flat parameter buffer; forward reorders
 * them into the primitive's preferred layout, and backward-data reuses that
 * copy, so backward must follow a forward on the same weights. Backward
 * writes din and dw/db (each may be NULL). */
struct cpu_conv *cpu_conv_create_blk(struct cpu_ctx *x, const struct conv_dims *d, int has_bias, int src_blk,
                                     int dst_blk, char *err, size_t errlen);
/* oneDNN's names for the implementations, "fwd|bwd-data|bwd-weights"
 * ("jit:avx512_core", "x64:gemm:jit", "ref:any"...). */
const char *cpu_conv_impl(const struct cpu_conv *c);
/* 1 when oneDNN fell back to its slow reference loops for the forward or
 * backward-weights pass (or backward-data, when with_bwd_data): that layout
 * pair has no fast kernel here. Always 0 without oneDNN. */
int cpu_conv_uses_ref(const struct cpu_conv *c, int with_bwd_data);

/* A linear layer out[B,OUT] = in[B,IN] w[OUT,IN]^T + b as oneDNN's inner
 * product on the flat [OUT, IN] weights. Backward writes din, dw and db
 * (each may be NULL; dw and db together). Without oneDNN:
 * cpu_linear_forward/backward. */
struct cpu_ip;
struct cpu_ip *cpu_ip_create(struct cpu_ctx *x, int B, int IN, int OUT, char *err, size_t errlen);
void cpu_ip_destroy(struct cpu_ip *l);
int cpu_ip_forward(struct cpu_ip *l, float *out, const float *in, const float *w, const float *b);
int cpu_ip_backward(struct cpu_ip *l, float *din, float *dw, float *db, const float *dout, const float *in,
                    const float *w);
const char *cpu_ip_impl(const struct cpu_ip *l);

/* Batch normalisation over (batch, H, W) per channel, layout blk. Training
 * writes the batch mean and biased variance into mean/var; inference reads
 * running statistics from them. Backward (of training mode) writes din,
 * and dgamma/dbeta unless both are NULL. */
struct cpu_bn;
struct cpu_bn *cpu_bn_create(struct cpu_ctx *x, int B, int C, int H, int W, int blk, float eps, char *err,
                             size_t errlen);
void cpu_bn_destroy(struct cpu_bn *b);
int cpu_bn_forward(struct cpu_bn *b, float *out, const float *in, const float *gamma, const float *beta, float *mean,
                   float *var, int train);
int cpu_bn_backward(struct cpu_bn *b, float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                    const float *gamma, const float *mean, const float *var);
const char *cpu_bn_impl(const struct cpu_bn *b);

/* Max or average (count_include_pad) pooling in layout blk. Max-pool
 * backward needs the training forward just before it. Backward writes din. */
enum { CPU_POOL_MAX = 0, CPU_POOL_AVG };
struct cpu_pool;
struct cpu_pool *cpu_pool_create(struct cpu_ctx *x, const struct pool_dims *d, int alg, int blk, char *err,
                                 size_t errlen);
void cpu_pool_destroy(struct cpu_pool *p);
int cpu_pool_forward(struct cpu_pool *p, float *out, const float *in, int train);
int cpu_pool_backward(struct cpu_pool *p, float *din, const float *dout);
const char *cpu_pool_impl(const struct cpu_pool *p);

/* Element-wise loops over n floats (padded buffers included), OpenMP.
 * "acc" selects din += (1) or din = (0). */
void cpu_relu6_forward(float *out, const float *in, int64_t n);
void cpu_relu6_backward(float *din, int acc, const float *dout, const float *out, int64_t n);
void cpu_add_forward(float *out, const float *a, const float *b, int64_t n);
/* dst = src or dst += src. */
void cpu_copy_acc(float *dst, int acc, const float *src, int64_t n);
/* Dropout in layout blk: draws the mask from key over logical NCHW indices
 * (dropout_keep), padded channels dropped, and applies it. */
void cpu_dropout_forward(float *out, uint8_t *mask, const float *in, int B, int C, int HW, int blk, float p,
                         uint64_t key);
void cpu_dropout_backward(float *din, int acc, const float *dout, const uint8_t *mask, float p, int64_t n);

/* Layout conversion of a B x C x HW activation between blk values. */
void cpu_reorder(float *dst, int dst_blk, int acc, const float *src, int src_blk, int B, int C, int HW);
/* Channel concatenation where each input's channels are a contiguous run of
 * every sample (plain, or blocked with the first input's C a multiple of
 * blk): per sample, a's sa floats then b's sb floats. */
void cpu_concat_forward(float *out, const float *a, int64_t sa, const float *b, int64_t sb, int B);
/* Either input gradient may be NULL. */
void cpu_concat_backward(float *da, int acc_a, float *db, int acc_b, const float *dout, int64_t sa, int64_t sb, int B);
/* Global average pool of layout blk into plain out[B, C]. */
void cpu_global_avgpool_forward(float *out, const float *in, int B, int C, int HW, int blk);
void cpu_global_avgpool_backward(float *din, int acc, const float *dout, int B, int C, int HW, int blk);
/* Adaptive average pool of layout blk into plain out[B, C, OH, OW]. */
void cpu_adaptive_avgpool_forward(float *out, const float *in, int B, int C, int H, int W, int OH, int OW, int blk);
void cpu_adaptive_avgpool_backward(float *din, int acc, const float *dout, int B, int C, int H, int W, int OH, int OW,
                                   int blk);

#endif
