/* report.c - the one report in text and markdown (the run tables, per
 * rank, the legend, each run's remarks, stages and predictions), and
 * writing it where --output and --format say (a replayed trace's device
 * tables: report_device.c; JSON: report_json.c; CSV: report_csv.c). The JSON schema is documented in docs/json.md; keep
 * the two in step. */
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
            rep_fig(hw, sizeof(hw), "%.1f", rep_split_pct(q ? q->host_wait_ns : res[i].host_wait_ns, b), split);
            rep_fig(kw, sizeof(kw), "%.1f", rep_split_pct(q ? q->kernel_wait_ns : res[i].kernel_wait_ns, b), split);
            rep_fig(ow, sizeof(ow), "%.1f", rep_split_pct(q ? q->other_idle_ns : res[i].other_idle_ns, b), split);
            fprintf(f, md ? "| %d | %s | %s | %s | %s | %s | %s | %s |\n" : "%3d %4s %-5s %10s %12s %11s %-9s %s\n", i,
                    who, (q ? q->gpu_view : res[i].gpu_view) ? "gpu" : "host", hw, kw, ow,
                    q && q->rank_from_valid ? trace_rank_from_name(q->rank_from) : "",
                    rep_window_label(q ? q->window : res[i].window, q && q->window_whole));
        }
    }
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
        int j = rep_measured_for(res, n, i, sp->ranks);
        char c[6][32], meas[32], err[32];
        rep_fig(c[0], sizeof(c[0]), "%.3f", sp->step_ms, sp->valid);
        rep_fig(c[1], sizeof(c[1]), "%.3f", sp->comm_ms, sp->valid);
        rep_fig(c[2], sizeof(c[2]), "%.3f", sp->exposed_ms, sp->valid);
        rep_fig(c[3], sizeof(c[3]), "%.2fx", sp->speedup, sp->valid);
        rep_fig(c[4], sizeof(c[4]), "%.1f", sp->efficiency, sp->valid);
        rep_fig(meas, sizeof(meas), "%.3f", j >= 0 ? res[j].rate.ms : 0, j >= 0);
        /* a measured run whose ranks waited for cores: marked (the
         * prediction gives each rank a core of its own) */
        int shared = j >= 0 && shared_cores(&res[j]);
        if (shared)
            noted[nnoted++] = j;
        rep_fig(err, sizeof(err), shared ? "%+.1f%%*" : "%+.1f%%",
                j >= 0 ? 100.0 * (sp->step_ms - res[j].rate.ms) / res[j].rate.ms : 0, j >= 0 && sp->valid);
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
        int above = at >= 0 && r->spred[at].step_ms > res[j].rate.ms;
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

/* --predict of a replayed or followed PyTorch job: its measured figures,
 * then the step at each rank count (res->job, result_job_predict). */
