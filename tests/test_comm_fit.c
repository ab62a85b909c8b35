/* test_comm_fit.c - the α-β fit that --bench-comm makes of its measured
 * (size, time) points, against truths worked out on paper: two regimes
 * (small messages at one rate, large ones at another, as a shared-memory
 * allreduce turns memory-bound past the caches) found apart, every point
 * within COST_FIT_TOLERANCE; a set no regimes can follow reported poor;
 * the regimes stored in the comm-model file and read back, a file of one
 * regime (an older ddptop's) still read, a malformed one refused; and the
 * size classes that let a report price a run's calls in their regimes.
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
#include <unistd.h>

#include "comm.h"
#include "cost_model.h"

/* 15 sizes, 4 KB to 64 MB by doubling, as --bench-comm's defaults */
#define NPTS 15

static void sizes(double *x)
{
    for (int i = 0; i < NPTS; i++)
        x[i] = 4096.0 * (double)(1 << i);
}

/* The truth on paper: below 16 MB, t = 20 us + bytes / 10 GB/s (beta 1e-4
 * us/B); from 16 MB on, t = bytes / 4 GB/s - 2500 us (beta 2.5e-4). The two
 * lines nearly meet at 16 MB (1697.7 and 1694.3 us); at 32 and 64 MB the
 * small messages' line would give 3375.4 and 6730.9 us against the true
 * 5888.6 and 14277.2: 43% and 53% short, as a fit weighted towards small
 * messages fell short on DDP's bucket sizes. */
static double truth(double b)
{
    return b < 16777216.0 ? 20.0 + 1e-4 * b : 2.5e-4 * b - 2500.0;
}

static void test_two_regimes(void **state)
{
    double x[NPTS], y[NPTS];
    sizes(x);
    for (int i = 0; i < NPTS; i++)
        y[i] = truth(x[i]);
    assert_float_equal(y[13], 5888.608, 1e-9); /* 32 MB, as worked out above */
    assert_float_equal(y[14], 14277.216, 1e-9);
    struct cost_fit f = {0};
    assert_int_equal(cost_fit_regimes(x, y, NPTS, &f), 0);
    assert_int_equal(f.nmore, 1); /* two regimes, no more */
    assert_true(f.more[0].from_bytes == 16777216.0);
    assert_float_equal(f.alpha_us, 20.0, 1e-6);
    assert_float_equal(f.beta_us_per_byte, 1e-4, 1e-12);
    assert_float_equal(f.more[0].alpha_us, -2500.0, 1e-5);
    assert_float_equal(f.more[0].beta_us_per_byte, 2.5e-4, 1e-12);
    for (int i = 0; i < NPTS; i++) {
        double p = cost_predict_us(&f, x[i]);
        if (fabs(p - y[i]) > COST_FIT_TOLERANCE * y[i])
            fail_msg("%.0f bytes: predicted %.1f us, truth %.1f us", x[i], p, y[i]);
    }
    assert_true(f.max_err >= 0 && f.max_err < 1e-6);
    assert_true(f.r2 > 0.999999);
    /* between measured sizes, and past them, each regime's line */
    assert_float_equal(cost_predict_us(&f, 12e6), 20.0 + 1e-4 * 12e6, 1e-6);
    assert_float_equal(cost_predict_us(&f, 128.0 * 1048576), 2.5e-4 * 128.0 * 1048576 - 2500.0, 1e-4);
}

/* Noise of +-10% on the same truth, alternating (each point 10% from the
 * true line of its regime): the true lines would be within the tolerance,
 * so the fit must be too, with two regimes or more (one line misses 32
 * and 64 MB by 40% or more). */
static void test_two_regimes_noisy(void **state)
{
    double x[NPTS], y[NPTS];
    sizes(x);
    for (int i = 0; i < NPTS; i++)
        y[i] = truth(x[i]) * (i % 2 ? 1.10 : 0.90);
    struct cost_fit f = {0};
    assert_int_equal(cost_fit_regimes(x, y, NPTS, &f), 0);
    assert_true(f.max_err <= COST_FIT_TOLERANCE);
    for (int i = 0; i < NPTS; i++)
        assert_true(fabs(cost_predict_us(&f, x[i]) - y[i]) <= COST_FIT_TOLERANCE * y[i] * (1 + 1e-12));
    assert_true(f.nmore >= 1); /* (one line cannot: 32 and 64 MB are 40% off it) */
}

