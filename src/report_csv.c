/* report_csv.c - the report as CSV (docs/json.md): one row per run and
 * per rank with the JSON's figures (an empty cell where JSON has null),
 * then the rows of a replayed trace's device tables, each kind of row with
 * its own columns at the end and the others' left empty. */
#include "report.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm.h"
#include "cost_model.h"
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

static void csv_num(FILE *f, double v, int valid, const char *fmt)
{
    fputc(',', f);
    if (valid)
        fprintf(f, fmt, v);
}

static void csv_str(FILE *f, const char *s)
{
    fprintf(f, ",%s", s ? s : "");
}

/* The CSV's one header: the figures' columns, then the kernel rows'
 * (CSV_KERNEL_COLS), then the memory copy rows' (CSV_MEMCPY_COLS), the
 * launch queue rows' (CSV_QUEUE_COLS), the launch statistics rows'
 * (CSV_LAUNCH_COLS), the idle time rows' (CSV_IDLE_COLS), the late
 * collective rows' (CSV_STRAG_COLS), the memory timeline rows'
 * (CSV_MEMTL_COLS) and the critical path rows' (the last CSV_CRIT_COLS). */
static const char csv_header[] =
    "run,rank,model,dataset,strategy,grad_compress,ranks,batch_size,global_batch,steps,ms_per_step,ms_p50,ms_"
    "p90,"
    "samples_per_s,speedup,efficiency_pct,compute_pct,comm_pct,data_pct,idle_pct,overlap_pct,bytes_sent,"
    "busbw_gbps,transfer_ms_per_step,sync_ms_per_step,predicted_transfer_ms_per_step,train_loss,train_acc,test_"
    "acc,threshold_epoch,threshold_step,view,host_wait_pct,kernel_wait_pct,other_idle_pct,coll_pct,coll_ms_per_"
    "step,samples_per_s_p50,speedup_baseline_run,scaling,repeats,lr,desched_pct,negotiate_ms_per_step,"
    "precision,"
    "mem_peak_bytes,algbw_gbps,compute_ms_per_step,steps_per_epoch,compute_s_per_epoch,comm_s_per_epoch,wall_s,"
    "lr_base,lr_peak,backend,speedup_marked,ranks_read,window,rank_from,kernels,kernel_type,kernel_name,kernel_"
    "others,kernel_count,kernel_us,kernel_mean_us,kernel_share_pct,memcpy_kind,memcpy_count,memcpy_bytes,"
    "memcpy_us,"
    "memcpy_gbps,memcpy_rated,memcpy_copy_gbps_mean,memcpy_copy_gbps_min,memcpy_copy_gbps_max,queue_stream,"
    "queue_"
    "count,queue_mean,queue_std,queue_min,queue_p25,queue_p50,queue_p75,queue_max,queue_blocked_us,"
    "launch_count,launch_kernel_launches,launch_cpu_mean_us,launch_cpu_p50_us,launch_cpu_max_us,launch_gpu_"
    "mean_us,"
    "launch_gpu_p50_us,launch_gpu_max_us,launch_delay_mean_us,launch_delay_p50_us,launch_delay_max_us,launch_"
    "short_"
    "gpu,launch_long_cpu,launch_long_delay,idle_stream,idle_ops,idle_us,idle_host_wait_us,idle_host_wait_gaps,"
    "idle_host_wait_ratio,idle_kernel_wait_us,idle_kernel_wait_gaps,idle_kernel_wait_ratio,idle_other_us,idle_other_"
    "gaps,idle_other_ratio,idle_delay_us,straggler_kernel,straggler_stream,straggler_steps,straggler_last,"
    "straggler_late,straggler_lead_us,straggler_lead_mean_us,straggler_rank,memtl_"
    "device,memtl_events,memtl_start_bytes,memtl_end_bytes,memtl_peak_bytes,memtl_peak_at_us,memtl_peak_step,memtl_"
    "reserved_peak_bytes,memtl_alloc_bytes,memtl_freed_bytes,memtl_step_peaks,critpath_step,critpath_step_us,"
    "critpath_length_us,critpath_cpu_us,critpath_compute_us,critpath_comm_us,critpath_memory_us,critpath_wait_us,"
    "critpath_ops,critpath_launches,critpath_top,critpath_note\n";
