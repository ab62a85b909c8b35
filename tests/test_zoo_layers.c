/* test_zoo_layers.c - the zoo's layers, each against something simpler:
 *  1. every new reference kernel's backward (batch norm, average and
 *     adaptive average pooling, ceil-mode max-pool, ReLU6, dropout, concat,
 *     add, grouped and depthwise convolution) against central finite
 *     differences of loss = sum(out * r), r random (so dout = r);
 *  2. every fast kernel against the reference, in every layout it runs in
 *     (plain NCHW, nChw16c, nChw8c, channels padded or not): oneDNN
 *     convolutions incl. grouped, depthwise and padded-channel ones, batch
 *     norm (training and inference), pooling (our blocked max-pool,
 *     oneDNN's average pool), inner product, and our element-wise loops
 *     (global and adaptive pooling, dropout, concat, reorders). Layouts are
 *     converted here by plain index arithmetic, not by the code under test;
 *  3. model behaviour: freezing (only trainable gradients written, DDP's
 *     ready callbacks, backward stopping early, gradients of the trainable
 *     part unchanged), dropout masks (fixed by the seed, new each step,
 *     identity in eval), batch-norm running statistics (momentum 0.1,
 *     unbiased variance), per-layer timing.
 *
 * Tolerances (each check prints its worst error as a share of its tolerance):
 *   finite differences: atol 1e-3 + rtol 1e-2 at eps 1e-2 (linear ops, and
 *     pools and ReLU6 away from ties and kinks, are exact up to float
 *     rounding / 2eps ~ 1e-5; batch norm's truncation is O(eps^2) ~ 1e-4 for
 *     unit-sized inputs);
 *   fast against reference: atol 1e-4 + rtol 1e-4 (float sums of at most a
 *     few thousand unit-sized terms in different orders; batch norm's
 *     input gradient subtracts means and gets atol 2e-4); pools and
 *     averages 1e-6 (a few terms); max-pool forward, reorders, dropout and
 *     concat must match exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_cpu.h"
#include "kernels_ref.h"
#include "model.h"
#include "zoo.h"
#include "rng.h"
#include "test_fill.h"

#define FD_EPS 1e-2f
#define FD_ATOL 1e-3
#define FD_RTOL 1e-2
#define FAST_ATOL 1e-4
#define FAST_RTOL 1e-4

/* ---- helpers ------------------------------------------------------------- */

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* |got - ref| <= atol + rtol |ref| everywhere (NaN fails); prints the worst
 * share of the tolerance and fails naming the first offender. */
static void check_close(const char *what, const float *got, const float *ref, const double *ref_d, size_t n,
                        double atol, double rtol)
{
    double worst = 0;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref ? (double)ref[i] : ref_d[i], e = fabs((double)got[i] - r), tol = atol + rtol * fabs(r);
        if (tol > 0 && e / tol > worst)
            worst = e / tol;
        if (!(e <= tol) && bad++ == 0)
            first = i;
    }
    print_message("  %-50s %7zu values, worst %5.1f%% of tolerance\n", what, n, 100.0 * worst);
    if (bad)
        fail_msg("%s: %zu of %zu values off; first [%zu] = %.9g, want %.9g", what, bad, n, first, (double)got[first],
                 ref ? (double)ref[first] : ref_d[first]);
}

/* Offset of logical (n, c, i) of a B x C x HW activation in layout blk. */
static size_t at(int n, int c, int i, int C, int HW, int blk)
{
    if (blk == 1)
        return ((size_t)n * C + c) * HW + i;
    int CB = (C + blk - 1) / blk;
    return (((size_t)n * CB + c / blk) * HW + i) * blk + c % blk;
}

static size_t blen(int B, int C, int HW, int blk)
{
    return (size_t)B * (size_t)act_stride(C, HW, 1, blk);
}

/* Plain to layout blk (padding zero), and back. */
static float *to_blk(const float *p, int B, int C, int HW, int blk)
{
    float *b = falloc(blen(B, C, HW, blk));
    for (int n = 0; n < B; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < HW; i++)
                b[at(n, c, i, C, HW, blk)] = p[at(n, c, i, C, HW, 1)];
    return b;
}

static float *from_blk(const float *b, int B, int C, int HW, int blk)
{
    float *p = falloc((size_t)B * C * HW);
    for (int n = 0; n < B; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < HW; i++)
                p[at(n, c, i, C, HW, 1)] = b[at(n, c, i, C, HW, blk)];
    return p;
}

/* Padded channels of a blocked buffer must stay zero. */
static void check_padding_zero(const char *what, const float *b, int B, int C, int HW, int blk)
{
    if (blk == 1)
        return;
    int CP = act_cpad(C, blk);
    for (int n = 0; n < B; n++)
        for (int c = C; c < CP; c++)
            for (int i = 0; i < HW; i++)
                if (b[at(n, c, i, CP, HW, blk)] != 0.0f)
                    fail_msg("%s: padded channel %d of sample %d holds %g", what, c, n,
                             (double)b[at(n, c, i, CP, HW, blk)]);
}

/* ---- 1. reference backward passes against finite differences ------------ */

/* The forward under test: out = f(x) with everything else fixed in ctx. */
typedef void (*fwd_fn)(void *ctx, const float *x, float *out);

/* Central differences of L = sum(out * r) in each element of x against
 * `analytic`, dL/dx from the backward under test. */
static void fd_check(const char *what, fwd_fn f, void *ctx, float *x, size_t nx, size_t nout, const float *r,
                     const float *analytic)
{
    float *out = falloc(nout);
    double *fd = calloc(nx, sizeof(double));
    assert_non_null(fd);
    for (size_t j = 0; j < nx; j++) {
        float save = x[j];
        x[j] = save + FD_EPS;
        f(ctx, x, out);
        double lp = dot(out, r, nout);
        x[j] = save - FD_EPS;
        f(ctx, x, out);
        double lm = dot(out, r, nout);
        x[j] = save;
        fd[j] = (lp - lm) / (2.0 * FD_EPS);
    }
    check_close(what, analytic, NULL, fd, nx, FD_ATOL, FD_RTOL);
    free(out);
    free(fd);
}

struct bn_ctx {
    int B, C, HW;
    float *gamma, *beta, *mean, *var;
    const float *x; /* for the gamma/beta derivatives */
    int which;      /* 0: d/dx, 1: d/dgamma, 2: d/dbeta */
};

static void bn_fwd(void *c, const float *v, float *out)
{
    struct bn_ctx *b = c;
    const float *x = b->which == 0 ? v : b->x, *g = b->which == 1 ? v : b->gamma, *be = b->which == 2 ? v : b->beta;
    ref_batchnorm_forward(out, b->mean, b->var, x, g, be, b->B, b->C, b->HW, 1e-5f, 1);
}

