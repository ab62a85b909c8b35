/* test_relay_msg.c - the relay's decoder (src/relay_msg.c): what process 0
 * takes from a worker, refused unless every field is in range.
 *
 * The messages are built here byte by byte from the layouts in
 * relay_msg.h, as a worker's process sends them (rank 1 of a job of 2
 * processes, 1 rank each, with a clock offset of 0):
 *  - a rank's end whose 256-byte message holds no NUL (it overflowed a
 *    read of process 0's stack), and one with an escape character; one
 *    whose failure's time (which decides the rank process 0 names) is
 *    outside the run's window, or is given for a rank that did not fail;
 *  - spans with t0 = INT64_MIN (it overflowed the report's arithmetic),
 *    with t1 before t0, outside the run's window, of no known lane or
 *    category, and a body that is not a whole number of spans;
 *  - step records out of order, or with more correct than samples;
 *  - a rank that is another process's, a header's ring out of range, a
 *    tag no one sends, a clock reading off the clock;
 * each refused with a line that says what was wrong; the same messages
 * made right pass, their records handed over untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "procs.h"
#include "relay_msg.h"
#include "run.h"

#define S_NS 1000000000LL

/* a job of 2 processes of 1 rank; the run began at 100 s and it is now
 * 200 s on process 0's clock; the sender is process 1 */
static const struct relay_limits lim = {
    .world = 2, .per = 1, .proc = 1, .add_ns = 0, .lo_ns = 100 * S_NS, .hi_ns = 200 * S_NS};

static int64_t next_step[2];
static unsigned char done[2];
static struct relay_seen seen;

static int setup(void **state)
{
    memset(next_step, 0, sizeof(next_step));
    memset(done, 0, sizeof(done));
    seen = (struct relay_seen){next_step, done};
    return 0;
}

static char err[256];
static struct relay_in in;

static int decode(int tag, void *msg, size_t len)
{
    err[0] = 0;
    int rc = relay_decode(tag, msg, len, &lim, &seen, &in, err, sizeof(err));
    printf("  tag %d, %zu bytes: %s%s\n", tag, len, rc == 0 ? "passed" : "refused: ", err);
    return rc;
}

static struct relay_done good_done(void)
{
    struct relay_done d;
    memset(&d, 0, sizeof(d));
    d.rank = 1;
    d.rc = -1;
    snprintf(d.dev, sizeof(d.dev), "cpu");
    snprintf(d.err, sizeof(d.err), "loss is nan at step 3");
    return d;
}

static void test_done(void **state)
{
    struct relay_done d = good_done();
    /* the message of the issue: 256 bytes, none of them NUL */
    memset(d.err, 'A', sizeof(d.err));
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    assert_non_null(strstr(err, "rank 1's end with a message that is not a line of text"));
    assert_int_equal(done[1], 0);
    d = good_done();
    memset(d.dev, 'B', sizeof(d.dev));
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    assert_non_null(strstr(err, "device name that is not a line of text"));
    d = good_done();
    snprintf(d.err, sizeof(d.err), "\x1b]0;owned\x07");
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d = good_done();
    d.rank = 0; /* process 0's own */
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    assert_non_null(strstr(err, "a message for rank 0, not one of its own (1 to 1)"));
    d = good_done();
    d.rc = 7;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d = good_done();
    d.stage_first = 5;
    d.stage_end = 2;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d = good_done();
    d.stage_mem[1] = -1.0;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d = good_done();
    d.mem_peak = -4096;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d = good_done();
    d.fail_ns = 99 * S_NS; /* (the run began at 100 s) */
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    assert_non_null(strstr(err, "rank 1's end with a failure time off the clock"));
    d.fail_ns = INT64_MIN;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d.fail_ns = 201 * S_NS;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    d.rc = 0;
    d.fail_ns = 150 * S_NS; /* a time, and no failure */
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    assert_non_null(strstr(err, "and no failure"));
    d = good_done();
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d) - 1), -1); /* short */
    assert_non_null(strstr(err, "a rank's end of"));
    /* right: passes once, its fields as sent */
    d = good_done();
    d.stage_first = 0;
    d.stage_end = 4;
    d.stage_mem[0] = 4096.0;
    d.mem_now = 8192;
    d.mem_peak = 16384;
    d.fail_ns = 150 * S_NS;
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), 0);
    assert_int_equal(in.done.rank, 1);
    assert_int_equal(in.done.fail_ns, 150 * S_NS);
    assert_string_equal(in.done.err, "loss is nan at step 3");
    assert_string_equal(in.done.dev, "cpu");
    assert_int_equal(in.done.stage_end, 4);
    assert_int_equal(done[1], 1);
    assert_int_equal(decode(RELAY_TAG_DONE, &d, sizeof(d)), -1);
    assert_non_null(strstr(err, "rank 1's end twice"));
}

