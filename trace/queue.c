/* queue.c - a foreign trace's rank's queue length per stream (queue.h). */
#include "queue.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One change of a stream's queue. */
struct point {
    int64_t stream;
    size_t window;
    int64_t t_ns;
    int step;   /* +1 a launch, -1 an op's start */
    size_t seq; /* the order points were made in */
};

struct collect {
    const struct trace_rank *r;
    const struct trace_rule *rule;
    struct point *p;
    size_t n, cap;
    int oom;
};

static int64_t up_to_us(int64_t t)
{
    int64_t d = t / 1000 * 1000 - (t % 1000 < 0 ? 1000 : 0);
    return d < t ? d + 1000 : d;
}

static void push(struct collect *c, int64_t stream, size_t window, int64_t t_ns, int step)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        struct point *p = realloc(c->p, sizeof(*p) * cap);
        if (!p) {
            c->oom = 1;
            return;
        }
        c->p = p;
        c->cap = cap;
    }
    c->p[c->n] = (struct point){stream, window, t_ns, step, c->n};
    c->n++;
}

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    (void)t1_ns;
    if (c->oom || !op->queued || op->launch_ns < 0 || op->stream < 0)
        return;
    /* the launch read as the cut reads the op's start */
    int64_t launch = op->launch_ns;
    if (c->rule->whole_us && window < c->r->nwindows && c->r->windows[window].sub_us)
        launch = up_to_us(launch);
    push(c, op->stream, window, launch, 1);
    push(c, op->stream, window, t0_ns, -1);
}

static int point_cmp(const void *a, const void *b)
{
    const struct point *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->window != y->window)
        return x->window < y->window ? -1 : 1;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    if (x->step != y->step)
        return x->step > y->step ? -1 : 1; /* launches first */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int len_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* pandas' quantile (linear) of sorted v[0, n) */
static double quantile(const int64_t *v, size_t n, double q)
{
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : n - 1;
    return (double)v[lo] + (h - (double)lo) * (double)(v[hi] - v[lo]);
}

/* The stream's points p[0, n) (sorted) into s; len: room for n lengths. */
static void stream_stats(struct queue_stream *s, const struct point *p, size_t n, int64_t *len)
{
    memset(s, 0, sizeof(*s));
    s->stream = p[0].stream;
    int64_t q = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && p[i].window != p[i - 1].window)
            q = 0; /* a window's own timeline */
        q += p[i].step;
        len[i] = q;
        s->sum += (double)q;
        s->sumsq += (double)q * (double)q;
        if (q >= QUEUE_FULL && i + 1 < n && p[i + 1].window == p[i].window)
            s->blocked_ns += p[i + 1].t_ns - p[i].t_ns;
    }
    s->count = n;
    qsort(len, n, sizeof(*len), len_cmp);
    s->min = len[0];
    s->max = len[n - 1];
    s->p25 = quantile(len, n, 0.25);
    s->p50 = quantile(len, n, 0.5);
    s->p75 = quantile(len, n, 0.75);
}

int queue_table_rank(struct queue_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                     const struct trace_figures *f)
{
    memset(out, 0, sizeof(*out));
    struct collect c = {r, rule ? rule : &trace_rules[0], NULL, 0, 0, 0};
    trace_each_device_op(r, rule, f, collect_op, &c);
    int64_t *len = c.oom || !c.n ? NULL : malloc(sizeof(*len) * c.n);
    if (c.oom || (c.n && !len)) {
        free(c.p);
        return -1;
    }
    qsort(c.p, c.n, sizeof(*c.p), point_cmp);
    for (size_t i = 0; i < c.n;) {
        size_t j = i;
        while (j < c.n && c.p[j].stream == c.p[i].stream)
            j++;
        if (out->n < QUEUE_STREAMS)
            stream_stats(&out->streams[out->n++], c.p + i, j - i, len);
        else
            out->dropped++;
        i = j;
    }
    free(len);
    free(c.p);
    queue_table_stats(out);
    return 0;
}

void queue_table_stats(struct queue_table *t)
{
    for (int i = 0; i < t->n; i++) {
        struct queue_stream *s = &t->streams[i];
        double n = (double)s->count;
        s->mean = s->count ? s->sum / n : 0;
        double var = s->count > 1 ? (s->sumsq - s->sum * s->sum / n) / (n - 1) : NAN;
        s->std = s->count > 1 ? sqrt(var > 0 ? var : 0) : NAN;
    }
}
