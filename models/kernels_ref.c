/* kernels_ref.c - the reference kernels: plain loops, written for obvious
 * correctness, never for speed. See kernels_ref.h for the conventions. */
#include "kernels_ref.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

void ref_linear_forward(float *out, const float *in, const float *w, const float *b, int B, int IN, int OUT)
{
    for (int i = 0; i < B; i++)
        for (int o = 0; o < OUT; o++) {
            double acc = b ? b[o] : 0.0;
            for (int k = 0; k < IN; k++)
                acc += (double)in[(size_t)i * IN + k] * w[(size_t)o * IN + k];
            out[(size_t)i * OUT + o] = (float)acc;
        }
}

void ref_linear_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w, int B,
                         int IN, int OUT)
{
    for (int i = 0; i < B; i++)
        for (int o = 0; o < OUT; o++) {
            float g = dout[(size_t)i * OUT + o];
            if (db)
                db[o] += g;
            for (int k = 0; k < IN; k++) {
                if (dw)
                    dw[(size_t)o * IN + k] += g * in[(size_t)i * IN + k];
                if (din)
                    din[(size_t)i * IN + k] += g * w[(size_t)o * IN + k];
            }
        }
}

void conv_dims_finish(struct conv_dims *d)
{
    if (d->groups < 1)
        d->groups = 1;
    d->OH = (d->H + 2 * d->pad - d->KH) / d->stride + 1;
    d->OW = (d->W + 2 * d->pad - d->KW) / d->stride + 1;
}

void ref_conv2d_forward(float *out, const float *in, const float *w, const float *b, const struct conv_dims *d)
{
    int cg = d->C / d->groups, og = d->OC / d->groups;
    for (int n = 0; n < d->B; n++)
        for (int oc = 0; oc < d->OC; oc++) {
            int g = oc / og;
            for (int oy = 0; oy < d->OH; oy++)
                for (int ox = 0; ox < d->OW; ox++) {
                    double acc = b ? b[oc] : 0.0;
                    for (int ic = 0; ic < cg; ic++)
                        for (int ky = 0; ky < d->KH; ky++)
                            for (int kx = 0; kx < d->KW; kx++) {
                                int iy = oy * d->stride - d->pad + ky, ix = ox * d->stride - d->pad + kx;
                                if (iy < 0 || iy >= d->H || ix < 0 || ix >= d->W)
                                    continue;
                                size_t ii = (((size_t)n * d->C + g * cg + ic) * d->H + iy) * d->W + ix;
                                size_t wi = (((size_t)oc * cg + ic) * d->KH + ky) * d->KW + kx;
                                acc += (double)in[ii] * w[wi];
                            }
                    out[(((size_t)n * d->OC + oc) * d->OH + oy) * d->OW + ox] = (float)acc;
                }
        }
}

void ref_conv2d_backward(float *din, float *dw, float *db, const float *dout, const float *in, const float *w,
                         const struct conv_dims *d)
{
    int cg = d->C / d->groups, og = d->OC / d->groups;
    for (int n = 0; n < d->B; n++)
        for (int oc = 0; oc < d->OC; oc++) {
            int g = oc / og;
            for (int oy = 0; oy < d->OH; oy++)
                for (int ox = 0; ox < d->OW; ox++) {
                    float gout = dout[(((size_t)n * d->OC + oc) * d->OH + oy) * d->OW + ox];
                    if (db)
                        db[oc] += gout;
                    for (int ic = 0; ic < cg; ic++)
                        for (int ky = 0; ky < d->KH; ky++)
                            for (int kx = 0; kx < d->KW; kx++) {
                                int iy = oy * d->stride - d->pad + ky, ix = ox * d->stride - d->pad + kx;
                                if (iy < 0 || iy >= d->H || ix < 0 || ix >= d->W)
                                    continue;
                                size_t ii = (((size_t)n * d->C + g * cg + ic) * d->H + iy) * d->W + ix;
                                size_t wi = (((size_t)oc * cg + ic) * d->KH + ky) * d->KW + kx;
                                if (dw)
                                    dw[wi] += gout * in[ii];
                                if (din)
                                    din[ii] += gout * w[wi];
                            }
                }
        }
}

