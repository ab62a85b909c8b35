/* test_layers.c - the layer kernels, a whole model's gradient and SGD.
 *
 * Three layers of checks, each against something simpler than the code:
 *  1. every reference kernel's backward against central finite differences
 *     of loss = sum(out * r) (r random, summed in double), so dout = r;
 *  2. every fast kernel (oneDNN, or the fallback loops) against the
 *     reference, forward and backward, in both input-gradient modes: din_acc=0
 *     must overwrite a NaN-filled buffer, din_acc=1 must add to known values;
 *  3. whole LeNet and MLP gradients (model_backward) against finite
 *     differences of model_forward + model_loss, and SGD against a two-step
 *     example worked by hand.
 * Every check prints its worst error as a share of its tolerance, so a drift
 * shows long before it fails.
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
#include "optim.h"
#include "rng.h"
#include "test_fill.h"

/* Finite differences against the reference kernels. Linear and convolution
 * are exactly linear in any one input, weight or bias, so a central
 * difference has no truncation error and eps only divides the float rounding
 * of the outputs: eps 1e-2 keeps that noise near 1e-5. ReLU and max-pool are
 * exact too away from kinks and ties, which the inputs avoid by 5e-2 and
 * 1e-2, both wider than eps 1e-3. Softmax cross-entropy is smooth; its loss
 * comes back as a float (~1.4e-7 rounding), so eps 1e-2 (truncation ~1e-6). */
#define FD_EPS_LINEAR 1e-2f
#define FD_EPS_KINK 1e-3f
#define FD_EPS_XENT 1e-2f
#define FD_ATOL 1e-3
#define FD_RTOL 1e-2
#define XENT_ATOL 1e-4 /* its gradients are ~1e-2: (p - onehot) / B */
#define XENT_RTOL 1e-3

/* Fast against reference: float accumulation (oneDNN, SGEMM) against the
 * reference's double forward sums and float backward sums, over at most
 * ~1600 terms of size ~1. ReLU and max-pool do the same arithmetic as the
 * reference today; the slack only admits a vectorised rewrite. */
#define FAST_ATOL 1e-4
#define FAST_RTOL 1e-4
#define ELTWISE_ATOL 1e-6
#define ELTWISE_RTOL 1e-6

/* Whole model. A ReLU or max-pool switch within +-eps of a parameter bends
 * the loss and spoils a difference by up to the whole gradient (measured:
 * 2.6e-2 against 2.7e-2 at eps 1e-2). In LeNet a conv1 parameter moves
 * thousands of ReLU inputs, so at eps 1e-2 every interval holds a switch and
 * at 1e-3 most do. Three things make the check tight and seed-proof
 * (200 seeds pass, the worst at 21% of its tolerance):
 *  - inputs are digit-like, a 7x7 random blob on a zero background, so most
 *    activations do not move at all (MNIST looks like this too);
 *  - switches are detected, not tolerated: with none, every logit is affine
 *    in the one parameter, so z(p+e) + z(p-e) - 2 z(p) is only rounding, at
 *    most 4 ulps of the logits (measured), with switches far above. Beyond
 *    MODEL_KINK_ULPS the index is retried at the next smaller eps of
 *    1e-2, 1e-3, 3e-4, 1e-4, or another index is taken;
 *  - differences are taken of the cross-entropy of the float logits summed
 *    in double: model_loss returns a float, whose rounding alone
 *    (ulp(2.3)/2eps = 1.2e-3 at eps 1e-4) would drown conv1's gradients.
 *    model_loss is still run and must agree with it to 1e-6.
 * An accepted difference is then off by at most sum|dL/dz| times that bound
 * over 2eps (measured: under half of it), plus rtol 2e-3 for the softmax's
 * curvature. Every tensor must also show a clearly nonzero difference (> 3x
 * its tolerance; the search goes on until it has one), so a zeroed gradient
 * cannot pass; a lost one stays NaN. */
#define MODEL_BLOB 7
#define MODEL_KINK_ULPS 8.0
#define MODEL_FD_RTOL 2e-3
#define MODEL_FD_TOP 8     /* candidates per tensor: its largest |gradients| first, */
#define MODEL_FD_TRIES 200 /* then random ones, up to this many in all */

/* ---- helpers ---------------------------------------------------------- */

static double *dalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof(double));
    assert_non_null(p);
    return p;
}

static void fill_nan(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = NAN;
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* |got - ref| <= atol + rtol*|ref| everywhere (NaN fails). ref is a float or
 * a double array (the other NULL). Prints the worst share of the tolerance;
 * fails naming the first offender. */
static void check_close(const char *what, const float *got, const float *ref_f, const double *ref_d, size_t n,
                        double atol, double rtol)
{
    double worst = 0.0;
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref_f ? (double)ref_f[i] : ref_d[i];
        double e = fabs((double)got[i] - r), tol = atol + rtol * fabs(r);
        if (e / tol > worst)
            worst = e / tol;
        if (!(e <= tol) && bad++ == 0)
            first_bad = i;
    }
    print_message("  %-44s %6zu values, worst %5.1f%% of tolerance\n", what, n, 100.0 * worst);
    if (bad)
        fail_msg("%s: %zu of %zu values out of tolerance (atol %g, rtol %g); first [%zu]: got %.9g, want %.9g", what,
                 bad, n, atol, rtol, first_bad, got[first_bad], ref_f ? (double)ref_f[first_bad] : ref_d[first_bad]);
}

static void check_ff(const char *what, const float *got, const float *ref, size_t n, double atol, double rtol)
{
    check_close(what, got, ref, NULL, n, atol, rtol);
}

static void check_fd(const char *what, const float *got, const double *ref, size_t n, double atol, double rtol)
{
    check_close(what, got, NULL, ref, n, atol, rtol);
}

/* Central differences of loss(ctx) with respect to each x[i], dividing by
 * the perturbation actually stored in a float. */
typedef double (*loss_fn)(void *ctx);
static void fd_grad(loss_fn loss, void *ctx, float *x, size_t n, float eps, double *fd)
{
    for (size_t i = 0; i < n; i++) {
        float save = x[i], hi = save + eps, lo = save - eps;
        x[i] = hi;
        double lp = loss(ctx);
        x[i] = lo;
        double lm = loss(ctx);
        x[i] = save;
        fd[i] = (lp - lm) / ((double)hi - (double)lo);
    }
}

