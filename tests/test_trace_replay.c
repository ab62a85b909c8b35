/* test_trace_replay.c - replaying foreign traces: a hand-made Kineto GPU
 * trace (nccl kernels, memcpy/memset, runtime launches with correlation
 * ids) whose breakdown and HTA idle split are computed here by hand from
 * its intervals, an autograd-profiler bare array whose gloo / c10d ops must
 * count as communication, the merged-interval arithmetic, the CLI's
 * --batch --replay JSON (the live report's schema, with what a trace lacks
 * null), and the collector's device view (a rank with LANE_GPU spans is
 * broken down over those alone). Then the reader's limits: malformed text
 * refused at the byte at fault (never a loop), a rank past the 64th
 * refused at once, ranks repeated across files counted, gzip from memory
 * (whole, cut, damaged, in several members), a step without spans, and
 * anything but a regular file refused. Last, the user's own PyTorch job:
 * Kineto's gloo collectives recorded as user_annotation (a hand-made
 * file, worked out on paper), ranks from distributedInfo, names and
 * order, a rank's cycles as its windows, a follower's whole-file reads,
 * and folders. */
#include <cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "config.h"
#include "data.h"
#include "devices.h"
#include "metrics.h"
#include "run.h"
#include "trace_analyze.h"
#include "test_gzip.h"
#include "trace_read.h"
#include "tracing.h"

#define FIX DDPTOP_TEST_DIR "/fixtures/trace/"

/* The Kineto fixture's GPU ops (us, from kineto_gpu.json):
 *   memcpy  [1000,     1010)   stream 7, launched at  995
 *   kernel  [1010.020, 1050)   stream 7, launched at  998
 *   gemm    [1060,     1100)   stream 7, launched at 1055
 *   nccl AR [1080,     1130)   stream 20, launched at 1040
 *   kernel  [1150,     1170)   stream 7, launched at 1120
 *   memset  [1170.010, 1175)   stream 7, launched at 1100
 *   nccl AG [1180,     1190)   stream 20, launched at 1178
 * window [1000, 1190): wall 190 us.
 * compute = 39.98 + 40 + 20 = 99.98 us
 * comm union = 50 + 10 = 60 us; under compute [1080,1100) = 20 us; exposed 40 us
 * data = 10 + 4.99 = 14.99 us; idle = 190 - 99.98 - 40 - 14.99 = 35.03 us
 * gaps, by HTA's rule (launched after the gap began: host-wait; else
 * under the threshold, 30 us by default: kernel-wait; else other):
 *       [1010,1010.020) 20 ns, next launched at 998: kernel-wait
 *       [1050,1060) 10 us, next launched at 1055 > 1050: host-wait
 *       [1130,1150) 20 us, next launched at 1120 < 1130: kernel-wait
 *       [1170,1170.010) 10 ns, next launched at 1100: kernel-wait
 *       [1175,1180) 5 us, next launched at 1178 > 1175: host-wait
 * host-wait 15 us, kernel-wait 20.030 us, other 0; at a 15 us threshold
 * the 20 us gap is other (kernel-wait 30 ns, other 20 us); at 0 every
 * gap not host-wait is other (20.030 us). */
#define K_WALL 190000
#define K_COMPUTE 99980
#define K_COMM 40000
#define K_COMM_UNION 60000
#define K_OVERLAP 20000
#define K_DATA 14990
#define K_IDLE 35030
#define K_HOST_WAIT 15000
#define K_KERNEL_WAIT 20030
#define K_OTHER 0

static void test_kineto_gpu_breakdown(void **state)
{
    struct trace_doc d;
    char err[512];
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, FIX "kineto_gpu.json", err, sizeof(err)), 0);
    assert_int_equal(d.flavor, TRACE_KINETO);
    assert_true(d.complete);
    assert_string_equal(d.backend, "nccl");
    assert_int_equal(d.world, 2);
    assert_int_equal(d.nranks, 1);
    const struct trace_rank *r = &d.ranks[0];
    assert_int_equal(r->rank, 0);
    assert_string_equal(r->device, "cuda:0");
    assert_int_equal(r->ngpu, 7);
    assert_int_equal(r->nsteps, 1);
    assert_int_equal(r->steps[0].step, 4);
    int launched = 0;
    for (size_t i = 0; i < r->nops; i++)
        launched += r->ops[i].gpu && r->ops[i].launch_ns >= 0;
    assert_int_equal(launched, 7);

    struct trace_figures f;
    assert_int_equal(trace_analyze_rank(&f, r, NULL, TRACE_IDLE_DELAY_NS), 0);
    assert_true(f.gpu_view);
    assert_int_equal(f.b.wall_ns, K_WALL);
    assert_int_equal(f.b.compute_ns, K_COMPUTE);
    assert_int_equal(f.b.comm_ns, K_COMM);
    assert_int_equal(f.b.comm_union_ns, K_COMM_UNION);
    assert_int_equal(f.b.overlap_ns, K_OVERLAP);
    assert_int_equal(f.b.data_ns, K_DATA);
    assert_int_equal(f.b.idle_ns, K_IDLE);
    assert_int_equal(f.b.compute_ns + f.b.comm_ns + f.b.data_ns + f.b.idle_ns, f.b.wall_ns);
    assert_true(f.idle_split_valid);
    assert_int_equal(f.host_wait_ns, K_HOST_WAIT);
    assert_int_equal(f.kernel_wait_ns, K_KERNEL_WAIT);
    assert_int_equal(f.other_idle_ns, K_OTHER);

    /* a 15 us threshold: the 20 us gap, launched early, is other */
    assert_int_equal(trace_analyze_rank(&f, r, NULL, 15000), 0);
    assert_int_equal(f.host_wait_ns, K_HOST_WAIT);
    assert_int_equal(f.kernel_wait_ns, 30);
    assert_int_equal(f.other_idle_ns, 20000);
    /* threshold 0: every gap launched early is other */
    assert_int_equal(trace_analyze_rank(&f, r, NULL, 0), 0);
    assert_int_equal(f.kernel_wait_ns, 0);
    assert_int_equal(f.host_wait_ns, K_HOST_WAIT);
    assert_int_equal(f.other_idle_ns, 20030);
    trace_doc_free(&d);
}

/* A small fixture file (under 64 KiB), parsed. */
static cJSON *fixture_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_true(n < sizeof(buf) - 1);
    buf[n] = 0;
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    return doc;
}

/* The same Kineto events as a bare JSON array (no distributedInfo): the
 * same figures. */
static void test_kineto_array_form(void **state)
{
    cJSON *doc = fixture_json(FIX "kineto_gpu.json");
    char *arr = cJSON_PrintUnformatted(cJSON_GetObjectItem(doc, "traceEvents"));
    cJSON_Delete(doc);
    assert_true(arr[0] == '[');
    struct trace_doc d;
    char err[256];
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, arr, strlen(arr), "array", err, sizeof(err)), 0);
    free(arr);
    assert_int_equal(d.flavor, TRACE_AUTOGRAD); /* the bare-array form */
    assert_int_equal(d.nranks, 1);
    struct trace_figures fig;
    assert_int_equal(trace_analyze_rank(&fig, &d.ranks[0], NULL, TRACE_IDLE_DELAY_NS), 0);
    assert_int_equal(fig.b.wall_ns, K_WALL);
    assert_int_equal(fig.b.compute_ns, K_COMPUTE);
    assert_int_equal(fig.b.comm_ns, K_COMM);
    assert_int_equal(fig.b.idle_ns, K_IDLE);
    assert_int_equal(fig.host_wait_ns, K_HOST_WAIT);
    assert_int_equal(fig.kernel_wait_ns, K_KERNEL_WAIT);
    assert_int_equal(fig.other_idle_ns, K_OTHER);
    trace_doc_free(&d);
}

/* Autograd profiler: 172 us from the first op to the last;
 * compute: tid 1 [100,160) + [170,220) + [255,272) = 127 us
 * comm: c10d::allreduce_ [220,225) U gloo:all_reduce [222,250) = 30 us
 * idle: [160,170) + [250,255) = 15 us */
static void test_autograd_gloo(void **state)
{
    struct trace_doc d;
    char err[512];
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, FIX "autograd_gloo.json", err, sizeof(err)), 0);
    assert_int_equal(d.flavor, TRACE_AUTOGRAD);
    assert_int_equal(d.nranks, 1);
    const struct trace_rank *r = &d.ranks[0];
    assert_int_equal(r->nops, 10);
    assert_int_equal(r->ngpu, 0);
    int comm_ops = 0;
    for (size_t i = 0; i < r->nops; i++)
        comm_ops += r->ops[i].cat == CAT_COMM;
    assert_int_equal(comm_ops, 2);
    struct trace_figures f;
    assert_int_equal(trace_analyze_rank(&f, r, NULL, TRACE_IDLE_DELAY_NS), 0);
    assert_false(f.gpu_view);
    assert_false(f.idle_split_valid);
    assert_int_equal(f.b.wall_ns, 172000);
    assert_int_equal(f.b.compute_ns, 127000);
    assert_int_equal(f.b.comm_ns, 30000);
    assert_int_equal(f.b.comm_union_ns, 30000);
    assert_int_equal(f.b.idle_ns, 15000);
    assert_int_equal(f.b.data_ns, 0);
    trace_doc_free(&d);
}

/* A PyTorch trace's split covers the steps its ms/step covers: the first
 * ProfilerStep is left out of both. Three steps of 100 us (autograd
 * format, gloo on tid 2):
 *   step 0 [0, 100): all compute (its set-up)
 *   steps 1 and 2: 50 us compute, then a 50 us gloo:all_reduce
 * Steps 1 and 2, by hand: wall 200 us, compute 100, comm 100 (50%), ms/step
 * 0.1, compute 0.05 ms a step; the whole run would give comm 100 of 300 us
 * (33%). */
