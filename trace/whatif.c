/* whatif.c - a foreign trace's collectives matched across ranks (whatif.h). */
#include "whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(struct whatif_coll **arr, size_t *n, size_t *cap, const struct whatif_coll *c)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        struct whatif_coll *p = realloc(*arr, nc * sizeof(*p));
        if (!p)
            return -1;
        *arr = p;
        *cap = nc;
    }
    (*arr)[(*n)++] = *c;
    return 0;
}

/* The step of r's window w that holds time t, or -1. */
static long step_at(const struct trace_rank *r, const struct trace_window *w, int64_t t)
{
    for (size_t s = w->steps_from; s < w->steps_to; s++)
        if (t >= r->steps[s].t0_ns && t < r->steps[s].t1_ns)
            return (long)s;
    return -1;
}

/* The step the figures leave out (trace_figures.left): the rank's lowest
 * or highest step number. 0 when none is. */
static int left_number(const struct trace_rank *r, const struct trace_figures *f, uint32_t *num)
{
    if (f->left == TRACE_LEFT_NONE || !r->nsteps)
        return 0;
    uint32_t lo = r->steps[0].step, hi = lo;
    for (size_t s = 1; s < r->nsteps; s++) {
        lo = r->steps[s].step < lo ? r->steps[s].step : lo;
        hi = r->steps[s].step > hi ? r->steps[s].step : hi;
    }
    *num = f->left == TRACE_LEFT_FIRST ? lo : hi;
    return 1;
}

