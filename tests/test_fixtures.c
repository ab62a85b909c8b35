/* test_fixtures.c - whole training steps of LeNet and the MLP against
 * numbers dumped from PyTorch 1.13 by tests/gen_fixtures.py.
 *
 * Each fixture holds a batch of 8, the loss, logits and gradients of the
 * mean cross-entropy, per-tensor gradient norms, and parameters after two
 * SGD steps (lr 0.01, momentum 0.9, weight decay 5e-4) on that batch. The
 * parameters themselves are not stored: both sides derive them from the
 * same counter hash (hash_uniform below, hash_uniform in the script), so the
 * test first checks the per-tensor sums the script recorded. A missing or
 * malformed fixture is a failure, never a skip: the files are committed.
 *
 * Tolerances (float32 on both sides, different summation orders: PyTorch's
 * conv/GEMM against oneDNN's, or the reference loops without oneDNN). The
 * measured errors are printed; with oneDNN they are 1-3% of these:
 *   loss, logits        atol 1e-6, rtol 1e-5  (measured 2.4e-7 on a loss of 2.3)
 *   gradients           atol 1e-6, rtol 1e-4  (as numpy.allclose; measured 3e-8)
 *   gradient norms      rtol 1e-5
 *   params after steps  atol 1e-7, rtol 1e-6  (measured 4e-9; one step moves a
 *                       parameter ~1e-5, its weight decay ~2e-7, so a lost
 *                       decay, dampening or Nesterov term fails here too)
 *
 * Built a second time with DDPTOP_FIXTURES_ON_GPU (test_gpu_fixtures, label
 * gpu), the same steps run on a GPU model (cuDNN, cuBLAS, our kernels,
 * FP32 without TF32), moved through model_memcpy, with tolerances ten
 * times as wide for the values that convolution algorithms sum in another
 * order: loss/logits atol 1e-5 rtol 1e-4, gradients atol 1e-5 rtol 1e-3,
 * gradient norms rtol 1e-4, parameters after steps atol 1e-6 rtol 1e-5.
 * Without a GPU that program reports skipped (exit 77).
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

#include "harness.h"
#include "kernels_cpu.h"
#include "model.h"
#include "optim.h"
#include "zoo.h"
#ifdef DDPTOP_FIXTURES_ON_GPU
#define TOL_SCALE 10.0
#else
#define TOL_SCALE 1.0
#endif

#define FX_MAX_TENSORS 16

/* One vector section: dense (idx NULL, value i at position i) or sparse. */
struct fx_vec {
    int n;
    int64_t *idx;
    double *v;
};

struct fx_tensor {
    char name[MODEL_MAX_NAME];
    long len;
    double bound;     /* parameters are U(-bound, bound) from hash_uniform */
    double param_sum; /* sum of the generated float parameters */
    double grad_norm; /* L2 norm of the tensor's gradient */
};

struct fixture {
    char model[MODEL_MAX_NAME];
    int batch, classes;
    double lr, momentum, weight_decay;
    unsigned long long param_seed;
    int ntensors;
    struct fx_tensor t[FX_MAX_TENSORS];
    struct fx_vec input, labels, loss, logits, grads, loss2, step1, step2;
};

/* ---- loading ------------------------------------------------------------ */

static void fx_vec_free(struct fx_vec *v)
{
    free(v->idx);
    free(v->v);
    memset(v, 0, sizeof(*v));
}

static void fx_free(struct fixture *fx)
{
    struct fx_vec *vs[] = {&fx->input, &fx->labels, &fx->loss,  &fx->logits,
                           &fx->grads, &fx->loss2,  &fx->step1, &fx->step2};
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
        fx_vec_free(vs[i]);
}

static void skip_comments(FILE *f)
{
    int c;
    while ((c = fgetc(f)) == '#')
        while ((c = fgetc(f)) != EOF && c != '\n')
            ;
    if (c != EOF)
        ungetc(c, f);
}

static int expect_word(FILE *f, const char *want, char *err, size_t errlen)
{
    char got[64];
    if (fscanf(f, "%63s", got) != 1 || strcmp(got, want) != 0) {
        snprintf(err, errlen, "expected '%s', found '%s'", want, feof(f) ? "end of file" : got);
        return -1;
    }
    return 0;
}