static void test_foreign_step_set(void **state)
{
    static const char text[] =
        "[{\"name\": \"ProfilerStep#0\", \"ph\": \"X\", \"ts\": 0, \"dur\": 100, \"tid\": 1, \"pid\": \"CPU "
        "functions\"},"
        " {\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 0, \"dur\": 100, \"tid\": 1, \"pid\": \"CPU functions\"},"
        " {\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 100, \"dur\": 100, \"tid\": 1, \"pid\": \"CPU "
        "functions\"},"
        " {\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 100, \"dur\": 50, \"tid\": 1, \"pid\": \"CPU functions\"},"
        " {\"name\": \"gloo:all_reduce\", \"ph\": \"X\", \"ts\": 150, \"dur\": 50, \"tid\": 2, \"pid\": \"CPU "
        "functions\"},"
        " {\"name\": \"ProfilerStep#2\", \"ph\": \"X\", \"ts\": 200, \"dur\": 100, \"tid\": 1, \"pid\": \"CPU "
        "functions\"},"
        " {\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 200, \"dur\": 50, \"tid\": 1, \"pid\": \"CPU functions\"},"
        " {\"name\": \"gloo:all_reduce\", \"ph\": \"X\", \"ts\": 250, \"dur\": 50, \"tid\": 2, \"pid\": \"CPU "
        "functions\"}]";
    char path[] = "/tmp/ddptop-stepset-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
    close(fd);
    struct replay rp;
    char err[512];
    assert_int_equal(replay_load(&rp, path, err, sizeof(err)), 0);
    unlink(path);
    const struct rank_result *q = &rp.res.ranks[0];
    assert_int_equal(q->steps, 3);
    assert_float_equal(q->ms_mean, 0.1, 1e-12);
    assert_int_equal(q->b.wall_ns, 200000);
    assert_int_equal(q->b.compute_ns, 100000);
    assert_int_equal(q->b.comm_ns, 100000);
    assert_float_equal(q->split.comm, 50.0, 1e-9);
    assert_float_equal(q->compute_ms, 0.05, 1e-12); /* 100 us over the 2 steps */
    assert_float_equal(rp.res.split.comm, 50.0, 1e-9);
    replay_free(&rp);
}

/* The one sweep over flat intervals (they overlap rather than nest), over
 * the covered time and over given windows. */
static void test_merged_intervals(void **state)
{
    /* compute [0,10) U [5,20); comm [15,30) U [40,50); data [25,45) */
    struct breakdown_iv s[] = {{0, 10, BREAKDOWN_FLAT, CAT_FORWARD}, {5, 20, BREAKDOWN_FLAT, CAT_BACKWARD},
                               {15, 30, BREAKDOWN_FLAT, CAT_COMM},   {40, 50, BREAKDOWN_FLAT, CAT_COMM},
                               {25, 45, BREAKDOWN_FLAT, CAT_DATA},   {60, 70, BREAKDOWN_FLAT, TRACE_CAT_NEUTRAL}};
    struct breakdown f;
    assert_int_equal(breakdown_sweep(&f, s, 6, NULL, 0, NULL, NULL, NULL), 0);
    assert_int_equal(f.wall_ns, 50);
    assert_int_equal(f.compute_ns, 20);
    assert_int_equal(f.comm_ns, 20); /* [20,30) + [40,50) */
    assert_int_equal(f.comm_union_ns, 25);
    assert_int_equal(f.overlap_ns, 5);
    assert_int_equal(f.data_ns, 10); /* [30,40) */
    assert_int_equal(f.idle_ns, 0);
    const int64_t win[][2] = {{0, 10}, {45, 55}};
    assert_int_equal(breakdown_sweep(&f, s, 6, win, 2, NULL, NULL, NULL), 0);
    assert_int_equal(f.wall_ns, 20);
    assert_int_equal(f.compute_ns, 10);
    assert_int_equal(f.comm_ns, 5);
    assert_int_equal(f.idle_ns, 5);
}

/* The collector's two views of one step, window [0, 100) ns.
 * Host spans (both ranks):
 *   main  forward [0,30) backward [30,60) comm [60,90) with a wait [70,85)
 *         inside, optimizer [90,95); data lane: data [92,100)
 *   compute [0,60)+[90,95) = 65; comm [60,70)+[85,90) = 15 (union 15, no
 *   overlap); data [95,100) = 5; idle [70,85) = 15.
 * Device spans (rank 0 only; they overlap across streams, never nest):
 *   forward [10,40) backward [40,70) comm [50,80) memcpy [2,12)
 *   optimizer [85,92) comm [88,110) (cut at the window's end)
 *   compute [10,70)+[85,92) = 67; comm [70,80)+[92,100) = 18;
 *   union [50,80)+[88,100) = 42; overlap [50,70)+[88,92) = 24;
 *   data [2,10) = 8; idle [0,2)+[80,85) = 7. */
static struct span view_span(int lane, int cat, int64_t t0, int64_t t1)
{
    return (struct span){.t0_ns = t0, .t1_ns = t1, .step = 0, .tag = -1, .lane = (uint8_t)lane, .cat = (uint8_t)cat};
}

static void view_spans(struct span host[6], struct span gpu[6])
{
    host[0] = view_span(LANE_MAIN, CAT_FORWARD, 0, 30);
    host[1] = view_span(LANE_MAIN, CAT_BACKWARD, 30, 60);
    host[2] = view_span(LANE_MAIN, CAT_COMM, 60, 90);
    host[3] = view_span(LANE_MAIN, CAT_WAIT, 70, 85);
    host[4] = view_span(LANE_MAIN, CAT_OPTIMIZER, 90, 95);
    host[5] = view_span(LANE_DATA, CAT_DATA, 92, 100);
    gpu[0] = view_span(LANE_GPU, CAT_FORWARD, 10, 40);
    gpu[1] = view_span(LANE_GPU, CAT_BACKWARD, 40, 70);
    gpu[2] = view_span(LANE_GPU, CAT_COMM, 50, 80);
    gpu[3] = view_span(LANE_GPU, CAT_DATA, 2, 12);
    gpu[4] = view_span(LANE_GPU, CAT_OPTIMIZER, 85, 92);
    gpu[5] = view_span(LANE_GPU, CAT_COMM, 88, 110);
}

static void feed_view_step(struct metrics *m, int r, int with_gpu)
{
    struct span host[6], gpu[6];
    view_spans(host, gpu);
    /* host and device records arrive interleaved, as two rings drain */
    metrics_add_spans(m, r, host, 3);
    if (with_gpu)
        metrics_add_spans(m, r, gpu, 4);
    metrics_add_spans(m, r, host + 3, 3);
    if (with_gpu)
        metrics_add_spans(m, r, gpu + 4, 2);
    struct step_rec rec = {.step = 0, .t0_ns = 0, .t1_ns = 100, .loss = 1.0f, .n = 8};
    metrics_add_step(m, r, &rec);
}

static void test_metrics_device_view(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 2, -1.0), 0);
    feed_view_step(&m, 0, 1);
    feed_view_step(&m, 1, 0);
    const struct breakdown *b = &m.r[0].last;
    assert_true(m.r[0].gpu_view);
    assert_int_equal(b->wall_ns, 100);
    assert_int_equal(b->compute_ns, 67);
    assert_int_equal(b->comm_ns, 18);
    assert_int_equal(b->comm_union_ns, 42);
    assert_int_equal(b->overlap_ns, 24);
    assert_int_equal(b->data_ns, 8);
    assert_int_equal(b->idle_ns, 7);
    assert_int_equal(b->compute_ns + b->comm_ns + b->data_ns + b->idle_ns, b->wall_ns);
    assert_int_equal(m.r[0].total.compute_ns, 67);
    assert_int_equal(m.r[0].total.idle_ns, 7);
    /* the other rank, host spans only, keeps the host view */
    assert_false(m.r[1].gpu_view);
    assert_int_equal(m.r[1].last.compute_ns, 65);
    assert_int_equal(m.r[1].last.idle_ns, 15);
    metrics_free(&m);
}

static void test_metrics_host_view_unchanged(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 1, -1.0), 0);
    feed_view_step(&m, 0, 0);
    const struct breakdown *b = &m.r[0].last;
    assert_false(m.r[0].gpu_view);
    assert_int_equal(b->wall_ns, 100);
    assert_int_equal(b->compute_ns, 65);
    assert_int_equal(b->comm_ns, 15);
    assert_int_equal(b->comm_union_ns, 15);
    assert_int_equal(b->overlap_ns, 0);
    assert_int_equal(b->data_ns, 5);
    assert_int_equal(b->idle_ns, 15);
    assert_int_equal(b->compute_ns + b->comm_ns + b->data_ns + b->idle_ns, b->wall_ns);
    /* the same figures as breakdown_compute over every lane */
    struct span host[6], gpu[6];
    view_spans(host, gpu);
    struct breakdown all;
    breakdown_compute(&all, host, 6, 0, 100);
    assert_memory_equal(&all, b, sizeof(all));
    metrics_free(&m);
}

/* A GPU rank (metrics_expect_gpu): step records wait for the device records,
 * which arrive late (a step closes once a record METRICS_GPU_LATE_NS after
 * its end has come, L below), and records join the steps their time
 * overlaps. */
static void gpu_span(struct metrics *m, int64_t t0, int64_t t1, int cat)
{
    struct span s = {.t0_ns = t0, .t1_ns = t1, .step = 7, .tag = -1, .lane = LANE_GPU, .cat = (uint8_t)cat};
    metrics_add_spans(m, 0, &s, 1);
}

