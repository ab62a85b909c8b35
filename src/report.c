/* report.c - results, live or replayed, and the one report (text, CSV,
 * JSON, markdown). The JSON schema is documented in the README; keep the
 * two in step. */
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
#include "run.h"
#include "sync.h"
#include "trace_analyze.h"

static void pcts(const struct breakdown *b, double *compute, double *comm, double *data, double *idle, double *overlap)
{
    *compute = breakdown_pct(b->compute_ns, b->wall_ns);
    *comm = breakdown_pct(b->comm_ns, b->wall_ns);
    *data = breakdown_pct(b->data_ns, b->wall_ns);
    *idle = breakdown_pct(b->idle_ns, b->wall_ns);
    *overlap = breakdown_overlap_pct(b);
}

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
    double rest = res->ms_p50 - M * compute;
    struct predict_link link = {0};
    struct cost_fit f;
    char path[1024];
    cost_model_path(path, sizeof(path));
    int have = 1;
    if (c->link_bw > 0) {
        link = (struct predict_link){.alpha_us = c->link_lat * 1e6, .beta_us_per_byte = 1e6 / c->link_bw};
        snprintf(res->spred_link, sizeof(res->spred_link), "--link %.4g GB/s, %.4g us: a message between stages",
                 c->link_bw / 1e9, c->link_lat * 1e6);
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
        sp->speedup = res->ms_p50 / step;
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
    if (train_mode_has(c, MODE_STAGED) && !r->on_gpu && res->ms_p50 > 0 && res->steps >= 2) {
        predict_stages(res, r, m);
        return;
    }
    if (sync_has(c->strategy, SYNC_ONE_RANK)) {
        snprintf(res->spred_note, sizeof(res->spred_note), "--predict: %s runs one rank whatever the ranks",
                 strategy_name(c->strategy));
        return;
    }
    if (r->on_gpu || res->ms_p50 <= 0 || res->steps < 2) {
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
    in.rest_ms = res->ms_p50 - in.fwd_ms - in.bwd_ms;
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
    if (c->link_bw > 0)
        snprintf(res->spred_link, sizeof(res->spred_link), "--link %.4g GB/s, %.4g us: %s%s", c->link_bw / 1e9,
                 c->link_lat * 1e6, through_root ? "the root's messages one after another" : "ring allreduce", wire);
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
        if (c->link_bw > 0) {
            link = predict_ring_link(c->link_bw, c->link_lat, k);
            /* through the root: its K-1 messages one after another */
            for (int q = 0; q < 4; q++) {
                rooted[q] = (struct predict_link){.alpha_us = (k - 1) * c->link_lat * 1e6,
                                                  .beta_us_per_byte = (k - 1) * 1e6 / c->link_bw};
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
        sp->speedup = k * res->ms_p50 / step;
        sp->efficiency = 100.0 * sp->speedup / k;
    }
out:
    free(fwd);
    free(bwd);
    free(ready);
    free(after);
    free(t);
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
        metrics_step_stats(m, i, &rr->ms_mean, &rr->ms_p50, &rr->ms_p90);
        rr->ms_valid = 1;
        rr->samples_per_s = samples_per_s_at(local_batch, rr->ms_p50);
        rr->samples_valid = local_batch > 0;
        rr->b = rm->nsteps > 1 ? rm->steady : rm->total;
        long bsteps = rm->nsteps > 1 ? (long)rm->nsteps - 1 : (long)rm->nsteps; /* the steps rr->b covers */
        rr->coll_ms = bsteps > 0 ? (double)rr->b.coll_ns / 1e6 / (double)bsteps : 0;
        rr->compute_ms = bsteps > 0 ? (double)rr->b.compute_ns / 1e6 / (double)bsteps : 0;
        rr->desched_valid = rm->desched_valid;
        rr->desched_pct = breakdown_pct(rm->desched_ns, rm->steady.wall_ns);
        rr->gpu_view = rm->gpu_view;
        rr->bytes_tx = rm->bytes_tx;
        rr->bytes_rx = rm->bytes_rx;
        rr->bytes_valid = 1;
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
        rr->busbw_valid = rxfer > 0 && rbus > 0;
        rr->busbw_gbps = rr->busbw_valid ? rbus / (double)rxfer : 0;
        rr->algbw_gbps = rr->busbw_valid ? ralg / (double)rxfer : 0;
        rr->dropped = rm->dropped + rm->late;
        rr->dropped_valid = 1;
        res->bytes_sent += rm->bytes_tx;
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
    res->bytes_sent /= (uint64_t)m->world;
    res->bytes_valid = 1;
    res->xfer_ms /= m->world;
    res->sync_ms /= m->world;
    res->xfer_step_ms /= m->world;
    res->sync_step_ms /= m->world;
    res->coll_valid = 1;
    res->dropped_valid = 1;
    res->busbw_valid = xfer > 0 && bus > 0;
    res->busbw_gbps = res->busbw_valid ? bus / (double)xfer : 0;
    res->algbw_gbps = res->busbw_valid ? alg / (double)xfer : 0;
    result_breakdowns(res);

    /* the run's step time: per step, the slowest rank */
    size_t n = m->steps_done;
    res->steps = (long)n;
    res->ms_valid = 1;
    res->samples_valid = res->batch_valid;
    if (n > 0) {
        metrics_run_step_stats(m, &res->ms_mean, &res->ms_p50, &res->ms_p90);
        res->samples_per_s = samples_per_s_at(res->global_batch, res->ms_p50);
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
        pcts(&rr->b, &rr->compute_pct, &rr->comm_pct, &rr->data_pct, &rr->idle_pct, &rr->overlap_pct);
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
    pcts(&res->b, &res->compute_pct, &res->comm_pct, &res->data_pct, &res->idle_pct, &res->overlap_pct);
    res->coll_pct = breakdown_pct(res->b.coll_ns, res->b.wall_ns);
    res->desched_pct = res->b.wall_ns > 0 ? 100.0 * desched_ns / (double)res->b.wall_ns : 0;
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
    res->samples_per_s = samples_per_s_at(res->global_batch, res->ms_p50);
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
            st->sent_mb += (rr->steps > 0 ? (double)rr->bytes_tx / 1e6 / (double)rr->steps : 0) / D;
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
        q->mem_now = atomic_load(&r->ranks[i].mem.now);
        q->mem_peak = atomic_load(&r->ranks[i].mem.peak);
        q->mem_valid = q->mem_peak > 0;
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
    res->busbw_valid = res->coll_valid = res->pred_valid = 0;
    res->busbw_gbps = 0;
    for (int i = 0; i < res->nranks; i++) {
        res->ranks[i].busbw_valid = res->ranks[i].coll_valid = 0;
        res->ranks[i].busbw_gbps = 0;
    }
}

void result_free(struct run_result *res)
{
    free(res->ranks);
    res->ranks = NULL;
}

const char *scaling_name(int scaling)
{
    static const char *const names[] = {"n/a", "strong", "weak", "other", "baseline"};
    return scaling >= 0 && scaling <= SCALING_BASE ? names[scaling] : "n/a";
}

/* (the stages of a replica all work on its whole batch) */
static int per_rank_batch(const struct run_result *r)
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
    if (per_rank_batch(r) == per_rank_batch(base))
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
        if (c->world != 1 || strcmp(c->cfg.model, r->cfg.model) || c->global_batch != batch ||
            !(c->samples_per_s_p50 > 0))
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
                res[j].global_batch == r->global_batch && res[j].samples_per_s_p50 > 0)
                return j;
        return -1;
    case BASELINE_RANKS1:
        return find_one_rank(res, n, r, per_rank_batch(r), r->cfg.strategy);
    case BASELINE_AUTO: {
        if (r->world == 1 && r->samples_per_s_p50 > 0)
            return i; /* itself */
        int j = find_one_rank(res, n, r, r->global_batch, -1);
        return j >= 0 ? j : find_one_rank(res, n, r, per_rank_batch(r), -1);
    }
    default:
        return baseline < n && res[baseline].samples_per_s_p50 > 0 ? baseline : -1;
    }
}

