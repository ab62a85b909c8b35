/* snap.c - taking the panes' snapshot of a run (see snap.h). Runs on the
 * UI thread, which is also the run's collector, so the metrics it reads are
 * never written concurrently. */
#include "snap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "follow.h"
#include "model.h"
#include "mode.h"
#include "pipeline.h"
#include "report.h"
#include "run.h"
#include "strategy.h"
#include "tracing.h"

/* Zeroes s and sizes it for `world` ranks. */
static int snap_alloc(struct snap *s, int world)
{
    memset(s, 0, sizeof(*s));
    s->world = s->run_world = world;
    s->ranks = calloc((size_t)world, sizeof(*s->ranks));
    s->loss_rank = calloc((size_t)world, sizeof(*s->loss_rank));
    s->layers = calloc(SNAP_MAX_LAYERS, sizeof(*s->layers));
    s->lt_now = calloc(2 * SNAP_MAX_LAYERS, sizeof(*s->lt_now));
    s->lt_base = calloc(2 * SNAP_MAX_LAYERS, sizeof(*s->lt_base));
    if (!s->ranks || !s->loss_rank || !s->layers || !s->lt_now || !s->lt_base) {
        snap_free(s);
        return -1;
    }
    for (int i = 0; i < world; i++) {
        s->ranks[i].id = i;
        s->ranks[i].hist = malloc(sizeof(struct span) * METRICS_HISTORY);
        if (!s->ranks[i].hist) {
            snap_free(s);
            return -1;
        }
        series_reset(&s->loss_rank[i]);
    }
    series_reset(&s->loss_mean);
    series_reset(&s->rate_bytes);
    series_reset(&s->busbw);
    series_reset(&s->busbw_pred);
    return 0;
}

int snap_init(struct snap *s, const struct run *r)
{
    if (snap_alloc(s, r->world) != 0)
        return -1;
    s->failed_rank = -1;
    snprintf(s->model, sizeof(s->model), "%s", r->cfg.model);
    snprintf(s->dataset, sizeof(s->dataset), "%s", r->train->name);
    train_mode_label(&r->cfg, s->strategy, sizeof(s->strategy));
    s->sync = r->cfg.strategy;
    /* what the run chose (on GPUs: nccl, or ddptop's device ring when ranks share a GPU) */
    snprintf(s->backend, sizeof(s->backend), "%s", r->backend);
    snprintf(s->device, sizeof(s->device), "%s", r->devops->name);
    snprintf(s->precision, sizeof(s->precision), "%s", precision_name(r->cfg.precision));
    s->local_batch = r->local_batch;
    s->global_batch = r->global_batch;
    s->epochs = r->cfg.epochs;
    s->steps_per_epoch = r->steps_per_epoch;
    s->total_steps = r->total_steps;
    s->threshold = r->cfg.loss_threshold;
    s->threshold_step = -1;
    s->on_gpu = r->on_gpu;
    s->sends_only = run_sends_only(&r->cfg);
    s->cupti_sample = r->cupti ? r->cupti_sample : 0;
    /* the alpha-beta fits, read once: the file may be missing (n/a) */
    char path[1024];
    cost_model_path(path, sizeof(path));
    for (int k = 1; k < COLL_COUNT; k++)
        if (cost_model_lookup(path, r->plan.fit_backend, r->plan.fit_algo, r->world, k, &s->fit[k]) == 0 &&
            s->fit[k].valid)
            s->have_model = 1;
        else
            s->fit[k].valid = 0;
    return 0;
}

void snap_free(struct snap *s)
{
    if (s->ranks)
        for (int i = 0; i < s->world; i++)
            free(s->ranks[i].hist);
    free(s->ranks);
    free(s->loss_rank);
    free(s->layers);
    free(s->lt_now);
    free(s->lt_base);
    free(s->cycles);
    if (s->own_result) {
        result_free(s->own_result);
        free(s->own_result);
    }
    memset(s, 0, sizeof(*s));
}

