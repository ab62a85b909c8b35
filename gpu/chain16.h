/* chain16.h - 16-bit activations between layers on the GPU (--precision
 * bf16 or fp16, DDPTOP_H16_CHAIN=1 while it is being measured): tensors
 * that a 16-bit producer writes and only 16-bit consumers read are held
 * channels-last (NHWC) in bf16 or fp16, so that convolutions, batch norm,
 * ReLU, residual adds and max-pools pass them on without the casts into
 * and out of fp32 that every convolution otherwise adds (model.h's
 * model_plan_chain16 chooses them; layers_cuda.c runs them). These are
 * the kernels beside cuDNN's (chain16_kernels.cu). bf16: 1 for bfloat16,
 * 0 for IEEE half. Each returns 0, or -1 after a failed launch. */
#ifndef DDPTOP_CHAIN16_H
#define DDPTOP_CHAIN16_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A batch norm's device state: its partial sums ([groups x C] float2, see
 * c16_bn_groups) and [C] floats each: the batch's mean and 1/sqrt(var +
 * eps) (kept for backward), and coefficients. */
struct c16_bn_state {
    void *partial;
    float *mean, *invstd, *scale, *shift, *coef;
};
/* The row groups a batch norm of rows x C reduces in (its partial sums'). */
int c16_bn_groups(int64_t rows, int C);
/* y = batch norm of x [rows, C] (rows = N H W): with train, over the
 * batch's statistics, which also move the running ones by momentum (the
 * unbiased variance); without, over the running ones. */
int c16_bn_forward(uint16_t *y, const uint16_t *x, int64_t rows, int C, const float *gamma, const float *beta,
                   float *run_mean, float *run_var, float momentum, float eps, int train, struct c16_bn_state *st,
                   int bf16, void *stream);
/* After a training forward over x: dx (written, or added with acc; NULL:
 * not wanted) and the parameters' gradients (written; NULL: frozen). */
int c16_bn_backward(uint16_t *dx, int acc, const uint16_t *dy, const uint16_t *x, int64_t rows, int C,
                    const float *gamma, float *dgamma, float *dbeta, struct c16_bn_state *st, int bf16, void *stream);
int c16_relu(uint16_t *y, const uint16_t *x, int64_t n, int bf16, void *stream);
int c16_relu_backward(uint16_t *dx, int acc, const uint16_t *dy, const uint16_t *y, int64_t n, int bf16, void *stream);
int c16_add(uint16_t *y, const uint16_t *a, const uint16_t *b, int64_t n, int bf16, void *stream);
/* dst = src, or dst + src with acc */
int c16_copy_acc(uint16_t *dst, int acc, const uint16_t *src, int64_t n, int bf16, void *stream);
/* Max-pool of NHWC x [N, H, W, C] with windows k/s/pad clipped to the
 * input; arg [N, OH, OW, C] keeps each winner's place in its window. */
int c16_maxpool(uint16_t *y, uint8_t *arg, const uint16_t *x, int N, int H, int W, int C, int OH, int OW, int k, int s,
                int pad, int bf16, void *stream);
int c16_maxpool_backward(uint16_t *dx, int acc, const uint16_t *dy, const uint8_t *arg, int N, int H, int W, int C,
                         int OH, int OW, int k, int s, int pad, int bf16, void *stream);
/* Adaptive average pool from NHWC 16-bit x to NCHW float y [N, C, OH, OW]
 * (windows as PyTorch's), and its gradient back. */
int c16_adapool(float *y, const uint16_t *x, int N, int H, int W, int C, int OH, int OW, int bf16, void *stream);
int c16_adapool_backward(uint16_t *dx, int acc, const float *dy, int N, int H, int W, int C, int OH, int OW, int bf16,
                         void *stream);

#ifdef __cplusplus
}
#endif

#endif