#define CSV_KERNEL_COLS 8
#define CSV_MEMCPY_COLS 9
#define CSV_QUEUE_COLS 10
#define CSV_LAUNCH_COLS 14
#define CSV_IDLE_COLS 13  /* then: the idle rows' */
#define CSV_STRAG_COLS 8  /* then: the late collectives' rows */
#define CSV_MEMTL_COLS 11 /* then: the memory timeline's rows */
#define CSV_CRIT_COLS 12  /* the last: the critical path's rows */

/* The columns of the figures between run and rank and the kernel columns. */
static int csv_figure_cols(void)
{
    int commas = 0;
    for (const char *p = csv_header; *p; p++)
        commas += *p == ',';
    return commas + 1 - 2 - CSV_KERNEL_COLS - CSV_MEMCPY_COLS - CSV_QUEUE_COLS - CSV_LAUNCH_COLS - CSV_IDLE_COLS -
           CSV_STRAG_COLS - CSV_MEMTL_COLS - CSV_CRIT_COLS;
}

/* One column holding a kernel's name, which may hold commas and quotes:
 * quoted, quotes doubled; empty for NULL. */
static void csv_quoted(FILE *f, const char *s)
{
    fputc(',', f);
    if (!s)
        return;
    fputc('"', f);
    for (const char *p = s; *p; p++)
        fputs(*p == '"' ? "\"\"" : (char[]){*p, 0}, f);
    fputc('"', f);
}

/* One kernel row: run, rank ("all": the run's), the figure columns empty,
 * then the kernel columns. */
static void csv_kernel_row(FILE *f, int run, int rank, const char *table, const char *type, const char *name,
                           int others, uint64_t count, double mean_us, int64_t ns, double share_pct)
{
    if (rank >= 0)
        fprintf(f, "%d,%d", run, rank);
    else
        fprintf(f, "%d,all", run);
    for (int c = csv_figure_cols(); c > 0; c--)
        fputc(',', f);
    csv_str(f, table);
    csv_str(f, type);
    csv_quoted(f, name);
    csv_num(f, others, name != NULL, "%.0f");
    csv_num(f, (double)count, name != NULL, "%.0f");
    csv_num(f, (double)ns / 1e3, 1, "%.3f");
    csv_num(f, mean_us, name != NULL, "%.3f");
    csv_num(f, share_pct, 1, "%.3f");
    for (int c = CSV_MEMCPY_COLS + CSV_QUEUE_COLS + CSV_LAUNCH_COLS + CSV_IDLE_COLS + CSV_STRAG_COLS + CSV_MEMTL_COLS +
                 CSV_CRIT_COLS;
         c > 0; c--)
        fputc(',', f);
    fputc('\n', f);
}

/* Run i's kernel breakdown (trace/kernels.h), as in JSON: the run's mixes,
 * then each rank's mixes and top kernels. */
static void csv_kernels(FILE *f, const struct run_result *r, int i)
{
    if (!r->kernels_valid)
        return;
    for (int m = 1; m < KERNEL_MIXES; m++)
        csv_kernel_row(f, i, -1, "types", kernel_mix_name(m), NULL, 0, 0, 0, r->kernel_mix_ns[m], r->kernel_mix_pct[m]);
    for (int k = 0; k < r->nranks; k++) {
        const struct rank_result *q = &r->ranks[k];
        if (!q->kernels_valid)
            continue;
        for (int m = 1; m < KERNEL_MIXES; m++)
            csv_kernel_row(f, i, q->rank, "types", kernel_mix_name(m), NULL, 0, 0, 0, q->kernels.mix_ns[m],
                           q->kernels.mix_pct[m]);
        for (int j = 0; j < q->kernels.nrows; j++) {
            const struct kernel_row *row = &q->kernels.rows[j];
            csv_kernel_row(f, i, q->rank, "top", kernel_type_name(row->type), row->name, row->others, row->count,
                           row->mean_us, row->sum_ns, row->share_pct);
        }
    }
}

/* One memory copy kind's row (rank -1: the run's): run, rank, the figure
 * and kernel columns empty but `kernels`, "memcpy" (the JSON list), then
 * the kind's figures as in JSON. */
