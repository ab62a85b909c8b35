/* trace_spans.c - a foreign trace's window as timeline spans (see
 * trace_spans.h). */
#include "trace_spans.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct seg_out {
    struct span *v;
    size_t n, cap;
    const struct trace_step_info *steps; /* the window's, by start */
    size_t nsteps;
    int oom;
};

/* Adds [a, b) of lane/cat, cut into the step windows it crosses (outside
 * them nothing counts); joins the span before it when it continues it. */
static void seg_add(struct seg_out *o, int lane, int cat, int64_t a, int64_t b)
{
    size_t k = 0;
    if (o->nsteps) {
        size_t lo = 0, hi = o->nsteps;
        while (lo < hi) { /* the first window that ends after a */
            size_t mid = (lo + hi) / 2;
            if (o->steps[mid].t1_ns <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        k = lo;
    }
    for (; o->nsteps == 0 || k < o->nsteps; k++) {
        int64_t x = a, y = b;
        uint32_t step = 0;
        if (o->nsteps) {
            if (o->steps[k].t0_ns >= b)
                break;
            x = a > o->steps[k].t0_ns ? a : o->steps[k].t0_ns;
            y = b < o->steps[k].t1_ns ? b : o->steps[k].t1_ns;
            step = o->steps[k].step;
        }
        if (y > x) {
            struct span *last = o->n ? &o->v[o->n - 1] : NULL;
            if (last && last->lane == lane && last->cat == cat && last->step == step && x <= last->t1_ns &&
                x >= last->t0_ns) {
                if (y > last->t1_ns)
                    last->t1_ns = y;
            } else {
                if (o->n == o->cap) {
                    size_t nc = o->cap ? 2 * o->cap : 1024;
                    struct span *nv = realloc(o->v, nc * sizeof(*nv));
                    if (!nv) {
                        o->oom = 1;
                        return;
                    }
                    o->v = nv;
                    o->cap = nc;
                }
                o->v[o->n++] = (struct span){
                    .t0_ns = x, .t1_ns = y, .step = step, .tag = -1, .lane = (uint8_t)lane, .cat = (uint8_t)cat};
            }
        }
        if (o->nsteps == 0)
            break;
    }
}

static int op_nest_cmp(const void *a, const void *b)
{
    const struct trace_op *x = *(const struct trace_op *const *)a, *y = *(const struct trace_op *const *)b;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    return x->t1_ns > y->t1_ns ? -1 : x->t1_ns < y->t1_ns; /* the outer first */
}

/* By thread, then nested (op_nest_cmp). */
static int op_track_cmp(const void *a, const void *b)
{
    const struct trace_op *x = *(const struct trace_op *const *)a, *y = *(const struct trace_op *const *)b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    return op_nest_cmp(a, b);
}

static int step_start_cmp(const void *a, const void *b)
{
    const struct trace_step_info *x = a, *y = b;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

/* The lane of a host op's instant: the main thread's (the one with the
 * most ops) stays on main; another thread's communication goes to the
 * comm lane, its data loading to data, its compute to main. */
static int host_lane(int main_track, int track, int cat)
{
    if (track == main_track)
        return LANE_MAIN;
    return cat == CAT_COMM ? LANE_COMM : cat == CAT_DATA ? LANE_DATA : LANE_MAIN;
}

/* One thread's ops (nested, sorted outer first): the innermost open op
 * decides each instant, as the breakdown does; nothing open is idle. */
static void flatten_track(struct seg_out *o, const struct trace_op **ops, size_t n, int main_track)
{
    const struct trace_op *stack[256];
    int64_t end[256];
    int depth = 0;
    int64_t cur = 0;
    for (size_t i = 0; i <= n; i++) {
        const struct trace_op *op = i < n ? ops[i] : NULL;
        int64_t t = op ? op->t0_ns : INT64_MAX;
        while (depth > 0 && end[depth - 1] <= t) {
            const struct trace_op *top = stack[depth - 1];
            seg_add(o, host_lane(main_track, top->track, top->cat), top->cat, cur, end[depth - 1]);
            cur = end[--depth];
        }
        if (!op)
            break;
        if (depth > 0)
            seg_add(o, host_lane(main_track, stack[depth - 1]->track, stack[depth - 1]->cat), stack[depth - 1]->cat,
                    cur, t);
        cur = t;
        int64_t e = depth > 0 && op->t1_ns > end[depth - 1] ? end[depth - 1] : op->t1_ns; /* (improper nesting) */
        if (depth < (int)(sizeof(stack) / sizeof(stack[0]))) {
            stack[depth] = op;
            end[depth++] = e;
        }
    }
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Keeps the newest whole steps that fit `most` spans. */
static void keep_newest(struct seg_out *o, size_t most)
{
    if (o->n <= most || o->nsteps == 0) {
        o->n = o->n < most ? o->n : most;
        return;
    }
    /* the spans of each step, by step number */
    uint32_t *num = malloc(sizeof(*num) * o->nsteps);
    size_t *count = calloc(o->nsteps, sizeof(*count));
    if (!num || !count) {
        free(num);
        free(count);
        o->n = most;
        return;
    }
    for (size_t k = 0; k < o->nsteps; k++)
        num[k] = o->steps[k].step;
    qsort(num, o->nsteps, sizeof(*num), u32_cmp);
    for (size_t i = 0; i < o->n; i++) {
        const uint32_t *at = bsearch(&o->v[i].step, num, o->nsteps, sizeof(*num), u32_cmp);
        if (at)
            count[at - num]++;
    }
    uint32_t cut = num[o->nsteps - 1];
    size_t kept = 0;
    for (size_t k = o->nsteps; k-- > 0;) {
        if (kept + count[k] > most)
            break;
        kept += count[k];
        cut = num[k];
    }
    free(num);
    free(count);
    size_t m = 0;
    for (size_t i = 0; i < o->n && m < most; i++)
        if (o->v[i].step >= cut)
            o->v[m++] = o->v[i];
    o->n = m;
}

int trace_window_spans(const struct trace_rank *r, const struct trace_window *w, size_t most, struct span **out,
                       size_t *nout, unsigned *lanes)
{
    struct seg_out o = {0};
    size_t nops = w->ops_to - w->ops_from, nsteps = w->steps_to - w->steps_from;
    const struct trace_op **by = malloc(sizeof(*by) * (nops ? nops : 1));
    struct trace_step_info *steps = malloc(sizeof(*steps) * (nsteps ? nsteps : 1));
    int32_t ntracks = 0;
    for (size_t i = w->ops_from; i < w->ops_to; i++)
        ntracks = r->ops[i].track + 1 > ntracks ? r->ops[i].track + 1 : ntracks;
    size_t *count = calloc((size_t)(ntracks ? ntracks : 1), sizeof(*count));
    if (!by || !steps || !count) {
        free(by);
        free(steps);
        free(count);
        return -1;
    }
    if (nsteps)
        memcpy(steps, r->steps + w->steps_from, sizeof(*steps) * nsteps);
    qsort(steps, nsteps, sizeof(*steps), step_start_cmp);
    o.steps = steps;
    o.nsteps = nsteps;
    int main_track = 0;
    for (size_t i = w->ops_from; i < w->ops_to; i++)
        if (!r->ops[i].gpu && r->ops[i].track >= 0 && ++count[r->ops[i].track] > count[main_track])
            main_track = r->ops[i].track;
    /* the host: thread by thread; annotations cover nothing */
    size_t nh = 0;
    for (size_t i = w->ops_from; i < w->ops_to; i++) {
        const struct trace_op *op = &r->ops[i];
        if (!op->gpu && op->cat < CAT_COUNT && op->t1_ns > op->t0_ns)
            by[nh++] = op;
    }
    qsort(by, nh, sizeof(*by), op_track_cmp);
    for (size_t a = 0, b; a < nh && !o.oom; a = b) {
        for (b = a; b < nh && by[b]->track == by[a]->track;)
            b++;
        flatten_track(&o, by + a, b - a, main_track);
    }
    /* the device: every op counts (streams overlap), by start */
    size_t n = 0;
    for (size_t i = w->ops_from; i < w->ops_to; i++)
        if (r->ops[i].gpu && !r->ops[i].sync && r->ops[i].cat < CAT_COUNT && r->ops[i].t1_ns > r->ops[i].t0_ns)
            by[n++] = &r->ops[i];
    qsort(by, n, sizeof(*by), op_nest_cmp);
    for (size_t i = 0; i < n && !o.oom; i++)
        seg_add(&o, LANE_GPU, by[i]->cat, by[i]->t0_ns, by[i]->t1_ns);
    keep_newest(&o, most);
    free(by);
    free(steps);
    free(count);
    if (o.oom) {
        free(o.v);
        return -1;
    }
    *lanes = 0;
    for (size_t i = 0; i < o.n; i++)
        *lanes |= 1u << o.v[i].lane;
    *out = o.v;
    *nout = o.n;
    return 0;
}
