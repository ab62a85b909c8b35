/* kernels_cpu.c - CPU kernels: oneDNN primitives (convolution, inner
 * product, batch norm, average pooling, weight reorders), our own loops where
 * they beat or replace oneDNN (max-pooling of blocked maps, element-wise
 * work, layout conversion, global and adaptive pooling, all on the calling
 * thread's OpenMP team), dnnl_sgemm behind the plain-layout API, and the
 * reference loops as the fallback when ddptop is built without oneDNN (then
 * every activation is plain NCHW).
 *
 * Every primitive is made once per layer shape with a user-managed
 * scratchpad: one buffer per model (struct cpu_ctx), sized for the largest
 * need, so executing a primitive allocates no scratch memory. (oneDNN's JIT
 * GEMM, inside the inner product, still takes a 72 KB packing buffer from
 * the heap per call.)
 */
#include "kernels_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef DDPTOP_HAVE_OPENMP
#include <omp.h>
#endif
#ifdef DDPTOP_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define POOL_AVX512 1
#endif

/* A parallel loop over the calling thread's OpenMP team, only when the work
 * is large enough to repay waking it (a fork/join costs a few microseconds). */
#define PRAGMA_(x) _Pragma(#x)
#ifdef DDPTOP_HAVE_OPENMP
#define OMP_FOR(cond) PRAGMA_(omp parallel for schedule(static) if (cond))
#define OMP_PARALLEL(cond) PRAGMA_(omp parallel if (cond))
#else
#define OMP_FOR(cond)
#define OMP_PARALLEL(cond)
#endif
#define PAR_MIN 32768 /* floats */

