/* idle.c - a foreign trace's rank's idle time per stream (idle.h). */
#include "idle.h"

#include <stdlib.h>
#include <string.h>

/* One op on a stream. */
struct gap_op {
    int64_t stream;
    size_t window;
    int64_t t0_ns, t1_ns;
    int64_t launch_ns; /* -1: unknown */
    size_t seq;        /* the order ops were met in */
};

struct collect {
    const struct trace_rank *r;
    const struct trace_rule *rule;
    struct gap_op *p;
    size_t n, cap;
    int oom;
};

static int64_t up_to_us(int64_t t)
{
    int64_t d = t / 1000 * 1000 - (t % 1000 < 0 ? 1000 : 0);
    return d < t ? d + 1000 : d;
}

static void collect_op(void *ctx, const struct trace_op *op, size_t window, int64_t t0_ns, int64_t t1_ns)
{
    struct collect *c = ctx;
    if (c->oom || op->sync || op->stream < 0)
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        struct gap_op *p = realloc(c->p, sizeof(*p) * cap);
        if (!p) {
            c->oom = 1;
            return;
        }
        c->p = p;
        c->cap = cap;
    }
    /* the launch read as the cut reads the op's start */
    int64_t launch = op->launch_ns;
    if (launch >= 0 && c->rule->whole_us && window < c->r->nwindows && c->r->windows[window].sub_us)
        launch = up_to_us(launch);
    c->p[c->n] = (struct gap_op){op->stream, window, t0_ns, t1_ns, launch, c->n};
    c->n++;
}

static int op_cmp(const void *a, const void *b)
{
    const struct gap_op *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->window != y->window)
        return x->window < y->window ? -1 : 1;
    if (x->t0_ns != y->t0_ns)
        return x->t0_ns < y->t0_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* t's stream number stream, added in order when new; NULL when t has
 * IDLE_STREAMS already (counted in dropped). */
static struct idle_stream *stream_get(struct idle_table *t, int64_t stream)
{
    int i = 0;
    while (i < t->n && t->streams[i].stream < stream)
        i++;
    if (i < t->n && t->streams[i].stream == stream)
        return &t->streams[i];
    if (t->n == IDLE_STREAMS) {
        t->dropped++;
        return NULL;
    }
    memmove(&t->streams[i + 1], &t->streams[i], sizeof(*t->streams) * (size_t)(t->n - i));
    memset(&t->streams[i], 0, sizeof(t->streams[i]));
    t->streams[i].stream = stream;
    t->n++;
    return &t->streams[i];
}

/* The category of the gap that op p ends after an op that ended at
 * prev_end_ns. */
static int gap_cat(const struct gap_op *p, int64_t prev_end_ns, int64_t delay_ns)
{
    return trace_gap_cat(p->launch_ns, prev_end_ns, p->t0_ns - prev_end_ns, delay_ns);
}

int idle_table_rank(struct idle_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                    const struct trace_figures *f, int64_t delay_ns)
{
    memset(out, 0, sizeof(*out));
    out->delay_ns = delay_ns;
    struct collect c = {r, rule ? rule : &trace_rules[0], NULL, 0, 0, 0};
    trace_each_device_op(r, c.rule, f, collect_op, &c);
    if (c.oom) {
        free(c.p);
        return -1;
    }
    if (c.n > 0) /* (qsort is not for a NULL array, even an empty one) */
        qsort(c.p, c.n, sizeof(*c.p), op_cmp);
    struct idle_stream *s = NULL;
    for (size_t i = 0; i < c.n; i++) {
        const struct gap_op *p = &c.p[i];
        int first = i == 0 || p->stream != c.p[i - 1].stream;
        if (first)
            s = stream_get(out, p->stream);
        if (!s)
            continue; /* (a stream past IDLE_STREAMS) */
        s->ops++;
        if (first || p->window != c.p[i - 1].window)
            continue; /* a window's first op ends no gap */
        int64_t prev_end = c.p[i - 1].t1_ns;
        int k = gap_cat(p, prev_end, delay_ns);
        s->ns[k] += p->t0_ns - prev_end;
        s->gaps[k]++;
        s->idle_ns += p->t0_ns - prev_end;
    }
    free(c.p);
    idle_table_rates(out);
    return 0;
}

void idle_table_add(struct idle_table *into, const struct idle_table *t)
{
    into->delay_ns = t->delay_ns;
    into->dropped += t->dropped;
    for (int i = 0; i < t->n; i++) {
        const struct idle_stream *b = &t->streams[i];
        struct idle_stream *a = stream_get(into, b->stream);
        if (!a)
            continue;
        a->ops += b->ops;
        for (int k = 0; k < IDLE_CATS; k++) {
            a->ns[k] += b->ns[k];
            a->gaps[k] += b->gaps[k];
        }
        a->idle_ns += b->idle_ns;
    }
    idle_table_rates(into);
}

void idle_table_rates(struct idle_table *t)
{
    for (int i = 0; i < t->n; i++) {
        struct idle_stream *s = &t->streams[i];
        s->ratio_valid = s->idle_ns != 0;
        for (int k = 0; k < IDLE_CATS; k++)
            s->ratio[k] = s->ratio_valid ? (double)s->ns[k] / (double)s->idle_ns : 0;
    }
}

const char *idle_cat_name(int cat)
{
    static const char *const names[IDLE_CATS] = {"host_wait", "kernel_wait", "other"};
    return cat >= 0 && cat < IDLE_CATS ? names[cat] : "?";
}