static void csv_memcpy_row(FILE *f, int run, int rank, const struct memcpy_kind *k)
{
    if (rank >= 0)
        fprintf(f, "%d,%d", run, rank);
    else
        fprintf(f, "%d,all", run);
    for (int c = csv_figure_cols(); c > 0; c--)
        fputc(',', f);
    csv_str(f, "memcpy");
    for (int c = CSV_KERNEL_COLS - 1; c > 0; c--)
        fputc(',', f);
    csv_str(f, k->name);
    csv_num(f, (double)k->count, 1, "%.0f");
    csv_num(f, (double)k->bytes, 1, "%.0f");
    csv_num(f, (double)k->time_ns / 1e3, 1, "%.3f");
    csv_num(f, k->gbps, 1, "%.6f");
    csv_num(f, (double)k->rated, 1, "%.0f");
    csv_num(f, k->copy_gbps_mean, k->rated > 0, "%.6f");
    csv_num(f, k->copy_gbps_min, k->rated > 0, "%.6f");
    csv_num(f, k->copy_gbps_max, k->rated > 0, "%.6f");
    for (int c = CSV_QUEUE_COLS + CSV_LAUNCH_COLS + CSV_IDLE_COLS + CSV_STRAG_COLS + CSV_MEMTL_COLS + CSV_CRIT_COLS;
         c > 0; c--)
        fputc(',', f);
    fputc('\n', f);
}

/* Run i's memory copies (trace/memcpy.h), as in JSON: the run's kinds,
 * then each rank's. */
static void csv_memcpy(FILE *f, const struct run_result *r, int i)
{
    if (!r->memcpy_valid)
        return;
    for (int j = 0; j < r->memcpy.n; j++)
        csv_memcpy_row(f, i, -1, &r->memcpy.kinds[j]);
    for (int k = 0; k < r->nranks; k++)
        for (int j = 0; r->ranks[k].memcpy_valid && j < r->ranks[k].memcpy.n; j++)
            csv_memcpy_row(f, i, r->ranks[k].rank, &r->ranks[k].memcpy.kinds[j]);
}

/* One stream's launch queue row: run, rank, the figure, kernel and memory
 * copy columns empty but `kernels`, "queue" (the JSON list), then the
 * stream's figures as in JSON. */
static void csv_queue_row(FILE *f, int run, int rank, const struct queue_stream *s)
{
    fprintf(f, "%d,%d", run, rank);
    for (int c = csv_figure_cols(); c > 0; c--)
        fputc(',', f);
    csv_str(f, "queue");
    for (int c = CSV_KERNEL_COLS - 1 + CSV_MEMCPY_COLS; c > 0; c--)
        fputc(',', f);
    csv_num(f, (double)s->stream, 1, "%.0f");
    csv_num(f, (double)s->count, 1, "%.0f");
    csv_num(f, s->mean, 1, "%.6f");
    csv_num(f, s->std, !isnan(s->std), "%.6f");
    csv_num(f, (double)s->min, 1, "%.0f");
    csv_num(f, s->p25, 1, "%.6f");
    csv_num(f, s->p50, 1, "%.6f");
    csv_num(f, s->p75, 1, "%.6f");
    csv_num(f, (double)s->max, 1, "%.0f");
    csv_num(f, (double)s->blocked_ns / 1e3, 1, "%.3f");
    for (int c = CSV_LAUNCH_COLS + CSV_IDLE_COLS + CSV_STRAG_COLS + CSV_MEMTL_COLS + CSV_CRIT_COLS; c > 0; c--)
        fputc(',', f); /* (the launch, idle, late collective and memory rows') */
    fputc('\n', f);
}

/* Run i's launch queues (trace/queue.h), as in JSON: each rank's streams. */
static void csv_queue(FILE *f, const struct run_result *r, int i)
{
    if (!r->queue_valid)
        return;
    for (int k = 0; k < r->nranks; k++)
        for (int j = 0; r->ranks[k].queue_valid && j < r->ranks[k].queue.n; j++)
            csv_queue_row(f, i, r->ranks[k].rank, &r->ranks[k].queue.streams[j]);
}

/* One launch statistics row (rank -1: the run's): run, rank, the figure,
 * kernel and memory copy columns empty but `kernels`, "launch" (the JSON
 * object), then the table's figures as in JSON. */
