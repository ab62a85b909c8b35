/* kernels_cpu.c - the part of the CPU kernels (kernels_cpu.h) that does not
 * depend on oneDNN: allocation, the thread count, the linear layer on
 * cpu_gemm, and layout conversion and channel concatenation of activations.
 * The rest is split by primitive: kernels_cpu_eltwise.c and
 * kernels_cpu_pool_loops.c hold our own loops and are always built; with
 * oneDNN, kernels_cpu_dnnl.c holds its engine and each model's context, and
 * kernels_cpu_conv.c, _ip.c, _bn.c and _pool.c its primitives; without it,
 * kernels_cpu_fallback.c stands in for all of those with the reference loops
 * (kernels_ref.c), and every activation is plain NCHW.
 */
#include "kernels_cpu_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE = 2 << 20 };

size_t cpu_alloc_size(size_t bytes)
{
    return bytes >= HUGE ? (bytes + HUGE - 1) / HUGE * HUGE : bytes ? (bytes + 63) & ~(size_t)63 : 64;
}

void *cpu_alloc(size_t bytes)
{
    if (bytes >= HUGE) {
        /* whole 2 MB pages, so that the kernel can back them with huge pages:
         * the 4 KB pages of a ResNet's or MLP's 10-100 MB of parameters,
         * gradients and activations miss the TLB on every pass */
        size_t n = (bytes + HUGE - 1) / HUGE * HUGE;
        void *p = aligned_alloc(HUGE, n);
        if (!p)
            return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, n, MADV_HUGEPAGE);
#endif
        memset(p, 0, n);
        return p;
    }
    size_t n = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, n ? n : 64);
    if (p)
        memset(p, 0, n ? n : 64);
    return p;
}

void cpu_set_threads(int n)
{
#ifdef DDPTOP_HAVE_OPENMP
    omp_set_num_threads(n > 0 ? n : 1);
#else
    (void)n;
#endif
}

void cpu_linear_forward(float *out, const float *in, const float *w, const float *b, int B, int IN, int OUT)
{
    /* the bias first, then the product on top (beta 1): one pass over out */
    if (b) {
        for (int i = 0; i < B; i++)
            memcpy(out + (size_t)i * OUT, b, sizeof(float) * (size_t)OUT);
        cpu_gemm('N', 'T', B, OUT, IN, 1.0f, in, IN, w, IN, 1.0f, out, OUT);
    } else {
        cpu_gemm('N', 'T', B, OUT, IN, 1.0f, in, IN, w, IN, 0.0f, out, OUT);
    }
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

void cpu_reorder(float *dst, int dst_blk, int acc, const float *src, int src_blk, int B, int C, int HW)
{
    if (dst_blk == src_blk) {
        cpu_copy_acc(dst, acc, src, (int64_t)B * act_stride(C, HW, 1, src_blk));
        return;
    }
    /* walk the blocked side in memory order; the plain side is (n, c, hw) */
    int blk = dst_blk > 1 ? dst_blk : src_blk, to_blocked = dst_blk > 1;
    if (dst_blk > 1 && src_blk > 1) {
        /* blocked to differently blocked: through logical indexing */
        int dcb = (C + dst_blk - 1) / dst_blk, scb = (C + src_blk - 1) / src_blk;
        OMP_FOR((int64_t)B * C * HW > PAR_MIN)
        for (int n = 0; n < B; n++)
            for (int c = 0; c < dcb * dst_blk; c++)
                for (int i = 0; i < HW; i++) {
                    size_t dk = (((size_t)n * dcb + c / dst_blk) * HW + i) * dst_blk + c % dst_blk;
                    float v = c < C ? src[(((size_t)n * scb + c / src_blk) * HW + i) * src_blk + c % src_blk] : 0.0f;
                    dst[dk] = acc ? dst[dk] + v : v;
                }
        return;
    }
    int CB = (C + blk - 1) / blk;
    int64_t planes = (int64_t)B * CB;
    OMP_FOR(planes * HW * blk > PAR_MIN)
    for (int64_t q = 0; q < planes; q++) {
        int n = (int)(q / CB), cb = (int)(q % CB);
        float *bp = to_blocked ? dst + (size_t)q * HW * blk : NULL;
        const float *bs = to_blocked ? NULL : src + (size_t)q * HW * blk;
        for (int c = 0; c < blk; c++) {
            int ch = cb * blk + c;
            if (to_blocked) {
                const float *s = ch < C ? src + ((size_t)n * C + ch) * HW : NULL;
                for (int i = 0; i < HW; i++) {
                    float v = s ? s[i] : 0.0f;
                    bp[(size_t)i * blk + c] = acc ? bp[(size_t)i * blk + c] + v : v;
                }
            } else if (ch < C) {
                float *d = dst + ((size_t)n * C + ch) * HW;
                for (int i = 0; i < HW; i++)
                    d[i] = acc ? d[i] + bs[(size_t)i * blk + c] : bs[(size_t)i * blk + c];
            }
        }
    }
}

void cpu_concat_forward(float *out, const float *a, int64_t sa, const float *b, int64_t sb, int B)
{
    OMP_FOR((int64_t)B * (sa + sb) > PAR_MIN)
    for (int n = 0; n < B; n++) {
        memcpy(out + (size_t)n * (sa + sb), a + (size_t)n * sa, sizeof(float) * (size_t)sa);
        memcpy(out + (size_t)n * (sa + sb) + sa, b + (size_t)n * sb, sizeof(float) * (size_t)sb);
    }
}

void cpu_concat_backward(float *da, int acc_a, float *db, int acc_b, const float *dout, int64_t sa, int64_t sb, int B)
{
    OMP_FOR((int64_t)B * (sa + sb) > PAR_MIN)
    for (int n = 0; n < B; n++) {
        const float *g = dout + (size_t)n * (sa + sb);
        if (da) {
            float *d = da + (size_t)n * sa;
            if (acc_a)
                for (int64_t i = 0; i < sa; i++)
                    d[i] += g[i];
            else
                memcpy(d, g, sizeof(float) * (size_t)sa);
        }
        if (db) {
            float *d = db + (size_t)n * sb;
            if (acc_b)
                for (int64_t i = 0; i < sb; i++)
                    d[i] += g[sa + i];
            else
                memcpy(d, g + sa, sizeof(float) * (size_t)sb);
        }
    }
}

/* The plain API: a convolution with a context of its own, plain layouts. */
struct cpu_conv *cpu_conv_create(const struct conv_dims *d, int has_bias, char *err, size_t errlen)
{
    struct cpu_ctx *x = cpu_ctx_create(err, errlen);
    if (!x)
        return NULL;
    struct cpu_conv *c = cpu_conv_new(x, 1, d, has_bias, 1, 1, err, errlen);
    if (c && cpu_ctx_finish(x, err, errlen) != 0) {
        cpu_conv_destroy(c);
        return NULL;
    }
    return c;
}

struct cpu_conv *cpu_conv_create_blk(struct cpu_ctx *x, const struct conv_dims *d, int has_bias, int src_blk,
                                     int dst_blk, char *err, size_t errlen)
{
    return cpu_conv_new(x, 0, d, has_bias, src_blk, dst_blk, err, errlen);
}
