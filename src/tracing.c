/* tracing.c - runs to Chrome traces (their replay: replay.c).
 *
 * tracer_open hooks the trace exporter (trace/trace_export) into
 * a listener of the metrics (metrics_listen), so the collector thread streams
 * every drained span and step record to disk as it goes; tracer_close
 * finishes the file(s) after run_join, whatever the way the run ended.
 */
#include "tracing.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "config.h"
#include "files.h"
#include "mode.h"
#include "pipeline.h"
#include "figures.h"
#include "report.h"
#include "run.h"
#include "strategy.h"
#include "trace_analyze.h"
#include "trace_export.h"

_Static_assert(SMEM_KINDS == TRACE_STAGE_MEM_KINDS, "a trace carries every kind of a stage's memory");

struct tracer {
    struct run *r;
    struct trace_export *x;
};

static int64_t realtime_of(int64_t mono_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_rt = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    return now_rt - (probe_now_ns() - mono_ns);
}

static void on_span(void *ctx, int rank, const struct span *s)
{
    struct tracer *t = ctx;
    trace_export_span(t->x, rank, s);
}

static void on_step(void *ctx, int rank, const struct step_rec *rec)
{
    struct tracer *t = ctx;
    struct trace_step_info st = {.step = rec->step,
                                 .epoch = rec->epoch,
                                 .t0_ns = rec->t0_ns,
                                 .t1_ns = rec->t1_ns,
                                 .loss = rec->loss,
                                 .lr = rec->lr,
                                 .correct = rec->correct,
                                 .n = rec->n,
                                 .untraced = rec->untraced,
                                 .skipped = rec->skipped,
                                 .loss_scale = rec->loss_scale,
                                 .desched_known = rec->desched_ns >= 0,
                                 .desched_ns = rec->desched_ns};
    trace_export_step(t->x, rank, &st);
}