/* a message of a header and n records of size rec */
static unsigned char msg[4096];

static size_t records(int32_t rank, int32_t ring, const void *recs, size_t n, size_t rec)
{
    struct relay_hdr h = {.rank = rank, .ring = ring, .dropped = 0, .mem_now = 1 << 20, .mem_peak = 1 << 21};
    memcpy(msg, &h, sizeof(h));
    memcpy(msg + sizeof(h), recs, n * rec);
    return sizeof(h) + n * rec;
}

static struct span good_span(int64_t t0, int64_t t1)
{
    struct span s;
    memset(&s, 0, sizeof(s));
    s.t0_ns = t0;
    s.t1_ns = t1;
    s.lane = LANE_MAIN;
    s.cat = CAT_FORWARD;
    s.tag = -1;
    return s;
}

static void test_spans(void **state)
{
    struct span s[2] = {good_span(110 * S_NS, 111 * S_NS), good_span(INT64_MIN, 112 * S_NS)};
    /* the message of the issue: t0 = INT64_MIN */
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    assert_non_null(strstr(err, "span 1 with a time off the clock"));
    s[1] = good_span(112 * S_NS, INT64_MAX);
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    s[1] = good_span(112 * S_NS, 111 * S_NS);
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    assert_non_null(strstr(err, "span 1 that ends before it starts"));
    s[1] = good_span(5 * S_NS, 6 * S_NS); /* before the run began */
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    assert_non_null(strstr(err, "span 1 outside the run"));
    s[1] = good_span(150 * S_NS, 300 * S_NS); /* past now */
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    s[1] = good_span(112 * S_NS, 113 * S_NS);
    s[1].lane = LANE_COUNT;
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    assert_non_null(strstr(err, "span 1 of no known kind"));
    s[1].lane = LANE_MAIN;
    s[1].cat = CAT_COUNT;
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    s[1].cat = CAT_COMM;
    s[1].coll = COLL_COUNT;
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    s[1].coll = COLL_ALLREDUCE;
    s[1].bytes = UINT64_MAX;
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    s[1].bytes = 2678824;
    /* not a whole number of spans; another process's rank; a ring out of range */
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RING_MAIN, s, 2, sizeof(*s)) - 1), -1);
    assert_non_null(strstr(err, "not a whole number of records"));
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(0, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(2, RANK_RING_MAIN, s, 2, sizeof(*s))), -1);
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, RANK_RINGS, s, 2, sizeof(*s))), -1);
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, records(1, -1, s, 2, sizeof(*s))), -1);
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, sizeof(struct relay_hdr) - 1), -1);
    /* right: passes, the records where they were, untouched */
    size_t len = records(1, RANK_RING_COMM, s, 2, sizeof(*s));
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, len), 0);
    assert_int_equal(in.n, 2);
    assert_ptr_equal(in.recs, msg + sizeof(struct relay_hdr));
    assert_int_equal(in.hdr.ring, RANK_RING_COMM);
    assert_memory_equal(in.recs, s, sizeof(s));
    /* a header alone: no records */
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, sizeof(struct relay_hdr)), 0);
    assert_int_equal(in.n, 0);
    /* once the rank has ended, nothing more of it */
    done[1] = 1;
    assert_int_equal(decode(RELAY_TAG_SPANS, msg, len), -1);
    assert_non_null(strstr(err, "after its end"));
}