static int par_tid(void)
{
#ifdef DDPTOP_HAVE_OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int par_nthreads(void)
{
#ifdef DDPTOP_HAVE_OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* Runs `body` with [lo, hi) set to this thread's share of [0, n), on the
 * team when `big`, else on the calling thread alone. */
#define PAR_RANGE_IF(n, big, body)                                                                                     \
    do {                                                                                                               \
        int64_t n_ = (n);                                                                                              \
        OMP_PARALLEL(big)                                                                                              \
        {                                                                                                              \
            int64_t t_ = par_tid(), T_ = par_nthreads();                                                               \
            int64_t lo = n_ * t_ / T_, hi = n_ * (t_ + 1) / T_;                                                        \
            body;                                                                                                      \
        }                                                                                                              \
    } while (0)
#define PAR_RANGE(n, body) PAR_RANGE_IF(n, n_ > PAR_MIN, body)

/* ---- element-wise chunks (restrict: the compiler vectorises them) ---------- */
VEC_CLONES static void relu_fwd_chunk(float *restrict out, const float *restrict in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

VEC_CLONES static void relu_bwd_chunk(float *restrict din, int acc, const float *restrict dout,
                                      const float *restrict out, int64_t n)
{
    if (acc)
        for (int64_t i = 0; i < n; i++)
            din[i] += out[i] > 0.0f ? dout[i] : 0.0f;
    else
        for (int64_t i = 0; i < n; i++)
            din[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}

VEC_CLONES static void relu6_fwd_chunk(float *restrict out, const float *restrict in, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float v = in[i] > 0.0f ? in[i] : 0.0f;
        out[i] = v < 6.0f ? v : 6.0f;
    }
}

VEC_CLONES static void relu6_bwd_chunk(float *restrict din, int acc, const float *restrict dout,
                                       const float *restrict out, int64_t n)
{
    if (acc)
        for (int64_t i = 0; i < n; i++)
            din[i] += out[i] > 0.0f && out[i] < 6.0f ? dout[i] : 0.0f;
    else
        for (int64_t i = 0; i < n; i++)
            din[i] = out[i] > 0.0f && out[i] < 6.0f ? dout[i] : 0.0f;
}

VEC_CLONES static void add_chunk(float *restrict out, const float *restrict a, const float *restrict b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

VEC_CLONES static void acc_chunk(float *restrict dst, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] += src[i];
}

VEC_CLONES static void mask_chunk(float *restrict din, int acc, const float *restrict dout,
                                  const uint8_t *restrict mask, float scale, int64_t n)
{
    if (acc)
        for (int64_t i = 0; i < n; i++)
            din[i] += mask[i] ? dout[i] * scale : 0.0f;
    else
        for (int64_t i = 0; i < n; i++)
            din[i] = mask[i] ? dout[i] * scale : 0.0f;
}

void *cpu_alloc(size_t bytes)
{
    enum { HUGE = 2 << 20 };
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

int cpu_have_dnnl(void)
{
#ifdef DDPTOP_HAVE_DNNL
    return 1;
#else
    return 0;
#endif
}

int cpu_preferred_blk(void)
{
#ifdef DDPTOP_HAVE_DNNL
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
#else
    return 1;
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

void cpu_relu_forward(float *out, const float *in, int64_t n)
{
    PAR_RANGE(n, relu_fwd_chunk(out + lo, in + lo, hi - lo));
}

void cpu_relu_backward(float *din, int din_acc, const float *dout, const float *out, int64_t n)
{
    PAR_RANGE(n, relu_bwd_chunk(din + lo, din_acc, dout + lo, out + lo, hi - lo));
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

void cpu_relu6_forward(float *out, const float *in, int64_t n)
{
    PAR_RANGE(n, relu6_fwd_chunk(out + lo, in + lo, hi - lo));
}

void cpu_relu6_backward(float *din, int acc, const float *dout, const float *out, int64_t n)
{
    PAR_RANGE(n, relu6_bwd_chunk(din + lo, acc, dout + lo, out + lo, hi - lo));
}

void cpu_add_forward(float *out, const float *a, const float *b, int64_t n)
{
    PAR_RANGE(n, add_chunk(out + lo, a + lo, b + lo, hi - lo));
}

void cpu_copy_acc(float *dst, int acc, const float *src, int64_t n)
{
    if (acc)
        PAR_RANGE(n, acc_chunk(dst + lo, src + lo, hi - lo));
    else if (dst != src)
        PAR_RANGE(n, memcpy(dst + lo, src + lo, sizeof(float) * (size_t)(hi - lo)));
}

void cpu_dropout_forward(float *out, uint8_t *mask, const float *in, int B, int C, int HW, int blk, float p,
                         uint64_t key)
{
    int CB = (C + blk - 1) / blk;
    float scale = 1.0f / (1.0f - p);
    int64_t planes = (int64_t)B * CB;
    OMP_FOR(planes * HW * blk > PAR_MIN)
    for (int64_t q = 0; q < planes; q++) {
        int n = (int)(q / CB), cb = (int)(q % CB);
        for (int i = 0; i < HW; i++)
            for (int c = 0; c < blk; c++) {
                int ch = cb * blk + c;
                size_t k = ((size_t)q * HW + i) * blk + c;
                int keep = ch < C && dropout_keep(key, ((int64_t)n * C + ch) * HW + i, p);
                mask[k] = (uint8_t)keep;
                out[k] = keep ? in[k] * scale : 0.0f;
            }
    }
}

void cpu_dropout_backward(float *din, int acc, const float *dout, const uint8_t *mask, float p, int64_t n)
{
    float scale = 1.0f / (1.0f - p);
    PAR_RANGE(n, mask_chunk(din + lo, acc, dout + lo, mask + lo, scale, hi - lo));
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

void cpu_global_avgpool_forward(float *out, const float *in, int B, int C, int HW, int blk)
{
    int CB = (C + blk - 1) / blk;
    int64_t planes = (int64_t)B * CB;
    float inv = 1.0f / (float)HW;
    OMP_FOR(planes * HW * blk > PAR_MIN)
    for (int64_t q = 0; q < planes; q++) {
        int n = (int)(q / CB), cb = (int)(q % CB);
        const float *s = in + (size_t)q * HW * blk;
        float acc[16] = {0};
        float *a = blk <= 16 ? acc : NULL;
        if (!a)
            continue; /* blk > 16 is never made */
        for (int i = 0; i < HW; i++)
            for (int c = 0; c < blk; c++)
                a[c] += s[(size_t)i * blk + c];
        for (int c = 0; c < blk && cb * blk + c < C; c++)
            out[(size_t)n * C + cb * blk + c] = a[c] * inv;
    }
}

void cpu_global_avgpool_backward(float *din, int acc, const float *dout, int B, int C, int HW, int blk)
{
    int CB = (C + blk - 1) / blk;
    int64_t planes = (int64_t)B * CB;
    float inv = 1.0f / (float)HW;
    OMP_FOR(planes * HW * blk > PAR_MIN)
    for (int64_t q = 0; q < planes; q++) {
        int n = (int)(q / CB), cb = (int)(q % CB);
        float *d = din + (size_t)q * HW * blk;
        float g[16];
        for (int c = 0; c < blk && c < 16; c++)
            g[c] = cb * blk + c < C ? dout[(size_t)n * C + cb * blk + c] * inv : 0.0f;
        for (int i = 0; i < HW; i++)
            for (int c = 0; c < blk && c < 16; c++)
                d[(size_t)i * blk + c] = acc ? d[(size_t)i * blk + c] + g[c] : g[c];
    }
}

/* PyTorch's adaptive pooling window along one side: [*lo, *hi). */
static void adaptive_window(int i, int in, int out, int *lo, int *hi)
{
    *lo = (int)(((int64_t)i * in) / out);
    *hi = (int)((((int64_t)i + 1) * in + out - 1) / out);
}

/* Offset of logical (n, c, y, x) in layout blk. */
static inline size_t act_at(int n, int c, int y, int x, int C, int H, int W, int blk)
{
    if (blk == 1)
        return (((size_t)n * C + c) * H + y) * W + x;
    int CB = (C + blk - 1) / blk;
    return ((((size_t)n * CB + c / blk) * H + y) * W + x) * blk + c % blk;
}

void cpu_adaptive_avgpool_forward(float *out, const float *in, int B, int C, int H, int W, int OH, int OW, int blk)
{
    OMP_FOR((int64_t)B * C * H * W > PAR_MIN)
    for (int p = 0; p < B * C; p++) {
        int n = p / C, c = p % C;
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                int y0, y1, x0, x1;
                adaptive_window(oy, H, OH, &y0, &y1);
                adaptive_window(ox, W, OW, &x0, &x1);
                float acc = 0.0f;
                for (int y = y0; y < y1; y++)
                    for (int x = x0; x < x1; x++)
                        acc += in[act_at(n, c, y, x, C, H, W, blk)];
                out[((size_t)p * OH + oy) * OW + ox] = acc / (float)((y1 - y0) * (x1 - x0));
            }
    }
}

void cpu_adaptive_avgpool_backward(float *din, int acc, const float *dout, int B, int C, int H, int W, int OH, int OW,
                                   int blk)
{
    if (!acc)
        memset(din, 0, sizeof(float) * (size_t)B * (size_t)act_stride(C, H, W, blk));
    /* one sample-channel plane per iteration: windows overlap only within it */
    OMP_FOR((int64_t)B * C * H * W > PAR_MIN)
    for (int p = 0; p < B * C; p++) {
        int n = p / C, c = p % C;
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                int y0, y1, x0, x1;
                adaptive_window(oy, H, OH, &y0, &y1);
                adaptive_window(ox, W, OW, &x0, &x1);
                float g = dout[((size_t)p * OH + oy) * OW + ox] / (float)((y1 - y0) * (x1 - x0));
                for (int y = y0; y < y1; y++)
                    for (int x = x0; x < x1; x++)
                        din[act_at(n, c, y, x, C, H, W, blk)] += g;
            }
    }
}

/* ---- oneDNN plumbing ------------------------------------------------------ */

struct cpu_ctx {
    size_t scratch_need; /* bytes: the largest scratchpad of any primitive */
    void *scratch;
    /* weights in a layout needed only within one call (backward-data's,
     * backward-weights' output): one buffer for all layers */
    size_t wtmp_need;
    void *wtmp;
#ifdef DDPTOP_HAVE_DNNL
    dnnl_stream_t stream;
#endif
};

#ifdef DDPTOP_HAVE_DNNL
static dnnl_engine_t g_engine;
static dnnl_primitive_attr_t g_attr; /* user-managed scratchpad */
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static dnnl_status_t g_engine_status;

static void engine_init(void)
{
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    if (g_engine_status == dnnl_success)
        g_engine_status = dnnl_primitive_attr_create(&g_attr);
    if (g_engine_status == dnnl_success)
        g_engine_status = dnnl_primitive_attr_set_scratchpad_mode(g_attr, dnnl_scratchpad_mode_user);
}

#define DNNL_TRY(call)                                                                                                 \
    do {                                                                                                               \
        dnnl_status_t st_ = (call);                                                                                    \
        if (st_ != dnnl_success) {                                                                                     \
            snprintf(err, errlen, "oneDNN: %s failed (status %d) at %s:%d", #call, (int)st_, __FILE__, __LINE__);      \
            goto fail;                                                                                                 \
        }                                                                                                              \
    } while (0)

/* A primitive with its scratchpad handle (NULL when it needs none). */
struct prim {
    dnnl_primitive_t p;
    dnnl_memory_t scratch;
};

static int prim_make(struct cpu_ctx *x, struct prim *pr, const_dnnl_primitive_desc_t pd, char *err, size_t errlen)
{
    DNNL_TRY(dnnl_primitive_create(&pr->p, pd));
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (bytes > 0) {
        DNNL_TRY(dnnl_memory_create(&pr->scratch, smd, g_engine, DNNL_MEMORY_NONE));
        if (bytes > x->scratch_need)
            x->scratch_need = bytes;
    }
    return 0;
fail:
    return -1;
}

static void prim_free(struct prim *pr)
{
    if (pr->p)
        dnnl_primitive_destroy(pr->p);
    if (pr->scratch)
        dnnl_memory_destroy(pr->scratch);
    pr->p = NULL;
    pr->scratch = NULL;
}

static int prim_run(struct cpu_ctx *x, struct prim *pr, int nargs, const dnnl_exec_arg_t *args)
{
    dnnl_exec_arg_t a[16];
    memcpy(a, args, sizeof(*args) * (size_t)nargs);
    if (pr->scratch) {
        dnnl_memory_set_data_handle(pr->scratch, x->scratch);
        a[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, pr->scratch};
    }
    return dnnl_primitive_execute(pr->p, x->stream, nargs, a) == dnnl_success ? 0 : -1;
}

static void set(dnnl_memory_t m, const void *p)
{
    dnnl_memory_set_data_handle(m, (void *)p);
}

static dnnl_format_tag_t act_tag(int blk)
{
    return blk == 16 ? dnnl_nChw16c : blk == 8 ? dnnl_nChw8c : dnnl_nchw;
}

static dnnl_status_t act_md(dnnl_memory_desc_t *md, int B, int C, int H, int W, int blk)
{
    dnnl_dims_t dims = {B, C, H, W};
    return dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, act_tag(blk));
}

static void impl_name(const_dnnl_primitive_desc_t pd, char *out, size_t len)
{
    const char *s = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s)
        s = "?";
    snprintf(out, len, "%s", s);
}

/* A reorder between two layouts of the same tensor. */
static int reorder_make(struct cpu_ctx *x, struct prim *pr, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to, char *err, size_t errlen)
{
    dnnl_primitive_desc_t pd = NULL;
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, from, g_engine, to, g_engine, g_attr));
    int rc = prim_make(x, pr, pd, err, errlen);
    dnnl_primitive_desc_destroy(pd);
    return rc;
fail:
    return -1;
}

static int reorder_run(struct cpu_ctx *x, struct prim *pr, dnnl_memory_t from, const void *src, dnnl_memory_t to,
                       void *dst)
{
    set(from, src);
    set(to, dst);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return prim_run(x, pr, 2, args);
}

static int engine_ready(char *err, size_t errlen)
{
    pthread_once(&g_engine_once, engine_init);
    if (g_engine_status != dnnl_success) {
        snprintf(err, errlen, "oneDNN: cannot create the CPU engine (status %d)", (int)g_engine_status);
        return -1;
    }
    return 0;
}

/* An aligned buffer for a memory descriptor's bytes. */
static void *md_alloc(const dnnl_memory_desc_t *md)
{
    size_t n = (dnnl_memory_desc_get_size(md) + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, n ? n : 64);
    if (p)
        memset(p, 0, n ? n : 64);
    return p;
}
#endif

struct cpu_ctx *cpu_ctx_create(char *err, size_t errlen)
{
    struct cpu_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
#ifdef DDPTOP_HAVE_DNNL
    if (engine_ready(err, errlen) != 0)
        goto fail;
    DNNL_TRY(dnnl_stream_create(&x->stream, g_engine, dnnl_stream_default_flags));
    return x;
fail:
    cpu_ctx_destroy(x);
    return NULL;
#else
    return x;
#endif
}

int cpu_ctx_finish(struct cpu_ctx *x, char *err, size_t errlen)
{
    free(x->wtmp);
    size_t w = (x->wtmp_need + 63) & ~(size_t)63;
    x->wtmp = w ? aligned_alloc(64, w) : NULL;
    if (w && !x->wtmp) {
        snprintf(err, errlen, "out of memory for %zu bytes of weights", w);
        return -1;
    }
    free(x->scratch);
    size_t n = (x->scratch_need + 63) & ~(size_t)63;
    x->scratch = n ? aligned_alloc(64, n) : NULL;
    if (n && !x->scratch) {
        snprintf(err, errlen, "out of memory for a %zu-byte scratchpad", n);
        return -1;
    }
    if (x->scratch)
        memset(x->scratch, 0, n); /* touch the pages now, not in the first step */
    return 0;
}

void cpu_ctx_destroy(struct cpu_ctx *x)
{
    if (!x)
        return;
#ifdef DDPTOP_HAVE_DNNL
    if (x->stream)
        dnnl_stream_destroy(x->stream);
#endif
    free(x->scratch);
    free(x->wtmp);
    free(x);
}

/* ---- convolution ------------------------------------------------------- */

struct cpu_conv {
    struct conv_dims d;
    int has_bias, src_blk, dst_blk;
    struct cpu_ctx *x;
    int own_ctx;    /* the plain API: a context of its own, weights reordered at every use */
    float *scratch; /* the plain API: input gradient to accumulate, made on first need */
    char impl[96];
#ifdef DDPTOP_HAVE_DNNL
    struct prim fwd, bwd_data, bwd_weights;
    struct prim w_to_fwd, w_to_bd, dw_to_user; /* reorders; .p NULL when the layouts agree */
    int bd_uses_fwd;                           /* backward-data takes the forward's weight copy */
    dnnl_memory_t src, dst, bias, dsrc, ddst, dbias;
    dnnl_memory_t w_user, w_fwd, w_bd, dw_user, dw_bw;
    void *w_fwd_buf; /* the forward's weights, kept for backward-data */
    float *db_dummy;
    /* A blocked input whose channels do not fill the last block (LeNet's 6)
     * is presented to oneDNN as cpad channels, the padding being real zeros:
     * its KxK kernels need whole blocks. The weights get zero input channels
     * (w_pad, OC x cpad x KH x KW), and the weight gradient is cropped back
     * (from dw_pad). */
    int cpad;
    float *w_pad, *dw_pad; /* [OC]: the bias gradient oneDNN computes when the caller wants none */
#endif
};

#ifdef DDPTOP_HAVE_DNNL
static int conv_build(struct cpu_conv *c, char *err, size_t errlen)
{
    struct conv_dims dd = c->d;
    const struct conv_dims *d = &dd;
    c->cpad = c->src_blk > 1 && d->groups == 1 && d->KH * d->KW > 1 ? act_cpad(d->C, c->src_blk) : d->C;
    dd.C = c->cpad;
    if (c->cpad != c->d.C) {
        size_t n = (size_t)d->OC * c->cpad * d->KH * d->KW;
        c->w_pad = calloc(n, sizeof(float));
        c->dw_pad = calloc(n, sizeof(float));
        if (!c->w_pad || !c->dw_pad) {
            snprintf(err, errlen, "out of memory for convolution weights");
            return -1;
        }
    }
    dnnl_memory_desc_t src_md, dst_md, bias_md, wu_md, wany_md;
    dnnl_dims_t bias_dims = {d->OC};
    dnnl_dims_t strides = {d->stride, d->stride};
    dnnl_dims_t pad = {d->pad, d->pad};
    dnnl_convolution_desc_t fd, bdd, bwd;
    dnnl_primitive_desc_t fpd = NULL, bdpd = NULL, bwpd = NULL;
    struct cpu_ctx *x = c->x;

    DNNL_TRY(act_md(&src_md, d->B, d->C, d->H, d->W, c->src_blk));
    DNNL_TRY(act_md(&dst_md, d->B, d->OC, d->OH, d->OW, c->dst_blk));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_x));
    if (d->groups > 1) {
        dnnl_dims_t wd = {d->groups, d->OC / d->groups, d->C / d->groups, d->KH, d->KW};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wu_md, 5, wd, dnnl_f32, dnnl_goihw));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wany_md, 5, wd, dnnl_f32, dnnl_format_tag_any));
    } else {
        dnnl_dims_t wd = {d->OC, d->C, d->KH, d->KW};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wu_md, 4, wd, dnnl_f32, dnnl_oihw));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&wany_md, 4, wd, dnnl_f32, dnnl_format_tag_any));
    }
    /* the plain API keeps OIHW everywhere: its caller may pass new weights
     * to backward without a forward */
    const dnnl_memory_desc_t *wmd = c->own_ctx ? &wu_md : &wany_md;
    const dnnl_memory_desc_t *bmd = c->has_bias ? &bias_md : NULL;
    DNNL_TRY(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src_md, wmd, bmd,
                                                &dst_md, strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, g_attr, g_engine, NULL));
    DNNL_TRY(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src_md, wmd, &dst_md, strides,
                                                      pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&bdpd, &bdd, g_attr, g_engine, fpd));
    DNNL_TRY(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &src_md, wmd, bmd, &dst_md,
                                                         strides, pad, pad));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bwd, g_attr, g_engine, fpd));
    if (prim_make(x, &c->fwd, fpd, err, errlen) || prim_make(x, &c->bwd_data, bdpd, err, errlen) ||
        prim_make(x, &c->bwd_weights, bwpd, err, errlen))
        goto fail;
    char a[32], b[32], w[32];
    impl_name(fpd, a, sizeof(a));
    impl_name(bdpd, b, sizeof(b));
    impl_name(bwpd, w, sizeof(w));
    snprintf(c->impl, sizeof(c->impl), "%s|%s|%s", a, b, w);

    const dnnl_memory_desc_t *wf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *wb = dnnl_primitive_desc_query_md(bdpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ww = dnnl_primitive_desc_query_md(bwpd, dnnl_query_diff_weights_md, 0);
    DNNL_TRY(dnnl_memory_create(&c->w_user, &wu_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dw_user, &wu_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->w_fwd, wf, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->w_bd, wb, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dw_bw, ww, g_engine, DNNL_MEMORY_NONE));
    if (!dnnl_memory_desc_equal(wf, &wu_md)) {
        if (reorder_make(x, &c->w_to_fwd, &wu_md, wf, err, errlen) || !(c->w_fwd_buf = md_alloc(wf)))
            goto fail_msg;
    }
    c->bd_uses_fwd = dnnl_memory_desc_equal(wb, wf);
    if (!c->bd_uses_fwd && !dnnl_memory_desc_equal(wb, &wu_md)) {
        if (reorder_make(x, &c->w_to_bd, &wu_md, wb, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(wb) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(wb);
    }
    if (!dnnl_memory_desc_equal(ww, &wu_md)) {
        if (reorder_make(x, &c->dw_to_user, ww, &wu_md, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(ww) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(ww);
    }
    if (c->has_bias && !(c->db_dummy = calloc((size_t)d->OC, sizeof(float))))
        goto fail_msg;
    DNNL_TRY(dnnl_memory_create(&c->src, &src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dsrc, &src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->bias, &bias_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dbias, &bias_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->dst, &dst_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&c->ddst, &dst_md, g_engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bdpd);
    dnnl_primitive_desc_destroy(bwpd);
    return 0;
fail_msg:
    if (!err[0])
        snprintf(err, errlen, "out of memory for convolution weights");
fail:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bdpd)
        dnnl_primitive_desc_destroy(bdpd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    return -1;
}
#endif

static struct cpu_conv *conv_new(struct cpu_ctx *x, int own_ctx, const struct conv_dims *d, int has_bias, int src_blk,
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
    c->src_blk = src_blk;
    c->dst_blk = dst_blk;
    c->x = x;
    c->own_ctx = own_ctx;
    snprintf(c->impl, sizeof(c->impl), "ref");
    err[0] = 0;
#ifdef DDPTOP_HAVE_DNNL
    if (conv_build(c, err, errlen) != 0) {
        cpu_conv_destroy(c);
        return NULL;
    }
#else
    if (src_blk != 1 || dst_blk != 1) {
        snprintf(err, errlen, "blocked layouts need oneDNN");
        cpu_conv_destroy(c);
        return NULL;
    }
#endif
    return c;
}

struct cpu_conv *cpu_conv_create(const struct conv_dims *d, int has_bias, char *err, size_t errlen)
{
    struct cpu_ctx *x = cpu_ctx_create(err, errlen);
    if (!x)
        return NULL;
    struct cpu_conv *c = conv_new(x, 1, d, has_bias, 1, 1, err, errlen);
    if (c && cpu_ctx_finish(x, err, errlen) != 0) {
        cpu_conv_destroy(c);
        return NULL;
    }
    return c;
}

struct cpu_conv *cpu_conv_create_blk(struct cpu_ctx *x, const struct conv_dims *d, int has_bias, int src_blk,
                                     int dst_blk, char *err, size_t errlen)
{
    return conv_new(x, 0, d, has_bias, src_blk, dst_blk, err, errlen);
}

const char *cpu_conv_impl(const struct cpu_conv *c)
{
    return c->impl;
}

int cpu_conv_uses_ref(const struct cpu_conv *c, int with_bwd_data)
{
#ifdef DDPTOP_HAVE_DNNL
    const char *p = c->impl;
    for (int part = 0; part < 3; part++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if ((part != 1 || with_bwd_data) && len >= 3 && !strncmp(p, "ref", 3))
            return 1;
        if (!bar)
            break;
        p = bar + 1;
    }
#endif
    (void)c;
    (void)with_bwd_data;
    return 0;
}

void cpu_conv_destroy(struct cpu_conv *c)
{
    if (!c)
        return;
#ifdef DDPTOP_HAVE_DNNL
    struct prim *prims[] = {&c->fwd, &c->bwd_data, &c->bwd_weights, &c->w_to_fwd, &c->w_to_bd, &c->dw_to_user};
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        prim_free(prims[i]);
    dnnl_memory_t mems[] = {c->src,    c->dst,   c->bias, c->dsrc,    c->ddst, c->dbias,
                            c->w_user, c->w_fwd, c->w_bd, c->dw_user, c->dw_bw};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(c->w_fwd_buf);
    free(c->db_dummy);
    free(c->w_pad);
    free(c->dw_pad);
#endif
    if (c->own_ctx)
        cpu_ctx_destroy(c->x);
    free(c->scratch);
    free(c);
}

int cpu_conv_forward(struct cpu_conv *c, float *out, const float *in, const float *w, const float *b)
{
#ifdef DDPTOP_HAVE_DNNL
    struct cpu_ctx *x = c->x;
    if (c->w_pad) {
        /* the zero input channels stay zero from allocation */
        const struct conv_dims *d = &c->d;
        size_t k = (size_t)d->KH * d->KW;
        for (int o = 0; o < d->OC; o++)
            memcpy(c->w_pad + (size_t)o * c->cpad * k, w + (size_t)o * d->C * k, sizeof(float) * d->C * k);
        w = c->w_pad;
    }
    const void *wf = w;
    if (c->w_to_fwd.p) {
        if (reorder_run(x, &c->w_to_fwd, c->w_user, w, c->w_fwd, c->w_fwd_buf) != 0)
            return -1;
        wf = c->w_fwd_buf;
    }
    set(c->src, in);
    set(c->w_fwd, wf);
    set(c->dst, out);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, c->src}, {DNNL_ARG_WEIGHTS, c->w_fwd}, {DNNL_ARG_DST, c->dst}};
    int nargs = 3;
    if (c->has_bias) {
        set(c->bias, b);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, c->bias};
    }
    if (prim_run(x, &c->fwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
#else
    ref_conv2d_forward(out, in, w, c->has_bias ? b : NULL, &c->d);
    return 0;
#endif
}

int cpu_conv_backward(struct cpu_conv *c, float *din, int din_acc, float *dw, float *db, const float *dout,
                      const float *in, const float *w)
{
    const struct conv_dims *d = &c->d;
    size_t in_n = (size_t)d->B * (size_t)act_stride(d->C, d->H, d->W, c->src_blk);
    float *dst_din = din;
    if (din && din_acc) {
        if (!c->scratch && !(c->scratch = malloc(sizeof(float) * in_n)))
            return -1;
        dst_din = c->scratch;
    }
#ifdef DDPTOP_HAVE_DNNL
    struct cpu_ctx *x = c->x;
    float *dw_user = dw;
    if (c->w_pad) {
        w = c->w_pad; /* padded by this step's forward */
        dw = dw ? c->dw_pad : NULL;
    }
    if (dw) {
        void *dwp = c->dw_to_user.p ? x->wtmp : dw;
        set(c->src, in);
        set(c->ddst, dout);
        set(c->dw_bw, dwp);
        dnnl_exec_arg_t args[4] = {
            {DNNL_ARG_SRC, c->src}, {DNNL_ARG_DIFF_DST, c->ddst}, {DNNL_ARG_DIFF_WEIGHTS, c->dw_bw}};
        int nargs = 3;
        if (c->has_bias) {
            /* oneDNN always computes it */
            set(c->dbias, db ? db : c->db_dummy);
            args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, c->dbias};
        }
        if (prim_run(x, &c->bwd_weights, nargs, args) != 0)
            return -1;
        if (c->dw_to_user.p && reorder_run(x, &c->dw_to_user, c->dw_bw, dwp, c->dw_user, dw) != 0)
            return -1;
        if (c->w_pad) {
            size_t k = (size_t)d->KH * d->KW;
            for (int o = 0; o < d->OC; o++)
                memcpy(dw_user + (size_t)o * d->C * k, c->dw_pad + (size_t)o * c->cpad * k, sizeof(float) * d->C * k);
        }
    }
    if (din) {
        const void *wb = w;
        if (c->bd_uses_fwd) {
            if (c->w_to_fwd.p) {
                /* forward left this step's reordered copy; the plain API redoes it */
                if (c->own_ctx && reorder_run(x, &c->w_to_fwd, c->w_user, w, c->w_fwd, c->w_fwd_buf) != 0)
                    return -1;
                wb = c->w_fwd_buf;
            }
        } else if (c->w_to_bd.p) {
            if (reorder_run(x, &c->w_to_bd, c->w_user, w, c->w_bd, x->wtmp) != 0)
                return -1;
            wb = x->wtmp;
        }
        set(c->ddst, dout);
        set(c->w_bd, wb);
        set(c->dsrc, dst_din);
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_DIFF_DST, c->ddst}, {DNNL_ARG_WEIGHTS, c->w_bd}, {DNNL_ARG_DIFF_SRC, c->dsrc}};
        if (prim_run(x, &c->bwd_data, 3, args) != 0)
            return -1;
    }
    if (dnnl_stream_wait(x->stream) != dnnl_success)
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
        cpu_copy_acc(din, 1, c->scratch, (int64_t)in_n);
    return 0;
}

/* ---- inner product (linear layers) ---------------------------------------- */
/* oneDNN's inner product on the flat [OUT, IN] weights as they are. Its
 * brgemm kernels want the weights blocked and run the MLP's products 15-30%
 * faster, but reordering 2.7 MB of weights there and the gradients back
 * every step costs more than that gains (0.42 ms of a 1.6 ms step); on
 * plain weights it picks the same JIT GEMM as dnnl_sgemm, with the bias
 * added in the forward pass and its gradient made in the weights' pass. */
struct cpu_ip {
    int B, IN, OUT;
    struct cpu_ctx *x;
    char impl[96];
#ifdef DDPTOP_HAVE_DNNL
    struct prim fwd, bwd_data, bwd_weights, w_to_fwd, w_to_bd, dw_to_user;
    int bd_uses_fwd;
    dnnl_memory_t src, dst, bias, dsrc, ddst, dbias, w_user, w_fwd, w_bd, dw_user, dw_bw;
    void *w_fwd_buf;
    float *db_dummy; /* [OUT] */
#endif
};

struct cpu_ip *cpu_ip_create(struct cpu_ctx *x, int B, int IN, int OUT, char *err, size_t errlen)
{
    struct cpu_ip *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory creating a linear layer");
        return NULL;
    }
    *l = (struct cpu_ip){.B = B, .IN = IN, .OUT = OUT, .x = x};
    snprintf(l->impl, sizeof(l->impl), "%s", "gemm (reference loops)");
#ifdef DDPTOP_HAVE_DNNL
    dnnl_memory_desc_t src_md, dst_md, bias_md, wu_md;
    dnnl_dims_t sd = {B, IN}, dd = {B, OUT}, bd = {OUT}, wd = {OUT, IN};
    dnnl_inner_product_desc_t fd, bdd, bwd;
    dnnl_primitive_desc_t fpd = NULL, bdpd = NULL, bwpd = NULL;
    err[0] = 0;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dnnl_f32, dnnl_nc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_nc));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bd, dnnl_f32, dnnl_x));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&wu_md, 2, wd, dnnl_f32, dnnl_oi));
    DNNL_TRY(dnnl_inner_product_forward_desc_init(&fd, dnnl_forward_training, &src_md, &wu_md, &bias_md, &dst_md));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, g_attr, g_engine, NULL));
    DNNL_TRY(dnnl_inner_product_backward_data_desc_init(&bdd, &src_md, &wu_md, &dst_md));
    DNNL_TRY(dnnl_primitive_desc_create(&bdpd, &bdd, g_attr, g_engine, fpd));
    DNNL_TRY(dnnl_inner_product_backward_weights_desc_init(&bwd, &src_md, &wu_md, &bias_md, &dst_md));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bwd, g_attr, g_engine, fpd));
    if (prim_make(x, &l->fwd, fpd, err, errlen) || prim_make(x, &l->bwd_data, bdpd, err, errlen) ||
        prim_make(x, &l->bwd_weights, bwpd, err, errlen))
        goto fail;
    char a[32], b[32], w[32];
    impl_name(fpd, a, sizeof(a));
    impl_name(bdpd, b, sizeof(b));
    impl_name(bwpd, w, sizeof(w));
    snprintf(l->impl, sizeof(l->impl), "%s|%s|%s", a, b, w);
    const dnnl_memory_desc_t *wf = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *wb = dnnl_primitive_desc_query_md(bdpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ww = dnnl_primitive_desc_query_md(bwpd, dnnl_query_diff_weights_md, 0);
    dnnl_memory_t *um[] = {&l->w_user, &l->dw_user};
    for (int i = 0; i < 2; i++)
        DNNL_TRY(dnnl_memory_create(um[i], &wu_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->w_fwd, wf, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->w_bd, wb, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&l->dw_bw, ww, g_engine, DNNL_MEMORY_NONE));
    if (!dnnl_memory_desc_equal(wf, &wu_md) &&
        (reorder_make(x, &l->w_to_fwd, &wu_md, wf, err, errlen) || !(l->w_fwd_buf = md_alloc(wf))))
        goto fail;
    l->bd_uses_fwd = dnnl_memory_desc_equal(wb, wf);
    if (!l->bd_uses_fwd && !dnnl_memory_desc_equal(wb, &wu_md)) {
        if (reorder_make(x, &l->w_to_bd, &wu_md, wb, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(wb) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(wb);
    }
    if (!dnnl_memory_desc_equal(ww, &wu_md)) {
        if (reorder_make(x, &l->dw_to_user, ww, &wu_md, err, errlen))
            goto fail;
        if (dnnl_memory_desc_get_size(ww) > x->wtmp_need)
            x->wtmp_need = dnnl_memory_desc_get_size(ww);
    }
    if (!(l->db_dummy = calloc((size_t)OUT, sizeof(float))))
        goto fail;
    dnnl_memory_t *am[] = {&l->src, &l->dsrc};
    for (int i = 0; i < 2; i++)
        DNNL_TRY(dnnl_memory_create(am[i], &src_md, g_engine, DNNL_MEMORY_NONE));
    dnnl_memory_t *dm[] = {&l->dst, &l->ddst};
    for (int i = 0; i < 2; i++)
        DNNL_TRY(dnnl_memory_create(dm[i], &dst_md, g_engine, DNNL_MEMORY_NONE));
    dnnl_memory_t *bm[] = {&l->bias, &l->dbias};
    for (int i = 0; i < 2; i++)
        DNNL_TRY(dnnl_memory_create(bm[i], &bias_md, g_engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bdpd);
    dnnl_primitive_desc_destroy(bwpd);
    return l;
fail:
    if (!err[0])
        snprintf(err, errlen, "out of memory creating a linear layer");
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bdpd)
        dnnl_primitive_desc_destroy(bdpd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    cpu_ip_destroy(l);
    return NULL;
#else
    (void)err;
    (void)errlen;
    return l;
#endif
}

void cpu_ip_destroy(struct cpu_ip *l)
{
    if (!l)
        return;
#ifdef DDPTOP_HAVE_DNNL
    struct prim *prims[] = {&l->fwd, &l->bwd_data, &l->bwd_weights, &l->w_to_fwd, &l->w_to_bd, &l->dw_to_user};
    for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
        prim_free(prims[i]);
    dnnl_memory_t mems[] = {l->src,    l->dst,   l->bias, l->dsrc,    l->ddst, l->dbias,
                            l->w_user, l->w_fwd, l->w_bd, l->dw_user, l->dw_bw};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(l->w_fwd_buf);
    free(l->db_dummy);
#endif
    free(l);
}

const char *cpu_ip_impl(const struct cpu_ip *l)
{
    return l->impl;
}

int cpu_ip_forward(struct cpu_ip *l, float *out, const float *in, const float *w, const float *b)
{
#ifdef DDPTOP_HAVE_DNNL
    struct cpu_ctx *x = l->x;
    const void *wf = w;
    if (l->w_to_fwd.p) {
        if (reorder_run(x, &l->w_to_fwd, l->w_user, w, l->w_fwd, l->w_fwd_buf) != 0)
            return -1;
        wf = l->w_fwd_buf;
    }
    set(l->src, in);
    set(l->w_fwd, wf);
    set(l->bias, b);
    set(l->dst, out);
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SRC, l->src}, {DNNL_ARG_WEIGHTS, l->w_fwd}, {DNNL_ARG_BIAS, l->bias}, {DNNL_ARG_DST, l->dst}};
    if (prim_run(x, &l->fwd, 4, args) != 0)
        return -1;
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
#else
    cpu_linear_forward(out, in, w, b, l->B, l->IN, l->OUT);
    return 0;
#endif
}

int cpu_ip_backward(struct cpu_ip *l, float *din, float *dw, float *db, const float *dout, const float *in,
                    const float *w)
{
#ifdef DDPTOP_HAVE_DNNL
    struct cpu_ctx *x = l->x;
    if (dw) {
        void *dwp = l->dw_to_user.p ? x->wtmp : dw;
        set(l->src, in);
        set(l->ddst, dout);
        set(l->dw_bw, dwp);
        set(l->dbias, db ? db : l->db_dummy);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, l->src},
                                   {DNNL_ARG_DIFF_DST, l->ddst},
                                   {DNNL_ARG_DIFF_WEIGHTS, l->dw_bw},
                                   {DNNL_ARG_DIFF_BIAS, l->dbias}};
        if (prim_run(x, &l->bwd_weights, 4, args) != 0)
            return -1;
        if (l->dw_to_user.p && reorder_run(x, &l->dw_to_user, l->dw_bw, dwp, l->dw_user, dw) != 0)
            return -1;
    }
    if (din) {
        const void *wb = w;
        if (l->bd_uses_fwd) {
            if (l->w_to_fwd.p)
                wb = l->w_fwd_buf; /* this step's forward reordered them */
        } else if (l->w_to_bd.p) {
            if (reorder_run(x, &l->w_to_bd, l->w_user, w, l->w_bd, x->wtmp) != 0)
                return -1;
            wb = x->wtmp;
        }
        set(l->ddst, dout);
        set(l->w_bd, wb);
        set(l->dsrc, din);
        dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_DIFF_DST, l->ddst}, {DNNL_ARG_WEIGHTS, l->w_bd}, {DNNL_ARG_DIFF_SRC, l->dsrc}};
        if (prim_run(x, &l->bwd_data, 3, args) != 0)
            return -1;
    }
    return dnnl_stream_wait(x->stream) == dnnl_success ? 0 : -1;