/* The run description stored in the trace ("ddptop"."run"). */
static char *run_meta(const struct run *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "ddptop_version", DDPTOP_VERSION);
    cJSON_AddStringToObject(o, "model", r->cfg.model);
    cJSON_AddStringToObject(o, "dataset", r->train ? r->train->name : "");
    cJSON_AddStringToObject(o, "strategy", strategy_name(r->cfg.strategy));
    cJSON_AddStringToObject(o, "device", r->devops ? r->devops->name : "cpu");
    cJSON_AddNumberToObject(o, "ranks", r->world);
    cJSON_AddNumberToObject(o, "batch_size", r->local_batch);
    cJSON_AddNumberToObject(o, "global_batch", r->global_batch);
    cJSON_AddNumberToObject(o, "total_steps", (double)r->total_steps);
    cJSON_AddNumberToObject(o, "steps_per_epoch", (double)r->steps_per_epoch);
    if (r->cupti)
        cJSON_AddNumberToObject(o, "cupti_sample", r->cupti_sample);
    cJSON_AddStringToObject(o, "precision", precision_name(r->cfg.precision));
    if (r->on_gpu)
        cJSON_AddStringToObject(o, "cudnn_algo", r->cfg.cudnn_algo == CONV_ALGO_FIND ? "find" : "heuristic");
    if (train_mode_has(&r->cfg, MODE_STAGED)) {
        cJSON_AddStringToObject(o, "parallel", parallel_name(r->cfg.parallel));
        cJSON_AddNumberToObject(o, "micro_batches", train_mode_micro(&r->cfg));
        cJSON_AddStringToObject(o, "schedule", schedule_name(r->cfg.schedule));
        if (r->cfg.dp > 1)
            cJSON_AddNumberToObject(o, "dp", r->cfg.dp);
    }
    if (r->procs && r->ranks) {
        /* ranks as processes: where each ran, and how its clock was moved
         * onto process 0's (0 on process 0's node, which shares its clock) */
        cJSON *a = cJSON_AddArrayToObject(o, "processes");
        for (int i = 0; a && i < r->world; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNumberToObject(p, "rank", i);
            cJSON_AddStringToObject(p, "host", r->ranks[i].host);
            cJSON_AddNumberToObject(p, "clock_offset_ns", (double)r->ranks[i].clock_add_ns);
            cJSON_AddNumberToObject(p, "clock_error_ns", (double)r->ranks[i].clock_err_ns);
            cJSON_AddItemToArray(a, p);
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Exporter options for run r; device names go to dev[] (world entries). */
static void export_opts(struct trace_export_opts *o, const struct run *r, char (*dev)[32], const char **devp)
{
    memset(o, 0, sizeof(*o));
    for (int i = 0; i < r->world; i++) {
        /* a rank's device is opened by its thread; its name follows from
         * the backend and the rank (cuda:K is rank K's GPU) */
        const char *dn = r->devops ? r->devops->name : "cpu";
        if (!strcmp(dn, "cpu") || !r->ranks)
            snprintf(dev[i], 32, "cpu");
        else
            snprintf(dev[i], 32, "%s:%d", dn, r->ranks[i].gpu);
        devp[i] = dev[i];
    }
    o->world = r->world;
    o->step_to = -1;
    o->backend = r->on_gpu ? r->backend : r->plan.name;
    o->algo = r->plan.algo_name;
    o->device = devp;
    o->base_ns = r->t_start_ns;
    o->base_realtime_ns = realtime_of(r->t_start_ns);
    o->busbw_factor = coll_busbw_factor;
}

struct tracer *tracer_open(const struct config *cfg, struct run *r, int run_index, char *err, size_t errlen)
{
    err[0] = 0;
    if (!cfg->trace[0])
        return NULL;
    uint64_t all = r->world >= 64 ? ~0ULL : (1ULL << r->world) - 1;
    if (cfg->trace_ranks && !(cfg->trace_ranks & all)) {
        snprintf(err, errlen, "--trace-ranks: no such rank in a run of %d ranks", r->world);
        return NULL;
    }
    /* this run's files against every other the command line reads and
     * writes (main checked the sweep's; a run the UI plans may differ) */
    struct files fl;
    files_init(&fl);
    files_of_config(&fl, cfg, run_index, run_index + 1, r->world);
    int clash = files_check(&fl, err, errlen);
    files_free(&fl);
    if (clash)
        return NULL;
    char path[CFG_PATH + 64];
    if (trace_export_path(cfg->trace, run_index, -1, path, sizeof(path)) != 0) {
        snprintf(err, errlen, "--trace %s: file name too long", cfg->trace);
        return NULL;
    }
    struct tracer *t = calloc(1, sizeof(*t));
    char(*dev)[32] = calloc((size_t)r->world, 32);
    const char **devp = calloc((size_t)r->world, sizeof(*devp));
    char *meta = run_meta(r);
    if (!t || !dev || !devp || !meta) {
        snprintf(err, errlen, "--trace %s: out of memory", path);
        goto fail;
    }
    struct trace_export_opts o;
    export_opts(&o, r, dev, devp);
    o.path = path;
    o.split = cfg->trace_split;
    o.ranks_mask = cfg->trace_ranks;
    o.step_from = cfg->trace_step_from;
    o.step_to = cfg->trace_step_to;
    o.meta_json = meta;
    if (trace_export_open(&t->x, &o, err, errlen) != 0)
        goto fail;
    free(dev);
    free(devp);
    free(meta);
    t->r = r;
    metrics_listen(&r->metrics, &(struct metrics_listener){.span = on_span, .step = on_step, .ctx = t});
    return t;
fail:
    free(t);
    free(dev);
    free(devp);
    free(meta);
    return NULL;
}

void tracer_flush(struct tracer *t)
{
    if (t)
        trace_export_flush(t->x);
}

const char *tracer_error(const struct tracer *t)
{
    return t ? trace_export_error(t->x) : NULL;
}

/* What only the run's end knows, for the trace's end: ranks as processes,
 * each one's clock offset as last measured (they are measured again as the
 * run goes, procs.c); stages, the layers each rank ran and the activations
 * it held (a rank learns them once its model is split). Best effort: out
 * of memory, the end has the metadata's first clock estimates only, and a
 * replay no stage table. */
static void end_members(struct trace_export *x, const struct run *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *a = o && r->procs ? cJSON_AddArrayToObject(o, "clocks") : NULL;
    for (int i = 0; a && i < r->world; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "rank", i);
        cJSON_AddNumberToObject(p, "offset_ns", (double)r->ranks[i].clock_add_ns);
        cJSON_AddNumberToObject(p, "error_ns", (double)r->ranks[i].clock_err_ns);
        cJSON_AddNumberToObject(p, "estimates", r->ranks[i].clock_estimates);
        cJSON_AddItemToArray(a, p);
    }
    a = o && train_mode_has(&r->cfg, MODE_STAGED) ? cJSON_AddArrayToObject(o, "stages") : NULL;
    for (int i = 0; a && i < r->world; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "rank", i);
        cJSON_AddNumberToObject(p, "first_layer", r->ranks[i].stage_first);
        cJSON_AddNumberToObject(p, "last_layer", r->ranks[i].stage_end - 1);
        for (int k = 0; k < SMEM_KINDS; k++)
            cJSON_AddNumberToObject(p, trace_stage_mem_keys[k], r->ranks[i].stage_mem[k]);
        cJSON_AddItemToArray(a, p);
    }
    char *s = o && o->child ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (s) { /* {"clocks":...}: its members, without the braces */
        s[strlen(s) - 1] = 0;
        trace_export_set_end(x, s + 1);
    }
    free(s);
}