static struct step_rec good_step(uint32_t step, int64_t t0)
{
    struct step_rec s;
    memset(&s, 0, sizeof(s));
    s.step = step;
    s.t0_ns = t0;
    s.t1_ns = t0 + S_NS / 10;
    s.loss = 2.3f;
    s.lr = 0.01f;
    s.correct = 3;
    s.n = 32;
    s.desched_ns = -1;
    return s;
}

static void test_steps(void **state)
{
    struct step_rec s[3] = {good_step(0, 110 * S_NS), good_step(1, 111 * S_NS), good_step(2, 112 * S_NS)};
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 3, sizeof(*s))), 0);
    assert_int_equal(in.n, 3);
    assert_int_equal(next_step[1], 3);
    /* the same steps again, or one out of order: refused */
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 3, sizeof(*s))), -1);
    assert_non_null(strstr(err, "step record 0 out of order (step 0 after step 2)"));
    s[0] = good_step(5, 113 * S_NS);
    s[1] = good_step(4, 114 * S_NS);
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 2, sizeof(*s))), -1);
    assert_int_equal(next_step[1], 3); /* (a refused message moves nothing) */
    s[1] = good_step(6, 114 * S_NS);
    s[1].correct = 33;
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 2, sizeof(*s))), -1);
    assert_non_null(strstr(err, "33 correct of 32"));
    s[1] = good_step(6, 114 * S_NS);
    s[1].t0_ns = INT64_MIN;
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 2, sizeof(*s))), -1);
    s[1] = good_step(6, 114 * S_NS);
    s[1].desched_ns = -5;
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 2, sizeof(*s))), -1);
    s[1] = good_step(6, 114 * S_NS);
    assert_int_equal(decode(RELAY_TAG_STEPS, msg, records(1, 0, s, 2, sizeof(*s))), 0);
    assert_int_equal(next_step[1], 7);
    struct epoch_rec e = {.epoch = 1, .correct = 900, .total = 1000, .loss_sum = 300.0};
    assert_int_equal(decode(RELAY_TAG_EPOCHS, msg, records(1, 0, &e, 1, sizeof(e))), 0);
    e.correct = 1001;
    assert_int_equal(decode(RELAY_TAG_EPOCHS, msg, records(1, 0, &e, 1, sizeof(e))), -1);
}

static void test_other_tags(void **state)
{
    assert_int_equal(decode(RELAY_TAG_BEAT, NULL, 0), 0);
    assert_int_equal(decode(999, msg, 8), -1);
    assert_non_null(strstr(err, "unknown kind (tag 999"));
    assert_int_equal(decode(RELAY_TAG_CTRL, msg, sizeof(struct relay_ctrl)), -1); /* (process 0's own) */
    int64_t off[2] = {-3 * S_NS, 1000};
    assert_int_equal(decode(RELAY_TAG_OFFSET, off, sizeof(off)), 0);
    assert_true(in.offset[0] == -3 * S_NS && in.offset[1] == 1000);
    off[0] = INT64_MIN;
    assert_int_equal(decode(RELAY_TAG_OFFSET, off, sizeof(off)), -1);
    off[0] = 0;
    off[1] = -1;
    assert_int_equal(decode(RELAY_TAG_OFFSET, off, sizeof(off)), -1);
    int64_t t = 123 * S_NS, got;
    assert_int_equal(relay_decode_time((unsigned char *)&t, sizeof(t), &got, err, sizeof(err)), 0);
    assert_true(got == 123 * S_NS);
    t = INT64_MIN;
    assert_int_equal(relay_decode_time((unsigned char *)&t, sizeof(t), &got, err, sizeof(err)), -1);
    assert_int_equal(relay_decode_time((unsigned char *)&t, 4, &got, err, sizeof(err)), -1);
    struct relay_ctrl c = {.what = RELAY_PAUSE, .at = 40}, cg;
    assert_int_equal(relay_decode_ctrl((unsigned char *)&c, sizeof(c), &cg, err, sizeof(err)), 0);
    assert_true(cg.what == RELAY_PAUSE && cg.at == 40);
    c.what = 77;
    assert_int_equal(relay_decode_ctrl((unsigned char *)&c, sizeof(c), &cg, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_done, setup),
        cmocka_unit_test_setup(test_spans, setup),
        cmocka_unit_test_setup(test_steps, setup),
        cmocka_unit_test_setup(test_other_tags, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
