/* test_probe.c - the SPSC ring: order, capacity, drop counting, and a
 * producer/consumer pair on two threads (run under TSan too); the span
 * every producer records through probe_span; the deadline clock and its
 * nap; the numbers with their unit (fmt_num.h) that the panes and the
 * report share. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fmt_num.h"
#include "probe.h"

static void test_fifo_and_full(void **state)
{
    struct spsc_ring r;
    assert_int_equal(spsc_init(&r, sizeof(uint64_t), 8), 0);
    for (uint64_t i = 0; i < 8; i++)
        assert_int_equal(spsc_push(&r, &i), 1);
    uint64_t x = 99;
    assert_int_equal(spsc_push(&r, &x), 0);
    assert_int_equal(spsc_dropped(&r), 1);
    uint64_t out[16];
    assert_int_equal(spsc_pop(&r, out, 3), 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[2], 2);
    assert_int_equal(spsc_push(&r, &x), 1);
    assert_int_equal(spsc_pop(&r, out, 16), 6);
    assert_int_equal(out[4], 7);
    assert_int_equal(out[5], 99);
    assert_int_equal(spsc_init(&r, 8, 6), -1); /* not a power of two: refused, nothing allocated */
    spsc_free(&r);
}

/* A plain span zeroes the collective's fields; a collective's carries them. */
static void test_probe_span(void **state)
{
    struct spsc_ring r;
    assert_int_equal(spsc_init(&r, sizeof(struct span), 2), 0);
    assert_int_equal(probe_span(&r, LANE_MAIN, CAT_BACKWARD, 7, 3, 100, 250, NULL), 1);
    struct span_coll sc = {.bytes = 10, .bytes_rx = 20, .size = 40, .seq = 5, .kind = COLL_ALLREDUCE, .outer = 1};
    assert_int_equal(probe_span(&r, LANE_COMM, CAT_COMM, 8, -1, 300, 400, &sc), 1);
    assert_int_equal(probe_span(&r, LANE_MAIN, CAT_WAIT, 8, -1, 0, 1, NULL), 0); /* full: counted */
    assert_int_equal(spsc_dropped(&r), 1);
    struct span s[2];
    assert_int_equal(spsc_pop(&r, s, 2), 2);
    struct span plain = {.t0_ns = 100, .t1_ns = 250, .step = 7, .tag = 3, .lane = LANE_MAIN, .cat = CAT_BACKWARD};
    assert_memory_equal(&s[0], &plain, sizeof(plain));
    struct span coll = {.t0_ns = 300,
                        .t1_ns = 400,
                        .bytes = 10,
                        .bytes_rx = 20,
                        .size = 40,
                        .step = 8,
                        .seq = 5,
                        .tag = -1,
                        .lane = LANE_COMM,
                        .cat = CAT_COMM,
                        .coll = COLL_ALLREDUCE,
                        .outer = 1};
    assert_memory_equal(&s[1], &coll, sizeof(coll));
    spsc_free(&r);
}

#define N_ITEMS 200000

static void *producer(void *arg)
{
    struct spsc_ring *r = arg;
    for (uint64_t i = 0; i < N_ITEMS; i++)
        while (!spsc_push(r, &i))
            ;
    return NULL;
}

static void test_threads(void **state)
{
    struct spsc_ring r;
    assert_int_equal(spsc_init(&r, sizeof(uint64_t), 1024), 0);
    pthread_t t;
    pthread_create(&t, NULL, producer, &r);
    uint64_t next = 0, buf[64];
    while (next < N_ITEMS) {
        size_t n = spsc_pop(&r, buf, 64);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(buf[i], next++);
    }
    pthread_join(t, NULL);
    /* retries after a full ring count as drops, but nothing was lost or reordered */
    assert_int_equal(next, N_ITEMS);
    spsc_free(&r);
}

static void test_nap_and_deadline(void **state)
{
    (void)state;
    int64_t t0 = probe_deadline_ms();
    probe_nap_ms(20);
    int64_t waited = probe_deadline_ms() - t0;
    assert_true(waited >= 19); /* (the clock ticks in whole ms) */
    assert_true(waited < 5000);
}

#define SAYS(call, want)                                                                                               \
    do {                                                                                                               \
        char b[32];                                                                                                    \
        call;                                                                                                          \
        if (strcmp(b, want) != 0)                                                                                      \
            fail_msg("%s gave '%s', expected '%s'", #call, b, want);                                                   \
    } while (0)

static void test_fmt_num(void **state)
{
    (void)state;
    SAYS(fmt_bytes(b, sizeof(b), 0), "0 B");
    SAYS(fmt_bytes(b, sizeof(b), 999), "999 B");
    SAYS(fmt_bytes(b, sizeof(b), 12345678), "12.3 MB");
    SAYS(fmt_bytes(b, sizeof(b), 4.2e12), "4.2 TB");
    SAYS(fmt_bytes(b, sizeof(b), -5), "0 B");
    SAYS(fmt_bytes_exact(b, sizeof(b), 25 << 20), "25M");
    SAYS(fmt_bytes_exact(b, sizeof(b), 3072), "3K");
    SAYS(fmt_bytes_exact(b, sizeof(b), 1536), "1536"); /* 1.5K: no exact suffix */
    SAYS(fmt_bytes_exact(b, sizeof(b), 1ULL << 30), "1G");
    SAYS(fmt_bytes_exact(b, sizeof(b), 1000), "1000");
    SAYS(fmt_bytes_exact(b, sizeof(b), 0), "0");
    SAYS(fmt_si(b, sizeof(b), 12.5), "12.5");
    SAYS(fmt_si(b, sizeof(b), 1234), "1.23k");
    SAYS(fmt_si(b, sizeof(b), 340e6), "340M");
    SAYS(fmt_duration(b, sizeof(b), 12.34), "12.3s");
    SAYS(fmt_duration(b, sizeof(b), 185), "3m05s");
    SAYS(fmt_duration(b, sizeof(b), 7620), "2h07m");
    SAYS(fmt_rate(b, sizeof(b), 59.3e6), "59.3 MB/s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fifo_and_full), cmocka_unit_test(test_probe_span),
                                       cmocka_unit_test(test_threads), cmocka_unit_test(test_nap_and_deadline),
                                       cmocka_unit_test(test_fmt_num)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
