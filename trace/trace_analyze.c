/* trace_analyze.c - a foreign trace's rank through the breakdown sweep,
 * window by window, and HTA's idle split of its GPU view (see
 * trace_analyze.h). */
#include "trace_analyze.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const struct trace_rule trace_rules[TRACE_RULES] = {
    {.name = "ddptop", .about = "every step but each rank's first"},
    {.name = "hta",
     .about = "HTA's: device work launched before each rank's last step",
     .drop_last = 1,
     .launch_needed = 1,
     .syncs = 1,
     .whole_us = 1,
     .by_name = 1},
};

const char *trace_rule_name(int i)
{
    return i >= 0 && i < TRACE_RULES ? trace_rules[i].name : NULL;
}

/* Where a window's counted work lies: device ops by launch time and host
 * steps by start, in [lo, hi), the step `left` aside; times to whole
 * microseconds when `us` (HTA's reading of a finer trace). */
struct cut {
    int64_t lo, hi;
    long left; /* index in the rank's steps; -1: none */
    int active;
    int us;
};

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* t to a whole microsecond: up (HTA's starts) or down (its ends); the
 * sentinels stay. */
static int64_t to_us(int64_t t, int up)
{
    if (t == INT64_MIN || t == INT64_MAX)
        return t;
    int64_t d = floor_div(t, 1000) * 1000;
    return up && d < t ? d + 1000 : d;
}

/* A device op's start and launch, as the cut reads times. */
struct dev_start {
    int64_t t0_ns, launch_ns; /* launch -1: unknown */
};

static int dev_start_cmp(const void *a, const void *b)
{
    const struct dev_start *x = a, *y = b;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    return x->launch_ns < y->launch_ns ? -1 : x->launch_ns > y->launch_ns;
}

/* Splits the idle gaps by the op that ends each one. */
static void idle_split(struct trace_figures *out, const int64_t (*gaps)[2], size_t ng, struct dev_start *by_start,
                       size_t n, int64_t kernel_wait_ns)
{
    qsort(by_start, n, sizeof(*by_start), dev_start_cmp);
    out->idle_split_valid = 1;
    for (size_t g = 0; g < ng; g++) {
        int64_t a = gaps[g][0], b = gaps[g][1], d = b - a;
        /* the op that ends the gap: the first to start at or after b */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (by_start[mid].t0_ns < b)
                lo = mid + 1;
            else
                hi = mid;
        }
        const struct dev_start *next = lo < n ? &by_start[lo] : NULL;
        int cat = trace_gap_cat(next ? next->launch_ns : -1, a, d, kernel_wait_ns);
        *(cat == GAP_HOST_WAIT     ? &out->host_wait_ns
          : cat == GAP_KERNEL_WAIT ? &out->kernel_wait_ns
                                   : &out->other_idle_ns) += d;
    }
}

/* The step the rule leaves out of the rank (its lowest number, or its
 * highest): an index into r->steps, -1 with fewer than two steps. */
static long left_step(const struct trace_rank *r, const struct trace_rule *rule)
{
    if (r->nsteps < 2)
        return -1;
    size_t k = 0;
    for (size_t i = 1; i < r->nsteps; i++)
        if (rule->drop_last ? r->steps[i].step > r->steps[k].step : r->steps[i].step < r->steps[k].step)
            k = i;
    return (long)k;
}

/* What of window w counts when step `left` is left out (see
 * trace_analyze.h). Windows are told apart by step number, not time: each
 * profiler cycle may have a clock of its own. Leaving out the first step,
 * the window that holds it starts at its next step (nothing counts when
 * the first step is all it holds); leaving out the last, the window that
 * holds it ends where that step starts, or where its ProfilerStep starts
 * on the device's timeline, whichever is later. */
static struct cut cut_of(const struct trace_rank *r, const struct trace_window *w, const struct trace_rule *rule,
                         long left)
{
    struct cut c = {INT64_MIN, INT64_MAX, -1, 0, rule->whole_us && w->sub_us};
    if (left < 0 || (size_t)left < w->steps_from || (size_t)left >= w->steps_to)
        return c;
    const struct trace_step_info *k = &r->steps[left];
    c.left = left;
    c.active = 1;
    if (rule->drop_last) {
        c.hi = k->t0_ns > w->gpu_mark_ns ? k->t0_ns : w->gpu_mark_ns;
    } else {
        c.lo = INT64_MAX;
        for (size_t i = w->steps_from; i < w->steps_to; i++)
            if ((long)i != left && r->steps[i].t0_ns >= k->t0_ns && r->steps[i].t0_ns < c.lo)
                c.lo = r->steps[i].t0_ns;
    }
    c.lo = c.us ? to_us(c.lo, 1) : c.lo;
    c.hi = c.us ? to_us(c.hi, 1) : c.hi;
    return c;
}

