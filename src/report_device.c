/* report_device.c - the text and markdown tables of a replayed or
 * followed trace's device work, read from the results (report.h): the
 * kernels, memory copies, launch queues, launch statistics, idle time per
 * stream, late collectives, memory timeline and critical path, in that
 * order. */
#include "report.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm.h"
#include "cost_model.h"
#include "fmt_num.h"
#include "half.h"
#include "model.h"
#include "outfile.h"
#include "mode.h"
#include "pipeline.h"
#include "predict.h"
#include "report_fmt.h"
#include "run.h"
#include "sync.h"
#include "trace_analyze.h"

#define KERNEL_NAME_SHOWN 64 /* a kernel's name in the tables, cut with "..." past this */

/* A kernel's name for a table: cut, and in markdown its bars escaped. */
static const char *kernel_cell(char *buf, size_t n, const char *name, int md)
{
    size_t k = 0, len = strlen(name);
    for (size_t i = 0; i < len && i < KERNEL_NAME_SHOWN && k + 3 < n; i++) {
        if (md && name[i] == '|')
            buf[k++] = '\\';
        buf[k++] = name[i];
    }
    buf[k] = 0;
    if (len > KERNEL_NAME_SHOWN && k + 4 <= n)
        strcat(buf, "...");
    return buf;
}

/* HTA's kernel breakdown of each replayed run (trace/kernels.h): device
 * time by kernel type over all ranks and per rank, then each rank's top
 * kernels by type. */
static void write_kernel_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        if (!r->kernels_valid)
            continue;
        fprintf(f,
                md ? "\nKernel types of run %d (HTA's kernel breakdown):\n\n| rank | type | time ms | share %% "
                     "|\n|---|---|---:|---:|\n"
                   : "\nkernel types of run %d (HTA's kernel breakdown):\n%4s %-56s %10s %7s\n",
                i, "rank", "type", "time ms", "share%");
        for (int k = -1; k < r->nranks; k++) {
            const struct rank_result *q = k >= 0 ? &r->ranks[k] : NULL;
            if (q && !q->kernels_valid)
                continue;
            const int64_t *ns = q ? q->kernels.mix_ns : r->kernel_mix_ns;
            const double *pct = q ? q->kernels.mix_pct : r->kernel_mix_pct;
            char who[16];
            snprintf(who, sizeof(who), q ? "%d" : "all", q ? q->rank : 0);
            for (int m = 1; m < KERNEL_MIXES; m++)
                if (ns[m] > 0)
                    fprintf(f, md ? "| %s | %s | %.3f | %.1f |\n" : "%4s %-56s %10.3f %7.1f\n", who, kernel_mix_name(m),
                            (double)ns[m] / 1e6, pct[m]);
        }
        fprintf(f,
                md ? "\nTop kernels of run %d (share: of its type's kernel time on the rank):\n\n| rank | type | "
                     "kernel | count | mean us | total ms | share %% |\n|---|---|---|---:|---:|---:|---:|\n"
                   : "\ntop kernels of run %d (share: of its type's kernel time on the rank):\n%4s %-13s %-67s %7s "
                     "%10s %10s %7s\n",
                i, "rank", "type", "kernel", "count", "mean us", "total ms", "share%");
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            for (int j = 0; q->kernels_valid && j < q->kernels.nrows; j++) {
                const struct kernel_row *row = &q->kernels.rows[j];
                char name[2 * KERNEL_NAME_SHOWN + 8];
                kernel_cell(name, sizeof(name), row->name, md);
                if (row->others)
                    snprintf(name, sizeof(name), "others (%d kernels)", row->others);
                fprintf(f,
                        md ? "| %d | %s | `%s` | %llu | %.1f | %.3f | %.1f |\n"
                           : "%4d %-13s %-67s %7llu %10.1f %10.3f %7.1f\n",
                        q->rank, kernel_type_name(row->type), name, (unsigned long long)row->count, row->mean_us,
                        (double)row->sum_ns / 1e6, row->share_pct);
            }
        }
    }
}

/* Each replayed run's memory copies by kind (trace/memcpy.h): the run's
 * and each rank's count, bytes, time and bandwidth, and HTA's mean and
 * peak of the trace's per-copy bandwidths. */
