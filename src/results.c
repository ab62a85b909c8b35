/* results.c - the results of a run, live or replayed: every figure the
 * report's writers print, computed here once (result_from_metrics,
 * result_from_run, the breakdowns, per-epoch units, stages, predictions),
 * and the comparison between runs (results_compare: baselines, speedup,
 * efficiency, the scaling kind and its marks). The writers (report.c,
 * report_json.c, report_csv.c), the plots and the UI read these fields; none of them
 * works a figure out again. */
#include "report.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
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

/* The --bench-comm fit a run's collectives take (as bench_comm.c stores
 * them): the world planner names it (world.h). */
static const char *fit_backend(const struct run *r)
{
    return r->plan.fit_backend;
}

static const char *fit_algo(const struct run *r)
{
    return r->plan.fit_algo;
}

/* --predict: a 1-rank run's step at more ranks (src/predict.h). */
/* --predict of a 1-rank (one stage) model or pipeline run: the same batch
 * over more stages (predict_pipeline). */
static void predict_stages(struct run_result *res, const struct run *r, const struct model *m)
{
    const struct run_config *c = &r->cfg;
    int nl = m->nlayers, M = train_mode_micro(c);
    int64_t *fwd = calloc((size_t)nl + 1, sizeof(int64_t)), *bwd = calloc((size_t)nl + 1, sizeof(int64_t));
    double *layer = calloc((size_t)nl + 1, sizeof(double));
    int64_t fc = 0, bc = 0;
    if (!fwd || !bwd || !layer || model_layer_times(m, fwd, bwd, nl, &fc, &bc) != nl || fc <= 0 || bc <= 0) {
        snprintf(res->spred_note, sizeof(res->spred_note), "--predict: no per-layer times from the run");
        goto out;
    }
    double compute = 0; /* per micro-batch */
    for (int l = 0; l < nl; l++) {
        layer[l] = (double)fwd[l] / (double)fc / 1e6 + (double)bwd[l] / (double)bc / 1e6;
        compute += layer[l];
    }
    double rest = res->rate.ms - M * compute;
    struct predict_link link = {0};
    struct cost_fit f;
    char path[1024];
    cost_model_path(path, sizeof(path));
    int have = 1;
    if (c->link.bw > 0) {
        link = (struct predict_link){.alpha_us = c->link.lat * 1e6, .beta_us_per_byte = 1e6 / c->link.bw};
        snprintf(res->spred_link, sizeof(res->spred_link), "--link %.4g GB/s, %.4g us: a message between stages",
                 c->link.bw / 1e9, c->link.lat * 1e6);
    } else if (cost_model_lookup(path, fit_backend(r), fit_algo(r), 2, COLL_BROADCAST, &f) == 0) {
        link = predict_link_of(&f);
        snprintf(res->spred_link, sizeof(res->spred_link), "--bench-comm's 2-rank broadcast fit (%s): a message",
                 fit_backend(r));
    } else {
        have = 0;
    }
    for (int i = 0; i < c->npredict_ranks; i++) {
        struct scaling_pred *sp = &res->spred[res->nspred++];
        int k = c->predict_ranks[i];
        sp->ranks = k;
        if (!have)
            continue;
        double step = predict_pipeline(m, layer, M, rest > 0 ? rest : 0, k, &link, &sp->comm_ms);
        if (step <= 0)
            continue; /* more stages than the model has cuts */
        sp->valid = 1;
        sp->step_ms = step;
        sp->exposed_ms = sp->comm_ms; /* nothing hides a stage's sends */
        sp->speedup = res->rate.ms / step;
        sp->efficiency = 100.0 * sp->speedup / k;
    }
out:
    free(fwd);
    free(bwd);
    free(layer);
}

