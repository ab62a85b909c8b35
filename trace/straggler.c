/* straggler.c - a foreign trace's run's late collectives (straggler.h). */
#include "straggler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One candidate: a rank's communication kernel in a step. */
struct cand {
    int rank_idx; /* in d->ranks */
    int64_t stream;
    uint32_t step;
    const char *name;
    int64_t t0_ns, t1_ns;
};

struct collect {
    const struct trace_rank *r;
    int rank_idx;
    struct cand *c;
    size_t n, cap;
    int oom;
    int64_t t_max_ns; /* the latest end of a counted op */
    int any;
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

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    c->t_max_ns = c->any && c->t_max_ns > t1_ns ? c->t_max_ns : t1_ns;
    c->any = 1;
    if (op->name == TRACE_NO_NAME || op->name >= c->r->nnames || op->stream <= 0)
        return;
    const char *name = c->r->names[op->name];
    if (strncmp(name, "ncclKernel", 10) != 0)
        return;
    uint32_t step = step_of(c->r, window, op->launch_ns);
    if (step == 0)
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct cand *v = realloc(c->c, cap * sizeof(*v));
        if (!v) {
            c->oom = 1;
            return;
        }
        c->c = v;
        c->cap = cap;
    }
    c->c[c->n++] = (struct cand){c->rank_idx, op->stream, step, name, t0_ns, t1_ns};
}

/* By stream, name, step, rank, then start: a rank's last op of a kind in
 * a step ends its run of equals. */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    int s = strcmp(x->name, y->name);
    if (s)
        return s;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->rank_idx != y->rank_idx)
        return x->rank_idx < y->rank_idx ? -1 : 1;
    return (x->t0_ns > y->t0_ns) - (x->t0_ns < y->t0_ns);
}

static int same_kind(const struct cand *x, const struct cand *y)
{
    return x->stream == y->stream && !strcmp(x->name, y->name);
}

/* The mean over a kind's steps (of two ranks or more) of the sample
 * standard deviation of the ranks' durations; NAN when no step has two. */
static double kind_spread(const struct cand *c, size_t from, size_t to)
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
    struct straggler_rank *q = &t->ranks[t->nranks++];
    memset(q, 0, sizeof(*q));
    q->rank = rank;
    return q;
}

/* One step of the run's collective, c[from, to) one op per rank: who is
 * last, who late, and the last's lead. */
static void tally_step(struct straggler_table *t, const struct trace_doc *d, const struct cand *c, size_t from,
                       size_t to)
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
        struct straggler_rank *q = rank_row(t, d->ranks[c[i].rank_idx].rank);
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

int straggler_table_run(struct straggler_table *out, const struct trace_doc *d, const struct trace_rule *rule,
                        const struct trace_figures *figs)
{
    memset(out, 0, sizeof(*out));
    out->straggler = -1;
    struct collect c = {0};
    /* the span of the steps and the distinct step numbers over all ranks */
    int64_t t_min = INT64_MAX, t_max = INT64_MIN;
    uint32_t *nums = NULL;
    size_t nnums = 0, capnums = 0;
    int rc = 0;
    for (int i = 0; i < d->nranks && !c.oom; i++) {
        const struct trace_rank *r = &d->ranks[i];
        if (!figs[i].gpu_view)
            continue;
        c.r = r;
        c.rank_idx = i;
        c.any = 0;
        trace_each_device_op(r, rule, &figs[i], collect_op, &c);
        if (c.any && c.t_max_ns > t_max)
            t_max = c.t_max_ns;
        for (size_t s = 0; s < r->nsteps; s++) {
            const struct trace_step_info *st = &r->steps[s];
            t_min = st->t0_ns < t_min ? st->t0_ns : t_min;
            t_max = st->t1_ns > t_max ? st->t1_ns : t_max;
            size_t k = 0;
            while (k < nnums && nums[k] != st->step)
                k++;
            if (k < nnums)
                continue;
            if (nnums == capnums) {
                size_t cap = capnums ? 2 * capnums : 16;
                uint32_t *v = realloc(nums, cap * sizeof(*v));
                if (!v) {
                    c.oom = 1;
                    break;
                }
                nums = v;
                capnums = cap;
            }
            nums[nnums++] = st->step;
        }
    }
    free(nums);
    if (c.oom) {
        rc = -1;
        goto done;
    }
    if (!c.n || !nnums || t_max <= t_min)
        goto done;
    out->min_duration_ns = (int64_t)((double)(t_max - t_min) / (double)nnums * STRAGGLER_MIN_PERMILLE / 1000.0);

    /* the significant ones, each rank's last of a kind in a step */
    size_t n = 0;
    for (size_t i = 0; i < c.n; i++)
        if (c.c[i].t1_ns - c.c[i].t0_ns >= out->min_duration_ns)
            c.c[n++] = c.c[i];
    qsort(c.c, n, sizeof(*c.c), cand_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cand *x = &c.c[i], *y = i + 1 < n ? &c.c[i + 1] : NULL;
        if (y && same_kind(x, y) && x->step == y->step && x->rank_idx == y->rank_idx)
            continue;
        c.c[m++] = *x;
    }

    /* the kind whose durations differ most across ranks */
    size_t best_from = 0, best_to = 0;
    double best = NAN;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && same_kind(&c.c[i], &c.c[j]))
            j++;
        double spread = kind_spread(c.c, i, j);
        if (!isnan(spread) && (isnan(best) || spread > best)) {
            best = spread;
            best_from = i;
            best_to = j;
        }
        i = j;
    }
    if (isnan(best))
        goto done;
    snprintf(out->name, sizeof(out->name), "%s", c.c[best_from].name);
    out->stream = c.c[best_from].stream;
    for (size_t i = best_from; i < best_to;) {
        size_t j = i;
        while (j < best_to && c.c[j].step == c.c[i].step)
            j++;
        if (j - i >= 2)
            tally_step(out, d, c.c, i, j);
        i = j;
    }
    if (!out->steps)
        goto done;
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
done:
    free(c.c);
    return rc;
}
