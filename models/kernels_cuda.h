/* kernels_cuda.h - the CUDA counterparts of kernels_cpu.h: cuDNN for
 * convolution and pooling, cuBLAS for GEMM, small kernels (kernels_cuda.cu)
 * for ReLU, softmax cross-entropy, bias and the SGD update. Same layouts
 * and the same write/accumulate contract as the CPU kernels; all pointers
 * are device memory and all work is enqueued on the context's stream.
 *
 * Every cuDNN/cuBLAS/CUDA call is checked; a failure returns -1 and
 * cuda_kernels_error() names the call, the rank and the GPU.
 */
#ifndef DDPTOP_KERNELS_CUDA_H
#define DDPTOP_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_ref.h"

struct cuda_ctx;

/* One per rank: cuDNN and cuBLAS handles on `stream` (a cudaStream_t of
 * GPU `gpu`), and a workspace shared by its convolutions. */
struct cuda_ctx *cuda_ctx_create(void *stream, int rank, int gpu, char *err, size_t errlen);
void cuda_ctx_destroy(struct cuda_ctx *x);
size_t cuda_ctx_workspace_bytes(const struct cuda_ctx *x);
const char *cuda_kernels_error(const struct cuda_ctx *x);

int cuda_linear_forward(struct cuda_ctx *x, float *out, const float *in, const float *w, const float *b, int B, int IN,
                        int OUT);
int cuda_linear_backward(struct cuda_ctx *x, float *din, int din_acc, float *dw, float *db, const float *dout,
                         const float *in, const float *w, int B, int IN, int OUT);

/* A convolution's descriptors and algorithms, chosen once for its shape. */
struct cuda_conv;
struct cuda_conv *cuda_conv_create(struct cuda_ctx *x, const struct conv_dims *d, int has_bias, char *err,
                                   size_t errlen);
void cuda_conv_destroy(struct cuda_conv *c);
int cuda_conv_forward(struct cuda_conv *c, float *out, const float *in, const float *w, const float *b);
int cuda_conv_backward(struct cuda_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                       const float *in, const float *w);

struct cuda_pool;
struct cuda_pool *cuda_maxpool_create(struct cuda_ctx *x, const struct pool_dims *d, char *err, size_t errlen);
void cuda_pool_destroy(struct cuda_pool *p);
int cuda_maxpool_forward(struct cuda_pool *p, float *out, const float *in);
int cuda_maxpool_backward(struct cuda_pool *p, float *din, int din_acc, const float *dout, const float *out,
                          const float *in);

int cuda_relu_forward(struct cuda_ctx *x, float *out, const float *in, int64_t n);
int cuda_relu_backward(struct cuda_ctx *x, float *din, int din_acc, const float *dout, const float *out, int64_t n);

/* Softmax cross-entropy: probs and per-row losses/hits on the device, the
 * batch mean and hit count copied back (this synchronises the stream). */
int cuda_xent_forward(struct cuda_ctx *x, float *probs, const float *logits, const int32_t *labels, int B, int K,
                      float *loss, int *correct);
int cuda_xent_backward(struct cuda_ctx *x, float *dlogits, const float *probs, const int32_t *labels, int B, int K,
                       float scale);

int cuda_sgd_update(struct cuda_ctx *x, float *p, const float *g, float *buf, size_t n, float lr, float momentum,
                    float wd);

/* The small kernels (kernels_cuda.cu), launched on `stream`. */
int cuk_add_bias(float *out, const float *b, int rows, int cols, int inner, void *stream);
int cuk_relu_forward(float *out, const float *in, int64_t n, void *stream);
int cuk_relu_backward(float *din, int acc, const float *dout, const float *out, int64_t n, void *stream);
int cuk_xent_forward(float *probs, float *row_loss, int32_t *row_hit, const float *logits, const int32_t *labels, int B,
                     int K, void *stream);
int cuk_xent_backward(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale,
                      void *stream);
int cuk_sgd(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd, void *stream);
int cuk_fill(float *x, size_t n, float v, void *stream);

#endif
