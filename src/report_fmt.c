/* report_fmt.c - how the writers (report.c, report_json.c) label and
 * print a result's figures: names, n/a, significant figures (byte sizes
 * are fmt_num.h's, as in the panes). Labels only: the figures themselves
 * are results.c's. */
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

const char *rep_threshold_str(char *buf, size_t n, const struct run_result *r)
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
const char *rep_strat_label(const struct run_result *r)
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
const char *rep_compress_name(const struct run_result *r)
{
    return !r->compress_valid ? NULL : r->cfg.grad_compress ? w16_name(r->cfg.grad_compress) : "none";
}

/* --precision's name, or NULL when unknown (a trace that does not say). */
const char *rep_prec_name(const struct run_result *r)
{
    return r->precision_valid ? precision_name(r->cfg.precision) : NULL;
}

/* The strategy's name ("model" or "pipeline" for stages), or NULL when
 * unknown. */
const char *rep_strat_name(const struct run_result *r)
{
    if (train_mode_has(&r->cfg, MODE_STAGED))
        return parallel_name(r->cfg.parallel);
    return sync_ops_of(r->cfg.strategy) ? strategy_name(r->cfg.strategy) : NULL;
}

const char *rep_or_na(const char *s)
{
    return s && s[0] ? s : "n/a";
}

/* A figure as text, or n/a. */
const char *rep_fig(char *buf, size_t n, const char *fmt, double v, int valid)
{
    if (valid)
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "n/a");
    return buf;
}

/* A rate to three significant figures at least (8.43, 22.1, 123, 4567):
 * enough to work a speedup out again from the figures beside it. */
const char *rep_fig3(char *buf, size_t n, double v, int valid)
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

double rep_split_pct(int64_t part_ns, const struct breakdown *b)
{
    return breakdown_pct(part_ns, b->wall_ns);
}

/* The steps a PyTorch trace's figures cover, as a report names them:
 * --window's rule, "whole" where its steps held no device work, "" for
 * other runs. */
const char *rep_window_label(const struct trace_rule *rule, int whole)
{
    return !rule ? "" : whole ? "whole" : rule->name;
}

const char *rep_trace_state(const struct replay_source *src)
{
    return src->complete ? "" : src->truncated ? ", cut short" : ", unfinished";
}

/* ms per step from a total over the run */
double rep_per_step(double total_ms, long steps)
{
    return steps > 0 ? total_ms / (double)steps : 0;
}

/* "r0 strong": the run a speedup is against, and how they compare. */
const char *rep_vs_label(char *buf, size_t n, const struct run_result *r)
{
    if (!r->speedup_valid)
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "r%d %s", r->base_run, scaling_name(r->scaling));
    return buf;
}
