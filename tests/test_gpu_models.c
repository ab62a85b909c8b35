/* test_gpu_models.c - whole models and whole runs on a GPU (CTest label
 * `gpu`). Without a GPU the program reports SKIPPED (exit 77) and tests
 * nothing.
 *
 *  - every zoo model, so every layer type (linear; convolution with groups,
 *    depthwise and stride; ReLU, ReLU6; max-pool incl. ceil_mode; average,
 *    adaptive and global pooling; batch norm; dropout; add; concat; pad):
 *    a training forward, the loss, backward and an evaluation forward on a
 *    GPU model against the same model on the CPU, same seed and inputs.
 *    Parameters start bitwise equal; then per tensor the relative L2 error
 *    ||gpu - cpu|| / ||cpu|| must stay within 1e-3 for logits and loss,
 *    5e-3 for gradients and batch norm's running statistics (fp32 on both
 *    sides, no TF32; cuDNN's and oneDNN's algorithms sum in other orders and
 *    deep models compound it). The measured errors are printed.
 *  - runs through the real rank loop on GPU 0 shared by 2 ranks (ddptop's
 *    device ring), with every strategy (dp, gather-scatter, allreduce, ddp): parameters bitwise identical on both
 *    ranks after every step, equal to `single` on the whole batch within
 *    1e-4, CUPTI device spans on every rank with a breakdown that sums to
 *    wall time and shows compute and comm; the header note names the
 *    shared GPU.
 *  - the same with NCCL when there are 2 GPUs (skipped with one).
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "kernels_cpu.h"
#include "model.h"
#include "rng.h"
#include "strategy.h"
#include "zoo.h"

static int g_ngpus;

/* ||a - b|| / ||b|| (b the CPU's), 0 when both are zero. */
static double rel_l2(const float *a, const float *b, size_t n)
{
    double d = 0, nb = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        nb += (double)b[i] * b[i];
    }
    return nb > 0 ? sqrt(d / nb) : sqrt(d);
}

static float *host_copy(struct model *m, const void *src, size_t floats)
{
    float *h = malloc(sizeof(float) * (floats ? floats : 1));
    assert_non_null(h);
    if (model_memcpy(m, h, src, sizeof(float) * floats) != 0)
        fail_msg("copying back: %s", m->err);
    return h;
}

static void within(const char *model, const char *what, double err, double tol, double *worst)
{
    if (err > *worst)
        *worst = err;
    if (!(err <= tol))
        fail_msg("%s: %s differs from the CPU by %.3g (relative L2; tolerance %g)", model, what, err, tol);
}