static void write_memcpy_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        if (!r->memcpy_valid || r->memcpy.n == 0)
            continue;
        fprintf(f,
                md ? "\nMemory copies of run %d (GB/s: bytes over time; copy GB/s: HTA's, the trace's per copy):\n\n"
                     "| rank | kind | count | MB | time ms | GB/s | copy GB/s mean | copy GB/s max |\n"
                     "|---|---|---:|---:|---:|---:|---:|---:|\n"
                   : "\nmemory copies of run %d (GB/s: bytes over time; copy GB/s: HTA's, the trace's per copy):\n"
                     "%4s %-14s %8s %12s %10s %9s %10s %10s\n",
                i, "rank", "kind", "count", "MB", "time ms", "GB/s", "copy mean", "copy max");
        for (int k = -1; k < r->nranks; k++) {
            const struct rank_result *q = k >= 0 ? &r->ranks[k] : NULL;
            if (q && !q->memcpy_valid)
                continue;
            const struct memcpy_table *t = q ? &q->memcpy : &r->memcpy;
            char who[16];
            snprintf(who, sizeof(who), q ? "%d" : "all", q ? q->rank : 0);
            for (int j = 0; j < t->n; j++) {
                const struct memcpy_kind *c = &t->kinds[j];
                char mean[32], max[32];
                rep_fig(mean, sizeof(mean), "%.3f", c->copy_gbps_mean, c->rated > 0);
                rep_fig(max, sizeof(max), "%.3f", c->copy_gbps_max, c->rated > 0);
                fprintf(f,
                        md ? "| %s | %s | %llu | %.3f | %.3f | %.3f | %s | %s |\n"
                           : "%4s %-14s %8llu %12.3f %10.3f %9.3f %10s %10s\n",
                        who, c->name, (unsigned long long)c->count, (double)c->bytes / 1e6, (double)c->time_ns / 1e6,
                        c->gbps, mean, max);
            }
        }
    }
}

/* Each replayed run's launch queues (trace/queue.h): per rank and stream,
 * HTA's summary of the queue length, and the time blocked on a full
 * queue ("-" for none). */
static void write_queue_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        int any = 0;
        for (int k = 0; r->queue_valid && k < r->nranks; k++)
            any |= r->ranks[k].queue_valid && r->ranks[k].queue.n > 0;
        if (!any)
            continue;
        fprintf(f,
                md ? "\nLaunch queues of run %d (ops launched on a stream, not yet started; blocked: time at %d):\n\n"
                     "| rank | stream | points | mean | std | min | p25 | p50 | p75 | max | blocked ms |\n"
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                   : "\nlaunch queues of run %d (ops launched on a stream, not yet started; blocked: time at %d):\n"
                     "%4s %8s %8s %8s %8s %5s %7s %7s %7s %5s %10s\n",
                i, QUEUE_FULL, "rank", "stream", "points", "mean", "std", "min", "p25", "p50", "p75", "max",
                "blocked ms");
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            for (int j = 0; q->queue_valid && j < q->queue.n; j++) {
                const struct queue_stream *s = &q->queue.streams[j];
                char std[32] = "n/a", blocked[32] = "-";
                if (!isnan(s->std))
                    snprintf(std, sizeof(std), "%.3f", s->std);
                if (s->blocked_ns)
                    snprintf(blocked, sizeof(blocked), "%.3f", (double)s->blocked_ns / 1e6);
                fprintf(f,
                        md ? "| %d | %lld | %llu | %.3f | %s | %lld | %.2f | %.2f | %.2f | %lld | %s |\n"
                           : "%4d %8lld %8llu %8.3f %8s %5lld %7.2f %7.2f %7.2f %5lld %10s\n",
                        q->rank, (long long)s->stream, (unsigned long long)s->count, s->mean, std, (long long)s->min,
                        s->p25, s->p50, s->p75, (long long)s->max, blocked);
            }
            if (q->queue_valid && q->queue.dropped)
                fprintf(f, md ? "\nRank %d: %d more streams left out.\n" : "rank %d: %d more streams left out\n",
                        q->rank, q->queue.dropped);
        }
    }
}

/* Each replayed run's kernel launch statistics (trace/launch.h), HTA's:
 * each rank's launches, the mean, median and most of their CPU and GPU
 * durations and launch delays (us), and the launches HTA flags; then the
 * run's (no median: a rank's alone). */
