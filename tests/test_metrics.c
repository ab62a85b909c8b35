/* test_metrics.c - the collector's accounting of collectives and the
 * figures the report derives from it, on spans made here with known
 * durations (no threads, no clock):
 *  - transfer/sync: each collective is matched across ranks by its
 *    sequence number; transfer is its shortest duration over the ranks
 *    (the same for every rank), sync is this rank's duration minus that.
 *    So sync >= 0 on every rank, the straggler (the last to arrive, whose
 *    collective is the shortest) has sync 0, and transfer + sync is the
 *    time the rank spent in collectives. Nothing is counted until every
 *    rank has reported a collective, whatever order the ranks drain in;
 *  - busbw: nccl-tests' factors, and the report's busbw = the summed
 *    S x factor over the summed transfer time, per rank and per run;
 *  - speedup: a run's samples/s over its 1-rank row's, efficiency that
 *    over the rank count;
 *  - --cupti-sample's windows: P steps apart, or further where P steps
 *    take less than the least gap in time.
 * The live run (test_strategies, test_report) checks the same invariants
 * on real timings; these pin them exactly. */
#include <math.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"
#include "probe.h"
#include "report.h"
#include "run.h"

/* An outer allreduce span of S bytes on rank's main lane, [t0, t1) ns. */
static struct span coll_span(uint32_t seq, int64_t t0, int64_t t1, uint64_t size)
{
    return (struct span){.t0_ns = t0,
                         .t1_ns = t1,
                         .bytes = size,
                         .bytes_rx = size,
                         .size = size,
                         .seq = seq,
                         .tag = -1,
                         .lane = LANE_MAIN,
                         .cat = CAT_COMM,
                         .coll = COLL_ALLREDUCE,
                         .outer = 1};
}

/* Three ranks, two collectives. All enter at their own time and leave
 * together, so the last to enter has the shortest collective:
 *   seq 0: rank 0 100 ns, rank 1 40 ns (the straggler), rank 2 70 ns
 *   seq 1: rank 0 25 ns (the straggler), rank 1 55 ns, rank 2 85 ns
 * transfer: 40 + 25 = 65 ns on every rank;
 * sync: rank 0 60 + 0, rank 1 0 + 30, rank 2 30 + 60. */
static void test_transfer_sync_split(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 3, -1.0), 0);
    const int64_t dur[2][3] = {{100, 40, 70}, {25, 55, 85}};
    /* the ranks drain in another order than they entered, and seq 1 of
     * rank 2 arrives before seq 0 of rank 1 */
    const int order[][2] = {{0, 0}, {2, 0}, {2, 1}, {0, 1}, {1, 0}, {1, 1}};
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        int r = order[k][0], q = order[k][1];
        int64_t end = 1000 * (q + 1);
        struct span s = coll_span((uint32_t)q, end - dur[q][r], end, 4096);
        metrics_add_spans(&m, r, &s, 1);
        if (k < 4) /* no collective is complete before rank 1's first */
            for (int i = 0; i < 3; i++) {
                assert_int_equal(m.r[i].xfer_ns, 0);
                assert_int_equal(m.r[i].sync_ns, 0);
            }
    }
    const int64_t want_sync[3] = {60, 30, 90};
    for (int i = 0; i < 3; i++) {
        const struct rank_metrics *rm = &m.r[i];
        assert_int_equal(rm->xfer_ns, 65);
        assert_int_equal(rm->sync_ns, want_sync[i]);
        assert_true(rm->sync_ns >= 0);
        assert_int_equal(rm->xfer_ns + rm->sync_ns, rm->coll_ns);
        assert_int_equal(rm->coll_ns, dur[0][i] + dur[1][i]);
        assert_int_equal(rm->ncoll, 2);
        assert_int_equal(rm->bytes_tx, 2 * 4096);
        assert_int_equal(rm->bytes_rx, 2 * 4096);
    }
    metrics_free(&m);
}

