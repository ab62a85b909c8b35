/* trace_export.h - turning probe spans and step records into a Chrome trace
 * (Perfetto, chrome://tracing, speedscope, HTA), streamed to disk.
 *
 * Layout of the trace, the way PyTorch's profiler writes it:
 *   - one process per rank: pid = rank, named "rank N (cpu)" / "rank N
 *     (cuda:K)" by process_name / process_sort_index metadata events;
 *   - one thread per lane: tid = enum lane, named "main", "comm", "data",
 *     "gpu stream", with thread_sort_index = tid; on a GPU rank the gpu
 *     lane's copy-stream (data) and comm-stream (comm) records get tids 4
 *     "gpu copy stream" and 5 "gpu comm stream", so each stream's records
 *     nest on their own thread;
 *   - every span is an X event with ts and dur in microseconds (three
 *     decimals: nanosecond precision) and cat = its time-accounting category (README)
 *     (data, forward, backward, optimizer, comm, wait); args.step is the
 *     step the rank recorded it in;
 *   - every step is an X event "ProfilerStep#N" (cat "step") on the main
 *     thread, spanning the step's record [t0, t1), args epoch/loss/samples;
 *   - counters (C events) at the end of each step: "loss", "samples/s",
 *     "bytes/s" (tx, rx) and "busbw" (GB/s: S x busbw factor over the time
 *     this rank spent in collectives during the step);
 *   - DDP buckets (outer comm spans with tag >= 0 on the comm lane): a flow
 *     from "bucket ready" to the bucket's allreduce. The start ("s") is on
 *     the main thread at the explicit ready marker when there is one (a
 *     zero-length span with tag >= 0 on the main lane, also written as an
 *     instant event "bucket ready"), else at the allreduce's start; the end
 *     ("f", bp "e") is on the allreduce span.
 *
 * Collectives carry args collective, bytes, bytes_rx, size, ranks, seq,
 * algorithm, backend, bucket, and transfer_us / sync_us: transfer = the
 * minimum duration of that seq over all ranks, sync = own - minimum. So an
 * outer comm span is written once every rank's span of that seq arrived
 * (bounded buffering: TRACE_EXPORT_SLOTS sequence numbers are held at most;
 * a seq that never completes - a rank failed, a span was dropped - is
 * written without transfer/sync, with ranks_seen, when its slot is needed or
 * at close). Spans nested inside it (its waits) are written as they come;
 * viewers sort by time. Every rank's durations count towards the minimum,
 * including ranks that --trace-ranks leaves out of the file.
 *
 * Not thread-safe: the collector thread alone calls it.
 */
#ifndef DDPTOP_TRACE_EXPORT_H
#define DDPTOP_TRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "probe.h"

#define TRACE_EXPORT_SLOTS 1024           /* collectives awaiting their peers */
#define TRACE_EXPORT_FLUSH_NS 200000000LL /* batches reach the disk at least this often */

struct trace_export_opts {
    const char *path; /* file to write; with split, ".rankN" is inserted */
    int split;        /* one file per rank */
    int world;
    uint64_t ranks_mask;                     /* ranks to write; 0 = all */
    long step_from, step_to;                 /* steps to write, inclusive; step_to < 0: no end */
    const char *backend;                     /* distributedInfo.backend, e.g. "shm" */
    const char *algo;                        /* collective algorithm, e.g. "ring" */
    const char *const *device;               /* [world] "cpu", "cuda:0"; NULL entries: "cpu" */
    int64_t base_ns;                         /* probe clock value written as ts 0 */
    int64_t base_realtime_ns;                /* CLOCK_REALTIME at base_ns (0: unknown) */
    const char *meta_json;                   /* a JSON object stored as "ddptop" (run description), or NULL */
    double (*busbw_factor)(int kind, int n); /* NULL: busbw counters are left out */
};

/* A step record, as the rank reported it. */
struct trace_step_info {
    uint32_t step, epoch;
    int64_t t0_ns, t1_ns;
    float loss, lr;
    int32_t correct, n;
    uint8_t untraced;      /* a GPU step the device did not trace (--cupti-sample): "untraced": 1 */
    uint8_t skipped;       /* --loss-scale: its gradients overflowed, no update: "skipped": 1 */
    float loss_scale;      /* --loss-scale: the scale of its loss ("loss_scale"), 0: none */
    uint8_t desched_known; /* desched_ns was measured ("desched_ns" is written only then) */
    int64_t desched_ns;    /* the rank thread runnable but not on a core during the step */
};

struct trace_export;

int trace_export_open(struct trace_export **out, const struct trace_export_opts *o, char *err, size_t errlen);
void trace_export_span(struct trace_export *x, int rank, const struct span *s);
/* Call after the step's spans (as metrics does). */
void trace_export_step(struct trace_export *x, int rank, const struct trace_step_info *st);
/* Flushes every file if TRACE_EXPORT_FLUSH_NS passed since the last flush. */
void trace_export_tick(struct trace_export *x);
/* Flushes every file now: what was exported so far reaches the disk in
 * whole events. */
void trace_export_flush(struct trace_export *x);
/* The first write error of any file (naming it), or NULL. */
const char *trace_export_error(const struct trace_export *x);
uint64_t trace_export_events(const struct trace_export *x);
/* JSON members ("name":value,...) that the footer's ddptopTraceEnd gains:
 * what is known only at the end (the last clock estimates of ranks in
 * other processes). Copied; 0, or -1 out of memory. */
int trace_export_set_end(struct trace_export *x, const char *members);
/* Writes what is still buffered, the footer (state: "done", "stopped",
 * "failed"...; spans_dropped: spans the probe rings lost) and closes every
 * file. Returns 0, or -1 with err naming each incomplete file. Frees x. */
int trace_export_close(struct trace_export *x, const char *state, uint64_t spans_dropped, char *err, size_t errlen);

/* The file name for sweep run `run_index` (> 0 inserts ".runI") and rank
 * (>= 0 inserts ".rankN"), before the extension (.json, .json.gz, .gz or
 * the last suffix): t.json -> t.run1.rank0.json; a name without one gets
 * .json after the rank: t -> t.rank0.json. Returns -1 if too long. */
int trace_export_path(const char *path, int run_index, int rank, char *out, size_t n);
/* A device record's trace category from its name: gpu_memcpy ("Memcpy..."),
 * gpu_memset ("Memset..."), else kernel. */
const char *trace_export_gpu_cat(const char *name);

#endif
