/* kernels_cpu_eltwise.c - the element-wise kernels, built with or without
 * oneDNN: ReLU, ReLU6, addition, copy-or-accumulate and dropout, over whole
 * buffers (padded channels included) on the calling thread's OpenMP team.
 * oneDNN would not speed these up; each loop body is a chunk function that
 * the compiler vectorises (restrict), built for several ISAs (VEC_KERNEL in
 * kernels_cpu.h).
 */
#include "kernels_cpu_internal.h"

#include <string.h>

/* ---- element-wise chunks (restrict: the compiler vectorises them) ----------
 * A select reads both of its sides before it chooses (g below): a load
 * that only one side makes is a branch the compiler keeps scalar, and on
 * a ReLU's signs (half of them positive, at random) that branch is
 * mispredicted half the time: the backward pass ran 10x its forward. */
VEC_KERNEL(relu_fwd_chunk, (float *restrict out, const float *restrict in, int64_t n), (out, in, n))
{
    for (int64_t i = 0; i < n; i++) /* (NaN stays NaN, as PyTorch's) */
        out[i] = in[i] < 0.0f ? 0.0f : in[i];
}

VEC_KERNEL(relu_bwd_chunk,
           (float *restrict din, int acc, const float *restrict dout, const float *restrict out, int64_t n),
           (din, acc, dout, out, n))
{
    if (acc)
        for (int64_t i = 0; i < n; i++) {
            float g = dout[i];
            din[i] += out[i] <= 0.0f ? 0.0f : g;
        }
    else
        for (int64_t i = 0; i < n; i++) {
            float g = dout[i];
            din[i] = out[i] <= 0.0f ? 0.0f : g;
        }
}

VEC_KERNEL(relu6_fwd_chunk, (float *restrict out, const float *restrict in, int64_t n), (out, in, n))
{
    for (int64_t i = 0; i < n; i++) {
        float v = in[i] < 0.0f ? 0.0f : in[i]; /* (NaN stays NaN, as the reference's) */
        out[i] = v > 6.0f ? 6.0f : v;
    }
}

VEC_KERNEL(relu6_bwd_chunk,
           (float *restrict din, int acc, const float *restrict dout, const float *restrict out, int64_t n),
           (din, acc, dout, out, n))
{
    if (acc)
        for (int64_t i = 0; i < n; i++) {
            float g = dout[i], o = out[i];
            din[i] += ((o > 0.0f) & (o < 6.0f)) ? g : 0.0f;
        }
    else
        for (int64_t i = 0; i < n; i++) {
            float g = dout[i], o = out[i];
            din[i] = ((o > 0.0f) & (o < 6.0f)) ? g : 0.0f;
        }
}

VEC_KERNEL(add_chunk, (float *restrict out, const float *restrict a, const float *restrict b, int64_t n),
           (out, a, b, n))
{
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

VEC_KERNEL(acc_chunk, (float *restrict dst, const float *restrict src, int64_t n), (dst, src, n))
{
    for (int64_t i = 0; i < n; i++)
        dst[i] += src[i];
}

VEC_KERNEL(mask_chunk,
           (float *restrict din, int acc, const float *restrict dout, const uint8_t *restrict mask, float scale,
            int64_t n),
           (din, acc, dout, mask, scale, n))
{
    if (acc)
        for (int64_t i = 0; i < n; i++) {
            float g = dout[i] * scale;
            din[i] += mask[i] ? g : 0.0f;
        }
    else
        for (int64_t i = 0; i < n; i++) {
            float g = dout[i] * scale;
            din[i] = mask[i] ? g : 0.0f;
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
