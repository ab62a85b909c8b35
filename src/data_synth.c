/* data_synth.c - the pixels of the generated "synthetic" set (data_synth.h).
 *
 * Ten classes of smooth "blob" images, C x H x W (1x28x28 by default,
 * --input otherwise). Each class has a fixed prototype (3-5 Gaussian blobs)
 * drawn from a stream that depends only on the seed, so train and test
 * share it; with several channels each class also has its own tint (a gain
 * per channel, from a separate stream, so that 1x28x28 stays the set it
 * always was). A sample is its class prototype, shifted by up to 3 pixels
 * (in 28: the shift, blob places and sizes scale with the side) and scaled
 * in contrast, overlaid with a weaker, independently shifted copy of another
 * class's prototype, plus Gaussian pixel noise. The constants were tuned so
 * that a 784-128-10 MLP trained with plain SGD reaches about 90% test
 * accuracy after one epoch of 1x28x28, with a visible learning curve (about
 * 70% after 2000 samples) - roughly as hard as Fashion-MNIST, not a task
 * solved in a few steps. Every sample has its own stream keyed by (seed,
 * split, index), so the data does not depend on the order it is generated
 * in. Large shapes keep fewer samples (SYNTH_BYTES at most), so that a
 * 3x224x224 set is generated in seconds and fits in memory. */

#include "data_synth.h"

#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SYNTH_SHIFT 3      /* at 28 pixels */
#define SYNTH_NOISE 0.35f  /* std of the pixel noise, in [0,1] units */
#define SYNTH_OVERLAY 0.9f /* the other class's weight, at most, relative to the own class */

/* A hash of x: splitmix64's output function. Seeding per-sample streams
 * with seed + i directly would make neighbouring streams overlap, since
 * splitmix64's state advances by a fixed step. */
static uint64_t mix64(uint64_t x)
{
    struct rng t;
    rng_seed(&t, x);
    return rng_next(&t);
}

static int scaled(int v28, int side)
{
    return (int)((double)v28 * side / SYNTH_SIDE + 0.5);
}

void synth_protos_free(struct synth_protos *pr)
{
    for (int k = 0; k < DATA_CLASSES; k++)
        free(pr->p[k]);
}

int synth_prototypes(uint64_t seed, int c, int h, int w, struct synth_protos *pr)
{
    memset(pr, 0, sizeof *pr);
    pr->c = c;
    pr->h = h;
    pr->w = w;
    pr->sy = scaled(SYNTH_SHIFT, h);
    pr->sx = scaled(SYNTH_SHIFT, w);
    pr->ph = h + 2 * pr->sy;
    pr->pw = w + 2 * pr->sx;
    float fy = (float)h / SYNTH_SIDE, fx = (float)w / SYNTH_SIDE, fs = fy < fx ? fy : fx;
    struct rng r, tint;
    rng_seed(&r, mix64(seed ^ 0x70726f746f747970ULL));
    rng_seed(&tint, mix64(seed ^ 0x74696e7473ULL));
    for (int k = 0; k < DATA_CLASSES; k++) {
        float *p = pr->p[k] = calloc((size_t)pr->ph * (size_t)pr->pw, sizeof(float));
        if (!p) {
            synth_protos_free(pr);
            return -1;
        }
        int blobs = 3 + (int)rng_below(&r, 3);
        for (int b = 0; b < blobs; b++) {
            float cx = (5.0f + 18.0f * (float)rng_uniform(&r)) * fx;
            float cy = (5.0f + 18.0f * (float)rng_uniform(&r)) * fy;
            float sigma = (1.5f + 2.0f * (float)rng_uniform(&r)) * fs;
            float amp = 0.6f + 0.4f * (float)rng_uniform(&r);
            float inv = 1.0f / (2.0f * sigma * sigma);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float dx = (float)x - cx, dy = (float)y - cy;
                    p[(y + pr->sy) * pr->pw + x + pr->sx] += amp * expf(-(dx * dx + dy * dy) * inv);
                }
        }
        for (int i = 0; i < pr->ph * pr->pw; i++)
            p[i] = p[i] > 1.0f ? 1.0f : p[i];
        for (int ch = 0; ch < c; ch++)
            pr->gain[k][ch] = c == 1 ? 1.0f : 0.4f + 0.6f * (float)rng_uniform(&tint);
    }
    return 0;
}

