/* tracing.c - runs to Chrome traces and traces back to figures.
 *
 * Writing: tracer_open hooks the trace exporter (trace/trace_export) into
 * the metrics' on_span/on_step callbacks, so the collector thread streams
 * every drained span and step record to disk as it goes; tracer_close
 * finishes the file(s) after run_join, whatever the way the run ended.
 *
 * Replay: trace/trace_read loads the file(s). A ddptop trace holds the very
 * spans and step records the live metrics saw, so replay feeds them through
 * the same metrics code and reports the same breakdown. A PyTorch profiler
 * trace goes through trace/trace_analyze (HTA's definitions).
 */
#include "tracing.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "config.h"
#include "run.h"
#include "strategy.h"
#include "trace_analyze.h"
#include "trace_export.h"

struct tracer {
    struct run *r;
    struct trace_export *x;
};

static const char *backend_name(int comm)
{
    return comm == COMM_NCCL ? "nccl" : comm == COMM_MPI ? "mpi" : "shm";
}

static const char *algo_name(int algo)
{
    return algo == ALGO_NAIVE ? "naive" : "ring";
}

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
                                 .n = rec->n};
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
        if (!strcmp(dn, "cpu"))
            snprintf(dev[i], 32, "cpu");
        else
            snprintf(dev[i], 32, "%s:%d", dn, i);
        devp[i] = dev[i];
    }
    o->world = r->world;
    o->step_to = -1;
    o->backend = backend_name(r->cfg.comm);
    o->algo = algo_name(r->cfg.algo);
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
    r->metrics.on_span = on_span;
    r->metrics.on_step = on_step;
    r->metrics.on_span_ctx = t;
    return t;
fail:
    free(t);
    free(dev);
    free(devp);
    free(meta);
    return NULL;
}

const char *tracer_error(const struct tracer *t)
{
    return t ? trace_export_error(t->x) : NULL;
}

int tracer_close(struct tracer *t, int told, char *err, size_t errlen)
{
    if (!t)
        return 0;
    struct run *r = t->r;
    if (r->metrics.on_span_ctx == t) {
        r->metrics.on_span = NULL;
        r->metrics.on_step = NULL;
        r->metrics.on_span_ctx = NULL;
    }
    uint64_t dropped = 0;
    for (int i = 0; i < r->world && r->metrics.r; i++)
        dropped += r->metrics.r[i].dropped;
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
        if (s < rm->nsteps) {
            st.loss = rm->step_loss[s];
            st.correct = rm->step_correct[s];
            st.n = rm->step_n[s];
        }
        trace_export_step(x, it[i].rank, &st);
    }
    rc = trace_export_close(x, "snapshot", 0, err, errlen);
done:
    free(it);
    free(dev);
    free(devp);
    free(meta);
    return rc;
}

/* ---- replay ---------------------------------------------------------------- */

static int span_step_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static int step_cmp(const void *a, const void *b)
{
    const struct trace_step_info *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step;
}