#else
    cpu_linear_backward(din, 0, dw, db, dout, in, w, l->B, l->IN, l->OUT);
    return 0;
#endif
}

/* ---- batch normalisation ------------------------------------------------ */

struct cpu_bn {
    int B, C, H, W, blk;
    float eps;
    struct cpu_ctx *x;
    char impl[64];
#ifdef DDPTOP_HAVE_DNNL
    struct prim fwd_train, fwd_eval, bwd; /* bwd always makes dgamma/dbeta: a frozen layer's go to dummy */
    dnnl_memory_t src, dst, scale, shift, mean, var, dsrc, ddst, dscale, dshift;
    float *dummy; /* [3C]: diff scale/shift that a frozen layer discards, and the
                   * shift backward insists on being given but does not need */
#endif
};

struct cpu_bn *cpu_bn_create(struct cpu_ctx *x, int B, int C, int H, int W, int blk, float eps, char *err,
                             size_t errlen)
{
    struct cpu_bn *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory creating a batch norm");
        return NULL;
    }
    *b = (struct cpu_bn){.B = B, .C = C, .H = H, .W = W, .blk = blk, .eps = eps, .x = x};
    snprintf(b->impl, sizeof(b->impl), "ref");
#ifdef DDPTOP_HAVE_DNNL
    dnnl_memory_desc_t data_md, c_md;
    dnnl_dims_t cd = {C};
    dnnl_batch_normalization_desc_t ft, fe, bw;
    dnnl_primitive_desc_t ftpd = NULL, fepd = NULL, bwpd = NULL;
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    DNNL_TRY(act_md(&data_md, B, C, H, W, blk));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&c_md, 1, cd, dnnl_f32, dnnl_x));
    DNNL_TRY(dnnl_batch_normalization_forward_desc_init(&ft, dnnl_forward_training, &data_md, eps, flags));
    DNNL_TRY(dnnl_primitive_desc_create(&ftpd, &ft, g_attr, g_engine, NULL));
    DNNL_TRY(dnnl_batch_normalization_forward_desc_init(&fe, dnnl_forward_inference, &data_md, eps,
                                                        flags | dnnl_use_global_stats));
    DNNL_TRY(dnnl_primitive_desc_create(&fepd, &fe, g_attr, g_engine, NULL));
    DNNL_TRY(dnnl_batch_normalization_backward_desc_init(&bw, dnnl_backward, &data_md, &data_md, eps, flags));
    DNNL_TRY(dnnl_primitive_desc_create(&bwpd, &bw, g_attr, g_engine, ftpd));
    if (prim_make(x, &b->fwd_train, ftpd, err, errlen) || prim_make(x, &b->fwd_eval, fepd, err, errlen) ||
        prim_make(x, &b->bwd, bwpd, err, errlen))
        goto fail;
    impl_name(ftpd, b->impl, sizeof(b->impl));
    dnnl_memory_t *dm[] = {&b->src, &b->dst, &b->dsrc, &b->ddst};
    for (size_t i = 0; i < 4; i++)
        DNNL_TRY(dnnl_memory_create(dm[i], &data_md, g_engine, DNNL_MEMORY_NONE));
    dnnl_memory_t *cm[] = {&b->scale, &b->shift, &b->mean, &b->var, &b->dscale, &b->dshift};
    for (size_t i = 0; i < 6; i++)
        DNNL_TRY(dnnl_memory_create(cm[i], &c_md, g_engine, DNNL_MEMORY_NONE));
    if (!(b->dummy = calloc(3 * (size_t)C, sizeof(float)))) {
        snprintf(err, errlen, "out of memory creating a batch norm");
        goto fail;
    }
    dnnl_primitive_desc_destroy(ftpd);
    dnnl_primitive_desc_destroy(fepd);
    dnnl_primitive_desc_destroy(bwpd);
    return b;
