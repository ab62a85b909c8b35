/* test_predict.c - the --predict step model (src/predict.h) on a hand-made
 * model whose answer is worked out here by hand: three gradient tensors of
 * 100, 200 and 50 floats, final 4.0, 2.0 and 1.0 ms into a 4 ms backward,
 * a 3 ms forward, 0.5 ms of the rest, and a link of 100 us + 1 us/byte.
 *   allreduce: 0.5 + 0.9 + 0.3 ms of allreduces after backward:
 *              3 + 4 + 1.7 + 0.5 = 9.2 ms;
 *   ddp, 1000-byte buckets: {tensors 2,1} (1000 B, ready at 2.0, ends
 *              3.1), {tensor 0} (400 B, ready at 4.0, ends 4.5): 0.5 ms
 *              exposed, 8.0 ms; without overlap both after backward,
 *              1.6 ms exposed, 9.1 ms;
 *   a frozen tensor is not reduced; dp is not modelled (negative);
 *   --link 1 GB/s, 5 us on 4 ranks: 2(K-1) x 5 us = 30 us and
 *              2(K-1)/(K x 1 GB/s) = 1.5 ps/byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model.h"
#include "predict.h"
#include "zoo.h"
#include "strategy.h"

static const double ready[3] = {4.0, 2.0, 1.0};
static struct grad_tensor t[3];
static double cycle_ms; /* horovod's --cycle-ms */

/* A strategy's step with its buffers capped at cap bytes (ddp's buckets,
 * horovod's fusion buffer). */
static double step(const struct predict_input *in, int strategy, const struct predict_link *l, size_t cap, int overlap,
                   double *comm, double *exposed)
{
    struct sync_params p = {.bucket_bytes = cap, .overlap = overlap, .fusion_bytes = cap, .cycle_ms = cycle_ms};
    return predict_step(in, strategy, l, &p, comm, exposed);
}

static struct predict_input input(const int *trainable)
{
    static const size_t len[3] = {100, 200, 50};
    size_t off = 0;
    for (int p = 0; p < 3; p++) {
        t[p] = (struct grad_tensor){off, len[p], trainable[p]};
        off += len[p];
    }
    cycle_ms = 0;
    return (struct predict_input){.fwd_ms = 3.0, .bwd_ms = 4.0, .rest_ms = 0.5, .n = 3, .t = t, .ready_ms = ready};
}

static void test_allreduce_and_ddp(void **state)
{
    const int all[3] = {1, 1, 1};
    struct predict_input in = input(all);
    struct predict_link l = {.alpha_us = 100.0, .beta_us_per_byte = 1.0};
    double comm, exposed;
    assert_float_equal(step(&in, STRAT_ALLREDUCE, &l, 1000, 1, &comm, &exposed), 9.2, 1e-12);
    assert_float_equal(comm, 1.7, 1e-12);
    assert_float_equal(exposed, 1.7, 1e-12);
    assert_float_equal(step(&in, STRAT_DDP, &l, 1000, 1, &comm, &exposed), 8.0, 1e-12);
    assert_float_equal(comm, 1.6, 1e-12);
    assert_float_equal(exposed, 0.5, 1e-12);
    assert_float_equal(step(&in, STRAT_DDP, &l, 1000, 0, &comm, &exposed), 9.1, 1e-12);
    assert_float_equal(exposed, 1.6, 1e-12);
    /* one bucket for all: ready only at the end of backward */
    assert_float_equal(step(&in, STRAT_DDP, &l, 1 << 20, 1, &comm, &exposed), 3 + 4 + (0.1 + 1.4) + 0.5, 1e-12);
    assert_true(step(&in, STRAT_DP, &l, 1000, 1, &comm, &exposed) < 0);
}

