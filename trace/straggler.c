/* straggler.c - a foreign trace's run's late collectives (straggler.h). */
#include "straggler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct collect {
    const struct trace_rank *r;
    struct straggler_gather *g;
    int oom;
};

/* The number of the ProfilerStep whose host window holds t in window w of
 * r (the last such, as HTA's lookup); 0 when none or t is unknown. */
static uint32_t step_of(const struct trace_rank *r, size_t w, int64_t t)
{
    if (t < 0 || w >= r->nwindows)
        return 0;
    uint32_t step = 0;
    for (size_t s = r->windows[w].steps_from; s < r->windows[w].steps_to; s++)
        if (r->steps[s].t0_ns <= t && t < r->steps[s].t1_ns)
            step = r->steps[s].step;
    return step;
}

static void span_to(struct straggler_gather *g, int64_t t0, int64_t t1)
{
    g->t_min_ns = g->any && g->t_min_ns < t0 ? g->t_min_ns : t0;
    g->t_max_ns = g->any && g->t_max_ns > t1 ? g->t_max_ns : t1;
    g->any = 1;
}

static int push_cand(struct straggler_gather *g, const struct straggler_cand *x)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct straggler_cand *v = realloc(g->c, cap * sizeof(*v));
        if (!v)
            return -1;
        g->c = v;
        g->cap = cap;
    }
    char *name = strdup(x->name);
    if (!name)
        return -1;
    g->c[g->n] = *x;
    g->c[g->n++].name = name;
    return 0;
}

static int push_step(struct straggler_gather *g, uint32_t step)
{
    for (size_t k = 0; k < g->nsteps; k++)
        if (g->steps[k] == step)
            return 0;
    if (g->nsteps == g->cap_steps) {
        size_t cap = g->cap_steps ? 2 * g->cap_steps : 16;
        uint32_t *v = realloc(g->steps, cap * sizeof(*v));
        if (!v)
            return -1;
        g->steps = v;
        g->cap_steps = cap;
    }
    g->steps[g->nsteps++] = step;
    return 0;
}

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    /* (the cut-off's span: every counted op, as HTA's every event) */
    span_to(c->g, t0_ns, t1_ns);
    if (op->name == TRACE_NO_NAME || op->name >= c->r->nnames || op->stream <= 0)
        return;
    const char *name = c->r->names[op->name];
    if (strncmp(name, "ncclKernel", 10) != 0)
        return;
    uint32_t step = step_of(c->r, window, op->launch_ns);
    if (step == 0)
        return;
    struct straggler_cand x = {c->r->rank, op->stream, step, (char *)name, t0_ns, t1_ns};
    c->oom |= push_cand(c->g, &x) != 0;
}

int straggler_gather_rank(struct straggler_gather *g, const struct trace_rank *r, const struct trace_rule *rule,
                          const struct trace_figures *f)
{
    struct collect c = {r, g, 0};
    trace_each_device_op(r, rule, f, collect_op, &c);
    return c.oom || straggler_gather_steps(g, r) != 0 ? -1 : 0;
}

int straggler_gather_steps(struct straggler_gather *g, const struct trace_rank *r)
{
    for (size_t s = 0; s < r->nsteps; s++) {
        span_to(g, r->steps[s].t0_ns, r->steps[s].t1_ns);
        if (push_step(g, r->steps[s].step) != 0)
            return -1;
    }
    return 0;
}

int straggler_gather_add(struct straggler_gather *into, const struct straggler_gather *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (push_cand(into, &h->c[i]) != 0)
            return -1;
    for (size_t k = 0; k < h->nsteps; k++)
        if (push_step(into, h->steps[k]) != 0)
            return -1;
    if (h->any) {
        span_to(into, h->t_min_ns, h->t_min_ns);
        span_to(into, h->t_max_ns, h->t_max_ns);
    }
    return 0;
}

void straggler_gather_free(struct straggler_gather *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->c[i].name);
    free(g->c);
    free(g->steps);
    memset(g, 0, sizeof(*g));
}

/* By stream, name, step, rank, then start: a rank's last op of a kind in
 * a step ends its run of equals. */
static int cand_cmp(const void *a, const void *b)
{
    const struct straggler_cand *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    int s = strcmp(x->name, y->name);
    if (s)
        return s;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->t0_ns > y->t0_ns) - (x->t0_ns < y->t0_ns);
}

static int same_kind(const struct straggler_cand *x, const struct straggler_cand *y)
{
    return x->stream == y->stream && !strcmp(x->name, y->name);
}

/* The mean over a kind's steps (of two ranks or more) of the sample
 * standard deviation of the ranks' durations; NAN when no step has two. */
static double kind_spread(const struct straggler_cand *c, size_t from, size_t to)
{
    double sum = 0;
    int steps = 0;
    for (size_t i = from; i < to;) {
        size_t j = i;
        double s = 0, ss = 0;
        while (j < to && c[j].step == c[i].step) {
            double d = (double)(c[j].t1_ns - c[j].t0_ns);
            s += d;
            ss += d * d;
            j++;
        }
        double n = (double)(j - i);
        if (j - i >= 2) {
            double var = (ss - s * s / n) / (n - 1);
            sum += sqrt(var > 0 ? var : 0);
            steps++;
        }
        i = j;
    }
    return steps ? sum / steps : NAN;
}