fail:
    if (ftpd)
        dnnl_primitive_desc_destroy(ftpd);
    if (fepd)
        dnnl_primitive_desc_destroy(fepd);
    if (bwpd)
        dnnl_primitive_desc_destroy(bwpd);
    cpu_bn_destroy(b);
    return NULL;
#else
    if (blk != 1) {
        snprintf(err, errlen, "blocked layouts need oneDNN");
        cpu_bn_destroy(b);
        return NULL;
    }
    return b;
#endif
}

void cpu_bn_destroy(struct cpu_bn *b)
{
    if (!b)
        return;
#ifdef DDPTOP_HAVE_DNNL
    prim_free(&b->fwd_train);
    prim_free(&b->fwd_eval);
    prim_free(&b->bwd);
    dnnl_memory_t mems[] = {b->src, b->dst,  b->scale, b->shift,  b->mean,
                            b->var, b->dsrc, b->ddst,  b->dscale, b->dshift};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(b->dummy);
#endif
    free(b);
}

const char *cpu_bn_impl(const struct cpu_bn *b)
{
    return b->impl;
}

int cpu_bn_forward(struct cpu_bn *b, float *out, const float *in, const float *gamma, const float *beta, float *mean,
                   float *var, int train)
{
#ifdef DDPTOP_HAVE_DNNL
    set(b->src, in);
    set(b->dst, out);
    set(b->scale, gamma);
    set(b->shift, beta);
    set(b->mean, mean);
    set(b->var, var);
    dnnl_exec_arg_t args[6] = {{DNNL_ARG_SRC, b->src},     {DNNL_ARG_DST, b->dst},   {DNNL_ARG_SCALE, b->scale},
                               {DNNL_ARG_SHIFT, b->shift}, {DNNL_ARG_MEAN, b->mean}, {DNNL_ARG_VARIANCE, b->var}};
    if (prim_run(b->x, train ? &b->fwd_train : &b->fwd_eval, 6, args) != 0)
        return -1;
    return dnnl_stream_wait(b->x->stream) == dnnl_success ? 0 : -1;
#else
    ref_batchnorm_forward(out, mean, var, in, gamma, beta, b->B, b->C, b->H * b->W, b->eps, train);
    return 0;
#endif
}