/* A --bench-comm fit of two regimes: 100 us + 1 us/B below 512 B, 50 us +
 * 2 us/B from 512 B on. Each message takes its size's regime:
 *   allreduce: tensor 0 (400 B) 0.5 ms, tensor 1 (800 B) 50 + 1600 us =
 *              1.65 ms, tensor 2 (200 B) 0.3 ms: 2.45 ms after backward,
 *              3 + 4 + 2.45 + 0.5 = 9.95 ms;
 *   ddp, 1000-byte buckets: {tensors 2,1} (1000 B: 50 + 2000 us, ready at
 *              2.0, ends 4.05), {tensor 0} (400 B: 0.5 ms, from 4.05 to
 *              4.55): 2.55 ms of allreduces, 0.55 exposed, 8.05 ms.
 * (The first regime alone would give 9.2 and 8.0, as above.) */
static void test_regimes(void **state)
{
    const int all[3] = {1, 1, 1};
    struct predict_input in = input(all);
    struct cost_fit f = {.alpha_us = 100.0, .beta_us_per_byte = 1.0, .nmore = 1, .more = {{512, 50.0, 2.0}}};
    struct predict_link l = predict_link_of(&f);
    double comm, exposed;
    assert_float_equal(step(&in, STRAT_ALLREDUCE, &l, 1000, 1, &comm, &exposed), 9.95, 1e-12);
    assert_float_equal(comm, 2.45, 1e-12);
    assert_float_equal(step(&in, STRAT_DDP, &l, 1000, 1, &comm, &exposed), 8.05, 1e-12);
    assert_float_equal(comm, 2.55, 1e-12);
    assert_float_equal(exposed, 0.55, 1e-12);
}

/* Horovod: a cycle of 1.5 ms wakes the lane at 1.5 (tensor 2 final: 200 B),
 * 3.0 (tensor 1: 800 B) and 4.5 (tensor 0: 400 B), each wake negotiating
 * first (3 floats, 0.112 ms): the lane ends at 5.112, 1.112 after
 * backward. A 5 ms cycle wakes once with all three final, fused into 1000
 * bytes (tensors 2 and 1) and 400 (tensor 0). Gather-scatter: every
 * trainable byte gathered, then broadcast. */
static void test_horovod_and_gather_scatter(void **state)
{
    const int all[3] = {1, 1, 1};
    struct predict_input in = input(all);
    struct predict_link l = {.alpha_us = 100.0, .beta_us_per_byte = 1.0};
    double comm, exposed;
    cycle_ms = 1.5;
    assert_float_equal(step(&in, STRAT_HOROVOD, &l, 1000, 1, &comm, &exposed), 8.612, 1e-12);
    assert_float_equal(comm, 2.036, 1e-12);
    assert_float_equal(exposed, 1.112, 1e-12);
    cycle_ms = 5.0;
    assert_float_equal(step(&in, STRAT_HOROVOD, &l, 1000, 1, &comm, &exposed), 10.212, 1e-12);
    assert_float_equal(comm, 1.712, 1e-12);
    assert_true(step(&in, STRAT_GATHER_SCATTER, &l, 1000, 1, &comm, &exposed) < 0); /* no costs */
    struct predict_link g = {.alpha_us = 100.0, .beta_us_per_byte = 1.0},
                        b = {.alpha_us = 50.0, .beta_us_per_byte = 0.5};
    in.gather = &g;
    in.broadcast = &b;
    assert_float_equal(step(&in, STRAT_GATHER_SCATTER, &l, 1000, 1, &comm, &exposed), 9.75, 1e-12);
    assert_float_equal(comm, 2.25, 1e-12);
    /* dp: inputs scattered (1000 B), logits gathered and their gradients
     * scattered (100 B each way), gradients reduced (1400 B), parameters
     * broadcast (1400 B) */
    assert_true(step(&in, STRAT_DP, &l, 1000, 1, &comm, &exposed) < 0); /* no scatter, no reduce */
    struct predict_link sc = {.alpha_us = 10.0, .beta_us_per_byte = 0.1},
                        rd = {.alpha_us = 20.0, .beta_us_per_byte = 0.2};
    in.scatter = &sc;
    in.reduce = &rd;
    in.input_bytes = 1000;
    in.output_bytes = 100;
    double want = (0.01 + 0.1) + (0.1 + 0.1) + (0.01 + 0.01) + (0.02 + 0.28) + (0.05 + 0.7);
    assert_float_equal(step(&in, STRAT_DP, &l, 1000, 1, &comm, &exposed), 3 + 4 + want + 0.5, 1e-12);
    assert_float_equal(comm, want, 1e-12);
}