/* Times that jump by 2.33x every other size (60 and 140 us): three
 * consecutive sizes hold a 60 between two 140s (or the reverse), which no
 * line fits within 15%: within 15% of 140 at x and 4x it is at least 119
 * at 2x (a weighted mean of the two), not within 15% of 60 (at most 69).
 * A poor fit, said so: max_err past the tolerance. */
static void test_poor_fit(void **state)
{
    double x[NPTS], y[NPTS];
    sizes(x);
    for (int i = 0; i < NPTS; i++)
        y[i] = i % 2 ? 60.0 : 140.0;
    struct cost_fit f = {0};
    assert_int_equal(cost_fit_regimes(x, y, NPTS, &f), 0);
    assert_true(f.max_err > COST_FIT_TOLERANCE);
    double worst = 0;
    for (int i = 0; i < NPTS; i++) {
        double e = fabs(cost_predict_us(&f, x[i]) - y[i]) / y[i];
        worst = e > worst ? e : worst;
    }
    assert_float_equal(f.max_err, worst, 1e-12); /* the figure is the worst point's */
    /* six sizes: every regime of three holds a 60 between 140s or the
     * reverse, so still poor (regimes of two sizes would fit them exactly) */
    assert_int_equal(cost_fit_regimes(x, y, 6, &f), 0);
    assert_true(f.max_err > COST_FIT_TOLERANCE);
}

static void test_bad_points(void **state)
{
    double x[3] = {4096, 8192, 16384}, y[3] = {10, 20, 30};
    struct cost_fit f = {0};
    assert_int_equal(cost_fit_regimes(x, y, 1, &f), -1);
    double down[3] = {8192, 4096, 16384}, zero[3] = {10, 0, 30};
    assert_int_equal(cost_fit_regimes(down, y, 3, &f), -1);
    assert_int_equal(cost_fit_regimes(x, zero, 3, &f), -1);
    /* three points: one regime (two would need six), exact on a line */
    double line[3] = {20 + 1e-4 * 4096, 20 + 1e-4 * 8192, 20 + 1e-4 * 16384};
    assert_int_equal(cost_fit_regimes(x, line, 3, &f), 0);
    assert_int_equal(f.nmore, 0);
    assert_float_equal(f.alpha_us, 20.0, 1e-9);
}

/* The regimes go into the comm-model file and come back; a fit of one
 * regime as an older ddptop wrote it is still read; regimes that are not
 * a short list of rising starts make the entry unreadable. */