void ref_relu_forward(float *out, const float *in, int64_t n)
{
    for (int64_t i = 0; i < n; i++) /* (NaN stays NaN, as PyTorch's) */
        out[i] = in[i] < 0.0f ? 0.0f : in[i];
}

void ref_relu_backward(float *din, const float *dout, const float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) /* (through a NaN output too, as PyTorch's threshold_backward) */
        din[i] += out[i] <= 0.0f ? 0.0f : dout[i];
}

/* One spatial side of pool_dims_finish: PyTorch's pooling_output_shape. */
static int pool_out_side(int in, int k, int stride, int pad, int ceil_mode)
{
    int span = in + 2 * pad - k;
    if (span < 0)
        return 0;
    int out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad)
        out--; /* the last window would start in the padding */
    return out;
}

void pool_dims_finish(struct pool_dims *d)
{
    d->OH = pool_out_side(d->H, d->k, d->stride, d->pad, d->ceil_mode);
    d->OW = pool_out_side(d->W, d->k, d->stride, d->pad, d->ceil_mode);
    /* the padding that the last window reaches into, for oneDNN (square: OH
     * and OW agree whenever H == W, the only case the zoo builds) */
    int need = (d->OH - 1) * d->stride + d->k - d->H - d->pad;
    d->pad_r = need > d->pad ? need : d->pad;
}

void ref_maxpool_forward(float *out, int32_t *argmax, const float *in, const struct pool_dims *d)
{
    for (int p = 0; p < d->B * d->C; p++) {
        const float *src = in + (size_t)p * d->H * d->W;
        for (int oy = 0; oy < d->OH; oy++)
            for (int ox = 0; ox < d->OW; ox++) {
                float best = -FLT_MAX;
                int32_t at = -1;
                for (int ky = 0; ky < d->k; ky++)
                    for (int kx = 0; kx < d->k; kx++) {
                        int iy = oy * d->stride - d->pad + ky, ix = ox * d->stride - d->pad + kx;
                        if (iy < 0 || iy >= d->H || ix < 0 || ix >= d->W)
                            continue;
                        float v = src[iy * d->W + ix];
                        if (at < 0 || v > best) {
                            best = v;
                            at = iy * d->W + ix;
                        }
                    }
                size_t o = ((size_t)p * d->OH + oy) * d->OW + ox;
                out[o] = best;
                argmax[o] = at;
            }
    }
}

void ref_maxpool_backward(float *din, const float *dout, const int32_t *argmax, const struct pool_dims *d)
{
    for (int p = 0; p < d->B * d->C; p++)
        for (int o = 0; o < d->OH * d->OW; o++) {
            size_t oi = (size_t)p * d->OH * d->OW + o;
            din[(size_t)p * d->H * d->W + argmax[oi]] += dout[oi];
        }
}

float softmax_xent_forward(float *probs, const float *logits, const int32_t *labels, int B, int K, int *correct)
{
    double total = 0.0;
    int hits = 0;
    for (int i = 0; i < B; i++) {
        const float *z = logits + (size_t)i * K;
        float *p = probs + (size_t)i * K;
        float mx = z[0];
        int arg = 0;
        for (int k = 1; k < K; k++)
            if (z[k] > mx) {
                mx = z[k];
                arg = k;
            }
        double sum = 0.0;
        for (int k = 0; k < K; k++) {
            p[k] = expf(z[k] - mx);
            sum += p[k];
        }
        for (int k = 0; k < K; k++)
            p[k] = (float)(p[k] / sum);
        total += -(z[labels[i]] - mx - log(sum));
        hits += arg == labels[i];
    }
    if (correct)
        *correct = hits;
    return (float)(total / B);
}

void softmax_xent_backward(float *dlogits, const float *probs, const int32_t *labels, int B, int K, float scale)
{
    for (int i = 0; i < B; i++)
        for (int k = 0; k < K; k++)
            dlogits[(size_t)i * K + k] = (probs[(size_t)i * K + k] - (k == labels[i] ? 1.0f : 0.0f)) * scale;
}