/* --dp: 4 ranks, 2 replicas of 2 stages; the copies of stage 0 (ranks 0
 * and 2) and of stage 1 (ranks 1 and 3) each average in a group of their
 * own, numbered apart (SPAN_SEQ_GROUP), while the world's collective 0
 * goes on. Group calls are matched among their 2 ranks, each group's
 * first call with its own, though all are numbered 0 within the group:
 *   world seq 0: 50, 20, 30, 40 ns (rank 1 the straggler)
 *   group 0 call 0: rank 0 90 ns, rank 2 10 ns
 *   group 1 call 0: rank 1 35 ns, rank 3 15 ns
 * transfer: 20 + 10 on ranks 0 and 2, 20 + 15 on ranks 1 and 3; sync the
 * rest. A group call alone (rank 0's, before rank 2's) counts nothing. */
static void test_group_collectives(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 4, -1.0), 0);
    assert_int_equal(metrics_set_groups(&m, 2), 0);
    const int64_t world[4] = {50, 20, 30, 40}, group[4] = {90, 35, 10, 15};
    for (int r = 0; r < 4; r++) {
        struct span s = coll_span(0, 1000 - world[r], 1000, 4096);
        metrics_add_spans(&m, r, &s, 1);
    }
    for (int r = 0; r < 4; r++) {
        uint32_t seq = SPAN_SEQ_GROUP | (uint32_t)(r % 2) << 24;
        struct span s = coll_span(seq, 2000 - group[r], 2000, 1024);
        metrics_add_spans(&m, r, &s, 1);
        if (r == 0)
            assert_int_equal(m.r[0].xfer_ns, 20); /* the world's call alone so far */
    }
    const int64_t want_xfer[4] = {30, 35, 30, 35}, want_sync[4] = {30 + 80, 0 + 20, 10 + 0, 20 + 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(m.r[i].xfer_ns, want_xfer[i]);
        assert_int_equal(m.r[i].sync_ns, want_sync[i]);
        assert_int_equal(m.r[i].xfer_ns + m.r[i].sync_ns, m.r[i].coll_ns);
    }
    metrics_free(&m);
}

/* A straggler that is late to every collective never waits: its sync is 0
 * and its peers' sync is the time they waited for it. */
static void test_straggler_never_waits(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 2, -1.0), 0);
    int64_t waited = 0;
    for (uint32_t q = 0; q < 50; q++) {
        int64_t t = 10000 * (int64_t)q, xfer = 100 + q, late = 3000 + 7 * q;
        struct span fast = coll_span(q, t, t + late + xfer, 1 << 20);
        struct span slow = coll_span(q, t + late, t + late + xfer, 1 << 20);
        metrics_add_spans(&m, 0, &fast, 1);
        metrics_add_spans(&m, 1, &slow, 1);
        waited += late;
    }
    assert_int_equal(m.r[1].sync_ns, 0);
    assert_int_equal(m.r[0].sync_ns, waited);
    assert_int_equal(m.r[0].xfer_ns, m.r[1].xfer_ns);
    for (int i = 0; i < 2; i++)
        assert_int_equal(m.r[i].xfer_ns + m.r[i].sync_ns, m.r[i].coll_ns);

    /* the report's figures: per-rank transfer and sync in ms, sync >= 0,
     * busbw = S x 2(n-1)/n over the transfer time */
    struct run_result res;
    memset(&res, 0, sizeof(res));
    assert_int_equal(result_from_metrics(&res, &m, 32, 2), 0);
    assert_int_equal(res.nranks, 2);
    double xfer_ns = (double)m.r[0].xfer_ns, bus = 50.0 * (1 << 20) * 2.0 * (2 - 1) / 2;
    for (int i = 0; i < 2; i++) {
        const struct rank_result *q = &res.ranks[i];
        assert_true(q->coll_valid && q->traffic.busbw_valid);
        assert_true(fabs(q->xfer_ms - xfer_ns / 1e6) < 1e-12);
        assert_true(q->sync_ms >= 0);
        assert_true(fabs(q->traffic.busbw_gbps - bus / xfer_ns) < 1e-9 * q->traffic.busbw_gbps);
        assert_int_equal(q->traffic.tx, 50 << 20);
    }
    assert_true(res.ranks[1].sync_ms == 0.0);
    assert_true(fabs(res.ranks[0].sync_ms - (double)waited / 1e6) < 1e-12);
    assert_true(fabs(res.sync_ms - (double)waited / 2e6) < 1e-12); /* the run's: the mean over ranks */
    assert_true(fabs(res.traffic.busbw_gbps - bus / xfer_ns) < 1e-9 * res.traffic.busbw_gbps);
    assert_int_equal(res.traffic.tx, 50 << 20);
    result_free(&res);
    metrics_free(&m);
}

