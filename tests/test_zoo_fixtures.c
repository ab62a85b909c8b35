/* test_zoo_fixtures.c - one training step of every zoo model, at 1x28x28
 * and 3x32x32, against PyTorch 1.13 numbers dumped by
 * tests/gen_zoo_fixtures.py (tests/fixtures/zoo/NAME_CxS.txt).
 *
 * Both sides derive the parameters and the batch of 2 from the same counter
 * hash (zoo_uniform below; the script's docstring has the formula), so the
 * fixtures hold no tensors: per model the loss, the logits, per parameter
 * tensor its sum (a generator check), gradient norm and gradient projection
 * onto a hashed random vector, batch-norm running statistics after the step,
 * and the logits of an eval-mode forward after it. Dropout draws ddptop's
 * mask on both sides. A missing or malformed fixture is a failure: they are
 * committed.
 *
 * Tolerances. The reference is the step in float64, the answer float32
 * approximates; ddptop computes in float32 with oneDNN's summation orders.
 * Forward quantities are well conditioned everywhere:
 *   loss                          rtol 1e-4
 *   logits, eval logits           atol 1e-4 + rtol 1e-3
 *   running mean / var norms      rtol 1e-4
 *   parameter sums                rtol 1e-12 (the same floats on both sides)
 * Gradients are not: batch norm over a batch of 2, 50-120 layers deep,
 * amplifies rounding, and PyTorch's own float32 gradients land up to 2.6%
 * from float64 (ResNet-50 at 28x28; 1e-6 for ResNet-18). The fixture
 * records that distance per tensor (d, the larger of float32's and of a
 * perturbed input's), and the lower quartile of its relative value over
 * the model (mu) floors each tensor's: one tensor's d is a single draw
 * of its rounding, and kernels of other machines (AVX2 against AVX-512)
 * sum in other orders. Per tensor, with K = 4,
 *   gradient norm                 |n - n64| <= max(1e-4 n64, K max(d, mu n64))
 *   gradient projection           |p - p64| <= the same * rms(r)
 *     (the error of a projection onto a random vector is ~ |dg| rms(r), so
 *     this asks |dg| <~ K max(d, mu |g|); mu is 4.4e-2 at most, MobileNetV2
 *     at 3x32, where a lost gradient still lands 5 tolerances away, and
 *     below 1e-5 in the shallow models)
 * A tensor whose exact gradient is zero (a conv bias before batch norm, a
 * batch-norm bias whose output feeds only a 1x1 conv and another batch
 * norm) is all rounding: |n - n64| and |p - p64| / rms(r) <= K |g32 - g64| +
 * 1e-7 max|g|. A lost, misplaced or mis-laid-out gradient moves its
 * projection by ~|g| rms(r): 5 tolerances in MobileNetV2 at 3x32, 12 in
 * ResNet-50, 20 and more in ResNet-18 and DenseNet, thousands in the
 * shallow models.
 *
 * --precision bf16 (NAME_CxS_bf16.txt, LeNet at 1x28 and ResNet-18 at 3x32,
 * where the processor has AVX512_BF16 or AMX): the same float64 reference,
 * with PyTorch's CPU autocast-bf16 step standing where its float32 one did
 * (its gradients' distance from float64 is d; LeNet's tensors move by up
 * to 10%, ResNet-18's by up to 50% for a small batch-norm gradient). ddptop
 * rounds the same operands and keeps activations fp32 where autocast keeps
 * them bf16, so its step is held to K = 4 times autocast's distances: the
 * gradients as above; the loss and every logit to K times autocast's loss
 * and largest logit distance (plus the fp32 tolerances), the eval logits
 * alike, the running statistics to K times their largest relative one.
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

#include "device.h"
#include "kernels_cpu.h"
#include "model.h"
#include "zoo.h"

#define LOSS_RTOL 1e-4
#define LOGIT_ATOL 1e-4
#define LOGIT_RTOL 1e-3
#define GRAD_RTOL 1e-4 /* the floor of the gradient tolerance */
#define GRAD_K 4.0     /* times float32's own distance from float64 */
#define ZERO_GRAD 1e-6 /* a gradient below this share of the largest is exactly zero */
#define BN_RTOL 1e-4
#define SUM_RTOL 1e-12

#define MAX_TENSORS 512
#define MAX_LOGITS 64