/* Reference backward ACCUMULATES: from prefill P it must give P + g, where
 * g is what it gives from zero. */
static void check_accumulated(const char *what, const float *from_p, const float *p, const float *from_zero, size_t n)
{
    float *diff = falloc(n);
    for (size_t i = 0; i < n; i++)
        diff[i] = from_p[i] - p[i];
    check_ff(what, diff, from_zero, n, 1e-5, 1e-5); /* one float rounding of P ~ 1 */
    free(diff);
}

/* ---- 1. reference kernels against finite differences ------------------ */

struct linear_ctx {
    float *in, *w, *b, *out, *r;
    int B, IN, OUT;
};

static double linear_loss(void *p)
{
    struct linear_ctx *c = p;
    ref_linear_forward(c->out, c->in, c->w, c->b, c->B, c->IN, c->OUT);
    return dot(c->out, c->r, (size_t)c->B * c->OUT);
}

static void test_ref_linear_fd(void **state)
{
    struct rng r;
    rng_seed(&r, 11);
    struct linear_ctx c = {.B = 3, .IN = 7, .OUT = 5};
    size_t nin = (size_t)c.B * c.IN, nw = (size_t)c.OUT * c.IN, nout = (size_t)c.B * c.OUT;
    c.in = falloc(nin), c.w = falloc(nw), c.b = falloc(c.OUT), c.out = falloc(nout), c.r = falloc(nout);
    fill_uniform(&r, c.in, nin, -1, 1);
    fill_uniform(&r, c.w, nw, -1, 1);
    fill_uniform(&r, c.b, c.OUT, -1, 1);
    fill_uniform(&r, c.r, nout, -1, 1);

    float *din = falloc(nin), *dw = falloc(nw), *db = falloc(c.OUT);
    ref_linear_backward(din, dw, db, c.r, c.in, c.w, c.B, c.IN, c.OUT);
    double *fd = dalloc(nw);
    fd_grad(linear_loss, &c, c.in, nin, FD_EPS_LINEAR, fd);
    check_fd("ref_linear din vs FD", din, fd, nin, FD_ATOL, FD_RTOL);
    fd_grad(linear_loss, &c, c.w, nw, FD_EPS_LINEAR, fd);
    check_fd("ref_linear dw vs FD", dw, fd, nw, FD_ATOL, FD_RTOL);
    fd_grad(linear_loss, &c, c.b, c.OUT, FD_EPS_LINEAR, fd);
    check_fd("ref_linear db vs FD", db, fd, c.OUT, FD_ATOL, FD_RTOL);

    float *pin = falloc(nin), *pw = falloc(nw), *pb = falloc(c.OUT);
    float *ain = falloc(nin), *aw = falloc(nw), *ab = falloc(c.OUT);
    fill_uniform(&r, pin, nin, -1, 1);
    fill_uniform(&r, pw, nw, -1, 1);
    fill_uniform(&r, pb, c.OUT, -1, 1);
    memcpy(ain, pin, nin * sizeof(float));
    memcpy(aw, pw, nw * sizeof(float));
    memcpy(ab, pb, c.OUT * sizeof(float));
    ref_linear_backward(ain, aw, ab, c.r, c.in, c.w, c.B, c.IN, c.OUT);
    check_accumulated("ref_linear accumulates din", ain, pin, din, nin);
    check_accumulated("ref_linear accumulates dw", aw, pw, dw, nw);
    check_accumulated("ref_linear accumulates db", ab, pb, db, c.OUT);

    free(pin), free(pw), free(pb), free(ain), free(aw), free(ab);
    free(fd), free(din), free(dw), free(db);
    free(c.in), free(c.w), free(c.b), free(c.out), free(c.r);
}

struct conv_ctx {
    float *in, *w, *b, *out, *r;
    struct conv_dims d;
};

static double conv_loss(void *p)
{
    struct conv_ctx *c = p;
    ref_conv2d_forward(c->out, c->in, c->w, c->b, &c->d);
    return dot(c->out, c->r, (size_t)c->d.B * c->d.OC * c->d.OH * c->d.OW);
}

static size_t conv_in_n(const struct conv_dims *d)
{
    return (size_t)d->B * d->C * d->H * d->W;
}