/* nccl-tests' bus bandwidth factors (README: busbw = S / t x factor). */
static void test_busbw_factors(void **state)
{
    for (int n = 2; n <= 8; n++) {
        assert_true(fabs(coll_busbw_factor(COLL_ALLREDUCE, n) - 2.0 * (n - 1) / n) < 1e-15);
        assert_true(fabs(coll_busbw_factor(COLL_REDUCE_SCATTER, n) - (double)(n - 1) / n) < 1e-15);
        assert_true(fabs(coll_busbw_factor(COLL_ALLGATHER, n) - (double)(n - 1) / n) < 1e-15);
        assert_true(coll_busbw_factor(COLL_BROADCAST, n) == 1.0);
        assert_true(coll_busbw_factor(COLL_REDUCE, n) == 1.0);
    }
    assert_true(coll_busbw_factor(COLL_ALLREDUCE, 4) == 1.5);
    assert_true(coll_busbw_factor(COLL_ALLREDUCE, 1) == 0.0); /* one rank moves nothing */
}

/* Speedup is samples/s at the median step over the 1-rank row's with the
 * same model and per-rank batch (weak scaling here);
 * efficiency is speedup over the rank count. */
static void test_speedup(void **state)
{
    struct run_result res[4];
    memset(res, 0, sizeof(res));
    const int world[4] = {1, 2, 4, 2};
    const double sps[4] = {100.0, 150.0, 250.0, 90.0};
    for (int i = 0; i < 4; i++) {
        snprintf(res[i].cfg.model, sizeof(res[i].cfg.model), "%s", i < 3 ? "mlp" : "lenet");
        res[i].world = world[i];
        res[i].global_batch = 32 * world[i];
        res[i].rate.samples_s = sps[i];
        /* speedups compare the median step: the same samples/s there */
        res[i].rate.ms = 1e3 * res[i].global_batch / sps[i];
        res[i].ms_valid = res[i].batch_valid = 1;
    }
    results_speedup(res, 4);
    const double want[3] = {1.0, 1.5, 2.5};
    for (int i = 0; i < 3; i++) {
        assert_true(res[i].speedup_valid);
        assert_true(fabs(res[i].speedup - want[i]) < 1e-12);
        assert_true(fabs(res[i].efficiency - 100.0 * want[i] / world[i]) < 1e-9);
    }
    assert_false(res[3].speedup_valid); /* no 1-rank LeNet row to compare with */
}

/* One rule averages ranks: a run's share of time is its ranks' summed
 * times over their summed wall. By hand, rank 0 computes 0.5 s of 1 s and
 * waits for a core 50% of it, rank 1 computes 0.3 s of 3 s and waits 10%:
 * compute 0.8 s of 4 s (20%), desched 0.5 + 0.3 s of 4 s (20%); a plain
 * mean of the ranks' shares would say 30% for both. Compute per step is
 * the mean of the ranks' (ranks step together), and per epoch that times
 * the steps of an epoch: (5 + 3) / 2 ms x 1000 steps = 4 s. */