/* Whether op counts in the cut; its interval and launch, read as the cut
 * reads times, into *t1 and *s. */
static int op_counts(const struct trace_op *op, const struct cut *c, const struct trace_rule *rule, int64_t *t1,
                     struct dev_start *s)
{
    if (op->launch_ns < 0 && op->corr >= 0 && c->active && rule->launch_needed)
        return 0; /* (an op without a correlation id is timed by its own start) */
    s->t0_ns = c->us ? to_us(op->t0_ns, 1) : op->t0_ns;
    s->launch_ns = op->launch_ns >= 0 && c->us ? to_us(op->launch_ns, 1) : op->launch_ns;
    /* (HTA's end: ts + dur summed in double, then floored) */
    *t1 = c->us ? to_us(op->t1_ns, 0) + 1000 * (int64_t)op->end_adj_us : op->t1_ns;
    int64_t at = s->launch_ns >= 0 ? s->launch_ns : s->t0_ns;
    return at >= c->lo && at < c->hi;
}

/* Whether op is device time the cut counts (op_counts' outputs). */
static int dev_counts(const struct trace_op *op, const struct cut *c, const struct trace_rule *rule, int64_t *t1,
                      struct dev_start *s)
{
    return op->gpu && (!op->sync || rule->syncs) && op_counts(op, c, rule, t1, s);
}

static int gpu_view(struct trace_figures *out, const struct trace_rank *r, const struct trace_window *w,
                    const struct trace_rule *rule, const struct cut *c, int64_t kernel_wait_ns)
{
    size_t nops = w->ops_to - w->ops_from;
    struct breakdown_iv *iv = malloc(sizeof(*iv) * (nops ? nops : 1));
    struct dev_start *by_start = malloc(sizeof(*by_start) * (nops ? nops : 1));
    struct breakdown_scratch sc = {0};
    const int64_t(*gaps)[2] = NULL;
    size_t ng = 0, n = 0;
    int rc = -1;
    if (!iv || !by_start)
        goto done;
    for (size_t i = w->ops_from; i < w->ops_to; i++) {
        const struct trace_op *op = &r->ops[i];
        int64_t t1;
        if (!dev_counts(op, c, rule, &t1, &by_start[n]))
            continue;
        iv[n] = (struct breakdown_iv){by_start[n].t0_ns, t1, BREAKDOWN_FLAT, rule->by_name ? op->hta_cat : op->cat};
        out->ndev += t1 > by_start[n].t0_ns;
        n++;
    }
    if (breakdown_sweep(&out->b, iv, n, NULL, 0, &gaps, &ng, &sc) != 0)
        goto done;
    idle_split(out, gaps, ng, by_start, n, kernel_wait_ns);
    rc = 0;
done:
    free(iv);
    free(by_start);
    breakdown_scratch_free(&sc);
    return rc;
}

/* Each thread's ops nest; over the ProfilerStep windows when there are any
 * (the cut's step left out). */
static int host_view(struct trace_figures *out, const struct trace_rank *r, const struct trace_window *w,
                     const struct cut *c)
{
    size_t nops = w->ops_to - w->ops_from, nsteps = w->steps_to - w->steps_from;
    struct breakdown_iv *iv = malloc(sizeof(*iv) * (nops ? nops : 1));
    int64_t(*win)[2] = nsteps ? malloc(sizeof(*win) * nsteps) : NULL;
    int rc = -1;
    if (!iv || (nsteps && !win))
        goto done;
    size_t n = 0;
    for (size_t i = w->ops_from; i < w->ops_to; i++)
        if (!r->ops[i].gpu)
            iv[n++] = (struct breakdown_iv){c->us ? to_us(r->ops[i].t0_ns, 1) : r->ops[i].t0_ns,
                                            c->us ? to_us(r->ops[i].t1_ns, 0) : r->ops[i].t1_ns, r->ops[i].track,
                                            r->ops[i].cat};
    size_t nwin = 0;
    for (size_t i = w->steps_from; i < w->steps_to; i++) {
        int64_t t0 = c->us ? to_us(r->steps[i].t0_ns, 1) : r->steps[i].t0_ns;
        if ((long)i == c->left || t0 < c->lo || t0 >= c->hi)
            continue;
        win[nwin][0] = t0;
        win[nwin][1] = c->us ? to_us(r->steps[i].t1_ns, 0) : r->steps[i].t1_ns;
        nwin++;
    }
    rc = breakdown_sweep(&out->b, iv, n, (const int64_t(*)[2])win, nwin, NULL, NULL, NULL);
done:
    free(iv);
    free(win);
    return rc;
}