static size_t conv_w_n(const struct conv_dims *d)
{
    return (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW;
}

static size_t conv_out_n(const struct conv_dims *d)
{
    return (size_t)d->B * d->OC * d->OH * d->OW;
}

/* Shapes for both convolution tests: strides 1 and 2, padding 0-2, grouped,
 * non-square inputs and one non-square kernel; then LeNet's two layers. */
static const struct conv_case {
    struct conv_dims d;
    int bias;
} conv_cases[] = {
    {{.B = 2, .C = 3, .H = 7, .W = 6, .OC = 4, .KH = 3, .KW = 3, .stride = 1, .pad = 0, .groups = 1}, 1},
    {{.B = 2, .C = 3, .H = 7, .W = 6, .OC = 4, .KH = 3, .KW = 3, .stride = 2, .pad = 1, .groups = 1}, 1},
    {{.B = 2, .C = 4, .H = 6, .W = 7, .OC = 6, .KH = 3, .KW = 3, .stride = 1, .pad = 1, .groups = 2}, 1},
    {{.B = 1, .C = 4, .H = 8, .W = 5, .OC = 4, .KH = 5, .KW = 5, .stride = 2, .pad = 2, .groups = 2}, 0},
    {{.B = 2, .C = 2, .H = 5, .W = 9, .OC = 3, .KH = 3, .KW = 2, .stride = 2, .pad = 2, .groups = 1}, 1},
    {{.B = 2, .C = 1, .H = 28, .W = 28, .OC = 6, .KH = 5, .KW = 5, .stride = 1, .pad = 2, .groups = 1}, 1},
    {{.B = 2, .C = 6, .H = 14, .W = 14, .OC = 16, .KH = 5, .KW = 5, .stride = 1, .pad = 0, .groups = 1}, 1},
};
#define N_CONV_FD_CASES 5 /* the LeNet shapes are left to the fast-vs-reference test */

static void conv_case_name(char *buf, size_t len, const char *what, const struct conv_dims *d, int bias)
{
    snprintf(buf, len, "%s %dx%dx%d k%dx%d s%d p%d g%d%s", what, d->C, d->H, d->W, d->KH, d->KW, d->stride, d->pad,
             d->groups, bias ? "" : " nobias");
}

static void test_ref_conv_fd(void **state)
{
    for (int k = 0; k < N_CONV_FD_CASES; k++) {
        struct rng r;
        rng_seed(&r, 100 + k);
        struct conv_ctx c = {.d = conv_cases[k].d};
        conv_dims_finish(&c.d);
        int bias = conv_cases[k].bias;
        size_t nin = conv_in_n(&c.d), nw = conv_w_n(&c.d), nout = conv_out_n(&c.d), nb = (size_t)c.d.OC;
        c.in = falloc(nin), c.w = falloc(nw), c.b = bias ? falloc(nb) : NULL, c.out = falloc(nout);
        c.r = falloc(nout);
        fill_uniform(&r, c.in, nin, -1, 1);
        fill_uniform(&r, c.w, nw, -1, 1);
        if (bias)
            fill_uniform(&r, c.b, nb, -1, 1);
        fill_uniform(&r, c.r, nout, -1, 1);

        float *din = falloc(nin), *dw = falloc(nw), *db = bias ? falloc(nb) : NULL;
        ref_conv2d_backward(din, dw, db, c.r, c.in, c.w, &c.d);
        double *fd = dalloc(nin > nw ? nin : nw);
        char what[96];
        fd_grad(conv_loss, &c, c.in, nin, FD_EPS_LINEAR, fd);
        conv_case_name(what, sizeof(what), "ref_conv din", &c.d, bias);
        check_fd(what, din, fd, nin, FD_ATOL, FD_RTOL);
        fd_grad(conv_loss, &c, c.w, nw, FD_EPS_LINEAR, fd);
        conv_case_name(what, sizeof(what), "ref_conv dw", &c.d, bias);
        check_fd(what, dw, fd, nw, FD_ATOL, FD_RTOL);
        if (bias) {
            fd_grad(conv_loss, &c, c.b, nb, FD_EPS_LINEAR, fd);
            conv_case_name(what, sizeof(what), "ref_conv db", &c.d, bias);
            check_fd(what, db, fd, nb, FD_ATOL, FD_RTOL);
        }

        /* accumulation: from P it gives P + the gradient */
        float *pin = falloc(nin), *pw = falloc(nw), *ain = falloc(nin), *aw = falloc(nw);
        fill_uniform(&r, pin, nin, -1, 1);
        fill_uniform(&r, pw, nw, -1, 1);
        memcpy(ain, pin, nin * sizeof(float));
        memcpy(aw, pw, nw * sizeof(float));
        ref_conv2d_backward(ain, aw, NULL, c.r, c.in, c.w, &c.d);
        conv_case_name(what, sizeof(what), "ref_conv accumulates din", &c.d, bias);
        check_accumulated(what, ain, pin, din, nin);
        conv_case_name(what, sizeof(what), "ref_conv accumulates dw", &c.d, bias);
        check_accumulated(what, aw, pw, dw, nw);

        free(pin), free(pw), free(ain), free(aw);
        free(fd), free(din), free(dw), free(db);
        free(c.in), free(c.w), free(c.b), free(c.out), free(c.r);
    }
}

struct relu_ctx {
    float *in, *out, *r;
    int64_t n;
};

static double relu_loss(void *p)
{
    struct relu_ctx *c = p;
    ref_relu_forward(c->out, c->in, c->n);
    return dot(c->out, c->r, (size_t)c->n);
}

static void test_ref_relu_fd(void **state)
{
    struct rng r;
    rng_seed(&r, 21);
    struct relu_ctx c = {.n = 257};
    c.in = falloc(c.n), c.out = falloc(c.n), c.r = falloc(c.n);
    fill_away_from_zero(&r, c.in, c.n, 0.05f, 1.0f);
    fill_uniform(&r, c.r, c.n, -1, 1);
    relu_loss(&c);

    float *din = falloc(c.n), *p = falloc(c.n), *a = falloc(c.n);
    double *fd = dalloc(c.n);
    ref_relu_backward(din, c.r, c.out, c.n);
    fd_grad(relu_loss, &c, c.in, c.n, FD_EPS_KINK, fd);
    check_fd("ref_relu din vs FD", din, fd, c.n, FD_ATOL, FD_RTOL);
    fill_uniform(&r, p, c.n, -1, 1);
    memcpy(a, p, c.n * sizeof(float));
    relu_loss(&c);
    ref_relu_backward(a, c.r, c.out, c.n);
    check_accumulated("ref_relu accumulates din", a, p, din, c.n);
    free(din), free(p), free(a), free(fd);
    free(c.in), free(c.out), free(c.r);
}

struct pool_ctx {
    float *in, *out, *r;
    int32_t *argmax;
    struct pool_dims d;
};

static size_t pool_in_n(const struct pool_dims *d)
{
    return (size_t)d->B * d->C * d->H * d->W;
}

static size_t pool_out_n(const struct pool_dims *d)
{
    return (size_t)d->B * d->C * d->OH * d->OW;
}

static double pool_loss(void *p)
{
    struct pool_ctx *c = p;
    ref_maxpool_forward(c->out, c->argmax, c->in, &c->d);
    return dot(c->out, c->r, pool_out_n(&c->d));
}

/* LeNet's 2/2, odd sizes (the last row and column dropped), overlapping
 * windows with and without padding. */
static const struct pool_dims pool_cases[] = {
    {.B = 2, .C = 3, .H = 8, .W = 8, .k = 2, .stride = 2, .pad = 0},
    {.B = 2, .C = 2, .H = 7, .W = 5, .k = 2, .stride = 2, .pad = 0},
    {.B = 2, .C = 2, .H = 7, .W = 6, .k = 3, .stride = 2, .pad = 1},
    {.B = 1, .C = 2, .H = 6, .W = 7, .k = 3, .stride = 1, .pad = 0},
};

static void pool_case_name(char *buf, size_t len, const char *what, const struct pool_dims *d)
{
    snprintf(buf, len, "%s %dx%dx%d k%d s%d p%d", what, d->C, d->H, d->W, d->k, d->stride, d->pad);
}

static void test_ref_maxpool_fd(void **state)
{
    for (size_t k = 0; k < sizeof(pool_cases) / sizeof(pool_cases[0]); k++) {
        struct rng r;
        rng_seed(&r, 200 + k);
        struct pool_ctx c = {.d = pool_cases[k]};
        pool_dims_finish(&c.d);
        size_t nin = pool_in_n(&c.d), nout = pool_out_n(&c.d);
        c.in = falloc(nin), c.out = falloc(nout), c.r = falloc(nout);
        c.argmax = calloc(nout, sizeof(int32_t));
        assert_non_null(c.argmax);
        fill_distinct(&r, c.in, nin, 1e-2f); /* ties more than 2*eps apart */
        fill_uniform(&r, c.r, nout, -1, 1);
        pool_loss(&c);

        float *din = falloc(nin), *p = falloc(nin), *a = falloc(nin);
        double *fd = dalloc(nin);
        char what[96];
        ref_maxpool_backward(din, c.r, c.argmax, &c.d);
        fd_grad(pool_loss, &c, c.in, nin, FD_EPS_KINK, fd);
        pool_case_name(what, sizeof(what), "ref_maxpool din vs FD", &c.d);
        check_fd(what, din, fd, nin, FD_ATOL, FD_RTOL);
        fill_uniform(&r, p, nin, -1, 1);
        memcpy(a, p, nin * sizeof(float));
        pool_loss(&c);
        ref_maxpool_backward(a, c.r, c.argmax, &c.d);
        pool_case_name(what, sizeof(what), "ref_maxpool accumulates", &c.d);
        check_accumulated(what, a, p, din, nin);
        free(din), free(p), free(a), free(fd);
        free(c.in), free(c.out), free(c.r), free(c.argmax);
    }
}

struct xent_ctx {
    float *logits, *probs;
    int32_t *labels;
    int B, K;
};

static double xent_loss(void *p)
{
    struct xent_ctx *c = p;
    return softmax_xent_forward(c->probs, c->logits, c->labels, c->B, c->K, NULL);
}

static void test_ref_softmax_xent(void **state)
{
    struct rng r;
    rng_seed(&r, 31);
    struct xent_ctx c = {.B = 4, .K = 10};
    size_t n = (size_t)c.B * c.K;
    c.logits = falloc(n), c.probs = falloc(n);
    c.labels = calloc((size_t)c.B, sizeof(int32_t));
    assert_non_null(c.labels);
    fill_uniform(&r, c.logits, n, -3, 3);
    for (int i = 0; i < c.B; i++)
        c.labels[i] = (int32_t)rng_below(&r, (uint32_t)c.K);
    c.logits[2 * c.K + c.labels[2]] = 10.0f; /* one sure hit, for the count */

    /* the loss and hit count against a direct double evaluation */
    double want = 0.0;
    int hits = 0;
    for (int i = 0; i < c.B; i++) {
        const float *z = c.logits + (size_t)i * c.K;
        double s = 0.0;
        int arg = 0;
        for (int k = 0; k < c.K; k++) {
            s += exp((double)z[k]);
            if (z[k] > z[arg])
                arg = k;
        }
        want += (log(s) - z[c.labels[i]]) / c.B;
        hits += arg == c.labels[i];
    }
    int correct = -1;
    float loss = softmax_xent_forward(c.probs, c.logits, c.labels, c.B, c.K, &correct);
    print_message("  softmax_xent loss %.9g, direct %.9g\n", loss, want);
    assert_true(fabs(loss - want) <= 1e-6 * want);
    assert_int_equal(correct, hits);
    assert_true(hits >= 1);
    for (int i = 0; i < c.B; i++) {
        double s = 0.0;
        for (int k = 0; k < c.K; k++)
            s += c.probs[(size_t)i * c.K + k];
        assert_true(fabs(s - 1.0) < 1e-6);
    }

    /* dlogits with scale 1/B is the gradient of the mean loss; written, not accumulated */
    float *dl = falloc(n);
    fill_nan(dl, n);
    softmax_xent_backward(dl, c.probs, c.labels, c.B, c.K, 1.0f / (float)c.B);
    double *fd = dalloc(n);
    fd_grad(xent_loss, &c, c.logits, n, FD_EPS_XENT, fd);
    check_fd("softmax_xent dlogits vs FD", dl, fd, n, XENT_ATOL, XENT_RTOL);
    free(dl), free(fd);
    free(c.logits), free(c.probs), free(c.labels);
}

/* ---- 2. fast kernels against the reference ---------------------------- */

static void test_cpu_linear(void **state)
{
    cpu_set_threads(2);                                                     /* the OpenMP paths too; main() sets 1 */
    static const int shapes[][3] = {{5, 37, 23}, {8, 400, 120}, {1, 3, 1}}; /* B, IN, OUT */
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int B = shapes[s][0], IN = shapes[s][1], OUT = shapes[s][2];
        size_t nin = (size_t)B * IN, nw = (size_t)OUT * IN, nout = (size_t)B * OUT;
        struct rng r;
        rng_seed(&r, 300 + s);
        float *in = falloc(nin), *w = falloc(nw), *b = falloc(OUT), *dout = falloc(nout);
        float *out = falloc(nout), *ref_out = falloc(nout);
        float *din = falloc(nin), *dw = falloc(nw), *db = falloc(OUT);
        float *ref_din = falloc(nin), *ref_dw = falloc(nw), *ref_db = falloc(OUT), *p = falloc(nin);
        fill_uniform(&r, in, nin, -1, 1);
        fill_uniform(&r, w, nw, -1, 1);
        fill_uniform(&r, b, OUT, -1, 1);
        fill_uniform(&r, dout, nout, -1, 1);
        fill_uniform(&r, p, nin, -1, 1);
        char what[96];

        fill_nan(out, nout);
        cpu_linear_forward(out, in, w, b, B, IN, OUT);
        ref_linear_forward(ref_out, in, w, b, B, IN, OUT);
        snprintf(what, sizeof(what), "cpu_linear forward %dx%d->%d", B, IN, OUT);
        check_ff(what, out, ref_out, nout, FAST_ATOL, FAST_RTOL);
        ref_linear_backward(ref_din, ref_dw, ref_db, dout, in, w, B, IN, OUT);

        /* din_acc 0: every output overwritten, parameter gradients too */
        fill_nan(din, nin), fill_nan(dw, nw), fill_nan(db, OUT);
        cpu_linear_backward(din, 0, dw, db, dout, in, w, B, IN, OUT);
        snprintf(what, sizeof(what), "cpu_linear din (write) %dx%d->%d", B, IN, OUT);
        check_ff(what, din, ref_din, nin, FAST_ATOL, FAST_RTOL);
        snprintf(what, sizeof(what), "cpu_linear dw %dx%d->%d", B, IN, OUT);
        check_ff(what, dw, ref_dw, nw, FAST_ATOL, FAST_RTOL);
        snprintf(what, sizeof(what), "cpu_linear db %dx%d->%d", B, IN, OUT);
        check_ff(what, db, ref_db, OUT, FAST_ATOL, FAST_RTOL);

        /* din_acc 1: added to what was there; parameter gradients still written */
        memcpy(din, p, nin * sizeof(float));
        fill_nan(dw, nw), fill_nan(db, OUT);
        cpu_linear_backward(din, 1, dw, db, dout, in, w, B, IN, OUT);
        for (size_t i = 0; i < nin; i++)
            ref_din[i] += p[i];
        snprintf(what, sizeof(what), "cpu_linear din (accumulate) %dx%d->%d", B, IN, OUT);
        check_ff(what, din, ref_din, nin, FAST_ATOL, FAST_RTOL);
        snprintf(what, sizeof(what), "cpu_linear dw after accumulate %dx%d->%d", B, IN, OUT);
        check_ff(what, dw, ref_dw, nw, FAST_ATOL, FAST_RTOL);
        check_ff("  ... db", db, ref_db, OUT, FAST_ATOL, FAST_RTOL);

        /* NULL gradients are skipped: the first layer has no din, a frozen one no dw/db */
        fill_nan(dw, nw), fill_nan(db, OUT);
        cpu_linear_backward(NULL, 0, dw, db, dout, in, w, B, IN, OUT);
        check_ff("  ... dw with din NULL", dw, ref_dw, nw, FAST_ATOL, FAST_RTOL);
        check_ff("  ... db with din NULL", db, ref_db, OUT, FAST_ATOL, FAST_RTOL);
        fill_nan(din, nin);
        cpu_linear_backward(din, 0, NULL, NULL, dout, in, w, B, IN, OUT);
        for (size_t i = 0; i < nin; i++)
            ref_din[i] -= p[i];
        check_ff("  ... din with dw, db NULL", din, ref_din, nin, FAST_ATOL, FAST_RTOL);

        free(in), free(w), free(b), free(dout), free(out), free(ref_out), free(din), free(dw), free(db);
        free(ref_din), free(ref_dw), free(ref_db), free(p);
    }
}