static void predict_scaling(struct run_result *res, struct run *r)
{
    const struct run_config *c = &r->cfg;
    const struct model *m = run_rank_model(r, 0);
    if (!c->predict || r->world != 1 || !m)
        return;
    if (train_mode_has(c, MODE_STAGED) && !r->on_gpu && res->rate.ms > 0 && res->steps >= 2) {
        predict_stages(res, r, m);
        return;
    }
    if (sync_has(c->strategy, SYNC_ONE_RANK)) {
        snprintf(res->spred_note, sizeof(res->spred_note), "--predict: %s runs one rank whatever the ranks",
                 strategy_name(c->strategy));
        return;
    }
    if (r->on_gpu || res->rate.ms <= 0 || res->steps < 2) {
        snprintf(res->spred_note, sizeof(res->spred_note), "--predict needs a CPU run of 2 steps or more");
        return;
    }
    int nl = m->nlayers, n = m->nparams;
    int64_t *fwd = calloc((size_t)nl + 1, sizeof(int64_t)), *bwd = calloc((size_t)nl + 1, sizeof(int64_t));
    double *ready = calloc((size_t)n + 1, sizeof(double)), *after = calloc((size_t)nl + 2, sizeof(double));
    struct grad_tensor *t = calloc((size_t)n + 1, sizeof(*t));
    int64_t fc = 0, bc = 0;
    if (!fwd || !bwd || !ready || !after || !t || model_layer_times(m, fwd, bwd, nl, &fc, &bc) != nl || fc <= 0 ||
        bc <= 0) {
        snprintf(res->spred_note, sizeof(res->spred_note), "--predict: no per-layer times from the run");
        goto out;
    }
    struct predict_input in = {0};
    /* backward runs the layers last to first: after[l] is when layer l's is done */
    for (int l = nl - 1; l >= 0; l--) {
        in.fwd_ms += (double)fwd[l] / (double)fc / 1e6;
        after[l] = after[l + 1] + (double)bwd[l] / (double)bc / 1e6;
    }
    in.bwd_ms = after[0];
    for (int p = 0; p < n; p++) {
        t[p] = (struct grad_tensor){m->params[p].off, m->params[p].len, m->params[p].trainable};
        int l = m->params[p].layer;
        ready[p] = l >= 0 && l < nl ? after[l] : in.bwd_ms;
    }
    in.rest_ms = res->rate.ms - in.fwd_ms - in.bwd_ms;
    if (in.rest_ms < 0)
        in.rest_ms = 0;
    in.n = n;
    in.t = t;
    in.ready_ms = ready;
    in.input_bytes = sizeof(float) * (double)m->tensors[m->input].per_sample * r->local_batch;
    in.output_bytes = sizeof(float) * (double)m->classes * r->local_batch;
    in.grad_bytes = r->wire_scaled ? sizeof(uint16_t) : sizeof(float);
    char path[1024], wire[32] = "";
    cost_model_path(path, sizeof(path));
    if (r->wire_scaled)
        snprintf(wire, sizeof(wire), "; %s gradients", w16_name(r->wire_scaled));
    int through_root = sync_has(c->strategy, SYNC_ROOTED);
    if (c->link.bw > 0)
        snprintf(res->spred_link, sizeof(res->spred_link), "--link %.4g GB/s, %.4g us: %s%s", c->link.bw / 1e9,
                 c->link.lat * 1e6, through_root ? "the root's messages one after another" : "ring allreduce", wire);
    else
        snprintf(res->spred_link, sizeof(res->spred_link), "--bench-comm's fits (shm, %s)%s",
                 c->algo == ALGO_RING ? "ring" : "naive", wire);
    for (int i = 0; i < c->npredict_ranks; i++) {
        struct scaling_pred *sp = &res->spred[res->nspred++];
        int k = c->predict_ranks[i];
        sp->ranks = k;
        /* the rooted collectives: gather, broadcast, scatter, reduce */
        struct predict_link link = {0}, rooted[4];
        const struct predict_link **slot[4] = {&in.gather, &in.broadcast, &in.scatter, &in.reduce};
        const int kinds[4] = {COLL_GATHER, COLL_BROADCAST, COLL_SCATTER, COLL_REDUCE};
        struct cost_fit f;
        const char *algo = fit_algo(r);
        for (int q = 0; q < 4; q++)
            *slot[q] = NULL;
        if (c->link.bw > 0) {
            link = predict_ring_link(c->link.bw, c->link.lat, k);
            /* through the root: its K-1 messages one after another */
            for (int q = 0; q < 4; q++) {
                rooted[q] = (struct predict_link){.alpha_us = (k - 1) * c->link.lat * 1e6,
                                                  .beta_us_per_byte = (k - 1) * 1e6 / c->link.bw};
                *slot[q] = &rooted[q];
            }
        } else {
            if (cost_model_lookup(path, fit_backend(r), algo, k, COLL_ALLREDUCE, &f) == 0)
                link = predict_link_of(&f);
            else if (!through_root)
                continue; /* no cost for this rank count: n/a */
            for (int q = 0; q < 4; q++)
                if (cost_model_lookup(path, fit_backend(r), algo, k, kinds[q], &f) == 0) {
                    rooted[q] = predict_link_of(&f);
                    *slot[q] = &rooted[q];
                }
        }
        struct sync_params sync = run_sync_params(c);
        double step = predict_step(&in, c->strategy, &link, &sync, &sp->comm_ms, &sp->exposed_ms);
        if (step <= 0)
            continue;
        sp->valid = 1;
        sp->step_ms = step;
        sp->speedup = k * res->rate.ms / step;
        sp->efficiency = 100.0 * sp->speedup / k;
    }
out:
    free(fwd);
    free(bwd);
    free(ready);
    free(after);
    free(t);
}

/* The costs of the collectives on k ranks, each kind looked up once
 * (the fits are a file): --link's, else the backend's fits. */
struct job_links {
    const struct run_config *c;
    const char *path, *backend, *algo;
    int k;
    int known[COLL_COUNT]; /* 0: not looked up; 1: in l; -1: no cost */
    struct predict_link l[COLL_COUNT];
};

/* The cost of collective `coll` (enum coll_kind; COLL_NONE priced as an
 * allreduce) on j->k ranks, or NULL when neither --link nor a fit gives it. */
static const struct predict_link *job_link(struct job_links *j, int coll)
{
    if (coll <= COLL_NONE || coll >= COLL_COUNT)
        coll = COLL_ALLREDUCE;
    if (!j->known[coll]) {
        struct cost_fit f;
        j->known[coll] = -1;
        if (j->c->link.bw > 0) {
            j->l[coll] = predict_link_coll(j->c->link.bw, j->c->link.lat, j->k, coll);
            j->known[coll] = 1;
        } else if (j->path && cost_model_lookup(j->path, j->backend, j->algo, j->k, coll, &f) == 0) {
            j->l[coll] = predict_link_of(&f);
            j->known[coll] = 1;
        }
    }
    return j->known[coll] > 0 ? &j->l[coll] : NULL;
}