static void host_step(struct metrics *m, uint32_t step, int64_t t0, int64_t t1)
{
    struct span s = {.t0_ns = t0, .t1_ns = t1, .step = step, .tag = -1, .lane = LANE_MAIN, .cat = CAT_FORWARD};
    metrics_add_spans(m, 0, &s, 1);
    struct step_rec r = {.step = step, .t0_ns = t0, .t1_ns = t1, .loss = 1.0f, .n = 8};
    metrics_add_step(m, 0, &r);
}

static void host_step_untraced(struct metrics *m, uint32_t step, int64_t t0, int64_t t1)
{
    struct span s = {.t0_ns = t0, .t1_ns = t1, .step = step, .tag = -1, .lane = LANE_MAIN, .cat = CAT_FORWARD};
    metrics_add_spans(m, 0, &s, 1);
    struct step_rec r = {.step = step, .t0_ns = t0, .t1_ns = t1, .loss = 1.0f, .n = 8, .untraced = 1};
    metrics_add_step(m, 0, &r);
}

/* --cupti-sample: a step the device did not trace takes the latest traced
 * step's split at its own wall time, and ignores the device records that
 * another rank's window let through; before any traced step, the host's. */
static void test_metrics_untraced_steps(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 1, -1.0), 0);
    metrics_expect_gpu(&m, 0);
    host_step(&m, 0, 0, 100); /* traced: forward 30, comm 10 (device), idle 60 */
    gpu_span(&m, 10, 40, CAT_FORWARD);
    gpu_span(&m, 50, 60, CAT_COMM);
    host_step_untraced(&m, 1, 100, 300);  /* twice as long */
    gpu_span(&m, 150, 250, CAT_BACKWARD); /* a stray: not this step's to count */
    host_step_untraced(&m, 2, 300, 333);  /* a third: the parts round */
    metrics_finish(&m);
    assert_int_equal(m.r[0].nsteps, 3);
    assert_int_equal(m.r[0].ntraced, 1);
    assert_int_equal(m.r[0].nuntraced, 2);
    const struct breakdown *t = &m.r[0].total, *last = &m.r[0].last;
    assert_int_equal(t->wall_ns, 333);
    assert_int_equal(t->compute_ns, 30 + 60 + 10);
    assert_int_equal(t->comm_ns, 10 + 20 + 3);
    assert_int_equal(t->idle_ns, 60 + 120 + 20);
    assert_int_equal(last->compute_ns + last->comm_ns + last->data_ns + last->idle_ns, 33);
    assert_int_equal(m.r[0].step_untraced[metrics_slot(1)], 1);
    assert_int_equal(m.r[0].step_untraced[metrics_slot(0)], 0);
    metrics_free(&m);

    /* no traced step yet: the host's spans decide (a whole-step forward) */
    assert_int_equal(metrics_init(&m, 1, -1.0), 0);
    metrics_expect_gpu(&m, 0);
    gpu_span(&m, -50, -10, CAT_FORWARD); /* set-up work: the rank has a device view */
    host_step_untraced(&m, 0, 0, 100);
    metrics_finish(&m);
    assert_int_equal(m.r[0].last.compute_ns, 100);
    assert_int_equal(m.r[0].ntraced, 0);
    metrics_free(&m);

    /* the scaling itself: exact sums, however the parts round */
    struct breakdown from = {.wall_ns = 7, .compute_ns = 3, .comm_ns = 2, .data_ns = 2, .idle_ns = 0}, b;
    for (int64_t w = 0; w < 50; w++) {
        breakdown_scale(&b, &from, w);
        assert_int_equal(b.compute_ns + b.comm_ns + b.data_ns + b.idle_ns, w);
        assert_true(b.idle_ns >= 0 && b.compute_ns >= 0);
    }
    breakdown_scale(&b, &(struct breakdown){0}, 40);
    assert_int_equal(b.idle_ns, 40);
}

static void test_metrics_held_gpu_steps(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 1, -1.0), 0);
    metrics_expect_gpu(&m, 0);
    gpu_span(&m, -50, -10, CAT_FORWARD); /* set-up work before the first step: belongs to none */
    host_step(&m, 0, 0, 100);
    assert_int_equal(m.r[0].nsteps, 0); /* held: no device record after it yet */
    gpu_span(&m, 10, 40, CAT_FORWARD);
    gpu_span(&m, 90, 130, CAT_COMM); /* reaches into step 1 */
    assert_int_equal(m.r[0].nsteps, 0);
    host_step(&m, 1, 100, 200);
    assert_int_equal(m.r[0].nsteps, 0);
    gpu_span(&m, 150, 170, CAT_BACKWARD); /* starts after step 0's end, but within L */
    assert_int_equal(m.r[0].nsteps, 0);
    const int64_t L = METRICS_GPU_LATE_NS;
    gpu_span(&m, 100 + L - 1, 100 + L, CAT_DATA); /* not yet */
    assert_int_equal(m.r[0].nsteps, 0);
    gpu_span(&m, 100 + L, 100 + L + 1, CAT_DATA); /* L after step 0's end: step 0 closes */
    assert_int_equal(m.r[0].nsteps, 1);
    const struct breakdown *b = &m.r[0].last;
    assert_int_equal(b->wall_ns, 100);
    assert_int_equal(b->compute_ns, 30);
    assert_int_equal(b->comm_ns, 10);
    assert_int_equal(b->idle_ns, 60);
    metrics_finish(&m); /* the run is over: step 1 closes with what arrived */
    assert_int_equal(m.r[0].nsteps, 2);
    assert_int_equal(b->wall_ns, 100);
    assert_int_equal(b->compute_ns, 20);
    assert_int_equal(b->comm_ns, 30);
    assert_int_equal(b->idle_ns, 50);
    assert_int_equal(m.r[0].total.compute_ns, 50);
    assert_int_equal(m.r[0].total.comm_ns, 40);
    assert_int_equal(m.steps_done, 2);
    metrics_free(&m);

    /* no device records at all: a step closes once the host is 4 L past it */
    assert_int_equal(metrics_init(&m, 1, -1.0), 0);
    metrics_expect_gpu(&m, 0);
    host_step(&m, 0, 0, 100);
    host_step(&m, 1, 100, 100 + 4 * L);
    assert_int_equal(m.r[0].nsteps, 0);
    host_step(&m, 2, 100 + 4 * L, 101 + 4 * L);
    assert_int_equal(m.r[0].nsteps, 1);
    metrics_free(&m);
}

static void test_replay_load_api(void **state)
{
    struct replay rp;
    char err[512];
    assert_int_equal(replay_load(&rp, FIX "kineto_gpu.json", err, sizeof(err)), 0);
    assert_int_equal(rp.res.nranks, 1);
    assert_false(rp.has_metrics);
    const struct rank_result *q = &rp.res.ranks[0];
    assert_true(q->gpu_view);
    assert_int_equal(q->b.wall_ns, K_WALL);
    assert_int_equal(q->b.compute_ns + q->b.comm_ns + q->b.data_ns + q->b.idle_ns, K_WALL);
    assert_int_equal(q->host_wait_ns, K_HOST_WAIT);
    assert_int_equal(q->steps, 1);
    assert_true(fabs(q->ms_mean - 0.210) < 1e-9);
    replay_free(&rp);
    assert_int_equal(replay_load(&rp, FIX "kineto_gpu.json," FIX "autograd_gloo.json", err, sizeof(err)), 0);
    assert_int_equal(rp.res.nranks, 2); /* rank 0 from distributedInfo, the array file is file #1 */
    replay_free(&rp);
    assert_int_equal(replay_load(&rp, FIX "missing.json", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "missing.json"));
}

static cJSON *run_cli(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s --batch --replay %s --format json", DDPTOP_BIN, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = 0;
    assert_int_equal(pclose(p), 0);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static double num(cJSON *o, const char *k)
{
    cJSON *v = cJSON_GetObjectItem(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_cli_json(void **state)
{
    cJSON *j = run_cli(FIX "kineto_gpu.json");
    cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "per_rank"), 0);
    assert_non_null(q);
    assert_string_equal(cJSON_GetObjectItem(q, "view")->valuestring, "gpu");
    assert_true(fabs(num(q, "compute_pct") - 100.0 * K_COMPUTE / K_WALL) < 1e-9);
    assert_true(fabs(num(q, "comm_pct") - 100.0 * K_COMM / K_WALL) < 1e-9);
    assert_true(fabs(num(q, "data_pct") - 100.0 * K_DATA / K_WALL) < 1e-9);
    assert_true(fabs(num(q, "idle_pct") - 100.0 * K_IDLE / K_WALL) < 1e-9);
    assert_true(fabs(num(q, "overlap_pct") - 100.0 * K_OVERLAP / K_COMM_UNION) < 1e-9);
    assert_true(fabs(num(q, "host_wait_pct") - 100.0 * K_HOST_WAIT / K_WALL) < 1e-9);
    assert_true(fabs(num(q, "kernel_wait_pct") - 100.0 * K_KERNEL_WAIT / K_WALL) < 1e-9);
    assert_true(fabs(num(q, "other_idle_pct") - 100.0 * K_OTHER / K_WALL) < 1e-9);
    cJSON_Delete(j);
    j = run_cli(FIX "autograd_gloo.json");
    q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "per_rank"), 0);
    cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0);
    assert_true(num(q, "comm_pct") > 17.0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(q, "host_wait_pct")));
    /* what a PyTorch trace does not say is null, never a made-up 0 */
    static const char *lacks[] = {"bytes_sent", "bytes_received", "samples_per_s", "transfer_ms_per_step",
                                  "busbw_gbps", "spans_lost",     "desched_pct"};
    for (size_t k = 0; k < sizeof(lacks) / sizeof(lacks[0]); k++)
        if (!cJSON_IsNull(cJSON_GetObjectItem(q, lacks[k])))
            fail_msg("per_rank %s is not null", lacks[k]);
    static const char *run_lacks[] = {"model",      "strategy", "grad_compress", "batch_size", "samples_per_s",
                                      "bytes_sent", "params",   "wall_s",        "state",      "train_loss"};
    for (size_t k = 0; k < sizeof(run_lacks) / sizeof(run_lacks[0]); k++)
        if (!cJSON_IsNull(cJSON_GetObjectItem(run, run_lacks[k])))
            fail_msg("runs %s is not null", run_lacks[k]);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "replay"), "format")->valuestring, "autograd");
    cJSON_Delete(j);
}

