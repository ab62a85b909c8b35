/* critpath.c - the critical path of a foreign trace's rank's step
 * (critpath.h: the model, and what it leaves out). */
#include "critpath.h"

#include <stdlib.h>
#include <string.h>

const char *critpath_kind_name(int kind)
{
    static const char *const names[] = {"cpu", "compute", "comm", "memory", "wait"};
    return kind >= 0 && kind < CRITPATH_KINDS ? names[kind] : "?";
}

const char *critpath_note_text(int note)
{
    switch (note) {
    case CRITPATH_NO_OPS:
        return "no op in the step";
    case CRITPATH_NO_DEVICE:
        return "no device op launched in the step (matched to its launch call by correlation id): a CPU-only "
               "trace has none, and ddptop joins its threads by no event (flows are not read)";
    default:
        return "";
    }
}

/* The most a step's graph spans (ns, about 146 years): no difference of
 * its times, nor their sum along the path, can overflow. */
#define SPAN_MAX ((int64_t)1 << 62)

static int in_span(int64_t s0, int64_t t)
{
    return t >= s0 && (uint64_t)t - (uint64_t)s0 <= (uint64_t)SPAN_MAX;
}

enum pt_type { PT_END = 0, PT_START, PT_LAUNCH };

/* A point on a thread's chain: an op's start or end, or a launch call. */
struct point {
    int64_t t;
    uint8_t type; /* enum pt_type */
    size_t op;    /* the op in the rank's ops (PT_LAUNCH: the device op it launched) */
};

struct ctx {
    const struct trace_rank *r;
    size_t *cpu, *dev; /* kept ops, by track, then start */
    size_t ncpu, ndev;
    struct point *pts; /* every thread's points, by track, then time */
    size_t npts;
    size_t *inside;    /* per point: the kept op the thread is in from it to the next; SIZE_MAX: waiting */
    size_t *launch_pt; /* per op of the rank: its launch point in pts; SIZE_MAX: no launch edge */
    int64_t *path_ns;  /* per op of the rank: its time on the path; -1: not on it */
};

static const struct trace_rank *sort_r; /* (qsort's context) */

/* ops by track, then start, then the longer first, then their order */
static int op_cmp(const void *a, const void *b)
{
    const struct trace_op *x = &sort_r->ops[*(const size_t *)a], *y = &sort_r->ops[*(const size_t *)b];
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    if (x->t1_ns != y->t1_ns)
        return x->t1_ns > y->t1_ns ? -1 : 1;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return i < j ? -1 : i > j;
}

/* points by track, then time, then ends before starts before launches, then op */
static int pt_cmp(const void *a, const void *b)
{
    const struct point *p = a, *q = b;
    int32_t tp = p->type == PT_LAUNCH ? sort_r->ops[p->op].launch_track : sort_r->ops[p->op].track;
    int32_t tq = q->type == PT_LAUNCH ? sort_r->ops[q->op].launch_track : sort_r->ops[q->op].track;
    if (tp != tq)
        return tp < tq ? -1 : 1;
    if (p->t != q->t)
        return p->t < q->t ? -1 : 1;
    if (p->type != q->type)
        return p->type < q->type ? -1 : 1;
    return p->op < q->op ? -1 : p->op > q->op;
}

static int32_t pt_track(const struct trace_rank *r, const struct point *p)
{
    return p->type == PT_LAUNCH ? r->ops[p->op].launch_track : r->ops[p->op].track;
}

/* Keeps the ops of idx[0, n) (sorted by op_cmp) that start no earlier than
 * the previous kept op of their track ends; returns how many. */
static size_t keep_top(const struct trace_rank *r, size_t *idx, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct trace_op *op = &r->ops[idx[i]];
        if (m && r->ops[idx[m - 1]].track == op->track && op->t0_ns < r->ops[idx[m - 1]].t1_ns)
            continue;
        idx[m++] = idx[i];
    }
    return m;
}

static int kind_of(const struct trace_op *op)
{
    if (!op->gpu)
        return CRITPATH_CPU;
    return op->cat == CAT_COMM ? CRITPATH_COMM : op->cat == CAT_DATA ? CRITPATH_MEMORY : CRITPATH_COMPUTE;
}

/* The step: the median ProfilerStep by duration (ties: the lower number). */
static int64_t dur_of(const struct trace_step_info *s)
{
    return (int64_t)(s->t1_ns - s->t0_ns);
}

