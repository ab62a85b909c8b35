/* replay.c - traces back to figures (--replay; tracing.h).
 *
 * trace/trace_read loads the file(s). A ddptop trace holds the very spans
 * and step records the live metrics saw, so replay feeds them through the
 * same metrics code into the same result (result_from_metrics) as a live
 * run. A PyTorch profiler trace goes through trace/trace_analyze (HTA's
 * definitions) and the device analyses beside it (kernels, copies,
 * queues, launches, idle time per stream, late collectives, memory), each
 * rank's cycles (one file each) as its windows. Either way the report is
 * report.c's. Traces come as the user names them: files, comma lists of
 * files, and folders of them.
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

/* Host spans by step, then time; device records after them, by time. */
static int span_step_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if ((x->lane == LANE_GPU) != (y->lane == LANE_GPU))
        return x->lane == LANE_GPU ? 1 : -1;
    if (x->lane == LANE_GPU)
        return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static int step_cmp(const void *a, const void *b)
{
    const struct trace_step_info *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step;
}

/* The run's rank count: the trace's world size, or the ranks it holds. */
static int trace_world(const struct trace_doc *d)
{
    return d->world > d->nranks ? d->world : d->nranks;
}

static int state_of(const char *name)
{
    for (int s = 0; s <= RUN_STOPPED; s++)
        if (!strcmp(name, run_state_name(s)))
            return s;
    return -1; /* unknown, or the UI's snapshot of a run still going */
}

/* What the trace says about the run beside its figures: the description
 * ddptop stores in its traces, the communicator, the end state and the
 * files themselves. Anything it does not say stays unknown. */
static void describe_run(struct run_result *res, const struct replay *rp, const char *paths)
{
    const struct trace_doc *d = &rp->doc;
    res->cfg.strategy = -1;
    res->world = trace_world(d);
    snprintf(res->device, sizeof(res->device), "%s", d->nranks > 0 ? d->ranks[0].device : "");
    if ((!strcmp(d->backend, "shm") || !strcmp(d->backend, "gloo")) &&
        d->algo[0]) /* the live name: shm/ring, gloo/ring; a GPU's stands alone */
        snprintf(res->backend, sizeof(res->backend), "%.23s/%.23s", d->backend, d->algo);
    else
        snprintf(res->backend, sizeof(res->backend), "%s", d->backend);
    res->state = state_of(d->state);
    res->replay.valid = 1;
    snprintf(res->replay.files, sizeof(res->replay.files), "%s", paths);
    snprintf(res->replay.format, sizeof(res->replay.format), "%s", trace_flavor_name(d->flavor));
    res->replay.complete = d->complete;
    res->replay.truncated = d->truncated;
    res->replay.events = d->events;
    for (int i = 0; i < res->nranks && i < d->nranks; i++) {
        res->ranks[i].rank = d->ranks[i].rank;
        snprintf(res->ranks[i].device, sizeof(res->ranks[i].device), "%s", d->ranks[i].device);
    }
    cJSON *o = d->run_json ? cJSON_Parse(d->run_json) : NULL;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "model")) && cJSON_IsString(v))
        snprintf(res->cfg.model, sizeof(res->cfg.model), "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "strategy")) && cJSON_IsString(v))
        res->cfg.strategy = strategy_parse(v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "dataset")) && cJSON_IsString(v))
        snprintf(res->dataset, sizeof(res->dataset), "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "device")) && cJSON_IsString(v))
        snprintf(res->device, sizeof(res->device), "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "total_steps")) && cJSON_IsNumber(v) && v->valuedouble >= 1 &&
        v->valuedouble <= 1e15)
        res->replay.total_steps = (long)v->valuedouble;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "steps_per_epoch")) && cJSON_IsNumber(v) && v->valuedouble >= 1 &&
        v->valuedouble <= 1e15)
        result_per_epoch(res, (long)v->valuedouble);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "cupti_sample")) && cJSON_IsNumber(v) && v->valuedouble >= 1 &&
        v->valuedouble <= INT_MAX)
        res->cfg.cupti_sample = (int)v->valuedouble;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "precision")) && cJSON_IsString(v))
        for (int k = 0; k < PREC_COUNT; k++)
            if (!strcmp(v->valuestring, precision_name(k))) {
                res->cfg.precision = k;
                res->precision_valid = 1;
            }
    /* stages all work on the whole batch: the run's batch is a rank's */
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "parallel")) && cJSON_IsString(v)) {
        int k = parallel_kind_of(v->valuestring);
        res->cfg.parallel = k >= 0 ? k : res->cfg.parallel;
        const cJSON *mb = cJSON_GetObjectItemCaseSensitive(o, "micro_batches");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "schedule");
        if (cJSON_IsNumber(mb) && mb->valuedouble >= 1 && mb->valuedouble <= 4096)
            res->cfg.micro_batches = (int)mb->valuedouble;
        res->cfg.schedule = cJSON_IsString(sc) && !strcmp(sc->valuestring, "gpipe") ? SCHED_GPIPE : SCHED_1F1B;
        const cJSON *dp = cJSON_GetObjectItemCaseSensitive(o, "dp");
        res->cfg.dp =
            cJSON_IsNumber(dp) && dp->valuedouble >= 2 && dp->valuedouble <= res->world ? (int)dp->valuedouble : 1;
        if (train_mode_has(&res->cfg, MODE_STAGED) && res->world > 0) {
            /* (a replica's batch is every stage's of it) */
            res->global_batch = res->global_batch / res->world * res->cfg.dp;
            res->rate.samples_s = samples_per_s_at(res->global_batch, res->rate.ms);
        }
        result_staged_sends(res);
        /* the stage table, where the trace holds every rank */
        if (train_mode_has(&res->cfg, MODE_STAGED) && d->nstage_ranks == res->world && res->nranks == res->world)
            result_stages(res, res->world, d->stage_first, d->stage_last, d->stage_mem);
    }
    cJSON_Delete(o);
}

