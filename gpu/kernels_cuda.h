/* kernels_cuda.h - the CUDA counterparts of kernels_cpu.h: cuDNN for
 * convolution, pooling and batch norm, cuBLAS for GEMM, small kernels of
 * our own (kernels_cuda.cu) for the rest. Plain NCHW layouts only, and the
 * same write/accumulate contract as the CPU kernels; all pointers are
 * device memory and all work is enqueued on the context's stream.
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

/* The convolution algorithms chosen per shape (with its batch), math type
 * and way of choosing: a shape met again takes the earlier choice without
 * timing anything. Not thread-safe: one per device handle (a rank's), for
 * the contexts that rank's thread makes. */
struct cuda_algo_cache;
struct cuda_algo_cache *cuda_algo_cache_create(void);
void cuda_algo_cache_destroy(struct cuda_algo_cache *c);
/* Shapes chosen for (measured or asked of the heuristics) and shapes found
 * already chosen. */
void cuda_algo_cache_counts(const struct cuda_algo_cache *c, uint64_t *measured, uint64_t *hits);

/* How a context's kernels compute. */
struct cuda_ctx_opts {
    int precision;                 /* enum precision (device.h): any */
    int conv_algo;                 /* enum conv_algo_choice (device.h) */
    struct cuda_algo_cache *cache; /* kept by the caller and shared; NULL: the context's own */
};

/* One per model: cuDNN and cuBLAS handles on `stream` (a cudaStream_t of
 * GPU `gpu`), and a workspace shared by its convolutions. opts NULL: fp32,
 * algorithms found by timing, a cache of its own. */
struct cuda_ctx *cuda_ctx_create(void *stream, int rank, int gpu, const struct cuda_ctx_opts *opts, char *err,
                                 size_t errlen);
void cuda_ctx_destroy(struct cuda_ctx *x);
struct cuda_algo_cache *cuda_ctx_algo_cache(struct cuda_ctx *x);
size_t cuda_ctx_workspace_bytes(const struct cuda_ctx *x);
int cuda_ctx_precision(const struct cuda_ctx *x); /* enum precision */
const char *cuda_kernels_error(const struct cuda_ctx *x);

/* A linear layer's scratch, made at its creation (bf16 rounds its operands
 * into the context's scratch; other precisions need none). */
int cuda_linear_prepare(struct cuda_ctx *x, int B, int IN, int OUT);
int cuda_linear_forward(struct cuda_ctx *x, float *out, const float *in, const float *w, const float *b, int B, int IN,
                        int OUT);
int cuda_linear_backward(struct cuda_ctx *x, float *din, int din_acc, float *dw, float *db, const float *dout,
                         const float *in, const float *w, int B, int IN, int OUT);

/* A convolution's descriptors and algorithms, chosen once for its shape
 * (see cuda_algo_cache) by the context's way: cudnnFind*Ex timing every
 * algorithm on scratch tensors (temporary: the inputs, the outputs and a
 * workspace up to 256 MB), or cuDNN's heuristics. Either way the choice
 * keeps to a workspace of 256 MB. */
struct cuda_conv;
struct cuda_conv *cuda_conv_create(struct cuda_ctx *x, const struct conv_dims *d, int has_bias, char *err,
                                   size_t errlen);
void cuda_conv_destroy(struct cuda_conv *c);
/* The chosen algorithms and how they were chosen, for --info:
 * "cudnn:FWD|BWD-DATA|BWD-FILTER (found)" or "... (heuristic)". */
void cuda_conv_describe(const struct cuda_conv *c, char *buf, size_t n);
int cuda_conv_forward(struct cuda_conv *c, float *out, const float *in, const float *w, const float *b);
int cuda_conv_backward(struct cuda_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                       const float *in, const float *w);
/* 16-bit activations between layers (chain16.h): a convolution whose
 * 16-bit operands are channels-last (bf16 or fp16, no groups, channels in
 * 8s) reads and writes a chain's tensors as they are. */
int cuda_conv_nhwc(const struct cuda_conv *c);
/* x16 (NULL: cast from in) is the input; y16 (NULL: widened into out, the
 * bias added) the output. */
int cuda_conv_forward16(struct cuda_conv *c, float *out, uint16_t *y16, const float *in, const uint16_t *x16,
                        const float *w, const float *b);