static struct straggler_rank *rank_row(struct straggler_table *t, int rank)
{
    for (int k = 0; k < t->nranks; k++)
        if (t->ranks[k].rank == rank)
            return &t->ranks[k];
    if (t->nranks == TRACE_MAX_RANKS)
        return NULL;
    struct straggler_rank *q = &t->ranks[t->nranks++];
    memset(q, 0, sizeof(*q));
    q->rank = rank;
    return q;
}

/* One step of the run's collective, c[from, to) one op per rank: who is
 * last, who late, and the last's lead. */
static void tally_step(struct straggler_table *t, const struct straggler_cand *c, size_t from, size_t to)
{
    int64_t first = INT64_MIN, second = INT64_MIN; /* the two latest starts, ties kept */
    for (size_t i = from; i < to; i++) {
        int64_t s = c[i].t0_ns;
        if (s > first) {
            second = first;
            first = s;
        } else if (s > second) {
            second = s;
        }
    }
    int64_t kth = STRAGGLER_CANDIDATES > 1 ? second : first;
    for (size_t i = from; i < to; i++) {
        struct straggler_rank *q = rank_row(t, c[i].rank);
        if (!q)
            continue;
        q->late += c[i].t0_ns >= kth;
        if (c[i].t0_ns == first) {
            int64_t others = INT64_MIN; /* the latest start of the other ranks */
            for (size_t j = from; j < to; j++)
                if (j != i && c[j].t0_ns > others)
                    others = c[j].t0_ns;
            q->last++;
            q->lead_total_ns += first - others;
        }
    }
    t->steps++;
}

static int rank_row_cmp(const void *a, const void *b)
{
    const struct straggler_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int straggler_table_of(struct straggler_table *out, const struct straggler_gather *g)
{
    memset(out, 0, sizeof(*out));
    out->straggler = -1;
    if (!g->n || !g->nsteps || !g->any || g->t_max_ns <= g->t_min_ns)
        return 0;
    out->min_duration_ns =
        (int64_t)((double)(g->t_max_ns - g->t_min_ns) / (double)g->nsteps * STRAGGLER_MIN_PERMILLE / 1000.0);

    /* the significant ones, each rank's last of a kind in a step (names
     * borrowed from g) */
    struct straggler_cand *c = malloc(g->n * sizeof(*c));
    if (!c)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->c[i].t1_ns - g->c[i].t0_ns >= out->min_duration_ns)
            c[n++] = g->c[i];
    qsort(c, n, sizeof(*c), cand_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct straggler_cand *x = &c[i], *y = i + 1 < n ? &c[i + 1] : NULL;
        if (y && same_kind(x, y) && x->step == y->step && x->rank == y->rank)
            continue;
        c[m++] = *x;
    }

    /* the kind whose durations differ most across ranks */
    size_t best_from = 0, best_to = 0;
    double best = NAN;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && same_kind(&c[i], &c[j]))
            j++;
        double spread = kind_spread(c, i, j);
        if (!isnan(spread) && (isnan(best) || spread > best)) {
            best = spread;
            best_from = i;
            best_to = j;
        }
        i = j;
    }
    if (!isnan(best)) {
        snprintf(out->name, sizeof(out->name), "%s", c[best_from].name);
        out->stream = c[best_from].stream;
        for (size_t i = best_from; i < best_to;) {
            size_t j = i;
            while (j < best_to && c[j].step == c[i].step)
                j++;
            if (j - i >= 2)
                tally_step(out, c, i, j);
            i = j;
        }
    }
    free(c);
    if (!out->steps)
        return 0;
    qsort(out->ranks, (size_t)out->nranks, sizeof(out->ranks[0]), rank_row_cmp);
    const struct straggler_rank *top = NULL;
    for (int k = 0; k < out->nranks; k++) {
        struct straggler_rank *q = &out->ranks[k];
        q->lead_mean_ns = q->last ? (double)q->lead_total_ns / (double)q->last : 0;
        if (!top || q->last > top->last || (q->last == top->last && q->lead_total_ns > top->lead_total_ns))
            top = q;
    }
    out->straggler = top->rank;
    out->valid = 1;
    return 0;
}

int straggler_table_run(struct straggler_table *out, const struct trace_doc *d, const struct trace_rule *rule,
                        const struct trace_figures *figs)
{
    struct straggler_gather g = {0};
    int rc = 0;
    memset(out, 0, sizeof(*out));
    out->straggler = -1;
    for (int i = 0; i < d->nranks && rc == 0; i++)
        if (figs[i].gpu_view)
            rc = straggler_gather_rank(&g, &d->ranks[i], rule, &figs[i]);
    if (rc == 0)
        rc = straggler_table_of(out, &g);
    straggler_gather_free(&g);
    return rc;
}