/* mean, p50, p90 (ms) of v[n] without its first entry, as the live report. */
static void run_description(struct replay *rp)
{
    snprintf(rp->model, sizeof(rp->model), "%s", rp->doc.flavor == TRACE_DDPTOP ? "?" : "pytorch");
    snprintf(rp->strategy, sizeof(rp->strategy), "%s", rp->doc.flavor == TRACE_DDPTOP ? "?" : "-");
    snprintf(rp->dataset, sizeof(rp->dataset), "%s", "-");
    if (!rp->doc.run_json)
        return;
    cJSON *o = cJSON_Parse(rp->doc.run_json);
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "model")) && cJSON_IsString(v))
        snprintf(rp->model, sizeof(rp->model), "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "strategy")) && cJSON_IsString(v))
        snprintf(rp->strategy, sizeof(rp->strategy), "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "dataset")) && cJSON_IsString(v))
        snprintf(rp->dataset, sizeof(rp->dataset), "%s", v->valuestring);
    cJSON_Delete(o);
}

/* ddptop traces: the live metrics code over the recorded spans and steps. */
static int replay_ddptop(struct replay *rp, char *err, size_t errlen)
{
    struct trace_doc *d = &rp->doc;
    if (metrics_init(&rp->metrics, rp->nranks, -1.0) != 0) {
        snprintf(err, errlen, "out of memory for the metrics of %d ranks", rp->nranks);
        return -1;
    }
    rp->has_metrics = 1;
    struct metrics *m = &rp->metrics;
    int local_batch = 0;
    double all_bus = 0;
    int64_t all_xfer = 0;
    for (int i = 0; i < rp->nranks; i++) {
        struct trace_rank *tr = &d->ranks[i];
        struct replay_rank *q = &rp->ranks[i];
        if (tr->nspans)
            qsort(tr->spans, tr->nspans, sizeof(*tr->spans), span_step_cmp);
        if (tr->nsteps)
            qsort(tr->steps, tr->nsteps, sizeof(*tr->steps), step_cmp);
        size_t j = 0;
        double bus = 0;
        for (size_t s = 0; s < tr->nsteps; s++) {
            const struct trace_step_info *st = &tr->steps[s];
            size_t from = j;
            while (j < tr->nspans && tr->spans[j].step <= st->step)
                j++;
            if (j > from)
                metrics_add_spans(m, i, tr->spans + from, j - from);
            struct step_rec rec = {.step = st->step,
                                   .epoch = st->epoch,
                                   .t0_ns = st->t0_ns,
                                   .t1_ns = st->t1_ns,
                                   .loss = st->loss,
                                   .lr = st->lr,
                                   .correct = st->correct,
                                   .n = st->n};
            metrics_add_step(m, i, &rec);
            if (!local_batch)
                local_batch = st->n;
        }
        if (j < tr->nspans)
            metrics_add_spans(m, i, tr->spans + j, tr->nspans - j);
        for (size_t k = 0; k < tr->nspans; k++)
            if (tr->spans[k].cat == CAT_COMM && tr->spans[k].outer)
                bus += (double)tr->spans[k].size * coll_busbw_factor(tr->spans[k].coll, d->world);
        const struct rank_metrics *rm = &m->r[i];
        q->steps = (long)rm->nsteps;
        metrics_step_stats(m, i, &q->ms_mean, &q->ms_p50, &q->ms_p90);
        int n = tr->nsteps ? tr->steps[0].n : 0;
        q->samples_valid = q->ms_mean > 0 && n > 0;
        q->samples_per_s = q->samples_valid ? n / (q->ms_mean / 1e3) : 0;
        q->b = rm->nsteps > 1 ? rm->steady : rm->total;
        q->bytes_tx = rm->bytes_tx;
        q->bytes_rx = rm->bytes_rx;
        q->coll_valid = d->world > 1 ? tr->coll_matched > 0 : rm->ncoll > 0;
        q->xfer_ms = (double)tr->xfer_ns / 1e6;
        q->sync_ms = (double)tr->sync_ns / 1e6;
        q->busbw_valid = tr->xfer_ns > 0 && bus > 0;
        q->busbw_gbps = q->busbw_valid ? bus / (double)tr->xfer_ns : 0;
        breakdown_add(&rp->all.b, &q->b);
        rp->all.bytes_tx += q->bytes_tx / (uint64_t)rp->nranks;
        rp->all.bytes_rx += q->bytes_rx / (uint64_t)rp->nranks;
        rp->all.xfer_ms += q->xfer_ms / rp->nranks;
        rp->all.sync_ms += q->sync_ms / rp->nranks;
        rp->all.coll_valid |= q->coll_valid;
        all_bus += bus;
        all_xfer += tr->xfer_ns;
    }
    rp->all.busbw_valid = all_xfer > 0 && all_bus > 0;
    rp->all.busbw_gbps = rp->all.busbw_valid ? all_bus / (double)all_xfer : 0;
    /* the run's step time: per step, the slowest rank */
    size_t n = m->steps_done;
    rp->all.steps = (long)n;
    if (n > 0) {
        metrics_run_step_stats(m, &rp->all.ms_mean, &rp->all.ms_p50, &rp->all.ms_p90);
        rp->train_valid = 1;
        rp->train_loss = m->loss_running[n - 1];
        rp->train_acc = metrics_train_acc_last_epoch(m);
    }
    rp->global_batch = local_batch * d->world;
    rp->all.samples_valid = rp->all.ms_mean > 0 && rp->global_batch > 0;
    rp->all.samples_per_s = rp->all.samples_valid ? rp->global_batch / (rp->all.ms_mean / 1e3) : 0;
    return 0;
}

/* PyTorch profiler traces: merged intervals, HTA's definitions. */
static int replay_foreign(struct replay *rp, int64_t kernel_wait_ns, char *err, size_t errlen)
{
    for (int i = 0; i < rp->nranks; i++) {
        struct trace_rank *tr = &rp->doc.ranks[i];
        struct replay_rank *q = &rp->ranks[i];
        struct trace_figures f;
        if (trace_analyze_rank(&f, tr, kernel_wait_ns) != 0) {
            snprintf(err, errlen, "out of memory analysing rank %d", tr->rank);
            return -1;
        }
        q->gpu_view = f.gpu_view;
        q->b = (struct breakdown){.wall_ns = f.wall_ns,
                                  .compute_ns = f.compute_ns,
                                  .comm_ns = f.comm_ns,
                                  .data_ns = f.data_ns,
                                  .idle_ns = f.idle_ns,
                                  .comm_union_ns = f.comm_union_ns,
                                  .overlap_ns = f.overlap_ns};
        q->idle_split_valid = f.idle_split_valid;
        q->host_wait_ns = f.host_wait_ns;
        q->kernel_wait_ns = f.kernel_wait_ns;
        q->other_idle_ns = f.other_idle_ns;
        if (tr->nsteps)
            qsort(tr->steps, tr->nsteps, sizeof(*tr->steps), step_cmp);
        q->steps = (long)tr->nsteps;
        int64_t *v = malloc(sizeof(*v) * (tr->nsteps ? tr->nsteps : 1));
        if (!v) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t s = 0; s < tr->nsteps; s++)
            v[s] = tr->steps[s].t1_ns - tr->steps[s].t0_ns;
        step_stats_ms(v, tr->nsteps, &q->ms_mean, &q->ms_p50, &q->ms_p90);
        free(v);
        breakdown_add(&rp->all.b, &q->b);
        rp->all.host_wait_ns += q->host_wait_ns;
        rp->all.kernel_wait_ns += q->kernel_wait_ns;
        rp->all.other_idle_ns += q->other_idle_ns;
        rp->all.idle_split_valid |= q->idle_split_valid;
        rp->all.gpu_view |= q->gpu_view;
        if (q->ms_mean > rp->all.ms_mean) {
            rp->all.ms_mean = q->ms_mean;
            rp->all.ms_p50 = q->ms_p50;
            rp->all.ms_p90 = q->ms_p90;
        }
        if (q->steps > rp->all.steps)
            rp->all.steps = q->steps;
    }
    return 0;
}

