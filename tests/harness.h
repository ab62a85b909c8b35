/* harness.h - helpers shared by the integration tests: run one
 * configuration to the end through the same API the binary uses. */
#ifndef DDPTOP_TEST_HARNESS_H
#define DDPTOP_TEST_HARNESS_H

#include <string.h>
#include <time.h>

#include "config.h"
#include "data.h"
#include "devices.h"
#include "pipeline.h"
#include "run.h"
#include "strategy.h"

/* The data set the integration tests train on: synthetic, seed 7, loaded
 * once per test group (cmocka's group setup and teardown). */
static struct dataset g_train, g_test;

static inline int harness_data_setup(void **state)
{
    (void)state;
    char err[256];
    return data_load("synthetic", NULL, 7, &g_train, &g_test, err, sizeof(err));
}

static inline int harness_data_teardown(void **state)
{
    (void)state;
    data_free(&g_train);
    data_free(&g_test);
    return 0;
}

/* Steps for a check that holds at any count (parameters against
 * another run's, replicas alike, bytes per step): n, or under
 * ThreadSanitizer, where each step costs some fifty Release ones, a
 * quarter of n and at least 4. TSan looks for races between the threads,
 * which every step repeats alike, so four steps see what twenty would. */
#if defined(__SANITIZE_THREAD__)
#define HARNESS_STEPS(n) ((n) / 4 > 4 ? (n) / 4 : 4)
#else
#define HARNESS_STEPS(n) (n)
#endif

/* A run_config as the CLI would make it with no options. */
static inline struct run_config harness_config(const char *model, int strategy, int ranks, int batch, long steps)
{
    struct config cfg;
    char *argv[] = {"ddptop", NULL};
    config_parse(&cfg, 1, argv, NULL, NULL);
    struct run_config rc;
    config_expand(&cfg, 0, &rc);
    snprintf(rc.model, sizeof(rc.model), "%s", model);
    rc.strategy = strategy;
    rc.ranks = ranks;
    rc.batch_size = batch;
    rc.steps = steps;
    rc.eval = 0;
    rc.threads_per_rank = 1;
    return rc;
}

/* LeNet in 2 stages (layers 0-2 and the rest, a fixed cut: a measured
 * partition may differ from run to run) as model parallelism, GPipe with
 * 4 micro-batches and 1F1B with 2: case k of HARNESS_STAGED_CASES. */
#define HARNESS_STAGED_CASES 3
static inline struct run_config harness_staged(int k, long steps)
{
    static const struct {
        int parallel, micro, schedule;
    } cases[HARNESS_STAGED_CASES] = {
        {PAR_MODEL, 1, SCHED_GPIPE}, {PAR_PIPELINE, 4, SCHED_GPIPE}, {PAR_PIPELINE, 2, SCHED_1F1B}};
    struct run_config rc = harness_config("lenet", STRAT_ALLREDUCE, 2, 32, steps);
    rc.parallel = cases[k].parallel;
    rc.micro_batches = cases[k].micro;
    rc.schedule = cases[k].schedule;
    snprintf(rc.partition, sizeof(rc.partition), "0:2,3:");
    return rc;
}

/* Runs rc to the end on device dev; the caller inspects r, then run_free(r). */
static inline int harness_run_on(struct run *r, const struct run_config *rc, const struct dataset *tr,
                                 const struct dataset *te, const struct device_ops *dev)
{
    char err[256];
    if (run_start(r, rc, tr, te, dev, err, sizeof(err)) != 0) {
        fprintf(stderr, "run_start: %s\n", err);
        run_request_stop(r);
        run_join(r);
        return -1;
    }
    struct timespec tick = {0, 2 * 1000 * 1000};
    while (run_poll(r))
        nanosleep(&tick, NULL);
    return run_join(r);
}

/* GPU 0, opened once for the tests that build models on it directly, or
 * NULL when there is no GPU (or no GPU module). */
static inline struct device *harness_gpu(void)
{
    static struct device d;
    static int tried;
    const struct gpu_module *g = gpu_module();
    if (!tried && g && g->device->count() > 0) {
        d.ops = g->device;
        if (d.ops->open(&d, 0) != 0) {
            fprintf(stderr, "opening GPU 0: %s\n", d.err);
            d.ops = NULL;
        }
    }
    tried = 1;
    return d.ops ? &d : NULL;
}

/* The number of GPUs (0 without a GPU module). */
static inline int harness_ngpus(void)
{
    const struct gpu_module *g = gpu_module();
    return g ? g->device->count() : 0;
}

/* The same on the CPU. */
static inline int harness_run(struct run *r, const struct run_config *rc, const struct dataset *tr,
                              const struct dataset *te)
{
    return harness_run_on(r, rc, tr, te, &device_cpu);
}

/* After an overflow at `step` under --loss-scale dynamic (interval 5, 20
 * steps, from 2^16) on 2 ranks: every step ran, each rank skipped that one
 * update alone, and its scale halved there and grew back to 2^18 (the
 * includer has cmocka). */
static inline void harness_expect_one_skip(const struct run *r, size_t step)
{
    assert_int_equal(r->metrics.steps_done, 20);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r->metrics.r[i].nskipped, 1);
        assert_int_equal(r->metrics.r[i].step_skipped[metrics_slot(step)], 1);
        assert_true(r->metrics.r[i].loss_scale == 0x1p18f);
    }
}

#endif
