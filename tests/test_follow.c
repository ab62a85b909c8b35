/* test_follow.c - the follower (src/follow.h) on hand-made traces in a
 * temporary folder, every expected value worked out here by hand:
 *   - a cycle's events as timeline spans: each thread's innermost op
 *     decides, ops cut at the ProfilerStep boundaries, nothing outside
 *     them, another thread's collectives on the comm lane;
 *   - its split and its own work per step (wall less the time in
 *     collectives), and the report's sum over cycles;
 *   - the straggler of each cycle index, marked on the slow rank only,
 *     against the median of the other ranks' own work: on 2 ranks, and on
 *     3 and 4 (the median of two values their mean; of three the middle
 *     one once sorted);
 *   - ranks from names, and from tensorboard workers in landing order;
 *   - a file written in pieces (plain, and gzip), closed half way or not,
 *     is not read until whole, then once; a malformed one is refused with
 *     a message; all with inotify and with the listing (DDPTOP_FOLLOW_POLL).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "follow.h"
#include "report.h"
#include "test_gzip.h"

static char g_dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/ddptop_test_follow_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *text, size_t n, const char *mode)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void put_text(const char *name, const char *text)
{
    put(name, text, strlen(text), "wb");
}

/* Polls until n cycles landed (or 10 s). */
static void poll_cycles(struct follow *f, size_t n)
{
    for (int k = 0; k < 200 && f->ncycles < n; k++)
        follow_poll(f, 50);
    assert_int_equal(f->ncycles, n);
}

/* An autograd-format op, ts and dur in us. */
#define OP(name, tid, ts, dur)                                                                                         \
    "{\"name\":\"" name "\",\"ph\":\"X\",\"ts\":" #ts ",\"dur\":" #dur ",\"tid\":" #tid                                \
    ",\"pid\":\"CPU functions\",\"args\":{}}"

/* Two steps, [0,100) and [100,200) us, of one rank:
 *   thread 1: conv [10,40) with c10d::allreduce_ [20,30) inside it (and
 *             record_param_comms [22,26) inside that: an op that starts
 *             two deep, where the innermost open op, not the outermost,
 *             decides [20,22)), add
 *             [60,70), mm [95,130) across the step boundary, mm [150,160),
 *             and zeros [205,210) after the last step;
 *   thread 2: gloo:all_reduce [50,90).
 * Thread 1 has the most ops: the main lane. The spans (us):
 *   main, step 1: compute [10,20) comm [20,30) compute [30,40) [60,70) [95,100)
 *   main, step 2: compute [100,130) [150,160)
 *   comm, step 1: comm [50,90)
 * wall = 200; compute = 10+10+10+35+10 = 75; comm = [20,30) + [50,90) less
 * [60,70) under compute = 40; idle = 85; coll = |[20,30) U [50,90)| = 50,
 * so its own work is (200 - 50) / 2 = 75 us per step. */
static const char *const two_steps =
    "[" OP("ProfilerStep#1", 1, 0, 100) "," OP("aten::conv2d", 1, 10, 30) "," OP("c10d::allreduce_", 1, 20, 10) "," OP(
        "record_param_comms", 1, 22,
        4) "," OP("gloo:all_reduce", 2, 50,
                  40) "," OP("aten::add", 1, 60, 10) "," OP("aten::mm", 1, 95,
                                                            35) "," OP("ProfilerStep#2", 1, 100,
                                                                       100) "," OP("aten::mm", 1, 150,
                                                                                   10) "," OP("aten::zeros", 1, 205,
                                                                                              5) "]";

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static void test_spans_and_figures(void **state)
{
    (void)state;
    struct follow f;
    char err[512];
    put_text("rank0.1.pt.trace.json", two_steps);
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    poll_cycles(&f, 1);
    assert_int_equal(f.nranks, 1);
    const struct follow_rank *r = &f.ranks[0];
    assert_int_equal(r->rank, 0);
    static const struct {
        int lane, cat;
        uint32_t step;
        int64_t t0_us, t1_us;
    } want[] = {
        {LANE_MAIN, CAT_FORWARD, 1, 10, 20},   {LANE_MAIN, CAT_COMM, 1, 20, 30},
        {LANE_MAIN, CAT_FORWARD, 1, 30, 40},   {LANE_MAIN, CAT_FORWARD, 1, 60, 70},
        {LANE_MAIN, CAT_FORWARD, 1, 95, 100},  {LANE_MAIN, CAT_FORWARD, 2, 100, 130},
        {LANE_MAIN, CAT_FORWARD, 2, 150, 160}, {LANE_COMM, CAT_COMM, 1, 50, 90},
    };
    size_t nw = sizeof(want) / sizeof(want[0]);
    assert_int_equal(r->nspans, nw);
    struct span *s = malloc(sizeof(*s) * r->nspans);
    memcpy(s, r->spans, sizeof(*s) * r->nspans);
    qsort(s, r->nspans, sizeof(*s), span_cmp);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(s[i].lane, want[i].lane);
        /* (compute is compute: the reader's class for an aten op) */
        if (want[i].cat == CAT_COMM)
            assert_int_equal(s[i].cat, CAT_COMM);
        else
            assert_true(s[i].cat == CAT_FORWARD || s[i].cat == CAT_BACKWARD || s[i].cat == CAT_OPTIMIZER);
        assert_int_equal(s[i].step, want[i].step);
        assert_int_equal(s[i].t0_ns, want[i].t0_us * 1000);
        assert_int_equal(s[i].t1_ns, want[i].t1_us * 1000);
    }
    free(s);
    assert_int_equal(r->lanes, (1u << LANE_MAIN) | (1u << LANE_COMM));
    const struct follow_cycle *c = &f.cycles[0];
    assert_int_equal(c->nsteps, 2);
    assert_int_equal(c->step_lo, 1);
    assert_int_equal(c->step_hi, 2);
    assert_int_equal(c->f.b.wall_ns, 200000);
    assert_int_equal(c->f.b.compute_ns, 75000);
    assert_int_equal(c->f.b.comm_ns, 40000);
    assert_int_equal(c->f.b.idle_ns, 85000);
    assert_true(fabs(c->own_ms - 0.075) < 1e-9);
    assert_true(fabs(c->split.comm - 20.0) < 1e-9);
    assert_true(fabs(c->ms_mean - 0.1) < 1e-9);
    assert_false(c->straggler); /* (one rank: nobody to be slower than) */
    follow_close(&f);
}

