/* kernels_cpu_pool_loops.c - the pooling loops of our own, built with or
 * without oneDNN, on the calling thread's OpenMP team: max-pooling of
 * channel-blocked maps (which the pooling layers of kernels_cpu_pool.c and
 * kernels_cpu_fallback.c run), global and adaptive average pooling in any
 * layout, and the plain-layout max-pool that the kernel tests call.
 */
#include "kernels_cpu_internal.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define POOL_AVX512 1
#endif

/* ---- max-pool of blocked activations ---------------------------------------- */
/* Our own loops, not oneDNN's: for nChw16c they run ~3x faster here (a
 * 2x2 pool of LeNet's 64x16x28x28 maps: 0.15 against 0.5 ms). Each output
 * vector takes the max over its window, keeping the window position of
 * each lane's maximum (first wins ties, as PyTorch); backward routes the
 * gradient there. Windows that tile the input exactly (k == stride, no
 * padding) write every input gradient once; others clear and add. */
static inline __attribute__((always_inline)) void maxpool_blk_plane(float *restrict out, uint8_t *restrict am,
                                                                    const float *restrict in, const struct pool_dims *d,
                                                                    int blk)
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

/* The same for 8-channel blocks (AVX2's layout) in AVX2: the generic
 * loop above, even with its lane count known, ran 10x slower. */
__attribute__((target("avx2"))) static void maxpool8_fwd_plane(float *out, uint8_t *am, const float *in,
                                                               const struct pool_dims *d)
{
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            __m256 m = _mm256_set1_ps(-INFINITY);
            __m256i a = _mm256_setzero_si256();
            for (int ky = 0; ky < d->k; ky++) {
                int iy = oy * d->stride - d->pad + ky;
                if (iy < 0 || iy >= d->H)
                    continue;
                for (int kx = 0; kx < d->k; kx++) {
                    int ix = ox * d->stride - d->pad + kx;
                    if (ix < 0 || ix >= d->W)
                        continue;
                    __m256 v = _mm256_loadu_ps(in + ((size_t)iy * d->W + ix) * 8);
                    __m256 gt = _mm256_cmp_ps(v, m, _CMP_GT_OQ);
                    m = _mm256_blendv_ps(m, v, gt);
                    a = _mm256_blendv_epi8(a, _mm256_set1_epi32(ky * d->k + kx), _mm256_castps_si256(gt));
                }
            }
            size_t o = ((size_t)oy * d->OW + ox) * 8;
            _mm256_storeu_ps(out + o, m);
            /* 8 positions (each < 256) to 8 bytes */
            __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
            _mm_storel_epi64((__m128i *)(am + o), _mm_packus_epi16(w, w));
        }
}

__attribute__((target("avx2"))) static void maxpool8_bwd_plane(float *din, const float *dout, const uint8_t *am,
                                                               const struct pool_dims *d, int tiles)
{
    if (!tiles)
        memset(din, 0, sizeof(float) * (size_t)d->H * d->W * 8);
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            size_t o = ((size_t)oy * d->OW + ox) * 8;
            __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(am + o)));
            __m256 g = _mm256_loadu_ps(dout + o);
            for (int ky = 0; ky < d->k; ky++) {
                int iy = oy * d->stride - d->pad + ky;
                if (iy < 0 || iy >= d->H)
                    continue;
                for (int kx = 0; kx < d->k; kx++) {
                    int ix = ox * d->stride - d->pad + kx;
                    if (ix < 0 || ix >= d->W)
                        continue;
                    float *dst = din + ((size_t)iy * d->W + ix) * 8;
                    __m256i hit = _mm256_cmpeq_epi32(a, _mm256_set1_epi32(ky * d->k + kx));
                    __m256 v = _mm256_and_ps(_mm256_castsi256_ps(hit), g);
                    _mm256_storeu_ps(dst, tiles ? v : _mm256_add_ps(_mm256_loadu_ps(dst), v));
                }
            }
        }
}
#endif

/* The plain layout (blk 1): one channel's plane, a scalar per output. Its
 * own loop, since the blocked one's lane loops of unknown length cost
 * 30 ns an output here (LeNet's first pool: 2.5 ms a step, not 0.2). */