/* Gradients on the wire in 16 bits (grad_bytes 2): every allreduce moves
 * half the bytes. allreduce: 200, 400 and 100 B: 0.3 + 0.5 + 0.2 = 1.0 ms,
 * 8.5 ms; ddp: the same buckets (filled by fp32 size), 500 B ready at 2.0
 * ends 2.6, 200 B ready at 4.0 ends 4.3: 0.3 exposed, 7.8 ms; horovod at a
 * 5 ms cycle: the negotiation stays fp32 (0.112), then 500 B and 200 B:
 * ends 6.012, 2.012 exposed, 9.512 ms. Gather-scatter does not compress. */
static void test_wire16(void **state)
{
    const int all[3] = {1, 1, 1};
    struct predict_input in = input(all);
    struct predict_link l = {.alpha_us = 100.0, .beta_us_per_byte = 1.0};
    double comm, exposed;
    in.grad_bytes = 2;
    assert_float_equal(step(&in, STRAT_ALLREDUCE, &l, 1000, 1, &comm, &exposed), 8.5, 1e-12);
    assert_float_equal(comm, 1.0, 1e-12);
    assert_float_equal(step(&in, STRAT_DDP, &l, 1000, 1, &comm, &exposed), 7.8, 1e-12);
    assert_float_equal(comm, 0.9, 1e-12);
    assert_float_equal(exposed, 0.3, 1e-12);
    cycle_ms = 5.0;
    assert_float_equal(step(&in, STRAT_HOROVOD, &l, 1000, 1, &comm, &exposed), 9.512, 1e-12);
    assert_float_equal(comm, 1.012, 1e-12);
    struct predict_link g = {.alpha_us = 100.0, .beta_us_per_byte = 1.0},
                        b = {.alpha_us = 50.0, .beta_us_per_byte = 0.5};
    in.gather = &g;
    in.broadcast = &b;
    assert_float_equal(step(&in, STRAT_GATHER_SCATTER, &l, 1000, 1, &comm, &exposed), 9.75, 1e-12);
    in.grad_bytes = 4; /* = 0: fp32 */
    assert_float_equal(step(&in, STRAT_ALLREDUCE, &l, 1000, 1, &comm, &exposed), 9.2, 1e-12);
}

static void test_frozen(void **state)
{
    const int some[3] = {1, 0, 1};
    struct predict_input in = input(some);
    struct predict_link l = {.alpha_us = 100.0, .beta_us_per_byte = 1.0};
    double comm, exposed;
    assert_float_equal(step(&in, STRAT_ALLREDUCE, &l, 1000, 1, &comm, &exposed), 3 + 4 + 0.8 + 0.5, 1e-12);
    /* ddp: {2} then {0} (200 B then 400 B; 1000-byte cap, 200 + 400 fits):
     * one bucket {2, 0} of 600 B ready at 4.0: 0.7 ms after backward */
    assert_float_equal(step(&in, STRAT_DDP, &l, 1000, 1, &comm, &exposed), 3 + 4 + 0.7 + 0.5, 1e-12);
}

/* The MLP (flatten, fc1, relu, fc2, relu, fc3) with layer times 0, 4, 0,
 * 2, 0, 1 ms: two stages balance as layers 0-1 (4 ms) and 2-5 (3 ms), and
 * fc1's output (512 floats a sample) crosses between them, 10 us a
 * message: T_0 = 4.02, T_1 = 3.02 ms; the first micro-batch takes 7 ms of
 * compute and 0.02 of crossings; the rest of the step goes in stage 0's
 * share of the parameters (401920 of 669706). */
