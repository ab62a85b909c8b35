/* kernels_cpu_fallback.c - what oneDNN does for the CPU kernels, done by
 * the reference loops (kernels_ref.c) for builds without oneDNN; built
 * instead of kernels_cpu_dnnl.c and kernels_cpu_{conv,ip,bn,pool}.c, so the
 * API of kernels_cpu.h is the same either way. Activations are plain NCHW:
 * cpu_preferred_blk is 1, and convolution and batch norm refuse blocked
 * layouts (max-pooling of blocked maps still runs our own loops, as with
 * oneDNN). cpu_gemm is a plain triple loop, and a model's context holds
 * nothing.
 */
#include "kernels_cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_have_dnnl(void)
{
    return 0;
}

int cpu_preferred_blk(void)
{
    return 1;
}

void cpu_gemm(char ta, char tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    int at = ta == 'T' || ta == 't', bt = tb == 'T' || tb == 't';
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) {
                float a = at ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = bt ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += a * b;
            }
            float *c = &C[(size_t)i * ldc + j];
            *c = alpha * acc + (beta == 0.0f ? 0.0f : beta * *c);
        }
}

/* ---- the model's context ------------------------------------------------ */
/* Nothing here needs a stream, a scratchpad or weights in another layout:
 * a context is only the handle that the layers pass around. */
struct cpu_ctx {
    int unused; /* C wants a member */
};

struct cpu_ctx *cpu_ctx_create(char *err, size_t errlen)
{
    struct cpu_ctx *x = calloc(1, sizeof(*x));
    if (!x)
        snprintf(err, errlen, "out of memory");
    return x;
}

int cpu_ctx_finish(struct cpu_ctx *x, char *err, size_t errlen)
{
    return 0;
}

int cpu_ctx_bf16(struct cpu_ctx *x, char *err, size_t errlen)
{
    snprintf(err, errlen, "bf16 needs oneDNN (this ddptop was built without it)");
    return -1;
}

int cpu_bf16_native(void)
{
    return 0;
}

void cpu_ctx_destroy(struct cpu_ctx *x)
{
    free(x);
}

/* ---- convolution ------------------------------------------------------- */

struct cpu_conv {
    struct conv_dims d;
    int has_bias;
    struct cpu_ctx *x;
    int own_ctx;    /* the plain API: a context of its own */
    float *scratch; /* input gradient to accumulate, made on first need */
};

struct cpu_conv *cpu_conv_new(struct cpu_ctx *x, int own_ctx, const struct conv_dims *d, int has_bias, int src_blk,
                              int dst_blk, char *err, size_t errlen)
{
    struct cpu_conv *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory creating a convolution");
        if (own_ctx)
            cpu_ctx_destroy(x);
        return NULL;
    }
    c->d = *d;
    c->has_bias = has_bias;
    c->x = x;
    c->own_ctx = own_ctx;
    err[0] = 0;
    if (src_blk != 1 || dst_blk != 1) {
        snprintf(err, errlen, "blocked layouts need oneDNN");
        cpu_conv_destroy(c);
        return NULL;
    }
    return c;
}

const char *cpu_conv_impl(const struct cpu_conv *c)
{
    return "ref";
}

/* Whether oneDNN fell back to its slow loops: never, without oneDNN. */
int cpu_conv_uses_ref(const struct cpu_conv *c, int with_bwd_data)
{
    return 0;
}

void cpu_conv_destroy(struct cpu_conv *c)
{
    if (!c)
        return;
    if (c->own_ctx)
        cpu_ctx_destroy(c->x);
    free(c->scratch);
    free(c);
}

int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b)
{
    ref_conv2d_forward(out, in, w, c->has_bias ? b : NULL, &c->d);
    return 0;
}

/* With din_acc the gradient is made in scratch and added to din whole, as
 * the oneDNN build adds it, not term by term into din. */
int cpu_conv_backward(struct cpu_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                      const float *in, const float *w)
{
    const struct conv_dims *d = &c->d;
    size_t in_n = (size_t)d->B * (size_t)act_stride(d->C, d->H, d->W, 1);
    float *dst_din = din;
    if (din && din_acc) {
        if (!c->scratch && !(c->scratch = malloc(sizeof(float) * in_n)))
            return -1;
        dst_din = c->scratch;
    }
    size_t w_n = (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW;
    if (dw)
        memset(dw, 0, sizeof(float) * w_n);
    if (db && c->has_bias)
        memset(db, 0, sizeof(float) * (size_t)d->OC);
    if (dst_din)
        memset(dst_din, 0, sizeof(float) * in_n);
    ref_conv2d_backward(dst_din, dw, c->has_bias ? db : NULL, dout, in, w, d);
    if (din && din_acc)
        cpu_copy_acc(din, 1, c->scratch, (int64_t)in_n);
    return 0;
}

/* ---- linear layers --------------------------------------------------------- */

struct cpu_ip {
    int B, IN, OUT;
};

struct cpu_ip *cpu_ip_create(struct cpu_ctx *x, int B, int IN, int OUT, char *err, size_t errlen)
{
    struct cpu_ip *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory creating a linear layer");
        return NULL;
    }
    *l = (struct cpu_ip){.B = B, .IN = IN, .OUT = OUT};
    return l;
}