static int synth_shift(struct rng *r, int s)
{
    return (int)rng_below(r, 2 * (uint64_t)s + 1) - s;
}

static void synth_sample(uint64_t key, const struct synth_protos *pr, uint8_t *pix, uint8_t *label)
{
    struct rng r;
    rng_seed(&r, mix64(key));
    int k = (int)rng_below(&r, DATA_CLASSES);
    int other = (k + 1 + (int)rng_below(&r, DATA_CLASSES - 1)) % DATA_CLASSES;
    /* Top-left corner of the image's window into each padded prototype. */
    int oy = pr->sy + synth_shift(&r, pr->sy), ox = pr->sx + synth_shift(&r, pr->sx);
    const float *own = pr->p[k] + oy * pr->pw + ox;
    oy = pr->sy + synth_shift(&r, pr->sy);
    ox = pr->sx + synth_shift(&r, pr->sx);
    const float *ovl = pr->p[other] + oy * pr->pw + ox;
    float a = 0.5f + 0.5f * (float)rng_uniform(&r);
    float b = a * SYNTH_OVERLAY * (float)rng_uniform(&r);
    /* (locals, not pr's fields: a store through pix, a byte pointer, may
     * alias anything, and would make the loop reload them per pixel) */
    const int h = pr->h, w = pr->w, pw = pr->pw;
    for (int ch = 0; ch < pr->c; ch++) {
        const float ga = a * pr->gain[k][ch], gb = b * pr->gain[other][ch];
        for (int y = 0; y < h; y++) {
            const float *o = own + y * pw, *v2 = ovl + y * pw;
            for (int x = 0; x < w; x++) {
                /* Four 16-bit uniforms from one draw:
                 * their sum (Irwin-Hall, n=4) is close enough to
                 * Gaussian, at a quarter of the draws. */
                uint64_t z = rng_next(&r);
                uint32_t u = (uint32_t)(z & 0xffff) + (uint32_t)(z >> 16 & 0xffff) + (uint32_t)(z >> 32 & 0xffff) +
                             (uint32_t)(z >> 48);
                float noise = ((float)(int32_t)(u - 2 * 65536) * (1.0f / 65536.0f)) * (1.7320508f * SYNTH_NOISE);
                float v = ga * o[x] + gb * v2[x] + noise;
                /* clamped to [0, 1] as a byte: the same bytes as clamping
                 * v first (truncation of v * 255 + 0.5 below 0 or above
                 * 255 is clamped the same way), without a branch on the
                 * noise, which half the background's pixels would miss */
                int q = (int)(v * 255.0f + 0.5f);
                q = q < 0 ? 0 : q;
                q = q > 255 ? 255 : q;
                *pix++ = (uint8_t)q;
            }
        }
    }
    *label = (uint8_t)k;
}

void synth_fill(uint64_t seed, int split, const struct synth_protos *pr, int n, uint8_t *pixels, uint8_t *labels)
{
    size_t img = (size_t)pr->c * (size_t)pr->h * (size_t)pr->w;
    uint64_t base = mix64(seed ^ 0x73616d706c657321ULL) + ((uint64_t)split << 40);
    /* (each sample its own stream: the same bytes on any number of threads) */
#ifdef DDPTOP_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int i = 0; i < n; i++)
        synth_sample(base + (uint64_t)i, pr, pixels + (size_t)i * img, labels + i);
}

void synth_sums(const uint8_t *pixels, int n, int c, size_t plane, int ch, uint64_t *sum, uint64_t *sumsq)
{
    uint64_t s = 0, q = 0;
#ifdef DDPTOP_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(+ : s, q)
#endif
    for (int i = 0; i < n; i++) {
        const uint8_t *px = pixels + ((size_t)i * (size_t)c + (size_t)ch) * plane;
        for (size_t k = 0; k < plane; k++) {
            s += px[k];
            q += (uint64_t)px[k] * px[k];
        }
    }
    *sum = s;
    *sumsq = q;
}
