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

/* hist's k-th least length (k < the lengths it counts) */
static int64_t nth(const struct queue_hist *h, uint64_t k)
{
    for (size_t i = 0; i < h->n; i++) {
        if (k < h->cnt[i])
            return h->len[i];
        k -= h->cnt[i];
    }
    return h->n ? h->len[h->n - 1] : 0;
}

/* pandas' quantile (linear) of hist's n lengths */
static double quantile(const struct queue_hist *hist, uint64_t n, double q)
{
    double h = (double)(n - 1) * q;
    uint64_t lo = (uint64_t)floor(h);
    uint64_t hi = lo + 1 < n ? lo + 1 : n - 1;
    int64_t a = nth(hist, lo), b = nth(hist, hi);
    return (double)a + (h - (double)lo) * (double)(b - a);
}

/* The stream's points p[0, n) (sorted) into h (empty, its stream set);
 * len: room for n lengths. Returns 0, or -1 when out of memory. */
static int stream_hist(struct queue_hist *h, const struct point *p, size_t n, int64_t *len)
{
    int64_t q = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && p[i].window != p[i - 1].window)
            q = 0; /* a window's own timeline */
        q += p[i].step;
        len[i] = q;
        if (q >= QUEUE_FULL && i + 1 < n && p[i + 1].window == p[i].window)
            h->blocked_ns += p[i + 1].t_ns - p[i].t_ns;
    }
    qsort(len, n, sizeof(*len), len_cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        distinct += i == 0 || len[i] != len[i - 1];
    h->len = malloc(sizeof(*h->len) * distinct);
    h->cnt = malloc(sizeof(*h->cnt) * distinct);
    if (!h->len || !h->cnt)
        return -1;
    h->cap = distinct;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || len[i] != len[i - 1]) {
            h->len[h->n] = len[i];
            h->cnt[h->n++] = 0;
        }
        h->cnt[h->n - 1]++;
    }
    return 0;
}

void queue_tally_free(struct queue_tally *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->s[i].len);
        free(t->s[i].cnt);
    }
    free(t->s);
    memset(t, 0, sizeof(*t));
}

/* t's stream number stream, added in order when new; NULL when out of
 * memory. */
static struct queue_hist *stream_get(struct queue_tally *t, int64_t stream)
{
    int i = 0;
    while (i < t->n && t->s[i].stream < stream)
        i++;
    if (i < t->n && t->s[i].stream == stream)
        return &t->s[i];
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        struct queue_hist *s = realloc(t->s, sizeof(*s) * (size_t)cap);
        if (!s)
            return NULL;
        t->s = s;
        t->cap = cap;
    }
    memmove(&t->s[i + 1], &t->s[i], sizeof(*t->s) * (size_t)(t->n - i));
    memset(&t->s[i], 0, sizeof(t->s[i]));
    t->s[i].stream = stream;
    t->n++;
    return &t->s[i];
}

int queue_tally_rank(struct queue_tally *out, const struct trace_rank *r, const struct trace_rule *rule,
                     const struct trace_figures *f)
{
    memset(out, 0, sizeof(*out));
    struct collect c = {r, rule ? rule : &trace_rules[0], NULL, 0, 0, 0};
    trace_each_device_op(r, rule, f, collect_op, &c);
    int64_t *len = c.oom || !c.n ? NULL : malloc(sizeof(*len) * c.n);
    int rc = c.oom || (c.n && !len) ? -1 : 0;
    if (rc == 0 && c.n > 0) /* (qsort is not for a NULL array, even an empty one) */
        qsort(c.p, c.n, sizeof(*c.p), point_cmp);
    for (size_t i = 0; rc == 0 && i < c.n;) {
        size_t j = i;
        while (j < c.n && c.p[j].stream == c.p[i].stream)
            j++;
        struct queue_hist *h = stream_get(out, c.p[i].stream);
        rc = h ? stream_hist(h, c.p + i, j - i, len) : -1;
        i = j;
    }
    free(len);
    free(c.p);
    if (rc != 0)
        queue_tally_free(out);
    return rc;
}

int queue_tally_add(struct queue_tally *into, const struct queue_tally *t)
{
    for (int i = 0; i < t->n; i++) {
        const struct queue_hist *s = &t->s[i];
        struct queue_hist *h = stream_get(into, s->stream);
        if (!h)
            return -1;
        /* the two ascending lists merged */
        size_t cap = h->n + s->n;
        int64_t *len = malloc(sizeof(*len) * (cap ? cap : 1));
        uint64_t *cnt = malloc(sizeof(*cnt) * (cap ? cap : 1));
        if (!len || !cnt) {
            free(len);
            free(cnt);
            return -1;
        }
        size_t a = 0, b = 0, n = 0;
        while (a < h->n || b < s->n) {
            int64_t v = b >= s->n || (a < h->n && h->len[a] <= s->len[b]) ? h->len[a] : s->len[b];
            uint64_t k = 0;
            if (a < h->n && h->len[a] == v)
                k += h->cnt[a++];
            if (b < s->n && s->len[b] == v)
                k += s->cnt[b++];
            len[n] = v;
            cnt[n++] = k;
        }
        free(h->len);
        free(h->cnt);
        h->len = len;
        h->cnt = cnt;
        h->n = n;
        h->cap = cap;
        h->blocked_ns += s->blocked_ns;
    }
    return 0;
}

void queue_table_of(struct queue_table *out, const struct queue_tally *t)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < t->n; i++) {
        const struct queue_hist *h = &t->s[i];
        if (!h->n)
            continue;
        if (out->n == QUEUE_STREAMS) {
            out->dropped++;
            continue;
        }
        struct queue_stream *s = &out->streams[out->n++];
        s->stream = h->stream;
        for (size_t k = 0; k < h->n; k++) {
            s->count += h->cnt[k];
            s->sum += (double)h->len[k] * (double)h->cnt[k];
            s->sumsq += (double)h->len[k] * (double)h->len[k] * (double)h->cnt[k];
        }
        s->min = h->len[0];
        s->max = h->len[h->n - 1];
        s->p25 = quantile(h, s->count, 0.25);
        s->p50 = quantile(h, s->count, 0.5);
        s->p75 = quantile(h, s->count, 0.75);
        s->blocked_ns = h->blocked_ns;
    }
    queue_table_stats(out);
}

int queue_table_rank(struct queue_table *out, const struct trace_rank *r, const struct trace_rule *rule,
                     const struct trace_figures *f)
{
    struct queue_tally t;
    memset(out, 0, sizeof(*out));
    if (queue_tally_rank(&t, r, rule, f) != 0)
        return -1;
    queue_table_of(out, &t);
    queue_tally_free(&t);
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