/* The API the UI uses: a run traced through tracer_open/close, and the
 * `e` key's snapshot of the span history, both replayable. */
static void test_tracer_api_and_snapshot(void **state)
{
    char dir[] = "/tmp/ddptop_test_replay_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tpath[128], spath[128], err[1024], note[256];
    snprintf(tpath, sizeof(tpath), "%s/t.json", dir);
    snprintf(spath, sizeof(spath), "%s/snap.json", dir);
    char *argv[] = {"ddptop",       "--batch", "--dataset", "synthetic", "--model",   "lenet",   "--ranks", "2",
                    "--batch-size", "8",       "--steps",   "12",        "--no-eval", "--trace", tpath,     NULL};
    struct config cfg;
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(config_parse(&cfg, 15, argv, devnull, devnull), 0);
    fclose(devnull);
    struct run_config rc;
    config_expand(&cfg, 0, &rc);
    const struct device_ops *dev = device_select(DEV_CPU, note, sizeof(note), err, sizeof(err));
    assert_non_null(dev);
    struct dataset train, test;
    assert_int_equal(data_load("synthetic", "", 1, &train, &test, err, sizeof(err)), 0);
    struct run r;
    assert_int_equal(run_start(&r, &rc, &train, &test, dev, err, sizeof(err)), 0);
    struct tracer *t = tracer_open(&cfg, &r, 0, err, sizeof(err));
    assert_non_null(t);
    struct timespec tick = {0, 5 * 1000 * 1000};
    while (run_poll(&r))
        nanosleep(&tick, NULL);
    run_join(&r);
    assert_null(tracer_error(t));
    assert_int_equal(tracer_close(t, 0, err, sizeof(err)), 0);
    assert_int_equal(run_export_trace(&r, spath, err, sizeof(err)), 0);
    assert_int_equal(r.metrics.r[0].nsteps, 12);
    run_free(&r);
    data_free(&train);
    data_free(&test);

    struct replay rp;
    assert_int_equal(replay_load(&rp, tpath, err, sizeof(err)), 0);
    assert_true(rp.doc.complete);
    assert_true(rp.has_metrics);
    assert_int_equal(rp.res.nranks, 2);
    assert_int_equal(rp.res.ranks[1].steps, 12);
    assert_true(rp.res.ranks[0].coll_valid);
    assert_true(rp.res.ranks[0].b.compute_ns > 0);
    assert_int_equal(rp.metrics.r[1].nsteps, 12);
    replay_free(&rp);
    /* the snapshot holds the whole (short) history: all 12 steps rebuilt */
    assert_int_equal(replay_load(&rp, spath, err, sizeof(err)), 0);
    assert_int_equal(rp.res.nranks, 2);
    assert_int_equal(rp.res.ranks[0].steps, 12);
    assert_true(rp.res.ranks[0].coll_valid);
    assert_true(rp.res.ranks[0].b.wall_ns > 0);
    assert_int_equal(rp.res.ranks[0].b.compute_ns + rp.res.ranks[0].b.comm_ns + rp.res.ranks[0].b.data_ns +
                         rp.res.ranks[0].b.idle_ns,
                     rp.res.ranks[0].b.wall_ns);
    replay_free(&rp);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Foreign input that is cut anywhere or malformed loads or is refused with
 * a message; it never crashes (run under ASan+UBSan too). */
static void test_reader_hostile_input(void **state)
{
    FILE *f = fopen(FIX "kineto_gpu.json", "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    char err[256];
    for (size_t cut = 0; cut <= n; cut += 3) {
        char *copy = malloc(cut + 1);
        memcpy(copy, buf, cut);
        struct trace_doc d;
        trace_doc_init(&d);
        if (trace_read_buffer(&d, copy, cut, "cut", err, sizeof(err)) == 0 && d.nranks > 0) {
            struct trace_figures fig;
            assert_int_equal(trace_analyze_rank(&fig, &d.ranks[0], NULL, 30), 0);
            assert_int_equal(fig.b.compute_ns + fig.b.comm_ns + fig.b.data_ns + fig.b.idle_ns, fig.b.wall_ns);
        }
        trace_doc_free(&d);
        free(copy);
    }
    static const char *bad[] = {
        "",
        "   ",
        "nope",
        "{\"traceEvents\": 5}",
        "[1, 2, \"x\", null, [], {}]",
        "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"k\",\"cat\":\"kernel\",\"ts\":1e400,\"dur\":-1e300,"
        "\"pid\":\"x\",\"tid\":1e300,\"args\":{\"correlation\":-1e300,\"device\":1e300,\"stream\":\"s\"}}]}",
        "{\"ddptop\":{},\"traceEvents\":[{\"ph\":\"X\",\"name\":\"forward\",\"cat\":\"forward\",\"ts\":1,"
        "\"dur\":1,\"pid\":1e300,\"tid\":-5,\"args\":{\"step\":-1,\"bucket\":1e9}},"
        "{\"ph\":\"X\",\"name\":\"ProfilerStep#x\",\"cat\":\"step\",\"ts\":\"a\",\"pid\":0,\"args\":{\"step\":1e30}}]}",
        "{\"a\":\"\\\"}\",\"traceEvents\":[\"]\"]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct trace_doc d;
        trace_doc_init(&d);
        int rc = trace_read_buffer(&d, bad[i], strlen(bad[i]), "bad", err, sizeof(err));
        if (rc != 0)
            assert_non_null(strstr(err, "bad"));
        for (int r = 0; rc == 0 && r < d.nranks; r++) {
            struct trace_figures fig;
            assert_int_equal(trace_analyze_rank(&fig, &d.ranks[r], NULL, 30), 0);
        }
        trace_doc_free(&d);
    }
}

/* A reader that stops moving forward would hang the test: end it instead. */
#define HANG_LIMIT_S 30

/* Malformed text between or inside events is refused with the byte at
 * fault; the scanner never stays in place. */
static void test_reader_malformed(void **state)
{
    static const struct {
        const char *text;
        size_t at;
    } bad[] = {
        {"[{\"ph\":\"X\"}}]", 11},                      /* a stray '}' between events */
        {"{\"traceEvents\":[{\"a\":[}]},\"z\":1}", 22}, /* '}' closing a '[' */
        {"{\"traceEvents\":[{},]]}", 20},               /* a stray ']' after the events */
        {"{\"traceEvents\":[{}],\"x\"1}", 23},          /* a member without ':' */
        {"{\"traceEvents\":[{}],\"x\":}", 24},          /* a member without a value */
        {"[{}, :]", 5},
    };
    alarm(HANG_LIMIT_S);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct trace_doc d;
        char err[256], want[64];
        trace_doc_init(&d);
        assert_int_equal(trace_read_buffer(&d, bad[i].text, strlen(bad[i].text), "m.json", err, sizeof(err)), -1);
        snprintf(want, sizeof(want), "m.json: malformed JSON near byte %zu", bad[i].at);
        if (strcmp(err, want))
            print_error("%s: '%s', wanted '%s'\n", bad[i].text, err, want);
        assert_string_equal(err, want);
        trace_doc_free(&d);
    }
    /* brackets nested past what any trace needs */
    size_t depth = 5000;
    char *deep = malloc(2 * depth + 3);
    assert_non_null(deep);
    deep[0] = '[';
    memset(deep + 1, '[', depth);
    memset(deep + 1 + depth, ']', depth);
    memcpy(deep + 1 + 2 * depth, "]", 2);
    struct trace_doc d;
    char err[256];
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, deep, strlen(deep), "deep", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "deep: JSON nested deeper than 1024 levels at byte"));
    trace_doc_free(&d);
    free(deep);
    alarm(0);
}

/* A ddptop trace of one event per pid, pids from `first` counting by `step`. */
static char *ranks_trace(int n, int first, int step, size_t *len)
{
    size_t cap = 256 + (size_t)n * 128, k = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    k += (size_t)snprintf(t + k, cap - k, "{\"ddptop\":{},\"traceEvents\":[");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(t + k, cap - k,
                              "%s{\"ph\":\"X\",\"name\":\"forward\",\"cat\":\"forward\",\"ts\":1,\"dur\":1,"
                              "\"pid\":%d,\"tid\":0,\"args\":{\"step\":0}}",
                              i ? "," : "", first + i * step);
    k += (size_t)snprintf(t + k, cap - k, "]}");
    *len = k;
    return t;
}

/* 64 ranks load; the 65th is refused as it appears, so a file of 100k
 * pids costs what 65 events cost. */