static void csv_launch_row(FILE *f, int run, int rank, const struct launch_table *t)
{
    if (rank >= 0)
        fprintf(f, "%d,%d", run, rank);
    else
        fprintf(f, "%d,all", run);
    for (int c = csv_figure_cols(); c > 0; c--)
        fputc(',', f);
    csv_str(f, "launch");
    for (int c = CSV_KERNEL_COLS - 1 + CSV_MEMCPY_COLS + CSV_QUEUE_COLS; c > 0; c--)
        fputc(',', f);
    csv_num(f, (double)t->count, 1, "%.0f");
    csv_num(f, (double)t->kernels, 1, "%.0f");
    for (int k = 0; k < LAUNCH_COLS; k++) {
        const struct launch_dur *d = &t->dur[k];
        csv_num(f, d->mean_ns / 1e3, t->count > 0, "%.3f");
        csv_num(f, d->p50_ns / 1e3, t->count > 0 && t->p50_valid, "%.3f");
        csv_num(f, (double)d->max_ns / 1e3, t->count > 0, "%.3f");
    }
    csv_num(f, (double)t->short_gpu, 1, "%.0f");
    csv_num(f, (double)t->long_cpu, 1, "%.0f");
    csv_num(f, (double)t->long_delay, 1, "%.0f");
    for (int c = CSV_IDLE_COLS + CSV_STRAG_COLS + CSV_MEMTL_COLS + CSV_CRIT_COLS; c > 0; c--)
        fputc(',', f); /* (the idle, late collective and memory rows') */
    fputc('\n', f);
}

/* Run i's launch statistics (trace/launch.h), as in JSON: the run's, then
 * each rank's. */
static void csv_launch(FILE *f, const struct run_result *r, int i)
{
    if (!r->launch_valid)
        return;
    csv_launch_row(f, i, -1, &r->launch);
    for (int k = 0; k < r->nranks; k++)
        if (r->ranks[k].launch_valid)
            csv_launch_row(f, i, r->ranks[k].rank, &r->ranks[k].launch);
}

/* One stream's idle time row: run, rank, the figure, kernel, memory copy,
 * queue and launch columns empty but `kernels`, "idle" (the JSON list),
 * then the stream's figures as in JSON and the threshold. */
static void csv_idle_row(FILE *f, int run, int rank, const struct idle_stream *s, int64_t delay_ns)
{
    fprintf(f, "%d,%d", run, rank);
    for (int c = csv_figure_cols(); c > 0; c--)
        fputc(',', f);
    csv_str(f, "idle");
    for (int c = CSV_KERNEL_COLS - 1 + CSV_MEMCPY_COLS + CSV_QUEUE_COLS + CSV_LAUNCH_COLS; c > 0; c--)
        fputc(',', f);
    csv_num(f, (double)s->stream, 1, "%.0f");
    csv_num(f, (double)s->ops, 1, "%.0f");
    csv_num(f, (double)s->idle_ns / 1e3, 1, "%.3f");
    for (int c = 0; c < IDLE_CATS; c++) {
        csv_num(f, (double)s->ns[c] / 1e3, 1, "%.3f");
        csv_num(f, (double)s->gaps[c], 1, "%.0f");
        csv_num(f, s->ratio[c], s->ratio_valid, "%.6f");
    }
    csv_num(f, (double)delay_ns / 1e3, 1, "%.3f");
    for (int c = CSV_STRAG_COLS + CSV_MEMTL_COLS + CSV_CRIT_COLS; c > 0; c--)
        fputc(',', f); /* (the late collective and memory rows') */
    fputc('\n', f);
}

/* Run i's idle time per stream (trace/idle.h), as in JSON: each rank's
 * streams. */
static void csv_idle(FILE *f, const struct run_result *r, int i)
{
    if (!r->idle_valid)
        return;
    for (int k = 0; k < r->nranks; k++)
        for (int j = 0; r->ranks[k].idle_valid && j < r->ranks[k].idle.n; j++)
            csv_idle_row(f, i, r->ranks[k].rank, &r->ranks[k].idle.streams[j], r->ranks[k].idle.delay_ns);
}

/* Run i's late collectives (trace/straggler.h), as in JSON: one row per
 * rank, the figure, kernel, memory copy, queue and launch columns empty
 * but `kernels`, "stragglers"; the collective, its stream, the steps
 * matched and the run's straggler on each. */