static void test_ref_batchnorm_fd(void **state)
{
    struct rng r;
    rng_seed(&r, 11);
    int B = 2, C = 3, HW = 5;
    size_t n = (size_t)B * C * HW;
    float *x = falloc(n), *out = falloc(n), *dout = falloc(n), *din = falloc(n), *g = falloc(C), *be = falloc(C);
    float *dg = falloc(C), *db = falloc(C), *mean = falloc(C), *var = falloc(C);
    fill_uniform(&r, x, n, -2, 2);
    fill_uniform(&r, dout, n, -1, 1);
    fill_uniform(&r, g, C, 0.5f, 1.5f);
    fill_uniform(&r, be, C, -0.5f, 0.5f);
    ref_batchnorm_forward(out, mean, var, x, g, be, B, C, HW, 1e-5f, 1);
    ref_batchnorm_backward(din, dg, db, dout, x, g, mean, var, B, C, HW, 1e-5f);
    struct bn_ctx c = {B, C, HW, g, be, falloc(C), falloc(C), x, 0};
    float *xc = falloc(n), *gc = falloc(C), *bc = falloc(C);
    memcpy(xc, x, sizeof(float) * n);
    memcpy(gc, g, sizeof(float) * C);
    memcpy(bc, be, sizeof(float) * C);
    fd_check("ref_batchnorm din vs FD", bn_fwd, &c, xc, n, n, dout, din);
    c.which = 1;
    fd_check("ref_batchnorm dgamma vs FD", bn_fwd, &c, gc, C, n, dout, dg);
    c.which = 2;
    fd_check("ref_batchnorm dbeta vs FD", bn_fwd, &c, bc, C, n, dout, db);
    /* the batch statistics: mean and biased variance */
    for (int k = 0; k < C; k++) {
        double s = 0, ss = 0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++)
                s += x[((size_t)b * C + k) * HW + i];
        s /= B * HW;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++)
                ss += pow(x[((size_t)b * C + k) * HW + i] - s, 2);
        assert_true(fabs(mean[k] - s) < 1e-6 && fabs(var[k] - ss / (B * HW)) < 1e-6);
    }
    free(x), free(out), free(dout), free(din), free(g), free(be), free(dg), free(db), free(mean), free(var);
    free(c.mean), free(c.var), free(xc), free(gc), free(bc);
}

struct pool_ctx {
    struct pool_dims d;
    int kind; /* 0 avg, 1 adaptive, 2 max (ceil mode allowed) */
    int oh, ow;
    int32_t *am;
};

static void pool_fwd(void *c, const float *x, float *out)
{
    struct pool_ctx *p = c;
    if (p->kind == 0)
        ref_avgpool_forward(out, x, &p->d);
    else if (p->kind == 1)
        ref_adaptive_avgpool_forward(out, x, p->d.B, p->d.C, p->d.H, p->d.W, p->oh, p->ow);
    else
        ref_maxpool_forward(out, p->am, x, &p->d);
}

static void pool_fd_case(const char *what, int kind, int H, int W, int k, int s, int pad, int ceil, int oh, int ow)
{
    struct rng r;
    rng_seed(&r, 12);
    struct pool_ctx c = {.d = {.B = 2, .C = 2, .H = H, .W = W, .k = k, .stride = s, .pad = pad, .ceil_mode = ceil},
                         .kind = kind,
                         .oh = oh,
                         .ow = ow};
    pool_dims_finish(&c.d);
    if (kind == 1) {
        c.d.OH = oh;
        c.d.OW = ow;
    }
    size_t n = (size_t)c.d.B * c.d.C * H * W, no = (size_t)c.d.B * c.d.C * c.d.OH * c.d.OW;
    float *x = falloc(n), *out = falloc(no), *dout = falloc(no), *din = falloc(n);
    c.am = calloc(no, sizeof(int32_t));
    fill_distinct(&r, x, n, 0.05f); /* no ties within 2 * FD_EPS */
    fill_uniform(&r, dout, no, -1, 1);
    pool_fwd(&c, x, out);
    if (kind == 0)
        ref_avgpool_backward(din, dout, &c.d);
    else if (kind == 1)
        ref_adaptive_avgpool_backward(din, dout, c.d.B, c.d.C, H, W, oh, ow);
    else
        ref_maxpool_backward(din, dout, c.am, &c.d);
    fd_check(what, pool_fwd, &c, x, n, no, dout, din);
    free(x), free(out), free(dout), free(din), free(c.am);
}

static void test_ref_pools_fd(void **state)
{
    pool_fd_case("ref_avgpool 2/2 vs FD", 0, 6, 6, 2, 2, 0, 0, 0, 0);
    pool_fd_case("ref_avgpool 3/2 pad 1 vs FD", 0, 7, 5, 3, 2, 1, 0, 0, 0);
    pool_fd_case("ref_adaptive_avgpool 3x3->2x2 (overlap) vs FD", 1, 3, 3, 0, 1, 0, 0, 2, 2);
    pool_fd_case("ref_adaptive_avgpool 7x5->3x2 vs FD", 1, 7, 5, 0, 1, 0, 0, 3, 2);
    pool_fd_case("ref_adaptive_avgpool 4x4->1x1 (global) vs FD", 1, 4, 4, 0, 1, 0, 0, 1, 1);
    pool_fd_case("ref_maxpool 3/2 ceil 7x7 vs FD", 2, 7, 7, 3, 2, 0, 1, 0, 0);
    pool_fd_case("ref_maxpool 3/2 ceil 14x14 vs FD", 2, 14, 14, 3, 2, 0, 1, 0, 0);
}

static void test_pool_dims_ceil(void **state)
{
    /* PyTorch: MaxPool2d(3, 2, ceil_mode=True) maps 28 -> 14 -> 7 -> 3, 32 -> 16 -> 8 -> 4 */
    int in[] = {28, 14, 7, 32, 16, 8, 6}, want[] = {14, 7, 3, 16, 8, 4, 3};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        struct pool_dims d = {.B = 1, .C = 1, .H = in[i], .W = in[i], .k = 3, .stride = 2, .ceil_mode = 1};
        pool_dims_finish(&d);
        assert_int_equal(d.OH, want[i]);
        assert_true(d.pad_r >= 0 && (d.OH - 1) * 2 + 3 <= in[i] + d.pad_r);
    }
    /* padding 1 with ceil: the last window may not start in the padding */
    struct pool_dims d = {.B = 1, .C = 1, .H = 5, .W = 5, .k = 2, .stride = 2, .pad = 1, .ceil_mode = 1};
    pool_dims_finish(&d);
    assert_int_equal(d.OH, 3);
    struct pool_dims f = {.B = 1, .C = 1, .H = 7, .W = 7, .k = 2, .stride = 2};
    pool_dims_finish(&f);
    assert_int_equal(f.OH, 3);
}

struct elt_ctx {
    int64_t n;
    const uint8_t *mask;
    float p;
    int kind; /* 0 relu6, 1 dropout */
};

static void elt_fwd(void *c, const float *x, float *out)
{
    struct elt_ctx *e = c;
    if (e->kind == 0)
        ref_relu6_forward(out, x, e->n);
    else
        ref_dropout_forward(out, x, e->mask, e->p, e->n);
}

static void test_ref_relu6_dropout_fd(void **state)
{
    struct rng r;
    rng_seed(&r, 13);
    int64_t n = 300;
    float *x = falloc(n), *out = falloc(n), *dout = falloc(n), *din = falloc(n);
    /* away from both kinks: |x| in [0.05, 8] but not within 0.05 of 6 */
    fill_away_from_zero(&r, x, n, 0.05f, 8.0f);
    for (int64_t i = 0; i < n; i++)
        if (fabsf(x[i] - 6.0f) < 0.05f)
            x[i] = 5.5f;
    fill_uniform(&r, dout, n, -1, 1);
    ref_relu6_forward(out, x, n);
    for (int64_t i = 0; i < n; i++)
        assert_true(out[i] >= 0.0f && out[i] <= 6.0f);
    ref_relu6_backward(din, dout, out, n);
    struct elt_ctx c = {n, NULL, 0, 0};
    fd_check("ref_relu6 din vs FD", elt_fwd, &c, x, n, n, dout, din);

    uint8_t *mask = malloc(n);
    uint64_t key = dropout_key(7, 0, 0);
    int kept = 0;
    for (int64_t i = 0; i < n; i++)
        kept += mask[i] = (uint8_t)dropout_keep(key, i, 0.3f);
    memset(din, 0, sizeof(float) * n);
    ref_dropout_backward(din, dout, mask, 0.3f, n);
    struct elt_ctx d = {n, mask, 0.3f, 1};
    fd_check("ref_dropout din vs FD", elt_fwd, &d, x, n, n, dout, din);
    print_message("  dropout p 0.3 kept %d of %lld\n", kept, (long long)n);
    assert_true(kept > 0.6 * n && kept < 0.8 * n);
    free(x), free(out), free(dout), free(din), free(mask);
}