/* One step [0,100) us; compute [0,a), gloo:all_reduce [a,100) on thread 2:
 * its own work is a us. */
static char *one_step(int step, int a)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 512,
             "[{\"name\":\"ProfilerStep#%d\",\"ph\":\"X\",\"ts\":0,\"dur\":100,\"tid\":1,\"pid\":\"CPU functions\"},"
             "{\"name\":\"aten::conv2d\",\"ph\":\"X\",\"ts\":0,\"dur\":%d,\"tid\":1,\"pid\":\"CPU functions\"},"
             "{\"name\":\"gloo:all_reduce\",\"ph\":\"X\",\"ts\":%d,\"dur\":%d,\"tid\":2,\"pid\":\"CPU functions\"}]",
             step, a, a, 100 - a);
    return b;
}

/* Cycle 1: rank 0 works 90 us a step, rank 1 40 (and waits 60 for rank
 * 0): 90 >= 1.2 x 40, rank 0 is the straggler. Cycle 2: 60 and 55, within
 * 1.2 of each other: none. Cycle 3: rank 1's 80 against rank 0's 50. The
 * report adds each rank's cycles less its first step (step 1, the whole of
 * its first cycle), as ms/step leaves it out: rank 0 computes 60 + 50 = 110
 * of 200 us and communicates 90, rank 1 computes 55 + 80 = 135. Its step
 * times are all three steps'. */
static void test_straggler(void **state)
{
    (void)state;
    struct follow f;
    char err[512], msg[400];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    put_text("rank0.1000.pt.trace.json", one_step(1, 90));
    poll_cycles(&f, 1);
    assert_false(f.cycles[0].straggler); /* alone in its cycle so far */
    put_text("rank1.1001.pt.trace.json", one_step(1, 40));
    poll_cycles(&f, 2);
    assert_true(f.cycles[0].straggler);
    assert_false(f.cycles[1].straggler);
    assert_true(fabs(f.cycles[0].others_ms - 0.040) < 1e-9);
    int said = 0;
    while (follow_message(&f, msg, sizeof(msg)))
        said += strstr(msg, "cycle 1: rank 0 is the straggler") != NULL;
    assert_int_equal(said, 1);
    put_text("rank1.2001.pt.trace.json", one_step(6, 55));
    put_text("rank0.2000.pt.trace.json", one_step(6, 60));
    poll_cycles(&f, 4);
    put_text("rank0.3000.pt.trace.json", one_step(11, 50));
    put_text("rank1.3001.pt.trace.json", one_step(11, 80));
    poll_cycles(&f, 6);
    for (size_t i = 0; i < f.ncycles; i++) {
        const struct follow_cycle *c = &f.cycles[i];
        int slow = (c->cycle == 0 && c->rank == 0) || (c->cycle == 2 && c->rank == 1);
        assert_int_equal(c->straggler, slow);
        assert_int_equal(c->cycle, (int)(c->step_lo / 5)); /* steps 1, 6, 11: cycles 0, 1, 2 */
    }
    assert_int_equal(f.ranks[0].ncycles, 3);
    assert_int_equal(f.ranks[1].ncycles, 3);
    assert_int_equal(f.cycles[f.ranks[0].latest].step_lo, 11);
    struct run_result res;
    assert_int_equal(follow_result(&f, &res, err, sizeof(err)), 0);
    assert_int_equal(res.nranks, 2);
    assert_int_equal(res.ranks[0].rank, 0);
    assert_int_equal(res.ranks[0].steps, 3);
    assert_int_equal(res.ranks[0].b.wall_ns, 200000);
    assert_int_equal(res.ranks[0].b.compute_ns, 110000);
    assert_true(fabs(res.ranks[0].split.comm - 45.0) < 1e-9);
    assert_int_equal(res.ranks[1].b.compute_ns, 55000 + 80000);
    result_free(&res);
    follow_close(&f);
}

