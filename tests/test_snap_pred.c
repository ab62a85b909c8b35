/* test_snap_pred.c - the Traffic pane's predicted busbw (ui/snap.c): the
 * bus bytes of a frame's collectives over the time --bench-comm's fit
 * gives them, each call in its size's regime. A 2-rank allreduce run of
 * the MLP reduces its six gradient tensors once a step, sizes known from
 * its shapes; with a fit of two regimes written here, the calls' time is
 * worked out by hand below and set against the snapshot's figure for a
 * frame that saw the whole run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "snap.h"

/* the fit: 10 us + 1e-4 us/B below 1 MiB, -500 us + 1e-3 us/B from it */
static double fit_us(double b)
{
    return b < 1048576 ? 10 + 1e-4 * b : -500 + 1e-3 * b;
}

static void test_predicted_busbw(void **state)
{
    char dir[] = "/tmp/ddptop_test_snap_XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/cm.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"fits\": [{\"backend\": \"shm\", \"algo\": \"ring\", \"ranks\": 2, \"collective\": \"allreduce\", "
          "\"alpha_us\": 10, \"beta_us_per_byte\": 0.0001, \"r2\": 1, \"regimes\": [{\"from_bytes\": 1048576, "
          "\"alpha_us\": -500, \"beta_us_per_byte\": 0.001}]}]}",
          f);
    fclose(f);
    setenv("DDPTOP_COMM_MODEL", path, 1);

    struct run_config rc = harness_config("mlp", STRAT_ALLREDUCE, 2, 16, 4);
    struct run r;
    assert_int_equal(harness_run(&r, &rc, &g_train, &g_test), 0);
    long steps = (long)r.metrics.steps_done;
    assert_int_equal(steps, 4);
    /* fc1 784x512 + 512, fc2 512x512 + 512, fc3 512x10 + 10: one allreduce
     * of each a step on each rank, 4 bytes a value */
    static const double floats[6] = {784 * 512, 512, 512 * 512, 512, 512 * 10, 10};
    double want_us = 0;
    for (int p = 0; p < 6; p++)
        want_us += fit_us(4 * floats[p]) * (double)steps * 2;
    double bus = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(metrics_kind_calls(&r.metrics.r[i], COLL_ALLREDUCE), 6 * steps);
        bus += r.metrics.r[i].bus_bytes;
    }

    /* a frame before any collective, then one after them all */
    struct snap s;
    assert_int_equal(snap_init(&s, &r), 0);
    struct rank_metrics saved[2];
    for (int i = 0; i < 2; i++) {
        struct rank_metrics *rm = &r.metrics.r[i];
        saved[i] = *rm;
        memset(rm->kind_calls, 0, sizeof(rm->kind_calls));
        memset(rm->kind_bytes, 0, sizeof(rm->kind_bytes));
        rm->bus_bytes = 0;
        rm->xfer_ns = 0;
        rm->bytes_tx = rm->bytes_rx = 0;
    }
    r.state = RUN_RUNNING;
    snap_update(&s, &r, NULL, r.t_start_ns + 1000000000LL);
    for (int i = 0; i < 2; i++)
        r.metrics.r[i] = saved[i];
    snap_update(&s, &r, NULL, r.t_start_ns + 2000000000LL);
    r.state = RUN_DONE;
    assert_true(s.pred_now_valid);
    double want = bus / (want_us * 1e3); /* GB/s: bytes over ns */
    printf("  predicted busbw %.4f GB/s, by hand %.4f GB/s\n", s.busbw_pred_now, want);
    assert_float_equal(s.busbw_pred_now, want, 1e-9 * want);
    snap_free(&s);
    run_free(&r);
    unsetenv("DDPTOP_COMM_MODEL");
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_predicted_busbw)};
    return cmocka_run_group_tests(tests, harness_data_setup, harness_data_teardown);
}