struct join_ctx {
    int B, Ca, Cb, HW, which, kind; /* kind 0 concat, 1 add; which input varies */
    const float *a, *b;
};

static void join_fwd(void *c, const float *v, float *out)
{
    struct join_ctx *j = c;
    const float *a = j->which == 0 ? v : j->a, *b = j->which == 1 ? v : j->b;
    if (j->kind == 0)
        ref_concat_forward(out, a, b, j->B, j->Ca, j->Cb, j->HW);
    else
        ref_add_forward(out, a, b, (int64_t)j->B * j->Ca * j->HW);
}

static void test_ref_concat_add_fd(void **state)
{
    struct rng r;
    rng_seed(&r, 14);
    int B = 2, Ca = 3, Cb = 2, HW = 4;
    size_t na = (size_t)B * Ca * HW, nb = (size_t)B * Cb * HW, no = na + nb;
    float *a = falloc(na), *b = falloc(nb), *dout = falloc(no), *da = falloc(na), *db = falloc(nb), *out = falloc(no);
    fill_uniform(&r, a, na, -1, 1);
    fill_uniform(&r, b, nb, -1, 1);
    fill_uniform(&r, dout, no, -1, 1);
    ref_concat_backward(da, db, dout, B, Ca, Cb, HW);
    struct join_ctx c = {B, Ca, Cb, HW, 0, 0, a, b};
    fd_check("ref_concat da vs FD", join_fwd, &c, a, na, no, dout, da);
    c.which = 1;
    fd_check("ref_concat db vs FD", join_fwd, &c, b, nb, no, dout, db);
    /* add: both inputs get dout, accumulated */
    float *b2 = falloc(na), *da2 = falloc(na), *db2 = falloc(na);
    fill_uniform(&r, b2, na, -1, 1);
    ref_add_backward(da2, db2, dout, (int64_t)na);
    struct join_ctx d = {B, Ca, Ca, HW, 0, 1, a, b2};
    fd_check("ref_add da vs FD", join_fwd, &d, a, na, na, dout, da2);
    d.which = 1;
    fd_check("ref_add db vs FD", join_fwd, &d, b2, na, na, dout, db2);
    free(a), free(b), free(dout), free(da), free(db), free(out), free(b2), free(da2), free(db2);
}

struct conv_ctx {
    struct conv_dims d;
    const float *x, *w, *b;
    int which; /* 0 d/dx, 1 d/dw */
};

static void conv_fwd(void *c, const float *v, float *out)
{
    struct conv_ctx *k = c;
    ref_conv2d_forward(out, k->which == 0 ? v : k->x, k->which == 1 ? v : k->w, k->b, &k->d);
}

/* Grouped and depthwise convolution (the other shapes are in test_layers.c). */
static void test_ref_conv_groups_fd(void **state)
{
    struct rng r;
    rng_seed(&r, 15);
    struct conv_dims shapes[] = {
        {.B = 2, .C = 4, .H = 5, .W = 5, .OC = 4, .KH = 3, .KW = 3, .stride = 1, .pad = 1, .groups = 4}, /* depthwise */
        {.B = 2, .C = 3, .H = 6, .W = 6, .OC = 3, .KH = 3, .KW = 3, .stride = 2, .pad = 1, .groups = 3},
        {.B = 2, .C = 6, .H = 4, .W = 5, .OC = 4, .KH = 3, .KW = 3, .stride = 1, .pad = 0, .groups = 2},
    };
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        struct conv_dims d = shapes[s];
        conv_dims_finish(&d);
        size_t nx = (size_t)d.B * d.C * d.H * d.W, nw = (size_t)d.OC * (d.C / d.groups) * 9,
               no = (size_t)d.B * d.OC * d.OH * d.OW;
        float *x = falloc(nx), *w = falloc(nw), *b = falloc(d.OC), *dout = falloc(no), *dx = falloc(nx),
              *dw = falloc(nw), *db = falloc(d.OC);
        fill_uniform(&r, x, nx, -1, 1);
        fill_uniform(&r, w, nw, -1, 1);
        fill_uniform(&r, b, d.OC, -1, 1);
        fill_uniform(&r, dout, no, -1, 1);
        ref_conv2d_backward(dx, dw, db, dout, x, w, &d);
        char what[96];
        struct conv_ctx c = {d, x, w, b, 0};
        snprintf(what, sizeof(what), "ref_conv groups %d/%d din vs FD", d.groups, d.C);
        fd_check(what, conv_fwd, &c, x, nx, no, dout, dx);
        c.which = 1;
        snprintf(what, sizeof(what), "ref_conv groups %d/%d dw vs FD", d.groups, d.C);
        fd_check(what, conv_fwd, &c, w, nw, no, dout, dw);
        free(x), free(w), free(b), free(dout), free(dx), free(dw), free(db);
    }
}

/* ---- 2. fast kernels against the reference, in every layout -------------- */

static const int layouts[] = {1, 8, 16};
#define NLAYOUTS 3

/* bfloat16's nearest value (ties to even), as a float: what --precision
 * bf16 multiplies. */
static float bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

static float *bf16_copy(const float *a, size_t n)
{
    float *c = falloc(n);
    for (size_t i = 0; i < n; i++)
        c[i] = bf16_round(a[i]);
    return c;
}

/* A convolution from layout sb to db against ref_conv2d, forward and all
 * three gradients. Skips (prints) a combination oneDNN has no kernel for;
 * returns 1 when it ran. bf16: the convolution multiplies in bfloat16 and
 * adds in fp32, so the reference runs on the inputs, weights and output
 * gradient rounded to bfloat16 (the bias stays fp32); the same tolerance
 * then holds (a product of two bfloat16 values is exact in fp32), and a
 * kernel that multiplied the fp32 values would miss it by ~2^-9. */