int cpu_bn_backward(struct cpu_bn *b, float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                    const float *gamma, const float *mean, const float *var)
{
#ifdef DDPTOP_HAVE_DNNL
    set(b->src, in);
    set(b->ddst, dout);
    set(b->dsrc, din);
    set(b->scale, gamma);
    set(b->mean, mean);
    set(b->var, var);
    set(b->dscale, dgamma ? dgamma : b->dummy);
    set(b->dshift, dbeta ? dbeta : b->dummy + b->C);
    set(b->shift, b->dummy + 2 * b->C);
    dnnl_exec_arg_t args[9] = {
        {DNNL_ARG_SRC, b->src},       {DNNL_ARG_DIFF_DST, b->ddst},     {DNNL_ARG_SCALE, b->scale},
        {DNNL_ARG_SHIFT, b->shift},   {DNNL_ARG_MEAN, b->mean},         {DNNL_ARG_VARIANCE, b->var},
        {DNNL_ARG_DIFF_SRC, b->dsrc}, {DNNL_ARG_DIFF_SCALE, b->dscale}, {DNNL_ARG_DIFF_SHIFT, b->dshift}};
    if (prim_run(b->x, &b->bwd, 9, args) != 0)
        return -1;
    return dnnl_stream_wait(b->x->stream) == dnnl_success ? 0 : -1;
#else
    size_t n = (size_t)b->B * b->C * b->H * b->W;
    memset(din, 0, sizeof(float) * n);
    if (dgamma)
        memset(dgamma, 0, sizeof(float) * (size_t)b->C);
    if (dbeta)
        memset(dbeta, 0, sizeof(float) * (size_t)b->C);
    ref_batchnorm_backward(din, dgamma, dbeta, dout, in, gamma, mean, var, b->B, b->C, b->H * b->W, b->eps);
    return 0;
#endif
}