int replay_load(struct replay *rp, const char *paths, int64_t kernel_wait_ns, char *err, size_t errlen)
{
    memset(rp, 0, sizeof(*rp));
    trace_doc_init(&rp->doc);
    snprintf(rp->paths, sizeof(rp->paths), "%s", paths);
    char buf[sizeof(rp->paths)];
    snprintf(buf, sizeof(buf), "%s", paths);
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (trace_read_file(&rp->doc, p, err, errlen) != 0)
            goto fail;
        if (rp->doc.mixed) {
            snprintf(err, errlen, "%s: cannot replay ddptop and PyTorch traces together", p);
            goto fail;
        }
    }
    if (rp->doc.nfiles == 0) {
        snprintf(err, errlen, "no trace file given");
        goto fail;
    }
    if (rp->doc.nranks == 0) {
        snprintf(err, errlen, "%s: no events of any rank", paths);
        goto fail;
    }
    rp->nranks = rp->doc.nranks;
    rp->ranks = calloc((size_t)rp->nranks, sizeof(*rp->ranks));
    if (!rp->ranks) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < rp->nranks; i++) {
        rp->ranks[i].rank = rp->doc.ranks[i].rank;
        snprintf(rp->ranks[i].device, sizeof(rp->ranks[i].device), "%s", rp->doc.ranks[i].device);
    }
    rp->all.rank = -1;
    snprintf(rp->all.device, sizeof(rp->all.device), "%s", rp->ranks[0].device);
    run_description(rp);
    int rc = rp->doc.flavor == TRACE_DDPTOP ? replay_ddptop(rp, err, errlen)
                                            : replay_foreign(rp, kernel_wait_ns, err, errlen);
    if (rc != 0)
        goto fail;
    return 0;