/* dy16 (NULL: cast from dout), x16 (NULL: cast from in); the input's
 * gradient into dx16 (written, or added with din_acc), or else din. */
int cuda_conv_backward16(struct cuda_conv *c, float *din, uint16_t *dx16, int din_acc, float *dw, float *db,
                         const float *dout, const uint16_t *dy16, const float *in, const uint16_t *x16, const float *w);

/* cuDNN pooling: max (no ceil_mode: see cuk_maxpool_* for that) or average
 * with PyTorch's count_include_pad=True. */
struct cuda_pool;
struct cuda_pool *cuda_maxpool_create(struct cuda_ctx *x, const struct pool_dims *d, char *err, size_t errlen);
struct cuda_pool *cuda_avgpool_create(struct cuda_ctx *x, const struct pool_dims *d, char *err, size_t errlen);
void cuda_pool_destroy(struct cuda_pool *p);
int cuda_pool_forward(struct cuda_pool *p, float *out, const float *in);
int cuda_pool_backward(struct cuda_pool *p, float *din, int din_acc, const float *dout, const float *out,
                       const float *in);

/* cuDNN batch norm over (batch, H, W) per channel. Training normalises by
 * the batch statistics (kept for backward) and moves run_mean/run_var by
 * `momentum` towards the batch mean and the unbiased variance, as PyTorch;
 * evaluation normalises by the running statistics. */
struct cuda_bn;
struct cuda_bn *cuda_bn_create(struct cuda_ctx *x, int B, int C, int H, int W, double eps, char *err, size_t errlen);
void cuda_bn_destroy(struct cuda_bn *b);
int cuda_bn_forward(struct cuda_bn *b, float *out, const float *in, const float *gamma, const float *beta,
                    float *run_mean, float *run_var, double momentum, int train);
/* dgamma/dbeta NULL: not wanted (frozen). din is always written (cuDNN
 * computes it anyway): pass scratch when it is not wanted. */
int cuda_bn_backward(struct cuda_bn *b, float *din, int din_acc, float *dgamma, float *dbeta, const float *dout,
                     const float *in, const float *gamma);

/* Device memory of the context's GPU, zeroed; NULL with the error set. */
void *cuda_ctx_alloc(struct cuda_ctx *x, size_t bytes);
void cuda_ctx_free(void *p);
/* A copy in any direction (host memory pinned or not), ordered on the
 * context's stream; sync waits for everything enqueued so far. */
int cuda_ctx_copy(struct cuda_ctx *x, void *dst, const void *src, size_t bytes);
int cuda_ctx_sync(struct cuda_ctx *x);
void *cuda_ctx_stream(struct cuda_ctx *x);
/* After a cuk_* launcher failed: sets the context's error from CUDA's,
 * naming `what`, the rank and the GPU. Returns -1. */
int cuda_ctx_launch_failed(struct cuda_ctx *x, const char *what);

/* cuDNN activations over a B x C x H x W tensor: ReLU (clip 0) or ReLU6
 * (clip 6, CUDNN_ACTIVATION_CLIPPED_RELU). Backward passes the gradient
 * where 0 < x (< clip), as the CPU's. */
struct cuda_act;
struct cuda_act *cuda_act_create(struct cuda_ctx *x, int B, int C, int H, int W, double clip, char *err, size_t errlen);
void cuda_act_destroy(struct cuda_act *a);
int cuda_act_forward(struct cuda_act *a, float *out, const float *in);
int cuda_act_backward(struct cuda_act *a, float *din, int din_acc, const float *dout, const float *out,
                      const float *in);

int cuda_relu_forward(struct cuda_ctx *x, float *out, const float *in, int64_t n);
int cuda_relu_backward(struct cuda_ctx *x, float *din, int din_acc, const float *dout, const float *out, int64_t n);

/* Softmax cross-entropy: probs and per-row losses/hits on the device, the
 * batch mean and hit count copied back (this synchronises the stream). */
int cuda_xent_forward(struct cuda_ctx *x, float *probs, const float *logits, const int32_t *labels, int B, int K,
                      float *loss, int *correct);
/* The same in two halves: enqueue launches the loss and its copy back
 * without waiting; result waits for the stream and sums the B rows. */
int cuda_xent_enqueue(struct cuda_ctx *x, float *probs, const float *logits, const int32_t *labels, int B, int K);
int cuda_xent_result(struct cuda_ctx *x, int B, float *loss, int *correct);
int cuda_xent_backward(struct cuda_ctx *x, float *dlogits, const float *probs, const int32_t *labels, int B, int K,
                       float scale);