static int conv_case_p(const char *name, struct conv_dims d, int sb, int dbk, int bias, int bf16)
{
    conv_dims_finish(&d);
    char err[256], what[160];
    struct cpu_ctx *x = cpu_ctx_create(err, sizeof(err));
    assert_non_null(x);
    if (bf16)
        assert_int_equal(cpu_ctx_bf16(x, err, sizeof(err)), 0);
    struct cpu_conv *c = cpu_conv_create_blk(x, &d, bias, sb, dbk, err, sizeof(err));
    if (!c) {
        print_message("  %s: layouts %d->%d not available: %s\n", name, sb, dbk, err);
        cpu_ctx_destroy(x);
        return 0;
    }
    assert_int_equal(cpu_ctx_finish(x, err, sizeof(err)), 0);
    struct rng r;
    rng_seed(&r, 16);
    int HW = d.H * d.W, OHW = d.OH * d.OW;
    size_t nx = (size_t)d.B * d.C * HW, no = (size_t)d.B * d.OC * OHW,
           nw = (size_t)d.OC * (d.C / d.groups) * d.KH * d.KW;
    float *xp = falloc(nx), *w = falloc(nw), *b = falloc(d.OC), *doutp = falloc(no);
    fill_uniform(&r, xp, nx, -1, 1);
    fill_uniform(&r, w, nw, -1, 1);
    fill_uniform(&r, b, d.OC, -1, 1);
    fill_uniform(&r, doutp, no, -1, 1);
    float *ref_out = falloc(no), *ref_dx = falloc(nx), *ref_dw = falloc(nw), *ref_db = falloc(d.OC);
    float *xr = bf16 ? bf16_copy(xp, nx) : xp, *wr = bf16 ? bf16_copy(w, nw) : w,
          *doutr = bf16 ? bf16_copy(doutp, no) : doutp;
    ref_conv2d_forward(ref_out, xr, wr, bias ? b : NULL, &d);
    ref_conv2d_backward(ref_dx, ref_dw, bias ? ref_db : NULL, doutr, xr, wr, &d);
    if (bf16)
        free(xr), free(wr), free(doutr);

    float *xb = to_blk(xp, d.B, d.C, HW, sb), *doutb = to_blk(doutp, d.B, d.OC, OHW, dbk);
    float *outb = falloc(blen(d.B, d.OC, OHW, dbk)), *dxb = falloc(blen(d.B, d.C, HW, sb)), *dw = falloc(nw),
          *db = falloc(d.OC);
    for (size_t i = 0; i < nw; i++)
        dw[i] = NAN;
    assert_int_equal(cpu_conv_forward(c, outb, xb, w, bias ? b : NULL), 0);
    assert_int_equal(cpu_conv_backward(c, dxb, 0, dw, bias ? db : NULL, doutb, xb, w), 0);
    float *out = from_blk(outb, d.B, d.OC, OHW, dbk), *dx = from_blk(dxb, d.B, d.C, HW, sb);
    snprintf(what, sizeof(what), "%s %d->%d%s forward", name, sb, dbk, bf16 ? " bf16" : "");
    check_close(what, out, ref_out, NULL, no, FAST_ATOL, FAST_RTOL);
    check_padding_zero(what, outb, d.B, d.OC, OHW, dbk);
    snprintf(what, sizeof(what), "%s %d->%d%s din", name, sb, dbk, bf16 ? " bf16" : "");
    check_close(what, dx, ref_dx, NULL, nx, FAST_ATOL, FAST_RTOL);
    check_padding_zero(what, dxb, d.B, d.C, HW, sb);
    snprintf(what, sizeof(what), "%s %d->%d%s dw", name, sb, dbk, bf16 ? " bf16" : "");
    check_close(what, dw, ref_dw, NULL, nw, FAST_ATOL, FAST_RTOL);
    if (bias) {
        snprintf(what, sizeof(what), "%s %d->%d%s db", name, sb, dbk, bf16 ? " bf16" : "");
        check_close(what, db, ref_db, NULL, d.OC, FAST_ATOL, FAST_RTOL);
    }
    free(xp), free(w), free(b), free(doutp), free(ref_out), free(ref_dx), free(ref_dw), free(ref_db);
    free(xb), free(doutb), free(outb), free(dxb), free(dw), free(db), free(out), free(dx);
    cpu_conv_destroy(c);
    cpu_ctx_destroy(x);
    return 1;
}

/* The convolutions every layout runs: a first layer reads plain input. */
static const struct conv_shape {
    const char *name;
    struct conv_dims d;
    int bias, first;
} conv_shapes[] = {
    {"conv 16->32 3x3", {.B = 3, .C = 16, .H = 7, .W = 6, .OC = 32, .KH = 3, .KW = 3, .stride = 1, .pad = 1}, 1, 0},
    {"conv 32->16 3x3/2", {.B = 2, .C = 32, .H = 8, .W = 8, .OC = 16, .KH = 3, .KW = 3, .stride = 2, .pad = 1}, 0, 0},
    {"conv 24->40 1x1 (padded channels)",
     {.B = 2, .C = 24, .H = 5, .W = 5, .OC = 40, .KH = 1, .KW = 1, .stride = 1, .pad = 0},
     0,
     0},
    {"conv 6->16 5x5 (padded input)",
     {.B = 2, .C = 6, .H = 14, .W = 14, .OC = 16, .KH = 5, .KW = 5, .stride = 1, .pad = 0},
     1,
     0},
    {"depthwise 32 3x3/2",
     {.B = 2, .C = 32, .H = 6, .W = 6, .OC = 32, .KH = 3, .KW = 3, .stride = 2, .pad = 1, .groups = 32},
     0,
     0},
    {"depthwise 24 3x3 (padded)",
     {.B = 2, .C = 24, .H = 5, .W = 5, .OC = 24, .KH = 3, .KW = 3, .stride = 1, .pad = 1, .groups = 24},
     0,
     0},
    {"grouped 2x16 3x3",
     {.B = 2, .C = 32, .H = 5, .W = 5, .OC = 32, .KH = 3, .KW = 3, .stride = 1, .pad = 1, .groups = 2},
     1,
     0},
    {"first layer 3->16", {.B = 2, .C = 3, .H = 9, .W = 9, .OC = 16, .KH = 3, .KW = 3, .stride = 1, .pad = 1}, 1, 1},
    /* VGG's last convolutions' plane: on AVX2 no blocked backward-weights,
     * which runs on plain tensors, reordered there (kernels_cpu_conv.c) */
    {"conv 16->32 3x3 on 2x2",
     {.B = 3, .C = 16, .H = 2, .W = 2, .OC = 32, .KH = 3, .KW = 3, .stride = 1, .pad = 1},
     1,
     0},
    /* LeNet's first: on AVX2 oneDNN has backward passes for it only with
     * the input blocked (reordered there and back, kernels_cpu_conv.c) */
    {"first layer 1->6 5x5",
     {.B = 2, .C = 1, .H = 12, .W = 12, .OC = 6, .KH = 5, .KW = 5, .stride = 1, .pad = 2},
     1,
     1},
};
#define NSHAPES (sizeof(conv_shapes) / sizeof(conv_shapes[0]))

/* Every shape in every layout; returns how many had kernels. */
static int conv_all_layouts(int bf16)
{
    int ran = 0;
    for (int i = 0; i < NLAYOUTS; i++) {
        int l = layouts[i];
        if (l > 1 && !cpu_have_dnnl())
            continue;
        for (size_t k = 0; k < NSHAPES; k++) {
            const struct conv_shape *c = &conv_shapes[k];
            ran += conv_case_p(c->name, c->d, c->first ? 1 : l, l, c->bias, bf16);
        }
    }
    return ran;
}

static void test_fast_conv_layouts(void **state)
{
    conv_all_layouts(0);
}