/* ---- max-pool of blocked activations ---------------------------------------- */
/* Our own loops, not oneDNN's: for nChw16c they run ~3x faster here (a
 * 2x2 pool of LeNet's 64x16x28x28 maps: 0.15 against 0.5 ms). Each output
 * vector takes the max over its window, keeping the window position of
 * each lane's maximum (first wins ties, as PyTorch); backward routes the
 * gradient there. Windows that tile the input exactly (k == stride, no
 * padding) write every input gradient once; others clear and add. */
static inline void maxpool_blk_plane(float *restrict out, uint8_t *restrict am, const float *restrict in,
                                     const struct pool_dims *d, int blk)
{
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            float m[16];
            uint8_t a[16];
            for (int c = 0; c < blk; c++) {
                m[c] = -INFINITY;
                a[c] = 0;
            }
            for (int ky = 0; ky < d->k; ky++) {
                int iy = oy * d->stride - d->pad + ky;
                if (iy < 0 || iy >= d->H)
                    continue;
                for (int kx = 0; kx < d->k; kx++) {
                    int ix = ox * d->stride - d->pad + kx;
                    if (ix < 0 || ix >= d->W)
                        continue;
                    const float *v = in + ((size_t)iy * d->W + ix) * blk;
                    uint8_t kk = (uint8_t)(ky * d->k + kx);
                    for (int c = 0; c < blk; c++) {
                        int gt = v[c] > m[c];
                        m[c] = gt ? v[c] : m[c];
                        a[c] = gt ? kk : a[c];
                    }
                }
            }
            size_t o = ((size_t)oy * d->OW + ox) * blk;
            for (int c = 0; c < blk; c++) {
                out[o + c] = m[c];
                am[o + c] = a[c];
            }
        }
}