static void test_cpu_conv(void **state)
{
    cpu_set_threads(2); /* the OpenMP paths too; main() sets 1 */
    for (size_t k = 0; k < sizeof(conv_cases) / sizeof(conv_cases[0]); k++) {
        struct conv_dims d = conv_cases[k].d;
        int bias = conv_cases[k].bias;
        conv_dims_finish(&d);
        size_t nin = conv_in_n(&d), nw = conv_w_n(&d), nout = conv_out_n(&d), nb = (size_t)d.OC;
        struct rng r;
        rng_seed(&r, 400 + k);
        float *in = falloc(nin), *w = falloc(nw), *b = bias ? falloc(nb) : NULL, *dout = falloc(nout);
        float *out = falloc(nout), *ref_out = falloc(nout), *p = falloc(nin);
        float *din = falloc(nin), *dw = falloc(nw), *db = falloc(nb);
        float *ref_din = falloc(nin), *ref_dw = falloc(nw), *ref_db = falloc(nb), *ref_acc = falloc(nin);
        fill_uniform(&r, in, nin, -1, 1);
        fill_uniform(&r, w, nw, -1, 1);
        if (bias)
            fill_uniform(&r, b, nb, -1, 1);
        fill_uniform(&r, dout, nout, -1, 1);
        fill_uniform(&r, p, nin, -1, 1);

        char err[256], what[120];
        struct cpu_conv *c = cpu_conv_create(&d, bias, err, sizeof(err));
        if (!c)
            fail_msg("cpu_conv_create: %s", err);

        fill_nan(out, nout);
        assert_int_equal(cpu_conv_forward(c, out, in, w, b), 0);
        ref_conv2d_forward(ref_out, in, w, b, &d);
        conv_case_name(what, sizeof(what), "cpu_conv forward", &d, bias);
        check_ff(what, out, ref_out, nout, FAST_ATOL, FAST_RTOL);
        ref_conv2d_backward(ref_din, ref_dw, bias ? ref_db : NULL, dout, in, w, &d);
        for (size_t i = 0; i < nin; i++)
            ref_acc[i] = p[i] + ref_din[i];

        /* din_acc 0 over NaN */
        fill_nan(din, nin), fill_nan(dw, nw), fill_nan(db, nb);
        assert_int_equal(cpu_conv_backward(c, din, 0, dw, bias ? db : NULL, dout, in, w), 0);
        conv_case_name(what, sizeof(what), "cpu_conv din (write)", &d, bias);
        check_ff(what, din, ref_din, nin, FAST_ATOL, FAST_RTOL);
        conv_case_name(what, sizeof(what), "cpu_conv dw", &d, bias);
        check_ff(what, dw, ref_dw, nw, FAST_ATOL, FAST_RTOL);
        if (bias)
            check_ff("  ... db", db, ref_db, nb, FAST_ATOL, FAST_RTOL);

        /* din_acc 1 onto P (first use of the scratch buffer) */
        memcpy(din, p, nin * sizeof(float));
        fill_nan(dw, nw);
        assert_int_equal(cpu_conv_backward(c, din, 1, dw, bias ? db : NULL, dout, in, w), 0);
        conv_case_name(what, sizeof(what), "cpu_conv din (accumulate)", &d, bias);
        check_ff(what, din, ref_acc, nin, FAST_ATOL, FAST_RTOL);
        check_ff("  ... dw after accumulate", dw, ref_dw, nw, FAST_ATOL, FAST_RTOL);

        /* write again once the scratch exists, with no parameter gradients */
        fill_nan(din, nin);
        assert_int_equal(cpu_conv_backward(c, din, 0, NULL, NULL, dout, in, w), 0);
        check_ff("  ... din (write) after accumulate", din, ref_din, nin, FAST_ATOL, FAST_RTOL);

        /* and parameter gradients alone, as for a first layer */
        fill_nan(dw, nw), fill_nan(db, nb);
        assert_int_equal(cpu_conv_backward(c, NULL, 0, dw, bias ? db : NULL, dout, in, w), 0);
        check_ff("  ... dw with din NULL", dw, ref_dw, nw, FAST_ATOL, FAST_RTOL);
        if (bias)
            check_ff("  ... db with din NULL", db, ref_db, nb, FAST_ATOL, FAST_RTOL);

        cpu_conv_destroy(c);
        free(in), free(w), free(b), free(dout), free(out), free(ref_out), free(p), free(din), free(dw), free(db);
        free(ref_din), free(ref_dw), free(ref_db), free(ref_acc);
    }
}

