/* report_json.c - the report as JSON (docs/json.md): the same results as
 * the text, every figure with its validity (null when unknown); the CSV
 * is report_csv.c's. */
#include "report.h"

#include <cJSON.h>
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

static void add_num(cJSON *o, const char *k, double v, int valid)
{
    if (valid)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* A string, or null when it is unknown (NULL or ""). */
static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* The breakdown keys every runs[] and per_rank[] entry has. */
static void json_breakdown(cJSON *o, const struct breakdown *b, double compute, double comm, double data, double idle,
                           double overlap, int gpu_view, int split, const int64_t split_ns[3])
{
    cJSON_AddStringToObject(o, "view", gpu_view ? "gpu" : "host");
    cJSON_AddNumberToObject(o, "compute_pct", compute);
    cJSON_AddNumberToObject(o, "comm_pct", comm);
    cJSON_AddNumberToObject(o, "data_pct", data);
    cJSON_AddNumberToObject(o, "idle_pct", idle);
    cJSON_AddNumberToObject(o, "overlap_pct", overlap);
    add_num(o, "host_wait_pct", rep_split_pct(split_ns[0], b), split);
    add_num(o, "kernel_wait_pct", rep_split_pct(split_ns[1], b), split);
    add_num(o, "other_idle_pct", rep_split_pct(split_ns[2], b), split);
}

/* The keys a runs[] and a per_rank[] entry share, from x: a run_result
 * or a rank_result, which name these figures alike. Two parts, as each
 * entry writes its own bytes between them: the time split with the time in
 * collectives, then the collectives' bandwidths and transfer and sync. */
#define JSON_SPLIT_KEYS(o, x)                                                                                          \
    do {                                                                                                               \
        const int64_t split_ns_[3] = {(x)->host_wait_ns, (x)->kernel_wait_ns, (x)->other_idle_ns};                     \
        json_breakdown(o, &(x)->b, (x)->split.compute, (x)->split.comm, (x)->split.data, (x)->split.idle,              \
                       (x)->split.overlap, (x)->gpu_view, (x)->idle_split_valid, split_ns_);                           \
        add_num(o, "coll_pct", (x)->coll_pct, 1);                                                                      \
        add_num(o, "coll_ms_per_step", (x)->coll_ms, 1);                                                               \
        add_num(o, "desched_pct", (x)->desched_pct, (x)->desched_valid);                                               \
    } while (0)
#define JSON_COLL_KEYS(o, x)                                                                                           \
    do {                                                                                                               \
        add_num(o, "busbw_gbps", (x)->traffic.busbw_gbps, (x)->traffic.busbw_valid);                                   \
        add_num(o, "algbw_gbps", (x)->traffic.algbw_gbps, (x)->traffic.busbw_valid);                                   \
        add_num(o, "transfer_ms_per_step", (x)->xfer_step_ms, (x)->coll_valid);                                        \
        add_num(o, "sync_ms_per_step", (x)->sync_step_ms, (x)->coll_valid);                                            \
        add_num(o, "transfer_ms_total", (x)->xfer_ms, (x)->coll_valid);                                                \
        add_num(o, "negotiate_ms_per_step", (x)->negotiate_ms, (x)->negotiate_valid);                                  \
        add_num(o, "sync_ms_total", (x)->sync_ms, (x)->coll_valid);                                                    \
    } while (0)

static cJSON *json_replay(const struct replay_source *src)
{
    if (!src->valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "files", src->files);
    cJSON_AddStringToObject(o, "format", src->format);
    cJSON_AddBoolToObject(o, "complete", src->complete);
    cJSON_AddBoolToObject(o, "truncated", src->truncated);
    cJSON_AddNumberToObject(o, "events", (double)src->events);
    cJSON *lo = cJSON_AddArrayToObject(o, "left_out"); /* (the first few named; left_out_count: all) */
    for (int k = 0; lo && k < src->nleft_out && k < REPLAY_LEFT_OUT_NAMED; k++)
        cJSON_AddItemToArray(lo, cJSON_CreateString(src->left_out[k]));
    cJSON_AddNumberToObject(o, "left_out_count", src->nleft_out);
    return o;
}

/* A predicted row's own figures (--predict's tables, the run's and a
 * replayed job's alike). */
static cJSON *json_pred_row(const struct scaling_pred *sp)
{
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "ranks", sp->ranks);
    add_num(row, "step_ms", sp->step_ms, sp->valid);
    add_num(row, "comm_ms", sp->comm_ms, sp->valid);
    add_num(row, "exposed_comm_ms", sp->exposed_ms, sp->valid);
    add_num(row, "speedup", sp->speedup, sp->valid);
    add_num(row, "efficiency_pct", sp->efficiency, sp->valid);
    return row;
}