int snap_lanes(const struct snap *s)
{
    int n = 0;
    for (int i = 0; i < s->world; i++) {
        unsigned l = s->ranks[i].lanes | 1u; /* the main lane always shows */
        for (int k = 0; k < LANE_COUNT; k++)
            n += (l >> k) & 1u;
    }
    return n;
}

/* Copies the spans that reached rank i's history since the last frame. */
static void copy_history(struct snap_rank *sr, const struct rank_metrics *rm)
{
    uint64_t from = sr->nhist, to = rm->nhistory;
    if (to - from > METRICS_HISTORY)
        from = to - METRICS_HISTORY;
    for (uint64_t k = from; k < to; k++) {
        const struct span *sp = &rm->history[k % METRICS_HISTORY];
        sr->hist[k % METRICS_HISTORY] = *sp;
        if (sp->lane < LANE_COUNT)
            sr->lanes |= 1u << sp->lane;
    }
    sr->nhist = to;
}

static void pcts_of(struct snap_rank *sr, const struct breakdown *b)
{
    sr->split_wall_ns = b->wall_ns;
    breakdown_split(b, &sr->split); /* (the report's rule: one owner) */
}

static void breakdown_sub(struct breakdown *d, const struct breakdown *a, const struct breakdown *b)
{
    d->wall_ns = a->wall_ns - b->wall_ns;
    d->compute_ns = a->compute_ns - b->compute_ns;
    d->comm_ns = a->comm_ns - b->comm_ns;
    d->data_ns = a->data_ns - b->data_ns;
    d->idle_ns = a->idle_ns - b->idle_ns;
    d->comm_union_ns = a->comm_union_ns - b->comm_union_ns;
    d->overlap_ns = a->overlap_ns - b->overlap_ns;
}

/* Rank i's live row: deltas over the frame window, or the last step when no
 * step finished inside it (steps longer than the window). The recent
 * figures are taken only at a frame where a step arrived: without one
 * (paused, stalled) they hold, and do not drift as the window empties. */
static void rank_live(struct snap *s, int i, const struct run *r, int oldest, int64_t now_ns)
{
    struct snap_rank *sr = &s->ranks[i];
    const struct rank_metrics *rm = &r->metrics.r[i];
    const struct snap_sample *now = &sr->win[s->win_head], *old = &sr->win[oldest];
    sr->steps = (long)rm->nsteps;
    sr->valid = rm->nsteps > 0;
    if (sr->valid && !sr->device[0])
        /* the rank thread named its device before it pushed its first step */
        snprintf(sr->device, sizeof(sr->device), "%s", r->ranks[i].dev.name[0] ? r->ranks[i].dev.name : "cpu");
    sr->traffic.tx = rm->bytes_tx;
    sr->traffic.rx = rm->bytes_rx;
    sr->traffic.bytes_valid = 1;
    sr->mem.now = atomic_load(&r->ranks[i].mem.now);
    sr->mem.peak = atomic_load(&r->ranks[i].mem.peak);
    sr->mem.valid = sr->mem.peak > 0;
    int fresh = rm->nsteps != sr->seen_steps;
    sr->seen_steps = rm->nsteps;
    if (fresh || !sr->last_step_ns)
        sr->last_step_ns = now_ns;
    if (!sr->valid || (!fresh && sr->recent_valid))
        return;
    sr->recent_valid = 1;
    size_t dsteps = now->nsteps - old->nsteps;
    if (dsteps > 0) {
        struct breakdown d;
        breakdown_sub(&d, &now->total, &old->total);
        sr->rate.ms = (double)d.wall_ns / (double)dsteps / 1e6;
        pcts_of(sr, &d);
    } else {
        sr->rate.ms = (double)rm->step_wall_ns[metrics_slot(rm->nsteps - 1)] / 1e6;
        pcts_of(sr, &rm->last);
    }
    sr->rate.samples_s = samples_per_s_at(s->local_batch, sr->rate.ms);
    sr->rate.samples_valid = 1;
    int64_t dx = now->xfer_ns - old->xfer_ns;
    if (dx > 0) {
        sr->traffic.busbw_gbps = (now->bus - old->bus) / (double)dx;
        sr->traffic.busbw_valid = 1;
    } else {
        sr->traffic.busbw_valid = rm->xfer_ns > 0 && rm->bus_bytes > 0;
        sr->traffic.busbw_gbps = sr->traffic.busbw_valid ? rm->bus_bytes / (double)rm->xfer_ns : 0;
    }
    if (s->sends_only)
        sr->traffic.busbw_valid = 0;
}