static void bn_case(int blk, int C, int HW)
{
    char err[256], what[128];
    struct cpu_ctx *x = cpu_ctx_create(err, sizeof(err));
    struct cpu_bn *b = cpu_bn_create(x, 3, C, HW, 1, blk, 1e-5f, err, sizeof(err));
    if (!b)
        fail_msg("batch norm blk %d: %s", blk, err);
    assert_int_equal(cpu_ctx_finish(x, err, sizeof(err)), 0);
    struct rng r;
    rng_seed(&r, 17);
    int B = 3;
    size_t n = (size_t)B * C * HW;
    float *xp = falloc(n), *dp = falloc(n), *g = falloc(C), *be = falloc(C);
    fill_uniform(&r, xp, n, -2, 3);
    fill_uniform(&r, dp, n, -1, 1);
    fill_uniform(&r, g, C, 0.5f, 1.5f);
    fill_uniform(&r, be, C, -0.5f, 0.5f);
    float *ro = falloc(n), *rm = falloc(C), *rv = falloc(C), *rdx = falloc(n), *rdg = falloc(C), *rdb = falloc(C);
    ref_batchnorm_forward(ro, rm, rv, xp, g, be, B, C, HW, 1e-5f, 1);
    ref_batchnorm_backward(rdx, rdg, rdb, dp, xp, g, rm, rv, B, C, HW, 1e-5f);
    float *xb = to_blk(xp, B, C, HW, blk), *db = to_blk(dp, B, C, HW, blk), *ob = falloc(blen(B, C, HW, blk)),
          *dxb = falloc(blen(B, C, HW, blk)), *m = falloc(C), *v = falloc(C), *dg = falloc(C), *dbe = falloc(C);
    assert_int_equal(cpu_bn_forward(b, ob, xb, g, be, m, v, 1), 0);
    assert_int_equal(cpu_bn_backward(b, dxb, dg, dbe, db, xb, g, m, v), 0);
    float *o = from_blk(ob, B, C, HW, blk), *dx = from_blk(dxb, B, C, HW, blk);
    snprintf(what, sizeof(what), "batch norm C %d blk %d: train forward", C, blk);
    check_close(what, o, ro, NULL, n, FAST_ATOL, FAST_RTOL);
    snprintf(what, sizeof(what), "batch norm C %d blk %d: batch mean, variance", C, blk);
    check_close(what, m, rm, NULL, C, 1e-6, 1e-5);
    check_close(what, v, rv, NULL, C, 1e-6, 1e-5);
    snprintf(what, sizeof(what), "batch norm C %d blk %d: din", C, blk);
    check_close(what, dx, rdx, NULL, n, 2 * FAST_ATOL, FAST_RTOL);
    check_padding_zero(what, dxb, B, C, HW, blk);
    snprintf(what, sizeof(what), "batch norm C %d blk %d: dgamma, dbeta", C, blk);
    check_close(what, dg, rdg, NULL, C, FAST_ATOL, FAST_RTOL);
    check_close(what, dbe, rdb, NULL, C, FAST_ATOL, FAST_RTOL);
    /* a frozen layer: no parameter gradients, the same input gradient */
    float *dx2b = falloc(blen(B, C, HW, blk));
    assert_int_equal(cpu_bn_backward(b, dx2b, NULL, NULL, db, xb, g, m, v), 0);
    assert_memory_equal(dx2b, dxb, sizeof(float) * blen(B, C, HW, blk));
    /* inference with given statistics */
    for (int c = 0; c < C; c++) {
        m[c] = 0.3f * (float)c - 0.5f;
        v[c] = 0.5f + 0.1f * (float)c;
    }
    ref_batchnorm_forward(ro, m, v, xp, g, be, B, C, HW, 1e-5f, 0);
    assert_int_equal(cpu_bn_forward(b, ob, xb, g, be, m, v, 0), 0);
    free(o);
    o = from_blk(ob, B, C, HW, blk);
    snprintf(what, sizeof(what), "batch norm C %d blk %d: eval forward", C, blk);
    check_close(what, o, ro, NULL, n, FAST_ATOL, FAST_RTOL);
    free(xp), free(dp), free(g), free(be), free(ro), free(rm), free(rv), free(rdx), free(rdg), free(rdb);
    free(xb), free(db), free(ob), free(dxb), free(m), free(v), free(dg), free(dbe), free(o), free(dx), free(dx2b);
    cpu_bn_destroy(b);
    cpu_ctx_destroy(x);
}

static void test_fast_batchnorm(void **state)
{
    for (int i = 0; i < NLAYOUTS; i++) {
        if (layouts[i] > 1 && !cpu_have_dnnl())
            continue;
        bn_case(layouts[i], 32, 12);
        bn_case(layouts[i], 24, 5); /* padded channels */
    }
}

static void pool_case(const char *name, int alg, int blk, int C, int H, int k, int s, int pad, int ceil)
{
    char err[256], what[160];
    struct pool_dims d = {.B = 2, .C = C, .H = H, .W = H, .k = k, .stride = s, .pad = pad, .ceil_mode = ceil};
    pool_dims_finish(&d);
    struct cpu_ctx *x = cpu_ctx_create(err, sizeof(err));
    struct cpu_pool *p = cpu_pool_create(x, &d, alg, blk, err, sizeof(err));
    if (!p)
        fail_msg("%s blk %d: %s", name, blk, err);
    assert_int_equal(cpu_ctx_finish(x, err, sizeof(err)), 0);
    struct rng r;
    rng_seed(&r, 18);
    int HW = H * H, OHW = d.OH * d.OW;
    size_t n = (size_t)d.B * C * HW, no = (size_t)d.B * C * OHW;
    float *xp = falloc(n), *dp = falloc(no), *ro = falloc(no), *rdx = falloc(n);
    int32_t *am = calloc(no, sizeof(int32_t));
    fill_distinct(&r, xp, n, 0.01f);
    fill_uniform(&r, dp, no, -1, 1);
    if (alg == CPU_POOL_MAX) {
        ref_maxpool_forward(ro, am, xp, &d);
        ref_maxpool_backward(rdx, dp, am, &d);
    } else {
        ref_avgpool_forward(ro, xp, &d);
        ref_avgpool_backward(rdx, dp, &d);
    }
    float *xb = to_blk(xp, d.B, C, HW, blk), *db = to_blk(dp, d.B, C, OHW, blk), *ob = falloc(blen(d.B, C, OHW, blk)),
          *dxb = falloc(blen(d.B, C, HW, blk));
    for (size_t i = 0; i < blen(d.B, C, HW, blk); i++)
        dxb[i] = NAN; /* every input gradient must be written */
    assert_int_equal(cpu_pool_forward(p, ob, xb, 1), 0);
    assert_int_equal(cpu_pool_backward(p, dxb, db), 0);
    float *o = from_blk(ob, d.B, C, OHW, blk), *dx = from_blk(dxb, d.B, C, HW, blk);
    snprintf(what, sizeof(what), "%s blk %d (%s) forward", name, blk, cpu_pool_impl(p));
    check_close(what, o, ro, NULL, no, alg == CPU_POOL_MAX ? 0 : 1e-6, alg == CPU_POOL_MAX ? 0 : 1e-6);
    /* overlapping windows add gradients in another order */
    snprintf(what, sizeof(what), "%s blk %d backward", name, blk);
    check_close(what, dx, rdx, NULL, n, 1e-6, 1e-6);
    check_padding_zero(what, dxb, d.B, C, HW, blk);
    free(xp), free(dp), free(ro), free(rdx), free(am), free(xb), free(db), free(ob), free(dxb), free(o), free(dx);
    cpu_pool_destroy(p);
    cpu_ctx_destroy(x);
}

static void test_fast_pooling(void **state)
{
    for (int i = 0; i < NLAYOUTS; i++) {
        int l = layouts[i];
        if (l > 1 && !cpu_have_dnnl())
            continue;
        pool_case("max-pool 2/2", CPU_POOL_MAX, l, 16, 8, 2, 2, 0, 0);
        pool_case("max-pool 2/2 odd side", CPU_POOL_MAX, l, 6, 7, 2, 2, 0, 0);
        pool_case("max-pool 3/2 ceil", CPU_POOL_MAX, l, 20, 7, 3, 2, 0, 1);
        pool_case("max-pool 3/1 pad 1", CPU_POOL_MAX, l, 16, 5, 3, 1, 1, 0);
        pool_case("avg-pool 2/2", CPU_POOL_AVG, l, 16, 8, 2, 2, 0, 0);
        pool_case("avg-pool 2/2 odd side", CPU_POOL_AVG, l, 24, 7, 2, 2, 0, 0);
    }
}