static void write_launch_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        if (!r->launch_valid || r->launch.count == 0)
            continue;
        fprintf(f,
                md ? "\nKernel launches of run %d (HTA's; us; short: GPU < CPU <= %lld us, long CPU: > %lld us, long "
                     "delay: > %lld us):\n\n"
                     "| rank | launches | CPU mean | CPU p50 | CPU max | GPU mean | GPU p50 | GPU max | delay mean | "
                     "delay p50 | delay max | short | long CPU | long delay |\n"
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                   : "\nkernel launches of run %d (HTA's; us; short: GPU < CPU <= %lld us, long CPU: > %lld us, long "
                     "delay: > %lld us):\n"
                     "%4s %8s %9s %9s %9s %9s %9s %9s %10s %10s %10s %6s %8s %10s\n",
                i, (long long)(r->launch.runtime_cutoff_ns / 1000), (long long)(r->launch.runtime_cutoff_ns / 1000),
                (long long)(r->launch.delay_cutoff_ns / 1000), "rank", "launches", "cpu mean", "cpu p50", "cpu max",
                "gpu mean", "gpu p50", "gpu max", "delay mean", "delay p50", "delay max", "short", "long cpu",
                "long delay");
        for (int k = 0; k <= r->nranks; k++) {
            const struct rank_result *q = k < r->nranks ? &r->ranks[k] : NULL;
            if (q ? !q->launch_valid : r->nranks < 2)
                continue; /* (the run's: of two ranks or more) */
            const struct launch_table *t = q ? &q->launch : &r->launch;
            char who[16], fig[LAUNCH_COLS][3][32];
            snprintf(who, sizeof(who), q ? "%d" : "all", q ? q->rank : 0);
            for (int c = 0; c < LAUNCH_COLS; c++) {
                const struct launch_dur *d = &t->dur[c];
                rep_fig(fig[c][0], sizeof(fig[c][0]), "%.3f", d->mean_ns / 1e3, t->count > 0);
                rep_fig(fig[c][1], sizeof(fig[c][1]), "%.3f", d->p50_ns / 1e3, t->count > 0 && t->p50_valid);
                rep_fig(fig[c][2], sizeof(fig[c][2]), "%.3f", (double)d->max_ns / 1e3, t->count > 0);
            }
            fprintf(f,
                    md ? "| %s | %llu | %s | %s | %s | %s | %s | %s | %s | %s | %s | %llu | %llu | %llu |\n"
                       : "%4s %8llu %9s %9s %9s %9s %9s %9s %10s %10s %10s %6llu %8llu %10llu\n",
                    who, (unsigned long long)t->count, fig[0][0], fig[0][1], fig[0][2], fig[1][0], fig[1][1], fig[1][2],
                    fig[2][0], fig[2][1], fig[2][2], (unsigned long long)t->short_gpu, (unsigned long long)t->long_cpu,
                    (unsigned long long)t->long_delay);
        }
    }
}

/* Each replayed run's idle time per stream (trace/idle.h), HTA's split:
 * each rank's streams, their gaps summed (us) and each category's time
 * (us) and share of it (%). */
static void write_idle_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        int any = 0;
        int64_t delay_ns = 0;
        for (int k = 0; r->idle_valid && k < r->nranks; k++)
            if (r->ranks[k].idle_valid && r->ranks[k].idle.n > 0) {
                any = 1;
                delay_ns = r->ranks[k].idle.delay_ns;
            }
        if (!any)
            continue;
        fprintf(f,
                md ? "\nIdle time per stream of run %d (HTA's; us; kernel wait: a gap under %.3f us, host wait: "
                     "launched after the op before ended):\n\n"
                     "| rank | stream | ops | idle | host wait | %% | kernel wait | %% | other | %% |\n"
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                   : "\nidle time per stream of run %d (HTA's; us; kernel wait: a gap under %.3f us, host wait: "
                     "launched after the op before ended):\n"
                     "%4s %8s %8s %12s %12s %6s %12s %6s %12s %6s\n",
                i, (double)delay_ns / 1e3, "rank", "stream", "ops", "idle", "host wait", "%", "kernel wait", "%",
                "other", "%");
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            for (int j = 0; q->idle_valid && j < q->idle.n; j++) {
                const struct idle_stream *s = &q->idle.streams[j];
                char pct[IDLE_CATS][32];
                for (int c = 0; c < IDLE_CATS; c++)
                    rep_fig(pct[c], sizeof(pct[c]), "%.2f", 100 * s->ratio[c], s->ratio_valid);
                fprintf(f,
                        md ? "| %d | %lld | %llu | %.3f | %.3f | %s | %.3f | %s | %.3f | %s |\n"
                           : "%4d %8lld %8llu %12.3f %12.3f %6s %12.3f %6s %12.3f %6s\n",
                        q->rank, (long long)s->stream, (unsigned long long)s->ops, (double)s->idle_ns / 1e3,
                        (double)s->ns[IDLE_HOST_WAIT] / 1e3, pct[IDLE_HOST_WAIT], (double)s->ns[IDLE_KERNEL_WAIT] / 1e3,
                        pct[IDLE_KERNEL_WAIT], (double)s->ns[IDLE_OTHER] / 1e3, pct[IDLE_OTHER]);
            }
            if (q->idle_valid && q->idle.dropped)
                fprintf(f, md ? "\nRank %d: %d more streams left out.\n" : "rank %d: %d more streams left out\n",
                        q->rank, q->idle.dropped);
        }
    }
}