/* *finite = no NaN or infinity in v[n] (waits for the stream). */
int cuda_all_finite(struct cuda_ctx *x, const float *v, size_t n, int *finite);
int cuda_sgd_update(struct cuda_ctx *x, float *p, const float *g, float *buf, size_t n, float lr, float momentum,
                    float wd, float gscale);

/* The small kernels (kernels_cuda.cu), launched on `stream`. */
int cuk_add_bias(float *out, const float *b, int rows, int cols, int inner, void *stream);
int cuk_relu_forward(float *out, const float *in, int64_t n, void *stream);
int cuk_relu_backward(float *din, int acc, const float *dout, const float *out, int64_t n, void *stream);
int cuk_xent_forward(float *probs, float *row_loss, int32_t *row_hit, const float *logits, const int32_t *labels, int B,
                     int K, void *stream);
int cuk_xent_backward(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale,
                      void *stream);
int cuk_sgd(float *p, const float *g, float *buf, size_t n, float lr, float momentum, float wd, float gscale,
            void *stream);
/* *count (device, zeroed by the caller) > 0 when v[n] holds a NaN or an infinity */
int cuk_count_nonfinite(int32_t *count, const float *v, size_t n, void *stream);
int cuk_fill(float *x, size_t n, float v, void *stream);
/* dst (+)= src */
int cuk_copy_acc(float *dst, int acc, const float *src, int64_t n, void *stream);
/* --precision bf16 and fp16 (bf16: 1 for bfloat16, 0 for IEEE half): dst
 * = src rounded to 16 bits (to nearest even); dst = (or += with acc) src
 * widened to float; the same with the layout changed, NCHW float [N,C,HW]
 * to NHWC 16-bit, and back */
int cuk_to_16(uint16_t *dst, const float *src, int64_t n, int bf16, void *stream);
int cuk_from_16(float *dst, int acc, const uint16_t *src, int64_t n, int bf16, void *stream);
int cuk_to_16_nhwc(uint16_t *dst, const float *src, int64_t N, int C, int64_t HW, int bf16, void *stream);
int cuk_from_16_nchw(float *dst, int acc, const uint16_t *src, int64_t N, int C, int64_t HW, int bf16, void *stream);
int cuk_add(float *out, const float *a, const float *b, int64_t n, void *stream);
/* Masks as cpu_dropout_forward draws them (dropout_keep over the plain index). */
int cuk_dropout_forward(float *out, uint8_t *mask, const float *in, int64_t n, float p, uint64_t key, void *stream);
int cuk_dropout_backward(float *din, int acc, const float *dout, const uint8_t *mask, float p, int64_t n, void *stream);
/* rows x width floats between row pitches (channel concatenation). */
int cuk_rows(float *dst, int64_t dpitch, int acc, const float *src, int64_t spitch, int rows, int64_t width,
             void *stream);
/* Holds `stream` for ns nanoseconds (a one-thread spin on the GPU's timer). */
int cuk_delay(uint64_t ns, void *stream);
int cuk_pad_forward(float *out, const float *in, int planes, int H, int W, int p, void *stream);
int cuk_pad_backward(float *din, int acc, const float *dout, int planes, int H, int W, int p, void *stream);
/* Max-pool over planes of H x W with windows k/s/pad clipped to the input
 * (ceil_mode's extra right padding included); arg keeps each maximum's
 * offset in its plane for backward. */
int cuk_maxpool_forward(float *out, int32_t *arg, const float *in, int planes, int H, int W, int OH, int OW, int k,
                        int s, int pad, void *stream);
int cuk_maxpool_backward(float *din, int acc, const float *dout, const int32_t *arg, int planes, int H, int W, int OH,
                         int OW, int k, int s, int pad, void *stream);
/* dst[n] = (slices[0] + slices[1] + ... in rank order) / world: the
 * gather-scatter average, in the host loop's order of operations. */
int cuk_average_slices(float *dst, const float *slices, int world, int64_t n, void *stream);
int cuk_adapool_forward(float *out, const float *in, int planes, int H, int W, int OH, int OW, void *stream);
int cuk_adapool_backward(float *din, int acc, const float *dout, int planes, int H, int W, int OH, int OW,
                         void *stream);

#endif
