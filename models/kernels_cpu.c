/* kernels_cpu.c - CPU kernels on oneDNN (convolution primitives, SGEMM), with
 * the reference loops as the fallback when ddptop is built without it.
 *
 * Primitives are created once per layer shape (cpu_conv_create) and executed
 * every step with new data handles; nothing is allocated in the hot path
 * except a one-time scratch buffer for accumulated input gradients.
 */
#include "kernels_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DDPTOP_HAVE_OPENMP
#include <omp.h>
#endif
#ifdef DDPTOP_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#endif

void cpu_set_threads(int n)
{
#ifdef DDPTOP_HAVE_OPENMP
    omp_set_num_threads(n > 0 ? n : 1);
#else
    (void)n;
#endif
}

int cpu_have_dnnl(void)
{
#ifdef DDPTOP_HAVE_DNNL
    return 1;
#else
    return 0;
#endif
}

void cpu_gemm(char ta, char tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
#ifdef DDPTOP_HAVE_DNNL
    dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
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
#endif
}

void cpu_linear_forward(float *out, const float *in, const float *w, const float *b, int B, int IN, int OUT)
{
    cpu_gemm('N', 'T', B, OUT, IN, 1.0f, in, IN, w, IN, 0.0f, out, OUT);
    if (b)
        for (int i = 0; i < B; i++)
            for (int o = 0; o < OUT; o++)
                out[(size_t)i * OUT + o] += b[o];
}

void cpu_linear_backward(float *din, int din_acc, float *dw, float *db, const float *dout, const float *in,
                         const float *w, int B, int IN, int OUT)
{
    if (din)
        cpu_gemm('N', 'N', B, IN, OUT, 1.0f, dout, OUT, w, IN, din_acc ? 1.0f : 0.0f, din, IN);
    if (dw)
        cpu_gemm('T', 'N', OUT, IN, B, 1.0f, dout, OUT, in, IN, 0.0f, dw, IN);
    if (db) {
        memset(db, 0, sizeof(float) * (size_t)OUT);
        for (int i = 0; i < B; i++)
            for (int o = 0; o < OUT; o++)
                db[o] += dout[(size_t)i * OUT + o];
    }
}

void cpu_relu_forward(float *out, const float *in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void cpu_relu_backward(float *din, int din_acc, const float *dout, const float *out, int64_t n)
{
    if (din_acc)
        for (int64_t i = 0; i < n; i++)
            din[i] += out[i] > 0.0f ? dout[i] : 0.0f;
    else
        for (int64_t i = 0; i < n; i++)
            din[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}

void cpu_maxpool_forward(float *out, int32_t *argmax, const float *in, const struct pool_dims *d)
{
    ref_maxpool_forward(out, argmax, in, d);
}

void cpu_maxpool_backward(float *din, int din_acc, const float *dout, const int32_t *argmax, const struct pool_dims *d)
{
    if (!din_acc)
        memset(din, 0, sizeof(float) * (size_t)d->B * d->C * d->H * d->W);
    ref_maxpool_backward(din, dout, argmax, d);
}

/* ---- convolution ------------------------------------------------------- */

struct cpu_conv {
    struct conv_dims d;
    int has_bias;
    float *scratch; /* input-gradient scratch for accumulation, made on first need */
#ifdef DDPTOP_HAVE_DNNL
    dnnl_stream_t stream;
    dnnl_primitive_t fwd, bwd_data, bwd_weights;
    dnnl_memory_t src, wei, bias, dst, dsrc, dwei, dbias, ddst;
#endif
};

#ifdef DDPTOP_HAVE_DNNL
static dnnl_engine_t g_engine;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static dnnl_status_t g_engine_status;

static void engine_init(void)
{
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
}

#define DNNL_TRY(call)                                                                                         \
    do {                                                                                                       \
        dnnl_status_t st_ = (call);                                                                            \
        if (st_ != dnnl_success) {                                                                             \
            snprintf(err, errlen, "oneDNN: %s failed (status %d) at %s:%d", #call, (int)st_, __FILE__, __LINE__); \
            goto fail;                                                                                         \
        }                                                                                                      \
    } while (0)

static int conv_build(struct cpu_conv *c, char *err, size_t errlen)
{
    const struct conv_dims *d = &c->d;
    dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md;
    dnnl_dims_t src_dims = {d->B, d->C, d->H, d->W};
    dnnl_dims_t dst_dims = {d->B, d->OC, d->OH, d->OW};
    dnnl_dims_t bias_dims = {d->OC};
    dnnl_dims_t strides = {d->stride, d->stride};
    dnnl_dims_t pad = {d->pad, d->pad};
    dnnl_convolution_desc_t fd, bdd, bwd;
    dnnl_primitive_desc_t fpd = NULL, bdpd = NULL, bwpd = NULL;

    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, dnnl_nchw));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, dnnl_nchw));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_x));
    if (d->groups > 1) {
        dnnl_dims_t wd = {d->groups, d->OC / d->groups, d->C / d->groups, d->KH, d->KW};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wei_md, 5, wd, dnnl_f32, dnnl_goihw));
    } else {
        dnnl_dims_t wd = {d->OC, d->C, d->KH, d->KW};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wei_md, 4, wd, dnnl_f32, dnnl_oihw));
    }
    const dnnl_memory_desc_t *bmd = c->has_bias ? &bias_md : NULL;
    DNNL_TRY(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src_md, &wei_md,
                                                bmd, &dst_md, strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, NULL, g_engine, NULL));
    DNNL_TRY(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src_md, &wei_md, &dst_md,
                                                      strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&bdpd, &bdd, NULL, g_engine, fpd));
    DNNL_TRY(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &src_md, &wei_md, bmd,
                                                         &dst_md, strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bwd, NULL, g_engine, fpd));
    DNNL_TRY(dnnl_primitive_create(&c->fwd, fpd));
    DNNL_TRY(dnnl_primitive_create(&c->bwd_data, bdpd));
    DNNL_TRY(dnnl_primitive_create(&c->bwd_weights, bwpd));
    DNNL_TRY(dnnl_memory_create(&c->src, &src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dsrc, &src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->wei, &wei_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dwei, &wei_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->bias, &bias_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dbias, &bias_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dst, &dst_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->ddst, &dst_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_stream_create(&c->stream, g_engine, dnnl_stream_default_flags));
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bdpd);
    dnnl_primitive_desc_destroy(bwpd);
    return 0;