/* ddptop traces: the live metrics code over the recorded spans and steps,
 * and the live report's figures from it. */
static int replay_ddptop(struct replay *rp, char *err, size_t errlen)
{
    struct trace_doc *d = &rp->doc;
    if (metrics_init(&rp->metrics, d->nranks, -1.0) != 0) {
        snprintf(err, errlen, "out of memory for the metrics of %d ranks", d->nranks);
        return -1;
    }
    rp->has_metrics = 1;
    struct metrics *m = &rp->metrics;
    int local_batch = 0;
    for (int i = 0; i < d->nranks; i++) {
        struct trace_rank *tr = &d->ranks[i];
        if (tr->nspans)
            qsort(tr->spans, tr->nspans, sizeof(*tr->spans), span_step_cmp);
        if (tr->nsteps)
            qsort(tr->steps, tr->nsteps, sizeof(*tr->steps), step_cmp);
        /* the live collector's order: a step's host spans, and the device
         * records that started before the step ended (live, a step of a
         * rank with device records waits for them, then takes those its
         * time overlaps) */
        size_t nhost = 0;
        while (nhost < tr->nspans && tr->spans[nhost].lane != LANE_GPU)
            nhost++;
        if (nhost < tr->nspans)
            metrics_expect_gpu(m, i);
        size_t j = 0, g = nhost;
        for (size_t s = 0; s < tr->nsteps; s++) {
            const struct trace_step_info *st = &tr->steps[s];
            size_t from = j;
            while (j < nhost && tr->spans[j].step <= st->step)
                j++;
            if (j > from)
                metrics_add_spans(m, i, tr->spans + from, j - from);
            from = g;
            while (g < tr->nspans && tr->spans[g].t0_ns < st->t1_ns)
                g++;
            if (g > from)
                metrics_add_spans(m, i, tr->spans + from, g - from);
            struct step_rec rec = {.step = st->step,
                                   .epoch = st->epoch,
                                   .t0_ns = st->t0_ns,
                                   .t1_ns = st->t1_ns,
                                   .loss = st->loss,
                                   .lr = st->lr,
                                   .correct = st->correct,
                                   .n = st->n,
                                   .untraced = st->untraced,
                                   .skipped = st->skipped,
                                   .loss_scale = st->loss_scale,
                                   .desched_ns = st->desched_known ? st->desched_ns : -1};
            metrics_add_step(m, i, &rec);
            if (!local_batch)
                local_batch = st->n;
        }
        if (j < nhost)
            metrics_add_spans(m, i, tr->spans + j, nhost - j);
        if (g < tr->nspans)
            metrics_add_spans(m, i, tr->spans + g, tr->nspans - g);
    }
    metrics_finish(m); /* the trace is whole: held steps close with what it has */
    /* the writer matched every collective across all the run's ranks,
     * which a trace of some of them cannot do again: its transfer and sync
     * times, and the bus bytes at the run's size, replace the store's */
    for (int i = 0; i < d->nranks; i++) {
        const struct trace_rank *tr = &d->ranks[i];
        struct rank_metrics *rm = &m->r[i];
        rm->xfer_ns = tr->xfer_ns;
        rm->sync_ns = tr->sync_ns;
        rm->xfer_steady_ns = tr->xfer_steady_ns;
        rm->sync_steady_ns = tr->sync_steady_ns;
        rm->bus_bytes = rm->alg_bytes = rm->bus_steady_bytes = rm->alg_steady_bytes = 0;
        for (size_t k = 0; k < tr->nspans; k++)
            if (tr->spans[k].cat == CAT_COMM && tr->spans[k].outer)
                metrics_count_bus(rm, &tr->spans[k], d->world);
    }
    struct run_result *res = &rp->res;
    if (result_from_metrics(res, m, local_batch, trace_world(d)) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* what a trace cannot vouch for: step times without steps, the time
     * of collectives nobody matched, each rank's lost spans (the trace
     * holds the total, once it was finished) */
    res->coll_valid = 0;
    for (int i = 0; i < res->nranks; i++) {
        struct rank_result *rr = &res->ranks[i];
        rr->ms_valid = rr->steps > 0;
        rr->rate.samples_valid = rr->ms_valid && rr->rate.ms > 0 && local_batch > 0;
        rr->coll_valid = d->world > 1 ? d->ranks[i].coll_matched > 0 : m->r[i].ncoll > 0;
        rr->dropped_valid = 0;
        res->coll_valid |= rr->coll_valid;
    }
    res->ms_valid = res->steps > 0;
    res->rate.samples_valid = res->ms_valid && res->rate.ms > 0 && res->batch_valid;
    res->dropped = d->spans_dropped;
    res->dropped_valid = d->complete;
    return 0;
}