static cJSON *json_prediction(const struct run_result *res, int n, int i)
{
    const struct run_result *r = &res[i];
    if (r->nspred == 0)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    add_str(o, "link", r->spred_link);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int k = 0; k < r->nspred; k++) {
        const struct scaling_pred *sp = &r->spred[k];
        cJSON *row = json_pred_row(sp);
        int j = rep_measured_for(res, n, i, sp->ranks);
        add_num(row, "measured_run", j, j >= 0);
        add_num(row, "measured_step_ms", j >= 0 ? res[j].rate.ms : 0, j >= 0);
        add_num(row, "error_pct", j >= 0 ? 100.0 * (sp->step_ms - res[j].rate.ms) / res[j].rate.ms : 0,
                j >= 0 && sp->valid);
        cJSON_AddItemToArray(rows, row);
    }
    return o;
}

/* --predict of a replayed or followed PyTorch job (result_job_predict):
 * null without --predict. */
static cJSON *json_job_prediction(const struct run_result *r)
{
    const struct job_pred *j = &r->job;
    if (!j->valid && !j->note[0])
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    add_str(o, "note", j->note);
    add_num(o, "world", j->world, j->valid);
    add_num(o, "step_ms", j->step_ms, j->valid);
    add_num(o, "compute_ms", j->compute_ms, j->valid);
    add_num(o, "comm_ms", j->comm_ms, j->valid);
    add_num(o, "exposed_comm_ms", j->exposed_ms, j->valid);
    add_num(o, "hidden_comm_ms", j->hidden_ms, j->valid);
    add_num(o, "collectives_per_step", j->colls_per_step, j->valid);
    add_num(o, "bytes_per_step", j->bytes_per_step, j->valid);
    add_str(o, "sizes", j->sizes);
    add_str(o, "link", j->link);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int k = 0; rows && k < j->nrows; k++) {
        const struct scaling_pred *sp = &j->rows[k];
        cJSON *row = json_pred_row(sp);
        cJSON_AddItemToArray(rows, row);
    }
    return o;
}

/* The figures' series (--plot), as columns: "loss_curve" {"step": [..],
 * "loss": [..]} and, for stages, "stage_timeline" {"step", "stage": [..],
 * "cat": [..], "t0_ms": [..], "t1_ms": [..]}. */
static void json_series(cJSON *o, const struct run_result *r)
{
    cJSON *lc = cJSON_AddObjectToObject(o, "loss_curve");
    cJSON *st = lc ? cJSON_AddArrayToObject(lc, "step") : NULL, *lo = lc ? cJSON_AddArrayToObject(lc, "loss") : NULL;
    for (int k = 0; st && lo && k < r->nloss; k++) {
        cJSON_AddItemToArray(st, cJSON_CreateNumber((double)r->loss_curve[k].step));
        cJSON_AddItemToArray(lo, cJSON_CreateNumber(r->loss_curve[k].loss));
    }
    if (r->ntimeline == 0)
        return;
    cJSON *tl = cJSON_AddObjectToObject(o, "stage_timeline");
    if (!tl)
        return;
    cJSON_AddNumberToObject(tl, "step", (double)r->timeline_step);
    cJSON *cols[4] = {cJSON_AddArrayToObject(tl, "stage"), cJSON_AddArrayToObject(tl, "cat"),
                      cJSON_AddArrayToObject(tl, "t0_ms"), cJSON_AddArrayToObject(tl, "t1_ms")};
    for (int k = 0; cols[0] && cols[1] && cols[2] && cols[3] && k < r->ntimeline; k++) {
        const struct timeline_span *t = &r->timeline[k];
        cJSON_AddItemToArray(cols[0], cJSON_CreateNumber(t->stage));
        cJSON_AddItemToArray(cols[1], cJSON_CreateString(cat_name(t->cat)));
        cJSON_AddItemToArray(cols[2], cJSON_CreateNumber(t->t0_ms));
        cJSON_AddItemToArray(cols[3], cJSON_CreateNumber(t->t1_ms));
    }
}

