/* report_fmt.c - how the writers (report*.c) label and
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

/* The way of training as tables show it, train_mode_label's words
 * ("ddp+fp16", "model", "pipe-1f1b/4"), with no compression said where
 * the result does not know it (a trace that does not say). One buffer per
 * thread: good until this thread's next call. */
const char *rep_strat_label(const struct run_result *r)
{
    static _Thread_local char buf[48];
    struct run_config c = r->cfg;
    if (!r->compress_valid)
        c.grad_compress = 0;
    return train_mode_label(&c, buf, sizeof(buf));
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