/* Lands one step file per rank of cycle 1, in the order given, each own
 * work own_us[rank] us, polling each in before the next; then checks every
 * rank's straggler mark and the others' median against want, and that the
 * straggler alone was told, once. */
static void straggler_of(const int *order, const int *own_us, int n, int slow, const double *median_us)
{
    struct follow f;
    char err[512], msg[400], name[64], want[64];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "rank%d.%d.pt.trace.json", order[i], 1000 + order[i]);
        put_text(name, one_step(1, own_us[order[i]]));
        poll_cycles(&f, (size_t)i + 1);
    }
    assert_int_equal(f.nranks, n);
    for (size_t i = 0; i < f.ncycles; i++) {
        const struct follow_cycle *c = &f.cycles[i];
        assert_int_equal(c->cycle, 0);
        assert_true(fabs(c->own_ms - own_us[c->rank] / 1e3) < 1e-9);
        assert_true(fabs(c->others_ms - median_us[c->rank] / 1e3) < 1e-9);
        assert_int_equal(c->straggler, c->rank == slow);
    }
    snprintf(want, sizeof(want), "cycle 1: rank %d is the straggler", slow);
    int said = 0, others = 0;
    while (follow_message(&f, msg, sizeof(msg))) {
        said += strstr(msg, want) != NULL;
        others += strstr(msg, "is the straggler") != NULL && strstr(msg, want) == NULL;
    }
    assert_int_equal(said, 1);
    assert_int_equal(others, 0);
    follow_close(&f);
}

/* 3 ranks: own work 50, 58 and 68 us a step, landing in rank order. The
 * median of two values is their mean: rank 2's others are 50 and 58, a
 * median of 54, and 68 >= 1.2 x 54 = 64.8: the straggler (against the
 * larger one alone, 58 x 1.2 = 69.6, it would not be). Rank 0's others
 * are 58 and 68 (63), rank 1's 50 and 68 (59): neither is 1.2 times that.
 * Before rank 2 lands, 58 against 50 is under 1.2: nobody is marked. */
static void test_straggler_3(void **state)
{
    (void)state;
    static const int order[] = {0, 1, 2}, own[] = {50, 58, 68};
    static const double median[] = {63, 59, 54};
    straggler_of(order, own, 3, 2, median);
}

/* 4 ranks: own work 58, 68, 50 and 55 us (ranks 0 to 3), landing as
 * ranks 0, 2, 3, then 1, so that the others' values come unsorted. The
 * median of three values is the middle one once sorted: rank 1's others
 * 58, 50, 55 give 55 (not 50, the middle as they came, nor their mean
 * 54.33), and 68 >= 1.2 x 55 = 66: the straggler. Rank 0: 50, 55, 68 give
 * 55 (58 < 66); rank 2: 58, 55, 68 give 58; rank 3: 58, 50, 68 give 58.
 * Before rank 1 lands the largest ratio is rank 0's 58 against 52.5. */
static void test_straggler_4(void **state)
{
    (void)state;
    static const int order[] = {0, 2, 3, 1}, own[] = {58, 68, 50, 55};
    static const double median[] = {55, 55, 58, 58};
    straggler_of(order, own, 4, 1, median);
}

/* Files without a rank: a tensorboard worker keeps the rank its first
 * file got, a new worker the lowest free one, in landing order; said once. */
static void test_workers(void **state)
{
    (void)state;
    struct follow f;
    char err[512], msg[400];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    put_text("node_b.100.pt.trace.json", one_step(1, 50));
    poll_cycles(&f, 1);
    put_text("node_a.101.pt.trace.json", one_step(1, 50));
    poll_cycles(&f, 2);
    put_text("node_b.200.pt.trace.json", one_step(6, 50));
    poll_cycles(&f, 3);
    assert_int_equal(f.cycles[0].rank, 0);
    assert_int_equal(f.cycles[1].rank, 1);
    assert_int_equal(f.cycles[2].rank, 0);
    assert_int_equal(f.cycles[2].cycle, 1);
    int said = 0;
    while (follow_message(&f, msg, sizeof(msg)))
        said += strstr(msg, "names no rank") != NULL;
    assert_int_equal(said, 1);
    follow_close(&f);
}