/* (rank, step, kind when asked, start) */
static int cmp_start(const struct whatif_coll *x, const struct whatif_coll *y, int by_kind)
{
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (by_kind && x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static int by_start(const void *a, const void *b)
{
    return cmp_start(a, b, 0);
}

static int by_kind_start(const void *a, const void *b)
{
    return cmp_start(a, b, 1);
}

int whatif_gather_rank(struct whatif_gather *g, const struct trace_rank *r, const struct trace_figures *f)
{
    if (r->rank < 0 || r->rank >= TRACE_MAX_RANKS)
        return 0;
    uint32_t left = 0;
    int has_left = left_number(r, f, &left);
    for (size_t s = 0; s < r->nsteps; s++)
        g->steps[r->rank] += !(has_left && r->steps[s].step == left);
    if (!g->backend[0] && r->coll_backend[0])
        snprintf(g->backend, sizeof(g->backend), "%s", r->coll_backend);
    size_t first = g->n;
    struct whatif_coll *calls = NULL; /* c10d's calls that say their bytes */
    size_t ncalls = 0, capcalls = 0;
    int rc = 0;
    for (size_t wi = 0; wi < r->nwindows && rc == 0; wi++) {
        const struct trace_window *w = &r->windows[wi];
        for (size_t i = w->ops_from; i < w->ops_to && rc == 0; i++) {
            const struct trace_op *op = &r->ops[i];
            if (op->coll == TRACE_COLL_NONE || (op->coll == TRACE_COLL_CALL && !op->coll_bytes))
                continue;
            int64_t at = op->gpu && op->launch_ns >= 0 ? op->launch_ns : op->t0_ns;
            long s = step_at(r, w, at);
            if (s < 0 || (has_left && r->steps[s].step == left))
                continue;
            struct whatif_coll c = {r->rank,       r->steps[s].step, 0, op->coll_kind, at, op->t1_ns - op->t0_ns,
                                    op->coll_bytes};
            if (op->coll == TRACE_COLL_WORK) {
                rc = push(&g->c, &g->n, &g->cap, &c);
                g->work_ns[r->rank] += c.dur_ns;
            } else {
                rc = push(&calls, &ncalls, &capcalls, &c);
            }
        }
    }
    if (rc != 0) {
        free(calls);
        return -1;
    }
    size_t nw = g->n - first;
    if (nw == 0) { /* (no work: nothing to number, and g->c may be NULL) */
        free(calls);
        return 0;
    }
    /* each step's works numbered in start order; the j-th work of a kind
     * in a step takes the j-th call's bytes of that kind there */
    struct whatif_coll *w = g->c + first;
    qsort(w, nw, sizeof(*w), by_kind_start);
    if (ncalls)
        qsort(calls, ncalls, sizeof(*calls), by_kind_start);
    size_t k = 0;
    for (size_t i = 0, j = 0; i < nw; i++) {
        if (i > 0 && (w[i].step != w[i - 1].step || w[i].kind != w[i - 1].kind))
            j = 0;
        while (k < ncalls && (calls[k].step < w[i].step || (calls[k].step == w[i].step && calls[k].kind < w[i].kind)))
            k++;
        size_t at = k + j;
        if (at < ncalls && calls[at].step == w[i].step && calls[at].kind == w[i].kind)
            w[i].bytes = calls[at].bytes;
        j++;
    }
    free(calls);
    qsort(w, nw, sizeof(*w), by_start);
    for (size_t i = 0; i < nw; i++)
        w[i].seq = i > 0 && w[i].step == w[i - 1].step ? w[i - 1].seq + 1 : 0;
    return 0;
}

int whatif_gather_add(struct whatif_gather *into, const struct whatif_gather *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (push(&into->c, &into->n, &into->cap, &h->c[i]) != 0)
            return -1;
    for (int r = 0; r < TRACE_MAX_RANKS; r++) {
        into->steps[r] += h->steps[r];
        into->work_ns[r] += h->work_ns[r];
    }
    if (!into->backend[0])
        snprintf(into->backend, sizeof(into->backend), "%s", h->backend);
    return 0;
}

void whatif_gather_free(struct whatif_gather *g)
{
    free(g->c);
    memset(g, 0, sizeof(*g));
}

void whatif_gather_rerank(struct whatif_gather *g, int from, int to)
{
    if (from == to || from < 0 || from >= TRACE_MAX_RANKS || to < 0 || to >= TRACE_MAX_RANKS)
        return;
    g->steps[to] += g->steps[from];
    g->work_ns[to] += g->work_ns[from];
    g->steps[from] = 0;
    g->work_ns[from] = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->c[i].rank == from)
            g->c[i].rank = to;
}

static int by_match(const void *a, const void *b)
{
    const struct whatif_coll *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int whatif_table_of(struct whatif_table *out, const struct whatif_gather *g)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->backend, sizeof(out->backend), "%s", g->backend);
    double steps = 0, ms = 0;
    for (int r = 0; r < TRACE_MAX_RANKS; r++)
        if (g->steps[r]) {
            out->nranks++;
            steps += (double)g->steps[r];
            ms += (double)g->work_ns[r] / 1e6 / (double)g->steps[r];
        }
    if (!out->nranks || !g->n)
        return 0;
    out->steps = steps / out->nranks;
    out->comm_ms = ms / out->nranks;
    struct whatif_coll *c = malloc(g->n * sizeof(*c));
    out->m = malloc(g->n * sizeof(*out->m));
    if (!c || !out->m) {
        free(c);
        free(out->m);
        out->m = NULL;
        return -1;
    }
    memcpy(c, g->c, g->n * sizeof(*c));
    qsort(c, g->n, sizeof(*c), by_match);
    for (size_t i = 0; i < g->n; i++) {
        struct whatif_match *m = &out->m[out->n];
        if (i == 0 || c[i].step != c[i - 1].step || c[i].seq != c[i - 1].seq) {
            *m = (struct whatif_match){c[i].step, c[i].seq, c[i].kind, 0, c[i].dur_ns, 0};
            out->n++;
        } else {
            m = &out->m[out->n - 1];
        }
        m->nranks++;
        m->min_ns = c[i].dur_ns < m->min_ns ? c[i].dur_ns : m->min_ns;
        m->bytes = c[i].bytes > m->bytes ? c[i].bytes : m->bytes;
    }
    free(c);
    out->valid = 1;
    return 0;
}

void whatif_table_free(struct whatif_table *t)
{
    free(t->m);
    t->m = NULL;
    t->n = 0;
    t->valid = 0;
}