static inline void maxpool_blk_plane_bwd(float *restrict din, const float *restrict dout, const uint8_t *restrict am,
                                         const struct pool_dims *d, int blk, int tiles)
{
    if (!tiles)
        memset(din, 0, sizeof(float) * (size_t)d->H * d->W * blk);
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            size_t o = ((size_t)oy * d->OW + ox) * blk;
            for (int ky = 0; ky < d->k; ky++) {
                int iy = oy * d->stride - d->pad + ky;
                if (iy < 0 || iy >= d->H)
                    continue;
                for (int kx = 0; kx < d->k; kx++) {
                    int ix = ox * d->stride - d->pad + kx;
                    if (ix < 0 || ix >= d->W)
                        continue;
                    float *g = din + ((size_t)iy * d->W + ix) * blk;
                    uint8_t kk = (uint8_t)(ky * d->k + kx);
                    if (tiles)
                        for (int c = 0; c < blk; c++)
                            g[c] = am[o + c] == kk ? dout[o + c] : 0.0f;
                    else
                        for (int c = 0; c < blk; c++)
                            g[c] += am[o + c] == kk ? dout[o + c] : 0.0f;
                }
            }
        }
}

#ifdef POOL_AVX512
/* The same for 16-channel blocks in AVX-512: one vector per window position,
 * compilers do not find this from the loops above. */
__attribute__((target("avx512f"))) static void maxpool16_fwd_plane(float *out, uint8_t *am, const float *in,
                                                                   const struct pool_dims *d)
{
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            __m512 m = _mm512_set1_ps(-INFINITY);
            __m512i a = _mm512_setzero_si512();
            for (int ky = 0; ky < d->k; ky++) {
                int iy = oy * d->stride - d->pad + ky;
                if (iy < 0 || iy >= d->H)
                    continue;
                for (int kx = 0; kx < d->k; kx++) {
                    int ix = ox * d->stride - d->pad + kx;
                    if (ix < 0 || ix >= d->W)
                        continue;
                    __m512 v = _mm512_loadu_ps(in + ((size_t)iy * d->W + ix) * 16);
                    __mmask16 gt = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ);
                    m = _mm512_mask_mov_ps(m, gt, v);
                    a = _mm512_mask_mov_epi32(a, gt, _mm512_set1_epi32(ky * d->k + kx));
                }
            }
            size_t o = ((size_t)oy * d->OW + ox) * 16;
            _mm512_storeu_ps(out + o, m);
            _mm512_mask_cvtepi32_storeu_epi8(am + o, 0xffff, a);
        }
}

__attribute__((target("avx512f"))) static void maxpool16_bwd_plane(float *din, const float *dout, const uint8_t *am,
                                                                   const struct pool_dims *d, int tiles)
{
    if (!tiles)
        memset(din, 0, sizeof(float) * (size_t)d->H * d->W * 16);
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            size_t o = ((size_t)oy * d->OW + ox) * 16;
            __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(am + o)));
            __m512 g = _mm512_loadu_ps(dout + o);
            for (int ky = 0; ky < d->k; ky++) {
                int iy = oy * d->stride - d->pad + ky;
                if (iy < 0 || iy >= d->H)
                    continue;
                for (int kx = 0; kx < d->k; kx++) {
                    int ix = ox * d->stride - d->pad + kx;
                    if (ix < 0 || ix >= d->W)
                        continue;
                    float *dst = din + ((size_t)iy * d->W + ix) * 16;
                    __mmask16 hit = _mm512_cmpeq_epi32_mask(a, _mm512_set1_epi32(ky * d->k + kx));
                    __m512 v = _mm512_maskz_mov_ps(hit, g);
                    _mm512_storeu_ps(dst, tiles ? v : _mm512_add_ps(_mm512_loadu_ps(dst), v));
                }
            }
        }
}
#endif