/* KEY dense N v... | KEY sparse N (i v)... ; want_n >= 0 demands that count. */
static int read_vec(FILE *f, const char *key, int want_n, struct fx_vec *out, char *err, size_t errlen)
{
    char kind[16];
    int n;
    if (expect_word(f, key, err, errlen) != 0)
        return -1;
    if (fscanf(f, "%15s %d", kind, &n) != 2 || n <= 0 || (want_n >= 0 && n != want_n) ||
        (strcmp(kind, "dense") != 0 && strcmp(kind, "sparse") != 0)) {
        snprintf(err, errlen, "%s: bad header (want dense|sparse and count %d)", key, want_n);
        return -1;
    }
    int sparse = kind[0] == 's';
    out->n = n;
    out->v = malloc(sizeof(double) * (size_t)n);
    out->idx = sparse ? malloc(sizeof(int64_t) * (size_t)n) : NULL;
    if (!out->v || (sparse && !out->idx)) {
        snprintf(err, errlen, "%s: out of memory", key);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        long long ix = 0;
        if ((sparse && fscanf(f, "%lld", &ix) != 1) || fscanf(f, "%lf", &out->v[i]) != 1) {
            snprintf(err, errlen, "%s: value %d of %d unreadable", key, i, n);
            return -1;
        }
        if (sparse)
            out->idx[i] = ix;
    }
    return 0;
}

static int fx_parse(FILE *f, struct fixture *fx, char *err, size_t errlen)
{
    skip_comments(f);
    if (expect_word(f, "model", err, errlen) || fscanf(f, "%47s", fx->model) != 1 ||
        expect_word(f, "batch", err, errlen) || fscanf(f, "%d", &fx->batch) != 1 ||
        expect_word(f, "classes", err, errlen) || fscanf(f, "%d", &fx->classes) != 1 ||
        expect_word(f, "lr", err, errlen) || fscanf(f, "%lf", &fx->lr) != 1 ||
        expect_word(f, "momentum", err, errlen) || fscanf(f, "%lf", &fx->momentum) != 1 ||
        expect_word(f, "weight_decay", err, errlen) || fscanf(f, "%lf", &fx->weight_decay) != 1 ||
        expect_word(f, "param_seed", err, errlen) || fscanf(f, "%llu", &fx->param_seed) != 1 ||
        expect_word(f, "tensors", err, errlen) || fscanf(f, "%d", &fx->ntensors) != 1) {
        if (!err[0])
            snprintf(err, errlen, "bad header");
        return -1;
    }
    if (fx->batch <= 0 || fx->classes <= 0 || fx->ntensors <= 0 || fx->ntensors > FX_MAX_TENSORS) {
        snprintf(err, errlen, "header out of range (batch %d, classes %d, tensors %d)", fx->batch, fx->classes,
                 fx->ntensors);
        return -1;
    }
    for (int i = 0; i < fx->ntensors; i++) {
        struct fx_tensor *t = &fx->t[i];
        if (fscanf(f, "%47s %ld %lf %lf %lf", t->name, &t->len, &t->bound, &t->param_sum, &t->grad_norm) != 5) {
            snprintf(err, errlen, "tensor line %d unreadable", i);
            return -1;
        }
    }
    int nin = fx->batch * 28 * 28, nlog = fx->batch * fx->classes;
    if (read_vec(f, "input", nin, &fx->input, err, errlen) ||
        read_vec(f, "labels", fx->batch, &fx->labels, err, errlen) || read_vec(f, "loss", 1, &fx->loss, err, errlen) ||
        read_vec(f, "logits", nlog, &fx->logits, err, errlen) || read_vec(f, "grads", -1, &fx->grads, err, errlen) ||
        read_vec(f, "loss2", 1, &fx->loss2, err, errlen) || read_vec(f, "params_step1", -1, &fx->step1, err, errlen) ||
        read_vec(f, "params_step2", -1, &fx->step2, err, errlen))
        return -1;
    if (fx->input.idx || fx->labels.idx || fx->logits.idx || !fx->step1.idx || !fx->step2.idx) {
        snprintf(err, errlen, "a section has the wrong kind (dense/sparse)");
        return -1;
    }
    char extra[8];
    if (fscanf(f, "%7s", extra) == 1) {
        snprintf(err, errlen, "trailing data after params_step2: '%s'", extra);
        return -1;
    }
    return 0;
}

static int fx_load(const char *path, struct fixture *fx, char *err, size_t errlen)
{
    memset(fx, 0, sizeof(*fx));
    err[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen,
                 "%s: cannot open (the fixtures are committed; regenerate with "
                 "/usr/bin/python3 tests/gen_fixtures.py)",
                 path);
        return -1;
    }
    char inner[200];
    inner[0] = '\0';
    int rc = fx_parse(f, fx, inner, sizeof(inner));
    fclose(f);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, inner);
        fx_free(fx);
    }
    return rc;
}

/* ---- the shared parameter generator ------------------------------------- */

/* Top 24 bits of splitmix64 at counter i+1, in [0, 1); exact in a float. Must
 * match hash_uniform() in gen_fixtures.py bit for bit. */
static double hash_uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 40) / 16777216.0;
}