/* Step statistics over the steps the split covers: every step but the one
 * `left` (enum trace_left) names. */
static void covered_stats(const int64_t *v, size_t n, int left, double *mean, double *p50, double *p90)
{
    *mean = *p50 = *p90 = 0;
    int64_t *c = n ? malloc(sizeof(*c) * (n + 1)) : NULL;
    if (!c)
        return;
    size_t k = 1; /* (c[0]: a place for the first step, which step_stats_ms leaves out) */
    c[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (!(left == TRACE_LEFT_FIRST && i == 0) && !(left == TRACE_LEFT_LAST && i == n - 1))
            c[k++] = v[i];
    step_stats_ms(c, k, mean, p50, p90);
    free(c);
}

void replay_foreign_row(struct rank_result *rr, const struct trace_figures *f, const int64_t *step_ns, size_t nsteps)
{
    rr->b = f->b;
    rr->gpu_view = f->gpu_view;
    rr->idle_split_valid = f->idle_split_valid;
    rr->host_wait_ns = f->host_wait_ns;
    rr->kernel_wait_ns = f->kernel_wait_ns;
    rr->other_idle_ns = f->other_idle_ns;
    rr->window_whole = f->whole;
    rr->steps = (long)nsteps;
    int left = nsteps > 1 ? f->left : TRACE_LEFT_NONE;
    covered_stats(step_ns, nsteps, left, &rr->ms_mean, &rr->rate.ms, &rr->ms_p90);
    rr->ms_valid = rr->steps > 0;
    /* (over the steps the split covers, as ms/step) */
    long bsteps = rr->steps - (left != TRACE_LEFT_NONE);
    rr->compute_ms = bsteps > 0 ? (double)rr->b.compute_ns / 1e6 / (double)bsteps : 0;
    rr->exposed_ms = bsteps > 0 ? (double)rr->b.comm_ns / 1e6 / (double)bsteps : 0;
}

void replay_foreign_run(struct run_result *res)
{
    res->threshold_step = -1;
    res->replicas_diverged_at = -1;
    for (int i = 0; i < res->nranks; i++) {
        const struct rank_result *rr = &res->ranks[i];
        /* the run's step time: the slowest rank's */
        if (rr->ms_mean > res->ms_mean) {
            res->ms_mean = rr->ms_mean;
            res->rate.ms = rr->rate.ms;
            res->ms_p90 = rr->ms_p90;
        }
        if (rr->steps > res->steps)
            res->steps = rr->steps;
    }
    res->ms_valid = res->steps > 0;
    result_breakdowns(res);
    result_kernels(res);
    result_memcpy(res);
    result_queue(res);
    result_launch(res);
    result_idle(res);
    result_memtl(res);
    result_critpath(res);
}

/* -1, with err saying what ran out of memory doing what with tr's */
static int out_of_memory(char *err, size_t errlen, const char *doing, const struct trace_rank *tr, const char *what)
{
    snprintf(err, errlen, "out of memory %s rank %d's %s", doing, tr->rank, what);
    return -1;
}

/* A GPU rank's device tables (kernels, copies, queues, launches, idle time
 * per stream) into rr, from its figures f. 0, or -1 with err set. */
static int device_tables(struct rank_result *rr, const struct trace_rank *tr, const struct trace_rule *rule,
                         const struct trace_figures *f, int64_t idle_delay_ns, char *err, size_t errlen)
{
    if (kernel_table_rank(&rr->kernels, tr, rule, f) != 0)
        return out_of_memory(err, errlen, "tallying", tr, "kernels");
    rr->kernels_valid = 1;
    memcpy_table_rank(&rr->memcpy, tr, rule, f);
    rr->memcpy_valid = 1;
    if (queue_table_rank(&rr->queue, tr, rule, f) != 0)
        return out_of_memory(err, errlen, "following", tr, "launch queues");
    rr->queue_valid = 1;
    if (launch_table_rank(&rr->launch, tr, rule, f, LAUNCH_RUNTIME_CUTOFF_US * 1000LL,
                          LAUNCH_DELAY_CUTOFF_US * 1000LL) != 0)
        return out_of_memory(err, errlen, "tallying", tr, "launches");
    rr->launch_valid = 1;
    if (idle_table_rank(&rr->idle, tr, rule, f, idle_delay_ns) != 0)
        return out_of_memory(err, errlen, "splitting", tr, "idle time");
    rr->idle_valid = 1;
    return 0;
}

/* PyTorch profiler traces: HTA's definitions (trace_analyze), over the
 * steps rule says. They carry no batch sizes, bytes or collective
 * matching: those stay unknown. */
static int replay_foreign(struct replay *rp, const struct trace_rule *rule, int64_t idle_delay_ns, char *err,
                          size_t errlen)
{
    struct trace_doc *d = &rp->doc;
    struct run_result *res = &rp->res;
    res->ranks = calloc((size_t)d->nranks, sizeof(*res->ranks));
    if (!res->ranks) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    res->nranks = d->nranks;
    /* each rank's figures, kept for the run's late collectives */
    struct trace_figures *figs = calloc((size_t)(d->nranks ? d->nranks : 1), sizeof(*figs));
    struct trace_step_info *sorted = NULL;
    int64_t *v = NULL;
    if (!figs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < d->nranks; i++) {
        struct trace_rank *tr = &d->ranks[i];
        struct rank_result *rr = &res->ranks[i];
        struct trace_figures *f = &figs[i];
        if (trace_analyze_rank(f, tr, rule, idle_delay_ns) != 0) {
            snprintf(err, errlen, "out of memory analysing rank %d", tr->rank);
            goto fail;
        }
        /* the step times in step order, every window's: a copy, for the
         * windows keep their steps where they are */
        sorted = malloc(sizeof(*sorted) * (tr->nsteps ? tr->nsteps : 1));
        v = malloc(sizeof(*v) * (tr->nsteps ? tr->nsteps : 1));
        if (!v || !sorted) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (tr->nsteps)
            memcpy(sorted, tr->steps, sizeof(*sorted) * tr->nsteps);
        qsort(sorted, tr->nsteps, sizeof(*sorted), step_cmp);
        for (size_t s = 0; s < tr->nsteps; s++)
            v[s] = sorted[s].t1_ns - sorted[s].t0_ns;
        replay_foreign_row(rr, f, v, tr->nsteps);
        rr->window = rule;
        if (f->gpu_view && device_tables(rr, tr, rule, f, idle_delay_ns, err, errlen) != 0)
            goto fail;
        memtl_table_rank(&rr->memtl, tr);
        rr->memtl_valid = rr->memtl.n > 0;
        if (critpath_rank(&rr->critpath, tr) != 0) {
            snprintf(err, errlen, "out of memory finding rank %d's critical path", tr->rank);
            goto fail;
        }
        rr->critpath_valid = 1;
        /* where its rank came from: its first file's (in reading order) */
        int first = INT_MAX;
        for (size_t k = 0; k < tr->nwindows; k++)
            if (tr->windows[k].file < first) {
                first = tr->windows[k].file;
                rr->rank_from = tr->windows[k].rank_from;
                rr->rank_from_valid = 1;
            }
        free(sorted);
        free(v);
        sorted = NULL;
        v = NULL;
    }
    res->window = rule;
    if (straggler_table_run(&res->stragglers, d, rule, figs) != 0) {
        snprintf(err, errlen, "out of memory matching the ranks' collectives");
        goto fail;
    }
    struct whatif_gather wg = {0};
    for (int i = 0; i < d->nranks; i++)
        if (whatif_gather_rank(&wg, &d->ranks[i], &figs[i]) != 0) {
            whatif_gather_free(&wg);
            snprintf(err, errlen, "out of memory gathering the ranks' collectives");
            goto fail;
        }
    int wrc = whatif_table_of(&res->colls, &wg);
    whatif_gather_free(&wg);
    if (wrc != 0) {
        snprintf(err, errlen, "out of memory matching the ranks' collectives");
        goto fail;
    }
    free(figs);
    replay_foreign_run(res);
    return 0;
fail:
    free(sorted);
    free(v);
    free(figs);
    return -1;
}

/* Whether any rank holds something with a duration to replay. */
static int doc_timed(const struct trace_doc *d)
{
    for (int i = 0; i < d->nranks; i++) {
        const struct trace_rank *r = &d->ranks[i];
        for (size_t k = 0; k < r->nsteps; k++)
            if (r->steps[k].t1_ns > r->steps[k].t0_ns)
                return 1;
        for (size_t k = 0; k < r->nspans; k++)
            if (r->spans[k].t1_ns > r->spans[k].t0_ns)
                return 1;
        for (size_t k = 0; k < r->nops; k++)
            if (r->ops[k].t1_ns > r->ops[k].t0_ns)
                return 1;
    }
    return 0;
}

/* Notes a folder's file that is not a trace, left out. */
static void left_out(struct replay *rp, const char *path)
{
    struct replay_source *src = &rp->res.replay;
    if (src->nleft_out < REPLAY_LEFT_OUT_NAMED)
        snprintf(src->left_out[src->nleft_out], sizeof(src->left_out[0]), "%s", path);
    src->nleft_out++;
}

/* Reads one file, or every trace in a folder, into rp's document. A file
 * named as such must be a trace; a folder's JSON files that are not
 * traces (an execution trace beside the Kineto trace) are left out, and
 * counted. Returns 0, or -1 with err. */
static int read_path(struct replay *rp, const char *path, char *err, size_t errlen)
{
    struct trace_doc *d = &rp->doc;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return trace_read_file(d, path, err, errlen) == 0 ? 0 : -1;
    char **files;
    int n;
    if (trace_list_dir(path, &files, &n, err, errlen) != 0)
        return -1;
    if (n == 0) {
        snprintf(err, errlen, "%s: a folder without a trace in it (*.json, *.json.gz)", path);
        return -1;
    }
    int rc = 0, read = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = trace_read_file(d, files[i], err, errlen);
        if (rc == TRACE_READ_NOT_TRACE) {
            left_out(rp, files[i]);
            rc = 0;
        } else {
            read += rc == 0;
        }
    }
    trace_paths_free(files, n);
    if (rc == 0 && read == 0) {
        snprintf(err, errlen, "%s: a folder without a trace in it (its %d JSON file%s not a trace)", path, n,
                 n == 1 ? " is" : "s are");
        return -1;
    }
    return rc == 0 ? 0 : -1;
}