void ref_avgpool_forward(float *out, const float *in, const struct pool_dims *d)
{
    float inv = 1.0f / (float)(d->k * d->k);
    for (int p = 0; p < d->B * d->C; p++) {
        const float *src = in + (size_t)p * d->H * d->W;
        for (int oy = 0; oy < d->OH; oy++)
            for (int ox = 0; ox < d->OW; ox++) {
                double acc = 0.0;
                for (int ky = 0; ky < d->k; ky++)
                    for (int kx = 0; kx < d->k; kx++) {
                        int iy = oy * d->stride - d->pad + ky, ix = ox * d->stride - d->pad + kx;
                        if (iy >= 0 && iy < d->H && ix >= 0 && ix < d->W)
                            acc += src[iy * d->W + ix];
                    }
                out[((size_t)p * d->OH + oy) * d->OW + ox] = (float)acc * inv;
            }
    }
}

void ref_avgpool_backward(float *din, const float *dout, const struct pool_dims *d)
{
    float inv = 1.0f / (float)(d->k * d->k);
    for (int p = 0; p < d->B * d->C; p++) {
        float *dst = din + (size_t)p * d->H * d->W;
        for (int oy = 0; oy < d->OH; oy++)
            for (int ox = 0; ox < d->OW; ox++) {
                float g = dout[((size_t)p * d->OH + oy) * d->OW + ox] * inv;
                for (int ky = 0; ky < d->k; ky++)
                    for (int kx = 0; kx < d->k; kx++) {
                        int iy = oy * d->stride - d->pad + ky, ix = ox * d->stride - d->pad + kx;
                        if (iy >= 0 && iy < d->H && ix >= 0 && ix < d->W)
                            dst[iy * d->W + ix] += g;
                    }
            }
    }
}

/* PyTorch's adaptive pooling window along one side: [*lo, *hi). */
static void adaptive_window(int i, int in, int out, int *lo, int *hi)
{
    *lo = (int)(((int64_t)i * in) / out);
    *hi = (int)((((int64_t)i + 1) * in + out - 1) / out);
}

void ref_adaptive_avgpool_forward(float *out, const float *in, int B, int C, int H, int W, int OH, int OW)
{
    for (int p = 0; p < B * C; p++) {
        const float *src = in + (size_t)p * H * W;
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                int y0, y1, x0, x1;
                adaptive_window(oy, H, OH, &y0, &y1);
                adaptive_window(ox, W, OW, &x0, &x1);
                double acc = 0.0;
                for (int y = y0; y < y1; y++)
                    for (int x = x0; x < x1; x++)
                        acc += src[y * W + x];
                out[((size_t)p * OH + oy) * OW + ox] = (float)(acc / ((y1 - y0) * (x1 - x0)));
            }
    }
}

void ref_adaptive_avgpool_backward(float *din, const float *dout, int B, int C, int H, int W, int OH, int OW)
{
    for (int p = 0; p < B * C; p++) {
        float *dst = din + (size_t)p * H * W;
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                int y0, y1, x0, x1;
                adaptive_window(oy, H, OH, &y0, &y1);
                adaptive_window(ox, W, OW, &x0, &x1);
                float g = dout[((size_t)p * OH + oy) * OW + ox] / (float)((y1 - y0) * (x1 - x0));
                for (int y = y0; y < y1; y++)
                    for (int x = x0; x < x1; x++)
                        dst[y * W + x] += g;
            }
    }
}