int tracer_close(struct tracer *t, int told, char *err, size_t errlen)
{
    if (!t)
        return 0;
    struct run *r = t->r;
    metrics_unlisten(&r->metrics, t);
    uint64_t dropped = 0;
    for (int i = 0; i < r->world && r->metrics.r; i++)
        dropped += r->metrics.r[i].dropped;
    if (r->ranks)
        end_members(t->x, r);
    int rc = trace_export_close(t->x, run_state_name(r->state), dropped, err, errlen);
    if (rc != 0 && told) {
        /* the write error was printed when it happened: say only which
         * file(s) it left incomplete */
        char first[512];
        snprintf(first, sizeof(first), "%s", err);
        char *colon = strstr(first, ": write failed");
        if (colon)
            *colon = 0;
        snprintf(err, errlen, "%s is incomplete (see the write error above)", first);
    }
    free(t);
    return rc;
}

/* One item of a snapshot: a span, or (is_step) the step record rebuilt
 * from the spans of a step the history holds whole. */
struct snap_item {
    struct span s;
    int rank;
    int is_step;
};

static int snap_cmp(const void *a, const void *b)
{
    const struct snap_item *x = a, *y = b;
    if (x->s.t1_ns != y->s.t1_ns)
        return x->s.t1_ns < y->s.t1_ns ? -1 : 1;
    if (x->is_step != y->is_step)
        return x->is_step - y->is_step; /* a step after its spans */
    return x->rank - y->rank;
}

static int span_step_order(const void *a, const void *b)
{
    const struct snap_item *x = a, *y = b;
    if (x->s.step != y->s.step)
        return x->s.step < y->s.step ? -1 : 1;
    return x->s.t0_ns < y->s.t0_ns ? -1 : x->s.t0_ns > y->s.t0_ns;
}

/* Appends a step item for every step of rank's items [from, to) that has
 * both its data and its optimizer span on the main lane: the live step
 * record spans exactly data start .. optimizer end. */