static void test_pipeline(void **state)
{
    char err[256];
    struct model *m = zoo_create(NULL, "mlp", 8, 1, 28, 28, 10, 1, err, sizeof(err));
    assert_non_null(m);
    const double layer[] = {0, 4, 0, 2, 0, 1};
    assert_int_equal(m->nlayers, 6);
    struct predict_link l = {.alpha_us = 10.0, .beta_us_per_byte = 0.0};
    double comm;
    assert_true(fabs(predict_pipeline(m, layer, 1, 0, 2, &l, &comm) - 7.02) < 1e-9);
    assert_true(fabs(comm - 0.02) < 1e-12);
    assert_true(fabs(predict_pipeline(m, layer, 4, 0, 2, &l, &comm) - (7.02 + 3 * 4.02)) < 1e-9);
    assert_true(fabs(predict_pipeline(m, layer, 4, 1.0, 2, &l, &comm) - (7.02 + 3 * 4.02 + 401920.0 / 669706)) < 1e-9);
    /* bytes cost too: 4 B x 512 x 8 samples at 1 us a kB each way */
    struct predict_link b = {.alpha_us = 0.0, .beta_us_per_byte = 1e-3};
    predict_pipeline(m, layer, 1, 0, 2, &b, &comm);
    assert_true(fabs(comm - 2 * 4.0 * 512 * 8 * 1e-3 / 1e3) < 1e-12);
    /* one stage: the model as it was; more stages than cuts: none */
    assert_true(fabs(predict_pipeline(m, layer, 4, 0, 1, &l, &comm) - 4 * 7.0) < 1e-9);
    assert_true(predict_pipeline(m, layer, 4, 0, 7, &l, &comm) < 0);
    model_destroy(m);
}

static void test_ring_link(void **state)
{
    struct predict_link l = predict_ring_link(1e9, 5e-6, 4);
    assert_float_equal(l.alpha_us, 30.0, 1e-9);
    assert_float_equal(l.beta_us_per_byte, 1.5e-3, 1e-15);
    l = predict_ring_link(1e9, 5e-6, 1);
    assert_true(l.alpha_us == 0 && l.beta_us_per_byte == 0); /* one rank moves nothing */
}

/* A replayed job (predict_job_step): a step of 10 ms with 3 ms in
 * collectives of which 1 is exposed hides 2; collectives of 5 ms expose 3
 * (12 ms), of 1.5 ms none (9 ms). Exposed above comm (the split's comm
 * holds a wait the records do not) hides nothing: 0.5 ms exposes all,
 * 10 - 2 + 0.5 = 8.5. Sizes inverted on 100 us + 1 us/B below 512 B, 50 us
 * + 2 us/B from there: 300 us is 200 B, 2050 us 1000 B, 80 us (under
 * alpha) 0 B. --link's allgather is half the ring allreduce. */
static void test_job(void **state)
{
    struct predict_job_in in = {10.0, 3.0, 1.0};
    double exposed;
    assert_float_equal(predict_job_step(&in, 5.0, &exposed), 12.0, 1e-12);
    assert_float_equal(exposed, 3.0, 1e-12);
    assert_float_equal(predict_job_step(&in, 1.5, &exposed), 9.0, 1e-12);
    assert_float_equal(exposed, 0.0, 1e-12);
    in = (struct predict_job_in){10.0, 1.0, 2.0};
    assert_float_equal(predict_job_step(&in, 0.5, &exposed), 8.5, 1e-12);
    struct cost_fit f = {.alpha_us = 100.0, .beta_us_per_byte = 1.0, .nmore = 1, .more = {{512, 50.0, 2.0}}};
    struct predict_link l = predict_link_of(&f);
    assert_float_equal(predict_invert_bytes(&l, 300.0), 200.0, 1e-3);
    assert_float_equal(predict_invert_bytes(&l, 2050.0), 1000.0, 1e-3);
    assert_float_equal(predict_invert_bytes(&l, 80.0), 0.0, 0);
    l = predict_link_coll(1e9, 5e-6, 4, COLL_ALLGATHER);
    assert_float_equal(l.alpha_us, 15.0, 1e-9);
    assert_float_equal(l.beta_us_per_byte, 0.75e-3, 1e-15);
    l = predict_link_coll(1e9, 5e-6, 4, COLL_ALLREDUCE);
    assert_float_equal(l.alpha_us, 30.0, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_and_ddp),
        cmocka_unit_test(test_regimes),
        cmocka_unit_test(test_frozen),
        cmocka_unit_test(test_wire16),
        cmocka_unit_test(test_horovod_and_gather_scatter),
        cmocka_unit_test(test_ring_link),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