static void compare_model(const char *name, int c, int hw)
{
    const int B = 8, K = 10;
    char err[256];
    struct model *mc = model_create(name, B, c, hw, hw, K, 11, err, sizeof(err));
    if (!mc)
        fail_msg("%s on the CPU: %s", name, err);
    struct model_device dev = {NULL, 0, 0};
    struct model *mg = model_create_on(&dev, name, B, c, hw, hw, K, 11, err, sizeof(err));
    if (!mg)
        fail_msg("%s on the GPU: %s", name, err);
    assert_int_equal(mg->nparams, mc->nparams);
    assert_int_equal(mg->nfloats, mc->nfloats);
    assert_true(model_flops(mg) == model_flops(mc));

    /* the same generator on both devices: bitwise equal parameters */
    float *p = host_copy(mg, mg->param_buf, mg->nfloats);
    assert_memory_equal(p, mc->param_buf, sizeof(float) * mc->nfloats);
    free(p);

    size_t nin = (size_t)B * c * hw * hw;
    float *x = malloc(sizeof(float) * nin);
    assert_non_null(x);
    struct rng r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < nin; i++)
        x[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
    memcpy(model_input(mc), x, sizeof(float) * nin);
    assert_int_equal(model_memcpy(mg, model_input(mg), x, sizeof(float) * nin), 0);
    free(x);
    int32_t labels[8];
    for (int i = 0; i < B; i++)
        labels[i] = (int32_t)((i * 7 + 3) % K);

    double worst_fwd = 0, worst_grad = 0, worst_bn = 0;
    assert_int_equal(model_forward(mc, 1), 0);
    if (model_forward(mg, 1) != 0)
        fail_msg("%s: GPU forward: %s", name, mg->err);
    float lc = model_loss(mc, labels, B, NULL), lg = model_loss(mg, labels, B, NULL);
    within(name, "loss", fabs((double)lg - lc) / fabs((double)lc), 1e-3, &worst_fwd);
    float *lo = host_copy(mg, mg->tensors[mg->output].val, (size_t)B * K);
    within(name, "training logits", rel_l2(lo, mc->tensors[mc->output].val, (size_t)B * K), 1e-3, &worst_fwd);
    free(lo);

    assert_int_equal(model_backward(mc, 1.0f / (float)B, NULL, NULL), 0);
    if (model_backward(mg, 1.0f / (float)B, NULL, NULL) != 0)
        fail_msg("%s: GPU backward: %s", name, mg->err);
    float *g = host_copy(mg, mg->grad_buf, mg->nfloats);
    for (int i = 0; i < mc->nparams; i++) {
        const struct param *pp = &mc->params[i];
        char what[96];
        snprintf(what, sizeof(what), "gradient of %s", pp->name);
        within(name, what, rel_l2(g + pp->off, mc->grad_buf + pp->off, pp->len), 5e-3, &worst_grad);
    }
    free(g);

    /* batch norm's running statistics, matched by layer name (the CPU model
     * has layout conversions the GPU model does not) */
    int nbn = 0;
    for (int i = 0; i < mc->nlayers; i++) {
        float *cm = layer_bn_running(&mc->layers[i], 0);
        if (!cm)
            continue;
        for (int j = 0; j < mg->nlayers; j++)
            if (!strcmp(mg->layers[j].name, mc->layers[i].name)) {
                int C = mc->tensors[mc->layers[i].out].c;
                for (int which = 0; which < 2; which++) {
                    float *gm = host_copy(mg, layer_bn_running(&mg->layers[j], which), (size_t)C);
                    char what[96];
                    snprintf(what, sizeof(what), "running %s of %s", which ? "variance" : "mean", mc->layers[i].name);
                    within(name, what, rel_l2(gm, layer_bn_running(&mc->layers[i], which), (size_t)C), 5e-3, &worst_bn);
                    free(gm);
                }
                nbn++;
            }
    }

    /* evaluation mode: dropout off, batch norm on the running statistics */
    assert_int_equal(model_forward(mc, 0), 0);
    if (model_forward(mg, 0) != 0)
        fail_msg("%s: GPU evaluation forward: %s", name, mg->err);
    lo = host_copy(mg, mg->tensors[mg->output].val, (size_t)B * K);
    within(name, "evaluation logits", rel_l2(lo, mc->tensors[mc->output].val, (size_t)B * K), 1e-3, &worst_fwd);
    free(lo);
    printf("  %-12s %dx%dx%d: worst relative error forward %.2e, gradients %.2e, %d batch norms %.2e\n", name, c, hw,
           hw, worst_fwd, worst_grad, nbn, worst_bn);
    model_destroy(mg);
    model_destroy(mc);
}

static void test_zoo_against_cpu(void **state)
{
    for (int i = 0; i < zoo_count; i++) {
        const char *n = zoo_models[i].name;
        /* the MNIST-sized models at 28x28, everything at CIFAR's 32x32 */
        if (!strcmp(n, "mlp") || !strcmp(n, "lenet"))
            compare_model(n, 1, 28);
        compare_model(n, 3, 32);
    }
}

/* ---- runs through the rank loop ---------------------------------------------- */

static struct dataset g_train, g_test;

static int run_on_gpu(struct run *r, const struct run_config *rc)
{
    return harness_run_on(r, rc, &g_train, &g_test, device_cuda);
}

static float *rank_params(struct run *r, int i)
{
    r->ranks[i].dev.ops->make_current(&r->ranks[i].dev);
    struct model *m = r->ranks[i].model;
    return host_copy(m, m->param_buf, m->nfloats);
}