static void test_reader_rank_limit(void **state)
{
    struct trace_doc d;
    char err[256];
    size_t len;
    char *t = ranks_trace(TRACE_MAX_RANKS, 0, 1, &len);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, t, len, "r64", err, sizeof(err)), 0);
    assert_int_equal(d.nranks, TRACE_MAX_RANKS);
    trace_doc_free(&d);
    free(t);

    t = ranks_trace(TRACE_MAX_RANKS + 1, 0, 1, &len);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, t, len, "r65", err, sizeof(err)), -1);
    assert_string_equal(err, "r65: more than 64 ranks");
    trace_doc_free(&d);
    free(t);

    t = ranks_trace(100000, 1000000, -10, &len);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, t, len, "r100k", err, sizeof(err)), -1);
    assert_string_equal(err, "r100k: more than 64 ranks");
    assert_int_equal(d.events, TRACE_MAX_RANKS + 1);
    trace_doc_free(&d);
    free(t);

    /* the limit holds over several files too */
    t = ranks_trace(40, 0, 1, &len);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, t, len, "a", err, sizeof(err)), 0);
    free(t);
    t = ranks_trace(40, 100, 1, &len);
    assert_int_equal(trace_read_buffer(&d, t, len, "b", err, sizeof(err)), -1);
    assert_string_equal(err, "b: more than 64 ranks");
    trace_doc_free(&d);
    free(t);
}

/* The same ranks in two files (the same file twice, say) are counted, so
 * replay can say that their events are merged; ranks split over files are
 * not. */
static void test_reader_repeated_ranks(void **state)
{
    struct trace_doc d;
    char err[256];
    size_t len;
    char *t = ranks_trace(3, 0, 1, &len);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, t, len, "t", err, sizeof(err)), 0);
    assert_int_equal(d.repeated_ranks, 0);
    assert_int_equal(trace_read_buffer(&d, t, len, "t", err, sizeof(err)), 0);
    assert_int_equal(d.nranks, 3);
    assert_int_equal(d.repeated_ranks, 3);
    assert_int_equal(d.repeat_rank, 0);
    assert_int_equal(d.ranks[1].nspans, 2);
    trace_doc_free(&d);
    free(t);

    char *a = ranks_trace(1, 0, 1, &len);
    size_t blen;
    char *b = ranks_trace(1, 1, 1, &blen);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, a, len, "s.rank0", err, sizeof(err)), 0);
    assert_int_equal(trace_read_buffer(&d, b, blen, "s.rank1", err, sizeof(err)), 0);
    assert_int_equal(d.nranks, 2);
    assert_int_equal(d.repeated_ranks, 0);
    trace_doc_free(&d);
    free(a);
    free(b);
}

static void read_fixture(const char *path, char *buf, size_t cap, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    *n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[*n] = 0;
}

/* A gzip trace from memory reads as its plain text does; cut short it
 * loads what decoded, marked truncated; damaged from the start it is
 * refused; several members are one text. */
static void test_reader_gzip_buffer(void **state)
{
    static char plain[1 << 16], gz[1 << 17];
    size_t n, zn;
    read_fixture(FIX "kineto_gpu.json", plain, sizeof(plain), &n);
    zn = gzip_member(plain, n, gz, sizeof(gz), 6);
    struct trace_doc d;
    char err[256];
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, gz, zn, "k.json.gz", err, sizeof(err)), 0);
    assert_true(d.complete);
    assert_false(d.truncated);
    assert_int_equal(d.nranks, 1);
    assert_int_equal(d.ranks[0].ngpu, 7);
    trace_doc_free(&d);

    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, gz, zn * 2 / 3, "cut.json.gz", err, sizeof(err)), 0);
    assert_true(d.truncated);
    assert_false(d.complete);
    trace_doc_free(&d);

    char bad[64] = {0x1f, (char)0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3};
    memset(bad + 10, 0xff, sizeof(bad) - 10);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, bad, sizeof(bad), "bad.json.gz", err, sizeof(err)), -1);
    assert_string_equal(err, "bad.json.gz: corrupt gzip stream (zlib: invalid block type)");
    trace_doc_free(&d);

    /* the text split in two members, as gzip -c a b > ab.gz makes */
    size_t half = n / 2;
    size_t z1 = gzip_member(plain, half, gz, sizeof(gz), 6);
    size_t z2 = gzip_member(plain + half, n - half, gz + z1, sizeof(gz) - z1, 6);
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, gz, z1 + z2, "two.json.gz", err, sizeof(err)), 0);
    assert_true(d.complete);
    assert_int_equal(d.ranks[0].ngpu, 7);
    trace_doc_free(&d);
}

/* A step record without a single span replays (no sort of nothing: run
 * under UBSan too) as a step of idle time. */
static void test_replay_step_without_spans(void **state)
{
    char dir[] = "/tmp/ddptop_test_nospan_XXXXXX", path[128], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"ddptop\":{},\"traceEvents\":[{\"ph\":\"X\",\"name\":\"ProfilerStep#0\",\"cat\":\"step\",\"ts\":10,"
          "\"dur\":5,\"pid\":0,\"tid\":0,\"args\":{\"step\":0,\"samples\":8}}],\"ddptopTraceEnd\":{\"complete\":true}}",
          f);
    fclose(f);
    struct replay rp;
    assert_int_equal(replay_load(&rp, path, err, sizeof(err)), 0);
    assert_int_equal(rp.res.nranks, 1);
    assert_int_equal(rp.res.ranks[0].steps, 1);
    assert_int_equal(rp.res.ranks[0].b.idle_ns, rp.res.ranks[0].b.wall_ns);
    replay_free(&rp);
    unlink(path);
    rmdir(dir);
}

/* A trace recorded on a GPU (an H100: LeNet, 2 ranks sharing it, DDP over
 * ddptop's device ring, 12 steps, CUPTI on; scripts/gpu_check.sh fixture)
 * replays to the figures its live run reported (gpu_lenet_ddp.live.json,
 * ddptop's own JSON report of that run): device, backend, the device view,
 * and every rank's compute, comm, data and idle within 0.5 points. */
static void test_replay_gpu_fixture(void **state)
{
    cJSON *live = fixture_json(FIX "gpu_lenet_ddp.live.json");
    const cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(live, "runs"), 0);
    const cJSON *ranks = cJSON_GetObjectItem(live, "per_rank");
    char err[512];
    struct replay rp;
    assert_int_equal(replay_load(&rp, FIX "gpu_lenet_ddp.json.gz", err, sizeof(err)), 0);
    assert_string_equal(rp.res.device, cJSON_GetObjectItem(run, "device")->valuestring);
    assert_string_equal(rp.res.backend, cJSON_GetObjectItem(run, "backend")->valuestring);
    assert_string_equal(cJSON_GetObjectItem(run, "view")->valuestring, "gpu");
    assert_int_equal(rp.res.nranks, cJSON_GetArraySize(ranks));
    for (int i = 0; i < rp.res.nranks; i++) {
        const cJSON *lr = cJSON_GetArrayItem(ranks, i);
        const struct rank_result *rr = &rp.res.ranks[i];
        assert_true(rr->gpu_view);
        assert_string_equal(rr->device, cJSON_GetObjectItem(lr, "device")->valuestring);
        assert_float_equal(rr->split.compute, cJSON_GetObjectItem(lr, "compute_pct")->valuedouble, 0.5);
        assert_float_equal(rr->split.comm, cJSON_GetObjectItem(lr, "comm_pct")->valuedouble, 0.5);
        assert_float_equal(rr->split.data, cJSON_GetObjectItem(lr, "data_pct")->valuedouble, 0.5);
        assert_float_equal(rr->split.idle, cJSON_GetObjectItem(lr, "idle_pct")->valuedouble, 0.5);
        /* the device view: kernels, not the host's enqueue time */
        assert_true(rr->split.compute > 5.0);
    }
    replay_free(&rp);
    cJSON_Delete(live);
}

/* The timeline's history keeps device records merged per category while
 * they follow one another within 2 us (no step closed yet): a thousand
 * back-to-back kernels, interleaved with a comm stream's, take four
 * entries (a gap of 10 us splits each stream's run in two), and the host
 * span stays; the breakdown itself still sees every record. */
static void test_history_merges_device_records(void **state)
{
    struct metrics m;
    assert_int_equal(metrics_init(&m, 1, -1.0), 0);
    struct span host = {.t0_ns = 0, .t1_ns = 5000000, .step = 0, .tag = -1, .lane = LANE_MAIN, .cat = CAT_FORWARD};
    metrics_add_spans(&m, 0, &host, 1);
    int64_t t = 100000;
    for (int i = 0; i < 1000; i++) {
        if (i == 500)
            t += 10000;
        struct span k = {.t0_ns = t, .t1_ns = t + 3000, .step = 0, .tag = -1, .lane = LANE_GPU, .cat = CAT_BACKWARD};
        struct span c = {.t0_ns = t + 500, .t1_ns = t + 3500, .step = 0, .tag = -1, .lane = LANE_GPU, .cat = CAT_COMM};
        metrics_add_spans(&m, 0, &k, 1);
        metrics_add_spans(&m, 0, &c, 1);
        t += 4000; /* 1 us apart */
    }
    metrics_finish(&m);
    assert_int_equal(m.r[0].nhistory, 5);
    int64_t bwd = 0, comm = 0;
    for (int i = 0; i < 5; i++) {
        const struct span *s = &m.r[0].history[i];
        if (s->lane != LANE_GPU)
            continue;
        if (s->cat == CAT_BACKWARD)
            bwd += s->t1_ns - s->t0_ns;
        else
            comm += s->t1_ns - s->t0_ns;
    }
    assert_int_equal(bwd, (int64_t)1000 * 4000 - 2 * 1000); /* two runs, each ending 1 us short */
    assert_int_equal(comm, (int64_t)1000 * 4000 - 2 * 1000);
    assert_int_equal(m.r[0].npending, 2001);
    metrics_free(&m);
}