void result_job_predict(struct run_result *res, const struct run_config *c)
{
    struct job_pred *j = &res->job;
    const struct whatif_table *t = &res->colls;
    memset(j, 0, sizeof(*j));
    int w = res->world > 0 ? res->world : res->nranks;
    if (res->replay.valid && !strcmp(res->replay.format, "ddptop")) {
        snprintf(j->note, sizeof(j->note),
                 "--predict: a replay predicts a PyTorch job from its traces; ddptop's own runs predict as they run");
        return;
    }
    if (w < 2) {
        snprintf(j->note, sizeof(j->note), "--predict: the job ran on one rank: no collectives to price on more");
        return;
    }
    if (!t->valid || t->steps <= 0 || !res->ms_valid) {
        snprintf(j->note, sizeof(j->note),
                 "--predict: no collectives (gloo:, nccl: records, NCCL kernels) in the steps the trace covers");
        return;
    }
    const char *backend = t->backend[0] ? t->backend : "gloo";
    const char *algo = !strcmp(backend, "gloo") ? config_algo_name(c->algo) : backend;
    char buf[1024];
    const char *path = cost_model_path(buf, sizeof(buf));
    j->world = w;
    j->step_ms = res->ms_mean;
    for (int i = 0; i < res->nranks; i++) {
        j->compute_ms += res->ranks[i].compute_ms / res->nranks;
        j->exposed_ms += res->ranks[i].exposed_ms / res->nranks;
    }
    j->comm_ms = t->comm_ms;
    j->hidden_ms = j->comm_ms - j->exposed_ms > 0 ? j->comm_ms - j->exposed_ms : 0;
    j->colls_per_step = (double)t->n / t->steps;
    /* each collective's bytes: its args', else the cost at W inverted */
    double *bytes = malloc((t->n ? t->n : 1) * sizeof(*bytes));
    if (!bytes) {
        snprintf(j->note, sizeof(j->note), "--predict: out of memory");
        return;
    }
    double total = 0;
    size_t sized = 0;
    struct job_links at_w = {.c = c, .path = path, .backend = backend, .algo = algo, .k = w};
    for (size_t i = 0; i < t->n; i++) {
        const struct whatif_match *m = &t->m[i];
        const struct predict_link *lw = m->bytes ? NULL : job_link(&at_w, m->kind);
        if (m->bytes) {
            bytes[i] = (double)m->bytes;
            sized++;
        } else if (lw) {
            bytes[i] = predict_invert_bytes(lw, (double)m->min_ns / 1e3);
        } else {
            snprintf(j->note, sizeof(j->note),
                     "--predict: no %s fit for %d ranks; get one with ddptop --bench-comm --comm %s --ranks %d "
                     "(or give --link BW,LAT)",
                     backend, w, backend, w);
            free(bytes);
            return;
        }
        total += bytes[i];
    }
    j->bytes_per_step = total / t->steps;
    char inverted[96];
    snprintf(inverted, sizeof(inverted), "%s at %d ranks inverted, each collective's least time",
             c->link.bw > 0 ? "--link's ring" : "the fit", w);
    if (sized == t->n)
        snprintf(j->sizes, sizeof(j->sizes), "the trace's args (record_param_comms, Input Dims)");
    else if (sized == 0)
        snprintf(j->sizes, sizeof(j->sizes), "%s", inverted);
    else
        snprintf(j->sizes, sizeof(j->sizes), "the trace's args for %zu of %zu, the rest %s", sized, t->n, inverted);
    if (c->link.bw > 0)
        snprintf(j->link, sizeof(j->link), "--link %.4g GB/s, %.4g us: ring (allreduce; the others half)",
                 c->link.bw / 1e9, c->link.lat * 1e6);
    else
        snprintf(j->link, sizeof(j->link), "--bench-comm's fits (%s, %s)", backend, algo);
    j->valid = 1;
    struct predict_job_in in = {j->step_ms, j->comm_ms, j->exposed_ms};
    for (int r = 0; r < c->npredict_ranks && j->nrows < CFG_MAX_PREDICT; r++) {
        struct scaling_pred *sp = &j->rows[j->nrows++];
        int k = c->predict_ranks[r];
        sp->ranks = k;
        double comm = 0;
        size_t i = 0;
        struct job_links at_k = {.c = c, .path = path, .backend = backend, .algo = algo, .k = k};
        for (; i < t->n; i++) {
            const struct predict_link *lk = job_link(&at_k, t->m[i].kind);
            if (!lk)
                break;
            comm += sync_link_ms(lk, bytes[i]);
        }
        if (i < t->n)
            continue; /* no cost at k ranks: n/a */
        sp->comm_ms = comm / t->steps;
        sp->step_ms = predict_job_step(&in, sp->comm_ms, &sp->exposed_ms);
        if (sp->step_ms <= 0)
            continue;
        sp->valid = 1;
        sp->speedup = (double)k / w * j->step_ms / sp->step_ms;
        sp->efficiency = 100.0 * j->step_ms / sp->step_ms;
    }
    free(bytes);
}

/* Predicted transfer time per rank from the stored alpha-beta fits: valid
 * only when every collective kind the run used has a fit. */
static void predict(struct run_result *res, struct run *r)
{
    char path[1024];
    cost_model_path(path, sizeof(path));
    const char *algo = fit_algo(r);
    snprintf(res->pred_backend, sizeof(res->pred_backend), "%s", fit_backend(r));
    double total = 0, r2 = 1.0, most = 0, err = -1;
    int used = 0, kind = 0;
    for (int k = 1; k < COLL_COUNT; k++) {
        uint64_t calls = 0;
        for (int i = 0; i < r->world; i++)
            calls += metrics_kind_calls(&r->metrics.r[i], k);
        if (!calls || k == COLL_BARRIER)
            continue;
        used = 1;
        struct cost_fit f;
        if (cost_model_lookup(path, fit_backend(r), algo, r->world, k, &f) != 0) {
            res->pred_missing = k;
            return;
        }
        double t = 0; /* (each size class in its regime) */
        for (int i = 0; i < r->world; i++)
            for (int c = 0; c < COST_SIZE_CLASSES; c++)
                t += cost_predict_calls_us(&f, (double)r->metrics.r[i].kind_calls[k][c],
                                           r->metrics.r[i].kind_bytes[k][c]);
        total += t;
        if (t >= most) { /* (the fit that carries the prediction: its r2 is the one that matters) */
            most = t;
            r2 = f.r2;
            err = f.max_err;
            kind = k;
        }
    }
    res->pred_valid = used;
    res->pred_r2 = r2;
    res->pred_err = err;
    res->pred_kind = kind;
    res->pred_ms = total / 1e3 / r->world;
}