static void test_cpu_relu(void **state)
{
    cpu_set_threads(2); /* the OpenMP paths too; main() sets 1 */
    struct rng r;
    rng_seed(&r, 500);
    int64_t n = 1001;
    float *in = falloc(n), *dout = falloc(n), *out = falloc(n), *ref_out = falloc(n);
    float *din = falloc(n), *ref_din = falloc(n), *p = falloc(n);
    fill_uniform(&r, in, n, -1, 1);
    in[0] = 0.0f, in[1] = -0.0f; /* the kink itself: gradient 0, as the reference */
    fill_uniform(&r, dout, n, -1, 1);
    fill_uniform(&r, p, n, -1, 1);

    fill_nan(out, n);
    cpu_relu_forward(out, in, n);
    ref_relu_forward(ref_out, in, n);
    check_ff("cpu_relu forward", out, ref_out, n, ELTWISE_ATOL, ELTWISE_RTOL);

    fill_nan(din, n);
    cpu_relu_backward(din, 0, dout, out, n);
    ref_relu_backward(ref_din, dout, ref_out, n);
    check_ff("cpu_relu din (write)", din, ref_din, n, ELTWISE_ATOL, ELTWISE_RTOL);

    memcpy(din, p, n * sizeof(float));
    memcpy(ref_din, p, n * sizeof(float));
    cpu_relu_backward(din, 1, dout, out, n);
    ref_relu_backward(ref_din, dout, ref_out, n);
    check_ff("cpu_relu din (accumulate)", din, ref_din, n, ELTWISE_ATOL, ELTWISE_RTOL);

    /* NaN goes through, forward and back, as in PyTorch (relu(nan) = nan,
     * and its gradient passes where the output is NaN): a model that
     * diverges says so at its loss instead of training on with dead units */
    in[7] = NAN;
    cpu_relu_forward(out, in, n);
    ref_relu_forward(ref_out, in, n);
    assert_true(isnan(out[7]) && isnan(ref_out[7]));
    cpu_relu_backward(din, 0, dout, out, n);
    memset(ref_din, 0, n * sizeof(float));
    ref_relu_backward(ref_din, dout, ref_out, n);
    assert_true(din[7] == dout[7] && ref_din[7] == dout[7]);
    cpu_relu6_forward(out, in, n);
    ref_relu6_forward(ref_out, in, n);
    assert_true(isnan(out[7]) && isnan(ref_out[7]));
    free(in), free(dout), free(out), free(ref_out), free(din), free(ref_din), free(p);
}