fail:
    replay_free(rp);
    return -1;
}

void replay_free(struct replay *rp)
{
    if (rp->has_metrics)
        metrics_free(&rp->metrics);
    free(rp->ranks);
    trace_doc_free(&rp->doc);
    memset(rp, 0, sizeof(*rp));
}

/* ---- the replay report ----------------------------------------------------- */

static double pct(int64_t part, int64_t wall)
{
    return breakdown_pct(part, wall);
}

static double overlap_pct(const struct breakdown *b)
{
    return b->comm_union_ns > 0 ? 100.0 * (double)b->overlap_ns / (double)b->comm_union_ns : 0.0;
}

static void add_num(cJSON *o, const char *k, double v, int valid)
{
    if (valid)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *json_rank(const struct replay_rank *q, int with_rank)
{
    cJSON *o = cJSON_CreateObject();
    if (with_rank)
        cJSON_AddNumberToObject(o, "rank", q->rank);
    cJSON_AddStringToObject(o, "device", q->device);
    cJSON_AddStringToObject(o, "view", q->gpu_view ? "gpu" : "host");
    cJSON_AddNumberToObject(o, "steps", (double)q->steps);
    add_num(o, "ms_per_step", q->ms_mean, q->steps > 0);
    add_num(o, "ms_p50", q->ms_p50, q->steps > 0);
    add_num(o, "ms_p90", q->ms_p90, q->steps > 0);
    add_num(o, "samples_per_s", q->samples_per_s, q->samples_valid);
    cJSON_AddNumberToObject(o, "wall_ms", (double)q->b.wall_ns / 1e6);
    cJSON_AddNumberToObject(o, "compute_pct", pct(q->b.compute_ns, q->b.wall_ns));
    cJSON_AddNumberToObject(o, "comm_pct", pct(q->b.comm_ns, q->b.wall_ns));
    cJSON_AddNumberToObject(o, "data_pct", pct(q->b.data_ns, q->b.wall_ns));
    cJSON_AddNumberToObject(o, "idle_pct", pct(q->b.idle_ns, q->b.wall_ns));
    cJSON_AddNumberToObject(o, "overlap_pct", overlap_pct(&q->b));
    add_num(o, "host_wait_pct", pct(q->host_wait_ns, q->b.wall_ns), q->idle_split_valid);
    add_num(o, "kernel_wait_pct", pct(q->kernel_wait_ns, q->b.wall_ns), q->idle_split_valid);
    add_num(o, "other_idle_pct", pct(q->other_idle_ns, q->b.wall_ns), q->idle_split_valid);
    cJSON_AddNumberToObject(o, "bytes_sent", (double)q->bytes_tx);
    cJSON_AddNumberToObject(o, "bytes_received", (double)q->bytes_rx);
    add_num(o, "busbw_gbps", q->busbw_gbps, q->busbw_valid);
    add_num(o, "transfer_ms", q->xfer_ms, q->coll_valid);
    add_num(o, "sync_ms", q->sync_ms, q->coll_valid);
    return o;
}

static int write_json(FILE *f, const struct replay *rp)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "ddptop_version", DDPTOP_VERSION);
    cJSON *src = cJSON_AddObjectToObject(root, "replay");
    cJSON_AddStringToObject(src, "files", rp->paths);
    cJSON_AddStringToObject(src, "format", trace_flavor_name(rp->doc.flavor));
    cJSON_AddBoolToObject(src, "complete", rp->doc.complete);
    cJSON_AddBoolToObject(src, "truncated", rp->doc.truncated);
    cJSON_AddStringToObject(src, "backend", rp->doc.backend[0] ? rp->doc.backend : "unknown");
    cJSON_AddNumberToObject(src, "world_size", rp->doc.world);
    if (rp->doc.state[0])
        cJSON_AddStringToObject(src, "state", rp->doc.state);
    else
        cJSON_AddNullToObject(src, "state");
    cJSON_AddNumberToObject(src, "events", (double)rp->doc.events);
    cJSON_AddNumberToObject(src, "spans_lost", (double)rp->doc.spans_dropped);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    cJSON *run = json_rank(&rp->all, 0);
    cJSON_AddNumberToObject(run, "run", 0);
    cJSON_AddStringToObject(run, "model", rp->model);
    cJSON_AddStringToObject(run, "dataset", rp->dataset);
    cJSON_AddStringToObject(run, "strategy", rp->strategy);
    cJSON_AddNumberToObject(run, "ranks", rp->nranks);
    add_num(run, "global_batch", rp->global_batch, rp->global_batch > 0);
    add_num(run, "train_loss", rp->train_loss, rp->train_valid);
    add_num(run, "train_acc", rp->train_acc, rp->train_valid);
    cJSON_AddItemToArray(runs, run);
    cJSON *per = cJSON_AddArrayToObject(root, "per_rank");
    for (int i = 0; i < rp->nranks; i++) {
        cJSON *o = json_rank(&rp->ranks[i], 1);
        cJSON_AddNumberToObject(o, "run", 0);
        cJSON_AddItemToArray(per, o);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return -1;
    fprintf(f, "%s\n", s);
    free(s);
    return 0;
}