/* A GPU run as the collector sees it: each step's device work runs 0.6 of a
 * step behind its host step (so it overlaps the next one), on a compute
 * and a comm stream, and CUPTI delivers it in bulk every third step, after
 * the host records of later steps. The live store (held steps, device
 * view) and the replay of the trace written from the same arrivals must
 * give each rank the same breakdown, to the nanosecond, and the device
 * view; the device names, backend and records come back as written. */
static void gpu_equals_live(int period)
{
    char dir[] = "/tmp/ddptop_test_gpurp_XXXXXX", path[160], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/g.json", dir);
    enum { W = 2, STEPS = 12, STEP_NS = 200000000 }; /* buffers every 0.6 s: within METRICS_GPU_LATE_NS */
    const char *dev[W] = {"cuda:0", "cuda:0"};
    struct trace_export_opts o = {
        .path = path, .world = W, .step_to = -1, .backend = "gpu-ring, shared GPU", .algo = "ring", .device = dev};
    struct trace_export *x;
    assert_int_equal(trace_export_open(&x, &o, err, sizeof(err)), 0);
    struct metrics m;
    assert_int_equal(metrics_init(&m, W, -1.0), 0);
    uint16_t kname = probe_name_id("volta_sgemm_128x64_nn"), cname = probe_name_id("ring_reduce_k");
    struct span held[W][STEPS * 4];
    size_t nheld[W] = {0};
    for (int s = 0; s < STEPS; s++)
        for (int r = 0; r < W; r++) {
            int64_t t0 = (int64_t)s * STEP_NS + r * 1000, t1 = t0 + STEP_NS - 5000, lag = STEP_NS / 10 * 6;
            struct span host[2] = {{.t0_ns = t0,
                                    .t1_ns = t0 + 200000,
                                    .step = (uint32_t)s,
                                    .tag = -1,
                                    .lane = LANE_MAIN,
                                    .cat = CAT_FORWARD},
                                   {.t0_ns = t0 + 200000,
                                    .t1_ns = t1,
                                    .step = (uint32_t)s,
                                    .tag = -1,
                                    .lane = LANE_MAIN,
                                    .cat = CAT_WAIT}};
            metrics_add_spans(&m, r, host, 2);
            for (int i = 0; i < 2; i++)
                trace_export_span(x, r, &host[i]);
            /* the device: forward, backward (rank 1 slower), a comm kernel
             * overlapping backward, the optimizer */
            /* in thousandths of a step: the work runs from 0.6 into the next step */
            int64_t d0 = t0 + lag, u = STEP_NS / 1000, bw = (r ? 500 : 300) * u;
            struct span g[4] = {
                {.t0_ns = d0, .t1_ns = d0 + 150 * u, .cat = CAT_FORWARD, .name = kname},
                {.t0_ns = d0 + 150 * u, .t1_ns = d0 + 150 * u + bw, .cat = CAT_BACKWARD, .name = kname},
                {.t0_ns = d0 + 300 * u, .t1_ns = d0 + 200 * u + bw, .cat = CAT_COMM, .name = cname},
                {.t0_ns = d0 + 250 * u + bw, .t1_ns = d0 + 300 * u + bw, .cat = CAT_OPTIMIZER, .name = kname}};
            /* --cupti-sample: steps outside the window have no records,
             * but for a stray that another rank's window let through */
            int traced = period <= 1 || s % period < 3;
            for (int i = 0; i < 4; i++) {
                g[i].lane = LANE_GPU;
                g[i].tag = -1;
                g[i].step = (uint32_t)s;
                if (traced || (r == 0 && i == 2))
                    held[r][nheld[r]++] = g[i];
            }
            if (s == 0)
                metrics_expect_gpu(&m, r);
            struct step_rec rec = {
                .step = (uint32_t)s, .t0_ns = t0, .t1_ns = t1, .loss = 1.0f, .n = 8, .untraced = (uint8_t)!traced};
            metrics_add_step(&m, r, &rec);
            struct trace_step_info st = {
                .step = (uint32_t)s, .t0_ns = t0, .t1_ns = t1, .loss = 1.0f, .n = 8, .untraced = (uint8_t)!traced};
            trace_export_step(x, r, &st);
            if (s % 3 == 2 || s == STEPS - 1) { /* a CUPTI buffer arrives */
                metrics_add_spans(&m, r, held[r], nheld[r]);
                for (size_t i = 0; i < nheld[r]; i++)
                    trace_export_span(x, r, &held[r][i]);
                nheld[r] = 0;
            }
        }
    for (int r = 0; r < W; r++) /* the early steps closed as the run went */
        assert_true(m.r[r].nsteps > 0 && m.r[r].nsteps < STEPS);
    metrics_finish(&m);
    assert_int_equal(trace_export_close(x, "done", 0, err, sizeof(err)), 0);

    struct replay rp;
    assert_int_equal(replay_load(&rp, path, err, sizeof(err)), 0);
    assert_string_equal(rp.res.backend, "gpu-ring, shared GPU");
    for (int r = 0; r < W; r++) {
        const struct breakdown *a = &m.r[r].total, *b = &rp.metrics.r[r].total;
        assert_true(m.r[r].gpu_view && rp.metrics.r[r].gpu_view);
        assert_int_equal(m.r[r].nsteps, STEPS);
        assert_int_equal(rp.metrics.r[r].nsteps, STEPS);
        assert_int_equal(b->wall_ns, a->wall_ns);
        assert_int_equal(b->compute_ns, a->compute_ns);
        assert_int_equal(b->comm_ns, a->comm_ns);
        assert_int_equal(b->data_ns, a->data_ns);
        assert_int_equal(b->idle_ns, a->idle_ns);
        assert_int_equal(rp.metrics.r[r].ntraced, m.r[r].ntraced);
        assert_int_equal(rp.metrics.r[r].nuntraced, m.r[r].nuntraced);
        uint64_t untraced = 0;
        for (int k = 0; k < STEPS; k++)
            untraced += period > 1 && k % period >= 3;
        assert_int_equal(m.r[r].nuntraced, untraced);
        /* the device view, not the host's (whose compute is the 200 us forward) */
        assert_true(a->compute_ns > (int64_t)STEPS * STEP_NS / 3);
        assert_string_equal(rp.res.ranks[r].device, "cuda:0");
    }
    /* the slower rank 1 computes more */
    assert_true(m.r[1].total.compute_ns > m.r[0].total.compute_ns);
    replay_free(&rp);
    metrics_free(&m);
    unlink(path);
    rmdir(dir);
}

static void test_replay_gpu_equals_live(void **state)
{
    gpu_equals_live(1);
}

/* The same with --cupti-sample 5: steps 3-4 and 8-9 estimated, live and
 * replayed alike. */
static void test_replay_gpu_sampled_equals_live(void **state)
{
    gpu_equals_live(5);
}

/* Anything but a regular file is refused before a byte is read: a FIFO
 * would block, /dev/zero would never end. */
static void test_reader_not_regular(void **state)
{
    char dir[] = "/tmp/ddptop_test_fifo_XXXXXX", fifo[128], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/t.json", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(HANG_LIMIT_S);
    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, fifo, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "t.json: not a regular file"));
    assert_int_equal(trace_read_file(&d, "/dev/zero", err, sizeof(err)), -1);
    assert_string_equal(err, "/dev/zero: not a regular file (a character device)");
    assert_int_equal(trace_read_file(&d, dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a regular file (a directory)"));
    trace_doc_free(&d);
    alarm(0);
    unlink(fifo);
    rmdir(dir);
}

/* ---- the user's own job: Kineto's collectives, ranks, cycles, folders ---- */

/* kineto_gloo_cpu.json, a CPU-only gloo job's Kineto file (rank 1 of 2 by
 * its distributedInfo); us after its base, main thread and gloo's:
 *   ProfilerStep#5 [1000,1100):
 *     aten::addmm [1005,1025) compute 20 (under DDP's forward range)
 *     AddmmBackward0 [1030,1050) compute 20
 *     c10d::allreduce_ [1050,1052) comm (cpu_op)
 *     gloo:all_reduce [1052,1090) comm (user_annotation, gloo's thread)
 *     sync_gloo_grads [1049,1091): the user's own range: nothing
 *     aten::add_ [1093,1097) compute 4 (under Optimizer.step's range)
 *     -> compute 44, comm 40, idle 16
 *   ProfilerStep#6 [1100,1200):
 *     aten::addmm [1100,1130) compute 30; AddmmBackward0 [1140,1160) 20
 *     gloo:all_reduce [1150,1190): 10 under backward, 30 exposed
 *     c10d::allreduce_ [1160,1161) inside it
 *     aten::add_ [1191,1198) compute 7
 *     -> compute 57, comm 30 (union 40, overlap 10), idle 13
 *   aten::zeros [990,1000) lies outside both steps.
 * wall 200 us: compute 101, comm 70 (35%), union 80, overlap 10, idle 29:
 * the cycle's figures (trace_analyze_window). The rank's leave its first
 * step out, as its ms/step does: ProfilerStep#6 alone, 57% compute and
 * 30% comm. */
static void test_kineto_gloo_user_annotation(void **state)
{
    struct trace_doc d;
    char err[512];
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, FIX "kineto_gloo_cpu.json", err, sizeof(err)), 0);
    assert_int_equal(d.flavor, TRACE_KINETO);
    assert_string_equal(d.backend, "gloo");
    assert_int_equal(d.world, 2);
    assert_int_equal(d.nranks, 1);
    const struct trace_rank *r = &d.ranks[0];
    assert_int_equal(r->rank, 1);
    assert_int_equal(r->nsteps, 2);
    assert_int_equal(r->nwindows, 1);
    assert_int_equal(r->windows[0].rank_from, TRACE_RANK_TRACE);
    int comm_ops = 0;
    for (size_t i = 0; i < r->nops; i++)
        comm_ops += r->ops[i].cat == CAT_COMM;
    assert_int_equal(comm_ops, 4); /* two c10d::allreduce_, two gloo:all_reduce; not the user's range */
    struct trace_figures f;
    assert_int_equal(trace_analyze_window(&f, r, 0, NULL, TRACE_IDLE_DELAY_NS), 0);
    assert_false(f.gpu_view);
    assert_int_equal(f.b.wall_ns, 200000);
    assert_int_equal(f.b.compute_ns, 101000);
    assert_int_equal(f.b.comm_ns, 70000);
    assert_int_equal(f.b.comm_union_ns, 80000);
    assert_int_equal(f.b.overlap_ns, 10000);
    assert_int_equal(f.b.data_ns, 0);
    assert_int_equal(f.b.idle_ns, 29000);
    assert_int_equal(trace_analyze_rank(&f, r, NULL, TRACE_IDLE_DELAY_NS), 0);
    assert_int_equal(f.b.wall_ns, 100000);
    assert_int_equal(f.b.compute_ns, 57000);
    assert_int_equal(f.b.comm_ns, 30000);
    assert_int_equal(f.b.comm_union_ns, 40000);
    assert_int_equal(f.b.overlap_ns, 10000);
    assert_int_equal(f.b.idle_ns, 13000);
    trace_doc_free(&d);

    cJSON *j = run_cli(FIX "kineto_gloo_cpu.json");
    cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "per_rank"), 0);
    assert_int_equal((int)num(q, "rank"), 1);
    assert_true(fabs(num(q, "comm_pct") - 30.0) < 1e-9);
    assert_true(fabs(num(q, "compute_pct") - 57.0) < 1e-9);
    assert_true(fabs(num(q, "idle_pct") - 13.0) < 1e-9);
    assert_true(fabs(num(q, "overlap_pct") - 25.0) < 1e-9);
    cJSON_Delete(j);
}