/* The files as the report names them: the arguments, or the first and a
 * count when they would not fit. */
static void name_files(char *out, size_t len, const char *const *args, int nargs)
{
    size_t total = 0;
    for (int i = 0; i < nargs; i++)
        total += strlen(args[i]) + 1;
    if (nargs > 1 && total > 200) {
        snprintf(out, len, "%s and %d more", args[0], nargs - 1);
        return;
    }
    out[0] = 0;
    for (int i = 0; i < nargs; i++) {
        size_t at = strlen(out);
        snprintf(out + at, len - at, "%s%s", i ? " " : "", args[i]);
    }
}

int replay_load_list(struct replay *rp, const char *const *args, int nargs, const struct trace_rule *rule,
                     int64_t idle_delay_ns, char *err, size_t errlen)
{
    memset(rp, 0, sizeof(*rp));
    trace_doc_init(&rp->doc);
    char names[sizeof(rp->res.replay.files)];
    name_files(names, sizeof(names), args, nargs);
    for (int a = 0; a < nargs; a++) {
        const char *paths = args[a];
        struct stat st;
        size_t n = strlen(paths);
        /* a path that exists is one, commas and all; anything else is a list */
        int whole = stat(paths, &st) == 0;
        char *buf = whole ? NULL : strdup(paths);
        if (!whole && !buf) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (buf && (n == 0 || paths[0] == ',' || paths[n - 1] == ',' || strstr(paths, ",,"))) {
            snprintf(err, errlen, "%s: an empty file name in the list", paths);
            free(buf);
            goto fail;
        }
        char *save = NULL;
        for (char *p = buf ? strtok_r(buf, ",", &save) : (char *)paths; p;
             p = buf ? strtok_r(NULL, ",", &save) : NULL) {
            if (read_path(rp, p, err, errlen) != 0) {
                free(buf);
                goto fail;
            }
            if (rp->doc.mixed) {
                snprintf(err, errlen, "%s: cannot replay ddptop and PyTorch traces together", p);
                free(buf);
                goto fail;
            }
            if (rp->doc.other_run) {
                snprintf(err, errlen,
                         "%s: a trace of another run than the files before it (its start or its settings differ)", p);
                free(buf);
                goto fail;
            }
        }
        free(buf);
    }
    if (rp->doc.nfiles == 0) {
        snprintf(err, errlen, "no trace file given");
        goto fail;
    }
    if (rp->doc.nranks == 0) {
        snprintf(err, errlen, "%s: no events of any rank", names);
        goto fail;
    }
    if (!doc_timed(&rp->doc)) {
        snprintf(err, errlen, "%s: nothing to replay: no step, span or operator with a duration", names);
        goto fail;
    }
    int rc = rp->doc.flavor == TRACE_DDPTOP
                 ? replay_ddptop(rp, err, errlen)
                 : replay_foreign(rp, rule ? rule : &trace_rules[0], idle_delay_ns, err, errlen);
    if (rc != 0)
        goto fail;
    describe_run(&rp->res, rp, names);
    if (rp->has_metrics)
        result_timeline(&rp->res, &rp->metrics); /* (the stages are known now) */
    return 0;
fail:
    replay_free(rp);
    return -1;
}