static void test_cpu_maxpool(void **state)
{
    cpu_set_threads(2); /* the OpenMP paths too; main() sets 1 */
    for (size_t k = 0; k < sizeof(pool_cases) / sizeof(pool_cases[0]); k++) {
        struct pool_dims d = pool_cases[k];
        pool_dims_finish(&d);
        size_t nin = pool_in_n(&d), nout = pool_out_n(&d);
        struct rng r;
        rng_seed(&r, 600 + k);
        float *in = falloc(nin), *dout = falloc(nout), *out = falloc(nout), *ref_out = falloc(nout);
        float *din = falloc(nin), *ref_din = falloc(nin), *p = falloc(nin);
        int32_t *am = calloc(nout, sizeof(int32_t)), *ref_am = calloc(nout, sizeof(int32_t));
        assert_non_null(am);
        assert_non_null(ref_am);
        fill_distinct(&r, in, nin, 1e-2f);
        fill_uniform(&r, dout, nout, -1, 1);
        fill_uniform(&r, p, nin, -1, 1);
        char what[96];

        fill_nan(out, nout);
        cpu_maxpool_forward(out, am, in, &d);
        ref_maxpool_forward(ref_out, ref_am, in, &d);
        pool_case_name(what, sizeof(what), "cpu_maxpool forward", &d);
        check_ff(what, out, ref_out, nout, ELTWISE_ATOL, ELTWISE_RTOL);
        assert_memory_equal(am, ref_am, nout * sizeof(int32_t));

        fill_nan(din, nin);
        cpu_maxpool_backward(din, 0, dout, am, &d);
        ref_maxpool_backward(ref_din, dout, ref_am, &d);
        pool_case_name(what, sizeof(what), "cpu_maxpool din (write)", &d);
        check_ff(what, din, ref_din, nin, ELTWISE_ATOL, ELTWISE_RTOL);

        memcpy(din, p, nin * sizeof(float));
        memcpy(ref_din, p, nin * sizeof(float));
        cpu_maxpool_backward(din, 1, dout, am, &d);
        ref_maxpool_backward(ref_din, dout, ref_am, &d);
        pool_case_name(what, sizeof(what), "cpu_maxpool din (accumulate)", &d);
        check_ff(what, din, ref_din, nin, ELTWISE_ATOL, ELTWISE_RTOL);
        free(in), free(dout), free(out), free(ref_out), free(din), free(ref_din), free(p), free(am), free(ref_am);
    }
}

/* ---- 3. whole models and SGD ------------------------------------------ */

struct fd_point {
    const char *tensor;
    size_t index;
    float eps;
    double got, fd, tol;
};