static void maxpool_plain_plane(float *restrict out, uint8_t *restrict am, const float *restrict in,
                                const struct pool_dims *d)
{
    for (int oy = 0; oy < d->OH; oy++) {
        int y0 = oy * d->stride - d->pad;
        int ky0 = y0 < 0 ? -y0 : 0, ky1 = y0 + d->k > d->H ? d->H - y0 : d->k;
        for (int ox = 0; ox < d->OW; ox++) {
            int x0 = ox * d->stride - d->pad;
            int kx0 = x0 < 0 ? -x0 : 0, kx1 = x0 + d->k > d->W ? d->W - x0 : d->k;
            float m = -INFINITY;
            int a = 0;
            for (int ky = ky0; ky < ky1; ky++) {
                const float *row = in + (size_t)(y0 + ky) * d->W + x0;
                for (int kx = kx0; kx < kx1; kx++) {
                    float v = row[kx];
                    int gt = v > m;
                    m = gt ? v : m;
                    a = gt ? ky * d->k + kx : a;
                }
            }
            out[(size_t)oy * d->OW + ox] = m;
            am[(size_t)oy * d->OW + ox] = (uint8_t)a;
        }
    }
}

static void maxpool_plain_plane_bwd(float *restrict din, const float *restrict dout, const uint8_t *restrict am,
                                    const struct pool_dims *d, int tiles)
{
    if (!tiles)
        memset(din, 0, sizeof(float) * (size_t)d->H * d->W);
    for (int oy = 0; oy < d->OH; oy++)
        for (int ox = 0; ox < d->OW; ox++) {
            size_t o = (size_t)oy * d->OW + ox;
            int y0 = oy * d->stride - d->pad, x0 = ox * d->stride - d->pad;
            if (tiles) /* every input of the window written once: the maximum's the gradient, the rest 0 */
                for (int ky = 0; ky < d->k; ky++)
                    for (int kx = 0; kx < d->k; kx++)
                        din[(size_t)(y0 + ky) * d->W + x0 + kx] = am[o] == ky * d->k + kx ? dout[o] : 0.0f;
            else
                din[(size_t)(y0 + am[o] / d->k) * d->W + x0 + am[o] % d->k] += dout[o];
        }
}

static void maxpool_blk_fwd_planes(float *out, uint8_t *am, const float *in, const struct pool_dims *d, int blk,
                                   int64_t q0, int64_t q1)
{
    size_t ip = (size_t)d->H * d->W * blk, op = (size_t)d->OH * d->OW * blk;
    if (blk == 1) {
        for (int64_t q = q0; q < q1; q++)
            maxpool_plain_plane(out + q * op, am + q * op, in + q * ip, d);
        return;
    }
#ifdef POOL_AVX512
    if (blk == 16 && cpu_isa() >= CPU_ISA_AVX512) {
        for (int64_t q = q0; q < q1; q++)
            maxpool16_fwd_plane(out + q * op, am + q * op, in + q * ip, d);
        return;
    }
    if (blk == 8 && cpu_isa() >= CPU_ISA_AVX2) {
        for (int64_t q = q0; q < q1; q++)
            maxpool8_fwd_plane(out + q * op, am + q * op, in + q * ip, d);
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
    if (blk == 1) {
        for (int64_t q = q0; q < q1; q++)
            maxpool_plain_plane_bwd(din + q * ip, dout + q * op, am + q * op, d, tiles);
        return;
    }
#ifdef POOL_AVX512
    if (blk == 16 && cpu_isa() >= CPU_ISA_AVX512) {
        for (int64_t q = q0; q < q1; q++)
            maxpool16_bwd_plane(din + q * ip, dout + q * op, am + q * op, d, tiles);
        return;
    }
    if (blk == 8 && cpu_isa() >= CPU_ISA_AVX2) {
        for (int64_t q = q0; q < q1; q++)
            maxpool8_bwd_plane(din + q * ip, dout + q * op, am + q * op, d, tiles);
        return;
    }
#endif
    for (int64_t q = q0; q < q1; q++)
        maxpool_blk_plane_bwd(din + q * ip, dout + q * op, am + q * op, d, blk, tiles);
}

void cpu_maxpool_blk_forward(float *out, uint8_t *am, const float *in, const struct pool_dims *d, int blk)
{
    int64_t planes = (int64_t)d->B * ((d->C + blk - 1) / blk);
    PAR_RANGE_IF(planes, planes * d->H * d->W * blk > PAR_MIN, maxpool_blk_fwd_planes(out, am, in, d, blk, lo, hi));
}

void cpu_maxpool_blk_backward(float *din, const float *dout, const uint8_t *am, const struct pool_dims *d, int blk)
{
    int64_t planes = (int64_t)d->B * ((d->C + blk - 1) / blk);
    PAR_RANGE_IF(planes, planes * d->H * d->W * blk > PAR_MIN, maxpool_blk_bwd_planes(din, dout, am, d, blk, lo, hi));
}

/* ---- plain max-pool (kernel tests) ------------------------------------------ */

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

/* ---- global and adaptive average pooling ------------------------------------- */

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
