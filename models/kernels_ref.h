/* kernels_ref.h - slow, obvious reference kernels on the CPU.
 *
 * Every fast kernel (oneDNN, BLAS, later cuDNN) is tested against these.
 * They follow llm.c's convention: forward writes its output; backward
 * ACCUMULATES (+=) into every gradient it is given, and a NULL gradient
 * pointer means "not needed". Layouts are NCHW for activations, OIHW (or
 * G x O/G x I/G x KH x KW) for convolution weights, OUT x IN for linear
 * weights, as in PyTorch.
 */
#ifndef DDPTOP_KERNELS_REF_H
#define DDPTOP_KERNELS_REF_H

#include <stdint.h>

/* out[B,OUT] = in[B,IN] * w[OUT,IN]^T + b[OUT] */
void ref_linear_forward(float *out, const float *in, const float *w, const float *b, int B, int IN, int OUT);
void ref_linear_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                         int IN, int OUT);

struct conv_dims {
    int B, C, H, W;  /* input */
    int OC, KH, KW;  /* output channels, kernel */
    int stride, pad; /* symmetric */
    int groups;      /* C and OC divisible by groups */
    int OH, OW;      /* output, derived by conv_dims_finish */
};
void conv_dims_finish(struct conv_dims *d);

/* out[B,OC,OH,OW] = conv(in[B,C,H,W], w[OC,C/groups,KH,KW]) + b[OC] (b may be NULL) */
void ref_conv2d_forward(float *out, const float *in, const float *w, const float *b, const struct conv_dims *d);
void ref_conv2d_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                         const struct conv_dims *d);

void ref_relu_forward(float *out, const float *in, int64_t n);
void ref_relu_backward(float *din, const float *dout, const float *out, int64_t n);

struct pool_dims {
    int B, C, H, W;
    int k, stride, pad;
    int OH, OW;    /* derived by pool_dims_finish */
    int ceil_mode; /* 1: PyTorch's ceil_mode=True (max-pool only) */
    int pad_r;     /* derived: right/bottom padding, pad or more under ceil_mode */
};
/* Output size as PyTorch computes it; under ceil_mode a last window that
 * would start in the right padding is dropped. */
void pool_dims_finish(struct pool_dims *d);
/* argmax[i] receives the flat input offset (within its image plane) of each max. */
void ref_maxpool_forward(float *out, int32_t *argmax, const float *in, const struct pool_dims *d);
void ref_maxpool_backward(float *din, const float *dout, const int32_t *argmax, const struct pool_dims *d);

/* Average pooling with PyTorch's count_include_pad=True: every window
 * divides by k*k, padded zeros included (no ceil_mode). */
void ref_avgpool_forward(float *out, const float *in, const struct pool_dims *d);
void ref_avgpool_backward(float *din, const float *dout, const struct pool_dims *d);

/* Adaptive average pooling to OH x OW: output cell (i, j) averages rows
 * [floor(i*H/OH), ceil((i+1)*H/OH)) and the same for columns, as PyTorch.
 * Windows overlap when H is not a multiple of OH. OH = OW = 1 is the global
 * average pool. */
void ref_adaptive_avgpool_forward(float *out, const float *in, int B, int C, int H, int W, int OH, int OW);
void ref_adaptive_avgpool_backward(float *din, const float *dout, int B, int C, int H, int W, int OH, int OW);

/* Batch normalisation per channel over (batch, H, W), y = gamma * xhat + beta.
 * train = 1: mean[C] and var[C] receive the batch mean and the biased
 * variance, which normalise; train = 0: they are read (running statistics). */
void ref_batchnorm_forward(float *out, float *mean, float *var, const float *in, const float *gamma, const float *beta,
                           int B, int C, int HW, float eps, int train);
/* Backward of the training-mode forward (batch statistics), accumulating. */
void ref_batchnorm_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                            const float *gamma, const float *mean, const float *var, int B, int C, int HW, float eps);

/* min(max(x, 0), 6); the gradient passes where 0 < out < 6 (PyTorch's
 * hardtanh_backward tests the input, which is the same set). */
void ref_relu6_forward(float *out, const float *in, int64_t n);
void ref_relu6_backward(float *din, const float *dout, const float *out, int64_t n);

/* Dropout with an explicit mask: out = in * mask / (1 - p). */
void ref_dropout_forward(float *out, const float *in, const uint8_t *mask, float p, int64_t n);
void ref_dropout_backward(float *din, const float *dout, const uint8_t *mask, float p, int64_t n);

/* Channel concatenation of a[B,Ca,HW] and b[B,Cb,HW] into out[B,Ca+Cb,HW]. */
void ref_concat_forward(float *out, const float *a, const float *b, int B, int Ca, int Cb, int HW);
void ref_concat_backward(float *da, float *db, const float *dout, int B, int Ca, int Cb, int HW);

/* out = a + b; backward adds dout to both (either may be NULL). */
void ref_add_forward(float *out, const float *a, const float *b, int64_t n);
void ref_add_backward(float *da, float *db, const float *dout, int64_t n);

/* The dropout mask as both ddptop and tests/gen_zoo_fixtures.py make it, so
 * that a training step with dropout can be checked against PyTorch. Element
 * i (its logical NCHW index) is kept when
 *   u = (splitmix64(key + (i + 1) * 0x9e3779b97f4a7c15) >> 40) / 2^24 >= p,
 * with key = dropout_key(seed, ordinal, call): the model's seed, the dropout
 * layer's ordinal among the model's dropout layers, and how many training
 * forwards that layer ran before this one. */
uint64_t dropout_key(uint64_t seed, int ordinal, uint64_t call);
static inline int dropout_keep(uint64_t key, int64_t i, float p)
{
    uint64_t z = key + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * (1.0 / 16777216.0)) >= p;
}

/* Softmax cross-entropy over K classes, mean over the batch. probs[B,K]
 * receives the softmax (needed by backward). Returns the mean loss; when
 * correct is non-NULL it receives the number of argmax hits. */
float softmax_xent_forward(float *probs, const float *logits, const int32_t *labels, int B, int K, int *correct);
/* dlogits = (probs - onehot) * scale, written (not accumulated). scale is
 * 1/global_batch so that summing shards gives the mean-loss gradient. */
void softmax_xent_backward(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale);

#endif