static void fmt_opt(char *buf, size_t n, const char *fmt, double v, int valid)
{
    if (valid)
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "n/a");
}

static void row_text(FILE *f, const char *who, const struct replay_rank *q, int md)
{
    char ms[3][16], sps[24], hw[16], kw[16], ow[16], bw[16], xf[16], sy[16];
    fmt_opt(ms[0], sizeof(ms[0]), "%.3f", q->ms_mean, q->steps > 0);
    fmt_opt(ms[1], sizeof(ms[1]), "%.3f", q->ms_p50, q->steps > 0);
    fmt_opt(ms[2], sizeof(ms[2]), "%.3f", q->ms_p90, q->steps > 0);
    fmt_opt(sps, sizeof(sps), "%.0f", q->samples_per_s, q->samples_valid);
    fmt_opt(hw, sizeof(hw), "%.1f", pct(q->host_wait_ns, q->b.wall_ns), q->idle_split_valid);
    fmt_opt(kw, sizeof(kw), "%.1f", pct(q->kernel_wait_ns, q->b.wall_ns), q->idle_split_valid);
    fmt_opt(ow, sizeof(ow), "%.1f", pct(q->other_idle_ns, q->b.wall_ns), q->idle_split_valid);
    fmt_opt(bw, sizeof(bw), "%.2f", q->busbw_gbps, q->busbw_valid);
    fmt_opt(xf, sizeof(xf), "%.1f", q->xfer_ms, q->coll_valid);
    fmt_opt(sy, sizeof(sy), "%.1f", q->sync_ms, q->coll_valid);
    fprintf(f,
            md ? "| %s | %s | %s | %ld | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | "
                 "%s | %s | %s |\n"
               : "%-5s %-8s %-5s %6ld %8s %8s %8s %10s %8.1f %6.1f %6.1f %6.1f %8.1f %6s %6s %6s %7s %8s %8s\n",
            who, q->device, q->gpu_view ? "gpu" : "host", q->steps, ms[0], ms[1], ms[2], sps,
            pct(q->b.compute_ns, q->b.wall_ns), pct(q->b.comm_ns, q->b.wall_ns), pct(q->b.data_ns, q->b.wall_ns),
            pct(q->b.idle_ns, q->b.wall_ns), overlap_pct(&q->b), hw, kw, ow, bw, xf, sy);
}

