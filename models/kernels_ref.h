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
    int B, C, H, W;      /* input */
    int OC, KH, KW;      /* output channels, kernel */
    int stride, pad;     /* symmetric */
    int groups;          /* C and OC divisible by groups */
    int OH, OW;          /* output, derived by conv_dims_finish */
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
    int OH, OW; /* derived by pool_dims_finish */
};
void pool_dims_finish(struct pool_dims *d);
/* argmax[i] receives the flat input offset (within its image plane) of each max. */
void ref_maxpool_forward(float *out, int32_t *argmax, const float *in, const struct pool_dims *d);
void ref_maxpool_backward(float *din, const float *dout, const int32_t *argmax, const struct pool_dims *d);

/* Softmax cross-entropy over K classes, mean over the batch. probs[B,K]
 * receives the softmax (needed by backward). Returns the mean loss; when
 * correct is non-NULL it receives the number of argmax hits. */
float softmax_xent_forward(float *probs, const float *logits, const int32_t *labels, int B, int K, int *correct);
/* dlogits = (probs - onehot) * scale, written (not accumulated). scale is
 * 1/global_batch so that summing shards gives the mean-loss gradient. */
void softmax_xent_backward(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale);

#endif