/* The running training loss (train_loss's) at up to RESULT_LOSS_POINTS
 * steps spread evenly over the steps the rings keep, the last included. */
static void loss_curve(struct run_result *res, const struct metrics *m)
{
    size_t n = m->steps_done, first = metrics_first_kept(n), kept = n - first;
    int k = kept < RESULT_LOSS_POINTS ? (int)kept : RESULT_LOSS_POINTS;
    for (int i = 0; i < k; i++) {
        size_t s = first + (k > 1 ? (size_t)((double)i * (double)(kept - 1) / (k - 1) + 0.5) : kept - 1);
        res->loss_curve[i] = (struct loss_point){(long)s + 1, m->loss_running[metrics_slot(s)]};
    }
    res->nloss = k;
}

void result_timeline(struct run_result *res, const struct metrics *m)
{
    res->ntimeline = 0;
    if (!train_mode_has(&res->cfg, MODE_STAGED) || m->steps_done == 0)
        return;
    int S = res->world / (res->cfg.dp > 1 ? res->cfg.dp : 1); /* (a replay's cfg has no rank count: its world) */
    uint32_t step = (uint32_t)(m->steps_done - 1);
    int64_t t0 = INT64_MAX;
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < S && s < m->world; s++) {
            const struct rank_metrics *rm = &m->r[s];
            uint64_t have = rm->nhistory < METRICS_HISTORY ? rm->nhistory : METRICS_HISTORY;
            for (uint64_t j = rm->nhistory - have; j < rm->nhistory; j++) {
                const struct span *sp = &rm->history[j % METRICS_HISTORY];
                if (sp->step != step || sp->lane != LANE_MAIN || sp->t1_ns < sp->t0_ns)
                    continue;
                if (pass == 0) {
                    t0 = sp->t0_ns < t0 ? sp->t0_ns : t0;
                } else if (res->ntimeline < RESULT_TIMELINE_SPANS) {
                    res->timeline[res->ntimeline++] = (struct timeline_span){s, sp->cat, (double)(sp->t0_ns - t0) / 1e6,
                                                                             (double)(sp->t1_ns - t0) / 1e6};
                }
            }
        }
    res->timeline_step = step;
}

double samples_per_s_at(int batch, double ms)
{
    return ms > 0 ? batch / (ms / 1e3) : 0;
}

int result_from_metrics(struct run_result *res, const struct metrics *m, int local_batch, int world)
{
    res->ranks = calloc((size_t)m->world, sizeof(*res->ranks));
    if (!res->ranks)
        return -1;
    res->nranks = m->world;
    res->world = world;
    res->steps_traced = m->r[0].ntraced;
    res->steps_untraced = m->r[0].nuntraced;
    res->steps_skipped = m->r[0].nskipped;
    res->loss_scale = m->r[0].loss_scale;
    res->global_batch = local_batch * world;
    res->batch_valid = local_batch > 0;
    double bus = 0, alg = 0;
    int64_t xfer = 0;
    for (int i = 0; i < m->world; i++) {
        const struct rank_metrics *rm = &m->r[i];
        struct rank_result *rr = &res->ranks[i];
        rr->rank = i;
        rr->steps = (long)rm->nsteps;
        metrics_step_stats(m, i, &rr->ms_mean, &rr->rate.ms, &rr->ms_p90);
        rr->ms_valid = 1;
        rr->rate.samples_s = samples_per_s_at(local_batch, rr->rate.ms);
        rr->rate.samples_valid = local_batch > 0;
        rr->b = rm->nsteps > 1 ? rm->steady : rm->total;
        long bsteps = rm->nsteps > 1 ? (long)rm->nsteps - 1 : (long)rm->nsteps; /* the steps rr->b covers */
        rr->coll_ms = bsteps > 0 ? (double)rr->b.coll_ns / 1e6 / (double)bsteps : 0;
        rr->compute_ms = bsteps > 0 ? (double)rr->b.compute_ns / 1e6 / (double)bsteps : 0;
        rr->desched_valid = rm->desched_valid;
        rr->desched_pct = breakdown_pct(rm->desched_ns, rm->steady.wall_ns);
        rr->gpu_view = rm->gpu_view;
        rr->traffic.tx = rm->bytes_tx;
        rr->traffic.rx = rm->bytes_rx;
        rr->traffic.bytes_valid = 1;
        rr->xfer_ms = (double)rm->xfer_ns / 1e6;
        rr->sync_ms = (double)rm->sync_ns / 1e6;
        /* per step over the steps rr->b covers, as ms/step: a first step's
         * set-up waits would otherwise outweigh a short run's steps */
        rr->xfer_step_ms = bsteps > 0 ? (double)(rm->nsteps > 1 ? rm->xfer_steady_ns : rm->xfer_ns) / 1e6 / bsteps : 0;
        rr->sync_step_ms = bsteps > 0 ? (double)(rm->nsteps > 1 ? rm->sync_steady_ns : rm->sync_ns) / 1e6 / bsteps : 0;
        rr->coll_valid = 1;
        /* busbw and algbw over the steps ms/step covers, as xfer_step_ms */
        int steady = rm->nsteps > 1;
        double rbus = steady ? rm->bus_steady_bytes : rm->bus_bytes,
               ralg = steady ? rm->alg_steady_bytes : rm->alg_bytes;
        int64_t rxfer = steady ? rm->xfer_steady_ns : rm->xfer_ns;
        rr->traffic.busbw_valid = rxfer > 0 && rbus > 0;
        rr->traffic.busbw_gbps = rr->traffic.busbw_valid ? rbus / (double)rxfer : 0;
        rr->traffic.algbw_gbps = rr->traffic.busbw_valid ? ralg / (double)rxfer : 0;
        rr->dropped = rm->dropped + rm->late;
        rr->dropped_valid = 1;
        res->traffic.tx += rm->bytes_tx;
        res->traffic.rx += rm->bytes_rx;
        res->xfer_ms += rr->xfer_ms;
        res->sync_ms += rr->sync_ms;
        rr->negotiate_valid = rm->nnegotiate > 0;
        rr->negotiate_ms =
            bsteps > 0 ? (double)(rm->nsteps > 1 ? rm->negotiate_steady_ns : rm->negotiate_ns) / 1e6 / bsteps : 0;
        res->negotiate_valid |= rr->negotiate_valid;
        res->negotiate_ms += rr->negotiate_ms / m->world;
        res->xfer_step_ms += rr->xfer_step_ms;
        res->sync_step_ms += rr->sync_step_ms;
        res->dropped += rr->dropped;
        bus += rbus;
        alg += ralg;
        xfer += rxfer;
    }
    res->traffic.tx /= (uint64_t)m->world;
    res->traffic.rx /= (uint64_t)m->world;
    res->traffic.bytes_valid = 1;
    res->xfer_ms /= m->world;
    res->sync_ms /= m->world;
    res->xfer_step_ms /= m->world;
    res->sync_step_ms /= m->world;
    res->coll_valid = 1;
    res->dropped_valid = 1;
    res->traffic.busbw_valid = xfer > 0 && bus > 0;
    res->traffic.busbw_gbps = res->traffic.busbw_valid ? bus / (double)xfer : 0;
    res->traffic.algbw_gbps = res->traffic.busbw_valid ? alg / (double)xfer : 0;
    result_breakdowns(res);

    /* the run's step time: per step, the slowest rank */
    size_t n = m->steps_done;
    res->steps = (long)n;
    res->ms_valid = 1;
    res->rate.samples_valid = res->batch_valid;
    if (n > 0) {
        metrics_run_step_stats(m, &res->ms_mean, &res->rate.ms, &res->ms_p90);
        res->rate.samples_s = samples_per_s_at(res->global_batch, res->rate.ms);
        res->train_valid = 1;
        res->train_loss = m->loss_running[metrics_slot(n - 1)];
        res->train_acc = metrics_train_acc_last_epoch(m);
        loss_curve(res, m);
    }
    if (m->nepochs > 0 && m->test_total[m->nepochs - 1] > 0) {
        res->test_valid = 1;
        res->test_acc = 100.0 * m->test_correct[m->nepochs - 1] / (double)m->test_total[m->nepochs - 1];
    }
    res->lr = m->lr_last;
    res->lr_valid = m->lr_valid;
    res->threshold_step = m->threshold_step;
    res->threshold_epoch = m->threshold_epoch >= 0 ? m->threshold_epoch + 1 : -1; /* 1-based, as the UI counts epochs */
    res->epochs_done = m->nepochs;
    res->replicas_checked = m->replicas_checked;
    res->replicas_diverged_at = m->replicas_diverged_at;
    return 0;
}

