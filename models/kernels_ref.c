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
    for (int64_t i = 0; i < n; i++)
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void ref_relu_backward(float *din, const float *dout, const float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        din[i] += out[i] > 0.0f ? dout[i] : 0.0f;
}

void pool_dims_finish(struct pool_dims *d)
{
    d->OH = (d->H + 2 * d->pad - d->k) / d->stride + 1;
    d->OW = (d->W + 2 * d->pad - d->k) / d->stride + 1;
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