/* A list of kernel mixes (HTA's types, one running or several at once):
 * time and share, every mix in HTA's order. */
static cJSON *json_mixes(const int64_t *ns, const double *pct)
{
    cJSON *a = cJSON_CreateArray();
    for (int m = 1; a && m < KERNEL_MIXES; m++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "type", kernel_mix_name(m));
        cJSON_AddNumberToObject(e, "time_us", (double)ns[m] / 1e3);
        cJSON_AddNumberToObject(e, "share_pct", pct[m]);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* The "ranks" list of a section of the device analyses into o: an entry
 * for each rank whose flag at valid_at (offsetof its section's _valid in
 * struct rank_result) is set, its "rank" and then what fill adds. */
static void json_section_ranks(cJSON *o, const struct run_result *r, size_t valid_at,
                               void (*fill)(cJSON *e, const struct rank_result *q))
{
    cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
    for (int i = 0; i < r->nranks; i++) {
        const struct rank_result *q = &r->ranks[i];
        if (!*(const int *)((const char *)q + valid_at))
            continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", q->rank);
        fill(e, q);
        cJSON_AddItemToArray(ranks, e);
    }
}

/* A rank's kernel types and top kernels. */
static void rank_kernels(cJSON *e, const struct rank_result *q)
{
    cJSON_AddItemToObject(e, "types", json_mixes(q->kernels.mix_ns, q->kernels.mix_pct));
    cJSON *top = cJSON_AddArrayToObject(e, "top");
    for (int k = 0; k < q->kernels.nrows; k++) {
        const struct kernel_row *row = &q->kernels.rows[k];
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "type", kernel_type_name(row->type));
        cJSON_AddStringToObject(t, "name", row->name);
        cJSON_AddNumberToObject(t, "others", row->others);
        cJSON_AddNumberToObject(t, "count", (double)row->count);
        cJSON_AddNumberToObject(t, "sum_us", (double)row->sum_ns / 1e3);
        cJSON_AddNumberToObject(t, "mean_us", row->mean_us);
        cJSON_AddNumberToObject(t, "share_pct", row->share_pct);
        cJSON_AddItemToArray(top, t);
    }
}

/* HTA's kernel breakdown (trace/kernels.h): the run's types, and each
 * rank's types and top kernels; null when no rank has one. */
static cJSON *json_kernels(const struct run_result *r)
{
    if (!r->kernels_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "types", json_mixes(r->kernel_mix_ns, r->kernel_mix_pct));
    json_section_ranks(o, r, offsetof(struct rank_result, kernels_valid), rank_kernels);
    return o;
}