/* 2 ranks on `gpus` GPUs: identical replicas, = single, a device breakdown. */
static void gpu_runs(int ngpus, const char *want_backend)
{
    struct run_config ref_rc = harness_config("lenet", STRAT_SINGLE, 2, 32, 20);
    ref_rc.ngpus = 1;
    struct run ref;
    assert_int_equal(run_on_gpu(&ref, &ref_rc), 0);
    assert_int_equal(ref.local_batch, 64);
    float *pref = rank_params(&ref, 0);
    size_t n = ref.ranks[0].model->nfloats;

    const int strategies[] = {STRAT_DP, STRAT_GATHER_SCATTER, STRAT_ALLREDUCE, STRAT_DDP};
    for (int s = 0; s < 4; s++) {
        struct run_config rc = harness_config("lenet", strategies[s], 2, 32, 20);
        rc.check_replicas = 1;
        rc.bucket_mb = 0.05f; /* several buckets for LeNet */
        rc.ngpus = ngpus;
        for (int k = 0; k < ngpus; k++)
            rc.gpus[k] = k;
        struct run r;
        assert_int_equal(run_on_gpu(&r, &rc), 0);
        printf("  %s on %d GPU(s): backend %s; note: %s\n", strategy_name(strategies[s]), ngpus, r.backend,
               r.note[0] ? r.note : "(none)");
        assert_non_null(strstr(r.backend, want_backend));
        if (ngpus == 1)
            assert_non_null(strstr(r.note, "share"));
        assert_int_equal(r.metrics.steps_done, 20);
        assert_true(r.metrics.replicas_checked);
        if (r.metrics.replicas_diverged_at >= 0)
            fail_msg("%s: replicas differ from step %ld", strategy_name(strategies[s]), r.metrics.replicas_diverged_at);
        float *p0 = rank_params(&r, 0), *p1 = rank_params(&r, 1);
        assert_memory_equal(p0, p1, sizeof(float) * n);
        double d = rel_l2(p0, pref, n);
        printf("  %s vs single: relative difference %.3g\n", strategy_name(strategies[s]), d);
        if (!(d < 1e-4))
            fail_msg("%s on the GPU differs from single by %.3g", strategy_name(strategies[s]), d);
        free(p0);
        free(p1);

        assert_true(r.cupti);
        for (int k = 0; k < r.world; k++) {
            const struct rank_metrics *rm = &r.metrics.r[k];
            const struct breakdown *b = &rm->total;
            printf("  rank %d device view: compute %.2f ms, comm %.2f ms, data %.2f ms, idle %.2f ms of %.2f ms\n", k,
                   b->compute_ns / 1e6, b->comm_ns / 1e6, b->data_ns / 1e6, b->idle_ns / 1e6, b->wall_ns / 1e6);
            assert_true(rm->gpu_view);
            assert_true(b->compute_ns + b->comm_ns + b->data_ns + b->idle_ns == b->wall_ns);
            assert_true(b->compute_ns > 0);
            assert_true(b->comm_ns > 0 || b->comm_union_ns > 0);
        }
        run_free(&r);
    }
    free(pref);
    run_free(&ref);
}

static void test_shared_gpu_runs(void **state)
{
    gpu_runs(1, "shared GPU");
}

static void test_nccl_runs(void **state)
{
    if (g_ngpus < 2)
        skip();
    gpu_runs(2, "nccl");
}

int main(void)
{
    if (cudaGetDeviceCount(&g_ngpus) != cudaSuccess || g_ngpus == 0) {
        printf("no GPU: the GPU model tests are skipped\n");
        return 77;
    }
    cudaSetDevice(0);
    cpu_set_threads(4);
    char err[256];
    if (data_load("synthetic", NULL, 7, &g_train, &g_test, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_against_cpu),
        cmocka_unit_test(test_shared_gpu_runs),
        cmocka_unit_test(test_nccl_runs),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    data_free(&g_train);
    data_free(&g_test);
    return rc;
}