int replay_load(struct replay *rp, const char *paths, char *err, size_t errlen)
{
    return replay_load_list(rp, &paths, 1, NULL, TRACE_IDLE_DELAY_NS, err, errlen);
}

void replay_free(struct replay *rp)
{
    if (rp->has_metrics)
        metrics_free(&rp->metrics);
    result_free(&rp->res);
    trace_doc_free(&rp->doc);
    memset(rp, 0, sizeof(*rp));
}

/* What the user should know of how foreign files became ranks and
 * windows: ranks that no trace nor name gave, the same steps twice, and
 * how many cycles each rank has when there are several. */
static void replay_notes(const struct trace_doc *d)
{
    if (d->flavor == TRACE_DDPTOP)
        return;
    static const char *const how = "(no distributedInfo in the trace, no rank<N> in the name): ranks follow the "
                                   "order of the files; name them with tensorboard_trace_handler's "
                                   "worker_name=f\"rank{rank}\"";
    if (d->unnamed_files == 1)
        fprintf(stderr, "ddptop: --replay: %s names no rank %s\n", d->unnamed_first, how);
    else if (d->unnamed_files > 1)
        fprintf(stderr, "ddptop: --replay: %s and %d more files name no rank %s\n", d->unnamed_first,
                d->unnamed_files - 1, how);
    if (d->repeated_ranks > 0)
        fprintf(stderr,
                "ddptop: --replay: rank %d%s has the same profiler steps in two files (one file twice, or two runs "
                "in one folder); each counts as a cycle of its own\n",
                d->repeat_rank, d->repeated_ranks > 1 ? " (and others)" : "");
    size_t lo = SIZE_MAX, hi = 0;
    for (int i = 0; i < d->nranks; i++) {
        lo = d->ranks[i].nwindows < lo ? d->ranks[i].nwindows : lo;
        hi = d->ranks[i].nwindows > hi ? d->ranks[i].nwindows : hi;
    }
    if (hi > 1 && lo == hi)
        fprintf(stderr, "ddptop: --replay: %d rank(s), %zu profiler cycles each\n", d->nranks, hi);
    else if (hi > 1)
        fprintf(stderr, "ddptop: --replay: %d rank(s), %zu to %zu profiler cycles each\n", d->nranks, lo, hi);
}