static void test_stored(void **state)
{
    char dir[] = "/tmp/ddptop_test_fit_XXXXXX", path[128], err[1200];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/comm-model.json", dir);
    double x[NPTS], y[NPTS];
    sizes(x);
    for (int i = 0; i < NPTS; i++)
        y[i] = truth(x[i]);
    struct cost_fit f = {.backend = "shm", .algo = "ring", .ranks = 2, .coll = COLL_ALLREDUCE, .valid = 1}, got;
    assert_int_equal(cost_fit_regimes(x, y, NPTS, &f), 0);
    assert_int_equal(cost_model_save(path, &f, 1, err, sizeof(err)), 0);
    assert_int_equal(cost_model_lookup(path, "shm", "ring", 2, COLL_ALLREDUCE, &got), 0);
    assert_int_equal(got.nmore, 1);
    assert_true(got.more[0].from_bytes == 16777216.0);
    for (int i = 0; i < NPTS; i++)
        assert_float_equal(cost_predict_us(&got, x[i]), y[i], 1e-6 * y[i]);
    assert_float_equal(got.max_err, f.max_err, 1e-12);
    unlink(path);
    rmdir(dir);

    static const char old[] = "{\"fits\":[{\"backend\":\"shm\",\"algo\":\"ring\",\"ranks\":2,\"collective\":"
                              "\"allreduce\",\"alpha_us\":3.5,\"beta_us_per_byte\":0.001,\"r2\":0.9}]}";
    assert_int_equal(cost_model_find(old, strlen(old), "shm", "ring", 2, COLL_ALLREDUCE, &got), 0);
    assert_int_equal(got.nmore, 0);
    assert_true(got.max_err < 0); /* not known */
    assert_float_equal(cost_predict_us(&got, 1e6), 3.5 + 1e3, 1e-9);

    static const char *const bad[] = {
        /* starts that do not rise */
        "\"regimes\":[{\"from_bytes\":2e6,\"alpha_us\":1,\"beta_us_per_byte\":1},"
        "{\"from_bytes\":1e6,\"alpha_us\":1,\"beta_us_per_byte\":1}]",
        /* more than COST_MAX_REGIMES - 1 */
        "\"regimes\":[{\"from_bytes\":1,\"alpha_us\":1,\"beta_us_per_byte\":1},"
        "{\"from_bytes\":2,\"alpha_us\":1,\"beta_us_per_byte\":1},{\"from_bytes\":3,\"alpha_us\":1,"
        "\"beta_us_per_byte\":1},{\"from_bytes\":4,\"alpha_us\":1,\"beta_us_per_byte\":1}]",
        /* a value that is not a number, a list that is not one */
        "\"regimes\":[{\"from_bytes\":1e6,\"alpha_us\":\"1\",\"beta_us_per_byte\":1}]",
        "\"regimes\":{\"from_bytes\":1e6}",
        /* a start of 0 or less */
        "\"regimes\":[{\"from_bytes\":0,\"alpha_us\":1,\"beta_us_per_byte\":1}]",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        char text[600];
        snprintf(text, sizeof(text),
                 "{\"fits\":[{\"backend\":\"shm\",\"algo\":\"ring\",\"ranks\":2,\"collective\":\"allreduce\","
                 "\"alpha_us\":3.5,\"beta_us_per_byte\":0.001,%s}]}",
                 bad[k]);
        if (cost_model_find(text, strlen(text), "shm", "ring", 2, COLL_ALLREDUCE, &got) != -1)
            fail_msg("read: %s", bad[k]);
    }
}

/* Size classes hold [2^c, 2^(c+1)); a class's calls priced together equal
 * the calls priced one by one, in their regime. */
static void test_size_classes(void **state)
{
    assert_int_equal(cost_size_class(0), 0);
    assert_int_equal(cost_size_class(1), 0);
    assert_int_equal(cost_size_class(2), 1);
    assert_int_equal(cost_size_class(3), 1);
    assert_int_equal(cost_size_class(4), 2);
    assert_int_equal(cost_size_class(1048575), 19);
    assert_int_equal(cost_size_class(1048576), 20);
    assert_int_equal(cost_size_class(1e30), COST_SIZE_CLASSES - 1);
    /* regimes: 10 + 1e-3 b below 1 MB, 500 + 2e-3 b from it; three calls of
     * 1.5, 1.25 and 1.75 MB (class 20): 3 x 500 + 2e-3 x 4.5 MB */
    struct cost_fit f = {.alpha_us = 10, .beta_us_per_byte = 1e-3, .nmore = 1, .more = {{1048576, 500, 2e-3}}};
    double mb = 1048576.0;
    assert_float_equal(cost_predict_calls_us(&f, 3, 4.5 * mb), 1500 + 2e-3 * 4.5 * mb, 1e-6);
    assert_float_equal(cost_predict_calls_us(&f, 3, 4.5 * mb),
                       cost_predict_us(&f, 1.5 * mb) + cost_predict_us(&f, 1.25 * mb) + cost_predict_us(&f, 1.75 * mb),
                       1e-6);
    /* two calls below 1 MB (class 19): 2 x 10 + 1e-3 x 1.5 MB */
    assert_float_equal(cost_predict_calls_us(&f, 2, 1.5 * mb), 20 + 1e-3 * 1.5 * mb, 1e-6);
    assert_float_equal(cost_predict_calls_us(&f, 0, 0), 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_regimes), cmocka_unit_test(test_two_regimes_noisy),
        cmocka_unit_test(test_poor_fit),    cmocka_unit_test(test_bad_points),
        cmocka_unit_test(test_stored),      cmocka_unit_test(test_size_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