/* A list of memory copy kinds (trace/memcpy.h). */
static cJSON *json_copy_kinds(const struct memcpy_table *t)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < t->n; i++) {
        const struct memcpy_kind *k = &t->kinds[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "kind", k->name);
        cJSON_AddNumberToObject(e, "count", (double)k->count);
        cJSON_AddNumberToObject(e, "bytes", (double)k->bytes);
        cJSON_AddNumberToObject(e, "time_us", (double)k->time_ns / 1e3);
        cJSON_AddNumberToObject(e, "gbps", k->gbps);
        cJSON_AddNumberToObject(e, "rated", (double)k->rated);
        /* (null where no copy of the kind has a bandwidth) */
        add_num(e, "copy_gbps_mean", k->copy_gbps_mean, k->rated > 0);
        add_num(e, "copy_gbps_min", k->copy_gbps_min, k->rated > 0);
        add_num(e, "copy_gbps_max", k->copy_gbps_max, k->rated > 0);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static void rank_memcpy(cJSON *e, const struct rank_result *q)
{
    cJSON_AddItemToObject(e, "kinds", json_copy_kinds(&q->memcpy));
}

/* The memory copies by kind (trace/memcpy.h): the run's and each rank's;
 * null when no rank has device ops. */
static cJSON *json_memcpy(const struct run_result *r)
{
    if (!r->memcpy_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "kinds", json_copy_kinds(&r->memcpy));
    json_section_ranks(o, r, offsetof(struct rank_result, memcpy_valid), rank_memcpy);
    return o;
}

/* A rank's launch queues (trace/queue.h), one entry a stream. */
static cJSON *json_queue_streams(const struct queue_table *t)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < t->n; i++) {
        const struct queue_stream *s = &t->streams[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "stream", (double)s->stream);
        cJSON_AddNumberToObject(e, "count", (double)s->count);
        cJSON_AddNumberToObject(e, "mean", s->mean);
        add_num(e, "std", s->std, !isnan(s->std));
        cJSON_AddNumberToObject(e, "min", (double)s->min);
        cJSON_AddNumberToObject(e, "p25", s->p25);
        cJSON_AddNumberToObject(e, "p50", s->p50);
        cJSON_AddNumberToObject(e, "p75", s->p75);
        cJSON_AddNumberToObject(e, "max", (double)s->max);
        cJSON_AddNumberToObject(e, "blocked_us", (double)s->blocked_ns / 1e3);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static void rank_queue(cJSON *e, const struct rank_result *q)
{
    cJSON_AddItemToObject(e, "streams", json_queue_streams(&q->queue));
    cJSON_AddNumberToObject(e, "streams_left_out", q->queue.dropped);
}

/* The launch queues per rank and stream (trace/queue.h); null when no rank
 * has device ops. */
static cJSON *json_queue(const struct run_result *r)
{
    if (!r->queue_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "full", QUEUE_FULL);
    json_section_ranks(o, r, offsetof(struct rank_result, queue_valid), rank_queue);
    return o;
}

/* One table of launch statistics (trace/launch.h) into o: the launches,
 * each duration's mean, median (null: a sum of ranks') and most in us,
 * and the launches HTA flags. */
static void json_launch_figs(cJSON *o, const struct launch_table *t)
{
    static const char *const cols[LAUNCH_COLS] = {"cpu_us", "gpu_us", "delay_us"};
    cJSON_AddNumberToObject(o, "count", (double)t->count);
    cJSON_AddNumberToObject(o, "kernel_launches", (double)t->kernels);
    for (int k = 0; k < LAUNCH_COLS; k++) {
        const struct launch_dur *d = &t->dur[k];
        cJSON *e = cJSON_AddObjectToObject(o, cols[k]);
        add_num(e, "mean", d->mean_ns / 1e3, t->count > 0);
        add_num(e, "p50", d->p50_ns / 1e3, t->count > 0 && t->p50_valid);
        add_num(e, "max", (double)d->max_ns / 1e3, t->count > 0);
    }
    cJSON_AddNumberToObject(o, "short_gpu", (double)t->short_gpu);
    cJSON_AddNumberToObject(o, "long_cpu", (double)t->long_cpu);
    cJSON_AddNumberToObject(o, "long_delay", (double)t->long_delay);
}

static void rank_launch(cJSON *e, const struct rank_result *q)
{
    json_launch_figs(e, &q->launch);
}

/* HTA's kernel launch statistics (trace/launch.h): the cut-offs, the
 * run's (its ranks' summed) and each rank's; null when no rank has device
 * ops. */
static cJSON *json_launch(const struct run_result *r)
{
    if (!r->launch_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "runtime_cutoff_us", (double)r->launch.runtime_cutoff_ns / 1e3);
    cJSON_AddNumberToObject(o, "delay_cutoff_us", (double)r->launch.delay_cutoff_ns / 1e3);
    json_launch_figs(o, &r->launch);
    json_section_ranks(o, r, offsetof(struct rank_result, launch_valid), rank_launch);
    return o;
}

/* A rank's idle time per stream (trace/idle.h), one entry a stream: its
 * ops, gaps summed, and each category's time, gaps and share (null when
 * the stream has no idle time). */
static void rank_idle(cJSON *e, const struct rank_result *q)
{
    cJSON *a = cJSON_AddArrayToObject(e, "streams");
    for (int i = 0; a && i < q->idle.n; i++) {
        const struct idle_stream *s = &q->idle.streams[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "stream", (double)s->stream);
        cJSON_AddNumberToObject(o, "ops", (double)s->ops);
        cJSON_AddNumberToObject(o, "idle_us", (double)s->idle_ns / 1e3);
        for (int c = 0; c < IDLE_CATS; c++) {
            cJSON *k = cJSON_AddObjectToObject(o, idle_cat_name(c));
            cJSON_AddNumberToObject(k, "time_us", (double)s->ns[c] / 1e3);
            cJSON_AddNumberToObject(k, "gaps", (double)s->gaps[c]);
            add_num(k, "ratio", s->ratio[c], s->ratio_valid);
        }
        cJSON_AddItemToArray(a, o);
    }
    cJSON_AddNumberToObject(e, "streams_left_out", q->idle.dropped);
}

/* HTA's idle time breakdown per rank and stream (trace/idle.h), with its
 * kernel wait threshold; null when no rank has device ops. */
static cJSON *json_idle(const struct run_result *r)
{
    if (!r->idle_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    int64_t delay_ns = 0;
    for (int i = 0; i < r->nranks; i++)
        if (r->ranks[i].idle_valid)
            delay_ns = r->ranks[i].idle.delay_ns;
    cJSON_AddNumberToObject(o, "delay_us", (double)delay_ns / 1e3);
    json_section_ranks(o, r, offsetof(struct rank_result, idle_valid), rank_idle);
    return o;
}

/* The run's late collectives (trace/straggler.h): the collective matched,
 * the steps, HTA's duration cut-off, the straggler and each rank's
 * counts and lead (us); null when no collective matched on two ranks. */
static cJSON *json_stragglers(const struct run_result *r)
{
    const struct straggler_table *t = &r->stragglers;
    if (!t->valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", t->name);
    cJSON_AddNumberToObject(o, "stream", (double)t->stream);
    cJSON_AddNumberToObject(o, "steps", (double)t->steps);
    cJSON_AddNumberToObject(o, "min_duration_us", (double)t->min_duration_ns / 1e3);
    cJSON_AddNumberToObject(o, "candidates", STRAGGLER_CANDIDATES);
    cJSON_AddNumberToObject(o, "straggler", t->straggler);
    cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
    for (int k = 0; k < t->nranks; k++) {
        const struct straggler_rank *q = &t->ranks[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", q->rank);
        cJSON_AddNumberToObject(e, "last", (double)q->last);
        cJSON_AddNumberToObject(e, "late", (double)q->late);
        cJSON_AddNumberToObject(e, "lead_us", (double)q->lead_total_ns / 1e3);
        add_num(e, "lead_mean_us", q->lead_mean_ns / 1e3, q->last > 0);
        cJSON_AddItemToArray(ranks, e);
    }
    return o;
}

/* A rank's memory timeline (trace/memtl.h), one entry a device: its
 * events, bytes at the start and end, peaks (the allocated one's time in us
 * after the rank's first step, and its step), bytes allocated and freed,
 * and the peak allocated of each step. */
static void rank_memtl(cJSON *e, const struct rank_result *q)
{
    const struct memtl_table *t = &q->memtl;
    cJSON *a = cJSON_AddArrayToObject(e, "devices");
    for (int i = 0; a && i < t->n; i++) {
        const struct memtl_device *d = &t->dev[i];
        char name[32];
        memtl_device_name(name, sizeof(name), d->dev_type, d->dev_id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", name);
        cJSON_AddNumberToObject(o, "device_type", d->dev_type);
        cJSON_AddNumberToObject(o, "device_id", d->dev_id);
        cJSON_AddNumberToObject(o, "events", (double)d->events);
        cJSON_AddNumberToObject(o, "start_bytes", (double)d->start_bytes);
        cJSON_AddNumberToObject(o, "end_bytes", (double)d->end_bytes);
        cJSON_AddNumberToObject(o, "peak_bytes", (double)d->peak_bytes);
        add_num(o, "peak_at_us", (double)(d->peak_at_ns - t->origin_ns) / 1e3, t->origin_valid);
        add_num(o, "peak_step", (double)d->peak_step, d->peak_step >= 0);
        cJSON_AddNumberToObject(o, "reserved_peak_bytes", (double)d->reserved_peak_bytes);
        cJSON_AddNumberToObject(o, "alloc_bytes", (double)d->alloc_bytes);
        cJSON_AddNumberToObject(o, "freed_bytes", (double)d->freed_bytes);
        cJSON *st = cJSON_AddArrayToObject(o, "steps");
        for (int k = 0; st && k < d->nsteps; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "step", d->steps[k].step);
            cJSON_AddNumberToObject(x, "peak_bytes", (double)d->steps[k].peak_bytes);
            cJSON_AddItemToArray(st, x);
        }
        cJSON_AddNumberToObject(o, "steps_left_out", d->steps_dropped);
        cJSON_AddItemToArray(a, o);
    }
    cJSON_AddNumberToObject(e, "devices_left_out", t->dropped);
    cJSON_AddNumberToObject(e, "outside_events", (double)t->outside);
    cJSON_AddNumberToObject(e, "host_events", (double)t->host);
}

/* The memory timeline per rank and device from [memory] events
 * (trace/memtl.h); null when no rank has a device's. */
static cJSON *json_memtl(const struct run_result *r)
{
    if (!r->memtl_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    json_section_ranks(o, r, offsetof(struct rank_result, memtl_valid), rank_memtl);
    return o;
}

/* A rank's critical path (trace/critpath.h): its step, the step's span
 * and the path's length (us), the path's time and share by kind, its ops
 * and launches, and its top ops; the figures null with a note where there
 * is no path. */
static void rank_critpath(cJSON *e, const struct rank_result *q)
{
    const struct critpath *c = &q->critpath;
    cJSON_AddBoolToObject(e, "valid", c->valid);
    add_str(e, "note", c->valid ? NULL : critpath_note_text(c->note));
    cJSON_AddNumberToObject(e, "step", (double)c->step);
    cJSON_AddNumberToObject(e, "steps", c->nsteps);
    add_num(e, "step_start_us", (double)c->t0_ns / 1e3, c->valid);
    add_num(e, "step_us", (double)c->step_ns / 1e3, c->valid);
    add_num(e, "length_us", (double)c->length_ns / 1e3, c->valid);
    add_num(e, "past_step_us", (double)(c->length_ns - c->step_ns) / 1e3, c->valid);
    cJSON *us = cJSON_AddObjectToObject(e, "kind_us");
    cJSON *pct = cJSON_AddObjectToObject(e, "kind_pct");
    for (int k = 0; k < CRITPATH_KINDS; k++) {
        add_num(us, critpath_kind_name(k), (double)c->kind_ns[k] / 1e3, c->valid);
        add_num(pct, critpath_kind_name(k), c->length_ns > 0 ? 100.0 * (double)c->kind_ns[k] / (double)c->length_ns : 0,
                c->valid);
    }
    add_num(e, "ops", c->ops, c->valid);
    add_num(e, "launches", c->launches, c->valid);
    add_num(e, "cpu_ops", (double)c->cpu_ops, c->valid);
    add_num(e, "device_ops", (double)c->device_ops, c->valid);
    cJSON *top = cJSON_AddArrayToObject(e, "top");
    for (int k = 0; top && k < c->nitems; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", c->top[k].name);
        cJSON_AddStringToObject(o, "kind", critpath_kind_name(c->top[k].kind));
        cJSON_AddNumberToObject(o, "path_us", (double)c->top[k].path_ns / 1e3);
        cJSON_AddNumberToObject(o, "start_us", (double)c->top[k].start_ns / 1e3);
        cJSON_AddItemToArray(top, o);
    }
}

/* Each rank's critical path (trace/critpath.h); null when none was looked
 * for (no foreign trace). */
static cJSON *json_critpath(const struct run_result *r)
{
    if (!r->critpath_valid)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    json_section_ranks(o, r, offsetof(struct rank_result, critpath_valid), rank_critpath);
    return o;
}

static cJSON *json_run(const struct run_result *res, int n, int index)
{
    const struct run_result *r = &res[index];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", index);
    add_str(o, "model", r->cfg.model);
    add_str(o, "dataset", r->dataset);
    add_str(o, "strategy", rep_strat_name(r));
    add_str(o, "grad_compress", rep_compress_name(r));
    add_str(o, "precision", rep_prec_name(r));
    add_str(o, "device", r->device);
    add_str(o, "backend", r->backend);
    cJSON_AddNumberToObject(o, "ranks", r->world);
    cJSON_AddNumberToObject(o, "ranks_read", r->nranks);
    add_str(o, "window", rep_window_label(r->window, 0));
    add_num(o, "batch_size", rep_per_rank_batch(r), r->batch_valid);
    add_num(o, "global_batch", r->global_batch, r->batch_valid);
    cJSON_AddNumberToObject(o, "steps", (double)r->steps);
    add_num(o, "ms_per_step", r->ms_mean, r->ms_valid);
    add_num(o, "ms_p50", r->rate.ms, r->ms_valid);
    add_num(o, "ms_p90", r->ms_p90, r->ms_valid);
    add_num(o, "samples_per_s", r->rate.samples_s, r->rate.samples_valid);
    add_num(o, "samples_per_s_p50", r->rate.samples_s, r->rate.samples_s > 0);
    add_num(o, "speedup", r->speedup, r->speedup_valid);
    add_num(o, "efficiency_pct", r->efficiency, r->speedup_valid);
    add_num(o, "speedup_baseline_run", r->base_run, r->speedup_valid);
    add_str(o, "scaling", r->speedup_valid ? scaling_name(r->scaling) : NULL);
    if (r->speedup_valid) /* (as the speedup: null without one) */
        cJSON_AddBoolToObject(o, "speedup_marked", r->speedup_marked);
    else
        cJSON_AddNullToObject(o, "speedup_marked");
    add_str(o, "trace_file", r->trace_file);
    add_num(o, "repeats", r->repeats > 1 ? r->repeats : 1, 1);
    add_num(o, "repeat_samples_per_s_min", r->repeat_sps_min, r->repeats > 1);
    add_num(o, "repeat_samples_per_s_max", r->repeat_sps_max, r->repeats > 1);
    JSON_SPLIT_KEYS(o, r);
    add_num(o, "bytes_sent", (double)r->traffic.tx, r->traffic.bytes_valid);
    JSON_COLL_KEYS(o, r);
    add_num(o, "predicted_transfer_ms_per_step", rep_per_step(r->pred_ms, r->steps), r->pred_valid);
    add_num(o, "compute_ms_per_step", r->compute_ms, r->ms_valid && r->nranks > 0);
    add_num(o, "steps_per_epoch", (double)r->steps_per_epoch, r->epoch_valid);
    add_num(o, "compute_s_per_epoch", r->compute_s_epoch, r->epoch_valid);
    add_num(o, "comm_s_per_epoch", r->comm_s_epoch, r->epoch_valid && r->coll_valid);
    add_num(o, "lr", r->lr, r->lr_valid);
    add_num(o, "lr_base", r->lr_base, r->lr_peak_valid);
    add_num(o, "lr_peak", r->lr_peak, r->lr_peak_valid);
    add_num(o, "base_batch", r->cfg.base_batch, r->lr_peak_valid && r->cfg.scale_lr);
    add_num(o, "threads_per_rank", r->threads_per_rank, r->threads_per_rank > 0);
    add_num(o, "train_loss", r->train_loss, r->train_valid);
    add_num(o, "train_acc", r->train_acc, r->train_valid);
    add_num(o, "test_acc", r->test_acc, r->test_valid);
    add_num(o, "loss_threshold", r->cfg.loss_threshold, r->cfg.loss_threshold > 0);
    add_num(o, "threshold_epoch", r->threshold_epoch, r->threshold_step >= 0);
    add_num(o, "threshold_step", (double)r->threshold_step, r->threshold_step >= 0);
    add_num(o, "params", (double)r->params_total, r->params_valid);
    add_num(o, "params_trainable", (double)r->params_trainable, r->params_valid);
    add_num(o, "wall_s", r->wall_s, r->wall_valid);
    add_num(o, "spans_lost", (double)r->dropped, r->dropped_valid);
    if (r->replicas_checked)
        cJSON_AddBoolToObject(o, "replicas_identical", r->replicas_diverged_at < 0);
    else
        cJSON_AddNullToObject(o, "replicas_identical");
    add_str(o, "parallel", parallel_name(r->cfg.parallel));
    if (train_mode_has(&r->cfg, MODE_STAGED)) {
        add_num(o, "micro_batches", train_mode_micro(&r->cfg), 1);
        add_num(o, "dp", r->cfg.dp > 1 ? r->cfg.dp : 1, 1);
        add_str(o, "schedule", train_mode_has(&r->cfg, MODE_MICRO) ? schedule_name(r->cfg.schedule) : NULL);
    }
    if (r->nstages > 0) {
        cJSON *st = cJSON_AddArrayToObject(o, "stages");
        for (int k = 0; st && k < r->nstages; k++) {
            cJSON *e = cJSON_CreateObject();
            if (!e)
                break;
            cJSON_AddNumberToObject(e, "stage", k);
            cJSON_AddNumberToObject(e, "first_layer", r->stage[k].first);
            cJSON_AddNumberToObject(e, "last_layer", r->stage[k].last);
            cJSON_AddNumberToObject(e, "compute_pct", r->stage[k].compute_pct);
            cJSON_AddNumberToObject(e, "idle_pct", r->stage[k].idle_pct);
            cJSON_AddNumberToObject(e, "sent_mb_per_step", r->stage[k].sent_mb);
            cJSON_AddNumberToObject(e, "live_activation_mb", r->stage[k].live_mb);
            for (int q = 0; q < SMEM_KINDS; q++)
                cJSON_AddNumberToObject(e, pipe_stage_mem_key(q), r->stage[k].mem_bytes[q]);
            cJSON_AddNumberToObject(e, "mem_bytes", r->stage[k].mem_total_bytes);
            cJSON_AddItemToArray(st, e);
        }
    }
    json_series(o, r);
    add_num(o, "cupti_overhead_ms", r->cupti_ms, r->cupti_valid);
    add_num(o, "device_records_lost", (double)r->cupti_lost, r->cupti_valid);
    add_num(o, "device_steps_traced", (double)r->steps_traced, r->steps_traced || r->steps_untraced);
    add_num(o, "device_steps_estimated", (double)r->steps_untraced, r->steps_traced || r->steps_untraced);
    add_num(o, "loss_scale", r->loss_scale, r->loss_scale > 0);
    add_num(o, "steps_skipped", (double)r->steps_skipped, r->loss_scale > 0);
    add_str(o, "note", r->note);
    add_str(o, "state", r->state >= 0 ? run_state_name(r->state) : NULL);
    add_str(o, "error", r->error);
    cJSON_AddItemToObject(o, "replay", json_replay(&r->replay));
    cJSON_AddItemToObject(o, "kernels", json_kernels(r));
    cJSON_AddItemToObject(o, "memcpy", json_memcpy(r));
    cJSON_AddItemToObject(o, "queue", json_queue(r));
    cJSON_AddItemToObject(o, "launch", json_launch(r));
    cJSON_AddItemToObject(o, "idle", json_idle(r));
    cJSON_AddItemToObject(o, "stragglers", json_stragglers(r));
    cJSON_AddItemToObject(o, "memory_timeline", json_memtl(r));
    cJSON_AddItemToObject(o, "critical_path", json_critpath(r));
    cJSON_AddItemToObject(o, "prediction", json_prediction(res, n, index));
    cJSON_AddItemToObject(o, "job_prediction", json_job_prediction(&res[index]));
    return o;
}

static cJSON *json_rank(const struct run_result *r, const struct rank_result *q, int run)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", run);
    cJSON_AddNumberToObject(o, "rank", q->rank);
    add_str(o, "rank_from", q->rank_from_valid ? trace_rank_from_name(q->rank_from) : NULL);
    add_str(o, "window", rep_window_label(q->window, q->window_whole));
    add_str(o, "device", q->device);
    cJSON_AddNumberToObject(o, "steps", (double)q->steps);
    add_num(o, "ms_per_step", q->ms_mean, q->ms_valid);
    add_num(o, "ms_p50", q->rate.ms, q->ms_valid);
    add_num(o, "ms_p90", q->ms_p90, q->ms_valid);
    add_num(o, "samples_per_s", q->rate.samples_s, q->rate.samples_valid);
    JSON_SPLIT_KEYS(o, q);
    add_num(o, "bytes_sent", (double)q->traffic.tx, q->traffic.bytes_valid);
    add_num(o, "bytes_received", (double)q->traffic.rx, q->traffic.bytes_valid);
    JSON_COLL_KEYS(o, q);
    add_num(o, "compute_ms_per_step", q->compute_ms, q->ms_valid);
    add_num(o, "compute_s_per_epoch", q->compute_s_epoch, r->epoch_valid);
    add_num(o, "comm_s_per_epoch", q->comm_s_epoch, r->epoch_valid && q->coll_valid);
    add_num(o, "spans_lost", (double)q->dropped, q->dropped_valid);
    add_num(o, "mem_peak_bytes", (double)q->mem.peak, q->mem.valid);
    return o;
}

int report_write_json(FILE *f, const struct run_result *res, int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "ddptop_version", DDPTOP_VERSION);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    cJSON *per = cJSON_AddArrayToObject(root, "per_rank");
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(runs, json_run(res, n, i));
        for (int k = 0; k < res[i].nranks; k++)
            cJSON_AddItemToArray(per, json_rank(&res[i], &res[i].ranks[k], i));
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return -1;
    fprintf(f, "%s\n", s);
    free(s);
    return 0;
}