static void test_ranks_weighted(void **state)
{
    struct run_result res;
    memset(&res, 0, sizeof(res));
    struct rank_result q[2];
    memset(q, 0, sizeof(q));
    const int64_t s = 1000000000;
    q[0].b = (struct breakdown){.wall_ns = s, .compute_ns = s / 2, .idle_ns = s / 2};
    q[1].b = (struct breakdown){.wall_ns = 3 * s, .compute_ns = 3 * s / 10, .idle_ns = 27 * s / 10};
    q[0].desched_pct = 50.0;
    q[1].desched_pct = 10.0;
    q[0].desched_valid = q[1].desched_valid = 1;
    q[0].compute_ms = 5.0;
    q[1].compute_ms = 3.0;
    res.ranks = q;
    res.nranks = 2;
    result_breakdowns(&res);
    assert_float_equal(res.split.compute, 20.0, 1e-9);
    assert_float_equal(res.split.idle, 80.0, 1e-9);
    assert_true(res.desched_valid);
    assert_float_equal(res.desched_pct, 20.0, 1e-9);
    result_per_epoch(&res, 1000);
    assert_float_equal(res.compute_s_epoch, 4.0, 1e-12);
    assert_float_equal(q[1].compute_s_epoch, 3.0, 1e-12);
}

/* Step-time percentiles are numpy's default, worked out by hand here
 * (numpy.percentile(v, q), linear interpolation at position (k-1) q of
 * the sorted k values), the first step left out:
 *   40, 10, 30, 20 ms: median (20 + 30) / 2 = 25; p90 at 2.7: 30 + 0.7 x 10 = 37
 *   1..5 ms: median 3; p90 at 3.6: 4 + 0.6 x 1 = 4.6
 * (the lower-middle rank would give 20 and 30 for the first). */
static void test_step_percentiles(void **state)
{
    const int64_t ms = 1000000;
    const int64_t four[] = {999 * ms, 40 * ms, 10 * ms, 30 * ms, 20 * ms};
    double mean, p50, p90;
    step_stats_ms(four, 5, &mean, &p50, &p90);
    assert_float_equal(mean, 25.0, 1e-12);
    assert_float_equal(p50, 25.0, 1e-12);
    assert_float_equal(p90, 37.0, 1e-12);
    const int64_t five[] = {999 * ms, 5 * ms, 1 * ms, 4 * ms, 2 * ms, 3 * ms};
    step_stats_ms(five, 6, &mean, &p50, &p90);
    assert_float_equal(p50, 3.0, 1e-12);
    assert_float_equal(p90, 4.6, 1e-12);
    const int64_t one[] = {999 * ms, 7 * ms};
    step_stats_ms(one, 2, &mean, &p50, &p90);
    assert_float_equal(p50, 7.0, 1e-12);
    assert_float_equal(p90, 7.0, 1e-12);
}

/* Transfer and sync per step cover the steps ms/step covers: the first
 * step's collective, where rank 0 waits 1 ms for rank 1's set-up, is left
 * out of both, as the first step is of ms/step (it would outweigh a short
 * run's steps: 0.334 ms/step of sync where the steps had 1 us). */
static void test_transfer_sync_per_step(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 2, -1.0), 0);
    enum { STEPS = 3 };
    for (uint32_t q = 0; q < STEPS; q++) {
        int64_t t = 10000000 * (int64_t)q, late = q == 0 ? 1000000 : 1000, xfer = 2000;
        struct span fast = coll_span(q, t + 10, t + 10 + late + xfer, 1 << 20);
        struct span slow = coll_span(q, t + 10 + late, t + 10 + late + xfer, 1 << 20);
        fast.step = slow.step = q;
        metrics_add_spans(&m, 0, &fast, 1);
        metrics_add_spans(&m, 1, &slow, 1);
        for (int r = 0; r < 2; r++) {
            struct step_rec rec = {.step = q, .t0_ns = t, .t1_ns = t + 5000000, .loss = 1.0f, .n = 8};
            metrics_add_step(&m, r, &rec);
        }
    }
    struct run_result res;
    memset(&res, 0, sizeof(res));
    assert_int_equal(result_from_metrics(&res, &m, 8, 2), 0);
    assert_true(fabs(res.ranks[0].sync_ms - (1000000 + 2 * 1000) / 1e6) < 1e-12); /* the whole run */
    assert_true(fabs(res.ranks[0].sync_step_ms - 1000 / 1e6) < 1e-12);            /* per step after the first */
    assert_true(fabs(res.ranks[1].sync_step_ms) < 1e-12);
    for (int i = 0; i < 2; i++)
        assert_true(fabs(res.ranks[i].xfer_step_ms - 2000 / 1e6) < 1e-12);
    assert_true(fabs(res.sync_step_ms - 1000 / 2e6) < 1e-12);
    result_free(&res);
    metrics_free(&m);
}