static size_t snap_steps(struct snap_item *it, size_t from, size_t to, size_t k)
{
    qsort(it + from, to - from, sizeof(*it), span_step_order);
    for (size_t a = from; a < to;) {
        size_t z = a;
        int64_t t0 = INT64_MAX, t1 = INT64_MIN;
        int have_data = 0, have_opt = 0;
        for (; z < to && it[z].s.step == it[a].s.step; z++) {
            const struct span *sp = &it[z].s;
            if (sp->lane != LANE_MAIN)
                continue;
            have_data |= sp->cat == CAT_DATA;
            have_opt |= sp->cat == CAT_OPTIMIZER;
            if (sp->t0_ns < t0)
                t0 = sp->t0_ns;
            if (sp->t1_ns > t1)
                t1 = sp->t1_ns;
        }
        if (have_data && have_opt) {
            struct snap_item st = {.rank = it[a].rank, .is_step = 1};
            st.s.t0_ns = t0;
            st.s.t1_ns = t1;
            st.s.step = it[a].s.step;
            it[k++] = st;
        }
        a = z;
    }
    return k;
}

int run_export_trace(struct run *r, const char *path, char *err, size_t errlen)
{
    size_t total = 0;
    for (int i = 0; i < r->world; i++) {
        uint64_t n = r->metrics.r[i].nhistory;
        total += n < METRICS_HISTORY ? (size_t)n : METRICS_HISTORY;
    }
    /* room for every span and at most one step item per span */
    struct snap_item *it = malloc(sizeof(*it) * (2 * total + 1));
    char(*dev)[32] = calloc((size_t)r->world, 32);
    const char **devp = calloc((size_t)r->world, sizeof(*devp));
    char *meta = run_meta(r);
    struct trace_export *x = NULL;
    int rc = -1;
    if (!it || !dev || !devp || !meta) {
        snprintf(err, errlen, "trace %s: out of memory", path);
        goto done;
    }
    size_t k = 0;
    for (int i = 0; i < r->world; i++) {
        const struct rank_metrics *rm = &r->metrics.r[i];
        uint64_t n = rm->nhistory < METRICS_HISTORY ? rm->nhistory : METRICS_HISTORY;
        for (uint64_t j = rm->nhistory - n; j < rm->nhistory; j++)
            it[k++] = (struct snap_item){.s = rm->history[j % METRICS_HISTORY], .rank = i};
    }
    size_t nspans = k, from = 0;
    for (int i = 0; i < r->world; i++) {
        size_t to = from;
        while (to < nspans && it[to].rank == i)
            to++;
        k = snap_steps(it, from, to, k);
        from = to;
    }
    /* in end-time order, so every collective meets its peers in the
     * exporter and every step comes after its spans */
    qsort(it, k, sizeof(*it), snap_cmp);
    struct trace_export_opts o;
    export_opts(&o, r, dev, devp);
    o.path = path;
    o.meta_json = meta;
    if (trace_export_open(&x, &o, err, errlen) != 0)
        goto done;
    for (size_t i = 0; i < k; i++) {
        if (!it[i].is_step) {
            trace_export_span(x, it[i].rank, &it[i].s);
            continue;
        }
        const struct rank_metrics *rm = &r->metrics.r[it[i].rank];
        uint32_t s = it[i].s.step;
        struct trace_step_info st = {
            .step = s, .t0_ns = it[i].s.t0_ns, .t1_ns = it[i].s.t1_ns, .loss = NAN, .lr = NAN, .n = r->local_batch};
        if (s < rm->nsteps && s >= metrics_first_kept(rm->nsteps)) {
            st.loss = rm->step_loss[metrics_slot(s)];
            st.correct = rm->step_correct[metrics_slot(s)];
            st.n = rm->step_n[metrics_slot(s)];
            st.untraced = rm->step_untraced[metrics_slot(s)];
            st.skipped = rm->step_skipped[metrics_slot(s)];
        }
        trace_export_step(x, it[i].rank, &st);
    }
    if (r->ranks)
        end_members(x, r); /* (a stage table, where the ranks are stages) */
    rc = trace_export_close(x, "snapshot", 0, err, errlen);
done:
    free(it);
    free(dev);
    free(devp);
    free(meta);
    return rc;
}