/* One cycle of an autograd-format file (a bare array, times from the
 * cycle's own start): ProfilerStep#step over [100,200) us, an op of
 * compute [100,100+comp) on the main thread, gloo:all_reduce [c0,c1) on
 * gloo's. */
static char *cycle_trace(unsigned step, int comp, int c0, int c1, size_t *len)
{
    char *t = malloc(512);
    assert_non_null(t);
    int n = snprintf(t, 512,
                     "[{\"name\": \"ProfilerStep#%u\", \"ph\": \"X\", \"ts\": 100, \"dur\": 100, \"tid\": 1, "
                     "\"pid\": \"CPU functions\", \"args\": {}}, "
                     "{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 100, \"dur\": %d, \"tid\": 1, "
                     "\"pid\": \"CPU functions\", \"args\": {}}, "
                     "{\"name\": \"gloo:all_reduce\", \"ph\": \"X\", \"ts\": %d, \"dur\": %d, \"tid\": 2, "
                     "\"pid\": \"CPU functions\", \"args\": {}}]",
                     step, comp, c0, c1 - c0);
    *len = (size_t)n;
    return t;
}

struct cycle_file {
    const char *name;
    unsigned step;
    int comp, c0, c1;
};

/* Two ranks, two cycles each (steps 1 and 4), by hand:
 *   rank 0: compute 50, comm [150,190) 40, idle 10 | compute 80, comm 10, idle 10
 *   rank 1: compute 30, comm [130,190) 60, idle 10 | compute 60, comm 10, idle 30
 * each cycle 100 us. A rank's figures leave its first step out, as its
 * ms/step does: the cycle of step 4 alone (job_*); each cycle alone has
 * its own (cycle_*). */
static const struct cycle_file job_files[] = {
    {"tb/rank0.1000.pt.trace.json", 1, 50, 150, 190},
    {"tb/rank0.2000.pt.trace.json", 4, 80, 180, 190},
    {"tb/rank1.1001.pt.trace.json", 1, 30, 130, 190},
    {"tb/rank1.2001.pt.trace.json", 4, 60, 160, 170},
};
static const int64_t job_compute[2] = {80000, 60000}, job_comm[2] = {10000, 10000}, job_idle[2] = {10000, 30000};
static const int64_t cycle_compute[2][2] = {{50000, 80000}, {30000, 60000}};
static const int64_t cycle_comm[2][2] = {{40000, 10000}, {60000, 10000}};

/* Reads job_files in the order `order` gives. */
static void read_job(struct trace_doc *d, const int *order, const char *const *names)
{
    char err[256];
    trace_doc_init(d);
    for (int k = 0; k < 4; k++) {
        const struct cycle_file *c = &job_files[order[k]];
        size_t len;
        char *t = cycle_trace(c->step, c->comp, c->c0, c->c1, &len);
        assert_int_equal(trace_read_buffer(d, t, len, names ? names[order[k]] : c->name, err, sizeof(err)), 0);
        free(t);
    }
}

static void assert_job_figures(const struct trace_doc *d, int nranks)
{
    assert_int_equal(d->nranks, nranks);
    for (int i = 0; i < nranks; i++) {
        const struct trace_rank *r = &d->ranks[i];
        assert_int_equal(r->rank, i);
        struct trace_figures f;
        assert_int_equal(trace_analyze_rank(&f, r, NULL, TRACE_IDLE_DELAY_NS), 0);
        assert_int_equal(f.b.wall_ns, 100000);
        assert_int_equal(f.b.compute_ns, job_compute[i]);
        assert_int_equal(f.b.comm_ns, job_comm[i]);
        assert_int_equal(f.b.idle_ns, job_idle[i]);
        for (size_t k = 0; k < 2; k++) {
            assert_int_equal(trace_analyze_window(&f, r, k, NULL, TRACE_IDLE_DELAY_NS), 0);
            assert_int_equal(f.b.wall_ns, 100000);
            assert_int_equal(f.b.compute_ns, cycle_compute[i][k]);
            assert_int_equal(f.b.comm_ns, cycle_comm[i][k]);
        }
    }
}

/* Several cycles of one rank are its windows, in step order whatever the
 * order of the files, each analysed on its own (the cycles' times
 * overlap: one timeline would merge them); never new ranks. */
static void test_cycles_are_windows(void **state)
{
    static const int in_order[] = {0, 1, 2, 3}, reversed[] = {3, 2, 1, 0}, mixed[] = {1, 2, 0, 3};
    const int *orders[] = {in_order, reversed, mixed};
    for (int o = 0; o < 3; o++) {
        struct trace_doc d;
        read_job(&d, orders[o], NULL);
        assert_job_figures(&d, 2);
        for (int i = 0; i < 2; i++) {
            const struct trace_rank *r = &d.ranks[i];
            assert_int_equal(r->nwindows, 2);
            assert_int_equal(r->nsteps, 2);
            assert_int_equal(r->windows[0].step_lo, 1);
            assert_int_equal(r->windows[1].step_lo, 4);
            assert_int_equal(r->windows[0].rank_from, TRACE_RANK_NAME);
            /* each window alone, as a follower sees the latest cycle */
            struct trace_figures w;
            assert_int_equal(trace_analyze_window(&w, r, 1, NULL, TRACE_IDLE_DELAY_NS), 0);
            assert_int_equal(w.b.wall_ns, 100000);
            assert_int_equal(w.b.comm_ns, 10000);
            assert_int_equal(w.b.compute_ns, i == 0 ? 80000 : 60000);
            assert_int_equal(trace_analyze_window(&w, r, 2, NULL, TRACE_IDLE_DELAY_NS), -1);
        }
        assert_int_equal(d.repeated_ranks, 0);
        assert_int_equal(d.unnamed_files, 0);
        trace_doc_free(&d);
    }
}

/* The rank a name gives: rank<N> (rank_N, rank-N) not inside a word, in
 * the file's name, else in its folder's. */