static void linear_case(int bf16)
{
    char err[256];
    struct cpu_ctx *x = cpu_ctx_create(err, sizeof(err));
    if (bf16)
        assert_int_equal(cpu_ctx_bf16(x, err, sizeof(err)), 0);
    int B = 5, IN = 37, OUT = 23;
    struct cpu_ip *l = cpu_ip_create(x, B, IN, OUT, err, sizeof(err));
    assert_non_null(l);
    assert_int_equal(cpu_ctx_finish(x, err, sizeof(err)), 0);
    struct rng r;
    rng_seed(&r, 19);
    float *in = falloc(B * IN), *w = falloc(OUT * IN), *b = falloc(OUT), *dout = falloc(B * OUT);
    fill_uniform(&r, in, B * IN, -1, 1);
    fill_uniform(&r, w, OUT * IN, -1, 1);
    fill_uniform(&r, b, OUT, -1, 1);
    fill_uniform(&r, dout, B * OUT, -1, 1);
    float *ro = falloc(B * OUT), *rdi = falloc(B * IN), *rdw = falloc(OUT * IN), *rdb = falloc(OUT);
    float *inr = bf16 ? bf16_copy(in, B * IN) : in, *wr = bf16 ? bf16_copy(w, OUT * IN) : w,
          *doutr = bf16 ? bf16_copy(dout, B * OUT) : dout; /* (see conv_case_p) */
    ref_linear_forward(ro, inr, wr, b, B, IN, OUT);
    ref_linear_backward(rdi, rdw, rdb, doutr, inr, wr, B, IN, OUT);
    if (bf16)
        free(inr), free(wr), free(doutr);
    float *o = falloc(B * OUT), *di = falloc(B * IN), *dw = falloc(OUT * IN), *db = falloc(OUT);
    assert_int_equal(cpu_ip_forward(l, o, in, w, b), 0);
    assert_int_equal(cpu_ip_backward(l, di, dw, db, dout, in, w), 0);
    char what[128];
    const char *p = bf16 ? " bf16" : "";
    snprintf(what, sizeof(what), "inner product%s forward (%.60s)", p, cpu_ip_impl(l));
    check_close(what, o, ro, NULL, B * OUT, FAST_ATOL, FAST_RTOL);
    snprintf(what, sizeof(what), "inner product%s din", p);
    check_close(what, di, rdi, NULL, B * IN, FAST_ATOL, FAST_RTOL);
    snprintf(what, sizeof(what), "inner product%s dw", p);
    check_close(what, dw, rdw, NULL, OUT * IN, FAST_ATOL, FAST_RTOL);
    snprintf(what, sizeof(what), "inner product%s db", p);
    check_close(what, db, rdb, NULL, OUT, FAST_ATOL, FAST_RTOL);
    free(in), free(w), free(b), free(dout), free(ro), free(rdi), free(rdw), free(rdb), free(o), free(di), free(dw),
        free(db);
    cpu_ip_destroy(l);
    cpu_ctx_destroy(x);
}

static void test_fast_linear(void **state)
{
    linear_case(0);
}

/* --precision bf16 on the CPU: the convolutions in every layout and the
 * inner product multiply bfloat16 values (see conv_case_p). Where the
 * processor has no bfloat16 instructions, ddptop refuses bf16 and this
 * skips. */
static void test_fast_bf16(void **state)
{
    int ran = conv_all_layouts(1), tried = (int)(NLAYOUTS * NSHAPES);
    print_message("  bf16 convolutions: %d of %d layout cases have kernels\n", ran, tried);
    /* ResNet's shapes in the layout they take here: never left out */
    assert_int_equal(conv_case_p(conv_shapes[0].name, conv_shapes[0].d, 16, 16, 1, 1), 1);
    assert_true(ran >= tried / 2);
    linear_case(1);
}

/* Global and adaptive average pooling, concat, dropout, reorders: our own
 * loops in each layout against the reference on plain data. */
static void test_fast_eltwise_layouts(void **state)
{
    struct rng r;
    rng_seed(&r, 20);
    int B = 3, C = 20, H = 5, W = 5, HW = H * W;
    size_t n = (size_t)B * C * HW;
    float *xp = falloc(n), *dp = falloc(n);
    fill_uniform(&r, xp, n, -1, 1);
    fill_uniform(&r, dp, n, -1, 1);
    for (int i = 0; i < NLAYOUTS; i++) {
        int blk = layouts[i];
        char what[128];
        float *xb = to_blk(xp, B, C, HW, blk);
        /* reorders both ways, and accumulating */
        float *pb = falloc(n), *bb = falloc(blen(B, C, HW, blk));
        cpu_reorder(pb, 1, 0, xb, blk, B, C, HW);
        snprintf(what, sizeof(what), "reorder nChw%dc -> plain", blk);
        check_close(what, pb, xp, NULL, n, 0, 0);
        cpu_reorder(bb, blk, 0, xp, 1, B, C, HW);
        cpu_reorder(bb, blk, 1, xp, 1, B, C, HW);
        float *twice = from_blk(bb, B, C, HW, blk), *x2 = falloc(n);
        for (size_t k = 0; k < n; k++)
            x2[k] = 2 * xp[k];
        snprintf(what, sizeof(what), "reorder plain -> nChw%dc, accumulated", blk);
        check_close(what, twice, x2, NULL, n, 0, 0);
        check_padding_zero(what, bb, B, C, HW, blk);
        if (blk > 1) {
            float *other = falloc(blen(B, C, HW, 24 - blk));
            cpu_reorder(other, 24 - blk, 0, xb, blk, B, C, HW);
            float *o2 = from_blk(other, B, C, HW, 24 - blk);
            snprintf(what, sizeof(what), "reorder nChw%dc -> nChw%dc", blk, 24 - blk);
            check_close(what, o2, xp, NULL, n, 0, 0);
            free(other), free(o2);
        }
        /* global average pool */
        float *gref = falloc((size_t)B * C), *g = falloc((size_t)B * C);
        ref_adaptive_avgpool_forward(gref, xp, B, C, H, W, 1, 1);
        cpu_global_avgpool_forward(g, xb, B, C, HW, blk);
        snprintf(what, sizeof(what), "global avg-pool nChw%dc forward", blk);
        check_close(what, g, gref, NULL, (size_t)B * C, 1e-6, 1e-6);
        float *gd = falloc((size_t)B * C), *rdx = falloc(n), *dxb = falloc(blen(B, C, HW, blk));
        fill_uniform(&r, gd, (size_t)B * C, -1, 1);
        ref_adaptive_avgpool_backward(rdx, gd, B, C, H, W, 1, 1);
        cpu_global_avgpool_backward(dxb, 0, gd, B, C, HW, blk);
        float *dx = from_blk(dxb, B, C, HW, blk);
        snprintf(what, sizeof(what), "global avg-pool nChw%dc backward", blk);
        check_close(what, dx, rdx, NULL, n, 1e-7, 1e-6);
        check_padding_zero(what, dxb, B, C, HW, blk);
        free(dx);
        /* adaptive average pool 5x5 -> 3x2 (overlapping windows) */
        int OH = 3, OW = 2;
        size_t no = (size_t)B * C * OH * OW;
        float *aref = falloc(no), *a = falloc(no), *ad = falloc(no);
        ref_adaptive_avgpool_forward(aref, xp, B, C, H, W, OH, OW);
        cpu_adaptive_avgpool_forward(a, xb, B, C, H, W, OH, OW, blk);
        snprintf(what, sizeof(what), "adaptive avg-pool 5x5->3x2 nChw%dc forward", blk);
        check_close(what, a, aref, NULL, no, 1e-6, 1e-6);
        fill_uniform(&r, ad, no, -1, 1);
        memset(rdx, 0, sizeof(float) * n);
        ref_adaptive_avgpool_backward(rdx, ad, B, C, H, W, OH, OW);
        cpu_adaptive_avgpool_backward(dxb, 0, ad, B, C, H, W, OH, OW, blk);
        dx = from_blk(dxb, B, C, HW, blk);
        snprintf(what, sizeof(what), "adaptive avg-pool nChw%dc backward", blk);
        check_close(what, dx, rdx, NULL, n, 1e-7, 1e-6);
        free(dx);
        /* dropout: the mask depends on logical indices only */
        float *drp = falloc(n), *drb = falloc(blen(B, C, HW, blk));
        uint8_t *mp = malloc(n), *mb = malloc(blen(B, C, HW, blk));
        uint64_t key = dropout_key(3, 1, 5);
        cpu_dropout_forward(drp, mp, xp, B, C, HW, 1, 0.4f, key);
        cpu_dropout_forward(drb, mb, xb, B, C, HW, blk, 0.4f, key);
        float *dr = from_blk(drb, B, C, HW, blk);
        snprintf(what, sizeof(what), "dropout nChw%dc against plain", blk);
        check_close(what, dr, drp, NULL, n, 0, 0);
        check_padding_zero(what, drb, B, C, HW, blk);
        for (size_t k = 0; k < n; k++)
            assert_int_equal(mp[k], dropout_keep(key, (int64_t)k, 0.4f));
        /* concat of a (16 channels) and b (C): per-sample runs */
        int Ca = 16;
        size_t na = (size_t)B * Ca * HW;
        float *ap = falloc(na), *ab, *cref = falloc(na + n), *cb = falloc(blen(B, Ca + C, HW, blk));
        fill_uniform(&r, ap, na, -1, 1);
        ab = to_blk(ap, B, Ca, HW, blk);
        ref_concat_forward(cref, ap, xp, B, Ca, C, HW);
        cpu_concat_forward(cb, ab, act_stride(Ca, HW, 1, blk), xb, act_stride(C, HW, 1, blk), B);
        float *cc = from_blk(cb, B, Ca + C, HW, blk);
        snprintf(what, sizeof(what), "concat 16 + 20 channels nChw%dc", blk);
        check_close(what, cc, cref, NULL, na + n, 0, 0);
        check_padding_zero(what, cb, B, Ca + C, HW, blk);
        free(ap), free(ab), free(cref), free(cb), free(cc);
        free(xb), free(pb), free(bb), free(twice), free(x2), free(gref), free(g), free(gd), free(rdx), free(dxb);
        free(aref), free(a), free(ad), free(drp), free(drb), free(mp), free(mb), free(dr);
    }
    free(xp), free(dp);
}