void result_breakdowns(struct run_result *res)
{
    memset(&res->b, 0, sizeof(res->b));
    res->gpu_view = res->idle_split_valid = 0;
    res->host_wait_ns = res->kernel_wait_ns = res->other_idle_ns = 0;
    res->coll_ms = res->compute_ms = 0;
    res->desched_pct = 0;
    res->desched_valid = res->nranks > 0;
    double desched_ns = 0; /* (each rank's share of its wall, weighed by that wall) */
    for (int i = 0; i < res->nranks; i++) {
        struct rank_result *rr = &res->ranks[i];
        breakdown_split(&rr->b, &rr->split);
        rr->coll_pct = breakdown_pct(rr->b.coll_ns, rr->b.wall_ns);
        res->coll_ms += rr->coll_ms / res->nranks;
        res->compute_ms += rr->compute_ms / res->nranks;
        desched_ns += rr->desched_pct / 100.0 * (double)rr->b.wall_ns;
        res->desched_valid &= rr->desched_valid;
        breakdown_add(&res->b, &rr->b);
        res->gpu_view |= rr->gpu_view;
        res->idle_split_valid |= rr->idle_split_valid;
        res->host_wait_ns += rr->host_wait_ns;
        res->kernel_wait_ns += rr->kernel_wait_ns;
        res->other_idle_ns += rr->other_idle_ns;
    }
    breakdown_split(&res->b, &res->split);
    res->coll_pct = breakdown_pct(res->b.coll_ns, res->b.wall_ns);
    res->desched_pct = res->b.wall_ns > 0 ? 100.0 * desched_ns / (double)res->b.wall_ns : 0;
}

static void mix_pcts(const int64_t *ns, double *pct)
{
    int64_t all = 0;
    for (int m = 1; m < KERNEL_MIXES; m++)
        all += ns[m];
    for (int m = 0; m < KERNEL_MIXES; m++)
        pct[m] = all > 0 && m > 0 ? 100.0 * (double)ns[m] / (double)all : 0;
}

void result_kernels(struct run_result *res)
{
    memset(res->kernel_mix_ns, 0, sizeof(res->kernel_mix_ns));
    res->kernels_valid = 0;
    for (int i = 0; i < res->nranks; i++) {
        struct kernel_table *k = &res->ranks[i].kernels;
        if (!res->ranks[i].kernels_valid)
            continue;
        res->kernels_valid = 1;
        mix_pcts(k->mix_ns, k->mix_pct);
        for (int m = 0; m < KERNEL_MIXES; m++)
            res->kernel_mix_ns[m] += k->mix_ns[m];
        for (int j = 0; j < k->nrows; j++) {
            struct kernel_row *row = &k->rows[j];
            int64_t all = k->type_ns[row->type];
            row->share_pct = all > 0 ? 100.0 * (double)row->sum_ns / (double)all : 0;
            row->mean_us = row->count ? (double)row->sum_ns / 1e3 / (double)row->count : 0;
        }
    }
    mix_pcts(res->kernel_mix_ns, res->kernel_mix_pct);
}