static void test_rank_of_name(void **state)
{
    static const struct {
        const char *path;
        int rank;
    } cases[] = {
        {"rank3.1712345678123.pt.trace.json", 3},
        {"/tmp/tb/rank12.1.pt.trace.json.gz", 12},
        {"job_rank-2.json", 2},
        {"worker_rank_5.json", 5},
        {"RANK7.json", 7},
        {"/data/rank4/host_123.17.pt.trace.json", 4},
        {"/data/rank4/rank1.json", 1},
        {"frank3.json", -1},
        {"ranks.json", -1},
        {"rank.json", -1},
        {"host_1234.1712345678123.pt.trace.json", -1},
        {"/cranky9/x.json", -1},
        {"rank", -1},
        {"", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (trace_rank_of_name(cases[i].path) != cases[i].rank)
            fail_msg("%s: rank %d, wanted %d", cases[i].path, trace_rank_of_name(cases[i].path), cases[i].rank);
}

/* Ranks from the files' names, not their order: rank1's files first, or
 * given with names that sort the other way, read the same. */
static void test_rank_from_name_not_order(void **state)
{
    static const char *const names[] = {"tb/b_rank0.1.json", "tb/b_rank0.2.json", "tb/a_rank1.1.json",
                                        "tb/a_rank1.2.json"};
    static const int rank1_first[] = {2, 3, 0, 1}, by_name[] = {2, 0, 3, 1};
    struct trace_doc d;
    read_job(&d, rank1_first, NULL);
    assert_job_figures(&d, 2);
    trace_doc_free(&d);
    read_job(&d, by_name, names);
    assert_job_figures(&d, 2);
    trace_doc_free(&d);
}

/* Names without a rank: tensorboard's default worker (host_pid) keeps a
 * process's cycles together, ranks following the workers' order; any
 * other name takes the lowest rank no file holds. Each is counted for the
 * note replay prints. */
static void test_rank_by_worker_and_order(void **state)
{
    static const char *const names[] = {"tb/node_11.1000.pt.trace.json", "tb/node_11.2000.pt.trace.json",
                                        "tb/node_22.1001.pt.trace.json.gz", "tb/node_22.2001.pt.trace.json.gz"};
    static const int order[] = {0, 1, 2, 3};
    struct trace_doc d;
    read_job(&d, order, names);
    assert_job_figures(&d, 2);
    assert_int_equal(d.ranks[0].windows[0].rank_from, TRACE_RANK_WORKER);
    assert_int_equal(d.unnamed_files, 4);
    assert_string_equal(d.unnamed_first, names[0]);
    trace_doc_free(&d);

    /* plain names: each file a rank of its own, in order, after the named ones */
    char err[256];
    size_t len;
    char *t = cycle_trace(1, 50, 150, 190, &len);
    struct trace_cycle c;
    trace_doc_init(&d);
    assert_int_equal(trace_read_cycle(&d, t, len, "x/rank1.json", -1, 0, &c, err, sizeof(err)), 0);
    assert_int_equal(c.rank, 1);
    assert_int_equal(c.rank_from, TRACE_RANK_NAME);
    assert_int_equal(trace_read_cycle(&d, t, len, "x/a.json", -1, 0, &c, err, sizeof(err)), 0);
    assert_int_equal(c.rank, 0);
    assert_int_equal(c.rank_from, TRACE_RANK_ORDER);
    assert_int_equal(trace_read_cycle(&d, t, len, "x/b.json", -1, 0, &c, err, sizeof(err)), 0);
    assert_int_equal(c.rank, 2);
    assert_int_equal(d.nranks, 3);
    assert_int_equal(d.unnamed_files, 2);
    /* the caller's rank wins: a follower that knows it */
    assert_int_equal(trace_read_cycle(&d, t, len, "x/rank1.json", 5, 0, &c, err, sizeof(err)), 0);
    assert_int_equal(c.rank, 5);
    assert_int_equal(c.rank_from, TRACE_RANK_GIVEN);
    assert_int_equal(c.window, 0);
    trace_doc_free(&d);
    free(t);
}

/* The same file twice is one rank with the same steps in two windows:
 * counted, for replay's note. */
static void test_cycle_repeated(void **state)
{
    char err[256];
    size_t len;
    char *t = cycle_trace(1, 50, 150, 190, &len);
    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, t, len, "rank0.1.pt.trace.json", err, sizeof(err)), 0);
    assert_int_equal(d.repeated_ranks, 0);
    assert_int_equal(trace_read_buffer(&d, t, len, "rank0.1.pt.trace.json", err, sizeof(err)), 0);
    assert_int_equal(d.nranks, 1);
    assert_int_equal(d.ranks[0].nwindows, 2);
    assert_int_equal(d.repeated_ranks, 1);
    assert_int_equal(d.repeat_rank, 0);
    trace_doc_free(&d);
    free(t);
}

/* A follower's read: a file still being written (cut anywhere, plain or
 * gzip) is not read and leaves the document as it was; the whole file
 * then lands as the next window. */
static void test_read_cycle_whole(void **state)
{
    char err[256];
    size_t len;
    char *t = cycle_trace(4, 80, 180, 190, &len), *first = NULL;
    size_t flen;
    first = cycle_trace(1, 50, 150, 190, &flen);
    struct trace_doc d;
    struct trace_cycle c;
    trace_doc_init(&d);
    assert_int_equal(
        trace_read_cycle(&d, first, flen, "tb/rank0.1.pt.trace.json", -1, TRACE_READ_WHOLE, &c, err, sizeof(err)), 0);
    assert_int_equal(c.window, 0);
    uint64_t events = d.events;
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(
            trace_read_cycle(&d, t, cut, "tb/rank0.2.pt.trace.json", -1, TRACE_READ_WHOLE, &c, err, sizeof(err)), 1);
        assert_int_equal(d.nfiles, 1);
        assert_int_equal(d.events, events);
        assert_int_equal(d.ranks[0].nwindows, 1);
    }
    static char gz[4096];
    size_t ngz = gzip_member(t, len, gz, sizeof(gz), 6);
    assert_int_equal(
        trace_read_cycle(&d, gz, ngz - 9, "tb/rank0.2.pt.trace.json.gz", -1, TRACE_READ_WHOLE, &c, err, sizeof(err)),
        1);
    assert_int_equal(d.nfiles, 1);
    assert_int_equal(
        trace_read_cycle(&d, gz, ngz, "tb/rank0.2.pt.trace.json.gz", -1, TRACE_READ_WHOLE, &c, err, sizeof(err)), 0);
    assert_int_equal(c.rank, 0);
    assert_int_equal(c.window, 1);
    assert_int_equal(c.rank_from, TRACE_RANK_NAME);
    assert_true(d.complete);
    struct trace_figures f;
    assert_int_equal(trace_analyze_window(&f, &d.ranks[0], (size_t)c.window, NULL, TRACE_IDLE_DELAY_NS), 0);
    assert_int_equal(f.b.compute_ns, 80000);
    assert_int_equal(f.b.comm_ns, 10000);
    /* malformed is still an error, whole or not */
    assert_int_equal(trace_read_cycle(&d, "[{}}]", 5, "m.json", -1, TRACE_READ_WHOLE, &c, err, sizeof(err)), -1);
    trace_doc_free(&d);
    free(t);
    free(first);
}

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A folder: its traces (.json, .json.gz; not hidden files, not other
 * names, not a folder called x.json), in name order; replayed whole. */
static void test_trace_dir(void **state)
{
    char dir[] = "/tmp/ddptop_test_tracedir_XXXXXX", path[256], err[512];
    assert_non_null(mkdtemp(dir));
    for (int k = 0; k < 4; k++) {
        const struct cycle_file *c = &job_files[k];
        size_t len;
        char *t = cycle_trace(c->step, c->comp, c->c0, c->c1, &len);
        snprintf(path, sizeof(path), "%s/%s%s", dir, strchr(c->name, '/') + 1, k == 3 ? ".gz" : "");
        if (k == 3) {
            static char gz[4096];
            size_t ngz = gzip_member(t, len, gz, sizeof(gz), 6);
            write_file(path, gz, ngz);
        } else {
            write_file(path, t, len);
        }
        free(t);
    }
    snprintf(path, sizeof(path), "%s/.rank0.3.pt.trace.json", dir);
    write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/notes.txt", dir);
    write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/old.json", dir);
    assert_int_equal(mkdir(path, 0700), 0);

    char **files;
    int n;
    assert_int_equal(trace_list_dir(dir, &files, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 4);
    static const char *const want[] = {"rank0.1000.pt.trace.json", "rank0.2000.pt.trace.json",
                                       "rank1.1001.pt.trace.json", "rank1.2001.pt.trace.json.gz"};
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, want[i]);
        assert_string_equal(files[i], path);
    }
    trace_paths_free(files, n);

    struct replay rp;
    assert_int_equal(replay_load(&rp, dir, err, sizeof(err)), 0);
    assert_job_figures(&rp.doc, 2);
    assert_int_equal(rp.res.nranks, 2);
    assert_int_equal(rp.res.ranks[1].rank, 1);
    assert_int_equal(rp.res.ranks[1].b.comm_ns, job_comm[1]);
    assert_int_equal(rp.res.ranks[1].steps, 2);
    replay_free(&rp);

    /* several arguments, as a shell glob gives them, in any order */
    const char *args[4];
    char a[4][256];
    for (int i = 0; i < 4; i++) {
        snprintf(a[i], sizeof(a[i]), "%s/%s", dir, want[3 - i]);
        args[i] = a[i];
    }
    assert_int_equal(replay_load_list(&rp, args, 4, NULL, TRACE_IDLE_DELAY_NS, err, sizeof(err)), 0);
    assert_job_figures(&rp.doc, 2);
    replay_free(&rp);

    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, want[i]);
        unlink(path);
    }
    assert_int_equal(replay_load(&rp, dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "a folder without a trace in it"));
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kineto_gpu_breakdown),
        cmocka_unit_test(test_kineto_array_form),
        cmocka_unit_test(test_autograd_gloo),
        cmocka_unit_test(test_foreign_step_set),
        cmocka_unit_test(test_merged_intervals),
        cmocka_unit_test(test_metrics_device_view),
        cmocka_unit_test(test_metrics_host_view_unchanged),
        cmocka_unit_test(test_metrics_held_gpu_steps),
        cmocka_unit_test(test_metrics_untraced_steps),
        cmocka_unit_test(test_reader_hostile_input),
        cmocka_unit_test(test_replay_load_api),
        cmocka_unit_test(test_replay_gpu_equals_live),
        cmocka_unit_test(test_replay_gpu_sampled_equals_live),
        cmocka_unit_test(test_history_merges_device_records),
        cmocka_unit_test(test_replay_gpu_fixture),
        cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_tracer_api_and_snapshot),
        cmocka_unit_test(test_reader_malformed),
        cmocka_unit_test(test_reader_rank_limit),
        cmocka_unit_test(test_reader_repeated_ranks),
        cmocka_unit_test(test_reader_gzip_buffer),
        cmocka_unit_test(test_replay_step_without_spans),
        cmocka_unit_test(test_reader_not_regular),
        cmocka_unit_test(test_kineto_gloo_user_annotation),
        cmocka_unit_test(test_cycles_are_windows),
        cmocka_unit_test(test_rank_of_name),
        cmocka_unit_test(test_rank_from_name_not_order),
        cmocka_unit_test(test_rank_by_worker_and_order),
        cmocka_unit_test(test_cycle_repeated),
        cmocka_unit_test(test_read_cycle_whole),
        cmocka_unit_test(test_trace_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
