/* launch.c - a foreign trace's rank's kernel launch statistics (launch.h). */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

struct collect {
    const struct trace_rank *r;
    const struct trace_rule *rule;
    struct launch_table *t;
    int64_t *v[LAUNCH_COLS]; /* each launch's durations, NULL: not kept */
    size_t n, cap;
};

static int64_t floor_us(int64_t t)
{
    return (t / 1000 - (t % 1000 < 0)) * 1000;
}

static int64_t ceil_us(int64_t t)
{
    int64_t d = floor_us(t);
    return d < t ? d + 1000 : d;
}

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    if (op->launch_call == TRACE_LAUNCH_NONE || op->launch_ns < 0 || op->launch_end_ns < 0)
        return;
    /* the call's times as the rule reads the op's (HTA: whole us) */
    int us = c->rule->whole_us && window < c->r->nwindows && c->r->windows[window].sub_us;
    int64_t l0 = us ? ceil_us(op->launch_ns) : op->launch_ns;
    int64_t l1 = us ? floor_us(op->launch_end_ns) + op->launch_end_adj_us * 1000LL : op->launch_end_ns;
    int64_t d[LAUNCH_COLS];
    d[LAUNCH_CPU] = l1 - l0;
    d[LAUNCH_GPU] = t1_ns - t0_ns;
    d[LAUNCH_DELAY] = t0_ns > l1 ? t0_ns - l1 : 0;
    struct launch_table *t = c->t;
    for (int k = 0; k < LAUNCH_COLS; k++) {
        struct launch_dur *s = &t->dur[k];
        s->max_ns = t->count && s->max_ns > d[k] ? s->max_ns : d[k];
        s->sum_ns += d[k];
        if (c->v[k] && c->n < c->cap)
            c->v[k][c->n] = d[k];
    }
    c->n += c->n < c->cap;
    t->count++;
    t->kernels += op->launch_call == TRACE_LAUNCH_KERNEL;
    t->short_gpu += d[LAUNCH_CPU] <= t->runtime_cutoff_ns && d[LAUNCH_GPU] < d[LAUNCH_CPU];
    t->long_cpu += d[LAUNCH_CPU] > t->runtime_cutoff_ns;
    t->long_delay += d[LAUNCH_DELAY] > t->delay_cutoff_ns;
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0, n), sorted here: the middle value, or the mean of
 * the two middle ones. */
static double median(int64_t *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), i64_cmp);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

int launch_table_rank(struct launch_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f, int64_t runtime_cutoff_ns, int64_t delay_cutoff_ns)
{
    memset(out, 0, sizeof(*out));
    out->runtime_cutoff_ns = runtime_cutoff_ns;
    out->delay_cutoff_ns = delay_cutoff_ns;
    struct collect c = {r, rule ? rule : &trace_rules[0], out, {NULL}, 0, r->nops};
    int rc = 0;
    for (int k = 0; k < LAUNCH_COLS; k++)
        if (c.cap && !(c.v[k] = malloc(sizeof(int64_t) * c.cap)))
            rc = -1;
    if (rc == 0) {
        trace_each_device_op(r, c.rule, f, collect_op, &c);
        for (int k = 0; k < LAUNCH_COLS; k++)
            out->dur[k].p50_ns = median(c.v[k], c.n);
        out->p50_valid = 1;
    }
    for (int k = 0; k < LAUNCH_COLS; k++)
        free(c.v[k]);
    launch_table_rates(out);
    return rc;
}

void launch_table_add(struct launch_table *into, const struct launch_table *t)
{
    for (int k = 0; k < LAUNCH_COLS; k++) {
        struct launch_dur *a = &into->dur[k];
        const struct launch_dur *b = &t->dur[k];
        if (t->count) {
            a->max_ns = into->count && a->max_ns > b->max_ns ? a->max_ns : b->max_ns;
            a->sum_ns += b->sum_ns;
        }
        a->p50_ns = 0;
    }
    into->p50_valid = 0;
    into->count += t->count;
    into->kernels += t->kernels;
    into->short_gpu += t->short_gpu;
    into->long_cpu += t->long_cpu;
    into->long_delay += t->long_delay;
    into->runtime_cutoff_ns = t->runtime_cutoff_ns;
    into->delay_cutoff_ns = t->delay_cutoff_ns;
}

void launch_table_rates(struct launch_table *t)
{
    for (int k = 0; k < LAUNCH_COLS; k++)
        t->dur[k].mean_ns = t->count ? (double)t->dur[k].sum_ns / (double)t->count : 0;
}