void results_compare(struct run_result *res, int n, int baseline)
{
    for (int i = 0; i < n; i++)
        res[i].samples_per_s_p50 =
            res[i].ms_valid && res[i].batch_valid ? samples_per_s_at(res[i].global_batch, res[i].ms_p50) : 0;
    for (int i = 0; i < n; i++) {
        struct run_result *r = &res[i];
        int b = pick_base(res, n, i, baseline);
        r->speedup_valid = b >= 0 && r->samples_per_s_p50 > 0;
        r->base_run = b;
        r->scaling = SCALING_NONE;
        if (!r->speedup_valid)
            continue;
        const struct run_result *base = &res[b];
        r->speedup = r->samples_per_s_p50 / base->samples_per_s_p50;
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
    double x = (*(struct run_result *const *)a)->samples_per_s_p50,
           y = (*(struct run_result *const *)b)->samples_per_s_p50;
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
        med.repeat_sps_min = order[0]->samples_per_s_p50;
        med.repeat_sps_max = order[cnt - 1]->samples_per_s_p50;
        for (int k = 0; k < cnt; k++)
            if (order[k] != order[(cnt - 1) / 2])
                result_free(order[k]);
        res[kept++] = med;
    }
    return kept;
}

/* ---- formatting -------------------------------------------------------- */