/* An efficiency above 100% names its likeliest cause: too few timed steps
 * first, then noise in the baseline (p90/p50), then the compute threads;
 * a weak-scaling pair that differs in nothing else is put down to noise. */
static const char *why_above_100(long steps, double base_p90, int threads)
{
    static struct run_result res[2];
    memset(res, 0, sizeof(res));
    for (int i = 0; i < 2; i++) {
        res[i].cfg.strategy = -1;
        res[i].world = i + 1;
        res[i].steps = steps;
        res[i].ms_valid = 1;
        res[i].rate.ms = 10.0;
        res[i].ms_p90 = i == 0 ? base_p90 : 10.0;
        res[i].threads_per_rank = i == 0 ? 1 : threads;
        res[i].speedup_valid = 1;
        res[i].scaling = SCALING_WEAK;
        res[i].efficiency = i == 0 ? 100.0 : 106.0;
    }
    static char out[1 << 16];
    FILE *f = fmemopen(out, sizeof(out), "w");
    assert_non_null(f);
    report_write(f, FMT_TEXT, res, 2);
    fclose(f);
    const char *why = strstr(out, "run 1: efficiency 106% against run 0 is above 100%; likely cause: ");
    assert_non_null(why);
    return why + strlen("run 1: efficiency 106% against run 0 is above 100%; likely cause: ");
}

static void test_efficiency_above_100_explained(void **state)
{
    assert_true(!strncmp(why_above_100(3, 10.0, 1), "this run timed only 2 steps", 27));
    assert_true(!strncmp(why_above_100(40, 20.0, 1), "run 0's steps were noisy (p90/p50 = 2.0)", 40));
    assert_true(!strncmp(why_above_100(40, 10.0, 2), "run 1 ran 4 compute threads, run 0 1", 36));
    assert_true(!strncmp(why_above_100(40, 10.0, 1), "step-time noise between the runs", 32));
}

/* The next traced window: P steps on when they take the gap or longer,
 * else the steps that take the gap (rounded up); P before any step time
 * is measured or without a gap; never past the last step number. */
static void test_cupti_windows(void **state)
{
    const int64_t ms = 1000000;
    assert_int_equal(run_cupti_next_window(0, 50, 0, 200 * ms), 50);          /* not measured yet */
    assert_int_equal(run_cupti_next_window(100, 50, 20 * ms, 200 * ms), 150); /* 50 steps: 1 s */
    assert_int_equal(run_cupti_next_window(100, 50, 4 * ms, 200 * ms), 150);  /* exactly the gap */
    assert_int_equal(run_cupti_next_window(100, 50, 3 * ms, 200 * ms), 167);  /* 66.7 steps, up */
    /* an MLP's 0.26 ms step: a window every 770 steps rather than 13 ms */
    assert_int_equal(run_cupti_next_window(0, 50, 260000, 200 * ms), 770);
    assert_int_equal(run_cupti_next_window(7, 50, 260000, 0), 57); /* DDPTOP_CUPTI_GAP_MS=0 */
    assert_int_equal(run_cupti_next_window(UINT32_MAX - 10, 50, 1, 200 * ms), UINT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer_sync_split),
        cmocka_unit_test(test_group_collectives),
        cmocka_unit_test(test_straggler_never_waits),
        cmocka_unit_test(test_busbw_factors),
        cmocka_unit_test(test_efficiency_above_100_explained),
        cmocka_unit_test(test_transfer_sync_per_step),
        cmocka_unit_test(test_speedup),
        cmocka_unit_test(test_step_percentiles),
        cmocka_unit_test(test_ranks_weighted),
        cmocka_unit_test(test_cupti_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