int replay_main(const struct config *cfg, replay_show_fn show)
{
    struct replay rp;
    char err[1200];
    /* --replay's value, then the arguments after the options (a glob) */
    const char **args = malloc(sizeof(*args) * (size_t)(1 + cfg->nreplay_more));
    if (!args) {
        fprintf(stderr, "ddptop: --replay: out of memory\n");
        return 2;
    }
    args[0] = cfg->replay;
    for (int i = 0; i < cfg->nreplay_more; i++)
        args[1 + i] = cfg->replay_more[i];
    int rc = replay_load_list(&rp, args, 1 + cfg->nreplay_more, &trace_rules[cfg->window], cfg->idle_delay_ns, err,
                              sizeof(err));
    free(args);
    if (rc != 0) {
        fprintf(stderr, "ddptop: --replay: %s\n", err);
        return 2;
    }
    const char *files = rp.res.replay.files;
    if (!rp.doc.complete)
        fprintf(stderr, "ddptop: --replay: %s is incomplete (%s); replaying the %llu events up to the cut\n", files,
                rp.doc.truncated ? "cut short" : "the writer did not finish it", (unsigned long long)rp.doc.events);
    replay_notes(&rp.doc);
    for (int k = 0; k < rp.res.replay.nleft_out && k < REPLAY_LEFT_OUT_NAMED; k++)
        fprintf(stderr, "ddptop: --replay: %s is not a trace (a JSON object without traceEvents); left out\n",
                rp.res.replay.left_out[k]);
    if (rp.res.replay.nleft_out > REPLAY_LEFT_OUT_NAMED)
        fprintf(stderr, "ddptop: --replay: %d more JSON files that are not traces left out\n",
                rp.res.replay.nleft_out - REPLAY_LEFT_OUT_NAMED);
    /* (a foreign rank's files are its windows: replay_notes says what repeats) */
    if (rp.doc.flavor == TRACE_DDPTOP && rp.doc.repeated_ranks == 1)
        fprintf(stderr, "ddptop: --replay: rank %d is in more than one of the files; its events are merged\n",
                rp.doc.repeat_rank);
    else if (rp.doc.flavor == TRACE_DDPTOP && rp.doc.repeated_ranks > 1)
        fprintf(stderr,
                "ddptop: --replay: %d ranks (rank %d first) are in more than one of the files; their events "
                "are merged\n",
                rp.doc.repeated_ranks, rp.doc.repeat_rank);
    if (cfg->base.predict)
        result_job_predict(&rp.res, &cfg->base);
    int shown = 0; /* the UI's status: 128 + signal after Ctrl-C, which still reports */
    if (show && (shown = show(cfg, &rp)) == 2) {
        replay_free(&rp);
        return shown;
    }
    results_speedup(&rp.res, 1);
    int status = report_save_all(cfg, &rp.res, 1);
    if (cfg->plot[0] && figures_save(cfg->plot, &rp.res, 1, cfg->quiet) != 0 && status == 0)
        status = 1;
    replay_free(&rp);
    return shown ? shown : status;
}