static void maxpool_blk_fwd_planes(float *out, uint8_t *am, const float *in, const struct pool_dims *d, int blk,
                                   int64_t q0, int64_t q1)
{
    size_t ip = (size_t)d->H * d->W * blk, op = (size_t)d->OH * d->OW * blk;
#ifdef POOL_AVX512
    if (blk == 16 && __builtin_cpu_supports("avx512f")) {
        for (int64_t q = q0; q < q1; q++)
            maxpool16_fwd_plane(out + q * op, am + q * op, in + q * ip, d);
        return;
    }
#endif
    for (int64_t q = q0; q < q1; q++)
        maxpool_blk_plane(out + q * op, am + q * op, in + q * ip, d, blk);
}

static void maxpool_blk_bwd_planes(float *din, const float *dout, const uint8_t *am, const struct pool_dims *d, int blk,
                                   int64_t q0, int64_t q1)
{
    size_t ip = (size_t)d->H * d->W * blk, op = (size_t)d->OH * d->OW * blk;
    int tiles = d->k == d->stride && d->pad == 0 && d->OH * d->k == d->H && d->OW * d->k == d->W;
#ifdef POOL_AVX512
    if (blk == 16 && __builtin_cpu_supports("avx512f")) {
        for (int64_t q = q0; q < q1; q++)
            maxpool16_bwd_plane(din + q * ip, dout + q * op, am + q * op, d, tiles);
        return;
    }
#endif
    for (int64_t q = q0; q < q1; q++)
        maxpool_blk_plane_bwd(din + q * ip, dout + q * op, am + q * op, d, blk, tiles);
}

/* ---- pooling -------------------------------------------------------------- */

struct cpu_pool {
    struct pool_dims d;
    int alg, blk;
    struct cpu_ctx *x;
    char impl[64];
    int32_t *argmax; /* reference max-pool: [B, C, OH, OW] */
    uint8_t *am;     /* our blocked max-pool: window position of each maximum, [B, stride of out] */
#ifdef DDPTOP_HAVE_DNNL
    struct prim fwd, bwd;
    dnnl_memory_t src, dst, dsrc, ddst, ws;
    void *ws_buf;
#endif
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
    p->x = x;
    snprintf(p->impl, sizeof(p->impl), "ref");
    if (alg == CPU_POOL_MAX && blk > 1 && blk <= 16 && d->k * d->k <= 256) {
        snprintf(p->impl, sizeof(p->impl), "omp loops, nChw%dc", blk);
        if (!(p->am = malloc((size_t)d->B * (size_t)act_stride(d->C, d->OH, d->OW, blk)))) {
            snprintf(err, errlen, "out of memory for max-pool indices");
            cpu_pool_destroy(p);
            return NULL;
        }
        return p;
    }
#ifdef DDPTOP_HAVE_DNNL
    dnnl_memory_desc_t src_md, dst_md;
    dnnl_dims_t strides = {d->stride, d->stride}, kernel = {d->k, d->k};
    dnnl_dims_t pad_l = {d->pad, d->pad}, pad_r = {d->pad_r, d->pad_r};
    dnnl_alg_kind_t a = alg == CPU_POOL_MAX ? dnnl_pooling_max : dnnl_pooling_avg_include_padding;
    dnnl_pooling_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    DNNL_TRY(act_md(&src_md, d->B, d->C, d->H, d->W, blk));
    DNNL_TRY(act_md(&dst_md, d->B, d->C, d->OH, d->OW, blk));
    DNNL_TRY(
        dnnl_pooling_forward_desc_init(&fd, dnnl_forward_training, a, &src_md, &dst_md, strides, kernel, pad_l, pad_r));
    DNNL_TRY(dnnl_primitive_desc_create(&fpd, &fd, g_attr, g_engine, NULL));
    DNNL_TRY(dnnl_pooling_backward_desc_init(&bd, a, &src_md, &dst_md, strides, kernel, pad_l, pad_r));
    DNNL_TRY(dnnl_primitive_desc_create(&bpd, &bd, g_attr, g_engine, fpd));
    if (prim_make(x, &p->fwd, fpd, err, errlen) || prim_make(x, &p->bwd, bpd, err, errlen))
        goto fail;
    impl_name(fpd, p->impl, sizeof(p->impl));
    DNNL_TRY(dnnl_memory_create(&p->src, &src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dsrc, &src_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->dst, &dst_md, g_engine, DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(&p->ddst, &dst_md, g_engine, DNNL_MEMORY_NONE));
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
    if (wmd && dnnl_memory_desc_get_size(wmd) > 0) {
        DNNL_TRY(dnnl_memory_create(&p->ws, wmd, g_engine, DNNL_MEMORY_NONE));
        if (!(p->ws_buf = md_alloc(wmd))) {
            snprintf(err, errlen, "out of memory for a pooling workspace");
            goto fail;
        }
    }
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    return p;
fail:
    if (fpd)
        dnnl_primitive_desc_destroy(fpd);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    cpu_pool_destroy(p);
    return NULL;
#else
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
#endif
}

void cpu_pool_destroy(struct cpu_pool *p)
{
    if (!p)
        return;
#ifdef DDPTOP_HAVE_DNNL
    prim_free(&p->fwd);
    prim_free(&p->bwd);
    dnnl_memory_t mems[] = {p->src, p->dst, p->dsrc, p->ddst, p->ws};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    free(p->ws_buf);
#endif
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
        const struct pool_dims *d = &p->d;
        int64_t planes = (int64_t)d->B * ((d->C + p->blk - 1) / p->blk);
        PAR_RANGE_IF(planes, planes * d->H * d->W * p->blk > PAR_MIN,
                     maxpool_blk_fwd_planes(out, p->am, in, d, p->blk, lo, hi));
        return 0;
    }
#ifdef DDPTOP_HAVE_DNNL
    set(p->src, in);
    set(p->dst, out);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}};
    int nargs = 2;
    if (p->ws) {
        set(p->ws, p->ws_buf);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, p->ws};
    }
    if (prim_run(p->x, &p->fwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(p->x->stream) == dnnl_success ? 0 : -1;
#else
    if (p->alg == CPU_POOL_MAX)
        ref_maxpool_forward(out, p->argmax, in, &p->d);
    else
        ref_avgpool_forward(out, in, &p->d);
    return 0;
#endif
}

int cpu_pool_backward(struct cpu_pool *p, float *din, const float *dout)
{
    if (p->am) {
        const struct pool_dims *d = &p->d;
        int64_t planes = (int64_t)d->B * ((d->C + p->blk - 1) / p->blk);
        PAR_RANGE_IF(planes, planes * d->H * d->W * p->blk > PAR_MIN,
                     maxpool_blk_bwd_planes(din, dout, p->am, d, p->blk, lo, hi));
        return 0;
    }
#ifdef DDPTOP_HAVE_DNNL
    set(p->dsrc, din);
    set(p->ddst, dout);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, p->ddst}, {DNNL_ARG_DIFF_SRC, p->dsrc}};
    int nargs = 2;
    if (p->ws) {
        set(p->ws, p->ws_buf);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, p->ws};
    }
    if (prim_run(p->x, &p->bwd, nargs, args) != 0)
        return -1;
    return dnnl_stream_wait(p->x->stream) == dnnl_success ? 0 : -1;
#else
    memset(din, 0, sizeof(float) * (size_t)p->d.B * p->d.C * p->d.H * p->d.W);
    if (p->alg == CPU_POOL_MAX)
        ref_maxpool_backward(din, dout, p->argmax, &p->d);
    else
        ref_avgpool_backward(din, dout, &p->d);
    return 0;
#endif
}