static void human_bytes(char *buf, size_t n, double b)
{
    const char *u[] = {"B", "KB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000.0 && i < 4) {
        b /= 1000.0;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static const char *threshold_str(char *buf, size_t n, const struct run_result *r)
{
    if (r->cfg.loss_threshold <= 0)
        snprintf(buf, n, "-");
    else if (r->threshold_step < 0)
        snprintf(buf, n, "not reached");
    else
        snprintf(buf, n, "e%d s%ld", r->threshold_epoch, r->threshold_step);
    return buf;
}

/* The strategy as tables show it: "ddp+fp16" when gradients are
 * compressed; "model", or "pipe-1f1b/4" (schedule, micro-batches), for the
 * layers split into stages. */
static const char *strat_label(const struct run_result *r)
{
    static char buf[SYNC_KINDS][3][32], staged[32];
    if (train_mode_has(&r->cfg, MODE_STAGED))
        return train_mode_label(&r->cfg, staged, sizeof(staged));
    if (!sync_ops_of(r->cfg.strategy))
        return "n/a";
    int k = r->cfg.strategy, h = r->compress_valid ? r->cfg.grad_compress : 0;
    h = h >= 0 && h <= 2 ? h : 0;
    snprintf(buf[k][h], sizeof(buf[k][h]), "%s%s%s", strategy_name(r->cfg.strategy), h ? "+" : "",
             h ? w16_name(h) : "");
    return buf[k][h];
}

/* --grad-compress's value as the run trained ("none", "fp16", "bf16"), or
 * NULL when unknown. */
static const char *compress_name(const struct run_result *r)
{
    return !r->compress_valid ? NULL : r->cfg.grad_compress ? w16_name(r->cfg.grad_compress) : "none";
}

/* --precision's name, or NULL when unknown (a trace that does not say). */
static const char *prec_name(const struct run_result *r)
{
    return r->precision_valid ? precision_name(r->cfg.precision) : NULL;
}

/* The strategy's name ("model" or "pipeline" for stages), or NULL when
 * unknown. */
static const char *strat_name(const struct run_result *r)
{
    if (train_mode_has(&r->cfg, MODE_STAGED))
        return parallel_name(r->cfg.parallel);
    return sync_ops_of(r->cfg.strategy) ? strategy_name(r->cfg.strategy) : NULL;
}

static const char *or_na(const char *s)
{
    return s && s[0] ? s : "n/a";
}

/* A figure as text, or n/a. */
static const char *fig(char *buf, size_t n, const char *fmt, double v, int valid)
{
    if (valid)
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "n/a");
    return buf;
}

/* A rate to three significant figures at least (8.43, 22.1, 123, 4567):
 * enough to work a speedup out again from the figures beside it. */
static const char *fig3(char *buf, size_t n, double v, int valid)
{
    int decimals = 0;
    for (double a = fabs(v); valid && a > 0 && a < 100 && decimals < 6; a *= 10)
        decimals++;
    if (valid)
        snprintf(buf, n, "%.*f", decimals, v);
    else
        snprintf(buf, n, "n/a");
    return buf;
}

const char *result_comm(const struct run_result *r)
{
    return r->world == 1 ? "none" : or_na(r->backend);
}

static double split_pct(int64_t part_ns, const struct breakdown *b)
{
    return breakdown_pct(part_ns, b->wall_ns);
}

/* The steps a PyTorch trace's figures cover, as a report names them:
 * --window's rule, "whole" where its steps held no device work, "" for
 * other runs. */
static const char *window_label(const struct trace_rule *rule, int whole)
{
    return !rule ? "" : whole ? "whole" : rule->name;
}

static const char *trace_state(const struct replay_source *src)
{
    return src->complete ? "" : src->truncated ? ", cut short" : ", unfinished";
}

/* The replayed runs' own per-rank figures: the view each rank was broken
 * down in and HTA's split of its idle time. */
static void write_trace_table(FILE *f, const struct run_result *res, int n, int md)
{
    fprintf(
        f,
        md ? "\nFrom the traces:\n\n| run | rank | view | host-wait %% | kernel-wait %% | other idle %% | rank from "
             "| window |\n|---:|---|---|---:|---:|---:|---|---|\n"
           : "\nfrom the traces:\n%3s %4s %-5s %10s %12s %11s %-9s %s\n",
        "run", "rank", "view", "host-wait%", "kernel-wait%", "other-idle%", "rank from", "window");
    for (int i = 0; i < n; i++) {
        if (!res[i].replay.valid)
            continue;
        for (int k = -1; k < res[i].nranks; k++) {
            const struct rank_result *q = k >= 0 ? &res[i].ranks[k] : NULL;
            const struct breakdown *b = q ? &q->b : &res[i].b;
            int split = q ? q->idle_split_valid : res[i].idle_split_valid;
            char who[16], hw[16], kw[16], ow[16];
            if (q)
                snprintf(who, sizeof(who), "%d", q->rank);
            else
                snprintf(who, sizeof(who), "all");
            fig(hw, sizeof(hw), "%.1f", split_pct(q ? q->host_wait_ns : res[i].host_wait_ns, b), split);
            fig(kw, sizeof(kw), "%.1f", split_pct(q ? q->kernel_wait_ns : res[i].kernel_wait_ns, b), split);
            fig(ow, sizeof(ow), "%.1f", split_pct(q ? q->other_idle_ns : res[i].other_idle_ns, b), split);
            fprintf(f, md ? "| %d | %s | %s | %s | %s | %s | %s | %s |\n" : "%3d %4s %-5s %10s %12s %11s %-9s %s\n", i,
                    who, (q ? q->gpu_view : res[i].gpu_view) ? "gpu" : "host", hw, kw, ow,
                    q && q->rank_from_valid ? trace_rank_from_name(q->rank_from) : "",
                    window_label(q ? q->window : res[i].window, q && q->window_whole));
        }
    }
}

/* ms per step from a total over the run */
static double per_step(double total_ms, long steps)
{
    return steps > 0 ? total_ms / (double)steps : 0;
}

/* "r0 strong": the run a speedup is against, and how they compare. */
static const char *vs_label(char *buf, size_t n, const struct run_result *r)
{
    if (!r->speedup_valid)
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "r%d %s", r->base_run, scaling_name(r->scaling));
    return buf;
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
    else if (base->ms_valid && base->ms_p50 > 0 && base->ms_p90 / base->ms_p50 > 1.5)
        snprintf(why, sizeof(why), "run %d's steps were noisy (p90/p50 = %.1f)", r->base_run,
                 base->ms_p90 / base->ms_p50);
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
static int measured_for(const struct run_result *res, int n, int i, int k)
{
    const struct run_result *p = &res[i];
    for (int j = 0; j < n; j++) {
        const struct run_result *q = &res[j];
        if (q->world != k || !q->ms_valid || q->ms_p50 <= 0 || strcmp(q->cfg.model, p->cfg.model) ||
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

/* Whether measured run q's ranks waited for a core 5% of their wall or
 * more: they shared the machine's cores. */
static int shared_cores(const struct run_result *q)
{
    return q->desched_valid && q->desched_pct >= 5.0;
}

/* --predict's table for run i: predicted against measured where a run of
 * the sweep measured it. */
static void write_prediction(FILE *f, const struct run_result *res, int n, int i, int md)
{
    const struct run_result *r = &res[i];
    if (train_mode_has(&r->cfg, MODE_STAGED))
        fprintf(f,
                "\nrun %d predicts %s parallelism over more stages, the batch of %d in %d micro-batch%s, a core "
                "per stage (compute as measured on 1 rank, boundaries from %s; ms per step):\n\n",
                i, parallel_name(r->cfg.parallel), r->cfg.batch_size, train_mode_micro(&r->cfg),
                train_mode_micro(&r->cfg) > 1 ? "es" : "", r->spred_link);
    else
        fprintf(f,
                "\nrun %d predicts %s on more ranks, each with its batch of %d and a core of its own (compute as "
                "measured on 1 rank, comm from %s; ms per step):\n\n",
                i, strategy_name(r->cfg.strategy), r->cfg.batch_size, r->spred_link);
    const char *head[] = {"ranks", "pred ms", "comm", "exposed", "speedup", "eff%", "measured", "error"};
    if (md) {
        for (int c = 0; c < 8; c++)
            fprintf(f, "| %s ", head[c]);
        fprintf(f, "|\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    } else {
        fprintf(f, "%6s %10s %9s %9s %8s %6s %10s %8s\n", head[0], head[1], head[2], head[3], head[4], head[5], head[6],
                head[7]);
    }
    int noted[CFG_MAX_PREDICT], nnoted = 0; /* measured runs on shared cores, for the footnotes */
    for (int k = 0; k < r->nspred; k++) {
        const struct scaling_pred *sp = &r->spred[k];
        int j = measured_for(res, n, i, sp->ranks);
        char c[6][32], meas[32], err[32];
        fig(c[0], sizeof(c[0]), "%.3f", sp->step_ms, sp->valid);
        fig(c[1], sizeof(c[1]), "%.3f", sp->comm_ms, sp->valid);
        fig(c[2], sizeof(c[2]), "%.3f", sp->exposed_ms, sp->valid);
        fig(c[3], sizeof(c[3]), "%.2fx", sp->speedup, sp->valid);
        fig(c[4], sizeof(c[4]), "%.1f", sp->efficiency, sp->valid);
        fig(meas, sizeof(meas), "%.3f", j >= 0 ? res[j].ms_p50 : 0, j >= 0);
        /* a measured run whose ranks waited for cores: marked (the
         * prediction gives each rank a core of its own) */
        int shared = j >= 0 && shared_cores(&res[j]);
        if (shared)
            noted[nnoted++] = j;
        fig(err, sizeof(err), shared ? "%+.1f%%*" : "%+.1f%%",
            j >= 0 ? 100.0 * (sp->step_ms - res[j].ms_p50) / res[j].ms_p50 : 0, j >= 0 && sp->valid);
        fprintf(f, md ? "| %d | %s | %s | %s | %s | %s | %s | %s |\n" : "%6d %10s %9s %9s %8s %6s %10s %8s\n",
                sp->ranks, c[0], c[1], c[2], c[3], c[4], meas, err);
    }
    for (int k = 0; k < nnoted; k++) {
        int j = noted[k], at = -1;
        for (int q = 0; q < r->nspred; q++)
            if (r->spred[q].ranks == res[j].world && r->spred[q].valid)
                at = q;
        /* sharing cores makes the measured step longer than a core per
         * rank would: it explains a prediction below the measure, not one
         * above it */
        int above = at >= 0 && r->spred[at].step_ms > res[j].ms_p50;
        fprintf(f,
                "\n*: run %d's %d ranks x %d thread%s waited for a core %.0f%% of the time: they shared this "
                "machine's cores, which the prediction (a core per rank) does not model; %s\n",
                j, res[j].world, res[j].threads_per_rank, res[j].threads_per_rank == 1 ? "" : "s", res[j].desched_pct,
                above ? "yet the prediction is above the measured step, which the shared cores do not explain"
                      : "so the prediction is below the measured step there");
    }
    int missing = 0;
    for (int k = 0; k < r->nspred; k++)
        missing += !r->spred[k].valid;
    if (missing)
        fprintf(f, "\n(n/a: no --bench-comm fit for that rank count; --link BW,LAT predicts any)\n");
}

/* A run's ranks as the run table gives them: "2 of 128" when the trace
 * held fewer ranks than its run had. */
static const char *ranks_cell(char *buf, size_t n, const struct run_result *r)
{
    if (r->nranks > 0 && r->nranks < r->world)
        snprintf(buf, n, "%d of %d", r->nranks, r->world);
    else
        snprintf(buf, n, "%d", r->world);
    return buf;
}

/* The text table's width for the ranks column: its heading's, or more. */
static int ranks_width(const struct run_result *res, int n)
{
    int w = 5;
    char buf[32];
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(ranks_cell(buf, sizeof(buf), &res[i]));
        w = len > w ? len : w;
    }
    return w;
}

/* The top table's heading row (rw: the ranks column's width in text). */
static void write_run_head(FILE *f, int md, int rw)
{
    if (md)
        fprintf(f,
                "| run | model | dataset | strategy | comm | precision | ranks | batch/rank | global | steps | wall s "
                "| ms/step | "
                "p50 | p90 | samples/s | speedup | eff %% | vs | compute %% | comm %% | coll %% | data %% | idle %% | "
                "overlap %% | desched %% | sent/rank | busbw GB/s | algbw GB/s | xfer ms/step | sync ms/step | "
                "pred ms/step | compute s/epoch | comm s/epoch | peak lr | train loss | train acc %% | test acc %% | "
                "loss < thr |\n"
                "|---:|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|--"
                "-:|---:|"
                "---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    else
        fprintf(f,
                "%3s %-13s %-14s %-17s %-9s %-4s %*s %6s %6s %6s %8s %8s %8s %8s %10s %7s %5s %-10s %8s %6s %6s "
                "%6s %6s %8s %8s %10s %7s %7s %9s %9s %9s %9s %9s %8s %7s %7s %7s %s\n",
                "run", "model", "dataset", "strategy", "comm", "prec", rw, "ranks", "b/rank", "global", "steps",
                "wall s", "ms/step", "p50", "p90", "samples/s", "speedup", "eff%", "vs", "compute%", "comm%", "coll%",
                "data%", "idle%", "overlap%", "desched%", "sent/rank", "busbw", "algbw", "xfer/step", "sync/step",
                "pred/step", "comp s/ep", "comm s/ep", "peak lr", "loss", "train%", "test%", "loss<thr");
}

/* Run i's row of the top table; kind: the table's kind of scaling, which
 * a run that is its own baseline takes (it is the same batch either way). */
static void write_run_row(FILE *f, const struct run_result *res, int i, int md, int kind, int rw)
{
    const struct run_result *r = &res[i];
    char rk[32], lb[16], gb[16], ws[24], ms[3][24], sps[24], sp[16], eff[16], vs[24], bw[16], ab[16], bytes[24], xf[24],
        sy[24], tl[16], ta[16], te[16], thr[32], pr[16], lr[16], ds[16], ce[24], me[24];
    fig(ds, sizeof(ds), "%.1f", r->desched_pct, r->desched_valid);
    fig(lb, sizeof(lb), "%.0f", (double)per_rank_batch(r), r->batch_valid);
    fig(gb, sizeof(gb), "%.0f", r->global_batch, r->batch_valid);
    fig(ws, sizeof(ws), "%.2f", r->wall_s, r->wall_valid);
    fig(ms[0], sizeof(ms[0]), "%.3f", r->ms_mean, r->ms_valid);
    fig(ms[1], sizeof(ms[1]), "%.3f", r->ms_p50, r->ms_valid);
    fig(ms[2], sizeof(ms[2]), "%.3f", r->ms_p90, r->ms_valid);
    fig3(sps, sizeof(sps), r->samples_per_s, r->samples_valid);
    fig(pr, sizeof(pr), "%.3f", per_step(r->pred_ms, r->steps), r->pred_valid);
    fig(sp, sizeof(sp), r->speedup_marked ? "%.2fx!" : "%.2fx", r->speedup, r->speedup_valid);
    fig(eff, sizeof(eff), "%.0f", r->efficiency, r->speedup_valid);
    if (r->speedup_valid && r->base_run == i && kind != SCALING_NONE)
        snprintf(vs, sizeof(vs), "r%d base", i);
    else
        vs_label(vs, sizeof(vs), r);
    fig(bw, sizeof(bw), "%.2f", r->busbw_gbps, r->busbw_valid);
    fig(ab, sizeof(ab), "%.2f", r->algbw_gbps, r->busbw_valid);
    if (r->bytes_valid)
        human_bytes(bytes, sizeof(bytes), (double)r->bytes_sent);
    else
        snprintf(bytes, sizeof(bytes), "n/a");
    fig(xf, sizeof(xf), "%.3f", r->xfer_step_ms, r->coll_valid);
    fig(sy, sizeof(sy), "%.3f", r->sync_step_ms, r->coll_valid);
    fig(ce, sizeof(ce), "%.3f", r->compute_s_epoch, r->epoch_valid);
    fig(me, sizeof(me), "%.3f", r->comm_s_epoch, r->epoch_valid && r->coll_valid);
    fig(lr, sizeof(lr), "%.4g", r->lr_peak, r->lr_peak_valid);
    fig(tl, sizeof(tl), "%.4f", r->train_loss, r->train_valid);
    fig(ta, sizeof(ta), "%.2f", r->train_acc, r->train_valid);
    fig(te, sizeof(te), "%.2f", r->test_acc, r->test_valid);
    threshold_str(thr, sizeof(thr), r);
    fprintf(
        f,
        md ? "| %d | %s | %s | %s | %s | %s | %.*s | %s | %s | %ld | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | "
             "%.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
             "%s |\n"
           : "%3d %-13s %-14s %-17s %-9s %-4s %*s %6s %6s %6ld %8s %8s %8s %8s %10s %7s %5s %-10s %8.1f %6.1f "
             "%6.1f %6.1f %6.1f %8.1f %8s %10s %7s %7s %9s %9s %9s %9s %9s %8s %7s %7s %7s %s\n",
        /* (the ranks: padded in text; markdown's %.*s takes the same int) */
        i, or_na(r->cfg.model), or_na(r->dataset), strat_label(r), result_comm(r), or_na(prec_name(r)), md ? 32 : rw,
        ranks_cell(rk, sizeof(rk), r), lb, gb, r->steps, ws, ms[0], ms[1], ms[2], sps, sp, eff, vs, r->compute_pct,
        r->comm_pct, r->coll_pct, r->data_pct, r->idle_pct, r->overlap_pct, ds, bytes, bw, ab, xf, sy, pr, ce, me, lr,
        tl, ta, te, thr);
}

/* The runs, one table per kind of scaling: a speedup against the same
 * global batch (strong) and one against the same per-rank batch (weak)
 * answer different questions, so they never share a table; each table
 * names its kind. A run that is its own baseline (a 1-rank run) goes in
 * every table whose runs it is the baseline of; a run with no speedup, in
 * the first. With no speedup against another run, one table, no heading. */
static void write_run_tables(FILE *f, const struct run_result *res, int n, int md)
{
    static const int kinds[] = {SCALING_STRONG, SCALING_WEAK, SCALING_OTHER};
    static const char *const heading[] = {
        [SCALING_STRONG] = "strong scaling: each speedup against the run vs names, on the same global batch",
        [SCALING_WEAK] = "weak scaling: each speedup against the run vs names, on the same batch per rank",
        [SCALING_OTHER] = "each speedup against the run vs names, on neither the same global batch nor the same "
                          "batch per rank",
    };
    int present[SCALING_OTHER + 1] = {0}, ntables = 0, rw = ranks_width(res, n);
    for (int i = 0; i < n; i++)
        if (res[i].speedup_valid && res[i].base_run != i && !present[res[i].scaling]++)
            ntables++;
    if (ntables == 0) {
        write_run_head(f, md, rw);
        for (int i = 0; i < n; i++)
            write_run_row(f, res, i, md, SCALING_NONE, rw);
        return;
    }
    int first = 1;
    for (size_t t = 0; t < sizeof(kinds) / sizeof(kinds[0]); t++) {
        int kind = kinds[t];
        if (!present[kind])
            continue;
        if (md)
            fprintf(f, "%s**%c%s**\n\n", first ? "" : "\n", toupper((unsigned char)heading[kind][0]),
                    heading[kind] + 1);
        else
            fprintf(f, "%s%s:\n", first ? "" : "\n", heading[kind]);
        write_run_head(f, md, rw);
        for (int i = 0; i < n; i++) {
            const struct run_result *r = &res[i];
            int in = r->speedup_valid && r->base_run != i && r->scaling == kind;
            int base_of = 0, placed = 0; /* (a run that is its own baseline: whose baseline, and is it in a table) */
            for (int j = 0; j < n; j++)
                if (res[j].speedup_valid && res[j].base_run == i && j != i) {
                    base_of |= res[j].scaling == kind;
                    placed = 1;
                }
            int self = r->speedup_valid && r->base_run == i;
            if (in || (self && base_of) || (first && !in && !(r->speedup_valid && r->base_run != i) && !placed))
                write_run_row(f, res, i, md, kind, rw);
        }
        first = 0;
    }
}

/* The trace each replayed run came from, above the tables. Returns the
 * number of replayed runs. */
static int write_replay_sources(FILE *f, const struct run_result *res, int n, int md)
{
    int replays = 0;
    for (int i = 0; i < n; i++)
        if (res[i].replay.valid) {
            const struct replay_source *src = &res[i].replay;
            const struct trace_rule *w = res[i].window;
            fprintf(f, md ? "Replay of `%s` (%s trace%s%s%s%s%s).\n" : "replay of %s (%s trace%s%s%s%s%s)\n",
                    src->files, src->format, trace_state(src), w ? "; --window " : "", w ? w->name : "", w ? ": " : "",
                    w ? w->about : "");
            for (int k = 0; k < src->nleft_out && k < REPLAY_LEFT_OUT_NAMED; k++)
                fprintf(f, md ? "Left out `%s`: not a trace.\n" : "left out %s: not a trace\n", src->left_out[k]);
            if (src->nleft_out > REPLAY_LEFT_OUT_NAMED)
                fprintf(f,
                        md ? "Left out %d more JSON files that are not traces.\n"
                           : "left out %d more JSON files that are not traces\n",
                        src->nleft_out - REPLAY_LEFT_OUT_NAMED);
            fputc('\n', f);
            replays++;
        }
    return replays;
}

/* The per-rank table: a row for each rank of each run. */
static void write_rank_table(FILE *f, const struct run_result *res, int n, int md)
{
    fprintf(f,
            md ? "\nPer rank:\n\n| run | strategy | rank | device | ms/step | p50 | p90 | samples/s | compute %% | "
                 "comm %% | coll %% | data %% | idle %% | overlap %% | desched %% | sent | received | busbw GB/s | "
                 "algbw GB/s | compute s/epoch | comm s/epoch | xfer ms/step | sync ms/step | mem peak |\n"
                 "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|--"
                 "-:|---:|---:|---:|\n"
               : "\nper rank:\n%3s %-17s %4s %-8s %8s %8s %8s %10s %8s %6s %6s %6s %6s %8s %8s %10s %10s %7s %7s "
                 "%9s %9s %9s %9s %10s\n",
            "run", "strategy", "rank", "device", "ms/step", "p50", "p90", "samples/s", "compute%", "comm%", "coll%",
            "data%", "idle%", "overlap%", "desched%", "sent", "received", "busbw", "algbw", "comp s/ep", "comm s/ep",
            "xfer/step", "sync/step", "mem peak");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < res[i].nranks; k++) {
            const struct rank_result *q = &res[i].ranks[k];
            char tx[24], rx[24], bw[16], ab[16], ms[3][24], sps[24], xf[24], sy[24], ds[16], mp[24], ce[24], me[24];
            fig(ds, sizeof(ds), "%.1f", q->desched_pct, q->desched_valid);
            if (q->bytes_valid) {
                human_bytes(tx, sizeof(tx), (double)q->bytes_tx);
                human_bytes(rx, sizeof(rx), (double)q->bytes_rx);
            } else {
                snprintf(tx, sizeof(tx), "n/a");
                snprintf(rx, sizeof(rx), "n/a");
            }
            fig(bw, sizeof(bw), "%.2f", q->busbw_gbps, q->busbw_valid);
            fig(ab, sizeof(ab), "%.2f", q->algbw_gbps, q->busbw_valid);
            fig(ce, sizeof(ce), "%.3f", q->compute_s_epoch, res[i].epoch_valid);
            fig(me, sizeof(me), "%.3f", q->comm_s_epoch, res[i].epoch_valid && q->coll_valid);
            fig(ms[0], sizeof(ms[0]), "%.3f", q->ms_mean, q->ms_valid);
            fig(ms[1], sizeof(ms[1]), "%.3f", q->ms_p50, q->ms_valid);
            fig(ms[2], sizeof(ms[2]), "%.3f", q->ms_p90, q->ms_valid);
            fig3(sps, sizeof(sps), q->samples_per_s, q->samples_valid);
            fig(xf, sizeof(xf), "%.3f", q->xfer_step_ms, q->coll_valid);
            fig(sy, sizeof(sy), "%.3f", q->sync_step_ms, q->coll_valid);
            if (q->mem_valid)
                human_bytes(mp, sizeof(mp), (double)q->mem_peak);
            else
                snprintf(mp, sizeof(mp), "n/a");
            fprintf(f,
                    md ? "| %d | %s | %d | %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | "
                         "%s | %s | %s | %s | %s | %s | %s | %s | %s |\n"
                       : "%3d %-17s %4d %-8s %8s %8s %8s %10s %8.1f %6.1f %6.1f %6.1f %6.1f %8.1f %8s %10s %10s %7s "
                         "%7s %9s %9s %9s %9s %10s\n",
                    i, strat_label(&res[i]), q->rank, q->device, ms[0], ms[1], ms[2], sps, q->compute_pct, q->comm_pct,
                    q->coll_pct, q->data_pct, q->idle_pct, q->overlap_pct, ds, tx, rx, bw, ab, ce, me, xf, sy, mp);
        }
}

/* What the columns mean. */
static void write_legend(FILE *f)
{
    fprintf(f, "\nEvery figure covers the same steps: all but the first (it builds kernels and warms caches).\n"
               "ms/step: the mean step, each step at its slowest rank; p50, p90: its median and 90th percentile\n"
               "(numpy's linear definition). samples/s: the global batch over the median step (p50), the figure\n"
               "speedup compares: speedup = samples/s over that of the run named by vs:\n"
               "strong = the same global batch, weak = the same per-rank batch; eff = speedup / (ranks / its ranks).\n"
               "wall s: the run from start to end (set-up, training, evaluation). comm%%: exposed communication\n"
               "(moving bytes, not hidden by compute); coll%%: the whole time in collectives, waiting for peers\n"
               "included (that wait is idle%% in the split, but comm%% over gloo and MPI, which cannot tell it from\n"
               "the transfer: compare backends by coll%%); desched%%: ready to run but waiting for a core (the\n"
               "machine's doing, not a peer's; beside the split). A run's shares are its ranks' summed times over\n"
               "their summed wall. busbw: GB/s as nccl-tests gives it (each collective's data x its factor, over the\n"
               "transfer time); algbw: the data over the same time. xfer, sync and pred: ms per step per rank.\n"
               "comp s/ep, comm s/ep: compute and the time in collectives (coll) per step, times the steps of an\n"
               "epoch, in seconds (a run's: the mean of its ranks'). mem peak: the most device memory the rank held\n"
               "(its model's weights, gradients and activations, its optimizer's state, its batch and communication\n"
               "buffers). comm: the communicator the run's collectives went over (none: a 1-rank run, the\n"
               "baseline of every backend's rows). peak lr: the learning rate at its peak (--scale-lr's scaled\n"
               "rate, after warm-up; the JSON's lr is the last step's). samples/s: three significant figures at\n"
               "least. busbw and algbw cover the same steps as xfer/step.\n\n");
}

/* Each run's model: its parameters and forward FLOPs. */
static void write_params(FILE *f, const struct run_result *res, int n, int md)
{
    for (int i = 0; i < n; i++)
        if (res[i].params_valid)
            fprintf(f, "%srun %d: %s, %zu parameters, %zu trainable; %.3f GFLOP forward per sample%s%s\n",
                    md ? "- " : "", i, res[i].cfg.model, res[i].params_total, res[i].params_trainable,
                    (double)res[i].flops_per_sample / 1e9, res[i].world > 1 && res[i].backend[0] ? "; over " : "",
                    res[i].world > 1 ? res[i].backend : ""); /* (markdown: a list, not one paragraph) */
}

/* Run i's remarks on how it went and on its figures: its error, its
 * setup note, the spread of --repeat, noisy steps, an efficiency above
 * 100%, a rough fit, a loss above chance, the learning rate, evaluation. */
static void write_run_remarks(FILE *f, const struct run_result *res, int i)
{
    const struct run_result *r = &res[i];
    char lrbuf[32];
    if (r->error[0])
        fprintf(f, "\nrun %d (%s %s): %s\n", i, r->cfg.model, strat_label(r), r->error);
    if (r->note[0])
        fprintf(f, "\nrun %d (%s): %s\n", i, r->backend, r->note);
    if (r->repeats > 1)
        fprintf(f, "\nrun %d: the median of %d runs; samples/s (median steps) from %.0f to %.0f (spread %.1f%%)\n", i,
                r->repeats, r->repeat_sps_min, r->repeat_sps_max,
                r->samples_per_s_p50 > 0 ? 100.0 * (r->repeat_sps_max - r->repeat_sps_min) / r->samples_per_s_p50
                                         : 0.0);
    if (r->ms_valid && r->ms_p50 > 0 && r->ms_p90 / r->ms_p50 > 1.5)
        fprintf(f,
                "\nrun %d: noisy steps (p90/p50 = %.1f): ms/step, the mean, is not a steady figure; samples/s "
                "and speedup use the median, and --repeat N shows the spread\n",
                i, r->ms_p90 / r->ms_p50);
    /* --steps cut the run before --epochs ran out */
    if (r->cfg.epochs > 1 && r->cfg.steps > 0 && r->steps >= r->cfg.steps && r->epoch_valid && r->steps_per_epoch > 0 &&
        !r->replay.valid && r->steps < r->cfg.epochs * r->steps_per_epoch)
        fprintf(f, "\nrun %d: --steps %ld ended it in epoch %ld of --epochs %d (%ld steps an epoch)\n", i, r->cfg.steps,
                (r->steps - 1) / r->steps_per_epoch + 1, r->cfg.epochs, r->steps_per_epoch);
    if (r->world > 1 && r->coll_valid && (!strncmp(r->backend, "gloo", 4) || !strncmp(r->backend, "mpi", 3)))
        fprintf(f,
                "\nrun %d: over %s a collective's wait for its peers cannot be told from its transfer: comm%% "
                "holds both (%.1f%% here, coll%% %.1f%%) and idle%% none of it; set it beside another backend's "
                "rows by coll%%\n",
                i, strncmp(r->backend, "gloo", 4) ? "MPI" : "gloo", r->comm_pct, r->coll_pct);
    char why[400];
    if (result_efficiency_note(res, i, why, sizeof(why)))
        fprintf(f, "\nrun %d: %s\n", i, why);
    if (r->pred_valid && (r->pred_r2 < 0.9 || r->pred_err > COST_FIT_TOLERANCE)) {
        char off[64] = ""; /* (a fit stored before regimes does not know) */
        if (r->pred_err > COST_FIT_TOLERANCE)
            snprintf(off, sizeof(off), ", and %.0f%% off at a size it measured", 100.0 * r->pred_err);
        fprintf(f,
                "\nrun %d: pred/step comes mostly from the %s fit, whose r2 is %.2f%s: a rough guide only (run "
                "--bench-comm --collective %s --ranks %d again on a quiet machine)\n",
                i, coll_name(r->pred_kind), r->pred_r2, off, coll_name(r->pred_kind), r->world);
    }
    if (r->train_valid && r->classes > 1 && r->train_loss > 2.0 * log((double)r->classes))
        fprintf(f,
                "\nrun %d: the training loss %.3g is far above chance (%.2f for %d classes): the learning rate "
                "%g%s may be too high for %s (--lr)\n",
                i, r->train_loss, log((double)r->classes), r->classes, r->lr_peak_valid ? r->lr_peak : r->cfg.lr,
                r->cfg.scale_lr ? " (--scale-lr's)" : "", r->cfg.model);
    if (r->pred_valid == 0 && r->coll_valid && r->xfer_ms > 0 && !r->replay.valid) {
        /* (the command that makes the missing fit: the fits are keyed by
         * backend, algorithm, ranks and collective) */
        char comm[32] = "";
        if (strcmp(r->pred_backend, "shm") != 0 && strcmp(r->pred_backend, "gpu") != 0 && r->pred_backend[0])
            snprintf(comm, sizeof(comm), " --comm %s", r->pred_backend);
        if (r->pred_missing > 0)
            fprintf(f,
                    "\nrun %d: pred/step is n/a: its %s has no alpha-beta fit on %d ranks (ddptop --bench-comm "
                    "--collective %s --ranks %d%s --algo %s makes it)\n",
                    i, coll_name(r->pred_missing), r->world, coll_name(r->pred_missing), r->world, comm,
                    config_algo_name(r->cfg.algo));
        else
            fprintf(f,
                    "\nrun %d: pred/step is n/a: no alpha-beta fit for its collectives (run --bench-comm with "
                    "the same --ranks and --algo)\n",
                    i);
    }
    if (r->cfg.warmup_steps > 0 && r->steps > 0 && r->steps < r->cfg.warmup_steps && !r->replay.valid)
        fprintf(f,
                "\nrun %d ended inside its learning-rate warm-up (%ld of --warmup-steps %d): its rate never "
                "reached the full %s%g\n",
                i, r->steps, r->cfg.warmup_steps, r->cfg.scale_lr ? "--scale-lr rate " : "--lr ", r->lr_peak);
    if (r->cfg.scale_lr && r->lr_peak_valid)
        fprintf(f,
                "\nrun %d: --scale-lr: the rate is --lr %g x the global batch %d / --base-batch %d = %g at its "
                "peak%s; the last step's was %s\n",
                i, r->lr_base, r->global_batch, r->cfg.base_batch, r->lr_peak,
                r->cfg.warmup_steps > 0 ? ", reached after the warm-up" : "",
                fig(lrbuf, sizeof(lrbuf), "%g", r->lr, r->lr_valid));
    if (run_stages(&r->cfg) > 1 && r->cfg.eval && !r->test_valid && !r->replay.valid)
        fprintf(f,
                "\nrun %d: test acc is n/a: each stage holds only its own layers, so no rank can evaluate "
                "the whole model\n",
                i);
}

/* --parallel model|pipeline: run i's stages, with what each holds. */
static void write_stage_table(FILE *f, const struct run_result *r, int i, int md)
{
    int M = train_mode_micro(&r->cfg), S = r->nstages;
    fprintf(f, "\nrun %d: %s parallelism, %d stage%s", i, parallel_name(r->cfg.parallel), S, S == 1 ? "" : "s");
    if (r->cfg.dp > 1)
        fprintf(f, " x %d replicas (each stage's mean over its copies; sent/step with its gradients' average)",
                r->cfg.dp);
    if (train_mode_has(&r->cfg, MODE_MICRO))
        fprintf(f, ", %d micro-batches, %s", M, schedule_name(r->cfg.schedule));
    fprintf(f, " (an ideal pipeline idles (S-1)/(M+S-1) = %.1f%% of a step: its bubble)\n",
            100.0 * (S - 1) / (M + S - 1));
    fprintf(f, md ? "\n| stage | layers | compute %% | idle %% | sent/step | params | grads | optimizer | "
                    "activations | memory |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                  : "  stage  layers    compute%%  idle%%  sent/step     params      grads  optimizer  "
                    "activations     memory\n");
    for (int k = 0; k < S; k++) {
        const struct stage_result *st = &r->stage[k];
        fprintf(f, md ? "| %d | %d-%d | %.1f | %.1f | %.2f MB" : "  %5d  %3d-%-3d   %8.1f  %5.1f  %6.2f MB", k,
                st->first, st->last, st->compute_pct, st->idle_pct, st->sent_mb);
        for (int q = 0; q < SMEM_KINDS; q++) /* (text: under each heading's end) */
            fprintf(f, " %s%*.2f MB", md ? "| " : "", md ? 0 : q == SMEM_ACTS ? 9 : 7, st->mem_bytes[q] / 1e6);
        fprintf(f, md ? " | %.2f MB |\n" : " %7.2f MB\n", st->mem_total_bytes / 1e6);
    }
    fprintf(f,
            "%smemory: what a stage holds to train its layers: their parameters, the gradients (with\n"
            "micro-batches two buffers) and SGD momentum of those that train, and the activations of each\n"
            "micro-batch in flight (its input and its layers' outputs, with their gradients).\n"
            "mem peak: what each rank allocated; a rank builds only its stage's layers, so it follows the\n"
            "stage's memory (without --partition, rank 0's includes the whole model it times for the\n"
            "balanced partition).\n",
            md ? "\n" : "");
}

/* Run i's remarks on what it recorded and how it ended: horovod's
 * negotiation, a cut trace, CUPTI, lost spans, the replica check, an
 * interruption, and why --predict predicted nothing. */
static void write_run_records(FILE *f, const struct run_result *r, int i, int n)
{
    if (n > 1 && r->trace_file[0]) /* (a sweep's runs each write their own) */
        fprintf(f, "\nrun %d: its trace is %s\n", i, r->trace_file);
    if (r->negotiate_valid)
        fprintf(f,
                "\nrun %d: horovod's negotiation (which gradients every rank has ready) took %.3f ms per step per "
                "rank, %.1f%% of a step, inside xfer and sync\n",
                i, r->negotiate_ms, r->ms_mean > 0 ? 100.0 * r->negotiate_ms / r->ms_mean : 0.0);
    int whole = 0, whole_first = -1;
    for (int k = 0; k < r->nranks; k++)
        if (r->ranks[k].window_whole && whole++ == 0)
            whole_first = r->ranks[k].rank;
    if (whole)
        fprintf(f,
                "\nrun %d: rank %d%s: no device work in the steps --window %s covers (%s), so %s figures and "
                "ms/step cover the whole trace, every step\n",
                i, whole_first, whole > 1 ? " and others" : "", r->window ? r->window->name : "?",
                r->window ? r->window->about : "?", whole > 1 ? "their" : "its");
    if (r->replay.valid && !r->replay.complete)
        fprintf(f, "\nrun %d: the trace is incomplete (%s); the figures cover the events up to the cut\n", i,
                r->replay.truncated ? "cut short" : "the writer did not finish it");
    if (r->cupti_valid)
        fprintf(f,
                "\nrun %d: device timelines from CUPTI; processing its records took %.1f ms of host time (%.2f%% "
                "of the run), %llu records lost\n",
                i, r->cupti_ms, r->wall_s > 0 ? r->cupti_ms / 10.0 / r->wall_s : 0.0,
                (unsigned long long)r->cupti_lost);
    if (r->steps_untraced)
        fprintf(f,
                "\nrun %d: the device was traced for %llu of %llu steps (--cupti-sample: 3 in every %d or more, "
                "windows %d ms apart at least); the "
                "other steps' split is the latest traced step's, scaled to their time\n",
                i, (unsigned long long)r->steps_traced, (unsigned long long)(r->steps_traced + r->steps_untraced),
                r->cfg.cupti_sample, r->cupti_gap_valid ? r->cupti_gap_ms : CFG_CUPTI_GAP_MS);
    if (r->loss_scale > 0)
        fprintf(f,
                "\nrun %d: dynamic loss scaling skipped the update of %llu of %llu steps (gradients not "
                "finite); the last step's scale was %g\n",
                i, (unsigned long long)r->steps_skipped, (unsigned long long)r->steps, r->loss_scale);
    if (r->dropped_valid && r->dropped)
        fprintf(f, "\nrun %d: %llu spans were lost to full probe rings; its breakdown is incomplete\n", i,
                (unsigned long long)r->dropped);
    if (r->replicas_checked)
        fprintf(f,
                r->replicas_diverged_at < 0 ? "\nrun %d: replicas bitwise identical after every step\n"
                                            : "\nrun %d: replicas DIFFER from step %ld on\n",
                i, r->replicas_diverged_at);
    if (r->state == RUN_STOPPED)
        fprintf(f, "\nrun %d was interrupted after %ld steps; the figures above cover those steps\n", i, r->steps);
    if (r->spred_note[0])
        fprintf(f, "\nrun %d: %s\n", i, r->spred_note);
}

static void write_text(FILE *f, const struct run_result *res, int n, int md)
{
    int replays = write_replay_sources(f, res, n, md);
    write_run_tables(f, res, n, md);
    write_rank_table(f, res, n, md);
    if (replays)
        write_trace_table(f, res, n, md);
    write_legend(f);
    write_params(f, res, n, md);
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        write_run_remarks(f, res, i);
        if (r->nstages > 0)
            write_stage_table(f, r, i, md);
        write_run_records(f, r, i, n);
        if (r->nspred > 0)
            write_prediction(f, res, n, i, md);
    }
}

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
    add_num(o, "host_wait_pct", split_pct(split_ns[0], b), split);
    add_num(o, "kernel_wait_pct", split_pct(split_ns[1], b), split);
    add_num(o, "other_idle_pct", split_pct(split_ns[2], b), split);
}

/* The keys a runs[] and a per_rank[] entry share, from x: a run_result
 * or a rank_result, which name these figures alike. Two parts, as each
 * entry writes its own bytes between them: the time split with the time in
 * collectives, then the collectives' bandwidths and transfer and sync. */
#define JSON_SPLIT_KEYS(o, x)                                                                                          \
    do {                                                                                                               \
        const int64_t split_ns_[3] = {(x)->host_wait_ns, (x)->kernel_wait_ns, (x)->other_idle_ns};                     \
        json_breakdown(o, &(x)->b, (x)->compute_pct, (x)->comm_pct, (x)->data_pct, (x)->idle_pct, (x)->overlap_pct,    \
                       (x)->gpu_view, (x)->idle_split_valid, split_ns_);                                               \
        add_num(o, "coll_pct", (x)->coll_pct, 1);                                                                      \
        add_num(o, "coll_ms_per_step", (x)->coll_ms, 1);                                                               \
        add_num(o, "desched_pct", (x)->desched_pct, (x)->desched_valid);                                               \
    } while (0)
#define JSON_COLL_KEYS(o, x)                                                                                           \
    do {                                                                                                               \
        add_num(o, "busbw_gbps", (x)->busbw_gbps, (x)->busbw_valid);                                                   \
        add_num(o, "algbw_gbps", (x)->algbw_gbps, (x)->busbw_valid);                                                   \
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
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "ranks", sp->ranks);
        add_num(row, "step_ms", sp->step_ms, sp->valid);
        add_num(row, "comm_ms", sp->comm_ms, sp->valid);
        add_num(row, "exposed_comm_ms", sp->exposed_ms, sp->valid);
        add_num(row, "speedup", sp->speedup, sp->valid);
        add_num(row, "efficiency_pct", sp->efficiency, sp->valid);
        int j = measured_for(res, n, i, sp->ranks);
        add_num(row, "measured_run", j, j >= 0);
        add_num(row, "measured_step_ms", j >= 0 ? res[j].ms_p50 : 0, j >= 0);
        add_num(row, "error_pct", j >= 0 ? 100.0 * (sp->step_ms - res[j].ms_p50) / res[j].ms_p50 : 0,
                j >= 0 && sp->valid);
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

static cJSON *json_run(const struct run_result *res, int n, int index)
{
    const struct run_result *r = &res[index];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", index);
    add_str(o, "model", r->cfg.model);
    add_str(o, "dataset", r->dataset);
    add_str(o, "strategy", strat_name(r));
    add_str(o, "grad_compress", compress_name(r));
    add_str(o, "precision", prec_name(r));
    add_str(o, "device", r->device);
    add_str(o, "backend", r->backend);
    cJSON_AddNumberToObject(o, "ranks", r->world);
    cJSON_AddNumberToObject(o, "ranks_read", r->nranks);
    add_str(o, "window", window_label(r->window, 0));
    add_num(o, "batch_size", per_rank_batch(r), r->batch_valid);
    add_num(o, "global_batch", r->global_batch, r->batch_valid);
    cJSON_AddNumberToObject(o, "steps", (double)r->steps);
    add_num(o, "ms_per_step", r->ms_mean, r->ms_valid);
    add_num(o, "ms_p50", r->ms_p50, r->ms_valid);
    add_num(o, "ms_p90", r->ms_p90, r->ms_valid);
    add_num(o, "samples_per_s", r->samples_per_s, r->samples_valid);
    add_num(o, "samples_per_s_p50", r->samples_per_s_p50, r->samples_per_s_p50 > 0);
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
    add_num(o, "bytes_sent", (double)r->bytes_sent, r->bytes_valid);
    JSON_COLL_KEYS(o, r);
    add_num(o, "predicted_transfer_ms_per_step", per_step(r->pred_ms, r->steps), r->pred_valid);
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
    cJSON_AddItemToObject(o, "prediction", json_prediction(res, n, index));
    return o;
}

static cJSON *json_rank(const struct run_result *r, const struct rank_result *q, int run)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", run);
    cJSON_AddNumberToObject(o, "rank", q->rank);
    add_str(o, "rank_from", q->rank_from_valid ? trace_rank_from_name(q->rank_from) : NULL);
    add_str(o, "window", window_label(q->window, q->window_whole));
    add_str(o, "device", q->device);
    cJSON_AddNumberToObject(o, "steps", (double)q->steps);
    add_num(o, "ms_per_step", q->ms_mean, q->ms_valid);
    add_num(o, "ms_p50", q->ms_p50, q->ms_valid);
    add_num(o, "ms_p90", q->ms_p90, q->ms_valid);
    add_num(o, "samples_per_s", q->samples_per_s, q->samples_valid);
    JSON_SPLIT_KEYS(o, q);
    add_num(o, "bytes_sent", (double)q->bytes_tx, q->bytes_valid);
    add_num(o, "bytes_received", (double)q->bytes_rx, q->bytes_valid);
    JSON_COLL_KEYS(o, q);
    add_num(o, "compute_ms_per_step", q->compute_ms, q->ms_valid);
    add_num(o, "compute_s_per_epoch", q->compute_s_epoch, r->epoch_valid);
    add_num(o, "comm_s_per_epoch", q->comm_s_epoch, r->epoch_valid && q->coll_valid);
    add_num(o, "spans_lost", (double)q->dropped, q->dropped_valid);
    add_num(o, "mem_peak_bytes", (double)q->mem_peak, q->mem_valid);
    return o;
}

static int write_json(FILE *f, const struct run_result *res, int n)
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

static void write_csv(FILE *f, const struct run_result *res, int n)
{
    fprintf(
        f,
        "run,rank,model,dataset,strategy,grad_compress,ranks,batch_size,global_batch,steps,ms_per_step,ms_p50,ms_p90,"
        "samples_per_s,speedup,efficiency_pct,compute_pct,comm_pct,data_pct,idle_pct,overlap_pct,bytes_sent,"
        "busbw_gbps,transfer_ms_per_step,sync_ms_per_step,predicted_transfer_ms_per_step,train_loss,train_acc,test_"
        "acc,threshold_epoch,threshold_step,view,host_wait_pct,kernel_wait_pct,other_idle_pct,coll_pct,coll_ms_per_"
        "step,samples_per_s_p50,speedup_baseline_run,scaling,repeats,lr,desched_pct,negotiate_ms_per_step,precision,"
        "mem_peak_bytes,algbw_gbps,compute_ms_per_step,steps_per_epoch,compute_s_per_epoch,comm_s_per_epoch,wall_s,"
        "lr_base,lr_peak,backend,speedup_marked,ranks_read,window,rank_from\n");
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
            csv_str(f, strat_name(r));
            csv_str(f, compress_name(r));
            fprintf(f, ",%d", r->world);
            csv_num(f, per_rank_batch(r), r->batch_valid, "%.0f");
            csv_num(f, r->global_batch, r->batch_valid, "%.0f");
            fprintf(f, ",%ld", q ? q->steps : r->steps);
            csv_num(f, q ? q->ms_mean : r->ms_mean, q ? q->ms_valid : r->ms_valid, "%.4f");
            csv_num(f, q ? q->ms_p50 : r->ms_p50, q ? q->ms_valid : r->ms_valid, "%.4f");
            csv_num(f, q ? q->ms_p90 : r->ms_p90, q ? q->ms_valid : r->ms_valid, "%.4f");
            csv_num(f, q ? q->samples_per_s : r->samples_per_s, q ? q->samples_valid : r->samples_valid, "%.1f");
            csv_num(f, r->speedup, !q && r->speedup_valid, "%.4f");
            csv_num(f, r->efficiency, !q && r->speedup_valid, "%.2f");
            csv_num(f, q ? q->compute_pct : r->compute_pct, 1, "%.3f");
            csv_num(f, q ? q->comm_pct : r->comm_pct, 1, "%.3f");
            csv_num(f, q ? q->data_pct : r->data_pct, 1, "%.3f");
            csv_num(f, q ? q->idle_pct : r->idle_pct, 1, "%.3f");
            csv_num(f, q ? q->overlap_pct : r->overlap_pct, 1, "%.3f");
            csv_num(f, (double)(q ? q->bytes_tx : r->bytes_sent), q ? q->bytes_valid : r->bytes_valid, "%.0f");
            csv_num(f, q ? q->busbw_gbps : r->busbw_gbps, q ? q->busbw_valid : r->busbw_valid, "%.4f");
            long steps = q ? q->steps : r->steps;
            csv_num(f, q ? q->xfer_step_ms : r->xfer_step_ms, q ? q->coll_valid : r->coll_valid, "%.4f");
            csv_num(f, q ? q->sync_step_ms : r->sync_step_ms, q ? q->coll_valid : r->coll_valid, "%.4f");
            csv_num(f, per_step(r->pred_ms, steps), !q && r->pred_valid, "%.4f");
            csv_num(f, r->train_loss, !q && r->train_valid, "%.6f");
            csv_num(f, r->train_acc, !q && r->train_valid, "%.3f");
            csv_num(f, r->test_acc, !q && r->test_valid, "%.3f");
            csv_num(f, r->threshold_epoch, !q && r->threshold_step >= 0, "%.0f");
            csv_num(f, (double)r->threshold_step, !q && r->threshold_step >= 0, "%.0f");
            csv_str(f, (q ? q->gpu_view : r->gpu_view) ? "gpu" : "host");
            const struct breakdown *b = q ? &q->b : &r->b;
            int split = q ? q->idle_split_valid : r->idle_split_valid;
            csv_num(f, split_pct(q ? q->host_wait_ns : r->host_wait_ns, b), split, "%.3f");
            csv_num(f, split_pct(q ? q->kernel_wait_ns : r->kernel_wait_ns, b), split, "%.3f");
            csv_num(f, split_pct(q ? q->other_idle_ns : r->other_idle_ns, b), split, "%.3f");
            csv_num(f, q ? q->coll_pct : r->coll_pct, 1, "%.3f");
            csv_num(f, q ? q->coll_ms : r->coll_ms, 1, "%.4f");
            csv_num(f, r->samples_per_s_p50, !q && r->samples_per_s_p50 > 0, "%.1f");
            csv_num(f, r->base_run, !q && r->speedup_valid, "%.0f");
            csv_str(f, !q && r->speedup_valid ? scaling_name(r->scaling) : NULL);
            csv_num(f, r->repeats > 1 ? r->repeats : 1, !q, "%.0f");
            csv_num(f, r->lr, !q && r->lr_valid, "%.6g");
            csv_num(f, q ? q->desched_pct : r->desched_pct, q ? q->desched_valid : r->desched_valid, "%.3f");
            csv_num(f, q ? q->negotiate_ms : r->negotiate_ms, q ? q->negotiate_valid : r->negotiate_valid, "%.4f");
            csv_str(f, prec_name(r));
            csv_num(f, q ? (double)q->mem_peak : 0, q && q->mem_valid, "%.0f");
            csv_num(f, q ? q->algbw_gbps : r->algbw_gbps, q ? q->busbw_valid : r->busbw_valid, "%.4f");
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
            csv_str(f, window_label(q ? q->window : r->window, q && q->window_whole));
            csv_str(f, q && q->rank_from_valid ? trace_rank_from_name(q->rank_from) : NULL);
            fputc('\n', f);
        }
    }
}