/* One window's figures under the cut; a rank with device ops has the GPU
 * view in each. */
static int analyze(struct trace_figures *out, const struct trace_rank *r, const struct trace_window *w,
                   const struct trace_rule *rule, const struct cut *c, int64_t kernel_wait_ns)
{
    memset(out, 0, sizeof(*out));
    if (r->ngpu > 0) {
        out->gpu_view = 1;
        return gpu_view(out, r, w, rule, c, kernel_wait_ns);
    }
    return host_view(out, r, w, c);
}

int trace_analyze_window(struct trace_figures *out, const struct trace_rank *r, size_t w, const struct trace_rule *rule,
                         int64_t kernel_wait_ns)
{
    if (w >= r->nwindows) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    rule = rule ? rule : &trace_rules[0];
    struct cut c = cut_of(r, &r->windows[w], rule, -1); /* the cycle whole */
    return analyze(out, r, &r->windows[w], rule, &c, kernel_wait_ns);
}

/* The sum over r's windows with step `left` left out (-1: none). */
static int analyze_windows(struct trace_figures *out, const struct trace_rank *r, const struct trace_rule *rule,
                           long left, int64_t kernel_wait_ns)
{
    memset(out, 0, sizeof(*out));
    /* a rank made by hand, without windows: all it holds is one */
    const struct trace_window all = {.ops_to = r->nops, .steps_to = r->nsteps, .gpu_mark_ns = INT64_MIN};
    size_t nw = r->nwindows ? r->nwindows : 1;
    for (size_t i = 0; i < nw; i++) {
        struct trace_figures f;
        const struct trace_window *w = r->nwindows ? &r->windows[i] : &all;
        struct cut c = cut_of(r, w, rule, left);
        if (analyze(&f, r, w, rule, &c, kernel_wait_ns) != 0) {
            memset(out, 0, sizeof(*out));
            return -1;
        }
        breakdown_add(&out->b, &f.b);
        out->gpu_view = f.gpu_view;
        out->idle_split_valid = f.idle_split_valid;
        out->host_wait_ns += f.host_wait_ns;
        out->kernel_wait_ns += f.kernel_wait_ns;
        out->other_idle_ns += f.other_idle_ns;
        out->ndev += f.ndev;
    }
    out->left = left < 0 ? TRACE_LEFT_NONE : rule->drop_last ? TRACE_LEFT_LAST : TRACE_LEFT_FIRST;
    return 0;
}

void trace_each_device_op(const struct trace_rank *r, const struct trace_rule *rule, const struct trace_figures *f,
                          trace_op_fn each, void *ctx)
{
    rule = rule ? rule : &trace_rules[0];
    if (!r->ngpu)
        return;
    long left = f->whole ? -1 : left_step(r, rule);
    const struct trace_window all = {.ops_to = r->nops, .steps_to = r->nsteps, .gpu_mark_ns = INT64_MIN};
    size_t nw = r->nwindows ? r->nwindows : 1;
    for (size_t i = 0; i < nw; i++) {
        const struct trace_window *w = r->nwindows ? &r->windows[i] : &all;
        struct cut c = cut_of(r, w, rule, left);
        for (size_t k = w->ops_from; k < w->ops_to; k++) {
            int64_t t1;
            struct dev_start s;
            if (dev_counts(&r->ops[k], &c, rule, &t1, &s))
                each(ctx, &r->ops[k], i, s.t0_ns, t1);
        }
    }
}

int trace_analyze_rank(struct trace_figures *out, const struct trace_rank *r, const struct trace_rule *rule,
                       int64_t kernel_wait_ns)
{
    rule = rule ? rule : &trace_rules[0];
    long left = left_step(r, rule);
    if (analyze_windows(out, r, rule, left, kernel_wait_ns) != 0)
        return -1;
    if (left < 0 || r->ngpu == 0 || out->ndev > 0)
        return 0;
    /* the rule's steps hold no device work: the whole trace, said so */
    if (analyze_windows(out, r, rule, -1, kernel_wait_ns) != 0)
        return -1;
    out->whole = 1;
    return 0;
}