void cpu_ip_destroy(struct cpu_ip *l)
{
    free(l);
}

const char *cpu_ip_impl(const struct cpu_ip *l)
{
    return "gemm (reference loops)";
}

int cpu_ip_forward(struct cpu_ip *l, float *out, const float *in, const float *w, const float *b)
{
    cpu_linear_forward(out, in, w, b, l->B, l->IN, l->OUT);
    return 0;
}

int cpu_ip_backward(struct cpu_ip *l, float *din, float *dw, float *db, const float *dout, const float *in,
                    const float *w)
{
    cpu_linear_backward(din, 0, dw, db, dout, in, w, l->B, l->IN, l->OUT);
    return 0;
}

/* ---- batch normalisation ------------------------------------------------ */

struct cpu_bn {
    int B, C, H, W;
    float eps;
};

struct cpu_bn *cpu_bn_create(struct cpu_ctx *x, int B, int C, int H, int W, int blk, float eps, char *err,
                             size_t errlen)
{
    struct cpu_bn *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory creating a batch norm");
        return NULL;
    }
    *b = (struct cpu_bn){.B = B, .C = C, .H = H, .W = W, .eps = eps};
    if (blk != 1) {
        snprintf(err, errlen, "blocked layouts need oneDNN");
        cpu_bn_destroy(b);
        return NULL;
    }
    return b;
}

void cpu_bn_destroy(struct cpu_bn *b)
{
    free(b);
}

const char *cpu_bn_impl(const struct cpu_bn *b)
{
    return "ref";
}

int cpu_bn_forward(struct cpu_bn *b, float *out, const float *in, const float *gamma, const float *beta, float *mean,
                   float *var, int train)
{
    ref_batchnorm_forward(out, mean, var, in, gamma, beta, b->B, b->C, b->H * b->W, b->eps, train);
    return 0;
}

int cpu_bn_backward(struct cpu_bn *b, float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                    const float *gamma, const float *mean, const float *var)
{
    size_t n = (size_t)b->B * b->C * b->H * b->W;
    memset(din, 0, sizeof(float) * n);
    if (dgamma)
        memset(dgamma, 0, sizeof(float) * (size_t)b->C);
    if (dbeta)
        memset(dbeta, 0, sizeof(float) * (size_t)b->C);
    ref_batchnorm_backward(din, dgamma, dbeta, dout, in, gamma, mean, var, b->B, b->C, b->H * b->W, b->eps);
    return 0;
}

/* ---- pooling -------------------------------------------------------------- */

struct cpu_pool {
    struct pool_dims d;
    int alg, blk;
    char impl[64];
    int32_t *argmax; /* reference max-pool: [B, C, OH, OW] */
    uint8_t *am;     /* our blocked max-pool: window position of each maximum, [B, stride of out] */
};

struct cpu_pool *cpu_pool_create(struct cpu_ctx *x, const struct pool_dims *d, int alg, int blk, char *err,
                                 size_t errlen)
{
    struct cpu_pool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory creating a pooling layer");
        return NULL;
    }
    p->d = *d;
    p->alg = alg;
    p->blk = blk;
    snprintf(p->impl, sizeof(p->impl), "ref");
    if (cpu_maxpool_blk_fits(d, alg, blk)) {
        snprintf(p->impl, sizeof(p->impl), "omp loops, nChw%dc", blk);
        if (!(p->am = malloc((size_t)d->B * (size_t)act_stride(d->C, d->OH, d->OW, blk)))) {
            snprintf(err, errlen, "out of memory for max-pool indices");
            cpu_pool_destroy(p);
            return NULL;
        }
        return p;
    }
    if (blk != 1) {
        snprintf(err, errlen, "blocked layouts need oneDNN");
        cpu_pool_destroy(p);
        return NULL;
    }
    if (alg == CPU_POOL_MAX && !(p->argmax = malloc(sizeof(int32_t) * (size_t)d->B * d->C * d->OH * d->OW))) {
        snprintf(err, errlen, "out of memory for max-pool indices");
        cpu_pool_destroy(p);
        return NULL;
    }
    return p;
}

void cpu_pool_destroy(struct cpu_pool *p)
{
    if (!p)
        return;
    free(p->argmax);
    free(p->am);
    free(p);
}

const char *cpu_pool_impl(const struct cpu_pool *p)
{
    return p->impl;
}

int cpu_pool_forward(struct cpu_pool *p, float *out, const float *in, int train)
{
    if (p->am) {
        cpu_maxpool_blk_forward(out, p->am, in, &p->d, p->blk);
        return 0;
    }
    if (p->alg == CPU_POOL_MAX)
        ref_maxpool_forward(out, p->argmax, in, &p->d);
    else
        ref_avgpool_forward(out, in, &p->d);
    return 0;
}

int cpu_pool_backward(struct cpu_pool *p, float *din, const float *dout)
{
    if (p->am) {
        cpu_maxpool_blk_backward(din, dout, p->am, &p->d, p->blk);
        return 0;
    }
    memset(din, 0, sizeof(float) * (size_t)p->d.B * p->d.C * p->d.H * p->d.W);
    if (p->alg == CPU_POOL_MAX)
        ref_maxpool_backward(din, dout, p->argmax, &p->d);
    else
        ref_avgpool_backward(din, dout, &p->d);
    return 0;
}
