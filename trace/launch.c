/* launch.c - a foreign trace's rank's kernel launch statistics (launch.h). */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

struct collect {
    const struct trace_rank *r;
    const struct trace_rule *rule;
    struct launch_tally *t;
    int oom;
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

/* Room in t for n more launches. Returns 0, or -1 when out of memory. */
static int tally_room(struct launch_tally *t, size_t n)
{
    if (t->n + n <= t->cap)
        return 0;
    size_t cap = t->cap ? 2 * t->cap : 256;
    while (cap < t->n + n)
        cap *= 2;
    for (int k = 0; k < LAUNCH_COLS; k++) {
        int64_t *v = realloc(t->v[k], sizeof(*v) * cap);
        if (!v)
            return -1;
        t->v[k] = v;
    }
    t->cap = cap;
    return 0;
}

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    if (op->launch_call == TRACE_LAUNCH_NONE || op->launch_ns < 0 || op->launch_end_ns < 0)
        return;
    if (c->oom || tally_room(c->t, 1) != 0) {
        c->oom = 1;
        return;
    }
    /* the call's times as the rule reads the op's (HTA: whole us) */
    int us = c->rule->whole_us && window < c->r->nwindows && c->r->windows[window].sub_us;
    int64_t l0 = us ? ceil_us(op->launch_ns) : op->launch_ns;
    int64_t l1 = us ? floor_us(op->launch_end_ns) + op->launch_end_adj_us * 1000LL : op->launch_end_ns;
    struct launch_tally *t = c->t;
    t->v[LAUNCH_CPU][t->n] = l1 - l0;
    t->v[LAUNCH_GPU][t->n] = t1_ns - t0_ns;
    t->v[LAUNCH_DELAY][t->n] = t0_ns > l1 ? t0_ns - l1 : 0;
    t->n++;
    t->kernels += op->launch_call == TRACE_LAUNCH_KERNEL;
}

int launch_tally_rank(struct launch_tally *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f)
{
    memset(out, 0, sizeof(*out));
    struct collect c = {r, rule ? rule : &trace_rules[0], out, 0};
    trace_each_device_op(r, c.rule, f, collect_op, &c);
    return c.oom ? -1 : 0;
}

int launch_tally_add(struct launch_tally *into, const struct launch_tally *t)
{
    if (!t->n)
        return 0;
    if (tally_room(into, t->n) != 0)
        return -1;
    for (int k = 0; k < LAUNCH_COLS; k++)
        memcpy(into->v[k] + into->n, t->v[k], sizeof(*t->v[k]) * t->n);
    into->n += t->n;
    into->kernels += t->kernels;
    return 0;
}

void launch_tally_free(struct launch_tally *t)
{
    for (int k = 0; k < LAUNCH_COLS; k++)
        free(t->v[k]);
    memset(t, 0, sizeof(*t));
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

int launch_table_of(struct launch_table *out, const struct launch_tally *t, int64_t runtime_cutoff_ns,
                    int64_t delay_cutoff_ns)
{
    memset(out, 0, sizeof(*out));
    out->runtime_cutoff_ns = runtime_cutoff_ns;
    out->delay_cutoff_ns = delay_cutoff_ns;
    out->count = t->n;
    out->kernels = t->kernels;
    for (size_t i = 0; i < t->n; i++) {
        int64_t cpu = t->v[LAUNCH_CPU][i], gpu = t->v[LAUNCH_GPU][i], delay = t->v[LAUNCH_DELAY][i];
        for (int k = 0; k < LAUNCH_COLS; k++) {
            struct launch_dur *s = &out->dur[k];
            int64_t d = t->v[k][i];
            s->max_ns = i && s->max_ns > d ? s->max_ns : d;
            s->sum_ns += d;
        }
        out->short_gpu += cpu <= runtime_cutoff_ns && gpu < cpu;
        out->long_cpu += cpu > runtime_cutoff_ns;
        out->long_delay += delay > delay_cutoff_ns;
    }
    launch_table_rates(out);
    int64_t *v = malloc(sizeof(*v) * (t->n ? t->n : 1));
    if (!v)
        return -1;
    for (int k = 0; k < LAUNCH_COLS; k++) {
        if (t->n)
            memcpy(v, t->v[k], sizeof(*v) * t->n);
        out->dur[k].p50_ns = median(v, t->n);
    }
    free(v);
    out->p50_valid = 1;
    return 0;
}

int launch_table_rank(struct launch_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                      const struct trace_figures *f, int64_t runtime_cutoff_ns, int64_t delay_cutoff_ns)
{
    struct launch_tally t;
    int rc = launch_tally_rank(&t, r, rule, f);
    if (rc == 0)
        rc = launch_table_of(out, &t, runtime_cutoff_ns, delay_cutoff_ns);
    else
        memset(out, 0, sizeof(*out));
    launch_tally_free(&t);
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