/* ---- 3. models: freezing, dropout, batch-norm statistics ---------------- */

static struct model *make(const char *name, int batch, int c, int side, uint64_t seed)
{
    char err[256];
    struct model *m = zoo_create(NULL, name, batch, c, side, side, 10, seed, err, sizeof(err));
    if (!m)
        fail_msg("%s: %s", name, err);
    return m;
}

static void fill_input(struct model *m, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed);
    fill_uniform(&r, model_input(m), (size_t)m->batch * (size_t)m->tensors[m->input].per_sample, -1, 1);
}

struct ready_log {
    int n, order[1024];
};

static void on_ready(void *ctx, int p)
{
    struct ready_log *l = ctx;
    if (l->n < 1024)
        l->order[l->n++] = p;
}

static void freeze_case(const char *name, const char *spec, int expect_layers)
{
    static const int32_t labels[4] = {1, 4, 7, 9};
    struct model *full = make(name, 4, 3, 32, 5), *m = make(name, 4, 3, 32, 5);
    char err[256];
    assert_int_equal(model_set_trainable(m, spec, err, sizeof(err)), 0);
    fill_input(full, 6);
    fill_input(m, 6);
    int correct;
    assert_int_equal(model_forward(full, 1), 0);
    model_loss(full, labels, 4, &correct);
    assert_int_equal(model_backward(full, 0.25f, NULL, NULL), 0);
    assert_int_equal(model_forward(m, 1), 0);
    model_loss(m, labels, 4, &correct);
    memset(m->grad_buf, 0xff, sizeof(float) * m->nfloats); /* NaN */
    struct ready_log log = {0};
    assert_int_equal(model_backward(m, 0.25f, on_ready, &log), 0);

    int trainable_layers = 0, first = -1;
    size_t tf = 0;
    for (int p = 0; p < m->nparams; p++) {
        const struct param *q = &m->params[p];
        const float *g = model_grad(m, p);
        if (!q->trainable) {
            for (size_t i = 0; i < q->len; i++)
                if (!isnan(g[i]))
                    fail_msg("%s %s: frozen %s got a gradient", name, spec, q->name);
            continue;
        }
        tf += q->len;
        if (first < 0)
            first = p;
        if (p == m->layers[q->layer].param0)
            trainable_layers++;
        char what[128];
        snprintf(what, sizeof(what), "%s %s: %s as with all trainable", name, spec, q->name);
        if (p == first || p == m->nparams - 1)
            check_close(what, g, model_grad(full, p), NULL, q->len, 1e-6, 1e-4);
    }
    assert_int_equal(trainable_layers, expect_layers);
    assert_int_equal(tf, model_trainable_floats(m));
    /* frozen parameters are a prefix; ready callbacks cover exactly the
     * trainable ones, in reverse order */
    for (int p = first; p < m->nparams; p++)
        assert_true(m->params[p].trainable);
    assert_int_equal(log.n, m->nparams - first);
    for (int i = 0; i < log.n; i++)
        assert_int_equal(log.order[i], m->nparams - 1 - i);
    /* backward stopped early: nothing before the first trainable layer was touched */
    int first_layer = m->params[first].layer;
    for (int l = 0; l < first_layer; l++)
        if (m->tensors[m->layers[l].out].grad_set)
            fail_msg("%s %s: backward ran through frozen layer %s", name, spec, m->layers[l].name);
    print_message("  %s --trainable %s: %zu of %zu parameters train, backward stops at layer %d of %d\n", name, spec,
                  tf, m->nfloats, first_layer, m->nlayers);
    model_destroy(full);
    model_destroy(m);
}

static void test_freezing(void **state)
{
    freeze_case("vgg11", "classifier", 1);
    freeze_case("resnet18", "classifier", 1);
    freeze_case("resnet18", "last:3", 3);
    freeze_case("mobilenetv2", "last:4", 4);
    freeze_case("squeezenet1_0", "classifier", 1); /* its classifier is the last convolution */
    freeze_case("lenet", "last:100", 5);           /* more than there are: all */
    struct model *m = make("lenet", 2, 1, 28, 1);
    char err[256];
    const char *bad[] = {"none", "last:", "last:0", "last:-2", "last:3x", "classifierx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(model_set_trainable(m, bad[i], err, sizeof(err)), -1);
        assert_non_null(strstr(err, "--trainable"));
    }
    assert_int_equal(model_set_trainable(m, "all", err, sizeof(err)), 0);
    assert_int_equal(model_trainable_floats(m), m->nfloats);
    model_destroy(m);
}

static void test_dropout_model(void **state)
{
    /* AlexNet's classifier has two dropout layers */
    struct model *a = make("alexnet", 2, 3, 32, 9), *b = make("alexnet", 2, 3, 32, 9);
    memcpy(b->param_buf, a->param_buf, sizeof(float) * a->nfloats);
    fill_input(a, 1);
    fill_input(b, 1);
    size_t nz = (size_t)2 * 10;
    float *z1 = falloc(nz), *z2 = falloc(nz);
    /* the same seed gives the same masks; the next step draws new ones */
    assert_int_equal(model_forward(a, 1), 0);
    memcpy(z1, a->tensors[a->output].val, sizeof(float) * nz);
    assert_int_equal(model_forward(b, 1), 0);
    assert_memory_equal(z1, b->tensors[b->output].val, sizeof(float) * nz);
    assert_int_equal(model_forward(a, 1), 0);
    memcpy(z2, a->tensors[a->output].val, sizeof(float) * nz);
    assert_memory_not_equal(z1, z2, sizeof(float) * nz);
    /* held masks repeat; eval mode is deterministic and mask-free */
    a->dropout_hold = 1;
    assert_int_equal(model_forward(a, 1), 0);
    memcpy(z1, a->tensors[a->output].val, sizeof(float) * nz);
    assert_int_equal(model_forward(a, 1), 0);
    assert_memory_equal(z1, a->tensors[a->output].val, sizeof(float) * nz);
    assert_int_equal(model_forward(a, 0), 0);
    memcpy(z2, a->tensors[a->output].val, sizeof(float) * nz);
    assert_int_equal(model_forward(b, 0), 0);
    assert_memory_equal(z2, b->tensors[b->output].val, sizeof(float) * nz);
    free(z1), free(z2);
    model_destroy(a);
    model_destroy(b);
}