struct fx_tensor {
    char name[MODEL_MAX_NAME];
    long len;
    double sum, norm, proj; /* float64 */
    double dev32;           /* |g32 - g64| in PyTorch */
    double devp;            /* the largest |g - g64| of the perturbed float64 steps */
};

struct fx_bn {
    char name[MODEL_MAX_NAME];
    double mean_norm, var_norm;
};

struct fixture {
    char model[MODEL_MAX_NAME];
    int c, h, w, batch, classes, nlabels;
    int32_t labels[8];
    unsigned long long param_seed, input_seed, proj_seed, dropout_seed;
    double loss;
    int nlogits, neval;
    double logits[MAX_LOGITS], eval_logits[MAX_LOGITS];
    int ntensors, nbn;
    struct fx_tensor *t;
    struct fx_bn *bn;
    /* bf16 fixtures: autocast's distances from float64 (loss, largest
     * logit, largest eval logit, running statistics relative) */
    double bf_loss, bf_logit, bf_eval, bf_bn;
};

/* ---- the hash both sides use --------------------------------------------- */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* u(seed, k, i) in [0, 1), 24 bits: the script's tensor_uniform. */
static double zoo_uniform(uint64_t seed, int k, size_t i)
{
    uint64_t key = mix(seed + (uint64_t)(k + 1) * 0xd1b54a32d192ed03ULL);
    return (double)(mix(key + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL) >> 40) / 16777216.0;
}

/* ---- loading -------------------------------------------------------------- */
static int expect(FILE *f, const char *key)
{
    char w[64];
    if (fscanf(f, "%63s", w) != 1 || strcmp(w, key) != 0) {
        print_error("fixture: expected '%s', got '%s'\n", key, w);
        return -1;
    }
    return 0;
}

static int read_doubles(FILE *f, const char *key, double *v, int *n, int cap)
{
    if (expect(f, key) || fscanf(f, "%d", n) != 1 || *n < 0 || *n > cap)
        return -1;
    for (int i = 0; i < *n; i++)
        if (fscanf(f, "%lf", &v[i]) != 1)
            return -1;
    return 0;
}

static void load(struct fixture *fx, const char *file, int bf16)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/fixtures/zoo/%s", DDPTOP_TEST_DIR, file);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("missing fixture %s (regenerate with /usr/bin/python3 tests/gen_zoo_fixtures.py)", path);
    memset(fx, 0, sizeof(*fx));
    int ch;
    while ((ch = fgetc(f)) == '#')
        while ((ch = fgetc(f)) != '\n' && ch != EOF)
            ;
    ungetc(ch, f);
    int ok = !expect(f, "model") && fscanf(f, "%63s", fx->model) == 1 && !expect(f, "input") &&
             fscanf(f, "%d %d %d", &fx->c, &fx->h, &fx->w) == 3 && !expect(f, "batch") &&
             fscanf(f, "%d", &fx->batch) == 1 && !expect(f, "classes") && fscanf(f, "%d", &fx->classes) == 1 &&
             !expect(f, "labels") && fscanf(f, "%d", &fx->nlabels) == 1 && fx->nlabels == fx->batch && fx->nlabels <= 8;
    for (int i = 0; ok && i < fx->nlabels; i++)
        ok = fscanf(f, "%d", &fx->labels[i]) == 1;
    ok = ok && !expect(f, "seeds") &&
         fscanf(f, "%llu %llu %llu %llu", &fx->param_seed, &fx->input_seed, &fx->proj_seed, &fx->dropout_seed) == 4 &&
         !expect(f, "loss") && fscanf(f, "%lf", &fx->loss) == 1 &&
         !read_doubles(f, "logits", fx->logits, &fx->nlogits, MAX_LOGITS) && !expect(f, "tensors") &&
         fscanf(f, "%d", &fx->ntensors) == 1 && fx->ntensors > 0 && fx->ntensors <= MAX_TENSORS;
    if (ok) {
        fx->t = calloc((size_t)fx->ntensors, sizeof(*fx->t));
        for (int i = 0; ok && i < fx->ntensors; i++)
            ok = fscanf(f, "%63s %ld %lf %lf %lf %lf %lf", fx->t[i].name, &fx->t[i].len, &fx->t[i].sum, &fx->t[i].norm,
                        &fx->t[i].proj, &fx->t[i].dev32, &fx->t[i].devp) == 7;
    }
    ok = ok && !expect(f, "bnstats") && fscanf(f, "%d", &fx->nbn) == 1 && fx->nbn >= 0 && fx->nbn <= MAX_TENSORS;
    if (ok) {
        fx->bn = calloc((size_t)fx->nbn + 1, sizeof(*fx->bn));
        for (int i = 0; ok && i < fx->nbn; i++)
            ok = fscanf(f, "%63s %lf %lf", fx->bn[i].name, &fx->bn[i].mean_norm, &fx->bn[i].var_norm) == 3;
    }
    ok = ok && !read_doubles(f, "eval_logits", fx->eval_logits, &fx->neval, MAX_LOGITS);
    if (bf16)
        ok = ok && !expect(f, "bf16") &&
             fscanf(f, "%lf %lf %lf %lf", &fx->bf_loss, &fx->bf_logit, &fx->bf_eval, &fx->bf_bn) == 4;
    fclose(f);
    if (!ok)
        fail_msg("malformed fixture %s", path);
}