/* The k largest |g| of one tensor, by k selection passes. */
static void top_indices(const float *g, size_t len, size_t *top, int k)
{
    for (int t = 0; t < k; t++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < len; i++) {
            int taken = 0;
            for (int u = 0; u < t; u++)
                taken |= top[u] == i;
            if (!taken && (best == SIZE_MAX || fabsf(g[i]) > fabsf(g[best])))
                best = i;
        }
        top[t] = best;
    }
}

/* Runs the model; returns the mean cross-entropy of its float logits, summed
 * in double, and checks model_loss's float against it. */
static double forward_loss(struct model *m, const int32_t *labels, float *logits)
{
    int n = m->batch, k = m->classes;
    assert_int_equal(model_forward(m, 1), 0);
    float lf = model_loss(m, labels, n, NULL);
    memcpy(logits, m->tensors[m->output].val, sizeof(float) * (size_t)n * k);
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        double mx = z[0], s = 0.0;
        for (int c = 1; c < k; c++)
            mx = fmax(mx, z[c]);
        for (int c = 0; c < k; c++)
            s += exp(z[c] - mx);
        total += mx + log(s) - z[labels[i]];
    }
    double l = total / n;
    if (!(fabs(lf - l) <= 1e-6 * l))
        fail_msg("model_loss %.9g, cross-entropy of its logits %.9g", lf, l);
    return l;
}

/* Checks model_backward against central differences on at least
 * `per_tensor` kink-free indices of every parameter tensor. */
static void model_fd_check(const char *name, int per_tensor, uint64_t seed)
{
    enum { BATCH = 3, CLASSES = 10, NZ = BATCH * CLASSES, SIDE = 28 };
    static const float eps_ladder[] = {1e-2f, 1e-3f, 3e-4f, 1e-4f};
    char err[256];
    cpu_set_threads(1); /* before model_create: primitives keep the count they are made with */
    struct model *m = zoo_create(NULL, name, BATCH, 1, SIDE, SIDE, CLASSES, seed, err, sizeof(err));
    if (!m)
        fail_msg("zoo_create(%s): %s", name, err);
    struct rng r;
    rng_seed(&r, seed + 1);
    float *in = model_input(m);
    memset(in, 0, sizeof(float) * BATCH * SIDE * SIDE);
    for (int b = 0; b < BATCH; b++) {
        int y0 = (int)rng_below(&r, SIDE - MODEL_BLOB + 1), x0 = (int)rng_below(&r, SIDE - MODEL_BLOB + 1);
        for (int y = 0; y < MODEL_BLOB; y++)
            fill_uniform(&r, in + ((size_t)b * SIDE + y0 + y) * SIDE + x0, MODEL_BLOB, -1, 1);
    }
    int32_t labels[BATCH];
    for (int i = 0; i < BATCH; i++)
        labels[i] = (int32_t)rng_below(&r, CLASSES);

    float z0[NZ], zp[NZ], zm[NZ];
    forward_loss(m, labels, z0);
    fill_nan(m->grad_buf, m->nfloats); /* every gradient must be written */
    assert_int_equal(model_backward(m, 1.0f / BATCH, NULL, NULL), 0);
    double dz_l1 = 0.0, zmax = 0.0; /* sum |dL/dlogits|, max |logit| */
    for (int i = 0; i < NZ; i++) {
        dz_l1 += fabs(m->tensors[m->output].grad[i]);
        zmax = fmax(zmax, fabs(z0[i]));
    }
    double kink_tol = MODEL_KINK_ULPS * (nextafterf((float)zmax, INFINITY) - (float)zmax);

    struct fd_point *pts = calloc((size_t)m->nparams * MODEL_FD_TRIES, sizeof(*pts));
    assert_non_null(pts);
    int npts = 0, skipped = 0;
    for (int p = 0; p < m->nparams; p++) {
        const float *g = model_grad(m, p);
        size_t len = m->params[p].len, top[MODEL_FD_TOP];
        int ntop = len < MODEL_FD_TOP ? (int)len : MODEL_FD_TOP, accepted = 0, clear = 0;
        top_indices(g, len, top, ntop);
        for (int t = 0; t < MODEL_FD_TRIES && (accepted < per_tensor || !clear); t++) {
            size_t k = t < ntop ? top[t] : rng_below(&r, (uint32_t)len);
            float *x = model_param(m, p) + k, save = *x;
            int ok = 0;
            for (size_t e = 0; e < sizeof(eps_ladder) / sizeof(eps_ladder[0]) && !ok; e++) {
                float hi = save + eps_ladder[e], lo = save - eps_ladder[e];
                *x = hi;
                double lp = forward_loss(m, labels, zp);
                *x = lo;
                double lm = forward_loss(m, labels, zm);
                *x = save;
                double bend = 0.0;
                for (int i = 0; i < NZ; i++)
                    bend = fmax(bend, fabs((double)zp[i] + zm[i] - 2.0 * z0[i]));
                if (bend > kink_tol)
                    continue;
                double h2 = (double)hi - (double)lo;
                struct fd_point *q = &pts[npts++];
                *q = (struct fd_point){m->params[p].name, k, eps_ladder[e], g[k], (lp - lm) / h2, 0.0};
                q->tol = dz_l1 * kink_tol / h2 + MODEL_FD_RTOL * fabs(q->fd);
                clear += fabs(q->fd) > 3.0 * q->tol;
                accepted++;
                ok = 1;
            }
            skipped += !ok;
        }
        if (accepted < per_tensor)
            fail_msg("%s %s: only %d of %d indices free of ReLU/max-pool switches within eps in %d tries", name,
                     m->params[p].name, accepted, per_tensor, MODEL_FD_TRIES);
        if (!clear)
            fail_msg("%s %s: no clearly nonzero difference among %d checked in %d tries (is the gradient lost?)", name,
                     m->params[p].name, accepted, MODEL_FD_TRIES);
    }

    double worst = 0.0;
    int bad = 0, first_bad = -1;
    for (int i = 0; i < npts; i++) {
        double e = fabs(pts[i].got - pts[i].fd);
        worst = fmax(worst, e / pts[i].tol);
        if (!(e <= pts[i].tol) && bad++ == 0)
            first_bad = i;
    }
    print_message("  %s: model_backward vs FD on %d indices (%d with switches skipped), worst %.1f%% of tolerance\n",
                  name, npts, skipped, 100.0 * worst);
    if (bad) {
        const struct fd_point *q = &pts[first_bad];
        fail_msg("%s: %d of %d gradients differ from central differences; first %s[%zu]: backward %.7g, "
                 "FD %.7g (eps %g, tolerance %.2g)",
                 name, bad, npts, q->tensor, q->index, q->got, q->fd, q->eps, q->tol);
    }
    free(pts);
    model_destroy(m);
}