/* ---- comparison --------------------------------------------------------- */

/* Checks |got - ref| <= atol + rtol*|ref| for every value; prints the worst
 * ratio err / tolerance either way, and fails naming the first offender. */
static void check_close(const char *what, const float *got, const struct fx_vec *ref, double atol, double rtol)
{
    double worst = 0.0, worst_err = 0.0;
    int64_t worst_at = 0, bad = 0, first_bad = -1;
    for (int i = 0; i < ref->n; i++) {
        int64_t at = ref->idx ? ref->idx[i] : i;
        double r = ref->v[i], e = fabs((double)got[at] - r), tol = atol + rtol * fabs(r);
        if (e / tol > worst) {
            worst = e / tol;
            worst_err = e;
            worst_at = at;
        }
        if (!(e <= tol)) { /* also catches NaN */
            bad++;
            if (first_bad < 0)
                first_bad = i;
        }
    }
    print_message("  %-28s %6d values: max err %.3g at [%lld], %.1f%% of tolerance\n", what, ref->n, worst_err,
                  (long long)worst_at, 100.0 * worst);
    if (bad) {
        int64_t at = ref->idx ? ref->idx[first_bad] : first_bad;
        fail_msg("%s: %lld of %d values out of tolerance (atol %g, rtol %g); first at [%lld]: got %.9g, want %.9g",
                 what, (long long)bad, ref->n, atol, rtol, (long long)at, got[at], ref->v[first_bad]);
    }
}

static void check_scalar(const char *what, double got, double want, double atol, double rtol)
{
    double e = fabs(got - want), tol = atol + rtol * fabs(want);
    print_message("  %-28s got %.9g, want %.9g, err %.3g\n", what, got, want, e);
    if (!(e <= tol))
        fail_msg("%s: got %.9g, want %.9g (atol %g, rtol %g)", what, got, want, atol, rtol);
}

/* ---- the step ----------------------------------------------------------- */

/* The model's copy of n floats at src, on the host. */
static float *to_host(struct model *m, const float *src, size_t n)
{
    float *h = malloc(sizeof(float) * (n ? n : 1));
    assert_non_null(h);
    if (model_memcpy(m, h, src, sizeof(float) * n) != 0)
        fail_msg("copying to the host: %s", m->err);
    return h;
}

static void from_host(struct model *m, float *dst, const float *src, size_t n)
{
    if (model_memcpy(m, dst, src, sizeof(float) * n) != 0)
        fail_msg("copying to the model: %s", m->err);
}