/* ---- checks ----------------------------------------------------------------- */
/* Worst error as a share of the tolerance, over one kind of check. */
struct worst {
    const char *what;
    double share;
    char where[96];
};

static void note(struct worst *w, double err, double tol, const char *where)
{
    double s = err / tol;
    if (isnan(s) || s > w->share) {
        w->share = isnan(s) ? INFINITY : s;
        snprintf(w->where, sizeof(w->where), "%s", where);
    }
}

static void report(const char *model, struct worst *ws, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        print_message("  %-22s %-24s worst %6.1f%% of tolerance (%s)\n", i == 0 ? model : "", ws[i].what,
                      100.0 * ws[i].share, ws[i].where);
        bad |= !(ws[i].share <= 1.0);
    }
    if (bad)
        fail_msg("%s differs from PyTorch beyond tolerance (see above)", model);
}

static float *layer_bn(struct model *m, const char *name, int which)
{
    for (int i = 0; i < m->nlayers; i++)
        if (!strcmp(m->layers[i].name, name))
            return layer_bn_running(&m->layers[i], which);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run_fixture(const char *file, int bf16)
{
    struct fixture fx;
    load(&fx, file, bf16);
    char err[256];
    /* bf16: a CPU device whose kernels round to bfloat16, as a rank's */
    struct device cpu = {.ops = &device_cpu, .precision = PREC_BF16};
    if (bf16 && cpu.ops->open(&cpu, 0) != 0)
        fail_msg("%s: %s", file, cpu.err);
    struct model *m = zoo_create(bf16 ? &cpu : NULL, fx.model, fx.batch, fx.c, fx.h, fx.w, fx.classes, fx.dropout_seed,
                                 err, sizeof(err));
    if (!m)
        fail_msg("%s: %s", file, err);
    const double K = GRAD_K;
    double loss_tol = LOSS_RTOL * fabs(fx.loss) + (bf16 ? K * fx.bf_loss : 0.0);
    double logit_atol = LOGIT_ATOL + (bf16 ? K * fx.bf_logit : 0.0);
    double eval_atol = LOGIT_ATOL + (bf16 ? K * fx.bf_eval : 0.0);
    double bn_rtol = BN_RTOL + (bf16 ? K * fx.bf_bn : 0.0);
    assert_int_equal(m->nparams, fx.ntensors);

    /* parameters and input from the hash */
    for (int k = 0; k < m->nparams; k++) {
        struct param *p = &m->params[k];
        if (strcmp(p->name, fx.t[k].name) != 0 || (long)p->len != fx.t[k].len)
            fail_msg("%s: tensor %d is %s[%zu] here, %s[%ld] in PyTorch", file, k, p->name, p->len, fx.t[k].name,
                     fx.t[k].len);
        /* He-uniform weights, biases U(+-1/sqrt(fan_in)) with the weight's fan_in */
        const struct param *w = &m->params[m->layers[p->layer].param0];
        double fan_in = (double)(w->len / (size_t)w->shape[0]);
        double bound = p == w ? sqrt(6.0 / fan_in) : 1.0 / sqrt(fan_in);
        float *v = model_param(m, k);
        for (size_t i = 0; i < p->len; i++) {
            double u2 = 2.0 * zoo_uniform(fx.param_seed, k, i) - 1.0;
            v[i] = (float)(p->init == PARAM_INIT_ONE    ? 1.0 + 0.1 * u2
                           : p->init == PARAM_INIT_ZERO ? 0.1 * u2
                                                        : u2 * bound);
        }
    }
    float *x = model_input(m);
    size_t nin = (size_t)fx.batch * fx.c * fx.h * fx.w;
    for (size_t i = 0; i < nin; i++)
        x[i] = (float)(2.0 * zoo_uniform(fx.input_seed, 0, i) - 1.0);

    enum { W_SUM, W_LOSS, W_LOGITS, W_NORM, W_PROJ, W_BN, W_EVAL, W_N };
    struct worst ws[W_N] = {
        {"parameter sums", 0, ""},       {"loss", 0, ""},          {"logits", 0, ""},     {"gradient norms", 0, ""},
        {"gradient projections", 0, ""}, {"running stats", 0, ""}, {"eval logits", 0, ""}};
    char where[96];
    for (int k = 0; k < m->nparams; k++) {
        double s = 0;
        const float *v = model_param(m, k);
        for (size_t i = 0; i < m->params[k].len; i++)
            s += v[i];
        note(&ws[W_SUM], fabs(s - fx.t[k].sum), SUM_RTOL * (fabs(fx.t[k].sum) + 1.0), m->params[k].name);
    }

    int correct;
    if (model_forward(m, 1) != 0)
        fail_msg("%s: forward: %s", file, m->err);
    float loss = model_loss(m, fx.labels, fx.batch, &correct);
    note(&ws[W_LOSS], fabs(loss - fx.loss), loss_tol, "loss");
    assert_int_equal(fx.nlogits, fx.batch * fx.classes);
    const float *z = m->tensors[m->output].val;
    for (int i = 0; i < fx.nlogits; i++) {
        snprintf(where, sizeof(where), "logit %d: %.7g vs %.7g", i, z[i], fx.logits[i]);
        note(&ws[W_LOGITS], fabs(z[i] - fx.logits[i]), logit_atol + LOGIT_RTOL * fabs(fx.logits[i]), where);
    }
    memset(m->grad_buf, 0xff, sizeof(float) * m->nfloats); /* NaN: every gradient must be written */
    if (model_backward(m, 1.0f / (float)fx.batch, NULL, NULL) != 0)
        fail_msg("%s: backward: %s", file, m->err);
    double gmax = 0, rho = 0, rho_med[MAX_TENSORS];
    int nrho = 0;
    for (int k = 0; k < fx.ntensors; k++)
        gmax = fx.t[k].norm > gmax ? fx.t[k].norm : gmax;
    for (int k = 0; k < fx.ntensors; k++)
        if (fx.t[k].norm >= ZERO_GRAD * gmax) {
            double d = fmax(fx.t[k].dev32, fx.t[k].devp) / fx.t[k].norm;
            rho = d > rho ? d : rho;
            rho_med[nrho++] = d;
        }
    /* one tensor's float32 distance is a single draw of its rounding
     * error; the model's lower quartile of relative distances floors it
     * (summation orders differ by machine: AVX2 and AVX-512 kernels round
     * differently) */
    qsort(rho_med, (size_t)nrho, sizeof(double), cmp_double);
    double mu = nrho > 0 ? rho_med[nrho / 4] : 0.0;
    print_message("  PyTorch: %s and perturbed-input gradients within %.1e of float64 (lower quartile %.1e)\n",
                  bf16 ? "autocast-bf16" : "float32", rho, mu);
    for (int k = 0; k < m->nparams; k++) {
        const float *g = model_grad(m, k);
        double ss = 0, proj = 0, rr = 0;
        for (size_t i = 0; i < m->params[k].len; i++) {
            double r = 2.0 * zoo_uniform(fx.proj_seed, k, i) - 1.0;
            ss += (double)g[i] * g[i];
            proj += g[i] * r;
            rr += r * r;
        }
        double norm = sqrt(ss), rms = sqrt(rr / (double)m->params[k].len);
        double dev = fmax(fmax(fx.t[k].dev32, fx.t[k].devp), mu * fx.t[k].norm);
        double tol = fmax(GRAD_RTOL * fx.t[k].norm, GRAD_K * dev) + 1e-7 * gmax;
        snprintf(where, sizeof(where), "%s: %.7g vs %.7g", m->params[k].name, norm, fx.t[k].norm);
        note(&ws[W_NORM], fabs(norm - fx.t[k].norm), tol, where);
        snprintf(where, sizeof(where), "%s: %.7g vs %.7g", m->params[k].name, proj, fx.t[k].proj);
        note(&ws[W_PROJ], fabs(proj - fx.t[k].proj), tol * rms, where);
    }
    int nbn = 0;
    for (int i = 0; i < m->nlayers; i++)
        nbn += layer_bn_running(&m->layers[i], 0) != NULL;
    assert_int_equal(nbn, fx.nbn);
    for (int i = 0; i < fx.nbn; i++) {
        const float *rm = layer_bn(m, fx.bn[i].name, 0), *rv = layer_bn(m, fx.bn[i].name, 1);
        if (!rm || !rv)
            fail_msg("%s: no batch norm layer named %s", file, fx.bn[i].name);
        int C = 0;
        for (int l = 0; l < m->nlayers; l++)
            if (!strcmp(m->layers[l].name, fx.bn[i].name))
                C = m->tensors[m->layers[l].out].c;
        double a = 0, b = 0;
        for (int c = 0; c < C; c++) {
            a += (double)rm[c] * rm[c];
            b += (double)rv[c] * rv[c];
        }
        snprintf(where, sizeof(where), "%s mean", fx.bn[i].name);
        note(&ws[W_BN], fabs(sqrt(a) - fx.bn[i].mean_norm), bn_rtol * fx.bn[i].mean_norm + 1e-12, where);
        snprintf(where, sizeof(where), "%s var", fx.bn[i].name);
        note(&ws[W_BN], fabs(sqrt(b) - fx.bn[i].var_norm), bn_rtol * fx.bn[i].var_norm, where);
    }
    if (model_forward(m, 0) != 0)
        fail_msg("%s: eval forward: %s", file, m->err);
    assert_int_equal(fx.neval, fx.nlogits);
    for (int i = 0; i < fx.neval; i++) {
        snprintf(where, sizeof(where), "logit %d: %.7g vs %.7g", i, z[i], fx.eval_logits[i]);
        note(&ws[W_EVAL], fabs(z[i] - fx.eval_logits[i]), eval_atol + LOGIT_RTOL * fabs(fx.eval_logits[i]), where);
    }
    char label[MODEL_MAX_NAME + 32];
    snprintf(label, sizeof(label), "%s %dx%d%s", fx.model, fx.c, fx.h, bf16 ? " bf16" : "");
    report(label, ws, W_N);
    model_destroy(m);
    if (bf16)
        cpu.ops->close(&cpu);
    free(fx.t);
    free(fx.bn);
}

#define FIXTURE_TEST(name)                                                                                             \
    static void test_##name##_28(void **state)                                                                         \
    {                                                                                                                  \
        run_fixture(#name "_1x28.txt", 0);                                                                             \
    }                                                                                                                  \
    static void test_##name##_32(void **state)                                                                         \
    {                                                                                                                  \
        run_fixture(#name "_3x32.txt", 0);                                                                             \
    }

FIXTURE_TEST(mlp)
FIXTURE_TEST(lenet)
FIXTURE_TEST(alexnet)
FIXTURE_TEST(vgg11)
FIXTURE_TEST(vgg16)
FIXTURE_TEST(resnet18)
FIXTURE_TEST(resnet50)
FIXTURE_TEST(squeezenet1_0)
FIXTURE_TEST(densenet121)
FIXTURE_TEST(mobilenetv2)

#define BOTH(name) cmocka_unit_test(test_##name##_28), cmocka_unit_test(test_##name##_32)

/* bf16 where the processor multiplies bfloat16 itself: the case
 * `test_zoo_fixtures bf16` (elsewhere it exits 77: the run refuses bf16
 * there) */
static void bf16_fixture(const char *file)
{
    run_fixture(file, 1);
}

static void test_lenet_28_bf16(void **state)
{
    bf16_fixture("lenet_1x28_bf16.txt");
}

static void test_resnet18_32_bf16(void **state)
{
    bf16_fixture("resnet18_3x32_bf16.txt");
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
        const struct CMUnitTest bf16[] = {
            cmocka_unit_test(test_lenet_28_bf16),
            cmocka_unit_test(test_resnet18_32_bf16),
        };
        return cmocka_run_group_tests(bf16, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        BOTH(mlp),      BOTH(lenet),    BOTH(alexnet),       BOTH(vgg11),       BOTH(vgg16),
        BOTH(resnet18), BOTH(resnet50), BOTH(squeezenet1_0), BOTH(densenet121), BOTH(mobilenetv2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