static void csv_stragglers(FILE *f, const struct run_result *r, int i)
{
    const struct straggler_table *t = &r->stragglers;
    if (!t->valid)
        return;
    for (int k = 0; k < t->nranks; k++) {
        const struct straggler_rank *q = &t->ranks[k];
        fprintf(f, "%d,%d", i, q->rank);
        for (int c = csv_figure_cols(); c > 0; c--)
            fputc(',', f);
        csv_str(f, "stragglers");
        for (int c = CSV_KERNEL_COLS - 1 + CSV_MEMCPY_COLS + CSV_QUEUE_COLS + CSV_LAUNCH_COLS + CSV_IDLE_COLS; c > 0;
             c--)
            fputc(',', f);
        csv_quoted(f, t->name);
        csv_num(f, (double)t->stream, 1, "%.0f");
        csv_num(f, (double)t->steps, 1, "%.0f");
        csv_num(f, (double)q->last, 1, "%.0f");
        csv_num(f, (double)q->late, 1, "%.0f");
        csv_num(f, (double)q->lead_total_ns / 1e3, 1, "%.3f");
        csv_num(f, q->lead_mean_ns / 1e3, q->last > 0, "%.3f");
        csv_num(f, (double)t->straggler, 1, "%.0f");
        for (int c = CSV_MEMTL_COLS + CSV_CRIT_COLS; c > 0; c--)
            fputc(',', f); /* (the memory timeline rows') */
        fputc('\n', f);
    }
}

/* Run i's memory timeline (trace/memtl.h), as in JSON: one row per rank
 * and device, every column before them empty but `kernels`, "memory"; its
 * figures, and its steps' peaks as "step:bytes" joined by ';'. */
static void csv_memtl(FILE *f, const struct run_result *r, int i)
{
    if (!r->memtl_valid)
        return;
    for (int k = 0; k < r->nranks; k++) {
        const struct memtl_table *t = &r->ranks[k].memtl;
        for (int j = 0; r->ranks[k].memtl_valid && j < t->n; j++) {
            const struct memtl_device *d = &t->dev[j];
            char name[32];
            memtl_device_name(name, sizeof(name), d->dev_type, d->dev_id);
            fprintf(f, "%d,%d", i, r->ranks[k].rank);
            for (int c = csv_figure_cols(); c > 0; c--)
                fputc(',', f);
            csv_str(f, "memory");
            for (int c = CSV_KERNEL_COLS - 1 + CSV_MEMCPY_COLS + CSV_QUEUE_COLS + CSV_LAUNCH_COLS + CSV_IDLE_COLS +
                         CSV_STRAG_COLS;
                 c > 0; c--)
                fputc(',', f);
            csv_str(f, name);
            csv_num(f, (double)d->events, 1, "%.0f");
            csv_num(f, (double)d->start_bytes, 1, "%.0f");
            csv_num(f, (double)d->end_bytes, 1, "%.0f");
            csv_num(f, (double)d->peak_bytes, 1, "%.0f");
            csv_num(f, (double)(d->peak_at_ns - t->origin_ns) / 1e3, t->origin_valid, "%.3f");
            csv_num(f, (double)d->peak_step, d->peak_step >= 0, "%.0f");
            csv_num(f, (double)d->reserved_peak_bytes, 1, "%.0f");
            csv_num(f, (double)d->alloc_bytes, 1, "%.0f");
            csv_num(f, (double)d->freed_bytes, 1, "%.0f");
            fputc(',', f);
            for (int s = 0; s < d->nsteps; s++)
                fprintf(f, "%s%u:%lld", s ? ";" : "", d->steps[s].step, (long long)d->steps[s].peak_bytes);
            for (int c = CSV_CRIT_COLS; c > 0; c--)
                fputc(',', f); /* (the critical path rows') */
            fputc('\n', f);
        }
    }
}

/* Run i's critical paths (trace/critpath.h), as in JSON: one row per rank
 * looked at, every column before them empty but `kernels`,
 * "critical_path"; its step, the step's span and the path's length, its
 * time by kind (us), its ops and launches, its top ops as "name:us"
 * joined by ';', and the note where there is no path (its figures empty). */