static void run_fixture(const char *file, struct device *dev)
{
    struct fixture fx;
    char err[512];
    const double k = TOL_SCALE;
    if (fx_load(file, &fx, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    print_message("%s%s\n", file, dev ? " (on the GPU)" : "");

    struct model *m = zoo_create(dev, fx.model, fx.batch, 1, 28, 28, fx.classes, 1, err, sizeof(err));
    if (!m)
        fail_msg("zoo_create(%s): %s", fx.model, err);

    /* same tensors in the same flat order */
    assert_int_equal(m->nparams, fx.ntensors);
    for (int p = 0; p < m->nparams; p++) {
        if (strcmp(m->params[p].name, fx.t[p].name) != 0 || (long)m->params[p].len != fx.t[p].len)
            fail_msg("tensor %d: ddptop has %s[%zu], the fixture %s[%ld]", p, m->params[p].name, m->params[p].len,
                     fx.t[p].name, fx.t[p].len);
    }

    /* parameters from the shared generator; the sums prove both sides agree */
    float *host = malloc(sizeof(float) * m->nfloats);
    assert_non_null(host);
    for (int p = 0; p < m->nparams; p++) {
        const struct param *pp = &m->params[p];
        float *v = host + pp->off;
        double sum = 0.0, l1 = 0.0;
        for (size_t j = 0; j < pp->len; j++) {
            v[j] = (float)((2.0 * hash_uniform(fx.param_seed, pp->off + j) - 1.0) * fx.t[p].bound);
            sum += v[j];
            l1 += fabs(v[j]);
        }
        /* only the summation order differs (numpy is pairwise) */
        if (!(fabs(sum - fx.t[p].param_sum) <= 1e-12 * l1))
            fail_msg("%s: generated parameters sum to %.17g, the script's to %.17g: hash_uniform differs from "
                     "gen_fixtures.py",
                     pp->name, sum, fx.t[p].param_sum);
    }
    from_host(m, m->param_buf, host, m->nfloats);

    float *in = malloc(sizeof(float) * (size_t)fx.input.n);
    assert_non_null(in);
    for (int i = 0; i < fx.input.n; i++)
        in[i] = (float)fx.input.v[i];
    from_host(m, model_input(m), in, (size_t)fx.input.n);
    free(in);
    int32_t labels[64];
    assert_true(fx.batch <= 64);
    for (int i = 0; i < fx.batch; i++) {
        labels[i] = (int32_t)fx.labels.v[i];
        assert_true(labels[i] >= 0 && labels[i] < fx.classes);
    }

    /* forward, loss, backward */
    int correct;
    assert_int_equal(model_forward(m, 1), 0);
    float loss = model_loss(m, labels, fx.batch, &correct);
    check_scalar("loss", loss, fx.loss.v[0], 1e-6 * k, 1e-5 * k);
    float *h = to_host(m, m->tensors[m->output].val, (size_t)fx.batch * fx.classes);
    check_close("logits", h, &fx.logits, 1e-6 * k, 1e-5 * k);
    free(h);
    memset(host, 0xff, sizeof(float) * m->nfloats); /* NaN: every gradient must be written */
    from_host(m, m->grad_buf, host, m->nfloats);
    assert_int_equal(model_backward(m, 1.0f / (float)fx.batch, NULL, NULL), 0);
    float *g = to_host(m, m->grad_buf, m->nfloats);
    check_close(fx.grads.idx ? "grads (sample)" : "grads (all)", g, &fx.grads, 1e-6 * k, 1e-4 * k);
    for (int p = 0; p < m->nparams; p++) {
        const float *gp = g + m->params[p].off;
        double ss = 0.0;
        for (size_t j = 0; j < m->params[p].len; j++)
            ss += (double)gp[j] * gp[j];
        char what[80];
        snprintf(what, sizeof(what), "|grad %s|", m->params[p].name);
        check_scalar(what, sqrt(ss), fx.t[p].grad_norm, 0.0, 1e-5 * k);
    }
    free(g);

    /* two SGD steps on the same batch: the second reads the momentum buffer */
    struct sgd o;
    assert_int_equal(sgd_init_model(&o, m, (float)fx.lr, (float)fx.momentum, (float)fx.weight_decay, 0), 0);
    assert_int_equal(sgd_step(&o, m, 0), 0);
    float *p1 = to_host(m, m->param_buf, m->nfloats);
    check_close("params after step 1", p1, &fx.step1, 1e-7 * k, 1e-6 * k);
    free(p1);
    assert_int_equal(model_forward(m, 1), 0);
    float loss2 = model_loss(m, labels, fx.batch, &correct);
    check_scalar("loss after step 1", loss2, fx.loss2.v[0], 1e-6 * k, 1e-5 * k);
    assert_int_equal(model_backward(m, 1.0f / (float)fx.batch, NULL, NULL), 0);
    assert_int_equal(sgd_step(&o, m, 1), 0);
    float *p2 = to_host(m, m->param_buf, m->nfloats);
    check_close("params after step 2", p2, &fx.step2, 1e-7 * k, 1e-6 * k);
    free(p2);

    free(host);
    sgd_free(&o);
    model_destroy(m);
    fx_free(&fx);
}

/* NULL on the CPU; GPU 0 otherwise. */
static struct device *test_device(void)
{
#ifdef DDPTOP_FIXTURES_ON_GPU
    return harness_gpu();
#else
    return NULL;
#endif
}

static void test_lenet_step(void **state)
{
    run_fixture(DDPTOP_TEST_DIR "/fixtures/lenet_step.txt", test_device());
}

static void test_mlp_step(void **state)
{
    run_fixture(DDPTOP_TEST_DIR "/fixtures/mlp_step.txt", test_device());
}

/* The loader must refuse, not skip, a fixture it cannot use. */
static void test_loader_rejects(void **state)
{
    struct fixture fx;
    char err[512];
    assert_int_equal(fx_load(DDPTOP_TEST_DIR "/fixtures/no_such_fixture.txt", &fx, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot open"));

    char path[] = "/tmp/ddptop_fx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("# truncated\nmodel lenet\nbatch 8\nclasses 10\nlr 0.01\nmomentum 0.9\nweight_decay 0.0005\n"
          "param_seed 1\ntensors 1\nfc1.weight 4 0.5 0.1 0.2\ninput dense 6272\n1 2 3\n",
          f);
    fclose(f);
    assert_int_equal(fx_load(path, &fx, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "input"));
    remove(path);
}

int main(void)
{
    cpu_set_threads(1); /* deterministic, and no OpenMP spin-waits on a loaded machine */
#ifdef DDPTOP_FIXTURES_ON_GPU
    if (!harness_gpu()) {
        printf("no GPU (%s): the GPU fixture steps are skipped\n", gpu_module() ? "none found" : gpu_module_error());
        return 77;
    }
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lenet_step),
        cmocka_unit_test(test_mlp_step),
        cmocka_unit_test(test_loader_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
