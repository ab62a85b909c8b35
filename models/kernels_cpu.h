/* kernels_cpu.h - the fast CPU kernels: oneDNN primitives and oneDNN's
 * SGEMM when the library is present, the reference loops otherwise.
 *
 * Unlike the reference kernels, backward here WRITES parameter gradients
 * (each parameter is used once per step) and writes or accumulates the input
 * gradient as `din_acc` says (a tensor read by two layers, such as a
 * residual input, receives two contributions).
 */
#ifndef DDPTOP_KERNELS_CPU_H
#define DDPTOP_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_ref.h"

/* Sets how many threads this calling thread's kernels use (OpenMP). */
void cpu_set_threads(int n);
/* 1 when oneDNN kernels are compiled in. */
int cpu_have_dnnl(void);

/* C[M,N] = alpha * op(A) * op(B) + beta * C, row-major. */
void cpu_gemm(char ta, char tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

void cpu_linear_forward(float *out, const float *in, const float *w, const float *b, int B, int IN, int OUT);
/* din (may be NULL): written or accumulated; dw, db (may be NULL): written. */
void cpu_linear_backward(float *din, int din_acc, float *dw, float *db, const float *dout, const float *in,
                         const float *w, int B, int IN, int OUT);

/* A convolution's primitives, created once for its shape. */
struct cpu_conv;
struct cpu_conv *cpu_conv_create(const struct conv_dims *d, int has_bias, char *err, size_t errlen);
void cpu_conv_destroy(struct cpu_conv *c);
int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b);
int cpu_conv_backward(struct cpu_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                      const float *in, const float *w);

void cpu_relu_forward(float *out, const float *in, int64_t n);
void cpu_relu_backward(float *din, int din_acc, const float *dout, const float *out, int64_t n);
void cpu_maxpool_forward(float *out, int32_t *argmax, const float *in, const struct pool_dims *d);
/* din is zeroed first unless din_acc. */
void cpu_maxpool_backward(float *din, int din_acc, const float *dout, const int32_t *argmax, const struct pool_dims *d);

#endif