static void csv_critpath(FILE *f, const struct run_result *r, int i)
{
    if (!r->critpath_valid)
        return;
    for (int k = 0; k < r->nranks; k++) {
        const struct critpath *c = &r->ranks[k].critpath;
        if (!r->ranks[k].critpath_valid)
            continue;
        fprintf(f, "%d,%d", i, r->ranks[k].rank);
        for (int j = csv_figure_cols(); j > 0; j--)
            fputc(',', f);
        csv_str(f, "critical_path");
        for (int j = CSV_KERNEL_COLS - 1 + CSV_MEMCPY_COLS + CSV_QUEUE_COLS + CSV_LAUNCH_COLS + CSV_IDLE_COLS +
                     CSV_STRAG_COLS + CSV_MEMTL_COLS;
             j > 0; j--)
            fputc(',', f);
        fprintf(f, ",%lld", (long long)c->step);
        csv_num(f, (double)c->step_ns / 1e3, c->valid, "%.3f");
        csv_num(f, (double)c->length_ns / 1e3, c->valid, "%.3f");
        for (int j = 0; j < CRITPATH_KINDS; j++)
            csv_num(f, (double)c->kind_ns[j] / 1e3, c->valid, "%.3f");
        csv_num(f, c->ops, c->valid, "%.0f");
        csv_num(f, c->launches, c->valid, "%.0f");
        char top[CRITPATH_TOP * (CRITPATH_NAME_LEN + 32)];
        size_t used = 0;
        top[0] = 0;
        for (int j = 0; j < c->nitems && used < sizeof(top); j++)
            used += (size_t)snprintf(top + used, sizeof(top) - used, "%s%s:%.3f", j ? ";" : "", c->top[j].name,
                                     (double)c->top[j].path_ns / 1e3);
        csv_quoted(f, c->valid ? top : NULL); /* (names may hold commas) */
        csv_quoted(f, c->valid ? NULL : critpath_note_text(c->note));
        fputc('\n', f);
    }
}