int report_write(FILE *f, int format, const struct run_result *res, int n)
{
    switch (format) {
    case FMT_JSON:
        return write_json(f, res, n);
    case FMT_CSV:
        write_csv(f, res, n);
        break;
    case FMT_MD:
        write_text(f, res, n, 1);
        break;
    default:
        write_text(f, res, n, 0);
        break;
    }
    return ferror(f) ? -1 : 0;
}

int report_save(const char *path, int format, const struct run_result *res, int n)
{
    if (!path || !path[0]) {
        if (report_write(stdout, format, res, n) != 0 || fflush(stdout) != 0) {
            fprintf(stderr, "ddptop: cannot write the report to standard output: %s\n", strerror(errno));
            return 1;
        }
        return 0;
    }
    /* made in memory first: a file that fails half-way still leaves the
     * whole report to give to standard output */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem || report_write(mem, format, res, n) != 0 || fclose(mem) != 0) {
        fprintf(stderr, "ddptop: out of memory making the report\n");
        free(text);
        return 1;
    }
    /* written beside its name and renamed over it: a failed write leaves
     * the old file as it was, and a link there is replaced, not followed */
    char why[1200];
    int ok = outfile_write(path, text, len, why, sizeof(why)) == 0;
    if (!ok) {
        fprintf(stderr, "ddptop: --output: cannot write %s; the report follows on standard output\n", why);
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    free(text);
    return ok ? 0 : 1;
}

const char *report_path(char *buf, size_t n, const struct config *cfg, int format)
{
    static const char *const ext[FMT_COUNT] = {
        [FMT_TEXT] = "txt", [FMT_CSV] = "csv", [FMT_JSON] = "json", [FMT_MD] = "md"};
    if (cfg->nformats > 1 && cfg->output[0] && format >= 0 && format < FMT_COUNT)
        snprintf(buf, n, "%s.%s", cfg->output, ext[format]);
    else
        snprintf(buf, n, "%s", cfg->output);
    return buf;
}

int report_save_all(const struct config *cfg, const struct run_result *res, int n)
{
    int status = 0, count = cfg->nformats > 0 ? cfg->nformats : 1;
    for (int i = 0; i < count; i++) {
        int format = cfg->nformats > 0 ? cfg->formats[i] : cfg->format;
        char path[CFG_PATH + 8];
        status |= report_save(report_path(path, sizeof(path), cfg, format), format, res, n);
    }
    return status;
}