void result_memcpy(struct run_result *res)
{
    memset(&res->memcpy, 0, sizeof(res->memcpy));
    res->memcpy_valid = 0;
    for (int i = 0; i < res->nranks; i++) {
        if (!res->ranks[i].memcpy_valid)
            continue;
        res->memcpy_valid = 1;
        memcpy_table_rates(&res->ranks[i].memcpy);
        memcpy_table_add(&res->memcpy, &res->ranks[i].memcpy);
    }
    memcpy_table_rates(&res->memcpy);
}

void result_idle(struct run_result *res)
{
    res->idle_valid = 0;
    for (int i = 0; i < res->nranks; i++) {
        if (!res->ranks[i].idle_valid)
            continue;
        res->idle_valid = 1;
        idle_table_rates(&res->ranks[i].idle);
    }
}

void result_critpath(struct run_result *res)
{
    res->critpath_valid = 0;
    for (int i = 0; i < res->nranks; i++)
        res->critpath_valid |= res->ranks[i].critpath_valid;
}

void result_memtl(struct run_result *res)
{
    res->memtl_valid = 0;
    for (int i = 0; i < res->nranks; i++)
        res->memtl_valid |= res->ranks[i].memtl_valid;
}

void result_queue(struct run_result *res)
{
    res->queue_valid = 0;
    for (int i = 0; i < res->nranks; i++) {
        if (!res->ranks[i].queue_valid)
            continue;
        res->queue_valid = 1;
        queue_table_stats(&res->ranks[i].queue);
    }
}

void result_launch(struct run_result *res)
{
    memset(&res->launch, 0, sizeof(res->launch));
    res->launch_valid = 0;
    for (int i = 0; i < res->nranks; i++) {
        if (!res->ranks[i].launch_valid)
            continue;
        res->launch_valid = 1;
        launch_table_rates(&res->ranks[i].launch);
        launch_table_add(&res->launch, &res->ranks[i].launch);
    }
    launch_table_rates(&res->launch);
}

void result_per_epoch(struct run_result *res, long steps_per_epoch)
{
    res->steps_per_epoch = steps_per_epoch;
    res->epoch_valid = steps_per_epoch > 0;
    double k = res->epoch_valid ? (double)steps_per_epoch / 1e3 : 0; /* ms per step to s per epoch */
    res->compute_s_epoch = res->compute_ms * k;
    res->comm_s_epoch = res->coll_ms * k;
    for (int i = 0; i < res->nranks; i++) {
        res->ranks[i].compute_s_epoch = res->ranks[i].compute_ms * k;
        res->ranks[i].comm_s_epoch = res->ranks[i].coll_ms * k;
    }
}

/* --parallel model|pipeline: every stage of a replica sees its whole
 * batch, and what each stage holds and sends; with --dp, each stage's
 * figures are the mean over its copies (rank d x S + s is copy d of stage
 * s). */
static void stage_results(struct run_result *res, const struct run *r)
{
    res->global_batch = r->global_batch;
    res->rate.samples_s = samples_per_s_at(res->global_batch, res->rate.ms);
    int first[64], last[64];
    double mem[64][SMEM_KINDS];
    for (int i = 0; i < r->world && i < 64; i++) {
        first[i] = r->ranks[i].stage_first;
        last[i] = r->ranks[i].stage_end - 1;
        memcpy(mem[i], r->ranks[i].stage_mem, sizeof(mem[i]));
    }
    result_stages(res, r->world, first, last, (const double(*)[SMEM_KINDS])mem);
}

void result_stages(struct run_result *res, int world, const int *first, const int *last,
                   const double (*mem)[SMEM_KINDS])
{
    res->nstages = 0;
    if (world > 64 || res->nranks < world)
        return;
    for (int i = 0; i < world; i++)
        if (last[i] < first[i])
            return; /* a rank failed before it knew its stage */
    int D = run_replicas(&res->cfg), S = world / D;
    if (S < 1)
        return;
    res->nstages = S;
    for (int s = 0; s < res->nstages; s++) {
        struct stage_result *st = &res->stage[s];
        memset(st, 0, sizeof(*st));
        st->first = first[s];
        st->last = last[s];
        for (int k = 0; k < SMEM_KINDS; k++) {
            st->mem_bytes[k] = mem[s][k];
            st->mem_total_bytes += mem[s][k];
        }
        st->live_mb = mem[s][SMEM_ACTS] / 1e6;
        for (int d = 0; d < D; d++) {
            const struct rank_result *rr = &res->ranks[d * S + s];
            /* (each step's loss broadcast sends a few bytes more: not
             * activations; --dp's average of the gradients all of its) */
            st->sent_mb += (rr->steps > 0 ? (double)rr->traffic.tx / 1e6 / (double)rr->steps : 0) / D;
            st->compute_pct += breakdown_pct(rr->b.compute_ns, rr->b.wall_ns) / D;
            st->idle_pct += breakdown_pct(rr->b.idle_ns, rr->b.wall_ns) / D;
        }
    }
}