static void write_text(FILE *f, const struct replay *rp, int md)
{
    fprintf(f,
            md ? "Replay of `%s` (%s trace%s): %s %s %s, %d rank%s, backend %s\n\n"
               : "replay of %s (%s trace%s): %s %s %s, %d rank%s, backend %s\n",
            rp->paths, trace_flavor_name(rp->doc.flavor), rp->doc.complete ? "" : ", INCOMPLETE", rp->model,
            rp->dataset, rp->strategy, rp->nranks, rp->nranks == 1 ? "" : "s",
            rp->doc.backend[0] ? rp->doc.backend : "unknown");
    if (md)
        fprintf(f, "| rank | device | view | steps | ms/step | p50 | p90 | samples/s | compute %% | comm %% | "
                   "data %% | idle %% | overlap %% | host-wait %% | kernel-wait %% | other idle %% | busbw GB/s | "
                   "xfer ms | "
                   "sync ms |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                   "---:|---:|\n");
    else
        fprintf(f, "%-5s %-8s %-5s %6s %8s %8s %8s %10s %8s %6s %6s %6s %8s %6s %6s %6s %7s %8s %8s\n", "rank",
                "device", "view", "steps", "ms/step", "p50", "p90", "samples/s", "compute%", "comm%", "data%", "idle%",
                "overlap%", "hostw%", "kernw%", "other%", "busbw", "xfer_ms", "sync_ms");
    char who[16];
    for (int i = 0; i < rp->nranks; i++) {
        snprintf(who, sizeof(who), "%d", rp->ranks[i].rank);
        row_text(f, who, &rp->ranks[i], md);
    }
    row_text(f, "all", &rp->all, md);
    if (rp->train_valid)
        fprintf(f,
                md ? "\nTraining loss %.4f, accuracy %.2f%% (last epoch's steps).\n"
                   : "\ntraining loss %.4f, accuracy %.2f%% (last epoch's steps)\n",
                rp->train_loss, rp->train_acc);
    if (!rp->doc.complete)
        fprintf(f, "\nthe trace is incomplete (%s); the figures cover the events up to the cut\n",
                rp->doc.truncated ? "cut short" : "the writer did not finish it");
    if (rp->doc.spans_dropped)
        fprintf(f, "\n%llu spans were lost to full probe rings while tracing\n",
                (unsigned long long)rp->doc.spans_dropped);
}

static void write_csv(FILE *f, const struct replay *rp)
{
    fprintf(f, "rank,device,view,steps,ms_per_step,ms_p50,ms_p90,samples_per_s,compute_pct,comm_pct,data_pct,"
               "idle_pct,overlap_pct,host_wait_pct,kernel_wait_pct,other_idle_pct,bytes_sent,busbw_gbps,"
               "transfer_ms,sync_ms\n");
    for (int i = -1; i < rp->nranks; i++) {
        const struct replay_rank *q = i < 0 ? &rp->all : &rp->ranks[i];
        if (i < 0)
            fprintf(f, "all");
        else
            fprintf(f, "%d", q->rank);
        fprintf(f, ",%s,%s,%ld,", q->device, q->gpu_view ? "gpu" : "host", q->steps);
        if (q->steps > 0)
            fprintf(f, "%.4f,%.4f,%.4f,", q->ms_mean, q->ms_p50, q->ms_p90);
        else
            fprintf(f, ",,,");
        if (q->samples_valid)
            fprintf(f, "%.1f", q->samples_per_s);
        fprintf(f, ",%.3f,%.3f,%.3f,%.3f,%.3f,", pct(q->b.compute_ns, q->b.wall_ns), pct(q->b.comm_ns, q->b.wall_ns),
                pct(q->b.data_ns, q->b.wall_ns), pct(q->b.idle_ns, q->b.wall_ns), overlap_pct(&q->b));
        if (q->idle_split_valid)
            fprintf(f, "%.3f,%.3f,%.3f", pct(q->host_wait_ns, q->b.wall_ns), pct(q->kernel_wait_ns, q->b.wall_ns),
                    pct(q->other_idle_ns, q->b.wall_ns));
        else
            fprintf(f, ",,");
        fprintf(f, ",%llu,", (unsigned long long)q->bytes_tx);
        if (q->busbw_valid)
            fprintf(f, "%.4f", q->busbw_gbps);
        fputc(',', f);
        if (q->coll_valid)
            fprintf(f, "%.3f,%.3f", q->xfer_ms, q->sync_ms);
        else
            fputc(',', f);
        fputc('\n', f);
    }
}

int replay_report(FILE *f, int format, const struct replay *rp)
{
    switch (format) {
    case FMT_JSON:
        return write_json(f, rp);
    case FMT_CSV:
        write_csv(f, rp);
        break;
    case FMT_MD:
        write_text(f, rp, 1);
        break;
    default:
        write_text(f, rp, 0);
        break;
    }
    return ferror(f) ? -1 : 0;
}

int replay_main(const struct config *cfg, replay_show_fn show)
{
    struct replay rp;
    char err[1200];
    if (replay_load(&rp, cfg->replay, TRACE_KERNEL_WAIT_NS, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --replay: %s\n", err);
        return 2;
    }
    if (!rp.doc.complete)
        fprintf(stderr, "ddptop: --replay: %s is incomplete (%s); replaying the %llu events up to the cut\n",
                cfg->replay, rp.doc.truncated ? "cut short" : "the writer did not finish it",
                (unsigned long long)rp.doc.events);
    if (rp.doc.repeated_ranks == 1)
        fprintf(stderr, "ddptop: --replay: rank %d is in more than one of the files; its events are merged\n",
                rp.doc.repeat_rank);
    else if (rp.doc.repeated_ranks > 1)
        fprintf(stderr,
                "ddptop: --replay: %d ranks (rank %d first) are in more than one of the files; their events "
                "are merged\n",
                rp.doc.repeated_ranks, rp.doc.repeat_rank);
    int shown = 0; /* the UI's status: 128 + signal after Ctrl-C, which still reports */
    if (show && (shown = show(cfg, &rp)) == 2) {
        replay_free(&rp);
        return shown;
    }
    FILE *out = stdout;
    if (cfg->output[0] && !(out = fopen(cfg->output, "w"))) {
        fprintf(stderr, "ddptop: --output: cannot write %s: %m\n", cfg->output);
        replay_free(&rp);
        return 2;
    }
    int status = 0;
    if (replay_report(out, cfg->format, &rp) != 0) {
        fprintf(stderr, "ddptop: cannot write the replay report\n");
        status = 1;
    }
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "ddptop: --output: error writing %s\n", cfg->output);
        status = 1;
    }
    replay_free(&rp);
    return shown ? shown : status;
}