void report_write_csv(FILE *f, const struct run_result *res, int n)
{
    fputs(csv_header, f);

    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        for (int k = -1; k < r->nranks; k++) {
            const struct rank_result *q = k >= 0 ? &r->ranks[k] : NULL;
            if (q)
                fprintf(f, "%d,%d", i, k);
            else
                fprintf(f, "%d,all", i);
            csv_str(f, r->cfg.model);
            csv_str(f, r->dataset);
            csv_str(f, rep_strat_name(r));
            csv_str(f, rep_compress_name(r));
            fprintf(f, ",%d", r->world);
            csv_num(f, rep_per_rank_batch(r), r->batch_valid, "%.0f");
            csv_num(f, r->global_batch, r->batch_valid, "%.0f");
            fprintf(f, ",%ld", q ? q->steps : r->steps);
            csv_num(f, q ? q->ms_mean : r->ms_mean, q ? q->ms_valid : r->ms_valid, "%.4f");
            csv_num(f, q ? q->rate.ms : r->rate.ms, q ? q->ms_valid : r->ms_valid, "%.4f");
            csv_num(f, q ? q->ms_p90 : r->ms_p90, q ? q->ms_valid : r->ms_valid, "%.4f");
            csv_num(f, q ? q->rate.samples_s : r->rate.samples_s, q ? q->rate.samples_valid : r->rate.samples_valid,
                    "%.1f");
            csv_num(f, r->speedup, !q && r->speedup_valid, "%.4f");
            csv_num(f, r->efficiency, !q && r->speedup_valid, "%.2f");
            csv_num(f, q ? q->split.compute : r->split.compute, 1, "%.3f");
            csv_num(f, q ? q->split.comm : r->split.comm, 1, "%.3f");
            csv_num(f, q ? q->split.data : r->split.data, 1, "%.3f");
            csv_num(f, q ? q->split.idle : r->split.idle, 1, "%.3f");
            csv_num(f, q ? q->split.overlap : r->split.overlap, 1, "%.3f");
            csv_num(f, (double)(q ? q->traffic.tx : r->traffic.tx), q ? q->traffic.bytes_valid : r->traffic.bytes_valid,
                    "%.0f");
            csv_num(f, q ? q->traffic.busbw_gbps : r->traffic.busbw_gbps,
                    q ? q->traffic.busbw_valid : r->traffic.busbw_valid, "%.4f");
            long steps = q ? q->steps : r->steps;
            csv_num(f, q ? q->xfer_step_ms : r->xfer_step_ms, q ? q->coll_valid : r->coll_valid, "%.4f");
            csv_num(f, q ? q->sync_step_ms : r->sync_step_ms, q ? q->coll_valid : r->coll_valid, "%.4f");
            csv_num(f, rep_per_step(r->pred_ms, steps), !q && r->pred_valid, "%.4f");
            csv_num(f, r->train_loss, !q && r->train_valid, "%.6f");
            csv_num(f, r->train_acc, !q && r->train_valid, "%.3f");
            csv_num(f, r->test_acc, !q && r->test_valid, "%.3f");
            csv_num(f, r->threshold_epoch, !q && r->threshold_step >= 0, "%.0f");
            csv_num(f, (double)r->threshold_step, !q && r->threshold_step >= 0, "%.0f");
            csv_str(f, (q ? q->gpu_view : r->gpu_view) ? "gpu" : "host");
            const struct breakdown *b = q ? &q->b : &r->b;
            int split = q ? q->idle_split_valid : r->idle_split_valid;
            csv_num(f, rep_split_pct(q ? q->host_wait_ns : r->host_wait_ns, b), split, "%.3f");
            csv_num(f, rep_split_pct(q ? q->kernel_wait_ns : r->kernel_wait_ns, b), split, "%.3f");
            csv_num(f, rep_split_pct(q ? q->other_idle_ns : r->other_idle_ns, b), split, "%.3f");
            csv_num(f, q ? q->coll_pct : r->coll_pct, 1, "%.3f");
            csv_num(f, q ? q->coll_ms : r->coll_ms, 1, "%.4f");
            csv_num(f, r->rate.samples_s, !q && r->rate.samples_s > 0, "%.1f");
            csv_num(f, r->base_run, !q && r->speedup_valid, "%.0f");
            csv_str(f, !q && r->speedup_valid ? scaling_name(r->scaling) : NULL);
            csv_num(f, r->repeats > 1 ? r->repeats : 1, !q, "%.0f");
            csv_num(f, r->lr, !q && r->lr_valid, "%.6g");
            csv_num(f, q ? q->desched_pct : r->desched_pct, q ? q->desched_valid : r->desched_valid, "%.3f");
            csv_num(f, q ? q->negotiate_ms : r->negotiate_ms, q ? q->negotiate_valid : r->negotiate_valid, "%.4f");
            csv_str(f, rep_prec_name(r));
            csv_num(f, q ? (double)q->mem.peak : 0, q && q->mem.valid, "%.0f");
            csv_num(f, q ? q->traffic.algbw_gbps : r->traffic.algbw_gbps,
                    q ? q->traffic.busbw_valid : r->traffic.busbw_valid, "%.4f");
            csv_num(f, q ? q->compute_ms : r->compute_ms, q ? q->ms_valid : r->ms_valid && r->nranks > 0, "%.4f");
            csv_num(f, (double)r->steps_per_epoch, !q && r->epoch_valid, "%.0f");
            csv_num(f, q ? q->compute_s_epoch : r->compute_s_epoch, r->epoch_valid, "%.4f");
            csv_num(f, q ? q->comm_s_epoch : r->comm_s_epoch, r->epoch_valid && (q ? q->coll_valid : r->coll_valid),
                    "%.4f");
            csv_num(f, r->wall_s, !q && r->wall_valid, "%.3f");
            csv_num(f, r->lr_base, !q && r->lr_peak_valid, "%.6g");
            csv_num(f, r->lr_peak, !q && r->lr_peak_valid, "%.6g");
            csv_str(f, result_comm(r));
            csv_num(f, r->speedup_marked, !q && r->speedup_valid, "%.0f");
            csv_num(f, r->nranks, !q, "%.0f");
            csv_str(f, rep_window_label(q ? q->window : r->window, q && q->window_whole));
            csv_str(f, q && q->rank_from_valid ? trace_rank_from_name(q->rank_from) : NULL);
            for (int c = CSV_KERNEL_COLS + CSV_MEMCPY_COLS + CSV_QUEUE_COLS + CSV_LAUNCH_COLS + CSV_IDLE_COLS +
                         CSV_STRAG_COLS + CSV_MEMTL_COLS + CSV_CRIT_COLS;
                 c > 0; c--)
                fputc(',', f); /* (every device table row's columns) */
            fputc('\n', f);
        }
    }
    for (int i = 0; i < n; i++)
        csv_kernels(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_memcpy(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_queue(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_launch(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_idle(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_stragglers(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_memtl(f, &res[i], i);
    for (int i = 0; i < n; i++)
        csv_critpath(f, &res[i], i);
}