/* A file in pieces: each piece closed (the writer opens it again), or
 * one writer that keeps it open; plain and gzip. Not read until whole;
 * then read once. */
static void pieces(int gz, int reopen)
{
    struct follow f;
    char err[512], msg[400];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    const char *name = gz ? "rank0.5.pt.trace.json.gz" : "rank0.5.pt.trace.json";
    const char *text = two_steps;
    static char z[8192];
    size_t n = strlen(text);
    if (gz)
        n = gzip_member(text, strlen(text), z, sizeof(z), 6);
    const char *bytes = gz ? z : text;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *w = reopen ? NULL : fopen(path, "wb");
    size_t step = n / 5 + 1;
    for (size_t at = 0; at < n; at += step) {
        size_t k = at + step < n ? step : n - at;
        if (reopen) {
            put(name, bytes + at, k, at ? "ab" : "wb");
        } else {
            assert_int_equal(fwrite(bytes + at, 1, k, w), k);
            fflush(w);
        }
        if (at + k == n)
            break;
        /* past the quiet time: the follower tries the piece so far */
        for (int t = 0; t < 5; t++)
            follow_poll(&f, 60);
        assert_int_equal(f.ncycles, 0);
        if (f.pending != 1)
            fail_msg("gz %d reopen %d at %zu of %zu: %d pending, %zu files", gz, reopen, at, n, f.pending, f.nfiles);
    }
    if (w)
        assert_int_equal(fclose(w), 0);
    poll_cycles(&f, 1);
    for (int t = 0; t < 5; t++)
        follow_poll(&f, 60);
    assert_int_equal(f.ncycles, 1);
    assert_int_equal(f.pending, 0);
    assert_int_equal(f.cycles[0].f.b.compute_ns, 75000);
    while (follow_message(&f, msg, sizeof(msg)))
        fail_msg("unexpected message: %s", msg);
    follow_close(&f);
    unlink(path);
}

static void test_pieces(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++)
        for (int reopen = 0; reopen < 2; reopen++)
            pieces(gz, reopen);
}

static void test_pieces_polling(void **state)
{
    setenv("DDPTOP_FOLLOW_POLL", "1", 1);
    test_pieces(state);
    struct follow f;
    char err[512];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    assert_false(f.inotify);
    follow_close(&f);
    unsetenv("DDPTOP_FOLLOW_POLL");
}

/* What is not a cycle: a malformed file and one of ddptop's own traces
 * are refused with a message, and following goes on. */
static void test_refused(void **state)
{
    (void)state;
    struct follow f;
    char err[512], msg[400];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    put_text("bad.json", "[{}}]");
    put_text("rank1.7.pt.trace.json", one_step(1, 30));
    poll_cycles(&f, 1);
    for (int t = 0; t < 5; t++)
        follow_poll(&f, 60);
    assert_int_equal(f.refused, 1);
    int said = 0;
    while (follow_message(&f, msg, sizeof(msg)))
        said += strstr(msg, "bad.json") != NULL && strstr(msg, "left out") != NULL;
    assert_int_equal(said, 1);
    follow_close(&f);
    assert_int_equal(follow_open(&f, "/nonexistent/ddptop", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/ddptop"));
    char file[128];
    snprintf(file, sizeof(file), "%s/bad.json", g_dir);
    assert_int_equal(follow_open(&f, file, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a folder"));
}

/* On its own thread, as the UI runs it: the cycles land while this
 * thread reads them under the lock (for TSan). */
static void test_thread(void **state)
{
    (void)state;
    struct follow f;
    char err[512], msg[400];
    assert_int_equal(follow_open(&f, g_dir, err, sizeof(err)), 0);
    assert_int_equal(follow_start(&f, err, sizeof(err)), 0);
    put_text("rank0.1.pt.trace.json", one_step(1, 70));
    put_text("rank1.2.pt.trace.json", one_step(1, 30));
    size_t n = 0;
    for (int k = 0; k < 400 && n < 2; k++) {
        usleep(25000);
        follow_lock(&f);
        n = f.ncycles;
        follow_unlock(&f);
    }
    assert_int_equal(n, 2);
    int said = 0;
    while (follow_message(&f, msg, sizeof(msg)))
        said += strstr(msg, "rank 0 is the straggler") != NULL;
    follow_stop(&f);
    while (follow_message(&f, msg, sizeof(msg)))
        said += strstr(msg, "rank 0 is the straggler") != NULL;
    assert_int_equal(said, 1);
    follow_close(&f);
}

int main(void)
{
    unsetenv("DDPTOP_FOLLOW_POLL");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spans_and_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_straggler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_straggler_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_straggler_4, setup, teardown),
        cmocka_unit_test_setup_teardown(test_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pieces_polling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thread, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