fail:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bdpd)
        dnnl_primitive_desc_destroy(bdpd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    return -1;
}

static void set(dnnl_memory_t m, const void *p)
{
    dnnl_memory_set_data_handle(m, (void *)p);
}
#endif

struct cpu_conv *cpu_conv_create(const struct conv_dims *d, int has_bias, char *err, size_t errlen)
{
    struct cpu_conv *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory creating a convolution");
        return NULL;
    }
    c->d = *d;
    c->has_bias = has_bias;
#ifdef DDPTOP_HAVE_DNNL
    pthread_once(&g_engine_once, engine_init);
    if (g_engine_status != dnnl_success) {
        snprintf(err, errlen, "oneDNN: cannot create the CPU engine (status %d)", (int)g_engine_status);
        free(c);
        return NULL;
    }
    if (conv_build(c, err, errlen) != 0) {
        cpu_conv_destroy(c);
        return NULL;
    }
#else
    (void)err;
    (void)errlen;
#endif
    return c;
}

void cpu_conv_destroy(struct cpu_conv *c)
{
    if (!c)
        return;
#ifdef DDPTOP_HAVE_DNNL
    dnnl_primitive_t prims[] = {c->fwd, c->bwd_data, c->bwd_weights};
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    dnnl_memory_t mems[] = {c->src, c->wei, c->bias, c->dst, c->dsrc, c->dwei, c->dbias, c->ddst};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    if (c->stream)
        dnnl_stream_destroy(c->stream);
#endif
    free(c->scratch);
    free(c);
}

int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b)
{
#ifdef DDPTOP_HAVE_DNNL
    set(c->src, in);
    set(c->wei, w);
    set(c->dst, out);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, c->src}, {DNNL_ARG_WEIGHTS, c->wei}, {DNNL_ARG_DST, c->dst}};
    int nargs = 3;
    if (c->has_bias) {
        set(c->bias, b);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, c->bias};
    }
    if (dnnl_primitive_execute(c->fwd, c->stream, nargs, args) != dnnl_success)
        return -1;
    return dnnl_stream_wait(c->stream) == dnnl_success ? 0 : -1;
#else
    ref_conv2d_forward(out, in, w, c->has_bias ? b : NULL, &c->d);
    return 0;
#endif
}

int cpu_conv_backward(struct cpu_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                      const float *in, const float *w)
{
    const struct conv_dims *d = &c->d;
    size_t in_n = (size_t)d->B * d->C * d->H * d->W;
    float *dst_din = din;
    if (din && din_acc) {
        if (!c->scratch && !(c->scratch = malloc(sizeof(float) * in_n)))
            return -1;
        dst_din = c->scratch;
    }
#ifdef DDPTOP_HAVE_DNNL
    if (dw) {
        set(c->src, in);
        set(c->ddst, dout);
        set(c->dwei, dw);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, c->src}, {DNNL_ARG_DIFF_DST, c->ddst}, {DNNL_ARG_DIFF_WEIGHTS, c->dwei}};
        int nargs = 3;
        if (c->has_bias && db) {
            set(c->dbias, db);
            args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, c->dbias};
        }
        if (dnnl_primitive_execute(c->bwd_weights, c->stream, nargs, args) != dnnl_success)
            return -1;
    }
    if (din) {
        set(c->ddst, dout);
        set(c->wei, w);
        set(c->dsrc, dst_din);
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, c->ddst}, {DNNL_ARG_WEIGHTS, c->wei}, {DNNL_ARG_DIFF_SRC, c->dsrc}};
        if (dnnl_primitive_execute(c->bwd_data, c->stream, 3, args) != dnnl_success)
            return -1;
    }
    if (dnnl_stream_wait(c->stream) != dnnl_success)
        return -1;
#else
    size_t w_n = (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW;
    if (dw)
        memset(dw, 0, sizeof(float) * w_n);
    if (db && c->has_bias)
        memset(db, 0, sizeof(float) * (size_t)d->OC);
    if (dst_din)
        memset(dst_din, 0, sizeof(float) * in_n);
    ref_conv2d_backward(dst_din, dw, c->has_bias ? db : NULL, dout, in, w, d);
#endif
    if (din && din_acc)
        for (size_t i = 0; i < in_n; i++)
            din[i] += c->scratch[i];
    return 0;
}
