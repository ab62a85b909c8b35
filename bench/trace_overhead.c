/* trace_overhead.c - micro-benchmark of the trace writer: how many Chrome
 * trace events per second the collector thread can stream to disk through
 * the real exporter (span -> event formatting, collective matching across
 * two ranks, counters, batched writes), plain and gzip.
 *
 * Built and run by bench/trace_overhead.sh; by hand:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Itrace bench/trace_overhead.c trace/probe.c \
 *      trace/trace_writer.c trace/trace_export.c -lz -lm -o /tmp/trace_overhead
 *   /tmp/trace_overhead [events] [file] [keep]
 * ("keep" leaves the plain trace behind, e.g. to time --replay on it).
 * Prints events/s; the goal is >= 1 million (measure, don't assert).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "trace_export.h"

static double factor(int kind, int n)
{
    return 2.0 * (n - 1) / n;
}

/* Streams about `target` events of a 2-rank allreduce run to path;
 * returns events/s, or -1. */
static double bench(const char *path, uint64_t target, uint64_t *written, double *secs)
{
    const char *dev[2] = {"cpu", "cpu"};
    struct trace_export_opts o = {.path = path,
                                  .world = 2,
                                  .step_to = -1,
                                  .backend = "shm",
                                  .algo = "ring",
                                  .device = dev,
                                  .base_ns = 0,
                                  .busbw_factor = factor};
    struct trace_export *x;
    char err[1500];
    if (trace_export_open(&x, &o, err, sizeof(err)) != 0) {
        fprintf(stderr, "trace_overhead: %s\n", err);
        return -1;
    }
    int64_t t_start = probe_now_ns();
    uint32_t seq = 0;
    int64_t t = 1000;
    for (uint32_t step = 0; trace_export_events(x) < target; step++) {
        int64_t t0 = t;
        for (int r = 0; r < 2; r++) {
            int64_t u = t0;
            struct span s = {
                .t0_ns = u, .t1_ns = u + 30000, .step = step, .tag = -1, .lane = LANE_MAIN, .cat = CAT_DATA};
            trace_export_span(x, r, &s);
            u += 30000;
            s = (struct span){.t0_ns = u, .t1_ns = u + 2000000, .step = step, .tag = -1, .cat = CAT_FORWARD};
            trace_export_span(x, r, &s);
            u += 2000000;
            s = (struct span){.t0_ns = u, .t1_ns = u + 4000000, .step = step, .tag = -1, .cat = CAT_BACKWARD};
            trace_export_span(x, r, &s);
            u += 4000000;
            for (int p = 0; p < 10; p++) {
                struct span w = {.t0_ns = u + 100,
                                 .t1_ns = u + 3100 + r * 1000,
                                 .step = step,
                                 .seq = seq + p,
                                 .tag = (int16_t)p,
                                 .cat = CAT_WAIT,
                                 .coll = COLL_ALLREDUCE};
                trace_export_span(x, r, &w);
                struct span c = {.t0_ns = u,
                                 .t1_ns = u + 20000 + r * 1000,
                                 .bytes = 12345,
                                 .bytes_rx = 12345,
                                 .size = 24690,
                                 .step = step,
                                 .seq = seq + p,
                                 .tag = (int16_t)p,
                                 .cat = CAT_COMM,
                                 .coll = COLL_ALLREDUCE,
                                 .outer = 1};
                trace_export_span(x, r, &c);
                u += 21000;
            }
            s = (struct span){.t0_ns = u, .t1_ns = u + 500000, .step = step, .tag = -1, .cat = CAT_OPTIMIZER};
            trace_export_span(x, r, &s);
            u += 500000;
            struct trace_step_info st = {
                .step = step, .t0_ns = t0, .t1_ns = u, .loss = 2.3f, .lr = 0.01f, .correct = 10, .n = 64};
            trace_export_step(x, r, &st);
            t = u;
        }
        seq += 10;
    }
    *written = trace_export_events(x);
    int rc = trace_export_close(x, "done", 0, err, sizeof(err));
    *secs = (double)(probe_now_ns() - t_start) / 1e9;
    if (rc != 0) {
        fprintf(stderr, "trace_overhead: %s\n", err);
        return -1;
    }
    return (double)*written / *secs;
}

int main(int argc, char **argv)
{
    uint64_t target = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
    const char *base = argc > 2 ? argv[2] : "/tmp/ddptop_trace_overhead.json";
    char gz[1100];
    snprintf(gz, sizeof(gz), "%s.gz", base);
    uint64_t n;
    double secs;
    double plain = bench(base, target, &n, &secs);
    if (plain < 0)
        return 1;
    FILE *f = fopen(base, "rb");
    long size = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fclose(f);
    }
    printf("writer (plain): %llu events, %.1f MB in %.3f s = %.2f M events/s\n", (unsigned long long)n,
           (double)size / 1e6, secs, plain / 1e6);
    double zrate = bench(gz, target / 4, &n, &secs);
    if (zrate < 0)
        return 1;
    printf("writer (gzip):  %llu events in %.3f s = %.2f M events/s\n", (unsigned long long)n, secs, zrate / 1e6);
    printf("events_per_s=%.0f\n", plain);
    if (argc <= 3 || strcmp(argv[3], "keep") != 0)
        unlink(base);
    unlink(gz);
    return 0;
}