static void test_bn_running_stats(void **state)
{
    /* ResNet-18's first batch norm sees conv1's output: check the running
     * statistics after two steps against momentum 0.1 and the unbiased
     * variance of that output */
    struct model *m = make("resnet18", 4, 1, 28, 3);
    struct layer *conv = &m->layers[0], *bn = &m->layers[1];
    assert_string_equal(bn->ops->kind, "batchnorm");
    const struct tensor *t = &m->tensors[conv->out];
    int C = t->c, HW = t->h * t->w, N = m->batch * HW;
    double *em = calloc(C, sizeof(double)), *ev = calloc(C, sizeof(double));
    for (int c = 0; c < C; c++)
        ev[c] = 1.0;
    for (int step = 0; step < 2; step++) {
        fill_input(m, 40 + step);
        assert_int_equal(model_forward(m, 1), 0);
        float *plain = from_blk(t->val, m->batch, C, HW, t->blk);
        for (int c = 0; c < C; c++) {
            double s = 0, ss = 0;
            for (int n = 0; n < m->batch; n++)
                for (int i = 0; i < HW; i++)
                    s += plain[at(n, c, i, C, HW, 1)];
            s /= N;
            for (int n = 0; n < m->batch; n++)
                for (int i = 0; i < HW; i++)
                    ss += pow(plain[at(n, c, i, C, HW, 1)] - s, 2);
            em[c] = 0.9 * em[c] + 0.1 * s;
            ev[c] = 0.9 * ev[c] + 0.1 * ss / (N - 1);
        }
        free(plain);
    }
    float *rm = layer_bn_running(bn, 0), *rv = layer_bn_running(bn, 1);
    assert_non_null(rm);
    assert_null(layer_bn_running(conv, 0));
    check_close("running mean after 2 steps", rm, NULL, em, C, 1e-6, 1e-4);
    check_close("running var after 2 steps (unbiased)", rv, NULL, ev, C, 1e-6, 1e-4);
    free(em), free(ev);
    model_destroy(m);
}

static void test_shapes_and_layouts(void **state)
{
    /* every zoo model builds at both shapes; logits are plain; no layer of
     * a trained pass fell back to oneDNN's reference kernels */
    const char *names[] = {"mlp",      "lenet",    "alexnet",       "vgg11",       "vgg16",
                           "resnet18", "resnet50", "squeezenet1_0", "densenet121", "mobilenetv2"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        for (int s = 0; s < 2; s++) {
            struct model *m = make(names[i], 2, s ? 3 : 1, s ? 32 : 28, 1);
            assert_int_equal(m->tensors[m->output].blk, 1);
            assert_int_equal(m->tensors[m->output].per_sample, 10);
            for (int l = 0; l < m->nlayers && cpu_have_dnnl(); l++) {
                const struct layer *y = &m->layers[l];
                /* kernel: "fwd|bwd-data|bwd-weights" or one name; backward-data
                 * may be oneDNN's reference only where it never runs */
                char part[3][40] = {"", "", ""};
                sscanf(y->kernel, "%39[^|]|%39[^|]|%39s", part[0], part[1], part[2]);
                for (int k = 0; k < 3; k++)
                    if (!strncmp(part[k], "ref", 3) && !(k == 1 && !m->tensors[y->in].need_grad))
                        fail_msg("%s: layer %s runs oneDNN's reference kernel (%s)", names[i], y->name, y->kernel);
            }
            model_destroy(m);
        }
}

static void test_layer_times(void **state)
{
    setenv("DDPTOP_LAYER_TIMES", "1", 1);
    struct model *m = make("lenet", 2, 1, 28, 1);
    unsetenv("DDPTOP_LAYER_TIMES");
    static const int32_t labels[2] = {1, 2};
    int correct;
    fill_input(m, 2);
    assert_int_equal(model_forward(m, 1), 0);
    model_loss(m, labels, 2, &correct);
    assert_int_equal(model_backward(m, 0.5f, NULL, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    model_print_times(m, f);
    fclose(f);
    assert_non_null(strstr(buf, "per-layer times: lenet"));
    assert_non_null(strstr(buf, "conv2"));
    assert_non_null(strstr(buf, "total"));
    free(buf);
    model_destroy(m);
}

/* Every model times its layers (cheaply) and publishes the totals for
 * other threads: what model_layer_times reads after a forward and a
 * backward is one forward and one backward, with the time on the layers;
 * model_layer_times_reset starts them again. */
static void test_layer_times_published(void **state)
{
    struct model *m = make("lenet", 2, 1, 28, 1);
    static const int32_t labels[2] = {1, 2};
    int correct;
    int64_t fwd[64], bwd[64], fc = -1, bc = -1;
    assert_int_equal(model_layer_times(m, fwd, bwd, 64, &fc, &bc), m->nlayers);
    assert_int_equal(fc, 0);
    assert_int_equal(bc, 0);
    fill_input(m, 2);
    assert_int_equal(model_forward(m, 1), 0);
    model_loss(m, labels, 2, &correct);
    assert_int_equal(model_backward(m, 0.5f, NULL, NULL), 0);
    assert_int_equal(model_layer_times(m, fwd, bwd, 64, &fc, &bc), m->nlayers);
    assert_int_equal(fc, 1);
    assert_int_equal(bc, 1);
    int64_t tf = 0, tb = 0;
    for (int i = 0; i < m->nlayers; i++) {
        assert_true(fwd[i] >= 0 && bwd[i] >= 0);
        tf += fwd[i];
        tb += bwd[i];
    }
    assert_true(tf > 0 && tb > 0);
    /* fewer layers asked for: only those */
    assert_int_equal(model_layer_times(m, fwd, bwd, 3, &fc, &bc), 3);
    /* a reset (the rank's, after its first step) starts the totals again:
     * nothing, then only what came after */
    model_layer_times_reset(m);
    assert_int_equal(model_layer_times(m, fwd, bwd, 64, &fc, &bc), m->nlayers);
    assert_int_equal(fc, 0);
    assert_int_equal(bc, 0);
    for (int i = 0; i < m->nlayers; i++)
        assert_true(fwd[i] == 0 && bwd[i] == 0);
    assert_int_equal(model_forward(m, 1), 0);
    assert_int_equal(model_layer_times(m, fwd, bwd, 64, &fc, &bc), m->nlayers);
    assert_int_equal(fc, 1);
    assert_int_equal(bc, 0);
    model_destroy(m);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "bf16") != 0) {
            fprintf(stderr, "usage: %s [bf16]\n", argv[0]);
            return 2;
        }
        if (!cpu_bf16_native()) {
            char cpu[200];
            cpu_isa_describe(cpu, sizeof(cpu));
            printf("%s: no AVX512_BF16 or AMX to dispatch on, --precision bf16 is refused (SKIPPED)\n", cpu);
            return 77;
        }
        const struct CMUnitTest bf16[] = {cmocka_unit_test(test_fast_bf16)};
        return cmocka_run_group_tests(bf16, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_batchnorm_fd),      cmocka_unit_test(test_ref_pools_fd),
        cmocka_unit_test(test_pool_dims_ceil),        cmocka_unit_test(test_ref_relu6_dropout_fd),
        cmocka_unit_test(test_ref_concat_add_fd),     cmocka_unit_test(test_ref_conv_groups_fd),
        cmocka_unit_test(test_fast_conv_layouts),     cmocka_unit_test(test_fast_batchnorm),
        cmocka_unit_test(test_fast_pooling),          cmocka_unit_test(test_fast_linear),
        cmocka_unit_test(test_fast_eltwise_layouts),  cmocka_unit_test(test_freezing),
        cmocka_unit_test(test_dropout_model),         cmocka_unit_test(test_bn_running_stats),
        cmocka_unit_test(test_shapes_and_layouts),    cmocka_unit_test(test_layer_times),
        cmocka_unit_test(test_layer_times_published),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