int result_from_run(struct run_result *res, struct run *r)
{
    memset(res, 0, sizeof(*res));
    if (result_from_metrics(res, &r->metrics, r->local_batch, r->world) != 0)
        return -1;
    res->cfg = r->cfg;
    res->compress_valid = 1;
    res->precision_valid = 1;
    res->threads_per_rank = r->cfg.threads_per_rank;
    res->classes = run_classes(&r->cfg, r->train->h, r->train->w, r->train->classes); /* the model's outputs */
    snprintf(res->dataset, sizeof(res->dataset), "%s", r->train->name);
    snprintf(res->device, sizeof(res->device), "%s", r->devops->name);
    snprintf(res->backend, sizeof(res->backend), "%s", r->backend);
    snprintf(res->note, sizeof(res->note), "%s", r->note);
    res->cupti_valid = r->cupti;
    res->cupti_ms = (double)r->cupti_overhead_ns / 1e6;
    res->cupti_lost = r->cupti_dropped;
    res->cupti_gap_ms = (int)(r->cupti_gap_ns / 1000000);
    res->cupti_gap_valid = 1;
    res->state = r->state;
    snprintf(res->error, sizeof(res->error), "%s", r->err);
    res->wall_s = (double)((r->t_end_ns ? r->t_end_ns : probe_now_ns()) - r->t_start_ns) / 1e9;
    res->wall_valid = 1;
    result_per_epoch(res, r->steps_per_epoch);
    res->lr_base = r->cfg.lr;
    res->lr_peak = run_lr_peak(&r->cfg);
    res->lr_peak_valid = 1;
    res->params_total = r->ranks[0].nparams_total;
    res->params_trainable = r->ranks[0].nparams_trainable;
    res->flops_per_sample = r->ranks[0].flops_per_sample;
    res->params_valid = 1;
    for (int i = 0; i < r->world; i++) {
        struct rank_result *q = &res->ranks[i];
        snprintf(q->device, sizeof(q->device), "%s", r->ranks[i].dev.name[0] ? r->ranks[i].dev.name : "cpu");
        q->mem.now = atomic_load(&r->ranks[i].mem.now);
        q->mem.peak = atomic_load(&r->ranks[i].mem.peak);
        q->mem.valid = q->mem.peak > 0;
    }
    predict(res, r);
    predict_scaling(res, r);
    if (train_mode_has(&r->cfg, MODE_STAGED))
        stage_results(res, r);
    result_staged_sends(res);
    result_timeline(res, &r->metrics);
    return 0;
}

void result_staged_sends(struct run_result *res)
{
    if (!run_sends_only(&res->cfg))
        return;
    res->traffic.busbw_valid = res->coll_valid = res->pred_valid = 0;
    res->traffic.busbw_gbps = 0;
    for (int i = 0; i < res->nranks; i++) {
        res->ranks[i].traffic.busbw_valid = res->ranks[i].coll_valid = 0;
        res->ranks[i].traffic.busbw_gbps = 0;
    }
}

void result_free(struct run_result *res)
{
    for (int i = 0; res->ranks && i < res->nranks; i++)
        kernel_table_free(&res->ranks[i].kernels);
    free(res->ranks);
    res->ranks = NULL;
    whatif_table_free(&res->colls);
}

const char *scaling_name(int scaling)
{
    static const char *const names[] = {"n/a", "strong", "weak", "other", "baseline"};
    return scaling >= 0 && scaling <= SCALING_BASE ? names[scaling] : "n/a";
}

/* (the stages of a replica all work on its whole batch) */
int rep_per_rank_batch(const struct run_result *r)
{
    if (train_mode_has(&r->cfg, MODE_STAGED))
        return r->global_batch / train_mode_replicas(&r->cfg, r->world);
    return r->world > 0 ? r->global_batch / r->world : 0;
}

/* How res compares with base: the same global batch is strong scaling,
 * the same per-rank batch weak scaling. */
static int scaling_of(const struct run_result *r, const struct run_result *base)
{
    if (r->global_batch == base->global_batch)
        return SCALING_STRONG;
    if (rep_per_rank_batch(r) == rep_per_rank_batch(base))
        return SCALING_WEAK;
    return SCALING_OTHER;
}

/* The best 1-rank result of r's model matching `batch` (the global batch
 * for strong scaling, the per-rank one for weak): of the same strategy
 * first, then `single`, then any. */
static int find_one_rank(const struct run_result *res, int n, const struct run_result *r, int batch, int strategy)
{
    int best = -1, best_rank = 0;
    for (int j = 0; j < n; j++) {
        const struct run_result *c = &res[j];
        if (c->world != 1 || strcmp(c->cfg.model, r->cfg.model) || c->global_batch != batch || !(c->rate.samples_s > 0))
            continue;
        if (strategy >= 0 && c->cfg.strategy != strategy)
            continue;
        /* the same way of training first (a pipeline's 1-rank run is one
         * stage of the same micro-batches), then the same strategy, then single */
        int rank = c->cfg.strategy == r->cfg.strategy ? 3 : sync_has(c->cfg.strategy, SYNC_ONE_RANK) ? 2 : 1;
        if (train_mode_at(&c->cfg) == train_mode_at(&r->cfg))
            rank += train_mode_micro(&c->cfg) == train_mode_micro(&r->cfg) ? 20 : 10;
        if (rank > best_rank) {
            best = j;
            best_rank = rank;
        }
    }
    return best;
}

static int pick_base(const struct run_result *res, int n, int i, int baseline)
{
    const struct run_result *r = &res[i];
    switch (baseline) {
    case BASELINE_SINGLE:
        for (int j = 0; j < n; j++)
            if (sync_has(res[j].cfg.strategy, SYNC_ONE_RANK) && !strcmp(res[j].cfg.model, r->cfg.model) &&
                res[j].global_batch == r->global_batch && res[j].rate.samples_s > 0)
                return j;
        return -1;
    case BASELINE_RANKS1:
        return find_one_rank(res, n, r, rep_per_rank_batch(r), r->cfg.strategy);
    case BASELINE_AUTO: {
        if (r->world == 1 && r->rate.samples_s > 0)
            return i; /* itself */
        int j = find_one_rank(res, n, r, r->global_batch, -1);
        return j >= 0 ? j : find_one_rank(res, n, r, rep_per_rank_batch(r), -1);
    }
    default:
        return baseline < n && res[baseline].rate.samples_s > 0 ? baseline : -1;
    }
}