static void test_model_fd_lenet(void **state)
{
    model_fd_check("lenet", 3, 7); /* 10 tensors: 30 indices */
}

static void test_model_fd_mlp(void **state)
{
    model_fd_check("mlp", 5, 8); /* 6 tensors: 30 indices */
}

/* Two steps worked by hand (PyTorch: d = g + wd*p; buf = d on the first step,
 * momentum*buf + d after; p -= lr*buf), lr 0.1, momentum 0.9, wd 1e-4:
 *   p0 = 0.5,  g1 = 0.2,  g2 = -0.1
 *   d1 = 0.2 + 0.00005            = 0.20005        buf1 = 0.20005
 *   p1 = 0.5 - 0.020005           = 0.479995
 *   d2 = -0.1 + 0.0000479995      = -0.0999520005
 *   buf2 = 0.180045 - 0.0999520005 = 0.0800929995
 *   p2 = 0.479995 - 0.00800929995  = 0.47198570005
 * and for p0 = -2, g1 = 1, g2 = 3:
 *   d1 = 0.9998, p1 = -2.09998; d2 = 2.999790002, buf2 = 3.899610002,
 *   p2 = -2.4899410002 */
static void test_sgd_update_two_steps(void **state)
{
    float p[2] = {0.5f, -2.0f}, buf[2] = {0};
    const float g1[2] = {0.2f, 1.0f}, g2[2] = {-0.1f, 3.0f};
    sgd_update(p, g1, buf, 2, 0.1f, 0.9f, 1e-4f);
    assert_float_equal(buf[0], 0.20005, 1e-7);
    assert_float_equal(buf[1], 0.9998, 1e-7);
    assert_float_equal(p[0], 0.479995, 1e-7);
    assert_float_equal(p[1], -2.09998, 1e-6);
    sgd_update(p, g2, buf, 2, 0.1f, 0.9f, 1e-4f);
    assert_float_equal(buf[0], 0.0800929995, 1e-7);
    assert_float_equal(buf[1], 3.899610002, 1e-6);
    assert_float_equal(p[0], 0.47198570005, 1e-7);
    assert_float_equal(p[1], -2.4899410002, 1e-6);

    /* momentum 0: plain SGD with decay, the buffer only mirrors d */
    float q = 1.0f, qb = 123.0f, qg = 0.5f;
    sgd_update(&q, &qg, &qb, 1, 0.1f, 0.0f, 0.01f);
    assert_float_equal(q, 1.0 - 0.1 * 0.51, 1e-7);
}

/* sgd_step updates each trainable tensor as sgd_update does, and no other. */
static void test_sgd_step_model(void **state)
{
    char err[256];
    struct model *m = zoo_create(NULL, "lenet", 1, 1, 28, 28, 10, 5, err, sizeof(err));
    if (!m)
        fail_msg("model_create: %s", err);
    m->params[1].trainable = 0; /* conv1.bias frozen */
    float *before = falloc(m->nfloats);
    memcpy(before, m->param_buf, m->nfloats * sizeof(float));
    for (size_t i = 0; i < m->nfloats; i++)
        m->grad_buf[i] = 0.25f;
    struct sgd o;
    assert_int_equal(sgd_init(&o, m->nfloats, 0.1f, 0.9f, 0.01f, 0), 0);
    sgd_step(&o, m, 0);
    for (int p = 0; p < m->nparams; p++)
        for (size_t k = 0; k < m->params[p].len; k++) {
            size_t i = m->params[p].off + k;
            float want = m->params[p].trainable ? before[i] - 0.1f * (0.25f + 0.01f * before[i]) : before[i];
            if (!(fabsf(m->param_buf[i] - want) <= 1e-7f))
                fail_msg("%s[%zu]: %.9g, want %.9g", m->params[p].name, k, m->param_buf[i], want);
        }
    sgd_free(&o);
    free(before);
    model_destroy(m);
}

static void test_sgd_lr_warmup(void **state)
{
    struct sgd o;
    assert_int_equal(sgd_init(&o, 4, 0.4f, 0.9f, 0.0f, 4), 0);
    /* linear ramp lr*(t+1)/warmup over steps 0..3, then flat */
    assert_float_equal(sgd_lr_at(&o, 0), 0.1, 1e-7);
    assert_float_equal(sgd_lr_at(&o, 1), 0.2, 1e-7);
    assert_float_equal(sgd_lr_at(&o, 2), 0.3, 1e-7);
    assert_float_equal(sgd_lr_at(&o, 3), 0.4, 1e-7);
    assert_float_equal(sgd_lr_at(&o, 4), 0.4, 1e-7);
    assert_float_equal(sgd_lr_at(&o, 1000), 0.4, 1e-7);
    sgd_free(&o);
    assert_int_equal(sgd_init(&o, 4, 0.4f, 0.9f, 0.0f, 0), 0);
    assert_float_equal(sgd_lr_at(&o, 0), 0.4, 1e-7); /* no warm-up */
    sgd_free(&o);
}

int main(void)
{
    /* One thread by default: the model checks run hundreds of small forwards,
     * and OpenMP threads spin-waiting on a loaded machine (ctest -j) make
     * them ten times slower. */
    cpu_set_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_linear_fd),    cmocka_unit_test(test_ref_conv_fd),
        cmocka_unit_test(test_ref_relu_fd),      cmocka_unit_test(test_ref_maxpool_fd),
        cmocka_unit_test(test_ref_softmax_xent), cmocka_unit_test(test_cpu_linear),
        cmocka_unit_test(test_cpu_conv),         cmocka_unit_test(test_cpu_relu),
        cmocka_unit_test(test_cpu_maxpool),      cmocka_unit_test(test_model_fd_lenet),
        cmocka_unit_test(test_model_fd_mlp),     cmocka_unit_test(test_sgd_update_two_steps),
        cmocka_unit_test(test_sgd_step_model),   cmocka_unit_test(test_sgd_lr_warmup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