static int step_cmp(const void *a, const void *b)
{
    const struct trace_step_info *x = a, *y = b;
    if (dur_of(x) != dur_of(y))
        return dur_of(x) < dur_of(y) ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static void on_path(struct ctx *c, size_t op, int64_t ns, struct critpath *out)
{
    if (c->path_ns[op] < 0) {
        c->path_ns[op] = 0;
        out->ops++;
    }
    c->path_ns[op] += ns;
    out->kind_ns[kind_of(&c->r->ops[op])] += ns;
}

/* Walks thread chain pts[from, j] back from point j to the source at s0. */
static void walk_thread(struct ctx *c, size_t from, size_t j, int64_t s0, struct critpath *out)
{
    for (; j > from; j--) {
        const struct point *p = &c->pts[j - 1], *q = &c->pts[j];
        size_t in = c->inside[j - 1];
        if (in != SIZE_MAX)
            on_path(c, in, q->t - p->t, out);
        else
            out->kind_ns[CRITPATH_WAIT] += q->t - p->t;
    }
    out->kind_ns[CRITPATH_WAIT] += c->pts[from].t - s0;
}

/* The first point of thread chain holding pts[j]. */
static size_t chain_from(const struct ctx *c, size_t j)
{
    int32_t t = pt_track(c->r, &c->pts[j]);
    while (j > 0 && pt_track(c->r, &c->pts[j - 1]) == t)
        j--;
    return j;
}

/* Walks stream chain dev[from, i] back from the end of dev[i]. */
static void walk_stream(struct ctx *c, size_t from, size_t i, int64_t s0, struct critpath *out)
{
    const struct trace_rank *r = c->r;
    for (;;) {
        const struct trace_op *op = &r->ops[c->dev[i]];
        on_path(c, c->dev[i], op->t1_ns - op->t0_ns, out);
        int64_t prev = i > from ? r->ops[c->dev[i - 1]].t1_ns : s0;
        size_t lp = c->launch_pt[c->dev[i]];
        if (lp != SIZE_MAX && c->pts[lp].t > prev) {
            out->kind_ns[CRITPATH_WAIT] += op->t0_ns - c->pts[lp].t;
            out->launches++;
            walk_thread(c, chain_from(c, lp), lp, s0, out);
            return;
        }
        out->kind_ns[CRITPATH_WAIT] += op->t0_ns - prev;
        if (i == from)
            return;
        i--;
    }
}

static const int64_t *sort_path; /* (qsort's context) */

/* ops on the path by their time there, most first, then start, then order */
static int item_cmp(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (sort_path[i] != sort_path[j])
        return sort_path[i] > sort_path[j] ? -1 : 1;
    if (sort_r->ops[i].t0_ns != sort_r->ops[j].t0_ns)
        return sort_r->ops[i].t0_ns < sort_r->ops[j].t0_ns ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* The top items: the ops on the path by their time there. */
static int top_items(struct ctx *c, struct critpath *out)
{
    const struct trace_rank *r = c->r;
    size_t *on = malloc(sizeof(*on) * (size_t)(out->ops ? out->ops : 1)), n = 0;
    if (!on)
        return -1;
    for (size_t i = 0; i < r->nops; i++)
        if (c->path_ns[i] >= 0)
            on[n++] = i;
    sort_r = r;
    sort_path = c->path_ns;
    qsort(on, n, sizeof(*on), item_cmp);
    out->nitems = n < CRITPATH_TOP ? (int)n : CRITPATH_TOP;
    for (int k = 0; k < out->nitems; k++) {
        const struct trace_op *op = &r->ops[on[k]];
        struct critpath_item *it = &out->top[k];
        const char *name = op->name < r->nnames ? r->names[op->name] : "?";
        strncpy(it->name, name, sizeof(it->name) - 1);
        it->name[sizeof(it->name) - 1] = 0;
        it->kind = (uint8_t)kind_of(op);
        it->start_ns = op->t0_ns - out->t0_ns;
        it->path_ns = c->path_ns[on[k]];
    }
    free(on);
    return 0;
}

/* The sink's pick: the latest last point (ties: a stream, then the op
 * first in the rank's order). */
static int later_end(int64_t t, int dev, size_t op, int64_t bt, int bdev, size_t bop)
{
    if (t != bt)
        return t > bt;
    if (dev != bdev)
        return dev;
    return op < bop;
}

static int walk(struct ctx *c, struct critpath *out, int64_t s0, int64_t s1)
{
    const struct trace_rank *r = c->r;
    int64_t e = s1;
    int best_dev = 0, have = 0;
    size_t best = 0, best_op = 0, best_from = 0;
    int64_t bt = 0;
    for (size_t j = 0; j < c->npts; j++) /* each thread's last point */
        if (j + 1 == c->npts || pt_track(r, &c->pts[j + 1]) != pt_track(r, &c->pts[j]))
            if (!have || later_end(c->pts[j].t, 0, c->pts[j].op, bt, best_dev, best_op)) {
                have = 1, bt = c->pts[j].t, best_dev = 0, best = j, best_op = c->pts[j].op;
            }
    for (size_t i = 0, from = 0; i < c->ndev; i++) { /* each stream's last op */
        if (i > 0 && r->ops[c->dev[i]].track != r->ops[c->dev[i - 1]].track)
            from = i;
        if (i + 1 < c->ndev && r->ops[c->dev[i + 1]].track == r->ops[c->dev[i]].track)
            continue;
        int64_t t = r->ops[c->dev[i]].t1_ns;
        if (!have || later_end(t, 1, c->dev[i], bt, best_dev, best_op)) {
            have = 1, bt = t, best_dev = 1, best = i, best_op = c->dev[i], best_from = from;
        }
    }
    if (!have)
        return 0;
    if (bt > e)
        e = bt;
    out->length_ns = e - s0;
    out->kind_ns[CRITPATH_WAIT] += e - bt;
    if (best_dev)
        walk_stream(c, best_from, best, s0, out);
    else
        walk_thread(c, chain_from(c, best), best, s0, out);
    return 1;
}

/* The graph of the ops that start (CPU) or are launched (device) in
 * [s0, lim), walked back from its end (at s1 or later). */
static int build(struct ctx *c, struct critpath *out, int64_t s0, int64_t s1, int64_t lim)
{
    const struct trace_rank *r = c->r;
    for (size_t i = 0; i < r->nops; i++) {
        const struct trace_op *op = &r->ops[i];
        if (op->t1_ns < op->t0_ns || !in_span(s0, op->t1_ns))
            continue; /* (a negative duration; a time too far off) */
        if (!op->gpu && op->t0_ns >= s0 && op->t0_ns < lim && op->t1_ns > op->t0_ns) /* (none of no time) */
            c->cpu[c->ncpu++] = i;
        else if (op->gpu && !op->sync && op->launch_ns >= s0 && op->launch_ns < lim && op->t0_ns >= s0)
            c->dev[c->ndev++] = i;
    }
    sort_r = r;
    qsort(c->cpu, c->ncpu, sizeof(*c->cpu), op_cmp);
    qsort(c->dev, c->ndev, sizeof(*c->dev), op_cmp);
    c->ncpu = keep_top(r, c->cpu, c->ncpu);
    c->ndev = keep_top(r, c->dev, c->ndev);
    out->cpu_ops = c->ncpu;
    out->device_ops = c->ndev;
    for (size_t i = 0; i < c->ncpu; i++) {
        const struct trace_op *op = &r->ops[c->cpu[i]];
        c->pts[c->npts++] = (struct point){op->t0_ns, PT_START, c->cpu[i]};
        c->pts[c->npts++] = (struct point){op->t1_ns, PT_END, c->cpu[i]};
    }
    for (size_t i = 0; i < c->ndev; i++) {
        const struct trace_op *op = &r->ops[c->dev[i]];
        if (op->launch_track >= 0 && op->launch_ns <= op->t0_ns)
            c->pts[c->npts++] = (struct point){op->launch_ns, PT_LAUNCH, c->dev[i]};
    }
    qsort(c->pts, c->npts, sizeof(*c->pts), pt_cmp);
    size_t cur = SIZE_MAX;
    for (size_t j = 0; j < c->npts; j++) {
        const struct point *p = &c->pts[j];
        if (j > 0 && pt_track(r, p) != pt_track(r, &c->pts[j - 1]))
            cur = SIZE_MAX; /* (a new thread) */
        if (p->type == PT_START)
            cur = p->op;
        else if (p->type == PT_END)
            cur = SIZE_MAX;
        else
            c->launch_pt[p->op] = j;
        c->inside[j] = cur;
    }
    return walk(c, out, s0, s1);
}

/* The path of [s0, s1) into *out (its step and nsteps set), of the ops
 * that start (CPU) or are launched (device) before lim. */
static int path_in(struct critpath *out, const struct trace_rank *r, int64_t s0, int64_t s1, int64_t lim)
{
    if (!in_span(s0, s1)) {
        out->note = CRITPATH_NO_OPS;
        return 0;
    }
    out->t0_ns = s0;
    out->step_ns = s1 - s0;
    /* the ops that may join the graph (build's test, less its own cuts):
     * the step's arrays hold them, the rank's only a time and a point */
    size_t n = r->nops ? r->nops : 1, m = 1;
    for (size_t i = 0; i < r->nops; i++) {
        const struct trace_op *op = &r->ops[i];
        int64_t t = op->gpu ? op->launch_ns : op->t0_ns;
        m += t >= s0 && t < lim;
    }
    struct ctx c = {r,
                    malloc(sizeof(size_t) * m),
                    malloc(sizeof(size_t) * m),
                    0,
                    0,
                    malloc(sizeof(struct point) * 2 * m),
                    0,
                    malloc(sizeof(size_t) * 2 * m),
                    malloc(sizeof(size_t) * n),
                    malloc(sizeof(int64_t) * n)};
    int rc = -1;
    if (!c.cpu || !c.dev || !c.pts || !c.inside || !c.launch_pt || !c.path_ns)
        goto done;
    for (size_t i = 0; i < r->nops; i++) {
        c.path_ns[i] = -1;
        c.launch_pt[i] = SIZE_MAX;
    }
    rc = 0;
    if (!build(&c, out, s0, s1, lim) || !c.ndev)
        out->note = c.ncpu || r->ngpu ? CRITPATH_NO_DEVICE : CRITPATH_NO_OPS;
    else
        rc = top_items(&c, out);
    out->valid = rc == 0 && out->note == CRITPATH_OK;
    if (!out->valid) { /* no figure where there is no path: its step's alone */
        struct critpath keep = *out;
        memset(out, 0, sizeof(*out));
        out->note = keep.note;
        out->step = keep.step;
        out->nsteps = keep.nsteps;
        out->t0_ns = keep.t0_ns;
        out->step_ns = keep.step_ns;
    }
done:
    free(c.cpu);
    free(c.dev);
    free(c.pts);
    free(c.inside);
    free(c.launch_pt);
    free(c.path_ns);
    return rc;
}

/* The rank whole: every op, the last to start included. */
static int whole_path(struct critpath *out, const struct trace_rank *r)
{
    memset(out, 0, sizeof(*out));
    out->step = -1;
    int64_t s0 = INT64_MAX, s1 = INT64_MIN;
    for (size_t i = 0; i < r->nops; i++) {
        if (r->ops[i].sync)
            continue;
        s0 = r->ops[i].t0_ns < s0 ? r->ops[i].t0_ns : s0;
        s1 = r->ops[i].t1_ns > s1 ? r->ops[i].t1_ns : s1;
    }
    if (s0 > s1) {
        out->note = CRITPATH_NO_OPS;
        return 0;
    }
    return path_in(out, r, s0, s1, s1 + 1);
}

static int step_path(struct critpath *out, const struct trace_rank *r, const struct trace_step_info *m, size_t nsteps)
{
    memset(out, 0, sizeof(*out));
    out->step = m->step;
    out->nsteps = (int)nsteps;
    return path_in(out, r, m->t0_ns, m->t1_ns, m->t1_ns);
}

int critpath_rank(struct critpath *out, const struct trace_rank *r)
{
    if (!r->nsteps)
        return whole_path(out, r);
    struct trace_step_info *s = malloc(sizeof(*s) * r->nsteps);
    if (!s) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    memcpy(s, r->steps, sizeof(*s) * r->nsteps);
    qsort(s, r->nsteps, sizeof(*s), step_cmp);
    const struct trace_step_info *m = &s[(r->nsteps - 1) / 2];
    int rc = step_path(out, r, m, r->nsteps);
    free(s);
    return rc;
}

int critpath_each_step(struct critpath **out, size_t *n, const struct trace_rank *r)
{
    *n = 0;
    *out = malloc(sizeof(**out) * (r->nsteps ? r->nsteps : 1));
    if (!*out)
        return -1;
    if (!r->nsteps) {
        *n = 1;
        return whole_path(*out, r);
    }
    for (size_t i = 0; i < r->nsteps; i++, (*n)++)
        if (step_path(&(*out)[i], r, &r->steps[i], r->nsteps) != 0)
            return -1;
    return 0;
}

/* paths by their step's duration, then number, then start */
static int path_cmp(const void *a, const void *b)
{
    const struct critpath *x = *(const struct critpath *const *)a, *y = *(const struct critpath *const *)b;
    if (x->step_ns != y->step_ns)
        return x->step_ns < y->step_ns ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

const struct critpath *critpath_median(const struct critpath *const *paths, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += paths[i]->step >= 0;
    if (!k)
        return n ? paths[n - 1] : NULL;
    const struct critpath **v = malloc(sizeof(*v) * k);
    if (!v)
        return NULL;
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (paths[i]->step >= 0)
            v[k++] = paths[i];
    qsort(v, k, sizeof(*v), path_cmp);
    const struct critpath *m = v[(k - 1) / 2];
    free(v);
    return m;
}
