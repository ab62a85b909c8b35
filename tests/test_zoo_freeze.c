/* test_zoo_freeze.c - --trainable through the real run (rank threads, shm
 * ring, strategies, report): frozen parameters are neither trained nor
 * communicated. VGG-11 on 2 ranks with allreduce, then ddp, for 2 steps on
 * synthetic 1x28x28 data with --trainable classifier must send exactly the
 * classifier's gradients: per rank per step 2(W-1)/W x (512*10 + 10)
 * floats x 4 bytes (a ring allreduce of n floats sends 2(W-1)/W n), as the
 * report's bytes per step shows; the frozen parameters stay at their initial
 * values on every rank and the classifier moves. With everything trainable
 * the same run sends all 9.2M parameters' worth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "harness.h"
#include "model.h"
#include "zoo.h"
#include "report.h"
#include "strategy.h"

#define STEPS 2
#define WORLD 2

/* Runs vgg11 on WORLD ranks for STEPS steps; returns bytes sent per rank per
 * step and checks the parameters. */
static double run_vgg(int strategy, const char *trainable, size_t *trainable_floats)
{
    struct run_config rc = harness_config("vgg11", strategy, WORLD, 2, STEPS);
    snprintf(rc.trainable, sizeof(rc.trainable), "%s", trainable);
    rc.bucket_mb = 25.0f;
    rc.broadcast_buffers = 0; /* the gradients' bytes alone (batch norm's statistics would add rank 0's) */
    struct run r;
    assert_int_equal(harness_run(&r, &rc, &g_train, &g_test), 0);
    assert_int_equal(r.metrics.steps_done, STEPS);
    const struct model *m0 = r.ranks[0].model;
    *trainable_floats = model_trainable_floats(m0);
    assert_int_equal(r.ranks[0].nparams_trainable, *trainable_floats);
    assert_int_equal(r.ranks[0].nparams_total, m0->nfloats);

    /* frozen: still the initial values (a fresh model with the run's seed) */
    char err[256];
    struct model *init = zoo_create(NULL, "vgg11", 2, 1, 28, 28, 10, rc.seed, err, sizeof(err));
    assert_non_null(init);
    for (int p = 0; p < m0->nparams; p++) {
        const struct param *q = &m0->params[p];
        int same = !memcmp(model_param((struct model *)m0, p), model_param(init, p), q->len * sizeof(float));
        if (q->trainable == same)
            fail_msg("%s: %s %s after training", trainable, q->name, q->trainable ? "did not move" : "moved");
    }
    for (int k = 1; k < WORLD; k++)
        assert_memory_equal(r.ranks[k].model->param_buf, m0->param_buf, m0->nfloats * sizeof(float));
    model_destroy(init);

    struct run_result res;
    assert_int_equal(result_from_run(&res, &r), 0);
    for (int k = 0; k < WORLD; k++)
        assert_int_equal(res.ranks[k].traffic.tx, res.ranks[0].traffic.tx);
    assert_int_equal(res.params_trainable, *trainable_floats);
    double per_step = (double)res.traffic.tx / STEPS;
    print_message("  vgg11 %s --trainable %s: %zu of %zu parameters train, %.0f bytes sent per rank per step\n",
                  strategy_name(strategy), trainable, *trainable_floats, m0->nfloats, per_step);
    result_free(&res);
    run_free(&r);
    return per_step;
}

static void test_classifier_moves_only_its_bytes(void **state)
{
    const int strategies[] = {STRAT_ALLREDUCE, STRAT_DDP};
    for (size_t s = 0; s < 2; s++) {
        size_t n;
        double bytes = run_vgg(strategies[s], "classifier", &n);
        assert_int_equal(n, 512 * 10 + 10);
        double want = 2.0 * (WORLD - 1) / WORLD * (double)n * sizeof(float);
        if (bytes != want)
            fail_msg("%s: %.0f bytes per rank per step, want %.0f (the classifier's gradients only)",
                     strategy_name(strategies[s]), bytes, want);
    }
}

static void test_all_trainable_moves_everything(void **state)
{
    size_t n;
    double bytes = run_vgg(STRAT_ALLREDUCE, "all", &n);
    assert_int_equal(n, 9229962);
    assert_true(bytes == 2.0 * (WORLD - 1) / WORLD * (double)n * sizeof(float));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classifier_moves_only_its_bytes),
        cmocka_unit_test(test_all_trainable_moves_everything),
    };
    return cmocka_run_group_tests(tests, harness_data_setup, harness_data_teardown);
}