void results_compare(struct run_result *res, int n, int baseline)
{
    for (int i = 0; i < n; i++) {
        struct run_result *r = &res[i];
        int b = pick_base(res, n, i, baseline);
        r->speedup_valid = b >= 0 && r->rate.samples_s > 0;
        r->base_run = b;
        r->scaling = SCALING_NONE;
        r->speedup_marked = 0;
        if (!r->speedup_valid)
            continue;
        const struct run_result *base = &res[b];
        r->speedup = r->rate.samples_s / base->rate.samples_s;
        r->efficiency = 100.0 * r->speedup * base->world / r->world;
        r->scaling = b == i ? SCALING_BASE : scaling_of(r, base);
        r->speedup_marked = b != i && r->desched_valid && base->desched_valid &&
                            fabs(r->desched_pct - base->desched_pct) > RESULT_DESCHED_GAP;
    }
}

void results_speedup(struct run_result *res, int n)
{
    results_compare(res, n, BASELINE_AUTO);
}

static int by_samples(const void *a, const void *b)
{
    double x = (*(struct run_result *const *)a)->rate.samples_s, y = (*(struct run_result *const *)b)->rate.samples_s;
    return (x > y) - (x < y);
}

int results_collapse_repeats(struct run_result *res, int n, int repeat)
{
    if (repeat <= 1)
        return n;
    results_compare(res, n, BASELINE_AUTO); /* for samples_per_s_p50 */
    int kept = 0;
    for (int g = 0; g * repeat < n; g++) {
        int first = g * repeat, cnt = n - first < repeat ? n - first : repeat;
        struct run_result *order[1000];
        for (int k = 0; k < cnt; k++)
            order[k] = &res[first + k];
        qsort(order, (size_t)cnt, sizeof(order[0]), by_samples);
        struct run_result med = *order[(cnt - 1) / 2];
        med.repeats = cnt;
        med.repeat_sps_min = order[0]->rate.samples_s;
        med.repeat_sps_max = order[cnt - 1]->rate.samples_s;
        for (int k = 0; k < cnt; k++)
            if (order[k] != order[(cnt - 1) / 2])
                result_free(order[k]);
        res[kept++] = med;
    }
    return kept;
}

/* ---- formatting -------------------------------------------------------- */

const char *result_comm(const struct run_result *r)
{
    return r->world == 1 ? "none" : (r->backend[0] ? r->backend : "n/a");
}

int result_efficiency_note(const struct run_result *res, int i, char *buf, size_t n)
{
    const struct run_result *r = &res[i];
    if (!r->speedup_valid || r->base_run == i || r->base_run < 0)
        return 0;
    const struct run_result *base = &res[r->base_run];
    if (r->speedup_marked) {
        snprintf(buf, n,
                 "speedup %.2fx! against run %d: its ranks waited for a core %.0f%% of the time, this run's %.0f%%; "
                 "the machine's load differs between the two, and the speedup measures it as much as the strategy",
                 r->speedup, r->base_run, base->desched_pct, r->desched_pct);
        return 1;
    }
    if (!(r->efficiency > 100.5))
        return 0;
    char why[256];
    int threads = r->world * r->threads_per_rank, base_threads = base->world * base->threads_per_rank;
    long few = r->steps < base->steps ? r->steps : base->steps;
    if (few - 1 < 10)
        snprintf(why, sizeof(why), "%s run timed only %ld step%s (the first is left out): too few to compare",
                 r->steps <= base->steps ? "this" : "the baseline", few - 1, few - 1 == 1 ? "" : "s");
    else if (base->ms_valid && base->rate.ms > 0 && base->ms_p90 / base->rate.ms > 1.5)
        snprintf(why, sizeof(why), "run %d's steps were noisy (p90/p50 = %.1f)", r->base_run,
                 base->ms_p90 / base->rate.ms);
    else if (threads > base_threads * r->world / (base->world ? base->world : 1))
        snprintf(why, sizeof(why), "run %d ran %d compute threads, run %d %d", i, threads, r->base_run, base_threads);
    else if (r->scaling == SCALING_STRONG)
        snprintf(why, sizeof(why), "each rank's smaller share of the batch fits the caches better");
    else
        snprintf(why, sizeof(why), "step-time noise between the runs (--repeat gives the spread)");
    snprintf(buf, n, "efficiency %.0f%% against run %d is above 100%%; likely cause: %s", r->efficiency, r->base_run,
             why);
    return 1;
}

/* The run of res[0..n) that measured what run i's prediction for k ranks
 * predicts: the same model, data, strategy and per-rank batch on k ranks
 * (and the same bucket cap and overlap); -1 if none. */
int rep_measured_for(const struct run_result *res, int n, int i, int k)
{
    const struct run_result *p = &res[i];
    for (int j = 0; j < n; j++) {
        const struct run_result *q = &res[j];
        if (q->world != k || !q->ms_valid || q->rate.ms <= 0 || strcmp(q->cfg.model, p->cfg.model) ||
            strcmp(q->dataset, p->dataset) || q->cfg.batch_size != p->cfg.batch_size ||
            train_mode_at(&q->cfg) != train_mode_at(&p->cfg))
            continue;
        if (!train_mode_has(&p->cfg, MODE_STAGED)
                ? q->cfg.strategy == p->cfg.strategy && q->cfg.bucket_mb == p->cfg.bucket_mb &&
                      q->cfg.overlap == p->cfg.overlap
                : q->cfg.micro_batches == p->cfg.micro_batches && q->cfg.schedule == p->cfg.schedule)
            return j;
    }
    return -1;
}