void ref_batchnorm_forward(float *out, float *mean, float *var, const float *in, const float *gamma, const float *beta,
                           int B, int C, int HW, float eps, int train)
{
    for (int c = 0; c < C; c++) {
        if (train) {
            double s = 0.0, ss = 0.0;
            for (int n = 0; n < B; n++)
                for (int i = 0; i < HW; i++)
                    s += in[((size_t)n * C + c) * HW + i];
            double mu = s / ((double)B * HW);
            for (int n = 0; n < B; n++)
                for (int i = 0; i < HW; i++) {
                    double x = in[((size_t)n * C + c) * HW + i] - mu;
                    ss += x * x;
                }
            mean[c] = (float)mu;
            var[c] = (float)(ss / ((double)B * HW));
        }
        double rstd = 1.0 / sqrt((double)var[c] + eps);
        for (int n = 0; n < B; n++)
            for (int i = 0; i < HW; i++) {
                size_t k = ((size_t)n * C + c) * HW + i;
                out[k] = (float)(gamma[c] * ((in[k] - (double)mean[c]) * rstd) + beta[c]);
            }
    }
}

void ref_batchnorm_backward(float *din, float *dgamma, float *dbeta, const float *dout, const float *in,
                            const float *gamma, const float *mean, const float *var, int B, int C, int HW, float eps)
{
    double m = (double)B * HW;
    for (int c = 0; c < C; c++) {
        double rstd = 1.0 / sqrt((double)var[c] + eps), sdy = 0.0, sdyx = 0.0;
        for (int n = 0; n < B; n++)
            for (int i = 0; i < HW; i++) {
                size_t k = ((size_t)n * C + c) * HW + i;
                sdy += dout[k];
                sdyx += dout[k] * ((in[k] - (double)mean[c]) * rstd);
            }
        if (dgamma)
            dgamma[c] += (float)sdyx;
        if (dbeta)
            dbeta[c] += (float)sdy;
        if (!din)
            continue;
        /* dx = gamma * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)) */
        for (int n = 0; n < B; n++)
            for (int i = 0; i < HW; i++) {
                size_t k = ((size_t)n * C + c) * HW + i;
                double xhat = (in[k] - (double)mean[c]) * rstd;
                din[k] += (float)(gamma[c] * rstd * (dout[k] - sdy / m - xhat * sdyx / m));
            }
    }
}

void ref_relu6_forward(float *out, const float *in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = in[i] < 0.0f ? 0.0f : in[i] > 6.0f ? 6.0f : in[i];
}

void ref_relu6_backward(float *din, const float *dout, const float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        din[i] += out[i] > 0.0f && out[i] < 6.0f ? dout[i] : 0.0f;
}

void ref_dropout_forward(float *out, const float *in, const uint8_t *mask, float p, int64_t n)
{
    float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; i++)
        out[i] = mask[i] ? in[i] * scale : 0.0f;
}

void ref_dropout_backward(float *din, const float *dout, const uint8_t *mask, float p, int64_t n)
{
    float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; i++)
        din[i] += mask[i] ? dout[i] * scale : 0.0f;
}

void ref_concat_forward(float *out, const float *a, const float *b, int B, int Ca, int Cb, int HW)
{
    for (int n = 0; n < B; n++)
        for (int c = 0; c < Ca + Cb; c++)
            for (int i = 0; i < HW; i++)
                out[((size_t)n * (Ca + Cb) + c) * HW + i] =
                    c < Ca ? a[((size_t)n * Ca + c) * HW + i] : b[((size_t)n * Cb + c - Ca) * HW + i];
}

void ref_concat_backward(float *da, float *db, const float *dout, int B, int Ca, int Cb, int HW)
{
    for (int n = 0; n < B; n++)
        for (int c = 0; c < Ca + Cb; c++)
            for (int i = 0; i < HW; i++) {
                float g = dout[((size_t)n * (Ca + Cb) + c) * HW + i];
                if (c < Ca && da)
                    da[((size_t)n * Ca + c) * HW + i] += g;
                else if (c >= Ca && db)
                    db[((size_t)n * Cb + c - Ca) * HW + i] += g;
            }
}

void ref_add_forward(float *out, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void ref_add_backward(float *da, float *db, const float *dout, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (da)
            da[i] += dout[i];
        if (db)
            db[i] += dout[i];
    }
}

uint64_t dropout_key(uint64_t seed, int ordinal, uint64_t call)
{
    uint64_t z = seed ^ ((uint64_t)(ordinal + 1) << 48) ^ (call * 0xd1b54a32d192ed03ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