static void write_job_prediction(FILE *f, const struct run_result *r, int i, int md)
{
    const struct job_pred *j = &r->job;
    if (!j->valid) {
        fprintf(f, "\nrun %d: %s\n", i, j->note);
        return;
    }
    fprintf(f,
            "\nrun %d predicts the traced job on more ranks, each with its batch and a core of its own: measured on %d "
            "ranks, per step, %.3f ms (ms/step, the mean), compute %.3f, %.2f collectives of %.0f bytes in all taking "
            "%.3f ms, %.3f exposed (%.3f hidden under compute); sizes from %s; comm from %s (docs/predict.md); ms "
            "per step:\n\n",
            i, j->world, j->step_ms, j->compute_ms, j->colls_per_step, j->bytes_per_step, j->comm_ms, j->exposed_ms,
            j->hidden_ms, j->sizes, j->link);
    const char *head[] = {"ranks", "pred ms", "comm", "exposed", "speedup", "eff%"};
    if (md) {
        for (int c = 0; c < 6; c++)
            fprintf(f, "| %s ", head[c]);
        fprintf(f, "|\n|---:|---:|---:|---:|---:|---:|\n");
    } else {
        fprintf(f, "%6s %10s %9s %9s %8s %6s\n", head[0], head[1], head[2], head[3], head[4], head[5]);
    }
    int missing = 0;
    for (int k = 0; k < j->nrows; k++) {
        const struct scaling_pred *sp = &j->rows[k];
        char c[5][32];
        rep_fig(c[0], sizeof(c[0]), "%.3f", sp->step_ms, sp->valid);
        rep_fig(c[1], sizeof(c[1]), "%.3f", sp->comm_ms, sp->valid);
        rep_fig(c[2], sizeof(c[2]), "%.3f", sp->exposed_ms, sp->valid);
        rep_fig(c[3], sizeof(c[3]), "%.2fx", sp->speedup, sp->valid);
        rep_fig(c[4], sizeof(c[4]), "%.1f", sp->efficiency, sp->valid);
        missing += !sp->valid;
        fprintf(f, md ? "| %d | %s | %s | %s | %s | %s |\n" : "%6d %10s %9s %9s %8s %6s\n", sp->ranks, c[0], c[1], c[2],
                c[3], c[4]);
    }
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
    rep_fig(ds, sizeof(ds), "%.1f", r->desched_pct, r->desched_valid);
    rep_fig(lb, sizeof(lb), "%.0f", (double)rep_per_rank_batch(r), r->batch_valid);
    rep_fig(gb, sizeof(gb), "%.0f", r->global_batch, r->batch_valid);
    rep_fig(ws, sizeof(ws), "%.2f", r->wall_s, r->wall_valid);
    rep_fig(ms[0], sizeof(ms[0]), "%.3f", r->ms_mean, r->ms_valid);
    rep_fig(ms[1], sizeof(ms[1]), "%.3f", r->rate.ms, r->ms_valid);
    rep_fig(ms[2], sizeof(ms[2]), "%.3f", r->ms_p90, r->ms_valid);
    rep_fig3(sps, sizeof(sps), r->rate.samples_s, r->rate.samples_valid);
    rep_fig(pr, sizeof(pr), "%.3f", rep_per_step(r->pred_ms, r->steps), r->pred_valid);
    rep_fig(sp, sizeof(sp), r->speedup_marked ? "%.2fx!" : "%.2fx", r->speedup, r->speedup_valid);
    rep_fig(eff, sizeof(eff), "%.0f", r->efficiency, r->speedup_valid);
    if (r->speedup_valid && r->base_run == i && kind != SCALING_NONE)
        snprintf(vs, sizeof(vs), "r%d base", i);
    else
        rep_vs_label(vs, sizeof(vs), r);
    rep_fig(bw, sizeof(bw), "%.2f", r->traffic.busbw_gbps, r->traffic.busbw_valid);
    rep_fig(ab, sizeof(ab), "%.2f", r->traffic.algbw_gbps, r->traffic.busbw_valid);
    if (r->traffic.bytes_valid)
        fmt_bytes(bytes, sizeof(bytes), (double)r->traffic.tx);
    else
        snprintf(bytes, sizeof(bytes), "n/a");
    rep_fig(xf, sizeof(xf), "%.3f", r->xfer_step_ms, r->coll_valid);
    rep_fig(sy, sizeof(sy), "%.3f", r->sync_step_ms, r->coll_valid);
    rep_fig(ce, sizeof(ce), "%.3f", r->compute_s_epoch, r->epoch_valid);
    rep_fig(me, sizeof(me), "%.3f", r->comm_s_epoch, r->epoch_valid && r->coll_valid);
    rep_fig(lr, sizeof(lr), "%.4g", r->lr_peak, r->lr_peak_valid);
    rep_fig(tl, sizeof(tl), "%.4f", r->train_loss, r->train_valid);
    rep_fig(ta, sizeof(ta), "%.2f", r->train_acc, r->train_valid);
    rep_fig(te, sizeof(te), "%.2f", r->test_acc, r->test_valid);
    rep_threshold_str(thr, sizeof(thr), r);
    fprintf(
        f,
        md ? "| %d | %s | %s | %s | %s | %s | %.*s | %s | %s | %ld | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | "
             "%.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
             "%s |\n"
           : "%3d %-13s %-14s %-17s %-9s %-4s %*s %6s %6s %6ld %8s %8s %8s %8s %10s %7s %5s %-10s %8.1f %6.1f "
             "%6.1f %6.1f %6.1f %8.1f %8s %10s %7s %7s %9s %9s %9s %9s %9s %8s %7s %7s %7s %s\n",
        /* (the ranks: padded in text; markdown's %.*s takes the same int) */
        i, rep_or_na(r->cfg.model), rep_or_na(r->dataset), rep_strat_label(r), result_comm(r),
        rep_or_na(rep_prec_name(r)), md ? 32 : rw, ranks_cell(rk, sizeof(rk), r), lb, gb, r->steps, ws, ms[0], ms[1],
        ms[2], sps, sp, eff, vs, r->split.compute, r->split.comm, r->coll_pct, r->split.data, r->split.idle,
        r->split.overlap, ds, bytes, bw, ab, xf, sy, pr, ce, me, lr, tl, ta, te, thr);
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
                    src->files, src->format, rep_trace_state(src), w ? "; --window " : "", w ? w->name : "",
                    w ? ": " : "", w ? w->about : "");
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
            rep_fig(ds, sizeof(ds), "%.1f", q->desched_pct, q->desched_valid);
            if (q->traffic.bytes_valid) {
                fmt_bytes(tx, sizeof(tx), (double)q->traffic.tx);
                fmt_bytes(rx, sizeof(rx), (double)q->traffic.rx);
            } else {
                snprintf(tx, sizeof(tx), "n/a");
                snprintf(rx, sizeof(rx), "n/a");
            }
            rep_fig(bw, sizeof(bw), "%.2f", q->traffic.busbw_gbps, q->traffic.busbw_valid);
            rep_fig(ab, sizeof(ab), "%.2f", q->traffic.algbw_gbps, q->traffic.busbw_valid);
            rep_fig(ce, sizeof(ce), "%.3f", q->compute_s_epoch, res[i].epoch_valid);
            rep_fig(me, sizeof(me), "%.3f", q->comm_s_epoch, res[i].epoch_valid && q->coll_valid);
            rep_fig(ms[0], sizeof(ms[0]), "%.3f", q->ms_mean, q->ms_valid);
            rep_fig(ms[1], sizeof(ms[1]), "%.3f", q->rate.ms, q->ms_valid);
            rep_fig(ms[2], sizeof(ms[2]), "%.3f", q->ms_p90, q->ms_valid);
            rep_fig3(sps, sizeof(sps), q->rate.samples_s, q->rate.samples_valid);
            rep_fig(xf, sizeof(xf), "%.3f", q->xfer_step_ms, q->coll_valid);
            rep_fig(sy, sizeof(sy), "%.3f", q->sync_step_ms, q->coll_valid);
            if (q->mem.valid)
                fmt_bytes(mp, sizeof(mp), (double)q->mem.peak);
            else
                snprintf(mp, sizeof(mp), "n/a");
            fprintf(f,
                    md ? "| %d | %s | %d | %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | "
                         "%s | %s | %s | %s | %s | %s | %s | %s | %s |\n"
                       : "%3d %-17s %4d %-8s %8s %8s %8s %10s %8.1f %6.1f %6.1f %6.1f %6.1f %8.1f %8s %10s %10s %7s "
                         "%7s %9s %9s %9s %9s %10s\n",
                    i, rep_strat_label(&res[i]), q->rank, q->device, ms[0], ms[1], ms[2], sps, q->split.compute,
                    q->split.comm, q->coll_pct, q->split.data, q->split.idle, q->split.overlap, ds, tx, rx, bw, ab, ce,
                    me, xf, sy, mp);
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
        fprintf(f, "\nrun %d (%s %s): %s\n", i, r->cfg.model, rep_strat_label(r), r->error);
    if (r->note[0])
        fprintf(f, "\nrun %d (%s): %s\n", i, r->backend, r->note);
    if (r->repeats > 1)
        fprintf(f, "\nrun %d: the median of %d runs; samples/s (median steps) from %.0f to %.0f (spread %.1f%%)\n", i,
                r->repeats, r->repeat_sps_min, r->repeat_sps_max,
                r->rate.samples_s > 0 ? 100.0 * (r->repeat_sps_max - r->repeat_sps_min) / r->rate.samples_s : 0.0);
    if (r->ms_valid && r->rate.ms > 0 && r->ms_p90 / r->rate.ms > 1.5)
        fprintf(f,
                "\nrun %d: noisy steps (p90/p50 = %.1f): ms/step, the mean, is not a steady figure; samples/s "
                "and speedup use the median, and --repeat N shows the spread\n",
                i, r->ms_p90 / r->rate.ms);
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
                i, strncmp(r->backend, "gloo", 4) ? "MPI" : "gloo", r->split.comm, r->coll_pct);
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
                rep_fig(lrbuf, sizeof(lrbuf), "%g", r->lr, r->lr_valid));
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
    if (replays) {
        write_trace_table(f, res, n, md);
        report_write_device_tables(f, res, n, md);
    }
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
        if (r->job.valid || r->job.note[0])
            write_job_prediction(f, r, i, md);
    }
}

int report_write(FILE *f, int format, const struct run_result *res, int n)
{
    switch (format) {
    case FMT_JSON:
        return report_write_json(f, res, n);
    case FMT_CSV:
        report_write_csv(f, res, n);
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