/* The median of rank i's last few step times, in ns (0 before its first). */
static int64_t recent_median_ns(const struct rank_metrics *rm)
{
    int64_t v[9];
    int n = rm->nsteps < 9 ? (int)rm->nsteps : 9;
    for (int k = 0; k < n; k++) {
        int64_t x = rm->step_wall_ns[metrics_slot(rm->nsteps - 1 - (size_t)k)];
        int j = k;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    return n ? v[n / 2] : 0;
}

int snap_run_at_rest(const struct run *r)
{
    if (r->state != RUN_PAUSED)
        return 0;
    uint32_t at = atomic_load(&r->pause_at);
    for (int i = 0; i < r->world; i++)
        if (r->metrics.r[i].nsteps < at && !atomic_load(&r->ranks[i].finished))
            return 0;
    return 1;
}

/* A run that should be stepping, yet has not finished a step for longer
 * than the threshold: stall_s, the ranks behind, and each rank's stalled
 * flag. Time at rest (paused at the boundary) or in an evaluation of the
 * test split does not count. */
static void update_stall(struct snap *s, const struct run *r, int64_t now_ns)
{
    const struct metrics *m = &r->metrics;
    int resting = s->at_rest || (s->state != RUN_RUNNING && s->state != RUN_PAUSED);
    for (int i = 0; i < r->world && r->ranks && !resting; i++)
        resting = atomic_load(&r->ranks[i].evaluating); /* (an evaluation makes no steps) */
    if (resting || !s->progress_ns || s->steps_done != s->progress_steps) {
        s->progress_ns = now_ns;
        s->progress_steps = s->steps_done;
    }
    if (resting)
        for (int i = 0; i < s->world; i++)
            s->ranks[i].last_step_ns = now_ns;
    s->stall_s = 0;
    s->nbehind = 0;
    for (int i = 0; i < s->world; i++)
        s->ranks[i].stalled = 0;
    int64_t quiet = now_ns - s->progress_ns;
    if (resting || s->steps_done <= 0 || quiet < SNAP_STALL_MIN_NS)
        return;
    int64_t limit = SNAP_STALL_MIN_NS;
    size_t most = 0;
    for (int i = 0; i < s->world; i++) {
        int64_t med = SNAP_STALL_STEPS * recent_median_ns(&m->r[i]);
        if (med > limit)
            limit = med;
        if (m->r[i].nsteps > most)
            most = m->r[i].nsteps;
    }
    if (quiet < limit)
        return;
    s->stall_s = (double)quiet / 1e9;
    for (int i = 0; i < s->world; i++) {
        struct snap_rank *sr = &s->ranks[i];
        sr->stalled = sr->valid && now_ns - sr->last_step_ns >= limit;
        if (m->r[i].nsteps < most && !s->nbehind++)
            s->behind_first = i;
    }
}

static void rank_final(struct snap_rank *sr, const struct rank_result *rr)
{
    snprintf(sr->device, sizeof(sr->device), "%s", rr->device);
    sr->id = rr->rank;
    sr->steps = rr->steps;
    sr->valid = rr->steps > 0;
    /* (the median step, which samples/s is the batch over: the two shown
     * side by side multiply to the batch) */
    sr->rate = rr->rate;
    sr->split = rr->split;
    sr->split_wall_ns = rr->b.wall_ns;
    sr->traffic = rr->traffic;
    sr->mem = rr->mem;
}

static void update_loss(struct snap *s, const struct metrics *m)
{
    /* the steps since the last frame, of those the rings still hold */
    size_t first = metrics_first_kept(m->steps_done);
    for (size_t k = s->loss_fed > first ? s->loss_fed : first; k < m->steps_done; k++) {
        series_push(&s->loss_mean, m->loss_mean[metrics_slot(k)]);
        for (int i = 0; i < s->world; i++)
            series_push(&s->loss_rank[i], m->r[i].step_loss[metrics_slot(k)]);
    }
    s->loss_fed = m->steps_done;
    if (m->steps_done > 0) {
        s->loss = m->loss_running[metrics_slot(m->steps_done - 1)];
        s->loss_valid = 1;
    }
    s->threshold_step = m->threshold_step;
    int ne = m->nepochs < SNAP_MAX_EPOCHS ? m->nepochs : SNAP_MAX_EPOCHS;
    for (int e = s->nepochs; e < ne; e++) {
        s->acc[e] = m->test_total[e] > 0 ? (float)(100.0 * m->test_correct[e] / (double)m->test_total[e]) : NAN;
        long last = (long)(e + 1) * s->steps_per_epoch - 1;
        if (last > (long)m->steps_done - 1)
            last = (long)m->steps_done - 1;
        s->acc_step[e] = last;
    }
    s->nepochs = ne;
    if (ne > 0 && !isnan(s->acc[ne - 1])) {
        s->test_acc = s->acc[ne - 1];
        s->test_valid = 1;
    }
}

/* One traffic sample per frame while the ranks run: rates are deltas of the
 * cumulative counters since the previous sample. */
static void update_traffic(struct snap *s, const struct run *r, int64_t now_ns, int live)
{
    uint64_t bytes = 0, calls[COLL_COUNT] = {0};
    double bus = 0, kind_pred_us[COLL_COUNT] = {0}; /* (the fit's time for every call so far: its deltas are exact) */
    int64_t xfer = 0;
    for (int i = 0; i < s->world; i++) {
        const struct rank_metrics *rm = &r->metrics.r[i];
        bytes += rm->bytes_tx + rm->bytes_rx;
        bus += rm->bus_bytes;
        xfer += rm->xfer_ns;
        for (int k = 0; k < COLL_COUNT; k++)
            for (int c = 0; c < COST_SIZE_CLASSES; c++) {
                calls[k] += rm->kind_calls[k][c];
                if (s->fit[k].valid)
                    kind_pred_us[k] +=
                        cost_predict_calls_us(&s->fit[k], (double)rm->kind_calls[k][c], rm->kind_bytes[k][c]);
            }
    }
    if (s->have_prev && live && now_ns > s->prev_t_ns) {
        double dt = (double)(now_ns - s->prev_t_ns) / 1e9;
        s->rate_bytes_now = (double)(bytes - s->prev_bytes) / dt;
        int64_t dx = xfer - s->prev_xfer;
        double busbw = dx > 0 ? (bus - s->prev_bus) / (double)dx : NAN;
        /* The same calls, timed by the model: busbw over predicted time.
         * Valid only when every kind used in this sample has a fit. */
        double pred_us = 0;
        int used = 0, ok = 1;
        for (int k = 1; k < COLL_COUNT; k++) {
            uint64_t dc = calls[k] - s->prev_calls[k];
            if (!dc || k == COLL_BARRIER)
                continue;
            used = 1;
            if (!s->fit[k].valid) {
                ok = 0;
                break;
            }
            pred_us += kind_pred_us[k] - s->prev_kind_pred_us[k];
        }
        double pred = used && ok && pred_us > 0 && dx > 0 ? (bus - s->prev_bus) / (pred_us * 1e3) : NAN;
        series_push(&s->rate_bytes, s->rate_bytes_now);
        series_push(&s->busbw, busbw);
        series_push(&s->busbw_pred, pred);
        /* the figures hold their last value over frames that finished no
         * collective (steps longer than a frame, a pause) */
        if (dx > 0 && !s->sends_only) {
            s->busbw_now_valid = 1;
            s->busbw_now = busbw;
            s->pred_now_valid = !isnan(pred);
            s->busbw_pred_now = pred;
        }
        s->traffic_span_s = (double)(now_ns - s->traffic_t0_ns) / 1e9;
    }
    memcpy(s->prev_calls, calls, sizeof(calls));
    memcpy(s->prev_kind_pred_us, kind_pred_us, sizeof(kind_pred_us));
    if (!s->have_prev)
        s->traffic_t0_ns = now_ns;
    s->have_prev = 1;
    s->prev_t_ns = now_ns;
    s->prev_bytes = bytes;
    s->prev_bus = bus;
    s->prev_xfer = xfer;
}

/* Rank 0's per-layer times: the names once its model is built, then the
 * mean per call over the last SNAP_LAYER_WINDOW_NS (over everything so far
 * until one window has passed). The rank thread publishes the totals
 * (model_layer_times); nothing here touches its memory otherwise. */
static void update_layers(struct snap *s, const struct run *r, int64_t now_ns)
{
    const struct model *m = run_rank_model(r, 0);
    if (!m)
        return;
    if (!s->nlayers) {
        s->layers_total = m->nlayers;
        s->nlayers = m->nlayers < SNAP_MAX_LAYERS ? m->nlayers : SNAP_MAX_LAYERS;
        for (int i = 0; i < s->nlayers; i++) {
            s->layers[i].num = m->layers[i].num;
            snprintf(s->layers[i].name, sizeof(s->layers[i].name), "%.39s", m->layers[i].name);
            snprintf(s->layers[i].kind, sizeof(s->layers[i].kind), "%.15s", m->layers[i].ops->kind);
        }
        s->lt_base_ns = now_ns;
    }
    int n = s->nlayers;
    int64_t calls[2];
    if (model_layer_times(m, s->lt_now, s->lt_now + SNAP_MAX_LAYERS, n, &calls[0], &calls[1]) != n)
        return; /* untimed, or the rank was publishing: the next frame reads it */
    if (calls[0] < s->lt_base_calls[0] || calls[1] < s->lt_base_calls[1]) {
        /* the rank started its totals again (after its first step): a new base */
        memcpy(s->lt_base, s->lt_now, sizeof(*s->lt_base) * 2 * SNAP_MAX_LAYERS);
        memcpy(s->lt_base_calls, calls, sizeof(calls));
        s->lt_base_ns = now_ns;
        return;
    }
    int window = now_ns - s->lt_base_ns >= SNAP_LAYER_WINDOW_NS;
    if (s->layers_valid && !window)
        return;
    for (int pass = 0; pass < 2; pass++) {
        int64_t dc = calls[pass] - s->lt_base_calls[pass];
        if (dc <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            int k = pass * SNAP_MAX_LAYERS + i;
            double ms = (double)(s->lt_now[k] - s->lt_base[k]) / (double)dc / 1e6;
            if (pass)
                s->layers[i].bwd_ms = ms;
            else
                s->layers[i].fwd_ms = ms;
        }
        s->layers_valid = 1;
    }
    if (window && calls[0] > s->lt_base_calls[0]) {
        memcpy(s->lt_base, s->lt_now, sizeof(*s->lt_base) * 2 * SNAP_MAX_LAYERS);
        memcpy(s->lt_base_calls, calls, sizeof(calls));
        s->lt_base_ns = now_ns;
    }
}

void snap_update(struct snap *s, const struct run *r, const struct run_result *final, int64_t now_ns)
{
    const struct metrics *m = &r->metrics;
    s->state = r->state;
    s->params_total = r->ranks ? r->ranks[0].nparams_total : 0;
    s->params_trainable = r->ranks ? r->ranks[0].nparams_trainable : 0;
    snprintf(s->err, sizeof(s->err), "%s", r->err);
    s->failed_rank = r->failed_rank;
    s->steps_done = (long)m->steps_done;
    s->epoch = s->steps_per_epoch > 0 ? (int)(s->steps_done / s->steps_per_epoch) : 0;
    if (s->epoch >= s->epochs)
        s->epoch = s->epochs - 1;
    int64_t end = r->t_end_ns ? r->t_end_ns : now_ns;
    s->elapsed_s = (double)(end - r->t_start_ns) / 1e9;

    s->win_head = (s->win_head + 1) % SNAP_WINDOW;
    if (s->nwin < SNAP_WINDOW)
        s->nwin++;
    int oldest = (s->win_head - s->nwin + 1 + SNAP_WINDOW) % SNAP_WINDOW;
    s->win_t_ns[s->win_head] = now_ns;
    s->at_rest = snap_run_at_rest(r);
    double slowest = 0;
    int any = 0, fresh = 0;
    for (int i = 0; i < s->world; i++) {
        struct snap_rank *sr = &s->ranks[i];
        const struct rank_metrics *rm = &m->r[i];
        copy_history(sr, rm);
        fresh |= rm->nsteps != sr->seen_steps;
        struct snap_sample *w = &sr->win[s->win_head];
        w->nsteps = rm->nsteps;
        w->total = rm->total;
        w->bytes = rm->bytes_tx + rm->bytes_rx;
        w->bus = rm->bus_bytes;
        w->xfer_ns = rm->xfer_ns;
        if (final && i < final->nranks)
            rank_final(sr, &final->ranks[i]);
        else
            rank_live(s, i, r, oldest, now_ns);
        if (sr->valid) {
            any = 1;
            if (sr->rate.ms > slowest)
                slowest = sr->rate.ms;
        }
    }
    if (fresh || !s->window_s)
        s->window_s = (double)(now_ns - s->win_t_ns[oldest]) / 1e9;
    update_stall(s, r, now_ns);
    s->final = final != NULL;
    if (final && final->steps > 0) {
        s->rate = final->rate; /* (the median step, and samples/s at it) */
        s->rate_valid = final->rate.ms > 0;
    } else {
        s->rate.ms = slowest;
        s->rate.samples_s = samples_per_s_at(s->global_batch, slowest);
        s->rate.samples_valid = 1;
        s->rate_valid = any && slowest > 0 && s->stall_s == 0;
    }
    long left = s->total_steps - s->steps_done;
    s->eta_valid = s->state == RUN_RUNNING && s->rate_valid && left > 0;
    s->eta_s = s->eta_valid ? (double)left * s->rate.ms / 1e3 : 0;

    update_loss(s, &r->metrics);
    update_traffic(s, r, now_ns, s->state == RUN_RUNNING);
    update_layers(s, r, now_ns);
}

int snap_from_replay(struct snap *s, const struct replay *rp)
{
    const struct run_result *res = &rp->res;
    int world = res->nranks > 0 ? res->nranks : 1;
    if (snap_alloc(s, world) != 0)
        return -1;
    s->replay = 1;
    s->final = 1;
    s->result = res;
    if (res->world > world)
        s->run_world = res->world;
    s->state = res->state; /* -1: a snapshot of a run still going */
    s->failed_rank = -1;
    s->threshold = -1;
    s->threshold_step = -1;
    snprintf(s->model, sizeof(s->model), "%s", res->cfg.model[0] ? res->cfg.model : "n/a");
    snprintf(s->dataset, sizeof(s->dataset), "%s", res->dataset[0] ? res->dataset : "n/a");
    train_mode_label(&res->cfg, s->strategy, sizeof(s->strategy));
    s->sync = res->cfg.strategy;
    snprintf(s->backend, sizeof(s->backend), "%s", res->backend[0] ? res->backend : "unknown");
    snprintf(s->device, sizeof(s->device), "%s", res->nranks > 0 ? res->ranks[0].device : "n/a");
    snprintf(s->precision, sizeof(s->precision), "%s",
             res->precision_valid ? precision_name(res->cfg.precision) : "n/a");
    s->global_batch = res->batch_valid ? res->global_batch : 0;
    int replicas = train_mode_replicas(&res->cfg, res->world);
    s->local_batch = replicas > 0 ? s->global_batch / replicas : 0;

    double wall_s = 0;
    int any = 0;
    for (int i = 0; i < res->nranks; i++) {
        const struct rank_result *q = &res->ranks[i];
        struct snap_rank *sr = &s->ranks[i];
        rank_final(sr, q);
        sr->valid = q->steps > 0 && q->b.wall_ns > 0;
        if (q->steps > s->steps_done)
            s->steps_done = q->steps;
        any |= sr->valid;
        if ((double)q->b.wall_ns / 1e9 > wall_s)
            wall_s = (double)q->b.wall_ns / 1e9;
        if (rp->has_metrics && i < rp->metrics.world)
            copy_history(sr, &rp->metrics.r[i]);
    }
    /* the run's figures as its report gives them (the median step and
     * samples/s at it, as a finished live run's), not worked out again
     * here; steps: the report's */
    if (res->nranks > 0)
        s->steps_done = res->steps;
    s->total_steps = res->replay.total_steps > s->steps_done ? res->replay.total_steps : s->steps_done;
    s->elapsed_s = wall_s;
    s->rate_valid = any && res->ms_valid && res->rate.ms > 0;
    s->rate = res->rate;
    s->rate.samples_valid &= s->rate_valid && s->global_batch > 0;
    s->epochs = 1;

    if (rp->has_metrics) {
        const struct metrics *m = &rp->metrics;
        if (m->steps_done > 0 && m->step_epoch)
            s->epochs = (int)m->step_epoch[metrics_slot(m->steps_done - 1)] + 1;
        if (m->nepochs > s->epochs)
            s->epochs = m->nepochs;
        s->steps_per_epoch = s->epochs > 0 ? (long)m->steps_done / s->epochs : 0;
        update_loss(s, m);
        s->epoch = s->epochs - 1;
        /* traffic: the whole run's figures; no per-frame samples to plot */
        uint64_t bytes = 0;
        double bus = 0;
        int64_t xfer = 0;
        for (int i = 0; i < m->world; i++) {
            bytes += m->r[i].bytes_tx + m->r[i].bytes_rx;
            bus += m->r[i].bus_bytes;
            xfer += m->r[i].xfer_ns;
        }
        s->rate_bytes_now = wall_s > 0 ? (double)bytes / wall_s : 0;
        s->busbw_now_valid = xfer > 0 && bus > 0;
        s->busbw_now = s->busbw_now_valid ? bus / (double)xfer : NAN;
        s->traffic_span_s = wall_s;
    } else {
        s->steps_per_epoch = s->steps_done;
        uint64_t bytes = 0;
        for (int i = 0; i < res->nranks; i++)
            bytes += res->ranks[i].traffic.tx + res->ranks[i].traffic.rx;
        s->rate_bytes_now = wall_s > 0 ? (double)bytes / wall_s : 0;
        s->busbw_now_valid = res->traffic.busbw_valid;
        s->busbw_now = res->traffic.busbw_valid ? res->traffic.busbw_gbps : NAN;
        s->traffic_span_s = wall_s;
        snprintf(s->timeline_na, sizeof(s->timeline_na), "timeline: n/a for this trace kind");
    }
    return 0;
}

/* A rank's row and timeline from its latest cycle. */
static void follow_rank(struct snap_rank *sr, const struct follow_rank *fr, const struct follow_cycle *c)
{
    snprintf(sr->device, sizeof(sr->device), "%s", fr->device);
    sr->cycle = c->cycle;
    sr->step_lo = c->step_lo;
    sr->step_hi = c->step_hi;
    sr->straggler = c->straggler;
    sr->steps = c->nsteps;
    sr->valid = sr->recent_valid = c->f.b.wall_ns > 0;
    sr->rate.ms = c->ms_mean;
    sr->rate.samples_valid = 0;
    sr->traffic.bytes_valid = 0; /* (a PyTorch trace: bytes unknown) */
    pcts_of(sr, &c->f.b);
    size_t n = fr->nspans < METRICS_HISTORY ? fr->nspans : METRICS_HISTORY;
    memcpy(sr->hist, fr->spans, sizeof(*sr->hist) * n);
    sr->nhist = n;
    sr->lanes = fr->lanes;
}

/* The figures again, from the follower's (lock held). */
static int follow_fill(struct snap *s, struct follow *f)
{
    int world = f->world > 0 ? f->world : 1;
    struct snap_cycle *keep = NULL;
    if (f->ncycles && !(keep = malloc(sizeof(*keep) * f->ncycles)))
        return -1;
    snap_free(s);
    if (snap_alloc(s, world) != 0) {
        free(keep);
        return -1;
    }
    s->cycles = keep;
    s->replay = s->follow = s->final = 1;
    s->state = -1;
    s->failed_rank = -1;
    s->threshold = -1;
    s->threshold_step = -1;
    s->epochs = 1;
    s->follow_version = f->version;
    s->inotify = f->inotify;
    snprintf(s->follow_dir, sizeof(s->follow_dir), "%.255s", f->dir);
    snprintf(s->model, sizeof(s->model), "n/a");
    snprintf(s->dataset, sizeof(s->dataset), "n/a");
    snprintf(s->strategy, sizeof(s->strategy), "n/a");
    s->sync = -1;
    snprintf(s->backend, sizeof(s->backend), "%s", trace_flavor_name(f->flavor));
    snprintf(s->precision, sizeof(s->precision), "n/a");
    snprintf(s->device, sizeof(s->device), "%s", f->nranks ? f->ranks[0].device : "n/a");
    for (int i = 0; i < world; i++)
        s->ranks[i].cycle = -1;
    int straggler = -1;
    for (int k = 0; k < f->nranks; k++) {
        const struct follow_rank *fr = &f->ranks[k];
        if (fr->rank >= world || fr->latest < 0 || (size_t)fr->latest >= f->ncycles)
            continue;
        const struct follow_cycle *c = &f->cycles[fr->latest];
        follow_rank(&s->ranks[fr->rank], fr, c);
        if (c->straggler)
            straggler = fr->rank;
        if (c->ms_mean > s->rate.ms)
            s->rate.ms = c->ms_mean;
        if ((long)c->step_hi + 1 > s->steps_done && c->step_lo <= c->step_hi)
            s->steps_done = (long)c->step_hi + 1;
        s->max_cycles = fr->ncycles > s->max_cycles ? fr->ncycles : s->max_cycles;
    }
    s->total_steps = s->steps_done;
    /* the Runs row: the job so far as its report gives it (every cycle,
     * the same steps for the split as for the count) */
    struct run_result *res = malloc(sizeof(*res));
    char err[64];
    if (res && follow_result_locked(f, res, err, sizeof(err)) == 0) {
        s->steps_measured = res->steps;
        s->run_split_valid = res->nranks > 0 && res->b.wall_ns > 0;
        s->run_split[0] = res->split.compute;
        s->run_split[1] = res->split.comm;
        s->run_split[2] = res->split.idle;
        s->result = s->own_result = res; /* (the Kernels pane's) */
    } else {
        free(res);
    }
    for (size_t i = 0; i < f->ncycles; i++) {
        const struct follow_cycle *c = &f->cycles[i];
        s->cycles[i] = (struct snap_cycle){.rank = c->rank,
                                           .cycle = c->cycle,
                                           .step_lo = c->step_lo,
                                           .step_hi = c->step_hi,
                                           .ms_step = c->ms_mean,
                                           .own_ms = c->own_ms,
                                           .others_ms = c->others_ms,
                                           .split = c->split,
                                           .straggler = c->straggler};
    }
    s->ncycles = (int)f->ncycles;
    if (!f->ncycles)
        snprintf(s->timeline_na, sizeof(s->timeline_na), "waiting for the first trace in %.40s", f->dir);
    if (straggler >= 0)
        snprintf(s->ranks_note, sizeof(s->ranks_note), "each rank's latest cycle  *straggler: rank %d", straggler);
    else
        snprintf(s->ranks_note, sizeof(s->ranks_note), "each rank's latest cycle");
    return 0;
}

int snap_from_follow(struct snap *s, struct follow *f, int64_t now_ns)
{
    follow_lock(f);
    int rc = 0;
    if (!s->follow || s->follow_version != f->version || !s->ranks)
        rc = follow_fill(s, f);
    if (rc == 0) {
        s->since_s = f->last_landed_ns ? (double)(now_ns - f->last_landed_ns) / 1e9 : -1;
        s->elapsed_s = (double)(now_ns - f->t0_ns) / 1e9;
        s->pending = f->pending;
    }
    follow_unlock(f);
    return rc;
}