/* Each replayed run's late collectives (trace/straggler.h): the
 * collective matched across ranks, and per rank the steps it started it
 * last, HTA's late count, and its lead (us) over the others' latest. */
static void write_straggler_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct straggler_table *t = &res[i].stragglers;
        if (!t->valid)
            continue;
        fprintf(f,
                md ? "\nLate collectives of run %d (HTA's stragglers; %s on stream %lld, %llu steps; late: among the "
                     "%d latest; us):\n\n"
                     "| rank | last | late | lead | lead mean |\n|---:|---:|---:|---:|---:|\n"
                   : "\nlate collectives of run %d (HTA's stragglers; %s on stream %lld, %llu steps; late: among the "
                     "%d latest; us):\n%4s %6s %6s %12s %12s\n",
                i, t->name, (long long)t->stream, (unsigned long long)t->steps, STRAGGLER_CANDIDATES, "rank", "last",
                "late", "lead", "lead mean");
        for (int k = 0; k < t->nranks; k++) {
            const struct straggler_rank *q = &t->ranks[k];
            char mean[32];
            rep_fig(mean, sizeof(mean), "%.3f", q->lead_mean_ns / 1e3, q->last > 0);
            fprintf(f, md ? "| %d | %llu | %llu | %.3f | %s |\n" : "%4d %6llu %6llu %12.3f %12s\n", q->rank,
                    (unsigned long long)q->last, (unsigned long long)q->late, (double)q->lead_total_ns / 1e3, mean);
        }
        fprintf(f, md ? "\nStraggler: rank %d (last most often).\n" : "straggler: rank %d (last most often)\n",
                t->straggler);
    }
}

/* Each replayed run's memory timeline (trace/memtl.h): each rank's
 * devices, their bytes (start, end, peaks, allocated and freed), when the
 * peak came (us after the rank's first step, and its step), then each
 * step's peak. */
static void write_memtl_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        if (!r->memtl_valid)
            continue;
        fprintf(f,
                md ? "\nMemory timeline of run %d ([memory] events over every step; bytes; peak at: us after the "
                     "rank's first "
                     "step):\n\n"
                     "| rank | device | events | start | end | peak | peak at | step | reserved peak | allocated | "
                     "freed |\n"
                     "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                   : "\nmemory timeline of run %d ([memory] events over every step; bytes; peak at: us after the "
                     "rank's first "
                     "step):\n"
                     "%4s %-8s %8s %14s %14s %14s %12s %6s %14s %14s %14s\n",
                i, "rank", "device", "events", "start", "end", "peak", "peak at", "step", "reserved peak", "allocated",
                "freed");
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            const struct memtl_table *t = &q->memtl;
            for (int j = 0; q->memtl_valid && j < t->n; j++) {
                const struct memtl_device *d = &t->dev[j];
                char name[32], at[32], step[32];
                memtl_device_name(name, sizeof(name), d->dev_type, d->dev_id);
                rep_fig(at, sizeof(at), "%.3f", (double)(d->peak_at_ns - t->origin_ns) / 1e3, t->origin_valid);
                rep_fig(step, sizeof(step), "%.0f", (double)d->peak_step, d->peak_step >= 0);
                fprintf(f,
                        md ? "| %d | %s | %llu | %lld | %lld | %lld | %s | %s | %lld | %llu | %llu |\n"
                           : "%4d %-8s %8llu %14lld %14lld %14lld %12s %6s %14lld %14llu %14llu\n",
                        q->rank, name, (unsigned long long)d->events, (long long)d->start_bytes,
                        (long long)d->end_bytes, (long long)d->peak_bytes, at, step, (long long)d->reserved_peak_bytes,
                        (unsigned long long)d->alloc_bytes, (unsigned long long)d->freed_bytes);
            }
        }
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            const struct memtl_table *t = &q->memtl;
            for (int j = 0; q->memtl_valid && j < t->n; j++) {
                const struct memtl_device *d = &t->dev[j];
                char name[32];
                memtl_device_name(name, sizeof(name), d->dev_type, d->dev_id);
                fprintf(f, md ? "\nRank %d %s, peak per step:" : "rank %d %s peak per step:", q->rank, name);
                for (int s = 0; s < d->nsteps; s++)
                    fprintf(f, " %u:%lld", d->steps[s].step, (long long)d->steps[s].peak_bytes);
                if (d->steps_dropped)
                    fprintf(f, " (%d more steps left out)", d->steps_dropped);
                fputc('\n', f);
            }
            if (q->memtl_valid && (t->outside || t->dropped))
                fprintf(f,
                        md ? "\nRank %d: %llu events outside its steps, %d more devices left out.\n"
                           : "rank %d: %llu events outside its steps, %d more devices left out\n",
                        q->rank, (unsigned long long)t->outside, t->dropped);
        }
    }
}

/* Each replayed run's critical path per rank (trace/critpath.h): its
 * step, the step's span and the path's length, the path's shares by
 * kind, then its top ops; a rank without one says why. */
static void write_critpath_table(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        int paths = 0;
        for (int k = 0; k < r->nranks; k++)
            paths += r->ranks[k].critpath_valid && r->ranks[k].critpath.valid;
        if (!r->critpath_valid)
            continue;
        if (paths)
            fprintf(f,
                    md ? "\nCritical path of run %d (each rank's median ProfilerStep, step -1: the rank whole; us; "
                         "shares of the path, %%):\n\n"
                         "| rank | step | step us | path us | past step | cpu | compute | comm | memory | wait | ops | "
                         "launches |\n"
                         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                       : "\ncritical path of run %d (each rank's median ProfilerStep, step -1: the rank whole; us; "
                         "shares of the path, %%):\n"
                         "%4s %6s %12s %12s %10s %6s %8s %6s %7s %6s %6s %8s\n",
                    i, "rank", "step", "step us", "path us", "past step", "cpu", "compute", "comm", "memory", "wait",
                    "ops", "launches");
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            const struct critpath *c = &q->critpath;
            if (!q->critpath_valid || !c->valid)
                continue;
            double pct[CRITPATH_KINDS];
            for (int j = 0; j < CRITPATH_KINDS; j++)
                pct[j] = c->length_ns > 0 ? 100.0 * (double)c->kind_ns[j] / (double)c->length_ns : 0;
            fprintf(f,
                    md ? "| %d | %lld | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %d |\n"
                       : "%4d %6lld %12.3f %12.3f %10.3f %6.2f %8.2f %6.2f %7.2f %6.2f %6d %8d\n",
                    q->rank, (long long)c->step, (double)c->step_ns / 1e3, (double)c->length_ns / 1e3,
                    (double)(c->length_ns - c->step_ns) / 1e3, pct[CRITPATH_CPU], pct[CRITPATH_COMPUTE],
                    pct[CRITPATH_COMM], pct[CRITPATH_MEMORY], pct[CRITPATH_WAIT], c->ops, c->launches);
        }
        for (int k = 0; k < r->nranks; k++) {
            const struct rank_result *q = &r->ranks[k];
            const struct critpath *c = &q->critpath;
            if (!q->critpath_valid)
                continue;
            if (!c->valid) {
                fprintf(f, md ? "\nRank %d: no critical path: %s.\n" : "rank %d: no critical path: %s\n", q->rank,
                        critpath_note_text(c->note));
                continue;
            }
            fprintf(f, md ? "\nRank %d, top of the path (us on it, start after the step's):" : "rank %d path top:",
                    q->rank);
            for (int j = 0; j < c->nitems; j++) {
                char cell[KERNEL_NAME_SHOWN + 8];
                fprintf(f, "%s %s (%s) %.3f @%.3f", j ? ";" : "", kernel_cell(cell, sizeof(cell), c->top[j].name, md),
                        critpath_kind_name(c->top[j].kind), (double)c->top[j].path_ns / 1e3,
                        (double)c->top[j].start_ns / 1e3);
            }
            fputc('\n', f);
        }
    }
}

void report_write_device_tables(FILE *f, const struct run_result *res, int n, int md)
{
    write_kernel_table(f, res, n, md);
    write_memcpy_table(f, res, n, md);
    write_queue_table(f, res, n, md);
    write_launch_table(f, res, n, md);
    write_idle_table(f, res, n, md);
    write_straggler_table(f, res, n, md);
    write_memtl_table(f, res, n, md);
    write_critpath_table(f, res, n, md);
}
